"""The in-process counters (pyflow.runtime.counters) while several threads allocate and free, under --exact.
Ground truth: each of 4 threads allocates 200 blocks of 64 KiB and frees them again, 3 times, while the main
thread holds 16 MiB; a block made on a worker and freed on the main thread, and one made on the main thread
and freed on a worker, leave nothing live. Prints the counters' changes as `key value` lines: live after the
churn (expected ~0), after the hand-offs (~0), while the main thread's 16 MiB is held (~16 MiB), allocated
during the churn (>= 4 x 3 x 200 x 64 KiB), and the peak above the start (>= 16 MiB)."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from pyflow import runtime  # noqa: E402

BLOCK, N, ROUNDS, THREADS = 64 << 10, 200, 3, 4
before = runtime.counters()
if before is None:
    print("not profiled")
    sys.exit(2)


def churn():
    for _ in range(ROUNDS):
        blocks = [bytearray(BLOCK) for _ in range(N)]
        del blocks


held = bytearray(16 << 20)
mid = runtime.counters()
workers = [threading.Thread(target=churn) for _ in range(THREADS)]
for w in workers:
    w.start()
for w in workers:
    w.join()
after_churn = runtime.counters()

box = []
maker = threading.Thread(target=lambda: box.append(bytearray(8 << 20)))
maker.start()
maker.join()
box.clear()                                         # made on a worker, freed here
given = [bytearray(8 << 20)]
taker = threading.Thread(target=given.clear)        # made here, freed on a worker
taker.start()
taker.join()
after_handoff = runtime.counters()
peak_seen = after_handoff.peak
del held
end = runtime.counters()

print("held", mid.live - before.live)
print("live_after_churn", after_churn.live - mid.live)
print("live_after_handoff", after_handoff.live - mid.live)
print("live_after_release", end.live - before.live)
print("allocated_churn", after_churn.allocated - mid.allocated)
print("peak_over_start", peak_seen - before.live)
