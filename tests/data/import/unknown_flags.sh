# Flags mbsim does not know or cannot simulate must be listed (tests/unit/test_megatron.c).
--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128
--tensor-model-parallel-size 1 --expert-model-parallel-size 8 --bf16
--global-batch-size 256 --micro-batch-size 1 --seq-length 4096
--frobnicate-experts 3
--moe-router-load-balancing-type aux_loss
--lr 1e-4 --seed 1234
--moe-shared-expert-overlap
