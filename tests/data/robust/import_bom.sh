--tensor-model-parallel-size 4 --num-layers 32 --hidden-size 4096 --seq-length 4096 --bf16 \
  --global-batch-size 64 --micro-batch-size 1
# A UTF-8 byte order mark before the first flag: it was read as part of the flag, which was then
# no flag mbsim knew, and TP 4 became TP 1 with exit 0 (issue 37). The mark is skipped.
