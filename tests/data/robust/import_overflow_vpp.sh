# pp x layers per virtual stage = 4 x 2^62 wrapped to 0: SIGFPE in the division after it (issue 37).
--num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16 --global-batch-size 64
--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4611686018427387904
