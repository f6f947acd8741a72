#!/usr/bin/env bash
# The cost of profiling a Dask job's workers: the job of the distributed tests (a LocalCluster of four
# worker processes, eight tasks) run plain and under pyflow (profile to a file, no report; then with the
# report), in turn, RUNS times each; prints each run's wall and CPU (user+sys of the job and all its
# workers) seconds and the medians of the pyflow/plain ratios, pair by pair. Needs python3-distributed.
#   bench/distributed_dask.sh [build/bin/pyflow] [RUNS, default 5]
set -eu
PYFLOW=$(realpath "${1:-build/bin/pyflow}")
RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
JOB="$HERE/../tests/integration/programs/distributed/dask_job.py"
PY=/usr/bin/python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
exec "$PY" - "$PYFLOW" "$RUNS" "$JOB" "$out" <<'PYEOF'
import os, resource, statistics, subprocess, sys, time
pyflow, runs, job, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
py = "/usr/bin/python3"
cmds = {
    "plain": [py, job],
    "pyflow": [pyflow, "run", "--no-report", "-o", os.path.join(out, "p.prof"), py, job],
    "pyflow+report": [pyflow, "run", "-o", os.path.join(out, "r.prof"), py, job],
}
def once(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    cp = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert cp.returncode == 0 and cp.stdout == "total 36 MiB from 4 workers\n", (cmd, cp.stdout, cp.stderr[-2000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
once(cmds["plain"])   # warm the page cache
res = {k: [] for k in cmds}
for i in range(runs):
    for k, c in cmds.items():
        res[k].append(once(c))
        print(f"{k:14} run {i + 1}: wall {res[k][-1][0]:6.2f} s  cpu {res[k][-1][1]:6.2f} s", flush=True)
for k in ("pyflow", "pyflow+report"):
    wr = statistics.median(a[0] / b[0] for a, b in zip(res[k], res["plain"]))
    cr = statistics.median(a[1] / b[1] for a, b in zip(res[k], res["plain"]))
    print(f"{k}/plain: median wall ratio {wr:.2f}x, cpu ratio {cr:.2f}x "
          f"(plain median wall {statistics.median(r[0] for r in res['plain']):.2f} s, "
          f"cpu {statistics.median(r[1] for r in res['plain']):.2f} s)")
PYEOF
