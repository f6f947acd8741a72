"""Uploads staged through pinned memory, as CuPy's asarray makes them: the host bytes are copied into a pinned
buffer, which is then sent (both on one line, as both happen inside one library call). Ground truth: line 20
stages and sends the host buffer once (no redundant copy: the staging copy is the upload's, and one upload is
what the line asked for); line 21 stages and sends the same bytes again (redundant: the upload and its staging
copy); line 22 copies the host buffer into a second pinned buffer that nothing sends, and neither changes (a
redundant host copy: staging excuses only a copy an upload sends)."""
import ctypes
import os
import sys

cuda = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.environ["PYFLOW_TEST_MOCKCUDA"])
cuda.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cuda.cudaMallocHost.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
cuda.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
N = 4 << 20
host = (ctypes.c_char * N)(); ctypes.memset(host, ord("h"), N)     # N bytes exactly, as a numpy array
pinned, spare, dev1, dev2 = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cudaMallocHost(ctypes.byref(pinned), N) == 0 and cuda.cudaMallocHost(ctypes.byref(spare), N) == 0
assert cuda.cudaMalloc(ctypes.byref(dev1), N) == 0 and cuda.cudaMalloc(ctypes.byref(dev2), N) == 0
ctypes.memmove(pinned, host, N); assert cuda.cudaMemcpy(dev1, pinned, N, 1) == 0    # staged, sent once
ctypes.memmove(pinned, host, N); assert cuda.cudaMemcpy(dev2, pinned, N, 1) == 0    # the same bytes again
ctypes.memmove(spare, host, N)                                                       # a copy nothing sends
print("staged ok")
