/*
 * mb_scenario.h -- one training configuration to simulate: model, system,
 * precision, data, parallel layout and training options.
 *
 * Built from a scenario YAML file (schema_version 1 or 2, docs/scenario-format.md)
 * or from a row of a measured-runs CSV (mb_validate.h). mb_scenario_check()
 * rejects layouts that cannot exist (TP*PP*CP*DP != GPUs, EP not dividing the
 * experts, GBS not divisible by MBS*DP, ...).
 */
#ifndef MB_SCENARIO_H
#define MB_SCENARIO_H

#include <stdio.h>

#include "mb_calib.h"
#include "mb_model.h"
#include "mb_topo.h"
#include "mb_util.h"

/** The id of a measured run (a measured-runs CSV row, measured.csv_row), with its NUL: longer ids are an
 * error, never cut (two cut ids could pair as one in `validate --baseline`). */
#define MB_MEASURED_ID_LEN 160

struct mb_node; /* mb_yaml.h */

enum mb_strategy { MB_STRAT_3D, MB_STRAT_FSDP };
/* parallel.fsdp_impl: Megatron-FSDP (--use-megatron-fsdp) or PyTorch FSDP2 (fully_shard). */
enum mb_fsdp_impl { MB_FSDP_MEGATRON, MB_FSDP_TORCH2 };
/* training.attention_backend (Megatron-Core --attention-backend, enum AttnBackend in
 * megatron/core/transformer/enums.py): auto/flash/fused run one fused kernel
 * (FlashAttention or cuDNN: the calibration's attention curves); unfused (TE
 * UnfusedDotProductAttention) and local (Megatron's own DotProductAttention /
 * the pre-2023 CoreAttention) materialize the [b, np, s, s] scores. */
/* Fused kernels first (the table's curves; FLASH2, FLASH3, TRITON at their
 * published rates relative to them, attn_backend.c), then the two that keep
 * the scores in memory: code tests `>= MB_ATTN_UNFUSED` for those. */
enum mb_attn_backend {
    MB_ATTN_AUTO, MB_ATTN_FLASH, MB_ATTN_FUSED, MB_ATTN_FLASH2, MB_ATTN_FLASH3, MB_ATTN_TRITON,
    MB_ATTN_UNFUSED, MB_ATTN_LOCAL
};

/* training.cross_entropy_fusion_impl (Megatron --cross-entropy-fusion-impl). */
enum mb_ce_impl { MB_CE_NATIVE, MB_CE_TE };
/** Deepest FSDP prefetch (layers gathered ahead of the one computing). */
#define MB_MAX_FSDP_PREFETCH 4

enum mb_dispatcher { MB_DISP_ALLTOALL, MB_DISP_ALLGATHER, MB_DISP_HYBRIDEP, MB_DISP_DEEPEP };
enum mb_routing { MB_ROUTE_BALANCED, MB_ROUTE_SKEWED };
enum mb_rc_gran { MB_RC_NONE, MB_RC_SELECTIVE, MB_RC_FULL };
/* Megatron --recompute-method (granularity full only). */
enum mb_rc_method { MB_RC_UNIFORM, MB_RC_BLOCK };
/* recompute.policy: op-level selective activation checkpointing of each decoder layer (PyTorch
 * torch.utils.checkpoint with a per-op policy) as a named preset; none = off. torchtitan_op:
 * torchtitan's selective_ac_option "op" (pytorch/torchtitan@cfb93265
 * torchtitan/distributed/activation_checkpoint.py, the save list of @81c12433
 * torchtitan/models/llama3/infra/parallelize.py). torchtitan_layer: its integer selective_ac_option N
 * (_apply_layer_sac): every N-th layer the rank builds is checkpointed whole (recompute.every). */
enum mb_rc_policy { MB_RCP_NONE, MB_RCP_TORCHTITAN_OP, MB_RCP_TORCHTITAN_LAYER };

