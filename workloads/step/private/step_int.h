/*
 * step_int.h -- private to the step model (workloads/step/): the data the
 * phases hand each other. Callers use mb_step.h.
 *
 * A simulation runs the phases in this order (step.c):
 *   placement  rank groups, link rates, routing imbalance      (placement.c)
 *   ops        per-layer op lists: mixer, FFN/MoE, vision, head (ops.c, oplist.c, mixer.c, moe.c, model_ops.c)
 *   data       microbatch and image sampling                    (data.c)
 *   schedule   FSDP / 1F1B / interleaved 1F1B units per stage    (schedule.c)
 *   emit       ops and collectives as engine tasks               (emit.c, net.c)
 *   reduce     gradient reduction and the optimizer              (reduce.c)
 *   memory     activation timeline and per-rank memory           (memtl.c, memory.c)
 *   results    breakdown, critical path, metrics, trace, ops     (results.c, trace.c, opstats.c)
 */
#ifndef MB_STEP_INT_H
#define MB_STEP_INT_H

#include "mb_step.h"

#include <stddef.h>
#include <stdint.h>

#include "mb_coll.h"
#include "mb_engine.h"

struct mb_calib;

#define MB_MAX_STAGES MB_STEP_MAX_STAGES
#define MB_VISION_RANKS 256 /* data-parallel ranks whose images are drawn */
#define BF16 2.0            /* bytes per bf16 element */

enum mb_opk { MB_OP_COMP, MB_OP_COMM };

/* Communication kinds (each has its own stream per simulated rank). */
enum mb_commk { MB_CK_TP, MB_CK_CP, MB_CK_EP, MB_CK_PP, MB_CK_DP, MB_CK_FSDP, MB_CK_COUNT };

/* Engine task kinds (mb_task_desc.kind): compute tasks carry their enum mb_cat,
 * then a zero-length join, then one kind per communication kind. */
enum mb_task_kind { MB_TK_JOIN = MB_CAT_COUNT, MB_TK_COMM };
#define MB_TK_OF_COMM(ck) (MB_TK_COMM + (int)(ck))

/* Module tags for recompute (MB_RCM_* flags) plus the always-kept ones. */
#define MB_MOD_OTHER 0u
/* The op (or part of it) re-runs before its layer's backward under recompute.policy torchtitan_op
 * (sac.c); plan.rc_mask is this bit under that policy. */
#define MB_MOD_SAC (1u << 15)

/* Where an op's time came from: a calibration table, the roofline fallback,
 * the link model, or a measured collective curve. */
enum mb_src { MB_SRC_NONE, MB_SRC_TABLE, MB_SRC_ROOFLINE, MB_SRC_LINK, MB_SRC_MEASURED };

/* A group of `size` ranks whose members are `stride` ranks apart in Megatron's
 * rank order (TP fastest, then CP, then DP, then PP). `local` members share an
 * NVLink domain; `domains` = size / local. */
struct mb_group {
    int size, local, domains;
    int stride; /* rank distance between consecutive members */
};

struct mb_op {
    enum mb_opk type;
    const char *name;         /* Megatron-style op name ("linear_fc1", "core_attn", "ep dispatch") */
    enum mb_cat cat;          /* breakdown category of compute */
    unsigned module;          /* MB_RCM_* module this op belongs to (0 = none) */
    double rc_kept;           /* of `saved`, the bytes recomputing a module of rc_keeps (and none larger
                               * around it) keeps: the input of that checkpointed region, which
                               * Megatron-Core's CheckpointWithoutOutput saves */
    unsigned rc_keeps;        /* MB_RCM_* modules whose region input rc_kept is */
    unsigned rc_frees;        /* MB_RCM_* modules outside `module` whose recompute frees this op's saved
                               * bytes: it saves the region's output (discard_output_and_register_recompute) */
    double fwd, bwd;          /* compute seconds (bwd: dgrad + wgrad, or 0 if not needed) */
    double bwd_dgrad_only;    /* bwd seconds when weights are frozen (dgrad only) */
    double flop_f, flop_b;    /* FLOP forward / backward (dgrad + wgrad); 0 for memory-bound ops */
    double bytes_f, bytes_b;  /* HBM bytes of memory-bound work forward / backward */
    double gm, gn, gk;        /* GEMM shape M x N x K (0 = not a GEMM) */
    enum mb_src src;          /* where the forward time came from */
    double peak;              /* rate of a perfect kernel: FLOP/s (GEMM, attention) or HBM bytes/s */
    enum mb_commk ck;         /* MB_OP_COMM: kind */
    double bytes_nv, bytes_nic; /* MB_OP_COMM: bytes this rank sends on NVLink / NIC */
    double latency;           /* MB_OP_COMM: seconds before bytes flow */
    double bound_nv, bound_nic; /* MB_OP_COMM: rate caps of its NVLink / NIC flow (measured pacing,
                               * an oversubscribed uplink's share), bytes/s, 0 = none */
    int parallel;             /* comm runs beside the next compute op (CP ring, TP overlap) */
    int bwd_only;             /* runs in the backward pass only (the wgrad input's TP re-gather) */
    double saved;             /* activation bytes saved for backward per microbatch */
    double sac_saved;         /* recompute.policy torchtitan_op: bytes of its outputs the layer keeps (those
                               * of ops on the policy's save list; sac.c), per microbatch */
    double sac_keep_s;        /* of fwd, the seconds that policy does not re-run (a fused GEMM's saved mm
                               * outputs); 0 under Megatron's recompute */
    double bwd_ws;            /* bytes its backward holds beside the saved ones (0: 1.5 x saved, the
                               * output and input gradients of an activation; mb_memory_grad_ws) */
    double kf, kb;            /* kernels the host launches for the op: forward, backward (eager) */
    int region;               /* CUDA-graph capture region (0 = eager); ops of one region are
                               * launched by one cudaGraphLaunch */
    int host_sync;            /* forward: the host waits for the GPU before issuing this op
                               * (D2H copy of the token counts before an EP dispatch) */
    int part0, nparts;        /* after mb_ops_fuse: the ops it was fused from (oplist.part) */
    int vblock;               /* vision encoder block + 1 (0: not a ViT block op) */
};

