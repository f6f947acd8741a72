#!/bin/sh
# Renders each profile in every format with two pyflow builds and compares the outputs byte for byte:
#   bench/compare_reports.sh OLD_PYFLOW NEW_PYFLOW PROFILE...
# Prints one line a difference; exits 1 when any output differs (or a build fails where the other did not).
old=$1 new=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for p in "$@"; do
    for fmt in text json html dot csv speedscope pprof; do
        "$old" report "$p" --format $fmt -o "$tmp/old" >"$tmp/old.out" 2>&1; a=$?
        "$new" report "$p" --format $fmt -o "$tmp/new" >"$tmp/new.out" 2>&1; b=$?
        if [ $a != $b ] || ! cmp -s "$tmp/old" "$tmp/new" || ! cmp -s "$tmp/old.out" "$tmp/new.out"; then
            echo "DIFFERS: $p --format $fmt (exit $a vs $b)"
            bad=1
        fi
        rm -f "$tmp/old" "$tmp/new"
    done
done
[ $bad = 0 ] && echo "identical: $# profiles x 7 formats"
exit $bad
