"""Integration cases: what a line is charged: bytes by layer, sampled and exact, peaks, call paths, threads, stacks."""
import struct
import glob
import json
import os
import re
import sys

from .common import (
    HERE,
    Skip,
    exact_plus_samples,
    example,
    has_numpy,
    marked_lines,
    near,
    once,
    per_version,
    prog,
    row,
    run,
)


def tree_path(doc, node):
    """The (function, line) of each node from the root down to `node` (an entry of call_tree)."""
    nodes, path = doc["call_tree"], []
    while node is not None:
        path.append((node["function"], node["line"]))
        node = nodes[node["parent"]] if node["parent"] >= 0 else None
    return path[::-1]


def profile_stacks(path, function):
    """A profile file read straight from the format (core/pf_format.h, records walked by
    bench/profile_stats.py): ({stack id: (n_py, n_native)} of its STACK records whose innermost Python frame
    is in `function`, [stack id] of its ALLOC records that refer to a stack, count of ALLOCs with inline
    frames)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    from profile_stats import packed_events, walk
    data = open(path, "rb").read()
    stacks, refs, inline, codes = {}, [], 0, set()
    for rtype, p, _size in walk(data):
        if rtype == 1:      # ALLOC: flags at payload 33, n_py and n_native at 34, 36, the ref at 40
            flags, n_py, n_native = struct.unpack_from("<BHH", data, p + 8 + 33)
            if flags & 0x10:
                assert n_py == n_native == 0, f"{path}: a stack reference with inline frames"
                refs.append(struct.unpack_from("<I", data, p + 8 + 40)[0])
            elif n_py or n_native:
                inline += 1
        elif rtype == 21:   # ALLOC_SHORT: time, address, size, then the stack id at payload 20
            refs.append(struct.unpack_from("<I", data, p + 8 + 20)[0])
        elif rtype == 25:   # PACKED: ALLOC_SHORT and FREE events (core/pf_packed.h)
            refs.extend(ev[5] for ev in packed_events(data, p, _size) if ev[0] == 21)
        elif rtype == 3:    # CODE: id, first line, file and name lengths, then the file and the name
            cid, _first, flen, nlen = struct.unpack_from("<IiII", data, p + 8)
            if data[p + 8 + 24 + flen:p + 8 + 24 + flen + nlen] == function.encode():
                codes.add(cid)
        elif rtype == 13:   # STACK: id, n_py, n_native, then the frames (code id, offset), innermost first
            sid, n_py, n_native = struct.unpack_from("<IHH", data, p + 8)
            assert sid not in stacks, f"{path}: stack id {sid} defined twice"
            if n_py and struct.unpack_from("<I", data, p + 16)[0] in codes:
                stacks[sid] = (n_py, n_native)
    return stacks, refs, inline


@per_version
def case_python_and_native(c):
    """A list of new str objects is Python bytes, exactly what tracemalloc says the line allocates; a numpy
    line (where numpy is installed) is native bytes of known size, also through numpy's generated dispatch
    code (numpy 1.24's `<__array_function__ internals>`), which is not the user's line.

    Ground truth for line 13: the same script run plainly measures it with tracemalloc (live blocks, at
    their requested sizes, all three domains) plus the blocks the growing list outgrew, which tracemalloc
    cannot see once freed (computed from sys.getsizeof; see the program). --exact must agree within 1%
    (the comprehension's function object and frame, a few hundred bytes, are the only other allocations);
    sampled at a 64 KiB mean (~420 samples of ~27 MB: 5% standard error) within 20%; what is live at exit
    (~14.7 MB, ~224 samples: 6.7%, 7.2% measured over 40 runs) within 30%, 4 standard errors (at 20% it
    failed about one run in fifteen)."""
    plain = run([c.python, prog("numpy_lines.py"), "measure"])
    assert plain.returncode == 0, plain.stderr
    words = plain.stdout.split()
    truth, live = int(words[1]), int(words[3])
    numpy = ("numpy",) if has_numpy(c.python) else ()
    for extra, rel in ((("--exact",), 0.01), (("--sample-bytes", "64k"), 0.20)):
        cp, d = c.profile(prog("numpy_lines.py"), *numpy, extra=extra)
        assert cp.returncode == 0, cp.stderr
        objs = row(d, "numpy_lines.py", 13)
        near(objs["python_bytes"], truth, rel, f"list-of-str line python bytes vs tracemalloc ({extra})")
        assert objs["native_bytes"] < 0.01 * truth, f"list-of-str line native bytes {objs['native_bytes']}"
        near(objs["leaked_bytes"], live, rel if "--exact" in extra else 0.30, f"list-of-str line live at exit vs tracemalloc ({extra})")
        if numpy:
            big = row(d, "numpy_lines.py", 10)
            near(big["native_bytes"], 32_000_000, 0.05, f"np.ones line native bytes ({extra})")
            assert big["python_bytes"] < 100_000, f"np.ones line python bytes {big['python_bytes']}"
            assert big["function"] == "native_big", big["function"]
            wrapped = row(d, "numpy_lines.py", 32)
            near(wrapped["native_bytes"], 64_000_000, 0.05, f"np.concatenate line native bytes ({extra})")
            assert not [r for r in d["lines"] if r["file"].startswith("<__array_function__")], \
                "numpy's generated dispatch code charged as the user's line"
    if not numpy:
        print(f"note: {c.python} has no numpy: the native half of this case ran on Debian's python3 only")


@per_version
def case_temporaries_and_live(c):
    """Freed temporaries: allocated but not live at exit. A growing global list: live at exit."""
    # sampled at a 64 KiB mean: ~79 samples of the 100 kept blocks, so 35% is about 7 standard errors (at
    # the default 256 KiB it was 2.4 and failed now and then across the six interpreters)
    for extra, rel in ((("--exact",), 0.02), (("--sample-bytes", "64k"), 0.15)):
        cp, d = c.profile(prog("live_and_temp.py"), extra=extra)
        assert cp.returncode == 0, cp.stderr
        temp = row(d, "live_and_temp.py", 5)
        near(temp["alloc_bytes"], 200_000_000, rel, f"temporaries allocated ({extra})")
        assert temp["leaked_bytes"] < 1_000_000, f"temporaries live at exit: {temp['leaked_bytes']}"
        kept = row(d, "live_and_temp.py", 10)
        near(kept["leaked_bytes"], 10_000_000, 0.02 if "--exact" in extra else 0.35, f"kept bytes at exit ({extra})")


@per_version
def case_tracemalloc_agreement(c):
    """Python-domain bytes agree with tracemalloc, allocated and live.

    What tracemalloc can measure: the requested sizes of the Python-domain blocks (PyMem_Raw, PyMem,
    PyObject) live at a moment, and the peak of their sum. What it cannot: bytes allocated and freed again.
    So (1) the allocation total is checked on a function that keeps everything it allocates
    (python_totals.py; the plain run checks that its peak exceeds its end by less than 1 KiB, i.e. nearly
    nothing was freed), and (2) live bytes at exit on lines whose objects stay (objects_kept.py).
    Tolerances: --exact within 1% (both count the same requested sizes; the rest is the odd frame or
    iterator); sampled at a 32 KiB mean (~1,700 samples of ~55 MB: 2.4% standard error) within 15%."""
    plain = run([c.python, prog("python_totals.py"), "measure"])
    assert plain.returncode == 0, plain.stderr
    words = plain.stdout.split()
    kept, peak = int(words[1]), int(words[3])
    assert 0 <= peak - kept < 1024, f"the workload freed memory (kept {kept}, peak {peak}): not a valid truth"
    for extra, rel in ((("--exact",), 0.01), (("--sample-bytes", "32k"), 0.15)):
        cp, d = c.profile(prog("python_totals.py"), extra=extra)
        assert cp.returncode == 0, cp.stderr
        rows = [r for r in d["lines"] if os.path.basename(r["file"]) == "python_totals.py"
                and 18 <= r["line"] <= 23]
        near(sum(r["python_bytes"] for r in rows), kept, rel, f"python_bytes of build() vs tracemalloc ({extra})")
        native = sum(r["native_bytes"] for r in rows)
        assert native < 0.01 * kept, f"Python-domain blocks also counted as native (double count?): {native}"
        assert d["totals"]["python_bytes"] >= 0.9 * kept, d["totals"]
    plain = run([c.python, prog("objects_kept.py"), "measure"])
    assert plain.returncode == 0, plain.stderr
    truth = int(plain.stdout.split()[-1])
    cp, d = c.profile(prog("objects_kept.py"), extra=("--exact",))
    assert cp.returncode == 0, cp.stderr
    ours = sum(r["leaked_bytes"] for r in d["lines"] if os.path.basename(r["file"]) == "objects_kept.py"
               and r["line"] in (7, 8))
    near(ours, truth, 0.01, "live bytes of lines 7-8 vs tracemalloc")


@per_version
def case_tracemalloc_in_program(c):
    """A program that runs tracemalloc itself runs under pyflow as without it, and is profiled: tracemalloc
    started during start-up (-X tracemalloc, PYTHONTRACEMALLOC; alone, with -X dev's debug hooks, or over
    PYTHONMALLOC=malloc) installs its hooks over pyflow's, which must then not wrap them again (each calling
    the other until the stack overflows: a segfault before the first line, as CPython's own test_capi ran
    into), and tracemalloc.start() later does the same after start-up. The program prints what tracemalloc
    traced for a 3 MB bytearray, which must not change; pyflow must still see the line's 3 MB."""
    with open(os.path.join(c.tmp, "traced.py"), "w") as f:
        f.write("import tracemalloc\n"
                "tracemalloc.start() if not tracemalloc.is_tracing() else None\n"
                "before = tracemalloc.get_traced_memory()[0]\n"
                "big = bytearray(3_000_000)\n"
                "grew = tracemalloc.get_traced_memory()[0] - before\n"
                "print(tracemalloc.get_tracemalloc_memory() > 0, 3_000_000 <= grew < 3_100_000)\n")
    out = os.path.join(c.tmp, "out.json")
    for opts, env in (([], {}), (["-X", "tracemalloc"], {}), (["-X", "tracemalloc=5", "-X", "dev"], {}),
                      ([], {"PYTHONTRACEMALLOC": "3"}), (["-X", "tracemalloc"], {"PYTHONMALLOC": "malloc"}),
                      (["-X", "tracemalloc"], {"PYTHONMALLOC": "debug"})):
        env = {**os.environ, **env}
        plain = run([c.python, *opts, "traced.py"], cwd=c.tmp, env=env)
        cp = run([c.pyflow, "run", "--json", out, c.python, *opts, "traced.py"], cwd=c.tmp, env=env)
        assert plain.returncode == 0 and plain.stdout == "True True\n", (opts, plain.stdout, plain.stderr)
        assert cp.returncode == 0, f"{opts} {env.get('PYTHONMALLOC')}: exit {cp.returncode}\n{cp.stderr[-3000:]}"
        assert cp.stdout == plain.stdout, f"{opts}: plain {plain.stdout!r}, pyflow {cp.stdout!r}"
        with open(out) as f:
            exact_plus_samples(row(json.load(f), "traced.py", 4)["alloc_bytes"], 3_000_000, f"{opts} traced.py:4")


@once
def case_greenlet_switches(c):
    """gevent's greenlets switch by copying saved C stacks back over the frames with memcpy. A copy sampled
    in the middle of that, its Python stack read while the thread state still pointed into the stack being
    overwritten, crashed the program (a segfault in most runs at --sample-bytes 16k, one in three at the
    default): copies into the live stack are not recorded now. Same output as plain, both buffers' lines
    seen at their size, over three runs. Skips where the interpreter has no gevent (Debian's python3-gevent
    is for /usr/bin/python3)."""
    if run([c.python, "-c", "import gevent"]).returncode != 0:
        raise Skip(f"{c.python} has no gevent")
    plain = run([c.python, prog("gevent_queue.py")])
    assert plain.returncode == 0, plain.stderr
    truth = sum(200_000 + i for i in range(300))
    for _ in range(3):
        cp, d = c.profile(prog("gevent_queue.py"), extra=("--sample-bytes", "16k"))
        assert cp.returncode == 0, f"exit {cp.returncode}\n{cp.stderr[-2000:]}"
        assert cp.stdout.startswith(plain.stdout), f"plain {plain.stdout!r}, pyflow {cp.stdout[:200]!r}"
        for line in (12, 21):
            near(row(d, "gevent_queue.py", line)["alloc_bytes"], truth, 0.15, f"gevent_queue.py:{line}")


@per_version
def case_peak_in_middle(c):
    """A hump in the middle: its line holds the peak share, and its timeline rises then falls."""
    cp, d = c.profile(example("peak_in_middle.py"))
    assert cp.returncode == 0, cp.stderr
    hump = row(d, "peak_in_middle.py", 10)
    assert hump["peak_bytes"] >= 0.9 * d["totals"]["peak_bytes"], (hump["peak_bytes"], d["totals"]["peak_bytes"])
    series = [b for _, b in hump["timeline"]]
    top = series.index(max(series))
    assert 15 <= top <= 85, f"the peak is not in the middle of the timeline: bucket {top}"
    assert series[5] < 0.05 * max(series) and series[-1] < 0.05 * max(series), series
    spark = [l for l in cp.stderr.splitlines() if l.startswith("peak_in_middle.py:10")]
    assert spark, cp.stderr


@per_version
def case_call_paths(c):
    """One helper, two callers: the call tree splits the helper's line by caller, with the kept blocks'
    32 MiB at the peak under load_all and the scanned 64 MiB allocated (one block live) under scan; a
    comprehension's own frame (before 3.12) is no step of the path; the report prints the paths indented."""
    cp, d = c.profile(example("call_paths.py"))
    assert cp.returncode == 0, cp.stderr
    mib = 1 << 20
    helper = [n for n in d["call_tree"] if n["function"] == "read_block"]
    by_caller = {tree_path(d, n)[-2][0]: n for n in helper}
    assert set(by_caller) == {"load_all", "scan"}, [tree_path(d, n) for n in helper]
    kept, scanned = by_caller["load_all"], by_caller["scan"]
    assert [f for f, _ in tree_path(d, kept)] == ["<module>", "main", "load_all", "read_block"], tree_path(d, kept)
    exact_plus_samples(kept["alloc_bytes"], 32 * mib, "read_block under load_all, allocated")
    exact_plus_samples(kept["peak_bytes"], 32 * mib, "read_block under load_all, at the peak")
    exact_plus_samples(scanned["alloc_bytes"], 64 * mib, "read_block under scan, allocated")
    assert scanned["peak_bytes"] <= 2 * mib + (512 << 10), f"scan holds one block at the peak: {scanned['peak_bytes']}"
    # sums: a node holds its subtree; the roots hold the whole program
    root = d["call_tree"][0]
    assert root["function"] == "<module>" and root["alloc_bytes"] >= 96 * mib, root
    for key in ("alloc_bytes", "peak_bytes", "leaked_bytes"):
        total = sum(n[key] for n in d["call_tree"] if n["parent"] < 0)
        assert abs(total - d["totals"][key]) <= 2, (key, total, d["totals"][key])
    # the helper's line in the line table is the two paths together
    assert row(d, "call_paths.py", 10)["alloc_bytes"] == kept["self_alloc_bytes"] + scanned["self_alloc_bytes"]
    text = cp.stderr
    assert "call paths" in text, text
    section = text.split("call paths", 1)[1]
    assert re.search(r"\n +\S+ +\S+ MiB +\S+ MiB {8}read_block call_paths\.py:10", section), section
    # a chain of 25 calls passing everything down: its first and last line, and how many between
    chain = os.path.join(c.tmp, "chain.py")
    with open(chain, "w") as f:
        for i in range(25):
            f.write(f"def f{i}():\n    return {'bytearray(8 << 20)' if i == 24 else f'f{i + 1}()'}\n")
        f.write("keep = f0()\n")
    # every allocation exact: a 256 KiB sample on one call's frame would end the run there, and with sampling
    # coarsened instead (--sample-bytes 1g) one start-up sample stood for 1 GiB, making the chain too small
    # to show
    cp = run([c.pyflow, "run", "--python", c.python, "--width", "120", "--exact", chain])
    section = cp.stderr.split("call paths", 1)[1].split("\n\n")[0]
    assert "<module> chain.py:51" in section and "(24 more lines passing the same bytes down)" in section, section
    assert "f24 chain.py:50" in section and "f12 chain.py" not in section, section


@once
def case_sampling_options(c):
    """--object-bytes holds whatever --sample-bytes is: with a mean of 16 MiB, an 8 MiB and a 2 MiB
    allocation are still recorded exactly (they were sampled, and mostly missing, when the threshold
    followed a mean set above it); only coarsening near the size cap raises the threshold."""
    code = "a = bytearray(8 << 20)\nb = bytearray(2 << 20)\n"
    for _ in range(3):
        js = os.path.join(c.tmp, "s.json")
        r = run([c.pyflow, "run", "--python", c.python, "--no-report", "--sample-bytes", "16m", "--json", js,
                 "-c", code])
        assert r.returncode == 0, r.stderr
        d = json.load(open(js))
        rows = {l["line"]: l for l in d["lines"] if l["file"] == "<string>"}
        for line, size in ((1, 8 << 20), (2, 2 << 20)):
            assert line in rows, (line, rows.keys())
            near(rows[line]["alloc_bytes"], size, 0.01, f"line {line} under --sample-bytes 16m")


@per_version
def case_threads_stress(c):
    """8 threads allocating and freeing across threads: no deadlock, live bytes equal ground truth."""
    cp, d = c.profile(prog("threads_stress.py"), extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout.strip() == "kept 200", (cp.returncode, cp.stdout, cp.stderr[-500:])
    moved = row(d, "threads_stress.py", 13)
    near(moved["alloc_bytes"], 8 * 3000 * 100_000, 0.01, "blocks allocated by producers")
    assert moved["leaked_bytes"] < 100_000 * 70, f"blocks freed on other threads still live: {moved['leaked_bytes']}"
    near(row(d, "threads_stress.py", 16)["leaked_bytes"], 200 * 100_000, 0.01, "kept blocks live at exit")


@per_version
def case_threads_handoff_order(c):
    """Strings freed on one thread and made again at the same addresses on another while the interpreter
    switches every microsecond: the exact profile has every free before the allocation that reuses its
    block (threads' times are one clock, read in order), so the line's bytes live at exit are the 64
    strings left. Threads anchored to the clock apart put 16-95 such frees after the reuse, each counted in
    `frees_unseen`, and the text report says so."""
    cp, d = c.profile(prog("threads_handoff.py"), extra=("--exact",))
    assert cp.returncode == 0, (cp.returncode, cp.stderr[-800:])
    held = int(cp.stdout.split()[-1])
    assert d["sampling"]["frees_unseen"] == 0, f"{d['sampling']['frees_unseen']} frees out of order or missing"
    assert row(d, "threads_handoff.py", 16)["leaked_bytes"] == held, (row(d, "threads_handoff.py", 16), held)
    assert "free is missing" not in cp.stdout, cp.stdout[-1500:]


@per_version
def case_api_counters_threads(c):
    """The in-process counters (pyflow.runtime) under --exact while 4 threads churn 64 KiB blocks and blocks
    cross threads both ways: the counts each thread adds (the first thread's in cells of its own) sum to the
    ground truth: nothing left live, every block allocated counted, the peak at least what was held."""
    cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "-o", os.path.join(c.tmp, "p"),
              prog("api_counters_threads.py")])
    assert cp.returncode == 0, (cp.returncode, cp.stdout, cp.stderr[-800:])
    got = {k: int(v) for k, v in (line.split() for line in cp.stdout.split("\n") if line.strip())}
    MiB = 1 << 20
    near(got["held"], 16 * MiB, 0.01, "the main thread's 16 MiB")
    for k in ("live_after_churn", "live_after_handoff", "live_after_release"):
        assert abs(got[k]) < MiB // 2, f"{k}: {got[k]} bytes left live by blocks all freed ({got})"
    assert got["allocated_churn"] >= 4 * 3 * 200 * (64 << 10), got
    assert 24 * MiB - MiB // 2 <= got["peak_over_start"] <= 80 * MiB, got


