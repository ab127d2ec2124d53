# Regression (issue 17 QA): a misspelt flag was listed as "not imported (mbsim has
# no equivalent)" with exit 0, like a real Megatron-LM flag mbsim leaves out, and
# TP silently became 1. Near a flag mbsim imports, it is an input error naming it.
--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128
--expert-model-parallel-size 8 --bf16 --global-batch-size 256 --micro-batch-size 1
--seq-length 4096 --tensor-model-paralel-size 2
