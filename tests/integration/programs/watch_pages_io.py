"""Page-protection watches and system calls: a buffer the loop both writes (its stores are sampled and
watched) and fills with readinto() (the kernel writes it: on a protected page the call would fail with
EFAULT), while a second thread reads and writes an array of its own. Prints a checksum that must be the
same with and without pyflow."""
import os
import sys
import tempfile
import threading

import numpy as np

fd, path = tempfile.mkstemp()
os.write(fd, bytes(range(256)) * 256)       # 64 KiB
os.close(fd)
buf = np.zeros(8192, dtype=np.float64)      # 64 KiB
shared = np.zeros(4096)
stop = False


def other():
    while not stop:
        shared[:] = shared * 0.5 + 1.0


def main(iterations):
    total = 0
    with open(path, "rb", buffering=0) as f:
        for i in range(iterations):
            buf[:] = i                                  # stores into buf (sampled, watched)
            f.seek(0)
            n = f.readinto(memoryview(buf).cast("B"))   # the kernel writes into buf
            assert n == 65536, n
            total += int(buf.view(np.uint8)[i % 65536])
    return total


t = threading.Thread(target=other, daemon=True)
t.start()
try:
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
finally:
    stop = True
    t.join()
    os.unlink(path)
