# Leak shape: one buffer grown by realloc all along the run (`buf += chunk` on a bytearray kept to the end,
# mode "leak"): one object, re-allocated as it grows, whose growth over time is the evidence; its twin grows
# the same bytearray to its full size once, at the start, then reuses it in place (mode "twin").
# Usage: leak_realloc.py leak|twin python
import sys

mode = sys.argv[1]
N, SIZE = 8000, 2000


def chunk(i):
    return b"%07d," % i * (SIZE // 8)


def leak():
    buf = bytearray()
    for i in range(N):
        c = chunk(i)
        buf += c  # LEAK KEPT
        done = [str(k * i) for k in range(40)]  # the loop's other work
    return buf


def twin():
    buf = bytearray()
    block = chunk(0)
    for i in range(N):
        buf += block  # LEAK KEPT
    for i in range(N):
        c = chunk(i)
        buf[i * SIZE:(i + 1) * SIZE] = c
        done = [str(k * i) for k in range(40)]
    return buf


kept = leak() if mode == "leak" else twin()
print(len(kept))
