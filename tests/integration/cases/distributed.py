"""Integration cases: distributed jobs: torchrun ranks, Dask workers, pyflow env and report DIR."""
import struct
import json
import os
import re
import shutil

from .common import PROGRAMS, Skip, exact_plus_samples, near, once, per_version, row, run


DIST = os.path.join(PROGRAMS, "distributed")


MIB = 1 << 20


def need_module(python, module):
    if run([python, "-c", f"import {module}"], timeout=120).returncode != 0:
        raise Skip(f"{python} cannot import {module} (Debian: python3-torch, python3-distributed)")


def workers_consistent(d):
    """Per-process rows sum to the merged totals, and each worker's per-line bytes to its process's."""
    near(sum(p["alloc_bytes"] for p in d["processes"]), d["totals"]["alloc_bytes"], 1e-6, "processes' sum")
    procs = {p["pid"]: p for p in d["processes"]}
    for w in d["workers"]:
        near(sum(l["alloc_bytes"] for l in w["lines"]), procs[w["pid"]]["alloc_bytes"], 1e-6,
             f"worker {w['pid']}'s lines")
        assert w["peak_bytes"] == procs[w["pid"]]["peak_bytes"], (w, procs[w["pid"]])


def worker_line(w, script, line):
    return sum(l["alloc_bytes"] for l in w["lines"] if l["line"].endswith(f"/{script}:{line}"))


# Debian's torch 1.13 on Python 3.11 cannot parse torchrun's default --redirects 0 (enum.Flag no longer
# iterates the 0 member): redirect to logs and tee them back, which it can parse.
TORCHRUN_FLAGS = ["--nproc_per_node", "2", "--redirects", "1", "--tee", "1"]


def dask_profile(c, *args):
    out = os.path.join(c.tmp, "dask.json")
    cp = run([c.pyflow, "run", "--json", out, c.python, os.path.join(DIST, "dask_job.py"), *args], timeout=900)
    assert os.path.exists(out), cp.stderr[-3000:]
    return cp, json.load(open(out))


def shift_clock(path, by_ns):
    """Moves a profile's CLOCK_MONOTONIC start by by_ns, as if its host had booted at another time (the
    header's start_mono_ns, after magic, four u32 and pid/ppid: offset 32)."""
    with open(path, "r+b") as f:
        f.seek(32)
        mono, = struct.unpack("<Q", f.read(8))
        f.seek(32)
        f.write(struct.pack("<Q", mono + by_ns))


@once
def case_dist_torchrun(c):
    """pyflow run torchrun: both ranks profiled and named, their known allocations on the rank's line, the
    program's output and status as without pyflow, the imbalance on the line that differs."""
    need_module(c.python, "torch.distributed")
    torchrun = shutil.which("torchrun")
    if not torchrun:
        raise Skip("no torchrun on PATH (Debian: python3-torch)")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = os.path.join(DIST, "torch_ranks.py")
    # torchrun under the interpreter being tested (its #! names Debian's python3.11)
    plain = run([c.python, torchrun, *TORCHRUN_FLAGS, "--log_dir", os.path.join(c.tmp, "plain"), script], env=env,
                timeout=600)
    out = os.path.join(c.tmp, "out.json")
    cp = run([c.pyflow, "run", "--python", c.python, "--json", out, torchrun, *TORCHRUN_FLAGS, "--log_dir",
              os.path.join(c.tmp, "prof"), script], env=env, timeout=600)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert cp.returncode == 0 and sorted(cp.stdout.splitlines()) == sorted(plain.stdout.splitlines()), (
        plain.stdout, cp.stdout, cp.stderr[-3000:])
    d = json.load(open(out))
    workers_consistent(d)
    ranks = {w["labels"].split()[0]: w for w in d["workers"]}
    assert sorted(ranks) == ["rank=0", "rank=1"], d["workers"]
    for r in (0, 1):
        w = ranks[f"rank={r}"]
        assert w["name"] == f"rank {r}/2" and "world_size=2" in w["labels"] and w["ended"] == "finished", w
        exact_plus_samples(worker_line(w, "torch_ranks.py", 10), (r + 1) * 24 * MIB, f"rank {r}'s line 10")
    near(row(d, "torch_ranks.py", 10)["alloc_bytes"], 72 * MIB, 0.03, "line 10 over both ranks")
    imb = d["imbalance"]
    assert imb["largest_peak_pid"] == ranks["rank=1"]["pid"], imb
    top = imb["lines"][0]
    assert top["line"].endswith("/torch_ranks.py:10"), imb
    near(top["peak_bytes_difference"], 24 * MIB, 0.05, "the line that makes the difference")
    assert "rank 1/2" in cp.stderr and "imbalance: largest peak" in cp.stderr, cp.stderr[-3000:]
    assert d["task_submissions"] == [] and "tasks submitted" not in cp.stderr, d["task_submissions"]


