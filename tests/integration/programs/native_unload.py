"""Loads LIBRARY, allocates from a Python callback it calls, and unloads it (dlclose), COUNT times."""
import _ctypes
import ctypes
import sys

path, count = sys.argv[1], int(sys.argv[2])
kept = []
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def allocate(i):
    kept.append(bytearray(100_000 + i))
    return i


callback = CALLBACK(allocate)
for i in range(count):
    lib = ctypes.CDLL(path)
    lib.call_back.argtypes = (CALLBACK, ctypes.c_int)
    lib.call_back(callback, i)
    handle = lib._handle
    del lib
    _ctypes.dlclose(handle)
print(len(kept), sum(len(b) for b in kept))
