"""pytest plugin (entry point pytest11 "pyflow"): memory per test under pyflow, and memory limits.

Under pyflow (`pyflow run -m pytest ...`, or `pytest --pyflow ...`, which starts pytest again under pyflow),
each test's call is measured with the runtime's counters (pyflow.runtime): bytes allocated, the most bytes
live above what was live when it started (its peak), and what it left live (after a gc.collect()), in
both layers (Python objects and native buffers: numpy's count). The terminal summary lists them by node
id; --pyflow-json FILE writes them ("schema": "pyflow-pytest/1").

    @pytest.mark.limit_memory("24 MB")   # fails the test when its peak is above 24 MB
    @pytest.mark.limit_leaks("1 MB")     # fails the test when it left more than 1 MB live

A failed limit names the test's top lines, from the profile itself (`pyflow report --window` over the
test's call). Sizes: B, KB, MB, GB (powers of 1024, as pytest-memray reads them), KiB, MiB, GiB too.
Without pyflow the markers are not checked (the summary says so once)."""
import gc
import json
import os
import re
import sys

import pytest

from . import runtime
from .runtime import human_bytes as human

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
          "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3}


def parse_size(text):
    """ "24 MB" -> 25165824. ValueError with a sentence for anything else."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{text!r} is not a size (a number and B, KB, MB, GB, KiB, MiB or GiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def pytest_addoption(parser):
    group = parser.getgroup("pyflow", "memory per test and memory limits (pyflow)")
    group.addoption("--pyflow", action="store_true", default=False,
                    help="run the tests under pyflow (pytest starts again under `pyflow run`)")
    group.addoption("--pyflow-json", metavar="FILE", default=None, help="write memory per test as JSON to FILE")
    group.addoption("--pyflow-top", metavar="N", type=int, default=10,
                    help="tests listed in the terminal summary (largest peak first; default 10)")


def pytest_configure(config):
    config.addinivalue_line("markers", "limit_memory(size): fail when the test's peak is above size (pyflow)")
    config.addinivalue_line("markers", "limit_leaks(size): fail when the test leaves more than size live (pyflow)")
    config._pyflow = Session(config)
    config.pluginmanager.register(config._pyflow, "pyflow-session")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """--pyflow outside pyflow: the same pytest command again, under pyflow (in this process's place)."""
    if not config.getoption("pyflow") or runtime.active():
        return None
    exe = runtime.launcher()
    args = [exe, "run", "--no-report", "--python", sys.executable, "-m", "pytest", *config.invocation_params.args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, args)


class Session:
    def __init__(self, config):
        self.config = config
        self.results = {}           # nodeid -> dict
        self.active = runtime.active()
        self.unchecked = 0          # limit markers seen without pyflow

    def limits(self, item):
        out = {}
        for name in ("limit_memory", "limit_leaks"):
            marker = item.get_closest_marker(name)
            if marker:
                if not marker.args:
                    raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs a size, e.g. \"24 MB\"")
                try:
                    out[name] = parse_size(marker.args[0])
                except ValueError as e:
                    raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name}: {e}")
        return out

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        limits = self.limits(item)
        if not self.active:
            self.unchecked += bool(limits)
            yield
            return
        gc.collect()
        before = runtime.counters()
        runtime.reset_peak()
        t0 = runtime.mark(f"test-start {item.nodeid}")
        yield
        gc.collect()
        after = runtime.counters()
        t1 = runtime.mark(f"test-end {item.nodeid}")
        r = {"nodeid": item.nodeid,
             "allocated_bytes": after.allocated - before.allocated,
             "allocated_python_bytes": after.allocated_python - before.allocated_python,
             "allocated_native_bytes": after.allocated_native - before.allocated_native,
             "peak_bytes": max(0, after.peak - before.live),
             "leaked_bytes": max(0, after.live - before.live),
             "leaked_python_bytes": max(0, after.live_python - before.live_python),
             "leaked_native_bytes": max(0, after.live_native - before.live_native),
             "limit_memory_bytes": limits.get("limit_memory"), "limit_leaks_bytes": limits.get("limit_leaks"),
             "window_ns": [t0, t1], "failed_limit": None}
        over = []
        if "limit_memory" in limits and r["peak_bytes"] > limits["limit_memory"]:
            over.append(("limit_memory", "peak_bytes", r["peak_bytes"], limits["limit_memory"]))
        if "limit_leaks" in limits and r["leaked_bytes"] > limits["limit_leaks"]:
            over.append(("limit_leaks", "leaked_bytes", r["leaked_bytes"], limits["limit_leaks"]))
        if over:
            r["failed_limit"] = over[0][0]
            r["message"] = self.explain(item, over, (t0, t1), r)
        self.results[item.nodeid] = r
        # into the profile too, so that `pyflow report` lists the tests (report/pf_report_tests.c)
        runtime.mark("pytest-result\t{}\t{}\t{}\t{}\t{}\t{}\t{}".format(
            r["allocated_python_bytes"], r["allocated_native_bytes"], r["peak_bytes"], r["leaked_python_bytes"],
            r["leaked_native_bytes"], r["failed_limit"] or "-", item.nodeid))

    def explain(self, item, over, window, r):
        lines = []
        for name, field, value, limit in over:
            what = "its peak" if name == "limit_memory" else "left live after it"
            layers = (f"python {human(r['allocated_python_bytes'])}, native {human(r['allocated_native_bytes'])} "
                      "allocated" if name == "limit_memory" else
                      f"python {human(r['leaked_python_bytes'])}, native {human(r['leaked_native_bytes'])}")
            lines.append(f"{item.nodeid}: {human(value)} {what}, over @pytest.mark.{name}(\"{human(limit)}\") "
                         f"({layers})")
            doc = runtime.window_report(*window)
            if not doc:
                continue
            rows = [l for l in doc.get("lines", []) if l.get("source") and not l["file"].startswith("[")]
            rows = [l for l in rows if l.get(field, 0) > 0]
            rows.sort(key=lambda l: l.get(field, 0), reverse=True)
            if rows:
                lines.append(f"  top lines by {'bytes live at the peak' if field == 'peak_bytes' else 'bytes left live'}:")
            for l in rows[:5]:
                lines.append(f"    {os.path.relpath(l['file'])}:{l['line']} {l['function']}: {human(l[field])} "
                             f"(python {human(l['python_bytes'])}, native {human(l['native_bytes'])} allocated)"
                             f"  {l['source'][:70]}")
        return "\n".join(lines)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        r = self.results.get(item.nodeid)
        if call.when == "call" and r and r.get("message") and report.passed:
            report.outcome = "failed"
            report.longrepr = r["message"]

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if not self.active:
            if self.unchecked:
                tr.write_line(f"pyflow: {self.unchecked} test(s) with memory limits not checked: not running "
                              "under pyflow (pytest --pyflow, or pyflow run -m pytest)")
            return
        rows = sorted(self.results.values(), key=lambda r: r["peak_bytes"], reverse=True)
        top = self.config.getoption("pyflow_top")
        tr.write_sep("-", f"pyflow: memory per test ({len(rows)} tests, largest peak first)")
        tr.write_line(f"{'allocated':>11} {'peak':>11} {'live after':>11} {'python':>11} {'native':>11}  test")
        for r in rows[:max(top, 0)]:
            flag = f"  [over {r['failed_limit']}]" if r["failed_limit"] else ""
            tr.write_line(f"{human(r['allocated_bytes']):>11} {human(r['peak_bytes']):>11} "
                          f"{human(r['leaked_bytes']):>11} {human(r['allocated_python_bytes']):>11} "
                          f"{human(r['allocated_native_bytes']):>11}  {r['nodeid']}{flag}")
        path = self.config.getoption("pyflow_json")
        if path:
            with open(path, "w") as f:
                json.dump({"schema": "pyflow-pytest/1", "profile": runtime.profile_path(),
                           "tests": [{**r, "message": r.get("message")} for r in rows]}, f, indent=1)
            tr.write_line(f"pyflow: memory per test written to {path}")
