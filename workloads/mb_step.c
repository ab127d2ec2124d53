/*
 * mb_step.c -- build and simulate the task graph of one training step.
 *
 * Approximations (each refined by later issues):
 *  - One representative rank per pipeline stage; DP/TP/CP/EP peers behave
 *    identically (balanced routing) and are not simulated separately.
 *  - Each simulated rank has one NVLink transmit link and one NIC transmit
 *    link (capacities = line rate x calibrated achieved fraction); concurrent
 *    collectives on a rank share them max-min fairly in the engine.
 *  - Collectives are costed by the bytes a rank sends: ring all-gather /
 *    reduce-scatter hierarchically (NVLink domain first, then (n-1)/n of the
 *    1/local share over the NIC); all-to-all as direct pairwise traffic split
 *    by destination domain; HybridEP/DeepEP send a token over the scale-out
 *    fabric once per destination domain.
 *  - Kernel time = calibrated GPU time. Each pipeline stage's rank has a host
 *    thread (a serial stream) that launches every kernel in program order:
 *    launch_s of host time per kernel, one launch per captured CUDA-graph
 *    region; a GPU op cannot start before its launch, and the host waits for
 *    the GPU at a device-to-host sync (the token counts before an EP
 *    dispatch). Kernels per op are counted from the Megatron-Core /
 *    Transformer Engine code paths (see mb__kernels comments).
 *  - Schedules: 1F1B and Megatron's interleaved 1F1B (VPP), executed on the
 *    timeline; p2p activations on the real links.
 */
#include "step_int.h"
#include "mb_coll.h"
#include "mb_fabric.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "mb_engine.h"

#define MB_MAX_STAGES 64
#define MB_VISION_RANKS 256 /* data-parallel ranks whose images are drawn */
#define BF16 2.0 /* bytes per bf16 element */

static const char *const mb__cat_names[MB_CAT_COUNT] = {
    "vision_encoder", "projector", "decoder_attention", "moe_experts", "dispatch_combine_compute",
    "dense_other", "recompute", "optimizer", "exposed_tp_comm", "exposed_cp_comm", "exposed_ep_comm",
    "exposed_pp_comm", "exposed_dp_comm", "exposed_fsdp_comm", "exposed_host_launch", "pipeline_bubble"};

const char *mb_cat_name(enum mb_cat c) { return c < MB_CAT_COUNT ? mb__cat_names[c] : "?"; }

static const enum mb_cat mb__comm_cat[MB_CK_COUNT] = {MB_CAT_COMM_TP, MB_CAT_COMM_CP, MB_CAT_COMM_EP,
                                                       MB_CAT_COMM_PP, MB_CAT_COMM_DP, MB_CAT_COMM_FSDP};

/* ---- group placement ---------------------------------------------------- */

/* A group of `size` ranks whose members are `stride` ranks apart in Megatron's
 * rank order (TP fastest, then CP, then DP, then PP). `local` members share an
 * NVLink domain of `dom` GPUs; `domains` = size / local. */
struct mb_group {
    int size, local, domains;
    int stride; /* rank distance between consecutive members */
};

static struct mb_group mb__group(int size, int stride, int dom)
{
    if (size <= 1)
        return (struct mb_group){1, 1, 1, stride};
    struct mb_group g = {size, mb_scenario_group_local(size, stride, dom), 1, stride};
    g.domains = (size + g.local - 1) / g.local;
    return g;
}

/* ---- build context ------------------------------------------------------ */

struct mb_build {
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
    /* per stage resources */
    int comp[MB_MAX_STAGES];
    int cstream[MB_MAX_STAGES][MB_CK_COUNT];
    int l_nv[MB_MAX_STAGES], l_nic[MB_MAX_STAGES];
    int host[MB_MAX_STAGES];  /* host launch thread of each stage's rank */
    int *hostdep;             /* [task] host launch task a GPU task waited for, or -1 */
    /* activation memory counter per stage (time, bytes), for the trace */
    double *mem_t[MB_MAX_STAGES], *mem_v[MB_MAX_STAGES];
    int mem_n[MB_MAX_STAGES];
    size_t hostdep_n, hostdep_cap;
    /* task bookkeeping for the breakdown */
    int last_comp[MB_MAX_STAGES];
};

static void mb__push(struct mb_oplist *l, const struct mb_op *o)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->op = mb_realloc(l->op, (size_t)l->cap * sizeof *l->op);
    }
    l->op[l->n++] = *o;
}

/* CUDA-graph region for a module about to be built: 0 when the module is not
 * captured (`on` = 0), the layer's region for whole-layer graphs, else a new id
 * (one graph per captured module per layer, as TE's make_graphed_callables
 * captures each scoped module of each layer separately). */
static int mb__region(struct mb_build *b, int on)
{
    if (!on)
        return 0;
    if (b->s->cuda_graph & MB_CG_LAYER)
        return b->layer_region;
    return ++b->region_seq;
}

/* GEMM C[M,N] = A[M,K] B[K,N] at precision p (quantized: an FP8/FP4 recipe's
 * GEMM, with its cast kernels and recipe time scale): forward and backward
 * (dgrad + wgrad) seconds. */
static void mb__gemm_p(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, unsigned mod, int graphed,
                       enum mb_prec p, int quantize, double M, double N, double K, double saved, int frozen)
{
    double sc = quantize ? b->gemm_scale : 1.0;
    struct mb_op o = {0};
    o.type = MB_OP_COMP;
    o.cat = cat;
    o.module = mod;
    o.fwd = sc * mb_calib_gemm(b->cal, p, M, N, K);
    double dgrad = sc * mb_calib_gemm(b->cal, p, M, K, N);
    double wgrad = sc * mb_calib_gemm(b->cal, p, K, N, M);
    o.bwd = frozen ? dgrad : dgrad + wgrad;
    o.bwd_dgrad_only = dgrad;
    o.region = graphed;
    /* TE Linear: one cuBLASLt GEMM forward; dgrad + wgrad backward (main-grad
     * accumulation fused into wgrad); fp8 adds one cast(-transpose) kernel each way */
    o.kf = 1 + (quantize ? 1 : 0);
    o.kb = 2 + (quantize ? 1 : 0);
    /* low-precision recipes keep the quantized copy of the GEMM input for wgrad
     * (Transformer Engine saves the fp8 tensor, 1 byte instead of 2) */
    o.saved = quantize ? saved / 2 : saved;
    if (quantize) {
        /* fp8/fp4 recipes quantize every GEMM operand that is not already low
         * precision: the activation input in forward (read bf16, write 1 byte)
         * and the output gradient in backward (quantized once, used by dgrad and
         * wgrad, plus its transposed copy for wgrad). */
        o.fwd += mb_calib_membound(b->cal, M * K * (BF16 + 1.0));
        double q = mb_calib_membound(b->cal, M * N * (BF16 + 2.0));
        o.bwd += q;
        o.bwd_dgrad_only += q;
    }
    mb__push(l, &o);
}

/* A linear layer's GEMM in the scenario's recipe. */
static void mb__gemm(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, unsigned mod, int graphed,
                     double M, double N, double K, double saved, int frozen)
{
    mb__gemm_p(b, l, cat, mod, graphed, b->s->prec.gemm, b->s->prec.quantize, M, N, K, saved, frozen);
}

static void mb__grouped(struct mb_build *b, struct mb_oplist *l, int graphed, double groups, double tpg,
                        double N, double K, double saved)
{
    enum mb_prec p = b->s->prec.gemm;
    struct mb_op o = {0};
    o.type = MB_OP_COMP;
    o.cat = MB_CAT_EXPERTS;
    o.module = MB_RCM_MOE;
    o.fwd = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, tpg, N, K);
    double dgrad = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, tpg, K, N);
    double wgrad = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, K, N, tpg);
    o.bwd = dgrad + wgrad;
    o.bwd_dgrad_only = dgrad;
    o.region = graphed;
    /* TE GroupedLinear (TEGroupedMLP) runs one cuBLAS GEMM per local expert
     * (general_grouped_gemm over num_gemms): E/ep launches forward, dgrad and
     * wgrad per expert backward; fp8 adds one multi-tensor quantize each way */
    o.kf = ceil(groups) + (b->s->prec.quantize ? 1 : 0);
    o.kb = 2 * ceil(groups) + (b->s->prec.quantize ? 1 : 0);
    o.saved = b->s->prec.quantize ? saved / 2 : saved; /* as in mb__gemm */
    if (b->s->prec.quantize) { /* as in mb__gemm */
        o.fwd += mb_calib_membound(b->cal, groups * tpg * K * (BF16 + 1.0));
        double q = mb_calib_membound(b->cal, groups * tpg * N * (BF16 + 2.0));
        o.bwd += q;
        o.bwd_dgrad_only += q;
    }
    mb__push(l, &o);
}

/* Memory-bound op moving `bytes`; backward moves about twice as much. */
static void mb__mem(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, unsigned mod, int graphed,
                    double bytes, double saved)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMP;
    o.cat = cat;
    o.module = mod;
    o.fwd = mb_calib_membound(b->cal, bytes);
    o.bwd = mb_calib_membound(b->cal, 2 * bytes);
    o.bwd_dgrad_only = o.bwd;
    o.saved = saved;
    o.region = graphed;
    o.kf = o.kb = 1; /* one fused elementwise kernel each way (callers override) */
    mb__push(l, &o);
}

/* Memory-bound gather/scatter of `bytes` (permute, unpermute): its backward is
 * the inverse gather, the same bytes. */
static void mb__mem_sym(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, unsigned mod, int graphed,
                        double bytes, double saved)
{
    mb__mem(b, l, cat, mod, graphed, bytes, saved);
    struct mb_op *o = &l->op[l->n - 1];
    o->bwd = o->bwd_dgrad_only = o->fwd;
}

static void mb__attn(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, unsigned mod, int graphed,
                     double flop, double seq, int head_dim, double bh, int causal, double saved)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMP;
    o.cat = cat;
    o.module = mod;
    o.fwd = mb_calib_attn_bh(b->cal, b->s->prec.attn, flop, seq, head_dim, bh, causal, 0);
    /* flash backward recomputes QK^T: 2.5x the forward FLOPs (FlashAttention-2/3 papers' convention) */
    o.bwd = mb_calib_attn_bh(b->cal, b->s->prec.attn, 2.5 * flop, seq, head_dim, bh, causal, 1);
    o.bwd_dgrad_only = o.bwd;
    o.saved = saved;
    o.region = graphed;
    /* flash attention: one forward kernel; backward = preprocess (rowsum dO*O),
     * the main kernel and the dQ fp32->bf16 conversion (FlashAttention-2/3 and
     * cuDNN fused attention all split backward this way) */
    o.kf = 1;
    o.kb = 3;
    mb__push(l, &o);
}

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
static double mb__p_hit(const struct mb_model *m, double e)
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

/* A measured curve of this collective in the scenario's calibration (an
 * nccl-tests table or an imported profile; mb_calib_coll_line): replaces the
 * op's fixed latency by the curve's fixed part and returns the time (s) the
 * op's flows take when alone -- each flow is capped at its bytes / that time,
 * so an uncontended op takes the measured time and contention on the links
 * slows it further. `size` in the nccl-tests convention. 0 = link model only.
 * All-gather and reduce-scatter move the same bytes and answer for each other. */
static double mb__coll_meas(struct mb_build *b, const char *op, struct mb_group g, double size, double *lat)
{
    double a, bw;
    if (g.size <= 1 || !(size > 0))
        return 0;
    if (!mb_calib_coll_line(b->cal, op, g.size, size, &a, &bw) &&
        !(strcmp(op, "allgather") == 0 && mb_calib_coll_line(b->cal, "reducescatter", g.size, size, &a, &bw)))
        return 0;
    *lat = a;
    return size / bw;
}

/* Per-flow rate cap of an op whose flows must take `paced` seconds alone
 * (mb__coll_meas), combined with another cap (0 = none). */
static double mb__cap(double bytes, double paced, double other)
{
    double c = paced > 0 ? bytes / paced : 0;
    return other > 0 && (c <= 0 || other < c) ? other : c;
}

/* Per-rank NVLink and NIC bytes of a ring all-gather / reduce-scatter of a
 * `total`-byte buffer over group g -- NCCL's rings, the same volumes as
 * `mbsim collective` (mb_coll_volume): (n-1)/n of it leaves each rank,
 * 1/local of that on the NIC when g spans domains. Returns the latency: one
 * per-step latency of the slowest hop per step. */
static double mb__ring_volume(const struct mb_build *b, struct mb_group g, double total, double *nv, double *nic)
{
    struct mb_coll_vol v;
    mb_coll_volume(MB_COLL_ALL_GATHER, MB_COLL_ALGO_RING, g.size, g.local, g.domains, total, &v);
    *nv = v.nv;
    *nic = v.nic;
    return mb_coll_vol_latency(&v, b->nv_lat, b->nic_lat, 0);
}

/* Ring all-gather / reduce-scatter of a `total`-byte buffer over group g. */
static void mb__ring(struct mb_build *b, struct mb_oplist *l, enum mb_commk ck, struct mb_group g, double total,
                     int parallel)
{
    if (g.size <= 1 || total <= 0)
        return;
    struct mb_op o = {0};
    o.type = MB_OP_COMM;
    o.ck = ck;
    o.parallel = parallel;
    o.latency = mb__ring_volume(b, g, total, &o.bytes_nv, &o.bytes_nic);
    o.region = b->cur_region; /* NCCL kernels inside a captured module are part of its graph */
    if (ck != MB_CK_CP)
        o.paced = mb__coll_meas(b, "allgather", g, total, &o.latency);
    mb__push(l, &o);
}

/* Scale-out rate left to one rank of an all-to-all over group g when every
 * group sends at once, on an oversubscribed fabric (topology/mb_fabric.h:
 * rail leaves of MB_FABRIC_LEAF_NODES nodes whose uplink carries that many
 * NICs' worth / oversubscription). A fraction x of the rank's NIC bytes goes
 * to peers under other leaves; the symmetric max-min share of the uplink is
 * nic_cap / (oversubscription * x) per NIC, binding when that product
 * exceeds 1. Rings cross a leaf boundary on a single edge per leaf, so only
 * all-to-alls are capped. 0 = no cap. */
static double mb__a2a_nic_cap(const struct mb_build *b, struct mb_group g)
{
    double os = b->s->system.oversubscription;
    if (!(os > 1) || g.domains <= 1 || g.size <= g.local)
        return 0;
    double leaf = (double)b->s->system.gpus_per_node * MB_FABRIC_LEAF_NODES;
    double same = ceil(leaf / (g.stride > 0 ? g.stride : 1)); /* members under the first member's leaf */
    same = fmin(fmax(same, g.local), g.size);
    double x = (g.size - same) / (g.size - g.local);
    return os * x > 1 ? b->nic_cap / (os * x) : 0;
}

