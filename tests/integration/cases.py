#!/usr/bin/env python3
"""Integration tests: the real `pyflow` launcher on real interpreters, checked against ground truth.

Usage: cases.py CASE --pyflow BUILD/bin/pyflow --python INTERPRETER
Exit 0 = pass, 1 = fail (with the failing assertion), 77 = skipped (with the reason).
Each case is a function below; tolerances are stated where numbers are compared.
"""
import argparse
import struct
import glob
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
SKIP = 77


class Skip(Exception):
    pass


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("errors", "replace")
    kw.setdefault("timeout", 300)
    return subprocess.run(cmd, **kw)


def prog(name):
    return os.path.join(PROGRAMS, name)


def row(doc, script, line):
    """The per-line entry of `script` (a file name) at `line`, summed over functions."""
    rows = [r for r in doc["lines"] if os.path.basename(r["file"]) == script and r["line"] == line]
    assert rows, f"no row for {script}:{line} in {[(r['file'], r['line']) for r in doc['lines'][:12]]}"
    out = dict(rows[0])
    for r in rows[1:]:
        for k, v in r.items():
            if isinstance(v, (int, float)) and k != "line":
                out[k] += v
    return out


def near(value, expected, rel, what):
    assert abs(value - expected) <= rel * expected, (
        f"{what}: {value} is not within {rel:.0%} of {expected}")


def exact_plus_samples(value, exact, what, samples=2):
    """A line whose big allocations are recorded exactly (>= 1 MiB) and whose few small ones (the list, the
    comprehension's own objects) are sampled, each sample standing for about 256 KiB: the line holds the
    exact bytes, plus zero, one or rarely two samples' worth (more where the small ones add up: say how
    many the line's sampled bytes allow)."""
    assert exact * 0.98 <= value <= exact + samples * 300_000, (
        f"{what}: {value} is not {exact} plus at most {samples} samples")


class Ctx:
    def __init__(self, pyflow, python, tmp):
        self.pyflow, self.python, self.tmp = pyflow, python, tmp

    def profile(self, script, *args, extra=(), stdin="", env=None):
        """Runs pyflow with --json (env: variables added to the environment); returns (completed process,
        json document)."""
        out = os.path.join(self.tmp, "out.json")
        if os.path.exists(out):
            os.unlink(out)
        cp = run([self.pyflow, "run", "--python", self.python, "--json", out, *extra, script, *args],
                 input=stdin, env={**os.environ, **env} if env else None)
        assert os.path.exists(out), f"no JSON written; stderr:\n{cp.stderr}"
        with open(out) as f:
            return cp, json.load(f)

    def need_numpy(self):
        if run([self.python, "-c", "import numpy"]).returncode != 0:
            raise Skip(f"{self.python} has no numpy")


# ---- ground truth ----

def has_numpy(python):
    return run([python, "-c", "import numpy"]).returncode == 0


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


# ---- copies and the flow graph ----

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")


def example(name):
    return os.path.join(EXAMPLES, name)


def flows_at(doc, script, line):
    return [f for f in doc["flows"] if os.path.basename(f["at"]["file"]) == script and f["at"]["line"] == line]


def case_copies_numpy(c):
    """np.array(a) never written: redundant; the same copy written: not; a copy of a temporary: redundant."""
    c.need_numpy()
    cp, d = c.profile(example("redundant_copy.py"))
    assert cp.returncode == 0, cp.stderr
    red = row(d, "redundant_copy.py", 14)
    near(red["copy_bytes"], 80_000_000, 0.02, "np.array(a) copy volume")
    near(red["redundant_copy_bytes"], 80_000_000, 0.02, "np.array(a) redundant bytes")
    assert red["copy_count"] == 1, red["copy_count"]
    mod = row(d, "redundant_copy.py", 18)
    near(mod["copy_bytes"], 80_000_000, 0.02, "modified copy volume")
    assert mod["redundant_copy_bytes"] == 0, "a modified copy was flagged redundant"
    edge = [f for f in flows_at(d, "redundant_copy.py", 14) if f["kind"] == "copy"]
    assert edge and edge[0]["redundant"] and edge[0]["src"]["line"] == 13 and edge[0]["dst"]["line"] == 14, edge
    assert edge[0]["evidence"] == "compare-at-free"
    assert not any(f["redundant"] for f in flows_at(d, "redundant_copy.py", 18))
    assert "redundant_copy.py:14" in cp.stderr.split("redundant copies")[1], cp.stderr
    cp, d = c.profile(example("copy_through_functions.py"))
    assert cp.returncode == 0, cp.stderr
    near(row(d, "copy_through_functions.py", 12)["redundant_copy_bytes"], 40_000_000, 0.02,
         "x.copy() passed through functions, redundant bytes")
    helper = [f for f in flows_at(d, "copy_through_functions.py", 12) if f["redundant"]]
    assert [(v["function"], v["line"]) for v in helper[0]["via"]] == [("<module>", 24), ("pipeline", 20)], helper
    assert "\n      via <module>:24 > pipeline:20\n" in cp.stderr.split("redundant copies")[1], cp.stderr
    conv = [f for f in flows_at(d, "copy_through_functions.py", 26) if f["redundant"]]
    assert not conv, f"a list->array conversion was called a redundant copy: {conv}"
    assert row(d, "copy_through_functions.py", 26)["redundant_copy_bytes"] == 0
    cp, d = c.profile(example("copy_of_temporary.py"))
    tmp = row(d, "copy_of_temporary.py", 8)
    near(tmp["redundant_copy_bytes"], 40_000_000, 0.02, "copies of temporaries, redundant bytes")
    assert tmp["copy_count"] == 5, tmp["copy_count"]


def case_copy_pieces(c):
    """Copies that fill no object are not called redundant, though neither end is ever modified: a
    concatenation (a new layout of both arrays) and numpy's take of 40-byte items (one memmove each into
    one array); a whole copy in the same program is. Every copy is recorded (PYFLOW_COPY_SAMPLE_BYTES=1), so
    the pieces at the start of both objects, which a runtime judging pieces would link, always are."""
    c.need_numpy()
    cp, d = c.profile(prog("copy_pieces.py"), extra=("--exact",), env={"PYFLOW_COPY_SAMPLE_BYTES": "1"})
    assert cp.returncode == 0, cp.stderr
    concat, take, whole = (row(d, "copy_pieces.py", n) for n in (4, 6, 7))
    near(concat["copy_bytes"], 16_000_000, 0.01, "concatenate copy volume")
    near(take["copy_bytes"], 4_000_000, 0.01, "take copy volume")
    assert take["copy_count"] >= 100_000, take["copy_count"]
    assert concat["redundant_copy_bytes"] == 0, f"a concatenation was called redundant: {concat}"
    assert take["redundant_copy_bytes"] == 0, f"a gather's pieces were called redundant: {take}"
    near(whole["redundant_copy_bytes"], 8_000_000, 0.01, "np.array(a) redundant bytes")


def case_copies_python(c):
    """bytes(bytearray) of a buffer nobody changes: redundant; a changed copy: not; realloc growth: edges."""
    cp, d = c.profile(example("bytes_copies.py"))
    assert cp.returncode == 0, cp.stderr
    near(row(d, "bytes_copies.py", 8)["redundant_copy_bytes"], 16_000_000, 0.02, "bytes(buf) redundant bytes")
    changed = row(d, "bytes_copies.py", 11)
    near(changed["copy_bytes"], 16_000_000, 0.02, "bytearray(buf) copy volume")
    assert changed["redundant_copy_bytes"] == 0, "a modified bytearray copy was flagged"
    # text: the runtime names str and bytes ends, and each conversion gets its own fix
    cp, d = c.profile(example("text_copies.py"))
    assert cp.returncode == 0, cp.stderr
    fixes = {"text_copies.py:12": "str.encode() copied the text as is",
             "text_copies.py:15": "decoding copied the bytes as is"}
    # a concatenation builds a new value (the text and a newline): no redundant copy (issue 25)
    assert row(d, "text_copies.py", 10)["redundant_copy_bytes"] == 0, row(d, "text_copies.py", 10)
    for where, fix in fixes.items():
        line = int(where.split(":")[1])
        near(row(d, "text_copies.py", line)["redundant_copy_bytes"], 8_000_000, 0.02, f"{where} redundant bytes")
        findings = cp.stderr.split("redundant copies (", 1)[-1].splitlines()
        said = next((findings[i + 1] for i, l in enumerate(findings[:-1]) if l.startswith(f"  {where}  ")), "")
        assert fix in said and "memoryview" not in said, (where, said, cp.stderr)
    cp, d = c.profile(example("list_growth.py"))
    grows = [f for f in d["flows"] if f["kind"] == "realloc" and os.path.basename(f["at"]["file"]) == "list_growth.py"]
    assert grows, "no realloc edge for growing containers"
    assert sum(f["bytes"] for f in grows) > 10_000_000, grows


def case_flow_graph_dot(c):
    """--dot writes the flow graph: the redundant bytes(buf) edge in red, the modified copy not; SVG too."""
    dot = os.path.join(c.tmp, "flows.dot")
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "--dot", dot, example("bytes_copies.py")])
    assert cp.returncode == 0, cp.stderr
    text = open(dot).read()
    assert text.startswith("digraph pyflow"), text[:80]
    red = [l for l in text.splitlines() if "color=red" in l]
    assert any("at bytes_copies.py:8" in l for l in red), red
    assert not any("at bytes_copies.py:11" in l for l in red), red
    assert "cluster_" in text and "bytes_copies.py:6" in text
    if shutil.which("dot"):
        assert os.path.getsize(dot + ".svg") > 0, "no SVG written though Graphviz is installed"
    small = run([c.pyflow, "run", "--python", c.python, "--no-report", "--dot", dot, "--dot-min-bytes", "1g",
                 example("bytes_copies.py")])
    assert small.returncode == 0 and "->" not in open(dot).read(), "--dot-min-bytes did not fold flows"


def case_leaks(c):
    """A growing cache is a probable leak; data made once and freed temporaries are not."""
    page = os.path.join(c.tmp, "leaks.html")
    cp, d = c.profile(example("leaky_cache.py"), extra=("--sample-bytes", "64k", "--html", page))  # 25% = ~8 std errors
    assert cp.returncode == 0, cp.stderr
    leaks = {(os.path.basename(l["file"]), l["line"]): l for l in d["leaks"]}
    cache = leaks.get(("leaky_cache.py", 18))
    assert cache and cache["likelihood"] >= 0.9, d["leaks"]
    near(cache["leaked_bytes"], 300 * 100_000, 0.25, "the cache's live bytes (sampled)")
    assert cache["rate_bytes_s"] > 0
    assert ("leaky_cache.py", 8) not in leaks, "data made once was called a leak"
    assert ("leaky_cache.py", 17) not in leaks, "freed temporaries were called a leak"
    assert "probable leaks" in cp.stderr and "leaky_cache.py:18" in cp.stderr.split("probable leaks")[1]
    # which caller of handle() keeps it: the loop's line, in the JSON and under the finding
    assert [(v["function"], v["line"]) for v in cache["via"]] == [("<module>", 23)], cache["via"]
    assert "\n      via <module>:23" in cp.stderr.split("probable leaks")[1], cp.stderr
    assert "cache[i] = bytearray(100_000)</code> via &lt;module&gt;:23</div>" in open(page, encoding="utf-8").read()


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


def tree_path(doc, node):
    """The (function, line) of each node from the root down to `node` (an entry of call_tree)."""
    nodes, path = doc["call_tree"], []
    while node is not None:
        path.append((node["function"], node["line"]))
        node = nodes[node["parent"]] if node["parent"] >= 0 else None
    return path[::-1]


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


def case_info(c):
    """pyflow info: the runtime, the Python versions, and one line per machine probe with its verdict."""
    cp = run([c.pyflow, "info"])
    assert cp.returncode == 0, cp.stderr
    for probe in ("perf_event_paranoid", "cycles sampling", "precise addresses", "breakpoint slots", "libpfm4",
                  "signals"):
        lines = [l for l in cp.stdout.splitlines() if l.startswith(probe)]
        assert lines and lines[0][21:25].strip() in ("ok", "skip", "FAIL"), (probe, cp.stdout)
    assert "3.11" in cp.stdout
    assert f"SIGRTMIN+5 = {signal.SIGRTMIN + 5}" in cp.stdout, "info does not say which signals watch takes"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def case_html_page(c):
    """--html writes one self-contained page; it opens in headless Chromium, sorts, and is screenshotted."""
    page = os.path.join(c.tmp, "report.html")
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "--html", page, example("bytes_copies.py")])
    assert cp.returncode == 0, cp.stderr
    html = open(page, encoding="utf-8").read()
    import re
    fetched = re.findall(r'(?:src|href)=["\'](?:https?:)?//', html)
    assert not fetched, f"the page loads something from the network: {fetched}"
    assert "redundant copy" in html and "bytes_copies.py:8 of data from line 6 <code>" in html, "findings missing"
    assert '<table id="lines"' in html and "<polyline" in html
    browser = chromium()
    if not browser:
        raise Skip("no Chromium here: the page was checked without a browser")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--user-data-dir=" + os.path.join(c.tmp, "chrome")]
    shot = os.path.join(c.tmp, "report.png")
    r = run([browser, *flags, "--window-size=1300,1200", "--screenshot=" + shot, "file://" + page], timeout=120)
    assert os.path.exists(shot) and os.path.getsize(shot) > 10_000, ("no screenshot", r.stderr[-500:])
    for direction in ("asc", "desc"):
        r = run([browser, *flags, "--dump-dom", f"file://{page}#sort=alloc:{direction}"], timeout=120)
        body = r.stdout.split('<table id="lines"')[1].split("</table>")[0]
        values = [float(v) for v in re.findall(r'<tr><td data-v="[^"]*"[^>]*>[^<]*</td><td>[^<]*</td><td data-v="([0-9.]+)"', body)]
        assert len(values) >= 3, body[:500]
        assert values == sorted(values, reverse=direction == "desc"), (direction, values)
    # the flame graph is drawn by the page's script from its data: one bar per kept call-tree node
    nodes = json.loads(html.split('<script type="application/json" id="flame-data">')[1].split("</script>")[0])
    assert any(n[5] == "bytes_copies.py:8" for n in nodes), nodes
    for measure in ("peak", "alloc"):
        r = run([browser, *flags, "--dump-dom", f"file://{page}#flame={measure}"], timeout=120)
        drawn = re.search(r'<svg id="flame"[^>]*data-drawn="(\d+)"', r.stdout)
        assert drawn and int(drawn.group(1)) >= 2, (measure, r.stdout[-800:])
        assert "bytes_copies.py:8" in r.stdout.split('<svg id="flame"')[1].split("</svg>")[0], measure
    # zoomed into a node, its callers stay above it, full width and faded, and only its subtree is drawn
    deep = os.path.join(c.tmp, "paths.html")
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "--html", deep, example("call_paths.py")])
    assert cp.returncode == 0, cp.stderr
    page_text = open(deep, encoding="utf-8").read()
    nodes = json.loads(page_text.split('<script type="application/json" id="flame-data">')[1].split("</script>")[0])
    load_all = next(i for i, n in enumerate(nodes) if n[4] == "load_all")
    r = run([browser, *flags, "--dump-dom", f"file://{deep}#zoom={load_all}"], timeout=120)
    graph = r.stdout.split('<svg id="flame"')[1].split("</svg>")[0]
    assert 'data-drawn="4"' in graph and graph.count('fill-opacity="0.45"') == 2, graph[:1500]
    assert "call_paths.py:20" not in graph, "scan's path is outside the zoomed subtree"


# ---- fidelity ----

def case_stdout_and_exit_codes(c):
    """Same stdout, stdin, argv and exit status as a plain run."""
    for mode, want in (("ok", 0), ("exit3", 3), ("raise", 1)):
        plain = run([c.python, prog("fidelity.py"), mode], input="hello stdin\n")
        cp = run([c.pyflow, "run", "--python", c.python, prog("fidelity.py"), mode], input="hello stdin\n")
        assert plain.returncode == want, (mode, plain.returncode)
        assert cp.returncode == want, f"{mode}: pyflow exit {cp.returncode}, want {want}\n{cp.stderr}"
        assert cp.stdout == plain.stdout, f"{mode}: stdout differs"
        if mode == "raise":
            tail = plain.stderr.strip().splitlines()[-1]
            assert tail == "ValueError: boom from the program"
            assert "ValueError: boom from the program" in cp.stderr
            # the program's traceback comes first, unchanged
            assert cp.stderr.startswith(plain.stderr), "traceback changed under pyflow"


def case_module_and_code(c):
    """-m module and -c code run with their own argv and __main__."""
    cp = run([c.pyflow, "run", "--python", c.python, "-m", "pkgmod", "a", "b"], cwd=PROGRAMS)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "module main ['a', 'b']\n", cp.stdout
    cp = run([c.pyflow, "run", "--python", c.python, "-c",
              "import sys; print(__name__, sys.argv[1:])", "x", "--flag"])
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "__main__ ['x', '--flag']\n", cp.stdout


