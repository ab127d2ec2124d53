# CRLF line ends, the last line ending in a bare CR: import megatron spun forever (issue 37)
--num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16
--global-batch-size 64 --micro-batch-size 1
--pipeline-model-parallel-size 2 --tensor-model-parallel-size 2