"""Copies a 2 MB buffer (a copy watch protects its first and last pages where watchpoints are page
protections), then writes the copy from a thread that blocks SIGSEGV: with argv[1] "mask" the thread blocks
it itself (pthread_sigmask), with "born" it starts so (inheriting the mask of the main thread, which blocks
SIGSEGV around the start and unblocks it before the thread writes); with "handler", a C-level SIGUSR1
handler (a ctypes callback) whose sa_mask blocks every signal writes it, and the program reads its handler's
mask back. The kernel kills a process whose fault on a protected page arrives blocked, so pyflow must leave
no page protected meanwhile, or keep SIGSEGV out of the handler's mask. Then it starts a
child process (CPython's subprocess blocks every signal around its vfork, and the child, sharing its memory,
sets its own mask). Last, the main thread copies and writes its copy with nothing blocked: page watches
must work again."""
import signal
import subprocess
import sys
import threading
import time

how = sys.argv[1]
SEGV = {signal.SIGSEGV}
src = bytearray(b"m" * 2_000_000)


def spin(seconds=0.3):
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:   # emulated copy watches wait for unwatched CPU time
        pass


wrote = 0
if how == "handler":
    import ctypes
    import os

    class Sigaction(ctypes.Structure):  # glibc's struct sigaction on Linux
        _fields_ = [("sa_handler", ctypes.c_void_p), ("sa_mask", ctypes.c_ulong * 16),
                    ("sa_flags", ctypes.c_int), ("sa_restorer", ctypes.c_void_p)]

    def on_usr1(sig):
        global wrote
        d[0] = 7
        wrote += 1

    libc = ctypes.CDLL(None, use_errno=True)
    callback = ctypes.CFUNCTYPE(None, ctypes.c_int)(on_usr1)
    act = Sigaction()
    act.sa_handler = ctypes.cast(callback, ctypes.c_void_p)
    libc.sigfillset(ctypes.byref(act.sa_mask))
    assert libc.sigaction(signal.SIGUSR1, ctypes.byref(act), None) == 0
    back = Sigaction()
    assert libc.sigaction(signal.SIGUSR1, None, ctypes.byref(back)) == 0
    print("handler blocks SIGSEGV", libc.sigismember(ctypes.byref(back.sa_mask), signal.SIGSEGV))
for i in range(4):
    spin()
    d = bytearray(src)
    if how == "handler":
        os.kill(os.getpid(), signal.SIGUSR1)
        continue
    go = threading.Event()

    def worker():
        global wrote
        if how == "mask":
            signal.pthread_sigmask(signal.SIG_BLOCK, SEGV)
        go.wait()
        d[0] = i
        d[-1] = i
        wrote += 1
        if how == "mask":
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SEGV)

    if how == "born":
        signal.pthread_sigmask(signal.SIG_BLOCK, SEGV)
    th = threading.Thread(target=worker)
    th.start()
    if how == "born":
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SEGV)
    go.set()
    th.join()
subprocess.run([sys.executable, "-c", "pass"], check=True)
for i in range(4):
    spin()
    d = bytearray(src)
    d[0] = i    # proves the copy needed
print(how, "worker wrote", wrote, "main wrote", d[0])