@per_version
def case_outside_code(c):
    """Memory no line of the program asked for: an exit handler's library code (json.loads, after the last
    line) is said once, below the line table, as outside the user's code, with its library line. A thread
    the standard library started for line 9 (20 MB of bytearrays, no line of the file on its stack) is
    charged to line 9 and said as started by it. Python's start-up (site and what .pth files import) is
    "[python startup]", not a library line."""
    cp, d = c.profile(prog("library_threads.py"))
    assert cp.returncode == 0, cp.stderr[-2000:]
    outside = d["outside_code"]
    assert 10_000_000 <= outside["alloc_bytes"] <= 120_000_000, outside
    near(row(d, "library_threads.py", 10)["alloc_bytes"], 3_000_000, 0.01, "the program's own line")
    said = cp.stderr.split("outside your code", 1)
    assert len(said) == 2 and "json/decoder.py:" in said[1].split("\n\n")[0], cp.stderr
    assert "\ndecoder.py:" not in said[0] and "thread.py:" not in cp.stderr, "a library row in the line table"
    pool = row(d, "library_threads.py", 9)
    assert 20_000_000 <= pool["started_bytes"] <= 22_500_000 and pool["started_threads"] == 1, pool
    assert pool["started_processes"] == 0 and pool["alloc_bytes"] >= pool["started_bytes"], pool
    started = cp.stderr.split("started by your lines", 1)
    assert len(started) == 2 and "library_threads.py:9 in 1 thread: blocks = " in started[1], cp.stderr
    # every byte of an empty program is the interpreter starting: imports from site, encodings, runpy
    cp, d = c.profile("pass", extra=["--exact", "-c"])
    assert cp.returncode == 0, cp.stderr[-2000:]
    # (a few hundred bytes at exit: stdlib code the interpreter calls with no line of the program's running)
    assert d["outside_code"]["alloc_bytes"] < 0.001 * d["totals"]["alloc_bytes"], \
        [(r["file"], r["line"]) for r in d["lines"][:5]]
    near(row(d, "[python startup]", 0)["alloc_bytes"], d["totals"]["alloc_bytes"], 0.002, "start-up")


