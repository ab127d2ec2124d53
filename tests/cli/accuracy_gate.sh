#!/bin/sh
# The accuracy gate: scripts/ci_validate.sh on the public measured runs (../shared, with the recipe
# files of scenarios/measured) must stay at or below MAX_MAPE_PCT, the shipped figure plus a margin
# (tests/CMakeLists.txt, MBSIM_ACCURACY_GATE_PCT). A change that makes the public set worse by more
# than the margin fails here. Skipped (77) when the measured runs are not beside the checkout.
#   sh tests/cli/accuracy_gate.sh MBSIM_BINARY MAX_MAPE_PCT
set -u
MBSIM=$1
export MBSIM
csv=${MBSIM_SHARED_DIR:-../shared}/data/measured/public_measured.csv
[ -f "$csv" ] || { echo "skip: no $csv"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh scripts/ci_validate.sh "$csv" "$2" -r scenarios/measured -o "$tmp" > "$tmp/log" 2>&1
rc=$?
grep -E '^(PASS|FAIL)' "$tmp/log"
[ $rc -eq 0 ] || { tail -n 40 "$tmp/log"; exit 1; }
