"""Starts shell scripts with an environment that leaves pyflow's variables out, so the profiler reads each
one to tell whether it would run Python: scripts with subshells, command substitutions, case patterns and a
parenthesis inside quotes (Ubuntu's /sbin/ldconfig, which ctypes.util.find_library runs, has one)."""
import ctypes.util
import os
import subprocess
import sys
import tempfile

SCRIPTS = {
    "ldconfig_like": '#! /bin/sh\nif test $# = 0\nthen\n\techo "wrapper deferring update (trigger activated)"\n'
                     '\texit 0\nfi\nexec echo "ran with $@"\n',
    "subshells": "#!/bin/sh\n(cd / && echo in-subshell)\nx=$(echo sub) ; echo \"$x\"\n"
                 "case $1 in a) echo case-a ;; *) echo case-other ;; esac\nf() { echo in-f; }; f\n",
    "stray": "#!/bin/sh\necho ')' ; echo done)\n",
}

with tempfile.TemporaryDirectory() as d:
    for name, text in sorted(SCRIPTS.items()):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        for args in ([], ["a"]):
            cp = subprocess.run([path, *args], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
            print(name, args, cp.returncode, cp.stdout.strip().replace("\n", "|"))
print("libc", ctypes.util.find_library("c") is not None)
sys.stdout.flush()
