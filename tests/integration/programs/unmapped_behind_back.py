"""A 4 MB bytes object, kept in pyflow's table, unmapped by a raw munmap pyflow never sees."""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
x = b"a" * 4_000_000          # a str-or-bytes object large enough to be kept in pyflow's table
addr, size = id(x), sys.getsizeof(x)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(x))   # nobody will ever touch it again
del x
start = (addr - 16) & ~4095                       # glibc's mmapped chunk: its header, page-aligned
length = ((addr + size + 4095) & ~4095) - start
print(libc.syscall(11, ctypes.c_void_p(start), ctypes.c_size_t(length)))   # munmap, behind pyflow's back