/* All-to-all: `bytes` leave this rank spread evenly over the g.size peers.
 * `nccl`: an NCCL all-to-all (Megatron's alltoall dispatcher), which a measured
 * alltoall curve answers; DeepEP/HybridEP run their own kernels (0). */
static void mb__a2a(struct mb_build *b, struct mb_oplist *l, struct mb_group g, double bytes_nv_share,
                    double bytes_nic_share, int nccl)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMM;
    o.ck = MB_CK_EP;
    o.bytes_nv = bytes_nv_share;
    o.bytes_nic = bytes_nic_share;
    o.latency = b->nv_lat + (g.domains > 1 ? b->nic_lat : 0);
    o.region = b->cur_region;
    /* nccl-tests alltoall size = the rank's whole send buffer (g.size/(g.size-1) of what leaves) */
    double leaving = bytes_nv_share + bytes_nic_share;
    if (nccl)
        o.paced = mb__coll_meas(b, "alltoall", g, g.size > 1 ? leaving * g.size / (g.size - 1) : 0, &o.latency);
    o.bound_nic = mb__a2a_nic_cap(b, g);
    if (o.bytes_nv > 0 || o.bytes_nic > 0)
        mb__push(l, &o);
}

/* CP all-to-all of `bytes` (this rank's tokens, all heads) over the CP group:
 * (cp-1)/cp of them leave, split by destination domain. */
static void mb__cp_a2a(struct mb_build *b, struct mb_oplist *l, double bytes)
{
    struct mb_group g = b->g_cp;
    struct mb_op o = {0};
    o.type = MB_OP_COMM;
    o.ck = MB_CK_CP;
    o.bytes_nv = bytes * (g.local - 1) / g.size;
    o.bytes_nic = bytes * (g.size - g.local) / g.size;
    o.latency = b->nv_lat + (g.domains > 1 ? b->nic_lat : 0);
    o.bound_nic = mb__a2a_nic_cap(b, g);
    o.kf = o.kb = 1;
    mb__push(l, &o);
}

/* ---- per-layer op lists ------------------------------------------------- */

static void mb__norm(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, int g, double tok, int h)
{
    /* read + write one activation, plus the input kept for backward */
    mb__mem(b, l, cat, MB_RCM_LAYERNORM, g, 2 * tok * h * BF16, tok * h * BF16);
    l->op[l->n - 1].kb = 2; /* TE (RMS)LayerNorm backward: dx kernel + dgamma reduction */
}

static void mb__mixer(struct mb_build *b, struct mb_oplist *l, enum mb_mixer mix, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    int tp = s->tp;
    double T = (double)s->micro_batch_size * s->seq_length / s->cp; /* tokens on this rank */
    double Tsp = T / tp;
    int h = m->hidden;
    int g = mb__region(b, (s->cuda_graph & (MB_CG_ATTN | MB_CG_LAYER)) != 0);
    enum mb_cat cat = MB_CAT_ATTN;
    double seq = s->seq_length;
    if (mix == MB_MIX_NONE)
        return;
    b->cur_region = g;
    mb__norm(b, l, cat, g, Tsp, h);
    mb__ring(b, l, MB_CK_TP, b->g_tp, T * h * BF16, s->overlap_tp_comm);
    if (mix == MB_MIX_ATTN || mix == MB_MIX_ATTN_SWA || mix == MB_MIX_MLA) {
        int n = m->num_heads;
        double nl = (double)n / tp;
        double dq, dv;
        if (mix == MB_MIX_MLA) {
            dq = m->qk_head_dim + m->qk_rope_head_dim;
            dv = m->v_head_dim;
            if (m->q_lora_rank > 0) {
                mb__gemm(b, l, cat, 0, g, T, m->q_lora_rank, h, Tsp * h * BF16, frozen);
                mb__mem(b, l, cat, MB_RCM_LAYERNORM, g, 2 * T * m->q_lora_rank * BF16, T * m->q_lora_rank * BF16);
                mb__gemm(b, l, cat, MB_RCM_MLA_UP_PROJ, g, T, nl * dq, m->q_lora_rank, T * m->q_lora_rank * BF16,
                         frozen);
            } else {
                mb__gemm(b, l, cat, 0, g, T, nl * dq, h, Tsp * h * BF16, frozen);
            }
            mb__gemm(b, l, cat, 0, g, T, m->kv_lora_rank + m->qk_rope_head_dim, h, 0, frozen);
            mb__mem(b, l, cat, MB_RCM_LAYERNORM, g, 2 * T * m->kv_lora_rank * BF16, T * m->kv_lora_rank * BF16);
            mb__gemm(b, l, cat, MB_RCM_MLA_UP_PROJ, g, T, nl * (m->qk_head_dim + dv), m->kv_lora_rank,
                     T * m->kv_lora_rank * BF16, frozen);
            /* rope on q and k: read + write */
            mb__mem(b, l, cat, MB_RCM_MLA_UP_PROJ, g, 2 * T * nl * (dq + dq + dv) * BF16,
                    T * nl * (dq + dq + dv) * BF16);
        } else {
            int d = m->head_dim, kv = m->num_kv_heads;
            double kvl = kv >= tp ? (double)kv / tp : 1.0; /* KV heads replicate when kv < tp */
            dq = dv = d;
            double nqkv = (nl + 2 * kvl) * d + (m->attn_output_gate ? nl * d : 0);
            mb__gemm(b, l, cat, 0, g, T, nqkv, h, Tsp * h * BF16, frozen);
            mb__mem(b, l, cat, 0, g, 2 * T * nqkv * BF16, T * nqkv * BF16); /* rope (+ qk-norm) */
            /* TE fused RoPE on q and on k; qk-norm adds a norm kernel for each */
            l->op[l->n - 1].kf = l->op[l->n - 1].kb = m->qk_norm ? 4 : 2;
        }
        double ctx = seq / 2; /* causal average context */
        int causal = 1;
        if (mix == MB_MIX_ATTN_SWA && m->swa_window > 0 && m->swa_window < seq) {
            double w = m->swa_window;
            ctx = w - w * (w - 1) / (2 * seq); /* Megatron-Bridge SWA average context */
        }
        double flop = 2.0 * T * ctx * nl * (dq + dv);
        /* CP ring attention: KV blocks pass around the ring beside the compute */
        double kvl_d = mix == MB_MIX_MLA ? nl * (dq + dv) / 2
                                         : (m->num_kv_heads >= tp ? (double)m->num_kv_heads / tp : 1.0) * m->head_dim;
        if (s->cp > 1 && !s->cp_a2a)
            mb__ring(b, l, MB_CK_CP, b->g_cp, T * 2 * kvl_d * BF16 * s->cp, 1);
        /* CP all-to-all (Ulysses): Q, K, V go from sequence-sharded to head-sharded
         * before attention (blocking), the output back after it; each rank sends
         * (cp-1)/cp of its tokens' heads */
        if (s->cp > 1 && s->cp_a2a)
            mb__cp_a2a(b, l, T * (nl * dq + 2 * kvl_d) * BF16);
        /* flash attention keeps its output (counted once, as the output GEMM's input)
         * and the fp32 log-sum-exp per head and token */
        /* one kernel over MBS x heads-per-rank (batch x head) problems */
        mb__attn(b, l, cat, MB_RCM_CORE_ATTN, g, flop, seq, (int)dq, (double)s->micro_batch_size * nl, causal,
                 T * nl * 4.0);
        if (s->cp > 1 && s->cp_a2a)
            mb__cp_a2a(b, l, T * nl * dv * BF16);
        mb__gemm(b, l, cat, 0, g, T, h, nl * dv, T * nl * dv * BF16, frozen);
    } else if (mix == MB_MIX_GDN) {
        double qd = (double)m->gdn_k_heads * m->gdn_k_dim / tp, vd = (double)m->gdn_v_heads * m->gdn_v_dim / tp;
        double nv = (double)m->gdn_v_heads / tp;
        double P = 2 * qd + 2 * vd + 2 * nv;
        mb__gemm(b, l, cat, 0, g, T, P, h, Tsp * h * BF16, frozen);
        mb__mem(b, l, cat, 0, g, 2 * T * (2 * qd + vd) * BF16 * (m->gdn_conv > 0 ? 1 : 1), T * (2 * qd + vd) * BF16);
        /* chunked delta rule: 4 n_v d_v^2 FLOP-pairs per token (Megatron G_lin term), run as batched GEMMs */
        mb__gemm(b, l, cat, 0, g, T, 4 * nv * m->gdn_v_dim, m->gdn_v_dim, T * vd * BF16, 1);
        mb__mem(b, l, cat, MB_RCM_GDN_NORM_OUT, g, 2 * T * vd * BF16, T * vd * BF16);
        mb__gemm(b, l, cat, 0, g, T, h, vd, T * vd * BF16, frozen);
    } else if (mix == MB_MIX_MAMBA) {
        /* Mamba-2 mixer (Megatron MambaMixer): in_proj to z, x, B, C, dt; causal
         * conv1d over x, B, C; the SSD chunked scan; gated RMSNorm; out_proj.
         * d_inner = heads x head_dim (hybrid_flops' d_in) */
        double din = (double)m->mamba_heads * m->mamba_head_dim / tp;
        double gn = 2.0 * m->mamba_groups * m->mamba_state / tp;
        double proj = 2 * din + gn + (double)m->mamba_heads / tp;
        mb__gemm(b, l, cat, 0, g, T, proj, h, Tsp * h * BF16, frozen);
        /* causal_conv1d: read and write the x, B, C channels */
        mb__mem(b, l, cat, 0, g, 2 * T * (din + gn) * BF16, T * (din + gn) * BF16);
        /* SSD chunked scan, 7 T d_in state FLOP (Megatron hybrid_flops), matmul-like;
         * the mamba_ssm Triton kernels run in BF16 whatever the GEMM recipe */
        mb__gemm_p(b, l, cat, 0, g, MB_PREC_BF16, 0, T, din, 3.5 * m->mamba_state, T * din * BF16, 1);
        /* gated RMSNorm: read y and z, write the normalized output */
        mb__mem(b, l, cat, 0, g, 3 * T * din * BF16, T * din * BF16);
        mb__gemm(b, l, cat, 0, g, T, h, din, T * din * BF16, frozen);
    }
    mb__ring(b, l, MB_CK_TP, b->g_tp, T * h * BF16, s->overlap_tp_comm);
    mb__mem(b, l, cat, 0, g, 3 * Tsp * h * BF16, Tsp * h); /* residual add + 1-byte dropout mask */
    b->cur_region = 0;
}

/* Shared experts: a dense gated MLP of shared_ffn_hidden on every token. */
static void mb__shared_experts(struct mb_build *b, struct mb_oplist *l, double T, double up, int graphed, int frozen)
{
    double fs = (double)b->m->shared_ffn_hidden / b->s->tp;
    int h = b->m->hidden;
    mb__gemm(b, l, MB_CAT_DENSE, MB_RCM_SHARED_EXPERTS, graphed, T, up * fs, h, 0, frozen);
    mb__mem(b, l, MB_CAT_DENSE, MB_RCM_SHARED_EXPERTS, graphed, (up + 1) * T * fs * BF16, up * T * fs * BF16);
    mb__gemm(b, l, MB_CAT_DENSE, MB_RCM_SHARED_EXPERTS, graphed, T, h, fs, T * fs * BF16, frozen);
}

