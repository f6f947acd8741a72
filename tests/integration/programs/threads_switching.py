"""Threads making tiny allocations while the interpreter switches between them every microsecond: per-record
cost under --exact must not grow with the number of threads. Rounds per thread from argv[1], threads from
argv[2] (8)."""
import sys
import threading

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 800_000
n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
sys.setswitchinterval(1e-6)
done = [0] * n_threads


def work(k):
    keep = []
    for i in range(rounds):
        keep.append((k, str(i)))
        if len(keep) > 64:
            keep.clear()
    done[k] = rounds


threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("rounds", sum(done))
