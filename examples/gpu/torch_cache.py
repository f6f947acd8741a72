"""PyTorch's caching allocator under pyflow.

    pyflow run examples/gpu/torch_cache.py

pyflow sees what the cache reserves from the driver (cudaMalloc), charged to the line whose allocation made
the cache grow: `a` reserves its segment; `b` (the same size, after `a` is dropped) reuses the cached block
and shows no GPU bytes; `torch.cuda.empty_cache()` gives the segment back (it is then no longer live).
`x.cuda()` of the same host tensor twice is two h2d copies of the same bytes: the second is redundant. The
first x.cuda() makes the cache reserve a whole segment (requests between 1 and 10 MiB get a 20 MiB one);
the second fits in it. With `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` the cache grows by mapping
physical chunks (cuMemMap) instead: pyflow charges each mapping to the line that made it grow, the same way.
tests/gpu/check_real_gpu.py checks all this where a GPU is lent (examples/gpu/README.md)."""
import torch

a = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")    # reserves ~64 MiB
del a
b = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")    # served from the cache: no new GPU bytes
x = torch.ones(8 << 20, dtype=torch.uint8)
y1 = x.cuda()
y2 = x.cuda()                                                   # the same bytes again: redundant
del b
torch.cuda.empty_cache()
torch.cuda.synchronize()
print("done", int(y1.sum() + y2.sum()))