struct mb_oplist {
    struct mb_op *op;
    int n, cap;
    double input_bytes;       /* bytes of the block input (kept under full recompute) */
    double fwd_ws;            /* MoE: token tensors alive at the end of the block's forward beside the
                               * saved ones (dispatcher buffers, expert output, combine chain), bytes */
    double fwd_ws_block;      /* the largest of them (one allocator block), bytes */
    struct mb_op *part;       /* the ops before fusion (names and costs of each fused op's parts) */
    int nparts;
    double lora_params;       /* LoRA adapter parameters of one layer of this kind on a rank (elements) */
};

/** Layout facts shared by the timeline builder and memory estimator. */
struct mb_layout {
    int p, v, m;              /* pipeline stages, virtual chunks, microbatches per DP rank */
    int edp;                  /* expert data parallel size */
    int *first, *count;       /* [p*v] decoder layers per virtual stage (index c*p+s) */
    double params_dense_stage[MB_MAX_STAGES];  /* non-expert params (elements) per stage, before TP split */
    double params_expert_stage[MB_MAX_STAGES]; /* routed expert params per stage, before EP*ETP split */
    double params_qdense_stage[MB_MAX_STAGES]; /* of params_dense_stage, the decoder layers' linear weights
                                                  (quantized under FP8/FP4 recipes), before TP split */
    double weight_q_bytes;    /* bytes per quantized weight element on the device (mb_memory_qweight_bytes) */
    double weight_q_gather;   /* bytes per quantized weight element in the DP parameter all-gather */
    double fp8_transpose;     /* bytes per quantized weight element of Megatron-FSDP's kept FP8 transpose
                                 cache (mb_memory_fp8_transpose_cache_bytes) */
    double params_vision;     /* vision encoder + projector (stage 0) */
    double dense_layer_params;  /* non-expert params (elements) of one decoder layer, before TP split */
    double expert_layer_params; /* routed expert params of one MoE layer, before EP*ETP split */
    double layer_params;      /* params (elements) of one decoder layer on this rank, before sharding:
                                 dense / tp + routed experts / (ep * etp) */
    double graph_bytes_stage[MB_MAX_STAGES]; /* CUDA-graph static buffers / pools per stage (bytes) */
};

/* Op lists of the step, built once per simulation (ops phase). */
struct mb_plan {
    struct mb_oplist kind[MB_MIX_MAMBA + 1][MB_FFN_MOE + 1]; /* one list per (mixer, FFN) layer kind */
    struct mb_oplist emb, head;   /* embedding (stage 0); final norm, output layer and loss (last stage) */
    const struct mb_oplist *mtp;  /* the layer kind MTP blocks run (last layer's), or NULL */
    unsigned rc_mask;             /* modules recomputed (~0u: full recompute) */
};

/* Data of the step's microbatches (data phase). */
struct mb_data {
    int n;                        /* microbatches */
    double *vP, *vQ;              /* [n] ViT patches / sum of squared patches of the pacing rank */
    int vis_max;                  /* microbatch with the most patches */
    double sumP, sumQ, sum_merged; /* mean rank's totals over the step (model FLOPs) */
    double useful_per_seq;        /* LLM positions carrying data per sequence */
    double lsq_per_seq;           /* sum of squared attention lengths per sequence */
    double vision_tokens_per_sample;
    double act_vision;            /* saved activations of the largest microbatch's ViT pass */
    struct mb_oplist *visl, *visp; /* [n] ViT forward op lists; projector-only lists (frozen encoder) */
};

/* Per (stage, chunk, microbatch) tasks of the schedule (schedule phase). */
struct mb_sched {
    int p, v, n;
    int *fentry, *fsend, *fdone;  /* forward entry, p2p send, last task */
    int *fpair;                   /* EP overlap: the last task of the backward a forward was paired
                                   * with (combined 1F1B), or -1 */
    int *bentry, *bsend, *bdone;  /* the same for the backward */
    int *lastb_layer;             /* [layers] the last backward task of each decoder layer */
};

