"""Prints line-table test vectors for the interpreter running it, one code object per line:
    FORMAT FIRSTLINENO HEX_TABLE OFFSET:LINE OFFSET:LINE ...
FORMAT is 1 (3.9 lnotab), 2 (3.10 linetable), 3 (3.11+ locations); offsets in bytes. Expected lines come
from the interpreter itself (dis.findlinestarts / co_lines), so the C decoder is checked against CPython.
"""
import dis
import sys

SOURCE = '''
def simple(a, b):
    c = a + b
    return c

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 5:
            total -= 1
        else:
            continue
    while total > 100:
        total //= 2
    return total

def multiline(x):
    y = (x +
         1 +
         2)
    z = [
        i
        for i in range(x)
    ]
    return y, z

def far_jump():
    a = 1
''' + "\n" * 300 + '''
    b = 2
    return a + b

def back_and_forth(x):
    try:
        y = 1 / x
    except ZeroDivisionError:
        y = 0
    finally:
        x = 2
    with open(__file__) as f:
        pass
    return (lambda q: q + y)(x)

class K:
    attr = [1, 2, 3]
    def method(self):
        return self.attr
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def expected(co):
    """(offset, line) for every instruction whose line CPython knows."""
    out = []
    if sys.version_info >= (3, 10):
        for start, end, line in co.co_lines():
            if line is None:
                continue
            for off in range(start, end, 2):
                out.append((off, line))
    else:
        starts = sorted(dis.findlinestarts(co))
        for ins in dis.get_instructions(co):
            line = None
            for off, ln in starts:
                if off <= ins.offset:
                    line = ln
            if line is not None:
                out.append((ins.offset, line))
    return out


def main():
    top = compile(SOURCE, "vectors.py", "exec")
    fmt = 1 if sys.version_info < (3, 10) else 2 if sys.version_info < (3, 11) else 3
    for co in codes(top):
        table = co.co_lnotab if fmt == 1 else co.co_linetable
        pairs = " ".join(f"{o}:{l}" for o, l in expected(co))
        print(fmt, co.co_firstlineno, table.hex() or "-", pairs)


main()
