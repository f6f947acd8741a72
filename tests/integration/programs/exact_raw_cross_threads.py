"""Raw-domain blocks (PyMem_RawMalloc: small, so --exact keeps them in the object table's dense map, inserted
and freed there without a lock) made, moved by realloc and freed on different threads, called through ctypes
so that no thread holds the GIL while the hooks run: the table's updates really overlap. Ground truth: line
23's 4 * 5000 blocks of 120 bytes are all reallocated on other threads (line 32: 300 bytes) and freed
there; line 25's 4 * 200 blocks of 200 bytes stay live."""
import ctypes
import queue
import threading

lib = ctypes.CDLL(None)
raw_malloc, raw_realloc, raw_free = lib.PyMem_RawMalloc, lib.PyMem_RawRealloc, lib.PyMem_RawFree
raw_malloc.restype = raw_realloc.restype = ctypes.c_void_p
raw_malloc.argtypes = [ctypes.c_size_t]
raw_realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
raw_free.argtypes = [ctypes.c_void_p]
q = queue.Queue(maxsize=512)
kept = []
lock = threading.Lock()


def producer():
    for i in range(5000):
        q.put(raw_malloc(120))
    with lock:
        kept.extend(raw_malloc(200) for _ in range(200))


def consumer():
    while True:
        p = q.get()
        if p is None:
            return
        p = raw_realloc(p, 300)
        raw_free(p)


threads = [threading.Thread(target=producer) for _ in range(4)] + [threading.Thread(target=consumer) for _ in range(4)]
for t in threads:
    t.start()
for t in threads[:4]:
    t.join()
for _ in range(4):
    q.put(None)
for t in threads[4:]:
    t.join()
print("kept", len(kept))
