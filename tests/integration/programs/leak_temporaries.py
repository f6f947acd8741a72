# Leak shape: a line that keeps part of what it makes, with temporaries on the same line (mode "leak"); its
# twin builds its data once, then works with it (mode "twin"). The line that must (LEAK) or must not (KEPT)
# be reported carries the marker. Usage: leak_temporaries.py leak|twin python|numpy
import sys
import time

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np

hist = []


def leak():
    for i in range(3000):
        if flavor == "numpy":
            hist.append(np.exp(np.random.rand(4000) * 2))  # LEAK
        else:
            hist.append(bytes(8000)[:4000] + b"")  # LEAK
        work(i)


def work(i):
    s = 0
    for k in range(40):
        s += len(str(k * i))
    return s


def twin():
    if flavor == "numpy":
        rows = [np.ones(4000) for i in range(1000)]  # KEPT
    else:
        rows = [('a', i, None) for i in range(100_000)]  # KEPT
    total = 0
    for i in range(30000):     # then used: a run several times longer than the build
        total += work(i) + len(rows[i % len(rows)])
    return rows, total


t0 = time.perf_counter()
kept = leak() if mode == "leak" else twin()
print("ran", round(time.perf_counter() - t0, 3))
