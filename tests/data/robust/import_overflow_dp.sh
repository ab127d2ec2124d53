# data_parallel_size x TP = 2^62 x 4 wrapped (the GPU count when nothing else gives it; issue 37).
--num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16 --global-batch-size 64
--data-parallel-size 4611686018427387904 --tensor-model-parallel-size 4
