"""Driver entry points fetched by name with cuGetProcAddress (how the CUDA runtime and some frameworks
reach the driver). Ground truth: line 17 allocates 24 MiB of GPU memory, freed on line 18; line 19
allocates 8 MiB, kept."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
fp = ctypes.c_void_p()
assert cuda.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(fp), 12000, 0, None) == 0
mem_alloc = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t)(fp.value)
assert cuda.cuGetProcAddress_v2(b"cuMemFree", ctypes.byref(fp), 12000, 0, None) == 0
mem_free = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_ulonglong)(fp.value)
a = ctypes.c_ulonglong()
b = ctypes.c_ulonglong()
print("start")
assert mem_alloc(ctypes.byref(a), 24 << 20) == 0
assert mem_free(a) == 0
assert mem_alloc(ctypes.byref(b), 8 << 20) == 0
print("procaddress ok")
