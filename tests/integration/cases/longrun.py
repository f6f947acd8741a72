"""Integration cases: long runs (--aggregate): per-site totals written as snapshots, so that a profile stays
small however long the program runs, survives SIGKILL up to its last snapshot, and reports the same lines
as the full recording."""
import json
import os
import signal
import sys

from .common import flows_at, line_of, near, once, per_version, prog, row, run

DET = "longrun_det.py"


def lines_by_marker(marker):
    return line_of(prog(DET), "# " + marker)


def report_json(c, profile):
    rep = run([c.pyflow, "report", profile, "--format", "json"])
    assert rep.returncode == 0, rep.stderr
    return json.loads(rep.stdout)


def check_against_exact(c, extra):
    """The deterministic program recorded with `extra` and with --exact: within 2% per marked line on allocated,
    peak, live at exit and copied bytes. Returns the first one's JSON."""
    _, agg = c.profile(prog(DET), extra=extra)
    _, full = c.profile(prog(DET), extra=("--exact",))
    checked = 0
    for marker, fields in (("KEEP", ("alloc_bytes", "peak_bytes", "leaked_bytes")),
                           ("TEMP", ("alloc_bytes", "peak_bytes")),
                           ("COPY", ("alloc_bytes", "copy_bytes"))):
        line = lines_by_marker(marker)
        a, f = row(agg, DET, line), row(full, DET, line)
        for k in fields:
            near(a[k], f[k], 0.02, f"{marker} line {line} {k} ({' '.join(extra)} vs --exact)")
            checked += 1
        if marker == "TEMP":
            assert a["leaked_bytes"] < 100_000, a["leaked_bytes"]
    assert checked == 7
    # the whole program's peak also holds the interpreter's own small allocations, sampled here (some 20
    # samples' worth, ~1 MB of noise on ~46 MB, more where the peak takes the largest of those estimates)
    near(agg["totals"]["peak_bytes"], full["totals"]["peak_bytes"], 0.12, "program peak")
    assert agg["program"]["aggregated"] is True and full["program"]["aggregated"] is False, agg["program"]
    return agg


@per_version
def case_aggregate_matches_exact(c):
    """The aggregated and the full (--exact) recordings of a deterministic program agree within 2% per line
    on allocated, peak, live at exit and copied bytes; the peak of a line whose temporaries live between
    two snapshots included (the recorder's peak picture)."""
    agg = check_against_exact(c, ("--aggregate",))
    assert agg["program"]["aggregated_from_s"] == 0, agg["program"]
    assert agg["program"]["aggregated_flows"] is True, agg["program"]


@per_version
def case_aggregate_after_switches(c):
    """--aggregate-after: full records for the run's first 1.5 s, then snapshots; the objects recorded before
    the switch are still followed to their frees, so the lines agree with --exact as well, and the flows
    of the first part are kept."""
    agg = check_against_exact(c, ("--aggregate-after", "1.5s"))
    assert agg["program"]["aggregated_from_s"] == 1.5, agg["program"]
    assert any(f["bytes"] > 0 for f in agg["flows"]), "the copies of the first 1.5 s have their flows"


@per_version
def case_aggregate_survives_sigkill(c):
    """An aggregated run killed by SIGKILL mid-way still reports its lines: everything up to its last
    snapshot (at most about a second old while the program works)."""
    saved = os.path.join(c.tmp, "killed.pflow")
    cp = run([c.pyflow, "run", "--aggregate", "--python", c.python, "-o", saved, prog(DET), "kill"], input="")
    assert cp.returncode == -signal.SIGKILL, (cp.returncode, cp.stderr[-800:])
    d = report_json(c, saved)
    assert d["program"]["signal"] == 9, d["program"]
    keep = row(d, DET, lines_by_marker("KEEP"))
    near(keep["alloc_bytes"], 20_000_000, 0.02, "KEEP allocated before SIGKILL")
    near(keep["leaked_bytes"], 20_000_000, 0.02, "KEEP live when killed")
    near(row(d, DET, lines_by_marker("TEMP"))["alloc_bytes"], 90_000_000, 0.02, "TEMP allocated before SIGKILL")


