# Steady-state churn for the peak's bias: a deque(maxlen=200) refilled 100,000 times (mode "deque"), or a
# saturated functools.lru_cache(maxsize=100) (mode "lru"), each item 32 KB (a numpy array or bytes). The
# line's share of the peak is its 200 (100) items, whatever the sampling. Usage: peak_churn.py deque|lru numpy|python
import collections
import functools
import sys

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np


def item(i):
    if flavor == "numpy":
        return np.ones(4000)  # ITEM
    return bytes(32_000) + b"%d" % (i % 10)  # ITEM


@functools.lru_cache(maxsize=100)
def cached(i):
    return item(i)


q = collections.deque(maxlen=200)
for i in range(100_000):
    if mode == "deque":
        q.append(item(i))
    else:
        cached(i)
print("done")
