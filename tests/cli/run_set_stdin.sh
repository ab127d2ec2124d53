#!/bin/sh
# run_set_stdin.sh -- `mbsim run --set KEY=VALUE` and `mbsim run -` (issue 36, part 6).
#
# --set: the report of `run F --set parallel.tp=4 --set data.global_batch_size=4` is byte for byte
# the report of a copy of F whose file says tp: 4 and global_batch_size: 4 (written with sed beside
# the fixture, so its relative calibration path resolves the same): the reference is the loader
# reading the file, no predicted number is asserted. An alias (tp) and a '+'-joined list value are
# accepted as by sweep --set; an unknown key, a bad value and several values are usage errors
# (exit 2) naming the key; a combination the checks refuse (tp = 3 on 8 GPUs) is exit 1.
#
# -: the scenario read from standard input gives the report of the file; its relative
# calibration path resolves from the current directory (it runs from the fixture's folder and
# fails, naming the path, from the source tree's root); a YAML error names <stdin>:LINE:COL.
#
#   run_set_stdin.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
src=$(pwd)
case $bin in /*) ;; *) bin=$src/$bin ;; esac
fix=tests/data/net/tp8_dense.yaml # tp: 8, global_batch_size: 1, relative calibration table
copy=tests/data/net/.run_set_copy.yaml
trap 'rm -rf "$tmp" "$copy"' EXIT

# the file the two --set options describe, and the report with the file name taken out
sed -e 's/parallel: {tp: 8,/parallel: {tp: 4,/' -e 's/global_batch_size: 1,/global_batch_size: 4,/' "$fix" > "$copy"
grep -q 'tp: 4,' "$copy" && grep -q 'global_batch_size: 4,' "$copy" || fail "sed did not edit $fix"
"$bin" run "$copy" --json > "$tmp/file.json" 2> "$tmp/err" || fail "run $copy: $(cat "$tmp/err")"
"$bin" run "$fix" --set parallel.tp=4 --set data.global_batch_size=4 --json > "$tmp/set.json" 2> "$tmp/err" ||
    fail "run --set: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "run --set printed: $(cat "$tmp/err")"
cmp -s "$tmp/file.json" "$tmp/set.json" || fail "run --set differs from the edited file: $(diff "$tmp/file.json" "$tmp/set.json" | head -20)"
"$bin" run "$fix" --set parallel.tp=8 --json > "$tmp/same.json" || fail "run --set tp=8"
"$bin" run "$fix" --json > "$tmp/plain.json" || fail "run $fix"
cmp -s "$tmp/plain.json" "$tmp/same.json" || fail "--set of the file's own value changed the report"
cmp -s "$tmp/plain.json" "$tmp/set.json" && fail "--set parallel.tp=4 changed nothing"
# the alias of sweep --set, and a list value joined with '+'
"$bin" run "$fix" --set tp=4 --set data.global_batch_size=4 --json > "$tmp/alias.json" 2> "$tmp/err" ||
    fail "run --set tp=4 (alias): $(cat "$tmp/err")"
cmp -s "$tmp/file.json" "$tmp/alias.json" || fail "--set tp=4 (alias) differs from parallel.tp=4"
"$bin" run "$fix" --set recompute.granularity=selective --set recompute.modules=core_attn+mlp > /dev/null 2> "$tmp/err" ||
    fail "--set recompute.modules=core_attn+mlp: $(cat "$tmp/err")"

usage() { # EXPECTED_EXIT WORD_IN_MESSAGE ARGS...
    want=$1 word=$2
    shift 2
    "$bin" run "$fix" "$@" > /dev/null 2> "$tmp/err"
    got=$?
    [ "$got" = "$want" ] || fail "run $*: exit $got, expected $want: $(cat "$tmp/err")"
    grep -q -- "$word" "$tmp/err" || fail "run $*: the message does not name '$word': $(cat "$tmp/err")"
    [ "$(wc -l < "$tmp/err")" = 1 ] || fail "run $*: more than one line: $(cat "$tmp/err")"
}
usage 2 "parallel.tpp" --set parallel.tpp=2
usage 2 "parallel.tp" --set parallel.tp=x
usage 2 "parallel.tp" --set parallel.tp=2,4
usage 2 "expected key=" --set parallel.tp
usage 2 "expected key=" --set =4
# one key given twice (also through its alias) is an error, not the last value silently
usage 2 "give each key once" --set parallel.tp=2 --set parallel.tp=4
usage 2 "give each key once" --set parallel.tp=2 --set tp=4
usage 2 "moe.dispatcher" --set moe.dispatcher=fast
usage 1 "tp" --set parallel.tp=3

# standard input: the same report; relative paths from the current directory
"$bin" run - --json < "$fix" > "$tmp/stdin.json" 2> "$tmp/err" && fail "run - from the root resolved ../calib: $(cat "$tmp/err")"
grep -q "fixture_H100.yaml" "$tmp/err" || fail "run - from the root: the message names no table: $(cat "$tmp/err")"
(cd tests/data/net && "$bin" run - --json < tp8_dense.yaml) > "$tmp/stdin.json" 2> "$tmp/err" ||
    fail "run - in tests/data/net: $(cat "$tmp/err")"
(cd tests/data/net && "$bin" run tp8_dense.yaml --json) > "$tmp/here.json" || fail "run tp8_dense.yaml in tests/data/net"
cmp -s "$tmp/here.json" "$tmp/stdin.json" || fail "run - differs from run FILE: $(diff "$tmp/here.json" "$tmp/stdin.json" | head)"
(cd tests/data/net && "$bin" run - --set parallel.tp=4 --set data.global_batch_size=4 --json < tp8_dense.yaml) > "$tmp/stdin_set.json" ||
    fail "run - --set"
(cd tests/data/net && "$bin" run .run_set_copy.yaml --json) > "$tmp/file_here.json" || fail "run the copy in tests/data/net"
cmp -s "$tmp/file_here.json" "$tmp/stdin_set.json" || fail "run - --set differs from the edited file: $(diff "$tmp/file_here.json" "$tmp/stdin_set.json" | head)"
# a YAML error at the end of the input ('parallel: [8' never closes its list: libyaml reports it
# on line 4, after the last line); an unknown model on line 3, column 8 (where its value starts)
printf 'schema_version: 2\nname: x\nparallel: [8\n' | "$bin" run - > /dev/null 2> "$tmp/err"
[ $? = 1 ] || fail "broken YAML on stdin: not exit 1: $(cat "$tmp/err")"
grep -q "<stdin>:4:1:" "$tmp/err" || fail "broken YAML on stdin: no <stdin>:LINE:COL: $(cat "$tmp/err")"
printf 'schema_version: 2\nname: x\nmodel: no_such_model_36\nsystem: {preset: dgx_h100, gpus: 8}\ndata: {seq_length: 4096, global_batch_size: 8, micro_batch_size: 1}\n' |
    "$bin" run - > /dev/null 2> "$tmp/err"
grep -q "<stdin>:3:8:" "$tmp/err" || fail "unknown model on stdin: no <stdin>:3:8: $(cat "$tmp/err")"
# a measured: block describes the file's run: after a --set that changes a key it is not compared
# (a note names the key, no measured: line, no JSON measured object); a --set to the file's own
# value keeps it (scenarios/h100_llama3_70b_3d.yaml: tp 4, global_batch_size 128, tokens measured)
m=scenarios/h100_llama3_70b_3d.yaml
"$bin" run "$m" --set tp=8 > "$tmp/out" 2> "$tmp/err" || fail "run $m --set tp=8: $(cat "$tmp/err")"
grep -qF "the measured: block is not compared: --set changed parallel.tp" "$tmp/err" ||
    fail "run --set tp=8 on a measured scenario: no note: $(cat "$tmp/err")"
! grep -q "^  measured:" "$tmp/out" || fail "run --set tp=8 still compares with the measured run"
"$bin" run "$m" --set tp=8 --json 2> /dev/null | grep -q '"measured"' && fail "run --set tp=8 --json keeps measured"
"$bin" run "$m" --set tp=4 > "$tmp/out" 2> "$tmp/err" || fail "run $m --set tp=4: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "run --set tp=4 (the file's value) printed: $(cat "$tmp/err")"
grep -q "^  measured:" "$tmp/out" || fail "run --set tp=4 (the file's value) dropped the measured comparison"
echo "run_set_stdin: --set matches the edited file, bad --set named (exit 2), stdin = file, <stdin>:line:col"
