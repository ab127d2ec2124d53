#!/bin/sh
# sweep_screen.sh -- `mbsim sweep --screen K` from the command line, against
# the full sweep of the same grid (the reference; no predicted value is
# asserted). Expectations:
#   - the top K of the screened sweep are the full sweep's, and the rows it
#     simulated are the full sweep's rows, byte for byte;
#   - -j 1 and -j 2 write the same TSV;
#   - screened shards merged by `mbsim merge` rank the same top K;
#   - --screen with --resume, and --mb-cap with --exact, are usage errors (exit 2).
#
#   sweep_screen.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
grid=tests/data/sweep/screen.yaml
k=5
top() { sed -n '/^top /,/^$/p' "$1" | tail -n +2; }

"$bin" sweep "$grid" -j 2 --top $k --progress 0 --tsv "$tmp/full.tsv" > "$tmp/full.out" 2> /dev/null || fail "full sweep"
"$bin" sweep "$grid" -j 2 --top $k --progress 0 --screen $k --tsv "$tmp/s2.tsv" > "$tmp/s2.out" 2> "$tmp/s2.err" ||
    fail "screened sweep: $(cat "$tmp/s2.err")"
grep -q "screened out" "$tmp/s2.err" || fail "no screening report on stderr"
top "$tmp/full.out" > "$tmp/top.full"
top "$tmp/s2.out" > "$tmp/top.s2"
[ -s "$tmp/top.full" ] || fail "no ranking in the full sweep's summary"
cmp -s "$tmp/top.full" "$tmp/top.s2" || fail "top $k differs: $(diff "$tmp/top.full" "$tmp/top.s2")"
grep -q "	screened	" "$tmp/s2.tsv" || fail "no screened row in the TSV"
grep -v -e "	screened	" -e '^#' "$tmp/s2.tsv" > "$tmp/s2.sim" # the provenance lines differ in --screen
grep -F -x -f "$tmp/s2.sim" "$tmp/full.tsv" > "$tmp/s2.same"
cmp -s "$tmp/s2.sim" "$tmp/s2.same" || fail "a simulated row differs from the full sweep's"

"$bin" sweep "$grid" -j 1 --top $k --progress 0 --screen $k --tsv "$tmp/s1.tsv" > /dev/null 2>&1 || fail "-j 1"
cmp -s "$tmp/s1.tsv" "$tmp/s2.tsv" || fail "-j 1 and -j 2 differ"

for i in 0 1; do
    "$bin" sweep "$grid" --shard $i/2 -j 2 --top $k --progress 0 --screen $k --tsv "$tmp/sh$i.tsv" > /dev/null 2>&1 ||
        fail "shard $i/2"
done
"$bin" merge "$grid" "$tmp/sh0.tsv" "$tmp/sh1.tsv" --top $k --tsv /dev/null > "$tmp/merge.out" 2> "$tmp/merge.err" ||
    fail "merge: $(cat "$tmp/merge.err")"
top "$tmp/merge.out" > "$tmp/top.merge"
cmp -s "$tmp/top.full" "$tmp/top.merge" || fail "merged screened shards rank another top $k"

"$bin" sweep "$grid" --screen $k --resume "$tmp/full.tsv" > /dev/null 2> "$tmp/resume.err"
[ $? -eq 2 ] || fail "--screen with --resume is not a usage error"
grep -q "cannot resume" "$tmp/resume.err" || fail "--screen --resume: $(cat "$tmp/resume.err")"
"$bin" sweep "$grid" --mb-cap 16 --exact > /dev/null 2> "$tmp/exact.err"
[ $? -eq 2 ] || fail "--mb-cap with --exact is not a usage error"
grep -q "exclude each other" "$tmp/exact.err" || fail "--mb-cap --exact: $(cat "$tmp/exact.err")"
echo "ok: --screen $k keeps the full sweep's top $k (threads, shards, merge)"
