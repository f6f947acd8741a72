"""Runs a workload script over and over for a given number of seconds (a long-running service's stand-in):
python3 longrun_loop.py SCRIPT SECONDS [ROUNDS] (it stops at whichever comes first)."""
import runpy
import sys
import time

script, seconds = sys.argv[1], float(sys.argv[2])
max_rounds = int(sys.argv[3]) if len(sys.argv) > 3 else None
end = time.monotonic() + seconds
rounds = 0
while time.monotonic() < end and rounds != max_rounds:
    runpy.run_path(script, run_name="__main__")
    rounds += 1
print("rounds", rounds)
