"""Integration cases: signals, crashes and exit statuses: the program ends as it would without pyflow."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import time

from .common import Skip, exact_plus_samples, line_of, near, once, per_version, prog, row, run


def relay_program(c):
    """signal_relay.py under a name of its own (for pkill -f)."""
    path = os.path.join(c.tmp, f"relay_{os.getpid()}.py")
    shutil.copy(prog("signal_relay.py"), path)
    return path


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


@per_version
def case_keyboard_interrupt(c):
    """An uncaught KeyboardInterrupt ends the program by SIGINT, as with plain python."""
    plain = run([c.python, prog("fidelity.py"), "interrupt"], input="")
    cp = run([c.pyflow, "run", "--python", c.python, prog("fidelity.py"), "interrupt"], input="")
    assert plain.returncode == -signal.SIGINT, plain.returncode
    assert cp.returncode == -signal.SIGINT, f"pyflow status {cp.returncode}\n{cp.stderr}"


@per_version
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


@per_version
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


@per_version
def case_crashes_and_timers(c):
    """abort() and a segfault in C code end the run with the program's own status, and the profile written
    up to then is reported (the 8 MB allocated first); the program's setitimer handlers keep firing."""
    for how in ("abort", "segv", "timers"):
        plain = run([c.python, prog("crashes.py"), how])
        cp, d = c.profile(prog("crashes.py"), how)
        assert cp.returncode == plain.returncode, (how, cp.returncode, plain.returncode, cp.stderr[-600:])
        assert cp.stdout == plain.stdout, (how, cp.stdout, plain.stdout)
        exact_plus_samples(row(d, "crashes.py", 8)["alloc_bytes"], 8_000_000, f"{how}: bytes before the end")


@per_version
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


@per_version
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


@once
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


@once
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


@once
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
