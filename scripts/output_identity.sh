#!/bin/sh
# output_identity.sh -- check that two mbsim builds print the same outputs, byte for byte.
#
# usage: scripts/output_identity.sh REF_MBSIM NEW_MBSIM [CSV]
#
# Runs, with both binaries: `run --json` of every scenario in scenarios/ and
# scenarios/measured/, and `validate CSV --json` (CSV: the public measured runs
# by default, /work/shared/data/measured/public_measured.csv, or $MBSIM_MEASURED_CSV).
# Each pair of outputs must be identical (cmp); prints one line per comparison
# and exits 1 when any differs. The fit and the cross-validation are compared by
# bench/bench_fit.sh (they take minutes). REF_MBSIM is a build of the commit
# before the change (e.g. `cmake -S . -B build-base` before editing).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
ref=$1
new=$2
csv=${3:-${MBSIM_MEASURED_CSV:-/work/shared/data/measured/public_measured.csv}}
export MBSIM_DATA_DIR="$here"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
check() { # name, then the arguments after the binary
    name=$1
    shift
    "$ref" "$@" >"$tmp/ref" 2>/dev/null || true
    "$new" "$@" >"$tmp/new" 2>/dev/null || true
    if cmp -s "$tmp/ref" "$tmp/new"; then
        printf 'same     %s\n' "$name"
    else
        printf 'DIFFERS  %s\n' "$name"
        bad=1
    fi
}
for f in "$here"/scenarios/*.yaml "$here"/scenarios/measured/*.yaml; do
    check "run --json ${f#"$here"/}" run "$f" --json
done
if [ -f "$csv" ]; then
    check "validate --json $(basename "$csv")" validate "$csv" --json
fi
exit $bad
