"""Runs a workload script over and over (a long-running service's stand-in), compiled once as a service's
code is: python3 longrun_loop.py SCRIPT SECONDS [ROUNDS] (it stops at whichever comes first)."""
import sys
import time

script, seconds = sys.argv[1], float(sys.argv[2])
max_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else None
with open(script) as f:
    code = compile(f.read(), script, "exec")
end = time.monotonic() + seconds
rounds = 0
while time.monotonic() < end and rounds != max_rounds:
    exec(code, {"__name__": "__main__", "__file__": script})
    rounds += 1
print("rounds", rounds)
