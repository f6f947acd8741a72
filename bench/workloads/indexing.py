"""An indexing loop making small objects: tuple and str keys built, looked up and dropped, ints boxed."""
index = {}
for i in range(50_000):
    index[(i % 997, str(i))] = i
hits = 0
for r in range(30):
    for i in range(50_000):
        key = (i % 997, str(i))
        hits += index.get(key, 0) > r
        name = "k" + str(i * r)
        hits += len(name) & 1
print("hits", hits)