@once
def case_dist_dask(c):
    """A 4-worker Dask LocalCluster job: same output as without pyflow; every worker found; the tasks'
    known allocations on the task's line (1..8 MiB, 36 MiB in all), each worker's share a whole number of
    MiB, and the workers' per-line rows summing to the merged rows."""
    need_module(c.python, "distributed")
    plain = run([c.python, os.path.join(DIST, "dask_job.py")], timeout=600)
    cp, d = dask_profile(c)
    assert plain.returncode == 0 and plain.stdout == "total 36 MiB from 4 workers\n", (plain.stdout, plain.stderr[-2000:])
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, cp.stderr[-3000:])
    workers_consistent(d)
    dask = [w for w in d["workers"] if w["dask_worker"]]
    assert len(dask) == 4 and all(w["name"] == "dask worker" and w["ended"] == "finished" for w in dask), d["workers"]
    shares = [worker_line(w, "dask_job.py", 15) for w in dask]
    near(sum(shares), 36 * MIB, 0.01, "the task line over all workers")
    near(row(d, "dask_job.py", 15)["alloc_bytes"], sum(shares), 1e-6, "merged task line vs the workers' rows")
    for s in shares:   # tasks of 1..8 MiB, each recorded exactly: a worker holds a whole number of them
        assert abs(s / MIB - round(s / MIB)) < 0.02, shares
    main = [p for p in d["processes"] if p["root"]][0]
    assert main["pid"] not in [w["pid"] for w in dask], "the client process is not a worker"
    # the line that handed the tasks to the workers (SUBMIT_LINE), and no other
    subs = [(os.path.basename(t["file"]), t["line"], t["call"]) for t in d["task_submissions"]]
    assert subs == [("dask_job.py", 27, "map")], d["task_submissions"]
    assert "tasks submitted at dask_job.py:27 (Client.map)" in cp.stderr, cp.stderr[-3000:]


@once
def case_dist_dask_killed(c):
    """A Dask worker killed mid-job (its task SIGKILLs it; the nanny starts another, the task runs again):
    the job still finishes, and the report says which worker was killed and that the other three of the
    first four finished (the nanny's replacement may itself be stopped by force when the cluster closes
    while it is still starting; the report says so too)."""
    need_module(c.python, "distributed")
    pid_file = os.path.join(c.tmp, "killed.pid")
    cp, d = dask_profile(c, "kill", pid_file)
    assert cp.returncode == 0 and cp.stdout.startswith("total 36 MiB"), (cp.stdout, cp.stderr[-3000:])
    killed = int(open(pid_file).read())
    workers_consistent(d)
    by_pid = {w["pid"]: w for w in d["workers"]}
    assert killed in by_pid and by_pid[killed]["killed"] and by_pid[killed]["ended"] == "killed or crashed", by_pid
    first = sorted((w for w in d["workers"] if w["dask_worker"]), key=lambda w: w["start_s"])[:4]
    assert killed in [w["pid"] for w in first] and len(d["workers"]) >= 5, d["workers"]
    others = [w for w in first if w["pid"] != killed]
    assert all(w["ended"] == "finished" and not w["killed"] for w in others), d["workers"]
    assert re.search(rf"dask worker +\S+ +{killed} .*killed or crashed", cp.stderr), cp.stderr[-3000:]


