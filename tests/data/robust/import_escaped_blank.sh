# A blank after a continuation backslash ("\ " is an escaped blank: a word of its own) gave the
# backend flag two values; import took the flag for absent and simulated the deepep backend where
# the run used hybridep (found by fuzz_import_megatron, issue 37). argparse refuses the second word.
--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128 --seq-length 4096 \
    --global-batch-size 64 --bf16 --expert-model-parallel-size 8 --moe-token-dispatcher-type flex \
    --moe-flex-dispatcher-backend hybridep \ 
    --moe-hybridep-num-sms 32
