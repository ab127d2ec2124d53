python run_recipe.py --config-file no_such_config.yaml model.tensor_model_parallel_size=2
