#!/bin/sh
# robust_output.sh -- outputs are never lost with exit 0 (issue 37, "Outputs are lost with exit 0" and
# "Resume can lose finished work"). Each class, with its regression input in tests/data/robust/:
#   1. standard output on a full disk (/dev/full): every command that prints exits 1 with
#      "mbsim: error writing standard output: No space left on device"; tune -o /dev/full does not
#      say "wrote" (output_scenario.yaml);
#   2. a file write that fails midway (the file-size limit, EFBIG): exit 1, the old file is left as
#      it was and no temporary file stays;
#   3. an output that is an input of the command (same name, a symbolic link, a hard link; run --trace,
#      tune -o, import -o, sweep --json, merge --tsv, calibrate runs -o its CSV) or one path given as
#      two outputs: exit 1, the input unchanged; but calibrate transfer (and runs) -o its own --base
#      table rewrites it in place, as the documented refits do (docs/calibration.md);
#   4. calibrate transfer from a base table it cannot copy into a loadable table (a column-0 comment
#      in its framework: block, a quoted "framework": key): exit 1, nothing written
#      (calib_transfer_comment.yaml, calib_transfer_quoted.yaml);
#   5. sweep --resume killed (SIGKILL, or two Ctrl-C) before the new TSV holds the old rows: every
#      row of the file it read is still there, no temporary file stays; a last resume completes it
#      to the uninterrupted run's bytes;
#   6. two sweeps given one --tsv: the second is refused while the first runs;
#   7. merge of shards run with other calibration tables (sweep_own_table.yaml), other options
#      (--exact) or another scenario file, a --screen TSV resumed by a plain sweep, a TSV without
#      the provenance line (sweep_no_provenance.tsv): exit 1 naming the file and line.
# Expectations come from the files themselves (checksums before and after, rows of an uninterrupted
# run), not from predicted values.
#
#   robust_output.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
R=tests/data/robust
src=$(pwd)

# expect CODE PATTERN CMD...: CMD exits CODE and its stderr holds PATTERN (grep -E)
expect() {
    code=$1 pat=$2
    shift 2
    "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ $rc -eq "$code" ] || fail "$*: exit $rc, expected $code; stderr: $(cat "$tmp/err")"
    grep -Eq -- "$pat" "$tmp/err" || fail "$*: stderr lacks '$pat': $(cat "$tmp/err")"
}
no_tmp() { [ -z "$(find "$1" -name '.*.tmp')" ] || fail "temporary files left: $(find "$1" -name '.*.tmp')"; }

# ---- 1. standard output on a full disk
if [ -w /dev/full ]; then
    full='error writing standard output: No space left on device'
    for args in "run $R/output_scenario.yaml" "run $R/output_scenario.yaml --json" \
        "run $R/output_scenario.yaml --emit megatron" "validate tests/data/fit/synthetic_h100.csv --json" \
        "import megatron tests/data/import/qwen3_30b_a3b_h100_ep16.sh --system dgx_h100 --gpus 16" \
        "topo dgx_h100 --json" "collective --system dgx_h100 --gpus 8 --op all_reduce --sizes 8:8G" \
        "calibrate transfer tests/data/fit/fitted_a.yaml --base tests/data/calib/fixture_H100.yaml" \
        "models" "sweep tests/data/sweep/small.yaml --progress 0 --tsv -"; do
        # shellcheck disable=SC2086
        $bin $args > /dev/full 2> "$tmp/err"
        rc=$?
        [ $rc -eq 1 ] || fail "mbsim $args > /dev/full: exit $rc, expected 1; stderr: $(cat "$tmp/err")"
        grep -q "$full" "$tmp/err" || grep -q "standard output: write error: No space left on device" "$tmp/err" ||
            fail "mbsim $args > /dev/full: no write error on stderr: $(cat "$tmp/err")"
    done
    $bin tune $R/output_scenario.yaml -o /dev/full > "$tmp/tune.out" 2> "$tmp/err"
    [ $? -eq 1 ] || fail "tune -o /dev/full: expected exit 1"
    grep -q "/dev/full: write error: No space left on device" "$tmp/err" || fail "tune -o /dev/full: $(cat "$tmp/err")"
    ! grep -q "^wrote" "$tmp/tune.out" || fail "tune -o /dev/full says it wrote the file"
