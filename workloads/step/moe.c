/*
 * moe.c -- the op list of a decoder layer's FFN: a dense (gated) MLP, or a
 * Mixture-of-Experts block (Megatron-Core moe/: router, permute, EP
 * dispatch, grouped expert GEMMs, EP combine, unpermute, shared experts)
 * with the dispatchers' traffic (AllToAll, AllGather, DeepEP, HybridEP).
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>

/* Probability that a token's k routed experts include at least one of a
 * given set of `e` experts that sit together (one rank's or one domain's
 * E/ep or E/D experts), for balanced routing: k experts uniform without
 * replacement, 1 - C(E - e, k) / C(E, k). With group-limited routing
 * (router_groups G, router_group_topk g; DeepSeek-V3 8 / 4) the token first
 * picks g of the G groups of E/G experts: a set inside one group is hit with
 * probability g/G x (1 - C(g E/G - e, k) / C(g E/G, k)); a set of n whole
 * groups with probability 1 - C(G - n, g) / C(G, g) (every picked group
 * receiving at least one of the k experts, which top-k group selection by
 * expert scores makes near certain). */
double mb_moe_p_hit(const struct mb_model *m, double e)
{
    double E = m->num_experts, k = m->topk;
    int G = m->router_groups > 1 ? m->router_groups : 1, gk = m->router_group_topk > 0 ? m->router_group_topk : G;
    double miss = 1.0, scale = 1.0, pool = E;
    if (e <= 0)
        return 0;
    if (G > 1 && gk < G) {
        double eg = E / G;
        if (e >= eg) {
            double n = floor(e / eg + 1e-9);
            for (int i = 0; i < gk; i++)
                miss *= (G - n - i) > 0 ? (G - n - i) / (double)(G - i) : 0.0;
            return 1.0 - miss;
        }
        scale = (double)gk / G;
        pool = gk * eg;
    }
    for (int i = 0; i < (int)k; i++)
        miss *= (pool - e - i) > 0 ? (pool - e - i) / (pool - i) : 0.0;
    return scale * (1.0 - miss);
}

/* Shared experts: a dense gated MLP of shared_ffn_hidden on every token. */
static void mb_step__shared_experts(struct mb_build *b, struct mb_oplist *l, double T, double up, int graphed, int frozen)
{
    double fs = (double)b->m->shared_ffn_hidden / b->s->tp;
    int h = b->m->hidden;
    unsigned mod = MB_RCM_SHARED_EXPERTS;
    mb_ops_gemm(b, l, "shared_fc1", MB_CAT_DENSE, mod, graphed, T, up * fs, h, 0, frozen);
    mb_ops_mem(b, l, "shared_act", MB_CAT_DENSE, mod, graphed, (up + 1) * T * fs * BF16, up * T * fs * BF16);
    mb_ops_gemm(b, l, "shared_fc2", MB_CAT_DENSE, mod, graphed, T, h, fs, T * fs * BF16, frozen);
}

static double mb_step__up(const struct mb_model *m)
{
    return m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU ? 2.0 : 1.0;
}

/* Dense MLP block: pre-norm, TP all-gather, fc1, activation, fc2, TP
 * reduce-scatter, residual add. */
