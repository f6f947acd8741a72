"""Events of many streams for the report's merge: 4 threads churn small objects and bytearrays while the
main thread forks a child that runs 4 threads of its own. Deterministic amounts; the order the threads
take turns in is the scheduler's."""
import os
import threading


def churn(k, rounds):
    kept = []
    for i in range(rounds):
        tmp = [bytearray(64 + (i * 7 + k) % 500) for _ in range(20)]     # CHURN: freed at once
        if i % 50 == 0:
            kept.append(bytearray(10_000 + k))                           # KEPT
        del tmp
    return kept


def threads(n, rounds):
    out = [None] * n
    ts = [threading.Thread(target=lambda k=k: out.__setitem__(k, churn(k, rounds))) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


pid = os.fork()
if pid == 0:
    threads(4, 1500)
    os._exit(0)
parent = threads(4, 1500)
_, status = os.waitpid(pid, 0)
print("child status", status)
