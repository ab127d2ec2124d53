/*
 * mb_step.h -- simulate one steady-state training step of a scenario.
 *
 * Builds the task graph of one step for one representative rank per pipeline
 * stage (ranks that behave identically -- DP replicas, TP/CP/EP peers -- are
 * simulated once), runs it on the engine (mb_engine.h) and reduces the
 * timeline to the reported metrics.
 */
#ifndef MB_STEP_H
#define MB_STEP_H

#include "mb_scenario.h"

/** Pipeline stages a step simulates at most (mb_step_simulate refuses a larger pp). */
#define MB_STEP_MAX_STAGES 64

/* Time breakdown categories (seconds on the critical rank's timeline). */
enum mb_cat {
    MB_CAT_VISION,        /* vision encoder compute */
    MB_CAT_PROJECTOR,     /* patch merger / projector compute */
    MB_CAT_ATTN,          /* decoder attention block compute (norm, QKV, core, proj) */
    MB_CAT_EXPERTS,       /* MoE expert grouped GEMMs and activation */
    MB_CAT_DISPATCH,      /* router, permute/unpermute compute */
    MB_CAT_DENSE,         /* dense MLP, shared experts, embedding, logits/loss, other compute */
    MB_CAT_RECOMPUTE,     /* re-forward inside backward */
    MB_CAT_OPTIMIZER,     /* optimizer step */
    MB_CAT_COMM_TP,       /* exposed communication by kind ... */
    MB_CAT_COMM_CP,
    MB_CAT_COMM_EP,
    MB_CAT_COMM_PP,
    MB_CAT_COMM_DP,
    MB_CAT_COMM_FSDP,
    MB_CAT_OFFLOAD,       /* compute stream waiting for CPU-offload copies (D2H / H2D) to finish */
    MB_CAT_HOST,          /* GPU idle waiting for the host to launch the next kernel */
    MB_CAT_BUBBLE,        /* idle with nothing in flight: pipeline bubble */
    MB_CAT_COUNT
};

/** @brief Short name of a category, e.g. "vision_encoder", "exposed_ep_comm". */
const char *mb_cat_name(enum mb_cat c);

/** Memory (bytes) of one pipeline stage's rank, each term at the moment of the stage's peak. */
struct mb_memory_stage {
    double weights, grads, optimizer;   /* static state */
    double activations;                 /* saved activations alive at the peak (timeline) */
    double deferred_wgrad;              /* of activations, the deferred output-layer wgrad's inputs and output
                                           gradients held for the flush (overlap.defer_embedding_wgrad_compute) */
    double buffers;                     /* PyTorch-allocated buffers: logits + dispatch + workspace */
    double graphs;                      /* CUDA-graph static buffers and pools */
    double peak_allocated, reserved;    /* PyTorch allocator: allocated at the peak, estimated reserved */
    /* parts of the above and what lies outside the PyTorch allocator */
    double logits;                      /* loss working set (logits, softmax / in-place gradient), in buffers */
    double dispatch;                    /* the MoE forward working set (dispatcher token tensors, expert
                                           output, combine chain of one layer; two with EP overlap), in
                                           buffers when the peak is in a forward (fwd_ws > bwd_ws), else 0 */
    double workspace;                   /* cuBLAS / Transformer Engine GEMM workspaces, in buffers */
    double recompute;                   /* activations re-materialised by recompute (in peak_allocated) */
    double bwd_grads;                   /* gradients of the op running backward (in peak_allocated) */
    double fragmentation;               /* reserved - allocated: segments the allocator cannot reuse */
    double comm_buffers;                /* outside PyTorch: NCCL communicators, DeepEP/HybridEP buffers */
    double context;                     /* outside PyTorch: CUDA context and kernel images */
    double device;                      /* reserved + comm_buffers + context: what the GPU holds */
    double peak_time_s;                 /* when the peak happens (s from the step's start) */
    double fwd_ws, bwd_ws;              /* the forward working set and the backward one (recompute +
                                           gradients) before the larger is taken for the peak */
    double step_grads;                  /* the fp32 copy of BF16 main grads the optimizer step holds (3d, fp32
                                           Adam moments: mb_memory_step_grad_copy_bytes); in peak_allocated
                                           only when at_step */
    int at_step;                        /* 1: the rank peaks in the optimizer step, when no activation is alive
                                           (activations, loss, dispatch, recompute, bwd_grads are then 0) */
    double first_iter_allocated;        /* the most allocated through the first iteration: its passes run
                                           without Adam's moments, which the first optimizer step creates, so
                                           max(passes' peak - moments, the step's peak). What a training log
                                           written after iteration 1 reports as its peak (docs/modeling.md) */
};

/** Memory verdict: device memory below the at-risk margin, within it, or above capacity. */
enum mb_mem_verdict { MB_MEM_FITS, MB_MEM_AT_RISK, MB_MEM_OOM };

