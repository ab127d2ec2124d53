#!/bin/sh
# plot_quiet.sh -- `mbsim plot sweep` on valid input prints only its own line (issue 37): gnuplot's
# warnings passed through on stderr. Inputs that made gnuplot 5.4 warn, each drawn here with stderr
# exactly "mbsim plot: wrote OUT":
#   - a sweep with no out-of-memory row, or no fitting row of some recompute choice: a series
#     without a point ("Skipping data file with no valid points");
#   - one configuration (x and y ranges of one value: "empty x range [1:1]", "empty y range");
#   - rows whose every value is equal (the same, three configurations);
#   - a sweep without a data.micro_batch_size axis.
# What gnuplot still prints is relayed naming the input: a stand-in gnuplot ($MBSIM_GNUPLOT) that
# warns gives "mbsim plot: INPUT: gnuplot: LINE". Skipped (77) without gnuplot.
#
#   plot_quiet.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
src=$(pwd)
case $bin in /*) ;; *) bin=$src/$bin ;; esac
command -v gnuplot > /dev/null 2>&1 || { echo "SKIP: gnuplot not installed"; exit 77; }
cd "$tmp" || fail "cd $tmp"

quiet() { # TSV: the chart drawn, nothing else on stderr
    "$bin" plot sweep "$1" -o "$1.svg" > out 2> err || fail "plot sweep $1: $(cat err)"
    [ "$(cat err)" = "mbsim plot: wrote $1.svg" ] || fail "plot sweep $1 printed more than its line: $(cat err)"
    grep -q "<svg" "$1.svg" || fail "plot sweep $1: no SVG"
}

"$bin" sweep "$src/tests/data/sweep/small.yaml" --tsv s.tsv --progress 0 > /dev/null 2> err || fail "sweep: $(cat err)"
quiet s.tsv
# the provenance line, the header and the first configuration that fits
awk -F'\t' 'NR == 2 { for (i = 1; i <= NF; i++) { if ($i == "status") st = i; if ($i == "oom") oo = i } }
            NR <= 2 || (!n && $st == "ok" && $oo == "0") { print; if (NR > 2) n++ }' s.tsv > one.tsv
[ "$(wc -l < one.tsv)" = 3 ] || fail "no fitting row in s.tsv"
quiet one.tsv
# that row three times (configs 0, 1, 2): every column constant
(head -2 one.tsv; for i in 0 1 2; do tail -1 one.tsv | awk -F'\t' -v OFS='\t' -v i=$i '{ $1 = i; print }'; done) > equal.tsv
quiet equal.tsv
"$bin" sweep "$src/tests/data/sweep/no_mbs.yaml" --tsv nombs.tsv --progress 0 > /dev/null 2> err || fail "sweep no_mbs: $(cat err)"
quiet nombs.tsv

# a warning gnuplot still prints names the input
cat > fakegp <<'EOS'
#!/bin/sh
echo "\"sweep.gp\" line 1: warning: something the scripts did not foresee" >&2
echo "<svg></svg>" > "$5"
EOS
chmod +x fakegp
MBSIM_GNUPLOT=$tmp/fakegp "$bin" plot sweep one.tsv -o fake.svg > out 2> err || fail "plot with the stand-in: $(cat err)"
grep -qxF 'mbsim plot: one.tsv: gnuplot: "sweep.gp" line 1: warning: something the scripts did not foresee' err ||
    fail "the stand-in's warning is not relayed with the input: $(cat err)"
echo "plot_quiet: ok"
