"""Allocations from a program's own memory pool and pitched 2D allocations. Ground truth: line 15 takes 8 MiB
from a pool (freed on line 16), line 17 4 MiB through the driver's pool call (kept), line 18 a pitched block
of 1024 rows of 1000 bytes (pitch 1024 here: 1 MiB, kept), line 19 the driver's pitched 512 x 2000 bytes
(pitch 2048: 1 MiB, freed on line 20)."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
size_t, u64, vp, MiB = ctypes.c_size_t, ctypes.c_ulonglong, ctypes.c_void_p, 1 << 20
cuda.cudaMallocFromPoolAsync.argtypes = [ctypes.POINTER(vp), size_t, vp, vp]
cuda.cuMemAllocFromPoolAsync.argtypes = [ctypes.POINTER(u64), size_t, vp, vp]
cuda.cuMemAllocPitch_v2.argtypes = [ctypes.POINTER(u64), ctypes.POINTER(size_t), size_t, size_t, ctypes.c_uint]
a, b, c, d, pitch = vp(), u64(), vp(), u64(), size_t()
assert cuda.cudaMallocFromPoolAsync(ctypes.byref(a), 8 * MiB, None, None) == 0
assert cuda.cudaFreeAsync(a, None) == 0
assert cuda.cuMemAllocFromPoolAsync(ctypes.byref(b), 4 * MiB, None, None) == 0
assert cuda.cudaMallocPitch(ctypes.byref(c), ctypes.byref(pitch), size_t(1000), size_t(1024)) == 0
assert cuda.cuMemAllocPitch_v2(ctypes.byref(d), ctypes.byref(pitch), 2000, 512, 4) == 0 and pitch.value == 2048
assert cuda.cuMemFree_v2(d) == 0
print("pools ok")
