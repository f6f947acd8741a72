# A copy made inside a library function the user's line calls: np.nan_to_num copies its input (copy=True by
# default) and, with no NaN to replace, never changes the copy: redundant, made inside numpy's nan_to_num,
# and the fix is what the user's line can change (copy=False), not np.array advice (the line has none).
import numpy as np

a = np.ones(1_000_000)
total = 0.0
for i in range(12):
    total += np.nan_to_num(a)[i]  # LIBRARY COPY
print(total)
import copy
for i in range(12):
    total += copy.copy(a)[i + 1]  # NAMED COPY (made inside copy.copy: the line's own .copy( to drop)
print(total)
