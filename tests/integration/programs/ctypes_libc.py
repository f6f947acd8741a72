# Allocations made through libc functions that ctypes looks up on a library handle (dlsym), not through the
# PLT: pyflow must see them like direct calls (the line numbers are the test's ground truth).
import ctypes
import ctypes.util
import mmap

libc = ctypes.CDLL("libc.so.6")
found = ctypes.CDLL(ctypes.util.find_library("c"))
for lib in (libc, found):
    lib.malloc.restype = lib.calloc.restype = ctypes.c_void_p
    lib.malloc.argtypes = [ctypes.c_size_t]
    lib.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    lib.free.argtypes = [ctypes.c_void_p]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.memmove.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]

p = libc.malloc(50_000_000)                                                     # line 19: kept to the end
q = found.calloc(1, 20_000_000)                                                 # line 20: freed below
m = libc.mmap(None, 30_000_000, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)  # line 21
libc.memmove(p, q, 8_000_000)                                                   # line 22: an 8 MB copy
found.free(q)
libc.munmap(m, 30_000_000)
print("ok", bool(p))
