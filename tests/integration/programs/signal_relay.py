"""Counts the signals it handles; prints each as it comes, and the counts when SIGTERM ends it.

Usage: signal_relay.py            handle USR1 USR2 ALRM PIPE VTALRM PROF XCPU RTMIN HUP, end on TERM
       signal_relay.py stop SIG   stop itself with SIGSTOP or SIGTSTP once ready, then exit 0 when continued
"""
import os
import signal
import sys
import time

keep = bytearray(3_000_000)
if len(sys.argv) > 2 and sys.argv[1] == "stop":
    print("ready", os.getpid(), flush=True)
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    print("resumed", flush=True)
    sys.exit(0)

counts = {}
NAMES = ["SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGVTALRM", "SIGPROF", "SIGXCPU", "SIGRTMIN", "SIGHUP"]


def handled(sig, frame):
    name = signal.Signals(sig).name
    counts[name] = counts.get(name, 0) + 1
    print("got", name, flush=True)


def ending(sig, frame):
    counts["SIGTERM"] = counts.get("SIGTERM", 0) + 1
    if counts["SIGTERM"] == 1:
        print("got SIGTERM", flush=True)
        time.sleep(0.5)     # a second copy would arrive meanwhile
        print("counts", " ".join(f"{k}={v}" for k, v in sorted(counts.items())), flush=True)
        sys.exit(0)


for name in NAMES:
    signal.signal(getattr(signal, name), handled)
signal.signal(signal.SIGTERM, ending)
print("ready", os.getpid(), flush=True)
while True:
    time.sleep(0.05)
