"""Recomputed values and their twins. Line numbers are asserted by tests/integration/cases/waste.py
(case_waste_recompute). Argument "numpy" adds the numpy loops (where numpy is installed)."""
import sys


def strings(n):
    total = 0
    for i in range(n):
        same = ",".join(["abcdefgh"] * 40)      # line 9: the same 408-byte str every iteration: flagged
        other = ",".join([str(i)] * 40)         # line 10: a new value every iteration: not flagged
        floats = [i + k + 0.5 for k in range(64)]   # line 11: new floats at the addresses just freed:
        total += len(same) + len(other) + len(floats)   # the item array's pointers repeat, not flagged
    return total


def arrays(n):
    import numpy as np
    w = np.linspace(1.0, 2.0, 4096)
    acc = 0.0
    for i in range(n):
        inv = np.sqrt(w)                        # line 21: the same 32 KiB array every iteration: flagged
        var = np.sqrt(w + i)                    # line 22: different contents every iteration: not flagged
        zero = np.zeros(4096)                   # line 23: zero-filled, never written: untouched, not recomputed
        acc += inv[i % 4096] + var[0] + zero[1]
    return acc


print(strings(100_000))
if sys.argv[1:] == ["numpy"]:
    print(arrays(30_000))


def cycling(n):
    return sum(len("y" * (i % 50 + 400)) for i in range(n))    # line 34: 50 values, each again: one finding


print(cycling(200_000))
