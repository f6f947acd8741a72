"""A cache that only grows, next to data made once and temporaries.

What the report shows under "probable leaks": line 18 (the cache), with a likelihood near 100% and its
growth rate. Not line 8 (a table built once at start-up: live at exit but not growing) and not line 17
(temporaries: freed)."""
import time

TABLE = [bytearray(50_000) for _ in range(40)]
cache = {}
EXTRA = bytearray(10)


def handle(i):
    """Serve request i (and remember its result, forever)."""
    scratch = bytearray(10)
    del scratch
    tmp = bytearray(200_000)
    cache[i] = bytearray(100_000)
    return len(tmp)


for i in range(300):
    handle(i)
    time.sleep(0.002)
print(len(cache))
