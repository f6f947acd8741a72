# Python children started through programs pyflow does not profile: a shell (subprocess with shell=True),
# os.system (a shell started inside glibc, its pid unseen), and a chain of launchers (sh, env, nice).
import os, subprocess, sys

code = "x = bytearray(30_000_000); print(len(x))"
subprocess.run(f"{sys.executable} -c '{code}'; true", shell=True, check=True)                # line 6
os.system(f"{sys.executable} -c '{code}'; true")                                               # line 7
subprocess.run(["sh", "-c", f"env nice {sys.executable} -c '{code}'; true"], check=True)       # line 8
print("done")