static void mb_step__dense(struct mb_build *b, struct mb_oplist *l, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    int tp = s->tp, h = m->hidden;
    double T = (double)s->micro_batch_size * s->seq_length / s->cp, Tsp = mb_ops_sp_tokens(s, T), up = mb_step__up(m);
    int g = mb_ops_region(b, (s->cuda_graph & (MB_CG_MLP | MB_CG_LAYER)) != 0);
    double f = (double)m->ffn_hidden / tp;
    b->cur_region = g;
    mb_ops_norm(b, l, "pre_mlp_layernorm", MB_CAT_DENSE, g, Tsp, h);
    double ag = mb_precision_gather_bytes(&s->prec); /* TE gathers fc1's input quantized */
    mb_net_ring(b, l, "tp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, T * h * ag, s->overlap_tp_comm);
    mb_ops_gemm(b, l, "linear_fc1", MB_CAT_DENSE, MB_RCM_MLP, g, T, up * f, h, Tsp * h * BF16, frozen);
    mb_net_wgrad_gather(b, l, b->g_tp, T * h * ag, frozen);
    mb_ops_mem(b, l, "mlp_act", MB_CAT_DENSE, MB_RCM_MLP, g, (up + 1) * T * f * BF16, up * T * f * BF16);
    mb_ops_gemm(b, l, "linear_fc2", MB_CAT_DENSE, MB_RCM_MLP, g, T, h, f, T * f * BF16, frozen);
    mb_net_ring(b, l, "tp reducescatter", MB_CK_TP, MB_COLL_REDUCE_SCATTER, b->g_tp, T * h * BF16, s->overlap_tp_comm);
    mb_ops_mem(b, l, "bias_dropout_add", MB_CAT_DENSE, 0, g, 3 * Tsp * h * BF16, mb_ops_dropout_mask(s, Tsp * h));
    b->cur_region = 0;
}

/* The MoE block's CUDA-graph regions and sizes. */
struct mb_moe {
    int g_router, g_pre, g_moe, g_tail;
    double Tm;        /* tokens entering the router on this rank (sequence-sharded) */
    double copies;    /* routed token copies leaving this rank */
    double recv;      /* copies this rank's experts process (most loaded rank) */
    double groups;    /* local experts */
    double tokb;      /* dispatched bytes per token (BF16) */
    double perm_bytes; /* permute / unpermute bytes */
    int flex;         /* DeepEP / HybridEP */
};

/* The measured scale-out rate that prices a HybridEP dispatch (FP8 or BF16
 * tokens) or combine (mb_net_flex); -1 for DeepEP, which has no H100
 * inter-node measurement (docs/calibration.md, links). */
static int mb_step__flex_kind(const struct mb_build *b, const struct mb_moe *x, int combine)
{
    if (b->s->dispatcher != MB_DISP_HYBRIDEP)
        return -1;
    if (combine)
        return MB_CALIB_FLEX_COMBINE;
    (void)x;
    return MB_CALIB_FLEX_DISPATCH; /* BF16 tokens (mb__moe) */
}

/* DeepEP/HybridEP dispatch bytes: *nv inside the NVLink domain, *nic across
 * it. They send a token once per destination rank (the receiver expands it
 * to its local experts), and across the scale-out fabric once per
 * destination domain, then fan it out over NVLink; Megatron's alltoall
 * dispatcher sends one copy per routed expert (mb__dispatch). */
static void mb_step__flex_bytes(const struct mb_build *b, const struct mb_moe *x, double *nv, double *nic)
{
    const struct mb_model *m = b->m;
    struct mb_group g = b->g_ep;
    double imb = b->route_imbalance, E = m->num_experts;
    double p_rank = mb_moe_p_hit(m, E / b->s->ep);
    *nv = x->Tm * x->tokb * (g.local - 1) * p_rank * imb;
    *nic = 0;
    if (g.domains > 1) {
        double D = g.domains, p_dom = mb_moe_p_hit(m, E / D);
        *nic = x->Tm * x->tokb * (D - 1) * p_dom * imb;
        /* an arriving token goes on to the other hit ranks of its domain:
         * (local - 1) * p_rank / p_dom of them on average */
        if (p_dom > 0)
            *nv += *nic * (g.local - 1) * p_rank / p_dom;
    }
}

/* Router, its softmax/top-k, and the permute of the routed copies. */
static void mb_step__router(struct mb_build *b, struct mb_oplist *l, const struct mb_moe *x, int frozen)
{
    int h = b->m->hidden, E = b->m->num_experts;
    b->cur_region = x->g_router;
    mb_ops_norm(b, l, "pre_mlp_layernorm", MB_CAT_DENSE, x->g_router, x->Tm, h);
    mb_ops_gemm(b, l, "router", MB_CAT_DISPATCH, 0, x->g_router, x->Tm, E, h, 0, frozen);
    mb_ops_mem(b, l, "router_topk", MB_CAT_DISPATCH, 0, x->g_router, 3 * x->Tm * E * 4.0, x->Tm * E * 4.0);
    /* Megatron-Core router (moe/router.py, moe_utils.py topk_softmax_with_capacity,
     * switch_load_balancing_loss_func), unfused: softmax, topk, two zeros+scatter
     * for the routing map and probs, tokens-per-expert sum and the aux-loss
     * products/sums: ~12 kernels forward, ~8 backward (an estimate from the
     * op sequence). --moe-router-fusion runs TE's three fused kernels instead,
     * each with its backward (transformer_engine/pytorch/router.py:
     * fused_topk_with_score_function, fused_compute_score_for_moe_aux_loss,
     * fused_moe_aux_loss), over the same fp32 scores: 3 and 3 */
    l->op[l->n - 1].kf = b->s->router_fusion ? 3 : 12;
    l->op[l->n - 1].kb = b->s->router_fusion ? 3 : 8;
    b->cur_region = x->g_pre;
    /* permute (perm_bytes, mb__moe): the routed copies written from the tokens
     * read once; its backward is the inverse gather of the gradients, the same
     * bytes */
    mb_ops_mem_sym(b, l, "permute", MB_CAT_DISPATCH, 0, x->g_pre, x->perm_bytes, 0);
    /* dispatcher preprocess (token counts per expert, their all-gather over EP)
     * + fused permute (TE moe_permute: row-id map and the gather): ~5 forward,
     * 1 backward (the unpermute of the gradient). Unfused (moe_utils.permute,
     * fused=False): the routing map transposed, an arange, masked_select of the
     * token indices and of the probs (a scan, a nonzero and a gather each), the
     * probs transposed and index_select: ~10 kernels beside the ~3 of the
     * preprocess; backward index_select's zeros + index_add: 2 */
    l->op[l->n - 1].kf = x->perm_bytes > 0 && !b->s->permute_fusion ? 13 : 5;
    l->op[l->n - 1].kb = x->perm_bytes > 0 && !b->s->permute_fusion ? 2 : 1;
}

/* The EP dispatch: an all-gather of the tokens (allgather dispatcher) or an
 * all-to-all (alltoall, DeepEP, HybridEP) after a device-to-host sync. */
static void mb_step__dispatch(struct mb_build *b, struct mb_oplist *l, const struct mb_moe *x)
{
    const struct mb_scenario *s = b->s;
    b->cur_region = x->g_tail;
    if (s->ep <= 1)
        return;
    if (s->dispatcher == MB_DISP_ALLGATHER) {
        mb_net_ring(b, l, "ep dispatch", MB_CK_EP, MB_COLL_ALL_GATHER, b->g_ep, x->Tm * s->ep * x->tokb, 0);
        return;
    }
    int n0 = l->n;
    if (x->flex) {
        double nv, nic;
        mb_step__flex_bytes(b, x, &nv, &nic);
        mb_net_flex(b, l, "ep dispatch", b->g_ep, nv, nic, mb_step__flex_kind(b, x, 0));
    } else { /* one copy per routed expert, 1/ep of them to each rank (itself included) */
        mb_net_a2a(b, l, "ep dispatch", MB_CK_EP, b->g_ep, x->copies * x->tokb * b->route_imbalance);
    }
    /* AlltoAll-V needs the split sizes on the host: the dispatcher copies
     * the token counts device-to-host and synchronises before the
     * all-to-all (MoEAlltoAllTokenDispatcher cuda_sync_point); DeepEP and
     * HybridEP likewise wait for the receive count in their normal mode */
    if (l->n > n0)
        l->op[l->n - 1].host_sync = 1;
}

/* ETP all-gather / reduce-scatter of the dispatched tokens over the ETP group. */
static void mb_step__etp(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_coll_op op,
                    const struct mb_moe *x)
{
    int etp = b->s->etp;
    if (etp > 1)
        mb_net_ring(b, l, name, MB_CK_TP, op, mb_step_group(etp, 1, b->s->system.nvlink_domain),
                    x->copies * etp * x->tokb, 0);
}

/* The experts' activation without Megatron's fused kernels (bias_activation_fusion off;
 * TEGroupedMLP.forward bias_act_func, NVIDIA/Megatron-LM@cf39a4dd
 * megatron/core/transformer/moe/experts.py): act(x) * probs in eager PyTorch, then .to(bf16),
 * one kernel per PyTorch op; n = tokens x f elements, probs fp32 [tokens, 1].
 * Time, bytes per element of the f-wide output (read + write):
 *  - GELU forward: gelu 2+2, the probs product (fp32 result) 2+4, the cast 4+2 = 16 B, 3
 *    kernels; backward: the cast's gradient up 2+4, grad * probs 4+4 and its cast to bf16
 *    4+2, grad * act for the probs gradient 4+2+4 and its sum over f 4, gelu backward
 *    2+2+2 = 40 B, 6 kernels.
 *  - gated (glu: silu(x1) * (x2 + offset)): forward silu 2+2, the offset add 2+2, their
 *    product 2+2+2, then the probs product and cast as above = 26 B, 5 kernels; backward
 *    the probs part as above (28 B), the product's two gradients 2 x (2+2+2), silu backward
 *    2+2+2 and the chunk's concatenation of the two halves 4+4 = 60 B, 9 kernels.
 * (The fused kernels move (up + 1) x 2 B forward and twice that backward.)
 * Memory: autograd keeps, besides the fc1 output x: GELU -- its output (the probs product
 * saves it for the probs gradient); gated -- silu(x1), x_linear + offset and their product
 * (2f + 3f in all). The product is fp32 (probs are fp32), so its backward holds three fp32
 * [tokens, f] tensors: the incoming gradient cast up, the gradient to the activation and
 * the probs gradient before its sum over f. */
static void mb_step__eager_act(struct mb_build *b, struct mb_op *o, double up, double n)
{
    int gated = up > 1;
    o->bytes_f = (gated ? 26 : 16) * n;
    o->bytes_b = (gated ? 60 : 40) * n;
    o->fwd = mb_calib_membound(b->cal, o->bytes_f);
    o->bwd = o->bwd_dgrad_only = mb_calib_membound(b->cal, o->bytes_b);
    o->kf = gated ? 5 : 3;
    o->kb = gated ? 9 : 6;
    o->saved += (gated ? 3.0 : 1.0) * n * BF16;
    o->bwd_ws = 3 * 4.0 * n;
}

/* Under a quantized recipe TEGroupedMLP copies its input to per-expert row counts aligned for
 * the FP8/FP4 GEMMs and its output back (TE Fp8Padding / Fp8Unpadding: _Fp8Padding.forward
 * allocates the padded tensor and runs fused_multi_row_padding whatever the counts;
 * NVIDIA/Megatron-LM@cf39a4dd megatron/core/transformer/moe/experts.py
 * quantization_padding / quantization_unpadding), except behind HybridEP, which pads in its
 * dispatch. Each copy reads and writes the received tokens once; its backward is the inverse
 * copy of the gradient (the memory side is mb__fwd_ws's moment A). */
static int mb_step__fp8_padding(const struct mb_build *b)
{
    return b->s->prec.quantize && !(b->s->ep > 1 && b->s->dispatcher == MB_DISP_HYBRIDEP);
}

/* The expert MLP: grouped fc1, activation, grouped fc2 (TEGroupedMLP). */
static void mb_step__experts(struct mb_build *b, struct mb_oplist *l, const struct mb_moe *x)
{
    int h = b->m->hidden;
    double fe = (double)b->m->moe_ffn_hidden / b->s->etp, up = mb_step__up(b->m), tpg = x->recv / x->groups;
    double pad = mb_step__fp8_padding(b) ? 2 * x->recv * h * BF16 : 0;
    mb_step__etp(b, l, "etp allgather", MB_COLL_ALL_GATHER, x);
    if (pad > 0)
        mb_ops_mem_sym(b, l, "fp8_padding", MB_CAT_EXPERTS, MB_RCM_MOE, x->g_moe, pad, 0);
    mb_ops_grouped(b, l, "expert_fc1", x->g_moe, x->groups, tpg, up * fe, h, x->recv * h * BF16);
    /* moe_act recompute checkpoints the activation alone (CheckpointWithoutOutput around bias_act_func,
     * NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/moe/experts.py TEGroupedMLP.forward): its
     * input, the fc1 output, stays saved; its output, fc2's saved input, is freed */
    mb_ops_mem(b, l, "expert_act", MB_CAT_EXPERTS, MB_RCM_MOE_ACT, x->g_moe, (up + 1) * x->recv * fe * BF16,
               up * x->recv * fe * BF16);
    l->op[l->n - 1].rc_kept = up * x->recv * fe * BF16;
    l->op[l->n - 1].rc_keeps = MB_RCM_MOE_ACT;
    if (!b->s->bias_act_fusion)
        mb_step__eager_act(b, &l->op[l->n - 1], up, x->recv * fe);
    mb_ops_grouped(b, l, "expert_fc2", x->g_moe, x->groups, tpg, h, fe, x->recv * fe * BF16);
    l->op[l->n - 1].rc_frees = MB_RCM_MOE_ACT;
    if (pad > 0)
        mb_ops_mem_sym(b, l, "fp8_unpadding", MB_CAT_EXPERTS, MB_RCM_MOE, x->g_moe, pad, 0);
    mb_step__etp(b, l, "etp reducescatter", MB_COLL_REDUCE_SCATTER, x);
}

/* The combine mirrors the dispatch, in BF16 (a flex combine at its own
 * measured scale-out rate). */
static void mb_step__combine(struct mb_build *b, struct mb_oplist *l, const struct mb_moe *x)
{
    b->cur_region = x->g_tail;
    if (b->s->ep <= 1)
        return;
    int i = l->n - 1;
    while (i >= 0 && !(l->op[i].type == MB_OP_COMM && l->op[i].ck == MB_CK_EP))
        i--;
    if (i < 0)
        return;
    struct mb_op c = l->op[i];
    double tokb_c = b->m->hidden * BF16;
    c.name = "ep combine";
    c.host_sync = 0;
    c.parallel = 0;
    c.bytes_nv *= tokb_c / x->tokb;
    c.bytes_nic *= tokb_c / x->tokb;
    if (x->flex) {
        mb_net_flex(b, l, c.name, b->g_ep, c.bytes_nv, c.bytes_nic, mb_step__flex_kind(b, x, 1));
        return;
    }
    mb_ops_push(l, &c);
}

/*
 * Token tensors of the MoE block alive in its forward beside the saved ones, each [tokens, h]
 * bf16 and counted in tokens (NVIDIA/Megatron-LM@cf39a4dd megatron/core/transformer/moe/
 * moe_layer.py MoELayer.forward, token_dispatcher.py, experts.py TEGroupedMLP.forward):
 *  - locals, alive until the forward returns (custom_forward and routed_experts_compute keep
 *    them): AllToAll/AllGather the permuted copies and, with more than one local expert, the
 *    dispatched copies (sort_chunks_by_idxs makes the expert input another tensor); DeepEP the
 *    received tokens (once per token and rank). Under a quantized recipe TE saves only an FP8
 *    columnwise copy of the expert input (in saved), so the bf16 expert input is one more local.
 *    Megatron-Core's DeepEP and HybridEP dispatch bf16 (an FP8 payload, moe_dispatch_fwd_dtype
 *    mxfp8, exists only for the 'ncclep' backend, NVIDIA/Megatron-LM@7afe0319), so this holds
 *    for them too, although mb__moe prices a flex dispatch of FP8 tokens.
 *  - then the larger of two moments: (A) the end of the experts -- their output; under a quantized
 *    recipe with per-expert token counts the dispatcher does not align (all but HybridEP, which
 *    pads in its dispatch), TE's Fp8Padding copies the input to multiples of 16 rows and
 *    Fp8Unpadding copies the output back: padded input, padded output and unpadded output (TE
 *    transformer_engine/pytorch/module/fp8_padding.py); (B) the combine chain, where each step
 *    allocates its output while its input is alive: AllToAll the expert output (or its unsorted
 *    copy) and the combine output; DeepEP the expert output and the unpermuted tokens (received
 *    size); HybridEP, whose dispatch output is already the permuted expert input, the expert
 *    output and the combine output [T, h]; with ep 1 the expert output and the unpermuted tokens.
 *  - the shared experts' output, added at the combine.
 * Routed tensors times drop-and-pad's capacity factor.
 */
static void mb_step__fwd_ws(const struct mb_build *b, struct mb_oplist *l, const struct mb_moe *x)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    double hb = m->hidden * BF16, pad = s->pad_to_capacity && s->capacity_factor > 1 ? s->capacity_factor : 1;
    int q = s->prec.quantize != 0, ep = s->ep > 1, disp = s->dispatcher;
    double R = x->Tm * s->ep * mb_moe_p_hit(m, (double)m->num_experts / s->ep) * b->route_imbalance;
    double locals = q * x->recv, A, B, big = fmax(x->recv, x->Tm);
    if (ep && disp == MB_DISP_DEEPEP) {
        locals += R;
        B = x->recv + R;
        big = fmax(big, R);
    } else if (ep && disp == MB_DISP_HYBRIDEP) {
        B = x->recv + x->Tm;
    } else if (ep) {
        locals += x->copies + (x->groups > 1 ? x->recv : 0);
        B = 2 * x->recv;
        big = fmax(big, x->copies);
    } else {
        B = x->recv + x->Tm;
    }
    A = (q && !(ep && disp == MB_DISP_HYBRIDEP) ? 3 : 1) * x->recv;
    double tok = (locals + fmax(A, B)) * pad + (m->shared_ffn_hidden > 0 ? x->Tm : 0);
    l->fwd_ws = tok * hb;
    l->fwd_ws_block = big * pad * hb;
}

