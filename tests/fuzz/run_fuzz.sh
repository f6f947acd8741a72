#!/usr/bin/env bash
# Builds the libFuzzer target with clang (ASan + UBSan) and runs it for a bounded time on a seed corpus of
# real profiles (made here by pyflow itself, one with --watch records) plus truncated and bit-flipped copies.
#   run_fuzz.sh SOURCE_DIR WORK_DIR PYFLOW [SECONDS]
# Exit 0: no crash; 1: a crash (the reproducer is in WORK_DIR); 77: clang or libFuzzer missing (skip).
set -u
src=$1 work=$2 pyflow=$3 secs=${4:-60}
CC=$(command -v clang || command -v clang-14 || true)
[ -n "$CC" ] || { echo "skip: clang not installed (Debian: clang, libclang-rt-14-dev)"; exit 77; }
mkdir -p "$work/corpus"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$work/probe.c"
"$CC" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null || { echo "skip: no libFuzzer runtime"; exit 77; }
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_GNU_SOURCE -I"$src/report" -I"$src/core" "$src/tests/fuzz/fuzz_profile.c" "$src"/report/*.c -lm -o "$work/fuzz_profile" || exit 1
# seeds: real profiles
for ex in alloc_mix.py redundant_copy.py leaky_cache.py; do
  "$pyflow" run --no-report --python /usr/bin/python3 -o "$work/corpus/$ex.pflow" "$src/examples/$ex" >/dev/null 2>&1
done
"$pyflow" run --no-report --watch=stores --python /usr/bin/python3 -o "$work/corpus/watch.pflow" \
  -c 'x = [i * 2 for i in range(200000)]' >/dev/null 2>&1
ls "$work/corpus" | head
cd "$work"
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 ./fuzz_profile -max_total_time="$secs" -timeout=10 \
  -rss_limit_mb=2048 -max_len=400000 -print_final_stats=1 corpus 2>&1 | tail -25
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || { echo "fuzz_profile found a crash: reproducer in $work (crash-*)"; exit 1; }
