#!/usr/bin/env python3
"""The profiled program's peak RSS in every recording mode: each workload plain and under `pyflow run` in
the default mode, --native, --exact and --exact --native (recording only: --no-report, so the figure is
the program's, not the report's), several interleaved runs. Prints median peak RSS (ru_maxrss, what
`/usr/bin/time -f %M` and a container's memory limit see) and its ratio to the plain run. With --vs OLD
(another build's pyflow) each mode also runs under OLD, in alternating order, and the paired ratio of CPU
time (user + system) new/old is printed: on a loaded machine CPU time is steadier than wall time.

    bench/rss_modes.py --pyflow build/bin/pyflow [--vs OLD/bin/pyflow] [--runs 3] [--python /usr/bin/python3]
                       [workload ...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["churn", "numpy_temps", "numeric", "copies"]
MODES = {"default": [], "native": ["--native"], "exact": ["--exact"], "exact+native": ["--exact", "--native"]}


def measure(cmd):
    """Runs cmd once; returns (peak RSS KiB of its largest process, CPU seconds), or exits on failure."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    return usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--vs", help="another build's pyflow to compare with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    a = ap.parse_args()
    builds = {"new": a.pyflow, **({"old": a.vs} if a.vs else {})}
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "p.pflow")
        for w in a.workloads:
            script = os.path.join(HERE, "workloads", w + ".py")
            res = {}
            for r in range(a.runs):
                res.setdefault("plain", []).append(measure([a.python, script]))
                for mode, extra in MODES.items():
                    order = list(builds) if r % 2 == 0 else list(reversed(builds))
                    for b in order:
                        cmd = [builds[b], "run", "--no-report", "-o", profile, *extra, "--python", a.python, script]
                        res.setdefault((mode, b), []).append(measure(cmd))
                        os.unlink(profile)
            plain = statistics.median(kb for kb, _ in res["plain"])
            print(f"{w}: plain {plain / 1024:.1f} MiB")
            for mode in MODES:
                line = f"  {mode:13s}"
                for b in builds:
                    kb = statistics.median(k for k, _ in res[(mode, b)])
                    line += f"  {b} {kb / 1024:6.1f} MiB ({kb / plain:.2f}x)"
                if a.vs:
                    cpu = statistics.median(n[1] / o[1] for n, o in zip(res[(mode, "new")], res[(mode, "old")]))
                    line += f"  CPU time new/old {cpu:.2f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
