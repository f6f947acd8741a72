"""Pure-Python object churn: dicts of lists, tuples and strings built and dropped. argv[1], a number: rounds (12;
bench/instructions.py runs fewer)."""
import sys

for r in range(int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 12):
    d = {}
    for i in range(100_000):
        d[i] = [i, str(i), (i, i + 1)]
    del d
