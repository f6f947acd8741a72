"""Runs non-Python programs directly and through a shell, and a Python child: the native ones must see the
environment they would have had without pyflow."""
import subprocess
import sys


def ours(text):
    return sorted(l for l in text.splitlines() if l.startswith(("PYFLOW_", "LD_PRELOAD")))


print("direct", ours(subprocess.run(["printenv"], capture_output=True, text=True).stdout))
print("shell", ours(subprocess.run("printenv", shell=True, capture_output=True, text=True).stdout))
child = subprocess.run([sys.executable, "-c", "x = bytearray(2_000_000); print(len(x))"], capture_output=True,
                       text=True)
print("python child", child.stdout.strip())
