#!/bin/sh
# hardware_order.sh -- an identical recipe is never predicted slower on GB200 than on B200, nor on
# GB300 than on B300 (issue 34): the GB parts are the same die at a higher power limit with the
# same HBM and a larger NVLink domain (../shared/docs/reference/hardware.md), so nothing in the
# hardware makes them slower; a fitted constant that did would be absorbing a recipe. Every shipped
# scenario (scenarios/*.yaml and scenarios/measured/*.yaml) is run with its system preset replaced
# by each part of a sibling pair, at its own GPU count, and tokens/s/GPU compared.
#
#   hardware_order.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
tps() { # SCENARIO PRESET: tokens/s/GPU of the scenario on that preset
    sed "s/^  preset: .*/  preset: $2/" "$1" > "$tmp/s.yaml"
    "$bin" run "$tmp/s.yaml" --json 2> "$tmp/err" > "$tmp/r.json" || fail "$1 on $2: exit $?: $(cat "$tmp/err")"
    v=$(sed -n 's/^ *"tokens_per_s_per_gpu": \([-0-9.e+]*\),*$/\1/p' "$tmp/r.json" | head -1)
    [ -n "$v" ] || fail "$1 on $2: no tokens_per_s_per_gpu"
    echo "$v"
}
n=0
for f in scenarios/*.yaml scenarios/measured/*.yaml; do
    grep -q "^  preset: " "$f" || fail "$f: no system preset line to replace"
    # the scenarios run next to their originals' folder: model files they name resolve the same way
    for pair in "dgx_b200 gb200_nvl72" "dgx_b300 gb300_nvl72"; do
        set -- $pair
        b=$(tps "$f" "$1")
        gb=$(tps "$f" "$2")
        awk -v b="$b" -v g="$gb" 'BEGIN { exit !(g >= b) }' ||
            fail "$f: $2 predicted slower than $1 ($gb < $b tokens/s/GPU)"
        n=$((n + 1))
    done
done
echo "ok: $n sibling comparisons, none inverted"
