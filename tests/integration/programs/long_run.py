"""A busy loop: about 2 GB of short-lived allocations (small objects and numpy temporaries), nothing kept.
Prints the bytes it allocated (a Python-side count) so the test can relate the profile size to them."""
import numpy as np

allocated = 0
for i in range(400):
    for _ in range(200):
        x = [j for j in range(40)]          # ~ 400 B list + ints from the small-int cache
        allocated += 400
    a = np.ones(500_000)                    # 4 MB temporary
    b = a * 2
    allocated += 8_000_000
print("allocated", allocated)
