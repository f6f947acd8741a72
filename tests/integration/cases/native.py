"""Integration cases: --native's call paths from the fast native walk (recorder/pf_unwinder.c) are the ones
libunwind's unw_backtrace gives (PYFLOW_NATIVE_WALK=libunwind walks every stack with it)."""
import os
import shutil

from .common import Skip, line_of, once, per_version, prog, run


def native_paths(doc, min_bytes):
    """{path from the root: alloc_bytes} of the native nodes of call_tree_unfolded holding at least min_bytes;
    a path is the (kind, function, file name, line) of each node down to the native one."""
    nodes, out = doc["call_tree_unfolded"], {}
    for n in nodes:
        if n["kind"] != "native" or n["alloc_bytes"] < min_bytes:
            continue
        path, x = [], n
        while x is not None:
            path.append((x["kind"], x["function"], x["file"].rsplit("/", 1)[-1], x["line"]))
            x = nodes[x["parent"]] if x["parent"] >= 0 else None
        out[tuple(path[::-1])] = out.get(tuple(path[::-1]), 0) + n["alloc_bytes"]
    return out


@per_version
def case_native_walk_agrees(c):
    """native_paths.py allocates under libffi's and libc's frames (a ctypes callback from qsort) and, where
    numpy is installed, under numpy's C (arrays, a ufunc calling back into Python), on four threads. Under
    --exact --native the fast walk must give the call paths libunwind gives: the same native nodes (every
    one holding 64 KiB or more, in either run) on the same paths, their bytes within 3% (the threads
    interleave differently from run to run), and no word from the runtime that the walk and libunwind
    disagreed on a stack (the runtime compares the first 4096 stacks new to the process with libunwind's,
    then one in 64)."""
    runs = {}
    for walk in ("fast", "libunwind"):
        env = {"PYTHONHASHSEED": "0"}
        if walk == "libunwind":
            env["PYFLOW_NATIVE_WALK"] = "libunwind"
        cp, d = c.profile(prog("native_paths.py"), extra=("--exact", "--native"), env=env)
        assert cp.returncode == 0, cp.stderr[-2000:]
        said = [l for l in cp.stderr.splitlines() if "disagreed" in l]
        assert not said, said
        runs[walk] = (cp.stdout.splitlines()[0], d)
    assert runs["fast"][0] == runs["libunwind"][0], (runs["fast"][0], runs["libunwind"][0])
    fast, slow = (native_paths(runs[w][1], 64 * 1024) for w in ("fast", "libunwind"))
    # the qsort callback's strings are charged to a native frame below the Python line that called qsort
    line = line_of(prog("native_paths.py"), "state.kept =")
    under_callback = [p for p in fast if ("user", "compare", "native_paths.py", line) in p]
    assert under_callback, sorted(fast)
    for path in set(fast) | set(slow):
        a, b = fast.get(path, 0), slow.get(path, 0)
        small = min(a, b) < 64 * 1024 * 1.5 and max(a, b) < 64 * 1024 * 1.5   # near the cut in both
        assert small or abs(a - b) <= 0.03 * max(a, b), (path, a, b)
    print(f"{len(fast)} native paths of 64 KiB or more, the same from the fast walk and from libunwind")


@once
def case_native_unload_noticed(c):
    """dlclose is hooked: each unload drops the fast walk's unwind rules (kept by address, a library loaded
    later at the same addresses must not be walked by them; unit.test_recorder_walk checks the walk itself).
    The rules' tables are bounded, so the 65th unload gives the fast walk up and says so once; 60 unloads
    say nothing, nor do 70 without --native (no rule was kept). Each time the program's output is the plain run's and no stack came out different from
    libunwind's."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build the library to unload")
    lib = os.path.join(c.tmp, "libnative_unload.so")
    built = run([cc, "-O2", "-shared", "-fPIC", "-o", lib, prog("native_unload.c")])
    assert built.returncode == 0, built.stderr
    for count, mode, said_once in ((60, "--native", False), (70, "--native", True), (70, "--exact", False)):
        plain = run([c.python, prog("native_unload.py"), lib, str(count)])
        assert plain.returncode == 0, plain.stderr
        cp, _ = c.profile(prog("native_unload.py"), lib, str(count), extra=("--exact", mode))
        assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, cp.stderr[-2000:])
        said = [l for l in cp.stderr.splitlines() if "unloaded too often" in l]
        assert len(said) == (1 if said_once else 0), (count, cp.stderr[-2000:])
        assert "disagreed" not in cp.stderr, cp.stderr[-2000:]
    print("60 unloads kept the fast walk, the 65th gave it up, said once; nothing said without --native")
