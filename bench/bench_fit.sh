#!/bin/sh
# bench_fit.sh -- CPU time of fitting the framework-time model to measured runs
# (`mbsim calibrate runs`) and of its leave-one-family-out cross-validation
# (`mbsim validate --cv family`), next to bench_sweep.sh's sweep grids
# (docs/calibration.md "Speed of a fit").
#
# usage: bench/bench_fit.sh [MBSIM] [RUNS] [CSV] [GPU]
#        (defaults: build/sim/cli/mbsim, 3, the public measured runs
#        /work/shared/data/measured/public_measured.csv or $MBSIM_MEASURED_CSV, B200)
#
# The fit of GPU's rows (and its siblings') runs RUNS times, the cross-validation
# once (it takes minutes); both with -j 2. CPU time is user + system (the machine
# may be shared, so wall time is not the measure); the median fit is reported.
# With REF_MBSIM=path set, the same commands run once with that binary too and
# the outputs are compared: the fitted table without its date and simulation
# count, and the cross-validation report without its last line (folds,
# simulations and seconds) must be identical.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mbsim=${1:-$here/build/sim/cli/mbsim}
runs=${2:-3}
csv=${3:-${MBSIM_MEASURED_CSV:-/work/shared/data/measured/public_measured.csv}}
gpu=${4:-B200}
export MBSIM_DATA_DIR="$here"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu() { awk '{ printf "%.2f\n", $1 + $2 }' "$1"; }
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# the fitted table without the lines that change from run to run (date, command, simulations)
fit_values() { grep -v -e 'date:' -e 'simulations:' -e 'command:' -e 'source:' "$1"; }
printf 'benchmark\tsimulations\tcpu_s_median\twall_s\n'
: >"$tmp/cpu"
for _ in $(seq "$runs"); do
    /usr/bin/time -f '%U %S %e' -o "$tmp/time" "$mbsim" calibrate runs "$csv" --gpu "$gpu" --base "$gpu" -j 2 \
        -o "$tmp/fit.yaml" >/dev/null 2>"$tmp/fit.err"
    cpu "$tmp/time" >>"$tmp/cpu"
done
sims=$(sed -n 's/.* \([0-9]*\) simulations in .*/\1/p' "$tmp/fit.err" | head -1)
printf 'calibrate runs --gpu %s\t%s\t%s\t%s\n' "$gpu" "$sims" "$(median "$tmp/cpu")" "$(awk '{ print $3 }' "$tmp/time")"
/usr/bin/time -f '%U %S %e' -o "$tmp/time" "$mbsim" validate "$csv" --cv family -j 2 >"$tmp/cv.out" 2>/dev/null
sims=$(sed -n 's/.*; \([0-9]*\) simulations in .*/\1/p' "$tmp/cv.out")
printf 'validate --cv family\t%s\t%s\t%s\n' "$sims" "$(cpu "$tmp/time")" "$(awk '{ print $3 }' "$tmp/time")"
if [ -n "${REF_MBSIM:-}" ]; then
    "$REF_MBSIM" calibrate runs "$csv" --gpu "$gpu" --base "$gpu" -j 2 -o "$tmp/ref.yaml" >/dev/null 2>&1
    "$REF_MBSIM" validate "$csv" --cv family -j 2 >"$tmp/ref_cv.out" 2>/dev/null
    fit_values "$tmp/ref.yaml" >"$tmp/a"
    fit_values "$tmp/fit.yaml" >"$tmp/b"
    bad=0
    if cmp -s "$tmp/a" "$tmp/b"; then echo "fitted table: same as $REF_MBSIM"; else echo "fitted table: DIFFERS"; bad=1; fi
    sed '$d' "$tmp/ref_cv.out" >"$tmp/a"
    sed '$d' "$tmp/cv.out" >"$tmp/b"
    if cmp -s "$tmp/a" "$tmp/b"; then echo "cross-validation: same as $REF_MBSIM"; else echo "cross-validation: DIFFERS"; bad=1; fi
    exit $bad
fi
