"""Ground truth for attribution in both layers. Usage: numpy_lines.py [numpy] [measure]

Line 10 allocates 32,000,000 bytes through numpy (native: malloc from C), line 32 64,000,000 through numpy's
generated dispatch code (1.24). Line 13 builds Python objects only. Run plainly with `measure`, the script
prints what line 13 allocates in Python's domains: tracemalloc's live bytes plus what it cannot see.
"""
import sys

def native_big(np):
    return np.ones(4_000_000)                      # line 10: 32,000,000 bytes through numpy (native)

def python_objects(base):
    return [s * 3 for s in base]                   # line 13: Python objects only (new str each)

def outgrown_blocks(n):
    """Bytes line 13 allocates and frees before it returns, which tracemalloc (it traces live blocks)
    cannot count: the blocks the growing list outgrew. Each list_resize is one PyMem_Realloc of
    allocated*8 bytes, and sys.getsizeof shows the allocated slots. The loop itself makes nothing else:
    it iterates over existing strings, and each s * 3 is kept."""
    freed = 0
    empty = sys.getsizeof([])
    grow, last = [], empty
    for _ in range(n):
        grow.append(None)
        size = sys.getsizeof(grow)
        if size != last:
            freed += last - empty       # the outgrown block (0 for the first)
            last = size
    return freed

def dispatched(np, a):
    return np.concatenate([a, a])                  # line 32: 64,000,000 bytes, inside numpy's dispatch wrapper

BASE = [str(i) for i in range(200_000)]
if "numpy" in sys.argv[1:]:
    import numpy
    a = native_big(numpy)
    c = dispatched(numpy, a)
if "measure" in sys.argv[1:]:
    import tracemalloc
    tracemalloc.start()
    b = python_objects(BASE)
    live = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print("line13_python_bytes", live + outgrown_blocks(len(BASE)), "live", live)
else:
    b = python_objects(BASE)
print("ok", len(b))
