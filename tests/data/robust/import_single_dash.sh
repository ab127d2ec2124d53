# One dash: Megatron-LM's argparse (allow_abbrev=False) exits with "unrecognized arguments";
# import read the word as a launcher option, dropped the 4 and gave TP 1 with exit 0 (issue 37).
torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \
    --seq-length 4096 --bf16 --global-batch-size 64 --micro-batch-size 1 \
    -tensor-model-parallel-size 4
