"""Touches fresh pages: each new anonymous mapping's first store is a page fault, an event whose samples carry
the faulting data address (`--watch --event page-faults`). The same bytes are then stored again. Between
mappings the program computes for 25 ms of CPU time, longer than the gap pyflow keeps between samples where
watchpoints are emulated (50 per CPU-second), so each first touch can be sampled. The mappings are private:
where watchpoints are page protections, a shared mapping (mmap's default for fileno -1) is never watched,
and 28 of 30 first touches were refused an arm for it."""
import mmap
import time


def compute(ms):
    end = time.process_time() + ms / 1000
    n = 0
    while time.process_time() < end:
        n += 1
    return n


total = 0
for i in range(30):
    compute(25)
    m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE)
    m[:] = b"\x01" * 4096       # first touch: the fault, sampled with its address
    m[:] = b"\x01" * 4096       # the same bytes again: a silent store where a watch survives to see it
    total += m[i]
    m.close()
print("total", total)
