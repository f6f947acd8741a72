"""The flow graph's kinds where the bytes are numpy's or bytes in a list (issue 30's twin): line 14 parses
text into a 6 MiB array with numpy.loadtxt, which grows its data by realloc (node: `numpy data`, kept); line
15 copies the array's data into 64 bytes objects kept in a list (node: `bytes`: the list holds 64 pointers,
the bytes objects hold the data)."""
import io
import time

import numpy as np


def main():
    rows = 200000
    text = "\n".join("%d %d %d %d" % (i, i + 1, i + 2, i + 3) for i in range(rows))
    table = np.loadtxt(io.StringIO(text))  # line 14
    chunks = [table[i * (rows // 64):(i + 1) * (rows // 64)].tobytes() for i in range(64)]  # line 15
    return table, chunks


kept = main()
time.sleep(0.2)
print(len(kept[1]))
