# Leak shape: a slow leak in a long loop: every buffer is made on one line and about 3% of them escape into
# a list that is never emptied (mode "leak"); its twin holds each phase's buffers in a list freed at the end
# of the phase (mode "twin"). Usage: leak_slow.py leak|twin python|numpy
import random
import sys

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np
random.seed(1)
escaped = []


def buffer():
    if flavor == "numpy":
        return np.empty(1000)  # LEAK KEPT
    return bytearray(8000)  # LEAK KEPT


def leak():
    for i in range(30_000):
        b = buffer()
        done = [str(k * i) for k in range(10)]  # the loop's other work
        if random.random() < 0.03:
            escaped.append(b)


def twin():
    for phase in range(6):
        held = []
        for i in range(5000):
            b = buffer()
            done = [str(k * i) for k in range(10)]
            if random.random() < 0.5:
                held.append(b)
        del held


leak() if mode == "leak" else twin()
print(len(escaped))
