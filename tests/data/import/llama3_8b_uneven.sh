# Hand-written fixture (test_megatron.c test_uneven_split): Llama-3-8B (32 layers) on pp 2 x vpp 2
# with 14 decoder layers on the first pipeline rank and 18 on the last (7 and 9 per virtual chunk).
torchrun --nproc-per-node 8 pretrain_gpt.py \
  --tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 \
  --decoder-first-pipeline-num-layers 14 --decoder-last-pipeline-num-layers 18 \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
  --seq-length 8192 --micro-batch-size 1 --global-batch-size 128 --bf16
