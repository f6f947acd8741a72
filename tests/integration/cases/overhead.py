"""Integration cases: what --exact costs the program, bounded by a ratio to the plain run where a per-record
cost used to grow with the run. Times are CPU seconds of the whole process tree (the launcher, the
program and pyflow in it), not wall time, so that other work on a loaded machine counts little; the
bounds sit far from both the fixed and the broken figures (see each case)."""
import os
import resource

from .common import Skip, once, prog, run


def cpu_seconds(cmd):
    """Runs cmd; returns (completed process, CPU seconds, user and system, of it and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cp = run(cmd, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return cp, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def exact_ratio(c, name, args, extra, bound):
    """The CPU time of `pyflow run --exact EXTRA --no-report` on program `name` over the plain run's, after
    checking both print the same. A first ratio over `bound` is measured once more (the smaller of two
    counts): a burst of other work should not fail the case, a cost that grows with the run still does."""
    out = os.path.join(c.tmp, "overhead.pflow")
    plain_cmd = [c.python, prog(name), *args]
    prof_cmd = [c.pyflow, "run", "--python", c.python, "--exact", *extra, "--no-report", "-o", out,
                prog(name), *args]
    ratios = []
    for _ in range(2):
        plain, t_plain = cpu_seconds(plain_cmd)
        assert plain.returncode == 0, plain.stderr[-800:]
        prof, t_prof = cpu_seconds(prof_cmd)
        assert prof.returncode == 0, prof.stderr[-800:]
        assert prof.stdout == plain.stdout, (prof.stdout, plain.stdout)
        os.unlink(out)
        ratios.append(t_prof / max(t_plain, 0.05))
        if ratios[-1] <= bound:
            break
    assert min(ratios) <= bound, (
        f"{name} {' '.join(args)} under --exact {' '.join(extra)}: {min(ratios):.1f}x the plain run's CPU time "
        f"(at most {bound}x expected; runs: {', '.join(f'{r:.1f}x' for r in ratios)})")
    print(f"{name} {' '.join(args)} --exact {' '.join(extra)}: {min(ratios):.2f}x the plain run's CPU time")
    return min(ratios)


@once
def case_exact_many_code_objects(c):
    """60,000 code objects, each called once and allocating 40 objects: --exact recorded them at 33x and 48x
    the plain run's CPU time (code ids in a fixed table whose probe runs grew with the dead code objects
    at reused addresses, then a lock per frame once it was full), and 4.7x to 7.2x since (a 2-core VM
    under a load of 14-16). Bound: 15x."""
    exact_ratio(c, "many_code_objects.py", ["60000"], [], 15)



@once
def case_exact_native_switching_threads(c):
    """Eight threads making tiny allocations while the interpreter switches between them every microsecond,
    under --exact --native: per-record cost must not grow with the threads (one such run went from 1.7 s
    to 9.2 s). It measured 13x to 22x the plain run's CPU time with libunwind walking every stack
    (7b9d908, a 2-core VM under a load of 2-21) and 8x to 20x with the fast walk; most of what is left
    is --exact's own per-record cost (9x on this program without --native) and the kernel switching
    threads for a run that lasts longer. Bound: 40x."""
    exact_ratio(c, "threads_switching.py", ["100000", "8"], ["--native"], 40)
