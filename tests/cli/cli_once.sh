#!/bin/sh
# cli_once.sh -- an option that takes one value, given twice, is a usage error naming it (issue 37):
# `mbsim run X --system a --system b` and the like were silently last-wins. For every option with a
# value of every subcommand (the option tables of sim/cli/cmd_*.c): exit 2 and
#   mbsim CMD: --OPT given twice (V1, then V2); give it once
# (the spellings are named when they differ: "-j 2, then --jobs 4"). The check is in the shared
# option parser (cli_opts_next), before any file is opened, so the operands need not exist.
# Options documented as repeatable (--set, --recipes) and flags without a value stay repeatable.
#
#   cli_once.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"

twice() { # "CMD WORDS" "MESSAGE PREFIX" OPTION V1 V2 [OPERAND...]
    words=$1 prefix=$2 opt=$3 v1=$4 v2=$5
    shift 5
    # shellcheck disable=SC2086 # the command words split on purpose
    "$bin" $words "$opt" "$v1" "$opt" "$v2" "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ "$rc" = 2 ] || fail "$words $opt twice: exit $rc, expected 2: $(head -3 "$tmp/err")"
    want="$prefix: $opt given twice ($v1, then $v2); give it once"
    grep -qxF "$want" "$tmp/err" || fail "$words $opt twice: expected '$want', got: $(head -3 "$tmp/err")"
}

S=no_such_scenario.yaml
twice run "mbsim run" --trace a.json b.json $S
twice run "mbsim run" --emit megatron bridge $S
for o in "--top 3 4" "--tsv a.tsv b.tsv" "--json a.json b.json" "--shard 0/2 1/2" "--mb-cap 4 8" \
         "--resume a.tsv b.tsv" "--progress 1 2" "--screen 2 3" "--jobs 1 2"; do
    # shellcheck disable=SC2086
    twice sweep "mbsim sweep" $o $S
done
for o in "--cv family family-all" "--jobs 1 2" "--progress 1 2" "--baseline a.json b.json" \
         "--drift-threshold 5 6" "--junit a.xml b.xml" "--max-error 10 20"; do
    # shellcheck disable=SC2086
    twice validate "mbsim validate" $o no_such.csv
done
for o in "--tsv a.tsv b.tsv" "--json a.json b.json" "--top 3 4"; do
    # shellcheck disable=SC2086
    twice merge "mbsim merge" $o $S a.tsv
done
twice tune "mbsim tune" -o a.yaml b.yaml $S
twice tune "mbsim tune" --emit megatron bridge $S
twice tune "mbsim tune" --jobs 1 2 $S
for k in megatron bridge hf; do
    for o in "--system dgx_h100 dgx_b200" "--model llama3_8b llama3_70b" "--name a b" "--gpus 8 16" \
             "--nodes 1 2" "-o a.yaml b.yaml"; do
        # shellcheck disable=SC2086
        twice "import $k" "mbsim import" $o no_such.sh
    done
done
for o in "--output a.yaml b.yaml" "--gpu H100 B200" "--base H100 B200" "--ranks 8 16"; do
    # shellcheck disable=SC2086
    twice "calibrate nccl-tests" "mbsim calibrate" $o no_such.log
done
for o in "--output a.yaml b.yaml" "--gpu H100 B200" "--base H100 B200" "--params kernel_eager step_overhead" "--jobs 1 2"; do
    # shellcheck disable=SC2086
    twice "calibrate runs" "mbsim calibrate runs" $o no_such.csv
done
twice "calibrate transfer" "mbsim calibrate transfer" --output a.yaml b.yaml H100
twice "calibrate transfer" "mbsim calibrate transfer" --base H100 B200 H100
for o in "--shapes a.csv b.csv" "--gpu H100 B200" "--base H100 B200" "-o a.yaml b.yaml"; do
    # shellcheck disable=SC2086
    twice "calibrate nsys" "mbsim calibrate nsys" $o no_such.sqlite
done
for o in "--gpu H100 B200" "--base H100 B200"; do
    # shellcheck disable=SC2086
    twice "calibrate kineto" "mbsim calibrate kineto" $o no_such.json
done
for o in "--system dgx_h100 dgx_b200" "--gpus 8 16" "--op allreduce alltoall" "--sizes 1M 2M" \
         "--factor 2 4" "--dtype bf16 fp32" "--calib a.yaml b.yaml" "--algo ring tree"; do
    # shellcheck disable=SC2086
    twice collective "mbsim collective" $o
done
twice "plot sweep" "mbsim plot" -o a.png b.png no_such.tsv

# "--name=V" and "--name V" are one spelling; -j and --jobs two, named as given
"$bin" sweep $S --top=3 --top 4 2> "$tmp/err"
[ $? = 2 ] && grep -qxF "mbsim sweep: --top given twice (3, then 4); give it once" "$tmp/err" ||
    fail "--top=3 --top 4: $(head -2 "$tmp/err")"
"$bin" sweep $S -j 2 --jobs 4 2> "$tmp/err"
[ $? = 2 ] && grep -qxF "mbsim sweep: --jobs given twice (-j 2, then --jobs 4); give it once" "$tmp/err" ||
    fail "-j 2 --jobs 4: $(head -2 "$tmp/err")"
"$bin" validate no_such.csv --pairs=a.txt --pairs 2> "$tmp/err"
[ $? = 2 ] && grep -qxF "mbsim validate: --pairs given twice (a.txt, then no value); give it once" "$tmp/err" ||
    fail "--pairs=a.txt --pairs: $(head -2 "$tmp/err")"

# repeatable: --set and --recipes collect every value; flags may be repeated
"$bin" run tests/data/net/tp8_dense.yaml --set parallel.tp=4 --set data.global_batch_size=4 --json --json \
    > /dev/null 2> "$tmp/err" || fail "run --set twice, --json twice: $(cat "$tmp/err")"
"$bin" validate tests/data/validate/recipes.csv --recipes tests/data/validate/recipes \
    --recipes tests/data/validate/recipes/rec_row.yaml -j 1 --progress 0 > /dev/null 2> "$tmp/err" ||
    fail "validate --recipes twice: $(cat "$tmp/err")"
# but --set repeatable only over different keys: one key (or its alias) twice is a usage error in
# every command that takes --set, naming both (sweep and tune used to keep the last silently)
sets_twice() { # "CMD WORDS" "MESSAGE PREFIX" SET1 SET2 KEY [OPERAND...]
    words=$1 prefix=$2 s1=$3 s2=$4 key=$5
    shift 5
    # shellcheck disable=SC2086
    "$bin" $words --set "$s1" --set "$s2" "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ "$rc" = 2 ] || fail "$words --set $s1 --set $s2: exit $rc, expected 2: $(head -3 "$tmp/err")"
    want="$prefix: --set $s2: --set $s1 gave $key a value already; give each key once"
    grep -qxF "$want" "$tmp/err" || fail "$words --set twice: expected '$want', got: $(head -3 "$tmp/err")"
}
D=tests/data/net/tp8_dense.yaml
sets_twice run "mbsim run" tp=2 parallel.tp=4 parallel.tp $D
sets_twice sweep "mbsim sweep" tp=1,2 parallel.tp=4 parallel.tp $D --progress 0
sets_twice tune "mbsim tune" mbs=1 mbs=2 data.micro_batch_size $D
sets_twice merge "mbsim merge" gbs=8 data.global_batch_size=16 data.global_batch_size $D /dev/null
echo "cli_once: ok"
