# A Megatron-Bridge run: the YAML beside this file merged over the recipe, then the overrides
# (OmegaConf: recipe, --config-file, CLI overrides). The YAML gives TP 1, GBS 8, MBS 1, seq 4096.
torchrun --nproc-per-node 8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config \
    model.tensor_model_parallel_size=2 \
    --config-file llama32_1b_pretrain.yaml \
    train.global_batch_size=16
