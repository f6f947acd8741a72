"""Integration cases: --exact's object table updated without a lock (issue #29): small objects and raw blocks
made, moved by realloc and freed on different threads, and forks while other threads allocate, all with the
byte counts of ground truth."""
from .common import per_version, prog, row


def between(value, lo, hi, what):
    assert lo <= value <= hi, f"{what}: {value} is not in [{lo}, {hi}]"


@per_version
def case_exact_small_objects_across_threads(c):
    """Python objects made on producer threads and freed on consumer threads (while a third thread copies):
    each free finds its object, so nothing of the producers' line is live at exit; the kept ones are."""
    cp, d = c.profile(prog("exact_small_cross_threads.py"), extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout.strip() == "kept 2000 233", (cp.returncode, cp.stdout, cp.stderr[-800:])
    made = row(d, "exact_small_cross_threads.py", 17)
    assert made["alloc_bytes"] >= 80_000 * 133, made
    # the objects all died on other threads; what stays is the queue's own blocks (seen: 9 KB; with the
    # frees not seen, those of the last queue-fulls whose addresses were not reused: 320-350 KB)
    between(made["leaked_bytes"], 0, 40_000, "objects freed on other threads, live at exit")
    kept = row(d, "exact_small_cross_threads.py", 20)
    between(kept["leaked_bytes"], 2000 * 233, 2000 * 233 + 24_000, "kept objects (and their lists), live at exit")


@per_version
def case_exact_raw_blocks_across_threads(c):
    """PyMem_RawMalloc blocks (no GIL held: the table's updates overlap) reallocated and freed on other
    threads: every realloc and free finds its block; the kept ones are live at exit."""
    cp, d = c.profile(prog("exact_raw_cross_threads.py"), extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout.strip() == "kept 800", (cp.returncode, cp.stdout, cp.stderr[-800:])
    made = row(d, "exact_raw_cross_threads.py", 23)
    assert made["alloc_bytes"] >= 20_000 * 120, made
    # 2.4 MB of blocks moved and freed elsewhere; what stays is the queue's (seen: 4.7 KB; with the frees not
    # seen: 262 KB)
    between(made["leaked_bytes"], 0, 60_000, "blocks reallocated on other threads, live at exit")
    moved = row(d, "exact_raw_cross_threads.py", 33)
    assert moved["alloc_bytes"] >= 20_000 * 300, moved
    between(moved["leaked_bytes"], 0, 30_000, "reallocated blocks freed, live at exit")
    kept = row(d, "exact_raw_cross_threads.py", 25)
    # 800 blocks of 200 bytes, the ints that hold their addresses (32 bytes each) and the list (seen: 192672)
    between(kept["leaked_bytes"], 800 * 200, 800 * (200 + 40) + 16_000, "kept raw blocks, live at exit")


@per_version
def case_exact_fork_while_threads_allocate(c):
    """Forks while a thread makes Python objects and another raw blocks without the GIL: every child runs
    to its end, and each one's kept objects are in the report."""
    cp, d = c.profile(prog("exact_fork_while_allocating.py"), extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout.strip() == "children [0, 0, 0, 0, 0]", (cp.stdout, cp.stderr[-800:])
    kept = row(d, "exact_fork_while_allocating.py", 35)
    assert kept["alloc_bytes"] >= 5 * 3000 * 133, kept
    assert kept["peak_bytes"] >= 3000 * 133, kept
    assert len(d["processes"]) == 6, d["processes"]
