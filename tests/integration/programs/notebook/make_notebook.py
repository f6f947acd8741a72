"""Writes the test notebook: a cell that leaks, a twin that frees what it allocates, and %pyflow after each.
Blocks of 1 MiB and more are recorded exactly (the default object threshold): the numbers are exact."""
import sys

import nbformat

cells = [
    "kept = []",
    "for i in range(8):\n    kept.append(bytearray(1 << 20))   # leaks 8 MiB",
    "%pyflow",
    "for i in range(8):\n    temp = bytearray(1 << 20)   # freed: nothing left\ndel temp",
    "%pyflow",
    "%pyflow session",
]
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
nbformat.write(nb, sys.argv[1])
