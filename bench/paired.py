#!/usr/bin/env python3
"""Two pyflow builds timed against each other in interleaved pairs: on a shared 2-core guest a run's time
moves by a fifth from one minute to the next, more than most changes to the recorder, and run_bench.py's
medians of separate runs cannot tell them apart. Each pair runs the old build and then the new one on the
same workload within seconds, so what the guest does meanwhile weighs on both; the ratio of each pair's
times, new / old, and the median of those ratios say what the change did.

    bench/paired.py --pyflow build/bin/pyflow --against OLD/bin/pyflow [--mode "--exact --native"]
                    [--runs 7] [--report] [--python /usr/bin/python3] [workload ...]

Workloads are bench/workloads/ names (default: all five) or paths to programs. Without --report each run
is `pyflow run MODE --no-report -o PROFILE PYTHON PROGRAM` (the recording alone); with it, the whole
`pyflow run MODE` with its report at exit, as a user runs it. Prints per workload the median wall and CPU
time of each build, the median paired ratio and the ratios' range; exits 1 when a run fails.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["churn", "numpy_temps", "numeric", "copies", "indexing"]


def program_of(name):
    if os.path.exists(name):
        return name
    path = os.path.join(HERE, "workloads", name + ".py")
    if not os.path.exists(path):
        sys.exit(f"paired.py: no workload {name} (bench/workloads/) and no such file")
    return path


def timed(cmd):
    """(wall seconds, CPU seconds of the command and its children)."""
    before = os.times()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    if r.returncode != 0:
        sys.exit(f"paired.py: {' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-2000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def command(pyflow, mode, report, profile, python, program):
    out = [] if report else ["--no-report"]
    return [pyflow, "run", *mode, *out, "-o", profile, "--python", python, program]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyflow", required=True, help="the new build's pyflow")
    ap.add_argument("--against", required=True, help="the old build's pyflow")
    ap.add_argument("--mode", default="--exact", help='options of `pyflow run` (default "--exact")')
    ap.add_argument("--runs", type=int, default=7, help="pairs per workload (default 7)")
    ap.add_argument("--report", action="store_true", help="time the whole run, its report at exit included")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    if args.runs < 1:
        sys.exit("paired.py: --runs must be at least 1")
    mode = args.mode.split()
    print(f"new {args.pyflow} against old {args.against}: `pyflow run {args.mode}`"
          f"{' with its report' if args.report else ' --no-report'}, {args.runs} interleaved pairs each")
    print(f"{'workload':14s} {'old wall':>9s} {'new wall':>9s} {'old CPU':>8s} {'new CPU':>8s} "
          f"{'new/old':>8s} {'range':>13s}")
    with tempfile.TemporaryDirectory(prefix="pyflow-paired-") as scratch:
        for name in args.workloads:
            program = program_of(name)
            old, new, ratios = [], [], []
            for i in range(args.runs):
                a = timed(command(args.against, mode, args.report, os.path.join(scratch, f"old{i}.pflow"),
                                  args.python, program))
                b = timed(command(args.pyflow, mode, args.report, os.path.join(scratch, f"new{i}.pflow"),
                                  args.python, program))
                old.append(a)
                new.append(b)
                ratios.append(b[0] / a[0])
                for f in os.listdir(scratch):   # profiles can be hundreds of MB: none kept past its pair
                    os.unlink(os.path.join(scratch, f))
            med = statistics.median
            print(f"{os.path.basename(program)[:-3] if program.endswith('.py') else program:14s} "
                  f"{med(w for w, _ in old):9.3f} {med(w for w, _ in new):9.3f} "
                  f"{med(c for _, c in old):8.3f} {med(c for _, c in new):8.3f} "
                  f"{med(ratios):8.3f} {min(ratios):6.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main()