/** Fraction of capacity above which a rank is `at risk` (mb_memory_verdict_of). */
#define MB_MEM_AT_RISK_FRACTION 0.90

/** Points of the peak rank's memory timeline (the envelope of the step, mb_memory.tl). */
#define MB_MEMTL_POINTS 160

/** Memory of the peak stage's rank over the step: the maximum of each time bucket of the passes, then
 * one point at the step's end for the optimizer step (its allocation, no activation alive). */
struct mb_memtl {
    int n, stage;
    double t[MB_MEMTL_POINTS];          /* s */
    double allocated[MB_MEMTL_POINTS];  /* bytes allocated (static + the dynamic terms below) */
    double activations[MB_MEMTL_POINTS], logits[MB_MEMTL_POINTS], recompute[MB_MEMTL_POINTS];
    double bwd_grads[MB_MEMTL_POINTS];
};

/** Per-rank memory (bytes) on the most loaded rank. */
struct mb_memory {
    double weights, grads, optimizer;   /* static state on the rank */
    double activations;                 /* in-flight microbatches at the peak */
    double deferred_wgrad;              /* of activations, the deferred output-layer wgrad buffers */
    double buffers;                     /* PyTorch-allocated buffers: logits + dispatch + workspace */
    double graphs;                      /* CUDA-graph static buffers and pools */
    double peak_allocated;              /* sum of the above + recompute + bwd_grads */
    double reserved;                    /* estimated allocator reserve */
    double capacity;                    /* GPU usable HBM */
    double logits, dispatch, workspace, recompute, bwd_grads, fragmentation, comm_buffers, context, device;
    double peak_time_s;
    double step_grads;                  /* as in mb_memory_stage */
    int at_step;                        /* as in mb_memory_stage */
    double first_iter_allocated;        /* as in mb_memory_stage */
    enum mb_mem_verdict verdict;        /* of `device` against `capacity` */
    int stage;                          /* pipeline stage holding the peak (largest device memory) */
    const char *dominant;               /* name of the largest term */
    int n_stages;                       /* entries of per_stage */
    struct mb_memory_stage per_stage[MB_STEP_MAX_STAGES]; /* every stage's rank (index = stage) */
    struct mb_memtl tl;                 /* the peak stage's timeline (n = 0: not recorded) */
};

/**
 * @brief Bytes of the fp32 gradient copy a rank's optimizer step holds: Megatron-Core's distributed
 * optimizer (and its Float16 optimizer without one) hands the plain optimizer fp32 gradients, so with
 * BF16 main grads it casts each shard's gradient for the step (`shard_main_param.grad =
 * shard_model_grad.float()`, `_copy_model_grads_to_main_grads`, NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/optimizer/distrib_optimizer.py; freed by the next `zero_grad`). 4 B per element of the
 * rank's optimizer shard; 0 with fp32 main grads (`.float()` returns the tensor itself), with the
 * precision-aware optimizer (BF16 moments: the BF16 gradient is its `decoupled_grad`) and under FSDP
 * (Megatron-FSDP and FSDP2 hand their own gradients to the optimizer).
 * @param s       a checked scenario
 * @param optim   the rank's optimizer-state bytes (master weights and moments: 4 + state_bytes per element)
 */
double mb_memory_step_grad_copy_bytes(const struct mb_scenario *s, double optim);

/** @brief "fits", "at risk" or "OOM". */
const char *mb_memory_verdict_name(enum mb_mem_verdict v);

/** @brief Verdict of a rank holding `device` bytes of a GPU with `capacity`: OOM above it, at risk above
 * MB_MEM_AT_RISK_FRACTION of it, else fits. */
enum mb_mem_verdict mb_memory_verdict_of(double device, double capacity);

/** One op of the critical stage's rank over the whole step (mbsim run --ops). */
struct mb_op_stat {
    char name[48];      /* op name: Megatron-Core module names ("linear_fc1", "core_attn", "ep dispatch") */
    int dir;            /* 0 forward, 1 backward, 2 recompute, -1 neither (optimizer, gradient reduction) */
    int comm;           /* 1: communication (time is the transfer's, bytes are what this rank sends) */
    double count;       /* executions per step */
    double time_s;      /* seconds per step */
    double flop;        /* FLOP per step (0: memory-bound or communication) */
    double bytes;       /* HBM bytes (memory-bound ops) or bytes sent (communication) per step */
    double peak;        /* rate of a perfect kernel or link: FLOP/s (GEMM, attention), HBM bytes/s or
                           link line rate bytes/s; 0 = unknown */
};

/** Collective classes of the report: the step's communication kinds. */
enum mb_coll_class { MB_CC_TP, MB_CC_CP, MB_CC_EP, MB_CC_PP, MB_CC_DP, MB_CC_FSDP, MB_CC_COUNT };

