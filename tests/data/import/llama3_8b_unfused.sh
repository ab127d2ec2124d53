# Hand-written fixture (test_megatron.c test_attention_dropout_default): a Llama-3-8B
# command line with TE's unfused attention and no --attention-dropout, so Megatron-LM's
# default 0.1 (megatron/training/arguments.py) applies.
torchrun --nproc-per-node 8 pretrain_gpt.py \
  --tensor-model-parallel-size 1 --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
  --seq-length 8192 --micro-batch-size 1 --global-batch-size 128 \
  --attention-backend unfused --bf16
