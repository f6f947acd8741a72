"""Integration cases: bad input, corrupt profiles, full disks, descriptor limits, size caps."""
import struct
import glob
import json
import os
import re
import shutil
import signal

from .common import PROGRAMS, Skip, exact_plus_samples, line_of, near, once, per_version, prog, row, run


@once
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


@once
def case_signal_first_call(c):
    """A hook's first call from a signal handler while another thread is in dlopen (signal_first_call.c, a C
    program with the runtime preloaded, as the hooks are in every process pyflow starts): the loader holds
    its lock while a library's constructor runs, and a hook that looked up its real function with dlsym at
    its first call waited for that lock, where the program without pyflow does not wait at all (the
    constructor, waiting for the handler, gave up after 3 s: "timed out"). Every such hook finds its
    function when the runtime starts (pf_hooks_resolve_all)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler to build the program")
    exe, spin = os.path.join(c.tmp, "pf_first_call"), os.path.join(c.tmp, "libpf_first_call_spin.so")
    for cmd in ([cc, "-O2", "-rdynamic", "-o", exe, prog("signal_first_call.c"), "-ldl", "-lpthread"],
                [cc, "-O2", "-shared", "-fPIC", "-DSPIN", "-o", spin, prog("signal_first_call.c")]):
        built = run(cmd)
        assert built.returncode == 0, built.stderr
    runtime = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(c.pyflow))), "lib", "pyflow",
                           "libpyflow.so")
    for preload in ({}, {"LD_PRELOAD": runtime}):
        cp = run([exe, spin], env=dict(os.environ, **preload))
        assert cp.returncode == 0 and cp.stdout == "ok\n", (preload, cp.stdout, cp.stderr[-800:])
    print("a hook's first call in a signal handler ran while another thread was in dlopen, as without pyflow")


@per_version
def case_lazy_libraries(c):
    """libpfm4 is loaded only when watch names an event: linked, its relocated event tables cost every
    profiled process about 2 MiB. libZydis only when watch starts: linked, it was 0.1 MiB of every
    profiled program's RSS (a run with --no-watch maps it not at all; under --watch it is there)."""
    code = "print(sum('libpfm' in l for l in open('/proc/self/maps')))"
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "-c", code])
    assert cp.returncode == 0 and cp.stdout.strip() == "0", (cp.stdout, cp.stderr[-800:])
    code = "print(sum('libZydis' in l for l in open('/proc/self/maps')))"
    for mode in ("--no-watch", "--exact --native --no-watch"):
        cp = run([c.pyflow, "run", "--python", c.python, "--no-report", *mode.split(), "-c", code])
        assert cp.returncode == 0 and cp.stdout.strip() == "0", (mode, cp.stdout, cp.stderr[-800:])
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", "--watch", "-c", code])
    if "watch is off" in cp.stderr and "Zydis" not in cp.stderr:
        return      # watch could not start here (no sampling event): nothing to decode
    assert cp.returncode == 0 and cp.stdout.strip() != "0", (cp.stdout, cp.stderr[-800:])


@per_version
def case_loading_pages_given_back(c):
    """The code of the libraries pyflow brings that only its start-up runs (libZydis's init, liblzma's, a
    dependency of libunwind never called) leaves the program's RSS before the program's first line: each
    first run of it mapped 64 KiB of the file, 128 KiB in every profiled process (recorder/pf_lib_pages.c).
    And without --native libunwind's code never runs (watch's handlers walk with the rule table): its
    set-up for watch kept 40 KiB of it. Read from /proc/self/pagemap at the first line; the decoder's code
    comes back if a watch traps."""
    cp = run([c.pyflow, "run", "--python", c.python, "--no-report", prog("lib_pages.py")])
    assert cp.returncode == 0, cp.stderr[-800:]
    seen = {line.split()[0].split(".so")[0]: int(line.split()[1]) for line in cp.stdout.splitlines()}
    # libZydis is there only where the default watch started (debug registers that fire: lazy_libraries)
    assert "liblzma" in seen and "libunwind" in seen, cp.stdout
    assert all(n == 0 for n in seen.values()), f"pages of start-up code still present: {cp.stdout}"


@once
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


@once
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


@once
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


@once
def case_unwritable_tmpdir(c):
    """No place for the temporary profile: one clear line, and the program still runs with its own status."""
    env = dict(os.environ, TMPDIR="/proc/nonexistent")
    cp = run([c.pyflow, "run", "--python", c.python, "-c", "import sys; print('ran'); sys.exit(4)"], env=env)
    assert cp.returncode == 4 and cp.stdout == "ran\n", (cp.returncode, cp.stdout)
    assert cp.stderr.startswith("pyflow: cannot create a temporary directory") and "without profiling" in cp.stderr


