#!/usr/bin/env python3
"""Overhead benchmark: each workload plain, under pyflow (default mode), under `python -X tracemalloc`,
and under Scalene with memory profiling (if installed), several runs each. Prints median wall seconds and
median peak RSS, and their ratios to the plain run; then the geometric mean of pyflow's time ratios.

    bench/run_bench.py --pyflow build/bin/pyflow [--runs 5] [--python /usr/bin/python3] [--watch] [--exact]
                       [--all] [--no-peers]
                       [workload ...]

--exact adds `pyflow run --exact` (every allocation recorded) and, when installed, heaptrack, which also
records every allocation, with a native stack each: as it is usually run on Python (it then sees pymalloc's
arenas, not objects) and with PYTHONMALLOC=malloc (every object, as pyflow --exact sees them).

--watch adds `pyflow run --no-watch` (the default run watches copies where debug registers fire),
`--watch=stores`, `--watch=loads` (at the default period, about 250 samples per second of CPU time) and
`--watch=copies` (write watches armed on the copies pyflow judges). Where debug registers do not fire (`pyflow info`: "breakpoints fire FAIL") watchpoints
are emulated by single steps and those figures measure the emulation, not the technique.

--all runs every pyflow mode (default, `--native`, `--exact`, `--exact --native`, `--watch`) beside every
peer installed (tracemalloc; Scalene; heaptrack and heaptrack with PYTHONMALLOC=malloc; memray when on PATH),
in one interleaved run. pyflow's rows (`*`) are `pyflow run -o PROFILE` as users run it: their time includes
the report printed at exit. For each pyflow row the profile's size is given per minute of that run (MB/min,
children's files included) and the time `pyflow report PROFILE` took to read it again afterwards (read s),
with the median read speed (MB/s). The peers' rows include no report.
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
WORKLOADS = ["churn", "numpy_temps", "numeric", "copies", "indexing"]


def measure(cmd):
    """Runs cmd once; returns (wall seconds, peak RSS bytes of the largest process) or None on failure."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    return wall, usage.ru_maxrss * 1024


def profile_files(path):
    """The profile at path and its children's files (path.PID...)."""
    d, base = os.path.split(path)
    return [os.path.join(d, n) for n in os.listdir(d) if n == base or n.startswith(base + ".")]


def measure_pyflow(args, cmd, profile):
    """Runs a pyflow command writing profile (report at exit included), then `pyflow report` on what it
    wrote. Returns (wall, peak RSS, profile bytes, report wall seconds) or None on failure."""
    for f in profile_files(profile):
        os.unlink(f)
    r = measure(cmd)
    if not r:
        return None
    size = sum(os.path.getsize(f) for f in profile_files(profile))
    read = measure([args.pyflow, "report", profile])
    return r + (size, read[0] if read else float("nan"))


# pyflow's modes for --all: name -> options of `pyflow run`
PYFLOW_MODES = {
    "pyflow": [],
    "pyflow-native": ["--native"],
    "pyflow-exact": ["--exact"],
    "pyflow-exact-native": ["--exact", "--native"],
    "pyflow-watch": ["--watch"],
}


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
    if args.all:
        for name, opts in PYFLOW_MODES.items():
            out[name] = [args.pyflow, "run", *opts, "--python", py, script]
        if shutil.which("heaptrack"):
            trace = os.path.join(scratch, "heaptrack")
            out["heaptrack"] = ["heaptrack", "-o", trace, py, script]
            out["heaptrack-all"] = ["env", "PYTHONMALLOC=malloc", "heaptrack", "-o", trace, py, script]
        if shutil.which("memray"):
            out["memray"] = ["memray", "run", "--force", "-o", os.path.join(scratch, "memray.bin"), script]
    if shutil.which("scalene") or subprocess.run([py, "-c", "import scalene"], capture_output=True).returncode == 0:
        out["scalene"] = [py, "-m", "scalene", "--cli", "--memory",
                          "--outfile", os.devnull, script]
    for name, cmd in out.items():   # every pyflow run keeps its profile: its size and reading it again
        if name.startswith("pyflow") or name.startswith("watch-"):
            cmd[2:2] = ["-o", os.path.join(scratch, name + ".pflow")]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--watch", action="store_true", help="also time each --watch mode")
    ap.add_argument("--exact", action="store_true", help="also time pyflow --exact and heaptrack")
    ap.add_argument("--all", action="store_true",
                    help="every pyflow mode (default, --native, --exact, --exact --native, --watch) and every "
                         "installed peer, with each pyflow profile's MB per minute and the time to read it")
    ap.add_argument("--no-peers", action="store_true", help="skip tracemalloc, Scalene, heaptrack and memray")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    ratios = []
    scratch = tempfile.mkdtemp(prefix="pyflow-bench-")
    print(f"{'workload':<12} {'tool':<20} {'wall s':>8} {'x plain':>8} {'peak MiB':>9} {'x plain':>8} "
          f"{'MB/min':>8} {'read s':>7} {'MB/s':>7}")
    for w in args.workloads:
        script = os.path.join(HERE, "workloads", w + ".py")
        cmds = tools(args, script, scratch)
        if args.no_peers:
            cmds = {k: v for k, v in cmds.items()
                    if k.split("-")[0] not in ("tracemalloc", "scalene", "heaptrack", "memray")}
        results = {name: [] for name in cmds}
        for _ in range(args.runs):          # interleaved, so drift hits every tool alike
            for name, cmd in cmds.items():
                r = measure_pyflow(args, cmd, cmd[3]) if cmd[2:3] == ["-o"] else measure(cmd)
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
            extra = ""
            if len(rs[0]) == 4:     # a pyflow row: the report at exit is in its time
                rate = statistics.median(r[2] / 1e6 / (r[0] / 60) for r in rs)
                read = statistics.median(r[3] for r in rs)
                speed = statistics.median(r[2] / 1e6 / r[3] for r in rs if r[3] > 0)
                extra = f" {rate:8.1f} {read:7.3f} {speed:7.0f}"
            label = name + "*" if extra else name
            print(f"{w:<12} {label:<20} {t:8.3f} {t / base_t:8.2f} {mem / 2**20:9.1f} {mem / base_m:8.2f}{extra}")
            if name == "pyflow":
                ratios.append(t / base_t)
    shutil.rmtree(scratch, ignore_errors=True)
    print("\n* pyflow run -o PROFILE: the time includes the report printed at exit; MB/min: the profile's size "
          "per minute of that run; read s: `pyflow report PROFILE` afterwards (MB/s: its read speed)")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\npyflow geometric-mean time ratio: {geo:.3f} over {len(ratios)} workloads "
              f"(medians of {args.runs} runs)")


if __name__ == "__main__":
    sys.exit(main())
