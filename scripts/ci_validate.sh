#!/bin/sh
# ci_validate.sh -- example CI job (docs/ci.md): predict measured runs with
# `mbsim validate`, fail when the MAPE exceeds a threshold or (with -b) when
# predictions drifted from a baseline, and leave the report, the JSON summary
# (the next baseline), the predicted-vs-measured plot and (with -j) a JUnit report as artifacts.
#
#   scripts/ci_validate.sh MEASURED.csv|SCENARIO.yaml... MAX_MAPE_PCT [-o ARTIFACT_DIR]
#                          [-b BASELINE.json [-d DRIFT_PCT]] [-r RECIPES]... [-j MAX_ERROR_PCT]
#
#   -j MAX_ERROR_PCT  also write ARTIFACT_DIR/junit.xml: one JUnit testcase per row, failed when
#               its |error| is past MAX_ERROR_PCT (mbsim validate --junit --max-error; the
#               verdict and exit status stay the MAPE's)
#   -r RECIPES  a scenario file or folder whose measured.csv_row files state CSV rows'
#               recipes (mbsim validate --recipes; repeatable; a path without spaces,
#               as the inputs)
#
#   MBSIM   the mbsim binary (default: build/sim/cli/mbsim, then mbsim on PATH)
#
# Exit: 0 pass, 1 MAPE above the threshold, 2 usage error or mbsim failure,
# 3 (MAPE fine) a prediction or a predicted memory drifted past DRIFT_PCT (default 5)
#   from the baseline, or a memory verdict changed.
# The plot needs gnuplot; without it the job still gates and says so.
set -eu

usage() {
    echo "usage: $0 MEASURED.csv|SCENARIO.yaml... MAX_MAPE_PCT [-o ARTIFACT_DIR] [-b BASELINE.json [-d DRIFT_PCT]] [-r RECIPES]... [-j MAX_ERROR_PCT]" >&2
    exit 2
}

out=ci-artifacts
inputs=""
threshold=""
baseline=""
drift=5
recipes=""
junit=""
while [ $# -gt 0 ]; do
    case "$1" in
        -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
        -b) [ $# -ge 2 ] || usage; baseline=$2; shift 2 ;;
        -d) [ $# -ge 2 ] || usage; drift=$2; shift 2 ;;
        -j) [ $# -ge 2 ] || usage; junit=$2; shift 2 ;;
        -r) [ $# -ge 2 ] || usage
            case "$2" in ''|-*|*' '*) echo "$0: -r takes a path without spaces, got '$2'" >&2; exit 2 ;; esac
            recipes="$recipes --recipes $2"; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) # the last positional argument is the threshold
           if [ -n "$threshold" ]; then inputs="$inputs $threshold"; fi
           threshold=$1; shift ;;
    esac
done
if [ -z "$inputs" ] || [ -z "$threshold" ]; then usage; fi
case "$threshold" in
    ''|*[!0-9.]*) echo "$0: MAX_MAPE_PCT must be a number, got '$threshold'" >&2; exit 2 ;;
esac
case "$drift" in
    ''|*[!0-9.]*) echo "$0: DRIFT_PCT must be a number, got '$drift'" >&2; exit 2 ;;
esac
case "$junit" in
    *[!0-9.]*) echo "$0: MAX_ERROR_PCT must be a number, got '$junit'" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${MBSIM:-}" ]; then
    if [ -x "$here/build/sim/cli/mbsim" ]; then MBSIM="$here/build/sim/cli/mbsim"; else MBSIM=mbsim; fi
fi
mkdir -p "$out"

# the text report, with the drift against the baseline at its end (exit 3 past the threshold)
drifted=0
set --
if [ -n "$baseline" ]; then set -- --baseline "$baseline" --drift-threshold "$drift"; fi
# shellcheck disable=SC2086 # inputs are separate words on purpose
"$MBSIM" validate $inputs $recipes "$@" > "$out/validate.txt" || rc=$?
case "${rc:-0}" in
    0) ;;
    3) drifted=1 ;;
    *) echo "$0: mbsim validate failed" >&2; exit 2 ;;
esac
# the JSON summary (the next baseline) and, with -j, the JUnit report of the same validation
set --
if [ -n "$junit" ]; then set -- --junit "$out/junit.xml" --max-error "$junit"; fi
# shellcheck disable=SC2086
"$MBSIM" validate $inputs $recipes --json "$@" > "$out/validate.json"
if [ -n "$junit" ]; then echo "junit: $out/junit.xml"; fi
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
if ! awk -v m="$mape" -v t="$threshold" 'BEGIN { exit !(m <= t) }'; then
    echo "FAIL: MAPE ${mape}% > ${threshold}%"
    exit 1
fi
if [ "$drifted" = 1 ]; then
    echo "FAIL: MAPE ${mape}% <= ${threshold}%, but predictions or memory drifted past ${drift}% from $baseline (report above)"
    exit 3
fi
echo "PASS: MAPE ${mape}% <= ${threshold}%${baseline:+, no drift past ${drift}% from $baseline}"
exit 0