def case_command_lines(c):
    """A command line put behind `pyflow run` as it is: the interpreter with its own options, or a Python
    command found on PATH (run by its #! interpreter); each runs as it would alone, and is profiled.
    Compiled programs and commands that are not Python are refused before anything runs."""
    with open(os.path.join(c.tmp, "show.py"), "w") as f:
        f.write("import sys\n"
                "big = bytearray(3_000_000)\n"
                "print(sys.flags.dev_mode, sys.flags.optimize, sys.warnoptions, sys.argv, sys.version_info[:2])\n")
    out = os.path.join(c.tmp, "out.json")
    for opts in (["-X", "dev", "-W", "error::DeprecationWarning"], ["-Xdev", "-OO"], ["-I"]):
        plain = run([c.python, *opts, "show.py", "a b", "-X"], cwd=c.tmp)
        cp = run([c.pyflow, "run", "--json", out, c.python, *opts, "show.py", "a b", "-X"], cwd=c.tmp)
        assert plain.returncode == 0 and cp.returncode == 0, (opts, plain.stderr, cp.stderr)
        assert cp.stdout == plain.stdout, f"{opts}: plain {plain.stdout!r}, pyflow {cp.stdout!r}"
        with open(out) as f:
            exact_plus_samples(row(json.load(f), "show.py", 2)["alloc_bytes"], 3_000_000, f"{opts} show.py:2")
    # -c and -m at the end of a cluster of flags, or with their argument attached
    for tail in (["-uc", "import sys; print(sys.argv)", "x"], ["-Bcimport sys; print(sys.argv)", "x"],
                 ["-Bm", "pkgmod", "x"], ["-mpkgmod", "x"]):
        plain = run([c.python, *tail], cwd=PROGRAMS)
        cp = run([c.pyflow, "run", "--no-report", c.python, *tail], cwd=PROGRAMS)
        assert plain.returncode == 0 and cp.returncode == 0 and cp.stdout == plain.stdout, (tail, cp.stdout,
                                                                                           cp.stderr)
    # a Python command on PATH, run by the interpreter its #! line names, with the argv typing it gives
    bindir = os.path.join(c.tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    tool = os.path.join(bindir, "pf-test-tool")
    with open(tool, "w") as f:
        f.write(f"#!{c.python}\nimport os, sys\nbig = bytearray(3_000_000)\n"
                "print(os.path.realpath(sys.executable), sys.argv)\n")
    os.chmod(tool, 0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYFLOW_PYTHON"}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    plain = run(["pf-test-tool", "a"], env=env, cwd=c.tmp)
    cp = run([c.pyflow, "run", "--json", out, "pf-test-tool", "a"], env=env, cwd=c.tmp)
    assert plain.returncode == 0 and cp.returncode == 0, (plain.stderr, cp.stderr)
    assert cp.stdout == plain.stdout, f"plain {plain.stdout!r}, pyflow {cp.stdout!r}"
    with open(out) as f:
        exact_plus_samples(row(json.load(f), "pf-test-tool", 3)["alloc_bytes"], 3_000_000, "pf-test-tool:3")
    for cmd, text in (([c.pyflow, "run", "/bin/true"], "is a compiled program"),
                      ([c.pyflow, "run", "ls", "/"], "is not a Python program"),
                      ([c.pyflow, "run", "--python", c.python, c.python, "show.py"], "two interpreters"),
                      ([c.pyflow, "run", c.python, "-X", "dev"], "nothing to run"),
                      # after an interpreter the script is a path, as for python: not looked for on PATH
                      ([c.pyflow, "run", c.python, "pf-test-tool"], "can't open file 'pf-test-tool'")):
        cp = run(cmd, cwd=c.tmp, env=env)
        assert cp.returncode == 2 and cp.stdout == "", (cmd, cp.returncode, cp.stdout)
        assert cp.stderr.startswith("pyflow: ") and text in cp.stderr and len(cp.stderr.splitlines()) == 1, (
            cmd, cp.stderr)


def case_argv_cwd_env(c):
    """The script path exactly as typed, argv, cwd, __file__ and the environment are the plain run's; the
    interpreter comes from PYFLOW_PYTHON when --python is not given."""
    with open(os.path.join(c.tmp, "show.py"), "w") as f:
        f.write("import os, sys\n"
                "print(sys.argv, __file__, __name__, os.getcwd(), os.environ.get('PF_TEST_VAR'))\n"
                "print(os.path.realpath(sys.executable), sys.version_info[:2])\n")
    env = dict(os.environ, PF_TEST_VAR="kept", PYFLOW_PYTHON=c.python)
    args = ["show.py", "a b", "-x", "--json", "-m"]   # options after the script belong to the program
    plain = run([c.python, *args], cwd=c.tmp, env=env)
    cp = run([c.pyflow, "run", *args], cwd=c.tmp, env=env)
    assert plain.returncode == 0, plain.stderr
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == plain.stdout, f"plain:\n{plain.stdout}pyflow:\n{cp.stdout}"
    assert cp.stderr.startswith("pyflow  show.py a b -x --json -m"), f"report header: {cp.stderr[:200]!r}"


def case_child_after_chdir(c):
    """A relative -o, and a program that changes directory before it starts a child: the child's profile
    is still written beside the root's (not in the new directory) and merged."""
    sub = os.path.join(c.tmp, "elsewhere")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(c.tmp, "moves.py"), "w") as f:
        f.write("import os, subprocess, sys\n"
                f"os.chdir({sub!r})\n"
                "subprocess.run([sys.executable, '-c', 'x = bytearray(6_000_000)'], check=True)\n")
    cp = run([c.pyflow, "run", "--python", c.python, "-o", "rel.pflow", "--json", "out.json", "moves.py"],
             cwd=c.tmp)
    assert cp.returncode == 0, cp.stderr
    assert not [n for n in os.listdir(sub) if n.startswith("rel.pflow")], os.listdir(sub)
    with open(os.path.join(c.tmp, "out.json")) as f:
        d = json.load(f)
    started = row(d, "moves.py", 3)
    assert started["started_processes"] == 1 and started["started_bytes"] >= 5_000_000, started


def case_unprofiled_children(c):
    """Python children given an environment without pyflow's variables run unprofiled, and the report says
    which line started each and what it ran: subprocess, posix_spawn, fork+execve, a PATH search, a #! script
    (also by its bare name through C's execvp), and the program replacing itself. A child that keeps the variables is profiled; a non-Python one is not
    mentioned; a shell that runs Python (subprocess's shell=True, os.system, a shell script given to sh or
    started by its #! line, a program named by a shell variable) is listed by its command. The program's output
    is as without pyflow."""
    script = prog("unprofiled.py")
    plain = run([c.python, script, c.tmp])
    cp, d = c.profile(script, c.tmp)
    assert cp.returncode == plain.returncode == 0, (cp.returncode, plain.returncode, cp.stderr[-800:])
    assert sorted(cp.stdout.splitlines()) == sorted(plain.stdout.splitlines()), (cp.stdout, plain.stdout)
    got = {(os.path.basename(u["file"] or ""), u["line"]): u for u in d["unprofiled_processes"]}
    want = {line_of(script, marker): marker for marker in (
        "# by subprocess", "# by posix_spawn", "# by fork and execve", "# by a PATH search",
        "# by a script's #! line", "# by C's execvp", "# by a shell", "# by a shell variable", "# by os.system",
        "# by sh and a script", "# by a shell script's #! line", "# itself")}
    assert sorted(l for _, l in got) == sorted(want), (sorted(got), want)
    root = d["processes"][0]["pid"]
    for line, marker in want.items():
        u = got[("unprofiled.py", line)]
        # subprocess: vfork from 3.10 (the parent writes the start); fork, close_fds, exec before (the child)
        if marker not in ("# by subprocess", "# by a script's #! line", "# by a shell", "# by a shell variable",
                          "# by sh and a script", "# by a shell script's #! line"):
            itself = marker in ("# by fork and execve", "# by a PATH search", "# by C's execvp", "# itself")
            assert (u["pid"] == u["started_by_pid"]) == itself, (marker, u)
        command = {"# by a script's #! line": "tool.py", "# by C's execvp": "tool.py", "# by a shell": "sh -c ", "# by a shell variable": "sh -c ",
                   "# by os.system": "sh -c ",
                   "# by sh and a script": "sh ", "# by a shell script's #! line": "job.sh"}.get(marker, "python")
        assert u["command"].startswith(command), (marker, u)
    assert got[("unprofiled.py", line_of(script, "# by os.system"))]["pid"] == 0     # glibc's shell: not seen
    assert got[("unprofiled.py", line_of(script, "# itself"))]["pid"] == root
    kept = row(d, "unprofiled.py", line_of(script, "# profiled"))
    assert kept["started_processes"] == 1 and kept["started_bytes"] >= 2_500_000, kept
    assert "12 Python processes not profiled" in cp.stderr + cp.stdout, (cp.stdout + cp.stderr)[-1500:]


def case_keyboard_interrupt(c):
    """An uncaught KeyboardInterrupt ends the program by SIGINT, as with plain python."""
    plain = run([c.python, prog("fidelity.py"), "interrupt"], input="")
    cp = run([c.pyflow, "run", "--python", c.python, prog("fidelity.py"), "interrupt"], input="")
    assert plain.returncode == -signal.SIGINT, plain.returncode
    assert cp.returncode == -signal.SIGINT, f"pyflow status {cp.returncode}\n{cp.stderr}"


def case_signals_forwarded(c):
    """SIGTERM sent to pyflow reaches the program; Ctrl-C (SIGINT to the whole process group) ends the
    program by KeyboardInterrupt while pyflow waits. Either way the report is printed and pyflow dies of the
    program's signal."""
    code = "import time; x = bytearray(2_000_000); print('ready', flush=True); time.sleep(60)"
    for sig, to_group in ((signal.SIGTERM, False), (signal.SIGINT, True)):
        p = subprocess.Popen([c.pyflow, "run", "--python", c.python, "-c", code], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert p.stdout.readline() == "ready\n", "the program did not start"
            (os.killpg if to_group else os.kill)(p.pid, sig)
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        assert p.returncode == -sig, f"{sig.name}: pyflow status {p.returncode}\n{err[-800:]}"
        assert "<string>:1" in err, f"{sig.name}: no report\n{err[-800:]}"
        if sig == signal.SIGINT:
            assert "KeyboardInterrupt" in err, err[-800:]


def case_os_exit_and_sigkill(c):
    """os._exit and SIGKILL: the exit status is the program's, and the profile up to then survives."""
    saved = os.path.join(c.tmp, "kept.pflow")
    cp, d = c.profile(prog("fidelity.py"), "osexit")
    assert cp.returncode == 7, cp.returncode
    near(row(d, "fidelity.py", 18)["leaked_bytes"], 3_000_000, 0.01, "bytes made before os._exit")
    cp = run([c.pyflow, "run", "--python", c.python, "-o", saved, prog("fidelity.py"), "sigkill"], input="")
    assert cp.returncode == -signal.SIGKILL, cp.returncode
    rep = run([c.pyflow, "report", saved, "--format", "json"])
    assert rep.returncode == 0, rep.stderr
    d = json.loads(rep.stdout)
    near(row(d, "fidelity.py", 22)["leaked_bytes"], 3_000_000, 0.01, "bytes made before SIGKILL")
    assert d["program"]["signal"] == 9, d["program"]


def case_fork_merged(c):
    """A forked child's allocations are in the report."""
    cp, d = c.profile(prog("forker.py"))
    assert cp.returncode == 0, cp.stderr
    near(row(d, "forker.py", 6)["alloc_bytes"], 5_000_000, 0.01, "child's allocation")
    near(row(d, "forker.py", 3)["alloc_bytes"], 2_000_000, 0.01, "parent's allocation")
    assert len(d["processes"]) == 2, d["processes"]
    # a child that execs keeps its pid: its first image is a row of its own, marked as replaced
    cp, d = c.profile(prog("fork_exec.py"))
    assert cp.returncode == 0 and cp.stdout == "exec ok\nparent ok\n", (cp.stdout, cp.stderr[-800:])
    images = [p for p in d["processes"] if not p["root"]]
    assert len(images) == 2 and images[0]["pid"] == images[1]["pid"], d["processes"]
    assert images[0]["replaced_by_exec"] and not images[1]["replaced_by_exec"], images
    assert images[0]["alloc_bytes"] >= 8 << 20 and "-c" in images[1]["argv"], images
    assert "(before exec) " in cp.stderr, cp.stderr[-1500:]


# ---- GPU (a mock CUDA library on machines without one) ----

GPU = os.path.join(os.path.dirname(HERE), "gpu")


def profile_on_mock_cuda(c, program, stdout_end):
    """Profiles tests/gpu/PROGRAM against the mock CUDA library (skipped when it was not built); checks the
    program ran to its last line and returns its run and the JSON document."""
    lib = os.environ.get("PYFLOW_TEST_MOCKCUDA")
    if not lib or not os.path.exists(lib):
        raise Skip("the mock CUDA library was not built")
    cp, d = c.profile(os.path.join(GPU, program), lib)
    assert cp.returncode == 0 and cp.stdout.endswith(stdout_end), (cp.returncode, cp.stdout, cp.stderr[-800:])
    return cp, d


def assert_gpu_rows(d, script, rows):
    """rows: (line, MiB allocated there, MiB of it live at exit)."""
    for line, mib, kept in rows:
        r = row(d, script, line)
        assert r["gpu_bytes"] == mib << 20 and r["leaked_bytes"] == kept << 20, (line, r)


def case_gpu_ctypes(c):
    """CUDA loaded late with ctypes: GPU bytes per line, frees, h2d/d2h edges, a redundant upload."""
    cp, d = profile_on_mock_cuda(c, "gpu_ctypes.py", "gpu ok\n")
    big, kept = row(d, "gpu_ctypes.py", 18), row(d, "gpu_ctypes.py", 19)
    assert big["gpu_bytes"] == 64 << 20 and big["leaked_bytes"] == 0, big
    assert kept["gpu_bytes"] == 16 << 20 and kept["leaked_bytes"] == 16 << 20, kept
    assert big["native_bytes"] == 0 and kept["python_bytes"] < 1 << 20, "device bytes counted as host bytes"
    assert d["totals"]["gpu_bytes"] == 80 << 20 and d["totals"]["gpu_peak_bytes"] == 80 << 20, d["totals"]
    gpu_series = [b for _, b in d["gpu_timeline"]]
    assert max(gpu_series) == 80 << 20 and gpu_series[-1] == 16 << 20, gpu_series
    assert "gpu" in cp.stderr.split("line ")[1].splitlines()[0], "no GPU column in the text report"
    nodes = {n["line"]: n for n in d["call_tree"] if n["file"].endswith("gpu_ctypes.py")}
    assert nodes[18]["gpu_bytes"] == 64 << 20 and nodes[18]["gpu_peak_bytes"] == 64 << 20, nodes[18]
    assert nodes[19]["gpu_bytes"] == 16 << 20 and nodes[19]["gpu_peak_bytes"] == 16 << 20, nodes[19]
    same = [f for f in flows_at(d, "gpu_ctypes.py", 22) if f["kind"] == "h2d"]
    assert same and same[0]["bytes"] == 5 * (4 << 20) and same[0]["count"] == 5, same
    assert same[0]["redundant"] and same[0]["evidence"] == "content-hash", same
    assert same[0]["dst"]["line"] == 19, same
    changed = [f for f in flows_at(d, "gpu_ctypes.py", 25) if f["kind"] == "h2d"]
    assert changed and not changed[0]["redundant"], changed
    down = [f for f in flows_at(d, "gpu_ctypes.py", 27) if f["kind"] == "d2h"]
    assert down and down[0]["bytes"] == 4 << 20 and down[0]["src"]["line"] == 19, down


def case_gpu_procaddress(c):
    """Driver functions fetched with cuGetProcAddress are hooked too."""
    cp, d = profile_on_mock_cuda(c, "gpu_procaddress.py", "procaddress ok\n")
    freed, kept = row(d, "gpu_procaddress.py", 17), row(d, "gpu_procaddress.py", 19)
    assert freed["gpu_bytes"] == 24 << 20 and freed["leaked_bytes"] == 0, freed
    assert kept["gpu_bytes"] == 8 << 20 and kept["leaked_bytes"] == 8 << 20, kept
    # cuGetProcAddress fetched through itself (a static CUDA runtime's bootstrap), in both ABIs
    assert_gpu_rows(d, "gpu_procaddress.py", ((29, 16, 16), (30, 4, 4)))


def case_gpu_vmm(c):
    """The virtual memory API (PyTorch's expandable segments): mapped chunks are GPU blocks of the line that
    mapped them, until unmapped (one unmap may end several); a copy into a chunk is an h2d edge to it."""
    cp, d = profile_on_mock_cuda(c, "gpu_vmm.py", "vmm ok\n")
    assert_gpu_rows(d, "gpu_vmm.py", ((22, 16, 0), (23, 32, 32), (24, 8, 0), (25, 8, 0)))
    up = [f for f in flows_at(d, "gpu_vmm.py", 26) if f["kind"] == "h2d"]
    assert up and up[0]["bytes"] == 1 << 20 and up[0]["dst"]["line"] == 23, up


def case_gpu_copies_2d(c):
    """2D and 3D copies (runtime and driver) and copies between devices are flow edges; only a contiguous upload
    is judged by content."""
    cp, d = profile_on_mock_cuda(c, "gpu_copies_2d.py", "2d ok\n")

    def edge(line, kind):
        found = [f for f in flows_at(d, "gpu_copies_2d.py", line) if f["kind"] == kind]
        assert len(found) == 1, (line, kind, flows_at(d, "gpu_copies_2d.py", line))
        return found[0]
    first, again, strided = edge(23, "h2d"), edge(24, "h2d"), edge(25, "h2d")
    assert first["bytes"] == 4 << 20 and first["dst"]["line"] == 21 and not first["redundant"], first
    assert again["bytes"] == 4 << 20 and again["redundant_bytes"] == 4 << 20, again
    assert strided["bytes"] == 2 << 20 and not strided["redundant"], strided
    for line in (27, 31, 45):
        down = edge(line, "d2h")
        assert down["bytes"] == 4 << 20 and down["src"]["line"] == 21, down
    up3 = edge(44, "h2d")      # the runtime's 3D copy: 2 slices of 2 rows of 1 MiB, back to back
    assert up3["bytes"] == 4 << 20 and up3["dst"]["line"] == 21 and up3["redundant_bytes"] == 4 << 20, up3
    for line, src, dst in ((28, 21, 22), (29, 22, 21)):
        peer = edge(line, "d2d")
        assert peer["bytes"] == 4 << 20 and peer["src"]["line"] == src and peer["dst"]["line"] == dst, peer


def case_gpu_pools(c):
    """Allocations from a program's own memory pool and pitched allocations are GPU bytes (pitch x height)."""
    cp, d = profile_on_mock_cuda(c, "gpu_pools.py", "pools ok\n")
    assert_gpu_rows(d, "gpu_pools.py", ((15, 8, 0), (17, 4, 4), (18, 1, 1), (19, 1, 0)))


def case_gpu_extension(c):
    """A C extension linked against CUDA (calls through the PLT) is seen too."""
    ext = os.environ.get("PYFLOW_TEST_GPUEXT")
    if not ext or not os.path.isdir(ext):
        raise Skip("the test extension was not built (no python3-dev)")
    cp, d = c.profile(os.path.join(GPU, "gpu_extension.py"), ext)
    assert cp.returncode == 0 and cp.stdout == "ext ok\n", (cp.returncode, cp.stdout, cp.stderr[-800:])
    keep, tmp = row(d, "gpu_extension.py", 8), row(d, "gpu_extension.py", 9)
    assert keep["gpu_bytes"] == 32 << 20 and keep["leaked_bytes"] == 32 << 20, keep
    assert tmp["gpu_bytes"] == 8 << 20 and tmp["leaked_bytes"] == 0, tmp


def case_preload_chain(c):
    """An existing LD_PRELOAD is kept, and its dlsym(RTLD_NEXT) still finds the next definition."""
    lib = os.environ.get("PYFLOW_TEST_NEXT_PRELOAD")
    if not lib or not os.path.exists(lib):
        raise Skip("the test preload library was not built")
    env = dict(os.environ, LD_PRELOAD=lib)
    cp = run([c.pyflow, "run", "--python", c.python, "-c", "import os; print(os.getpid() > 0)"], env=env)
    assert cp.returncode == 0, (cp.returncode, cp.stderr[-800:])
    assert cp.stdout == "True\n", cp.stdout
    assert "next-preload: loaded" in cp.stderr, "the user's LD_PRELOAD was dropped"


# ---- robustness ----

def case_threads_stress(c):
    """8 threads allocating and freeing across threads: no deadlock, live bytes equal ground truth."""
    cp, d = c.profile(prog("threads_stress.py"), extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout.strip() == "kept 200", (cp.returncode, cp.stdout, cp.stderr[-500:])
    moved = row(d, "threads_stress.py", 13)
    near(moved["alloc_bytes"], 8 * 3000 * 100_000, 0.01, "blocks allocated by producers")
    assert moved["leaked_bytes"] < 100_000 * 70, f"blocks freed on other threads still live: {moved['leaked_bytes']}"
    near(row(d, "threads_stress.py", 16)["leaked_bytes"], 200 * 100_000, 0.01, "kept blocks live at exit")


def case_child_processes(c):
    """subprocess and multiprocessing (spawn, forkserver) children are profiled and merged; a subprocess
    running only its own -c code is charged to the line that started it."""
    cp, d = c.profile(prog("spawner.py"))
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert "spawn 8000000" in cp.stdout and "forkserver 8000000" in cp.stdout, cp.stdout
    near(row(d, "spawner.py", 8)["alloc_bytes"], 16_000_000, 0.02, "workers' allocations, merged")
    assert len(d["processes"]) >= 4, d["processes"]
    # the Python subprocess's memory (its -c is the line that ran it, lines 13-14) is charged there
    sub = [r for r in d["lines"] if os.path.basename(r["file"]) == "spawner.py" and r["line"] in (13, 14)]
    assert sum(r["alloc_bytes"] for r in sub) >= 3_000_000, "the python subprocess is missing"
    assert sum(r["started_processes"] for r in sub) == 1, sub
    # the text's process table: every child names its parent, and a child that only exec'd is one row
    table = cp.stderr.split("\npid ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    pids = [r.split()[0] for r in table]
    assert len(pids) == len(set(pids)), table
    assert all(r.split()[1] == "(root)" or r.split()[1].isdigit() for r in table), table
    assert sum(r.split()[1].isdigit() for r in table) >= 3, table


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


def case_started_by(c):
    """Threads and processes a line started, running no code of the program's: a thread (threading), a
    multiprocessing "spawn" pool (its interpreters exec'd from a vfork child, and the pool's own threads), a
    subprocess (vfork + exec) and os.posix_spawn, each an interpreter decoding 3 MB of JSON. Their memory is
    charged to the line that started them, said in "started by your lines"; nothing is outside the user's
    code; a child's "-c" is not the user's line; the program's output is its own."""
    script = prog("started_by.py")
    plain = run([c.python, script])
    cp, d = c.profile(script)
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, plain.stdout, cp.stderr[-2000:])
    thread, pool, sub, spawn = (row(d, "started_by.py", n) for n in (10, 12, 15, 17))
    assert thread["started_threads"] == 1 and thread["started_bytes"] >= 8_000_000, thread
    assert pool["started_processes"] >= 1 and pool["started_threads"] >= 1, pool
    assert pool["started_bytes"] >= 50_000_000, pool
    # each child interpreter's own start-up (a few MB) and its json.loads (8 MB and more)
    assert sub["started_processes"] == 1 and sub["started_bytes"] >= 10_000_000, sub
    assert spawn["started_processes"] == 1 and spawn["started_bytes"] >= 3_000_000, spawn
    assert d["outside_code"]["alloc_bytes"] < 0.01 * d["totals"]["alloc_bytes"], d["outside_code"]
    assert not [r for r in d["lines"] if r["file"] == "<string>"], "a child's -c charged as the user's line"
    text = cp.stderr.split("started by your lines", 1)
    assert len(text) == 2 and "started_by.py:15 in 1 process: r = subprocess.run" in text[1], cp.stderr


def case_started_by_shell(c):
    """Python children run through a shell (subprocess with shell=True; os.system, whose shell glibc starts
    where no hook sees its pid; sh running env running nice): each child's 30 MB is charged to the line
    that ran the shell, and its "-c" is not taken for the user's code. ("; true" keeps the shells from
    exec'ing the interpreter in their own place, which would make the interpreter their parent's child.)"""
    script = prog("started_by_shell.py")
    plain = run([c.python, script])
    cp, d = c.profile(script)
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, plain.stdout, cp.stderr[-2000:])
    for line in (6, 7, 8):
        r = row(d, "started_by_shell.py", line)
        assert r["started_processes"] == 1 and r["started_bytes"] >= 30_000_000, (line, r)
    assert not [r for r in d["lines"] if r["file"] == "<string>"], "a child's -c charged as the user's line"
    assert d["outside_code"]["alloc_bytes"] < 0.01 * d["totals"]["alloc_bytes"], d["outside_code"]
    # the process table names the profiled process that ran each shell, and says so
    root = [p for p in d["processes"] if p["root"]][0]["pid"]
    kids = [p for p in d["processes"] if p["argv"].startswith("-c ")]   # 3.9 also lists its fork images
    assert len(kids) == 3 and all(p["via_pid"] == root and p["ppid"] != root for p in kids), d["processes"]
    assert "* through a shell or another launcher" in cp.stderr, cp.stderr[-1500:]


def case_short_lived_workers(c):
    """300 threads and 8 child processes started one after another, each recording a little: the profile
    files take about what they record (measured 2 MB on disk; 53 MB when each thread left a 64 KiB chunk
    and each process a 4 MiB segment), and the threads' records, in chunks handed from one thread to the
    next, are still each thread's: all of them are charged to the line that started them."""
    pfl = os.path.join(c.tmp, "short", "p.pflow")
    os.makedirs(os.path.dirname(pfl), exist_ok=True)
    for old in glob.glob(pfl + "*"):
        os.unlink(old)
    cp, d = c.profile(prog("short_lived.py"), extra=["-o", pfl])
    assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-800:]
    files = glob.glob(pfl + "*")
    assert 9 <= len(files) <= 17, files     # 3.9's subprocess forks, then execs: two files per child
    disk = sum(os.stat(f).st_blocks * 512 for f in files)
    assert disk <= 4 << 20, f"{disk} bytes on disk for {len(files)} profile files"
    threads, procs = row(d, "short_lived.py", 11), row(d, "short_lived.py", 14)
    # each thread allocates ~2 MB, ~8 samples: one left unsampled is possible (p ~ 0.1 over 300)
    assert threads["started_threads"] >= 290 and threads["started_bytes"] >= 100_000_000, threads
    assert procs["started_processes"] == 8, procs
    assert d["outside_code"]["alloc_bytes"] < 0.01 * d["totals"]["alloc_bytes"], d["outside_code"]


def case_lazy_libraries(c):
    """libpfm4 is loaded only when watch names an event: linked, its relocated event tables cost every
    profiled process about 2 MiB."""
    code = "print(sum('libpfm' in l for l in open('/proc/self/maps')))"
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "-c", code])
    assert cp.returncode == 0 and cp.stdout.strip() == "0", (cp.stdout, cp.stderr[-800:])


