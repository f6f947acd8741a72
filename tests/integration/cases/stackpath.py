"""Integration cases: the recorder's fast path for a stack that repeats one of the thread's recent ones
(recorder/pf_recent_stacks.c). A capture equal to one of them (every frame's code object and instruction
offset, the code objects still the same objects, the same native IPs) takes its stack id without the hash,
the cache and the check against the interned stack. Each case makes consecutive allocations whose
stacks differ from the one before in one place only, and checks that each is charged to its own stack."""
from .common import marked_lines, once, per_version, prog, row


def _line(marker):
    (line,) = marked_lines("stack_repeats.py", marker)
    return line


def _under(doc, function, line, parent_function, parent_line):
    """The bytes of the call_tree nodes at (function, line) whose parent is at (parent_function, parent_line)."""
    nodes = doc["call_tree"]
    return sum(n["alloc_bytes"] for n in nodes
               if n["function"] == function and n["line"] == line and n["parent"] >= 0
               and nodes[n["parent"]]["function"] == parent_function and nodes[n["parent"]]["line"] == parent_line)


ROUNDS = 20_000


@per_version
def case_next_line(c):
    """Two lines allocating in turn (bytearray(1000), bytearray(3000)): the same frames, the innermost at
    another offset. Each line keeps its own allocations: the same count, 2000 bytes more a round on the
    second (a stray small object or two allowed: a free list missing once)."""
    _cp, d = c.profile(prog("stack_repeats.py"), "lines", str(ROUNDS), extra=("--exact",))
    a, b = row(d, "stack_repeats.py", _line("LINE_A")), row(d, "stack_repeats.py", _line("LINE_B"))
    assert abs(a["alloc_count"] - b["alloc_count"]) <= 4 and a["alloc_count"] >= 2 * ROUNDS, (a, b)
    assert abs(b["alloc_bytes"] - a["alloc_bytes"] - 2000 * ROUNDS) <= 2000, (a, b)


def _split_between(c, mode, function, marker, parents, each_bytes):
    """Runs `mode` under --exact; the bytes of `function`'s line `marker` under each of the two parents
    ((function, marker) each) must be at least each_bytes and within 1% of each other."""
    _cp, d = c.profile(prog("stack_repeats.py"), mode, str(ROUNDS), extra=("--exact",))
    line = _line(marker)
    first, second = (_under(d, function, line, f, _line(m)) for f, m in parents)
    assert first >= each_bytes and abs(first - second) <= 0.01 * first, (first, second)


@per_version
def case_same_line_other_caller(c):
    """One line (make's) reached from two callers in turn: the innermost frame is the same, the chain
    under it differs. Each caller's path holds half of make's bytes."""
    _split_between(c, "callers", "make", "MAKE", (("via_first", "CALLER_1"), ("via_second", "CALLER_2")),
                   1500 * ROUNDS)


@per_version
def case_generator_resumed_elsewhere(c):
    """A generator allocating at one line (the same frame, the same offset) and resumed from two lines in
    turn: only the frame it returns to differs. Each resuming line's path holds half of its bytes."""
    _split_between(c, "generator", "produce", "GEN_ALLOC", (("generator", "RESUME_1"), ("generator", "RESUME_2")),
                   2500 * ROUNDS)


@per_version
def case_code_object_at_reused_address(c):
    """Code objects of one module under two file names in turn (code.replace), each new one made just after
    the last one was dropped, so that it takes its address, each allocating 200 KB at the same offset under
    the same caller. Only the big blocks are recorded (object threshold 100 KB, nothing sampled), so each
    one's last stack is the other file's, the same frames but for the code object's identity: the two
    files must each hold half of them."""
    rounds = 500
    _cp, d = c.profile(prog("stack_repeats.py"), "code_reuse", str(rounds),
                       extra=("--object-bytes", "100k", "--sample-bytes", "1g"))
    files = {}
    for r in d["lines"]:
        if r["file"].endswith("_file.py"):
            files[r["file"]] = files.get(r["file"], 0) + r["alloc_count"]
    assert files.get("first_file.py") == rounds and files.get("second_file.py") == rounds, files


# --- Under --native: the thread's recent stacks (recorder/pf_recent_stacks.c) and last native walks
# (recorder/pf_unwinder.c) reused only for the very same stack. Each case makes allocations in turn that
# differ deep inside their stacks only, each way with a size of its own (native_repeats.SIZES), and reads
# the profile's stacks straight from the format (bench/stack_sequence.py): no two ways may share a stack,
# and each way has its allocations. The stacks are kept whole (PYFLOW_WHOLE_STACKS=1): cut at their native
# site, as a plain run keeps them, most of these ways differ only past it, where the report never looks.