/* fmax and fmin as inline comparisons (the call per op, or per task in the
 * breakdown, showed in sweep profiles): the larger / smaller of x and y, the
 * other one when either is a NaN (y != y); of two equal values (+0 and -0
 * among them) y, as x86-64's maxsd/minsd, and so glibc's fmax/fmin
 * (sysdeps/x86_64/fpu/s_fmax.S), return it: the same values, bit for bit. */
static inline double mb_step_max(double x, double y) { return y != y || x > y ? x : y; }
static inline double mb_step_min(double x, double y) { return y != y || x < y ? x : y; }

/** Slot of (stage st, chunk c, microbatch i) in the mb_sched arrays. */
static inline size_t mb_slot(const struct mb_sched *q, int st, int c, int i)
{
    return ((size_t)c * q->p + st) * q->n + i;
}

/* What an engine task ran, for the trace and the per-op table (tag - 1). */
struct mb_tinfo {
    const struct mb_op *op;       /* NULL: host launch, stall, optimizer, collective task */
    const struct mb_oplist *list; /* list op belongs to (its parts) */
    const char *name;             /* name when op is NULL */
    int layer, mb, chunk;         /* -1 when not applicable */
    int dir;                      /* 0 forward, 1 backward, 2 recompute, -1 none */
    int skip_bwd;                 /* backward of frozen weights: dgrad only */
    int stage;
    double flop, bytes, peak;     /* when op is NULL (peak: link line rate or HBM bytes/s) */
    enum mb_src src;              /* when op is NULL: where its time came from */
};

/* Build context of one simulation. */
struct mb_build {
    struct mb_coll_use coll[MB_CK_COUNT];     /* the costliest call of each comm kind (net.c) */
    struct mb_coll_use coll_lat[MB_CK_COUNT]; /* the call of each kind with the longest latency */
    const struct mb_scenario *s;
    const struct mb_model *m;
    struct mb_calib *cal;
    const struct mb_gpu_spec *gpu;
    struct mb_engine *e;
    double nv_cap, nic_cap, nv_lat, nic_lat;
    double nvls_bw, nvls_lat; /* NVLS all-reduce rate (0: the system has none) and fixed cost */
    double gemm_scale;        /* GEMM-time multiplier of the precision recipe (calibration `recipes:`) */
    struct mb_group g_tp, g_cp, g_ep, g_dp, g_edp;
    int pp_over_nic;
    double launch;            /* host seconds per kernel or graph launch (0: full-iteration graph) */
    int region_seq;           /* last CUDA-graph region id handed out */
    int layer_region;         /* region of the layer being built (whole-layer graphs) */
    int cur_region;           /* region communication ops pushed now belong to */
    double route_imbalance;   /* most-loaded EP rank / mean (1 = balanced) */
    /* phase outputs */
    struct mb_layout lay;
    struct mb_plan plan;
    struct mb_data data;
    struct mb_sched sched;
    /* per stage resources */
    int comp[MB_MAX_STAGES];
    int cstream[MB_MAX_STAGES][MB_CK_COUNT];
    int l_nv[MB_MAX_STAGES], l_nic[MB_MAX_STAGES];
    int host[MB_MAX_STAGES];  /* host launch thread of each stage's rank */
    int host_fold;            /* fold launches that cannot delay their op (emit.c); off when recording */
    int host_last[MB_MAX_STAGES]; /* last host task on each stage's thread, -1 */
    double host_acc[MB_MAX_STAGES]; /* launch seconds folded since host_last, not yet a task */
    int *hostdep;             /* [task] host launch task a GPU task waited for, or -1 */
    size_t hostdep_cap;
    /* activation memory counter per stage (time, bytes), for the trace; and the
     * dynamic terms (activations, logits, recompute) after each event */
    double *mem_t[MB_MAX_STAGES], *mem_v[MB_MAX_STAGES];
    double *mem_lg[MB_MAX_STAGES], *mem_rc[MB_MAX_STAGES], *mem_gr[MB_MAX_STAGES];
    int mem_n[MB_MAX_STAGES];
    /* task descriptions, kept only when a trace or the op table is asked for (tasks.c:
     * mb_tinfo_get): per task 16 bytes, what differs between microbatches and layers;
     * the rest (op, name, stage, sizes) once per distinct description */
    int record;
    struct mb_trec *trec;     /* [task] */
    size_t n_tinfo, cap_tinfo;
    struct mb_tinfo *tdesc;   /* distinct descriptions, layer/mb/chunk/dir cleared */
    size_t n_tdesc, cap_tdesc;
    int *tdesc_hash;          /* open addressing over tdesc: index + 1, 0 = empty */
    size_t hash_cap;          /* a power of two, at least twice n_tdesc */
    struct mb_tinfo cur;      /* description the next recorded task gets */
    /* framework-time model (calibration `framework:`; framework.c), 0 when off */
    int fw_on;                /* 0 in roofline mode */
    double fw_tensor, fw_mem_eff; /* as applied by the table view's lookups (reported) */
    double fw_kernel_eager, fw_kernel_graph; /* GPU seconds per kernel of a compute op */
    double fw_overlap;        /* compute slowdown beside communication */
    double fw_step;           /* seconds per iteration after each stage's optimizer step */
    double fw_host;           /* host seconds per eager kernel beyond b->launch, on this node's host */
    double fw_host_ref;       /* the same on the tables' reference host (the table's host_kernel) */
    double fw_kernel_moe;     /* GPU seconds per eager kernel of an MoE-block compute op, beyond fw_kernel_eager */
};