/* Megatron-Core --recompute-modules (bit flags). */
enum {
    MB_RCM_CORE_ATTN = 1 << 0,
    MB_RCM_MOE_ACT = 1 << 1,
    MB_RCM_LAYERNORM = 1 << 2,
    MB_RCM_MLA_UP_PROJ = 1 << 3,
    MB_RCM_MLP = 1 << 4,
    MB_RCM_MOE = 1 << 5,
    MB_RCM_SHARED_EXPERTS = 1 << 6,
    MB_RCM_GDN_NORM_OUT = 1 << 7
};

/* Megatron-Core --cuda-graph-modules (bit flags); MB_CG_LAYER = empty list (whole layer). */
enum {
    MB_CG_ATTN = 1 << 0,
    MB_CG_MLP = 1 << 1,
    MB_CG_MOE = 1 << 2,
    MB_CG_MOE_ROUTER = 1 << 3,
    MB_CG_MOE_PREPROCESS = 1 << 4,
    MB_CG_MAMBA = 1 << 5,
    MB_CG_LAYER = 1 << 6,
    MB_CG_FULL_ITERATION = 1 << 7
};

/* freeze: bit flags */
enum { MB_FREEZE_VISION = 1 << 0, MB_FREEZE_VISION_PROJ = 1 << 1, MB_FREEZE_LANGUAGE = 1 << 2 };

/* peft.lora_targets: the linear layers that carry a LoRA adapter (Megatron-Bridge LoRA
 * target_modules names; the default is its four: qkv, proj, fc1, fc2) */
enum {
    MB_LORA_QKV = 1 << 0,
    MB_LORA_PROJ = 1 << 1,
    MB_LORA_FC1 = 1 << 2,
    MB_LORA_FC2 = 1 << 3,
    MB_LORA_Q_PROJ = 1 << 4,
    MB_LORA_Q_DOWN = 1 << 5,
    MB_LORA_Q_UP = 1 << 6,
    MB_LORA_KV_DOWN = 1 << 7,
    MB_LORA_KV_UP = 1 << 8
};

/** @brief The peft.lora_targets bit of the linear layer whose op is named `op` ("linear_qkv",
 * ...: the key's names are the op names, mb_keys.c), 0 for any other op. */
unsigned mb_lora_target_bit(const char *op);

/** Precision recipe: which GEMMs run at which rate, and the quantization overhead. */
struct mb_precision {
    char label[48];           /* as written: bf16, fp8, fp8_cs, fp8_blockwise, mxfp8, nvfp4, fp16 */
    enum mb_prec gemm;        /* rate of linear-layer GEMMs */
    enum mb_prec attn;        /* rate of core attention (bf16 unless fp8 attention) */
    int quantize;             /* 1 if GEMM inputs are cast/quantized (fp8/fp4 recipes) */
};

enum mb_img_dist { MB_IMG_NONE, MB_IMG_FIXED, MB_IMG_LIST, MB_IMG_UNIFORM };

#define MB_IMG_LIST_MAX 32
struct mb_images {
    enum mb_img_dist dist;    /* how sizes are drawn */
    int per_sample_min;       /* images per sample, drawn uniformly in [min, max] */
    int per_sample_max;
    int n_sizes;              /* FIXED: 1; LIST: entries drawn uniformly */
    int height[MB_IMG_LIST_MAX], width[MB_IMG_LIST_MAX];
    int side_min, side_max;   /* UNIFORM: height and width each uniform in [min, max] pixels */
    unsigned long long seed;
};

