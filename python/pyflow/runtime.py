"""The runtime of a process running under pyflow, reached in process through ctypes (recorder/pyflow_api.h):
running counters, the peak since a reset, labels written into the profile, and the profile itself, which
is on disk as it is written (a MAP_SHARED file), so `pyflow report --window` can read a part of the run
while the run goes on. Nothing here works (active() is False) in a process pyflow does not profile."""
import ctypes
import json
import os
import subprocess

_API_VERSION = 1


class Counters(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint64), ("now_ns", ctypes.c_uint64),
                ("allocated_python", ctypes.c_int64), ("allocated_native", ctypes.c_int64),
                ("live_python", ctypes.c_int64), ("live_native", ctypes.c_int64),
                ("peak", ctypes.c_int64), ("enabled", ctypes.c_int64)]

    @property
    def allocated(self):
        return self.allocated_python + self.allocated_native

    @property
    def live(self):
        return self.live_python + self.live_native


_lib = None


def _runtime_path():
    """The libpyflow.so mapped into this process, from /proc/self/maps (None when none is)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if path.endswith("/libpyflow.so"):
                    return path
    except OSError:
        pass
    return None


def _load():
    global _lib
    if _lib is None:
        _lib = False
        path = _runtime_path()
        if path:
            try:
                lib = ctypes.CDLL(path)     # already loaded (LD_PRELOAD): this only finds it
                lib.pyflow_counters.argtypes = [ctypes.POINTER(Counters), ctypes.c_uint64]
                lib.pyflow_counters.restype = ctypes.c_int
                lib.pyflow_mark.argtypes = [ctypes.c_char_p]
                lib.pyflow_mark.restype = ctypes.c_uint64
                lib.pyflow_reset_peak.restype = None
                _lib = lib
            except (OSError, AttributeError):   # a runtime older than the API
                _lib = False
    return _lib or None


def counters():
    """The runtime's counters now (Counters), or None when this process is not profiled."""
    lib = _load()
    if not lib:
        return None
    c = Counters()
    lib.pyflow_counters(ctypes.byref(c), ctypes.sizeof(c))
    return c if c.enabled and c.version >= _API_VERSION else None


def active():
    return counters() is not None


def reset_peak():
    lib = _load()
    if lib:
        lib.pyflow_reset_peak()


def mark(label):
    """Writes label into the profile; returns its time on the profile's clock (0: not profiled)."""
    lib = _load()
    return lib.pyflow_mark(label.encode("utf-8", "replace")[:1024]) if lib else 0


def launcher():
    """The pyflow launcher installed with this runtime (PREFIX/bin/pyflow next to PREFIX/lib/pyflow/)."""
    path = _runtime_path()
    if path:
        exe = os.path.normpath(os.path.join(os.path.dirname(path), "..", "..", "bin", "pyflow"))
        if os.access(exe, os.X_OK):
            return exe
    from . import launcher as packaged
    return packaged()


def profile_path():
    """This process's profile file: PYFLOW_OUTPUT for the process pyflow launched, else its .<pid> file."""
    base = os.environ.get("PYFLOW_OUTPUT")
    if not base:
        return None
    if os.environ.get("PYFLOW_ROOT_PID") in (None, "", str(os.getpid())):
        return base
    mine = f"{base}.{os.getpid()}"
    return mine if os.path.exists(mine) else None


def window_report(from_ns, to_ns, fmt="json"):
    """pyflow's report of what this process allocated in [from_ns, to_ns] (frees until to_ns): for "json" the
    parsed document, whose "lines" hold each line's bytes allocated then, its peak and what is still live at
    to_ns; for another format ("html") its text. None when it cannot be made (the caller has the counters)."""
    path = profile_path()
    if not path or not to_ns:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFLOW_") and k != "LD_PRELOAD"}
    try:
        cp = subprocess.run([launcher(), "report", path, "--format", fmt, "--window", f"{from_ns}:{to_ns}"],
                            capture_output=True, env=env, timeout=120)
        if cp.returncode != 0:
            return None
        return json.loads(cp.stdout) if fmt == "json" else cp.stdout.decode("utf-8", "replace")
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def human_bytes(n):
    """12.3 MiB."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
