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

--all runs every pyflow mode (default, `--native`, `--exact`, `--exact --native`, `--watch`, `--aggregate`)
beside every peer installed (tracemalloc; Scalene; heaptrack and heaptrack with PYTHONMALLOC=malloc; memray
when on PATH), in one interleaved run. A pyflow row (`*`) is what a user waits for: `pyflow run --no-report
-o PROFILE` (the program, recording) and then `pyflow report PROFILE` (the report `pyflow run` prints at
exit), their times added; with `--exact`, whose report `pyflow run` reads while the program runs, the time
of `pyflow run` itself, and the report's the time it adds to the recording's. Its peak RSS is the program's own (pyflow's pages in it included); the reader's
peak is given apart ("report MiB"), because it runs after the program has ended. For each pyflow row the
profile's size is given per minute of the recording run (MB/min, children's files included) and the
report's share of the whole (report %). The peers' rows include no report.

Time ratios are given for wall time and for CPU time (user + system of the whole process tree): on a
loaded machine the CPU ratio moves less.

--readme README.md rewrites the part of README.md between the markers `<!-- bench:begin -->` and
`<!-- bench:end -->` with a summary of this run: per mode, the geometric mean and the worst of the time
ratios and the worst peak-RSS ratio.
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
    """Runs cmd once; returns (wall seconds, peak RSS bytes of the largest process, CPU seconds of the
    process and the descendants it waited for) or None on failure."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    return wall, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def profile_files(path):
    """The profile at path and its children's files (path.PID...)."""
    d, base = os.path.split(path)
    return [os.path.join(d, n) for n in os.listdir(d) if n == base or n.startswith(base + ".")]


def measure_pyflow(args, cmd, profile, whole=None):
    """Runs a pyflow command writing profile without its report at exit, then `pyflow report` on what it
    wrote: together what `pyflow run` costs a user. Returns (wall, program's peak RSS, CPU, profile bytes,
    report wall, report peak RSS, report CPU), the times being the sums of both steps, or None on failure.
    whole: the same `pyflow run` with its report at exit, which under --exact reads the profile while the
    program runs: the wall and CPU times are then its own, and the report's time what it adds to the
    recording's."""
    for f in profile_files(profile):
        os.unlink(f)
    r = measure(cmd)
    if not r:
        return None
    size = sum(os.path.getsize(f) for f in profile_files(profile))
    read = measure([args.pyflow, "report", profile])
    if not read:
        return None
    if whole:
        w = measure(whole)
        if not w:
            return None
        return w[0], r[1], w[2], size, max(0.0, w[0] - r[0]), read[1], read[2]
    return r[0] + read[0], r[1], r[2] + read[2], size, read[0], read[1], read[2]


