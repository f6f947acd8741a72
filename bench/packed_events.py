#!/usr/bin/env python3
"""Packed exact events against a pyflow build without them: profile size, bytes per allocation-and-free,
and CPU (user + sys) and wall seconds of recording (`pyflow run --exact --no-report`), of `pyflow report`
of that profile, and of the whole `pyflow run --exact` (report included), as medians of runs that take
turns between the two builds (the machine may be shared). The figures of docs/overhead.md:

    bench/packed_events.py --base /tmp/base/bin/pyflow --new build/bin/pyflow [--runs 5]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from profile_stats import PACKED, packed_events, walk  # noqa: E402

ENV = {**os.environ, "PATH": "/usr/bin:" + os.environ.get("PATH", "")}


def timed(cmd):
    """(wall seconds, CPU seconds of the children) of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pairs(path):
    """Allocation-and-free pairs in the profile: ALLOC_SHORT/FREE records, or the events of packed ones."""
    data = open(path, "rb").read()
    allocs = frees = 0
    for rtype, p, size in walk(data):
        if rtype == 21:
            allocs += 1
        elif rtype == 2:
            frees += 1
        elif rtype == PACKED:
            for ev in packed_events(data, p, size):
                allocs += ev[0] == 21
                frees += ev[0] == 2
    return allocs, frees


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workloads", default="churn,indexing,numpy_temps,copies,numeric")
    ap.add_argument("--recorded", default="churn,indexing")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pyflow-packed-")
    builds = {"base": a.base, "new": a.new}
    for w in a.recorded.split(","):
        script = os.path.join(HERE, "workloads", w + ".py")
        rec, rep = {b: [] for b in builds}, {b: [] for b in builds}
        size = {}
        for _ in range(a.runs):
            for b, exe in builds.items():
                prof = os.path.join(tmp, f"{w}.{b}.pfp")
                rec[b].append(timed([exe, "run", "--exact", "--no-report", "-o", prof, script]))
                rep[b].append(timed([exe, "report", prof]))
                size[b] = os.path.getsize(prof)
        for b in builds:
            allocs, frees = pairs(os.path.join(tmp, f"{w}.{b}.pfp"))
            per = size[b] / max(min(allocs, frees), 1)
            print(f"{w:<12} {b:<5} profile {size[b] / 1e6:7.1f} MB  {allocs} allocs {frees} frees  "
                  f"{per:5.1f} file bytes per alloc+free  record cpu {statistics.median(c for _, c in rec[b]):.2f} s "
                  f"wall {statistics.median(x for x, _ in rec[b]):.2f} s  report cpu "
                  f"{statistics.median(c for _, c in rep[b]):.2f} s wall {statistics.median(x for x, _ in rep[b]):.2f} s",
                  flush=True)
    for w in a.workloads.split(","):
        script = os.path.join(HERE, "workloads", w + ".py")
        whole = {b: [] for b in builds}
        for _ in range(a.runs):
            for b, exe in builds.items():
                whole[b].append(timed([exe, "run", "--exact", script]))
        for b in builds:
            print(f"{w:<12} {b:<5} pyflow run --exact: cpu {statistics.median(c for _, c in whole[b]):.2f} s "
                  f"wall {statistics.median(x for x, _ in whole[b]):.2f} s", flush=True)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