struct mb_scenario {
    char name[128];
    char file[MB_PATH_LEN];            /* source file ("" for CSV rows) */
    struct mb_model model;             /* owned */
    char model_ref[MB_PATH_LEN];               /* how `model` was named: a shipped name or an absolute path;
                                          "" = inline mapping or built by hand (then model.name) */
    int model_inline;                  /* 1: `model` was an inline mapping in `file` */
    struct mb_system system;
    char system_ref[MB_PATH_LEN];              /* system.preset: a preset name or an absolute path
                                          ("" = built by hand: system.name) */
    int gpus;
    struct mb_precision prec;
    /* data */
    int seq_length;
    int global_batch_size;
    int micro_batch_size;
    int mock;                          /* image-free mock data */
    struct mb_images images;
    int text_min, text_max;            /* text tokens per real sample, uniform in [min, max];
                                          0 = each sample fills its sequence */
    int packed;                        /* data.packing: 0 padded (a sample per sequence),
                                          1 packed (samples concatenated, per-sample attention) */
    /* parallel */
    enum mb_strategy strategy;
    int tp, pp, vpp, cp, ep, etp;
    int dp;                            /* derived: gpus / (tp*pp*cp) */
    char pipeline_layout[1024];        /* Megatron --pipeline-model-parallel-layout, expanded: one
                                          char per item (E embedding, t layer, m MTP, L loss) and
                                          '|' between virtual stages; "" = even split */
    int pipeline_split_unstated;       /* set by mbsim validate on a measured run whose layer split its
                                          source does not state: mb_scenario_check does not demand an
                                          even (num_layers or num_layers + 2) split, the step's spread
                                          is assumed; 0 for every loaded scenario */
    int sequence_parallel;
    int cp_a2a;                        /* parallel.cp_comm_type: 0 p2p (ring attention), 1 a2a (Ulysses) */
    enum mb_fsdp_impl fsdp_impl;       /* parallel.fsdp_impl (strategy fsdp only): memory of the flavour */
    int fsdp_reshard_after_forward;    /* parallel.fsdp_reshard_after_forward: FSDP2's reshard_after_forward;
                                          0 keeps every layer's parameters gathered from forward to backward */
    int fsdp_sharded_bytes;            /* parallel.fsdp_sharded_dtype: bytes per element of FSDP2's sharded
                                          parameters (4 fp32, the default; 2 bf16: the model built in bf16);
                                          their gradients and torch.optim.Adam's two moments follow it */
    int fsdp_grad_sync;                /* parallel.fsdp_requires_gradient_sync: FSDP2 reduce-scatters every
                                          microbatch (1) or only the step's last (0, set_requires_gradient_sync
                                          (False) on the others: unsharded fp32 gradients accumulate) */
    int fsdp_reshard_after_backward;   /* parallel.fsdp_reshard_after_backward: FSDP2; 0 keeps the parameters
                                          gathered from their first backward to the step's end */
    int fsdp_units_layers_add;         /* internal, set by the step's layer extension on its shortened runs:
                                          layers each stage of the full model has beyond the shortened one's,
                                          so Megatron-FSDP's unit counts keep the full stage's cap; 0 for every
                                          loaded scenario */
    int fsdp_double_buffer;            /* parallel.fsdp_double_buffer: Megatron-FSDP `--fsdp-double-buffer`
                                          (two persistent buffers each for gathered parameters and
                                          gradients); 0: the default allocator and its pipelines */
    int fsdp_keep_fp8_transpose;       /* parallel.fsdp_keep_fp8_transpose_cache: Megatron-FSDP
                                          `--keep-fp8-transpose-cache` (each FP8 parameter keeps its
                                          transposed copy after its unit is resharded) */
    int fsdp_unit_size;                /* parallel.fsdp_communication_unit_size: Megatron-FSDP
                                          `--suggested-communication-unit-size` (elements); 0: Megatron's
                                          max(1e9, 2 x mean unit size) */
    /* moe */
    enum mb_dispatcher dispatcher;
    enum mb_routing routing;
    double routing_skew;               /* skewed: Zipf exponent over experts */
    unsigned long long routing_seed;
    int dispatcher_sms;                /* SMs a HybridEP/DeepEP kernel occupies */
    double capacity_factor;            /* moe.capacity_factor: expert capacity = cf x balanced load
                                          (tokens beyond it are dropped); 0 = dropless */
    int shared_expert_overlap;         /* moe.shared_expert_overlap: shared experts beside the dispatch */
    int hybridep_permute_fusion;       /* moe.hybridep_permute_fusion: HybridEP dispatch/combine write
                                          tokens in expert order (no separate permute/unpermute pass) */
    int permute_fusion;                /* moe.permute_fusion: TE's fused permute/unpermute (moe_permute*) instead
                                          of Megatron-Core's PyTorch ops (moe_utils.permute, fused=False) */
    int router_fusion;                 /* moe.router_fusion: TE's fused router kernels (top-k with score function,
                                          the aux-loss scores and loss) instead of the PyTorch op sequence */
    int pad_to_capacity;               /* moe.pad_expert_input_to_capacity: drop-and-pad, the expert input
                                          buffers are padded to capacity_factor x the balanced load */
    /* training options */
    enum mb_rc_gran recompute;
    unsigned recompute_modules;        /* MB_RCM_* */
    int recompute_num_layers;          /* full: layers per stage recomputed (0 = all) */
    enum mb_rc_method recompute_method; /* full: uniform (default) or block */
    enum mb_rc_policy rc_policy;       /* recompute.policy: op-level selective checkpointing preset
                                          (MB_RCP_NONE = off; excludes granularity selective/full) */
    int rc_every;                      /* recompute.every: torchtitan_layer's N (>= 1) */
    unsigned cuda_graph;               /* MB_CG_* */
    int cg_reuse_buffers;              /* cuda_graph.reuse_buffers: TE >= 2.7 graphs reuse static inputs/outputs */
    unsigned freeze;                   /* MB_FREEZE_* */
    int lora_rank;                     /* peft.lora_rank: LoRA adapter rank r on the frozen language model
                                          (0 = none) */
    unsigned lora_targets;             /* peft.lora_targets: MB_LORA_* */
    int overlap_grad_reduce, overlap_param_gather, overlap_tp_comm, overlap_ep_comm;
    int fsdp_prefetch;                 /* overlap.fsdp_prefetch: layers gathered ahead (0..4, default 1) */
    int defer_wgrad;                   /* overlap.defer_embedding_wgrad_compute: the output layer's wgrad GEMMs
                                          wait for the pipeline flush (Megatron TransformerConfig field) */
    int wgrad_deferral_limit;          /* overlap.wgrad_deferral_limit: microbatches deferred (0 = all) */
    int grad_bytes;                    /* optimizer.main_grads: 4 (fp32, Megatron's default) or 2 (bf16,
                                          --grad-reduce-in-bf16): main-grad buffer and DP reduction */
    int state_bytes;                   /* optimizer.states: Adam exp_avg + exp_avg_sq bytes per parameter,
                                          8 (fp32) or 4 (bf16, precision-aware optimizer) */
    int dist_opt;                      /* optimizer.distributed: 1 = Megatron's distributed optimizer (grads
                                          reduce-scattered, params all-gathered, optimizer state sharded over
                                          DP; the default); 0 = DDP: grads all-reduced, state replicated */
    int ce_fusion;                     /* training.cross_entropy_fusion: Megatron --cross-entropy-loss-fusion */
    enum mb_ce_impl ce_impl;           /* training.cross_entropy_fusion_impl: native or te */
    int loss_chunks;                   /* training.loss_chunks: fused linear cross-entropy over this many token
                                          chunks (Liger-Kernel's), never the full logits; 0 = off */
    enum mb_attn_backend attn_backend; /* training.attention_backend */
    double attn_dropout;               /* training.attention_dropout: probability (Megatron
                                          --attention-dropout); a kernel of its own when unfused/local */
    double hidden_dropout;             /* training.hidden_dropout: probability (Megatron --hidden-dropout)
                                          of the residual dropouts; > 0 keeps a 1-byte mask per element */
    int fp8_param_gather;              /* training.fp8_param_gather: the decoder layers' linear weights are held
                                          quantized (Megatron --fp8-param-gather; FP8/FP4 precisions only) */
    int expandable_segments;           /* memory.expandable_segments: PYTORCH_CUDA_ALLOC_CONF
                                          expandable_segments:True */
    int bias_act_fusion;               /* training.bias_activation_fusion: Megatron's fused (bias-)activation
                                          kernels (--no-bias-swiglu-fusion / --no-bias-gelu-fusion turn them
                                          off); 0 = the experts' eager activation x probs (memory only) */
    int cpu_offload_layers;            /* memory.cpu_offloading_num_layers: decoder layers whose
                                          activations Megatron/TE offload to host memory (0 = off;
                                          Megatron --cpu-offloading-num-layers) */
    int allreduce_algo;                /* collectives.all_reduce: enum mb_coll_algo (sim/engine/mb_coll.h) AUTO,
                                          RING, TREE or NVLS -- NCCL_ALGO for the DP gradient all-reduce */
    /* calibration */
    char calib_path[MB_PATH_LEN];      /* "" = shipped table for the system's GPU */
    int roofline;                      /* ignore tables (roofline-only mode) */
    /* measured (optional) */
    double meas_tokens_per_s_per_gpu, meas_model_tflops_per_gpu, meas_step_time_s, meas_peak_memory_gib;
    int meas_oom; /* measured.oom: the run was reported out of memory */
    int meas_peak_iteration; /* measured.peak_memory_after_iteration: 1 = logged after iteration 1, 0 = steady */
    char meas_source[256];
    char meas_csv_row[MB_MEASURED_ID_LEN]; /* measured.csv_row: id of the measured-runs CSV row whose recipe this file
                               states ("" = none; `mbsim validate --recipes`, mb_validate.h) */
    int meas_csv_row_line, meas_csv_row_col; /* where the file states measured.csv_row (0 = not stated) */
    /* set by the loader: settings the file writes that are valid but change nothing in this
     * simulation, one "file:line:col: warning: key ...: why" line each ("" = none); the CLI
     * prints them on stderr (mb_scenario_check leaves them alone) */
    char warnings[1536];
};

