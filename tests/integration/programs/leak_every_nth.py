# Leak shape: growth every Nth call: one call in seven stores its result for good (mode "leak"); its twin
# memoizes with a saturated functools.lru_cache(maxsize=100) (mode "twin").
# Usage: leak_every_nth.py leak|twin python|numpy
import functools
import sys

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np

store = {}


def make(i):
    if flavor == "numpy":
        return np.full(1500, i, dtype=np.float64)  # LEAK KEPT
    return bytes(12_000) + str(i).encode()  # LEAK KEPT


@functools.lru_cache(maxsize=100)
def cached(i):
    return make(i)


def handle(i):
    scratch = [str(k) for k in range(60)]
    if mode == "leak":
        if i % 7 == 0:
            store[i] = make(i)
    else:
        cached(i % 300)
    return len(scratch)


print(sum(handle(i) for i in range(14_000)), len(store))
