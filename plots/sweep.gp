# sweep.gp -- two panels from a `mbsim sweep --tsv` table (docs/plots.md).
# Driven by `mbsim plot sweep SWEEP.tsv -o OUT`, which passes
#   infile   micro_batch_size, none, selective, full: best tokens/s/GPU among the
#            configurations that fit, per micro-batch size and recompute granularity
#   infile2  order, config, reserved_memory_gib, capacity_gib, fits_gib, oom_gib: every
#            simulated configuration sorted by its peak reserved memory per rank (peak
#            allocated + allocator reserve: the quantity the OOM verdict compares)
#   outfile  .png (pngcairo) or .svg
# Columns are read by name; NA marks a value that does not exist.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/sweep.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 } # the scenario or input the chart shows (title)
if (ARGC >= 4) { mbs_axis = (ARG4 eq "0") ? 0 : 1 }
if (strstrt(outfile, ".svg") > 0) {
    set terminal svg size 1400,600 dynamic enhanced font "sans,13" background rgb "white"
} else {
    set terminal pngcairo size 1400,600 enhanced font "sans,12"
}
set output outfile
set datafile separator "\t"
set datafile missing "NA"
set datafile columnheaders

set multiplot layout 1,2 title sprintf("mbsim sweep of %s", subject) noenhanced

# left: throughput vs micro-batch size, one line per recompute granularity
# (mbs_axis=0: the sweep has no data.micro_batch_size axis; one point at the scenario's)
if (!exists("mbs_axis")) mbs_axis = 1
if (mbs_axis) {
    set logscale x 2
    set xlabel "micro-batch size"
} else {
    set xrange [0.5:1.5]
    set xtics ("the scenario's (not swept)" 1)
    set xlabel "micro-batch size"
}
set ylabel "best tokens/s/GPU (configurations that fit)"
set grid lc rgb "#dddddd"
set key below horizontal box
set xlabel offset 0,0.6
set bmargin 6
set offsets graph 0.05, graph 0.05, graph 0.1, graph 0.1
set title "throughput vs micro-batch size per recompute choice"
plot infile using "micro_batch_size":"none" with linespoints pt 7 lw 2 lc rgb "#1f77b4" title "recompute none", \
     infile using "micro_batch_size":"selective" with linespoints pt 5 lw 2 lc rgb "#ff7f0e" title "selective", \
     infile using "micro_batch_size":"full" with linespoints pt 9 lw 2 lc rgb "#2ca02c" title "full"

# right: peak memory per rank of every configuration, with the GPU capacity
unset logscale x
set autoscale x
set xtics autofreq
set xlabel offset 0,0
set offsets 0, 0, graph 0.05, 0
set xlabel "configuration (sorted by memory)"
set ylabel "peak reserved memory per rank (GiB)"
set key inside top left vertical box opaque
set title "memory per rank vs configuration"
plot infile2 using "order":"fits_gib" with points pt 7 ps 0.5 lc rgb "#2ca02c" title "fits", \
     infile2 using "order":"oom_gib" with points pt 7 ps 0.5 lc rgb "#d62728" title "out of memory", \
     infile2 using "order":"capacity_gib" with lines lw 2 dt 2 lc rgb "#000000" title "GPU capacity"

unset multiplot
