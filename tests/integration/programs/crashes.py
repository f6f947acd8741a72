"""Ends the way argv[1] says, after allocating: 'abort' (os.abort), 'segv' (a C-level fault through ctypes),
'timers' (its own SIGALRM/SIGPROF handlers firing from setitimer during allocation-heavy work, then exit 0)."""
import ctypes
import os
import signal
import sys

keep = [bytearray(2_000_000) for _ in range(4)]     # line 8: allocated before the end
print("allocated", sum(len(b) for b in keep), flush=True)
how = sys.argv[1]
if how == "abort":
    os.abort()
elif how == "segv":
    ctypes.string_at(0)
elif how == "timers":
    ticks = {"alrm": 0, "prof": 0}
    signal.signal(signal.SIGALRM, lambda s, f: ticks.__setitem__("alrm", ticks["alrm"] + 1))
    signal.signal(signal.SIGPROF, lambda s, f: ticks.__setitem__("prof", ticks["prof"] + 1))
    signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
    signal.setitimer(signal.ITIMER_PROF, 0.005, 0.005)
    junk = 0
    while ticks["alrm"] < 20 or ticks["prof"] < 20:
        junk += len([bytes(100) for _ in range(1000)])
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_PROF, 0)
    print("timers fired", ticks["alrm"] >= 20, ticks["prof"] >= 20)
