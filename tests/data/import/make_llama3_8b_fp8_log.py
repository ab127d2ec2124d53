#!/usr/bin/env python3
"""Writes llama3_8b_fp8_log.txt: the head and iteration lines of a Megatron-LM
training log of examples/llama/train_llama3_8b_h100_fp8.sh (8 H100, TP1 PP1,
MBS 1, GBS 128, seq 8192, FP8 hybrid, mock data), printed with Megatron-LM's
own format strings at NVIDIA/Megatron-LM d98e8a64ddf34856e74b24714e3bedb2f5a39553:

- megatron/training/arguments.py `_print_args`: a title line, then
  '  {} {} {}'.format(arg, '.' * (48 - len(arg)), value) for every argument,
  sorted by arg.lower(), then the end line. str(value) prints enums as
  `Class.member` (megatron/core/transformer/enums.py), a list of enums as its
  repr, and torch dtypes as `torch.bfloat16` (validate_args' dtype_map). The
  arguments here are a subset of the ~800 a real log prints: every one the
  importer reads, the example script's other flags, and the enum- and
  dtype-valued ones, and the defaults every log prints for options the run does
  not use (MLA's kv_lora_rank 32, qk_head_dim 128, ...; moe_router_topk 2 with
  num_experts None), as a real Megatron-LM log of 2025-04 does: the import
  once compared that unused kv_lora_rank with the model and matched no model.
- megatron/training/training.py `training_log`: the iteration line, field by
  field in the order and format of that function (log_throughput on, as the
  script's --log-throughput; no energy; `lm loss` as the one loss key).

The times are made up, not measured: iteration 1 carries start-up, 2 and 3
settle, iteration 20 holds an evaluation (--eval-interval is 100 in the script;
an outlier here on purpose), the rest scatter around 11.8 s. The throughput of
each line is FLOP / time with one model-FLOP count per iteration (FLOP_PER_GPU),
as training_log computes it. Run: python3 make_llama3_8b_fp8_log.py > llama3_8b_fp8_log.txt
"""
import datetime

FLOP_PER_GPU = 7.55e15  # model FLOPs per GPU per iteration (made up, plausible for 8B at seq 8192)
MS = [25431.7, 12688.2, 11913.4, 11807.9, 11795.3, 11822.6, 11801.0, 11789.4, 11815.2, 11798.7,
      11811.3, 11786.9, 11803.5, 11820.1, 11793.8, 11808.4, 11799.9, 11812.7, 11804.6, 13942.3,
      11797.2, 11816.8, 11805.1, 11791.6, 11809.9, 11800.3, 11818.5, 11794.4, 11806.2, 11802.8]
TRAIN_ITERS = len(MS)

