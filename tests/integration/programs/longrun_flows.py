# Copy flows for the aggregated recording (tests/integration/cases/longrun.py): 40 copies of a 4 MB buffer
# into a new buffer each. Usage: longrun_flows.py redundant|modified
#   redundant: the copy is never changed (each is a redundant copy: one buffer would have done)
#   modified:  the copy is changed after it is made (the twin: no redundant copy)
import sys
import time

mode = sys.argv[1]
src = bytearray(b"x" * 4_000_000)  # SRC
kept = 0
for i in range(40):
    dup = bytearray(src)  # COPY
    if mode == "modified":
        dup[len(dup) // 2] = 1
    kept += dup[0]
    time.sleep(0.02)
print(kept)
