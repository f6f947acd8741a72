"""PieProf category "API misuse": a running total accumulated element by element instead of np.sum.
Run: python3 api_misuse.py [fixed]. The slow variant's line 13 should carry a large redundant-load fraction
(each a[i] builds a scalar through the same native path reading the same array header); the fixed variant
(np.sum) should not."""
import sys
import numpy as np

a = np.random.default_rng(11).random(2_000_000)

def slow():
    total = 0.0
    for i in range(len(a)):
        total += a[i]                                # line 13: element by element
    return total

def fixed():
    return float(np.sum(a))

print(round((fixed if sys.argv[1:] == ["fixed"] else slow)(), 3))
