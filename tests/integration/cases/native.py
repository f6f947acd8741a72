"""Integration cases: --native's call paths from the fast native walk (recorder/pf_unwinder.c) are the ones
libunwind's unw_backtrace gives (PYFLOW_NATIVE_WALK=libunwind walks every stack with it)."""
import os
import shutil

from .common import Skip, line_of, once, per_version, prog, row, run


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
    then one in 64). In both, a callback's allocations have no native site (the C that called the Python
    code is not where its memory went), and ctypes' own allocations keep theirs."""
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
    # The qsort callback's strings are charged to its own line, with no native node under it: libffi's and
    # libc's frames called that Python code and did not make its strings (the native part ends at the
    # interpreter's loop, recorder/pf_modules.c). Its twin, ctypes' own C making the array and the
    # pointer on work's lines, keeps its native node.
    callback = line_of(prog("native_paths.py"), "state.kept =")
    for walk in ("fast", "libunwind"):
        kept = row(runs[walk][1], "native_paths.py", callback)["alloc_bytes"]
        assert kept >= 100 * 1024, (walk, kept)
    under_callback = [p for p in fast if ("user", "compare", "native_paths.py", callback) in p]
    assert not under_callback, under_callback
    ctypes_made = [p for p in fast if p[-1][0] == "native" and "_ctypes" in p[-1][1] and
                   p[-2][:3] == ("user", "work", "native_paths.py")]
    assert ctypes_made, sorted(fast)
    for path in set(fast) | set(slow):
        a, b = fast.get(path, 0), slow.get(path, 0)
        small = min(a, b) < 64 * 1024 * 1.5 and max(a, b) < 64 * 1024 * 1.5   # near the cut in both
        assert small or abs(a - b) <= 0.03 * max(a, b), (path, a, b)
    print(f"{len(fast)} native paths of 64 KiB or more, the same from the fast walk and from libunwind")


def build_unload_library(c, name):
    """native_unload.c built into c.tmp/name (a library that calls back into Python), or Skip."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build the library to unload")
    lib = os.path.join(c.tmp, name)
    built = run([cc, "-O2", "-shared", "-fPIC", "-o", lib, prog("native_unload.c")])
    assert built.returncode == 0, built.stderr
    return lib


@once
def case_native_unload_noticed(c):
    """dlclose is hooked: each unload drops the fast walk's unwind rules (kept by address, a library loaded
    later at the same addresses must not be walked by them; unit.test_recorder_walk checks the walk itself).
    The rules' tables are bounded, so the 65th unload gives the fast walk up and says so once; 60 unloads
    say nothing, nor do 70 without --native (no rule was kept). Each time the program's output is the plain run's and no stack came out different from
    libunwind's."""
    lib = build_unload_library(c, "libnative_unload.so")
    for count, mode, said_once in ((60, "--native", False), (70, "--native", True), (70, "--exact", False)):
        plain = run([c.python, prog("native_unload.py"), lib, str(count)])
        assert plain.returncode == 0, plain.stderr
        cp, _ = c.profile(prog("native_unload.py"), lib, str(count), extra=("--exact", mode))
        assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, cp.stderr[-2000:])
        said = [l for l in cp.stderr.splitlines() if "unloaded too often" in l]
        assert len(said) == (1 if said_once else 0), (count, cp.stderr[-2000:])
        assert "disagreed" not in cp.stderr, cp.stderr[-2000:]
    print("60 unloads kept the fast walk, the 65th gave it up, said once; nothing said without --native")


