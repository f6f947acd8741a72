"""A forked child that allocates, then execs another Python: one pid, two images in the report."""
import os
import sys

pid = os.fork()
if pid == 0:
    kept = bytearray(8 << 20)
    os.execv(sys.executable, [sys.executable, "-c", "x = bytearray(4 << 20); print('exec ok')"])
os.waitpid(pid, 0)
print("parent ok")
