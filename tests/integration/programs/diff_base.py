# diff_base.py: `pyflow diff` test base; diff_new.py is this with one line edited (4 -> 6 MiB) and one inserted above.
import sys


def load(n):
    return [bytes(1000) for _ in range(n)]


def build():
    a = load(2000)
    b = bytearray(4 << 20)
    return a, b


keep = build()
