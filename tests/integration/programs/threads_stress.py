"""8 threads allocate and free across threads (producers allocate, consumers free); some blocks are kept.
Ground truth: 8 * 25 blocks of 100_000 bytes stay live (kept[]), everything else is freed elsewhere."""
import queue
import threading

q = queue.Queue(maxsize=64)
kept = []
lock = threading.Lock()


def producer(k):
    for i in range(3000):
        q.put(bytearray(100_000))              # line 13: allocated here, freed by a consumer thread
    with lock:
        for i in range(25):
            kept.append(bytearray(100_000))   # line 16: 200 blocks stay live


def consumer():
    while True:
        block = q.get()
        if block is None:
            return
        del block


producers = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
consumers = [threading.Thread(target=consumer) for _ in range(4)]
for t in producers + consumers:
    t.start()
for t in producers:
    t.join()
for _ in consumers:
    q.put(None)
for t in consumers:
    t.join()
more = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
consumers = [threading.Thread(target=consumer) for _ in range(4)]
for t in more + consumers:
    t.start()
for t in more:
    t.join()
for _ in consumers:
    q.put(None)
for t in consumers:
    t.join()
print("kept", len(kept))
