"""100,000 distinct code objects, each compiled, called once and allocating: per-record cost under --exact
must not grow with the number of code objects seen (code ids, interned stacks). N from argv[1]."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
total = 0
for i in range(n):
    ns = {}
    exec(compile(f"def f{i}(x):\n    return [x, str(x), (x, {i})]\n", f"<gen{i}>", "exec"), ns)
    total += len(ns[f"f{i}"](i))
print("calls", n, "items", total)
