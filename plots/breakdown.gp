# breakdown.gp -- step-time breakdown bars from `mbsim run --json` (docs/plots.md).
# Driven by `mbsim plot breakdown RUN.json -o OUT`, which passes
#   infile   term, seconds, share_pct: the non-zero breakdown terms of the
#            critical rank, largest first
#   outfile  .png (pngcairo) or .svg
# Columns are read by name.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/breakdown.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 } # the scenario or input the chart shows (title)
if (strstrt(outfile, ".svg") > 0) {
    set terminal svg size 1000,600 dynamic enhanced font "sans,13" background rgb "white"
} else {
    set terminal pngcairo size 1000,600 enhanced font "sans,12"
}
set output outfile
set datafile separator "\t"
set datafile columnheaders

stats infile using "seconds" nooutput
total = STATS_sum
set title sprintf("%s: step-time breakdown of the critical rank (sum %.3f s)", subject, total) noenhanced
set ylabel "seconds per step"
set yrange [0:STATS_max * 1.15]
set style fill solid 0.8 border -1
set boxwidth 0.7
set xtics rotate by -35 left nomirror noenhanced
set grid ytics lc rgb "#dddddd"
set key off
set bmargin 9
plot infile using 0:"seconds":xticlabels(strcol("term")) with boxes lc rgb "#4c72b0", \
     infile using 0:"seconds":(sprintf("%.1f%%", column("share_pct"))) with labels offset 0,0.8 font ",10"