/** What the costliest NCCL call (latency + bandwidth alone) of one class resolved to (sim/engine/mb_coll.h, NCCL's tuning model). */
struct mb_coll_use {
    int used;            /* 0: the class made no call through the collective layer */
    int op;              /* enum mb_coll_op of that call */
    int algo, proto;     /* enum mb_coll_algo / mb_coll_proto (AUTO resolved) */
    int ranks, domains;  /* its group: ranks in NVLink domains */
    double bytes;        /* its nccl-tests size, bytes */
    double lat_s, bw_s;  /* its latency and its bandwidth time alone, s; latency-bound when lat_s >= bw_s */
};

struct mb_result {
    double step_time_s;
    double tokens_per_s_per_gpu;        /* GBS * seq / (step * gpus) */
    double useful_tokens_per_s_per_gpu; /* positions carrying data (padding excluded) / (step * gpus) */
    double model_flops;                 /* Megatron model FLOP per step (LLM + ViT) */
    double model_tflops_per_gpu;
    double mfu;                         /* model TFLOP/s/GPU / dense peak at the GEMM precision */
    double breakdown[MB_CAT_COUNT];     /* seconds, critical rank */
    double critical[MB_CAT_COUNT];      /* seconds of the step's critical path by category */
    int critical_stage;
    int microbatches;                   /* per DP rank per step */
    double vision_tokens_per_sample;    /* mean LLM positions taken by images */
    struct mb_memory mem;
    int oom;
    double floor_s[MB_STEP_MAX_STAGES];                 /* per pipeline stage: seconds its compute stream runs at least
                                           (mb_step_bound), extended with the step */
    unsigned long long events;          /* engine events processed */
    size_t tasks;
    double sim_wall_s;                  /* wall time of the simulation itself */
    /* calibration usage */
    char calib_path[MB_PATH_LEN];
    long calib_lookups, calib_fallbacks;
    /* the framework-time model the step used (calibration `framework:`, docs/calibration.md);
     * fw_on 0: off (roofline mode), the values are then not applied */
    int fw_on;
    double fw_tensor_fraction, fw_membound_eff; /* tensor-core rate / benchmark; HBM efficiency */
    double fw_kernel_eager_s, fw_kernel_graph_s; /* GPU seconds per eager / CUDA-graph kernel */
    double fw_overlap_slowdown;          /* compute slowdown beside communication */
    double fw_step_overhead_s;           /* seconds per iteration outside the microbatches */
    double fw_host_kernel_s;             /* host seconds per eager kernel beyond the launch call, as the
                                            table gives it (x host_time_scale in the step) */
    double host_time_scale;              /* system.host_time_scale (mb_step_host_scale): multiplies the
                                            table's launch and host_kernel, 1 by default */
    double fw_kernel_moe_s;              /* GPU seconds per eager MoE-block kernel beyond fw_kernel_eager_s */
    struct mb_coll_use coll[MB_CC_COUNT];     /* the costliest call of each collective class */
    struct mb_coll_use coll_lat[MB_CC_COUNT]; /* the call of each class with the longest latency */
    /* per-op table of the critical stage (mb_step_opts.ops), owned: mb_result_free() */
    struct mb_op_stat *ops;
    size_t n_ops;
};

/** @brief Free what a result owns (the op table); accepts NULL and results without one. */
void mb_result_free(struct mb_result *r);

/**
 * @brief Simulate one step.
 * @param[in]  s    checked scenario (mb_scenario_check succeeded)
 * @param[out] r    metrics
 * @param[out] err  calibration/engine errors
 * @return 0 or -1.
 */
int mb_step_simulate(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err);

/**
 * @brief Check that every headline number of r is finite and possible (step
 * time > 0, MFU <= 1, ...); every mb_step_simulate* runs it on its result.
 * @return 0, or -1 with "internal error: scenario 'x' (model, system, GPUs,
 *         layout) gives MFU = 1.2, which is impossible; ..." in err.
 */
int mb_result_check(const struct mb_scenario *s, const struct mb_result *r, struct mb_err *err);

struct mb_calib; /* mb_calib.h */

