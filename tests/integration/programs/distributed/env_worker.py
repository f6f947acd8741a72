"""A worker started outside pyflow (tests: a shell loop with `pyflow env`'s environment): keeps MiB
megabytes on one line, then ends as asked: normally, by os._exit(3), or killed by its own SIGKILL."""
import os
import signal
import sys

mib, how = int(sys.argv[1]), sys.argv[2]
kept = [bytearray(1 << 20) for _ in range(mib)]   # WORKER_LINE
print(f"worker {os.environ.get('RANK', '?')} kept {len(kept)}", flush=True)
if how == "os_exit":
    os._exit(3)
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
