#!/bin/sh
# bench_sweep.sh -- sweep throughput: configurations per CPU-second and engine
# events per simulated configuration for the two benchmark grids
# (docs/sweep.md Speed).
#
# usage: bench/bench_sweep.sh [MBSIM] [RUNS] [SWEEP_OPTIONS]
#        (defaults: build/sim/cli/mbsim, 3, none; e.g. "--screen 10" measures the screen)
#
# Each grid runs RUNS times on one thread (-j 1); CPU time is user + system
# (the machine may be shared, so wall time is not the measure) and the median
# run is reported. Targets (issue 16): moe256 >= 1,500 and the VLM grid >= 500
# configurations per CPU-second.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
mbsim=${1:-$here/build/sim/cli/mbsim}
runs=${2:-3}
opts=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'grid\tconfigurations\tcpu_s_median\tconfigurations_per_cpu_s\tevents_per_configuration\n'
for grid in moe256 vlm9216; do
    file=$here/tests/data/sweep/$grid.yaml
    : >"$tmp/cpu"
    for r in $(seq "$runs"); do
        # shellcheck disable=SC2086 # the options are words
        /usr/bin/time -f '%U %S' -o "$tmp/time" "$mbsim" sweep "$file" -j 1 $opts --tsv /dev/null >/dev/null 2>"$tmp/err"
        awk '{ print $1 + $2 }' "$tmp/time" >>"$tmp/cpu"
    done
    line=$(grep 'configurations in' "$tmp/err")
    n=$(echo "$line" | sed 's/^mbsim sweep: \([0-9]*\) configurations.*/\1/')
    ev=$(echo "$line" | sed -n 's/.*; \([0-9]*\) engine events.*/\1/p')
    med=$(sort -n "$tmp/cpu" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    awk -v g="$grid" -v n="$n" -v c="$med" -v e="${ev:-NA}" \
        'BEGIN { printf "%s\t%d\t%.2f\t%.0f\t%s\n", g, n, c, (c > 0 ? n / c : 0), e }'
done
