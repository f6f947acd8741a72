"""PieProf category "slice underutilization": element-wise indexing in a nested loop over numpy arrays.
Run: python3 slice_underuse.py [fixed]. The slow variant's line 16 should carry a large redundant-load
fraction (the same index arrays and strides are re-read by a new native call per element); the fixed
variant (one vectorized expression) should not show that line."""
import sys
import numpy as np

N = 300
a = np.arange(N * N, dtype=np.float64).reshape(N, N)
b = np.ones((N, N))
out = np.zeros((N, N))

def slow():
    for i in range(N):
        for j in range(N):
            out[i, j] = a[i, j] * b[i, j] + 1.0      # line 16: expected redundant loads

def fixed():
    np.multiply(a, b, out=out)                       # line 19: the fix
    np.add(out, 1.0, out=out)

for _ in range(15):
    (fixed if sys.argv[1:] == ["fixed"] else slow)()
print(float(out.sum()))
