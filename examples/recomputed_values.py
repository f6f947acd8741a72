"""Recomputed values: a loop that computes the same array (and the same string) every iteration.
Run: pyflow run examples/recomputed_values.py [fixed]. The slow variant's lines 14 and 15 are listed under
"recomputed values" ("recomputed the same 32.0 KiB value ... times: compute it once outside the loop, or
cache it"); the fixed variant computes each once, before the loop."""
import sys
import numpy as np

w = np.linspace(1.0, 2.0, 4096)


def slow(n):
    acc = 0.0
    for i in range(n):
        scale = np.sqrt(w)                               # line 14: the same value every iteration
        header = ",".join(f"col{k}" for k in range(60))  # line 15: the same str every iteration
        acc += scale[i % 4096] + len(header)
    return acc


def fixed(n):
    scale = np.sqrt(w)
    header = ",".join(f"col{k}" for k in range(60))
    acc = 0.0
    for i in range(n):
        acc += scale[i % 4096] + len(header)
    return acc


print((fixed if sys.argv[1:] == ["fixed"] else slow)(50_000))