static void mb__ffn(struct mb_build *b, struct mb_oplist *l, enum mb_ffn ffn, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    int tp = s->tp;
    double T = (double)s->micro_batch_size * s->seq_length / s->cp;
    double Tsp = T / tp;
    int h = m->hidden;
    int gated = m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU;
    double up = gated ? 2.0 : 1.0;
    if (ffn == MB_FFN_NONE)
        return;
    if (ffn == MB_FFN_DENSE) {
        int g = mb__region(b, (s->cuda_graph & (MB_CG_MLP | MB_CG_LAYER)) != 0);
        double f = (double)m->ffn_hidden / tp;
        b->cur_region = g;
        mb__norm(b, l, MB_CAT_DENSE, g, Tsp, h);
        mb__ring(b, l, MB_CK_TP, b->g_tp, T * h * BF16, s->overlap_tp_comm);
        mb__gemm(b, l, MB_CAT_DENSE, MB_RCM_MLP, g, T, up * f, h, Tsp * h * BF16, frozen);
        mb__mem(b, l, MB_CAT_DENSE, MB_RCM_MLP, g, (up + 1) * T * f * BF16, up * T * f * BF16);
        mb__gemm(b, l, MB_CAT_DENSE, MB_RCM_MLP, g, T, h, f, T * f * BF16, frozen);
        mb__ring(b, l, MB_CK_TP, b->g_tp, T * h * BF16, s->overlap_tp_comm);
        mb__mem(b, l, MB_CAT_DENSE, 0, g, 3 * Tsp * h * BF16, Tsp * h);
        b->cur_region = 0;
        return;
    }
    /* MoE: tokens stay sequence-sharded (T/tp per rank) through the dispatcher */
    /* TE-scoped graphs capture the router and (with moe_preprocess) the
     * dispatcher's preprocessing up to its host sync as one graph per layer;
     * `moe` (drop-and-pad only) captures the experts */
    int g_router = mb__region(b, (s->cuda_graph & (MB_CG_MOE_ROUTER | MB_CG_LAYER)) != 0);
    int g_pre = (s->cuda_graph & (MB_CG_MOE_PREPROCESS | MB_CG_LAYER)) ? (g_router ? g_router : mb__region(b, 1)) : 0;
    int graphed_moe = mb__region(b, (s->cuda_graph & (MB_CG_MOE | MB_CG_LAYER)) != 0);
    int g_tail = (s->cuda_graph & MB_CG_LAYER) ? b->layer_region : 0;
    double Tm = Tsp;
    int E = m->num_experts, k = m->topk, ep = s->ep, etp = s->etp;
    double fe = (double)m->moe_ffn_hidden / etp;
    double imb = b->route_imbalance;
    double copies = Tm * k;                        /* routed token copies leaving this rank */
    double recv = copies * etp * imb;              /* copies this rank's experts process (most loaded rank) */
    double groups = (double)E / ep;
    double tpg = recv / groups;
    b->cur_region = g_router;
    mb__norm(b, l, MB_CAT_DENSE, g_router, Tsp, h);
    mb__gemm(b, l, MB_CAT_DISPATCH, 0, g_router, Tm, E, h, 0, frozen);           /* router */
    mb__mem(b, l, MB_CAT_DISPATCH, 0, g_router, 3 * Tm * E * 4.0, Tm * E * 4.0);   /* softmax/top-k */
    /* Megatron-Core router (moe/router.py, moe_utils.py topk_softmax_with_capacity,
     * switch_load_balancing_loss_func), unfused: softmax, topk, two zeros+scatter
     * for the routing map and probs, tokens-per-expert sum and the aux-loss
     * products/sums: ~12 kernels forward, ~8 backward (an estimate from the
     * op sequence; TE's fused router would be ~3) */
    l->op[l->n - 1].kf = 12;
    l->op[l->n - 1].kb = 8;
    b->cur_region = g_pre;
    int flex = ep > 1 && (s->dispatcher == MB_DISP_HYBRIDEP || s->dispatcher == MB_DISP_DEEPEP);
    /* permute: a gather of the routed copies (read + write); its backward is the
     * inverse gather of the gradients, the same bytes. HybridEP with
     * --moe-permute-fusion-into-hybridep writes the received tokens in expert
     * order itself, so no separate pass is left */
    double perm_bytes = (flex && s->dispatcher == MB_DISP_HYBRIDEP && s->hybridep_permute_fusion)
                            ? 0 : 2 * copies * h * BF16;
    mb__mem_sym(b, l, MB_CAT_DISPATCH, 0, g_pre, perm_bytes, 0);
    /* dispatcher preprocess (token counts per expert, their all-gather over EP)
     * + fused permute (TE moe_permute: row-id map and the gather): ~5 forward,
     * 1 backward (the unpermute of the gradient) */
    l->op[l->n - 1].kf = 5;
    l->op[l->n - 1].kb = 1;
    b->cur_region = g_tail;
    /* dispatch: BF16 tokens; DeepEP/HybridEP under a quantized recipe dispatch
     * the FP8 copy the expert GEMM needs (1 byte per element; per-block scales,
     * <= 3 %, left out) and combine in BF16 (hardware.md B.4: "FP8 dispatch,
     * BF16 combine") */
    double tokb = h * BF16, tokb_c = h * BF16;
    if (flex && s->prec.quantize)
        tokb = h * 1.0;
    struct mb_group g = b->g_ep;
    if (ep > 1) {
        if (s->dispatcher == MB_DISP_ALLGATHER) {
            mb__ring(b, l, MB_CK_EP, g, Tm * ep * tokb, 0);
        } else {
            double remote_frac_nv = (double)(g.local - 1) / g.size;
            double remote_frac_nic = (double)(g.size - g.local) / g.size;
            double nv = copies * tokb * remote_frac_nv * imb;
            double nic = copies * tokb * remote_frac_nic * imb;
            if (flex) {
                /* DeepEP/HybridEP send a token once per destination rank (the receiver
                 * expands it to its local experts), and across the scale-out fabric
                 * once per destination domain, then fan it out over NVLink; Megatron's
                 * alltoall dispatcher sends one copy per routed expert */
                double p_rank = mb__p_hit(m, E / (double)ep);
                nv = Tm * tokb * (g.local - 1) * p_rank * imb;
                if (g.domains > 1) {
                    double D = g.domains, p_dom = mb__p_hit(m, E / D);
                    nic = Tm * tokb * (D - 1) * p_dom * imb;
                    /* an arriving token goes on to the other hit ranks of its domain:
                     * (local - 1) * p_rank / p_dom of them on average */
                    if (p_dom > 0)
                        nv += nic * (g.local - 1) * p_rank / p_dom;
                }
            }
            mb__a2a(b, l, g, nv, nic, !flex);
            /* AlltoAll-V needs the split sizes on the host: the dispatcher copies
             * the token counts device-to-host and synchronises before the
             * all-to-all (MoEAlltoAllTokenDispatcher cuda_sync_point); DeepEP and
             * HybridEP likewise wait for the receive count in their normal mode */
            if (l->n > 0 && l->op[l->n - 1].type == MB_OP_COMM && l->op[l->n - 1].ck == MB_CK_EP)
                l->op[l->n - 1].host_sync = 1;
        }
    }
    b->cur_region = graphed_moe;
    /* --moe-shared-expert-overlap: the shared experts run while the dispatch
     * all-to-all is in flight (Megatron-Core MoE shared-expert overlap) */
    int shared_early = s->shared_expert_overlap && m->shared_ffn_hidden > 0 && ep > 1 && l->n > 0 &&
                       l->op[l->n - 1].type == MB_OP_COMM && l->op[l->n - 1].ck == MB_CK_EP;
    if (shared_early) {
        l->op[l->n - 1].parallel = 1;
        mb__shared_experts(b, l, T, up, graphed_moe, frozen);
    }
    if (etp > 1)
        mb__ring(b, l, MB_CK_TP, mb__group(etp, 1, b->s->system.nvlink_domain), copies * etp * tokb, 0);
    mb__grouped(b, l, graphed_moe, groups, tpg, up * fe, h, recv * h * BF16);
    mb__mem(b, l, MB_CAT_EXPERTS, MB_RCM_MOE_ACT, graphed_moe, (up + 1) * recv * fe * BF16, up * recv * fe * BF16);
    mb__grouped(b, l, graphed_moe, groups, tpg, h, fe, recv * fe * BF16);
    if (etp > 1)
        mb__ring(b, l, MB_CK_TP, mb__group(etp, 1, b->s->system.nvlink_domain), copies * etp * tokb, 0);
    b->cur_region = g_tail;
    if (ep > 1) {
        /* combine mirrors dispatch */
        int i = l->n - 1;
        while (i >= 0 && !(l->op[i].type == MB_OP_COMM && l->op[i].ck == MB_CK_EP))
            i--;
        if (i >= 0) {
            struct mb_op c = l->op[i];
            c.host_sync = 0;
            c.parallel = 0;
            c.bytes_nv *= tokb_c / tokb;
            c.bytes_nic *= tokb_c / tokb;
            mb__push(l, &c);
        }
    }
    /* unpermute: a scatter-add of the copies back to their tokens (Megatron-Core
     * applies the routing probs inside the expert activation, so nothing of this
     * size is saved here); backward gathers the gradient per copy: same bytes */
    mb__mem_sym(b, l, MB_CAT_DISPATCH, 0, g_tail, perm_bytes, copies * 4.0);
    l->op[l->n - 1].kb = 2; /* fused unpermute backward: gradient gather + probs gradient */
    if (m->shared_ffn_hidden > 0 && !shared_early)
        mb__shared_experts(b, l, T, up, graphed_moe, frozen);
    mb__mem(b, l, MB_CAT_DENSE, 0, g_tail, 3 * Tsp * h * BF16, Tsp * h);
    b->cur_region = 0;
}

/* ---- vision encoder ----------------------------------------------------- */

/* Real samples: images (count and sizes from the scenario's distribution)
 * plus text tokens; seeded, so the same scenario draws the same data. */
struct mb_sample {
    double len;     /* LLM positions: text + merged image tokens, at most seq_length */
    double P, Q;    /* ViT patches and sum of squared patches (attention within each image) */
    double merged;  /* LLM tokens taken by images */
};

static void mb__draw_sample(const struct mb_scenario *s, const struct mb_model *m, struct mb_rng *rng,
                            struct mb_sample *x)
{
    const struct mb_images *im = &s->images;
    memset(x, 0, sizeof *x);
    if (!(s->mock || im->dist == MB_IMG_NONE || m->vision.depth == 0)) {
        int lo = im->per_sample_min, hi = im->per_sample_max > lo ? im->per_sample_max : lo;
        int cnt = lo + (int)(mb_rng_uniform(rng) * (hi - lo + 1));
        if (cnt > hi)
            cnt = hi;
        for (int i = 0; i < cnt; i++) {
            int hh, ww;
            if (im->dist == MB_IMG_UNIFORM) {
                int span = im->side_max - im->side_min + 1;
                hh = im->side_min + (int)(mb_rng_uniform(rng) * span);
                ww = im->side_min + (int)(mb_rng_uniform(rng) * span);
            } else {
                int j = im->n_sizes > 1 ? (int)(mb_rng_uniform(rng) * im->n_sizes) : 0;
                if (j >= im->n_sizes)
                    j = im->n_sizes - 1;
                hh = im->height[j];
                ww = im->width[j];
            }
            double mg;
            double p = mb_model_image_patches(m, hh, ww, &mg);
            x->P += p;
            x->Q += p * p;
            x->merged += mg;
        }
    }
    double text;
    if (s->mock || s->text_max <= 0) {
        text = s->seq_length - x->merged; /* the sample fills its sequence */
    } else {
        int span = s->text_max - s->text_min + 1;
        text = s->text_min + (int)(mb_rng_uniform(rng) * span);
        if (text > s->text_max)
            text = s->text_max;
    }
    x->len = fmin(s->seq_length, fmax(0, text) + x->merged);
}

/* One microbatch (micro_batch_size sequences) of one rank: vision work, the
 * LLM positions that carry data (`useful`), the sum of squared attention
 * lengths (`lsq`) and the number of samples. Padded: one sample per sequence,
 * padded to seq_length, attention over the whole padded sequence. Packed:
 * samples are concatenated greedily until the next does not fit (it opens the
 * next sequence); attention runs within each sample (THD), so the attention
 * work is sum(L_i^2) instead of seq^2. */
struct mb_mbdraw {
    double P, Q, merged, useful, lsq, samples;
};

struct mb_sampler {
    struct mb_rng rng;
    int pending;
    struct mb_sample next;
};

static void mb__draw_microbatch(const struct mb_scenario *s, const struct mb_model *m, struct mb_sampler *sm,
                                struct mb_mbdraw *d)
{
    double seq = s->seq_length;
    memset(d, 0, sizeof *d);
    for (int q = 0; q < s->micro_batch_size; q++) {
        double fill = 0;
        do {
            if (!sm->pending) {
                mb__draw_sample(s, m, &sm->rng, &sm->next);
                sm->pending = 1;
            }
            if (fill > 0 && fill + sm->next.len > seq)
                break;
            struct mb_sample *x = &sm->next;
            d->P += x->P;
            d->Q += x->Q;
            d->merged += x->merged;
            d->samples += 1;
            d->lsq += s->packed ? x->len * x->len : seq * seq;
            fill += x->len;
            sm->pending = 0;
        } while (s->packed && s->text_max > 0 && !s->mock && fill < seq);
        d->useful += fill;
    }
}

/* ViT forward/backward ops for P patches (sum of squares Q) on stage 0. */
static void mb__vision(struct mb_build *b, struct mb_oplist *l, double P, double Q)
{
    const struct mb_scenario *s = b->s;
    const struct mb_vision *v = &b->m->vision;
    int tp = s->tp;
    int frozen = (s->freeze & MB_FREEZE_VISION) != 0;
    int fproj = (s->freeze & MB_FREEZE_VISION_PROJ) != 0;
    double hv = v->hidden, fv = (double)v->mlp / tp, hl = (double)v->hidden / tp;
    int hd = v->hidden / v->heads;
    if (P <= 0)
        return;
    /* patch embedding: conv as GEMM over C*tp*patch^2 inputs */
    double kin = (double)v->in_channels * v->temporal_patch * v->patch * v->patch;
    mb__gemm(b, l, MB_CAT_VISION, 0, 0, P, hv, kin, 0, frozen);
    for (int i = 0; i < v->depth; i++) {
        mb__mem(b, l, MB_CAT_VISION, 0, 0, 2 * P * hv * BF16, P * hv * BF16);
        mb__ring(b, l, MB_CK_TP, b->g_tp, P * hv * BF16, 0);
        mb__gemm(b, l, MB_CAT_VISION, 0, 0, P, 3 * hl, hv, P * hv * BF16, frozen);
        /* bidirectional attention within each image: 4 p^2 h_v FLOP per image */
        /* varlen kernel over images x heads per rank; P^2/Q images of the mean size */
        mb__attn(b, l, MB_CAT_VISION, 0, 0, 4.0 * Q * hl, Q / P, hd, P * P / Q * hl / hd, 0, P * hl * BF16 * 4);
        mb__gemm(b, l, MB_CAT_VISION, 0, 0, P, hv, hl, P * hl * BF16, frozen);
        mb__ring(b, l, MB_CK_TP, b->g_tp, P * hv * BF16, 0);
        mb__mem(b, l, MB_CAT_VISION, 0, 0, 2 * P * hv * BF16, P * hv * BF16);
        mb__ring(b, l, MB_CK_TP, b->g_tp, P * hv * BF16, 0);
        mb__gemm(b, l, MB_CAT_VISION, 0, 0, P, fv, hv, P * hv * BF16, frozen);
        mb__mem(b, l, MB_CAT_VISION, 0, 0, 2 * P * fv * BF16, P * fv * BF16);
        mb__gemm(b, l, MB_CAT_VISION, 0, 0, P, hv, fv, P * fv * BF16, frozen);
        mb__ring(b, l, MB_CK_TP, b->g_tp, P * hv * BF16, 0);
    }
    /* patch merger(s): main + one per DeepStack tap; S^2 patches -> one token */
    double S2 = (double)v->spatial_merge * v->spatial_merge, Mtok = P / S2;
    for (int i = 0; i < 1 + v->deepstack; i++) {
        mb__gemm(b, l, MB_CAT_PROJECTOR, 0, 0, Mtok, S2 * hv, S2 * hv, Mtok * S2 * hv * BF16, fproj);
        mb__gemm(b, l, MB_CAT_PROJECTOR, 0, 0, Mtok, v->out_hidden, S2 * hv, Mtok * S2 * hv * BF16, fproj);
    }
}

/* Fuse runs of adjacent compute ops that the timeline cannot tell apart --
 * same category, recomputed or not alike, same CUDA-graph region, no host sync -- into
 * one op (times, saved bytes and kernel counts add up). GPU time is unchanged;
 * only when the host is the bottleneck does the fused op start after all of
 * its kernels are launched instead of after the first one's. Halves the tasks
 * of a step. */
static void mb__fuse(struct mb_oplist *l, unsigned rc_mask)
{
    int w = 0;
    for (int i = 0; i < l->n; i++) {
        struct mb_op *o = &l->op[i];
        if (w > 0) {
            struct mb_op *q = &l->op[w - 1];
            if (q->type == MB_OP_COMP && o->type == MB_OP_COMP && q->cat == o->cat &&
                (q->module & rc_mask) == (o->module & rc_mask) && q->region == o->region && !o->host_sync &&
                q->fwd > 0 && o->fwd > 0) {
                q->module |= o->module;
                q->fwd += o->fwd;
                q->bwd += o->bwd;
                q->bwd_dgrad_only += o->bwd_dgrad_only;
                q->saved += o->saved;
                q->kf += o->kf;
                q->kb += o->kb;
                continue;
            }
        }
        l->op[w++] = *o;
    }
    l->n = w;
}

/* ---- emission on the timeline ------------------------------------------- */

/* Emission state of one forward or backward unit (one microbatch on one
 * virtual stage): the task the next compute op must follow, and a parallel
 * communication (CP ring, overlapped TP) the op after next must wait for. */
struct mb_em {
    int last;
    int pending;
    int region;   /* CUDA-graph region of the last op emitted (0 = eager) */
};

static int mb__task(struct mb_build *b, int stream, int kind, double dur, const struct mb_flow_desc *f, int nf,
                    int dep);