/**
 * @brief Fill documented defaults (bf16, mbs 1, tp=pp=cp=ep=etp=vpp=1, SP on, dispatcher alltoall, ...).
 * sequence_parallel is left at -1 ("on when tp > 1"); mb_scenario_check resolves it to 0/1.
 */
void mb_scenario_defaults(struct mb_scenario *s);

/**
 * @brief Load a scenario YAML file (schema_version 1 or 2): resolves the model, the
 * system (hwloc XML included) and checks the layout.
 * @return 0 or -1 with file:line:col in err.
 */
int mb_scenario_load(const char *path, struct mb_scenario *s, struct mb_err *err);

/**
 * @brief Load a scenario from a YAML tree the caller owns (same rules and
 * messages as mb_scenario_load, which calls it). `path` names the file in
 * messages and anchors relative model/system paths. Used by `mbsim sweep`,
 * whose files carry an extra `sweep:` block removed before the call.
 * @return 0 or -1 with file:line:col in err.
 */
int mb_scenario_load_node(const struct mb_node *root, const char *path, struct mb_scenario *s, struct mb_err *err);

/**
 * @brief Recompute s->warnings (settings that change nothing here) for a
 * scenario the command line changed (`mbsim run --set`): the keys the file
 * `root` writes keep their file:line:col, each of `sets[0..n_sets)`
 * ("key=value", already applied to s) counts as given and is named
 * "--set key=value" in its warning (and is no schema default left out).
 * Keys of `sets` the table does not know are skipped (the caller refused them).
 */
