"""Small Python objects (pymalloc blocks: --exact keeps them in the object table's dense map, inserted and
freed there without a lock) made on producer threads and freed on consumer threads, while a third thread
copies bytes around (a copy's ends are looked up in the table from that thread). Ground truth: line 17's
objects are all freed on other threads (nothing live at exit); line 20's 4 * 500 stay live."""
import queue
import sys
import threading

q = queue.Queue(maxsize=2048)
kept = []
lock = threading.Lock()
stop = threading.Event()


def producer():
    for i in range(20_000):
        q.put(bytes(100))                       # line 17: 133-byte objects, freed by a consumer
    mine = []
    for i in range(500):
        mine.append(bytes(200))                 # line 20: 233-byte objects, kept
    with lock:
        kept.extend(mine)


def consumer():
    while True:
        block = q.get()
        if block is None:
            return
        del block


def copier():
    src = bytearray(64 * 1024)
    while not stop.is_set():
        bytes(src)                              # large copies on a third thread


producers = [threading.Thread(target=producer) for _ in range(4)]
consumers = [threading.Thread(target=consumer) for _ in range(4)]
cop = threading.Thread(target=copier)
cop.start()
for t in producers + consumers:
    t.start()
for t in producers:
    t.join()
for _ in consumers:
    q.put(None)
for t in consumers:
    t.join()
stop.set()
cop.join()
print("kept", len(kept), sys.getsizeof(kept[0]))
