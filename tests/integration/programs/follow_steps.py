"""A program whose exact profile a report reads while it runs (report/pf_model_follow.c) in many steps: bursts
of allocations between pauses (so the follower catches up with the program and waits for its next chunks
again and again), new lines and call paths in every burst (stacks the profile defines after the follower
first indexed them), copies, objects kept from one burst to a later one and freed there, a cache that
grows (a leak), and objects that live until the interpreter finalizes, some freed by a __del__ then.

The report `pyflow run --exact` prints must be the one `pyflow report` gives of the same profile afterwards.
"""
import sys
import time

kept = []       # grows across the bursts: a leak
carried = {}    # made in one burst, freed in the next


class Closer:
    """Freed while the interpreter finalizes: its __del__ allocates then."""

    def __del__(self):
        junk = [str(i) * 3 for i in range(200)]
        del junk


def burst(n, depth):
    if depth:
        return burst(n, depth - 1)     # each depth a call path of its own
    temp = [(i, str(i)) for i in range(n)]
    data = bytes(range(256)) * (n // 64 + 1)
    copy = bytearray(data)             # a copy, then changed: needed
    copy[0] ^= 1
    kept.append(data[: n // 2])        # a slice kept: the leak
    return len(temp) + len(copy)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    total = 0
    for r in range(rounds):
        for old in list(carried):
            del carried[old]               # the last burst's objects, freed now
        carried[r] = [bytearray(64) for _ in range(300)]
        total += burst(4000 + 500 * r, r % 7)
        exec(f"def line_{r}():\n    return [{r}] * {100 + r}\n")     # a new code object a burst
        time.sleep(0.03)                   # the follower catches up, and waits
    global closer
    closer = Closer()
    print(total)


main()
