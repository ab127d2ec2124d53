/*
 * mb_megatron_rules.c -- the rule table of mb_megatron_rules.h. Each check
 * reads only the scenario; its source line is in the table beside it.
 */
#include "mb_megatron_rules.h"

#include <stdio.h>
#include <string.h>

#define TC "megatron/core/transformer/transformer_config.py:"
#define TEQ "transformer_engine/pytorch/quantization.py:"

static int mb_mgr__graph_per_layer(const struct mb_scenario *s)
{
    return s->cuda_graph && s->cuda_graph != MB_CG_FULL_ITERATION;
}

static int mb_mgr__sel(const struct mb_scenario *s, unsigned mods)
{
    return s->recompute == MB_RC_SELECTIVE && (s->recompute_modules & mods);
}

/* ---- recompute and CUDA graphs ------------------------------------------- */

static int mb_mgr__full_rc_graph(const struct mb_scenario *s, char *msg, size_t len)
{
    if (s->recompute != MB_RC_FULL || !mb_mgr__graph_per_layer(s))
        return 0;
    snprintf(msg, len, "recompute.granularity full needs cuda_graph.modules [full_iteration] or no CUDA graphs: "
                       "Megatron-Core supports full recompute only with full-iteration CUDA graphs, not per-layer "
                       "ones");
    return 1;
}

static int mb_mgr__moe_rc_router_graph(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!mb_mgr__sel(s, MB_RCM_MOE) || !(s->cuda_graph & MB_CG_MOE_ROUTER))
        return 0;
    snprintf(msg, len, "recompute module moe cannot be combined with cuda_graph module moe_router (the recomputed "
                       "MoE block would cover the graphed router; --cuda-graph-impl transformer_engine)");
    return 1;
}

static int mb_mgr__offload_graph(const struct mb_scenario *s, char *msg, size_t len)
{
    if (s->cpu_offload_layers <= 0 || !mb_mgr__graph_per_layer(s))
        return 0;
    snprintf(msg, len, "memory.cpu_offloading_num_layers excludes per-layer CUDA graphs (Megatron-Core: CUDA graphs "
                       "are not supported with CPU offloading unless full_iteration)");
    return 1;
}

static int mb_mgr__shared_rc_overlap(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!mb_mgr__sel(s, MB_RCM_SHARED_EXPERTS) || !s->shared_expert_overlap)
        return 0;
    snprintf(msg, len, "recompute module shared_experts cannot work with moe.shared_expert_overlap: true");
    return 1;
}

static int mb_mgr__delayed_rc(const struct mb_scenario *s, char *msg, size_t len)
{
    if (strcmp(s->prec.label, "fp8") || !mb_mgr__sel(s, MB_RCM_MOE_ACT | MB_RCM_LAYERNORM))
        return 0;
    snprintf(msg, len, "precision fp8 (delayed scaling) does not support the moe_act and layernorm recompute "
                       "modules; use fp8_cs, fp8_blockwise or mxfp8, or other modules");
    return 1;
}

static int mb_mgr__deepep_pad(const struct mb_scenario *s, char *msg, size_t len)
{
    if (s->dispatcher != MB_DISP_DEEPEP || !s->pad_to_capacity || s->model.num_experts <= 0)
        return 0;
    snprintf(msg, len, "moe.dispatcher deepep does not support moe.pad_expert_input_to_capacity (the flex "
                       "dispatcher's DeepEP backend)");
    return 1;
}

/* ---- overlap_moe_expert_parallel_comm (mbsim overlap.ep_comm) ------------- */

static int mb_mgr__epo_ep(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || s->ep > 1)
        return 0;
    snprintf(msg, len, "overlap.ep_comm needs expert parallelism (parallel.ep > 1); ep = %d", s->ep);
    return 1;
}

static int mb_mgr__epo_disp(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || s->dispatcher != MB_DISP_ALLGATHER)
        return 0;
    snprintf(msg, len, "overlap.ep_comm needs the alltoall, deepep or hybridep dispatcher (alltoall/flex); "
                       "moe.dispatcher is allgather");
    return 1;
}

static int mb_mgr__epo_full(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || s->recompute != MB_RC_FULL)
        return 0;
    snprintf(msg, len, "overlap.ep_comm excludes full recompute (recompute.granularity full)");
    return 1;
}

static int mb_mgr__epo_moe_rc(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || !mb_mgr__sel(s, MB_RCM_MOE))
        return 0;
    snprintf(msg, len, "overlap.ep_comm excludes the moe recompute module");
    return 1;
}

static int mb_mgr__epo_seo(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || !s->shared_expert_overlap)
        return 0;
    snprintf(msg, len, "overlap.ep_comm excludes moe.shared_expert_overlap: true");
    return 1;
}

static int mb_mgr__epo_mtp(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || s->model.mtp_layers <= 1)
        return 0;
    snprintf(msg, len, "overlap.ep_comm supports at most one MTP layer; model %s has %d", s->model.name,
             s->model.mtp_layers);
    return 1;
}

static int mb_mgr__epo_graph(const struct mb_scenario *s, char *msg, size_t len)
{
    if (!s->overlap_ep_comm || !mb_mgr__graph_per_layer(s) || !(s->cuda_graph & (MB_CG_MOE | MB_CG_MLP)))
        return 0;
    snprintf(msg, len, "overlap.ep_comm excludes the cuda_graph modules moe and mlp (--cuda-graph-impl "
                       "transformer_engine)");
    return 1;
}

/* ---- precision against the GPU ------------------------------------------- */

