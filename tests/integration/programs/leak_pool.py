"""A pool's results kept by the parent: a leak when they pile up all along the run while the parent works
on (imap, every result appended, other work between), no leak when one map builds them at once and the
parent then uses them (the results' bytes are charged to the Pool line, which started the thread that
unpickles them). Usage: leak_pool.py leak|twin [flavor, ignored] (tests/integration/cases/leaks.py)."""
import sys
from multiprocessing import Pool


def work(i):
    return [(f"k{i}-{j}", j) for j in range(3000)]


if __name__ == "__main__":
    kept, scratch = [], 0
    with Pool(2) as p:                                                  # LEAK KEPT
        if sys.argv[1] == "twin":
            kept = p.map(work, range(60))
        else:
            for r in p.imap(work, range(60), chunksize=1):
                kept.append(r)
                scratch += len([str(k) * 20 for k in range(4000)])      # the parent's own work between
    scratch += len([str(k) * 20 for k in range(40_000)])                # work after: the data is used
    print(len(kept), sum(len(r) for r in kept) > 0, scratch > 0)
