"""Pure-Python object churn: dicts of lists, tuples and strings built and dropped."""
for r in range(12):
    d = {}
    for i in range(100_000):
        d[i] = [i, str(i), (i, i + 1)]
    del d
