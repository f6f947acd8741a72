"""The program the profile-guided build trains libpyflow.so on (cmake/PyflowPgo.cmake): a mix of what Python
programs do to memory, run under an instrumented runtime in each recording mode. Not one of bench/'s
workloads, which measure what the profile gives on programs it was not taken from.

Each part is small (the whole takes a second or two plainly): the counts need the paths taken, in their
proportions, not long runs of them. Runs on any Python pyflow supports; numpy when it imports."""
import json
import sys
import threading


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def moved(self, dx):
        return Point(self.x + dx, self.y * 0.5)


class Slotted:
    __slots__ = ("name", "values")

    def __init__(self, name, values):
        self.name = name
        self.values = values


def records(n):
    """Parsing and formatting text: strings, splits, dicts of small values."""
    out = []
    for i in range(n):
        line = f"{i},user{i % 313},{i * 7 % 1000 / 10.0},{'yes' if i % 3 else 'no'}"
        ident, user, score, flag = line.split(",")
        out.append({"id": int(ident), "user": user.upper(), "score": float(score), "ok": flag == "yes"})
    text = json.dumps(out[: n // 4])
    return len(json.loads(text)) + sum(r["score"] > 50 for r in out)


def objects(n):
    """Instances, their attributes and the temporaries of methods; a few kept, most dropped."""
    kept = []
    p = Point(0, 1.0)
    for i in range(n):
        p = p.moved(i % 5)
        s = Slotted(str(i), [i, i + 1])
        if i % 97 == 0:
            kept.append(s)
    return len(kept) + int(p.x)


def nested(depth, width):
    """Allocations a few calls deep, from several lines (stacks of different depths in turn)."""
    if depth == 0:
        return [tuple(range(width)), "x" * width, {width: width}]
    return [nested(depth - 1, width) for _ in range(2)] + [depth]


def containers(n):
    """Lists that grow (realloc), sets, sorting, comprehensions, generators."""
    grow = []
    for i in range(n):
        grow.append((i * 31) % n)
    seen = {x for x in grow if x % 2}
    ranked = sorted(grow, key=lambda v: -v)[:100]
    total = sum(x * x for x in range(n) if x % 7 == 0)
    return len(seen) + len(ranked) + total % 10


def buffers(n):
    """bytes and bytearray copies and slices (the copy hooks), some modified, some not."""
    total = 0
    base = bytes(range(256)) * 1024
    for i in range(n):
        a = bytearray(base)
        b = bytes(a)
        if i % 2:
            a[0] = i % 256
        c = base[i: i + 65536]
        total += len(b) + len(c)
    return total


def threads(n):
    """Two threads allocating at once (the clock and the tables shared between recording threads)."""
    results = []

    def work(k):
        results.append(records(n) + objects(n) + k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(results)


def arrays(n):
    """numpy's temporaries and copies, when numpy is there (native allocations and big buffers)."""
    try:
        import numpy as np
    except ImportError:
        return 0
    total = 0.0
    a = np.arange(200_000, dtype=np.float64)
    for i in range(n):
        b = (a * 1.5 + i) / 3.0
        c = b.copy()
        total += float(c[::1000].sum()) + float(np.sort(a[: 10_000 + i])[0])
    return int(total) % 1000


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    r = 0
    r += records(40_000 * scale)
    r += objects(60_000 * scale)
    r += sum(len(nested(6, 8)) for _ in range(300 * scale))
    r += containers(50_000 * scale)
    r += buffers(40 * scale)
    r += threads(10_000 * scale)
    r += arrays(20 * scale)
    print(r % 1000)


if __name__ == "__main__":
    main()
