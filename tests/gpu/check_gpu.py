#!/usr/bin/env python3
"""GPU checks beyond tests/integration/cases/gpu.py: the real launcher on the mock CUDA library.

Usage: check_gpu.py CASE --pyflow BUILD/bin/pyflow --python INTERPRETER --mock libpf_mockcuda.so
Exit 0 = pass, 1 = fail (with the failing assertion), 77 = skipped (with the reason).
  probe   the profiler never poses as CUDA: every dlsym probe answers as without it (no CUDA, CUDA loaded
          RTLD_LOCAL, then RTLD_GLOBAL), and dlerror() text stays usable;
  info    `pyflow info`'s cuda line: skip without a driver, ok (driver 12.4, 1 GPU) with the mock as libcuda;
  driver  driver API allocations (plain, managed, async) are GPU bytes per line, pinned host memory is
          native bytes, frees end liveness, d2d/d2h edges, cudaMemcpyDefault classified by the ends (interior
          pointers too), a copy from device memory pyflow never saw is not read on the host, the same upload
          3 times is redundant, and cuGetProcAddress hands out the library's own v1 variant, and its
          per-thread-stream variant as a hook of its own whose copies are seen.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
from cases import common  # noqa: E402  (the integration cases' helpers: row, flows_at)
from cases.common import row  # noqa: E402
SKIP = 77
MiB = 1 << 20


class Skip(Exception):
    pass


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)


def profile(a, script, *args):
    with tempfile.TemporaryDirectory(prefix="pyflow-gpu-") as tmp:
        out = os.path.join(tmp, "out.json")
        cp = run([a.pyflow, "run", "--python", a.python, "--json", out, script, *args])
        assert os.path.exists(out), f"no JSON written; stderr:\n{cp.stderr[-1500:]}"
        with open(out) as f:
            return cp, json.load(f)


def flows_at(doc, script, line, kind):
    return [f for f in common.flows_at(doc, script, line) if f["kind"] == kind]


def case_probe(a):
    script = os.path.join(HERE, "gpu_probe.py")
    for args in ([], [a.mock]):
        plain = run([a.python, script, *args])
        assert plain.returncode == 0, plain.stderr[-800:]
        cp = run([a.pyflow, "run", "--python", a.python, script, *args])
        assert cp.returncode == 0, (cp.returncode, cp.stderr[-800:])
        assert cp.stdout == plain.stdout, f"probes differ under pyflow:\n{cp.stdout}\nwithout:\n{plain.stdout}"
        assert "global cudaMalloc absent\n" in cp.stdout and "odd dlerror" not in cp.stdout, cp.stdout


def case_info(a):
    """`pyflow info` says whether a CUDA driver and GPUs are there: skip without libcuda.so.1, ok with the
    mock library found under that name (driver 12.4, one GPU)."""
    without = run([a.pyflow, "info"])
    assert without.returncode == 0, without.stderr
    cuda = [ln for ln in without.stdout.splitlines() if ln.startswith("cuda ")]
    assert len(cuda) == 1, without.stdout
    if "skip" not in cuda[0]:
        raise Skip(f"a CUDA driver is installed here, the mock cannot stand in for it: {cuda[0]}")
    with tempfile.TemporaryDirectory(prefix="pyflow-gpu-") as tmp:
        os.symlink(os.path.abspath(a.mock), os.path.join(tmp, "libcuda.so.1"))
        env = dict(os.environ, LD_LIBRARY_PATH=tmp)
        cp = subprocess.run([a.pyflow, "info"], capture_output=True, text=True, env=env, timeout=60)
    line = [ln for ln in cp.stdout.splitlines() if ln.startswith("cuda ")]
    assert cp.returncode == 0 and line and " ok " in line[0] and "driver 12.4, 1 GPU:" in line[0], cp.stdout


def case_driver(a):
    s = "gpu_driver.py"
    cp, d = profile(a, os.path.join(HERE, s), a.mock)
    assert cp.returncode == 0 and cp.stdout == "driver ok True True\n", (cp.returncode, cp.stdout, cp.stderr[-800:])
    for line, gpu, leaked in ((25, 16 * MiB, 0), (27, 8 * MiB, 8 * MiB), (28, 4 * MiB, 0)):
        r = row(d, s, line)
        assert r["gpu_bytes"] == gpu and r["leaked_bytes"] == leaked and r["native_bytes"] == 0, (line, r)
    for line, native, leaked in ((30, 2 * MiB, 0), (32, MiB, MiB)):
        r = row(d, s, line)
        assert r["gpu_bytes"] == 0 and r["native_bytes"] == native and r["leaked_bytes"] == leaked, (line, r)
    up = flows_at(d, s, 35, "h2d")
    assert up and up[0]["bytes"] == 3 * MiB and up[0]["count"] == 3 and up[0]["redundant"], up
    assert up[0]["dst"]["line"] == 27, up
    dd = flows_at(d, s, 37, "d2d")
    assert dd and dd[0]["bytes"] == MiB and dd[0]["src"]["line"] == 27, dd
    down = flows_at(d, s, 38, "d2h")
    assert down and down[0]["bytes"] == MiB and down[0]["src"]["line"] == 27, down
    per_thread = flows_at(d, s, 48, "h2d")     # through the per-thread-default-stream variant
    assert per_thread and per_thread[0]["bytes"] == MiB and per_thread[0]["dst"]["line"] == 27, per_thread
    inside = flows_at(d, s, 39, "h2d")
    assert inside, "cudaMemcpyDefault into a device block's interior is not h2d"
    assert inside[0]["dst"]["line"] == 27, f"a copy into a device block's interior lost its block: {inside}"
    out = flows_at(d, s, 40, "d2h")
    assert out, "cudaMemcpyDefault from a device block's interior is not d2h"
    assert out[0]["src"]["line"] == 27, f"a copy from a device block's interior lost its block: {out}"
    assert dd[0]["dst"]["line"] == 27, f"a device-to-device copy into the block's interior lost it: {dd}"
    unseen = flows_at(d, s, 42, "h2d")
    assert unseen and not unseen[0]["redundant"], unseen
    assert d["totals"]["gpu_bytes"] == 28 * MiB, d["totals"]


CASES = {"probe": case_probe, "driver": case_driver, "info": case_info}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--mock", required=True)
    a = ap.parse_args()
    for what, path in (("interpreter", a.python), ("launcher", a.pyflow), ("mock CUDA library", a.mock)):
        if not os.path.exists(path):
            print(f"SKIP: the {what} {path} is not there")
            return SKIP
    try:
        CASES[a.case](a)
    except AssertionError as e:
        print(f"FAIL gpu.{a.case}: {e}")
        return 1
    except Skip as e:
        print(f"SKIP gpu.{a.case}: {e}")
        return SKIP
    print(f"PASS gpu.{a.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
