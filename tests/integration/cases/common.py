"""What every integration case shares: running pyflow, reading its JSON, comparing with ground truth, and
the registry of cases (`@per_version`: on Debian's python3 and one interpreter per supported minor; `@once`:
on Debian's python3). A case raises Skip (exit 77) when something it needs is absent, and fails by assertion.
"""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/integration
PROGRAMS = os.path.join(HERE, "programs")


SKIP = 77


class Skip(Exception):
    pass


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("errors", "replace")
    kw.setdefault("timeout", 300)
    return subprocess.run(cmd, **kw)


def prog(name):
    return os.path.join(PROGRAMS, name)


def row(doc, script, line):
    """The per-line entry of `script` (a file name) at `line`, summed over functions."""
    rows = [r for r in doc["lines"] if os.path.basename(r["file"]) == script and r["line"] == line]
    assert rows, f"no row for {script}:{line} in {[(r['file'], r['line']) for r in doc['lines'][:12]]}"
    out = dict(rows[0])
    for r in rows[1:]:
        for k, v in r.items():
            if isinstance(v, (int, float)) and k != "line":
                out[k] += v
    return out


def near(value, expected, rel, what):
    assert abs(value - expected) <= rel * expected, (
        f"{what}: {value} is not within {rel:.0%} of {expected}")


def exact_plus_samples(value, exact, what, samples=2):
    """A line whose big allocations are recorded exactly (>= 1 MiB) and whose few small ones (the list, the
    comprehension's own objects) are sampled, each sample standing for about 256 KiB: the line holds the
    exact bytes, plus zero, one or rarely two samples' worth (more where the small ones add up: say how
    many the line's sampled bytes allow)."""
    assert exact * 0.98 <= value <= exact + samples * 300_000, (
        f"{what}: {value} is not {exact} plus at most {samples} samples")


class Ctx:
    def __init__(self, pyflow, python, tmp):
        self.pyflow, self.python, self.tmp = pyflow, python, tmp

    def profile(self, script, *args, extra=(), stdin="", env=None):
        """Runs pyflow with --json (env: variables added to the environment); returns (completed process,
        json document)."""
        out = os.path.join(self.tmp, "out.json")
        if os.path.exists(out):
            os.unlink(out)
        cp = run([self.pyflow, "run", "--python", self.python, "--json", out, *extra, script, *args],
                 input=stdin, env={**os.environ, **env} if env else None)
        assert os.path.exists(out), f"no JSON written; stderr:\n{cp.stderr}"
        with open(out) as f:
            return cp, json.load(f)

    def need_numpy(self):
        if run([self.python, "-c", "import numpy"]).returncode != 0:
            raise Skip(f"{self.python} has no numpy")


def has_numpy(python):
    return run([python, "-c", "import numpy"]).returncode == 0


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")


def example(name):
    return os.path.join(EXAMPLES, name)


def flows_at(doc, script, line):
    return [f for f in doc["flows"] if os.path.basename(f["at"]["file"]) == script and f["at"]["line"] == line]


def line_of(path, text):
    with open(path) as f:
        for n, l in enumerate(f, 1):
            if text in l:
                return n
    raise AssertionError(f"{text!r} not in {path}")


def marked_lines(program, marker):
    """The line numbers of `program` whose comment carries `marker` (LEAK: must be reported in mode leak;
    KEPT: holds memory at exit in mode twin and must not be reported)."""
    with open(prog(program)) as f:
        return {i + 1 for i, text in enumerate(f) if "#" in text and marker in text.split("#", 1)[1].split()}


CASES = {}     # name -> (theme, scope, function); the function's `lock`: a resource it must not share


def _register(scope):
    def deco(fn):
        name = fn.__name__[len("case_"):]
        theme = fn.__module__.rsplit(".", 1)[-1]
        assert name not in CASES, f"two cases named {name}"
        CASES[name] = (theme, scope, fn)
        return fn
    return deco


per_version = _register("per_version")
once = _register("once")


def resource_lock(name):
    """Cases holding the same lock never run at the same time (ctest RESOURCE_LOCK): they share a build tree
    or a port. Put it below @once / @per_version."""
    def deco(fn):
        fn.lock = name
        return fn
    return deco