def case_exec_native_clean(c):
    """A non-Python program run by the profiled one (directly or through a shell) sees no LD_PRELOAD entry and
    no PYFLOW_* variable of pyflow's; a Python child is still profiled."""
    plain = run([c.python, prog("exec_native.py")])
    cp, d = c.profile(prog("exec_native.py"))
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, plain.stdout, cp.stderr[-800:])
    sub = [r for r in d["lines"] if os.path.basename(r["file"]) == "exec_native.py" and r["line"] in (13, 14)]
    assert sum(r["started_bytes"] for r in sub) >= 2_000_000, "the python child is missing"


def case_crashes_and_timers(c):
    """abort() and a segfault in C code end the run with the program's own status, and the profile written
    up to then is reported (the 8 MB allocated first); the program's setitimer handlers keep firing."""
    for how in ("abort", "segv", "timers"):
        plain = run([c.python, prog("crashes.py"), how])
        cp, d = c.profile(prog("crashes.py"), how)
        assert cp.returncode == plain.returncode, (how, cp.returncode, plain.returncode, cp.stderr[-600:])
        assert cp.stdout == plain.stdout, (how, cp.stdout, plain.stdout)
        exact_plus_samples(row(d, "crashes.py", 8)["alloc_bytes"], 8_000_000, f"{how}: bytes before the end")


def case_signal_coexistence(c):
    """The program's own signals behave as without pyflow, with watch off and on (watch owns SIGTRAP and a
    real-time signal, and must forward them): SIGUSR1, interval timers of all three kinds, SIGTRAP handled then
    fatal, every real-time signal unblocked and queued while blocked, a sigaltstack of its own, faulthandler,
    abort and a fault, copies in threads that block SIGTRAP. Same stdout, same stderr (thread addresses aside), same status; the 8 MB allocated
    first is in the profile."""
    import re
    script = prog("robust_signals.py")
    keep = line_of(script, "keep = [bytearray")
    mask = lambda text: re.sub(r"0x[0-9a-f]+", "0x?", text)
    for how in ("usr1", "timers", "sigtrap", "rt", "altstack", "faulthandler", "abort", "segv", "blocked"):
        plain = run([c.python, script, how])
        for extra in ((), ("--watch=all",)):
            what = f"{how} {' '.join(extra)}"
            cp, d = c.profile(script, how, extra=("--no-report",) + extra)
            assert cp.returncode == plain.returncode, (what, cp.returncode, plain.returncode, cp.stderr[-600:])
            assert cp.stdout == plain.stdout, (what, cp.stdout, plain.stdout)
            err = "".join(l for l in cp.stderr.splitlines(True) if not l.startswith("pyflow: watch"))
            assert mask(err) == mask(plain.stderr), (what, err[-600:], plain.stderr[-600:])
            exact_plus_samples(row(d, "robust_signals.py", keep)["alloc_bytes"], 8_000_000, f"{what}: bytes first made")


def case_long_run_bounds(c):
    """A busy run keeps the profile and pyflow's own memory bounded by the sampling, not by the number of
    allocations: at most 256 KiB of profile per 100 MB allocated (measured: 130 KiB; recording every
    allocation would be ~600 KiB), and a peak RSS at most
    40 MiB above the plain run's."""
    c.need_numpy()
    plain = run(["/usr/bin/time", "-f", "%M", c.python, prog("long_run.py")])
    pfl = os.path.join(c.tmp, "long.pflow")
    r = run(["/usr/bin/time", "-f", "%M", c.pyflow, "run", "--no-report", "-o", pfl, "--python", c.python,
             prog("long_run.py")])
    assert r.returncode == 0 and r.stdout == plain.stdout, (r.stdout, r.stderr[-500:])
    allocated = int(plain.stdout.split()[1])
    size = os.path.getsize(pfl)
    per_100mb = size / (allocated / 100e6)
    assert per_100mb <= 256 * 1024, f"profile {size} B for {allocated} B allocated: {per_100mb:.0f} B per 100 MB"
    rss_plain, rss_pyflow = int(plain.stderr.split()[-1]), int(r.stderr.split()[-1])
    assert rss_pyflow - rss_plain <= 40 * 1024, f"peak RSS {rss_pyflow} KiB vs {rss_plain} KiB plain"


def profile_stacks(path, function):
    """A profile file read straight from the format (core/pf_format.h, records walked by
    bench/profile_stats.py): ({stack id: (n_py, n_native)} of its STACK records whose innermost Python frame
    is in `function`, [stack id] of its ALLOC records that refer to a stack, count of ALLOCs with inline
    frames)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
    from profile_stats import walk
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


def case_stack_interning(c):
    """Stacks are interned: 2000 iterations allocating on one line 40 frames deep write each of that line's
    few stacks once per process (the forked child's file defines its own), every allocation there carries
    an 8-byte reference instead of the frames (330+ bytes of Python frames alone), and the report
    attributes them all to the line with no reference left unresolved."""
    for extra in ([], ["--native"]):
        pfl = os.path.join(c.tmp, "deep%d.pflow" % len(extra))
        cp, d = c.profile(prog("deep_repeats.py"), extra=["--exact", "-o", pfl] + extra)
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


def case_profile_size_cap(c):
    """--max-profile: a run that would write ~25 MB of profile keeps within 2 MiB by coarsening its sampling
    (each step quarters the rate as the room left halves), loses no record, still estimates the busy line
    (300000 x ~1057 B, within 25%: the last steps sample 1 per MiB, about 5% standard error), and says so.
    With --exact nothing may be sampled: the records past the cap are dropped, counted in the file's
    header, and the report says the profile is incomplete."""
    pfl = os.path.join(c.tmp, "cap.pflow")
    cp, d = c.profile(prog("size_cap.py"), extra=["--sample-bytes", "1k", "--max-profile", "2m", "-o", pfl])
    assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-800:]
    size = os.path.getsize(pfl)
    assert size <= (2 << 20) + 4096 + 65536, f"profile {size} B over the 2 MiB cap (+ header and trailer)"
    s = d["sampling"]
    assert s["records_dropped"] == 0 and s["stacks_unresolved"] == 0, s
    steps = s["coarsened"]
    assert len(steps) >= 2 and all(a["factor"] < b["factor"] for a, b in zip(steps, steps[1:])), steps
    assert all(st["mean_sample_bytes"] == 1024 * st["factor"] for st in steps), steps
    near(row(d, "size_cap.py", 5)["alloc_bytes"], 300000 * 1057, 0.25, "the busy line under coarsened sampling")
    assert "near its size cap (--max-profile) sampling coarsened: 1 per 4.0 KiB" in cp.stderr, cp.stderr[-1500:]

    cp, d = c.profile(prog("size_cap.py"), extra=["--exact", "--max-profile", "2m", "-o", pfl])
    assert cp.returncode == 0 and cp.stdout == "done\n", cp.stderr[-800:]
    assert os.path.getsize(pfl) <= (2 << 20) + 4096 + 65536
    assert d["sampling"]["records_dropped"] > 1000, d["sampling"]
    # allocations stay exact; copies (the list's growth) coarsen
    assert all(st["mean_sample_bytes"] is None for st in d["sampling"]["coarsened"]), d["sampling"]
    assert "incomplete profile:" in cp.stderr, cp.stderr[-1500:]


def case_odd_script_names(c):
    """A script path with spaces and non-ASCII characters, and one of 3.5 KB, works and is reported by its
    full name."""
    script = os.path.join(PROGRAMS, "odd dir \u00fc", "na\u00efve script.py")
    cp, d = c.profile(script)
    assert cp.returncode == 0 and cp.stdout == "odd ok\n", (cp.returncode, cp.stdout, cp.stderr)
    near(row(d, "na\u00efve script.py", 1)["alloc_bytes"], 1_500_000, 0.01, "odd-named script's line")
    # a very long path: 14 directories of 250 characters (3.5 KB, near PATH_MAX), spaces and non-ASCII in each
    deep = os.path.join(c.tmp, *[f"{i:02d} deep \u00e9" + "d" * 240 for i in range(14)])
    os.makedirs(deep)
    long_script = os.path.join(deep, "long path script.py")
    shutil.copy(script, long_script)
    assert len(long_script.encode()) > 3500
    cp, d = c.profile(long_script)
    assert cp.returncode == 0 and cp.stdout == "odd ok\n", (cp.returncode, cp.stdout, cp.stderr[-600:])
    r = row(d, "long path script.py", 1)
    near(r["alloc_bytes"], 1_500_000, 0.01, "long-path script's line")
    assert r["file"] == long_script, r["file"]


def case_full_disk(c):
    """The profile's disk fills up mid-run: recording stops, the program runs on, what was written reports."""
    if os.geteuid() != 0:
        raise Skip("needs root to mount a small tmpfs")
    # Room for what the interpreter's start-up records (it varies with the machine's site-packages and .pth
    # files) plus 3 MiB of the program's own: its list of 300000 strings, recorded exactly, needs ~80 MiB.
    startup = os.path.join(c.tmp, "startup.pflow")
    run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "-o", startup, "-c", "pass"])
    room = os.path.getsize(startup) // (1 << 20) + 3
    mnt = os.path.join(c.tmp, "small")
    os.mkdir(mnt)
    if run(["mount", "-t", "tmpfs", "-o", f"size={room}m", "tmpfs", mnt]).returncode != 0:
        raise Skip("cannot mount a tmpfs here")
    try:
        saved = os.path.join(mnt, "p.pflow")
        code = "x = [str(i) for i in range(300000)]; print('program ok', len(x))"
        cp = run([c.pyflow, "run", "--python", c.python, "--exact", "-o", saved, "-c", code])
        assert cp.returncode == 0 and cp.stdout == "program ok 300000\n", (cp.returncode, cp.stdout, cp.stderr[-800:])
        assert "recording stops here" in cp.stderr, cp.stderr[-800:]
        assert "<string>:1" in cp.stderr, "what was recorded before the disk filled is not reported"
        assert "incomplete profile:" in cp.stderr, "the report does not say records were lost"
    finally:
        run(["umount", mnt])


def case_unwritable_tmpdir(c):
    """No place for the temporary profile: one clear line, and the program still runs with its own status."""
    env = dict(os.environ, TMPDIR="/proc/nonexistent")
    cp = run([c.pyflow, "run", "--python", c.python, "-c", "import sys; print('ran'); sys.exit(4)"], env=env)
    assert cp.returncode == 4 and cp.stdout == "ran\n", (cp.returncode, cp.stdout)
    assert cp.stderr.startswith("pyflow: cannot create a temporary directory") and "without profiling" in cp.stderr


# ---- bad input ----

def case_bad_input(c):
    """Each bad input: one clear line on stderr, non-zero exit, nothing run."""
    checks = [
        ([c.pyflow, "run", "--python", c.python, os.path.join(c.tmp, "missing.py")], 2, "missing.py"),
        ([c.pyflow, "run", "--python", c.python, c.tmp], 2, "directory"),
        ([c.pyflow, "run", "--python", "/bin/ls", prog("fidelity.py")], 2, "not a Python interpreter"),
        ([c.pyflow, "run", "--python", "/nonexistent/python", prog("fidelity.py")], 2, "not found"),
        ([c.pyflow, "run", "--python", c.python, "--json", "/proc/nope/out.json", prog("fidelity.py")], 2,
         "cannot write"),
        ([c.pyflow, "run", "--python", c.python, "-o", "/proc/nope/p.pflow", prog("fidelity.py")], 2,
         "cannot write the profile"),
        ([c.pyflow, "run", "--bogus", prog("fidelity.py")], 2, "unknown option --bogus"),
        ([c.pyflow, "run", "--sample-bytes", "12q", prog("fidelity.py")], 2, "--sample-bytes"),
        ([c.pyflow, "run", "--python", c.python], 2, "nothing to run"),
        ([c.pyflow, "frob"], 2, "unknown command"),
        ([c.pyflow, "report", os.path.join(c.tmp, "none.pflow")], 2, "No such file"),
        ([c.pyflow, "report", c.tmp], 2, "directory"),
        ([c.pyflow, "report", "--format", "xml", os.path.join(c.tmp, "none.pflow")], 2, "unknown format"),
    ]
    # interpreters pyflow cannot profile: named as such, with the versions it can
    for old in ("3.7", "2.7"):
        found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{old}.*/bin/python{old}")))
        if found:
            checks.append(([c.pyflow, "run", "--python", found[0], prog("fidelity.py")], 2,
                           f"Python {old} is not supported (supported here: 3."))
    for cmd, code, text in checks:
        cp = run(cmd, input="")
        assert cp.returncode == code, f"{cmd}: exit {cp.returncode}, want {code}\n{cp.stderr}"
        assert text in cp.stderr, f"{cmd}: stderr lacks {text!r}: {cp.stderr!r}"
        assert cp.stderr.startswith("pyflow: "), cp.stderr
        assert len(cp.stderr.splitlines()) == 1, f"{cmd}: more than one line: {cp.stderr!r}"
        assert cp.stdout == "", cp.stdout
    assert not os.path.exists("/proc/nope"), "nothing may be created for a rejected run"
    # a directory with a __main__.py is a program, as for python
    cp = run([c.pyflow, "run", "--python", c.python, os.path.join(PROGRAMS, "pkgmod"), "d"])
    assert cp.returncode == 0 and cp.stdout == "module main ['d']\n", (cp.returncode, cp.stdout, cp.stderr)
    # a syntax error is the program's: its own traceback and exit code 1
    plain = run([c.python, prog("syntax_error.py")])
    cp = run([c.pyflow, "run", "--python", c.python, prog("syntax_error.py")])
    assert cp.returncode == plain.returncode == 1, (cp.returncode, plain.returncode)
    assert "SyntaxError" in cp.stderr and cp.stderr.startswith(plain.stderr)


def case_corrupt_profiles(c):
    """Empty, foreign, truncated and corrupt profiles get the reader's sentence, never a crash."""
    saved = os.path.join(c.tmp, "good.pflow")
    cp = run([c.pyflow, "run", "--python", c.python, "-o", saved, "--no-report", prog("live_and_temp.py")])
    assert cp.returncode == 0, cp.stderr
    data = open(saved, "rb").read()

    def report(blob, name):
        p = os.path.join(c.tmp, name)
        with open(p, "wb") as f:
            f.write(blob)
        return run([c.pyflow, "report", p])

    if os.geteuid() != 0:   # root reads any file: the unreadable case needs an ordinary user
        unreadable = os.path.join(c.tmp, "unreadable.pflow")
        shutil.copy(saved, unreadable)
        os.chmod(unreadable, 0)
        r = run([c.pyflow, "report", unreadable])
        assert r.returncode == 2 and "Permission denied" in r.stderr, r.stderr
    r = report(b"", "empty.pflow")
    assert r.returncode == 2 and "is empty" in r.stderr, r.stderr
    r = report(b"hello world, not a profile at all" * 200, "foreign.pflow")
    assert r.returncode == 2 and "not a pyflow profile" in r.stderr, r.stderr
    r = report(data[: 4096 + 70_000], "cut.pflow")
    assert r.returncode == 0, f"a truncated profile must still load: {r.stderr}"
    bad = bytearray(data)
    bad[4096 + 16 + 4: 4096 + 16 + 8] = (3).to_bytes(4, "little")   # first record's length: 3
    r = report(bytes(bad), "corrupt.pflow")
    assert r.returncode == 2 and "corrupt" in r.stderr and "offset 4112" in r.stderr, r.stderr
    import random
    rnd = random.Random(1234)
    for i in range(60):
        blob = bytearray(data[: 4096 + 65536 * 2])
        for _ in range(20):
            blob[rnd.randrange(4096, len(blob))] = rnd.randrange(256)
        r = report(bytes(blob), f"fuzz{i}.pflow")
        assert r.returncode in (0, 2), f"reader crashed on a fuzzed profile (status {r.returncode})"