@per_version
def case_stack_interning(c):
    """Stacks are interned: 2000 iterations allocating on one line 40 frames deep write each of that line's
    few stacks once per process (the forked child's file defines its own), every allocation there carries
    an 8-byte reference instead of the frames (330+ bytes of Python frames alone), and the report
    attributes them all to the line with no reference left unresolved. Under --native the stacks are kept
    whole (PYFLOW_WHOLE_STACKS=1): a plain run cuts these, interpreter frames only, to no native part."""
    for extra in ([], ["--native"]):
        pfl = os.path.join(c.tmp, "deep%d.pflow" % len(extra))
        cp, d = c.profile(prog("deep_repeats.py"), extra=["--exact", "-o", pfl] + extra,
                          env={"PYFLOW_WHOLE_STACKS": "1"} if extra else None)
        assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-800:]
        assert d["sampling"]["stacks_unresolved"] == 0, d["sampling"]
        assert d["sampling"]["records_dropped"] == 0, d["sampling"]
        b = row(d, "deep_repeats.py", 15)["alloc_bytes"]
        assert 4000 * 1000 <= b <= 4000 * 1200, f"{extra}: line 15 has {b} bytes, 4000 x ~1 KB expected"
        kids = glob.glob(pfl + ".*")
        assert len(kids) == 1, kids
        for path in [pfl] + kids:
            stacks, refs, inline = profile_stacks(path, "churn")
            deep = {sid for sid, (n_py, _) in stacks.items() if n_py >= 40}
            deep_refs = sum(1 for r in refs if r in deep)
            assert deep_refs >= 2000, f"{path}: {deep_refs} allocations refer to churn's 40-deep stacks"
            assert 0 < len(deep) <= 20, f"{path}: {len(deep)} distinct stacks for churn's few allocation sites"
            assert inline <= len(refs) / 4, f"{path}: {inline} inline stacks, {len(refs)} references"
            if extra:
                assert max(stacks[s][1] for s in deep) >= 10, f"{path}: no native frames in the stacks"


