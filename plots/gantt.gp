# gantt.gp -- timeline of the simulated ranks from `mbsim run --trace` (docs/plots.md).
# Driven by `mbsim plot gantt TRACE.json -o OUT`, which passes
#   infile   track, label, start_ms, end_ms, category: one row per slice; track =
#            8*stage + (0 compute, 1..6 TP/CP/EP/PP/DP/FSDP communication, 7 host launches)
#   outfile  .png (pngcairo) or .svg
#   subject  the trace's name, in the title (ARG5)
#   legend   the categories present in the trace, '~' for a space (ARG6): only they are in the legend
# Columns are read by name; colours by category (compute categories blue/green
# shades, communication orange/red, recompute purple).
# mbsim runs `gnuplot -c KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS`: the paths arrive as the strings
# ARG1..ARG4, never inside a gnuplot command (docs/robustness.md, "Children"). By hand:
#   gnuplot -e "infile='x.tsv'; outfile='x.png'" plots/gantt.gp
if (ARGC >= 3) { infile = ARG1; infile2 = ARG2; outfile = ARG3 }
if (!exists("subject")) { subject = infile }
if (ARGC >= 5) { subject = ARG5 } # the scenario or input the chart shows (title)
# the legend: the categories the trace has, in the order of their colours, spaces written as '~' (ARG6)
if (!exists("legend")) { legend = "vision_encoder decoder_attention moe_experts dispatch_combine_compute dense_other recompute optimizer TP~comm EP~comm PP~p2p DP~comm FSDP~comm launch" }
if (ARGC >= 6) { legend = ARG6 }
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
set title sprintf("%s: simulated step timeline (pipeline stage x {compute, TP, CP, EP, PP, DP, FSDP, host})", subject) noenhanced
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
         c eq "launch" || c eq "exposed_host_launch" ? 0xc7c7c7 : 0x555555
# '~' back to ' ' (category names with spaces travel as one word), and the legend's words for them
unsquiggle(s) = strstrt(s, "~") == 0 ? s : s[1:strstrt(s, "~") - 1] . " " . unsquiggle(s[strstrt(s, "~") + 1:])
catname(c) = c eq "launch" || c eq "exposed_host_launch" ? "host launches" : c
set style fill solid 0.9 noborder
plot infile using ((column("start_ms") + column("end_ms")) / 2):"track": \
          ((column("end_ms") - column("start_ms")) / 2):(0.35):(col(strcol("category"))):ytic(strcol("label")) \
          with boxxyerror lc rgb variable notitle, \
     for [i = 1:words(legend)] NaN with boxes lc rgb col(unsquiggle(word(legend, i))) \
          title catname(unsquiggle(word(legend, i)))
