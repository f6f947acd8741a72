"""Python-domain totals vs tracemalloc. Usage: python_totals.py [measure]

build() keeps every block it allocates, so what tracemalloc sees live when it returns (the requested sizes
of the live Python-domain blocks) is all it allocated: the ground truth for the python_bytes pyflow
charges to lines 18-23. Nothing comes from a free list (str, int and bytearray have none; the loop walks
existing objects), and the large buffers (every 100th, 5,000 bytes) go from pymalloc on to malloc, which
must still count once, as Python. `measure` prints tracemalloc's figures: allocated-and-kept, and the peak.
"""
import sys

N = 200_000
words = [str(i) for i in range(N)]
idx = list(range(N))


def build(words, idx):
    """Lines 18-23: everything allocated here is returned, hence kept."""
    strs = [None] * N                                 # line 18: one block of N slots (and the list)
    nums = [None] * N                                 # line 19
    bufs = [None] * N                                 # line 20
    for j in idx:                                     # line 21: the list iterator (freed at the end)
        strs[j] = words[j] * 4                        # line 22: a new str
        nums[j], bufs[j] = j * 1_000_003, bytearray(5000 if j % 100 == 0 else 40)   # line 23
    return strs, nums, bufs


if "measure" in sys.argv[1:]:
    import tracemalloc
    tracemalloc.start()
    kept = build(words, idx)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print("kept", current, "peak", peak)
else:
    kept = build(words, idx)
print("ok", len(kept[0]))
