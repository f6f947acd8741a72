#!/usr/bin/env python3
"""Profile size per minute of the default recording and of --aggregate, on the bench workloads looped.

    python3 bench/long_run.py [--pyflow build/bin/pyflow] [--python PY] [--seconds 60] [--switch-check SIZE]
                              [workload ...]

Each workload (bench/workloads/NAME.py) runs over and over for --seconds under `pyflow run` with full
records (--no-aggregate), then --aggregate; printed: the profile's bytes per minute, that rate for an hour,
the time `pyflow report` took on the aggregated profile, and what the default recording writes in an
hour: full records until the profile passes its switch size (192 MiB), then the aggregated rate (measured
per minute here, start included, so an overestimate). --switch-check SIZE also runs the default recording
with its switch at SIZE (PYFLOW_AGGREGATE_AFTER_BYTES) and prints the file it left: near SIZE once the
workload has written that much, however long it runs after. docs/long-runs.md quotes its figures.
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


SWITCH_BYTES = 192 << 20      # a plain run's (core/pf_runtime.h, PF_DEFAULT_AGGREGATE_AFTER_BYTES)


def profile_size(pyflow, python, mode, script, seconds, out, env=None):
    cmd = [pyflow, "run", *mode, "--no-report", "-o", out, python, LOOP, script, str(seconds)]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.monotonic() - t0
    return os.path.getsize(out), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pyflow", default=os.path.join(ROOT, "build", "bin", "pyflow"))
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                    help="the interpreter (with numpy for three of the workloads)")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--switch-check", help="also run the default recording with its switch at this size (like 8m)")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    print(f"{'workload':<12} {'mode':<12} {'MB/min':>8} {'MB/hour':>8} {'report s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads:
            script = os.path.join(HERE, "workloads", w + ".py")
            rate = {}
            for name, mode in (("full", ["--no-aggregate"]), ("aggregate", ["--aggregate"])):
                out = os.path.join(tmp, f"{w}.{name}.pf")
                size, wall = profile_size(args.pyflow, args.python, mode, script, args.seconds, out)
                rate[name] = size / wall       # bytes a second
                report = ""
                if name == "aggregate":
                    t0 = time.monotonic()
                    subprocess.run([args.pyflow, "report", out], check=True, stdout=subprocess.DEVNULL)
                    report = f"{time.monotonic() - t0:.2f}"
                per_min = rate[name] * 60 / 1e6
                print(f"{w:<12} {name:<12} {per_min:8.2f} {per_min * 60:8.0f} {report:>9}", flush=True)
                os.unlink(out)
            # the default: full records until the switch size, the aggregated rate after
            switch_s = SWITCH_BYTES / rate["full"]
            hour = rate["full"] * 3600 if switch_s >= 3600 else SWITCH_BYTES + rate["aggregate"] * (3600 - switch_s)
            note = f"switches at {switch_s / 60:.1f} min" if switch_s < 3600 else "no switch"
            print(f"{w:<12} {'default':<12} {'':>8} {hour / 1e6:8.0f} {'':>9} ({note})", flush=True)
            if args.switch_check:
                out = os.path.join(tmp, f"{w}.switch.pf")
                env = dict(os.environ, PYFLOW_AGGREGATE_AFTER_BYTES=args.switch_check)
                size, wall = profile_size(args.pyflow, args.python, [], script, args.seconds, out, env)
                print(f"{w:<12} {'switch ' + args.switch_check:<12} file {size / 1e6:.2f} MB after {wall:.0f} s "
                      f"(full records would be {rate['full'] * wall / 1e6:.1f} MB)", flush=True)
                os.unlink(out)


if __name__ == "__main__":
    main()
