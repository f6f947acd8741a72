"""Loads the CUDA library late with ctypes (dlopen + dlsym, as frameworks do) and uses GPU memory.
Ground truth: line 18 allocates 64 MiB on the GPU (freed on line 20); line 19 allocates 16 MiB, kept; line 22
uploads the same 4 MiB host buffer 5 times (redundant after the first); line 25 uploads a buffer that
changes each time (not redundant); line 27 downloads 4 MiB."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
cuda.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cuda.cudaFree.argtypes = [ctypes.c_void_p]
cuda.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
N = 4 << 20
host = (ctypes.c_char * N).from_buffer(bytearray(b"a" * N))
other = bytearray(N)
other_c = (ctypes.c_char * N).from_buffer(other)
big, kept = ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cudaMalloc(ctypes.byref(big), 64 << 20) == 0
assert cuda.cudaMalloc(ctypes.byref(kept), 16 << 20) == 0
assert cuda.cudaFree(big) == 0
for i in range(5):
    assert cuda.cudaMemcpy(kept, host, N, 1) == 0
for i in range(5):
    other[0] = i
    assert cuda.cudaMemcpy(kept, other_c, N, 1) == 0
back = (ctypes.c_char * N)()
assert cuda.cudaMemcpy(back, kept, N, 2) == 0
print("gpu ok")
