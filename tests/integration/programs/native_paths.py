"""Allocations under native code, for --native's call paths (the fast walk against libunwind's): a Python
callback that libffi and libc's qsort call (ctypes), which allocates under their frames; where numpy is
installed, arrays numpy's C allocates and a ufunc made from a Python function (numpy's loop calls back into
Python, which allocates); all of it on the main thread and three more. Prints a checksum."""
import ctypes
import ctypes.util
import threading

try:
    import numpy as np
except ImportError:
    np = None

libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
state = threading.local()


def compare(a, b):
    state.kept = str(a[0] * 1000 + b[0])   # a Python allocation under qsort's frames
    return a[0] - b[0]


def grow(x):
    return [x] * 3


def work(k, out):
    total = 0
    cmp = CMP(compare)
    for i in range(60):
        arr = (ctypes.c_int * 64)(*[(j * 7919 + i + k) % 101 for j in range(64)])
        libc.qsort(arr, 64, ctypes.sizeof(ctypes.c_int), cmp)
        total += arr[0] + arr[63]
        if np is not None:
            a = np.ones(1000 + k)
            b = np.concatenate([a, a])
            total += int(b.sum())
            total += len(np.frompyfunc(grow, 1, 1)(np.arange(40)))
    out[k] = total


out = [0] * 4
threads = [threading.Thread(target=work, args=(k, out)) for k in range(1, 4)]
for t in threads:
    t.start()
work(0, out)
for t in threads:
    t.join()
print(sum(out))
