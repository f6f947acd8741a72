#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan + UBSan) and runs it for a bounded time on a seed corpus made
# from real profiles (pyflow run on three examples, --watch=stores and --watch=copies runs, a tiny program,
# a --native run under a small --max-profile, short-lived threads, and the GPU driver test on the mock CUDA
# library), compacted so the trailer is in reach, plus cut,
# bit-flipped and corrupt variants (make_seeds.py).
#   run_fuzz.sh SOURCE_DIR WORK_DIR PYFLOW [SECONDS]
# Exit 0: no crash; 1: a crash, a hang (> 30 s on one input) or no seeds (the reproducer is WORK_DIR/crash-*,
# replay it with WORK_DIR/fuzz_profile FILE); 77: clang or libFuzzer missing (skip).
# tests/fuzz/regressions/ holds inputs that once crashed it (each named for its bug): every run replays them.
# The corpus (WORK_DIR/corpus) is kept between runs, so coverage accumulates. A run's reproducers are moved to
# WORK_DIR/found/ before the next run starts (a retried test keeps the first run's evidence), and the crashing
# ones go into the corpus too: every later run replays them first and fails again until the bug is fixed.
set -u
src=$1 work=$2 pyflow=$3 secs=${4:-60}
CC=$(command -v clang || command -v clang-14 || true)
[ -n "$CC" ] || { echo "SKIP: clang not installed (Debian: clang, libclang-rt-14-dev)"; exit 77; }
mkdir -p "$work/corpus" "$work/seeds" "$work/profiles"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$work/probe.c"
"$CC" -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" 2>/dev/null ||
  { echo "SKIP: clang has no libFuzzer/ASan runtime (Debian: libclang-rt-14-dev)"; exit 77; }
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_GNU_SOURCE -I"$src/report" -I"$src/report/include" -I"$src/flowgraph" -I"$src/core" "$src/tests/fuzz/fuzz_profile.c" "$src"/report/*.c \
  "$src"/flowgraph/*.c "$src"/core/pf_python_args.c -lm -lz \
  -o "$work/fuzz_profile" || { echo "FAIL: the fuzz target does not build"; exit 1; }
# seeds: real profiles, made now by this build
rm -f "$work"/profiles/*
for ex in alloc_mix.py redundant_copy.py leaky_cache.py; do
  "$pyflow" run --no-report --python /usr/bin/python3 -o "$work/profiles/$ex.pflow" "$src/examples/$ex" >/dev/null 2>&1
done
"$pyflow" run --no-report --watch=stores --python /usr/bin/python3 -o "$work/profiles/watch.pflow" \
  -c 'x = [i * 2 for i in range(200000)]' >/dev/null 2>&1
"$pyflow" run --no-report --sample-bytes 1m --python /usr/bin/python3 -o "$work/profiles/tiny.pflow" \
  -c 'x = [bytearray(300000) for i in range(8)]' >/dev/null 2>&1
"$pyflow" run --no-report --watch=copies --python /usr/bin/python3 -o "$work/profiles/copies.pflow" \
  "$src/tests/integration/programs/watch_copies.py" >/dev/null 2>&1
# interned stacks with native frames, and the size cap's coarsening marks (a 1 MiB cap, fine sampling)
"$pyflow" run --no-report --native --sample-bytes 4k --max-profile 1m --python /usr/bin/python3 \
  -o "$work/profiles/native-cap.pflow" "$src/tests/integration/programs/deep_repeats.py" >/dev/null 2>&1
# --exact: packed allocation and free events (PF_REC_PACKED), two threads' streams of them
"$pyflow" run --no-report --exact --python /usr/bin/python3 -o "$work/profiles/exact.pflow" \
  -c 'import threading
def churn():
    for i in range(300): d = {j: [j] * (i % 9) for j in range(i % 13)}
t = threading.Thread(target=churn); t.start(); churn(); t.join()' >/dev/null 2>&1
# threads that start and end: several event streams to merge, and chunks handed from one thread to the next
"$pyflow" run --no-report --sample-bytes 4k --python /usr/bin/python3 -o "$work/profiles/threads.pflow" \
  -c 'import threading
for i in range(40):
    t = threading.Thread(target=lambda: [bytearray(3000) for _ in range(40)]); t.start(); t.join()' >/dev/null 2>&1
# GPU records (allocations, frees, h2d/d2h/d2d copies into block interiors) from the mock CUDA library
mock=$(dirname "$pyflow")/../tests/gpu/libpf_mockcuda.so
[ -f "$mock" ] && "$pyflow" run --no-report --python /usr/bin/python3 -o "$work/profiles/gpu.pflow" \
  "$src/tests/gpu/gpu_driver.py" "$mock" >/dev/null 2>&1
python3 "$src/tests/fuzz/make_seeds.py" "$work/seeds" "$work"/profiles/*.pflow ||
  { echo "FAIL: pyflow made no usable profile to seed the fuzzer with"; exit 1; }
cd "$work"
mkdir -p found
for f in crash-* timeout-* oom-* leak-*; do
  [ -e "$f" ] || continue
  mv "$f" found/
  case $f in crash-*) cp "found/$f" corpus/ ;; esac
done
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 nice -n 5 ./fuzz_profile \
  -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=400000 -print_final_stats=1 \
  -artifact_prefix="$work/" corpus seeds "$src/tests/fuzz/regressions" > fuzz.log 2>&1
rc=$?
grep -E '^#[0-9]+ +(INITED|DONE|pulse)' fuzz.log | tail -3
grep -A30 -E 'ERROR|runtime error|SUMMARY|deadly signal|Test unit written' fuzz.log | head -60
tail -8 fuzz.log
[ "$rc" = 0 ] || { echo "FAIL: fuzz_profile found a crash (status $rc): $(ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* 2>/dev/null) (earlier runs' reproducers: $work/found/)"; exit 1; }
echo "PASS: no crash in ${secs} s"
