"""Recomputed values and their twins. Line numbers are asserted by tests/integration/cases.py
(case_waste_recompute). Argument "numpy" adds the numpy loops (where numpy is installed)."""
import sys


def strings(n):
    total = 0
    for i in range(n):
        same = ",".join(["abcdefgh"] * 40)      # line 9: the same 408-byte str every iteration: flagged
        other = ",".join([str(i)] * 40)         # line 10: a new value every iteration: not flagged
        total += len(same) + len(other)
    return total


def arrays(n):
    import numpy as np
    w = np.linspace(1.0, 2.0, 4096)
    acc = 0.0
    for i in range(n):
        inv = np.sqrt(w)                        # line 20: the same 32 KiB array every iteration: flagged
        var = np.sqrt(w + i)                    # line 21: different contents every iteration: not flagged
        zero = np.zeros(4096)                   # line 22: zero-filled, never written: untouched, not recomputed
        acc += inv[i % 4096] + var[0] + zero[1]
    return acc


print(strings(100_000))
if sys.argv[1:] == ["numpy"]:
    print(arrays(30_000))
