"""The report's merge of the events on a thread of its own (report/pf_events_pipe.c): the same profile
rendered with the merge on the sweep's thread (PYFLOW_REPORT_THREADS=1) and on a second thread through the
ring of batches (=2) must give the same bytes in every format, a window's report too."""
import json
import os

from .common import once, prog, run

FORMATS = ("text", "json", "dot", "html", "csv", "speedscope", "pprof")


def render(c, path, threads, fmt, *extra):
    env = {**os.environ, "PYFLOW_REPORT_THREADS": threads}
    cp = run([c.pyflow, "report", os.path.basename(path), "--format", fmt, *extra], cwd=os.path.dirname(path),
             env=env, text=False, timeout=240)
    assert cp.returncode == 0, f"{fmt} {threads} {extra}: {cp.stderr[-2000:]}"
    return cp.stdout


@once
def case_report_threads_identical(c):
    """An exact profile of 8 threads in two processes (one forked, on its own file): every format, and a
    --window's JSON, the same byte for byte with the merge inline and threaded."""
    path = os.path.join(c.tmp, "taf.pfp")
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "-o", path,
              prog("threads_and_fork.py")])
    assert cp.returncode == 0 and cp.stdout == "child status 0\n", (cp.stdout, cp.stderr[-2000:])
    size = sum(os.path.getsize(os.path.join(c.tmp, f)) for f in os.listdir(c.tmp) if f.startswith("taf.pfp"))
    assert size > 4 << 20, f"only {size} bytes of profile: too few events to fill the ring many times"
    for fmt in FORMATS:
        inline, threaded = render(c, path, "1", fmt), render(c, path, "2", fmt)
        assert inline == threaded, f"{fmt}: the threaded merge's report differs from the inline one's"
    doc = json.loads(render(c, path, "1", "json"))
    assert len(doc["processes"]) == 2, doc["processes"]
    half = int(doc["program"]["elapsed_s"] * 1e9 / 2)
    for window in (f"0:{half}", f"{half // 2}:{half + half // 2}"):
        inline, threaded = (render(c, path, t, "json", "--window", window) for t in ("1", "2"))
        assert inline == threaded, f"--window {window}: the threaded merge's report differs"
        assert inline != render(c, path, "1", "json"), f"--window {window} left the report as it was"
