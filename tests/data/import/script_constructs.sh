#!/bin/bash
# Hand-written fixture (test_megatron.c test_script_constructs): each shell
# construct mbsim import reads, with the value bash gives it (no arguments, no
# environment). Expected: 8 GPUs (4 x 2), TP 2, PP 2, FP8, SP on, GBS 128, MBS 1.
GPUS_PER_NODE=4
NNODES=${SLURM_NNODES:-2}          # unset: the default 2 (a note says so)
TP=2
PP=$(( 8 / GPUS_PER_NODE ))        # 2
GBS=${GBS-128}
: ${MBS:=1}
MODEL_ARGS=(
    --num-layers 32 --hidden-size 4096   # a comment inside the array
    --ffn-hidden-size 14336 --num-attention-heads 32
    --group-query-attention --num-query-groups 8 --kv-channels 128
)
DTYPE="fp8"
EXTRA=()
if [[ "$DTYPE" == "fp8" ]]; then
    EXTRA+=("--fp8-format hybrid")     # one element, two words when expanded unquoted
elif [ -n "$USE_FP16" ]; then
    EXTRA+=(--fp16)
fi
if [ "$TP" -gt 1 ]; then EXTRA+=(--sequence-parallel); fi
export NCCL_ALGO=ring
torchrun --nproc-per-node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py \
    "${MODEL_ARGS[@]}" ${EXTRA[@]} --bf16 \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size ${PP} \
    --seq-length 8192 --micro-batch-size $MBS --global-batch-size $GBS \
    --use-distributed-optimizer
