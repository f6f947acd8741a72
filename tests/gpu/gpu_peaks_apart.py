"""The GPU's peak and the host's fall at different instants. Ground truth: line 14 allocates 64 MiB on the
GPU, freed on line 15 (the GPU peak, 64 MiB, between them); line 17 then holds 200 MB of host memory for a
moment (the host peak), long after the GPU peak."""
import ctypes
import os
import sys
import time

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
cuda.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cuda.cudaFree.argtypes = [ctypes.c_void_p]
buf = ctypes.c_void_p()
time.sleep(0.05)
assert cuda.cudaMalloc(ctypes.byref(buf), 64 << 20) == 0
assert cuda.cudaFree(buf) == 0
time.sleep(0.3)
host = bytearray(200_000_000)
del host
print("peaks ok")
