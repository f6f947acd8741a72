import os
import sys

print("argv", sys.argv[1:])
print("name", __name__)
data = sys.stdin.read()
print("stdin", len(data), data[:20])
for i in range(2000):
    print(i, "x" * (i % 50))
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
if mode == "exit3":
    sys.exit(3)
if mode == "raise":
    raise ValueError("boom from the program")
if mode == "interrupt":
    raise KeyboardInterrupt
if mode == "osexit":
    keep = bytearray(3_000_000)   # line 18: made before os._exit
    sys.stdout.flush()
    os._exit(7)
if mode == "sigkill":
    keep = bytearray(3_000_000)   # line 22
    sys.stdout.flush()
    os.kill(os.getpid(), 9)
