#!/bin/sh
# ci_validate.sh -- example CI job (docs/plots.md): predict measured runs with
# `mbsim validate`, fail when the MAPE exceeds a threshold, and leave the JSON
# summary and the predicted-vs-measured plot as artifacts.
#
#   scripts/ci_validate.sh MEASURED.csv|SCENARIO.yaml... MAX_MAPE_PCT [-o ARTIFACT_DIR]
#
#   MBSIM   the mbsim binary (default: build/sim/cli/mbsim, then mbsim on PATH)
#
# Exit: 0 MAPE <= threshold, 1 MAPE above it, 2 usage error or mbsim failure.
# The plot needs gnuplot; without it the job still gates on MAPE and says so.
set -eu

usage() {
    echo "usage: $0 MEASURED.csv|SCENARIO.yaml... MAX_MAPE_PCT [-o ARTIFACT_DIR]" >&2
    exit 2
}

out=ci-artifacts
inputs=""
threshold=""
while [ $# -gt 0 ]; do
    case "$1" in
        -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) # the last positional argument is the threshold
           if [ -n "$threshold" ]; then inputs="$inputs $threshold"; fi
           threshold=$1; shift ;;
    esac
done
if [ -z "$inputs" ] || [ -z "$threshold" ]; then usage; fi
case "$threshold" in
    ''|*[!0-9.]*) echo "$0: MAX_MAPE_PCT must be a number, got '$threshold'" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${MBSIM:-}" ]; then
    if [ -x "$here/build/sim/cli/mbsim" ]; then MBSIM="$here/build/sim/cli/mbsim"; else MBSIM=mbsim; fi
fi
mkdir -p "$out"

# shellcheck disable=SC2086 # inputs are separate words on purpose
if ! "$MBSIM" validate $inputs > "$out/validate.txt"; then
    echo "$0: mbsim validate failed" >&2
    exit 2
fi
# shellcheck disable=SC2086
"$MBSIM" validate $inputs --json > "$out/validate.json"
mape=$(sed -n 's/^ *"mape_pct": *\([0-9.eE+-]*\).*/\1/p' "$out/validate.json" | head -n 1)
if [ -z "$mape" ]; then
    echo "$0: no mape_pct in $out/validate.json" >&2
    exit 2
fi

if "$MBSIM" plot validate "$out/validate.json" -o "$out/validate.png"; then
    echo "plot: $out/validate.png"
else
    echo "$0: warning: no plot (see the message above); gating on MAPE only" >&2
fi

cat "$out/validate.txt"
if awk -v m="$mape" -v t="$threshold" 'BEGIN { exit !(m <= t) }'; then
    echo "PASS: MAPE ${mape}% <= ${threshold}%"
    exit 0
fi
echo "FAIL: MAPE ${mape}% > ${threshold}%"
exit 1
