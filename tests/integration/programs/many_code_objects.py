"""Distinct code objects, each compiled, called once and allocating 40 small objects: per-record cost under
--exact must not grow with the number of code objects seen (code ids, interned stacks). With a fixed table
of code ids, each new code object's frames probed ever longer runs of dead ones (their addresses reused)
and, once the table was full, took its lock to find no room. Code objects from argv[1] (100,000)."""
import sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
total = 0
for i in range(n):
    ns = {}
    exec(compile(f"def f{i}(x):\n    out = []\n    for j in range(40):\n        out.append(str(j + x))\n    return out\n", f"<gen{i}>", "exec"), ns)
    total += len(ns[f"f{i}"](i))
print("calls", n, "items", total)
