"""Does this process have CUDA? Probes the way programs and frameworks do (dlsym in the global scope, then
in a loaded library), before and after loading the CUDA library RTLD_LOCAL and then RTLD_GLOBAL. Prints
one line per probe; the output must be the same with and without the profiler (it exports the CUDA names
itself, and must never pose as a CUDA library)."""
import ctypes
import sys

NAMES = ["cudaMalloc", "cudaMemcpy", "cuMemAlloc_v2", "cuGetProcAddress_v2", "cudaGetDriverEntryPoint", "cuMemMap",
         "cudaMemcpy2D", "cuMemcpyPeer"]


def probe(where, lib):
    for name in NAMES:
        try:
            getattr(lib, name)
            print(where, name, "present")
        except AttributeError as e:
            ok = "undefined symbol" in str(e) and name in str(e)
            print(where, name, "absent" if ok else f"absent, odd dlerror: {e}")


probe("global", ctypes.CDLL(None))
if len(sys.argv) > 1:
    local = ctypes.CDLL(sys.argv[1])                    # RTLD_LOCAL, as ctypes does by default
    probe("global-after-local", ctypes.CDLL(None))
    probe("handle", local)
    ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    probe("global-after-global", ctypes.CDLL(None))
    p = ctypes.c_void_p()
    print("call through the global name:", ctypes.CDLL(None).cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)))
print("probe done")