/* The host side of op o: the stage's host thread issues the op's kernels in
 * program order, launch_s each (kf forward or recomputed, kb backward; one NCCL
 * kernel per communication op), or a single cudaGraphLaunch when the op opens
 * a captured region (the rest of the region costs the host nothing). The
 * host never waits for the GPU, except at a device-to-host sync (o->host_sync
 * in a forward pass), where it cannot issue further work until the GPU has
 * reached that point. Returns the host task the GPU op must wait for, or -1. */
static int mb__host(struct mb_build *b, int st, struct mb_em *em, const struct mb_op *o, int dir, int recompute)
{
    if (b->launch <= 0)
        return -1; /* full-iteration graph: one launch per step */
    double n;
    if (o->region) {
        n = o->region == em->region ? 0 : 1;
        em->region = o->region;
    } else {
        n = o->type == MB_OP_COMM ? 1 : (dir && !recompute ? o->kb : o->kf);
        em->region = 0;
    }
    int sync = o->host_sync && (!dir || recompute) && em->last >= 0;
    if (n <= 0 && !sync)
        return -1;
    return mb__task(b, b->host[st], MB_CAT_HOST, n * b->launch, NULL, 0, sync ? em->last : -1);
}

/* Remember that GPU task t waited for host task h (for the breakdown). */
static void mb__note_host(struct mb_build *b, int t, int h)
{
    if (t < 0)
        return;
    if ((size_t)t >= b->hostdep_cap) {
        size_t cap = b->hostdep_cap ? 2 * b->hostdep_cap : 4096;
        while (cap <= (size_t)t)
            cap *= 2;
        b->hostdep = mb_realloc(b->hostdep, cap * sizeof *b->hostdep);
        for (size_t i = b->hostdep_cap; i < cap; i++)
            b->hostdep[i] = -1;
        b->hostdep_cap = cap;
    }
    b->hostdep[t] = h;
}

/* Emit one op forward (dir = 0) or backward (dir = 1) on stage st. recompute:
 * the forward again, tagged MB_CAT_RECOMPUTE. skip_bwd: dgrad only (frozen).
 * Returns 1 when the op was an expert-parallel dispatch/combine (a
 * point where an overlapped schedule may switch to the other microbatch). */
static int mb__emit_op(struct mb_build *b, int st, struct mb_em *em, const struct mb_op *o, int dir, int recompute,
                       int skip_bwd)
{
    struct mb_task_desc d = {0};
    if (o->type == MB_OP_COMP) {
        d.stream = b->comp[st];
        d.duration = recompute ? o->fwd : dir ? (skip_bwd ? o->bwd_dgrad_only : o->bwd) : o->fwd;
        d.kind = recompute ? MB_CAT_RECOMPUTE : (int)o->cat;
        if (d.duration <= 0)
            return 0;
        int h = mb__host(b, st, em, o, dir, recompute);
        int t = mb_engine_add_task(b->e, &d);
        if (em->last >= 0)
            mb_engine_add_dep(b->e, em->last, t);
        if (h >= 0) {
            mb_engine_add_dep(b->e, h, t);
            mb__note_host(b, t, h);
        }
        em->last = t;
        if (em->pending >= 0) { /* join: the op after this one also waits for the parallel comm */
            struct mb_task_desc z = {0};
            z.stream = b->comp[st];
            z.kind = MB_CAT_COUNT; /* zero-length, not accounted */
            int j = mb_engine_add_task(b->e, &z);
            mb_engine_add_dep(b->e, t, j);
            mb_engine_add_dep(b->e, em->pending, j);
            em->pending = -1;
            em->last = j;
        }
        return 0;
    }
    struct mb_flow_desc f[2];
    int nf = 0;
    if (o->bytes_nv > 0)
        f[nf++] = (struct mb_flow_desc){o->bytes_nv, 1, {b->l_nv[st]}, mb__cap(o->bytes_nv, o->paced, 0)};
    if (o->bytes_nic > 0) /* the tighter of the measured pace and the oversubscription cap */
        f[nf++] = (struct mb_flow_desc){o->bytes_nic, 1, {b->l_nic[st]}, mb__cap(o->bytes_nic, o->paced, o->bound_nic)};
    d.stream = b->cstream[st][o->ck];
    d.duration = o->latency;
    d.n_flows = nf;
    d.flows = f;
    d.kind = 100 + o->ck;
    int h = mb__host(b, st, em, o, dir, recompute);
    int t = mb_engine_add_task(b->e, &d);
    if (em->last >= 0)
        mb_engine_add_dep(b->e, em->last, t);
    if (h >= 0)
        mb_engine_add_dep(b->e, h, t);
    if (o->parallel)
        em->pending = t;
    else
        em->last = t;
    return o->ck == MB_CK_EP && !o->parallel;
}

/* Close a unit: wait for a parallel comm still in flight. */
static void mb__em_close(struct mb_build *b, int st, struct mb_em *em)
{
    if (em->pending < 0)
        return;
    struct mb_task_desc z = {0};
    z.stream = b->comp[st];
    z.kind = MB_CAT_COUNT;
    int j = mb_engine_add_task(b->e, &z);
    if (em->last >= 0)
        mb_engine_add_dep(b->e, em->last, j);
    mb_engine_add_dep(b->e, em->pending, j);
    em->pending = -1;
    em->last = j;
}

/* Op i of list l in emission order. */
static const struct mb_op *mb__op_at(const struct mb_oplist *l, int dir, int i)
{
    return &l->op[dir ? l->n - 1 - i : i];
}

/* Whether op o runs in this pass (recompute passes run only recomputed modules). */
static int mb__op_selected(const struct mb_op *o, int recompute, unsigned mask)
{
    return !recompute || mask == ~0u || (o->module & mask);
}

/* A forward or backward unit as a flat list of items, so that two units can be
 * emitted interleaved (expert-parallel communication overlap). */
enum mb_itk { MB_IT_OPS, MB_IT_FSDP_AG, MB_IT_FSDP_RS, MB_IT_LASTB };

struct mb_item {
    enum mb_itk k;
    const struct mb_oplist *l; /* MB_IT_OPS */
    int dir, recompute, skip_bwd;
    unsigned mask;
    double bytes;              /* FSDP items */
    int li;                    /* MB_IT_LASTB: layer whose last backward ends here */
};

struct mb_unit {
    struct mb_item *it;
    int n, cap;
    int pos, opi;              /* next item, next op inside an MB_IT_OPS item */
    struct mb_em em;
    double ep_busy;            /* est. seconds of the EP transfer it last yielded on */
};

/* Start unit u on stage st: no items yet, and a zero-length entry task on the
 * compute stream that the cross-stage dependencies attach to (returned). */
static int mb__unit_open(struct mb_build *b, int st, struct mb_unit *u)
{
    u->n = u->pos = u->opi = 0;
    u->em.last = mb__task(b, b->comp[st], MB_CAT_COUNT, 0, NULL, 0, -1);
    u->em.pending = -1;
    u->em.region = 0;
    return u->em.last;
}

static void mb__it_add(struct mb_unit *u, struct mb_item x)
{
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 64;
        u->it = mb_realloc(u->it, (size_t)u->cap * sizeof *u->it);
    }
    u->it[u->n++] = x;
}

static void mb__it_ops(struct mb_unit *u, const struct mb_oplist *l, int dir, int recompute, unsigned mask,
                       int skip_bwd)
{
    struct mb_item x = {MB_IT_OPS, l, dir, recompute, skip_bwd, mask, 0, -1};
    mb__it_add(u, x);
}

/* A single task on a stream after `dep`. */
static int mb__task(struct mb_build *b, int stream, int kind, double dur, const struct mb_flow_desc *f, int nf,
                    int dep)
{
    struct mb_task_desc d = {stream, dur, nf, f, kind, 0};
    int t = mb_engine_add_task(b->e, &d);
    if (dep >= 0)
        mb_engine_add_dep(b->e, dep, t);
    return t;
}

/* Transfer of `bytes` from stage st (p2p for PP, collectives for DP/FSDP) on
 * the given comm stream, hierarchical over group g when g.size > 1. */
static int mb__comm_on(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, struct mb_group g,
                       double total, int dep);

static int mb__comm(struct mb_build *b, int st, enum mb_commk ck, struct mb_group g, double total, int p2p_nic,
                    int dep)
{
    if (ck != MB_CK_PP)
        return mb__comm_on(b, st, ck, ck, g, total, dep);
    struct mb_flow_desc f = {total, 1, {p2p_nic ? b->l_nic[st] : b->l_nv[st]}, 0};
    return mb__task(b, b->cstream[st][ck], 100 + ck, p2p_nic ? b->nic_lat : b->nv_lat, &f, 1, dep);
}


/* Zero-length task on the compute stream that waits for both a and b. */
static int mb__join(struct mb_build *b, int st, int a, int c)
{
    int j = mb__task(b, b->comp[st], MB_CAT_COUNT, 0, NULL, 0, a);
    if (c >= 0)
        mb_engine_add_dep(b->e, c, j);
    return j;
}

/* One collective task of stage st on the stream of kind `on`, accounted as
 * kind `ck`: the rank's per-hop volumes v (mb_coll_volume) as flows on its
 * NVLink port and NIC (NVLS bytes through the NVLink port at the NVLS rate),
 * after v's latency; a measured curve of `op` (mb__coll_meas) replaces the
 * latency and paces the flows. */
static int mb__coll_task(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, struct mb_group g,
                         const char *op, double size, const struct mb_coll_vol *v, int dep)
{
    double lat = mb_coll_vol_latency(v, b->nv_lat, b->nic_lat, b->nvls_lat);
    double paced = mb__coll_meas(b, op, g, size, &lat);
    struct mb_flow_desc f[3];
    int nf = 0;
    if (v->nv > 0)
        f[nf++] = (struct mb_flow_desc){v->nv, 1, {b->l_nv[st]}, mb__cap(v->nv, paced, 0)};
    if (v->nvls > 0)
        f[nf++] = (struct mb_flow_desc){v->nvls, 1, {b->l_nv[st]}, mb__cap(v->nvls, paced, b->nvls_bw)};
    if (v->nic > 0)
        f[nf++] = (struct mb_flow_desc){v->nic, 1, {b->l_nic[st]}, mb__cap(v->nic, paced, 0)};
    return mb__task(b, b->cstream[st][on], 100 + ck, lat, f, nf, dep);
}

/* As mb__comm, on the stream of kind `on`, accounted as kind `ck`. */
static int mb__comm_on(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, struct mb_group g,
                       double total, int dep)
{
    if (g.size <= 1 || total <= 0)
        return dep;
    struct mb_coll_vol v;
    mb_coll_volume(MB_COLL_ALL_GATHER, MB_COLL_ALGO_RING, g.size, g.local, g.domains, total, &v);
    return mb__coll_task(b, st, on, ck, g, "allgather", total, &v, dep);
}

/* DP gradient all-reduce of `bytes` over group g (DDP: optimizer.distributed
 * false), on the DP stream: the scenario's collectives.all_reduce algorithm, or
 * NCCL-like AUTO -- the least mb_coll_vol_time() of ring, tree and NVLS (when
 * the system has it and g has >= 2 GPUs per NVLink domain) at this rank's
 * achieved rates. The same per-rank volumes as `mbsim collective`
 * (mb_coll_volume); NVLS bytes go through the NVLink port at the NVLS rate. */
static int mb__allreduce(struct mb_build *b, int st, struct mb_group g, double bytes, int dep)
{
    if (g.size <= 1 || bytes <= 0)
        return dep;
    struct mb_coll_vol best = {0}, v;
    double tbest = -1;
    for (int a = MB_COLL_ALGO_RING; a <= MB_COLL_ALGO_NVLS; a++) {
        if (b->s->allreduce_algo != MB_COLL_ALGO_AUTO && a != b->s->allreduce_algo)
            continue;
        if (a == MB_COLL_ALGO_NVLS && !(b->nvls_bw > 0 && g.local > 1))
            continue;
        mb_coll_volume(MB_COLL_ALL_REDUCE, (enum mb_coll_algo)a, g.size, g.local, g.domains, bytes, &v);
        double t = mb_coll_vol_time(&v, b->nv_cap, b->nic_cap, b->nvls_bw, b->nv_lat, b->nic_lat, b->nvls_lat);
        if (tbest < 0 || t < tbest * (1 - 1e-12))
            tbest = t, best = v;
    }
    return mb__coll_task(b, st, MB_CK_DP, MB_CK_DP, g, "allreduce", bytes, &best, dep);
}

/* DP gradient reduction of `bytes` over g: reduce-scatter with the distributed
 * optimizer, all-reduce without it. */
static int mb__grad_reduce(struct mb_build *b, int st, struct mb_group g, double bytes, int dep)
{
    return b->s->dist_opt ? mb__comm(b, st, MB_CK_DP, g, bytes, 0, dep) : mb__allreduce(b, st, g, bytes, dep);
}

/* Reduce the timeline to the breakdown of the stage with the most compute:
 * compute time by category; idle gaps on its compute stream attributed to the
 * communication kind with the most overlap in that gap, else to the bubble. */
