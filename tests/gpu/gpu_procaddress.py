"""Driver entry points fetched by name with cuGetProcAddress, also through cuGetProcAddress fetched by name
(as a static CUDA runtime, CuPy's, does). Ground truth: line 17 allocates 24 MiB of GPU memory, freed on
line 18; line 19 allocates 8 MiB, kept; lines 29 (CUDA 12 ABI) and 30 (11.3 ABI) 16 and 4 MiB, kept."""
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
GPA12 = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                         ctypes.c_ulonglong, ctypes.c_void_p)
GPA11 = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                         ctypes.c_ulonglong)
ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t)
assert cuda.cuGetProcAddress_v2(b"cuGetProcAddress", ctypes.byref(fp), 12000, 0, None) == 0
gpa12 = GPA12(fp.value)
assert cuda.cuGetProcAddress_v2(b"cuGetProcAddress", ctypes.byref(fp), 11030, 0, None) == 0
gpa11 = GPA11(fp.value)
assert gpa12(b"cuMemAlloc", ctypes.byref(fp), 12000, 0, None) == 0 and ALLOC(fp.value)(ctypes.byref(b), 16 << 20) == 0
assert gpa11(b"cuMemAlloc", ctypes.byref(fp), 11030, 0) == 0 and ALLOC(fp.value)(ctypes.byref(b), 4 << 20) == 0
print("procaddress ok")
