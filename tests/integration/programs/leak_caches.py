# Not leaks: the interpreter's, the standard library's and numpy's own caches (re's compiled patterns,
# small ints and floats, numpy's small-block cache), a table built at start that lives until the
# interpreter frees it at shutdown. Usage: leak_caches.py twin python|numpy
import re
import sys

flavor = sys.argv[2]
if flavor == "numpy":
    import numpy as np
TABLE = {i: str(i) * 10 for i in range(50_000)}  # KEPT


def step(i):
    m = re.match("k(%d)x" % (i % 700), "k%dx" % (i % 700))  # KEPT
    v = [float(k) / 3 for k in range(40)]  # KEPT
    if flavor == "numpy":
        a = np.arange(50) * i  # KEPT
        v.append(float(a.sum()))
    return (m is not None) + len(v) + len(TABLE[i % 50_000])


print(sum(step(i) for i in range(15_000)))