fi

# ---- 1b. on a terminal, standard output escapes what a scenario's name may carry (ESC, CR, BEL) as \xNN;
# into a pipe the bytes are data and go as they are
if command -v script > /dev/null 2>&1; then
    printf 'schema_version: 2\nname: "evil\\e[31m\\r\\a"\nmodel: llama3_8b\nsystem:\n  preset: dgx_h100\n  gpus: 8\ndata:\n  seq_length: 4096\n  global_batch_size: 16\n  micro_batch_size: 1\n' > "$tmp/evil.yaml"
    script -qc "$bin run $tmp/evil.yaml" /dev/null > "$tmp/tty.out" 2>&1
    grep -q 'mbsim: evil\\x1B\[31m\\x0D\\x07' "$tmp/tty.out" || fail "terminal output not escaped: $(head -2 "$tmp/tty.out")"
    $bin run "$tmp/evil.yaml" | head -1 | grep -q "$(printf 'evil\033\\[31m')" || fail "piped output was escaped"
fi

# ---- 2. a write that fails midway leaves the old file and no temporary file
mkdir "$tmp/w"
echo old > "$tmp/w/trace.json"
sh -c 'trap "" XFSZ; ulimit -f 8; exec "$@"' sh $bin run $R/output_scenario.yaml --trace "$tmp/w/trace.json" \
    > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] || fail "trace past the file-size limit: expected exit 1; $(cat "$tmp/err")"
grep -Eq "trace.json: (cannot write the trace|write error): File too large" "$tmp/err" || fail "EFBIG: $(cat "$tmp/err")"
[ "$(cat "$tmp/w/trace.json")" = old ] || fail "the old trace was replaced by a cut one"
no_tmp "$tmp/w"

# ---- 3. an output that is an input, or given twice
mkdir "$tmp/in"
sed "s#../calib/fixture_H100.yaml#$src/tests/data/calib/fixture_H100.yaml#" $R/output_scenario.yaml > "$tmp/in/s.yaml"
ln -s s.yaml "$tmp/in/link.yaml"
ln "$tmp/in/s.yaml" "$tmp/in/hard.yaml"
cp tests/data/import/qwen3_30b_a3b_h100_ep16.sh tests/data/calib/fixture_H100.yaml "$tmp/in/"
sum0=$(cksum < "$tmp/in/s.yaml")
same='is also an input of this command'
expect 1 "s.yaml: $same" $bin run "$tmp/in/s.yaml" --trace "$tmp/in/s.yaml"
expect 1 "link.yaml: $same" $bin run "$tmp/in/s.yaml" --trace "$tmp/in/link.yaml"
expect 1 "s.yaml: $same" $bin run "$tmp/in/hard.yaml" --trace "$tmp/in/s.yaml"
expect 1 "fixture_H100.yaml: $same" $bin run "$tmp/in/s.yaml" --trace "$src/tests/data/calib/fixture_H100.yaml"
expect 1 "s.yaml: $same" $bin tune "$tmp/in/s.yaml" -o "$tmp/in/s.yaml"
[ "$(cksum < "$tmp/in/s.yaml")" = "$sum0" ] || fail "the scenario changed"
sh0=$(cksum < "$tmp/in/qwen3_30b_a3b_h100_ep16.sh")
expect 1 "ep16.sh: $same" $bin import megatron "$tmp/in/qwen3_30b_a3b_h100_ep16.sh" --system dgx_h100 --gpus 16 \
    -o "$tmp/in/qwen3_30b_a3b_h100_ep16.sh"
[ "$(cksum < "$tmp/in/qwen3_30b_a3b_h100_ep16.sh")" = "$sh0" ] || fail "import overwrote its input"
t0=$(cksum < "$tmp/in/fixture_H100.yaml")
expect 0 "kernel_moe" $bin calibrate transfer tests/data/fit/fitted_a.yaml \
    --base "$tmp/in/fixture_H100.yaml" -o "$tmp/in/fixture_H100.yaml"