@once
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
        # an option where a value belongs: --json's file forgotten (it took "-o" and ran the profile's path)
        ([c.pyflow, "run", "--python", c.python, "--json", "-o", os.path.join(c.tmp, "j.pflow"), prog("fidelity.py")],
         2, "--json needs a file name"),
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
    assert not os.path.exists(os.path.join(c.tmp, "j.pflow")) and not os.path.exists("-o"), "nor for --json -o"
    # a directory with a __main__.py is a program, as for python
    cp = run([c.pyflow, "run", "--python", c.python, os.path.join(PROGRAMS, "pkgmod"), "d"])
    assert cp.returncode == 0 and cp.stdout == "module main ['d']\n", (cp.returncode, cp.stdout, cp.stderr)
    # a syntax error is the program's: its own traceback and exit code 1
    plain = run([c.python, prog("syntax_error.py")])
    cp = run([c.pyflow, "run", "--python", c.python, prog("syntax_error.py")])
    assert cp.returncode == plain.returncode == 1, (cp.returncode, plain.returncode)
    assert "SyntaxError" in cp.stderr and cp.stderr.startswith(plain.stderr)


@once
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


@once
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


@once
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


@once
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


@once
def case_format_version(c):
    """A profile of another format version (0, or newer than this pyflow reads) is refused with one line
    naming its version and the versions this pyflow reads, never read as the current one."""
    saved = os.path.join(c.tmp, "v.pflow")
    r = run([c.pyflow, "run", "--python", c.python, "--no-report", "-o", saved, "-c", "x = bytearray(2_000_000)"])
    assert r.returncode == 0, r.stderr[-400:]
    with open(saved, "rb") as f:
        data = bytearray(f.read())
    current = struct.unpack_from("<I", data, 8)[0]
    for version in (0, current + 1, 77):
        struct.pack_into("<I", data, 8, version)
        bad = os.path.join(c.tmp, f"v{version}.pflow")
        with open(bad, "wb") as f:
            f.write(data)
        rep = run([c.pyflow, "report", bad])
        lines = rep.stderr.splitlines()
        assert rep.returncode == 2 and rep.stdout == "" and len(lines) == 1, (version, rep.stdout[:200], rep.stderr)
        assert f"format version {version};" in lines[0] and "reads versions 1 to" in lines[0], lines[0]


@per_version
def case_unmapped_behind_back(c):
    """Memory freed where pyflow's hooks cannot see it (tracemalloc's hooks installed over pyflow's, a raw
    munmap system call) stays in its table of live objects; at exit pyflow asks the kernel about those
    pages and must never read them: a bytes object unmapped so made the program die of SIGSEGV at exit
    (seen once in ~900 runs of tracemalloc_in_program; here every run)."""
    plain = run([c.python, prog("unmapped_behind_back.py")])
    cp = run([c.pyflow, "run", "--no-report", "--python", c.python, prog("unmapped_behind_back.py")])
    assert plain.returncode == 0, plain.stderr[-800:]
    assert cp.returncode == 0 and cp.stdout == plain.stdout, (cp.returncode, cp.stdout, cp.stderr[-800:])


def _peak_rss_kib(cmd, env=None):
    """Runs cmd under /usr/bin/time (env: its environment, else ours); returns (completed process, its peak
    RSS in KiB)."""
    cp = run(["/usr/bin/time", "-f", "%M", *cmd], env=env)
    assert cp.returncode == 0 and cp.stdout == "done\n", (cmd, cp.returncode, cp.stdout, cp.stderr[-800:])
    return cp, int(cp.stderr.split()[-1])


