"""Untouched memory: a buffer allocated far larger than what is used, and one never used at all.
Run: pyflow run examples/untouched_memory.py [fixed]. The slow variant's lines 12 and 13 are listed under
"untouched memory" (allocated 76 MiB, used 10%; and used 0%), and the report's header says how much of the
peak was never resident; the fixed variant allocates the size needed and nothing it does not use."""
import sys
import numpy as np

n_rows = 1_000_000


def slow():
    table = np.zeros(10 * n_rows)            # line 12: room for ten times the rows, one tenth filled
    spare = np.zeros(n_rows * 10)            # line 13: kept "just in case", never used
    table[:n_rows] = np.arange(n_rows)
    return float(table[:n_rows].sum()) + len(spare)


def fixed():
    table = np.empty(n_rows)                 # the size needed, every element written
    table[:] = np.arange(n_rows)
    return float(table.sum()) + n_rows * 10


print((fixed if sys.argv[1:] == ["fixed"] else slow)())
