# Qwen3-30B-A3B pretraining on 16 H100 (2 DGX H100 nodes), FP8 current scaling.
# The layout and knobs are those of the published Megatron-Bridge run in
# shared/data/measured/public_measured.csv row mbridge_2606_qwen3_30b_a3b_h100_fp8_16
# (NeMo container 26.06: TP1 PP1 CP1 EP16, MBS 1, GBS 1024, seq 4096, flex
# dispatcher with the HybridEP backend on 32 SMs, tensorwise FP8 with hybrid
# format, distributed optimizer, bf16 gradient reduction, overlapped grad
# reduce and param gather, TE cross-entropy fusion, no recompute, no CUDA
# graphs, forced-balanced routing), written as the equivalent Megatron-LM
# command line; the architecture flags are Qwen3-30B-A3B's (model card).
CUDA_DEVICE_MAX_CONNECTIONS=32 \
torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py \
    --use-mcore-models \
    --num-layers 48 \
    --hidden-size 2048 \
    --ffn-hidden-size 6144 \
    --num-attention-heads 32 \
    --group-query-attention \
    --num-query-groups 4 \
    --kv-channels 128 \
    --qk-layernorm \
    --normalization RMSNorm \
    --swiglu \
    --position-embedding-type rope \
    --rotary-base 1000000 \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --max-position-embeddings 40960 \
    --seq-length 4096 \
    --num-experts 128 \
    --moe-router-topk 8 \
    --moe-ffn-hidden-size 768 \
    --moe-grouped-gemm \
    --moe-router-load-balancing-type aux_loss \
    --moe-aux-loss-coeff 1e-3 \
    --moe-router-force-load-balancing \
    --moe-permute-fusion \
    --moe-router-fusion \
    --moe-token-dispatcher-type flex \
    --moe-flex-dispatcher-backend hybridep \
    --moe-hybridep-num-sms 32 \
    --moe-permute-fusion-into-hybridep \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 1 \
    --expert-model-parallel-size 16 \
    --expert-tensor-parallel-size 1 \
    --micro-batch-size 1 \
    --global-batch-size 1024 \
    --bf16 \
    --fp8-format hybrid \
    --fp8-recipe tensorwise \
    --fp8-param-gather \
    --use-distributed-optimizer \
    --grad-reduce-in-bf16 \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --cross-entropy-loss-fusion \
    --cross-entropy-fusion-impl te \
    --manual-gc \
    --manual-gc-interval 100 \
    --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine --lr-warmup-iters 50 \
    --weight-decay 0.1 --clip-grad 1.0 --adam-beta1 0.9 --adam-beta2 0.95 \
    --train-iters 100 \
    --mock-data \
    --tokenizer-type NullTokenizer --vocab-size 151936 \
    --log-interval 1 \
    --eval-iters 0
