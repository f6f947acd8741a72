"""np.array(np.random.uniform(...)): copying a temporary that is thrown away at once.

What the report shows: line 8 copies 40 MB, redundant (np.random.uniform already returns a new array).
"""
import numpy as np

for _ in range(5):
    x = np.array(np.random.uniform(size=1_000_000))
    print(round(float(x.sum())))
