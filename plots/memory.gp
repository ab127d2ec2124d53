# memory.gp -- memory of the peak rank over one step from `mbsim run --json` (docs/plots.md).
# Driven by `mbsim plot memory RUN.json -o OUT`, which passes
#   infile   t_ms, static_gib, activations_gib, loss_gib, recompute_gib,
#            backward_gradients_gib, allocated_gib, reserved_gib, device_gib,
#            capacity_gib, at_risk_gib: one row per point of the peak rank's timeline
#            (each the highest point of its interval)
#   outfile  .png (pngcairo) or .svg
# The allocated bytes are drawn as stacked areas (static state, then the
# dynamic terms), reserved and device memory as lines, capacity and the at-risk
# margin as dashed lines. Columns are read by name.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/memory.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 } # the scenario or input the chart shows (title)
if (strstrt(outfile, ".svg") > 0) {
    set terminal svg size 1100,600 dynamic enhanced font "sans,13" background rgb "white"
} else {
    set terminal pngcairo size 1100,600 enhanced font "sans,12"
}
set output outfile
set datafile separator "\t"
set datafile columnheaders

stats infile using "capacity_gib" nooutput
cap = STATS_max
stats infile using "device_gib" nooutput
top = STATS_max > cap ? STATS_max : cap
set title sprintf("%s: memory of the peak rank over the step", subject) noenhanced
set xlabel "time in the step (ms)"
set ylabel "GiB"
set yrange [0:top * 1.08]
set grid ytics lc rgb "#dddddd"
set key below horizontal maxcols 3 noenhanced
set style fill solid 0.7 noborder
s1(x) = column("static_gib")
s2(x) = s1(x) + column("activations_gib")
s3(x) = s2(x) + column("loss_gib")
s4(x) = s3(x) + column("recompute_gib")
s5(x) = s4(x) + column("backward_gradients_gib")
plot infile using "t_ms":(0):(s1(0)) with filledcurves lc rgb "#8c8c8c" title "static (weights, grads, optimizer, buffers, graphs)", \
     infile using "t_ms":(s1(0)):(s2(0)) with filledcurves lc rgb "#4c72b0" title "activations", \
     infile using "t_ms":(s2(0)):(s3(0)) with filledcurves lc rgb "#dd8452" title "loss (logits)", \
     infile using "t_ms":(s3(0)):(s4(0)) with filledcurves lc rgb "#55a868" title "recompute", \
     infile using "t_ms":(s4(0)):(s5(0)) with filledcurves lc rgb "#c44e52" title "backward gradients", \
     infile using "t_ms":"reserved_gib" with lines lw 1.5 lc rgb "#8172b3" title "reserved (+ fragmentation)", \
     infile using "t_ms":"device_gib" with lines lw 1.5 lc rgb "black" title "device (+ NCCL, dispatcher, context)", \
     infile using "t_ms":"at_risk_gib" with lines dt 3 lw 1.5 lc rgb "#e6a000" title "at-risk margin", \
     infile using "t_ms":"capacity_gib" with lines dt 2 lw 2 lc rgb "#c00000" title "capacity"
