"""64 threads alive at once, each having recorded about 420 KB of allocations into chunks of the profile
of its own (6 to 7 chunks of 64 KiB under PYFLOW_PACKED=0), then all waiting together before they end
(tests/integration/cases/robustness.py, case_exact_rss_writer_threads): what each keeps resident of the
chunks it filled adds up across the threads while they wait."""
import threading
import time

THREADS = 64
recorded = threading.Barrier(THREADS + 1)
finish = threading.Event()


def work():
    for i in range(3_700):
        x = [i]
    recorded.wait()
    finish.wait()


threads = [threading.Thread(target=work) for _ in range(THREADS)]
for t in threads:
    t.start()
recorded.wait()
time.sleep(0.3)
finish.set()
for t in threads:
    t.join()
print("done", flush=True)
