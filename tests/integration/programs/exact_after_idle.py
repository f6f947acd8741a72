# Dense small objects, an idle spell, then a large block and small objects (the exact record clock,
# recorder/internal/pf_clock.h: a small event may take its thread's latest time again; a large one never).
import time
junk = [str(i) for i in range(100_000)]         # line 4: dense small events
del junk
time.sleep(0.4)
big = bytes(30_000_000)                         # line 7: after the idle spell, one block
small = [str(i) for i in range(2000)]           # line 8: small objects after it
time.sleep(0.2)
del big, small
