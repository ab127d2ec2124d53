# validate.gp -- predicted vs measured scatter with y = x, a +-10% band and the
# worst rows labelled.
# Driven by `mbsim plot validate INPUT -o OUT` (docs/plots.md), which passes
#   infile   TSV with a header row; columns read by name:
#            id, metric (tokens_per_s_per_gpu | model_tflops_per_gpu | step_time_s), measured,
#            predicted, err_pct, worst (1 on the rows to label: the 5 largest |err_pct|),
#            label_y (the height of those rows' labels: spaced by mbsim so that no two overprint;
#            a dotted leader joins a moved label to its point)
#   outfile  .png (pngcairo) or .svg
#   subject  the input's name, in the title (ARG5)
# The legend and the x label list only the metrics the rows have.
# Both metrics share log-log axes: the y = x line and the band are scale-free.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/validate.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 }
if (strstrt(outfile, ".svg") > 0) {
    set terminal svg size 900,800 dynamic enhanced font "sans,13" background rgb "white"
} else {
    set terminal pngcairo size 900,800 enhanced font "sans,12"
}
set output outfile
set datafile separator "\t"
set datafile missing "NA"
set datafile columnheaders

stats infile using "measured" nooutput
lo = STATS_min
hi = STATS_max
stats infile using "predicted" nooutput
lo = (STATS_min < lo) ? STATS_min : lo
hi = (STATS_max > hi) ? STATS_max : hi
lo = lo / 1.5
hi = hi * 1.5
stats infile using (abs(column("err_pct"))) nooutput
mape = STATS_mean
n = STATS_records

# the metrics present: only they get a legend entry and a word in the x label (a null title is no entry)
tok = "tokens_per_s_per_gpu"
tfl = "model_tflops_per_gpu"
stats infile using (strcol("metric") eq tok ? 1 : 0) nooutput
n_tok = STATS_sum
stats infile using (strcol("metric") eq tfl ? 1 : 0) nooutput
n_tfl = STATS_sum
n_step = n - n_tok - n_tfl
units = (n_tok > 0 ? "tokens/s/GPU" : "")
units = units . (n_tfl > 0 ? (strlen(units) > 0 ? ", " : "") . "model TFLOP/s/GPU" : "")
units = units . (n_step > 0 ? (strlen(units) > 0 ? ", " : "") . "step time in s" : "")
n_kinds = (n_tok > 0) + (n_tfl > 0) + (n_step > 0)

set logscale xy
set xrange [lo:hi]
set yrange [lo:hi]
set size square
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set xlabel sprintf("measured: %s%s", units, n_kinds > 1 ? " (by marker)" : "")
set ylabel "predicted by mbsim, same unit"
set title sprintf("%s: mbsim predicted vs measured, MAPE %.1f%% over %d runs (labelled: the %d worst)", \
                  subject, mape, n, n < 5 ? n : 5) noenhanced
set key bottom right box opaque
set samples 200

# the worst rows' labels: id and error at the height mbsim spaced them to; right of the point in the
# chart's left half, left of it in the right half
mid = sqrt(lo * hi)
wlabel(dummy) = sprintf("%s %+.0f%%", strcol("id"), column("err_pct"))
plot '+' using 1:(0.9*$1):(1.1*$1) with filledcurves lc rgb "#cce5ff" fs solid 0.6 noborder title "±10%", \
     x with lines lc rgb "#444444" dt 2 lw 1.5 title "y = x", \
     infile using "measured":(strcol("metric") eq tok ? column("predicted") : NaN) \
         with points pt 7 ps 0.9 lc rgb "#1f77b4" title (n_tok > 0 ? "tokens/s/GPU" : ""), \
     infile using "measured":(strcol("metric") eq tfl ? column("predicted") : NaN) \
         with points pt 5 ps 0.9 lc rgb "#d62728" title (n_tfl > 0 ? "model TFLOP/s/GPU" : ""), \
     infile using "measured":((strcol("metric") ne tok && strcol("metric") ne tfl) ? column("predicted") : NaN) \
         with points pt 9 ps 1.0 lc rgb "#2ca02c" title (n_step > 0 ? "step time (s)" : ""), \
     infile using "measured":(column("worst") > 0 ? column("predicted") : NaN):(0): \
         (column("worst") > 0 ? column("label_y") - column("predicted") : NaN) \
         with vectors nohead lc rgb "#999999" dt 3 notitle, \
     infile using "measured":(column("worst") > 0 && column("measured") < mid ? column("label_y") : NaN):(wlabel(0)) \
         with labels left offset 0.7,0 font ",8" tc rgb "#333333" noenhanced notitle, \
     infile using "measured":(column("worst") > 0 && column("measured") >= mid ? column("label_y") : NaN):(wlabel(0)) \
         with labels right offset -0.7,0 font ",8" tc rgb "#333333" noenhanced notitle