/** Device memory per GPU (bytes) the memory verdict checks against: the
 * system's gpu_memory where it states one (a part with less memory than its
 * calibration table's), else the table's spec.hbm. */
static inline double mb_step_capacity(const struct mb_build *b)
{
    return b->s->system.gpu_memory > 0 ? b->s->system.gpu_memory : b->gpu->hbm_bytes;
}

/* ---- placement.c */
struct mb_group mb_step_group(int size, int stride, int dom);
/* Host seconds per kernel issue on the scenario's node / on the host its calibration table describes:
 * system.host_time_scale (topology/mb_topo.h), 1 where it is unset (0). */
static inline double mb_step_host_scale(const struct mb_scenario *s)
{
    return s->system.host_time_scale > 0 ? s->system.host_time_scale : 1.0;
}
int mb_step_place(struct mb_build *b, struct mb_err *err);

/* ---- oplist.c: the op list */
void mb_ops_push(struct mb_oplist *l, const struct mb_op *o);
/* Room for n more ops in l without growing it op by op. */
void mb_ops_reserve(struct mb_oplist *l, int n);
void mb_ops_fuse(struct mb_oplist *l, unsigned rc_mask);
void mb_ops_fuse_parts(struct mb_oplist *l, unsigned rc_mask, int keep_parts);
/* Append op o, index `part` of the unfused list, to the fused list l: into its
 * last op where mb_ops_fuse would have fused the two (the same sums in the same
 * order), else as a new op. Keeps no parts. */
void mb_ops_fuse_push(struct mb_oplist *l, const struct mb_op *o, unsigned rc_mask, int part);
void mb_ops_free(struct mb_oplist *l);

/* ---- ops.c: op primitives (each appends one op to l) */
int mb_ops_region(struct mb_build *b, int on);
void mb_ops_gemm_p(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                   int graphed, enum mb_prec p, int quantize, double M, double N, double K, double saved, int frozen);
void mb_ops_gemm(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                 int graphed, double M, double N, double K, double saved, int frozen);
void mb_ops_grouped(struct mb_build *b, struct mb_oplist *l, const char *name, int graphed, double groups,
                    double tpg, double N, double K, double saved);
/* Bytes the residual dropout of `elems` elements keeps for backward: its 1-byte
 * mask with training.hidden_dropout > 0, nothing at 0 (Megatron's bias_dropout_add
 * calls torch.nn.functional.dropout, which returns its input at p = 0: ATen
 * Dropout.cpp, `if (p == 0 || !train ...) return input`). */
double mb_ops_dropout_mask(const struct mb_scenario *s, double elems);
void mb_ops_mem(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                int graphed, double bytes, double saved);
void mb_ops_mem_sym(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                    int graphed, double bytes, double saved);
void mb_ops_attn(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                 int graphed, double flop, double seq, int head_dim, double bh, int causal, double saved);
/* mb_ops_attn for a causal sliding-window layer: the kernel's times from the
 * tiles its window visits (attn_window.c), over bh problems of sequence `seq`
 * of which this rank computes the fraction `share` of the query rows (1/cp). */
void mb_ops_attn_window(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                        int graphed, double flop, double seq, double window, int dq, int dv, double bh, double share,
                        double saved);
void mb_ops_norm(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, int g, double tok,
                 int h);
void mb_ops_wait(struct mb_oplist *l, const char *name, enum mb_cat cat, double fwd, double bwd);
/* Bytes of op o's saved ones that selective recompute of the modules in `mask` frees: all of
 * them in a recomputed module, but rc_kept where only modules of rc_keeps are recomputed (the op
 * holds their region's input); all of them where the op saves a recomputed region's output
 * (Megatron-Core's CheckpointWithoutOutput keeps the checkpointed function's arguments and frees
 * its output, NVIDIA/Megatron-LM@d98e8a64 megatron/core/tensor_parallel/random.py). */
static inline double mb_op_rc_freed(const struct mb_op *o, unsigned mask)
{
    unsigned in = o->module & mask;
    if (in)
        return (in & ~o->rc_keeps) ? o->saved : o->saved - o->rc_kept;
    return (o->rc_frees & mask) ? o->saved : 0;
}

/* ---- sac.c: recompute.policy torchtitan_op on one decoder layer's op list (before fusion): sets each
 * op's sac_saved and sac_keep_s and tags the ops that re-run with MB_MOD_SAC. */
void mb_sac_mark(const struct mb_build *b, struct mb_oplist *l);
/* The bytes a decoder layer keeps under that policy: its input (the checkpoint's argument) and the
 * sac_saved of its ops. */
