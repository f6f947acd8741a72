"""Consecutive allocations under --native whose stacks differ from the ones just before deep inside only, for
the recorder's reuse of a thread's recent stacks and of its last native walks (recorder/pf_recent_stacks.c,
recorder/pf_unwinder.c): argv[1] picks the case, argv[2] the rounds. Allocations are made in turn from the
same Python line through two C call chains, or from two depths, or on three threads, and each way has a
size of its own (SIZES): the test finds them by it, and checks that no two ways share a stack."""
import collections
import sys
import threading


SIZES = {"chains": (5000, 5100), "callers": (5500, 5600), "fork": (9000, 9100), "depth": (6000, 6100), "callback": (7000, 7100), "threads": (8000, 8100, 8200)}


def make(size):
    return bytearray(size)  # CHAIN_ALLOC


def chains(n):
    """One line, two C chains of the same depth under it (on 3.11): list() and deque() each drive a map object
    into make(); only the constructor's frames differ (list's allocations take the first size)."""
    ways = ((list, SIZES["chains"][0]), (collections.deque, SIZES["chains"][1]))
    for i in range(n):
        ctor, size = ways[i % 2]
        ctor(map(make, (size,)))  # CHAIN_CALL


def inner(size):
    return make(size)  # INNER_CALL


def outer(size, first):
    if first:
        return inner(size)  # OUTER_1
    return inner(size)  # OUTER_2


def callers(n):
    """make() under inner() under two lines of one caller in turn: the stacks differ in their third Python
    frame's offset only (and on 3.11 on, where Python calls Python without C frames between, in nothing
    native)."""
    for i in range(n):
        outer(SIZES["callers"][i % 2], i % 2 == 0)  # CALLERS_CALL


def down(k, size):
    if k == 0:
        return bytearray(size)  # DEPTH_LEAF
    return list(map(down, (k - 1,), (size,)))[0]  # DEPTH_CALL


def depth(n):
    """The same leaf line reached 3 and 4 levels deep in turn, each level through map() (C)."""
    for i in range(n):
        down(3 + i % 2, SIZES["depth"][i % 2])


def callback(n):
    """One line calls a ctypes callback that allocates: directly, and through libc's qsort in turn."""
    import ctypes
    libc = ctypes.CDLL(None)
    cmp_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    size = [0]

    def compare(_a, _b):
        bytearray(size[0])  # CB_ALLOC
        return 0

    cb = cmp_t(compare)
    arr = (ctypes.c_int * 2)(2, 1)
    calls = ((libc.qsort, (arr, 2, ctypes.sizeof(ctypes.c_int), cb)), (cb, (None, None)))
    for i in range(n):
        fn, args = calls[i % 2]
        size[0] = SIZES["callback"][i % 2]     # through qsort: the first size
        fn(*args)  # CB_CALL


def work(size, n, start):
    start.wait()
    for _ in range(n):
        bytearray(size)  # THREAD_ALLOC


def threads(n):
    """Three threads (the main one too, with the first size) allocating on one line at once."""
    start = threading.Barrier(3)
    ts = [threading.Thread(target=work, args=(size, n, start)) for size in SIZES["threads"][1:]]
    for t in ts:
        t.start()
    work(SIZES["threads"][0], n, start)
    for t in ts:
        t.join()


def fill(size, n):
    for _ in range(n):
        bytearray(size)  # FORK_ALLOC


def fork(n):
    """The same stack before a fork and in the child (whose stack ids start again): the parent fills from
    one line, forks, and both fill from that line again, the child with the second size. libc's fork, not
    os.fork: the child runs no Python after-fork handlers, whose allocations would push the parent's last
    stacks out of the thread's recent ones before the child's first fill."""
    import ctypes
    import os
    libc_fork = ctypes.CDLL(None).fork
    pid = -1
    for round_ in range(2):
        if round_ == 1:
            pid = libc_fork()
        fill(SIZES["fork"][pid == 0], n)  # FORK_CALL
        if pid == 0:
            os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    {"chains": chains, "callers": callers, "depth": depth, "callback": callback, "threads": threads,
     "fork": fork}[sys.argv[1]](int(sys.argv[2]))
    print("done")
