#!/bin/sh
# import_roundtrip.sh -- a scenario `mbsim import` wrote runs without a warning about a key the
# importer wrote (issue 36 part 6). For every importable fixture of tests/data/import: `mbsim import`
# exits 0, and `mbsim run` of what it wrote exits 0 with nothing on stderr. Before, every dense
# model's import carried Megatron-LM's MoE defaults (moe.dispatcher allgather, the unfused permute)
# and every MoE import under another dispatcher HybridEP's permute fusion off: three, or one,
# "changes nothing" warnings at keys no input file set. What is left is a setting of the input file
# itself that means something for the scenario but changes nothing in mbsim: here the Qwen3-30B-A3B
# runs' --moe-hybridep-num-sms 32 without EP overlap (the SM count is charged to compute beside an
# overlapped dispatch). It stays in the scenario so that --emit gives it back, and the import notes it
# at its line in the input ("ignored in the simulation (kept for --emit)"); run warns once.
#
#   import_roundtrip.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
d=tests/data/import
n=0
while read -r f dialect opts; do
    [ -n "$f" ] || continue
    base=$(basename "$f")
    # shellcheck disable=SC2086 # opts is a list of options
    "$bin" import "$dialect" "$d/$f" --system dgx_h100 $opts -o "$tmp/$base.yaml" 2> "$tmp/import.err" ||
        fail "$f: import exit $?: $(tail -3 "$tmp/import.err")"
    "$bin" run "$tmp/$base.yaml" > /dev/null 2> "$tmp/run.err" || fail "$f: run exit $?: $(cat "$tmp/run.err")"
    case $f in
    qwen3_30b_a3b_h100_ep16.sh | qwen3_30b_a3b_log.txt | qwen3_30b_a3b_bridge.txt)
        [ "$(wc -l < "$tmp/run.err")" = 1 ] && grep -q "warning: moe.dispatcher_sms = 32 changes nothing" "$tmp/run.err" ||
            fail "$f: expected the one dispatcher_sms warning, got: $(cat "$tmp/run.err")"
        grep -q "^$d/$f:[0-9]*:[0-9]*: .*hybridep.num.sms: ignored in the simulation (kept for --emit)" "$tmp/import.err" ||
            fail "$f: the import does not note the SM count at its line: $(cat "$tmp/import.err")" ;;
    *)
        [ -s "$tmp/run.err" ] && fail "$f: the imported scenario warns: $(cat "$tmp/run.err")" ;;
    esac
    n=$((n + 1))
done <<'LIST'
qwen3_30b_a3b_h100_ep16.sh megatron
qwen3_30b_a3b_log.txt megatron
qwen3_30b_a3b_bridge.txt bridge --model qwen3_30b_a3b --gpus 16
llama3_8b_unfused.sh megatron --model llama3_8b --gpus 8
llama3_8b_lora.txt bridge --model llama3_8b --gpus 8
llama3_70b_sft_defer.txt bridge --model llama3_70b --gpus 32
llama3_8b_fp8_log.txt megatron --model llama3_8b
megatron_examples/train_llama3_8b_h100_fp8.sh megatron --model llama3_8b
megatron_examples/train_mixtral_8x7b_distributed.sh megatron --gpus 32
script_constructs.sh megatron --model llama3_8b
unknown_flags.sh megatron --gpus 8
llama3_8b_uneven.sh megatron --model llama3_8b --gpus 8
llama3_8b_account_bridge.txt bridge --model llama3_8b --gpus 8
megatron_yaml/gpt_config.yaml megatron --model tests/data/import/megatron_yaml/gpt_config_model.yaml --gpus 8
bridge_yaml/qwen3_vl_pretrain_override_example.yaml bridge --model qwen3_30b_a3b --gpus 2
bridge_yaml/llama32_1b_pretrain.yaml bridge --model llama3_8b --gpus 8
bridge_yaml/sections.yaml bridge --model llama3_8b --gpus 16
bridge_config_as_text.txt bridge --model llama3_8b --gpus 8
LIST
[ "$n" = 18 ] || fail "$n fixtures checked, expected 18"
echo "import_roundtrip: $n imported scenarios run without a warning about a key the importer wrote"
