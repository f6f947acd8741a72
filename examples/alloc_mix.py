"""Where memory goes, in both layers.

What the report shows:
  - line 16 (`np.ones`): ~80 MB of *native* memory (numpy's data buffer), the biggest share of the peak;
  - line 20 (list of strings): tens of MB of *Python* objects;
  - line 26 (temporaries in a loop): a lot allocated, nothing live at exit;
  - line 32 (`cache.append`): memory that stays live until the program ends.
"""
import numpy as np

cache = []


def load():
    # a large native buffer: numpy allocates it with malloc, outside Python's allocators
    return np.ones(10_000_000)


def labels(n):
    return [f"item-{i}" for i in range(n)]


def churn():
    total = 0.0
    for _ in range(200):
        tmp = np.random.random(100_000)   # 800 KB each, freed at the next iteration
        total += tmp.sum()
    return total


def remember(i):
    cache.append(bytearray(200_000))


data = load()
names = labels(300_000)
churn()
for i in range(50):
    remember(i)
del data
print("done:", len(names), "labels,", len(cache), "cached blocks")
