# Copy flows for the aggregated recording (tests/integration/cases/longrun.py): 40 copies of a 4 MB buffer,
# each into a new buffer. Usage: longrun_flows.py redundant|modified
#   redundant: no copy is ever changed (each is a redundant copy: one buffer would have done)
#   modified:  each copy is changed after it is made (the twin: no redundant copy)
import sys
import time

mode = sys.argv[1]
src = bytearray(4_000_000)  # SRC
for k in range(0, len(src), 65536):
    src[k] = k >> 16 & 0xff
kept = 0
for i in range(40):
    dup = bytearray(src)  # COPY
    if mode == "modified":
        dup[len(dup) // 2] = 1
    kept += dup[0]
    time.sleep(0.02)
print(kept)
