"""Integration cases: reading a large profile. `pyflow report` (and the report at exit of `pyflow run`) must
read an exact profile at a speed near the disk's, not ten times slower: here ~100 MB in under twice the time
`cat` takes to read it plus 3 seconds, counted in CPU time so that a loaded machine does not fail it."""
import json
import os
import subprocess
import time

from .common import line_of, once, prog, run

ROUNDS = 13     # small_objects.py: about 12 MB of --exact profile a round


def timed(cmd, stdout=subprocess.DEVNULL):
    """Runs cmd; returns (exit status, wall seconds, CPU seconds: user + system)."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_utime + usage.ru_stime


@once
def case_large_exact_profile_reads_fast(c):
    profile, out = os.path.join(c.tmp, "big.pflow"), os.path.join(c.tmp, "big.json")
    # one record per event (PYFLOW_PACKED=0): MB per second of records read is what is timed (packed, the
    # same run's profile is a fifth of the size, under the size this needs)
    cp = run([c.pyflow, "run", "--exact", "--no-report", "-o", profile, "--python", c.python,
              prog("small_objects.py"), str(ROUNDS)], env={**os.environ, "PYFLOW_PACKED": "0"})
    assert cp.returncode == 0, cp.stderr
    size = os.path.getsize(profile)
    assert size > 60e6, f"the profile is {size / 1e6:.0f} MB, too small to time its reading"
    with open(os.devnull, "wb") as null:
        cats = [timed(["cat", profile], stdout=null) for _ in range(2)]
    cat_s = min(w for _, w, _ in cats)
    rc, wall, cpu = timed([c.pyflow, "report", profile, "--format", "json", "-o", out])
    assert rc == 0, f"pyflow report exited {rc}"
    bound = 2 * cat_s + 3
    assert cpu < bound, (f"reading {size / 1e6:.0f} MB took {cpu:.2f} s of CPU ({wall:.2f} s wall), over "
                         f"{bound:.2f} s (2x cat's {cat_s:.2f} s + 3 s)")
    # and what it read is right: each allocation on its own line (an interned stack resolved to another
    # stack moves them between the two lines), as many as the loop made: every record counted
    with open(out) as f:
        doc = json.load(f)
    turns = ROUNDS * 20_000
    for marker, low, high, what in (("# LOOKUP", 2.5, 3.5, "a str, a tuple and an int"),
                                    ("# LOOP", 0.8, 1.2, "an int")):
        line = line_of(prog("small_objects.py"), marker)
        rows = [r for r in doc["lines"] if os.path.basename(r["file"]) == "small_objects.py" and r["line"] == line]
        count = rows[0]["alloc_count"] if rows else 0
        assert low * turns <= count <= high * turns, (
            f"line {line}: {count} allocations, not about {what} for each of {turns} turns")
    print(f"read {size / 1e6:.0f} MB in {cpu:.2f} s CPU, {wall:.2f} s wall (cat {cat_s:.3f} s): "
          f"{size / 1e6 / max(cpu, 1e-3):.0f} MB/s")