@per_version
def case_dist_env_dir(c):
    """pyflow env + pyflow report DIR: workers started by a shell loop (not by pyflow) on two simulated
    hosts (PYFLOW_HOST, and host B's monotonic clock moved by 1000 s) write DIR/<host>.<pid>; the report
    merges them in the order they ran, names each by rank and host, says how each ended."""
    out_dir = os.path.join(c.tmp, "job")
    cp = run([c.pyflow, "env", "--output-dir", out_dir])
    assert cp.returncode == 0 and "export LD_PRELOAD=" in cp.stdout and "PYFLOW_OUTPUT_DIR=" in cp.stdout, cp
    srun = run([c.pyflow, "env", "--output-dir", out_dir, "--format", "srun"]).stdout
    assert srun.startswith("ALL,LD_PRELOAD=") and f"PYFLOW_OUTPUT_DIR={os.path.realpath(out_dir)}" in srun, srun
    ray = json.loads(run([c.pyflow, "env", "--output-dir", out_dir, "--format", "json"]).stdout)
    assert ray["env_vars"]["PYFLOW_OUTPUT_DIR"] == os.path.realpath(out_dir), ray
    worker = os.path.join(DIST, "env_worker.py")
    # rank host MiB ending, in the order they start (one at a time: the order is the test's clock)
    # (sizes far apart: start-up's sampled bytes vary by a MiB or two between runs)
    plan = [(0, "hostA", 4, "normal"), (1, "hostB", 24, "normal"), (2, "hostA", 12, "os_exit"), (3, "hostB", 16, "kill")]
    loop = cp.stdout + "".join(
        f"RANK={r} WORLD_SIZE=4 PYFLOW_HOST={h} {c.python} {worker} {mib} {how}; echo status $?; sleep 0.3\n"
        for r, h, mib, how in plan)
    plain = run(["sh", "-c", "".join(f"{c.python} {worker} {mib} {how}; echo status $?\n"
                                     for r, h, mib, how in plan)])
    shell = run(["sh", "-c", loop])
    assert [l.split()[-1] for l in shell.stdout.splitlines()] == [l.split()[-1] for l in plain.stdout.splitlines()], (
        shell.stdout, plain.stdout, shell.stderr)
    files = sorted(os.listdir(out_dir))
    assert len(files) == 4 and all(re.fullmatch(r"host[AB]\.\d+", f) for f in files), files
    for f in files:
        if f.startswith("hostB"):
            shift_clock(os.path.join(out_dir, f), -1000 * 10**9)
    out = os.path.join(c.tmp, "job.json")
    rep = run([c.pyflow, "report", out_dir, "--format", "json", "-o", out])
    assert rep.returncode == 0, rep.stderr
    d = json.load(open(out))
    workers_consistent(d)
    ws = sorted(d["workers"], key=lambda w: w["start_s"])
    assert [w["name"] for w in ws] == [f"rank {r}/4" for r, *_ in plan], ws
    assert [w["host"] for w in ws] == [h for _, h, *_ in plan], ws
    assert ws[-1]["start_s"] < 60, "host B's clock was not put on the job's clock: %s" % [w["start_s"] for w in ws]
    assert [w["ended"] for w in ws] == ["finished", "finished", "_exit 3", "killed or crashed"], ws
    assert [w["killed"] for w in ws] == [False, False, False, True], ws
    for w, (r, h, mib, how) in zip(ws, plan):
        exact_plus_samples(worker_line(w, "env_worker.py", 8), mib * MIB, f"rank {r}'s line")
    imb = d["imbalance"]
    assert imb["largest_peak_pid"] == ws[1]["pid"] and imb["smallest_peak_pid"] == ws[0]["pid"], imb
    assert imb["lines"][0]["line"].endswith("/env_worker.py:8"), imb
    near(imb["lines"][0]["peak_bytes_difference"], 20 * MIB, 0.05, "the difference between ranks 1 and 0")
    html = os.path.join(c.tmp, "job.html")
    assert run([c.pyflow, "report", out_dir, "--format", "html", "-o", html]).returncode == 0
    page = open(html, encoding="utf-8").read()
    assert '<table id="workers"' in page and "rank 1/4" in page and '<p id="imbalance">' in page, page[-3000:]
    # several files and folders: one host's files named one by one give the same workers
    a_files = [os.path.join(out_dir, f) for f in files if f.startswith("hostA")]
    text = run([c.pyflow, "report", *a_files, "--width", "120"])
    assert text.returncode == 0 and re.search(r"workers: 2 processes on 1 host", text.stdout), text.stdout[-2000:]
    assert re.search(r"rank 2/4 +hostA +\d+ .*_exit 3", text.stdout), text.stdout[-2000:]
    # bad input: one line, status 2
    empty = os.path.join(c.tmp, "empty")
    os.mkdir(empty)
    bad = run([c.pyflow, "report", empty])
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no pyflow profile" in bad.stderr, bad.stderr
    bad = run([c.pyflow, "env"])
    assert bad.returncode == 2 and "--output-dir" in bad.stderr, bad.stderr
