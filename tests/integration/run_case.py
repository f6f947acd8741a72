#!/usr/bin/env python3
"""Integration tests: the real `pyflow` launcher on real interpreters, checked against ground truth.

Usage: run_case.py CASE --pyflow BUILD/bin/pyflow --python INTERPRETER
       run_case.py --list          (one line a case: theme, name, scope, lock or -; CMake registers the tests)
Exit 0 = pass, 1 = fail (with the failing assertion), 77 = skipped (with the reason).
The cases live in cases/, one module per theme, each a `case_NAME(c)` function marked @per_version (Debian's
python3 and one interpreter per supported minor) or @once (Debian's python3); tolerances are stated where
numbers are compared; @resource_lock(NAME) keeps cases that share something from running at once. Shared
helpers: cases/common.py.
"""
import argparse
import importlib
import os
import pkgutil
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases.common import CASES, SKIP, Ctx, Skip  # noqa: E402

for mod in pkgutil.iter_modules(cases.__path__):
    if mod.name != "common":
        importlib.import_module("cases." + mod.name)


def main():
    if sys.argv[1:] == ["--list"]:
        for name, (theme, scope, fn) in sorted(CASES.items(), key=lambda kv: (kv[1][0], kv[0])):
            print(theme, name, scope, getattr(fn, "lock", "-"))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--pyflow", required=True)
    ap.add_argument("--python", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.python):
        print(f"SKIP: interpreter {a.python} is not installed here")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="pyflow-it-")
    try:
        CASES[a.case][2](Ctx(os.path.abspath(a.pyflow), a.python, tmp))
    except Skip as s:
        print(f"SKIP: {s}")
        return SKIP
    except AssertionError as e:
        print(f"FAIL {a.case} on {a.python}: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PASS {a.case} on {a.python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
