"""Unit test of one frame reader (interpose/pyframes, pf_pyframes_3XX.so), run by the interpreter it serves.

The probe extension (tests/unit/pyframes/probe.c, built for this minor) loads the reader and hands back what
it sees; every check compares that with what the interpreter itself reports through sys._getframe():
code objects, names, file names, first lines, instruction offsets in bytes, line tables. Standard library
only, so it runs under every pyenv interpreter and Debian's python3.11.

usage: python3.X test_pyframes.py --reader pf_pyframes_3X.so --probe-dir DIR --lifecycle pf_lifecycle.so
Exit status: 0 passed, 1 failed, 77 skipped.
"""
import argparse
import asyncio
import os
import subprocess
import sys
import threading
import time

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)


def expected_linetable(code):
    if sys.version_info < (3, 10):
        return 1, code.co_lnotab         # PF_LT_LNOTAB
    if sys.version_info < (3, 11):
        return 2, code.co_linetable      # PF_LT_LINETABLE
    return 3, code.co_linetable          # PF_LT_LOCATIONS


def utf8_of(s):
    """What the reader writes for a str: UTF-8, lone surrogates replaced by U+FFFD."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s).encode("utf-8")


def compare(label, captured, frame, line0, depth_at_least=1):
    """captured: the probe's list (innermost first) taken in `frame`, on line line0."""
    expected = []
    f = frame
    while f is not None:
        expected.append(f)
        f = f.f_back
    names = [c[2] for c in captured]
    check(len(captured) == len(expected),
          "%s: %d frames captured, %d expected: %s vs %s"
          % (label, len(captured), len(expected), names, [f.f_code.co_name for f in expected]))
    check(len(captured) >= depth_at_least, "%s: only %d frames" % (label, len(captured)))
    for i, (c, f) in enumerate(zip(captured, expected)):
        code, filename, name, firstlineno, lasti, fmt, linetable, line = c
        co = f.f_code
        where = "%s frame %d (%s)" % (label, i, co.co_name)
        check(code is co, where + ": code object differs")
        check(filename == utf8_of(co.co_filename).decode("utf-8"), where + ": filename %r" % filename)
        check(name == co.co_name, where + ": name %r" % name)
        check(firstlineno == co.co_firstlineno, where + ": firstlineno %d vs %d" % (firstlineno, co.co_firstlineno))
        efmt, elt = expected_linetable(co)
        check(fmt == efmt and linetable == elt, where + ": line table format %d or bytes differ" % fmt)
        check(lasti % 2 == 0 and lasti < len(co.co_code), where + ": lasti %d out of range" % lasti)
        eline = line0 if i == 0 else f.f_lineno
        check(line == eline, where + ": line %s vs %s" % (line, eline))
        if i > 0:   # outer frames stand still; the innermost one moved on since the capture
            check(lasti == f.f_lasti, where + ": lasti %d vs f_lasti %d" % (lasti, f.f_lasti))


def snap(label, **kw):
    """Captures here (both on this one line) and compares with the caller chain."""
    got, frame, line0 = probe.capture(256, kw.get("release", False), kw.get("sleep_ms", 0)), sys._getframe(), sys._getframe().f_lineno
    check(got is not None, label + ": capture returned -1 on a Python thread")
    if got is not None:
        frames, truncated = got
        check(not truncated, label + ": truncated")
        compare(label, frames, frame, line0, kw.get("depth", 2))
    return got


# ---- the cases ----

def nested(n):
    if n == 0:
        return snap("nested", depth=7)
    return nested(n - 1)


def gen():
    yield snap("generator")
    yield snap("generator resumed")


async def coro_inner():
    await asyncio.sleep(0)
    return snap("coroutine")


async def coro_outer():
    return await coro_inner()


class Init:
    def __init__(self, record):
        if record:
            snap("__init__ (specialized call)")


def test_basic_shapes():
    nested(5)
    g = gen()
    next(g)
    next(g)
    asyncio.run(coro_outer())
    c = coro_outer()            # driven by hand: the frames are the coroutine's and ours
    try:
        c.send(None)
        c.send(None)
    except StopIteration:
        pass
    (lambda: snap("lambda"))()
    [snap("comprehension") for _ in range(1)]
    for i in range(200):        # enough calls to specialize (3.13 then pushes the __init__ cleanup shim)
        Init(i == 199)
    sorted([2, 1], key=lambda x: snap("key function called from C") and x)