NATIVE_ROUNDS = 4000


def _native_ways(c, mode, sizes, rounds, child=False):
    """{size: {stack: count}} of the allocations of each size (a bytearray's size + 1) of a run of
    native_repeats.py `mode` under --exact --native (child: in the profile of the process it forked)."""
    import glob
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
    from stack_sequence import allocations
    from .common import run
    pfl = os.path.join(c.tmp, f"native_{mode}.pflow")
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--native", "--no-report", "-o", pfl,
              prog("native_repeats.py"), mode, str(rounds)], env={**os.environ, "PYFLOW_WHOLE_STACKS": "1"})
    assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-2000:]
    assert "disagreed" not in cp.stderr, cp.stderr[-2000:]
    if child:
        (pfl,) = glob.glob(glob.escape(pfl) + ".*")
    ways = {size: {} for size in sizes}
    for (stack, size, _domain, _flags), n in allocations(pfl).items():
        if size - 1 in ways:
            ways[size - 1][stack] = ways[size - 1].get(stack, 0) + n
    return ways


def _assert_ways_apart(ways, expected, apart):
    """Each size has its expected count (a stray one allowed), and the sizes in each group of `apart` share
    no stack with those of another group."""
    for size, stacks in ways.items():
        got = sum(stacks.values())
        assert expected[size] <= got <= expected[size] + 2, (size, got, expected[size])
    for i, group in enumerate(apart):
        mine = set().union(*(ways[s] for s in group))
        for other in apart[i + 1:]:
            theirs = set().union(*(ways[s] for s in other))
            shared = mine & theirs
            assert not shared, f"sizes {group} and {other} share {len(shared)} stacks: {sorted(shared)[:1]}"