[ "$(cksum < "$tmp/in/fixture_H100.yaml")" != "$t0" ] || fail "transfer did not rewrite its base table"
grep -q "kernel_eager: 10 us" "$tmp/in/fixture_H100.yaml" || fail "the base table lacks the transferred kernel_eager"
$bin calibrate transfer tests/data/fit/fitted_a.yaml --base "$tmp/in/fixture_H100.yaml" > /dev/null 2> "$tmp/err" ||
    fail "the table rewritten in place does not load as a base: $(cat "$tmp/err")"
# a --base that does not load is named with the command and the option, as calibrate transfer names it
expect 1 "^mbsim calibrate runs: --base nosuch: unknown GPU 'nosuch'" $bin calibrate runs tests/data/fit/synthetic_h100.csv \
    --gpu H100 --base nosuch
# calibrate runs refuses its CSV as its table before fitting (the QA saw the fit run first): no fit summary
cp tests/data/fit/synthetic_h100.csv "$tmp/in/runs.csv"
c0=$(cksum < "$tmp/in/runs.csv")
expect 1 "^mbsim: .*runs.csv: $same" $bin calibrate runs "$tmp/in/runs.csv" --gpu H100 -o "$tmp/in/runs.csv"
! grep -q "iterations" "$tmp/err" || fail "calibrate runs fitted before refusing its output: $(cat "$tmp/err")"
[ "$(cksum < "$tmp/in/runs.csv")" = "$c0" ] || fail "calibrate runs overwrote its CSV"
cp $R/sweep_own_table.yaml "$tmp/in/sweep.yaml"
cp tests/data/calib/fixture_H100.yaml "$tmp/in/own_table.yaml"
w0=$(cksum < "$tmp/in/sweep.yaml")
expect 1 "sweep.yaml: $same" $bin sweep "$tmp/in/sweep.yaml" --progress 0 --json "$tmp/in/sweep.yaml"
expect 1 "own_table.yaml: $same" $bin sweep "$tmp/in/sweep.yaml" --progress 0 --tsv "$tmp/in/own_table.yaml"
expect 1 "given as two outputs" $bin sweep "$tmp/in/sweep.yaml" --progress 0 --tsv "$tmp/in/x" --json "$tmp/in/x"
[ "$(cksum < "$tmp/in/sweep.yaml")" = "$w0" ] || fail "the sweep's scenario changed"
$bin sweep "$tmp/in/sweep.yaml" --progress 0 --tsv "$tmp/in/all.tsv" > /dev/null 2>&1 || fail "own-table sweep"
a0=$(cksum < "$tmp/in/all.tsv")
expect 1 "all.tsv: $same" $bin merge "$tmp/in/sweep.yaml" "$tmp/in/all.tsv" --tsv "$tmp/in/all.tsv"
[ "$(cksum < "$tmp/in/all.tsv")" = "$a0" ] || fail "merge overwrote its shard"
no_tmp "$tmp/in"

# ---- 4. calibrate transfer writes no table that does not load
for b in comment quoted; do
    echo kept > "$tmp/t_$b.yaml"
    expect 1 "the table made does not load as a calibration table, so $tmp/t_$b.yaml was not written: $tmp/t_$b.yaml:[0-9]+:[0-9]+: duplicate key" \
        $bin calibrate transfer tests/data/fit/fitted_a.yaml --base $R/calib_transfer_$b.yaml -o "$tmp/t_$b.yaml"
    [ "$(cat "$tmp/t_$b.yaml")" = kept ] || fail "transfer ($b) replaced its output with a table that does not load"
    expect 1 "so standard output was not written" \
        $bin calibrate transfer tests/data/fit/fitted_a.yaml --base $R/calib_transfer_$b.yaml
    [ ! -s "$tmp/out" ] || fail "transfer ($b) printed a table that does not load"
done
no_tmp "$tmp"
[ -z "$(find . -maxdepth 1 -name '.mbsim-table-check*')" ] || fail "the check's copy stayed in the current folder"

