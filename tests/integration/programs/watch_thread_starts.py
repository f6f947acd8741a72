"""Starts 2,000 short threads, 50 at a time (tests/integration/cases/watch.py, watch_thread_starts): under
--watch with page-protection watchpoints and a short period, stores sampled inside pthread_create fall on
the new thread's descriptor, which glibc writes again with every signal blocked."""
import threading


def work(box):
    box.append(bytearray(64))


for r in range(40):
    box = []
    threads = [threading.Thread(target=work, args=(box,)) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print("done", len(box))
