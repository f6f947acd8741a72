#!/usr/bin/env python3
"""What pyflow's recording costs in instructions, counted by valgrind's callgrind: the same on every run,
where the times of these shared 2-core guests move by a tenth from one run to the next. For each program,
the instructions of the plain run and of the run under the runtime in each mode, their ratio, the extra
instructions per allocation the runtime recorded, and the runtime's own functions that cost the most.

    bench/instructions.py --pyflow build/bin/pyflow [--python /usr/bin/python3] [--modes exact,native,default]
                          [--top 12] [program args ...]

Without a program: bench/workloads/indexing.py 2 and churn.py 1 (the bench's two heaviest loads on
--exact, cut down: callgrind runs a program about fifty times slower) and the threads test program with
one thread (tests/integration/programs/threads_switching.py 50000 1: a stack six frames deep).

The runtime is started as `pyflow run` starts it (LD_PRELOAD and the PYFLOW_* variables; valgrind passes
them to the program it runs). What callgrind cannot show: cache misses, and the shortcuts that depend on
time, which run about fifty times slower under it: a small event reuses the clock's last reading only
within 2 us of it, and a young free sets its allocation's life byte only within a few microseconds, so
the clock's reads and the FREE events are overstated here. Compare builds on the same program; the
times are in bench/run_bench.py.

Needs valgrind (Debian's package; not installed by the project's set-up, which does not need it).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_PROGRAMS = [
    [os.path.join(HERE, "workloads", "indexing.py"), "2"],
    [os.path.join(HERE, "workloads", "churn.py"), "1"],
    [os.path.join(ROOT, "tests", "integration", "programs", "threads_switching.py"), "50000", "1"],
]
MODES = {"default": {}, "exact": {"PYFLOW_EXACT": "1"}, "native": {"PYFLOW_NATIVE": "1"},
         "exact-native": {"PYFLOW_EXACT": "1", "PYFLOW_NATIVE": "1"}}
COUNTED = ("pf_on_alloc_slow", "pf_on_free_slow")   # the recorded allocations and frees


def runtime_of(pyflow):
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(pyflow))), "lib", "pyflow", "libpyflow.so")
    if not os.path.exists(lib):
        sys.exit(f"instructions.py: no runtime at {lib} (build first: make build)")
    return lib


def callgrind(python, program, env_extra, out):
    env = dict(os.environ, PYTHONHASHSEED="0", **env_extra)    # str hashes move the interpreter's own counts
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, python, *program]
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"instructions.py: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return out


def totals(path):
    """(instructions, {function: calls}) from a callgrind file: the calls counted are the ones to the
    functions in COUNTED (names compressed to "(id)" after their first mention, as a callee or not)."""
    names, calls, total = {}, {}, 0
    current = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith(("fn=", "cfn=")):   # a name is given once, by either, then its id
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.strip())
                if m:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    if line.startswith("cfn="):
                        current = names.get(m.group(1), "")
            elif line.startswith("calls=") and current is not None:
                n = int(line.split("=")[1].split()[0])
                for name in COUNTED:    # its clones (.constprop.0), not its cold part (a jump callgrind counts)
                    if (current == name or current.startswith(name + ".")) and ".cold" not in current:
                        calls[name] = calls.get(name, 0) + n
                current = None
    return total, calls


def top_functions(path, n):
    """The runtime's and frame readers' functions by their own instructions, from callgrind_annotate."""
    if not shutil.which("callgrind_annotate"):
        return []
    out = subprocess.run(["callgrind_annotate", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    by_name = {}
    for line in out.splitlines():     # "N (P%)  file:function [object]"; a function's lines inlined from
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(\S+)", line)  # several files come apart
        if m and ("libpyflow" in line or "pf_pyframes" in line or
                  re.search(r"(^|/)(recorder|core|interpose)/", m.group(2))):
            by_name[m.group(3)] = by_name.get(m.group(3), 0) + int(m.group(1).replace(",", ""))
    return sorted(((c, name) for name, c in by_name.items()), reverse=True)[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyflow", default=os.path.join(ROOT, "build", "bin", "pyflow"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--modes", default="exact", help="comma list of " + ", ".join(MODES))
    ap.add_argument("--top", type=int, default=12, help="functions listed per run (0: none)")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="a program and its arguments (default: three)")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: valgrind is not installed (apt-get install valgrind)")
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"instructions.py: unknown mode {m!r} (one of {', '.join(MODES)})")
    lib = runtime_of(args.pyflow)
    programs = [args.program] if args.program else DEFAULT_PROGRAMS
    with tempfile.TemporaryDirectory(prefix="pyflow-instr-") as tmp:
        for program in programs:
            label = " ".join([os.path.basename(program[0])] + program[1:])
            plain, _ = totals(callgrind(args.python, program, {}, os.path.join(tmp, "plain.cg")))
            print(f"{label}: plain {plain:,} instructions")
            for mode in modes:
                env = {"LD_PRELOAD": lib, "PYFLOW_OUTPUT": os.path.join(tmp, "profile"), "PYFLOW_QUIET": "1",
                       **MODES[mode]}
                out = callgrind(args.python, program, env, os.path.join(tmp, mode + ".cg"))
                total, calls = totals(out)
                allocs, frees = calls.get("pf_on_alloc_slow", 0), calls.get("pf_on_free_slow", 0)
                per = f", {(total - plain) / allocs:,.0f} more per recorded allocation" if allocs else ""
                print(f"  {mode:13s} {total:,} ({total / plain:.2f}x){per}; {allocs:,} allocations and "
                      f"{frees:,} frees recorded")
                for count, name in top_functions(out, args.top):
                    print(f"      {count / max(allocs, 1):8.1f} per allocation  {name}")
                for f in os.listdir(tmp):
                    if f.startswith("profile"):
                        os.unlink(os.path.join(tmp, f))


if __name__ == "__main__":
    main()