# pyflow's modes for --all: name -> options of `pyflow run`
PYFLOW_MODES = {
    "pyflow": [],
    "pyflow-native": ["--native"],
    "pyflow-exact": ["--exact"],
    "pyflow-exact-native": ["--exact", "--native"],
    "pyflow-watch": ["--watch"],
    "pyflow-aggregate": ["--aggregate"],
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
    whole = {}
    for name, cmd in out.items():   # every pyflow run keeps its profile: its size and reading it after
        if name.startswith("pyflow") or name.startswith("watch-"):
            if "--exact" in cmd:    # its report is read while the program runs: timed as a user runs it
                whole[name] = list(cmd)
            cmd[2:2] = ["-o", os.path.join(scratch, name + ".pflow"), "--no-report"]
    return out, whole


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary_table(summary, runs, workloads):
    """Markdown lines: per tool, the geometric mean and worst of its wall and CPU time ratios and its worst
    peak-RSS ratio over the workloads it ran."""
    lines = [f"| tool | wall x plain, geomean | worst | CPU x plain, geomean | worst | worst peak RSS x plain |",
             "|---|---|---|---|---|---|"]
    for name, rows in summary.items():
        if name == "plain" or not rows:
            continue
        walls = [r[1] for r in rows]
        cpus = [r[2] for r in rows]
        worst = max(rows, key=lambda r: r[1])
        worst_cpu = max(rows, key=lambda r: r[2])
        worst_rss = max(rows, key=lambda r: r[3])
        lines.append(f"| {name} | {geomean(walls):.2f} | {worst[1]:.2f} ({worst[0]}) | {geomean(cpus):.2f} | "
                     f"{worst_cpu[2]:.2f} ({worst_cpu[0]}) | {worst_rss[3]:.2f} ({worst_rss[0]}) |")
    lines.append("")
    lines.append(f"Medians of {runs} interleaved runs of each of {', '.join(workloads)}; pyflow rows include "
                 "the report printed at exit.")
    return lines


def rewrite_readme(path, lines, command):
    """Replaces the text between the bench markers of the README at path with lines."""
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    text = open(path).read()
    if begin not in text or end not in text:
        sys.exit(f"run_bench.py: {path} has no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    body = [f"`{command}` on {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs "
            f"(load average {os.getloadavg()[0]:.1f} at the end):", ""] + lines
    with open(path, "w") as f:
        f.write(head + begin + "\n" + "\n".join(body) + "\n" + end + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--watch", action="store_true", help="also time each --watch mode")
    ap.add_argument("--exact", action="store_true", help="also time pyflow --exact and heaptrack")
    ap.add_argument("--all", action="store_true",
                    help="every pyflow mode (default, --native, --exact, --exact --native, --watch, --aggregate) "
                         "and every installed peer, with each pyflow profile's MB per minute and its report's time")
    ap.add_argument("--no-peers", action="store_true", help="skip tracemalloc, Scalene, heaptrack and memray")
    ap.add_argument("--readme", metavar="README.md",
                    help="rewrite the README's bench section (between its bench markers) with this run's summary")
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    args = ap.parse_args()
    summary = {}        # tool -> [(workload, wall ratio, CPU ratio, RSS ratio)]
    scratch = tempfile.mkdtemp(prefix="pyflow-bench-")
    print(f"{'workload':<12} {'tool':<20} {'wall s':>8} {'x plain':>8} {'CPU s':>7} {'x plain':>8} "
          f"{'peak MiB':>9} {'x plain':>8} {'MB/min':>8} {'report s':>8} {'report %':>8} {'rep MiB':>8}")
    for w in args.workloads:
        script = os.path.join(HERE, "workloads", w + ".py")
        cmds, whole = tools(args, script, scratch)
        if args.no_peers:
            cmds = {k: v for k, v in cmds.items()
                    if k.split("-")[0] not in ("tracemalloc", "scalene", "heaptrack", "memray")}
        results = {name: [] for name in cmds}
        for _ in range(args.runs):          # interleaved, so drift hits every tool alike
            for name, cmd in cmds.items():
                r = measure_pyflow(args, cmd, cmd[3], whole.get(name)) if cmd[2:3] == ["-o"] else measure(cmd)
                if r:
                    results[name].append(r)
        if not results["plain"]:
            print(f"{w:<12} plain run failed; skipped")
            continue
        base_t = statistics.median(r[0] for r in results["plain"])
        base_m = statistics.median(r[1] for r in results["plain"])
        base_c = statistics.median(r[2] for r in results["plain"])
        for name, rs in results.items():
            if not rs:
                print(f"{w:<12} {name:<20} {'failed':>8}")
                continue
            t = statistics.median(r[0] for r in rs)
            mem = statistics.median(r[1] for r in rs)
            cpu = statistics.median(r[2] for r in rs)
            extra = ""
            if len(rs[0]) == 7:     # a pyflow row: recording and report
                rate = statistics.median(r[3] / 1e6 / ((r[0] - r[4]) / 60) for r in rs)
                read = statistics.median(r[4] for r in rs)
                share = statistics.median(100 * r[4] / r[0] for r in rs)
                read_mem = statistics.median(r[5] for r in rs)
                extra = f" {rate:8.1f} {read:8.3f} {share:8.0f} {read_mem / 2**20:8.1f}"
            label = name + "*" if extra else name
            print(f"{w:<12} {label:<20} {t:8.3f} {t / base_t:8.2f} {cpu:7.2f} {cpu / base_c:8.2f} "
                  f"{mem / 2**20:9.1f} {mem / base_m:8.2f}{extra}", flush=True)
            summary.setdefault(name, []).append((w, t / base_t, cpu / base_c, mem / base_m))
    shutil.rmtree(scratch, ignore_errors=True)
    print("\n* a pyflow row: `pyflow run --no-report -o PROFILE` then `pyflow report PROFILE`, times added "
          "(what `pyflow run` costs with its report at exit), but with --exact `pyflow run` itself, whose "
          "report is read while the program runs (report s: what it adds to the recording's time); peak MiB: "
          "the program's; MB/min: the profile per minute of the recording; report %: the report's share of the "
          "whole time; rep MiB: the reader's peak\n")
    lines = summary_table(summary, args.runs, [w for w in args.workloads])
    print("\n".join(lines))
    if "pyflow" in summary:
        print(f"\npyflow geometric-mean time ratio: {geomean([r[1] for r in summary['pyflow']]):.3f} over "
              f"{len(summary['pyflow'])} workloads (medians of {args.runs} runs)")
    if args.readme:
        rewrite_readme(args.readme, lines, "bench/run_bench.py " + " ".join(
            a for a in sys.argv[1:] if not a.startswith("--readme") and a != args.readme))


if __name__ == "__main__":
    sys.exit(main())
