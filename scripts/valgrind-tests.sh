#!/bin/sh
# valgrind-tests.sh -- the unit tests under valgrind memcheck (docs/robustness.md):
# a Debug build without sanitizers, every test executable and every process it
# starts (the mbsim runs of test_cli, test_robust, ...) under
#   valgrind --error-exitcode=1 --leak-check=full
# Fails when any of them reports an error or a definite, indirect or possible
# leak. Slow (tens of minutes); not part of the README's test command.
#
#   scripts/valgrind-tests.sh [BUILD_DIR] [ctest args...]   (default build-valgrind)
#
#   JOBS   parallel build jobs (default 2)
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-valgrind}
[ $# -gt 0 ] && shift
command -v valgrind >/dev/null || { echo "$0: valgrind not found" >&2; exit 2; }

logs=$build/valgrind-logs
# gnuplot (test_plot) is not ours: its children are not traced.
vg="valgrind;--error-exitcode=1;--leak-check=full;--trace-children=yes;--trace-children-skip=*gnuplot*;--log-file=$logs/%p.log"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DMBSIM_SANITIZE=OFF -DMBSIM_FUZZ=OFF \
    "-DMBSIM_TEST_WRAPPER=$vg" -DMBSIM_TEST_TIMEOUT=3600 >/dev/null
cmake --build "$build" -j"${JOBS:-2}"
rm -rf "$logs"
mkdir -p "$logs"

rc=0
ctest --test-dir "$build" -L unit --output-on-failure "$@" || rc=1
# A child's report does not always reach the test's exit code: read every log.
bad=$(grep -lE "ERROR SUMMARY: [1-9]|(definitely|indirectly|possibly) lost: [1-9]" "$logs"/*.log 2>/dev/null || true)
if [ -n "$bad" ]; then
    echo "valgrind reported errors or leaks in:" >&2
    for f in $bad; do
        echo "== $f" >&2
        sed -n '1,4p;/Invalid\|uninitialised\|definitely lost in\|indirectly lost in\|possibly lost in/,+12p' "$f" >&2
    done
    rc=1
fi
[ $rc -eq 0 ] && echo "valgrind: no errors, no leaks ($(ls "$logs" | wc -l) processes)"
exit $rc
