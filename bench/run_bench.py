#!/usr/bin/env python3
"""Overhead benchmark: each workload plain, under pyflow (default mode), under `python -X tracemalloc`,
and under Scalene with memory profiling (if installed), several runs each. Prints median wall seconds and
median peak RSS, and their ratios to the plain run; then the geometric mean of pyflow's time ratios.

    bench/run_bench.py --pyflow build/bin/pyflow [--runs 5] [--python /usr/bin/python3] [--watch] [--exact]
                       [workload ...]

--exact adds `pyflow run --exact` (every allocation recorded) and, when installed, heaptrack, which also
records every allocation, with a native stack each: as it is usually run on Python (it then sees pymalloc's
arenas, not objects) and with PYTHONMALLOC=malloc (every object, as pyflow --exact sees them).

--watch adds `pyflow run --no-watch` (the default run watches copies where debug registers fire),
`--watch=stores`, `--watch=loads` (at the default period, about 250 samples per second of CPU time) and
`--watch=copies` (write watches armed on the copies pyflow judges). Where debug registers do not fire (`pyflow info`: "breakpoints fire FAIL") watchpoints
are emulated by single steps and those figures measure the emulation, not the technique.
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["churn", "numpy_temps", "numeric", "copies"]


def measure(cmd):
    """Runs cmd once; returns (wall seconds, peak RSS bytes of the largest process) or None on failure."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    return wall, usage.ru_maxrss * 1024


def tools(args, script, scratch):
    py = args.python
    out = {
        "plain": [py, script],
        "pyflow": [args.pyflow, "run", "--python", py, script],     # as users run it: the report included
        "tracemalloc": [py, "-X", "tracemalloc", script],
    }
    if args.watch:
        # the default watches copies where debug registers fire: without any watch, for comparison
        out["pyflow-no-watch"] = [args.pyflow, "run", "--no-watch", "--python", py, script]
        for mode in ("stores", "loads", "copies"):
            out["watch-" + mode] = [args.pyflow, "run", "--python", py, "--watch=" + mode, script]
    if args.exact:
        out["pyflow-exact"] = [args.pyflow, "run", "--exact", "--python", py, script]
        if shutil.which("heaptrack"):
            trace = os.path.join(scratch, "heaptrack")
            out["heaptrack"] = ["heaptrack", "-o", trace, py, script]
            out["heaptrack-all"] = ["env", "PYTHONMALLOC=malloc", "heaptrack", "-o", trace, py, script]
    if shutil.which("scalene") or subprocess.run([py, "-c", "import scalene"], capture_output=True).returncode == 0:
        out["scalene"] = [py, "-m", "scalene", "--cli", "--memory",
                          "--outfile", os.devnull, script]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--watch", action="store_true", help="also time each --watch mode")
    ap.add_argument("--exact", action="store_true", help="also time pyflow --exact and heaptrack")
    ap.add_argument("--no-peers", action="store_true", help="skip tracemalloc, Scalene and heaptrack")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    ratios = []
    scratch = tempfile.mkdtemp(prefix="pyflow-bench-")
    print(f"{'workload':<12} {'tool':<15} {'wall s':>8} {'x plain':>8} {'peak MiB':>9} {'x plain':>8}")
    for w in args.workloads:
        script = os.path.join(HERE, "workloads", w + ".py")
        cmds = tools(args, script, scratch)
        if args.no_peers:
            cmds = {k: v for k, v in cmds.items() if k.split("-")[0] not in ("tracemalloc", "scalene", "heaptrack")}
        results = {name: [] for name in cmds}
        for _ in range(args.runs):          # interleaved, so drift hits every tool alike
            for name, cmd in cmds.items():
                r = measure(cmd)
                if r:
                    results[name].append(r)
        if not results["plain"]:
            print(f"{w:<12} plain run failed; skipped")
            continue
        base_t = statistics.median(r[0] for r in results["plain"])
        base_m = statistics.median(r[1] for r in results["plain"])
        for name, rs in results.items():
            if not rs:
                print(f"{w:<12} {name:<15} {'failed':>8}")
                continue
            t = statistics.median(r[0] for r in rs)
            mem = statistics.median(r[1] for r in rs)
            print(f"{w:<12} {name:<15} {t:8.3f} {t / base_t:8.2f} {mem / 2**20:9.1f} {mem / base_m:8.2f}")
            if name == "pyflow":
                ratios.append(t / base_t)
    shutil.rmtree(scratch, ignore_errors=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\npyflow geometric-mean time ratio: {geo:.3f} over {len(ratios)} workloads "
              f"(medians of {args.runs} runs)")


if __name__ == "__main__":
    sys.exit(main())