# ---- 5. a killed resume keeps every row it read
moe=tests/data/sweep/moe256.yaml
mkdir "$tmp/r"
$bin sweep $moe -j 2 --progress 0 --tsv "$tmp/r/ref.tsv" > /dev/null 2>&1 || fail "moe256 reference"
# the provenance line, the header and configurations 2000 on: the resume must simulate 0..1999
# before it can write the rows it keeps
{ head -n 2 "$tmp/r/ref.tsv"; tail -n +2003 "$tmp/r/ref.tsv"; } > "$tmp/r/cut.tsv"
[ "$(wc -l < "$tmp/r/cut.tsv")" -eq 306 ] || fail "the cut file: $(wc -l < "$tmp/r/cut.tsv") lines, expected 306"
cp "$tmp/r/cut.tsv" "$tmp/r/part.tsv"
$bin sweep $moe -j 1 --progress 0 --resume "$tmp/r/part.tsv" > /dev/null 2>&1 &
pid=$!
n=0
until [ -n "$(find "$tmp/r" -name '.part.tsv.*.tmp')" ]; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { kill $pid; fail "no temporary TSV after 60 s"; }
    sleep 0.02
done
kill -9 $pid
wait $pid 2> /dev/null
[ -z "$(grep -vxFf "$tmp/r/part.tsv" "$tmp/r/cut.tsv")" ] || fail "SIGKILL during --resume lost rows of the file it read"
cmp -s "$tmp/r/part.tsv" "$tmp/r/cut.tsv" || fail "the file read by a killed --resume changed before the new one was whole"
# two Ctrl-C: the second ends the run at once; the file keeps every row it had
$bin sweep $moe -j 1 --progress 0 --resume "$tmp/r/part.tsv" > /dev/null 2>&1 &
pid=$!
n=0
until [ -n "$(find "$tmp/r" -name ".part.tsv.$pid.*.tmp")" ]; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { kill $pid; fail "no temporary TSV after 60 s (second run)"; }
    sleep 0.02
done
kill -INT $pid
kill -INT $pid 2> /dev/null
wait $pid
[ -z "$(grep -vxFf "$tmp/r/part.tsv" "$tmp/r/cut.tsv")" ] || fail "two Ctrl-C during --resume lost rows of the file it read"
[ -z "$(find "$tmp/r" -name ".part.tsv.$pid.*.tmp")" ] || fail "the interrupted resume left its temporary TSV"
$bin sweep $moe -j 2 --progress 0 --resume "$tmp/r/part.tsv" > /dev/null 2> "$tmp/err" || fail "last resume: $(cat "$tmp/err")"
cmp -s "$tmp/r/part.tsv" "$tmp/r/ref.tsv" || fail "the resumed TSV differs from the uninterrupted run's"
no_tmp "$tmp/r" # the killed run's temporary file was removed by the next writer of the path
[ ! -e "$tmp/r/.part.tsv.lock" ] || fail "the lock file stayed"

# ---- 6. two sweeps writing one TSV
vlm=tests/data/sweep/vlm9216.yaml
$bin sweep $vlm -j 1 --progress 0 --shard 0/2 --tsv "$tmp/r/one.tsv" > /dev/null 2>&1 &
pid=$!
n=0
until [ -e "$tmp/r/.one.tsv.lock" ]; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { kill $pid; fail "no lock file after 60 s"; }
    sleep 0.02
done
expect 1 "one.tsv: is being written by another mbsim \\(process $pid\\)" \
    $bin sweep $vlm -j 1 --progress 0 --shard 1/2 --tsv "$tmp/r/one.tsv"
kill -TERM $pid
wait $pid
head -n 1 "$tmp/r/one.tsv" | grep -q '^# mbsim sweep: ' || fail "the first sweep's TSV lost its provenance line"
! grep -q "^1	" "$tmp/r/one.tsv" || fail "a row of shard 1 went into shard 0's TSV"

