"""The report `pyflow run --exact` prints, built while the program runs (report/pf_model_follow.c): it must be
the one `pyflow report` builds from the same profile afterwards, byte for byte, whether the follower kept
up with the program (one thread, one process) or gave up and left the profile to the loader (threads,
children)."""
import os

import shutil

from .common import Skip, once, per_version, prog, run

# (program and arguments, run options, followed to the end: True, the follower must not give up on it; a
# string, it may give up for that reason only; False, it must give up; None, either way)
PROGRAMS = (
    (("follow_steps.py",), (), True),
    (("follow_steps.py", "20"), ("--native",), True),
    (("leak_end.py", "leak", "python"), (), True),
    (("copies_not_redundant.py", "python"), (), True),
    (("waste_untouched.py",), (), True),
    # processes started: followed still, unless one is Python (ctypes' find_library before 3.10 runs one)
    (("shell_scripts.py",), (), "children's profiles"),
    (("threads_and_fork.py",), (), False),     # threads and a forked child: the loader's
)
NUMPY = ((("copies_not_redundant.py", "numpy"), (), None), (("waste_untouched.py", "numpy"), (), None))


def run_followed(c, path, args, opts):
    """`pyflow run --exact` with its JSON and dot at exit; the line that says which way the model came."""
    env = {**os.environ, "PYFLOW_REPORT_FOLLOW": "1", "PYFLOW_REPORT_FOLLOW_SAY": "1"}
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", *opts, "--json", path + ".json", "--dot",
              path + ".dot", "-o", path, prog(args[0]), *args[1:]], env=env, timeout=240)
    assert cp.returncode == 0, (args, opts, cp.stderr[-2000:])
    said = [ln for ln in cp.stderr.splitlines() if ln.startswith("pyflow: report ")]
    assert len(said) == 1, (args, opts, cp.stderr[-2000:])
    return said[0][len("pyflow: report "):]


def rendered(c, path, fmt):
    cp = run([c.pyflow, "report", "--format", fmt, path], timeout=240)
    assert cp.returncode == 0, (path, fmt, cp.stderr[-2000:])
    return cp.stdout


@per_version
def case_report_followed_identical(c):
    """Each program's JSON and dot from `pyflow run --exact` (the model built while it ran, where it has one
    thread and one process; else loaded at the end) are those of `pyflow report` on its profile."""
    programs = list(PROGRAMS)
    try:
        c.need_numpy()
        programs += NUMPY
    except Skip:
        pass
    for i, (args, opts, followed) in enumerate(programs):
        path = os.path.join(c.tmp, f"{i}.pfp")
        how = run_followed(c, path, args, opts)
        if isinstance(followed, str):
            assert how in ("followed", followed), (args, opts, how)
        elif followed is not None:
            assert (how == "followed") == followed, (args, opts, how)
        for fmt, ext in (("json", ".json"), ("dot", ".dot")):
            with open(path + ext, encoding="utf-8", errors="replace") as f:
                at_exit = f.read()
            assert at_exit == rendered(c, path, fmt), f"{args} {opts} ({how}): the {fmt} at exit differs"


@once
def case_report_follow_off(c):
    """No follower where it cannot pay or is turned off: on one CPU (taskset), or PYFLOW_REPORT_FOLLOW=0; the
    report at exit is then loaded after the run, as always. On two CPUs it follows."""
    if not shutil.which("taskset"):
        raise Skip("no taskset")
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        raise Skip("CPUs 0 and 1 are not both this process's")
    path = os.path.join(c.tmp, "off.pfp")
    base = [c.pyflow, "run", "--python", c.python, "--exact", "-o", path, prog("leak_end.py"), "leak", "python"]
    say = {**os.environ, "PYFLOW_REPORT_FOLLOW_SAY": "1"}
    say.pop("PYFLOW_REPORT_FOLLOW", None)
    for cmd, env, followed in ((["taskset", "-c", "0", *base], say, False),
                               (base, {**say, "PYFLOW_REPORT_FOLLOW": "0"}, False),
                               (["taskset", "-c", "0,1", *base], say, True)):
        cp = run(cmd, env=env, timeout=240)
        assert cp.returncode == 0, (cmd, cp.stderr[-2000:])
        said = [ln for ln in cp.stderr.splitlines() if ln.startswith("pyflow: report ")]
        assert said == (["pyflow: report followed"] if followed else []), (cmd[:3], said)


@once
def case_report_follow_memory_short(c):
    """Where the machine runs short of memory (here: less available than PYFLOW_REPORT_FOLLOW_MIN_AVAILABLE)
    the follower lets its model go while the program runs, and the report at exit is loaded after it: the
    same report."""
    path = os.path.join(c.tmp, "short.pfp")
    env = {**os.environ, "PYFLOW_REPORT_FOLLOW": "1", "PYFLOW_REPORT_FOLLOW_SAY": "1",
           "PYFLOW_REPORT_FOLLOW_MIN_AVAILABLE": str(1 << 60)}
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--json", path + ".json", "-o", path,
              prog("follow_steps.py")], env=env, timeout=240)
    assert cp.returncode == 0, cp.stderr[-2000:]
    said = [ln for ln in cp.stderr.splitlines() if ln.startswith("pyflow: report ")]
    assert said == ["pyflow: report memory is short"], said
    with open(path + ".json", encoding="utf-8", errors="replace") as f:
        assert f.read() == rendered(c, path, "json"), "the JSON at exit differs"
