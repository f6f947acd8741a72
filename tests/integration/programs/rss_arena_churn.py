"""Rounds of small objects built and dropped, each round's pymalloc arenas at new addresses, as a
long-running program's come to be (tests/integration/cases/robustness.py, case_exact_rss_arenas_given_back):
after each round the span its freed arenas left is taken by untouched mappings (never resident), so the
next round's arenas lie below it."""
import mmap

spacers = []
for _ in range(12):
    keep = [(i, str(i), [i]) for i in range(100_000)]   # about 20 MB of small objects
    del keep
    spacers += [mmap.mmap(-1, 256 << 10) for _ in range(100)]
print("done", flush=True)