@once
def case_native_dlopen_runpath(c):
    """dlopen is hooked (interpose/pf_hooks_paths.c: page watches end on its path first), and glibc searches
    the RUNPATH of dlopen's caller, found by the return address: the hook passes the call on by a tail call,
    so a library that dlopens a sibling by bare name through its own RUNPATH ($ORIGIN/sub) still finds it,
    in every mode."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build the libraries")
    sub = os.path.join(c.tmp, "sub")
    os.makedirs(sub, exist_ok=True)
    outer = os.path.join(c.tmp, "libpf_runpath_outer.so")
    for cmd in ([cc, "-O2", "-shared", "-fPIC", "-DINNER", "-o", os.path.join(sub, "libpf_runpath_inner.so"),
                 prog("dlopen_runpath.c")],
                [cc, "-O2", "-shared", "-fPIC", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/sub", "-o", outer,
                 prog("dlopen_runpath.c"), "-ldl"]):
        built = run(cmd)
        assert built.returncode == 0, built.stderr
    plain = run([c.python, prog("dlopen_runpath.py"), outer])
    assert plain.returncode == 0 and plain.stdout == "42\n", (plain.stdout, plain.stderr[-800:])
    for mode in ((), ("--exact", "--native")):
        cp, _ = c.profile(prog("dlopen_runpath.py"), outer, extra=mode)
        assert cp.returncode == 0 and cp.stdout == plain.stdout, (mode, cp.stdout, cp.stderr[-800:])
    print("a library's dlopen by its own RUNPATH found its sibling under pyflow, as without it")


def eh_pages_present(c, *args, pyflow_mode=None):
    """(present, pages) of the spans eh_pages.py counts, run plain or under pyflow_mode."""
    cmd = [c.python, prog("eh_pages.py"), *args]
    if pyflow_mode:
        cmd = [c.pyflow, "run", "--no-report", *pyflow_mode, "-o", os.path.join(c.tmp, "eh.pflow"), "--python",
               c.python, prog("eh_pages.py"), *args]
    cp = run(cmd)
    assert cp.returncode == 0, cp.stderr[-2000:]
    words = cp.stdout.split()
    assert words[:2] == ["eh", "pages"], cp.stdout
    return int(words[2]), int(words[4])


@per_version
def case_native_eh_pages_given_back(c):
    """The pages of call frame information (.eh_frame_hdr, .eh_frame) that the fast walk's rule misses and
    libunwind's checks fault in leave the program's RSS once no new stack comes (recorder/pf_eh_pages.c):
    after new C paths and a quiet spell, no more of them are present under --exact --native than in the
    plain run (where nothing reads them: only neighbours' fault-around maps a few). Before, 120 to 170
    pages (0.5-0.7 MiB) stayed to the end."""
    plain, pages = eh_pages_present(c)
    assert pages > 50, f"only {pages} pages of call frame information found: the count cannot tell"
    n, _ = eh_pages_present(c, pyflow_mode=("--exact", "--native"))
    assert n <= plain + 4, f"{n} of {pages} pages present under --exact --native, {plain} plain"
    print(f"{n} of {pages} pages of call frame information present after a quiet spell ({plain} plain)")


@once
def case_native_eh_pages_kept_after_unload(c):
    """Once the loader has unloaded an object (dlclose), a range it freed may hold another mapping, which a
    page given back would destroy: pyflow gives none back from then on. eh_pages.py unloads a library
    first, then runs new C paths: their pages stay present (the twin of native_eh_pages_given_back)."""
    lib = build_unload_library(c, "libeh_unload.so")
    plain, pages = eh_pages_present(c, lib)
    n, _ = eh_pages_present(c, lib, pyflow_mode=("--exact", "--native"))
    assert n >= plain + 16, f"{n} of {pages} pages present under --exact --native after an unload, {plain} plain"
    print(f"{n} of {pages} pages of call frame information kept after an unload ({plain} plain)")


def native_parts(path, code_name):
    """A profile read straight from the format (records walked by bench/profile_stats.py): ({stack id:
    native id} of the STACK records whose innermost Python frame is code_name's and that have native frames
    (native id None: inline), the native ids its NATIVE_STACK records define, ALLOC records with inline
    frames)."""
    import struct
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
    from profile_stats import walk
    data = open(path, "rb").read()
    codes, stacks, natives, inline = set(), {}, set(), 0
    for rtype, p, _size in walk(data):
        aux = struct.unpack_from("<H", data, p + 2)[0]
        if rtype == 3:      # CODE: id, first line, file and name lengths, then the file and the name
            cid, _first, flen, nlen = struct.unpack_from("<IiII", data, p + 8)
            if data[p + 8 + 24 + flen:p + 8 + 24 + flen + nlen] == code_name.encode():
                codes.add(cid)
        elif rtype == 13:   # STACK: id, n_py, n_native, the Python frames, then the IPs or (aux 1) a native id
            sid, n_py, n_native = struct.unpack_from("<IHH", data, p + 8)
            if n_native and n_py and struct.unpack_from("<I", data, p + 16)[0] in codes:
                stacks[sid] = struct.unpack_from("<I", data, p + 16 + 8 * n_py)[0] if aux & 1 else None
        elif rtype == 24:   # NATIVE_STACK: id, n_native, then the IPs
            natives.add(struct.unpack_from("<I", data, p + 8)[0])
        elif rtype == 1:    # ALLOC: n_py and n_native at payload 34, 36
            inline += struct.unpack_from("<HH", data, p + 8 + 34) != (0, 0)
    return stacks, natives, inline


@per_version
def case_native_parts_interned(c):
    """Native stacks are interned apart from the Python frames above them: 30 levels of a recursion through
    sorted()'s key function, each allocating on the same 40 lines, make 1200 stacks whose innermost frame
    is on those lines but only a few native parts a level, each written once (a NATIVE_STACK record) and named
    by id from its stacks' STACK records; no allocation carries its frames inline; the report attributes
    every allocation to its line with no stack left unresolved. (Written whole, numpy's import filled the
    recorder's 64 MiB of stack copies and every later new stack went inline.) Whole stacks
    (PYFLOW_WHOLE_STACKS=1): a plain run cuts these, all interpreter frames, to no native part at all."""
    pfl = os.path.join(c.tmp, "parts.pflow")
    cp, d = c.profile(prog("native_parts.py"), "30", "40", extra=("--exact", "--native", "-o", pfl),
                      env={"PYFLOW_WHOLE_STACKS": "1"})
    assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-2000:]
    assert d["sampling"]["stacks_unresolved"] == 0, d["sampling"]
    leaf = sum(r["alloc_bytes"] for r in d["lines"] if r["file"] == "native_parts_leaf")
    assert 1200 * 1000 <= leaf <= 1200 * 1300, f"the leaf's lines have {leaf} bytes, 1200 x ~1.1 KB expected"
    stacks, natives, inline = native_parts(pfl, "leaf")
    assert len(stacks) >= 1200, f"{len(stacks)} stacks with native frames allocate in leaf"
    assert None not in stacks.values(), "a stack of leaf's with its native frames inline"
    named = set(stacks.values())
    assert named <= natives, f"native ids {sorted(named - natives)[:5]} named but not defined"
    # two or so a level (the bytearray's and the list's growth: 17 to 59 measured across interpreters)
    assert len(named) <= 150 and len(stacks) >= 10 * len(named), f"{len(named)} native parts for 30 levels"
    assert inline == 0, f"{inline} allocations with inline frames"
    print(f"{len(stacks)} stacks in leaf over {len(named)} native parts; {len(natives)} native parts in all")


RUNTIME_PREFIXES = ("libc.so", "libc-", "ld-linux", "libpython", "python3", "libpyflow", "libm.so", "libunwind")


def native_part_ends(path):
    """(ends in a library of the program's, ends in the runtime's, in no module) over the native parts of a
    profile's STACK records (inline or a NATIVE_STACK's): where each part's outermost kept IP lies, by the
    MODULE records and core/pf_runtime_libs.h's rule."""
    import struct
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
    from profile_stats import walk
    data = open(path, "rb").read()
    modules, natives, parts = [], {}, []
    for rtype, p, _size in walk(data):
        aux = struct.unpack_from("<H", data, p + 2)[0]
        if rtype == 4:      # MODULE: start, end, bias, path length, then the path
            start, end, _bias, plen = struct.unpack_from("<QQQI", data, p + 8)
            name = data[p + 8 + 32:p + 8 + 32 + plen].decode(errors="replace").rsplit("/", 1)[-1]
            modules.append((start, end, name.startswith(RUNTIME_PREFIXES)))
        elif rtype == 24:   # NATIVE_STACK: id, n_native, then the IPs
            nid, n = struct.unpack_from("<IH", data, p + 8)
            natives[nid] = struct.unpack_from(f"<{n}Q", data, p + 16)
        elif rtype == 13:   # STACK: id, n_py, n_native, the Python frames, then the IPs or (aux 1) a native id
            _sid, n_py, n_native = struct.unpack_from("<IHH", data, p + 8)
            if not n_native:
                continue
            at = p + 16 + 8 * n_py
            parts.append(("id", struct.unpack_from("<I", data, at)[0]) if aux & 1
                         else ("ips", struct.unpack_from(f"<{n_native}Q", data, at)))
    ends = [0, 0, 0]
    for kind, v in parts:
        ips = natives.get(v, ()) if kind == "id" else v
        if not ips:
            continue
        home = [rt for start, end, rt in modules if start <= ips[-1] < end]
        ends[2 if not home else 1 if home[0] else 0] += 1
    return tuple(ends)


@per_version
def case_native_cut_at_site(c):
    """A native stack is kept down to its native site (the innermost frame in a library of the program's,
    not the interpreter's, libc's or pyflow's: the one frame the report names) and no further: a stack of
    interpreter frames alone keeps none (recorder/pf_modules.c). native_paths.py (a ctypes callback under
    qsort, numpy's C where installed, four threads) under --exact --native: every native part the profile
    holds ends in a library of the program's, where the same run with whole stacks (PYFLOW_WHOLE_STACKS=1)
    has parts ending in the runtime; and the report's native nodes are those of the whole stacks, on the
    same paths, with their bytes (within 3%: the threads interleave differently from run to run). Whole
    stacks also hold the callback's callers (libffi's, _ctypes'): the report names no site past the
    interpreter's loop, as the cut keeps none."""
    got = {}
    for whole in (False, True):
        pfl = os.path.join(c.tmp, f"cut_{whole}.pflow")
        cp, d = c.profile(prog("native_paths.py"), extra=("--exact", "--native", "-o", pfl),
                          env={"PYTHONHASHSEED": "0", **({"PYFLOW_WHOLE_STACKS": "1"} if whole else {})})
        assert cp.returncode == 0, cp.stderr[-2000:]
        got[whole] = (native_paths(d, 64 * 1024), native_part_ends(pfl), os.path.getsize(pfl))
    (cut, cut_ends, cut_size), (whole, whole_ends, whole_size) = got[False], got[True]
    assert cut_ends[0] > 0 and cut_ends[1] == 0, f"cut parts ending in a library / the runtime / nowhere: {cut_ends}"
    assert whole_ends[1] > 0, f"whole parts: {whole_ends}"
    assert cut, "no native node of 64 KiB or more"
    for path in set(cut) | set(whole):
        a, b = cut.get(path, 0), whole.get(path, 0)
        small = max(a, b) < 64 * 1024 * 1.5   # near the cut in both
        assert small or abs(a - b) <= 0.03 * max(a, b), (path, a, b)
    print(f"{len(cut)} native nodes as with whole stacks; parts ending in a library {cut_ends[0]} "
          f"(whole: {whole_ends[0]} in a library, {whole_ends[1]} in the runtime); profile {cut_size} "
          f"bytes against {whole_size}")
