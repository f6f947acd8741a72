"""Signal coexistence (tests/integration/cases_robust.py). Allocates 8 MB first (the `keep` line, which the
profile must show), then does what argv[1] says; everything it prints is deterministic, so a plain run and a run
under pyflow must print the same bytes, on stdout and stderr, and end with the same status.

  usr1        its SIGUSR1 handler, sent 300 times between allocations
  timers      its SIGALRM (ITIMER_REAL), SIGPROF (ITIMER_PROF) and SIGVTALRM (ITIMER_VIRTUAL) handlers firing
              during allocation-heavy work, and a sleep that SIGALRM interrupts still sleeping its full time
  sigtrap     its SIGTRAP handler, raised 50 times; then SIGTRAP's default action (the process dies of it)
  rt          a handler on every real-time signal SIGRTMIN..SIGRTMAX, each sent while unblocked and again
              while blocked (queued, delivered at unblock)
  altstack    a C-level SIGSEGV handler (libc's _exit, so the status is 11) on its own sigaltstack set up
              through ctypes, then a fault in C code (ctypes.string_at(0))
  faulthandler  faulthandler (its own sigaltstack) prints the traceback of a fault in C code; dies of SIGSEGV
  abort       os.abort(): dies of SIGABRT (faulthandler on, so its traceback is printed too)
  segv        a fault in C code (ctypes), no handler: dies of SIGSEGV
  blocked     a thread that blocks every signal copies and writes 2 MB buffers; then the main thread blocks
              SIGTRAP right after a copy (watch must never single-step into a blocked SIGTRAP: the kernel
              would kill the process)
"""
keep = [bytearray(2_000_000) for _ in range(4)]     # allocated before anything else happens

import ctypes
import os
import signal
import sys
import time

how = sys.argv[1]
print("allocated", sum(len(b) for b in keep), how, flush=True)
work = []


def churn(n=200):
    work.append([bytes(200) for _ in range(n)])
    if len(work) > 50:
        del work[:25]


if how == "usr1":
    got = []
    signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    for i in range(300):
        churn()
        os.kill(os.getpid(), signal.SIGUSR1)
    print("usr1 handled", len(got), set(got) == {signal.SIGUSR1})
elif how == "timers":
    ticks = {signal.SIGALRM: 0, signal.SIGPROF: 0, signal.SIGVTALRM: 0}

    def tick(s, f):
        ticks[s] += 1
        churn(20)   # allocate inside the handler too

    for s in ticks:
        signal.signal(s, tick)
    signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    signal.setitimer(signal.ITIMER_PROF, 0.002, 0.002)
    signal.setitimer(signal.ITIMER_VIRTUAL, 0.002, 0.002)
    start = time.monotonic()
    while min(ticks.values()) < 25:
        churn()
        assert time.monotonic() - start < 120, ticks
    for t in (signal.ITIMER_REAL, signal.ITIMER_PROF, signal.ITIMER_VIRTUAL):
        signal.setitimer(t, 0)
    print("timers fired", all(v >= 25 for v in ticks.values()))
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)     # PEP 475: the sleep resumes after each SIGALRM
    before = ticks[signal.SIGALRM]
    t0 = time.monotonic()
    time.sleep(0.3)
    slept = time.monotonic() - t0
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("sleep interrupted", ticks[signal.SIGALRM] > before, "and completed", slept >= 0.3)
elif how == "sigtrap":
    got = []
    signal.signal(signal.SIGTRAP, lambda s, f: got.append(s))
    for i in range(50):
        churn()
        os.kill(os.getpid(), signal.SIGTRAP)
    print("sigtrap handled", len(got), signal.getsignal(signal.SIGTRAP) is not signal.SIG_DFL, flush=True)
    signal.signal(signal.SIGTRAP, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTRAP)
    print("not reached")
elif how == "rt":
    rts = range(signal.SIGRTMIN, signal.SIGRTMAX + 1)
    got = []
    for s in rts:
        signal.signal(s, lambda s, f: got.append(s))
    for s in rts:
        churn()
        os.kill(os.getpid(), s)
    print("rt unblocked", len(rts), "signals, handled", [s - signal.SIGRTMIN for s in got] == list(range(len(rts))))
    got.clear()
    signal.pthread_sigmask(signal.SIG_BLOCK, rts)
    for s in rts:
        os.kill(os.getpid(), s)
        churn()
    print("rt pending", sorted(signal.sigpending()) == list(rts), "none ran", got == [])
    signal.pthread_sigmask(signal.SIG_UNBLOCK, rts)
    churn()
    print("rt blocked then delivered", sorted(set(got)) == list(rts),
          all(signal.getsignal(s) not in (signal.SIG_DFL, signal.SIG_IGN, None) for s in rts))
elif how == "altstack":
    libc = ctypes.CDLL(None, use_errno=True)

    class StackT(ctypes.Structure):     # stack_t
        _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]

    class Sigaction(ctypes.Structure):  # glibc's struct sigaction on Linux
        _fields_ = [("sa_handler", ctypes.c_void_p), ("sa_mask", ctypes.c_ulong * 16),
                    ("sa_flags", ctypes.c_int), ("sa_restorer", ctypes.c_void_p)]

    SA_ONSTACK = 0x08000000
    buf = ctypes.create_string_buffer(256 * 1024)
    ss = StackT(ctypes.cast(buf, ctypes.c_void_p), 0, ctypes.sizeof(buf))
    assert libc.sigaltstack(ctypes.byref(ss), None) == 0, ctypes.get_errno()
    act = Sigaction()
    act.sa_handler = ctypes.cast(libc._exit, ctypes.c_void_p)    # _exit(signum): status 11
    act.sa_flags = SA_ONSTACK
    assert libc.sigaction(signal.SIGSEGV, ctypes.byref(act), None) == 0, ctypes.get_errno()
    now = StackT()
    assert libc.sigaltstack(None, ctypes.byref(now)) == 0
    print("altstack", now.ss_size, now.ss_sp == ss.ss_sp, now.ss_flags, flush=True)
    churn()
    ctypes.string_at(0)
    print("not reached")
elif how == "faulthandler":
    import faulthandler
    faulthandler.enable()
    churn()
    ctypes.string_at(0)
    print("not reached")
elif how == "abort":
    import faulthandler
    faulthandler.enable()
    churn()
    os.abort()
elif how == "segv":
    churn()
    ctypes.string_at(0)
    print("not reached")
elif how == "blocked":
    import threading

    def worker():
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
        src = bytearray(b"w" * 2_000_000)
        for i in range(5):
            c = bytearray(src)
            c[0] = i
            churn()
        print("worker copies", c[0], flush=True)

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    src = bytearray(b"m" * 2_000_000)
    for i in range(5):
        t0 = time.process_time()
        while time.process_time() - t0 < 0.3:   # emulated copy watches wait for unwatched CPU time
            pass
        d = bytearray(src)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTRAP})
        d[0] = i
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTRAP})
    print("main copies", d[0])
else:
    sys.exit(f"unknown mode {how}")
