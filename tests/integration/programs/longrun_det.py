"""A deterministic program for the aggregated recording (--aggregate), every allocation of its marked lines
1 MiB or more, so recorded exactly in every mode. Mode "det": runs about 3 s (several snapshots) and ends:
KEEP holds 2 MB each round until exit, TEMP makes 3 x 3 MB each round and frees them (its peak share is
transient, between snapshots), COPY copies 4 MB each round. Mode "kill": KEEP's 20 MB, then small busy work
for 2 s, then the program kills itself with SIGKILL."""
import os
import signal
import sys
import time

keep = []
src = bytearray(4_000_000)


def step():
    keep.append(bytearray(2_000_000))                 # KEEP
    tmp = [bytearray(3_000_000) for _ in range(3)]    # TEMP
    dup = bytes(src)                                  # COPY
    del tmp, dup


mode = sys.argv[1] if len(sys.argv) > 1 else "det"
if mode == "det":
    for i in range(12):
        step()
        time.sleep(0.25)
    print("done", len(keep))
else:
    for i in range(10):
        step()
    end = time.monotonic() + 2.0
    while time.monotonic() < end:   # a service keeps working: small allocations
        junk = [str(i) * 10 for i in range(2000)]
    print("killing", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
