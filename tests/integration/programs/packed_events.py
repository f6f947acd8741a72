"""Deterministic allocations and frees for the packed-event cases (tests/integration/cases/packed.py): small
objects freed at once (pymalloc neighbours), kept objects, bytearrays grown by realloc, dicts and lists of
known sizes, and a second thread doing the same (with "alone", no second thread); with "kill N", the process
SIGKILLs itself after N allocations of distinct sizes (70000 + i bytes of buffer each), its profile open."""
import os
import signal
import sys
import threading


def churn(rounds):
    kept = []
    for i in range(rounds):
        tmp = [i] * (i % 50)            # CHURN
        d = {j: j for j in range(i % 20)}   # DICTS
        if i % 7 == 0:
            kept.append(bytes(100 + i % 300))   # KEPT
        del tmp, d
    buf = bytearray()
    for i in range(3000):
        buf += b"x" * 37                # GROWN
    return kept, buf


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "kill":
        n = int(sys.argv[2])
        held = []
        for i in range(n):
            held.append(bytearray(70000 + i))   # KILLED
            if i % 2:
                held[i - 1] = None
        os.kill(os.getpid(), signal.SIGKILL)
    alone = sys.argv[1:] == ["alone"]
    worker = threading.Thread(target=churn, args=(20000,))
    if not alone:
        worker.start()
    kept, buf = churn(30000)
    if not alone:
        worker.join()
    print(len(kept), len(buf))


main()