ARGS = {
    'account_for_embedding_in_pipeline_split': False, 'account_for_loss_in_pipeline_split': False,
    'adam_beta1': 0.9, 'adam_beta2': 0.95, 'adam_eps': 1e-08, 'apply_layernorm_1p': True,
    'apply_query_key_layer_scaling': False, 'apply_rope_fusion': True, 'attention_backend': 'AttnBackend.fused',
    'attention_dropout': 0.0, 'bf16': True, 'bias_dropout_fusion': True, 'bias_swiglu_fusion': True,
    'calculate_per_token_loss': True, 'check_for_nan_in_loss_and_grad': True, 'ckpt_format': 'torch_dist',
    'clip_grad': 1.0, 'consumed_train_samples': 0, 'context_parallel_size': 1,
    'cp_comm_type': "['p2p']", 'cross_entropy_fusion_impl': 'native', 'cross_entropy_loss_fusion': True,
    'cuda_graph_impl': 'none', 'cuda_graph_modules': '[]', 'data_cache_path': '/workspace/benchmark_cache_llama3_8b_fp8',
    'data_parallel_size': 8, 'decoupled_lr': 0.0005, 'decoupled_min_lr': 4.5e-05,
    'disable_bias_linear': True, 'distributed_backend': 'nccl', 'distributed_timeout_minutes': 60,
    'empty_unused_memory_level': 1, 'eval_interval': 100, 'eval_iters': 32, 'exit_duration_in_mins': 235,
    'exp_avg_dtype': 'torch.float32', 'exp_avg_sq_dtype': 'torch.float32',
    'expert_model_parallel_size': 1, 'expert_tensor_parallel_size': 1, 'ffn_hidden_size': 14336,
    'fp16': False, 'fp4': None, 'fp8': 'hybrid', 'fp8_amax_compute_algo': 'max', 'fp8_amax_history_len': 1024,
    'fp8_param_gather': True, 'fp8_recipe': 'delayed', 'global_batch_size': 128, 'grad_reduce_in_bf16': True,
    'group_query_attention': True, 'hidden_dropout': 0.0, 'hidden_size': 4096,
    'inference_cuda_graph_scope': 'InferenceCudaGraphScope.none', 'init_method_std': 0.0134,
    'kv_channels': 128, 'log_interval': 1, 'log_throughput': True, 'lr': 0.00015, 'lr_decay_samples': 1949218748,
    'lr_decay_style': 'cosine', 'lr_warmup_samples': 3906252, 'main_grads_dtype': 'torch.float32',
    'main_params_dtype': 'torch.float32', 'manual_gc': True, 'max_position_embeddings': 8192,
    'micro_batch_size': 1, 'min_lr': 1e-05, 'mock_data': True, 'moe_router_topk': 2, 'multi_latent_attention': False, 'kv_lora_rank': 32, 'q_lora_rank': None,
    'qk_head_dim': 128, 'qk_pos_emb_head_dim': 64, 'v_head_dim': 128,
    'moe_token_dispatcher_type': 'allgather', 'normalization': 'RMSNorm', 'num_attention_heads': 32,
    'num_experts': None, 'num_layers': 32, 'num_query_groups': 8, 'num_workers': 1,
    'overlap_grad_reduce': True, 'overlap_param_gather': True, 'params_dtype': 'torch.bfloat16',
    'pipeline_model_parallel_size': 1, 'position_embedding_type': 'rope', 'profile': True,
    'profile_step_end': 6, 'profile_step_start': 4, 'rank': 0, 'recompute_granularity': None,
    'recompute_method': None, 'recompute_modules': None, 'recompute_num_layers': None,
    'rotary_base': 1000000, 'rotary_percent': 1.0, 'save_interval': 1000, 'seed': 1234, 'seq_length': 8192,
    'sequence_parallel': False, 'split': "'99,1,0'", 'swiglu': True, 'tensor_model_parallel_size': 1,
    'tiktoken_pattern': 'v2', 'tokenizer_type': 'NullTokenizer', 'train_samples': 1953125000,
    'transformer_impl': 'transformer_engine', 'untie_embeddings_and_output_weights': True,
    'use_distributed_optimizer': True, 'use_mcore_models': True, 'use_precision_aware_optimizer': False,
    'virtual_pipeline_model_parallel_size': None, 'vocab_size': 128256, 'weight_decay': 0.1, 'world_size': 8,
}

out = []
out.append('using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical context-parallel '
           'sizes: None, tensor-model-parallel size: 1, pipeline-model-parallel size: 1')
out.append('------------------------ arguments ------------------------')
lines = ['  {} {} {}'.format(a, '.' * (48 - len(a)), v) for a, v in ARGS.items()]
out += sorted(lines, key=lambda x: x.lower())
out.append('-------------------- end of arguments ---------------------')
out.append('> building NullTokenizer tokenizer ...')
out.append('> initializing torch distributed ...')
out.append('[after megatron is initialized] datetime: 2026-08-24 09:12:03 ')
out.append('training ...')
t = datetime.datetime(2026, 8, 24, 9, 14, 0)
for i, ms in enumerate(MS, start=1):
    t += datetime.timedelta(milliseconds=ms)
    s = f" [{t.strftime('%Y-%m-%d %H:%M:%S.%f')}]"
    s += ' iteration {:8d}/{:8d} |'.format(i, TRAIN_ITERS)
    s += ' consumed samples: {:12d} |'.format(128 * i)
    s += ' elapsed time per iteration (ms): {:.1f} |'.format(ms)
    s += f' throughput per GPU (TFLOP/s/GPU): {FLOP_PER_GPU / (ms / 1000 * 1e12):.1f} |'
    s += f' learning rate: {1.5e-4 * min(1, 128 * i / 3906252):.6E} |'
    s += f' global batch size: {128:5d} |'
    s += ' {}: {:.6E} |'.format('lm loss', 11.9 - 0.05 * i)
    s += f' loss scale: {1.0:.1f} |'
    s += f' grad norm: {2.5 - 0.03 * i:.3f} |'
    s += ' number of skipped iterations: {:3d} |'.format(0)
    s += ' number of nan iterations: {:3d} |'.format(0)
    out.append(s)
    if i == 1:
        out.append('[Rank 0] (after 1 iterations) memory (MB) | allocated: 41233.5 | max allocated: 62871.2 | '
                   'reserved: 66322.0 | max reserved: 66322.0')
out.append('[after training is done] datetime: 2026-08-24 09:20:03 ')
print('\n'.join(out))
