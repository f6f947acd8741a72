"""Integration cases: recomputed values and untouched memory, and their twins that must not be reported."""
import os
import re

from .common import has_numpy, near, per_version, prog, row


@per_version
def case_waste_untouched(c):
    """Pages never touched, from mincore at free and at exit: bytes(n) (calloc'd) never used is >= 90%
    untouched, a zero-filled bytearray(n) is touched in full; with numpy, np.zeros(n) never used >= 90%,
    np.empty(n) written in full 0%, written one tenth ~90%, np.zeros(n) written one tenth ~90% (the np.empty
    advice for that one, not for np.empty's). The resident peak is the peak less what was
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
        near(row(d, "waste_untouched.py", 14)["untouched_bytes"], 0.9 * 80_000_000, 0.03, "np.zeros, one tenth")
        expect_untouched += 80_000_000 + 72_000_000 + 72_000_000
        # the np.empty advice where the line zero-fills by name, not where it already calls np.empty
        fix = {u["line"]: u["fix"] for u in d["untouched"] if u["file"].endswith("waste_untouched.py")}
        assert "np.empty instead of np.zeros" in fix[14] and "np.zeros" not in fix[12], fix
    found = {(os.path.basename(u["file"]), u["line"]) for u in d["untouched"] if u["finding"]}
    assert ("waste_untouched.py", 6) in found and ("waste_untouched.py", 7) not in found, d["untouched"]
    assert all(u["made_in"] is None for u in d["untouched"] if u["file"].endswith("waste_untouched.py")
               and u["line"] in (6, 10, 12)), d["untouched"]   # bytes(n), np.zeros/empty called by the line
    assert all(not u["fix"].startswith("a library call") for u in d["untouched"]
               if u["file"].endswith("waste_untouched.py") and u["line"] in (6, 10, 12)), d["untouched"]
    assert not numpy or {("waste_untouched.py", n) for n in (10, 12, 14)} <= found, found
    assert not numpy or ("waste_untouched.py", 11) not in found, found
    # all of them are live at the peak: the resident peak lacks about their untouched bytes
    t = d["totals"]
    near(t["peak_bytes"] - t["resident_peak_bytes"], expect_untouched, 0.05, "untouched bytes at the peak")
    assert never["resident_peak_bytes"] < 0.1 * never["peak_bytes"], never
    assert "untouched memory" in cp.stderr and "waste_untouched.py:6  allocated 76.3 MiB, used 0%" in cp.stderr, cp.stderr
    assert "resident at the peak" in cp.stderr, cp.stderr
    cp, d = c.profile(prog("waste_untouched.py"), *numpy, env={"PYFLOW_NO_WASTE": "1"})
    assert cp.returncode == 0 and not d["waste"]["measured"] and not d["untouched"], d["waste"]


@per_version
def case_waste_recompute(c):
    """A loop that builds the same str (and, with numpy, the same array) every iteration is flagged with
    its count; a line making 50 values of 50 sizes again and again is one finding ("repeated values"); the same loops making a new value each time, a list of new floats (whose item array holds
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
    assert same["made_in"] is None and "outside the loop" in same["fix"], same   # the user's own code made it
    near(same["count"], 100_000, 0.35, "recomputed str count (sampled)")
    assert [(v["function"], v["line"]) for v in same["via"]] == [("<module>", 28)], same["via"]
    for line in (10, 11):
        assert row(d, "waste_recompute.py", line)["recomputed_bytes"] == 0, f"line {line}: new values flagged"
    assert re.search(r"recomputed the same \d+ B value \d+ times", cp.stderr), cp.stderr
    # values that repeat (50 strings of 50 sizes): entries per size in the JSON, one finding in the text
    cycling = [r for r in d["recomputations"] if os.path.basename(r["file"]) == "waste_recompute.py"
               and r["line"] == 34]
    assert len(cycling) > 1 and all(r["category"] == "repeated values" for r in cycling), cycling
    findings = cp.stderr.split("recomputed values (", 1)[1].split("\n\n", 1)[0]
    assert findings.count("waste_recompute.py:34") == 1, findings
    assert re.search(r"recomputed \d+ values of \d+ sizes", cp.stderr), cp.stderr
    if numpy:
        inv = found.get(("waste_recompute.py", 21))
        assert inv and inv["object_size"] == 32768, d["recomputations"]
        near(inv["count"], 30_000, 0.25, "recomputed array count")
        assert inv["category"] == "repeated native call with the same arguments", inv
        assert inv["made_in"] is None, inv     # np.sqrt, called by the line itself
        for line in (22, 23):
            assert row(d, "waste_recompute.py", line)["recomputed_bytes"] == 0, f"line {line} flagged"
        assert "recomputed" in open(dot, encoding="utf-8").read(), "no recomputed node in the dot graph"
    cp, d = c.profile(prog("waste_recompute.py"), *numpy, env={"PYFLOW_NO_WASTE": "1"})
    assert cp.returncode == 0 and not d["recomputations"], d["recomputations"]


@per_version
def case_waste_not_at_imports(c):
    """A library that builds the same value 100,000 times and reserves 80 MB it never touches while it is
    imported: no finding at the user's import line, though the line keeps its figures; the same calls from
    the user's own lines are findings (the twin), the recomputation named as made inside the library's
    function, with advice for a call rather than a loop of the user's. Under --exact the interpreter's
    start-up repeats values too: no finding there either."""
    cp, d = c.profile(prog("waste_imports.py"), extra=("--profile-only", "waste_imports.py"))
    assert cp.returncode == 0 and cp.stdout == "True 80000000 80000000\n", (cp.stdout, cp.stderr[-800:])
    recomputed = {r["line"] for r in d["recomputations"] if os.path.basename(r["file"]) == "waste_imports.py"}
    untouched = {u["line"] for u in d["untouched"] if os.path.basename(u["file"]) == "waste_imports.py"
                 and u["finding"]}
    assert 6 in recomputed and 4 not in recomputed, d["recomputations"]
    library = [r for r in d["recomputations"] if os.path.basename(r["file"]) == "waste_imports.py"][0]
    assert (library["made_in"] or "").startswith("build (waste_import_lib.py:"), library   # a library's loop
    assert "outside the loop" not in library["fix"] and "made inside build" in cp.stderr, library
    assert 7 in untouched and 4 not in untouched, d["untouched"]
    reserved = [u for u in d["untouched"] if os.path.basename(u["file"]) == "waste_imports.py" and u["line"] == 7]
    assert (reserved[0]["made_in"] or "").startswith("reserve (waste_import_lib.py:"), reserved
    assert reserved[0]["fix"].startswith("a library call on this line allocated it"), reserved  # not np.empty
    imported = row(d, "waste_imports.py", 4)
    assert imported["recomputed_bytes"] > 0 and imported["untouched_bytes"] >= 0.9 * 80_000_000, imported
    findings = cp.stderr.split("recomputed values", 1)[-1]
    assert "waste_imports.py:4" not in findings, findings
    # every recorded start-up allocation (--exact) makes repeated values there too: no finding, nor in
    # the library's own lines, and none in the text
    cp, d = c.profile(prog("waste_imports.py"), extra=("--exact", "--profile-only", "waste_imports.py"))
    assert cp.returncode == 0, cp.stderr[-800:]
    where = {os.path.basename(r["file"]) for r in d["recomputations"]} | \
        {os.path.basename(u["file"]) for u in d["untouched"] if u["finding"]}
    assert where == {"waste_imports.py"}, (d["recomputations"], d["untouched"])
    assert "[python startup]:0  repeated values" not in cp.stderr, cp.stderr


@per_version
def case_waste_not_at_inline_imports(c):
    """`python -c CODE`: its lines are read from CODE (the report shows their source, and `pyflow diff`
    matches them by it), so an import there is an import line like a file's: the standard library modules
    it imports under --exact repeat values and have their copies proved needed by writes, and none of that
    is a finding at `<string>:1`; the twin line after it, which builds the same 1 KB value 2000 times, is
    one."""
    code = ("import json, email.mime.text, xml.dom.minidom, http.client, argparse, decimal, asyncio, unittest\n"
            "x = [bytes(1000) for _ in range(2000)]\n"
            "print(len(x))")
    cp, d = c.profile("-c", code, extra=("--exact",))
    assert cp.returncode == 0 and cp.stdout == "2000\n", (cp.stdout, cp.stderr[-800:])
    first = row(d, "<string>", 1)
    assert first["source"].startswith("import json, email"), first
    assert first["alloc_bytes"] > 1_000_000, first
    recomputed = {r["line"] for r in d["recomputations"] if r["file"] == "<string>"}
    assert recomputed == {2}, d["recomputations"]
    assert not [u for u in d["untouched"] if u["file"] == "<string>" and u["finding"]], d["untouched"]
    findings = "\n\n".join(sec for sec in cp.stderr.split("\n\n")
                           if sec.startswith(("recomputed values", "untouched", "copies proved needed",
                                              "redundant copies", "probable leak")))
    assert "<string>:1 " not in findings, findings
    assert "<string>:2  loop-invariant computation: x = [bytes(1000)" in findings, findings