@per_version
def case_threads_from_code(c):
    """Threads started from -c or stdin code: their allocations are charged to the target's own lines, as
    for a file; the line that started the thread keeps only what it allocated itself."""
    code = ("import threading\n"
            "def work():\n"
            "    x = bytearray(5_000_000)\n"
            "    y = bytearray(3_000_000)\n"
            "t = threading.Thread(target=work)\n"
            "t.start()\n"
            "t.join()\n")
    out = os.path.join(c.tmp, "t.json")
    for name, args, stdin in (("<string>", ["-c", code], ""), ("<stdin>", ["-"], code)):
        r = run([c.pyflow, "run", "--python", c.python, "--exact", "--json", out, *args], input=stdin)
        assert r.returncode == 0, r.stderr[-800:]
        with open(out) as f:
            d = json.load(f)
        near(row(d, name, 3)["alloc_bytes"], 5_000_000, 0.01, f"{name}: the thread's first line")
        near(row(d, name, 4)["alloc_bytes"], 3_000_000, 0.01, f"{name}: the thread's second line")
        start = [r for r in d["lines"] if r["file"] == name and r["line"] == 6]
        assert not start or start[0]["alloc_bytes"] < 1_000_000, (name, start)


@per_version
def case_ctypes_libc(c):
    """libc's malloc, calloc, mmap, memmove and free looked up on a library handle (ctypes' CDLL('libc.so.6'),
    find_library('c'): dlsym, not the PLT) are seen like direct calls: exact bytes on each line, the freed
    blocks released, the copy counted."""
    for extra in (("--exact",), ()):
        cp, d = c.profile(prog("ctypes_libc.py"), extra=extra)
        assert cp.returncode == 0 and cp.stdout == "ok True\n", (cp.stdout, cp.stderr[-800:])
        for line, native, kept in ((19, 50_000_000, 50_000_000), (20, 20_000_000, 0), (21, 30_000_000, 0)):
            r = row(d, "ctypes_libc.py", line)
            assert r["native_bytes"] == native, (extra, line, r["native_bytes"])
            assert kept <= r["leaked_bytes"] <= kept + 1024, (extra, line, r["leaked_bytes"])
        assert row(d, "ctypes_libc.py", 22)["copy_bytes"] >= 8_000_000, row(d, "ctypes_libc.py", 22)


