"""A C extension calls cudaMalloc through the PLT. Ground truth: line 8 allocates 32 MiB on the GPU,
kept until exit; line 9 allocates 8 MiB, freed on line 10."""
import sys

sys.path.insert(0, sys.argv[1])
import pf_gpu_ext  # noqa: E402

keep = pf_gpu_ext.alloc(32 << 20)
tmp = pf_gpu_ext.alloc(8 << 20)
pf_gpu_ext.release(tmp)
print("ext ok")
