#!/bin/sh
# warn_inert.sh -- settings that are valid but change nothing are reported,
# and really change nothing (issue 17 item 7). For each fixture
# tests/data/scenario/warn_*.yaml, `mbsim run --json`:
#   - exits 0 and prints one "FILE:LINE:COL: warning: KEY ..." line per
#     warned key on stderr (the count is the fixture's, below);
#   - gives byte for byte the report of the same file with the warned lines
#     deleted (the lines are taken from the warnings themselves, then section
#     headers left empty are dropped): the reference is the simulation
#     without the settings, no predicted value is asserted. For overlap.ep_comm
#     at ep = 1, whose warning says the memory still counts it, the step time
#     and its breakdown are compared instead.
# Then a scenario that warns is run by `mbsim tune` and `mbsim sweep`, which
# print the same warning (a sweep not when an axis varies what the warning
# depends on), and the shipped scenarios print none.
#
#   warn_inert.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
fix=tests/data/scenario

check() { # FIXTURE WARNINGS [time]
    f=$fix/$1.yaml
    "$bin" run "$f" --json > "$tmp/with.json" 2> "$tmp/with.err" || fail "$1: exit $?: $(cat "$tmp/with.err")"
    n=$(grep -c "^mbsim: $f:[0-9]*:[0-9]*: warning: " "$tmp/with.err")
    [ "$n" = "$2" ] || fail "$1: $n warnings, expected $2: $(cat "$tmp/with.err")"
    [ "$(wc -l < "$tmp/with.err")" = "$2" ] || fail "$1: stderr has more than the warnings: $(cat "$tmp/with.err")"
    lines=$(sed -n "s|^mbsim: $f:\([0-9]*\):.*|\1|p" "$tmp/with.err" | tr '\n' ' ')
    expr=""
    for l in $lines; do expr="$expr${l}d;"; done
    # the stripped copy sits beside the fixture: model and system names resolve the same way
    stripped=$fix/.stripped_$1.yaml
    trap 'rm -rf "$tmp" "$stripped"' EXIT
    sed "$expr" "$f" | awk '
        /^[a-z_]+:[ ]*$/ { if (held != "") {} held = $0; next }
        { if (held != "" && $0 !~ /^ /) held = ""; if (held != "") { print held; held = "" } print }' > "$stripped"
    "$bin" run "$stripped" --json > "$tmp/without.json" 2> "$tmp/without.err" ||
        fail "$1 without the warned keys: $(cat "$tmp/without.err")"
    [ -s "$tmp/without.err" ] && fail "$1 without the warned keys still warns: $(cat "$tmp/without.err")"
    if [ "${3:-}" = time ]; then
        for j in with without; do
            sed -n '/"step_time_s"/p; /"breakdown_s"/,/}/p' "$tmp/$j.json" > "$tmp/$j.time"
        done
        [ -s "$tmp/with.time" ] || fail "$1: no step_time_s or breakdown_s in the report"
        cmp -s "$tmp/with.time" "$tmp/without.time" ||
            fail "$1: a warned setting changed the step: $(diff "$tmp/with.time" "$tmp/without.time" | head -5)"
    else
        cmp -s "$tmp/with.json" "$tmp/without.json" ||
            fail "$1: a warned setting changed the report: $(diff "$tmp/with.json" "$tmp/without.json" | head -5)"
    fi
    rm -f "$stripped"
}

check warn_dispatcher_sms_hybridep 1
check warn_ep1 3
check warn_dense_moe_keys 2
check warn_training_inert 3
check warn_moe_routing 4
check warn_cp_mock 2
check warn_torchtitan_keys 2 time  # the same step, memory and time; only the order of tied rows and the task count of the op table differ
check warn_cuda_graph_reuse 1  # reuse_buffers under full_iteration graphs (issue 37)

f=$fix/warn_dispatcher_sms_hybridep.yaml
"$bin" tune "$f" -o "$tmp/tuned.yaml" > /dev/null 2> "$tmp/tune.err" || fail "tune: $(cat "$tmp/tune.err")"
grep -q "^mbsim: $f:19:19: warning: moe.dispatcher_sms = 16 changes nothing" "$tmp/tune.err" || fail "tune: no warning"
"$bin" sweep "$f" --set mbs=1 --progress 0 --tsv /dev/null > /dev/null 2> "$tmp/sweep.err" || fail "sweep: $(cat "$tmp/sweep.err")"
grep -q "^mbsim: $f:19:19: warning: moe.dispatcher_sms" "$tmp/sweep.err" || fail "sweep: no warning"
# an axis that changes what the warning depends on (here overlap.ep_comm) silences it
"$bin" sweep "$f" --set overlap.ep_comm=false,true --progress 0 --tsv /dev/null > /dev/null 2> "$tmp/sweep2.err" ||
    fail "sweep over overlap.ep_comm: $(cat "$tmp/sweep2.err")"
grep -q "warning:" "$tmp/sweep2.err" && fail "sweep over overlap.ep_comm warns: $(cat "$tmp/sweep2.err")"
# the same for the routing, on which the skew, seed and capacity-factor warnings depend
f=$fix/warn_moe_routing.yaml
"$bin" sweep "$f" --set moe.routing=balanced,skewed --progress 0 --tsv /dev/null > /dev/null 2> "$tmp/sweep3.err" ||
    fail "sweep over moe.routing: $(cat "$tmp/sweep3.err")"
