"""Copies that fill no object: a concatenation and numpy's take of 40-byte items (one memmove each)."""
import numpy as np
a = np.arange(1_000_000, dtype=np.float64)
c = np.concatenate([a, a])                  # line 4: a new layout of both, not a buffer too many
rows = np.zeros(100_000, dtype="V40")
t = rows.take(np.arange(100_000))           # line 6: 100,000 moves of 40 bytes into one array
w = np.array(a)                             # line 7: a whole copy nobody changes: redundant
print(float(c.sum()), len(t), float(w.sum()))
