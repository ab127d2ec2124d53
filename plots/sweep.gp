# sweep.gp -- two panels from a `mbsim sweep --tsv` table (docs/plots.md).
# Driven by `mbsim plot sweep SWEEP.tsv -o OUT`, which passes
#   infile   micro_batch_size, none, selective, full: best tokens/s/GPU among the
#            configurations that fit, per micro-batch size and recompute granularity
#   infile2  order, config, reserved_memory_gib, capacity_gib, fits_gib, oom_gib: every
#            simulated configuration sorted by its peak reserved memory per rank (peak
#            allocated + allocator reserve: the quantity the OOM verdict compares)
#   outfile  .png (pngcairo) or .svg
#   series   (ARG6) the series that have points: none, selective, full, fits, oom
# Columns are read by name; NA marks a value that does not exist.
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/sweep.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 } # the scenario or input the chart shows (title)
if (ARGC >= 4) { mbs_axis = (ARG4 eq "0") ? 0 : 1 }
# the series with points (ARG6, from mbsim): recompute granularities, then "fits" and "oom"; a series
# without a point made gnuplot warn "Skipping data file with no valid points"
if (!exists("series")) { series = "none selective full fits oom" }
if (ARGC >= 6) { series = ARG6 }
left = ""
right = ""
do for [w in series] {
    if (w eq "fits" || w eq "oom") { right = right." ".w } else { left = left." ".w }
}
gran_pt(c) = (c eq "none") ? 7 : (c eq "selective") ? 5 : 9
gran_lc(c) = (c eq "none") ? "#1f77b4" : (c eq "selective") ? "#ff7f0e" : "#2ca02c"
gran_title(c) = (c eq "none") ? "recompute none" : c
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
    # one micro-batch size: an x range of one value, which gnuplot widened with a warning
    stats infile using "micro_batch_size" nooutput
    if (STATS_min == STATS_max) { set xrange [STATS_min / 2.0 : STATS_max * 2.0] }
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
set yrange [0:*] # from zero: one throughput alone was a y range of one value (a warning)
set offsets graph 0.05, graph 0.05, graph 0.1, 0
plot for [i = 1:words(left)] infile using "micro_batch_size":(column(word(left, i))) with linespoints \
     pt gran_pt(word(left, i)) lw 2 lc rgb gran_lc(word(left, i)) title gran_title(word(left, i))

# right: peak memory per rank of every configuration, with the GPU capacity
unset logscale x
set autoscale x
set xtics autofreq
set yrange [0:*]
set xlabel offset 0,0
# one configuration: order 0 alone, an x range of one value (a warning)
stats infile2 using "order" nooutput
if (STATS_max == 0) {
    set xrange [-1:1]
    # one configuration: the capacity "line" through one point draws nothing; a dashed rule instead
    stats infile2 using "capacity_gib" nooutput
    set arrow 1 from graph 0, first STATS_max to graph 1, first STATS_max nohead lw 2 dt 2 lc rgb "#000000"
}
set offsets 0, 0, graph 0.05, 0
set xlabel "configuration (sorted by memory)"
set ylabel "peak reserved memory per rank (GiB)"
set key inside top left vertical box opaque
set title "memory per rank vs configuration"
plot for [i = 1:words(right)] infile2 using "order":(column(word(right, i)."_gib")) with points pt 7 ps 0.5 \
         lc rgb (word(right, i) eq "fits" ? "#2ca02c" : "#d62728") \
         title (word(right, i) eq "fits" ? "fits" : "out of memory"), \
     infile2 using "order":"capacity_gib" with lines lw 2 dt 2 lc rgb "#000000" title "GPU capacity"

unset arrow 1
unset multiplot