def case_report_rerender(c):
    """`pyflow report` renders a saved profile again; its JSON equals the one written at run time."""
    saved = os.path.join(c.tmp, "again.pflow")
    out = os.path.join(c.tmp, "run.json")
    cp = run([c.pyflow, "run", "--python", c.python, "-o", saved, "--json", out, prog("live_and_temp.py")])
    assert cp.returncode == 0, cp.stderr
    assert "live_and_temp.py:5" in cp.stderr, cp.stderr
    rep = run([c.pyflow, "report", saved, "--format", "json"])
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout) == json.load(open(out)), "re-rendered JSON differs"
    txt = run([c.pyflow, "report", saved, "--width", "80"])
    assert txt.returncode == 0 and "live_and_temp.py:5" in txt.stdout, txt.stdout
    assert max(len(l) for l in txt.stdout.splitlines()) <= 80, "text report wider than --width"


def case_install_prefix(c):
    """`cmake --install` gives a working PREFIX/bin/pyflow."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(c.pyflow)))
    prefix = os.path.join(c.tmp, "prefix")
    inst = run(["cmake", "--install", build, "--prefix", prefix])
    assert inst.returncode == 0, inst.stderr
    cp = run([os.path.join(prefix, "bin", "pyflow"), "run", "--python", c.python, "-c",
              "x = bytearray(2_000_000)"])
    assert cp.returncode == 0, cp.stderr
    assert "<string>:1" in cp.stderr, cp.stderr


# ---- watch (--watch): PMU samples + watchpoints; on VMs without debug registers they are emulated ----

WATCH_DIR = os.path.join(EXAMPLES, "watch")     # one program per PieProf category
# The programs of tests/watch, the line (by its text) where the inefficiency is, and the category.
WATCH_PROGRAMS = [("api_misuse.py", "total += a[i]", "API misuse"),
                  ("slice_underuse.py", "out[i, j] = a[i, j] * b[i, j] + 1.0", "slice underutilization"),
                  ("loop_invariant.py", "norm = np.sqrt(w).sum()", "loop-invariant computation")]


def line_of(path, text):
    with open(path) as f:
        for n, l in enumerate(f, 1):
            if text in l:
                return n
    raise AssertionError(f"{text!r} not in {path}")


def watch_html(c):
    """The HTML page of the last watch_run."""
    return os.path.join(c.tmp, "w.html")


def html_section(html, title):
    """The text of an HTML page from <h2>title</h2> to the next <h2> (empty when absent)."""
    start = html.find(f"<h2>{title}</h2>")
    if start < 0:
        return ""
    end = html.find("<h2>", start + 4)
    return html[start:end if end >= 0 else len(html)]


def watch_run(c, script, args, mode="loads", period=2000000, budget=100):
    """Runs script under --watch; returns (plain stdout, the pyflow run, its JSON). Skips when watch is off.
    These cases check what watch finds, not what it costs: where watchpoints are emulated by single steps,
    they lift the CPU budget (--watch-budget 100), so that their seeds and periods arm as many watches as
    with debug registers that fire (case_watch_budget checks the budget)."""
    plain = run([c.python, script] + args, cwd=os.path.dirname(script))
    js = os.path.join(c.tmp, "w.json")
    r = run([c.pyflow, "run", "--python", c.python, f"--watch={mode}", "--period", str(period), "--no-report",
             "--watch-budget", str(budget), "--json", js, "--html", watch_html(c), script] + args,
            cwd=os.path.dirname(script), timeout=600)
    assert r.returncode == plain.returncode, f"exit {r.returncode} vs {plain.returncode}: {r.stderr[-800:]}"
    assert r.stdout == plain.stdout, f"stdout differs: {r.stdout[-300:]!r} vs {plain.stdout[-300:]!r}"
    doc = json.load(open(js))
    if doc["watch"] is None:
        raise Skip("watch is off here: " + r.stderr.strip()[-300:])
    return plain, r, doc


def native_depth(path):
    """Native frames before the first Python frame ("file:line (function)") of a hybrid call path."""
    n = 0
    for frame in path.split(" <- "):
        if re.search(r":\d+ \(", frame):
            break
        n += 1
    return n


def case_watch_categories(c):
    """Sampling is random (task-clock timing), so each assertion has a wide margin: the slow variant's line
    needs >= 3 redundant pairs and a redundant-load fraction >= 0.3 (measured 0.8-1.0 here and on an H100
    host with real debug registers); the fixed variant never runs that line. Seeds: the programs' own and
    the watch reservoir's (PYFLOW_WATCH_SEED, default 1). Where watchpoints are emulated, a run on a busy
    machine arms few watches (loop_invariant.py: 3 to 20 pairs on its line in 10 runs here, 2 once in CI
    under ctest -j2), so a slow variant that finds too few is sampled once more before the test fails."""
    if not has_numpy(c.python):
        raise Skip("numpy is not importable by " + c.python)
    paths = []
    for name, text, category in WATCH_PROGRAMS:
        script = os.path.abspath(os.path.join(WATCH_DIR, name))
        line = line_of(script, text)
        for attempt in (1, 2):
            _, _, doc = watch_run(c, script, [])
            r = row(doc, name, line)
            mine = [x for x in doc["redundancies"] if os.path.basename(x["repeat"]["file"]) == name
                    and x["repeat"]["line"] == line]
            found = r["redundant_load_bytes"] > 0 and r["redundant_load_fraction"] >= 0.3 and \
                sum(x["count"] for x in mine) >= 3
            if found or attempt == 2:
                break
            print(f"{name}: few pairs this run ({sum(x['count'] for x in mine)}), sampling again")
        assert r["redundant_load_bytes"] > 0 and r["redundant_load_fraction"] >= 0.3, \
            f"{name}:{line}: {r['redundant_load_bytes']} B, fraction {r['redundant_load_fraction']}"
        assert mine and sum(x["count"] for x in mine) >= 3, f"{name}:{line}: {mine} / {doc['watch']}"
        # the category most of the line's pairs suggest: a pair whose first access's frames could not be read
        # (a busy machine, emulated watchpoints) has no first line, and suggests another (once in CI)
        votes = {}
        for x in mine:
            votes[x["category"]] = votes.get(x["category"], 0) + x["count"]
        top = max(votes, key=votes.get)
        assert top == category, f"{name}: category {top!r} ({votes}), want {category!r}"
        assert mine[0]["repeat_path"].count(name) >= 1, mine[0]["repeat_path"]
        html = open(watch_html(c), encoding="utf-8").read()
        finding = f'<span class="bad">redundant loads</span>'
        assert finding in html_section(html, "Findings") and f"{name}:{line}</span>" in html_section(html, "Findings")
        table = html_section(html, "Redundant stores and loads")
        assert f"{name}:{line}</span>" in table and category in table and "repeat: " in table, table[:800]
        assert '<th data-k="rloads"' in html_section(html, "Lines"), "no redundant-load column"
        paths += [x[k] for x in mine for k in ("first_path", "repeat_path")]
        _, _, fixed = watch_run(c, script, ["fixed"])
        bad = [x for x in fixed["redundancies"] if os.path.basename(x["repeat"]["file"]) == name
               and x["repeat"]["line"] == line]
        assert not bad, f"fixed {name} still reports line {line}: {bad}"
        assert f"{name}:{line}</span>" not in html_section(open(watch_html(c), encoding="utf-8").read(), "Findings")
    # hybrid paths: the native frames come from the libraries' unwind tables (numpy has no frame pointers),
    # so paths show the library's own callers before the Python frames take over. Not every path has them:
    # where the interpreter loop calls numpy's function directly (LTO inlines PyObject_GetItem), the
    # accessing frame is the only native one; np.sum in loop_invariant.py goes through several.
    assert max(native_depth(p) for p in paths) >= 2, f"no path with native callers: {paths}"


def case_watch_signals(c):
    """The program's SIGTRAP and real-time signal handlers run under --watch=all as without pyflow, and an
    unhandled SIGTRAP ends both runs with the same status."""
    if not has_numpy(c.python):
        raise Skip("numpy is not importable by " + c.python)
    watch_run(c, prog("watch_signals.py"), [], mode="all")
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTRAP)"
    plain = run([c.python, "-c", code])
    r = run([c.pyflow, "run", "--python", c.python, "--watch", "--no-report", "-c", code])
    assert r.returncode == plain.returncode, (r.returncode, plain.returncode, r.stderr[-500:])


def case_watch_off(c):
    """A watch that cannot start says why once on stderr; the memory profile and the program go on."""
    code = "print(sum(range(10)))"
    js = os.path.join(c.tmp, "off.json")
    r = run([c.pyflow, "run", "--python", c.python, "--watch", "--event", "no-such-event-pyflow", "--no-report",
             "--json", js, "-c", code])
    assert r.returncode == 0 and r.stdout == "45\n", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("watch is off") == 1, r.stderr
    doc = json.load(open(js))
    assert doc["watch"] is None and doc["lines"], doc["watch"]


def breakpoints_fire(c):
    """What `pyflow info` says of this machine's debug registers: True when a watched word's writes count."""
    info = run([c.pyflow, "info"]).stdout
    probe = [l for l in info.splitlines() if l.startswith("breakpoints fire")]
    return bool(probe) and probe[0][21:25].strip() == "ok"


def case_watch_default(c):
    """Without --watch, copies are watched where debug registers fire (measured cheap there), so a copy
    written on the next line is proved needed by the write; where they do not fire (emulation is too slow
    for a default) nothing is watched and nothing is said. --no-watch turns the default off."""
    script = prog("watch_copies.py")
    cp, d = c.profile(script, extra=("--no-report",))
    assert cp.returncode == 0, cp.stderr
    assert "watch" not in cp.stderr, cp.stderr
    said = [l for l in run([c.pyflow, "info"]).stdout.splitlines() if l.startswith("default watch")]
    assert said and said[0][21:25].strip() == ("ok" if breakpoints_fire(c) else "skip"), said
    changed = [f for f in d["flows"] if f["at"]["line"] == 24 and f["at"]["file"].endswith("watch_copies.py")]
    assert changed, d["flows"]
    if breakpoints_fire(c):
        assert d["watch"] and d["watch"]["watchpoints"] == "hardware" and d["watch"]["copy_watches"] >= 3, d["watch"]
        assert changed[0]["evidence"] == "watch" and changed[0]["first_write"]["by"]["line"] == 25, changed[0]
        assert "store_bytes" not in d["lines"][0], "copy watches alone add no store/load columns"
    else:
        assert d["watch"] is None, d["watch"]
        assert changed[0]["evidence"] == "compare-at-free", changed[0]
    cp, d = c.profile(script, extra=("--no-report", "--no-watch"))
    assert cp.returncode == 0 and d["watch"] is None, (cp.stderr, d["watch"])


def case_watch_not_permitted(c):
    """perf_event_open refused with EACCES (as under perf_event_paranoid=3, or a container's seccomp profile;
    here a seccomp filter, so it holds for root too): `run --watch=all` says once on stderr why watch is off
    and what to change, the program behaves as without pyflow, memory and copies are still profiled (copies
    judged by comparing bytes at free); `info` marks the perf_event probes FAIL with the same advice."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build the seccomp helper")
    deny = os.path.join(c.tmp, "deny_perf")
    built = run([cc, "-O1", "-o", deny, prog("deny_perf.c")])
    assert built.returncode == 0, built.stderr
    script = example("bytes_copies.py")
    plain = run([c.python, script])
    js = os.path.join(c.tmp, "denied.json")
    r = run([deny, c.pyflow, "run", "--python", c.python, "--watch=all", "--no-report", "--json", js, script])
    assert r.returncode == plain.returncode and r.stdout == plain.stdout, (r.returncode, r.stderr[-800:])
    off = [line for line in r.stderr.splitlines() if "watch is off" in line]
    assert len(off) == 1 and "not permitted" in off[0] and "perf_event_paranoid=" in off[0], r.stderr
    assert "seccomp" in off[0] or "sysctl kernel.perf_event_paranoid=2" in off[0], off[0]
    doc = json.load(open(js))
    assert doc["watch"] is None and row(doc, "bytes_copies.py", 8)["copy_bytes"] > 0, doc["watch"]
    judged = [f for f in doc["flows"] if f["redundant"]]
    assert judged and all(f["evidence"] == "compare-at-free" for f in judged), judged
    info = run([deny, c.pyflow, "info"])
    for probe in ("cycles sampling", "breakpoint slots"):
        assert re.search(probe + r"\s+FAIL not permitted", info.stdout), info.stdout
    assert re.search(r"default watch\s+skip nothing", info.stdout), info.stdout
    # without --watch, the default copy watches cannot start either, and nothing is said
    r = run([deny, c.pyflow, "run", "--python", c.python, "--no-report", "--json", js, script])
    assert r.returncode == plain.returncode and r.stdout == plain.stdout and "watch" not in r.stderr, r.stderr
    assert json.load(open(js))["watch"] is None


def case_fd_numbers(c):
    """The program's own descriptors get the numbers they get without pyflow (its first open() is 3, not one
    above the profile file's), also under --watch, where every thread opens perf events, and under --native,
    where libunwind opens a pipe to test addresses."""
    script = prog("fd_numbers.py")
    plain = run([c.python, script])
    assert plain.returncode == 0, plain.stderr
    for extra in ([], ["--watch=all"], ["--native"], ["--native", "--watch=all"]):
        r = run([c.pyflow, "run", "--python", c.python, "--no-report", *extra, script])
        assert r.returncode == 0 and r.stdout == plain.stdout, (extra, r.stdout, plain.stdout, r.stderr[-500:])


def case_closed_profile_fd(c):
    """A program that closes every descriptor it did not open (a daemon, os.closerange) and puts a file of its
    own on the profile's old number: what it allocates afterwards is still recorded (the profile is opened
    again by its path), its own file is left alone, and a child it forks keeps that descriptor."""
    script = prog("closes_fds.py")
    plain = run([c.python, script, c.tmp])
    assert plain.returncode == 0 and plain.stdout == "child 0\nsize 0 kept 16\n", (plain.stdout, plain.stderr)
    cp, d = c.profile(script, c.tmp)
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.stdout, cp.stderr[-800:])
    # 3000 buffers of 1 MiB, exact, and their 3000 56-byte bytearray objects, sampled: 168 KB, a Poisson
    # count of 0.64 samples of ~256 KiB each; at most five (one run in 18000 has more; at most two, the
    # default, fails one run in 37: it failed a CI run)
    exact_plus_samples(row(d, "closes_fds.py", line_of(script, "churn = "))["alloc_bytes"], 3000 << 20,
                       "allocated after the descriptors were closed", samples=5)
    exact_plus_samples(row(d, "closes_fds.py", line_of(script, "keep = ["))["alloc_bytes"], 16 << 20,
                       "allocated last")


def case_fd_limit(c):
    """Many watched threads (perf events each) take none of the program's descriptors where the hard limit
    leaves room above the soft one: the program opens as many files as without pyflow. Where it does not
    (hard = soft), watch keeps to a budget of 64, says so once, and the program loses no more than that.
    Past 128 threads at once, later threads run unwatched (said once)."""
    import resource
    script = prog("fd_limit_threads.py")

    def limited(soft, hard):
        return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    def opened(r):
        assert r.returncode == 0, r.stderr[-800:]
        m = re.search(r"^opened (\d+) then", r.stdout, re.M)
        assert m, r.stdout
        return int(m.group(1))

    for soft, hard in ((1024, 4096), (1024, 1024)):
        plain = opened(run([c.python, script], preexec_fn=limited(soft, hard)))
        for mode in ("all", "copies"):
            r = run([c.pyflow, "run", "--python", c.python, "--no-report", f"--watch={mode}", script],
                    preexec_fn=limited(soft, hard))
            got = opened(r)
            said = [l for l in r.stderr.splitlines() if "descriptors set aside for watch" in l]
            if hard > soft:
                assert got == plain and not said, (mode, got, plain, r.stdout[-800:], r.stderr[-500:])
                # 200 threads: past the 128 the armed-word table holds (whose watches free() could not find),
                # threads run unwatched, said once
                full = [l for l in r.stderr.splitlines() if "threads are watched at once" in l]
                assert len(full) == 1, r.stderr[-800:]
            else:
                assert plain - 64 <= got <= plain, (mode, got, plain)
                assert len(said) <= 1, said


def case_watch_sampled_addresses(c):
    """An event whose samples carry the data address (page faults here; PEBS and IBS where the CPU has them)
    is read from a per-thread sample ring after a self-test: the summary says `address_source: sampled` and
    watches were armed from those addresses, with the program's output unchanged. An event this machine
    lacks (ibs_op without AMD IBS) turns watch off with one line saying why, and the run goes on."""
    script = prog("fresh_pages.py")
    plain = run([c.python, script])
    js = os.path.join(c.tmp, "sampled.json")
    r = run([c.pyflow, "run", "--python", c.python, "--watch=stores", "--event", "page-faults", "--period", "1",
             "--json", js, "--html", watch_html(c), script])
    assert r.returncode == 0 and r.stdout == plain.stdout, (r.stdout, plain.stdout, r.stderr[-800:])
    w = json.load(open(js))["watch"]
    if w is None:
        raise Skip("watch is off here: " + r.stderr.strip()[-300:])
    assert w["event"] == "page-faults" and w["address_source"] == "sampled", w
    assert w["samples"] > 0 and w["samples_armed"] > 0, w
    assert re.search(r"watch: page-faults period 1, addresses sampled, \d+ samples", r.stderr), r.stderr[-1500:]
    assert "period 1, addresses sampled:" in open(watch_html(c), encoding="utf-8").read()
    if os.path.exists("/sys/bus/event_source/devices/ibs_op"):
        return
    r = run([c.pyflow, "run", "--python", c.python, "--watch=stores", "--event", "ibs_op", "--no-report", "--json",
             js, script])
    assert r.returncode == 0 and r.stdout == plain.stdout, r.stderr[-800:]
    off = [l for l in r.stderr.splitlines() if "watch is off" in l]
    assert len(off) == 1 and "no AMD IBS" in off[0], r.stderr
    doc = json.load(open(js))
    assert doc["watch"] is None and doc["totals"]["alloc_bytes"] > 0, doc["totals"]


def case_watch_copies(c):
    """--watch=copies: a copy whose first word is written next is judged needed by the watch, with the
    writing line and which end was written (the copy, or its source); a copy nobody writes stays redundant by
    compare-at-free. The watch summary counts the copies watched and the writes caught."""
    script = prog("watch_copies.py")
    plain, r, doc = watch_run(c, script, [], mode="copies")
    flows = {f["at"]["line"]: f for f in doc["flows"] if os.path.basename(f["at"]["file"]) == "watch_copies.py"}
    code = open(script).read().splitlines()
    at = {name: code.index(text) + 1 for name, text in (
        ("kept", "kept = bytes(base)"), ("changed", "changed = bytearray(base)"), ("wrote_copy", "changed[0] = 1"),
        ("other", "other = bytes(src)"), ("wrote_src", "src[0] = 7"))}
    for name, to, by in (("changed", "copy", at["wrote_copy"]), ("other", "source", at["wrote_src"])):
        f = flows.get(at[name])
        assert f, f"no flow at line {at[name]} ({name}): {sorted(flows)}"
        assert not f["redundant"] and f["evidence"] == "watch" and f["watch_judged"] == 1, (name, f)
        fw = f["first_write"]
        assert fw["to"] == to and fw["by"]["line"] == by and fw["by"]["file"].endswith("watch_copies.py"), (name, fw)
    k = flows.get(at["kept"])
    assert k and k["redundant"] and k["evidence"] == "compare-at-free" and k["first_write"] is None, k
    w = doc["watch"]
    assert w["copy_watches"] >= 3 and w["copy_writes"] >= 2, w
    html = open(watch_html(c), encoding="utf-8").read()
    assert '<span class="good">copy proved needed</span>' in html_section(html, "Findings")
    needed = html_section(html, "Copies proved needed")
    for name in ("changed", "other"):
        assert f"watch_copies.py:{at[name]}</span>" in needed, needed[:800]
    assert f"watch_copies.py:{at['wrote_copy']}</span>" in needed and f"watch_copies.py:{at['kept']}</span>" not in needed


