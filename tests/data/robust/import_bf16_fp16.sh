# --bf16 and --fp16: Megatron-LM's validate_args asserts not both; import chose fp16 (issue 37).
--num-layers 32 --hidden-size 4096 --seq-length 4096 --global-batch-size 64 --bf16 --fp16
