"""Children that pyflow may lose: after a privilege drop, in a chroot, or after the program removed pyflow's
temporary directory.

Usage: lost_children.py setuid EXEC   fork; the child becomes nobody, allocates 5 MB (line 22) and, when EXEC
                                     is 1, runs a Python child that allocates 6 MB (as nobody)
       lost_children.py chroot DIR   fork; the child chroots into DIR, then forks a grandchild (not profiled)
       lost_children.py rmtmp        run a child (7 MB), remove pyflow's directory, then run a child capturing
                                     its stderr
"""
import os
import shutil
import subprocess
import sys

keep = bytearray(4_000_000)                                # line 15: the main process's own
mode = sys.argv[1]
if mode == "setuid":
    pid = os.fork()
    if pid == 0:
        os.setgid(65534)
        os.setuid(65534)
        dropped = bytearray(5_000_000)                     # line 22
        if sys.argv[2] == "1":
            subprocess.run([sys.executable, "-c", "x = bytearray(6_000_000)"], check=True)
        os._exit(0)
    os.waitpid(pid, 0)
elif mode == "chroot":
    pid = os.fork()
    if pid == 0:
        os.chroot(sys.argv[2])
        os.chdir("/")
        inner = os.fork()
        if inner == 0:
            lost = bytearray(3_000_000)
            os._exit(0)
        os.waitpid(inner, 0)
        os._exit(0)
    os.waitpid(pid, 0)
else:
    subprocess.run([sys.executable, "-c", "x = bytearray(7_000_000)"], check=True)    # profiled, then removed
    shutil.rmtree(os.path.dirname(os.environ["PYFLOW_OUTPUT"]))
    r = subprocess.run([sys.executable, "-c", "x = bytearray(1000)"], capture_output=True, text=True)
    print("child stderr:", repr(r.stderr))
print("done")