@once
def case_peak_unbiased(c):
    """The default mode's peak is not the run's luckiest moment: on a steady churn (a deque(maxlen=200) of
    32 KB items refilled 100,000 times) and a saturated lru_cache(maxsize=100), the mean over six sampled
    runs of the items' line share of the peak is within 10% of --exact and the program's peak within 15%
    (before: +65-116% on the line, +14-39% on the program). --exact's figure is the instant of the peak (an
    item and its temporary more than the steady state); the sampled one averages the peak's plateau."""
    # bytes items: with numpy, what `import numpy` makes (a fixed set, +-16% a run sampled) would dominate
    # the program's figure; the numpy variant measured the same (docs/verdicts.md)
    flavor = "python"
    line = min(marked_lines("peak_churn.py", "ITEM")) + 1
    for mode in ("deque", "lru"):
        figures = []
        for extra in [("--exact",)] + [()] * 6:
            cp, d = c.profile(prog("peak_churn.py"), mode, flavor, extra=("--no-report",) + extra)
            assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-1500:]
            figures.append((row(d, "peak_churn.py", line)["peak_bytes"], d["totals"]["peak_bytes"]))
        (line_exact, prog_exact), sampled = figures[0], figures[1:]
        line_mean = sum(f[0] for f in sampled) / len(sampled)
        prog_mean = sum(f[1] for f in sampled) / len(sampled)
        near(line_mean, line_exact, 0.10, f"{mode}: mean sampled line share of the peak vs --exact {sampled}")
        near(prog_mean, prog_exact, 0.15, f"{mode}: mean sampled program peak vs --exact {sampled}")


