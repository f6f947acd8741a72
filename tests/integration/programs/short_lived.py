# Many short-lived threads and child processes, each recording little: the profile must cost about what
# they record, not a chunk per thread and a segment per process.
import json
import subprocess
import sys
import threading

doc = json.dumps([{"key": i, "value": "x" * 40} for i in range(4000)])
for _ in range(300):
    worker = threading.Thread(target=json.loads, args=(doc,))
    worker.start()
    worker.join()
for _ in range(8):
    subprocess.run([sys.executable, "-c", "x = [0] * 100000"], check=True)
print("done")
