"""Many Python stacks over few native ones (integration.native.native_parts_interned): a recursion through
sorted()'s key function (C frames between each level's Python frames) DEPTH levels deep, and at the bottom
of each level LINES distinct lines each allocating one 1000-byte bytearray. The LINES stacks of a level
share their native part. Prints "done"."""
import sys

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 30
LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 40

# one function whose body allocates on LINES lines: each a stack of its own
src = "def leaf(keep):\n" + "".join(f"    keep.append(bytearray(1000))\n" for _ in range(LINES))
code = {}
exec(compile(src, "native_parts_leaf", "exec"), code)
leaf = code["leaf"]
keep = []


def level(d):
    leaf(keep)
    if d > 1:
        sorted([0], key=lambda _: level(d - 1))
    return 0


level(DEPTH)
print("done")
