"""GPU memory per line with nothing but ctypes and the CUDA runtime (no framework).

    pyflow run examples/gpu/cuda_ctypes.py            # libcudart from the system or the nvidia-* wheels
    pyflow run examples/gpu/cuda_ctypes.py /path/to/libcudart.so.12

What to look for in the report: the GPU column on the cudaMalloc lines (weights kept, scratch freed), an h2d
flow edge from `batch` to `weights` marked redundant (the same bytes uploaded every step), and a d2h edge
for the result."""
import ctypes
import ctypes.util
import glob
import os
import sys


def load_cudart():
    if len(sys.argv) > 1:
        return ctypes.CDLL(sys.argv[1])
    names = [ctypes.util.find_library("cudart")]
    for d in sys.path:   # pip's nvidia-cuda-runtime wheels
        names += sorted(glob.glob(os.path.join(d, "nvidia", "cu*", "lib", "libcudart.so.*")))
        names += sorted(glob.glob(os.path.join(d, "nvidia", "cuda_runtime", "lib", "libcudart.so.*")))
    for n in filter(None, names):
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    sys.exit("no libcudart found: pass its path")


rt = load_cudart()
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
H2D, D2H = 1, 2
N = 16 << 20   # 10 uploads of it stay within the first 256 MiB that pyflow compares in full

weights, scratch = ctypes.c_void_p(), ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(weights), N) == 0           # kept: live at exit
assert rt.cudaMalloc(ctypes.byref(scratch), 4 * N) == 0       # freed below
batch = (ctypes.c_char * N).from_buffer(bytearray(N))
for step in range(10):
    assert rt.cudaMemcpy(weights, batch, N, H2D) == 0         # the same bytes every step: redundant
result = (ctypes.c_char * N)()
assert rt.cudaMemcpy(result, weights, N, D2H) == 0
assert rt.cudaFree(scratch) == 0
print("done")
