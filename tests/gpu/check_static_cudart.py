#!/usr/bin/env python3
"""A statically linked CUDA runtime (libcudart_static.a, as in CuPy's wheels) under pyflow's runtime: it
gets cuGetProcAddress_v2 from libcuda with dlsym, asks it for "cuGetProcAddress" and looks every later
entry point up through that. Each of those lookups must reach the driver through pyflow's hook (else
cudaMalloc and the copies go past pyflow, as CuPy's did on a GPU).

Usage: check_static_cudart.py APP LOGGING_LIBCUDA_DIR LIBPYFLOW
Exit 0 = pass, 1 = fail, 77 = skipped."""
import os
import subprocess
import sys

app, libdir, runtime = sys.argv[1:4]
env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=runtime)
cp = subprocess.run([app], capture_output=True, text=True, env=env, timeout=120)
lookups = [ln.split("\t") for ln in cp.stderr.splitlines() if ln.startswith("lookup\t")]   # name, version, caller
names = [w[1] for w in lookups]
if "cuGetProcAddress" not in names:
    print("SKIP: this CUDA runtime does not fetch cuGetProcAddress by name:", names[:8])
    sys.exit(77)
later = lookups[names.index("cuGetProcAddress"):]
past = [f"{w[1]} (from {w[3]})" for w in later if w[3] != os.path.basename(runtime)]
alloc = [w for w in later if w[1] == "cuMemAlloc"]
if past or not alloc:
    print("FAIL static_cudart: lookups past pyflow:", past[:8], "| cuMemAlloc looked up:", bool(alloc))
    sys.exit(1)
print(f"PASS static_cudart: {len(later)} lookups after cuGetProcAddress, all through pyflow")
