"""Runs a workload script over and over for a given number of seconds (a long-running service's stand-in):
python3 longrun_loop.py SCRIPT SECONDS [--pause-after SECONDS] """
import runpy
import sys
import time

script, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
rounds = 0
while time.monotonic() < end:
    runpy.run_path(script, run_name="__main__")
    rounds += 1
print("rounds", rounds)
