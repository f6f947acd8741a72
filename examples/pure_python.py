"""No numpy needed: Python objects only (runs under any interpreter pyflow supports).

What the report shows: line 11 builds a dict of tuples (Python bytes, live at exit); line 16 allocates
strings in a loop and drops them (allocated, not live at exit).
"""


def build(n):
    table = {}
    for i in range(n):
        table[i] = (i, str(i), [i] * 4)
    return table


def scratch(n):
    return sum(len("x" * (i % 1000)) for i in range(n))


table = build(200_000)
scratch(300_000)
print(len(table))
