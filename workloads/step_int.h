/*
 * step_int.h -- private to workloads/mb_step.c and workloads/mb_memory.c:
 * the per-layer operation lists both the timeline builder and the memory
 * estimator read.
 */
#ifndef MB_STEP_INT_H
#define MB_STEP_INT_H

#include "mb_step.h"

enum mb_opk { MB_OP_COMP, MB_OP_COMM };

/* Communication kinds (each has its own stream per simulated rank). */
enum mb_commk { MB_CK_TP, MB_CK_CP, MB_CK_EP, MB_CK_PP, MB_CK_DP, MB_CK_FSDP, MB_CK_COUNT };

/* Module tags for recompute (MB_RCM_* flags) plus the always-kept ones. */
#define MB_MOD_OTHER 0u

struct mb_op {
    enum mb_opk type;
    enum mb_cat cat;          /* breakdown category of compute */
    unsigned module;          /* MB_RCM_* module this op belongs to (0 = none) */
    double fwd, bwd;          /* compute seconds (bwd: dgrad + wgrad, or 0 if not needed) */
    double bwd_dgrad_only;    /* bwd seconds when weights are frozen (dgrad only) */
    enum mb_commk ck;         /* MB_OP_COMM: kind */
    double bytes_nv, bytes_nic; /* MB_OP_COMM: bytes this rank sends on NVLink / NIC */
    double latency;           /* MB_OP_COMM: seconds before bytes flow */
    double paced;             /* MB_OP_COMM: a measured collective's flows take this long alone (s), 0 = none */
    double bound_nic;         /* MB_OP_COMM: cap on the NIC flow alone (oversubscribed scale-out), 0 = none */
    int parallel;             /* comm runs beside the next compute op (CP ring, TP overlap) */
    double saved;             /* activation bytes saved for backward per microbatch */
    double kf, kb;            /* kernels the host launches for the op: forward, backward (eager) */
    int region;               /* CUDA-graph capture region (0 = eager); ops of one region are
                               * launched by one cudaGraphLaunch */
    int host_sync;            /* forward: the host waits for the GPU before issuing this op
                               * (D2H copy of the token counts before an EP dispatch) */
};

struct mb_oplist {
    struct mb_op *op;
    int n, cap;
    double input_bytes;       /* bytes of the block input (kept under full recompute) */
};

/** Layout facts shared by the timeline builder and memory estimator. */
struct mb_layout {
    int p, v, m;              /* pipeline stages, virtual chunks, microbatches per DP rank */
    int edp;                  /* expert data parallel size */
    int *first, *count;       /* [p*v] decoder layers per virtual stage (index c*p+s) */
    double params_dense_stage[64];  /* non-expert params (elements) per stage, before TP split */
    double params_expert_stage[64]; /* routed expert params per stage, before EP*ETP split */
    double params_vision;     /* vision encoder + projector (stage 0) */
    double layer_params;      /* params (elements) of one decoder layer on this rank, before sharding:
                                 dense / tp + routed experts / (ep * etp) */
    double graph_bytes_stage[64]; /* CUDA-graph static buffers / pools per stage (bytes) */
};

/* Per-rank memory of every stage; act_timeline[st] (or NULL: the in-flight
 * formula) gives each stage's activation peak. */
int mb_memory_estimate(const struct mb_scenario *s, const struct mb_layout *lay,
                       const struct mb_oplist *layer_ops, double act_vision, double hbm_bytes,
                       const double *act_timeline, struct mb_memory *out);

/* Activation bytes one microbatch leaves saved on virtual chunk c of stage st
 * (recompute applied). */
double mb_memory_chunk_act(const struct mb_scenario *s, const struct mb_layout *lay,
                           const struct mb_oplist *layer_ops, int st, int c);

/* Set the rank-level fields (peak stage, its terms, reserved, dominant term)
 * from m->per_stage[0 .. n_stages). */
void mb_memory_summarize(struct mb_memory *m);

#endif