def test_odd_names():
    names = {
        "ascii": ("plain_file.py", "plain_func"),
        "latin-1": ("naïve_café.py", "café"),
        "ucs-2": ("模块_函数.py", "函数"),
        "ucs-4": ("emoji_😀_𠀀.py", "函数𠀀"),
        "surrogate": ("bad_\udcff_name.py", "f"),
    }
    for kind, (filename, fname) in names.items():
        src = "def %s():\n    return snap(%r)\n" % (fname, "non-ASCII " + kind)
        ns = {"snap": snap}
        exec(compile(src, filename, "exec"), ns)
        got = ns[fname]()
        if got:
            top = got[0][1]     # [0] is snap()
            check(top[1] == utf8_of(filename).decode("utf-8"), kind + ": filename %r" % top[1])
            check(top[2] == fname, kind + ": name %r" % top[2])
            d = probe.describe(top[0])
            check(d[0] == utf8_of(filename) and d[1] == fname.encode("utf-8"), kind + ": describe bytes")
            for size in range(0, len(d[0]) + 2):   # cut buffers: a prefix, never a broken character
                part = probe.describe(top[0], size, size)
                check(len(part[0]) <= size and d[0].startswith(part[0]), kind + ": cut at %d" % size)
                try:
                    part[0].decode("utf-8"), part[1].decode("utf-8")
                except UnicodeDecodeError:
                    check(False, kind + ": cut at %d splits a character" % size)
    # a name set directly on the code object (an emoji is no identifier)
    def plain():
        return snap("emoji name")
    plain.__code__ = plain.__code__.replace(co_name="😀_x")
    got = plain()
    check(got and got[0][1][2] == "😀_x", "emoji co_name")


def test_describe_identify():
    code = test_describe_identify.__code__
    d = probe.describe(code)
    check(d is not None, "describe refused a code object")
    fmt, lt = expected_linetable(code)
    check(d[0] == code.co_filename.encode() and d[1] == b"test_describe_identify", "describe names")
    check(d[2] == code.co_firstlineno and d[3] == fmt and d[4] == lt, "describe line table")
    check(d[5] == probe.identify(code), "identify differs from describe's identity")
    check(d[5][0] == id(code.co_filename) and d[5][1] == id(code.co_name), "identity fields")
    for other in (None, 1, "code", [code], test_describe_identify, sys._getframe()):
        check(probe.describe(other) is None, "describe accepted %r" % type(other))
        check(probe.identify(other) is None, "identify accepted %r" % type(other))
    clone = code.replace(co_name="other")
    check(probe.identify(clone) != probe.identify(code), "identity ignores co_name")


def test_truncation():
    def deep(n):
        if n:
            return deep(n - 1)
        got = probe.capture(5)
        check(got is not None and len(got[0]) == 5 and got[1] == 1, "max=5 on a deep stack: %r" % (got,))
        got = probe.capture(0)
        check(got is not None and got[0] == [] and got[1] == 1, "max=0: %r" % (got,))
        got, frame, line0 = probe.capture(1024), sys._getframe(), sys._getframe().f_lineno
        check(got is not None and not got[1], "max=1024 on ~320 frames truncated")
        if got:
            compare("300 deep", got[0], frame, line0, 300)
    deep(300)


DROPPING_A_SRC = """
def a_outer(k):
    return keep_mid(k)
def a_inner(k):
    return b_leaf(k) if k == 'leaf' else b_mid(k)
"""
DROPPING_B_SRC = """
def b_mid(k):
    return keep_leaf(k)
def b_leaf(k):
    return take(k)
"""
KEEP_SRC = """
def keep_mid(k):
    return a_inner(k)
def keep_leaf(k):
    return take(k)
"""


