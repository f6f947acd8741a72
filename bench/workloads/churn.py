"""Pure-Python object churn: dicts of lists, tuples and strings built and dropped. argv[1]: rounds (12;
bench/instructions.py runs fewer)."""
import sys

for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 12):
    d = {}
    for i in range(100_000):
        d[i] = [i, str(i), (i, i + 1)]
    del d
