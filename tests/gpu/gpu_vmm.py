"""The CUDA virtual memory API as PyTorch's expandable segments use it: one reserved range, grown by mapping
physical chunks into it. Ground truth: line 22 maps 16 MiB (unmapped on line 27), line 23 maps 32 MiB (kept),
lines 24 and 25 map 8 MiB each (both unmapped by the one call on line 28), line 26 uploads 1 MiB into the
32 MiB chunk (an h2d edge whose destination is line 23's)."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
u64, size_t, MiB = ctypes.c_ulonglong, ctypes.c_size_t, 1 << 20
cuda.cuMemAddressReserve.argtypes = [ctypes.POINTER(u64), size_t, size_t, u64, u64]
cuda.cuMemCreate.argtypes = [ctypes.POINTER(u64), size_t, ctypes.c_void_p, u64]
cuda.cuMemMap.argtypes = [u64, size_t, size_t, u64, u64]
cuda.cuMemUnmap.argtypes = [u64, size_t]
cuda.cuMemcpyHtoD_v2.argtypes = [u64, ctypes.c_void_p, size_t]
va = u64()
assert cuda.cuMemAddressReserve(ctypes.byref(va), 64 * MiB, 0, 0, 0) == 0
handles = [u64() for _ in range(4)]
for h, mib in zip(handles, (16, 32, 8, 8)):
    assert cuda.cuMemCreate(ctypes.byref(h), mib * MiB, None, 0) == 0
host = ctypes.create_string_buffer(MiB)
assert cuda.cuMemMap(va.value, 16 * MiB, 0, handles[0].value, 0) == 0
assert cuda.cuMemMap(va.value + 16 * MiB, 32 * MiB, 0, handles[1].value, 0) == 0
assert cuda.cuMemMap(va.value + 48 * MiB, 8 * MiB, 0, handles[2].value, 0) == 0
assert cuda.cuMemMap(va.value + 56 * MiB, 8 * MiB, 0, handles[3].value, 0) == 0
assert cuda.cuMemcpyHtoD_v2(va.value + 20 * MiB, host, MiB) == 0
assert cuda.cuMemUnmap(va.value, 16 * MiB) == 0
assert cuda.cuMemUnmap(va.value + 48 * MiB, 16 * MiB) == 0
print("vmm ok")
