#!/bin/sh
# plot_charts.sh -- what the charts say (issue 36, part 6), read back from their SVG:
#   - validate: the 5 worst rows' labels never overprint: with six rows whose points lie within
#     1 % of each other (they printed on top of each other before), the labels' baselines are at
#     least one label height (the SVG's own font-size of the labels) apart; each label stays in
#     the plot; the legend and the x label list only the metrics the rows have (tokens/s/GPU only:
#     no TFLOP/s or step-time entry; tokens and step time: those two);
#   - gantt: the legend lists exactly the categories the trace's slices have (counted here from the
#     trace JSON), no other;
#   - every chart's title names its scenario (run --json's "scenario") or its input file.
# Skipped (77) without gnuplot.
#
#   plot_charts.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
src=$(pwd)
case $bin in /*) ;; *) bin=$src/$bin ;; esac
command -v gnuplot > /dev/null 2>&1 || [ -n "${MBSIM_GNUPLOT:-}" ] || { echo "SKIP: gnuplot not installed"; exit 77; }
cd "$tmp" || fail "cd $tmp"

# the legend entries of an SVG: the <title> of each plot group that has a key entry
legend() { sed -n 's/.*<g id="gnuplot_plot_[0-9]*" ><title>\(.*\)<\/title>.*/\1/p' "$1" | grep -v '^gnuplot_plot_' | sort -u; }
texts() { sed -n 's/.*<text>\(.*\)<\/text>.*/\1/p; s/.*<tspan[^>]*>\(.*\)<\/tspan>.*/\1/p' "$1"; }

# six rows within 1 % of each other near (1000, 1500), one far away
printf 'id\tmetric\tmeasured\tpredicted\n' > close.tsv
for i in 1 2 3 4 5 6; do printf 'row_%d\ttokens_per_s_per_gpu\t%d\t%d\n' $i $((1000 + 3 * i)) $((1500 + 2 * i)) >> close.tsv; done
printf 'far\ttokens_per_s_per_gpu\t100\t101\n' >> close.tsv
"$bin" plot validate close.tsv -o close.svg > /dev/null 2> err || fail "plot validate: $(cat err)"
# label baselines: the translate(x,y) of the <g> holding each "row_N +E%" text, with its font size
awk '/<g transform="translate\(/ { split($0, a, /[(,)]/); y = a[3]; fs = $0; sub(/.*font-size="/, "", fs); sub(/".*/, "", fs); next }
     /<text>row_[0-9] [+-][0-9]*%<\/text>/ { print y, fs }' close.svg | sort -u -g > labels
[ "$(wc -l < labels)" = 5 ] || fail "expected 5 labels, found: $(cat labels)"
awk 'NR > 1 && $1 - prev < $2 { bad = 1; printf "baselines %s and %s are closer than the font size %s\n", prev, $1, $2 }
     { prev = $1 } END { exit bad }' labels || fail "validate labels overprint: $(cat labels)"
# inside the plot area: below the top border (the title's baseline is above it)
top=$(awk '/<text>close.tsv: / { print prev } { if (match($0, /translate\([0-9.]+,[0-9.]+\)/)) { split(substr($0, RSTART, RLENGTH), a, /[(,)]/); prev = a[3] } }' close.svg | head -1)
awk -v t="$top" '$1 <= t { bad = 1 } END { exit bad }' labels || fail "a label is above the title's baseline $top: $(cat labels)"
[ "$(legend close.svg | tr '\n' '|')" = "tokens/s/GPU|y = x|±10%|" ] || fail "validate legend: $(legend close.svg | tr '\n' '|')"
texts close.svg | grep -q "TFLOP\|step time" && fail "validate chart of tokens rows mentions another metric: $(texts close.svg | grep 'TFLOP\|step time')"
texts close.svg | grep -q "^close.tsv: mbsim predicted vs measured" || fail "validate title does not name close.tsv"
# an output folder that does not exist: mbsim's own error naming the folder, before gnuplot runs
"$bin" plot validate close.tsv -o no/such/dir/c.svg > /dev/null 2> err
[ $? = 1 ] || fail "plot -o into a missing folder: not exit 1: $(cat err)"
grep -q "the folder no/such/dir" err || fail "plot -o into a missing folder: the folder is not named: $(cat err)"
grep -q "gnuplot\|\.gp" err && fail "plot -o into a missing folder: gnuplot's error shown: $(cat err)"
# two metrics: both in the legend, the third not
printf 'id\tmetric\tmeasured\tpredicted\na\ttokens_per_s_per_gpu\t1000\t1100\nb\tstep_time_s\t5\t4.5\n' > two.tsv
"$bin" plot validate two.tsv -o two.svg > /dev/null 2> err || fail "plot validate two.tsv: $(cat err)"
[ "$(legend two.svg | tr '\n' '|')" = "step time (s)|tokens/s/GPU|y = x|±10%|" ] || fail "two metrics legend: $(legend two.svg | tr '\n' '|')"
texts two.svg | grep -q "TFLOP" && fail "validate chart of tokens and step rows mentions TFLOP/s"

# a run of a fixture scenario: its report, trace, and the three charts of them
MBSIM_DATA_DIR=$src "$bin" run "$src/tests/data/net/tp8_dense.yaml" --json --trace t.json > run.json 2> err || fail "run: $(cat err)"
scn=$(sed -n 's/^  "scenario": "\(.*\)",$/\1/p' run.json)
[ -n "$scn" ] || fail "run --json has no scenario name"
for k in breakdown memory; do
    "$bin" plot $k run.json -o $k.svg > /dev/null 2> err || fail "plot $k: $(cat err)"
    texts $k.svg | grep -q "^$scn (run.json): " || fail "plot $k: the title does not name $scn: $(texts $k.svg | tail -3)"
done
"$bin" plot gantt t.json -o g.svg > /dev/null 2> err || fail "plot gantt: $(cat err)"
texts g.svg | grep -q "^t.json: simulated step timeline" || fail "plot gantt: the title does not name t.json"
# the categories of the trace's slices, as the legend words them (gantt.gp: host launches)
grep -o '"category": *"[^"]*"' t.json | sed 's/.*"\([^"]*\)"$/\1/' |
    sed 's/^exposed_host_launch$/host launches/; s/^launch$/host launches/' | sort -u > cats
[ -s cats ] || fail "the trace has no categories"
legend g.svg > keys
cmp -s cats keys || fail "gantt legend is not the trace's categories: legend $(tr '\n' '|' < keys), trace $(tr '\n' '|' < cats)"
"$bin" sweep "$src/tests/data/sweep/small.yaml" --tsv s.tsv > /dev/null 2>&1 || fail "sweep for the plot"
"$bin" plot sweep s.tsv -o s.svg > /dev/null 2> err || fail "plot sweep: $(cat err)"
texts s.svg | grep -q "^mbsim sweep of s.tsv" || fail "plot sweep: the title does not name s.tsv"
echo "plot_charts: 5 labels apart, legends of the present metrics and categories ($(tr '\n' ' ' < cats)), titles named"
