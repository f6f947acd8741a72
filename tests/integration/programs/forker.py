import os

parent = bytearray(2_000_000)          # line 3
pid = os.fork()
if pid == 0:
    child = bytearray(5_000_000)       # line 6: allocated in the child
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child status", status)
