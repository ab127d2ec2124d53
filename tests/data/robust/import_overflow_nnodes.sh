# 2^32 x 2^32 GPUs: the product wrapped to 0 and import said the settings give no GPU count;
# other sizes wrapped to a small positive GPU count with exit 0 (issue 37).
torchrun --nnodes 4294967296 --nproc-per-node 4294967296 pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16 --global-batch-size 64