int mb_megatron_gpu_cc(const char *gpu)
{
    static const struct {
        const char *prefix;
        int cc;
    } t[] = {{"GB300", 103}, {"GB200", 100}, {"B300", 103}, {"B200", 100}, {"H800", 90}, {"H200", 90},
             {"H100", 90},   {"H20", 90},    {"L40", 89},   {"L4", 89},    {"A800", 80}, {"A100", 80},
             {"A40", 86},    {"A10", 86},    {"V100", 70}};
    for (size_t i = 0; gpu && i < sizeof t / sizeof t[0]; i++)
        if (!strncmp(gpu, t[i].prefix, strlen(t[i].prefix)))
            return t[i].cc;
    return 0;
}

static int mb_mgr__fp8_cc(const struct mb_scenario *s, char *msg, size_t len)
{
    int cc = mb_megatron_gpu_cc(s->system.gpu);
    if ((strcmp(s->prec.label, "fp8") && strcmp(s->prec.label, "fp8_cs")) || cc == 0 || cc >= 89)
        return 0;
    snprintf(msg, len, "precision %s needs compute capability 8.9 or higher (Ada, Hopper, Blackwell); system %s "
                       "has %s GPUs (%d.%d): use bf16",
             s->prec.label, s->system.name, s->system.gpu, cc / 10, cc % 10);
    return 1;
}

static int mb_mgr__blockwise_cc(const struct mb_scenario *s, char *msg, size_t len)
{
    int cc = mb_megatron_gpu_cc(s->system.gpu);
    if (strcmp(s->prec.label, "fp8_blockwise") || cc == 0 || cc >= 90)
        return 0;
    snprintf(msg, len, "precision fp8_blockwise needs compute capability 9.0 or higher (Hopper, Blackwell); system "
                       "%s has %s GPUs (%d.%d)%s",
             s->system.name, s->system.gpu, cc / 10, cc % 10, cc >= 89 ? ": use fp8 or fp8_cs" : ": use bf16");
    return 1;
}

/* ---- the table ------------------------------------------------------------ */

static const struct mb_megatron_rule mb_mgr__rules[] = {
    {"full_recompute_cuda_graph", "recompute.granularity", TC "2854-2858",
     "full recompute is only supported with full iteration CUDA graph", mb_mgr__full_rc_graph},
    {"moe_recompute_moe_router_graph", "recompute.modules", TC "2862-2869",
     "moe recompute is not supported with moe_router CUDA graph (--cuda-graph-impl transformer_engine)",
     mb_mgr__moe_rc_router_graph},
    {"cpu_offload_cuda_graph", "memory.cpu_offloading_num_layers", TC "2800-2801",
     "CUDA graphs not supported with CPU offloading (unless full_iteration)", mb_mgr__offload_graph},
    {"shared_experts_recompute_overlap", "recompute.modules", TC "1991-1998",
     "shared_experts recompute cannot work with --moe-shared-expert-overlap", mb_mgr__shared_rc_overlap},
    {"fp8_delayed_recompute", "recompute.modules", TC "2000-2006",
     "delayed scaling does not support moe_act and layernorm recompute for fp8", mb_mgr__delayed_rc},
    {"deepep_pad_to_capacity", "moe.dispatcher", TC "1754-1761",
     "flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity",
     mb_mgr__deepep_pad},
    {"ep_overlap_needs_ep", "overlap.ep_comm", TC "3013-3015",
     "overlap_moe_expert_parallel_comm is only supported with expert model parallelism", mb_mgr__epo_ep},
    {"ep_overlap_dispatcher", "moe.dispatcher", TC "3016-3019",
     "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher", mb_mgr__epo_disp},
    {"ep_overlap_full_recompute", "recompute.granularity", TC "3021-3023",
     "disable full recomputation when enabling overlap_moe_expert_parallel_comm", mb_mgr__epo_full},
    {"ep_overlap_moe_recompute", "recompute.modules", TC "3030-3032",
     "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm", mb_mgr__epo_moe_rc},
    {"ep_overlap_shared_expert_overlap", "moe.shared_expert_overlap", TC "3039-3041",
     "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm", mb_mgr__epo_seo},
    {"ep_overlap_mtp", "overlap.ep_comm", TC "3042-3046",
     "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm", mb_mgr__epo_mtp},
    {"ep_overlap_cuda_graph", "cuda_graph.modules", TC "3063-3071",
     "CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm", mb_mgr__epo_graph},
    {"fp8_compute_capability", "precision", TEQ "153-154",
     "device compute capability 8.9 or higher required for FP8 execution", mb_mgr__fp8_cc},
    {"fp8_blockwise_compute_capability", "precision", TEQ "179-184",
     "FP8 block scaled GEMM requires compute capability 9.0 or higher", mb_mgr__blockwise_cc},
};

const struct mb_megatron_rule *mb_megatron_rules(size_t *n)
{
    *n = sizeof mb_mgr__rules / sizeof mb_mgr__rules[0];
    return mb_mgr__rules;
}

int mb_megatron_rules_check(const struct mb_scenario *s, const struct mb_megatron_rule **hit, char *msg, size_t len)
{
    size_t n;
    const struct mb_megatron_rule *r = mb_megatron_rules(&n);
    if (hit)
        *hit = NULL;
    for (size_t i = 0; i < n; i++) {
        char what[400];
        if (!r[i].broken(s, what, sizeof what))
            continue;
        int te = !strncmp(r[i].source, "transformer_engine/", 19);
        snprintf(msg, len, "%s (%s %s @%.10s)", what, te ? "Transformer Engine" : "Megatron-LM", r[i].source,
                 te ? MB_TE_COMMIT : MB_MEGATRON_LM_COMMIT);
        if (hit)
            *hit = &r[i];
        return 1;
    }
    return 0;
}
