"""The flow graph's node kinds and its temporaries (issue 30).
Ground truth: line 18 makes 8 MiB of bytes (its node says `bytes`); line 19 copies them into a bytearray
freed at once, unchanged (redundant: drawn, red, though a temporary); line 21 copies them into a bytearray
that is changed and freed at once (a needed copy into a temporary: left out of the default graph, counted
in its note); line 24 copies them into a bytearray changed and kept (drawn), which line 26 grows by a realloc
at once (the copy lives on in the grown block: still drawn); line 29 grows a list by appends and line 33 a
dict by insertions, both kept (their nodes say `list` and `dict`, their growth drawn).
What is kept makes the program's peak, at the end of main; then the program waits 4 s, so that each
temporary lived a tiny share of the run (1% of it, 40 ms, is far more than a loaded machine delays a free).
"""
import os
import sys
import time


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    src = os.urandom(8 << 20)  # line 18
    tmp = bytearray(src)  # line 19
    del tmp
    work = bytearray(src)  # line 21
    work[0] ^= 1
    del work
    keep = bytearray(src)  # line 24
    keep[-1] ^= 1
    keep += b"!"  # line 26
    xs, ys = [], []
    for i in range(n):
        xs.append(i * 2)  # line 29
        ys.append(i)  # line 30: each list's growth is in the other's way, so reallocs move blocks
    table = {}
    for i in range(n // 2):
        table[i] = i  # line 33
    return src, keep, xs, ys, table


kept = main()
time.sleep(4)
print(len(kept[2]), len(kept[4]))