def test_dropping():
    """capture_hinted with two files to leave out (the recorder's import machinery): every frame of theirs
    goes but the innermost and the outermost, and max counts the frames kept."""
    ns = {}
    exec(compile(DROPPING_A_SRC, "<drop-a>", "exec"), ns)
    exec(compile(DROPPING_B_SRC, "<drop-b>", "exec"), ns)
    exec(compile(KEEP_SRC, "<kept>", "exec"), ns)
    file_a = ns["a_outer"].__code__.co_filename
    file_b = ns["b_mid"].__code__.co_filename
    file_here = test_dropping.__code__.co_filename
    check(file_a is not file_b, "two file objects")
    got = {}

    def take(k):
        frames, f = [], sys._getframe()
        while f is not None:
            frames.append(f.f_code)
            f = f.f_back
        got[k] = (probe.capture_dropping(file_a, file_b), probe.capture_dropping(file_a, file_b, 3),
                  probe.capture_dropping(None, None), probe.capture_dropping(file_here, file_a), frames)
    ns["take"] = take

    def expect(frames, files):
        return [c for i, c in enumerate(frames)
                if i == 0 or i == len(frames) - 1 or not any(c.co_filename is f for f in files)]
    for k in ("mid", "leaf"):
        ns["a_outer"](k)
        dropped, three, none, here, frames = got[k]
        codes = [c[0] for c in dropped[0]]
        want = expect(frames, (file_a, file_b))
        check(codes == want and not dropped[1], "dropping %s: %s, expected %s" % (
            k, [c.co_name for c in codes], [c.co_name for c in want]))
        check(len(want) < len(frames), "dropping %s: the case drops nothing" % k)
        check([c[0] for c in three[0]] == want[:3] and three[1], "dropping %s, max=3: %r" % (k, three))
        check([c[0] for c in none[0]] == frames and not none[1], "dropping nothing (%s)" % k)
        # the outermost frames (main(), <module>) are this file's: the outermost is kept all the same
        want = expect(frames, (file_here, file_a))
        check([c[0] for c in here[0]] == want and want[-1] is frames[-1] and want[0] is frames[0],
              "dropping this file's frames (%s): %s, expected %s" % (
                  k, [c[0].co_name for c in here[0]], [c.co_name for c in want]))


def test_threads():
    errors = []

    def worker(n):
        try:
            if n:
                return worker(n - 1)
            snap("thread")
            snap("thread, GIL released", release=True)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, "thread errors: %r" % errors)


def test_gil_released_other_thread_busy():
    """Capture without the GIL while another thread runs bytecode: the stack must be ours, not theirs."""
    stop = threading.Event()

    def busy():
        x = 0
        while not stop.is_set():
            x += 1
    t = threading.Thread(target=busy)
    t.start()
    try:
        def here_without_gil():
            return snap("GIL released, other thread running", release=True, sleep_ms=30)
        here_without_gil()
    finally:
        stop.set()
        t.join()


def test_native_thread():
    check(probe.native_thread_capture() == -1,
          "capture or capture_hinted (without a hint, or with another thread's) on a native thread did not return -1")


def test_is_finalizing():
    check(probe.is_finalizing() == 0, "is_finalizing while running")


FINALIZE_CHILD = r"""
import sys, threading, time
sys.path.insert(0, %(dir)r)
import pf_probe
pf_probe.load(%(reader)r, %(word)d)
class Late:
    def __del__(self, report=pf_probe.report):
        report("pf-del")
keep = Late()
def deep(n):
    return deep(n - 1) if n else pf_probe.spin_nogil()
for _ in range(3):
    threading.Thread(target=deep, args=(20,), daemon=True).start()
time.sleep(0.05)
pf_probe.report("pf-main")
"""


def test_finalization(reader, probe_dir, word):
    """Daemon threads capturing without the GIL while the main thread finalizes; a __del__ at shutdown. With
    word, the reader reads the interpreter's finalizing word (as under the runtime), which must be 0 while
    the program runs and set at shutdown: its offset is this version's."""
    for attempt in range(5):
        r = subprocess.run([sys.executable, "-c", FINALIZE_CHILD % {"dir": probe_dir, "reader": reader,
                                                                    "word": word}],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 0, "finalization child exited %d: %s" % (r.returncode, err[-500:]))
        check("pf-main finalizing=0 rc=" in err and "pf-main finalizing=0 rc=-1" not in err,
              "main thread report: %r" % err)
        check(("word=0" if word else "word=-1") in [l for l in err.splitlines() if l.startswith("pf-main")][0],
              "main thread's word: %r" % err)
        if "pf-del" in err:
            line = [l for l in err.splitlines() if l.startswith("pf-del")][0]
            check("finalizing=1" in line and "rc=-1" not in line, "__del__ at shutdown: %r" % line)
            check(("word=1" if word else "word=-1") in line, "the word at shutdown: %r" % line)
        if r.returncode != 0:
            break


WORD_CHILD = r"""
import sys
sys.path.insert(0, %(dir)r)
import pf_probe
pf_probe.load(%(reader)r, 1)
class Late:
    def __del__(self, report=pf_probe.report):
        report("pf-del")
keep = Late()
pf_probe.report("pf-main")
"""


