"""What pyflow keeps resident in a profiled program that allocates a lot: run with `threads`, `stacks` or
`churn` or `live`; `killed` runs `threads` and ends by SIGKILL (tests/integration/cases/robustness.py,
case_exact_rss_bound)."""
import os
import signal
import sys
import threading


def threads():
    """Many short threads, each filling a few chunks of the profile under --exact."""
    def work():
        for _ in range(3000):
            x = [1, 2]      # 3000 x 300 item arrays
    for _ in range(300):
        t = threading.Thread(target=work)
        t.start()
        t.join()


def leaf(bits):
    return [bits]


def branch(n, bits):
    if n == 0:
        return leaf(bits)
    if bits & 1:
        return branch(n - 1, bits >> 1)
    return branch(n - 1, bits >> 1)     # another line: another stack


def pad(depth, bits):
    return branch(16, bits) if depth == 0 else pad(depth - 1, bits)


def stacks():
    """65536 distinct stacks about 110 Python frames deep (more than pyflow interns)."""
    sys.setrecursionlimit(1000)
    for bits in range(1 << 16):
        pad(90, bits)


def churn():
    """About 2 million objects allocated and freed, few live at once: a profile of 100+ MB under --exact."""
    for _ in range(20):
        d = {i: (i, str(i)) for i in range(50_000)}
        del d


def live():
    """About 1.5 million small objects live at once: under --exact pyflow's object table holds every one."""
    keep = [(i, str(i)) for i in range(1_000_000, 1_500_000)]
    del keep


if __name__ == "__main__":
    {"threads": threads, "killed": threads, "stacks": stacks, "churn": churn, "live": live}[sys.argv[1]]()
    print("done", flush=True)
    if sys.argv[1] == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