void mb_scenario_rewarn(struct mb_scenario *s, const struct mb_node *root, const char *const *sets, int n_sets);

/**
 * @brief Members of a group of `size` ranks, consecutive members `stride`
 * ranks apart (Megatron's rank order: TP fastest, then CP, DP), that share one
 * NVLink domain of `dom` GPUs: all of them when the group spans at most one
 * domain, else dom / stride, at least 1 and at most size.
 */
int mb_scenario_group_local(int size, int stride, int dom);

/**
 * @brief Derive dp and check that the layout can exist; errors name the
 * offending quantities, e.g. "tp*pp*cp = 24 does not divide gpus = 32".
 * Called by mb_scenario_load; callers that build a scenario by hand call it too.
 */
int mb_scenario_check(struct mb_scenario *s, struct mb_err *err);

/* ---- physical bounds (mb_scenario_bound.c) ---- */

/**
 * @brief The GPU's specification (peaks, SMs) from the scenario's calibration
 * table: calibration.table when set, else the shipped table of system.gpu.
 * @param[out] out  the specification (zeroed on failure)
 * @return 0, or -1 when the GPU has no table (nothing is known of it).
 */
int mb_scenario_gpu_spec(const struct mb_scenario *s, struct mb_gpu_spec *out);

/** The most one GPU of a scenario can compute, against which measured values are held. */
struct mb_scn_bound {
    char gpu[32];           /* the calibration table's GPU */
    enum mb_prec prec;      /* the precision whose peak bounds the step: the GEMMs' (a precision the GPU
                               lacks: the next wider one, as the kernel lookups run it) */
    double peak;            /* dense tensor-core FLOP/s of one GPU at prec */
    double flops_per_token; /* training FLOPs of one token at the least: mb_model_flops without the
                               attention scores, x 2/3 when the language model is frozen */
    int frozen;             /* the language model is frozen (the 2/3 applies) */
};

