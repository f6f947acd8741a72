"""The driver API and the rest of the runtime API, through ctypes. Ground truth (line: what):
25 cuMemAlloc_v2 16 MiB, freed on 26; 27 cuMemAllocManaged 8 MiB, kept; 28 cuMemAllocAsync 4 MiB, freed
(cuMemFreeAsync) on 29; 30 cuMemAllocHost_v2 2 MiB pinned host memory: native, not GPU, freed on 31;
32 cudaHostAlloc 1 MiB pinned, kept; 35 uploads the same 1 MiB 3 times with cuMemcpyHtoD_v2 (redundant);
37 cuMemcpyDtoD_v2 1 MiB (d2d); 38 cuMemcpyDtoHAsync_v2 1 MiB (d2h); 39 cudaMemcpy with cudaMemcpyDefault
host->device (h2d by the tracked ends); 40 the same device->host (d2h); 42 cudaMemcpy cudaMemcpyDefault
from device memory pyflow never saw allocated to a tracked buffer (h2d by the ends; its source must not be
read on the host); 44-47 cuGetProcAddress: the v1 ABI is not swapped (the program gets the library's own),
the per-thread-stream variant is handed out as its own hook: 48 uploads 1 MiB through it (h2d)."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
P, U, S, V = ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p
for name, args in {"cuMemAlloc_v2": [ctypes.POINTER(U), S], "cuMemFree_v2": [U],
                   "cuMemAllocManaged": [ctypes.POINTER(U), S, ctypes.c_uint], "cuMemAllocAsync": [ctypes.POINTER(U), S, V],
                   "cuMemFreeAsync": [U, V], "cuMemAllocHost_v2": [ctypes.POINTER(P), S], "cuMemFreeHost": [P],
                   "cudaHostAlloc": [ctypes.POINTER(P), S, ctypes.c_uint], "cuMemcpyHtoD_v2": [U, P, S],
                   "cuMemcpyDtoD_v2": [U, U, S], "cuMemcpyDtoHAsync_v2": [P, U, S, V], "cudaMemcpy": [P, P, S, ctypes.c_int],
                   "mockDeviceAllocUntracked": [ctypes.POINTER(P), S]}.items():
    getattr(cuda, name).argtypes = args
a, m, s, h, k, u = U(), U(), U(), P(), P(), P()
MiB = 1 << 20
assert cuda.cuMemAlloc_v2(ctypes.byref(a), 16 * MiB) == 0
assert cuda.cuMemFree_v2(a) == 0
assert cuda.cuMemAllocManaged(ctypes.byref(m), 8 * MiB, 1) == 0
assert cuda.cuMemAllocAsync(ctypes.byref(s), 4 * MiB, None) == 0
assert cuda.cuMemFreeAsync(s, None) == 0
assert cuda.cuMemAllocHost_v2(ctypes.byref(h), 2 * MiB) == 0
assert cuda.cuMemFreeHost(h) == 0
assert cuda.cudaHostAlloc(ctypes.byref(k), 1 * MiB, 0) == 0
host = (ctypes.c_char * MiB).from_buffer(bytearray(b"x" * MiB))
for _ in range(3):
    assert cuda.cuMemcpyHtoD_v2(m, host, MiB) == 0
back = (ctypes.c_char * MiB)()
assert cuda.cuMemcpyDtoD_v2(m.value + MiB, m, MiB) == 0
assert cuda.cuMemcpyDtoHAsync_v2(back, m, MiB, None) == 0
assert cuda.cudaMemcpy(m.value + 2 * MiB, host, MiB, 4) == 0
assert cuda.cudaMemcpy(back, m.value + 2 * MiB, MiB, 4) == 0
assert cuda.mockDeviceAllocUntracked(ctypes.byref(u), MiB) == 0
assert cuda.cudaMemcpy(m.value + 3 * MiB, u, MiB, 4) == 0
fp = ctypes.c_void_p()
assert cuda.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(fp), 3000, 0, None) == 0
v1 = fp.value
assert cuda.cuGetProcAddress_v2(b"cuMemcpyHtoD", ctypes.byref(fp), 12000, 2, None) == 0
ptds = fp.value
assert ctypes.CFUNCTYPE(ctypes.c_int, U, P, S)(ptds)(m.value + 4 * MiB, host, MiB) == 0
own = ctypes.cast(cuda.cuMemAlloc_v2, ctypes.c_void_p).value
print("driver ok", v1 != own, ptds != ctypes.cast(cuda.cuMemcpyHtoD_v2, ctypes.c_void_p).value)
