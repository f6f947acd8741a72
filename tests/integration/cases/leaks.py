"""Integration cases: probable leaks and their twins that must not be reported."""
import os

from .common import example, has_numpy, marked_lines, near, per_version, prog


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


@per_version
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


@per_version
def case_leak_table(c):
    """A table whose keys and values two lines of one loop make and keep: built once and then worked with, no
    leak (on a clock of bytes allocated, the values kept beside the keys were the program's work, and the
    keys' line was called a leak); grown while the program works, both lines leak. Sampled and --exact."""
    program = "leak_table.py"
    for mode in ("twin", "leak"):
        for extra in ((), ("--exact",)):
            cp, d = c.profile(prog(program), mode, extra=extra)
            assert cp.returncode == 0 and cp.stdout == "150000\n", cp.stderr[-1500:]
            found = {l["line"] for l in d["leaks"] if os.path.basename(l["file"]) == program}
            expected = marked_lines(program, "LEAK") if mode == "leak" else set()
            assert found == expected, (mode, extra, d["leaks"])


@per_version
def case_leak_grown_list(c):
    """examples/list_growth.py: a list of 3 million ints appended to once, then a bytearray grown by +=. The
    list's old blocks, freed as realloc moved it, are its growth, not work that came and went: on a clock
    that counted them its ints (0.41) and, on bytes allocated, the list itself (0.26) read as leaks."""
    for extra in ((), ("--exact",)):
        cp, d = c.profile(example("list_growth.py"), extra=extra)
        assert cp.returncode == 0 and cp.stdout == "3000000 20000000\n", cp.stderr[-1500:]
        assert not d["leaks"], (extra, d["leaks"])


@per_version
def case_leak_temporaries(c):
    """hist.append(np.exp(np.random.rand(4000) * 2)) in a 3000-iteration loop (and bytes(8000)[:4000]): the
    temporaries on the line do not hide what it keeps; data built once and then used (a list of tuples, a
    list of arrays) is not a leak."""
    check_leak_shape(c, "leak_temporaries.py")


@per_version
def case_leak_requests(c):
    """A handler that keeps a record per request (no temporary on that line) leaks; a deque(maxlen=200)
    that fills and evicts does not."""
    check_leak_shape(c, "leak_requests.py")


@per_version
def case_leak_every_nth(c):
    """One call in seven keeping its result leaks; a saturated lru_cache(maxsize=100) does not."""
    check_leak_shape(c, "leak_every_nth.py")


@per_version
def case_leak_slow(c):
    """A slow leak, 3% of a long loop's buffers escaping, is found; buffers held for a phase and freed at its
    end are not."""
    check_leak_shape(c, "leak_slow.py")


@per_version
def case_leak_library(c):
    """Records a library (logging's QueueHandler) keeps for the user's logging call leak there; read from
    the queue, they do not."""
    check_leak_shape(c, "leak_library.py", flavors=("python",))


@per_version
def case_leak_caches(c):
    """re's pattern cache, small-object caches, numpy's own caches and a table freed only at shutdown are
    not leaks."""
    check_leak_shape(c, "leak_caches.py", modes=("twin",))


@per_version
def case_leak_end(c):
    """A cache appended to along the whole run leaks; the same items built by the program's last statement,
    after a short start, and alive at exit do not: a burst of the line's own bytes spreads over nothing else
    the program did, however much of the run it takes."""
    check_leak_shape(c, "leak_end.py")


@per_version
def case_leak_realloc(c):
    """One bytearray grown by `buf += chunk` all along the run leaks (one survivor, re-allocated as it grew:
    each piece it gained counts at its time); the same bytearray grown to its size once, at the start, and
    then reused in place does not."""
    check_leak_shape(c, "leak_realloc.py", flavors=("python",))


@per_version
def case_leak_pool(c):
    """A pool's results appended all along the run while the parent works on leak (at the Pool line, which
    started the thread that unpickles them); the same results built by one map and then used do not: the
    workers' bytes are the Pool line's own burst, not a clock its results spread over."""
    check_leak_shape(c, "leak_pool.py", flavors=("python",))
