# Leak shape: per-request growth without temporaries on the leaking line: each request's handler keeps a
# record in a module-level log (mode "leak"); its twin keeps only the last 200 in a deque(maxlen=200), a
# bounded cache that fills and evicts (mode "twin"). Usage: leak_requests.py leak|twin python|numpy
import collections
import sys

mode, flavor = sys.argv[1], sys.argv[2]
if flavor == "numpy":
    import numpy as np

log = [] if mode == "leak" else collections.deque(maxlen=200)


def parse(request):
    fields = request.split(b",")
    return {f[:3]: f for f in fields}


def handle(i):
    request = b",".join(b"field%d=%d" % (k, i * k) for k in range(30))
    fields = parse(request)
    if flavor == "numpy":
        record = np.ones(250)  # LEAK KEPT
    else:
        record = bytearray(2000)  # LEAK KEPT
    log.append(record)
    return len(fields)


print(sum(handle(i) for i in range(10_000)), len(log))