@once
def case_exact_rss_bound(c):
    """Under --exact pyflow's own memory stays out of the program's peak RSS (ru_maxrss: what a container's
    limit and `time` see) within plain + 25% + 30 MiB, however much it records: 300 short threads that each
    fill chunks of the profile (each exited thread left its filled pages resident: 137 MB against 10 MB
    plain), 65536 distinct 110-frame stacks (the stack table keeps a copy of each, which the per-thread
    stack cache checks its guesses against: whole, 75 MB against 10 MB plain; in shared segments 20 MB,
    here within plain + 25% + 16 MiB), 2 million objects
    allocated and freed (a 300 MB profile, written through a shared mapping whose finished pages must leave
    the resident set), 1.5 million small objects live at once (the object table holds each: 161 MB against
    92 MB plain at 24 bytes a hashed slot, 107 MB with the dense map; here within plain + 25% + 16 MiB); and
    a run killed by SIGKILL still has every record in its profile."""
    if not os.path.exists("/usr/bin/time"):
        raise Skip("no /usr/bin/time")
    pfl = os.path.join(c.tmp, "rss.pflow")
    # one record per event (PYFLOW_PACKED=0): the most bytes for the same program, the hardest test of what
    # stays resident (packed, the same runs write a fifth of them)
    one_each = {**os.environ, "PYFLOW_PACKED": "0"}
    for mode in ("threads", "stacks", "churn", "live"):
        _, plain = _peak_rss_kib([c.python, prog("rss_bound.py"), mode])
        _, exact = _peak_rss_kib([c.pyflow, "run", "--no-report", "--exact", "-o", pfl, "--python", c.python,
                                  prog("rss_bound.py"), mode], env=one_each)
        size = os.path.getsize(pfl)
        assert size > 64 << 20, f"{mode}: a {size} B profile is too small to show what stays resident"
        bound = plain * 1.25 + {"stacks": 16, "live": 16}.get(mode, 30) * 1024
        assert exact <= bound, f"{mode}: peak RSS {exact} KiB under --exact, {plain} KiB plain (bound {bound:.0f})"
        os.unlink(pfl)
    # The pages left the program's memory, not the profile: after SIGKILL every record is there.
    cp = run([c.pyflow, "run", "--no-report", "--exact", "-o", pfl, "--python", c.python, prog("rss_bound.py"),
              "killed"])
    assert cp.returncode == -signal.SIGKILL and cp.stdout == "done\n", (cp.returncode, cp.stdout, cp.stderr[-800:])
    rep = run([c.pyflow, "report", pfl, "--format", "json"])
    assert rep.returncode == 0, rep.stderr[-800:]
    items = row(json.loads(rep.stdout), "rss_bound.py", line_of(prog("rss_bound.py"), "x = [1, 2]"))
    assert items["alloc_count"] >= 300 * 3000, f"{items['alloc_count']} of the 900000 allocations in the profile"


@once
def case_exact_native_rss_bound(c):
    """Under --exact --native the stacks' native parts stay out of the program's peak RSS: importing numpy
    makes ~100,000 stacks over ~40,000 native parts of 64 IPs, and the copies the runtime checks its guesses
    against, kept whole, took 100 MB against 33 MB plain; in shared segments 50 MB. Within plain + 25% +
    20 MiB."""
    if not os.path.exists("/usr/bin/time"):
        raise Skip("no /usr/bin/time")
    c.need_numpy()
    pfl = os.path.join(c.tmp, "native.pflow")
    _, plain = _peak_rss_kib([c.python, prog("rss_native_stacks.py")])
    _, traced = _peak_rss_kib([c.pyflow, "run", "--no-report", "--exact", "--native", "-o", pfl,
                               "--python", c.python, prog("rss_native_stacks.py")])
    bound = plain * 1.25 + 20 * 1024
    assert traced <= bound, f"peak RSS {traced} KiB under --exact --native, {plain} KiB plain (bound {bound:.0f})"


@per_version
def case_exact_rss_arenas_given_back(c):
    """Under --exact the dense map's entries of an arena pymalloc frees leave the resident set: 12 rounds of
    ~20 MB of small objects built and dropped, each round's arenas at new addresses, kept every round's
    entries resident (71 MB against 33 MB plain); given back, 42 MB. Within plain + 25% + 12 MiB."""
    if not os.path.exists("/usr/bin/time"):
        raise Skip("no /usr/bin/time")
    pfl = os.path.join(c.tmp, "arenas.pflow")
    _, plain = _peak_rss_kib([c.python, prog("rss_arena_churn.py")])
    _, exact = _peak_rss_kib([c.pyflow, "run", "--no-report", "--exact", "-o", pfl, "--python", c.python,
                              prog("rss_arena_churn.py")])
    bound = plain * 1.25 + 12 * 1024
    assert exact <= bound, f"peak RSS {exact} KiB under --exact, {plain} KiB plain (bound {bound:.0f})"


@once
def case_exact_rss_writer_threads(c):
    """Under --exact each recording thread keeps resident only the chunk it fills and the filled ones
    waiting to be dropped (less than 128 KiB: each madvise flushes the TLB, so they go two at a time): 64
    threads that each filled 6 to 8 chunks, all alive at once, kept them all (up to 512 KiB + the chunk
    being filled, each: 41.8 MB against 10.5 MB plain); now at most 128 KiB each (18.3 MB). Within plain
    + 25% + 12 MiB."""
    if not os.path.exists("/usr/bin/time"):
        raise Skip("no /usr/bin/time")
    pfl = os.path.join(c.tmp, "threads.pflow")
    one_each = {**os.environ, "PYFLOW_PACKED": "0"}     # a record per event: the most bytes, the most chunks
    _, plain = _peak_rss_kib([c.python, prog("rss_writer_threads.py")])
    _, exact = _peak_rss_kib([c.pyflow, "run", "--no-report", "--exact", "-o", pfl, "--python", c.python,
                              prog("rss_writer_threads.py")], env=one_each)
    bound = plain * 1.25 + 12 * 1024
    assert exact <= bound, f"peak RSS {exact} KiB under --exact, {plain} KiB plain (bound {bound:.0f})"
