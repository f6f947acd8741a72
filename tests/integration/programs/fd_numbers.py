"""Prints the descriptor numbers this program gets and holds: the same under pyflow as without it (pyflow's
own descriptors sit high, near the RLIMIT_NOFILE cap, and are left out here)."""
import os
import threading

first = os.open(os.devnull, os.O_RDONLY)
r, w = os.pipe()
print("opened", first, r, w)


def worker():   # a new thread: under --watch it opens its own perf events
    fd = os.open(os.devnull, os.O_RDONLY)
    print("thread opened", fd)
    os.close(fd)


t = threading.Thread(target=worker)
t.start()
t.join()
print("held", sorted(fd for fd in map(int, os.listdir("/proc/self/fd")) if fd < 900))