@once
def case_aggregate_profile_stays_small(c):
    """A busy workload looped 12 times (allocating some 10 GB; 15-40 s under pyflow): the aggregated profile
    is under 1 MB, and far below what the default recording writes of the same work. The same work, not
    the same time: on a loaded machine a fixed time holds less work, which shrinks the default recording
    and not the aggregated one's start (its code and stack records)."""
    loop, work = prog("longrun_loop.py"), os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))), "bench", "workloads", "churn.py")
    sizes = {}
    for name, extra in (("default", ()), ("aggregate", ("--aggregate",))):
        out = os.path.join(c.tmp, f"{name}.pflow")
        cp = run([c.pyflow, "run", *extra, "--no-report", "--python", c.python, "-o", out, loop, work, "600", "12"],
                 timeout=900)
        assert cp.returncode == 0, cp.stderr[-800:]
        sizes[name] = os.path.getsize(out)
    assert sizes["aggregate"] < 1_000_000, sizes
    assert sizes["default"] > 4 * sizes["aggregate"], sizes


@per_version
def case_aggregate_leak_and_twin(c):
    """Leak evidence from the snapshots: a service whose log grows for 4 s is a probable leak on its LEAK line
    in an aggregated profile (each snapshot that raised the line's live bytes is a survivor: a snapshot each
    250 ms here, as a leak needs 8 survivors: at the default second, 8 s); its twin, a bounded cache, is
    not."""
    program = "longrun_leak.py"
    leak_line = line_of(prog(program), "# LEAK")
    for mode in ("leak", "twin"):
        cp, d = c.profile(prog(program), mode, extra=("--aggregate",), env={"PYFLOW_AGGREGATE_MS": "250"})
        assert cp.returncode == 0, cp.stderr[-1500:]
        found = [l for l in d["leaks"] if os.path.basename(l["file"]) == program]
        if mode == "twin":
            assert not found, d["leaks"]
            assert row(d, program, leak_line)["leaked_bytes"] >= 1_000_000, "the twin holds its cache at exit"
            continue
        assert [l["line"] for l in found] == [leak_line], d["leaks"]
        assert found[0]["likelihood"] >= 0.99 and found[0]["survivors"] >= 4 and found[0]["spread"] >= 0.25, found
        assert "probable leaks" in cp.stderr, cp.stderr[-1500:]


# ---- copy flows kept by --aggregate, and the default recording's switch to it by size ----
FLOWS = "longrun_flows.py"


def program_flows(d, copy_line):
    """The flows made on COPY line as (source line, destination line) -> flow."""
    return {(f["src"]["line"], f["dst"]["line"]): f for f in flows_at(d, FLOWS, copy_line)}


@per_version
def case_aggregate_flows_and_verdicts(c):
    """--aggregate keeps the object flow graph and the redundant-copy verdicts: on 40 copies of a 4 MB buffer
    the aggregated profile's flow (SRC line -> COPY line, made on COPY) has the full recording's bytes,
    count and judged copies, and is judged redundant as it is; its twin, whose copies are changed after
    they are made, has the same flow and no redundant copy in either recording."""
    src, copy = line_of(prog(FLOWS), "# SRC"), line_of(prog(FLOWS), "# COPY")
    for mode in ("redundant", "modified"):
        docs = {}
        for name, extra in (("full", ("--no-aggregate",)), ("aggregate", ("--aggregate",))):
            cp, docs[name] = c.profile(prog(FLOWS), mode, extra=extra)
            assert cp.returncode == 0, cp.stderr[-1500:]
        agg, full = program_flows(docs["aggregate"], copy), program_flows(docs["full"], copy)
        assert list(agg) == [(src, copy)] and list(full) == [(src, copy)], (mode, list(agg), list(full))
        a, f = agg[(src, copy)], full[(src, copy)]
        assert a["kind"] == f["kind"] == "copy", (a["kind"], f["kind"])
        near(a["bytes"], f["bytes"], 0.02, f"{mode}: flow bytes (aggregated vs full)")
        assert a["count"] == f["count"] == 40, (a["count"], f["count"])
        assert a["candidates"] == f["candidates"] == 40, (a["candidates"], f["candidates"])
        assert a["judged"] >= 38 and f["judged"] >= 38, (a["judged"], f["judged"])   # the last may be live at exit
        if mode == "redundant":
            assert a["redundant"] and f["redundant"], (a, f)
            near(a["redundant_bytes"], f["redundant_bytes"], 0.05, "redundant bytes (aggregated vs full)")
            assert a["evidence"] == "compare-at-free", a["evidence"]
            assert docs["aggregate"]["program"]["aggregated"] is True
        else:
            assert not a["redundant"] and not f["redundant"], (a, f)
            assert a["redundant_bytes"] == 0 == f["redundant_bytes"], (a, f)
            assert row(docs["aggregate"], FLOWS, copy)["redundant_copy_bytes"] == 0


