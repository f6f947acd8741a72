"""`pyflow ...` and `python -m pyflow ...`: runs the launcher the package carries, in this process's
place (exec), so the program's exit status, signals and output are the launcher's, hence the program's."""
import os
import sys

from . import launcher


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = launcher()
    except FileNotFoundError as e:
        sys.stderr.write(f"pyflow: {e}\n")
        return 2
    # A program run with `pyflow run -m pytest` etc. uses the interpreter of this environment by default,
    # as `python -m pyflow` users expect, unless they chose one.
    env = os.environ
    if "PYFLOW_PYTHON" not in env and sys.executable:
        env = dict(env, PYFLOW_PYTHON=sys.executable)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, [exe] + args, env)


if __name__ == "__main__":
    sys.exit(main())