double mb_sac_layer_kept(const struct mb_oplist *l);
/* recompute.policy torchtitan_layer: whether the layer_in_rank-th (0-based) decoder layer a rank builds is
 * checkpointed whole: torchtitan's _apply_layer_sac counts the wrapped layers from 1 and checkpoints
 * those at a multiple of N (recompute.every). */
static inline int mb_sac_layer_checkpointed(const struct mb_scenario *s, int layer_in_rank)
{
    return s->rc_policy == MB_RCP_TORCHTITAN_LAYER && (layer_in_rank + 1) % (s->rc_every > 0 ? s->rc_every : 1) == 0;
}
/* The share of op o's forward (time, FLOP, bytes) its recompute pass re-runs: 1 but for a GEMM part of
 * which recompute.policy keeps (sac_keep_s). */
static inline double mb_op_rerun_share(const struct mb_op *o)
{
    return o->fwd > 0 ? (o->fwd - o->sac_keep_s) / o->fwd : 1;
}

/* ---- attn_window.c: a sliding-window attention kernel from the tiles it visits */
/* KV tiles (128 keys) a causal window-`window` kernel visits over the 128-row
 * query blocks of one sequence of `seq` tokens: block i visits
 * min(i, ceil((window - 1)/128)) + 1. 0 when seq or window is not positive. */
double mb_attn_window_tiles(double seq, double window);
/* Seconds of a causal sliding-window flash kernel (forward, or backward when
 * bwd) over bh (batch x head) problems of sequence seq, head dims dq (Q.K) and
 * dv: bh (nQ a + tiles b), nQ = ceil(seq/128) query blocks, a a query block's
 * fixed cost and b one KV tile's, solved from the table's causal curve at
 * seq 2048 and 4096 (mb_calib_attn_bh at the same CTA count, so the wave
 * factor is the windowed kernel's); a curve flat or falling in seq gives a = 0
 * and b from seq 2048. 0 when an argument is not positive. */
double mb_attn_window_s(struct mb_calib *c, enum mb_prec p, double seq, double window, int dq, int dv, double bh,
                        int bwd);

/* ---- net.c: communication ops and collective tasks */
void mb_net_ring(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_commk ck, enum mb_coll_op op,
                 struct mb_group g, double total, int parallel);
void mb_net_a2a(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_commk ck, struct mb_group g,
                double bytes);
void mb_net_wgrad_gather(struct mb_build *b, struct mb_oplist *l, struct mb_group g, double total, int frozen);
void mb_net_flex(struct mb_build *b, struct mb_oplist *l, const char *name, struct mb_group g, double bytes_nv,
                 double bytes_nic, int kind);
int mb_net_p2p(struct mb_build *b, int st, double bytes, int dep);
int mb_net_coll(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, enum mb_coll_op op,
                struct mb_group g, double bytes, int dep);
double mb_net_coll_est(const struct mb_build *b, enum mb_coll_op op, struct mb_group g, double bytes);

/* ---- mixer.c, moe.c, model_ops.c: the op lists */
void mb_ops_mixer(struct mb_build *b, struct mb_oplist *l, enum mb_mixer mix, int frozen);
void mb_ops_ffn(struct mb_build *b, struct mb_oplist *l, enum mb_ffn ffn, int frozen);
double mb_moe_p_hit(const struct mb_model *m, double e);
void mb_ops_vision(struct mb_build *b, struct mb_oplist *l, double P, double Q);
/* The ViT list of mb_ops_vision fused as mb_ops_fuse_parts(l, 0, 0) fuses it,
 * appended to the empty list l without building the unfused copies of its
 * blocks (the same ops, sums and calibration usage); returns the sum of the
 * unfused ops' saved activation bytes, in list order. */
double mb_ops_vision_fused(struct mb_build *b, struct mb_oplist *l, double P, double Q);
void mb_plan_build(struct mb_build *b);
void mb_plan_scale_attention(struct mb_build *b, double attn_scale);
void mb_plan_offload(struct mb_build *b);
void mb_plan_free(struct mb_plan *pl);
const struct mb_oplist *mb_plan_layer(const struct mb_build *b, int li);

/* ---- layout.c: layers to virtual stages, parameters per stage, graph buffers */
void mb_layout_build(struct mb_build *b, int mbs_n);
void mb_layout_graphs(struct mb_build *b);
void mb_layout_free(struct mb_layout *lay);

/* ---- data.c */
void mb_data_draw(struct mb_build *b, int mbs_n);
void mb_data_vision_ops(struct mb_build *b);
void mb_data_free(struct mb_data *d);

/* ---- schedule.c */
int mb_sched_warmup_depth(int st, int p, int v);
int mb_sched_warmup(int st, int p, int v, int m);
/* The last task of stage st's k-th chunk-forward in schedule order (0-based;
 * Megatron's interleaved order maps it to a chunk and microbatch), or -1. */
int mb_sched_forward_done(const struct mb_build *b, int st, int k);
void mb_sched_build(struct mb_build *b, const int *pg_done);
/* Whether decoder layer li (first layer of its virtual stage: first) is re-forwarded in its backward. */
int mb_sched_recompute_here(const struct mb_build *b, int li, int first);
void mb_sched_free(struct mb_sched *q);

