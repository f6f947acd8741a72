"""Integration cases: copies between objects and the redundant-copy verdict."""
import os

from .common import example, flows_at, has_numpy, marked_lines, near, once, per_version, prog, row


@per_version
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


@once
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


@per_version
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


@per_version
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
        # the line asks for the copy by name (copy.copy(a)): the advice is to drop it, not a conversion
        named = [f for f in flows_at(d, "copies_in_library.py", min(marked_lines("copies_in_library.py", "NAMED")))
                 if f["redundant"]]
        assert len(named) == 1 and named[0]["made_in"].startswith("copy ("), named
        assert named[0]["fix"].startswith("drop the .copy()"), named[0]["fix"]
