"""The flow graph's story (issue 30): the program's own objects and the copies between them.
Ground truth: line 11 imports a package whose import copies 2 MiB (import-time: not in the default graph);
line 15 has the package make 8 MiB (the node names tinylib._fill); line 16 copies it unchanged (bytes(),
redundant: always drawn, red); line 17 copies it and changes the copy (needed: drawn, not red)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import tinylib  # noqa: E402

from tinylib import setup_cost  # noqa: E402,F401  (line 11)


def main():
    table = tinylib.make_table(8 << 20)  # line 15
    snap = bytes(table[0])  # line 16
    work = bytearray(table[0])  # line 17
    work[0] = 1
    work[-1] = 1
    return table, snap, work


kept = main()
print(len(kept[1]))
