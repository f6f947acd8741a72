"""pyflow's PEP 517 build backend: builds the C parts with CMake and writes the wheel itself.

The wheel carries python/pyflow/ and, in pyflow/_native/, what `cmake --install` gives (bin/pyflow,
lib/pyflow/libpyflow.so and the frame readers): the launcher finds its runtime relative to itself the same
way in both. Native code but no Python extension module, so one wheel serves every Python 3 of the
platform: tag py3-none-<platform>.

It needs no setuptools or wheel (pip has nothing to fetch: it works offline, in build isolation or not).
Environment: PYFLOW_BUILD_DIR: the CMake build tree to use (default build-pip/; one already configured is
built again, not reconfigured);
PYFLOW_CMAKE_ARGS adds arguments to the configure step; CMAKE_BUILD_PARALLEL_LEVEL as for cmake.
The metadata is pyproject.toml's [project] table, read here without a TOML library (only the simple forms
that file uses)."""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "python", "pyflow")


def _project():
    """pyproject.toml's [project] table: {"name": ..., "scripts": {...}, "entry-points.pytest11": {...}}."""
    tables, current = {}, None
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith('"') else raw.strip()
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                current = tables.setdefault(m.group(1), {})
            elif current is not None and "=" in line:
                k, v = line.split("=", 1)
                current[k.strip().strip('"')] = v.strip().strip('"')
    project = tables.get("project", {})
    for name, table in tables.items():
        if name.startswith("project."):
            project[name[len("project."):]] = table
    return project


def _dist_name(project):
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project):
    return (f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
            f"Summary: {project.get('description', '')}\nRequires-Python: {project.get('requires-python', '>=3')}\n"
            "Classifier: Operating System :: POSIX :: Linux\n")


def _entry_points(project):
    out = []
    if project.get("scripts"):
        out.append("[console_scripts]")
        out += [f"{k} = {v}" for k, v in project["scripts"].items()]
    for key, table in project.items():
        if key.startswith("entry-points."):
            out.append(f"[{key[len('entry-points.'):]}]")
            out += [f"{k} = {v}" for k, v in table.items()]
    return "\n".join(out) + "\n"


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _dist_info_files(project):
    return {"METADATA": _metadata(project), "entry_points.txt": _entry_points(project),
            "top_level.txt": "pyflow\n",
            "WHEEL": f"Wheel-Version: 1.0\nGenerator: pyflow_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"}


def _run(cmd):
    print("pyflow_build:", " ".join(cmd), file=sys.stderr, flush=True)
    try:
        subprocess.check_call(cmd, stdout=sys.stderr)
    except FileNotFoundError:
        raise SystemExit(f"pyflow_build: {cmd[0]} is not installed (pyflow needs cmake and a C compiler: "
                         "apt-get install cmake build-essential)")


def _build_native():
    """Builds and installs the C parts into a staging prefix; returns it."""
    build_dir = os.path.abspath(os.environ.get("PYFLOW_BUILD_DIR") or os.path.join(ROOT, "build-pip"))
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        _run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DBUILD_TESTING=OFF",
              *os.environ.get("PYFLOW_CMAKE_ARGS", "").split()])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(min(os.cpu_count() or 1, 8))
    _run(["cmake", "--build", build_dir, "--parallel", jobs])
    stage = os.path.join(build_dir, "pip-stage")
    shutil.rmtree(stage, ignore_errors=True)
    _run(["cmake", "--install", build_dir, "--prefix", stage])
    if not os.access(os.path.join(stage, "bin", "pyflow"), os.X_OK):
        raise SystemExit(f"pyflow_build: the CMake install gave no launcher in {stage}/bin")
    return stage


def _files(stage):
    """(path in the wheel, file on disk) for the package and its native parts."""
    out = []
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            out.append((f"pyflow/{name}", os.path.join(PACKAGE, name)))
    for dirpath, _, names in sorted(os.walk(stage)):
        for name in sorted(names):
            disk = os.path.join(dirpath, name)
            out.append(("pyflow/_native/" + os.path.relpath(disk, stage).replace(os.sep, "/"), disk))
    return out


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    stage = _build_native()
    dist = _dist_name(project)
    wheel_name = f"{dist}-{_tag()}.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        def add(arcname, data, mode=0o644):
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16     # a regular file, its permissions (pip keeps +x)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            records.append(f"{arcname},{_record_hash(data)},{len(data)}")

        for arcname, disk in _files(stage):
            with open(disk, "rb") as f:
                data = f.read()
            add(arcname, data, 0o755 if os.access(disk, os.X_OK) else 0o644)
        for name, text in _dist_info_files(project).items():
            add(f"{dist}.dist-info/{name}", text.encode())
        records.append(f"{dist}.dist-info/RECORD,,")
        add_record = zipfile.ZipInfo(f"{dist}.dist-info/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        add_record.external_attr = 0o100644 << 16
        z.writestr(add_record, "\n".join(records) + "\n", zipfile.ZIP_DEFLATED)
    return wheel_name


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = f"{_dist_name(project)}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, text in _dist_info_files(project).items():
        with open(os.path.join(metadata_directory, dist_info, name), "w") as f:
            f.write(text)
    return dist_info


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    """The files git tracks (a checkout without git: everything but build outputs)."""
    project = _project()
    dist = _dist_name(project)
    try:
        names = subprocess.check_output(["git", "-C", ROOT, "ls-files", "-z"], stderr=subprocess.DEVNULL)
        names = [n for n in names.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for dirpath, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".git", "dist"))]
            names += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in files]
    name = f"{dist}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for n in sorted(names):
            if os.path.isfile(os.path.join(ROOT, n)):
                t.add(os.path.join(ROOT, n), arcname=f"{dist}/{n}", recursive=False)
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        data = _metadata(project).encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