/* ---- emit.c: units of ops as tasks (used by schedule.c) */
struct mb_em {
    int last;     /* task the next compute op must follow */
    int pending;  /* parallel communication the op after next must wait for, or -1 */
    int region;   /* CUDA-graph region of the last op emitted (0 = eager) */
    double beside_par; /* est. seconds the pending parallel comm still runs beside the next compute */
    double beside_bg;  /* est. seconds of background comm (FSDP, overlapped grad reduction) still beside */
    int lb_host;       /* `last` ends at least lb seconds after host task lb_host ends (-1: unknown) */
    double lb;
};
enum mb_itk { MB_IT_OPS, MB_IT_FSDP_AG, MB_IT_FSDP_RS, MB_IT_LASTB };
struct mb_item {
    enum mb_itk k;
    const struct mb_oplist *l; /* MB_IT_OPS */
    int dir, recompute, skip_bwd;
    unsigned mask;
    double bytes;              /* FSDP items */
    int li;                    /* decoder layer (-1: embedding, head, vision) */
};
struct mb_unit {
    struct mb_item *it;
    int n, cap;
    int pos, opi;              /* next item, next op inside an MB_IT_OPS item */
    struct mb_em em;
    double ep_busy;            /* est. seconds of the EP transfer it last yielded on */
    int mb, chunk;             /* microbatch and virtual chunk it runs */
};
/* The compute task before each FSDP gather of a stage (a ring of the last
 * MB_MAX_FSDP_PREFETCH + 1), n gathers so far. */
struct mb_gate {
    int hist[MB_MAX_FSDP_PREFETCH + 1];
    int n;
};
int mb_emit_task(struct mb_build *b, int stream, int kind, double dur, const struct mb_flow_desc *f, int nf,
                 int dep);
int mb_emit_join(struct mb_build *b, int st, int a, int c);
void mb_emit_host_flush(struct mb_build *b, int st);
int mb_unit_open(struct mb_build *b, int st, struct mb_unit *u, int mb, int chunk);
void mb_unit_ops(struct mb_unit *u, const struct mb_oplist *l, int li, int dir, int recompute, unsigned mask,
                 int skip_bwd);
void mb_unit_item(struct mb_unit *u, enum mb_itk k, double bytes, int li, int dir);
int mb_unit_run(struct mb_build *b, int st, struct mb_unit *u, int yield_on_ep, struct mb_gate *gate);
void mb_unit_run_pair(struct mb_build *b, int st, struct mb_unit *ua, struct mb_unit *ub, double sm_frac,
                      struct mb_gate *gate);
void mb_emit_describe(struct mb_build *b, const char *name, int stage, int layer, int mb, int dir);
/* Whether op o runs in a pass (dir 0/1, recompute with module mask) and its table seconds there. */
int mb_emit_op_runs(const struct mb_op *o, int dir, int recompute, unsigned mask);
double mb_emit_comp_s(const struct mb_op *o, int dir, int recompute, int skip_bwd);
/* What differs between the tasks of one description (tasks.c). */
struct mb_trec {
    uint32_t desc;            /* index into b->tdesc */
    int32_t layer, mb;        /* -1 when not applicable */
    int16_t chunk;
    int8_t dir;
};

/* The description of recorded task t (t < b->n_tinfo) into *out. */
void mb_tinfo_get(const struct mb_build *b, size_t t, struct mb_tinfo *out);

/* Call fn for each op recorded task ti ran (the ops a compute task was fused
 * from, in program order, or its one op) with its share of the task's `sec`
 * seconds, in proportion to the ops' own times in that direction (tasks.c). */
void mb_tinfo_split(const struct mb_tinfo *ti, double sec,
                    void (*fn)(const struct mb_op *part, double sec, void *ctx), void *ctx);

/* ---- framework.c: the framework-time model */
void mb_fw_setup(struct mb_build *b);
double mb_fw_comp(struct mb_build *b, struct mb_em *em, const struct mb_op *o, int dir, int recompute, double dur);
double mb_fw_comm_est(const struct mb_build *b, const struct mb_op *o);
double mb_fw_kernels(const struct mb_build *b, const struct mb_op *o, int dir, int recompute);

/* ---- reduce.c */
void mb_reduce_param_gather(struct mb_build *b, int *pg_done);
void mb_reduce_grads_and_step(struct mb_build *b);
double mb_reduce_optimizer_bytes(const struct mb_build *b, int st);

/* ---- bound.c */
/* floor_s[st]: seconds stage st's compute stream runs at least (the ops of
 * the built plan except the data-drawn ones, their framework kernel time, the
 * optimizer; no overlap slowdowns, stalls or waits), for every stage. */
void mb_bound_stages(const struct mb_build *b, double *floor_s);
/* The same for a step of m microbatches of the built plan (the floor is
 * m x the per-microbatch compute + the optimizer and iteration overhead). */
void mb_bound_stages_m(const struct mb_build *b, int m, double *floor_s);