def case_watch_budget(c):
    """Where watchpoints are emulated by single steps (16 us a step here: a watch nobody touches steps 4000
    times), stepping keeps within --watch-budget of the CPU time (default 10%, 20% for loads alone): far
    fewer watches armed than with no cap, and the reports say so. With debug registers that fire, there
    is no budget: the JSON says hardware. Not timed: the counts differ several times over (10% vs 50%:
    stepping may take 0.11 vs 1.0 of the unwatched time), the bound itself is tests/unit/test_watch.c
    test_emu_budget."""
    if not has_numpy(c.python):
        raise Skip("numpy is not importable by " + c.python)
    script = os.path.abspath(os.path.join(WATCH_DIR, "loop_invariant.py"))
    runs = {}
    for budget, mode in ((None, "loads"), (None, "stores"), (50, "stores")):
        args = ["--watch-budget", str(budget)] if budget else []
        js = os.path.join(c.tmp, f"budget-{budget}-{mode}.json")
        r = run([c.pyflow, "run", "--python", c.python, f"--watch={mode}", "--period", "2000000", *args,
                 "--json", js, script], cwd=os.path.dirname(script), timeout=600)
        assert r.returncode == 0, r.stderr[-800:]
        w = json.load(open(js))["watch"]
        if w is None:
            raise Skip("watch is off here: " + r.stderr.strip()[-300:])
        runs[budget, mode] = (r, w)
    r, w = runs[None, "stores"]
    if w["watchpoints"] == "hardware":
        assert all(w["emulation_budget_pct"] is None for _, w in runs.values()), runs
        assert "--watch-budget" not in r.stderr, r.stderr[-800:]
        return
    assert w["watchpoints"] == "emulated" and w["emulation_budget_pct"] == 10, w
    assert "kept to 10% of CPU time (--watch-budget)" in r.stderr, r.stderr[-800:]
    assert "watchpoints: emulated by single steps, within 10% of CPU time" in r.stderr, r.stderr[-1500:]
    assert runs[None, "loads"][1]["emulation_budget_pct"] == 20, runs[None, "loads"][1]
    w50 = runs[50, "stores"][1]
    assert w50["emulation_budget_pct"] == 50 and w["samples_armed"] * 2 <= w50["samples_armed"], (w, w50)
    assert w["dropped_busy"] / w["samples"] > w50["dropped_busy"] / w50["samples"], (w, w50)
    # instructions whose watches keep giving up are skipped (watch/pf_watch_futile.c): here ~150 samples
    # filtered at 50%, against 11-26 (pyflow's and the interpreter's code) before that
    assert w50["dropped_filter"] >= 50, w50
    r = run([c.pyflow, "run", "--python", c.python, "--watch", "--watch-budget", "100", "--json", js, "-c", "pass"])
    assert r.returncode == 0 and "with no cap on their CPU time" in r.stderr, r.stderr[-800:]
    assert json.load(open(js))["watch"]["emulation_budget_pct"] is None
    for bad in ("0", "101", "x"):
        b = run([c.pyflow, "run", "--python", c.python, "--watch", "--watch-budget", bad, script])
        assert b.returncode == 2 and "--watch-budget needs a percentage from 1 to 100" in b.stderr, b.stderr


def case_gpu_per_tensor(c):
    """--gpu-per-tensor asks PyTorch for its cudaMallocAsync backend, keeping the user's other settings."""
    code = "import os; print(os.environ['PYTORCH_CUDA_ALLOC_CONF'])"
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    r = run([c.pyflow, "run", "--python", c.python, "--gpu-per-tensor", "--no-report", "-c", code], env=env)
    assert r.stdout == "expandable_segments:True,backend:cudaMallocAsync\n", (r.stdout, r.stderr)


# ---- reports on real programs (issue 30): library frames in call paths, the flow graph's default view,
# the HTML page's timeline and table ----

def unfolded_path(doc, node):
    """(kind, function, line) of each node of call_tree_unfolded from its root down to `node`."""
    nodes, path = doc["call_tree_unfolded"], []
    while node is not None:
        path.append((node["kind"], node["function"], node["line"]))
        node = nodes[node["parent"]] if node["parent"] >= 0 else None
    return path[::-1]


def case_library_paths(c):
    """A user line calls a package function that allocates two frames down: the unfolded call tree names
    the package's functions under the user's line (library: true), folded into that line; the folded
    call_tree, the default, has the user's lines alone, with the same bytes."""
    cp, d = c.profile(prog("libpaths/uses_lib.py"))
    assert cp.returncode == 0, cp.stderr
    mib = 1 << 20
    fill = [n for n in d["call_tree_unfolded"] if n["function"] == "_fill" and n["alloc_bytes"] >= 15 * mib]
    assert len(fill) == 1, [unfolded_path(d, n) for n in d["call_tree_unfolded"] if n["alloc_bytes"] >= mib]
    path = unfolded_path(d, fill[0])
    assert path == [("user", "<module>", 12), ("user", "load", 9), ("library", "make_table", 10),
                    ("library", "_fill", 6)], path
    assert fill[0]["library"] is True and fill[0]["file"].endswith("tinylib/__init__.py"), fill[0]
    exact_plus_samples(fill[0]["self_alloc_bytes"], 16 * mib, "_fill's own bytes")
    # folded: the library frames count in the user's line that called them
    load = d["call_tree"][fill[0]["folded_into"]]
    assert (load["function"], load["line"]) == ("load", 9), load
    assert load["self_alloc_bytes"] >= fill[0]["self_alloc_bytes"], (load, fill[0])
    assert not any(n["file"].endswith("tinylib/__init__.py") for n in d["call_tree"]), "a library frame in call_tree"
    # the two trees hold the same bytes (the unfolded JSON leaves out roots under 0.1% of every figure)
    for key in ("alloc_bytes", "peak_bytes", "leaked_bytes"):
        a = sum(n[key] for n in d["call_tree"] if n["parent"] < 0)
        b = sum(n[key] for n in d["call_tree_unfolded"] if n["parent"] < 0)
        assert abs(a - b) <= 2 + 0.002 * d["totals"][key], (key, a, b)
    # --native: the native function that allocated is a leaf under the library's Python frame
    if run([c.python, "-c", "import numpy"]).returncode != 0:
        return
    code = os.path.join(c.tmp, "ones.py")
    with open(code, "w") as f:
        f.write("import numpy as np\n\ndef load():\n    return np.ones((1024, 2048))\n\nkeep = load()\n")
    cp, d = c.profile(code, extra=("--native",))
    assert cp.returncode == 0, cp.stderr
    leaves = [n for n in d["call_tree_unfolded"] if n["kind"] == "native" and n["alloc_bytes"] >= 15 * mib]
    assert leaves, [unfolded_path(d, n) for n in d["call_tree_unfolded"] if n["alloc_bytes"] >= mib]
    path = unfolded_path(d, leaves[0])
    assert path[:2] == [("user", "<module>", 6), ("user", "load", 4)] and ("library", "ones", path[2][2]) == path[2], path
    assert leaves[0]["file"] == "" and leaves[0]["line"] == 0 and leaves[0]["function"], leaves[0]



def dot_edges(text):
    """(src, dst, label, attributes) of each edge of a dot file pyflow wrote."""
    return [(a, b, lab.replace("\\n", "\n"), rest)
            for a, b, lab, rest in re.findall(r'^  (\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$', text, re.M)]


def dot_nodes(text):
    """{node name: label} of a dot file pyflow wrote."""
    return {n: lab.replace("\\n", "\n") for n, lab in re.findall(r'^ +(\w+) \[(?:\w+="?[^",]*"?, )*label="((?:[^"\\]|\\.)*)"', text, re.M)}


def check_default_graph(text, doc, where):
    """What every default flow graph must be: no untracked node and no edge at an import line; every redundant
    flow between objects the program's lines made drawn red; nodes named by the kind of object."""
    import linecache
    nodes, edges = dot_nodes(text), dot_edges(text)
    assert "untracked" not in nodes and not any("untracked" in (a, b) for a, b, _, _ in edges), (where, text[:2000])
    sources = {}
    for a, b, label, _ in edges:
        at = re.search(r"\nat (\S+):(\d+)", label)
        assert at, (where, label)
        src = [l for l in doc["lines"] if os.path.basename(l["file"]) == at.group(1) and l["line"] == int(at.group(2))]
        for l in src:
            line = linecache.getline(l["file"], l["line"]).strip()
            assert not line.startswith(("import ", "from ")), (where, "an import-time flow drawn", label)
    kinds = ("numpy data", "pandas data", "scipy data", "str", "bytes", "Python objects", "native buffer", "GPU buffer")
    for n, label in nodes.items():
        if n.startswith("n"):
            kind = label.split("\n")[0]
            # a package's own data is "<package> data" (matplotlib's, when a wasteful line of it is a node)
            assert kind.startswith(kinds) or re.fullmatch(r"[\w.]+ data", kind), (where, label)
    red = sum(1 for _, _, _, rest in edges if "color=red" in rest)
    want = 0
    for fl in doc["flows"]:
        ends = (fl["src"], fl["dst"])
        if not fl["redundant"] or any(e.get("file", "[").startswith("[") or e.get("line", 0) <= 0 for e in ends):
            continue
        if any("/site-packages/" in e["file"] or "/dist-packages/" in e["file"] or "/lib/python3" in e["file"] for e in ends):
            continue
        at = fl["at"]
        if linecache.getline(at["file"], at["line"]).strip().startswith(("import ", "from ")):
            continue
        if any(linecache.getline(e["file"], e["line"]).strip().startswith(("import ", "from ")) for e in ends):
            continue
        if fl["bytes"] >= 65536:
            want += 1
    assert red == want, (where, "redundant flows drawn", red, "of", want, text[:3000])
    return nodes, edges


def case_flow_graph_view(c):
    """The default flow graph tells the data's story: the package-made object named by kind and maker, the
    redundant copy red, the needed copy black, the import-time copy and untracked ends left out with a
    note; --dot-all draws them; a report of the same profile agrees."""
    dot = os.path.join(c.tmp, "story.dot")
    cp, d = c.profile(prog("libpaths/flow_story.py"), extra=("--dot", dot))
    assert cp.returncode == 0, cp.stderr
    text = open(dot).read()
    nodes, edges = check_default_graph(text, d, "flow_story.py")
    made = [l for n, l in nodes.items() if "flow_story.py:15" in l]
    assert made and "made by tinylib._fill" in made[0], nodes
    by_at = {re.search(r"\nat flow_story\.py:(\d+)", l).group(1): rest for _, _, l, rest in edges}
    assert "color=red" in by_at.get("16", ""), by_at
    assert "17" in by_at and "color=red" not in by_at["17"], by_at
    assert "11" not in by_at, "the import-time copy is in the default graph"
    assert "  legend [" in text and "redundant copy" in text.split("  legend [", 1)[1].split("\n")[0], text
    note = nodes.get("folded", "")
    assert "at import lines" in note and "--dot-all" in note, note
    # --dot-all: today's complete graph, the import-time copy and untracked memory included
    profile = os.path.join(c.tmp, "story.pf")
    r = run([c.pyflow, "run", "--python", c.python, "--no-report", "-o", profile, prog("libpaths/flow_story.py")])
    assert r.returncode == 0, r.stderr
    full = run([c.pyflow, "report", "--format", "dot", "--dot-all", profile]).stdout
    ats = re.findall(r"\\nat flow_story\.py:(\d+)", full)
    assert "11" in ats and "16" in ats, full
    same = json.loads(run([c.pyflow, "report", "--format", "json", profile]).stdout)
    half = [f for f in same["flows"] if [f["src"]["file"], f["dst"]["file"]].count("[untracked]") == 1
            and f["bytes"] >= 65536]
    assert ("untracked [" in full) == bool(half), (half, full)
    # the unfolded call path names the library functions on the way
    assert any(n["function"] == "make_table" and n["library"] for n in d["call_tree_unfolded"])


def case_flow_graph_real(c):
    """Real programs nobody here wrote (scikit-learn's digits linkage example from python-sklearn-doc, a
    pandas workload): the default graph has no import-time flow and no untracked node, names object kinds
    and keeps every redundant flow (skipped where the packages are not installed)."""
    progs = []
    sk = "/usr/share/doc/python-sklearn-doc/examples/cluster/plot_digits_linkage.py"
    if os.path.exists(sk) and run([c.python, "-c", "import sklearn, matplotlib"]).returncode == 0:
        progs.append(sk)
    if run([c.python, "-c", "import pandas"]).returncode == 0:
        progs.append(os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench", "real", "pandas_workload.py"))
    if not progs:
        raise Skip("neither scikit-learn (with python-sklearn-doc) nor pandas is installed")
    for p in progs:
        dot = os.path.join(c.tmp, os.path.basename(p) + ".dot")
        cp, d = c.profile(p, extra=("--dot", dot), env={"MPLBACKEND": "Agg"})
        assert cp.returncode == 0, cp.stderr[-2000:]
        nodes, edges = check_default_graph(open(dot).read(), d, p)
        assert edges, (p, "no flow drawn")
        assert any("\nmade by " in l for l in nodes.values()), (p, "no node names the library function that made it")
        assert any("\nby " in l for _, _, l, _ in edges), (p, "no edge names the function that copied")


def case_html_report_layout(c):
    """The HTML page in headless Chromium at 1280 px: the timeline has time and byte tick labels and the
    peak; the page never scrolls sideways (a long source line is cut, with a tooltip); the flame graph
    unfolds to library frames; clicking a flow-graph node (#flownode=) shows its line and call path."""
    browser = chromium()
    if not browser:
        raise Skip("no Chromium here")
    page = os.path.join(c.tmp, "story.html")
    long_line = os.path.join(c.tmp, "long_line.py")
    with open(long_line, "w") as f:
        f.write("import runpy, os, sys\nsys.argv = [%r]\n" % prog("libpaths/flow_story.py"))
        f.write("wide = [bytearray(1 << 20) for _ in range(4)] + [0] * 1 + [" + " + ".join(["1"] * 120) + "]\n")
        f.write("runpy.run_path(%r, run_name='__main__')\n" % prog("libpaths/flow_story.py"))
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "--html", page, long_line])
    assert cp.returncode == 0, cp.stderr
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,900",
             "--user-data-dir=" + os.path.join(c.tmp, "chrome")]
    dom = run([browser, *flags, "--dump-dom", "file://" + page], timeout=120).stdout
    body = re.search(r'<body[^>]*data-scroll-width="(\d+)"[^>]*data-client-width="(\d+)"', dom)
    assert body and int(body.group(1)) <= int(body.group(2)) <= 1280, ("the page scrolls sideways", body and body.groups())
    tl = dom.split('<svg id="timeline"')[1].split("</svg>")[0]
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', tl)
    assert sum(t.endswith(" s") or t.endswith(" ms") for t in ticks) >= 3, ticks
    assert sum(t.endswith("iB") or t.endswith(" B") for t in ticks) >= 3, ticks
    assert any(t.startswith("peak ") for t in ticks) and 'class="peak"' in tl, ticks
    src = re.search(r'<td class="src" title="([^"]*1 \+ 1 \+ 1[^"]*)"', dom)
    assert src, "the long source line has no tooltip"
    # the flame graph: the user's lines by default, library frames behind the box
    folded = dom.split('<svg id="flame"')[1].split("</svg>")[0]
    assert "library make_table" not in folded
    dom = run([browser, *flags, "--dump-dom", "file://" + page + "#library"], timeout=120).stdout
    unfolded = dom.split('<svg id="flame"')[1].split("</svg>")[0]
    assert 'data-unfolded="1"' in unfolded and "library _fill" in unfolded, unfolded[:2000]
    if not shutil.which("dot"):
        raise Skip("no Graphviz: the flow graph's clicks were not checked")
    html = open(page, encoding="utf-8").read()
    made = re.search(r'"(flow_n\d+)":\["flow_story\.py:15"', html)
    assert made, "no flow-graph node for the package-made object"
    dom = run([browser, *flags, "--dump-dom", "file://" + page + "#flownode=" + made.group(1)], timeout=120).stdout
    info = dom.split('id="flow-info"')[1].split("</ol>")[0]
    assert 'data-shown="%s"' % made.group(1) in info and "flow_story.py:15" in info, info
    assert '<li class="lib">tinylib._fill:6</li>' in info and '<li class="user">main flow_story.py:15</li>' in info, info
    shot = os.path.join(c.tmp, "layout.png")
    run([browser, *flags, "--screenshot=" + shot, "file://" + page], timeout=120)
    assert os.path.exists(shot) and os.path.getsize(shot) > 10_000


# ---- safety: venvs, output files, signals and job control, FIFOs (issue 23; docs/safety.md) ----

def make_venv(c, where):
    """A venv of c.python with a module m in it (symlinked, as `python -m venv` makes it). Skips where the
    interpreter has no venv module."""
    r = run([c.python, "-m", "venv", "--without-pip", where])
    if r.returncode != 0:
        raise Skip(f"{c.python} cannot make a venv: {r.stderr.strip()[-200:]}")
    vpy = os.path.join(where, "bin", "python")
    site = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    with open(os.path.join(site, "venvmod.py"), "w") as f:
        f.write("print('venvmod ok')\n")
    return vpy


def case_venvs(c):
    """A venv runs as itself, named with --python (relative or not), named before the script, activated (its
    bin first on PATH), and the base interpreter named afterwards still runs as itself (the probe cache
    keys on the path as named and the venv's pyvenv.cfg, not on the binary both resolve to)."""
    home = os.path.join(c.tmp, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if k not in ("PYFLOW_PYTHON", "XDG_CACHE_HOME", "VIRTUAL_ENV")}
    env["HOME"] = home
    venv = os.path.join(c.tmp, "venv")
    vpy = make_venv(c, venv)
    code = "import venvmod, sys; print(sys.prefix)"
    want = f"venvmod ok\n{venv}\n"
    base_prefix = run([c.python, "-c", "import sys; print(sys.prefix)"]).stdout
    for attempt in range(2):    # the second run of each reads the probe cache
        for cmd in (["--python", vpy, "-c", code], ["--python", "venv/bin/python", "-c", code], [vpy, "-c", code]):
            r = run([c.pyflow, "run", "--no-report", *cmd], cwd=c.tmp, env=env)
            assert r.returncode == 0 and r.stdout == want, (cmd, attempt, r.stdout, r.stderr[-600:])
        active = dict(env, PATH=os.path.join(venv, "bin") + ":" + env.get("PATH", ""), VIRTUAL_ENV=venv)
        r = run([c.pyflow, "run", "--no-report", "-c", code], env=active)
        assert r.returncode == 0 and r.stdout == want, ("activated", attempt, r.stdout, r.stderr[-600:])
        r = run([c.pyflow, "run", "--no-report", "--python", c.python, "-c", "import sys; print(sys.prefix)"],
                env=env)
        assert r.returncode == 0 and r.stdout == base_prefix, ("base after venv", r.stdout, base_prefix)


