"""A copy nobody needed: np.array(a) of an array that neither the copy nor the source ever changes.

What the report shows: line 14 copies 80 MB, flagged redundant (the fix: np.asarray(a), or use a);
line 18 copies too but then writes to the copy, so it is not flagged.
"""
import numpy as np


def mean_of(x):
    return float(x.mean())


a = np.arange(10_000_000, dtype=np.float64)
b = np.array(a)            # redundant: b is only read
print(mean_of(b))
del b

c = np.array(a)            # needed: c is modified below
c[0] = -1.0
print(mean_of(c))
del c
