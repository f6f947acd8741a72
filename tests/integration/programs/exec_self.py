# A process image replaced by exec: the first image holds 100 MB when it execs this script again; that
# memory ends with the image (no leak, not live at exit). Usage: exec_self.py first
import os
import sys

if sys.argv[1] == "first":
    held = bytearray(100_000_000)  # HELD
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, __file__, "second"])
small = [bytes(1000) for i in range(100)]
print("second image", len(small))
