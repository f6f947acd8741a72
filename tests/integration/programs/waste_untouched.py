"""Untouched memory and its twins. Line numbers are asserted by tests/integration/cases/waste.py (case_waste_untouched).
Argument "numpy" adds the numpy lines (where numpy is installed)."""
import sys

N = 80_000_000
never = bytes(N)                 # line 6: calloc'd, never touched: >= 90% untouched
filled = bytearray(N)            # line 7: bytearray zero-fills what it allocates: touched, 0 untouched
if sys.argv[1:] == ["numpy"]:
    import numpy as np
    zeros = np.zeros(N // 8)                 # line 10: never used: >= 90% untouched
    full = np.empty(N // 8); full[:] = 1.0   # line 11: written in full: 0
    tenth = np.empty(N // 8)                 # line 12: one tenth written: ~90%
    tenth[: N // 80] = 2.0
    part = np.zeros(N // 8)                  # line 14: zero-filled by name, one tenth written: ~90%
    part[: N // 80] = 3.0
    print(float(full[-1] + tenth[0]))
print(len(never) + len(filled))
