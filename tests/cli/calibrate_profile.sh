#!/bin/sh
# calibrate_profile.sh -- `mbsim calibrate kineto|nsys` and the GPU a profile was recorded on
# (issue 36, part 6).
#
# Kineto: a trace names its GPU (deviceProperties[0].name). --gpu naming another GPU is an error
# (exit 1) that names both and writes no table: the test fixture's H100 trace with --gpu A100, the
# same trace renamed (sed) to an A100 and to an L40S with --gpu H100, and the real A100 sample of
# ../shared/data/formats (when present). The trace's own GPU, or no --gpu, writes the table.
# nsys: a kernel built for sm90 (nvjet_sm90_..., read off the names) cannot have run on an A100
# (sm80): exit 1 naming the kernel and both; without a shapes file the 0 points are explained on
# stderr with the count of kernels left out (17 in the real sample: the 10 GEMM, 3 grouped-GEMM and
# 4 attention rows of its class summary, counted here from that summary).
#
#   calibrate_profile.sh MBSIM_BINARY      (run from the source tree; CTest does)
. "$(dirname "$0")/lib.sh"
k=tests/data/kineto/shaped_trace.json # deviceProperties[0].name "NVIDIA H100 80GB HBM3"
grep -q '"name": "NVIDIA H100 80GB HBM3"' "$k" || fail "$k: the fixture's GPU changed"

refuse() { # WHAT ARGS...: exit 1, no table, a message naming the words that follow -- ...
    what=$1
    shift
    out=$tmp/t.yaml
    rm -f "$out"
    "$bin" calibrate "$@" -o "$out" > /dev/null 2> "$tmp/err"
    rc=$?
    [ $rc = 1 ] || fail "$what: exit $rc, expected 1: $(cat "$tmp/err")"
    [ ! -e "$out" ] || fail "$what: a table was written"
    for w in $words; do
        grep -q -- "$w" "$tmp/err" || fail "$what: the message does not name '$w': $(cat "$tmp/err")"
    done
}
words="H100 A100 NVIDIA.H100.80GB.HBM3" refuse "H100 trace, --gpu A100" kineto "$k" --gpu A100
sed -e 's/"NVIDIA H100 80GB HBM3"/"NVIDIA A100-SXM4-80GB"/' -e 's/sm90/sm80/g' "$k" > "$tmp/a100.json" # its kernels too
words="A100 H100 NVIDIA.A100-SXM4-80GB" refuse "A100 trace, --gpu H100" kineto "$tmp/a100.json" --gpu H100
sed 's/"NVIDIA H100 80GB HBM3"/"NVIDIA L40S"/' "$k" > "$tmp/l40s.json"
words="L40S H100" refuse "L40S trace, --gpu H100" kineto "$tmp/l40s.json" --gpu H100
sample=../shared/data/formats/kineto_trace_sample.json
if [ -f "$sample" ]; then
    words="A100 H100 NVIDIA.A100-PG509-200" refuse "the real A100 sample, --gpu H100" kineto "$sample" --gpu H100
fi
for gpu in H100 h100 ""; do
    "$bin" calibrate kineto "$k" ${gpu:+--gpu "$gpu"} -o "$tmp/ok.yaml" > /dev/null 2> "$tmp/err" ||
        fail "H100 trace, --gpu '$gpu': $(cat "$tmp/err")"
    grep -q '^gpu: H100' "$tmp/ok.yaml" || fail "H100 trace, --gpu '$gpu': table not labelled H100"
done

n=../shared/data/formats/nsys_cuda_gpu_kern_sum.csv
if [ -f "$n" ]; then
    words="nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT sm90 A100 sm80" refuse "sm90 kernels, --gpu A100" nsys "$n" --gpu A100
    "$bin" calibrate nsys "$n" --gpu H100 -o "$tmp/n.yaml" > "$tmp/out" 2> "$tmp/err" || fail "nsys --gpu H100: $(cat "$tmp/err")"
    # the shaped classes' kernel counts of the class summary: gemm, grouped_gemm, attn_fwd, attn_bwd
    shaped=$(awk '$1 ~ /^(gemm|grouped_gemm|attn_fwd|attn_bwd)$/ { s += $2 } END { print s + 0 }' "$tmp/out")
    [ "$shaped" = 17 ] || fail "the sample's summary counts $shaped shaped kernels, expected 17: $(cat "$tmp/out")"
    grep -q "0 measured points: $shaped GEMM, grouped-GEMM and attention kernels" "$tmp/err" ||
        fail "nsys without shapes: no explanation of the 0 points: $(cat "$tmp/err")"
    grep -q "\-\-shapes FILE" "$tmp/err" || fail "nsys without shapes: --shapes not suggested"
    grep -q "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT  \[line 4" "$tmp/out" || fail "the largest unshaped kernels are not listed"
    "$bin" calibrate nsys "$n" --gpu H100 --shapes tests/data/nsys/shapes_qwen3_30b_a3b.yaml -o "$tmp/n2.yaml" \
        > /dev/null 2> "$tmp/err" || fail "nsys --shapes: $(cat "$tmp/err")"
    grep -q "0 measured points" "$tmp/err" && fail "nsys --shapes: 0 points claimed"
fi
echo "calibrate_profile: --gpu against the profile's GPU refused naming both; nsys's 0 points explained"