/**
 * @brief The bound of a scenario (model, system, precision, freeze set).
 * @return 0, or -1 when the GPU has no table or the model no FLOPs (no bound known).
 */
int mb_scenario_bound(const struct mb_scenario *s, struct mb_scn_bound *b);

/** Which measured value mb_scenario_measured_check refused. */
enum mb_meas_kind { MB_MEAS_TOKENS, MB_MEAS_TFLOPS, MB_MEAS_STEP };

/**
 * @brief Hold measured values of scenario s (model, system, precision, freeze,
 * gpus, global_batch_size, seq_length set) against its bound: tokens/s per GPU
 * x FLOPs per token, or the model TFLOP/s per GPU, above the dense peak, or a
 * step shorter than gbs x seq x FLOPs per token / (gpus x peak), is physically
 * impossible. A value of 0 (not measured) is not checked; without a bound
 * (mb_scenario_bound) nothing is.
 * @param[in]  tokens, tflops, step  tokens/s per GPU, model TFLOP/s per GPU, step time in s
 * @param[out] which  the value refused
 * @param[out] msg    why, starting with the value ("9.2e+06 tokens/s per GPU is more than one H100 ...")
 * @return 0 when possible, -1 when not.
 */
int mb_scenario_measured_check(const struct mb_scenario *s, double tokens, double tflops, double step,
                               enum mb_meas_kind *which, char *msg, size_t len);

/**
 * @brief moe.dispatcher_sms against the GPU's SM count (calibration table) for
 * the dispatchers whose kernels occupy SMs (hybridep, deepep).
 * @return 0, or -1 with msg ("moe.dispatcher_sms = 200 is more than the 132 SMs of one H100 ...").
 */
int mb_scenario_check_sms(const struct mb_scenario *s, char *msg, size_t len);

/**
 * @brief Parse a precision label (BF16, FP8-CS, MXFP8, NVFP4, ... case-insensitive;
 * '-' and spaces count as '_', parenthesized parts are ignored). Labels are
 * listed once, in mb_keys.c.
 * @return 0, or -1 for an unknown label or NULL arguments (out untouched).
 */
int mb_precision_parse(const char *label, struct mb_precision *out);

/**
 * @brief 1 when the publishers' named mixed-precision preset of this recipe holds the weights quantized
 * (fp8_param_gather=True: Megatron-Bridge's delayed, current-scaling and MXFP8 presets,
 * NVIDIA-NeMo/Megatron-Bridge@067f987df03b src/megatron/bridge/training/mixed_precision.py, as NeMo
 * 2.0's FP8 presets), 0 otherwise (its blockwise and NVFP4 presets, BF16, FP16).
 */
