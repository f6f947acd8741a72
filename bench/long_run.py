#!/usr/bin/env python3
"""Profile size per minute of the default recording and of --aggregate, on the bench workloads looped.

    python3 bench/long_run.py [--pyflow build/bin/pyflow] [--python PY] [--seconds 60] [workload ...]

Each workload (bench/workloads/NAME.py) runs over and over for --seconds under `pyflow run` (default mode,
then --aggregate); printed: the profile's bytes per minute, that rate for an hour, and the time
`pyflow report` took on the aggregated profile. docs/long-runs.md quotes its figures.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LOOP = os.path.join(ROOT, "tests", "integration", "programs", "longrun_loop.py")
WORKLOADS = ["churn", "copies", "numeric", "numpy_temps"]


def profile_size(pyflow, python, mode, script, seconds, out):
    cmd = [pyflow, "run", *mode, "--no-report", "-o", out, python, LOOP, script, str(seconds)]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    return os.path.getsize(out), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pyflow", default=os.path.join(ROOT, "build", "bin", "pyflow"))
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                    help="the interpreter (with numpy for three of the workloads)")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    print(f"{'workload':<12} {'mode':<12} {'MB/min':>8} {'MB/hour':>8} {'report s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads:
            script = os.path.join(HERE, "workloads", w + ".py")
            for name, mode in (("default", []), ("aggregate", ["--aggregate"])):
                out = os.path.join(tmp, f"{w}.{name}.pf")
                size, wall = profile_size(args.pyflow, args.python, mode, script, args.seconds, out)
                per_min = size / wall * 60 / 1e6
                report = ""
                if mode:
                    t0 = time.monotonic()
                    subprocess.run([args.pyflow, "report", out], check=True, stdout=subprocess.DEVNULL)
                    report = f"{time.monotonic() - t0:.2f}"
                print(f"{w:<12} {name:<12} {per_min:8.2f} {per_min * 60:8.0f} {report:>9}", flush=True)
                os.unlink(out)


if __name__ == "__main__":
    main()
