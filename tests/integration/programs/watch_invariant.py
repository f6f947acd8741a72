"""A loop that recomputes the same small numpy array every iteration (PieProf's loop-invariant computation),
for about 2 seconds: line 13 loads the same w and stores the same values into a block malloc hands back
each iteration. Run: python3 watch_invariant.py [iterations] [fixed]."""
import sys
import numpy as np

w = np.linspace(1.0, 2.0, 512)


def slow(n):
    acc = 0.0
    for i in range(n):
        r = np.sqrt(w) * 2.0                     # line 13: the same value every iteration
        acc += r[i % 512]
    return acc


def fixed(n):
    r = np.sqrt(w) * 2.0
    acc = 0.0
    for i in range(n):
        acc += r[i % 512]
    return acc


n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 400_000
print(round((fixed if "fixed" in sys.argv[1:] else slow)(n), 3))
