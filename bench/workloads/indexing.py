"""Small-object indexing: tuple and str keys built in a loop and looked up in dicts (many tiny, short-lived
allocations: the heaviest load on `--exact` and on the profile's size). argv[1], a number: rounds of lookups (30;
bench/instructions.py runs fewer)."""
import sys

rounds = int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 30
index = {}
for i in range(40_000):
    index[(i % 97, str(i))] = i
total = 0
for r in range(rounds):
    for i in range(40_000):
        key = (i % 97, str(i))
        total += index[key]
        name = "k" + str(i + r)
        total += len(name)
print(total)
