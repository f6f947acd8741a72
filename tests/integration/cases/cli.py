"""Integration cases: the launcher as a user runs it: interpreters and venvs, argv, -m/-c, output files, info, install."""
import json
import os
import shutil
import signal
import stat
import tempfile
import threading

from .common import PROGRAMS, Skip, exact_plus_samples, near, once, per_version, prog, row, run


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


@once
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


@once
def case_report_written_at_once(c):
    """The text report reaches stderr in a few writes, not one per character: stderr has no stdio buffer,
    and a report printed straight to it was 1,500 write(2) calls for one screen, each a trip through a
    terminal's driver. Counted with strace."""
    if not shutil.which("strace"):
        raise Skip("strace is not installed (.ci/install-deps installs it)")
    with tempfile.TemporaryDirectory(prefix="pyflow-writes-") as tmp:
        log = os.path.join(tmp, "strace.log")
        cp = run(["strace", "-o", log, "-e", "trace=write", c.pyflow, "run", "--python", c.python,
                  prog("fidelity.py"), "ok"], input="x\n")
        assert cp.returncode == 0, cp.stderr
        assert "peak" in cp.stderr, cp.stderr
        with open(log) as f:
            writes = [l for l in f if l.startswith("write(2,")]
        assert 1 <= len(writes) <= 5, f"{len(writes)} writes to stderr for the report:\n{''.join(writes[:20])}"


@per_version
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


@per_version
def case_module_and_code(c):
    """-m module and -c code run with their own argv and __main__."""
    cp = run([c.pyflow, "run", "--python", c.python, "-m", "pkgmod", "a", "b"], cwd=PROGRAMS)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "module main ['a', 'b']\n", cp.stdout
    cp = run([c.pyflow, "run", "--python", c.python, "-c",
              "import sys; print(__name__, sys.argv[1:])", "x", "--flag"])
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "__main__ ['x', '--flag']\n", cp.stdout


@per_version
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


@per_version
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


@per_version
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


@once
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


@per_version
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


@once
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


@once
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


@once
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


@once
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
