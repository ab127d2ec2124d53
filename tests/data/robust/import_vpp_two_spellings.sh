# Both VPP spellings: Megatron-LM's validate_args refuses them together; import chose one (issue 37).
--num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16 --global-batch-size 64
--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2
--num-layers-per-virtual-pipeline-stage 2
