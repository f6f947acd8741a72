# Children over time: ten children run one after another, each holding 50 MB until it exits (subprocess:
# fork + exec of this script; or os.fork). The whole program's peak is one child's 50 MB plus the parent's
# few, not the sum. Usage: children_serial.py subprocess|fork  (a child: children_serial.py child)
import os
import subprocess
import sys


held = []


def child():
    held.append(bytearray(50_000_000))  # CHILD (held until the child exits)


if sys.argv[1] == "child":
    child()
    sys.exit(0)
for i in range(10):
    if sys.argv[1] == "fork":
        pid = os.fork()
        if pid == 0:
            child()
            os._exit(0)
        os.waitpid(pid, 0)
    else:
        subprocess.run([sys.executable, __file__, "child"], check=True)
print("children done")