/** Options of a simulation. */
struct mb_step_opts {
    int mb_cap;          /* simulate at most this many microbatches per DP rank (at least 4*pp; 2*pp for
                            1F1B over identical microbatches) and extend the periodic steady state
                            linearly; 0 = default 64, 512 with drawn data (images, packing), < 0 = all */
    int critical_path;   /* compute r->critical (costs ~10% of a simulation) */
    int layer_cap;       /* > 0: models whose decoder layers are all of one kind and divide evenly
                            over the virtual stages are simulated with 2 and 4 layers per virtual
                            stage (1 and 2 for plain 1F1B at pp >= 4; none removed where the two
                            runs would hold as many layers as the model) and extended linearly
                            (sweeps); 0 = every layer. Not for models with a vision encoder (every
                            layer simulated: its load on stage 0 makes the step non-linear in the
                            layers, step.c) and ignored when a trace or the op table is asked for */
    const char *trace;   /* write a Chrome/Perfetto trace of the simulated microbatches here (NULL =
                            none; "-" = stdout, JSON alone; "*.gz" = gzip); see mb_step_trace */
    int ops;             /* fill r->ops, the per-op table of the critical stage (free: mb_result_free) */
    const struct mb_calib *cal; /* kernel and link tables to price ops with (a view is taken); NULL =
                            the scenario's table, loaded once per process (mb_calib_shared) */
    int mb_window;       /* > 0 (sweeps): past mb_cap, extend from the steady state of the one run at
                            mb_cap (time and breakdown per microbatch over whole schedule periods
                            after the warm-up) instead of from two runs; not with critical_path,
                            ops, FSDP or CPU offloading, which keep the two runs */
};

/**
 * @brief mb_step_simulate with options (NULL = defaults: cap 64, critical path on).
 * `mbsim sweep` uses a lower cap and no critical path; validate and tune skip
 * the critical path.
 */
int mb_step_simulate_opts(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_result *r,
                          struct mb_err *err);

/** What mb_step_bound proves about a scenario's step. */
struct mb_step_bound {
    double step_s;       /* the step takes at least this long, s */
    double device_bytes; /* the most loaded stage's device memory is at least this, bytes */
    double capacity;     /* the GPU's usable HBM, bytes (OOM: device > capacity) */
};

/**
 * @brief Lower bounds on the step time and device memory of every
 * mb_step_simulate* of s, from one build of the op lists: no data drawn, no
 * task graph (a small fraction of a simulation's cost; `mbsim sweep --screen`).
 *
 * Step time: every pipeline stage's rank has one serial compute stream, so a
 * simulated step lasts at least as long as that stream's compute tasks back
 * to back: per microbatch the forward, backward and recompute passes of the
 * stage's layers, embedding and head, each op at its table time plus the
 * framework's kernel time, then the optimizer step and the iteration
 * overhead; the largest stage's sum. Left out, as each only adds time:
 * communication, bubbles, host launches, the overlap slowdown, EP-overlap
 * stalls, and the work that depends on the data drawn (the vision encoder;
 * with packed sequences, core attention). That floor is the same per
 * microbatch and per layer, so it is also the linear extension of the floors
 * of shortened runs: the layer and microbatch extensions (mb_step_opts) are
 * refused, and the step simulated without them, wherever they would give a
 * step below it (mb_result.floor_s), which keeps every result at or above it.
 *
 * Memory: each stage's device memory without its timeline terms (saved
 * activations, the loss working set, recompute and backward-gradient working
 * sets taken as 0) -- the memory estimate's own formula, so never above the
 * device memory of the simulated stage, and OOM only where the simulation's
 * verdict is OOM too (for a step extended in layers: as long as the shortened
 * runs' timeline terms do not shrink as layers are added).
 * @param[in]  o   NULL, or options whose table (o->cal) to price with
 * @param[out] out the bounds
 * @return 0, or -1 with err (placement or calibration errors, as a simulation).
 */
int mb_step_bound(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_step_bound *out,
                  struct mb_err *err);

/**
 * @brief As mb_step_simulate, but always simulates every microbatch of the step.
 * mb_step_simulate simulates at most 64 (or 4*pp) microbatches per DP rank and
 * extends the periodic steady state linearly beyond that, which keeps time and
 * memory bounded for any global batch size; this entry point is the reference
 * the tests compare it against. Memory and time grow with the microbatch count.
 */
int mb_step_simulate_exact(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err);

/**
 * @brief mb_step_simulate that also writes a Chrome/Perfetto trace (JSON Trace
 * Event Format) to `path` ("-": stdout; "*.gz": gzip) from the same
 * simulation: one process per pipeline stage's representative rank, a
 * compute thread, one thread per communication kind and the host launch
 * thread; slices named by layer, op and direction, the same in every
 * microbatch ("L12 linear_fc1 fwd", "L12 ep dispatch fwd"), with args op,
 * pass, category, layer, microbatch, chunk, flop, bytes (counts rounded to
 * whole numbers; absent when 0), gemm_mnk and time_from (table, roofline,
 * link model, measured collective). Written as it is produced, without a
 * document tree in memory; a folded host launch (emit.c) is inside the next
 * launch's slice, as in a run without a trace. With more microbatches than
 * the simulation cap the trace shows the simulated ones (r is extended).
 * @return 0, or -1 with err when simulation fails or the file cannot be written.
 */
int mb_step_trace(const struct mb_scenario *s, const char *path, struct mb_result *r, struct mb_err *err);

#endif /* MB_STEP_H */