/* ---- memtl.c, memory.c */
/* A stage's dynamic memory at its peak moment (timeline). */
struct mb_memdyn {
    double activations, logits, recompute, grads; /* bytes alive at the peak */
    double deferred;                       /* of activations, the deferred output-layer wgrad buffers */
    double t;                              /* s, when */
};
void mb_memtl_build(struct mb_build *b, struct mb_memdyn *dyn);
/* The envelope of stage st's allocated bytes (static_bytes + dynamic terms) over the step into tl. */
void mb_memtl_record(struct mb_build *b, int st, double static_bytes, struct mb_memtl *tl);
/* Append the optimizer step's point (t s, allocated bytes, no dynamic term) to a recorded timeline. */
void mb_memtl_add_step(struct mb_memtl *tl, double t, double allocated);
void mb_memtl_free(struct mb_build *b);
/* A stage whose terms are those of the passes' peak: its optimizer-step and first-iteration
 * figures (step_grads, first_iter_allocated), and the step's terms instead when the step's
 * allocation is the larger (at_step; docs/modeling.md, "The optimizer step"). */
void mb_memory_settle_step(const struct mb_scenario *s, struct mb_memory_stage *ps);
/* Bytes a settled stage holds in the optimizer step: its static state, step_grads, graphs, workspaces. */
double mb_memory_step_allocated(const struct mb_memory_stage *ps);
/* Per-rank memory of every stage; dyn[st] (or NULL: the in-flight formula)
 * gives each stage's dynamic terms at its peak. */
int mb_memory_estimate(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                       double act_vision, double hbm_bytes, const struct mb_memdyn *dyn, struct mb_memory *out);
/* Activation bytes one microbatch leaves saved on virtual chunk c of stage st
 * (recompute applied). */
/* The largest decoder layer's saved activations in chunk c of stage st (bytes). */
double mb_memory_chunk_layer_max(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                                 int st, int c);
double mb_memory_chunk_act(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                           int st, int c);
/* Bytes the recompute of one microbatch re-materialises at once on chunk c of
 * stage st (the largest layer, or group of layers under uniform full recompute). */
double mb_memory_recompute_ws(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                              int st, int c);
/* Gradient working set of a layer's backward on chunk c of stage st (the largest op's
 * output and input gradients). */
double mb_memory_grad_ws(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan, int st,
                         int c);
/* Loss working set of one microbatch on the last stage (logits, softmax or in-place gradient). */
double mb_memory_logits_bytes(const struct mb_scenario *s);
/* Liger-Kernel's fused linear cross-entropy (training.loss_chunks) on `tokens` tokens, hidden size `hidden`,
 * vocabulary `vocab` in `chunks` token chunks, per head (bytes): the bf16 grad_input [T, h] and grad_weight
 * [V, h] it fills in the forward and saves for the backward, and one chunk's bf16 logits [ceil(T/N), V], in
 * which the loss kernel writes their gradient (linkedin/Liger-Kernel@00eba634
 * src/liger_kernel/ops/fused_linear_cross_entropy.py, fused_linear_cross_entropy_forward). */
double mb_memory_chunked_loss_bytes(double tokens, double hidden, double vocab, int chunks);
/* Tokens of a microbatch that a TP rank holds outside its tensor-parallel GEMMs (norms, residual
 * adds, the saved inputs of the column-parallel linears): T / tp under sequence parallelism, all T
 * of them without it (every TP rank repeats that work on the whole sequence, Korthikanti et al.,
 * arXiv 2205.05198, Table 2). T: the microbatch's tokens on the rank before the TP split. */
static inline double mb_ops_sp_tokens(const struct mb_scenario *s, double T)
{
    return s->tp > 1 && s->sequence_parallel ? T / s->tp : T;
}
/* Bytes per decoder linear-weight element a rank holds under the scenario's precision: 2 (BF16)
 * without quantization; under FP8/FP4, TE's quantized copy (cached across microbatches) beside the
 * BF16 weight, or the quantized weight alone with fp8_param_gather (docs/modeling.md). g: the GPU
 * (FP4 tensor cores mark the Blackwell parts whose FP8 GEMMs need no transposed copy). */
double mb_memory_qweight_bytes(const struct mb_scenario *s, const struct mb_gpu_spec *g);
/* Bytes per decoder linear-weight element in the distributed optimizer's parameter all-gather:
 * 1 for per-tensor / blockwise FP8 with fp8_param_gather, else 2 (BF16; Megatron gathers MXFP8
 * and NVFP4 weights in BF16 through the gradient buffer). */
double mb_memory_qweight_gather_bytes(const struct mb_scenario *s);
/* parallel.fsdp_keep_fp8_transpose_cache: bytes per decoder linear-weight element of the FP8 transpose
 * cache Megatron-FSDP keeps (unsharded, for the step): 1 for FP8 parameters (fp8_param_gather) of a
 * per-tensor FP8 recipe on a GPU whose FP8 GEMMs need the transpose (no FP4 tensor cores: not
 * Blackwell) or of blockwise FP8 (its column-wise copy); 0 otherwise (MXFP8 keeps both copies either
 * way, NVFP4 parameters are not Float8Tensors). g: the GPU. */