def case_interpreter_cache(c):
    """The probe cache is private and holds only versions: a cached line naming a program is never run, a
    cache others can write (or another user owns) is ignored, and pyflow makes it 0700/0600."""
    home = os.path.join(c.tmp, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items() if k not in ("PYFLOW_PYTHON", "XDG_CACHE_HOME")}
    env["HOME"] = home
    cmd = [c.pyflow, "run", "--no-report", "--python", c.python, "-c", "import sys; print(sys.version_info[1])"]
    minor = run([c.python, "-c", "import sys; print(sys.version_info[1])"]).stdout
    r = run(cmd, env=env)
    assert r.returncode == 0 and r.stdout == minor, (r.stdout, r.stderr[-400:])
    cdir = os.path.join(home, ".cache", "pyflow")
    cfile = os.path.join(cdir, "interpreters")
    assert os.stat(cdir).st_mode & 0o777 == 0o700, oct(os.stat(cdir).st_mode)
    assert os.stat(cfile).st_mode & 0o777 == 0o600, oct(os.stat(cfile).st_mode)
    with open(cfile) as f:
        lines = f.read().splitlines()
    assert lines, "nothing cached"
    marker = os.path.join(c.tmp, "evil-ran")
    evil = os.path.join(c.tmp, "evil")
    with open(evil, "w") as f:
        f.write(f"#!/bin/sh\ntouch {marker}\nexec {c.python} \"$@\"\n")
    os.chmod(evil, 0o755)
    keys = [ln.split(" ")[0] for ln in lines]

    def write_cache(text, mode):
        with open(cfile, "w") as f:
            f.write(text)
        os.chmod(cfile, mode)
    # a line naming a program to run (the cache once held the executable): never executed
    write_cache("".join(f"{k} 3 {minor.strip()} {evil}\n" for k in keys), 0o600)
    r = run(cmd, env=env)
    assert r.returncode == 0 and r.stdout == minor, (r.stdout, r.stderr[-400:])
    assert not os.path.exists(marker), "pyflow ran a program named by its cache"
    # a cache anyone may write, or one in a directory anyone may write: ignored (its 3.7 would be refused)
    for fmode, dmode in ((0o666, 0o700), (0o600, 0o777)):
        write_cache("".join(f"{k} 3 7\n" for k in keys), fmode)
        os.chmod(cdir, dmode)
        r = run(cmd, env=env)
        os.chmod(cdir, 0o700)
        assert r.returncode == 0 and r.stdout == minor, (oct(fmode), oct(dmode), r.stdout, r.stderr[-400:])
    if os.geteuid() == 0:   # another user's cache (a HOME under sudo -E): ignored
        write_cache("".join(f"{k} 3 7\n" for k in keys), 0o600)
        os.chown(cfile, 65534, 65534)
        r = run(cmd, env=env)
        assert r.returncode == 0 and r.stdout == minor, ("foreign cache", r.stdout, r.stderr[-400:])


