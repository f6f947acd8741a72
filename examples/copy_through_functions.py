"""x.copy() passed through functions that only read it, and a list turned into an array.

What the report shows: line 12 (`data.copy()`) copies 40 MB that nobody writes: redundant, although the
copy travels through two functions. Line 26 (`np.array(values)`) converts a list of floats: the bytes of
the array are not a duplicate of any buffer (the list holds pointers to float objects), so it is not a
redundant copy.
"""
import numpy as np


def prepare(data):
    return data.copy()          # line 12: the copy


def summarize(view):
    return float(view.sum()) + float(view.max())


def pipeline(data):
    return summarize(prepare(data))


data = np.random.random(5_000_000)
print(round(pipeline(data)))
values = [float(i) for i in range(1_000_000)]
arr = np.array(values)          # line 26: list -> array, a conversion, not a duplicate
print(arr.shape)
