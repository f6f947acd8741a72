"""Copy-heavy: array copies, bytes copies and slices."""
import numpy as np

a = np.random.random(1_000_000)
total = 0.0
for _ in range(700):
    b = np.array(a)
    total += b[0]
    c = a.copy()
    c[1] = 2.0
    total += c[1]
buf = bytearray(4_000_000)
for _ in range(800):
    total += len(bytes(buf)) + len(buf[1000:2_000_000])
print(total)