static void mb__breakdown(struct mb_build *b, int p, double step, struct mb_result *r)
{
    size_t nt = mb_engine_n_tasks(b->e);
    int nstream = 0;
    for (int q = 0; q < p; q++) {
        for (int c = 0; c < MB_CK_COUNT; c++)
            if (b->cstream[q][c] + 1 > nstream)
                nstream = b->cstream[q][c] + 1;
        if (b->host[q] + 1 > nstream)
            nstream = b->host[q] + 1;
        if (b->comp[q] + 1 > nstream)
            nstream = b->comp[q] + 1;
    }
    int *stage_of = mb_malloc((size_t)nstream * sizeof *stage_of);
    for (int i = 0; i < nstream; i++)
        stage_of[i] = -1;
    for (int q = 0; q < p; q++)
        stage_of[b->comp[q]] = q;
    double busy[MB_MAX_STAGES] = {0};
    for (size_t t = 0; t < nt; t++) {
        int q = stage_of[mb_engine_task_stream(b->e, (int)t)];
        if (q >= 0 && mb_engine_task_kind(b->e, (int)t) < MB_CAT_COUNT)
            busy[q] += mb_engine_task_end(b->e, (int)t) - mb_engine_task_start(b->e, (int)t);
    }
    int cs = 0;
    for (int q = 1; q < p; q++)
        if (busy[q] > busy[cs])
            cs = q;
    r->critical_stage = cs;
    /* comm intervals of stage cs per kind, and (index MB_CK_COUNT) its host
     * launch thread; each stream is FIFO so they are sorted by start */
    double *iv_s[MB_CK_COUNT + 1], *iv_e[MB_CK_COUNT + 1];
    int iv_n[MB_CK_COUNT + 1] = {0}, ptr[MB_CK_COUNT + 1] = {0};
    for (int c = 0; c <= MB_CK_COUNT; c++) {
        iv_s[c] = mb_malloc((nt + 1) * sizeof(double));
        iv_e[c] = mb_malloc((nt + 1) * sizeof(double));
    }
    for (size_t t = 0; t < nt; t++) {
        int sid = mb_engine_task_stream(b->e, (int)t), kd = mb_engine_task_kind(b->e, (int)t);
        if (sid == b->host[cs] && mb_engine_task_end(b->e, (int)t) > mb_engine_task_start(b->e, (int)t)) {
            iv_s[MB_CK_COUNT][iv_n[MB_CK_COUNT]] = mb_engine_task_start(b->e, (int)t);
            iv_e[MB_CK_COUNT][iv_n[MB_CK_COUNT]++] = mb_engine_task_end(b->e, (int)t);
            continue;
        }
        if (kd < 100)
            continue;
        for (int c = 0; c < MB_CK_COUNT; c++)
            if (b->cstream[cs][c] == sid) {
                int k = kd - 100;
                iv_s[k][iv_n[k]] = mb_engine_task_start(b->e, (int)t);
                iv_e[k][iv_n[k]++] = mb_engine_task_end(b->e, (int)t);
            }
    }
    double prev_end = 0;
    for (size_t t = 0; t < nt; t++) {
        if (mb_engine_task_stream(b->e, (int)t) != b->comp[cs])
            continue;
        int kd = mb_engine_task_kind(b->e, (int)t);
        double t0 = mb_engine_task_start(b->e, (int)t), t1 = mb_engine_task_end(b->e, (int)t);
        if (kd < MB_CAT_COUNT)
            r->breakdown[kd] += t1 - t0;
        if (t0 > prev_end) {
            double ov[MB_CK_COUNT + 1] = {0}, best = 0;
            int bestk = -1;
            /* the host is to blame only when this task's launch ended as it started */
            int hd = (size_t)t < b->hostdep_cap ? b->hostdep[t] : -1;
            int host_late = hd >= 0 && mb_engine_task_end(b->e, hd) >= t0 - 1e-12;
            for (int c = 0; c <= MB_CK_COUNT; c++) {
                if (c == MB_CK_COUNT && !host_late)
                    break;
                while (ptr[c] < iv_n[c] && iv_e[c][ptr[c]] <= prev_end)
                    ptr[c]++;
                for (int j = ptr[c]; j < iv_n[c] && iv_s[c][j] < t0; j++)
                    ov[c] += fmin(t0, iv_e[c][j]) - fmax(prev_end, iv_s[c][j]);
                if (ov[c] > best) {
                    best = ov[c];
                    bestk = c;
                }
            }
            double gap = t0 - prev_end, covered = bestk >= 0 ? fmin(best, gap) : 0;
            if (bestk >= 0)
                r->breakdown[bestk == MB_CK_COUNT ? MB_CAT_HOST : mb__comm_cat[bestk]] += covered;
            r->breakdown[MB_CAT_BUBBLE] += gap - covered;
        }
        if (t1 > prev_end)
            prev_end = t1;
    }
    if (step > prev_end)
        r->breakdown[MB_CAT_BUBBLE] += step - prev_end;
    for (int c = 0; c <= MB_CK_COUNT; c++) {
        mb_free(iv_s[c]);
        mb_free(iv_e[c]);
    }
    mb_free(stage_of);
}

/* The compute task before each FSDP gather of a stage (a ring of the last
 * MB_MAX_FSDP_PREFETCH + 1), n gathers so far. */
struct mb_gate {
    int hist[MB_MAX_FSDP_PREFETCH + 1];
    int n;
};

/* Run unit u from where it stopped. With `yield_on_ep` it returns 1 right
 * after emitting an EP dispatch/combine, so the caller can switch to the other
 * unit; otherwise it runs to the end and returns 0. `gate` implements the
 * FSDP prefetch depth; lastb[li] records each layer's last backward task. */
static int mb__run_unit(struct mb_build *b, int st, struct mb_unit *u, int yield_on_ep, struct mb_gate *gate,
                        int *lastb)
{
    for (; u->pos < u->n; u->pos++, u->opi = 0) {
        struct mb_item *x = &u->it[u->pos];
        switch (x->k) {
        case MB_IT_OPS:
            if (u->opi == 0)
                u->em.region = 0; /* each layer's module is a graph of its own */
            while (u->opi < x->l->n) {
                const struct mb_op *o = mb__op_at(x->l, x->dir, u->opi++);
                if (!mb__op_selected(o, x->recompute, x->mask))
                    continue;
                if (mb__emit_op(b, st, &u->em, o, x->dir, x->recompute, x->skip_bwd) && yield_on_ep) {
                    u->ep_busy = o->latency + fmax(o->bytes_nv / b->nv_cap, o->bytes_nic / b->nic_cap);
                    return 1;
                }
            }
            break;
        case MB_IT_FSDP_AG: {
            mb__em_close(b, st, &u->em);
            /* the k-th gather waits for the compute that preceded gather k - depth:
             * depth 0 gathers a layer only once the previous one is done, depth d
             * keeps d layers gathered ahead (FSDP forward/backward prefetch) */
            int k = gate->n++, d = b->s->fsdp_prefetch;
            gate->hist[k % (MB_MAX_FSDP_PREFETCH + 1)] = u->em.last;
            int dep = k - d >= 0 ? gate->hist[(k - d) % (MB_MAX_FSDP_PREFETCH + 1)] : -1;
            int t = mb__comm(b, st, MB_CK_FSDP, b->g_dp, x->bytes, 0, dep);
            if (t >= 0 && t != u->em.last)
                u->em.last = mb__join(b, st, u->em.last, t);
            break;
        }
        case MB_IT_FSDP_RS:
            mb__em_close(b, st, &u->em);
            mb__comm_on(b, st, MB_CK_DP, MB_CK_FSDP, b->g_dp, x->bytes, u->em.last);
            break;
        case MB_IT_LASTB:
            mb__em_close(b, st, &u->em);
            lastb[x->li] = u->em.last;
            break;
        }
    }
    mb__em_close(b, st, &u->em);
    return 0;
}

/* Emit units a and b interleaved at their EP dispatch/combine points: while
 * one unit's all-to-all is in flight the other unit computes (Megatron's
 * combined 1F1B all-to-all overlap). The dispatcher kernel occupies a share
 * `sm_frac` of the SMs for its (estimated) duration, so the overlapping
 * compute loses that share of the time: a stall of sm_frac x duration is
 * charged to dispatch_combine_compute. */
static void mb__run_pair(struct mb_build *b, int st, struct mb_unit *ua, struct mb_unit *ub, double sm_frac,
                         struct mb_gate *gate, int *lastb)
{
    struct mb_unit *cur = ua, *other = ub;
    while (ua->pos < ua->n || ub->pos < ub->n) {
        if (cur->pos >= cur->n) {
            struct mb_unit *t = cur;
            cur = other;
            other = t;
            continue;
        }
        int switched = mb__run_unit(b, st, cur, other->pos < other->n, gate, lastb);
        if (switched && other->pos < other->n) {
            double stall = sm_frac * cur->ep_busy;
            if (stall > 0)
                other->em.last = mb__task(b, b->comp[st], MB_CAT_DISPATCH, stall, NULL, 0, other->em.last);
            struct mb_unit *t = cur;
            cur = other;
            other = t;
        }
    }
}

/* Category of a task for reports: compute categories as they are, comm tasks
 * by kind; -1 for zero-length joins. */
static int mb__task_cat(const struct mb_engine *e, int t)
{
    int kd = mb_engine_task_kind(e, t);
    if (kd >= 100 && kd < 100 + MB_CK_COUNT)
        return (int)mb__comm_cat[kd - 100];
    return kd < MB_CAT_COUNT ? kd : -1;
}

/* Critical path of the step by category (seconds): what to shorten to make
 * the step shorter. Waits between a task and the one that released it
 * (nothing running on the path) count as bubble. */
static void mb__critical(struct mb_build *b, struct mb_result *r)
{
    size_t nt = mb_engine_n_tasks(b->e);
    int *path = mb_malloc((nt ? nt : 1) * sizeof *path);
    size_t n = mb_engine_critical_path(b->e, path, nt);
    for (size_t i = 0; i < n; i++) {
        int t = path[i], c = mb__task_cat(b->e, t);
        double t0 = mb_engine_task_start(b->e, t), t1 = mb_engine_task_end(b->e, t);
        if (c >= 0)
            r->critical[c] += t1 - t0;
        double released = i + 1 < n ? mb_engine_task_end(b->e, path[i + 1]) : 0;
        if (t0 > released)
            r->critical[MB_CAT_BUBBLE] += t0 - released;
    }
    mb_free(path);
}

/* Chrome/Perfetto trace of the simulated ranks: one process per pipeline
 * stage (its representative rank), one thread for compute and one per
 * communication kind; slices named by category. Written with jansson. */
static int mb__trace(struct mb_build *b, int p, const char *path, struct mb_err *err)
{
    static const char *const ck_name[MB_CK_COUNT] = {"TP comm", "CP comm", "EP comm", "PP p2p", "DP comm", "FSDP comm"};
    json_t *ev = json_array();
    for (int st = 0; st < p; st++) {
        char name[64];
        snprintf(name, sizeof name, "pipeline stage %d (representative rank)", st);
        json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "ph", "M", "name", "process_name", "pid", st,
                                            "tid", 0, "args", "name", name));
        json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "ph", "M", "name", "thread_name", "pid", st,
                                            "tid", 0, "args", "name", "compute"));
        for (int c = 0; c < MB_CK_COUNT; c++)
            json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "ph", "M", "name", "thread_name", "pid",
                                                st, "tid", c + 1, "args", "name", ck_name[c]));
        json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "ph", "M", "name", "thread_name", "pid", st,
                                            "tid", MB_CK_COUNT + 1, "args", "name", "host (kernel launches)"));
    }
    /* stream -> (process, track) */
    int nstream = 0;
    for (int st = 0; st < p; st++) {
        int ids[MB_CK_COUNT + 2] = {b->comp[st], b->host[st]};
        for (int k = 0; k < MB_CK_COUNT; k++)
            ids[k + 2] = b->cstream[st][k];
        for (int k = 0; k < MB_CK_COUNT + 2; k++)
            if (ids[k] + 1 > nstream)
                nstream = ids[k] + 1;
    }
    int *spid = mb_malloc((size_t)nstream * sizeof *spid), *stid = mb_malloc((size_t)nstream * sizeof *stid);
    for (int i = 0; i < nstream; i++)
        spid[i] = -1, stid[i] = 0;
    for (int st = 0; st < p; st++) {
        spid[b->comp[st]] = st;
        spid[b->host[st]] = st;
        stid[b->host[st]] = MB_CK_COUNT + 1;
        for (int k = 0; k < MB_CK_COUNT; k++) {
            spid[b->cstream[st][k]] = st;
            stid[b->cstream[st][k]] = k + 1;
        }
    }
    size_t nt = mb_engine_n_tasks(b->e);
    for (size_t t = 0; t < nt; t++) {
        int sid = mb_engine_task_stream(b->e, (int)t), c = mb__task_cat(b->e, (int)t);
        double t0 = mb_engine_task_start(b->e, (int)t), t1 = mb_engine_task_end(b->e, (int)t);
        if (c < 0 || t1 <= t0)
            continue;
        int pid = spid[sid], tid = stid[sid];
        const char *name = tid == MB_CK_COUNT + 1 ? "launch" : tid ? ck_name[tid - 1] : mb_cat_name((enum mb_cat)c);
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i}", "ph", "X", "name", name, "cat",
                                            tid == MB_CK_COUNT + 1 ? "host" : tid ? "comm" : "compute", "ts",
                                            t0 * 1e6, "dur", (t1 - t0) * 1e6, "pid", pid, "tid", tid));
    }
    /* dependencies between pipeline stages (activations and gradients handed
     * over) as flow arrows: from the end of the producer to the consumer */
    size_t nd = mb_engine_n_deps(b->e);
    int flow_id = 0;
    for (size_t i = 0; i < nd; i++) {
        int u, w;
        mb_engine_dep(b->e, i, &u, &w);
        int su = mb_engine_task_stream(b->e, u), sw = mb_engine_task_stream(b->e, w);
        if (spid[su] == spid[sw])
            continue;
        double te = mb_engine_task_end(b->e, u), ts = mb_engine_task_start(b->e, w);
        if (te < 0 || ts < 0)
            continue;
        flow_id++;
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:i,s:f,s:i,s:i}", "ph", "s", "name", "p2p", "cat",
                                            "pipeline", "id", flow_id, "ts", te * 1e6, "pid", spid[su], "tid",
                                            stid[su]));
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:i,s:f,s:i,s:i,s:s}", "ph", "f", "name", "p2p", "cat",
                                            "pipeline", "id", flow_id, "ts", ts * 1e6, "pid", spid[sw], "tid",
                                            stid[sw], "bp", "e"));
    }
    mb_free(spid);
    mb_free(stid);
    /* activation memory of each stage's rank as a counter track */
    for (int st = 0; st < p; st++)
        for (int i = 0; i < b->mem_n[st]; i++)
            json_array_append_new(ev, json_pack("{s:s,s:s,s:f,s:i,s:{s:f}}", "ph", "C", "name", "activation memory",
                                                "ts", b->mem_t[st][i] * 1e6, "pid", st, "args", "GiB",
                                                b->mem_v[st][i] / (1024.0 * 1024.0 * 1024.0)));
    json_t *root = json_pack("{s:o,s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
    int rc = strcmp(path, "-") ? json_dump_file(root, path, JSON_COMPACT) : json_dumpf(root, stdout, JSON_COMPACT);
    json_decref(root);
    if (rc)
        return mb_err_set(err, path, 0, 0, "cannot write the trace: %s", strerror(errno));
    return 0;
}

/* ---- routing imbalance -------------------------------------------------- */

/* Most-loaded EP rank / mean under the routing model. Balanced: 1 (Megatron's
 * force-balanced benchmarks). Skewed: expert popularity ~ Zipf(skew) in a
 * seeded random order; the rank holding the heaviest E/ep experts sets the pace. */
