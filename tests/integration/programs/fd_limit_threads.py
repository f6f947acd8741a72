"""Runs many threads (each opens its own perf events under --watch), then opens descriptors until
RLIMIT_NOFILE refuses one and prints how many it got: without pyflow, and under pyflow where the hard limit
leaves room above the soft one, the same number."""
import os
import sys
import threading

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ready = threading.Barrier(N + 1)
done = threading.Event()


def worker():
    # 2 MiB is always recorded: the runtime's slow path runs, which starts watching this thread here, before
    # the descriptors are counted (perf_event_open takes the lowest free number for an instant before pyflow
    # moves it up, so a thread starting watch while the program is at its limit could cost it an open())
    keep = bytearray(2 << 20)
    ready.wait()
    done.wait()
    return keep


threads = [threading.Thread(target=worker) for _ in range(N)]
for t in threads:
    t.start()
ready.wait()
fds = []
try:
    while True:
        fds.append(os.open(os.devnull, os.O_RDONLY))
except OSError as e:
    print("opened", len(fds), "then", e.strerror)
    os.close(fds.pop())     # one free descriptor, to list the others: which of the low ones are not ours
    mine = set(fds)
    others = []
    for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
        if 2 < fd < 1024 and fd not in mine:
            try:
                others.append(f"{fd} {os.readlink(f'/proc/self/fd/{fd}')}")
            except OSError:
                pass
    print("not ours below 1024:", others)
for fd in fds:
    os.close(fd)
done.set()
for t in threads:
    t.join()
