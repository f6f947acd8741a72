"""Known allocations on known lines, reached through two call paths: the exports must carry them."""
kept = []


def make(n):
    return bytearray(n)            # line 6: 8 MiB through `once`, 4 MiB twice through `twice`


def once():
    kept.append(make(8 << 20))     # kept: live at exit


def twice():
    for _ in range(2):
        make(4 << 20)              # freed at once


once()
twice()
