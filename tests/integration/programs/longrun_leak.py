"""A service for about 4 s (16 snapshots of --aggregate at PYFLOW_AGGREGATE_MS=250): each request keeps a 100 KB record in a log
that only grows (mode "leak", some 40 MB), or in a bounded cache of the last 50 (mode "twin", 5 MB: some
16 samples' worth, so it is seen holding it); both make temporaries.
Usage: longrun_leak.py leak|twin"""
import collections
import sys
import time

mode = sys.argv[1]
log = [] if mode == "leak" else collections.deque(maxlen=50)


def handle(i):
    request = b",".join(b"field%d=%d" % (k, i * k) for k in range(30))
    scratch = bytearray(50_000)
    scratch[:len(request)] = request
    log.append(bytearray(100_000))  # LEAK KEPT
    return len(scratch)


end = time.monotonic() + 4.0
i = 0
while time.monotonic() < end:
    for _ in range(2):
        handle(i)
        i += 1
    time.sleep(0.02)
print(i, len(log))