@per_version
def case_sampling_error(c):
    """Sampled per-line figures carry their error: a line resting on a few samples (2 MB in 10 KB blocks) is
    marked in text ('~' and its legend), HTML (the cell's title gives the +-) and JSON (few_samples, the
    standard errors alloc_bytes_se / peak_bytes_se / leaked_bytes_se, samples); a line of 200 samples is
    not, and its estimate is within 4 standard errors of the truth; with --exact every error is 0."""
    small, large = (min(marked_lines("sampling_error.py", k)) for k in ("SMALL", "LARGE"))
    page = os.path.join(c.tmp, "error.html")
    cp, d = c.profile(prog("sampling_error.py"), extra=("--html", page))
    assert cp.returncode == 0, cp.stderr[-1500:]
    s, l = row(d, "sampling_error.py", small), row(d, "sampling_error.py", large)
    assert s["few_samples"] and s["alloc_bytes_se"] > 0.2 * s["alloc_bytes"] and s["samples"] < 25, s
    assert not l["few_samples"] and l["samples"] > 100 and 0 < l["alloc_bytes_se"] < 0.15 * l["alloc_bytes"], l
    assert abs(l["alloc_bytes"] - 50_000_000) <= 4 * l["alloc_bytes_se"], l
    assert s["leaked_bytes_se"] > 0 and l["leaked_bytes_se"] == 0, (s, l)
    table = cp.stderr.split("\nline ", 1)[1].split("\n\n", 1)[0]
    marked = [t for t in table.splitlines() if t.startswith(f"sampling_error.py:{small} ")]
    assert marked and re.search(r"\d (B|KiB|MiB|GiB)~ ", marked[0]), table
    assert "~ few samples: +-20% or more" in table, table
    assert "sampled estimate: &#177;" in open(page, encoding="utf-8").read()
    cp, d = c.profile(prog("sampling_error.py"), extra=("--exact",))
    for line in (small, large):
        r = row(d, "sampling_error.py", line)
        assert r["alloc_bytes_se"] == 0 and r["leaked_bytes_se"] == 0 and r["peak_bytes_se"] == 0, r
        assert not r["few_samples"] and r["samples"] == 0, r


