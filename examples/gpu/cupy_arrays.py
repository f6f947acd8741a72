"""CuPy under pyflow.

    pyflow run examples/gpu/cupy_arrays.py

CuPy's wheels carry the CUDA runtime linked in statically, which finds the driver's functions through
cuGetProcAddress: pyflow sees those allocations and copies all the same. CuPy keeps freed blocks in its
memory pool, so a line's GPU bytes are what the pool asked the driver for: `big` allocates 64 MiB; `again`
(the same size, after `big` is dropped) is served from the pool and costs nothing new; `free_all_blocks()`
gives that block back. `cp.asarray` of the same host array twice uploads the same bytes twice (the second is
redundant); `cp.asnumpy` downloads. asarray stages each upload through CuPy's pinned memory pool (a host
copy, then the upload from it): that copy takes its upload's verdict, so only the second one is redundant.
"""
import cupy as cp
import numpy as np

big = cp.zeros(64 << 20, dtype=cp.uint8)            # 64 MiB from the driver
del big
again = cp.zeros(64 << 20, dtype=cp.uint8)          # the pool's cached block: no new GPU bytes
host = np.arange(16 << 20, dtype=np.uint8)
up1 = cp.asarray(host)                              # upload: 16 MiB on the GPU
up2 = cp.asarray(host)                              # the same bytes again: redundant
back = cp.asnumpy(up1)                              # download
del again
cp.get_default_memory_pool().free_all_blocks()      # the 64 MiB block goes back to the driver
cp.cuda.Device().synchronize()
print("done", int(up1.sum() + up2.sum()), int(back[-1]))
