"""Page-protection watches and system calls that read a path: paths kept as bytes objects (malloc blocks,
being over 512 bytes) laid between numpy arrays whose loads are sampled and watched, so that a load watch
makes a path's page no-access; each path then goes to stat, lstat, access, open (and __open64_2, as a
fortified build calls it), listdir, readlink, realpath and dlopen (the kernel, or the loader, reads it:
on a no-access page the call would fail with EFAULT, and an import would find no module). Prints the
failures by call, which must be none, as without pyflow."""
import ctypes
import ctypes.util
import os
import sys
import tempfile
import time

import numpy as np

top = tempfile.mkdtemp()
os.symlink("/", os.path.join(top, "link"))
libm = next(os.path.join(d, "libm.so.6") for d in ("/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib")
            if os.path.exists(os.path.join(d, "libm.so.6")))
deep = os.path.join(top, "./" * 250)          # paths past pymalloc's 512 bytes, to the same directory
arrays, paths, libs = [], [], []
for i in range(1500):
    arrays.append(np.zeros(70))                # 560-byte buffers, malloc's like the paths
    paths.append(os.fsencode(deep + "/" * (i % 5)))
    if i % 50 == 0:
        libs.append(os.fsencode(os.path.join(os.path.dirname(libm), "./" * 250, "libm.so.6")))
libc = ctypes.CDLL(None, use_errno=True)   # the global scope: pyflow's hooks first, as a program's calls
libc.__open64_2.argtypes = [ctypes.c_char_p, ctypes.c_int]     # what _FORTIFY_SOURCE builds call for open


def fortified_open(p):
    fd = libc.__open64_2(p, os.O_RDONLY)      # a bytes path goes by its own buffer, not a copy
    if fd < 0:
        raise OSError(ctypes.get_errno(), "__open64_2")
    os.close(fd)


calls = {
    "__open64_2": fortified_open,
    "stat": os.stat,
    "lstat": os.lstat,
    "access": lambda p: os.access(p, os.R_OK) or (_ for _ in ()).throw(OSError("access said no")),
    "open": lambda p: os.close(os.open(p, os.O_RDONLY)),
    "listdir": os.listdir,
    "readlink": lambda p: os.readlink(p + b"link"),
    "realpath": lambda p: os.path.realpath(p),
}
failures = {}
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
start = time.time()
while time.time() - start < seconds:
    for a in arrays:
        a += 1.0
    for name, call in calls.items():
        for p in paths[::25]:
            try:
                call(p)
            except OSError as e:
                failures[name] = failures.get(name, 0) + 1
    for p in libs:
        try:
            ctypes.CDLL(p)
        except OSError:
            failures["dlopen"] = failures.get("dlopen", 0) + 1
print("failures", sorted(failures.items()))
