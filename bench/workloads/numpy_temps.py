"""numpy with large temporaries: every expression allocates and frees big arrays."""
import numpy as np

a = np.random.random(2_000_000)
for _ in range(60):
    b = (a * 2.0 + 1.0) / (a + 3.0)
    c = np.sqrt(b) - a
    a = c * 0.5 + a * 0.5
print(float(a.sum()))
