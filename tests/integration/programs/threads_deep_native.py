"""Threads making tiny allocations under deep native stacks while the interpreter switches between them every
microsecond: each thread recurses through map() (every level adds the interpreter's C frames between two
Python calls) and allocates at the bottom, so every --native stack has 64 native frames (the most kept).
Per-record cost under --exact --native must not grow with the native depth or the threads. Rounds per
thread from argv[1], threads from argv[2] (8), levels from argv[3] (24)."""
import sys
import threading

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
levels = int(sys.argv[3]) if len(sys.argv) > 3 else 24
sys.setswitchinterval(1e-6)
done = [0] * n_threads


def bottom(k):
    keep = []
    for i in range(rounds):
        keep.append((k, str(i)))
        if len(keep) > 64:
            keep.clear()
    return rounds


def level(depth, k):
    if depth == 0:
        return bottom(k)
    return sum(map(level, [depth - 1], [k]))


def work(k):
    done[k] = level(levels, k)


threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("rounds", sum(done))
