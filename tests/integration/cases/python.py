"""Integration cases: pyflow in Python tools: pip install, the pytest plugin, Jupyter."""
import glob
import json
import os
import re
import shutil

from .common import HERE, PROGRAMS, Skip, has_numpy, line_of, near, once, resource_lock, run


ROOT = os.path.dirname(os.path.dirname(HERE))


def venv_pythons(c):
    """Debian's python3 and the oldest and newest pyenv interpreters present (pyenv's 3.12 and 3.13 venvs have
    pip but no setuptools or wheel: the build backend needs neither)."""
    pyenv = sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3"),
                   key=lambda p: [int(x) for x in re.findall(r"versions/3\.(\d+)\.(\d+)", p)[0]])
    pyenv = [p for p in pyenv if re.search(r"versions/3\.(8|9|1[0-3])\.", p)]
    return ["/usr/bin/python3"] + ([pyenv[0], pyenv[-1]] if len(pyenv) > 1 else pyenv)


def make_pip_venv(c, python, name):
    venv = os.path.join(c.tmp, name)
    cp = run([python, "-m", "venv", venv])
    if cp.returncode != 0:
        raise Skip(f"{python} cannot make a venv (python3-venv): {cp.stderr.strip()[-200:]}")
    return venv


def pip_env(c):
    """pip offline, building in a CMake tree kept next to the tests' build (incremental on later runs)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(c.pyflow)))
    return {**os.environ, "PYFLOW_BUILD_DIR": os.path.join(build, "pip-build"), "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}


def notebook_rows(html_text):
    """%pyflow's table as {source text: [allocated, python, native, at its peak, left live]} (bytes, rounded)."""
    units = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}
    rows = {}
    for tr in re.findall(r"<tr><td>.*?</tr>", html_text, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        nums = [float(v.split()[0]) * units[v.split()[1]] for v in cells[1:6]]
        import html
        rows[html.unescape(re.sub(r"</?code>", "", cells[6]))] = nums
    return rows


@once
@resource_lock("pyflow_pip_build")
def case_pip_install(c):
    """`pip install .` from the checkout, offline, into a venv of Debian's python3 and of pyenv interpreters:
    `pyflow` is on the venv's PATH and profiles an example (the report names its line), `python -m pyflow`
    works and passes the program's exit status; `pip wheel .` gives a py3-none-<platform> wheel carrying the
    launcher, the runtime, the frame readers and the pytest11 entry point."""
    if not shutil.which("cmake"):
        raise Skip("cmake is not installed")
    env = pip_env(c)
    for i, python in enumerate(venv_pythons(c)):
        if not os.path.exists(python):
            continue
        venv = make_pip_venv(c, python, f"venv{i}")
        cp = run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", ROOT], env=env, timeout=900)
        assert cp.returncode == 0, f"pip install with {python}:\n{cp.stdout[-1500:]}{cp.stderr[-1500:]}"
        exe = os.path.join(venv, "bin", "pyflow")
        assert os.access(exe, os.X_OK), f"no pyflow on the venv's PATH ({exe})"
        clean = {k: v for k, v in os.environ.items() if k != "PYFLOW_PYTHON"}
        cp = run([exe, "run", os.path.join(ROOT, "examples", "leaky_cache.py")], env=clean)
        assert cp.returncode == 0, cp.stderr
        minor = run([os.path.join(venv, "bin", "python"), "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()
        assert f"Python {minor}" in cp.stderr, f"the venv's own interpreter ({minor}) runs the program:\n{cp.stderr[:400]}"
        assert re.search(r"leaky_cache\.py:\d+", cp.stderr), cp.stderr
        info = run([exe, "info"], env=clean).stdout
        assert os.path.join(venv, "lib") in info and "site-packages/pyflow/_native/lib/pyflow" in info, info
        cp = run([os.path.join(venv, "bin", "python"), "-m", "pyflow", "run", "-c", "import sys; sys.exit(3)"],
                 env=clean)
        assert cp.returncode == 3, (cp.returncode, cp.stderr)
    wheels = os.path.join(c.tmp, "wheels")
    cp = run([os.path.join(c.tmp, "venv0", "bin", "python"), "-m", "pip", "wheel", "--no-deps", ROOT, "-w", wheels],
             env=env, timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    import zipfile
    (whl,) = os.listdir(wheels)
    assert re.match(r"pyflow-[\d.]+-py3-none-linux_\w+\.whl$", whl), whl
    with zipfile.ZipFile(os.path.join(wheels, whl)) as z:
        names = z.namelist()
        entry = z.read([n for n in names if n.endswith("entry_points.txt")][0]).decode()
        mode = z.getinfo("pyflow/_native/bin/pyflow").external_attr >> 16
    for need in ("pyflow/_native/bin/pyflow", "pyflow/_native/lib/pyflow/libpyflow.so", "pyflow/__main__.py",
                 "pyflow/pytest_plugin.py"):
        assert need in names, (need, names)
    assert any(re.match(r"pyflow/_native/lib/pyflow/pf_pyframes_3\d+\.so", n) for n in names), names
    assert mode & 0o111, f"the launcher is not executable in the wheel ({oct(mode)})"
    assert "[pytest11]" in entry and "pyflow = pyflow.pytest_plugin" in entry, entry
    assert "[console_scripts]" in entry and "pyflow = pyflow.__main__:main" in entry, entry


@once
@resource_lock("pyflow_pip_build")
def case_pytest_limits(c):
    """The pytest plugin, installed with the wheel into a venv (Debian's pytest from the system): under pyflow
    (`pyflow run -m pytest` and `pytest --pyflow`) each test over its limit_memory / limit_leaks fails naming
    its line and both layers (numpy's 40 MB count as native), each twin under its limit passes; memory per
    test is in the summary and the JSON; without pyflow the limits are not checked, and it says so."""
    if run(["/usr/bin/python3", "-c", "import pytest"]).returncode != 0:
        raise Skip("Debian's python3-pytest is not installed")
    venv = os.path.join(c.tmp, "venv")
    cp = run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
    if cp.returncode != 0:
        raise Skip(f"no venv: {cp.stderr.strip()[-200:]}")
    cp = run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", ROOT], env=pip_env(c), timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    tests = os.path.join(PROGRAMS, "pytest_limits")
    src = os.path.join(tests, "test_limits.py")
    numpy = has_numpy("/usr/bin/python3")
    clean = {k: v for k, v in os.environ.items() if k != "PYFLOW_PYTHON"}
    py = os.path.join(venv, "bin", "python")
    profile = os.path.join(c.tmp, "tests.pflow")
    for how in (["pyflow", "run", "--no-report", "-o", profile, "-m", "pytest"], ["python", "-m", "pytest", "--pyflow"]):
        js = os.path.join(c.tmp, "tests.json")
        cmd = [os.path.join(venv, "bin", how[0]), *how[1:], "-p", "no:cacheprovider", "--pyflow-json", js, "-q", src]
        cp = run(cmd, env=clean, cwd=tests)
        out = cp.stdout + cp.stderr
        assert cp.returncode == 1, f"{how}: rc {cp.returncode}\n{out[-3000:]}"
        failed = set(re.findall(r"FAILED test_limits\.py::(\w+)", out))
        expect = {"test_peak_over", "test_leaks_over"} | ({"test_numpy_peak_over"} if numpy else set())
        assert failed == expect, f"{how}: failed {failed}, expected {expect}\n{out[-3000:]}"
        peak_line = line_of(src, "block = bytearray(32 << 20)")
        assert re.search(r"test_peak_over: 3\d\.\d MiB its peak, over @pytest\.mark\.limit_memory\(\"24\.0 MiB\"\)", out), out
        assert re.search(rf"test_limits\.py:{peak_line} test_peak_over: 3\d\.\d MiB \(python 3\d\.\d MiB, native", out), out
        leak_line = line_of(src, "kept.append(bytearray(4 << 20))")
        assert re.search(r"test_leaks_over: 4\.\d MiB left live after it, over @pytest\.mark\.limit_leaks", out), out
        assert f"test_limits.py:{leak_line} test_leaks_over: 4." in out, out
        if numpy:
            np_line = line_of(src, "a = np.ones(5_000_000)")
            assert re.search(rf"test_limits\.py:{np_line} test_numpy_peak_over: 3\d\.\d MiB \(python [^,]+, native 3\d\.\d MiB", out), out
        assert "pyflow: memory per test" in out, out
        with open(js) as f:
            doc = json.load(f)
        by = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
        assert doc["schema"] == "pyflow-pytest/1" and len(by) == (6 if numpy else 4), by.keys()
        assert by["test_peak_over"]["peak_bytes"] >= 32 << 20 and by["test_peak_over"]["failed_limit"] == "limit_memory"
        assert by["test_peak_under"]["allocated_bytes"] >= 60 << 20 and by["test_peak_under"]["peak_bytes"] < 24 << 20
        assert by["test_leaks_over"]["leaked_bytes"] >= 4 << 20 and by["test_leaks_under"]["leaked_bytes"] < 1 << 20
        if numpy:
            assert by["test_numpy_peak_over"]["allocated_native_bytes"] >= 38 << 20, by["test_numpy_peak_over"]
        if "-o" in how:     # the profile's own report lists the tests too
            rep = run([os.path.join(venv, "bin", "pyflow"), "report", profile, "--format", "json"])
            tests_doc = {t["nodeid"].split("::")[-1]: t for t in json.loads(rep.stdout)["tests"]}
            assert set(tests_doc) == set(by), (tests_doc.keys(), by.keys())
            for name, t in tests_doc.items():
                assert t["peak_bytes"] == by[name]["peak_bytes"], (name, t, by[name])
                assert t["failed_limit"] == by[name]["failed_limit"], (name, t, by[name])
            text = run([os.path.join(venv, "bin", "pyflow"), "report", profile]).stdout
            assert re.search(r"tests \(pytest, \d measured, largest peak first\)", text), text[-1500:]
            assert re.search(r"test_limits\.py::test_peak_over  over limit_memory", text), text[-1500:]
    cp = run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", src], env=clean, cwd=tests)
    assert cp.returncode == 0, f"without pyflow the limits are not checked:\n{cp.stdout[-2000:]}"
    assert "memory limits not checked: not running under pyflow" in cp.stdout, cp.stdout[-1500:]


@once
@resource_lock("pyflow_pip_build")
def case_jupyter_notebook(c):
    """The kernel "Python 3 (pyflow)" (python -m pyflow.jupyter install) runs a notebook headless under nbclient:
    %pyflow after a cell that leaks 8 MiB names its line with the bytes it left live; after its twin, which frees
    what it allocates, the same table says nothing was left; %pyflow session still has the leaking line."""
    py = "/usr/bin/python3"
    if run([py, "-c", "import ipykernel, nbclient, nbformat"]).returncode != 0:
        raise Skip("python3-ipykernel / python3-nbclient are not installed")
    venv = os.path.join(c.tmp, "venv")
    cp = run([py, "-m", "venv", "--system-site-packages", venv])
    if cp.returncode != 0:
        raise Skip(f"no venv: {cp.stderr.strip()[-200:]}")
    vpy = os.path.join(venv, "bin", "python")
    cp = run([vpy, "-m", "pip", "install", ROOT], env=pip_env(c), timeout=900)
    assert cp.returncode == 0, cp.stdout[-1500:] + cp.stderr[-1500:]
    jp = os.path.join(c.tmp, "jupyter")
    cp = run([vpy, "-m", "pyflow.jupyter", "install", "--prefix", jp])
    assert cp.returncode == 0 and "Python 3 (pyflow)" in cp.stdout, cp.stdout + cp.stderr
    nb = os.path.join(c.tmp, "leak.ipynb")
    cp = run([vpy, os.path.join(PROGRAMS, "notebook", "make_notebook.py"), nb])
    assert cp.returncode == 0, cp.stderr
    script = ("import json, sys, nbformat, nbclient\n"
              "nb = nbformat.read(sys.argv[1], as_version=4)\n"
              "nbclient.NotebookClient(nb, kernel_name='pyflow', timeout=120).execute()\n"
              "print(json.dumps([[o.get('data', {}).get('text/html') or o.get('text') or '' for o in c.outputs]"
              " for c in nb.cells]))\n")
    env = {**os.environ, "JUPYTER_PATH": os.path.join(jp, "share", "jupyter"), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("PYFLOW_PYTHON", None)
    cp = run([vpy, "-c", script, nb], env=env, timeout=300)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-3000:]
    outs = json.loads(cp.stdout.strip().splitlines()[-1])
    leak, twin, session = outs[2][0], outs[4][0], outs[5][0]
    assert "pyflow: cell [2]" in leak, leak
    rows = notebook_rows(leak)
    key = "kept.append(bytearray(1 << 20))   # leaks 8 MiB"
    assert key in rows, f"the leaking line is not named: {leak}"
    near(rows[key][4], 8 << 20, 0.02, "bytes the leaking cell left live (1 MiB blocks: exact)")
    rows = notebook_rows(twin)
    key2 = "temp = bytearray(1 << 20)   # freed: nothing left"
    assert "pyflow: cell [4]" in twin and key2 in rows, twin
    assert key not in rows, f"a cell's report has only what that cell allocated: {twin}"
    assert rows[key2][0] >= 8 << 20 and rows[key2][4] == 0, f"the twin left nothing live: {rows[key2]}"
    assert key in notebook_rows(session), session
