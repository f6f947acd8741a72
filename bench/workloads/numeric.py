"""Numeric work: matrix products and FFTs (compute-bound, few allocations)."""
import numpy as np

rng = np.random.default_rng(0)
m = rng.random((600, 600))
for _ in range(12):
    m = m @ m.T
    m /= np.abs(m).max()
x = rng.random(2 ** 20)
for _ in range(20):
    x = np.fft.irfft(np.fft.rfft(x), n=x.size)
print(float(m.sum()), float(x.sum()))
