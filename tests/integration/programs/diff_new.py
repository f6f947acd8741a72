# diff_new.py: diff_base.py with one line edited (4 -> 6 MiB) and one inserted above it.
import sys
# (this inserted line moves every line below down by one)


def load(n):
    return [bytes(1000) for _ in range(n)]


def build():
    a = load(2000)
    b = bytearray(6 << 20)
    return a, b


keep = build()