grep -q "warning:" "$tmp/sweep3.err" && fail "sweep over moe.routing warns: $(cat "$tmp/sweep3.err")"

# a sweep over cuda_graph.modules (scoped graphs, where reuse_buffers counts) silences the reuse_buffers warning
f=$fix/warn_cuda_graph_reuse.yaml
"$bin" sweep "$f" --set cuda_graph.modules=attn,full_iteration --progress 0 --tsv /dev/null > /dev/null 2> "$tmp/sweep4.err" ||
    fail "sweep over cuda_graph.modules: $(cat "$tmp/sweep4.err")"
grep -q "warning:" "$tmp/sweep4.err" && fail "sweep over cuda_graph.modules warns: $(cat "$tmp/sweep4.err")"
"$bin" sweep "$f" --set mbs=1 --progress 0 --tsv /dev/null > /dev/null 2> "$tmp/sweep5.err" || fail "sweep: $(cat "$tmp/sweep5.err")"
grep -q "^mbsim: $f:21:18: warning: cuda_graph.reuse_buffers changes nothing with cuda_graph.modules: full_iteration" \
    "$tmp/sweep5.err" || fail "sweep of warn_cuda_graph_reuse: no warning: $(cat "$tmp/sweep5.err")"

# run --set: the warnings of the configuration that runs (issue 37: a --set key that changed nothing was
# silent, and any --set on a dependency dropped the file's warnings): the file's at their position, a
# --set key named as given, a warning whose condition the --set values lift gone
"$bin" run "$f" --set parallel.tp=1 > /dev/null 2> "$tmp/run1.err" || fail "run --set: $(cat "$tmp/run1.err")"
grep -q "^mbsim: $f:21:18: warning: cuda_graph.reuse_buffers changes nothing" "$tmp/run1.err" ||
    fail "run --set parallel.tp=1: the file's warning is gone: $(cat "$tmp/run1.err")"
"$bin" run "$f" --set cuda_graph.modules=attn > /dev/null 2> "$tmp/run2.err" || fail "run --set: $(cat "$tmp/run2.err")"
grep -q "warning:" "$tmp/run2.err" && fail "run --set cuda_graph.modules=attn still warns: $(cat "$tmp/run2.err")"
"$bin" run scenarios/gb200_ep32.yaml --set cuda_graph.modules=full_iteration --set cuda_graph.reuse_buffers=true \
    > /dev/null 2> "$tmp/run3.err" || fail "run --set: $(cat "$tmp/run3.err")"
grep -q "^mbsim: --set cuda_graph.reuse_buffers=true: warning: cuda_graph.reuse_buffers changes nothing" "$tmp/run3.err" ||
    fail "run with both keys from --set: no warning: $(cat "$tmp/run3.err")"
# without graphs there are no buffers to reuse (the file's key, at its position)
"$bin" run "$f" --set cuda_graph=none > /dev/null 2> "$tmp/run4.err" || fail "run --set: $(cat "$tmp/run4.err")"
grep -q "^mbsim: $f:21:18: warning: cuda_graph.reuse_buffers changes nothing without CUDA graphs" "$tmp/run4.err" ||
    fail "run --set cuda_graph=none: no reuse_buffers warning: $(cat "$tmp/run4.err")"
# the measured block dropped by --set does not make its own keys warn (measured.peak_memory_after_iteration
# is judged against the file's measured.peak_memory_gib)
m=scenarios/measured/llama3_70b_sft_h100_32_mlp.yaml
"$bin" run "$m" --set tp=8 > /dev/null 2> "$tmp/run5.err" || fail "run --set: $(cat "$tmp/run5.err")"
grep -q "warning:" "$tmp/run5.err" && fail "run $m --set tp=8 warns: $(cat "$tmp/run5.err")"

for s in scenarios/*.yaml; do
    "$bin" run "$s" > /dev/null 2> "$tmp/shipped.err" || fail "$s: $(cat "$tmp/shipped.err")"
    grep "warning:" "$tmp/shipped.err" && fail "$s warns"
done
# a CSV header name no rule reads is warned about (a misspelt recipe column would otherwise drop its
# recipe silently), at its line:column, with the known name two edits away; correct names warn nothing
csv=tests/data/validate/unknown_column.csv
"$bin" validate "$csv" > /dev/null 2> "$tmp/col.err" || fail "validate $csv: $(cat "$tmp/col.err")"
grep -q "^mbsim validate: warning: $csv:1:136: unknown column 'recompute_detal' (ignored); did you mean 'recompute_detail'?\$" \
    "$tmp/col.err" || fail "no warning for recompute_detal: $(cat "$tmp/col.err")"
grep -q "^mbsim validate: warning: $csv:1:152: unknown column 'my_notes' (ignored)\$" "$tmp/col.err" ||
    fail "no warning for my_notes: $(cat "$tmp/col.err")"
"$bin" validate tests/data/validate/pairs_recompute.csv > /dev/null 2> "$tmp/col.err"
grep "warning:" "$tmp/col.err" && fail "pairs_recompute.csv warns"
echo "warn_inert: ok"