@per_version
def case_native_same_line_two_chains(c):
    """One line drives make() through list() and through deque() in turn: the same Python frames, the same
    innermost native frames (and as many native frames on 3.11), the constructors' frames apart. No stack of
    list's allocations is deque's."""
    sizes = (5000, 5100)
    ways = _native_ways(c, "chains", sizes, NATIVE_ROUNDS)
    _assert_ways_apart(ways, {s: NATIVE_ROUNDS // 2 for s in sizes}, ((5000,), (5100,)))


@per_version
def case_native_third_frame_differs(c):
    """make() under inner() under two lines of one caller in turn: stacks alike in their two innermost Python
    frames, in their code objects and (3.11 on) in every native frame. The two lines' stacks stay apart."""
    sizes = (5500, 5600)
    ways = _native_ways(c, "callers", sizes, NATIVE_ROUNDS)
    _assert_ways_apart(ways, {s: NATIVE_ROUNDS // 2 for s in sizes}, ((5500,), (5600,)))


@per_version
def case_native_depth_changes(c):
    """A leaf line reached 3 and 4 levels deep in turn, each level through map(): the stacks of the two
    depths stay apart."""
    sizes = (6000, 6100)
    ways = _native_ways(c, "depth", sizes, NATIVE_ROUNDS)
    _assert_ways_apart(ways, {s: NATIVE_ROUNDS // 2 for s in sizes}, ((6000,), (6100,)))


@per_version
def case_native_ctypes_callback(c):
    """One line calls a ctypes callback that allocates, through libc's qsort and directly in turn: the same
    Python frames, the native ones with and without qsort's. The two ways share no stack."""
    from .common import Skip, run
    if run([c.python, "-c", "import ctypes"]).returncode != 0:
        raise Skip(f"{c.python} has no ctypes")
    sizes = (7000, 7100)
    ways = _native_ways(c, "callback", sizes, NATIVE_ROUNDS)
    _assert_ways_apart(ways, {s: NATIVE_ROUNDS // 2 for s in sizes}, ((7000,), (7100,)))


@per_version
def case_native_threads_apart(c):
    """Three threads allocate on one line at once (each its own size): the main thread's stacks are never a
    worker's, and every allocation is there."""
    sizes = (8000, 8100, 8200)
    rounds = NATIVE_ROUNDS // 2
    ways = _native_ways(c, "threads", sizes, rounds)
    _assert_ways_apart(ways, {s: rounds for s in sizes}, ((8000,), (8100, 8200)))


@per_version
def case_native_fork_child_stacks(c):
    """A loop's stack before a fork and again in the child, whose file starts its stack ids again: every
    allocation of the child's is charged to that loop's line, none to a stack id of the parent's file."""
    rounds = NATIVE_ROUNDS // 2
    ways = _native_ways(c, "fork", (9100,), rounds, child=True)
    got = {stack[0][0][0][1]: n for stack, n in ways[9100].items()}     # innermost Python frame's function
    assert got == {"fill": rounds}, got


MACHINERY = "<frozen importlib._bootstrap"


def _machinery_frames(path):
    """(frames of the import machinery between a stack's innermost and outermost, such frames at either
    end) over a profile's STACK records, read straight from the format (bench/profile_stats.py)."""
    import os
    import struct
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
    from profile_stats import walk
    data = open(path, "rb").read()
    files, stacks = {}, []
    for rtype, p, _size in walk(data):
        if rtype == 3:      # CODE: id, first line, file and name lengths, ..., then the file name
            cid, _first, flen = struct.unpack_from("<IiI", data, p + 8)
            files[cid] = data[p + 8 + 24:p + 8 + 24 + flen].decode(errors="replace")
        elif rtype == 13:   # STACK: id, n_py, n_native, then the Python frames (code id, offset)
            _sid, n_py = struct.unpack_from("<IH", data, p + 8)
            stacks.append(struct.unpack_from(f"<{2 * n_py}I", data, p + 16)[0::2])
    middle = ends = 0
    for codes in stacks:
        for i, cid in enumerate(codes):
            if files.get(cid, "").startswith(MACHINERY):
                if 0 < i < len(codes) - 1:
                    middle += 1
                else:
                    ends += 1
    return middle, ends


def _tree_paths(doc, key):
    nodes, out = doc[key], {}
    for n in nodes:
        path, x = [], n
        while x is not None:
            path.append((x.get("kind"), x["function"], x["file"], x["line"]))
            x = nodes[x["parent"]] if x["parent"] >= 0 else None
        out[tuple(path[::-1])] = n["alloc_bytes"]
    return out


def _close(a, b, rel=0.005, slack=1024):
    return abs(a - b) <= rel * max(a, b) + slack


@per_version
def case_import_machinery_dropped(c):
    """The import machinery's frames between a stack's innermost and outermost frame are not kept
    (recorder/pf_codes.c: the report never shows or charges them): import_stacks.py's imports under --exact
    leave no such frame in any STACK record, where the same run with whole stacks (PYFLOW_WHOLE_STACKS=1)
    has thousands; and the report is the whole stacks' one: every line's allocations (count and bytes),
    every function's, the folded and unfolded call trees' paths with their bytes, the start-up's row (its
    stacks begin in the machinery), within 0.5% + 1 KiB (the variable itself is in the environment; a
    line with under 1 KiB in both runs may come and go between two runs of one build)."""
    import os
    runs = {}
    for whole in (False, True):
        pfl = os.path.join(c.tmp, f"imports_{whole}.pflow")
        cp, d = c.profile(prog("import_stacks.py"), extra=("--exact", "-o", pfl),
                          env={"PYTHONHASHSEED": "0", **({"PYFLOW_WHOLE_STACKS": "1"} if whole else {})})
        assert cp.returncode == 0, cp.stderr[-2000:]
        runs[whole] = (d, _machinery_frames(pfl), cp.stdout)
    (cut, (cut_middle, cut_ends), out), (whole, (whole_middle, _), whole_out) = runs[False], runs[True]
    assert out == whole_out, (out, whole_out)
    assert cut_middle == 0 and cut_ends > 0, (cut_middle, cut_ends)
    assert whole_middle > 1000, whole_middle
    lines = [{(r["file"], r["line"]): (r["alloc_count"], r["alloc_bytes"]) for r in d["lines"]} for d in (cut, whole)]
    for k in set(lines[0]) | set(lines[1]):
        (n, b), (n2, b2) = lines[0].get(k, (0, 0)), lines[1].get(k, (0, 0))
        assert _close(n, n2, slack=8) and _close(b, b2), (k, (n, b), (n2, b2))
    assert any(f == "[python startup]" and b > 0 for (f, _l), (_n, b) in lines[0].items()), sorted(lines[0])[:5]
    funcs = [{(f["file"], f["function"]): f["alloc_bytes"] for f in d["functions"]} for d in (cut, whole)]
    for k in set(funcs[0]) | set(funcs[1]):
        assert _close(funcs[0].get(k, 0), funcs[1].get(k, 0)), (k, funcs[0].get(k), funcs[1].get(k))
    for key in ("call_tree", "call_tree_unfolded"):
        a, b = _tree_paths(cut, key), _tree_paths(whole, key)
        for path in set(a) | set(b):
            x, y = a.get(path, 0), b.get(path, 0)
            assert max(x, y) < 64 * 1024 or _close(x, y), (key, path, x, y)
    print(f"no machinery frame inside a stack (whole stacks: {whole_middle}); {len(lines[0])} lines, "
          f"{len(funcs[0])} functions and both call trees as with whole stacks")
