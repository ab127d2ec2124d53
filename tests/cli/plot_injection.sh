#!/bin/sh
# plot_injection.sh -- `mbsim plot` starts gnuplot, the one child mbsim runs, with
# its paths as arguments and never inside a gnuplot command or a shell (issue 37,
# "Injection"; docs/robustness.md, "Children"). Every path and environment
# variable `mbsim plot` uses gets quotes, spaces, `$(...)`, backquotes, and
# gnuplot's own ways to run a command: a single quote that ends gnuplot's string
# followed by system("..."), a data file name that starts with '<' (gnuplot reads
# "<CMD" as the output of a shell command) and an output name that starts with
# '|' (gnuplot writes "|CMD" into a shell command). Each would create the file
# `injected` in the working folder; each run must draw its chart (a PNG that
# starts with the PNG signature) with exit 0, and `injected` must never appear.
#
# Before the fix: TMPDIR="t'; system('touch injected'); x='" ran the command (the
# temporary TSV's path was pasted into `gnuplot -e "infile='...'"`), and so did a
# TMPDIR, a data directory or an -o path starting with '<' or '|'.
#
#   plot_injection.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
src=$(pwd)
command -v gnuplot > /dev/null 2>&1 || { echo "SKIP: gnuplot not installed"; exit 77; }
case $bin in /*) ;; *) bin=$src/$bin ;; esac
gp=$(command -v gnuplot)
unset MBSIM_GNUPLOT

cd "$tmp" || fail "cd $tmp"
# the hostile strings: every one would run `touch injected` if a shell or gnuplot's
# command line saw it unquoted
q1="q'd \$(touch injected) \`touch injected\` x"    # a shell's substitutions, a quote
q2="t'; system('touch injected'); x='"                # ends gnuplot's '...' string: the reported attack
q3='t"; system("touch injected"); x="'                # the same for a "..." string
lt='<touch injected;d'                                # a data file name gnuplot pipes from
pi='|touch injected;o'                                # an output name gnuplot pipes into
at='@x `touch injected` ~'                            # a macro, a backquote and a tilde

# the input: a validate TSV whose ids carry the same strings (they become labels on the chart)
input="in $q1.tsv"
cp "$src/tests/data/robust/plot_injection.tsv" "$input" || fail "copy the input"

# a data directory (MBSIM_DATA_DIR: plots/KIND.gp is found there) and a gnuplot
# (MBSIM_GNUPLOT, and on PATH) under hostile names
for d in "$q1" "$q2" "$lt" "$at"; do
    mkdir -p "data $d/plots" "bin $d" "$d" || fail "mkdir $d"
    cp "$src"/plots/*.gp "data $d/plots/"
    ln -s "$gp" "bin $d/gnuplot"
done
mkdir -p "$lt/plots" && cp "$src"/plots/*.gp "$lt/plots/"

n=0
check() { # LABEL OUTPUT [VAR=VALUE ...]: plot validate $input -o OUTPUT with those variables set
    label=$1 out=$2
    shift 2
    n=$((n + 1))
    rm -f "$out"
    env "$@" "$bin" plot validate "$input" -o "$out" > "out.$n" 2>&1
    rc=$?
    [ ! -e injected ] || fail "$label: the injected command ran (exit $rc): $(cat "out.$n")"
    [ -e "$src/injected" ] && fail "$label: the injected command ran in the source tree"
    [ "$rc" = 0 ] || fail "$label: exit $rc, expected 0 (the chart drawn): $(cat "out.$n")"
    # the PNG signature: \211 P N G
    [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "$label: $out is not a PNG"
}

# the output path (-o)
for d in "$q1" "$q2" "$q3" "$at"; do
    check "-o '$d.png'" "$d.png"
done
check "-o '$pi.png'" "$pi.png"
check "-o '<...'" "$lt.png"
# TMPDIR (the temporary TSV files gnuplot reads), absolute and relative
for d in "$q1" "$q2" "$lt" "$at"; do
    check "TMPDIR='$d'" out.png "TMPDIR=$d"
    check "TMPDIR='$tmp/$d'" out.png "TMPDIR=$tmp/$d"
done
# MBSIM_DATA_DIR (the script's folder), relative and absolute
for d in "$q1" "$q2" "$at"; do
    check "MBSIM_DATA_DIR='data $d'" out.png "MBSIM_DATA_DIR=data $d"
    check "MBSIM_DATA_DIR='$tmp/data $d'" out.png "MBSIM_DATA_DIR=$tmp/data $d"
done
check "MBSIM_DATA_DIR='$lt'" out.png "MBSIM_DATA_DIR=$lt"
# the gnuplot binary: MBSIM_GNUPLOT, and PATH
for d in "$q1" "$q2" "$lt" "$at"; do
    check "MBSIM_GNUPLOT='bin $d/gnuplot'" out.png "MBSIM_GNUPLOT=bin $d/gnuplot"
    check "PATH='$tmp/bin $d:...'" out.png "PATH=$tmp/bin $d:/usr/bin:/bin"
done
# everything at once, and a sweep (two temporary files, the mbs_axis argument)
check "all at once" "$q2.png" "TMPDIR=$lt" "MBSIM_DATA_DIR=data $q2" "MBSIM_GNUPLOT=bin $q1/gnuplot"
"$bin" sweep "$src/tests/data/sweep/small.yaml" --tsv "sweep $q2.tsv" > /dev/null 2>&1 || fail "sweep for the plot"
TMPDIR=$lt "$bin" plot sweep "sweep $q2.tsv" -o "$pi.svg" > out.sweep 2>&1 || fail "plot sweep: $(cat out.sweep)"
[ ! -e injected ] || fail "plot sweep: the injected command ran"
grep -q "<svg" "$pi.svg" || fail "plot sweep: $pi.svg is not an SVG"
echo "plot_injection: $n validate charts and a sweep chart drawn, no command injected"
