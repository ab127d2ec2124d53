#!/bin/sh
# sweep_interrupt.sh -- `mbsim sweep` stopped by a real signal keeps its
# finished rows, and --resume completes it (issue 17, acceptance):
#   1. the uninterrupted run's TSV, JSON and summary, with -j 2 and with -j 1,
#      are byte-identical (the reference for everything below);
#   2. a -j 1 run gets SIGINT once its TSV shows rows: exit 130, the resume
#      command on stderr, and every kept row is a row of the reference;
#   3. its --resume gets SIGTERM (exit 143) after a few more rows: a second
#      interruption loses nothing either;
#   4. a last --resume completes it: TSV, JSON and summary equal the reference.
# The expectations come from the uninterrupted run of the same sweep, not from
# any predicted value, so recalibrating the shipped tables cannot break it.
#
#   sweep_interrupt.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
# the whole 256-GPU acceptance sweep (2,304 configurations, under two seconds a run): a
# smaller grid finished between two polls once sweeps got faster, and the signal came late
sweep="tests/data/sweep/moe256.yaml --progress 0"

$bin sweep $sweep -j 2 --tsv "$tmp/ref.tsv" --json "$tmp/ref.json" > "$tmp/ref.out" || fail "reference run"
$bin sweep $sweep -j 1 --tsv "$tmp/j1.tsv" --json "$tmp/j1.json" > "$tmp/j1.out" || fail "-j 1 run"
for f in tsv json out; do cmp -s "$tmp/ref.$f" "$tmp/j1.$f" || fail "-j 1 and -j 2 differ in .$f"; done
total=$(($(wc -l < "$tmp/ref.tsv") - 2)) # the provenance line and the header
[ "$total" -eq 2304 ] || fail "expected 2304 rows, got $total"

rows() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }

# interrupt: start a run, wait until its TSV has more than $2 lines, send $1
interrupt() {
    sig=$1 after=$2
    shift 2
    $bin sweep $sweep -j 1 "$@" > "$tmp/part.out" 2> "$tmp/part.err" &
    pid=$!
    n=0
    while [ "$(rows "$tmp/part.tsv")" -le "$after" ]; do
        n=$((n + 1))
        [ $n -lt 3000 ] || { kill $pid; fail "no rows after 60 s"; }
        sleep 0.02
    done
    kill -s "$sig" $pid
    wait $pid
}

interrupt INT 4 --tsv "$tmp/part.tsv" --json "$tmp/part.json"
rc=$?
[ $rc -eq 130 ] || fail "SIGINT: exit $rc, expected 130 (128 + SIGINT)"
grep -q "resume with:" "$tmp/part.err" || fail "no resume hint on stderr: $(cat "$tmp/part.err")"
grep -q -- "--resume $tmp/part.tsv" "$tmp/part.err" || fail "the hint does not name the TSV"
kept=$(($(rows "$tmp/part.tsv") - 2))
[ "$kept" -ge 3 ] && [ "$kept" -lt "$total" ] || fail "kept $kept rows of $total"
[ -z "$(grep -vxFf "$tmp/ref.tsv" "$tmp/part.tsv")" ] || fail "a kept row differs from the reference"
grep -q '"interrupted": true' "$tmp/part.json" || fail "the JSON does not say it was interrupted"

interrupt TERM $((kept + 4)) --resume "$tmp/part.tsv"
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc, expected 143 (128 + SIGTERM)"
kept2=$(($(rows "$tmp/part.tsv") - 2))
[ "$kept2" -gt "$kept" ] && [ "$kept2" -lt "$total" ] || fail "second run kept $kept2 rows (first: $kept)"
[ -z "$(grep -vxFf "$tmp/ref.tsv" "$tmp/part.tsv")" ] || fail "a row kept by the resumed run differs"

$bin sweep $sweep -j 2 --resume "$tmp/part.tsv" --json "$tmp/part.json" > "$tmp/part.out" 2> "$tmp/part.err" ||
    fail "final --resume: $(cat "$tmp/part.err")"
grep -q "$kept2 of $total configurations done" "$tmp/part.err" || fail "resume did not report the kept rows"
for f in tsv json out; do cmp -s "$tmp/ref.$f" "$tmp/part.$f" || { diff "$tmp/ref.$f" "$tmp/part.$f" | head -20; fail "resumed .$f differs from the uninterrupted run"; }; done

# a resume file of another sweep is refused with its line and column (its provenance line
# names another scenario file)
$bin sweep tests/data/sweep/small.yaml --progress 0 --resume "$tmp/part.tsv" > /dev/null 2> "$tmp/bad.err"
rc=$?
[ $rc -eq 1 ] || fail "another sweep's file: exit $rc, expected 1"
grep -q "part.tsv:1:1: the file was written from another scenario file" "$tmp/bad.err" ||
    fail "no file:line:col: $(cat "$tmp/bad.err")"
echo "ok: interrupted after $kept and $kept2 rows, resumed to the uninterrupted output"
