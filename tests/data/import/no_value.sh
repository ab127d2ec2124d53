# Regression (issue 17 QA): --micro-batch-size with no value was read as a switch and
# reported "expected an integer, got 'true'"; the flag needs a value.
--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128
--expert-model-parallel-size 8 --bf16 --global-batch-size 256 --micro-batch-size
--seq-length 4096
