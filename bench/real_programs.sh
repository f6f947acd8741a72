#!/usr/bin/env bash
# Runs real programs plain and under pyflow and compares what they report: numpy's own test suite (Debian's
# python3-numpy, with python3-pytest and python3-hypothesis), a scipy workload and a pandas workload
# (bench/real/pandas_workload.py). Prints the pytest summary lines and wall times of both runs, and whether
# the workloads' outputs are identical, so a change in results under pyflow shows at once.
#   bench/real_programs.sh [build/bin/pyflow] [numpy packages to test, default: numpy]
# The whole numpy suite needs more than 24 GiB (a numpy.lib test was OOM-killed here, plain); a subset:
#   bench/real_programs.sh build/bin/pyflow "numpy.linalg numpy.fft numpy.polynomial numpy.ma numpy.random"
# PYFLOW_OPTS adds options to every pyflow run, e.g. PYFLOW_OPTS=--watch=copies.
# Optional packages (not in .ci/install-deps): python3-pytest python3-hypothesis python3-scipy python3-pandas.
set -u
PYFLOW=$(realpath "${1:-build/bin/pyflow}")
NUMPY_TESTS=${2:-numpy}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
read -r -a OPTS <<< "${PYFLOW_OPTS:-}"
out=$(mktemp -d)
same() {  # name: the plain and pyflow logs hold the same output (pyflow's own "pyflow: " notes aside)
  if cmp -s "$out/$1-plain.log" <(grep -v '^pyflow: ' "$out/$1-pyflow.log"); then echo "$1: identical output"
  else echo "$1: OUTPUT DIFFERS"; diff "$out/$1-plain.log" "$out/$1-pyflow.log" | head; fi
}
run() {  # name, then the command
  local name=$1; shift
  local start=$(date +%s.%N)
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local end=$(date +%s.%N)
  printf '%-22s rc=%-3s %7.1f s  %s\n' "$name" "$rc" "$(python3 -c "print($end - $start)")" \
    "$(grep -E '[0-9]+ (passed|failed)' "$out/$name.log" | tail -1)"
}
cd /tmp
run numpy-plain $PY -m pytest --pyargs $NUMPY_TESTS -q -p no:cacheprovider --continue-on-collection-errors
run numpy-pyflow "$PYFLOW" run --no-report "${OPTS[@]}" --python $PY -m pytest --pyargs $NUMPY_TESTS -q -p no:cacheprovider --continue-on-collection-errors
SCIPY='import numpy as np, scipy.linalg as la, scipy.signal as sg, scipy.sparse as sp
a = np.random.default_rng(0).random((400, 400))
for _ in range(20):
    q, r = la.qr(a); w = la.eigvals(a @ a.T)
x = np.random.default_rng(1).random(2**20); y = sg.fftconvolve(x, x[:4096], mode="same")
m = sp.random(20000, 20000, density=1e-3, random_state=0, format="csr"); v = (m @ m.T).sum()
print(round(float(abs(w).sum()), 3), round(float(y.sum()), 3), round(float(v), 3))'
run scipy-plain $PY -c "$SCIPY"
run scipy-pyflow "$PYFLOW" run --no-report "${OPTS[@]}" --python $PY -c "$SCIPY"
same scipy
run pandas-plain $PY "$HERE/real/pandas_workload.py"
run pandas-pyflow "$PYFLOW" run --no-report "${OPTS[@]}" --python $PY "$HERE/real/pandas_workload.py"
same pandas
rm -rf "$out"
