# gantt.gp -- timeline of the simulated ranks from `mbsim run --trace` (docs/plots.md).
# Driven by `mbsim plot gantt TRACE.json -o OUT`, which passes
#   infile   track, label, start_ms, end_ms, category: one row per slice; track =
#            8*stage + (0 compute, 1..6 TP/CP/EP/PP/DP/FSDP communication, 7 host launches)
#   outfile  .png (pngcairo) or .svg
# Columns are read by name; colours by category (compute categories blue/green
# shades, communication orange/red, recompute purple).
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/gantt.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
set datafile separator "\t"
set datafile columnheaders
stats infile using "end_ms" nooutput
tmax = STATS_max
stats infile using "track" nooutput
ymax = STATS_max
# about 16 px per track so the labels of stacked stages do not overlap
height = 120 + 16 * (ymax + 1)
if (height < 500) { height = 500 }
if (strstrt(outfile, ".svg") > 0) {
    set terminal svg size 1400,height dynamic enhanced font "sans,12" background rgb "white"
} else {
    set terminal pngcairo size 1400,height enhanced font "sans,11"
}
set output outfile
set title "simulated step timeline (pipeline stage x {compute, TP, CP, EP, PP, DP, FSDP, host})"
set xlabel "time (ms)"
set xrange [0:tmax * 1.01]
set yrange [ymax + 0.6:-0.6]
set ytics nomirror font ",9"
set grid xtics lc rgb "#eeeeee"
set key outside right top noenhanced
unset colorbox
col(c) = c eq "vision_encoder" ? 0x2ca02c : c eq "projector" ? 0x98df8a : c eq "decoder_attention" ? 0x1f77b4 : \
         c eq "moe_experts" ? 0x17becf : c eq "dispatch_combine_compute" ? 0xaec7e8 : c eq "dense_other" ? 0x7f7f7f : \
         c eq "recompute" ? 0x9467bd : c eq "optimizer" ? 0x8c564b : c eq "exposed_ep_comm" ? 0xd62728 : \
         c eq "exposed_tp_comm" ? 0xff7f0e : c eq "exposed_pp_comm" ? 0xe377c2 : c eq "exposed_dp_comm" ? 0xbcbd22 : \
         c eq "exposed_fsdp_comm" ? 0xffbb78 : c eq "EP comm" ? 0xd62728 : c eq "TP comm" ? 0xff7f0e : \
         c eq "PP p2p" ? 0xe377c2 : c eq "DP comm" ? 0xbcbd22 : c eq "FSDP comm" ? 0xffbb78 : c eq "CP comm" ? 0x8c564b : \
         c eq "launch" ? 0xc7c7c7 : 0x555555
set style fill solid 0.9 noborder
plot infile using ((column("start_ms") + column("end_ms")) / 2):"track": \
          ((column("end_ms") - column("start_ms")) / 2):(0.35):(col(strcol("category"))):ytic(strcol("label")) \
          with boxxyerror lc rgb variable notitle, \
     for [c in "vision_encoder decoder_attention moe_experts dispatch_combine_compute dense_other recompute optimizer"] \
          NaN with boxes lc rgb col(c) title c, \
     NaN with boxes lc rgb col("TP comm") title "TP comm", \
     NaN with boxes lc rgb col("EP comm") title "EP comm", \
     NaN with boxes lc rgb col("PP p2p") title "PP p2p", \
     NaN with boxes lc rgb col("DP comm") title "DP comm", \
     NaN with boxes lc rgb col("FSDP comm") title "FSDP comm", \
     NaN with boxes lc rgb col("launch") title "host launches"