int mb_precision_preset_param_gather(const struct mb_precision *p);

/**
 * @brief 1 for the FP8 recipes of Transformer Engine's Float8Tensor and Float8BlockwiseTensor (fp8
 * delayed, fp8_cs current scaling, fp8_blockwise): quantized weights gathered in 1 byte, with a
 * separate transposed copy for the backward GEMMs; 0 for MXFP8, NVFP4 and the unquantized ones.
 */
int mb_precision_fp8_tensor(const struct mb_precision *p);

/**
 * @brief Bytes per element of a GEMM input that Transformer Engine all-gathers across the TP group
 * under sequence parallelism (a column-parallel linear's input, forward and again for wgrad): TE
 * quantizes before it gathers (NVIDIA/TransformerEngine@d0067d0da transformer_engine/pytorch/
 * module/layernorm_linear.py and linear.py, gather_along_first_dim(..., quantizer=input_quantizer);
 * distributed.py _all_gather_fp8 / _all_gather_fp8_blockwise / _all_gather_mxfp8 /
 * _all_gather_nvfp4), so the bytes are the recipe's data and block scales: 2 (BF16/FP16, no
 * recipe); 1 for fp8 and fp8_cs (one scale per tensor); 1 + 4/128 for fp8_blockwise (an FP32 scale
 * per 1x128 block); 1 + 1/32 for mxfp8 (an E8M0 scale per 32 elements, OCP MX v1.0); 0.5 + 1/16 for
 * nvfp4 (E2M1 pairs per byte, an E4M3 scale per 16 elements).
 */
double mb_precision_gather_bytes(const struct mb_precision *p);

/** @brief Parse a Megatron recompute module name into its MB_RCM_* flag (0 if unknown or NULL). */
unsigned mb_recompute_module(const char *name);

/** @brief Parse a CUDA-graph module name into its MB_CG_* flag (0 if unknown or NULL). */
unsigned mb_cuda_graph_module(const char *name);

/**
 * @brief Resolve a model or system reference as the loader does: a path when
 * it contains '/' or ends in .yaml/.yml, taken from folder `dir` when relative;
 * otherwise a shipped name, returned as is.
 * @return a malloc'd string (free with mb_free).
 */
char *mb_scenario_ref(const char *dir, const char *ref);

/**
 * @brief Write a scenario as schema-1 YAML (libyaml's emitter) that
 * mb_scenario_load reads back to the same values: every key of the table in
 * mb_keys.h that differs from its default (and the main layout keys always),
 * names quoted where YAML needs it, model and system by shipped name or by
 * absolute path, an inline model copied from the scenario's source file.
 * Measured values are written when set. Nothing is written for keys that do
 * not apply (recompute.method unless full, ...).
 * @return 0, or -1 on a write error or when an inline model's source file
 *         cannot be read again.
 */
int mb_scenario_write_yaml(const struct mb_scenario *s, FILE *fp);

/**
 * @brief Expand a pipeline layout in Megatron's notation ("Et*3|(tt|)*29m|L":
 * E embedding, t decoder layer, m MTP layer, L loss, | stage boundary, X*N and
 * (...)*N repeat) into `out` (items and '|' only).
 * @param[out] bad  on error: 0-based offset of the offending character
 * @return 0, or -1 with a message in msg.
 */
int mb_pipeline_layout_expand(const char *in, char *out, size_t len, size_t *bad, char *msg, size_t msglen);

/** @brief Free what the scenario owns (the model); accepts NULL. */
void mb_scenario_free(struct mb_scenario *s);

/**
 * @brief 1 when the scenario's `measured:` block gives a value a prediction is compared with (tokens/s,
 * step time, TFLOP/s, a peak memory, or a reported OOM), else 0.
 */
int mb_scenario_measured(const struct mb_scenario *s);

#endif /* MB_SCENARIO_H */