@once
def case_default_switches_to_aggregate_by_size(c):
    """A plain `pyflow run` records in full until the profile reaches its switch size (192 MB; 2 MB here,
    through PYFLOW_AGGREGATE_AFTER_BYTES), then aggregates: a busy copying program's profile stays near that
    size, where --no-aggregate's grows with the work (20 GB copied, about 10 MB of records); the report
    says in one line when and why it switched, and the copy flows after the switch are kept."""
    busy = prog("longrun_busy_copies.py")
    sizes, docs = {}, {}
    for name, extra in (("default", ()), ("full", ("--no-aggregate",))):
        out = os.path.join(c.tmp, f"{name}.pflow")
        cp = run([c.pyflow, "run", *extra, "--python", c.python, "-o", out, busy], input="",
                 env={**os.environ, "PYFLOW_AGGREGATE_AFTER_BYTES": "2m"}, timeout=600)
        assert cp.returncode == 0, cp.stderr[-1500:]
        sizes[name] = os.path.getsize(out)
        docs[name] = report_json(c, out)
        if name == "default":
            assert "aggregated from " in cp.stderr and "(profile size; --no-aggregate: never)" in cp.stderr, \
                cp.stderr[-1500:]
    assert sizes["full"] > 6_000_000, sizes
    assert sizes["default"] < 4_000_000, sizes
    p = docs["default"]["program"]
    assert p["aggregated"] is True and p["aggregated_why"] == "size" and p["aggregated_from_s"] > 0, p
    assert docs["full"]["program"]["aggregated"] is False, docs["full"]["program"]
    line = line_of(busy, "bytes(buf)")
    near(row(docs["default"], "longrun_busy_copies.py", line)["copy_bytes"], 80000 * 262144, 0.1,
         "copied bytes across the switch")
    assert sum(f["bytes"] for f in flows_at(docs["default"], "longrun_busy_copies.py", line)) > 0.5 * 80000 * 262144


def record_counts(path):
    """{record type: count} of a profile file, read straight from the format (bench/profile_stats.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
    from profile_stats import walk
    with open(path, "rb") as f:
        data = f.read()
    counts = {}
    for rtype, _p, _size in walk(data):
        counts[rtype] = counts.get(rtype, 0) + 1
    return counts


@per_version
def case_short_copy_records(c):
    """The full recording writes an exact copy that no verdict will name (not linked: a piece of an object)
    as a 40-byte COPY_SHORT (23), not a 72-byte COPY; the report reads it as the copy it stands for: the
    line's 40 copies of 4 MB exactly, in a flow from SRC's object into BIG's."""
    program = prog("longrun_short_copies.py")
    saved = os.path.join(c.tmp, "short.pflow")
    cp, d = c.profile(program, extra=("--no-aggregate", "-o", saved))
    assert cp.returncode == 0, cp.stderr[-1500:]
    assert record_counts(saved).get(23, 0) >= 40, record_counts(saved)
    piece = line_of(program, "# PIECE")
    r = row(d, "longrun_short_copies.py", piece)
    assert r["copy_bytes"] == 40 * 4_000_000, r["copy_bytes"]
    flows = {(f["src"]["line"], f["dst"]["line"]): f for f in flows_at(d, "longrun_short_copies.py", piece)}
    f = flows[(line_of(program, "# SRC"), line_of(program, "# BIG"))]
    assert f["bytes"] == 40 * 4_000_000 and f["count"] == 40 and f["candidates"] == 0, f