static void mb_step__moe(struct mb_build *b, struct mb_oplist *l, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    double T = (double)s->micro_batch_size * s->seq_length / s->cp, up = mb_step__up(m);
    struct mb_moe x = {0};
    /* TE-scoped graphs capture the router and (with moe_preprocess) the
     * dispatcher's preprocessing up to its host sync as one graph per layer;
     * `moe` (drop-and-pad only) captures the experts */
    x.g_router = mb_ops_region(b, (s->cuda_graph & (MB_CG_MOE_ROUTER | MB_CG_LAYER)) != 0);
    x.g_pre = (s->cuda_graph & (MB_CG_MOE_PREPROCESS | MB_CG_LAYER)) ? (x.g_router ? x.g_router : mb_ops_region(b, 1))
                                                                     : 0;
    x.g_moe = mb_ops_region(b, (s->cuda_graph & (MB_CG_MOE | MB_CG_LAYER)) != 0);
    x.g_tail = (s->cuda_graph & MB_CG_LAYER) ? b->layer_region : 0;
    /* tokens stay sequence-sharded (T/tp per rank) through the dispatcher */
    x.Tm = T / s->tp;
    x.copies = x.Tm * m->topk;
    x.recv = x.copies * s->etp * b->route_imbalance;
    x.groups = (double)m->num_experts / s->ep;
    x.flex = s->ep > 1 && (s->dispatcher == MB_DISP_HYBRIDEP || s->dispatcher == MB_DISP_DEEPEP);
    /* HybridEP with --moe-permute-fusion-into-hybridep writes the received
     * tokens in expert order itself, so no separate pass is left */
    if (x.flex && s->dispatcher == MB_DISP_HYBRIDEP && s->hybridep_permute_fusion)
        x.perm_bytes = 0;
    else if (x.flex) /* the receiver expands the tokens it got (once per rank, mb__flex_bytes) to its
                      * experts' copies: each read once, each copy written */
        x.perm_bytes = (x.Tm * s->ep * mb_moe_p_hit(m, (double)m->num_experts / s->ep) * b->route_imbalance +
                        x.recv) * m->hidden * BF16;
    else /* TE's fused permute (moe_permute_fusion) reads each token once and writes its copies */
        x.perm_bytes = (x.Tm + x.copies) * m->hidden * BF16;
    /* unfused (moe_utils.permute / unpermute, fused=False): index_select reads a token row for every copy
     * it writes, and the unpermute's scatter_add_ adds every copy into a zeroed output; the fused
     * kernels' bytes above are the tokens read once and the copies written once */
    if (x.perm_bytes > 0 && !s->permute_fusion)
        x.perm_bytes = 2 * (x.flex ? x.recv : x.copies) * m->hidden * BF16;
    /* dispatch and combine: BF16 tokens under every recipe. DeepEP and HybridEP
     * can dispatch FP8 (hardware.md B.4), but Megatron-Core hands them the BF16
     * hidden states and quantizes in the expert GEMM (_DeepepManager.dispatch and
     * _HybridEPManager.dispatch pass hidden_states as they are; only the ncclep
     * backend has a dispatch quantization recipe, moe_dispatch_fwd_dtype:
     * NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py
     * @d98e8a64dd) */
    x.tokb = m->hidden * BF16;
    mb_step__router(b, l, &x, frozen);
    mb_step__dispatch(b, l, &x);
    b->cur_region = x.g_moe;
    /* --moe-shared-expert-overlap: the shared experts run while the dispatch
     * all-to-all is in flight (Megatron-Core MoE shared-expert overlap) */
    int shared_early = s->shared_expert_overlap && m->shared_ffn_hidden > 0 && s->ep > 1 && l->n > 0 &&
                       l->op[l->n - 1].type == MB_OP_COMM && l->op[l->n - 1].ck == MB_CK_EP;
    if (shared_early) {
        l->op[l->n - 1].parallel = 1;
        mb_step__shared_experts(b, l, T, up, x.g_moe, frozen);
    }
    /* AlltoAll-V delivers each source rank's tokens grouped by that rank, so
     * with several local experts the dispatcher re-sorts the received copies
     * by expert (permutation_2, sort_chunks_by_idxs) and back before the
     * combine: one read and one write of every received copy each way
     * (token_dispatcher.py MoEAlltoAllTokenDispatcher @d98e8a64dd; DeepEP and
     * HybridEP return them grouped by expert) */
    double sort_bytes = s->dispatcher == MB_DISP_ALLTOALL && s->ep > 1 && x.groups > 1
                            ? 2 * x.recv * m->hidden * BF16 : 0;
    if (sort_bytes > 0)
        mb_ops_mem_sym(b, l, "sort_chunks", MB_CAT_DISPATCH, 0, x.g_moe, sort_bytes, 0);
    mb_step__experts(b, l, &x);
    if (sort_bytes > 0)
        mb_ops_mem_sym(b, l, "unsort_chunks", MB_CAT_DISPATCH, 0, x.g_moe, sort_bytes, 0);
    mb_step__combine(b, l, &x);
    /* unpermute: a scatter-add of the copies back to their tokens (Megatron-Core
     * applies the routing probs inside the expert activation, so nothing of this
     * size is saved here); backward gathers the gradient per copy: same bytes */
    double unperm_bytes = x.perm_bytes + (x.perm_bytes > 0 && !s->permute_fusion ? x.Tm * m->hidden * BF16 : 0);
    mb_ops_mem_sym(b, l, "unpermute", MB_CAT_DISPATCH, 0, x.g_tail, unperm_bytes, x.copies * 4.0);
    l->op[l->n - 1].kb = 2; /* fused unpermute backward: gradient gather + probs gradient */
    if (x.perm_bytes > 0 && !s->permute_fusion)
        l->op[l->n - 1].kf = 2; /* unfused: zeros + scatter_add_ (the zeros' T x h write counted above) */
    if (m->shared_ffn_hidden > 0 && !shared_early)
        mb_step__shared_experts(b, l, T, up, x.g_moe, frozen);
    mb_ops_mem(b, l, "bias_dropout_add", MB_CAT_DENSE, 0, x.g_tail, 3 * x.Tm * m->hidden * BF16,
               mb_ops_dropout_mask(b->s, x.Tm * m->hidden));
    b->cur_region = 0;
    mb_step__fwd_ws(b, l, &x);
}

void mb_ops_ffn(struct mb_build *b, struct mb_oplist *l, enum mb_ffn ffn, int frozen)
{
    if (ffn == MB_FFN_DENSE)
        mb_step__dense(b, l, frozen);
    else if (ffn == MB_FFN_MOE)
        mb_step__moe(b, l, frozen);
}
