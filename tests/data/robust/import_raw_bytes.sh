# Regression (issue 37): a launch script whose flag value holds raw bytes (0xff, ESC) and a
# flag with a byte 0x80 in its name: the notes and errors quote them as \xNN.
torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 32 --hidden-size 4096 \
  --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 \
  --global-batch-size 64 --bf16 --tokenizer-type cafÃ©ÿ[2J --no-such-fl€g
