"""PieProf category "loop-invariant computation" / "repeated native call with the same arguments": a loop
recomputes the same numpy value each iteration. Run: python3 loop_invariant.py [fixed]. The slow variant's
line 14 should carry a large redundant-load fraction (np.sqrt(w) reads the same w, in the same native
routine, every iteration); the hoisted variant should not."""
import sys
import numpy as np

w = np.linspace(1.0, 2.0, 4096)
x = np.random.default_rng(7).random(4096)

def slow(n):
    acc = 0.0
    for i in range(n):
        norm = np.sqrt(w).sum()                      # line 14: the same value every iteration
        acc += x[i % 4096] / norm
    return acc

def fixed(n):
    norm = np.sqrt(w).sum()                          # hoisted
    acc = 0.0
    for i in range(n):
        acc += x[i % 4096] / norm
    return acc

print((fixed if sys.argv[1:] == ["fixed"] else slow)(200000))
