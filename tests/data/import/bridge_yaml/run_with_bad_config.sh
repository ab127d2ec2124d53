# --config-file naming a YAML with a wrong type: the error is at its line in that file
python run_recipe.py --config-file bad_type.yaml model.tensor_model_parallel_size=2