def case_output_files(c):
    """-o, --json, --html and --dot never delete, truncate or write through what they did not create."""
    d = os.path.join(c.tmp, "out")
    os.makedirs(d)
    script = os.path.join(d, "s.py")
    with open(script, "w") as f:
        f.write("import os\nx = bytearray(2_000_000)\nif os.fork() == 0:\n    y = bytearray(3_000_000)\n"
                "    os._exit(0)\nos.wait()\nprint('ran')\n")

    def pyflow(*args):
        return run([c.pyflow, "run", "--python", c.python, "--no-report", *args], cwd=d)

    def content(name):
        with open(os.path.join(d, name)) as f:
            return f.read()
    # files beside the -o name that look like its children: untouched (an earlier run's, or not profiles)
    for name in ("app.log.1", "app.log.2", "p.pflow.12345"):
        with open(os.path.join(d, name), "w") as f:
            f.write(f"keep {name}\n")
    r = pyflow("-o", "app.log", "s.py")
    assert r.returncode == 0 and r.stdout == "ran\n", r.stderr[-600:]
    for name in ("app.log.1", "app.log.2"):
        assert content(name) == f"keep {name}\n", f"{name} changed or removed"
    r = pyflow("-o", "p.pflow", "s.py")
    r = pyflow("-o", "p.pflow", "s.py")
    assert r.returncode == 0 and "replaced" in r.stderr, r.stderr[-600:]
    assert content("p.pflow.12345") == "keep p.pflow.12345\n", "a file named like a child profile was removed"
    rep = run([c.pyflow, "report", os.path.join(d, "p.pflow"), "--format", "json"])
    assert rep.returncode == 0 and len(json.loads(rep.stdout)["processes"]) == 2, \
        "the report merged another run's child profiles"
    # the program's script, and a file that is not a profile: refused, intact
    for target in ("s.py", "notes.txt"):
        if target == "notes.txt":
            with open(os.path.join(d, target), "w") as f:
                f.write("my notes\n")
        before = content(target)
        r = pyflow("-o", target, "s.py")
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, (target, r.stderr)
        assert content(target) == before, f"-o {target} changed it"
    r = pyflow("--json", "s.py", "s.py")
    assert r.returncode == 2 and "import os" in content("s.py"), ("--json overwrote the script", r.stderr)
    # a symbolic link: refused with one line, its target untouched
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("victim\n")
    for opt in ("-o", "--json", "--html", "--dot"):
        link = os.path.join(d, "link" + opt.strip("-"))
        os.symlink(victim, link)
        r = pyflow(opt, link, "s.py")
        assert r.returncode == 2 and "symbolic link" in r.stderr and len(r.stderr.splitlines()) == 1, (opt, r.stderr)
        assert content("victim") == "victim\n", f"{opt} wrote through a link"
    # a link swapped in at the -o name while the program runs: replaced, never followed
    swap = os.path.join(d, "swap.py")
    with open(swap, "w") as f:
        f.write("import os, time\nx = bytearray(2_000_000)\ntime.sleep(0.2)\n"
                f"if os.path.exists('swapped.pflow'): os.unlink('swapped.pflow')\nos.symlink({victim!r}, 'swapped.pflow')\n")
    r = pyflow("-o", "swapped.pflow", "swap.py")
    assert content("victim") == "victim\n", "the profile was written into a link's target"
    assert r.returncode == 0, r.stderr[-600:]
    # /dev/stdout: a link the system made to pyflow's own stdout, written through
    r = pyflow("--json", "/dev/stdout", "-c", "x = 1")
    assert r.returncode == 0 and json.loads(r.stdout)["program"]["argv"] == ["-c", "x = 1"], r.stderr[-400:]
    # an existing JSON report is replaced whole
    r = pyflow("--json", "r.json", "s.py")
    r = pyflow("--json", "r.json", "s.py")
    assert r.returncode == 0 and json.loads(content("r.json"))["lines"], r.stderr[-600:]
    assert not [n for n in os.listdir(d) if n.endswith(".tmp") or ".pyflow-" in n], os.listdir(d)
    # run as root: another user's profile (and files named like its children) are neither replaced nor removed
    if os.geteuid() == 0:
        for name in ("other.pflow", "other.pflow.4242"):
            with open(os.path.join(d, name), "wb") as f:
                f.write(b"PYFLOWPF" + bytes(100))
            os.chown(os.path.join(d, name), 65534, 65534)
        r = pyflow("-o", "other.pflow", "s.py")
        assert r.returncode == 2 and "another user" in r.stderr, r.stderr[-400:]
        for name in ("other.pflow", "other.pflow.4242"):
            assert os.stat(os.path.join(d, name)).st_uid == 65534, f"{name} was replaced or removed"
    # a character device (a private /dev/null): written in place, never replaced by a file
    if os.geteuid() == 0:
        null = os.path.join(d, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        for opt in ("-o", "--json"):
            r = pyflow(opt, null, "s.py")
            assert r.returncode == 0, (opt, r.stderr[-600:])
            assert stat.S_ISCHR(os.lstat(null).st_mode), f"{opt} {null} replaced the device node"


def relay_program(c):
    """signal_relay.py under a name of its own (for pkill -f)."""
    path = os.path.join(c.tmp, f"relay_{os.getpid()}.py")
    shutil.copy(prog("signal_relay.py"), path)
    return path


def case_signals_relayed(c):
    """Signals the program handles, sent to pyflow's process group, to the program's pid, or by name with
    pkill -f: pyflow survives each, the program handles each exactly once, and pyflow ends as it did."""
    script = relay_program(c)
    p = subprocess.Popen([c.pyflow, "run", "--python", c.python, script], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    child = None
    try:
        first = p.stdout.readline().split()
        assert first and first[0] == "ready", "the program did not start"
        child = int(first[1])
        names = ["SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGVTALRM", "SIGPROF", "SIGXCPU", "SIGRTMIN", "SIGHUP"]
        for name in names:
            os.killpg(p.pid, getattr(signal, name))
            got = p.stdout.readline()
            assert got == f"got {name}\n", f"{name} to the group: {got!r}; pyflow {p.poll()}"
        os.kill(child, signal.SIGUSR2)
        assert p.stdout.readline() == "got SIGUSR2\n"
        if shutil.which("pkill"):
            subprocess.run(["pkill", "-USR1", "-f", os.path.basename(script)])
            assert p.stdout.readline() == "got SIGUSR1\n"
        time.sleep(0.3)
        assert p.poll() is None, f"pyflow ended by a signal the program handles: {p.returncode}"
        os.killpg(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
    counts = dict(kv.split("=") for kv in out.split("counts", 1)[1].split())
    assert counts["SIGTERM"] == "1", f"SIGTERM to the group handled {counts['SIGTERM']} times"
    assert counts["SIGHUP"] == "1" and counts["SIGUSR1"] == "2" and counts["SIGUSR2"] == "2", counts
    assert p.returncode == 0 and "relay_" in err, (p.returncode, err[-600:])


def case_job_control(c):
    """A program that stops itself (SIGSTOP, SIGTSTP) stops pyflow the same way; SIGCONT to pyflow
    continues it, and pyflow ends as it did."""
    for sig in ("SIGSTOP", "SIGTSTP"):
        p = subprocess.Popen([c.pyflow, "run", "--python", c.python, prog("signal_relay.py"), "stop", sig],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=os.setpgrp)   # a group with a parent in the session: not orphaned
        child = None
        try:
            first = p.stdout.readline().split()
            assert first and first[0] == "ready", "the program did not start"
            child = int(first[1])
            status = None
            deadline = time.time() + 20
            while status is None and time.time() < deadline:
                pid, st = os.waitpid(p.pid, os.WUNTRACED | os.WNOHANG)
                if pid:
                    status = st
                time.sleep(0.02)
            assert status is not None and os.WIFSTOPPED(status), f"{sig}: pyflow did not stop ({status})"
            assert os.WSTOPSIG(status) == getattr(signal, sig), f"{sig}: pyflow stopped by {os.WSTOPSIG(status)}"
            os.kill(p.pid, signal.SIGCONT)
            _, st = os.waitpid(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(st)
            out = p.stdout.read()
        finally:
            if p.returncode is None:
                os.kill(p.pid, signal.SIGKILL)
                os.waitpid(p.pid, 0)
                p.returncode = -9
            if child:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        assert p.returncode == 0 and out == "resumed\n", (sig, p.returncode, out)


def case_broken_pipe(c):
    """`pyflow run ... 2>&1 | head -1`: pyflow's report meets a closed pipe; the JSON is still written
    whole, no temporary directory stays, and pyflow ends with the program's status."""
    tmpdir = os.path.join(c.tmp, "t")
    os.makedirs(tmpdir)
    out = os.path.join(c.tmp, "o.json")
    code = "import time, sys; x = bytearray(2_000_000); print('first', flush=True); time.sleep(0.5); sys.exit(3)"
    sh = (f"{shlex.quote(c.pyflow)} run --python {shlex.quote(c.python)} --json {shlex.quote(out)} "
          f"-c {shlex.quote(code)} 2>&1 | head -1; echo status ${{PIPESTATUS[0]}}")
    r = run(["bash", "-c", sh], env=dict(os.environ, TMPDIR=tmpdir))
    assert r.stdout.splitlines() == ["first", "status 3"], r.stdout
    with open(out) as f:
        assert json.load(f)["lines"], "empty JSON"
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)


def case_fifo_outputs(c):
    """--json to a FIFO with a reader, and `pyflow report FIFO` from a writer: each opened once, no hang."""
    fifo = os.path.join(c.tmp, "fifo")
    os.mkfifo(fifo)
    saved = os.path.join(c.tmp, "p.pflow")
    got = {}

    def read_fifo():
        with open(fifo) as f:
            got["text"] = f.read()
    t = threading.Thread(target=read_fifo, daemon=True)
    t.start()
    r = run([c.pyflow, "run", "--python", c.python, "--no-report", "-o", saved, "--json", fifo, "-c",
             "x = bytearray(3_000_000)"], timeout=60)
    t.join(30)
    assert r.returncode == 0 and json.loads(got.get("text") or "{}").get("lines"), (r.stderr[-600:], got)

    def write_fifo():
        with open(fifo, "wb") as f, open(saved, "rb") as p:
            shutil.copyfileobj(p, f)
    t = threading.Thread(target=write_fifo, daemon=True)
    t.start()
    r = run([c.pyflow, "report", fifo, "--format", "json"], timeout=60)
    t.join(30)
    assert r.returncode == 0 and json.loads(r.stdout)["lines"], (r.returncode, r.stdout[:200], r.stderr[-600:])


def case_lost_children(c):
    """A program that removes pyflow's temporary directory still gets the report of what it and its children
    recorded, and its children's captured stderr gets no pyflow message (pyflow names them itself). Run as
    root: children that became another user are profiled; one in a chroot is named as not profiled, with why."""
    tmpdir = os.path.join(c.tmp, "t")
    os.makedirs(tmpdir)
    env = dict(os.environ, TMPDIR=tmpdir)
    out = os.path.join(c.tmp, "o.json")
    r = run([c.pyflow, "run", "--python", c.python, "--json", out, prog("lost_children.py"), "rmtmp"], env=env)
    assert r.returncode == 0 and r.stdout == "child stderr: ''\ndone\n", (r.stdout, r.stderr[-800:])
    assert "removed pyflow's directory" in r.stderr, r.stderr[-800:]
    assert re.search(r"pyflow: child process \d+ \(python[^)]*\): cannot write the profile", r.stderr), r.stderr[-800:]
    with open(out) as f:
        d = json.load(f)
    near(row(d, "lost_children.py", 15)["alloc_bytes"], 4_000_000, 0.01, "main process's bytes")
    kids = [p for p in d["processes"] if "-c" in p["argv"] and p["alloc_bytes"] >= 6_900_000]
    assert kids, f"the child profiled before the removal is lost: {d['processes']}"
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)
    if os.geteuid() != 0:
        print("note: not root: the setuid and chroot halves need root")
        return
    # nobody must reach the interpreter (pyenv's live under /root) and the runtime for the exec'd child
    def as_nobody():
        os.setgid(65534)
        os.setuid(65534)
    try:
        reachable = run([c.python, "-c", "pass"], preexec_fn=as_nobody).returncode == 0
    except OSError:
        reachable = False
    world = tempfile.mkdtemp(prefix="pyflow-it-world-", dir="/tmp")
    os.chmod(world, 0o755)
    try:
        cp, d = c.profile(prog("lost_children.py"), "setuid", "1" if reachable else "0", env={"TMPDIR": world})
        assert cp.returncode == 0 and cp.stdout == "done\n", (cp.stdout, cp.stderr[-800:])
        near(row(d, "lost_children.py", 22)["alloc_bytes"], 5_000_000, 0.01, "bytes of the child that became nobody")
        if reachable:
            kids = [p for p in d["processes"] if "-c" in p["argv"]]
            assert kids and kids[0]["alloc_bytes"] >= 5_900_000, d["processes"]
        else:
            print(f"note: {c.python} is not reachable as nobody: the exec'd child was not run")
        jail = os.path.join(world, "jail")
        os.mkdir(jail)
        cp = run([c.pyflow, "run", "--python", c.python, prog("lost_children.py"), "chroot", jail],
                 env=dict(os.environ, TMPDIR=world))
        assert cp.returncode == 0 and cp.stdout == "done\n", (cp.stdout, cp.stderr[-800:])
        assert re.search(r"child process \d+ \(python[^)]*\): a forked child is not profiled: it cannot create its "
                         r"profile \(No such file or directory\)", cp.stderr), cp.stderr[-800:]
    finally:
        shutil.rmtree(world, ignore_errors=True)


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


def case_long_argument(c):
    """An argument too long for the profile header (over 3 KiB) is kept whole in the profile's argv, with
    the arguments after it (even empty ones), in the live report and in `pyflow report` of the saved file."""
    code = "x = bytearray(2_000_000)  # " + "y" * 5000
    saved = os.path.join(c.tmp, "long.pflow")
    cp, d = c.profile("-c", code, "after", "", "last", extra=["-o", saved])
    assert cp.returncode == 0, cp.stderr[-800:]
    assert d["program"]["argv"] == ["-c", code, "after", "", "last"], [a[:40] for a in d["program"]["argv"]]
    rep = run([c.pyflow, "report", saved, "--format", "json"])
    assert rep.returncode == 0 and json.loads(rep.stdout)["program"]["argv"][1] == code, rep.stderr[-400:]


def case_format_version(c):
    """A profile of another format version (0, or newer than this pyflow reads) is refused with one line
    naming its version and the versions this pyflow reads, never read as the current one."""
    saved = os.path.join(c.tmp, "v.pflow")
    r = run([c.pyflow, "run", "--python", c.python, "--no-report", "-o", saved, "-c", "x = bytearray(2_000_000)"])
    assert r.returncode == 0, r.stderr[-400:]
    with open(saved, "rb") as f:
        data = bytearray(f.read())
    for version in (0, 4, 77):
        struct.pack_into("<I", data, 8, version)
        bad = os.path.join(c.tmp, f"v{version}.pflow")
        with open(bad, "wb") as f:
            f.write(data)
        rep = run([c.pyflow, "report", bad])
        lines = rep.stderr.splitlines()
        assert rep.returncode == 2 and rep.stdout == "" and len(lines) == 1, (version, rep.stdout[:200], rep.stderr)
        assert f"format version {version};" in lines[0] and "reads versions 1 to" in lines[0], lines[0]


def case_watch_signals_blocked(c):
    """--watch=copies where the program blocks every signal: watchpoints cannot report, and pyflow says so
    once instead of a silent "0 proved needed"; the twin that blocks nothing watches its copies, says nothing."""
    script = prog("copies_signals_blocked.py")
    said = "watch: the program blocks SIGTRAP"
    _, r, doc = watch_run(c, script, [], mode="copies")
    assert said not in r.stderr and doc["watch"]["copy_watches"] > 0, (r.stderr[-600:], doc["watch"])
    _, r, doc = watch_run(c, script, ["block"], mode="copies")
    assert r.stderr.count(said) == 1, r.stderr[-800:]


def pty_session(argv, send, wait=1.0, timeout=10):
    """Runs argv on a new terminal, types `send` after `wait` seconds; returns what the terminal showed."""
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out = b""
    try:
        time.sleep(wait)
        os.write(fd, send)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    return out.decode(errors="replace")


def case_terminal_pipeline(c):
    """On a terminal with job control: alone in the foreground, the program owns the terminal (it reads it;
    Ctrl-C reaches it once); as one command of a pipeline, the pipeline keeps the terminal, so another
    command reading it while the program runs is not stopped."""
    if not shutil.which("bash"):
        raise Skip("no bash")
    pyflow = f"{shlex.quote(c.pyflow)} run --no-report --python {shlex.quote(c.python)}"
    alone = f"{pyflow} -c 's = input(); print(\"got\", s)'; echo status=$?"
    shown = pty_session(["/bin/bash", "--norc", "-i", "-c", alone], b"hello\n")
    assert "got hello" in shown and "status=0" in shown, shown[-400:]
    piped = (f"{pyflow} -c 'import time; time.sleep(2); print(\"prog done\")' | "
             "sh -c 'read x < /dev/tty; echo other got $x; cat'; echo status=$?")
    shown = pty_session(["/bin/bash", "--norc", "-i", "-c", piped], b"abc\n")
    assert "other got abc" in shown and "prog done" in shown and "status=0" in shown, shown[-400:]


# ---- pyflow where Python users work (issue 27): exports, diff, pip, pytest, Jupyter ----

def protobuf_text(text):
    """protoc --decode's text format as nested dicts of lists: {"sample": [{"value": ["1", ...]}, ...]}."""
    root, stack = {}, []
    cur = root
    for raw in text.splitlines():
        line = raw.strip()
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        elif ":" in line:
            k, v = line.split(":", 1)
            cur.setdefault(k.strip(), []).append(v.strip().strip('"'))
    return root


def export_profile(c):
    """Profiles export_lines.py exactly; returns (profile path, its JSON, the line 6 row)."""
    profile = os.path.join(c.tmp, "p.pflow")
    cp, d = c.profile(prog("export_lines.py"), extra=("--exact", "-o", profile, "--no-report"))
    assert cp.returncode == 0, cp.stderr
    return profile, d, row(d, "export_lines.py", 6)


def case_export_csv(c):
    """--format csv: read back by Python's csv module, the rows are the JSON's lines with the same bytes."""
    import csv
    profile, d, line6 = export_profile(c)
    out = os.path.join(c.tmp, "p.csv")
    cp = run([c.pyflow, "report", profile, "--format", "csv", "-o", out])
    assert cp.returncode == 0, cp.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(d["lines"]), f"{len(rows)} CSV rows, {len(d['lines'])} JSON lines"
    r = [r for r in rows if r["file"].endswith("export_lines.py") and r["line"] == "6"]
    assert len(r) == 1, f"no single CSV row for line 6: {rows[:4]}"
    for k in ("alloc_bytes", "peak_bytes", "leaked_bytes", "python_bytes", "native_bytes"):
        assert int(r[0][k]) == line6[k], f"CSV {k} {r[0][k]} != JSON {line6[k]}"
    assert line6["alloc_bytes"] >= 16 << 20 and line6["leaked_bytes"] >= 8 << 20, line6
    assert r[0]["function"] == "make" and r[0]["user_code"] == "1", r[0]


def case_export_speedscope(c):
    """--format speedscope: valid under speedscope's published JSON schema (tests/integration/consumers/,
    from speedscope's repository), samples and weights paired, frames in range, and line 6's weights in the
    'allocated bytes' profile add up to its row (two paths: once > make, twice > make)."""
    try:
        import jsonschema
    except ImportError:
        raise Skip("python3-jsonschema is not installed (.ci/install-deps installs it)")
    profile, d, line6 = export_profile(c)
    out = os.path.join(c.tmp, "p.speedscope.json")
    cp = run([c.pyflow, "report", profile, "--format", "speedscope", "-o", out])
    assert cp.returncode == 0, cp.stderr
    with open(out) as f:
        doc = json.load(f)
    with open(os.path.join(HERE, "consumers", "speedscope-file-format-schema.json")) as f:
        jsonschema.validate(doc, json.load(f))
    frames = doc["shared"]["frames"]
    names = [p["name"] for p in doc["profiles"]]
    assert names == ["allocated bytes", "live at peak", "live at exit"], names
    for p in doc["profiles"]:
        assert len(p["samples"]) == len(p["weights"]), p["name"]
        assert all(0 <= i < len(frames) for s in p["samples"] for i in s), p["name"]
        assert p["endValue"] == sum(p["weights"]), p["name"]
    alloc = doc["profiles"][0]
    leaf6 = [(s, w) for s, w in zip(alloc["samples"], alloc["weights"])
             if frames[s[-1]]["file"].endswith("export_lines.py") and frames[s[-1]]["line"] == 6]
    assert sum(w for _, w in leaf6) == line6["alloc_bytes"], (leaf6, line6["alloc_bytes"])
    paths = {tuple(frames[i]["name"].split(" ")[0] for i in s) for s, _ in leaf6}
    assert paths == {("<module>", "once", "make"), ("<module>", "twice", "make")}, paths
    exit_w = sum(w for s, w in zip(doc["profiles"][2]["samples"], doc["profiles"][2]["weights"])
                 if frames[s[-1]]["line"] == 6 and frames[s[-1]]["file"].endswith("export_lines.py"))
    assert exit_w == line6["leaked_bytes"], (exit_w, line6["leaked_bytes"])


def case_export_pprof(c):
    """--format pprof: gunzipped and decoded by protoc with profile.proto (the published messages and field
    numbers), the three sample types are bytes, and the samples whose leaf is line 6 add up to its row."""
    import gzip
    protoc = shutil.which("protoc")
    if not protoc:
        raise Skip("protoc is not installed (protobuf-compiler; .ci/install-deps installs it)")
    profile, d, line6 = export_profile(c)
    out = os.path.join(c.tmp, "p.pb.gz")
    cp = run([c.pyflow, "report", profile, "--format", "pprof", "-o", out])
    assert cp.returncode == 0, cp.stderr
    with open(out, "rb") as f:
        raw = gzip.decompress(f.read())
    dec = subprocess.run([protoc, "--decode", "perftools.profiles.Profile", "-I", os.path.join(HERE, "consumers"),
                          "profile.proto"], input=raw, capture_output=True)
    assert dec.returncode == 0, dec.stderr.decode(errors="replace")
    p = protobuf_text(dec.stdout.decode())
    strings = [bytes(s, "latin-1").decode("unicode_escape") for s in p["string_table"]]
    assert strings[0] == "", strings[:3]
    types = [(strings[int(t["type"][0])], strings[int(t["unit"][0])]) for t in p["sample_type"]]
    assert types == [("alloc_space", "bytes"), ("peak_space", "bytes"), ("leaked_space", "bytes")], types
    funcs = {f["id"][0]: (strings[int(f["name"][0])], strings[int(f["filename"][0])]) for f in p["function"]}
    locs = {l["id"][0]: (funcs[l["line"][0]["function_id"][0]], int(l["line"][0].get("line", ["0"])[0]))
            for l in p["location"]}
    total = [0, 0, 0]
    for s in p["sample"]:
        (name, file), line = locs[s["location_id"][0]]
        assert len(s["value"]) == 3, s
        if file.endswith("export_lines.py") and line == 6:
            assert name == "make", name
            total = [a + int(v) for a, v in zip(total, s["value"])]
    assert total == [line6["alloc_bytes"], line6["peak_bytes"], line6["leaked_bytes"]], (total, line6)



def diff_runs(c):
    """Runs diff_base.py, then diff_new.py (the same file edited: one line changed, lines inserted above it),
    both as app.py in one directory, with --exact; returns the two JSON reports' paths."""
    app = os.path.join(c.tmp, "app.py")
    out = []
    for version in ("diff_base.py", "diff_new.py"):
        shutil.copy(prog(version), app)
        j = os.path.join(c.tmp, version.replace(".py", ".json"))
        cp = run([c.pyflow, "run", "--python", c.python, "--exact", "--no-report", "--json", j, app], cwd=c.tmp)
        assert cp.returncode == 0, cp.stderr
        out.append(j)
    return out


def case_diff(c):
    """`pyflow diff`: the edited line is named (at its new number, 12, with both texts) with its +2 MiB; the lines
    that only moved are matched by their text and not listed; --fail-on decides the exit status both ways;
    a run diffed with itself changes nothing and fails nothing (the twin); the HTML page names the line."""
    base, new = diff_runs(c)
    cp = run([c.pyflow, "diff", base, new, "--fail-on", "peak:+10%"])
    assert cp.returncode == 1, f"peak grew 2 MiB of ~11: --fail-on peak:+10% must fail (rc {cp.returncode})\n{cp.stdout}{cp.stderr}"
    lines = cp.stdout.split("lines (matched", 1)[1].split("functions:", 1)[0]
    m = re.search(r"\+(2\.0) MiB +\+2\.0 MiB +\+2\.0 MiB .* app\.py:12 build \[edited\]", lines)
    assert m, f"the edited line app.py:12 (11 in the base) with +2.0 MiB allocated, peak, leaked:\n{lines}"
    assert "was: b = bytearray(4 << 20)" in lines and "now: b = bytearray(6 << 20)" in lines, lines
    assert "load" not in lines and "[new]" not in lines and "[gone]" not in lines.replace("[python startup]", ""), (
        f"lines that only moved must match by text:\n{lines}")
    assert "--fail-on peak:+10%: FAILED" in cp.stdout, cp.stdout
    for conds, rc in (("peak:+30%", 0), ("leaked:+1MB", 1), ("leaked:+3MB", 0), ("allocated:+2MiB", 1),
                      ("redundant:+0,copies:+0", 0)):
        cp = run([c.pyflow, "diff", base, new, "--fail-on", conds])
        assert cp.returncode == rc, f"--fail-on {conds}: rc {cp.returncode}, expected {rc}\n{cp.stdout[-600:]}"
    cp = run([c.pyflow, "diff", new, base, "--fail-on", "peak:+0,leaked:+0"])
    assert cp.returncode == 0, f"memory shrank: nothing to fail\n{cp.stdout}"
    html = os.path.join(c.tmp, "d.html")
    cp = run([c.pyflow, "diff", base, base, "--fail-on", "peak:+0,leaked:+0,redundant:+0", "--html", html])
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "lines (matched by function and source text): 0 changed" in cp.stdout, cp.stdout
    cp = run([c.pyflow, "diff", base, new, "--format", "html", "-o", html])
    assert cp.returncode == 0, cp.stderr
    with open(html) as f:
        page = f.read()
    assert "app.py:12 build [edited]" in page and "b = bytearray(6 &lt;&lt; 20)" in page, page[:2000]
    for bad in (["--fail-on", "peak"], ["--fail-on", "peak:+ten"], ["--fail-on", "speed:+1"]):
        cp = run([c.pyflow, "diff", base, new, *bad])
        assert cp.returncode == 2 and cp.stderr.count("\n") == 1, (bad, cp.returncode, cp.stderr)
    cp = run([c.pyflow, "diff", base, prog("diff_base.py")])
    assert cp.returncode == 2 and "not a pyflow profile" in cp.stderr, cp.stderr



ROOT = os.path.dirname(os.path.dirname(HERE))


def venv_pythons(c):
    """Debian's python3 and the oldest and newest pyenv interpreters present (pyenv's 3.12 and 3.13 venvs have
    pip but no setuptools or wheel: the build backend needs neither)."""
    pyenv = sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3"),
                   key=lambda p: [int(x) for x in re.findall(r"versions/3\.(\d+)\.(\d+)", p)[0]])
    pyenv = [p for p in pyenv if re.search(r"versions/3\.(8|9|1[0-3])\.", p)]
    return ["/usr/bin/python3"] + ([pyenv[0], pyenv[-1]] if len(pyenv) > 1 else pyenv)


def make_pip_venv(c, python, name):
    venv = os.path.join(c.tmp, name)
    cp = run([python, "-m", "venv", venv])
    if cp.returncode != 0:
        raise Skip(f"{python} cannot make a venv (python3-venv): {cp.stderr.strip()[-200:]}")
    return venv


def pip_env(c):
    """pip offline, building in a CMake tree kept next to the tests' build (incremental on later runs)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(c.pyflow)))
    return {**os.environ, "PYFLOW_BUILD_DIR": os.path.join(build, "pip-build"), "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}


def case_pip_install(c):
    """`pip install .` from the checkout, offline, into a venv of Debian's python3 and of pyenv interpreters:
    `pyflow` is on the venv's PATH and profiles an example (the report names its line), `python -m pyflow`
    works and passes the program's exit status; `pip wheel .` gives a py3-none-<platform> wheel carrying the
    launcher, the runtime, the frame readers and the pytest11 entry point."""
    if not shutil.which("cmake"):
        raise Skip("cmake is not installed")
    env = pip_env(c)
    for i, python in enumerate(venv_pythons(c)):
        if not os.path.exists(python):
            continue
        venv = make_pip_venv(c, python, f"venv{i}")
        cp = run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", ROOT], env=env, timeout=900)
        assert cp.returncode == 0, f"pip install with {python}:\n{cp.stdout[-1500:]}{cp.stderr[-1500:]}"
        exe = os.path.join(venv, "bin", "pyflow")
        assert os.access(exe, os.X_OK), f"no pyflow on the venv's PATH ({exe})"
        clean = {k: v for k, v in os.environ.items() if k != "PYFLOW_PYTHON"}
        cp = run([exe, "run", os.path.join(ROOT, "examples", "leaky_cache.py")], env=clean)
        assert cp.returncode == 0, cp.stderr
        minor = run([os.path.join(venv, "bin", "python"), "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()
        assert f"Python {minor}" in cp.stderr, f"the venv's own interpreter ({minor}) runs the program:\n{cp.stderr[:400]}"
        assert re.search(r"leaky_cache\.py:\d+", cp.stderr), cp.stderr
        info = run([exe, "info"], env=clean).stdout
        assert os.path.join(venv, "lib") in info and "site-packages/pyflow/_native/lib/pyflow" in info, info
        cp = run([os.path.join(venv, "bin", "python"), "-m", "pyflow", "run", "-c", "import sys; sys.exit(3)"],
                 env=clean)
        assert cp.returncode == 3, (cp.returncode, cp.stderr)
    wheels = os.path.join(c.tmp, "wheels")
    cp = run([os.path.join(c.tmp, "venv0", "bin", "python"), "-m", "pip", "wheel", "--no-deps", ROOT, "-w", wheels],
             env=env, timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    import zipfile
    (whl,) = os.listdir(wheels)
    assert re.match(r"pyflow-[\d.]+-py3-none-linux_\w+\.whl$", whl), whl
    with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
        names = z.namelist()
        entry = z.read([n for n in names if n.endswith("entry_points.txt")][0]).decode()
        mode = z.getinfo("pyflow/_native/bin/pyflow").external_attr >> 16
    for need in ("pyflow/_native/bin/pyflow", "pyflow/_native/lib/pyflow/libpyflow.so", "pyflow/__main__.py",
                 "pyflow/pytest_plugin.py"):
        assert need in names, (need, names)
    assert any(re.match(r"pyflow/_native/lib/pyflow/pf_pyframes_3\d+\.so", n) for n in names), names
    assert mode & 0o111, f"the launcher is not executable in the wheel ({oct(mode)})"
    assert "[pytest11]" in entry and "pyflow = pyflow.pytest_plugin" in entry, entry
    assert "[console_scripts]" in entry and "pyflow = pyflow.__main__:main" in entry, entry



def case_pytest_limits(c):
    """The pytest plugin, installed with the wheel into a venv (Debian's pytest from the system): under pyflow
    (`pyflow run -m pytest` and `pytest --pyflow`) each test over its limit_memory / limit_leaks fails naming
    its line and both layers (numpy's 40 MB count as native), each twin under its limit passes; memory per
    test is in the summary and the JSON; without pyflow the limits are not checked, and it says so."""
    if run(["/usr/bin/python3", "-c", "import pytest"]).returncode != 0:
        raise Skip("Debian's python3-pytest is not installed")
    venv = os.path.join(c.tmp, "venv")
    cp = run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
    if cp.returncode != 0:
        raise Skip(f"no venv: {cp.stderr.strip()[-200:]}")
    cp = run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", ROOT], env=pip_env(c), timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    tests = os.path.join(PROGRAMS, "pytest_limits")
    src = os.path.join(tests, "test_limits.py")
    numpy = has_numpy("/usr/bin/python3")
    clean = {k: v for k, v in os.environ.items() if k != "PYFLOW_PYTHON"}
    py = os.path.join(venv, "bin", "python")
    profile = os.path.join(c.tmp, "tests.pflow")
    for how in (["pyflow", "run", "--no-report", "-o", profile, "-m", "pytest"], ["python", "-m", "pytest", "--pyflow"]):
        js = os.path.join(c.tmp, "tests.json")
        cmd = [os.path.join(venv, "bin", how[0]), *how[1:], "-p", "no:cacheprovider", "--pyflow-json", js, "-q", src]
        cp = run(cmd, env=clean, cwd=tests)
        out = cp.stdout + cp.stderr
        assert cp.returncode == 1, f"{how}: rc {cp.returncode}\n{out[-3000:]}"
        failed = set(re.findall(r"FAILED test_limits\.py::(\w+)", out))
        expect = {"test_peak_over", "test_leaks_over"} | ({"test_numpy_peak_over"} if numpy else set())
        assert failed == expect, f"{how}: failed {failed}, expected {expect}\n{out[-3000:]}"
        peak_line = line_of(src, "block = bytearray(32 << 20)")
        assert re.search(r"test_peak_over: 3\d\.\d MiB its peak, over @pytest\.mark\.limit_memory\(\"24\.0 MiB\"\)", out), out
        assert re.search(rf"test_limits\.py:{peak_line} test_peak_over: 3\d\.\d MiB \(python 3\d\.\d MiB, native", out), out
        leak_line = line_of(src, "kept.append(bytearray(4 << 20))")
        assert re.search(r"test_leaks_over: 4\.\d MiB left live after it, over @pytest\.mark\.limit_leaks", out), out
        assert f"test_limits.py:{leak_line} test_leaks_over: 4." in out, out
        if numpy:
            np_line = line_of(src, "a = np.ones(5_000_000)")
            assert re.search(rf"test_limits\.py:{np_line} test_numpy_peak_over: 3\d\.\d MiB \(python [^,]+, native 3\d\.\d MiB", out), out
        assert "pyflow: memory per test" in out, out
        with open(js) as f:
            doc = json.load(f)
        by = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
        assert doc["schema"] == "pyflow-pytest/1" and len(by) == (6 if numpy else 4), by.keys()
        assert by["test_peak_over"]["peak_bytes"] >= 32 << 20 and by["test_peak_over"]["failed_limit"] == "limit_memory"
        assert by["test_peak_under"]["allocated_bytes"] >= 60 << 20 and by["test_peak_under"]["peak_bytes"] < 24 << 20
        assert by["test_leaks_over"]["leaked_bytes"] >= 4 << 20 and by["test_leaks_under"]["leaked_bytes"] < 1 << 20
        if numpy:
            assert by["test_numpy_peak_over"]["allocated_native_bytes"] >= 38 << 20, by["test_numpy_peak_over"]
        if "-o" in how:     # the profile's own report lists the tests too
            rep = run([os.path.join(venv, "bin", "pyflow"), "report", profile, "--format", "json"])
            tests_doc = {t["nodeid"].split("::")[-1]: t for t in json.loads(rep.stdout)["tests"]}
            assert set(tests_doc) == set(by), (tests_doc.keys(), by.keys())
            for name, t in tests_doc.items():
                assert t["peak_bytes"] == by[name]["peak_bytes"], (name, t, by[name])
                assert t["failed_limit"] == by[name]["failed_limit"], (name, t, by[name])
            text = run([os.path.join(venv, "bin", "pyflow"), "report", profile]).stdout
            assert re.search(r"tests \(pytest, \d measured, largest peak first\)", text), text[-1500:]
            assert re.search(r"test_limits\.py::test_peak_over  over limit_memory", text), text[-1500:]
    cp = run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", src], env=clean, cwd=tests)
    assert cp.returncode == 0, f"without pyflow the limits are not checked:\n{cp.stdout[-2000:]}"
    assert "memory limits not checked: not running under pyflow" in cp.stdout, cp.stdout[-1500:]



def notebook_rows(html_text):
    """%pyflow's table as {source text: [allocated, python, native, at its peak, left live]} (bytes, rounded)."""
    units = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
    rows = {}
    for tr in re.findall(r"<tr><td>.*?</tr>", html_text, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        nums = [float(v.split()[0]) * units[v.split()[1]] for v in cells[1:6]]
        import html
        rows[html.unescape(re.sub(r"</?code>", "", cells[6]))] = nums
    return rows


def case_jupyter_notebook(c):
    """The kernel "Python 3 (pyflow)" (python -m pyflow.jupyter install) runs a notebook headless under nbclient:
    %pyflow after a cell that leaks 8 MiB names its line with the bytes it left live; after its twin, which frees
    what it allocates, the same table says nothing was left; %pyflow session still has the leaking line."""
    py = "/usr/bin/python3"
    if run([py, "-c", "import ipykernel, nbclient, nbformat"]).returncode != 0:
        raise Skip("python3-ipykernel / python3-nbclient are not installed")
    venv = os.path.join(c.tmp, "venv")
    cp = run([py, "-m", "venv", "--system-site-packages", venv])
    if cp.returncode != 0:
        raise Skip(f"no venv: {cp.stderr.strip()[-200:]}")
    vpy = os.path.join(venv, "bin", "python")
    cp = run([vpy, "-m", "pip", "install", ROOT], env=pip_env(c), timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    jp = os.path.join(c.tmp, "jupyter")
    cp = run([vpy, "-m", "pyflow.jupyter", "install", "--prefix", jp])
    assert cp.returncode == 0 and "Python 3 (pyflow)" in cp.stdout, cp.stdout + cp.stderr
    nb = os.path.join(c.tmp, "leak.ipynb")
    cp = run([vpy, os.path.join(PROGRAMS, "notebook", "make_notebook.py"), nb])
    assert cp.returncode == 0, cp.stderr
    script = ("import json, sys, nbformat, nbclient\n"
              "nb = nbformat.read(sys.argv[1], as_version=4)\n"
              "nbclient.NotebookClient(nb, kernel_name='pyflow', timeout=120).execute()\n"
              "print(json.dumps([[o.get('data', {}).get('text/html') or o.get('text') or '' for o in c.outputs]"
              " for c in nb.cells]))\n")
    env = {**os.environ, "JUPYTER_PATH": os.path.join(jp, "share", "jupyter"), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("PYFLOW_PYTHON", None)
    cp = run([vpy, "-c", script, nb], env=env, timeout=300)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-3000:]
    outs = json.loads(cp.stdout.strip().splitlines()[-1])
    leak, twin, session = outs[2][0], outs[4][0], outs[5][0]
    assert "pyflow: cell [2]" in leak, leak
    rows = notebook_rows(leak)
    key = "kept.append(bytearray(1 << 20))   # leaks 8 MiB"
    assert key in rows, f"the leaking line is not named: {leak}"
    near(rows[key][4], 8 << 20, 0.02, "bytes the leaking cell left live (1 MiB blocks: exact)")
    rows = notebook_rows(twin)
    key2 = "temp = bytearray(1 << 20)   # freed: nothing left"
    assert "pyflow: cell [4]" in twin and key2 in rows, twin
    assert key not in rows, f"a cell's report has only what that cell allocated: {twin}"
    assert rows[key2][0] >= 8 << 20 and rows[key2][4] == 0, f"the twin left nothing live: {rows[key2]}"
    assert key in notebook_rows(session), session


# ---- distributed jobs: torchrun ranks, Dask workers, pyflow env + pyflow report DIR (docs/distributed.md) ----

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


def dask_profile(c, *args):
    out = os.path.join(c.tmp, "dask.json")
    cp = run([c.pyflow, "run", "--json", out, c.python, os.path.join(DIST, "dask_job.py"), *args], timeout=900)
    assert os.path.exists(out), cp.stderr[-3000:]
    return cp, json.load(open(out))


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


def shift_clock(path, by_ns):
    """Moves a profile's CLOCK_MONOTONIC start by by_ns, as if its host had booted at another time (the
    header's start_mono_ns, after magic, four u32 and pid/ppid: offset 32)."""
    with open(path, "r+b") as f:
        f.seek(32)
        mono, = struct.unpack("<Q", f.read(8))
        f.seek(32)
        f.write(struct.pack("<Q", mono + by_ns))


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


# ---- waste: untouched memory and recomputed values (issue 26; docs/waste.md) ----

def case_waste_untouched(c):
    """Pages never touched, from mincore at free and at exit: bytes(n) (calloc'd) never used is >= 90%
    untouched, a zero-filled bytearray(n) is touched in full; with numpy, np.zeros(n) never used >= 90%,
    np.empty(n) written in full 0%, written one tenth ~90%. The resident peak is the peak less what was
    never touched; PYFLOW_NO_WASTE=1 measures nothing."""
    numpy = ("numpy",) if has_numpy(c.python) else ()
    cp, d = c.profile(prog("waste_untouched.py"), *numpy)
    assert cp.returncode == 0, cp.stderr
    never, filled = row(d, "waste_untouched.py", 6), row(d, "waste_untouched.py", 7)
    assert never["untouched_bytes"] >= 0.9 * 80_000_000, never
    assert filled["untouched_bytes"] < 0.01 * 80_000_000, filled
    expect_untouched = 80_000_000
    if numpy:
        zeros, full, tenth = (row(d, "waste_untouched.py", n) for n in (10, 11, 12))
        assert zeros["untouched_bytes"] >= 0.9 * 80_000_000, zeros
        assert full["untouched_bytes"] < 0.01 * 80_000_000, full
        near(tenth["untouched_bytes"], 0.9 * 80_000_000, 0.03, "np.empty written one tenth: untouched")
        expect_untouched += 80_000_000 + 72_000_000
    found = {(os.path.basename(u["file"]), u["line"]) for u in d["untouched"] if u["finding"]}
    assert ("waste_untouched.py", 6) in found and ("waste_untouched.py", 7) not in found, d["untouched"]
    assert not numpy or {("waste_untouched.py", 10), ("waste_untouched.py", 12)} <= found, found
    assert not numpy or ("waste_untouched.py", 11) not in found, found
    # all of them are live at the peak: the resident peak lacks about their untouched bytes
    t = d["totals"]
    near(t["peak_bytes"] - t["resident_peak_bytes"], expect_untouched, 0.05, "untouched bytes at the peak")
    assert never["resident_peak_bytes"] < 0.1 * never["peak_bytes"], never
    assert "untouched memory" in cp.stderr and "waste_untouched.py:6  allocated 76.3 MiB, used 0%" in cp.stderr, cp.stderr
    assert "resident at the peak" in cp.stderr, cp.stderr
    cp, d = c.profile(prog("waste_untouched.py"), *numpy, env={"PYFLOW_NO_WASTE": "1"})
    assert cp.returncode == 0 and not d["waste"]["measured"] and not d["untouched"], d["waste"]


def case_waste_recompute(c):
    """A loop that builds the same str (and, with numpy, the same array) every iteration is flagged with
    its count; the same loops making a new value each time, a list of new floats (whose item array holds
    the same pointers each time: the allocator hands the freed addresses back), and np.zeros never written,
    are not."""
    numpy = ("numpy",) if has_numpy(c.python) else ()
    dot = os.path.join(c.tmp, "waste.dot")
    page = os.path.join(c.tmp, "waste.html")
    cp, d = c.profile(prog("waste_recompute.py"), *numpy, extra=("--dot", dot, "--dot-min-bytes", "1", "--html", page))
    assert cp.returncode == 0, cp.stderr
    assert "recomputed value</span> loop-invariant computation at <code>waste_recompute.py:9</code>" in \
        open(page, encoding="utf-8").read()
    found = {(os.path.basename(r["file"]), r["line"]): r for r in d["recomputations"]}
    same = found.get(("waste_recompute.py", 9))
    assert same, d["recomputations"]
    assert 360 < same["object_size"] < 500 and same["category"] == "loop-invariant computation", same
    near(same["count"], 100_000, 0.35, "recomputed str count (sampled)")
    assert [(v["function"], v["line"]) for v in same["via"]] == [("<module>", 28)], same["via"]
    for line in (10, 11):
        assert row(d, "waste_recompute.py", line)["recomputed_bytes"] == 0, f"line {line}: new values flagged"
    assert re.search(r"recomputed the same \d+ B value \d+ times", cp.stderr), cp.stderr
    if numpy:
        inv = found.get(("waste_recompute.py", 21))
        assert inv and inv["object_size"] == 32768, d["recomputations"]
        near(inv["count"], 30_000, 0.25, "recomputed array count")
        assert inv["category"] == "repeated native call with the same arguments", inv
        for line in (22, 23):
            assert row(d, "waste_recompute.py", line)["recomputed_bytes"] == 0, f"line {line} flagged"
        assert "recomputed" in open(dot, encoding="utf-8").read(), "no recomputed node in the dot graph"
    cp, d = c.profile(prog("waste_recompute.py"), *numpy, env={"PYFLOW_NO_WASTE": "1"})
    assert cp.returncode == 0 and not d["recomputations"], d["recomputations"]



def pages_run(c, script, args, mode="loads"):
    """Runs script under --watch=mode with page-protection watchpoints forced (this machine's debug registers
    may fire); returns (the run, its JSON). Output and exit status must be those of the plain run."""
    plain = run([c.python, script] + args, cwd=os.path.dirname(script))
    js = os.path.join(c.tmp, "p.json")
    r = run([c.pyflow, "run", "--python", c.python, f"--watch={mode}", "--no-report", "--json", js, script] + args,
            cwd=os.path.dirname(script), env={**os.environ, "PYFLOW_WATCH_MECH": "pages"}, timeout=600)
    assert r.returncode == plain.returncode, f"exit {r.returncode} vs {plain.returncode}: {r.stderr[-800:]}"
    assert r.stdout == plain.stdout, f"stdout differs: {r.stdout[-300:]!r} vs {plain.stdout[-300:]!r}"
    doc = json.load(open(js))
    if doc["watch"] is None:
        raise Skip("watch is off here: " + r.stderr.strip()[-300:])
    assert "emulating watchpoints by page protections" in r.stderr, r.stderr[-500:]
    return r, doc


def case_watch_pages(c):
    """Page-protection watchpoints (the default where debug registers do not fire; forced here with
    PYFLOW_WATCH_MECH=pages), at the default CPU budget: the PieProf programs of examples/watch and a
    2-second loop-invariant program show their line with >= 3 redundant-load pairs (measured 5-13, 5-13 and
    7-95, and 50-65 on the 2-second one; one more run when a busy machine finds fewer), their fixed variants
    none. A crash under faulthandler prints and exits as without pyflow, and a buffer whose stores are
    watched, filled by readinto() each iteration while another thread runs, reads in full (the read hooks end
    the watches on its pages first: without them readinto returned short counts)."""
    if not has_numpy(c.python):
        raise Skip("numpy is not importable by " + c.python)
    programs = [(os.path.join(WATCH_DIR, name), text) for name, text, _ in WATCH_PROGRAMS]
    programs.append((prog("watch_invariant.py"), "r = np.sqrt(w) * 2.0"))
    for script, text in programs:
        script = os.path.abspath(script)
        name, line = os.path.basename(script), line_of(script, text)
        for attempt in (1, 2):
            _, doc = pages_run(c, script, [])
            pairs = sum(x["count"] for x in doc["redundancies"] if os.path.basename(x["repeat"]["file"]) == name
                        and x["repeat"]["line"] == line and x["kind"] == "load")
            if pairs >= 3:
                break
            print(f"{name}: {pairs} pairs this run, sampling again")
        assert pairs >= 3, f"{name}:{line}: {pairs} pairs / {doc['watch']}"
        _, fixed = pages_run(c, script, ["fixed"])
        bad = [x for x in fixed["redundancies"] if os.path.basename(x["repeat"]["file"]) == name
               and x["repeat"]["line"] == line]
        assert not bad, f"fixed {name} still reports line {line}: {bad}"
    crash = prog("watch_pages_segv.py")
    plain = run([c.python, crash])
    r = run([c.pyflow, "run", "--python", c.python, "--watch=loads", "--no-report", crash],
            env={**os.environ, "PYFLOW_WATCH_MECH": "pages"})
    assert r.returncode == plain.returncode and r.stdout == plain.stdout, (r.returncode, plain.returncode, r.stderr[-600:])
    assert "Fatal Python error: Segmentation fault" in r.stderr and "watch_pages_segv.py" in r.stderr, r.stderr[-600:]
    for mode in ("stores", "loads"):
        pages_run(c, prog("watch_pages_io.py"), [], mode=mode)


# ---- verdicts a user can trust (issue 25; children over time, issue 23 item 3) ----

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


def marked_lines(program, marker):
    """The line numbers of `program` whose comment carries `marker` (LEAK: must be reported in mode leak;
    KEPT: holds memory at exit in mode twin and must not be reported)."""
    with open(prog(program)) as f:
        return {i + 1 for i, text in enumerate(f) if "#" in text and marker in text.split("#", 1)[1].split()}


def check_leak_shape(c, program, flavors=("python", "numpy"), modes=("leak", "twin")):
    """The leak-shape program in mode leak has exactly one probable leak, a LEAK line, with the same verdict
    sampled and --exact; in mode twin (same shape, bounded or made once) none in the program at all."""
    ran = 0
    for flavor in flavors:
        if flavor == "numpy" and not has_numpy(c.python):
            continue
        for mode in modes:
            verdicts = []
            for extra in ((), ("--exact",)):
                cp, d = c.profile(prog(program), mode, flavor, extra=extra)
                assert cp.returncode == 0, cp.stderr[-1500:]
                found = {l["line"]: l for l in d["leaks"] if os.path.basename(l["file"]) == program}
                what = f"{program} {mode} {flavor} {' '.join(extra) or 'sampled'}"
                if mode == "leak":
                    assert len(found) == 1 and set(found) <= marked_lines(program, "LEAK"), (what, d["leaks"])
                    leak = next(iter(found.values()))
                    assert leak["likelihood"] >= 0.99 and leak["survivors"] >= 8 and leak["spread"] >= 0.25, leak
                    assert 0 < leak["rate_bytes_s"] and 0 <= leak["p_value"] <= 0.01, leak
                    assert "probable leaks" in cp.stderr, cp.stderr[-1500:]
                else:
                    # the twin does hold memory at exit (with --exact: sampled, 100 entries of 12 KB are
                    # about 4 samples, none at all about one run in a hundred)
                    kept = [r for r in d["lines"] if os.path.basename(r["file"]) == program and
                            r["line"] in marked_lines(program, "KEPT") and r["leaked_bytes"] >= 1_000_000]
                    assert kept or not extra or program in ("leak_slow.py", "leak_library.py", "leak_requests.py"), (
                        what, "nothing kept")
                    assert not found, (what, d["leaks"])
                verdicts.append(sorted(found))
            assert verdicts[0] == verdicts[1], (program, mode, flavor, verdicts)
            ran += 1
    return ran


def case_leak_temporaries(c):
    """hist.append(np.exp(np.random.rand(4000) * 2)) in a 3000-iteration loop (and bytes(8000)[:4000]): the
    temporaries on the line do not hide what it keeps; data built once and then used (a list of tuples, a
    list of arrays) is not a leak."""
    check_leak_shape(c, "leak_temporaries.py")


def case_leak_requests(c):
    """A handler that keeps a record per request (no temporary on that line) leaks; a deque(maxlen=200)
    that fills and evicts does not."""
    check_leak_shape(c, "leak_requests.py")


def case_leak_every_nth(c):
    """One call in seven keeping its result leaks; a saturated lru_cache(maxsize=100) does not."""
    check_leak_shape(c, "leak_every_nth.py")


def case_leak_slow(c):
    """A slow leak, 3% of a long loop's buffers escaping, is found; buffers held for a phase and freed at its
    end are not."""
    check_leak_shape(c, "leak_slow.py")


def case_leak_library(c):
    """Records a library (logging's QueueHandler) keeps for the user's logging call leak there; read from
    the queue, they do not."""
    check_leak_shape(c, "leak_library.py", flavors=("python",))


def case_leak_caches(c):
    """re's pattern cache, small-object caches, numpy's own caches and a table freed only at shutdown are
    not leaks."""
    check_leak_shape(c, "leak_caches.py", modes=("twin",))


def case_children_over_time(c):
    """The merged report follows each process's lifetime: ten children run one after another, 50 MB each
    (subprocess and os.fork), peak at one child's 50 MB plus the parent's few (about 56 MiB), not 500, and
    nothing of theirs live at exit (each child's own row in the process table keeps its 50 MB); a program
    that holds 100 MB and execs itself: that memory ends with the image (no leak, not live at exit)."""
    mb = 1_000_000
    for how in ("subprocess", "fork"):
        for extra in ((), ("--exact",)):
            cp, d = c.profile(prog("children_serial.py"), how, extra=extra)
            assert cp.returncode == 0 and cp.stdout == "children done\n", (cp.stdout, cp.stderr[-1500:])
            t = d["totals"]
            assert 50 * mb <= t["peak_bytes"] <= 75 * mb, (how, extra, "peak", t["peak_bytes"])
            assert t["leaked_bytes"] <= 20 * mb, (how, extra, "live at exit", t["leaked_bytes"])
            kids = [p for p in d["processes"] if not p["root"] and p["alloc_bytes"] >= 40 * mb]
            assert len(kids) == 10 and all(p["leaked_bytes"] >= 45 * mb for p in kids), (how, d["processes"])
            line = min(marked_lines("children_serial.py", "CHILD"))
            assert row(d, "children_serial.py", line)["leaked_bytes"] == 0, row(d, "children_serial.py", line)
            assert not [l for l in d["leaks"] if os.path.basename(l["file"]) == "children_serial.py"], d["leaks"]
    for extra in ((), ("--exact",)):
        cp, d = c.profile(prog("exec_self.py"), "first", extra=extra)
        assert cp.returncode == 0 and cp.stdout == "second image 100\n", (cp.stdout, cp.stderr[-1500:])
        held = row(d, "exec_self.py", min(marked_lines("exec_self.py", "HELD")))
        assert held["leaked_bytes"] == 0 and held["peak_bytes"] >= 95 * mb, held
        assert d["totals"]["leaked_bytes"] <= 20 * mb and d["totals"]["peak_bytes"] >= 95 * mb, d["totals"]
        assert not d["leaks"], d["leaks"]


def case_copy_verdicts(c):
    """No redundant-copy verdict on a copy that builds a new value (concatenation, join, %-formatting,
    f-strings, bytes concatenation), on imports, or on allocations that copy nothing (np.ones), sampled or
    --exact; a copy made inside a library (np.nan_to_num, copy=True by default) names the library function
    and gets advice for the user's line (copy=False), not np.array advice the line has no call for; the
    finding says how many judged copies it rests on."""
    for flavor in ("python", "numpy"):
        if flavor == "numpy" and not has_numpy(c.python):
            continue
        for extra in ((), ("--exact",)):
            cp, d = c.profile(prog("copies_not_redundant.py"), flavor, extra=extra)
            assert cp.returncode == 0, cp.stderr[-1500:]
            bad = [f for f in d["flows"] if f["redundant"] and os.path.basename(f["at"]["file"]) == "copies_not_redundant.py"
                   and f["at"]["line"] in marked_lines("copies_not_redundant.py", "NOT")]
            assert not bad, (flavor, extra, bad)
            assert "copies_not_redundant.py:" not in cp.stderr.split("redundant copies (", 1)[-1].split("\n\n")[0] \
                or "redundant copies (" not in cp.stderr, cp.stderr[-2000:]
    if not has_numpy(c.python):
        return
    line = min(marked_lines("copies_in_library.py", "LIBRARY"))
    for extra in ((), ("--exact",)):
        cp, d = c.profile(prog("copies_in_library.py"), extra=extra)
        assert cp.returncode == 0, cp.stderr[-1500:]
        found = [f for f in flows_at(d, "copies_in_library.py", line) if f["redundant"]]
        assert len(found) == 1, flows_at(d, "copies_in_library.py", line)
        f = found[0]
        assert f["made_in"].startswith("nan_to_num (") and f["judged"] >= 10, f
        assert "copy=False" in f["fix"] and "np.array" not in f["fix"], f["fix"]
        said = cp.stderr.split("redundant copies (", 1)[1]
        assert f"copies_in_library.py:{line}" in said and "judged 12" in said, said
        assert "\n      made inside nan_to_num (" in said, said


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


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.python):
        print(f"SKIP: interpreter {a.python} is not installed here")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="pyflow-it-")
    try:
        CASES[a.case](Ctx(os.path.abspath(a.pyflow), a.python, tmp))
    except Skip as s:
        print(f"SKIP: {s}")
        return SKIP
    except AssertionError as e:
        print(f"FAIL {a.case} on {a.python}: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PASS {a.case} on {a.python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
