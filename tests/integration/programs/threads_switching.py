"""Threads making tiny allocations while the interpreter switches between them every microsecond: per-record
cost under --exact must not grow with the number of threads. Rounds per thread from argv[1], threads from
argv[2] (8); argv[3] (0), levels of recursion through map() above the loop: each level adds the
interpreter's C frames between two Python calls, so that 24 levels give every --native stack the 64 native
frames kept."""
import sys
import threading

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 800_000
n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
levels = int(sys.argv[3]) if len(sys.argv) > 3 else 0
sys.setswitchinterval(1e-6)
done = [0] * n_threads


def loop(k):
    keep = []
    for i in range(rounds):
        keep.append((k, str(i)))
        if len(keep) > 64:
            keep.clear()
    return rounds


def level(depth, k):
    return loop(k) if depth == 0 else sum(map(level, [depth - 1], [k]))


def work(k):
    done[k] = level(levels, k)


threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("rounds", sum(done))
