"""Forks while other threads allocate and free: one makes and drops small Python objects, one calls
PyMem_RawMalloc / PyMem_RawFree through ctypes without the GIL (under --exact each one an object-table update
without a lock, which may be under way at the fork). Each child makes 3000 small objects on line 35 and keeps
them until it exits; the threads go on in the parent. Ground truth: every child exits 0 and line 35 holds
5 * 3000 objects of 133 bytes allocated."""
import ctypes
import os
import threading

lib = ctypes.CDLL(None)
lib.PyMem_RawMalloc.restype = ctypes.c_void_p
lib.PyMem_RawMalloc.argtypes = [ctypes.c_size_t]
lib.PyMem_RawFree.argtypes = [ctypes.c_void_p]
stop = threading.Event()


def churn():
    while not stop.is_set():
        junk = [bytes(50) for _ in range(200)]
        del junk


def raw_churn():
    while not stop.is_set():
        lib.PyMem_RawFree(lib.PyMem_RawMalloc(64))


threads = [threading.Thread(target=churn), threading.Thread(target=raw_churn)]
for t in threads:
    t.start()
statuses = []
for k in range(5):
    pid = os.fork()
    if pid == 0:
        kept = [bytes(100) for _ in range(3000)]    # line 35: kept until the child exits
        os._exit(0 if len(kept) == 3000 else 1)
    statuses.append(os.waitpid(pid, 0)[1])
stop.set()
for t in threads:
    t.join()
print("children", statuses)
