#!/usr/bin/env bash
# Runs CPython's own regression tests plain and under pyflow, and names every test that fails only under
# pyflow (or only plain): the interpreter's tests exercise what a profiler can break (signals, fork,
# subprocess and its descriptors, threads, tracemalloc, -X dev, PYTHONMALLOC, faulthandler, atexit...).
#   bench/cpython_tests.sh [build/bin/pyflow] [python, default: pyenv's 3.12] [test modules...]
# Needs an interpreter with its test package (pyenv's builds have it; Debian's python3 needs
# libpython3.11-testsuite). Modules the interpreter lacks are left out. PYFLOW_OPTS adds options to pyflow.
# Known differences, all of them pyflow being there rather than changing what the program computes:
#  - test_subprocess (close_fds_when_max_fd_is_lowered, pass_fds_redirected): a profiled child lists
#    pyflow's own descriptors among its open ones (the profile file; with watch, a pipe and the breakpoint
#    events);
#  - test_sys (debugmallocstats), test_cmd_line (pythonmalloc, xdev): CPython cannot name or describe an
#    allocator that is wrapped, as under tracemalloc.
set -u
PYFLOW=$(realpath "${1:-build/bin/pyflow}")
PY=${2:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
shift $(( $# > 2 ? 2 : $# ))
TESTS=${*:-test_threading test_signal test_subprocess test_os test_gc test_weakref test_sys test_mmap test_json
test_pickle test_faulthandler test_atexit test_tracemalloc test_capi test_thread test_select test_fork1
test_wait4 test_posix test_resource test_sys_settrace test_descr test_bytes test_unicode test_io
test_cmd_line test_cmd_line_script test_exceptions test_sys_setprofile test_ctypes test_embed test_array
test_struct test_zlib test_sqlite3 test_decimal test_re test_time test_logging test_tempfile test_shutil
test_itertools test_dict test_list test_set test_memoryview test_buffer test_threading_local test_queue}
read -r -a OPTS <<< "${PYFLOW_OPTS:-}"
[ -x "$PY" ] || { echo "no interpreter: give one as the second argument" >&2; exit 2; }
testdir=$("$PY" -c 'import os, test; print(os.path.dirname(test.__file__))') || exit 2
present=()
for t in $TESTS; do
  if [ -e "$testdir/$t.py" ] || [ -e "$testdir/$t/__init__.py" ]; then present+=("$t"); fi
done
out=$(mktemp -d)
run() {  # name, then the command; prints the time and regrtest's summary
  local name=$1; shift
  local start=$(date +%s.%N)
  (cd "$out" && "$@" > "$out/$name.log" 2>&1)
  local end=$(date +%s.%N)
  printf '%-7s %7.1f s  %s\n' "$name" "$(python3 -c "print($end - $start)")" \
    "$(grep -E '^(Total tests|Tests result):' "$out/$name.log" | head -1)"
}
failed() {  # the test modules regrtest reported failed in a log
  sed -n 's/^test \(test_[A-Za-z0-9_]*\) failed.*/\1/p' "$out/$1.log" | sort -u
}
echo "$("$PY" --version) under $PYFLOW: ${#present[@]} test modules (logs: $out)"
# --timeout: a test that hangs here (test_socket, without a network) ends instead of the run
run plain "$PY" -m test --timeout 600 "${present[@]}"
run pyflow "$PYFLOW" run "${OPTS[@]}" --no-report -o "$out/regrtest.pyflow" "$PY" -m test --timeout 600 "${present[@]}"
failed plain > "$out/plain.failed"
failed pyflow > "$out/pyflow.failed"
echo "failed plain:         $(tr '\n' ' ' < "$out/plain.failed")"
echo "failed only plain:    $(comm -23 "$out/plain.failed" "$out/pyflow.failed" | tr '\n' ' ')"
echo "failed only pyflow:   $(comm -13 "$out/plain.failed" "$out/pyflow.failed" | tr '\n' ' ')"
