"""Many allocations from one line at the bottom of a deep stack, in a parent and a forked child: the
stack is recorded once per process (interned) and every allocation refers to it."""
import os


def down(n, work):
    if n == 0:
        return work()
    return down(n - 1, work)


def churn():
    keep = []
    for _ in range(2000):
        keep.append(bytearray(1000))    # line 15
        if len(keep) > 10:
            keep.pop(0)
    return len(keep)


down(40, churn)
pid = os.fork()
if pid == 0:
    down(40, churn)
    os._exit(0)
os.waitpid(pid, 0)
print("done")
