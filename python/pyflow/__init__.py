"""pyflow: a memory profiler for Python programs, in both layers (Python and native).

The wheel carries the C launcher and runtime in _native/ (bin/pyflow, lib/pyflow/libpyflow.so and the
frame readers): `pyflow ...` and `python -m pyflow ...` run that launcher. Inside a program run under
pyflow, pyflow.runtime reaches the already-loaded runtime (marks, counters) for the pytest plugin and the
Jupyter magic."""
import os

__version__ = "0.1.0"

_HERE = os.path.dirname(os.path.abspath(__file__))


def launcher():
    """The path of the pyflow launcher this package carries (FileNotFoundError when it is missing, as in
    a checkout that was never built)."""
    path = os.path.join(_HERE, "_native", "bin", "pyflow")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"pyflow's launcher is not installed at {path}: install the package with pip "
                                "(pip install --no-build-isolation --no-index .) or build it with CMake")
    return path
