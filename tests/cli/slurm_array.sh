#!/bin/sh
# slurm_array.sh -- the job array of docs/slurm.md without Slurm: each task of
# `sbatch --array=...` is simulated by running scripts/slurm_sweep.sbatch with
# the variables Slurm sets (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP), then
# `mbsim merge` joins the shards. Expectations:
#   - docs/slurm.md shows the script as it is shipped (no drift);
#   - merged shards (--array=0-2, and --array=1-5:2, IDs 1, 3, 5) are
#     byte-identical to one run of the whole grid (TSV and JSON);
#   - merge refuses a missing shard (naming a missing configuration) and a
#     shard given twice (naming the duplicate configuration and both places).
# No predicted value is asserted: the reference is the unsharded run.
#
#   slurm_array.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
sweep=tests/data/sweep/small.yaml

# the script in the docs is the shipped one
awk '/^<!-- scripts\/slurm_sweep.sbatch -->/ {on = 1; getline; next} on && /^```$/ {exit} on' docs/slurm.md \
    > "$tmp/doc.sbatch"
cmp -s "$tmp/doc.sbatch" scripts/slurm_sweep.sbatch || fail "docs/slurm.md shows another script than scripts/slurm_sweep.sbatch"

env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT \
    "$bin" sweep $sweep -j 2 --progress 0 --tsv "$tmp/ref.tsv" --json "$tmp/ref.json" > /dev/null 2>&1 || fail "reference run"

# task IDs, MIN, STEP, COUNT
array() {
    dir=$1 min=$2 step=$3 count=$4
    i=0
    while [ $i -lt "$count" ]; do
        id=$((min + i * step))
        SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_COUNT=$count SLURM_ARRAY_TASK_MIN=$min SLURM_ARRAY_TASK_STEP=$step \
            MBSIM=$bin bash scripts/slurm_sweep.sbatch $sweep "$dir" --progress 0 > "$dir.log.$id" 2>&1 ||
            fail "task $id: $(cat "$dir.log.$id")"
        grep -q "shard $i/$count from the Slurm job array" "$dir.log.$id" || fail "task $id did not run shard $i/$count"
        i=$((i + 1))
    done
}

array "$tmp/a" 0 1 3
"$bin" merge $sweep "$tmp"/a/shard_*.tsv --tsv "$tmp/a.tsv" --json "$tmp/a.json" > /dev/null || fail "merge"
cmp -s "$tmp/ref.tsv" "$tmp/a.tsv" || fail "merged TSV differs from the single run"
cmp -s "$tmp/ref.json" "$tmp/a.json" || fail "merged JSON differs from the single run"

array "$tmp/b" 1 2 3
"$bin" merge $sweep "$tmp/b/shard_5.tsv" "$tmp/b/shard_1.tsv" "$tmp/b/shard_3.tsv" --tsv "$tmp/b.tsv" > /dev/null ||
    fail "merge of --array=1-5:2"
cmp -s "$tmp/ref.tsv" "$tmp/b.tsv" || fail "--array=1-5:2 merged TSV differs"

# a requeued task (its file complete) resumes without running anything
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 MBSIM=$bin bash scripts/slurm_sweep.sbatch $sweep "$tmp/a" \
    --progress 0 > "$tmp/requeue.log" 2>&1 || fail "requeued task"
grep -q "12 of 12 configurations done" "$tmp/requeue.log" || fail "requeued task: $(cat "$tmp/requeue.log")"

"$bin" merge $sweep "$tmp/a/shard_0.tsv" "$tmp/a/shard_2.tsv" > /dev/null 2> "$tmp/miss.err"
[ $? -eq 1 ] || fail "missing shard: expected exit 1"
grep -q "miss 12 of the grid's 36 configurations" "$tmp/miss.err" || fail "missing: $(cat "$tmp/miss.err")"
grep -q "configuration 1: parallel.tp=1 data.micro_batch_size=1 parallel.ep=4 recompute.granularity=full" \
    "$tmp/miss.err" || fail "missing configuration not named: $(cat "$tmp/miss.err")"
"$bin" merge $sweep "$tmp"/a/shard_*.tsv "$tmp/a/shard_1.tsv" > /dev/null 2> "$tmp/dup.err"
[ $? -eq 1 ] || fail "duplicate shard: expected exit 1"
grep -q "shard_1.tsv:2:1: configuration 1 (parallel.tp=1 .*) is also in .*shard_1.tsv:2" "$tmp/dup.err" ||
    fail "duplicate not named: $(cat "$tmp/dup.err")"
SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_COUNT=3 "$bin" sweep $sweep > /dev/null 2> "$tmp/bad.err"
[ $? -eq 2 ] || fail "SLURM_ARRAY_TASK_ID outside the array: expected exit 2"
echo "ok: job arrays merged to the single run; missing and duplicate shards refused"
