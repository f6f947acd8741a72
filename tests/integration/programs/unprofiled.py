"""Starts Python children with environments that drop pyflow's variables, in each way a process can:
subprocess (vfork, or fork on 3.9), os.posix_spawn, fork then os.execve, os.execvpe's PATH search, a script
whose #! names python, and that script by its bare name through C's execvp; then one child that keeps them, and a non-Python one; a shell running Python, one
naming it by a variable of the environment it is given, and os.system once LD_PRELOAD is gone from its own
environment; a shell script that runs Python, given to sh and started by its #! line, and one that does
not. Last, it replaces itself."""
import ctypes
import os
import subprocess
import sys

work = sys.argv[1]
code = "x = [bytes(1000) for _ in range(3000)]; print('child', len(x))"
clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
tool = os.path.join(work, "tool.py")
with open(tool, "w") as f:
    f.write("#!/usr/bin/env python3\nprint('tool ran')\n")
os.chmod(tool, 0o755)
job = os.path.join(work, "job.sh")
with open(job, "w") as f:
    f.write(f"#!/bin/sh\n# the interpreter this job needs\nset -e\n\"{sys.executable}\" -c pass\n")
os.chmod(job, 0o755)
other = os.path.join(work, "other.sh")
with open(other, "w") as f:
    f.write("#!/bin/sh\necho python3 > /dev/null\n")
os.chmod(other, 0o755)

subprocess.run([sys.executable, "-c", code], env=clean, check=True)          # by subprocess
pid = os.posix_spawn(sys.executable, [sys.executable, "-c", code], clean)    # by posix_spawn
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os.execve(sys.executable, [sys.executable, "-c", code], clean)           # by fork and execve
os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    os.execvpe(os.path.basename(sys.executable), ["python", "-c", code],    # by a PATH search
               {"PATH": "/nonexistent:" + os.path.dirname(sys.executable)})
os.waitpid(pid, 0)
subprocess.run([tool], env=clean, check=True)                                # by a script's #! line
subprocess.run([sys.executable, "-c", "x = bytearray(3_000_000)"], env=dict(os.environ), check=True)  # profiled
pid = os.fork()
if pid == 0:                                        # C code's execvp finds the #! script along PATH itself
    os.environ.clear()
    os.environ["PATH"] = work + ":" + clean["PATH"]
    name = b"tool.py"
    ctypes.CDLL(None).execvp(name, (ctypes.c_char_p * 2)(name, None))   # by C's execvp
    os._exit(127)
os.waitpid(pid, 0)
subprocess.run(["true"], env=clean, check=True)                              # not Python
subprocess.run(f"{sys.executable} -c pass", shell=True, env=clean, check=True)  # by a shell
subprocess.run('"$PY" -c pass', shell=True, env=dict(clean, PY=sys.executable), check=True)  # by a shell variable
subprocess.run(["sh", job], env=clean, check=True)                           # by sh and a script
subprocess.run([job], env=clean, check=True)                                 # by a shell script's #! line
subprocess.run([other], env=clean, check=True)                               # not Python either
os.environ.pop("LD_PRELOAD", None)
sys.stdout.flush()
os.system(f"{sys.executable} -c pass")                                       # by os.system
os.execve(sys.executable, [sys.executable, "-c", "print('replaced')"], clean)    # itself
