# Leak shape: a cache appended to all along the run (mode "leak") against the same items built by the
# program's last statement, after a short start, and alive at exit (mode "twin"): a burst at the end is
# data built once, not a leak, however much of the run it takes. Usage: leak_end.py leak|twin python|numpy
import sys

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np


def item(i):
    if flavor == "numpy":
        return np.ones(4000) + i  # LEAK KEPT
    return bytes(20_000) + b"%d" % i  # LEAK KEPT


def work(i):
    s = 0
    for k in range(40):
        s += len(str(k * i))
    return s


def leak():
    cache = []
    for i in range(3000):
        work(i)
        if i % 2 == 0:
            cache.append(item(i))
    return cache


def twin():
    total = sum(work(i) for i in range(1500))  # a short start
    return [item(i) for i in range(1500)], total  # the last statement


kept = leak() if mode == "leak" else twin()
print(len(kept))