@once
def case_peak_error(c):
    """The default mode's peak_bytes_se is honest: on steady churns (a deque(maxlen=200) and a saturated
    lru_cache(maxsize=100) of 32 KB items) the --exact peak of the items' line and of the program (totals)
    falls within 2.5 standard errors in most of eight sampled runs each (measured: 77 of 80), and the error is
    no blanket (the line's median under 25% of its value, the program's under 50%). Before, totals had no error
    and the line's, the halves' difference alone (one degree of freedom), held the exact figure in 75%."""
    line = min(marked_lines("peak_churn.py", "ITEM")) + 1
    checks, held, spans = 0, 0, {"line": [], "program": []}
    for mode in ("deque", "lru"):
        figures = []
        for extra in [("--exact",)] + [()] * 8:
            cp, d = c.profile(prog("peak_churn.py"), mode, "python", extra=("--no-report",) + extra)
            assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-1500:]
            r, t = row(d, "peak_churn.py", line), d["totals"]
            figures.append({"line": (r["peak_bytes"], r["peak_bytes_se"]), "program": (t["peak_bytes"], t["peak_bytes_se"])})
        exact, sampled = figures[0], figures[1:]
        assert exact["line"][1] == 0 and exact["program"][1] == 0, exact
        for f in sampled:
            for what in ("line", "program"):
                (v, se), truth = f[what], exact[what][0]
                checks += 1
                held += abs(v - truth) <= 2.5 * se
                spans[what].append(se / v)
    assert held >= checks - 6, f"the --exact peak within 2.5 SE in {held} of {checks}"
    # a median of 3-4% (line) and 11-16% (program) on a quiet machine; more under load, where preemptions
    # give a few states much of the window's time
    for what, most in (("line", 0.25), ("program", 0.50)):
        med = sorted(spans[what])[len(spans[what]) // 2]
        assert 0 < med < most, f"{what}: median relative SE {med:.3f}"