double mb_memory_fp8_transpose_cache_bytes(const struct mb_scenario *s, const struct mb_gpu_spec *g);
/* overlap.defer_embedding_wgrad_compute on the last stage: bytes one deferred output-layer call keeps
 * for the pipeline flush (its input, sequence-parallel shard when SP is on, and its output gradient
 * [s/cp, b, V/tp], both BF16; *input, if not NULL, gets the input's part), and how many calls the first i microbatches defer (1 + MTP depth
 * calls per microbatch, at most wgrad_deferral_limit; 0 when deferral is off). */
double mb_memory_deferred_call_bytes(const struct mb_scenario *s, double *input);
int mb_memory_deferred_calls(const struct mb_scenario *s, int i);
/* ---- memory_ep.c: DeepEP's and HybridEP's registered buffers (bytes; device memory outside PyTorch) */
/* Megatron-Core's DeepEP buffer for an EP group of `ranks` with `sms` dispatcher SMs and tokens of
 * hidden_bytes (fused_a2a.get_buffer: the larger of the dispatch and combine configs' NVL and RDMA size
 * hints, deepseek-ai/DeepEP@04b06f7a deep_ep/buffer.py, @3861241a csrc/config.hpp). */
double mb_memory_deepep_bytes(int ranks, int sms, double hidden_bytes);
/* HybridEP's buffers (deepseek-ai/DeepEP@94a9f8f6, hybrid-ep branch: csrc/hybrid_ep/buffer/intranode.cu
 * NVLCoordinator, internode_doca.cu RDMACoordinator) for T tokens per rank, a group of `group` ranks,
 * per_domain of them in one NVLink domain, hidden size h, experts_per_rank local experts: the shared
 * dispatch/combine buffer of T x group tokens, and across domains the RDMA staging. 0 for group < 2. */
double mb_memory_hybridep_bytes(double T, int group, int per_domain, double h, double experts_per_rank);
/* The scenario's dispatcher buffers on a rank, T the microbatch's tokens before the TP split (0 without
 * experts, EP 1, or a dispatcher without registered buffers). */
double mb_memory_dispatcher_bytes(const struct mb_scenario *s, double T);
/* ---- memory_graph.c: CUDA-graph pool terms beyond layout.c's reuse model (bytes) */
/* Scoped graphs with cuda_graph.reuse_buffers off (TE < 2.7) on stage st, seg the bytes one [s/tp, b, h]
 * buffer reserves: 3 buffers (static output, grad output, grad input) per captured layer and microbatch of
 * the step, less the shared grad-output buffer layout.c counts; 0 otherwise. */
double mb_memory_graph_unreused_bytes(const struct mb_build *b, int st, double seg);
/* The optimizer step's transient bytes (step_transient) that a full-iteration graph's pool, held
 * reserved through the eager optimizer step, adds to the passes' peak; 0 without a full-iteration graph. */
double mb_memory_graph_step_extra(const struct mb_scenario *s, double step_transient);
/* Bytes the caching allocator reserves for one allocation of `bytes` (2 MiB segments). */
double mb_memory_segment(double bytes);
/* Set the rank-level fields (peak stage, its terms, reserved, verdict, dominant
 * term) from m->per_stage[0 .. n_stages) and m->capacity. */
void mb_memory_summarize(struct mb_memory *m);

/* ---- results.c, trace.c, opstats.c */
void mb_results_breakdown(struct mb_build *b, double step, struct mb_result *r);
/* The same breakdown of stage cs within [lo, hi) seconds (tasks and gaps
 * clipped to it) into bd[MB_CAT_COUNT]. */
void mb_results_breakdown_in(struct mb_build *b, int cs, double lo, double hi, double *bd);
void mb_results_critical(struct mb_build *b, struct mb_result *r);
void mb_results_metrics(struct mb_build *b, double step, struct mb_result *r);
int mb_results_task_cat(const struct mb_engine *e, int t);
int mb_trace_write(struct mb_build *b, const char *path, struct mb_err *err);
void mb_opstats_collect(struct mb_build *b, struct mb_result *r);
void mb_opstats_extend(struct mb_result *r, const struct mb_result *r1, double k);

/* ---- check.c: the invariant pass after each phase (compiled in with MBSIM_CHECK_INVARIANTS: debug
 * and sanitizer builds; no-ops otherwise). A violation aborts naming the phase and the scenario. */
#ifdef MBSIM_CHECK_INVARIANTS
void mb_step_check_graph(const struct mb_build *b, const char *phase);
void mb_step_check_run(const struct mb_build *b);
void mb_step_check_memory(const struct mb_scenario *s, const struct mb_memory *m, const char *phase);
#else
static inline void mb_step_check_graph(const struct mb_build *b, const char *phase) { (void)b, (void)phase; }
static inline void mb_step_check_run(const struct mb_build *b) { (void)b; }
static inline void mb_step_check_memory(const struct mb_scenario *s, const struct mb_memory *m, const char *phase)
{
    (void)s, (void)m, (void)phase;
}
#endif

#endif /* MB_STEP_INT_H */