def test_finalizing_word(reader, probe_dir):
    """The interpreter's finalizing word, where the runtime reads it instead of calling is_finalizing: 0
    while the program runs, set when a __del__ runs at shutdown (so its offset is this version's), and
    what the reader's own check says then."""
    r = subprocess.run([sys.executable, "-c", WORD_CHILD % {"dir": probe_dir, "reader": reader}],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode(errors="replace")
    check(r.returncode == 0, "word child exited %d: %s" % (r.returncode, err[-500:]))
    check("pf-main finalizing=0 rc=1 word=0" in err, "while running: %r" % err)
    check("pf-del finalizing=1 rc=1 word=1" in err, "at shutdown: %r" % err)


def test_lifecycle(reader, lifecycle):
    """The reader called before main and after exit (as from the runtime's constructor/destructor)."""
    env = dict(os.environ, LD_PRELOAD=lifecycle, PF_LIFECYCLE_READER=reader)
    r = subprocess.run([sys.executable, "-c", "pass"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode(errors="replace")
    check(r.returncode == 0, "lifecycle child exited %d: %s" % (r.returncode, err[-500:]))
    check("pf-lifecycle before-main rc=-1 fin=0" in err, "before main: %r" % err)
    check("pf-lifecycle after-exit rc=-1 " in err, "after exit: %r" % err)


def test_symbols(reader):
    """Exactly one export; imports only from the interpreter (no libc: the runtime interposes memcpy and
    malloc, and the reader runs inside those hooks)."""
    def nm(*flags):
        try:
            out = subprocess.run(["nm", "-D"] + list(flags) + [reader], stdout=subprocess.PIPE, check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        return [l.split()[-1] for l in out.stdout.decode().splitlines() if l.strip()]
    exports, imports = nm("--defined-only"), nm("--undefined-only")
    if exports is None or imports is None:
        print("nm not available: symbol checks skipped")
        return
    check(exports == ["pf_pyframes_get"], "exports: %r" % exports)
    allowed = ("Py", "_Py", "_ITM_", "__cxa_finalize", "__gmon_start__", "__asan", "__ubsan", "__sanitizer")
    bad = [s for s in imports if not s.startswith(allowed)]
    check(not bad, "imports outside the interpreter: %r" % bad)


def bench():
    def down(n):
        if n:
            return down(n - 1)
        return probe.bench(200000)
    ns, frames = down(7)    # + bench(), test body, main(), <module>: ~10 frames
    print("capture(): %.1f ns per call for %d frames (%s)" % (ns, frames, sys.version.split()[0]), flush=True)


def main():
    global probe
    ap = argparse.ArgumentParser()
    ap.add_argument("--reader", required=True)
    ap.add_argument("--probe-dir", required=True)
    ap.add_argument("--lifecycle", required=True)
    ap.add_argument("--minor", type=int, required=True)
    a = ap.parse_args()
    if sys.version_info[:2] != (3, a.minor):
        print("interpreter is %s, reader is for 3.%d" % (sys.version.split()[0], a.minor))
        return 1
    for p in (a.reader, os.path.join(a.probe_dir, "pf_probe.so"), a.lifecycle):
        if not os.path.exists(p):
            print("missing", p)
            return 77
    sys.path.insert(0, a.probe_dir)
    import pf_probe as probe
    check(probe.load(a.reader) == a.minor, "py_minor")
    # a class body (module level, so the chain is <module> -> body -> snap)
    exec(compile("class Body:\n    captured = snap('class body')\n", __file__, "exec"), globals())
    for t in (test_basic_shapes, test_odd_names, test_describe_identify, test_truncation, test_dropping, test_threads,
              test_gil_released_other_thread_busy, test_native_thread, test_is_finalizing):
        t()
    test_symbols(a.reader)
    test_finalization(a.reader, a.probe_dir, 0)
    test_finalization(a.reader, a.probe_dir, 1)
    test_finalizing_word(a.reader, a.probe_dir)
    test_lifecycle(a.reader, a.lifecycle)
    bench()
    if FAILURES:
        print("%d failures on %s" % (len(FAILURES), sys.version.split()[0]))
        return 1
    print("ok: %s (%s)" % (sys.version.split()[0], sys.executable))
    return 0


if __name__ == "__main__":
    sys.exit(main())
