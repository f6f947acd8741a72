"""The report's merge of the events on a thread of its own (report/pf_events_pipe.c): the same profile
rendered with the merge on the sweep's thread (PYFLOW_REPORT_THREADS=1) and on a second thread through the
ring of batches (=2) must give the same bytes in every format, a window's report too."""
import json
import os

from .common import Skip, once, prog, run

FORMATS = ("text", "json", "dot", "html", "csv", "speedscope", "pprof")


def render(c, path, threads, fmt, *extra, env=None):
    env = {**os.environ, "PYFLOW_REPORT_THREADS": threads, **(env or {})}
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


# Programs (and their arguments) whose exact profiles exercise each rule pf_live_ahead.c applies for the
# sweep: children that end holding objects (a process's end), fork children on files of their own, addresses
# reused while the interpreter finalizes (parked objects), copies into headers and into slices of large
# blocks, contents of freed and untouched blocks.
AHEAD_PROGRAMS = (("children_serial.py", "subprocess"), ("children_serial.py", "fork"), ("threads_and_fork.py",),
                  ("leak_end.py", "leak", "python"), ("copy_pieces.py",), ("copies_not_redundant.py", "python"),
                  ("waste_untouched.py",), ("waste_recompute.py",))
AHEAD_NUMPY = (("copies_not_redundant.py", "numpy"), ("flow_kinds_numpy.py",), ("waste_untouched.py", "numpy"))
EVERY_COPY = ("copy_pieces.py", "copies_not_redundant.py")     # recorded with every copy (not sampled)
AHEAD_FORMATS = ("text", "json", "dot")     # what the model holds; the other formats render the same model


@once
def case_report_ahead_identical(c):
    """An exact profile's live objects found on the merge thread (report/pf_live_ahead.c) or by the sweep's
    own map (PYFLOW_REPORT_AHEAD=0): every format the same byte for byte, the merge inline and threaded, on
    programs that end processes holding objects, park objects at finalization, copy into headers and
    slices (numpy's buffers too where the interpreter has numpy), and record contents."""
    programs = list(AHEAD_PROGRAMS)
    try:
        c.need_numpy()
        programs += AHEAD_NUMPY
    except Skip:
        pass
    for i, (name, *args) in enumerate(programs):
        path = os.path.join(c.tmp, f"{i}.pfp")
        env = {**os.environ, **({"PYFLOW_COPY_SAMPLE_BYTES": "1"} if name in EVERY_COPY else {})}
        cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "-o", path, prog(name), *args],
                 env=env, timeout=240)
        assert cp.returncode == 0, (name, args, cp.stderr[-2000:])
        for threads in ("1", "2"):
            for fmt in AHEAD_FORMATS:
                ahead = render(c, path, threads, fmt)
                own = render(c, path, threads, fmt, env={"PYFLOW_REPORT_AHEAD": "0"})
                assert ahead == own, f"{name} {args} {fmt} threads={threads}: the report differs with the map ahead"

