# Leak shape: a table whose keys (the loop's ints) and values (bytearrays) are made on two lines of one loop
# and kept. Mode "twin": the table is built once, then the program works with temporaries: no leak. (The
# keys' line was once called one: on a clock of bytes allocated, the values kept beside the keys counted as
# the program's work, and the keys spread over a third of it.) Mode "leak": the same two lines grow the table
# while the program works: both leak. Usage: leak_table.py leak|twin
import sys

mode = sys.argv[1]
N = 150_000
# Keys of 11 digits (72-byte ints): sampled, the keys' line then keeps some 40 survivors. With small ints
# it kept 9 to 24, and a line needs 8 to be a leak: one sampled run in twenty missed it.
BASE = 10**100


def work(i):
    return sum(len("x" * (k % 1000)) for k in range(i % 7, 60, 7))  # temporaries only


def build(table, then=None):
    for i in range(BASE, BASE + N):  # LEAK KEPT
        table[i] = bytearray(400)  # LEAK KEPT
        if then:
            then(i)


table = {}
if mode == "twin":
    build(table)
    done = sum(work(i) for i in range(52_000))
else:
    build(table, work)
print(len(table))