# ---- 7. merge and resume check where the rows came from
mkdir "$tmp/m"
cp $R/sweep_own_table.yaml "$tmp/m/sweep.yaml"
cp tests/data/calib/fixture_H100.yaml "$tmp/m/own_table.yaml"
$bin sweep "$tmp/m/sweep.yaml" --shard 0/2 --progress 0 --tsv "$tmp/m/s0.tsv" > /dev/null 2>&1 || fail "shard 0"
echo "# edited after shard 0 ran" >> "$tmp/m/own_table.yaml" # the same numbers, another file
$bin sweep "$tmp/m/sweep.yaml" --shard 1/2 --progress 0 --tsv "$tmp/m/s1.tsv" > /dev/null 2>&1 || fail "shard 1"
expect 1 "s0.tsv:1:1: the file was written with other calibration tables" \
    $bin merge "$tmp/m/sweep.yaml" "$tmp/m/s0.tsv" "$tmp/m/s1.tsv" --tsv "$tmp/m/all.tsv"
[ ! -e "$tmp/m/all.tsv" ] || fail "merge wrote a TSV of mixed tables"
$bin sweep "$tmp/m/sweep.yaml" --shard 0/2 --exact --progress 0 --tsv "$tmp/m/s0.tsv" > /dev/null 2>&1 || fail "--exact"
expect 1 "s0.tsv:1:1: the file was written with options 'exact', not 'mb-cap:16'.*the options of .*s1.tsv, the first file" \
    $bin merge "$tmp/m/sweep.yaml" "$tmp/m/s1.tsv" "$tmp/m/s0.tsv"
$bin sweep "$tmp/m/sweep.yaml" --shard 0/2 --progress 0 --tsv "$tmp/m/s0.tsv" > /dev/null 2>&1 || fail "shard 0 again"
$bin merge "$tmp/m/sweep.yaml" "$tmp/m/s0.tsv" "$tmp/m/s1.tsv" --tsv "$tmp/m/all.tsv" > /dev/null 2>&1 ||
    fail "merge of shards with one table"
# a scenario file that is missing or does not load is bad input (exit 1), not --help's exit 0
expect 1 "no_such.yaml: cannot open" $bin merge "$tmp/m/no_such.yaml" "$tmp/m/s0.tsv" "$tmp/m/s1.tsv"
printf 'schema_version: 2\nname: [\n' > "$tmp/m/broken.yaml"
expect 1 "broken.yaml:" $bin merge "$tmp/m/broken.yaml" "$tmp/m/s0.tsv"
$bin merge --help > /dev/null 2>&1 || fail "merge --help: exit $?"
echo "# edited" >> "$tmp/m/sweep.yaml"
expect 1 "s0.tsv:1:1: the file was written from another scenario file" \
    $bin merge "$tmp/m/sweep.yaml" "$tmp/m/s0.tsv" "$tmp/m/s1.tsv"
screen=tests/data/sweep/screen.yaml
$bin sweep $screen --screen 3 --progress 0 --tsv "$tmp/m/scr.tsv" > /dev/null 2>&1 || fail "screened sweep"
c0=$(cksum < "$tmp/m/scr.tsv")
expect 1 "scr.tsv:1:1: the file was written with options 'mb-cap:16,screen:3', not 'mb-cap:16' \\(a --screen sweep's rows are not a full sweep's" \
    $bin sweep $screen --progress 0 --resume "$tmp/m/scr.tsv"
[ "$(cksum < "$tmp/m/scr.tsv")" = "$c0" ] || fail "a refused resume changed the file"
cp $R/sweep_no_provenance.tsv "$tmp/m/old.tsv"
expect 1 "old.tsv:1:1: no provenance line" $bin sweep tests/data/sweep/small.yaml --progress 0 --resume "$tmp/m/old.tsv"
cmp -s $R/sweep_no_provenance.tsv "$tmp/m/old.tsv" || fail "a refused resume changed the old file"
expect 1 "sweep_no_provenance.tsv:1:1: no provenance line" $bin merge tests/data/sweep/small.yaml $R/sweep_no_provenance.tsv
no_tmp "$tmp"
echo "ok: full disks, cut writes, outputs naming inputs, unloadable tables, killed resumes, shared paths and foreign shards all exit 1 with nothing lost"
