import numpy as np

def native_big():
    return np.ones(4_000_000)          # line 4: 32,000,000 bytes through numpy (native)

def python_objects():
    return [str(i) * 3 for i in range(200_000)]   # line 7: Python objects

a = native_big()
b = python_objects()
print("ok", a.shape[0], len(b))
