#!/bin/sh
# compare.sh -- `mbsim compare A.yaml B.yaml` against independent readings of the same scenarios:
#   - A against itself: no setting differs, every change is +0;
#   - A against a copy with global_batch_size doubled: exactly that setting is listed, and the step
#     times and tokens/s/GPU printed are those `mbsim run --json` gives for each file (the same
#     simulation read through another command), to the 6 digits compare prints;
#   - A against the same recipe on B200 (another calibration table): the fitted framework terms
#     that differ are listed with B's step under A's value of each;
#   - one file, a missing file and a third file are usage or input errors.
#
#   compare.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
a=scenarios/h100_qwen3_30b_a3b_ep8.yaml
sed 's/global_batch_size: 1024/global_batch_size: 2048/' "$a" > "$tmp/b.yaml"
sed "s/preset: dgx_h100/preset: dgx_b200/" "$a" > "$tmp/b200.yaml"

"$bin" compare "$a" "$a" > "$tmp/same.txt" 2> "$tmp/err" || fail "compare A A: exit $?: $(cat "$tmp/err")"
grep -q "^  none$" "$tmp/same.txt" || fail "compare A A lists settings: $(cat "$tmp/same.txt")"
grep -q "step time .* +0  *+0.0 %" "$tmp/same.txt" || fail "compare A A: the step time moved"

"$bin" compare "$a" "$tmp/b.yaml" > "$tmp/ab.txt" 2> "$tmp/err" || fail "compare A B: exit $?: $(cat "$tmp/err")"
n=$(sed -n '/^settings that differ/,/^$/p' "$tmp/ab.txt" | grep -c '^  [a-z]')
[ "$n" = 1 ] || fail "compare A B: $n settings listed, expected 1: $(cat "$tmp/ab.txt")"
grep -q "^  data.global_batch_size  *1024  *-> 2048$" "$tmp/ab.txt" || fail "compare A B: GBS not listed"
json_val() { # FILE KEY: the number of "KEY": in a run --json report, to 6 significant digits
    sed -n "s/^ *\"$2\": \([-0-9.e+]*\),*$/\1/p" "$1" | head -1 | awk '{printf "%.6g", $1}'
}
"$bin" run "$a" --json > "$tmp/a.json" || fail "run A"
"$bin" run "$tmp/b.yaml" --json > "$tmp/b.json" || fail "run B"
for key in step_time_s tokens_per_s_per_gpu; do
    label=$([ $key = step_time_s ] && echo "step time" || echo "tokens/s/GPU")
    va=$(json_val "$tmp/a.json" $key)
    vb=$(json_val "$tmp/b.json" $key)
    [ -n "$va" ] && [ -n "$vb" ] || fail "no $key in run --json"
    line=$(grep "^  $label " "$tmp/ab.txt")
    set -- $line
    [ "$label" = "step time" ] && shift 2 || shift 1
    [ "$1" = "$va" ] && [ "$2" = "$vb" ] || fail "$label: compare says $1 / $2, run --json $va / $vb"
done

"$bin" compare "$a" "$tmp/b200.yaml" > "$tmp/gpu.txt" 2> "$tmp/err" || fail "compare H100 B200: exit $?"
grep -q "^fitted framework terms that differ" "$tmp/gpu.txt" || fail "compare H100 B200: no fitted terms listed"

# the same recipe on a copy of dgx_h100 whose system file sets host_time_scale: 2 (docs/topology.md
# "Host CPU"): the scenario trees differ only in the preset's name, the system line names the scale
src=$(pwd)
sed -e "s|^node_xml: *|node_xml: $src/topology/systems/|" topology/systems/dgx_h100.yaml > "$tmp/slow_host.yaml"
echo "host_time_scale: 2" >> "$tmp/slow_host.yaml"
sed "s|preset: dgx_h100|preset: $tmp/slow_host.yaml|" "$a" > "$tmp/slow.yaml"
"$bin" compare "$a" "$tmp/slow.yaml" > "$tmp/host.txt" 2> "$tmp/err" || fail "compare slow host: exit $?: $(cat "$tmp/err")"
grep -qF "  system host_time_scale: 1 -> 2 (" "$tmp/host.txt" || fail "compare slow host: scale not listed: $(head -8 "$tmp/host.txt")"

"$bin" compare "$a" > /dev/null 2>&1; [ $? = 2 ] || fail "compare with one file: not a usage error"
"$bin" compare "$a" "$a" "$a" > /dev/null 2>&1; [ $? = 2 ] || fail "compare with three files: not a usage error"
"$bin" compare "$a" "$tmp/missing.yaml" > /dev/null 2> "$tmp/err"; [ $? = 1 ] || fail "missing file: not exit 1"
grep -q "missing.yaml" "$tmp/err" || fail "missing file not named: $(cat "$tmp/err")"
echo "ok: compare lists the changed setting and reports run's numbers"