static double mb__imbalance(const struct mb_scenario *s)
{
    int E = s->model.num_experts, ep = s->ep;
    if (s->routing != MB_ROUTE_SKEWED || E <= 0 || ep <= 1)
        return 1.0;
    double *w = mb_calloc((size_t)E, sizeof *w);
    int *perm = mb_calloc((size_t)E, sizeof *perm);
    struct mb_rng r;
    mb_rng_seed(&r, s->routing_seed);
    for (int i = 0; i < E; i++)
        perm[i] = i;
    for (int i = E - 1; i > 0; i--) {
        int j = (int)(mb_rng_uniform(&r) * (i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    double tot = 0;
    for (int i = 0; i < E; i++) {
        w[perm[i]] = pow(i + 1.0, -s->routing_skew);
        tot += w[perm[i]];
    }
    int per = E / ep;
    double worst = 0;
    for (int rk = 0; rk < ep; rk++) {
        double sum = 0;
        for (int i = 0; i < per; i++)
            sum += w[rk * per + i];
        if (sum > worst)
            worst = sum;
    }
    mb_free(w);
    mb_free(perm);
    return worst / (tot / ep);
}

/* ---- schedule ----------------------------------------------------------- */

/* Megatron interleaved 1F1B order (v = 1 gives plain 1F1B): k-th forward or
 * backward of stage s maps to (chunk, microbatch). */
static void mb__fmap(int k, int p, int v, int *chunk, int *mb)
{
    if (v == 1) {
        *chunk = 0;
        *mb = k;
        return;
    }
    int grp = k / (p * v), in = k % (p * v);
    *chunk = in / p;
    *mb = grp * p + in % p;
}

static void mb__bmap(int k, int p, int v, int *chunk, int *mb)
{
    mb__fmap(k, p, v, chunk, mb);
    *chunk = v - 1 - *chunk;
}

static int mb__warmup(int st, int p, int v, int m)
{
    int total = m * v;
    int w = v == 1 ? p - st - 1 : (p - st - 1) * 2 + (v - 1) * p;
    return w < total ? w : total;
}

/* ---- main --------------------------------------------------------------- */

static int mb__kind_of(const struct mb_layer *L) { return (int)L->mixer * 3 + (int)L->ffn; }

/* Simulate the step with `mbs_n` microbatches per DP rank. */
static int mb__simulate(const struct mb_scenario *s, int mbs_n, const char *trace, int critical, struct mb_result *r,
                        struct mb_err *err)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(r, 0, sizeof *r);
    const struct mb_model *m = &s->model;
    struct mb_build b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.m = m;
    if (s->pp > MB_MAX_STAGES)
        return mb_err_set(err, s->file, 0, 0, "pp = %d exceeds the simulator's limit of %d stages", s->pp,
                          MB_MAX_STAGES);
    if (mb_calib_load(s->system.gpu, s->calib_path[0] ? s->calib_path : NULL, &b.cal, err))
        return -1;
    mb_calib_set_roofline(b.cal, s->roofline);
    b.gpu = mb_calib_spec(b.cal);
    if (b.gpu->peak[s->prec.gemm] <= 0) {
        int rc = mb_err_set(err, s->file, 0, 0, "%s has no dense %s tensor-core rate (precision '%s')", b.gpu->name,
                            mb_prec_name(s->prec.gemm), s->prec.label);
        mb_calib_free(b.cal);
        return rc;
    }
    b.launch = (s->cuda_graph & MB_CG_FULL_ITERATION) ? 0 : b.gpu->launch_s;
    b.gemm_scale = mb_calib_recipe_gemm_scale(b.cal, s->prec.label);
    b.nv_cap = s->system.nvlink_bw * mb_calib_link_eff(b.cal, MB_LINK_NVLINK);
    b.nic_cap = s->system.nic_bw * mb_calib_link_eff(b.cal, MB_LINK_NIC);
    b.nv_lat = s->system.nvlink_latency + mb_calib_link_latency(b.cal, MB_LINK_NVLINK);
    b.nic_lat = s->system.nic_latency + mb_calib_link_latency(b.cal, MB_LINK_NIC);
    if (s->system.nvls) {
        double eff = mb_calib_link_eff(b.cal, MB_LINK_NVLS);
        b.nvls_bw = s->system.nvlink_bw * (eff > 0 ? eff : MB_FABRIC_NVLS_EFF);
        b.nvls_lat = mb_calib_link_latency(b.cal, MB_LINK_NVLS);
    }
    int dom = s->system.nvlink_domain > 0 ? s->system.nvlink_domain : s->system.gpus_per_node;
    b.g_tp = mb__group(s->tp, 1, dom);
    b.g_cp = mb__group(s->cp, s->tp, dom);
    b.g_dp = mb__group(s->dp, s->tp * s->cp, dom);
    /* expert layout: EP groups are carved from CP x DP with ETP fastest (Megatron parallel_state) */
    b.g_ep = mb__group(s->ep, s->etp, dom);
    int edp = (s->tp * s->cp * s->dp) / (s->ep * s->etp);
    if (edp < 1)
        edp = 1;
    b.g_edp = mb__group(edp, s->ep * s->etp, dom);
    b.pp_over_nic = (long)s->tp * s->cp * s->dp * 2 > dom;

    b.route_imbalance = mb__imbalance(s);
    /* with a capacity factor (Megatron --moe-expert-capacity-factor) no expert
     * takes more than cf x its balanced share; the rest is dropped */
    if (s->capacity_factor >= 1 && b.route_imbalance > s->capacity_factor)
        b.route_imbalance = s->capacity_factor;

    int p = s->pp, v = s->vpp > 0 ? s->vpp : 1;
    r->microbatches = mbs_n;

    /* decoder layers (+ MTP as extra layers on the last stage) to virtual stages */
    int nl = m->n_layers;
    int nv_st = p * v;
    int *first = mb_calloc((size_t)nv_st, sizeof *first), *count = mb_calloc((size_t)nv_st, sizeof *count);
    /* Even split when it divides; otherwise as Megatron's
     * account_for_embedding/loss_in_pipeline_split: the embedding and the loss
     * each count as one layer of the first and last virtual stage, and the
     * num_layers + 2 units are spread as evenly as possible (extra ones first). */
    int units = nl % nv_st ? nl + 2 : nl;
    for (int i = 0, at = 0; i < nv_st; i++) {
        count[i] = units / nv_st + (i < units % nv_st ? 1 : 0);
        if (units != nl)
            count[i] -= (i == 0) + (i == nv_st - 1);
        if (count[i] < 0)
            count[i] = 0;
        first[i] = at;
        at += count[i];
    }
    if (s->pipeline_layout[0]) {
        /* an explicit Megatron layout: the 't's of each '|'-separated segment
         * (segment i is virtual stage i, as in Megatron) */
        int seg = 0;
        memset(count, 0, (size_t)nv_st * sizeof *count);
        for (const char *c = s->pipeline_layout; *c && seg < nv_st; c++) {
            if (*c == '|')
                seg++;
            else if (*c == 't')
                count[seg]++;
        }
        for (int i = 0, at = 0; i < nv_st; i++) {
            first[i] = at;
            at += count[i];
        }
    }

    /* op lists per layer kind */
    struct mb_oplist ops[18];
    int have[18] = {0};
    memset(ops, 0, sizeof ops);
    int lang_frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    for (int i = 0; i < nl; i++) {
        int k = mb__kind_of(&m->layer[i]);
        if (have[k])
            continue;
        have[k] = 1;
        b.layer_region = ++b.region_seq;
        mb__mixer(&b, &ops[k], m->layer[i].mixer, lang_frozen);
        int start = ops[k].n;
        mb__ffn(&b, &ops[k], m->layer[i].ffn, lang_frozen);
        unsigned tag = m->layer[i].ffn == MB_FFN_MOE ? MB_RCM_MOE : m->layer[i].ffn == MB_FFN_DENSE ? MB_RCM_MLP : 0;
        for (int j = start + 1; j < ops[k].n; j++) /* the block after its pre-norm */
            ops[k].op[j].module |= tag;
        ops[k].input_bytes = (double)s->micro_batch_size * s->seq_length / s->cp / s->tp * m->hidden * BF16;
    }
    /* embedding (stage 0) and output layer + loss (last stage) */
    struct mb_oplist emb = {0}, head = {0};
    {
        double T = (double)s->micro_batch_size * s->seq_length / s->cp;
        mb__mem(&b, &emb, MB_CAT_DENSE, 0, 0, 2 * T * m->hidden * BF16 / s->tp, 0);
        mb__norm(&b, &head, MB_CAT_DENSE, 0, T / s->tp, m->hidden);
        mb__ring(&b, &head, MB_CK_TP, b.g_tp, T * m->hidden * BF16, 0);
        for (int i = 0; i <= m->mtp_layers; i++) {
            mb__gemm(&b, &head, MB_CAT_DENSE, 0, 0, T, (double)m->vocab / s->tp, m->hidden, T * m->hidden * BF16,
                     lang_frozen);
            /* fp32 logits: softmax cross-entropy reads/writes them (vocab-parallel CE) */
            mb__mem(&b, &head, MB_CAT_DENSE, 0, 0, 3 * T * (double)m->vocab / s->tp * 4, T * (double)m->vocab / s->tp * 4);
            /* Megatron _VocabParallelCrossEntropy, unfused: max, subtract, exp, sum,
             * target masking/gather (~4), log, mean: ~10 kernels forward (its two
             * small TP all-reduces ignored), softmax-minus-one-hot ~4 backward */
            head.op[head.n - 1].kf = 10;
            head.op[head.n - 1].kb = 4;
        }
    }
    int mtp_kind = -1;
    if (m->mtp_layers > 0 && nl > 0)
        mtp_kind = mb__kind_of(&m->layer[nl - 1]);

    /* recompute policy */
    unsigned rc_mask = 0;
    if (s->recompute == MB_RC_SELECTIVE)
        rc_mask = s->recompute_modules;
    else if (s->recompute == MB_RC_FULL)
        rc_mask = ~0u;

    /* engine resources */
    b.e = mb_engine_new();
    {
        /* size hint: every layer op runs forward, backward and maybe again in
         * recompute, each with a host launch task and a couple of edges */
        size_t per_mb = 64;
        for (int i = 0; i < nl; i++)
            per_mb += (size_t)ops[mb__kind_of(&m->layer[i])].n;
        size_t est = per_mb * 3 * 2 * (size_t)(mbs_n > 0 ? mbs_n : 1) + 1024;
        mb_engine_reserve(b.e, est, 2 * est);
    }
    for (int st = 0; st < p; st++) {
        b.comp[st] = mb_engine_add_stream(b.e);
        for (int c = 0; c < MB_CK_COUNT; c++)
            b.cstream[st][c] = mb_engine_add_stream(b.e);
        b.l_nv[st] = mb_engine_add_link(b.e, b.nv_cap > 0 ? b.nv_cap : 1e9);
        b.l_nic[st] = mb_engine_add_link(b.e, b.nic_cap > 0 ? b.nic_cap : 1e9);
        b.host[st] = mb_engine_add_stream(b.e);
    }

    /* parameters per stage (elements), for DP/FSDP traffic and memory */
    struct mb_params par;
    mb_model_params(m, &par);
    double dense_layer_params = 0, expert_layer_params = 0;
    int n_moe = 0;
    for (int i = 0; i < nl; i++)
        n_moe += m->layer[i].ffn == MB_FFN_MOE;
    double body_dense = par.attn + par.dense_mlp + par.shared + par.router + par.norms;
    dense_layer_params = nl ? body_dense / nl : 0;
    expert_layer_params = n_moe ? par.experts / n_moe : 0;
    struct mb_layout lay;
    memset(&lay, 0, sizeof lay);
    lay.p = p;
    lay.v = v;
    lay.m = mbs_n;
    lay.edp = edp;
    lay.first = first;
    lay.count = count;
    for (int st = 0; st < p; st++) {
        for (int c = 0; c < v; c++) {
            int vs = c * p + st;
            for (int i = first[vs]; i < first[vs] + count[vs]; i++) {
                lay.params_dense_stage[st] += dense_layer_params;
                if (m->layer[i].ffn == MB_FFN_MOE)
                    lay.params_expert_stage[st] += expert_layer_params;
            }
        }
    }
    lay.layer_params = dense_layer_params / s->tp + (n_moe ? expert_layer_params / (s->ep * s->etp) : 0);
    lay.params_dense_stage[0] += par.embedding;
    /* output layer and MTP block on the last stage; an MTP block whose layer is MoE
     * holds one layer of routed experts, sharded by EP like the others */
    double mtp_experts = (m->mtp_layers > 0 && nl > 0 && m->layer[nl - 1].ffn == MB_FFN_MOE)
                             ? fmin(par.mtp, m->mtp_layers * expert_layer_params)
                             : 0;
    lay.params_dense_stage[p - 1] += par.output + par.mtp - mtp_experts;
    lay.params_expert_stage[p - 1] += mtp_experts;
    lay.params_vision = par.vision;
    /* CUDA-graph memory: TE's make_graphed_callables (Megatron-Core
     * --cuda-graph-impl transformer_engine) captures a forward and a backward
     * graph per captured module, layer and microbatch, each with static input
     * and output tensors: 2 hidden-state buffers [s/tp, b, h] per graph and
     * direction. The buffers of microbatches not in flight are reused, so a
     * stage holds those of its in-flight chunk-forwards, like its activations
     * (keeping all microbatches' would put the published Qwen3-30B-A3B H100
     * run with scoped graphs, which ran in 80 GB, at ~190 GiB). The pool's
     * intermediate tensors are the activations already counted. A
     * full-iteration graph keeps no per-module static buffers. */
    if (s->cuda_graph && !(s->cuda_graph & MB_CG_FULL_ITERATION)) {
        double hbuf = (double)s->micro_batch_size * s->seq_length / s->cp / s->tp * m->hidden * BF16;
        int m_all = s->global_batch_size / (s->micro_batch_size * s->dp);
        for (int st = 0; st < p; st++) {
            int warm = v == 1 ? p - st - 1 : (p - st - 1) * 2 + (v - 1) * p;
            int inflight = warm + 1 + (s->overlap_ep_comm && m->num_experts > 0 && s->ep > 1);
            if (inflight > m_all * v)
                inflight = m_all * v;
            double per_chunk_mb = (double)inflight / v; /* microbatches in flight per chunk */
            for (int c = 0; c < v; c++) {
                int vs = c * p + st;
                for (int i = first[vs]; i < first[vs] + count[vs]; i++) {
                    const struct mb_oplist *L = &ops[mb__kind_of(&m->layer[i])];
                    int nreg = 0, last = 0;
                    for (int q = 0; q < L->n; q++)
                        if (L->op[q].region && L->op[q].region != last) {
                            nreg++;
                            last = L->op[q].region;
                        }
                    lay.graph_bytes_stage[st] += nreg * 2.0 * 2.0 * hbuf * per_chunk_mb;
                }
            }
        }
    }

    /* Vision work per microbatch. Every data-parallel rank draws its own images
     * (seeded). MoE layers synchronise the EP group at every all-to-all, so in
     * each microbatch the rank with the most vision work in its EP group sets
     * the pace; gradient synchronisation at the end of the step then waits for
     * the slowest group. The simulated rank therefore carries, per microbatch,
     * the group maximum of the slowest group. Up to MB_VISION_RANKS ranks are
     * drawn (the expected maximum saturates long before that). */
    double *vP = mb_calloc((size_t)mbs_n, sizeof *vP), *vQ = mb_calloc((size_t)mbs_n, sizeof *vQ);
    double sumP = 0, sumQ = 0, sum_merged = 0, act_vision = 0;
    double drawn_useful = 0, drawn_lsq = 0, drawn_samples = 0, draws = 0, R_used = 1;
    {
        int R = s->dp < MB_VISION_RANKS ? s->dp : MB_VISION_RANKS;
        int G = (m->num_experts > 0 && s->ep > 1) ? (s->ep < R ? s->ep : R) : 1;
        R -= R % G;
        if (R < 1)
            R = G = 1;
        int vis_on = !(s->mock || s->images.dist == MB_IMG_NONE || m->vision.depth == 0);
        if (!vis_on && (s->text_max <= 0 || s->mock))
            R = G = 1; /* every rank's data is the same: full text sequences */
        R_used = R;
        double *gP = mb_calloc((size_t)mbs_n, sizeof *gP), *gQ = mb_calloc((size_t)mbs_n, sizeof *gQ);
        double best_total = -1, drawn_merged = 0, drawnP = 0, drawnQ = 0;
        struct mb_sampler sm;
        memset(&sm, 0, sizeof sm);
        mb_rng_seed(&sm.rng, s->images.seed);
        for (int g0 = 0; g0 < R; g0 += G) {
            double total = 0;
            for (int i = 0; i < mbs_n; i++) {
                gP[i] = gQ[i] = 0;
                for (int rk = 0; rk < G; rk++) {
                    struct mb_mbdraw d;
                    mb__draw_microbatch(s, m, &sm, &d);
                    drawnP += d.P;
                    drawnQ += d.Q;
                    drawn_merged += d.merged;
                    drawn_useful += d.useful;
                    drawn_lsq += d.lsq;
                    drawn_samples += d.samples;
                    if (d.P > gP[i]) {
                        gP[i] = d.P;
                        gQ[i] = d.Q;
                    }
                }
                total += gP[i];
            }
            if (total > best_total) {
                best_total = total;
                memcpy(vP, gP, (size_t)mbs_n * sizeof *vP);
                memcpy(vQ, gQ, (size_t)mbs_n * sizeof *vQ);
            }
        }
        mb_free(gP);
        mb_free(gQ);
        /* model FLOPs count the mean rank's data, not the slowest */
        sumP = drawnP / R;
        sumQ = drawnQ / R;
        sum_merged = drawn_merged / R;
        draws = (double)R * mbs_n;
    }
    r->vision_tokens_per_sample = drawn_samples > 0 ? sum_merged * R_used / drawn_samples : 0;
    /* per sequence: positions carrying data and the attention work relative to seq^2 */
    double useful_per_seq = draws > 0 ? drawn_useful / (draws * s->micro_batch_size) : s->seq_length;
    double lsq_per_seq = draws > 0 ? drawn_lsq / (draws * s->micro_batch_size)
                                   : (double)s->seq_length * s->seq_length;
    double attn_scale = lsq_per_seq / ((double)s->seq_length * s->seq_length);
    if (attn_scale < 1.0) {
        /* packed sequences: attention runs within each sample (THD) */
        for (int k = 0; k < 18; k++)
            for (int i = 0; i < ops[k].n; i++) {
                struct mb_op *o = &ops[k].op[i];
                if (o->type == MB_OP_COMP && o->cat == MB_CAT_ATTN && (o->module & MB_RCM_CORE_ATTN)) {
                    o->fwd *= attn_scale;
                    o->bwd *= attn_scale;
                    o->bwd_dgrad_only *= attn_scale;
                }
            }
    }
    for (int k = 0; k < 18; k++)
        mb__fuse(&ops[k], rc_mask);

    /* ---- the step graph ---- */
    int is_fsdp = s->strategy == MB_STRAT_FSDP;
    double act_bytes = (double)s->micro_batch_size * s->seq_length / s->cp / s->tp * m->hidden * BF16;
    /* distributed-optimizer parameter all-gather (bf16) before the first forward */
    int pg_done[MB_MAX_STAGES];
    for (int st = 0; st < p; st++) {
        pg_done[st] = -1;
        if (is_fsdp || lang_frozen || !s->dist_opt) /* DDP: every rank updates all its parameters */
            continue;
        int t = mb__comm(&b, st, MB_CK_DP, b.g_dp, lay.params_dense_stage[st] / s->tp * BF16, 0, -1);
        t = mb__comm(&b, st, MB_CK_DP, b.g_edp, lay.params_expert_stage[st] / (s->ep * s->etp) * BF16, 0, t);
        pg_done[st] = s->overlap_param_gather ? -1 : t;
    }

    /* per (stage, chunk, microbatch): entry join task and p2p send task of the
     * forward and backward; cross-stage edges are added once all tasks exist */
    size_t nslots = (size_t)p * v * (mbs_n > 0 ? mbs_n : 1);
    int *fentry = mb_malloc(nslots * sizeof(int)), *fsend = mb_malloc(nslots * sizeof(int));
    int *bentry = mb_malloc(nslots * sizeof(int)), *bsend = mb_malloc(nslots * sizeof(int));
    int *bdone = mb_malloc(nslots * sizeof(int)), *fdone = mb_malloc(nslots * sizeof(int));
    for (size_t i = 0; i < nslots; i++)
        fentry[i] = fsend[i] = bentry[i] = bsend[i] = bdone[i] = fdone[i] = -1;
#define SLOT(st, c, i) (((size_t)(c) * p + (st)) * mbs_n + (i))
    int *lastb_layer = mb_malloc((size_t)(nl > 0 ? nl : 1) * sizeof(int));
    for (int i = 0; i < nl; i++)
        lastb_layer[i] = -1;
    int vis_max = 0;
    for (int i = 1; i < mbs_n; i++)
        if (vP[i] > vP[vis_max])
            vis_max = i;
    if (mbs_n > 0 && vP[vis_max] > 0) {
        struct mb_oplist vis = {0};
        mb__vision(&b, &vis, vP[vis_max], vQ[vis_max]);
        for (int q = 0; q < vis.n; q++)
            act_vision += vis.op[q].saved;
        mb_free(vis.op);
    }
    int frozen_v = (s->freeze & MB_FREEZE_VISION) != 0, frozen_p = (s->freeze & MB_FREEZE_VISION_PROJ) != 0;

    /* parameters (elements) of decoder layer li on this rank, for FSDP traffic */
#define layer_params(li)                                                                                    \
    (dense_layer_params / s->tp + (m->layer[li].ffn == MB_FFN_MOE ? expert_layer_params / (s->ep * s->etp) : 0))
    /* vision op lists per microbatch (forward; projector-only when the encoder is frozen) */
    struct mb_oplist *visl = mb_calloc((size_t)(mbs_n > 0 ? mbs_n : 1), sizeof *visl);
    struct mb_oplist *visp = mb_calloc((size_t)(mbs_n > 0 ? mbs_n : 1), sizeof *visp);
    for (int i = 0; i < mbs_n; i++) {
        if (vP[i] <= 0)
            continue;
        mb__vision(&b, &visl[i], vP[i], vQ[i]);
        mb__fuse(&visl[i], 0);
        for (int q = 0; q < visl[i].n; q++)
            if (visl[i].op[q].cat == MB_CAT_PROJECTOR)
                mb__push(&visp[i], &visl[i].op[q]);
    }
    int ep_overlap = s->overlap_ep_comm && m->num_experts > 0 && s->ep > 1;
    /* a dispatcher kernel occupies dispatcher_sms of the GPU's SMs while it runs */
    double sm_frac = b.gpu->sms > 0 ? fmin(1.0, (double)s->dispatcher_sms / b.gpu->sms) : 0;
    struct mb_unit fu = {0}, bu = {0};

    for (int st = 0; st < p; st++) {
        int total = mbs_n * v, w = mb__warmup(st, p, v, mbs_n);
        int fk = 0, bk = 0;
        struct mb_gate gate = {{0}, 0}; /* FSDP gathers of this stage, for the prefetch depth */
        while (fk < total || bk < total) {
            int is_f = fk < w ? 1 : fk >= total ? 0 : (fk - w) <= bk;
            /* overlap pairs a backward with the forward that follows it in 1F1B
             * order (Megatron's combined 1F1B): B(j) no longer depends on F(j+1),
             * which the naive pairing F(j)+B(j) on the last stage would break */
            int pair = ep_overlap && !is_f && fk < total;
            int do_f = is_f || pair, do_b = !is_f;
            int fc = 0, fi = 0, bc = 0, bi = 0;
            /* the backward's entry first: in a pair it runs first on the stream */
            if (do_b) {
                mb__bmap(bk++, p, v, &bc, &bi);
                int vs = bc * p + st;
                bentry[SLOT(st, bc, bi)] = mb__unit_open(&b, st, &bu);
                if (vs == nv_st - 1) {
                    mb__it_ops(&bu, &head, 1, 0, 0, lang_frozen);
                    for (int q = 0; mtp_kind >= 0 && q < m->mtp_layers; q++)
                        mb__it_ops(&bu, &ops[mtp_kind], 1, 0, 0, lang_frozen);
                }
                for (int li = first[vs] + count[vs] - 1; li >= first[vs]; li--) {
                    const struct mb_oplist *L = &ops[mb__kind_of(&m->layer[li])];
                    if (is_fsdp) {
                        struct mb_item x = {MB_IT_FSDP_AG, NULL, 0, 0, 0, 0, layer_params(li) * BF16, li};
                        mb__it_add(&bu, x);
                    }
                    /* full recompute, block method: only the first num_layers layers of
                     * each chunk are checkpointed; uniform re-forwards every layer */
                    int rc_here = rc_mask && !(s->recompute == MB_RC_FULL && s->recompute_method == MB_RC_BLOCK &&
                                               s->recompute_num_layers > 0 &&
                                               li - first[vs] >= s->recompute_num_layers);
                    if (rc_here)
                        mb__it_ops(&bu, L, 0, 1, rc_mask, 0);
                    mb__it_ops(&bu, L, 1, 0, 0, lang_frozen);
                    if (is_fsdp && !lang_frozen) { /* reduce-scatter of this layer's fp32 main grads */
                        struct mb_item x = {MB_IT_FSDP_RS, NULL, 0, 0, 0, 0, layer_params(li) * s->grad_bytes, li};
                        mb__it_add(&bu, x);
                    }
                    struct mb_item mk = {MB_IT_LASTB, NULL, 0, 0, 0, 0, 0, li};
                    mb__it_add(&bu, mk);
                }
                if (vs == 0) {
                    mb__it_ops(&bu, &emb, 1, 0, 0, lang_frozen);
                    if (visl[bi].n && !(frozen_v && frozen_p))
                        mb__it_ops(&bu, frozen_v ? &visp[bi] : &visl[bi], 1, 0, 0, 0);
                }
            }
            if (do_f) {
                mb__fmap(fk++, p, v, &fc, &fi);
                int vs = fc * p + st;
                fentry[SLOT(st, fc, fi)] = mb__unit_open(&b, st, &fu);
                if (fk == 1 && pg_done[st] >= 0)
                    mb_engine_add_dep(b.e, pg_done[st], fu.em.last);
                if (vs == 0) {
                    if (visl[fi].n)
                        mb__it_ops(&fu, &visl[fi], 0, 0, 0, 0);
                    mb__it_ops(&fu, &emb, 0, 0, 0, 0);
                }
                for (int li = first[vs]; li < first[vs] + count[vs]; li++) {
                    if (is_fsdp) {
                        struct mb_item x = {MB_IT_FSDP_AG, NULL, 0, 0, 0, 0, layer_params(li) * BF16, li};
                        mb__it_add(&fu, x);
                    }
                    mb__it_ops(&fu, &ops[mb__kind_of(&m->layer[li])], 0, 0, 0, 0);
                }
                if (vs == nv_st - 1) {
                    for (int q = 0; mtp_kind >= 0 && q < m->mtp_layers; q++)
                        mb__it_ops(&fu, &ops[mtp_kind], 0, 0, 0, 0);
                    mb__it_ops(&fu, &head, 0, 0, 0, 0);
                }
            }
            if (do_f && do_b)
                mb__run_pair(&b, st, &bu, &fu, sm_frac, &gate, lastb_layer);
            else if (do_f)
                mb__run_unit(&b, st, &fu, 0, &gate, lastb_layer);
            else
                mb__run_unit(&b, st, &bu, 0, &gate, lastb_layer);
            if (do_f)
                fdone[SLOT(st, fc, fi)] = fu.em.last;
            if (do_f && fc * p + st != nv_st - 1)
                fsend[SLOT(st, fc, fi)] = mb__comm(&b, st, MB_CK_PP, (struct mb_group){1, 1, 1, 1}, act_bytes,
                                                   b.pp_over_nic, fu.em.last);
            if (do_b) {
                if (bc * p + st != 0)
                    bsend[SLOT(st, bc, bi)] = mb__comm(&b, st, MB_CK_PP, (struct mb_group){1, 1, 1, 1}, act_bytes,
                                                       b.pp_over_nic, bu.em.last);
                bdone[SLOT(st, bc, bi)] = bu.em.last;
            }
        }
    }
    mb_free(fu.it);
    mb_free(bu.it);
    for (int i = 0; i < mbs_n; i++) {
        mb_free(visl[i].op);
        mb_free(visp[i].op);
    }
    mb_free(visl);
    mb_free(visp);
#undef layer_params
    /* cross-stage edges: forward of virtual stage vs after the send of vs-1,
     * backward of vs after the send of vs+1 (the interleaved wrap-around is
     * vs = c*p + s, so stage p-1 chunk c feeds stage 0 chunk c+1) */
    for (int vs = 0; vs < nv_st; vs++) {
        int st = vs % p, c = vs / p;
        for (int i = 0; i < mbs_n; i++) {
            if (vs > 0) {
                int ps = (vs - 1) % p, pc = (vs - 1) / p;
                mb_engine_add_dep(b.e, fsend[SLOT(ps, pc, i)], fentry[SLOT(st, c, i)]);
            }
            if (vs < nv_st - 1) {
                int ns = (vs + 1) % p, nc = (vs + 1) / p;
                mb_engine_add_dep(b.e, bsend[SLOT(ns, nc, i)], bentry[SLOT(st, c, i)]);
            }
        }
    }

    /* gradient reduce-scatter (distributed optimizer; all-reduce without it), then the optimizer */
    for (int st = 0; st < p; st++) {
        int stage_end = bdone[SLOT(st, 0, mbs_n - 1)]; /* last backward of the stage */
        int last = stage_end;
        double rest = lay.params_dense_stage[st], exp_rest = lay.params_expert_stage[st];
        if (!is_fsdp && !lang_frozen) {
            if (s->overlap_grad_reduce) {
                /* one bucket per layer, issued as that layer's last backward ends (chunks
                 * finish in reverse order under interleaving) */
                for (int c = v - 1; c >= 0; c--) {
                    int vs = c * p + st;
                    for (int li = first[vs] + count[vs] - 1; li >= first[vs]; li--) {
                        int t = mb__grad_reduce(&b, st, b.g_dp, dense_layer_params / s->tp * s->grad_bytes,
                                                lastb_layer[li]);
                        rest -= dense_layer_params;
                        if (m->layer[li].ffn == MB_FFN_MOE) {
                            t = mb__grad_reduce(&b, st, b.g_edp,
                                                expert_layer_params / (s->ep * s->etp) * s->grad_bytes, t);
                            exp_rest -= expert_layer_params;
                        }
                    }
                }
            }
            /* what is left (all of it without overlap; embedding/output with it) */
            last = mb__grad_reduce(&b, st, b.g_dp, fmax(rest, 0) / s->tp * s->grad_bytes, stage_end);
            last = mb__grad_reduce(&b, st, b.g_edp, fmax(exp_rest, 0) / (s->ep * s->etp) * s->grad_bytes, last);
        }
        /* Adam over this rank's shard, memory-bound: fp32 master, grad, m, v read and
         * master, m, v written, bf16 param written = 10 + grad + 2 (m + v) bytes per
         * element: 30 with fp32 grads and moments */
        double dpd = s->dist_opt ? s->dp : 1, edpd = s->dist_opt ? edp : 1; /* DDP: no sharding */
        double shard = lang_frozen ? 0
                                   : lay.params_dense_stage[st] / s->tp / dpd +
                                         lay.params_expert_stage[st] / (s->ep * s->etp) / edpd;
        if (st == 0 && !frozen_v)
            shard += lay.params_vision / s->tp / dpd;
        mb__task(&b, b.comp[st], MB_CAT_OPTIMIZER,
                 mb_calib_membound(b.cal, shard * (10.0 + s->grad_bytes + 2.0 * s->state_bytes)), NULL, 0, last);
    }

    int rc = mb_engine_run(b.e, err);
    if (rc == 0) {
        double step = mb_engine_makespan(b.e);
        r->step_time_s = step;
        r->events = mb_engine_n_events(b.e);
        r->tasks = mb_engine_n_tasks(b.e);
        mb__breakdown(&b, p, step, r);
        if (critical)
            mb__critical(&b, r);
        /* activation memory over the timeline: a microbatch's activations of a
         * chunk count from the start of its forward (they are allocated while it
         * runs: counting them whole from its start bounds the peak inside it)
         * until its backward ends; the running sum's maximum is the stage's
         * activation peak */
        double act_tl[MB_MAX_STAGES];
        for (int st = 0; st < p; st++) {
            int ne = 2 * v * mbs_n;
            double *et = mb_malloc((size_t)(ne > 0 ? ne : 1) * sizeof *et);
            double *ev = mb_malloc((size_t)(ne > 0 ? ne : 1) * sizeof *ev);
            int k = 0;
            for (int c = 0; c < v; c++) {
                double a = mb_memory_chunk_act(s, &lay, ops, st, c);
                for (int i = 0; i < mbs_n; i++) {
                    double ai = a;
                    if (st == 0 && c == 0 && !frozen_v && vP[i] > 0)
                        ai += act_vision * vP[i] / vP[vis_max];
                    if (fentry[SLOT(st, c, i)] >= 0 && bdone[SLOT(st, c, i)] >= 0) {
                        et[k] = mb_engine_task_end(b.e, fentry[SLOT(st, c, i)]);
                        ev[k++] = ai;
                        et[k] = mb_engine_task_end(b.e, bdone[SLOT(st, c, i)]);
                        ev[k++] = -ai;
                    }
                }
            }
            /* insertion sort by time (frees first at equal times: a backward that
             * ends as the next forward starts has released its memory) */
            for (int i = 1; i < k; i++) {
                double tt = et[i], vv = ev[i];
                int j = i - 1;
                while (j >= 0 && (et[j] > tt || (et[j] == tt && ev[j] > 0 && vv < 0))) {
                    et[j + 1] = et[j];
                    ev[j + 1] = ev[j];
                    j--;
                }
                et[j + 1] = tt;
                ev[j + 1] = vv;
            }
            double cur = 0, peak = 0;
            for (int i = 0; i < k; i++) {
                cur += ev[i];
                ev[i] = cur;
                if (cur > peak)
                    peak = cur;
            }
            act_tl[st] = peak;
            b.mem_t[st] = et;
            b.mem_v[st] = ev;
            b.mem_n[st] = k;
        }
#undef SLOT
        if (trace && mb__trace(&b, p, trace, err))
            rc = -1;

        /* metrics */
        double gbs = (double)mbs_n * s->micro_batch_size * s->dp, seq = s->seq_length;
        r->tokens_per_s_per_gpu = gbs * seq / (step * s->gpus);
        r->useful_tokens_per_s_per_gpu = gbs * useful_per_seq / (step * s->gpus);
        /* Megatron's count: padded (BSHD) sequences count every position; packed
         * (THD) sequences count real tokens and per-sample squared lengths */
        double llm = s->packed ? mb_model_flops(m, gbs * useful_per_seq, gbs * lsq_per_seq)
                               : mb_model_flops(m, gbs * seq, gbs * seq * seq);
        double vit = mb_model_vit_flops(m, sumP * s->dp, sumQ * s->dp);
        r->model_flops = llm + vit;
        r->model_tflops_per_gpu = r->model_flops / (step * 1e12 * s->gpus);
        r->mfu = r->model_tflops_per_gpu * 1e12 / b.gpu->peak[s->prec.gemm];

        /* memory */
        mb_memory_estimate(s, &lay, ops, act_vision, b.gpu->hbm_bytes, act_tl, &r->mem);
        r->oom = r->mem.reserved > r->mem.capacity;
        snprintf(r->calib_path, sizeof r->calib_path, "%s", mb_calib_path(b.cal));
        for (size_t i = 0; i < mb_calib_n_tables(b.cal); i++) {
            struct mb_calib_table_info ti = mb_calib_table(b.cal, i);
            r->calib_lookups += ti.lookups;
            r->calib_fallbacks += ti.fallbacks;
        }
    }
    for (int k = 0; k < 18; k++)
        mb_free(ops[k].op);
    mb_free(emb.op);
    mb_free(head.op);
    mb_free(first);
    mb_free(count);
    mb_free(vP);
    mb_free(vQ);
    mb_free(fentry);
    mb_free(fsend);
    mb_free(bentry);
    mb_free(bsend);
    mb_free(bdone);
    mb_free(lastb_layer);
    mb_free(b.hostdep);
    for (int st = 0; st < p; st++) {
        mb_free(b.mem_t[st]);
        mb_free(b.mem_v[st]);
    }
    mb_free(fdone);
    mb_engine_free(b.e);
    mb_calib_free(b.cal);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->sim_wall_s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return rc;
}

static double mb__lin(double a2, double a1, double k) { return a2 + k * (a2 - a1); }

/* Extend r (simulated at count n2) linearly to count n2 + k (n2 - n1), given r1
 * simulated at n1: step, breakdown, critical path and model FLOPs (exact when
 * each extra unit adds the same), and with `mem` the per-stage memory too (the
 * layer extension; with microbatches memory is already steady). `flops` > 0
 * replaces the extended model FLOPs (microbatches: the m2 run's per-microbatch
 * mean, which averages more image draws). Rates are recomputed from the step. */
static void mb__extend(const struct mb_scenario *s, struct mb_result *r, const struct mb_result *r1, double k,
                       int mem, double flops)
{
    double mfu_per_tflops = r->model_tflops_per_gpu > 0 ? r->mfu / r->model_tflops_per_gpu : 0;
    double useful_ratio = r->tokens_per_s_per_gpu > 0 ? r->useful_tokens_per_s_per_gpu / r->tokens_per_s_per_gpu : 1;
    r->step_time_s = mb__lin(r->step_time_s, r1->step_time_s, k);
    r->model_flops = flops > 0 ? flops : mb__lin(r->model_flops, r1->model_flops, k);
    for (int c = 0; c < MB_CAT_COUNT; c++) {
        r->breakdown[c] = fmax(0, mb__lin(r->breakdown[c], r1->breakdown[c], k));
        r->critical[c] = fmax(0, mb__lin(r->critical[c], r1->critical[c], k));
    }
    if (mem) {
        struct mb_memory *M = &r->mem;
        for (int i = 0; i < M->n_stages && i < r1->mem.n_stages; i++) {
            struct mb_memory_stage *a = &M->per_stage[i];
            const struct mb_memory_stage *b1 = &r1->mem.per_stage[i];
            a->weights = mb__lin(a->weights, b1->weights, k);
            a->grads = mb__lin(a->grads, b1->grads, k);
            a->optimizer = mb__lin(a->optimizer, b1->optimizer, k);
            a->activations = mb__lin(a->activations, b1->activations, k);
            a->buffers = mb__lin(a->buffers, b1->buffers, k);
            a->graphs = mb__lin(a->graphs, b1->graphs, k);
            a->peak_allocated = mb__lin(a->peak_allocated, b1->peak_allocated, k);
            a->reserved = mb__lin(a->reserved, b1->reserved, k);
        }
        mb_memory_summarize(M);
        r->oom = M->reserved > M->capacity;
    }
    r->tokens_per_s_per_gpu = (double)s->global_batch_size * s->seq_length / (r->step_time_s * s->gpus);
    r->useful_tokens_per_s_per_gpu = r->tokens_per_s_per_gpu * useful_ratio;
    r->model_tflops_per_gpu = r->model_flops / (r->step_time_s * 1e12 * s->gpus);
    r->mfu = r->model_tflops_per_gpu * mfu_per_tflops;
    r->sim_wall_s += r1->sim_wall_s;
    r->events += r1->events;
}

/* Steady-state 1F1B is periodic: past the warm-up, every extra microbatch adds
 * the same time to the step. Large microbatch counts are therefore simulated at
 * two counts m1 < m2 <= cap (multiples of pp, as interleaving needs) and the
 * step extended linearly: T(m) = T(m2) + (m - m2) (T(m2) - T(m1)) / (m2 - m1).
 * This keeps time and memory bounded for any global batch size; the tests
 * check it against a full simulation. The per-step terms must have stopped
 * changing for the step to be linear in m: when the exposed DP/FSDP
 * communication (hidden behind more backward work as m grows) still differs
 * between m1 and m2, the full simulation runs instead. */
#define MB_STEP_MB_CAP 64

static int mb__simulate_mb(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_result *r,
                           struct mb_err *err)
{
    int m = s->global_batch_size / (s->micro_batch_size * s->dp);
    int p = s->pp > 0 ? s->pp : 1;
    int crit = o ? o->critical_path : 1;
    int cap = o && o->mb_cap ? o->mb_cap : MB_STEP_MB_CAP;
    if (cap < 0)
        return mb__simulate(s, m, NULL, crit, r, err);
    if (cap < 4 * p)
        cap = 4 * p;
    cap -= cap % p;
    if (m <= cap)
        return mb__simulate(s, m, NULL, crit, r, err);
    int m2 = cap, m1 = cap / 2 - (cap / 2) % p;
    struct mb_result r1;
    if (mb__simulate(s, m1, NULL, crit, &r1, err) || mb__simulate(s, m2, NULL, crit, r, err))
        return -1;
    double fixed1 = r1.breakdown[MB_CAT_COMM_DP] + r1.breakdown[MB_CAT_COMM_FSDP];
    double fixed2 = r->breakdown[MB_CAT_COMM_DP] + r->breakdown[MB_CAT_COMM_FSDP];
    if (fabs(fixed2 - fixed1) > 1e-3 * r->step_time_s)
        return mb__simulate(s, m, NULL, crit, r, err);
    mb__extend(s, r, &r1, (double)(m - m2) / (m2 - m1), 0, r->model_flops * m / m2);
    r->microbatches = m;
    return 0;
}

/* Linear extension in the number of decoder layers (`layer_cap`, used by
 * sweeps): when every decoder layer is of one kind and the layers divide evenly
 * when the same number of layers is added to every virtual pipeline stage,
 * every term of the step -- time, breakdown, static memory, activations, model
 * FLOPs -- changes by the same amount each time, so the step is simulated with
 * about 2 and 4 layers per virtual stage and extended to the real count, as the
 * microbatch extension does for microbatches. */
static int mb__uniform_layers(const struct mb_model *m)
{
    for (int i = 1; i < m->n_layers; i++)
        if (m->layer[i].mixer != m->layer[0].mixer || m->layer[i].ffn != m->layer[0].ffn)
            return 0;
    return m->n_layers > 0 && !m->pattern[0];
}

int mb_step_simulate_opts(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_result *r,
                          struct mb_err *err)
{
    int nv = s->pp * (s->vpp > 0 ? s->vpp : 1);
    int L = s->model.n_layers;
    /* remove the same number of layers from every virtual stage, so an uneven
     * split keeps its shape: about k and 2k layers per virtual stage remain,
     * k = 2, or more than the FSDP prefetch depth so its ramp and the unsharded
     * layers it holds fit inside the shortened stages */
    int k = s->strategy == MB_STRAT_FSDP && s->fsdp_prefetch + 2 > 2 ? s->fsdp_prefetch + 2 : 2;
    int base = L / nv, q1 = base - k, q2 = base - 2 * k;
    int L1 = L - nv * q1, L2 = L - nv * q2;
    if (!o || o->layer_cap <= 0 || q2 < 1 || s->pipeline_layout[0] || !mb__uniform_layers(&s->model) ||
        s->model.num_layers != s->model.n_layers || (s->recompute == MB_RC_FULL && s->recompute_num_layers > 0))
        return mb__simulate_mb(s, o, r, err);
    struct mb_scenario s1 = *s, s2 = *s;
    s1.model.n_layers = s1.model.num_layers = L1;
    s2.model.n_layers = s2.model.num_layers = L2;
    struct mb_result r1;
    if (mb__simulate_mb(&s1, o, &r1, err) || mb__simulate_mb(&s2, o, r, err))
        return -1;
    mb__extend(s, r, &r1, (double)(L - L2) / (L2 - L1), 1, 0);
    return 0;
}

int mb_step_simulate(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err)
{
    return mb_step_simulate_opts(s, NULL, r, err);
}

int mb_step_simulate_exact(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err)
{
    struct mb_step_opts o = {-1, 1, 0};
    return mb_step_simulate_opts(s, &o, r, err);
}

int mb_step_trace(const struct mb_scenario *s, const char *path, struct mb_result *r, struct mb_err *err)
{
    int m = s->global_batch_size / (s->micro_batch_size * s->dp);
    int p = s->pp > 0 ? s->pp : 1;
    int cap = MB_STEP_MB_CAP > 4 * p ? MB_STEP_MB_CAP : 4 * p;
    cap -= cap % p;
    return mb__simulate(s, m < cap ? m : cap, path, 1, r, err);
}
