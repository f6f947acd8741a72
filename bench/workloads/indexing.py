"""Small-object indexing: tuple and str keys built in a loop and looked up in dicts (many tiny, short-lived
allocations: the heaviest load on `--exact` and on the profile's size)."""
index = {}
for i in range(40_000):
    index[(i % 97, str(i))] = i
total = 0
for r in range(30):
    for i in range(40_000):
        key = (i % 97, str(i))
        total += index[key]
        name = "k" + str(i + r)
        total += len(name)
print(total)
