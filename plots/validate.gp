# validate.gp -- predicted vs measured scatter with y = x, a +-10% band and the
# worst rows labelled.
# Driven by `mbsim plot validate INPUT -o OUT` (docs/plots.md), which passes
#   infile   TSV with a header row; columns read by name:
#            id, metric (tokens_per_s_per_gpu | model_tflops_per_gpu | step_time_s), measured,
#            predicted, err_pct, worst (1 on the rows to label: the 5 largest |err_pct|)
#   outfile  .png (pngcairo) or .svg
# Both metrics share log-log axes: the y = x line and the band are scale-free.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/validate.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
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

set logscale xy
set xrange [lo:hi]
set yrange [lo:hi]
set size square
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set xlabel "measured: tokens/s/GPU, model TFLOP/s/GPU or step time in s (by marker)"
set ylabel "predicted by mbsim, same unit"
set title sprintf("mbsim predicted vs measured: MAPE %.1f%% over %d runs (labelled: the %d worst)", mape, n, n < 5 ? n : 5)
set key bottom right box opaque
set samples 200

# the worst rows' labels: id and error; right of the point in the chart's left half, left of it in the right half
mid = sqrt(lo * hi)
wlabel(dummy) = sprintf("%s %+.0f%%", strcol("id"), column("err_pct"))
tok = "tokens_per_s_per_gpu"
tfl = "model_tflops_per_gpu"
plot '+' using 1:(0.9*$1):(1.1*$1) with filledcurves lc rgb "#cce5ff" fs solid 0.6 noborder title "±10%", \
     x with lines lc rgb "#444444" dt 2 lw 1.5 title "y = x", \
     infile using "measured":(strcol("metric") eq tok ? column("predicted") : NaN) \
         with points pt 7 ps 0.9 lc rgb "#1f77b4" title "tokens/s/GPU", \
     infile using "measured":(strcol("metric") eq tfl ? column("predicted") : NaN) \
         with points pt 5 ps 0.9 lc rgb "#d62728" title "model TFLOP/s/GPU", \
     infile using "measured":((strcol("metric") ne tok && strcol("metric") ne tfl) ? column("predicted") : NaN) \
         with points pt 9 ps 1.0 lc rgb "#2ca02c" title "step time (s)", \
     infile using "measured":(column("worst") > 0 && column("measured") < mid ? column("predicted") : NaN):(wlabel(0)) \
         with labels left offset 0.7,0.5 font ",8" tc rgb "#333333" noenhanced notitle, \
     infile using "measured":(column("worst") > 0 && column("measured") >= mid ? column("predicted") : NaN):(wlabel(0)) \
         with labels right offset -0.7,0.5 font ",8" tc rgb "#333333" noenhanced notitle
