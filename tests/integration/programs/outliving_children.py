"""Children that outlive the program, as multiprocessing's forkserver and resource tracker do: one that ends
a moment after it (argument: how long it sleeps first, then allocates again; "busyS": it computes for S
seconds instead), started with Popen and never waited for; a forked child that execs twice (three images of one pid, in the order they ran); and one that
execs a program that is not Python and outlives the program too (its pid runs on, its Python image ended)."""
import os
import subprocess
import sys

late = sys.argv[1] if len(sys.argv) > 1 else "0.3"
wait = ("t = time.time()\nwhile time.time() - t < " + late[4:] + ": pass\n" if late.startswith("busy")
        else "time.sleep(" + late + ")\n")
late = late[4:] if late.startswith("busy") else late
kept = bytearray(3_000_000)                                          # the program's own, live at exit
subprocess.Popen([sys.executable, "-c", "import time\nx = bytearray(5_000_000)\n" + wait +
                  "y = bytearray(2_000_000)"])                       # outlives the program
pid = os.fork()
if pid == 0:
    first = bytearray(4_000_000)
    inner = "import os, sys; z = bytearray(1_000_000); os.execv(sys.executable, [sys.executable, '-c', 'w = 1'])"
    os.execv(sys.executable, [sys.executable, "-c", inner])
os.waitpid(pid, 0)
if os.fork() == 0:
    os.execvp("sleep", ["sleep", str(min(float(late) + 1, 5))])  # not Python: not waited for
print("started")
