/*
 * ops.c -- op primitives of the ops phase: a GEMM, a grouped GEMM, a
 * memory-bound pass, an attention kernel, a norm, each priced from the
 * calibration table (calibration/mb_calib.h) and appended to an op list
 * (oplist.c).
 */
#include "step_int.h"
#include "mb_calib.h"
#include "mb_attn_backend.h"

#include <math.h>
#include <string.h>

static enum mb_src mb_step__src(const struct mb_build *b)
{
    return mb_calib_last_source(b->cal) == MB_CALIB_SRC_TABLE ? MB_SRC_TABLE : MB_SRC_ROOFLINE;
}

/* CUDA-graph region for a module about to be built: 0 when the module is not
 * captured (`on` = 0), the layer's region for whole-layer graphs, else a new id
 * (one graph per captured module per layer, as TE's make_graphed_callables
 * captures each scoped module of each layer separately). */
int mb_ops_region(struct mb_build *b, int on)
{
    if (!on)
        return 0;
    if (b->s->cuda_graph & MB_CG_LAYER)
        return b->layer_region;
    return ++b->region_seq;
}

static struct mb_op mb_step__comp(const char *name, enum mb_cat cat, unsigned mod, int graphed)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMP;
    o.name = name;
    o.cat = cat;
    o.module = mod;
    o.region = graphed;
    return o;
}

/* GEMM C[M,N] = A[M,K] B[K,N] at precision p (quantized: an FP8/FP4 recipe's
 * GEMM, with its cast kernels and recipe time scale): forward and backward
 * (dgrad + wgrad) seconds. */
void mb_ops_gemm_p(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                   int graphed, enum mb_prec p, int quantize, double M, double N, double K, double saved, int frozen)
{
    double sc = quantize ? b->gemm_scale : 1.0;
    struct mb_op o = mb_step__comp(name, cat, mod, graphed);
    o.fwd = sc * mb_calib_gemm(b->cal, p, M, N, K);
    o.src = mb_step__src(b);
    double dgrad = sc * mb_calib_gemm(b->cal, p, M, K, N);
    double wgrad = sc * mb_calib_gemm(b->cal, p, K, N, M);
    o.bwd = frozen ? dgrad : dgrad + wgrad;
    o.bwd_dgrad_only = dgrad;
    o.flop_f = 2.0 * M * N * K;
    o.flop_b = (frozen ? 1.0 : 2.0) * o.flop_f;
    o.gm = M, o.gn = N, o.gk = K;
    o.peak = b->gpu->peak[p];
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
         * wgrad, plus its transposed copy for wgrad); the recipe's amax, scale
         * and extra copies are in its calibrated quant_eff (mb_calib_quant). */
        o.fwd += mb_calib_quant(b->cal, b->s->prec.label, M * K * (BF16 + 1.0));
        double q = mb_calib_quant(b->cal, b->s->prec.label, M * N * (BF16 + 2.0));
        o.bwd += q;
        o.bwd_dgrad_only += q;
    }
    mb_ops_push(l, &o);
}

/* A BF16 GEMM of the adapter: the table's time, but no faster than moving its
 * operands and result once at the memory-bound rate (a rank-r GEMM is
 * bandwidth-bound; the GEMM tables hold compute-bound shapes). */
static double mb_step__lora_gemm(struct mb_build *b, double M, double N, double K)
{
    return fmax(mb_calib_gemm(b->cal, MB_PREC_BF16, M, N, K), mb_calib_membound(b->cal, (M * K + K * N + M * N) * BF16));
}

/*
 * The LoRA adapter of a frozen linear layer y = x W (x [M, K], W [K, N] as the
 * rank holds them): y += (x A) B * alpha / r with A [K, r], B [r, N], BF16
 * (Megatron-Bridge LoRALinear / ParallelLinearAdapter: linear_in, linear_out,
 * the scale and the add; NVIDIA-NeMo/Megatron-Bridge@067f987df03b
 * src/megatron/bridge/peft/lora_layers.py, utils.py). Forward: x A, (x A) B,
 * the scale (read + write M N) and the add to y (two reads, one write): 4
 * kernels. Backward: the scale's gradient (M N twice), B's dgrad and wgrad,
 * A's dgrad and wgrad, and the sum of A's dgrad into the base layer's input
 * gradient (M K three times): 6 kernels. Its r (K + N) trainable parameters
 * are counted in memory (mb_oplist.lora_params); left out: its [M, r]
 * activation and the TP all-reduce of it a row-parallel layer's adapter needs.
 */
static void mb_step__lora(struct mb_build *b, struct mb_oplist *l, enum mb_cat cat, int graphed, double M, double N,
                     double K)
{
    double r = b->s->lora_rank;
    struct mb_op o = mb_step__comp("lora_adapter", cat, 0, graphed);
    o.fwd = mb_step__lora_gemm(b, M, r, K) + mb_step__lora_gemm(b, M, N, r) + mb_calib_membound(b->cal, 5 * M * N * BF16);
    o.bwd = mb_calib_membound(b->cal, 2 * M * N * BF16) + mb_step__lora_gemm(b, M, r, N) + mb_step__lora_gemm(b, r, N, M) +
            mb_step__lora_gemm(b, M, K, r) + mb_step__lora_gemm(b, K, r, M) + mb_calib_membound(b->cal, 3 * M * K * BF16);
    o.bwd_dgrad_only = o.bwd;
    o.src = mb_step__src(b);
    o.flop_f = 2.0 * M * r * (K + N);
    o.flop_b = 2.0 * o.flop_f;
    o.peak = b->gpu->peak[MB_PREC_BF16];
    o.kf = 4;
    o.kb = 6;
    mb_ops_push(l, &o);
}

/* A linear layer's GEMM in the scenario's recipe, and its LoRA adapter where
 * peft.lora_targets names it (frozen layers only: the adapters sit on the
 * frozen language model). */
void mb_ops_gemm(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                 int graphed, double M, double N, double K, double saved, int frozen)
{
    mb_ops_gemm_p(b, l, name, cat, mod, graphed, b->s->prec.gemm, b->s->prec.quantize, M, N, K, saved, frozen);
    if (!frozen || b->s->lora_rank <= 0)
        return;
    unsigned bit = mb_lora_target_bit(name);
    if (!(b->s->lora_targets & bit))
        return;
    /* under sequence parallelism the qkv and fc1 adapters gather their sequence-sharded input
     * again (ParallelLinearAdapter.forward gather_from_sequence_parallel_region; its backward
     * reduce-scatters the gradient) */
    if ((bit & (MB_LORA_QKV | MB_LORA_FC1)) && b->s->sequence_parallel)
        mb_net_ring(b, l, "lora sp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, M * K * BF16, 0);
    mb_step__lora(b, l, cat, graphed, M, N, K);
    l->lora_params += b->s->lora_rank * (K + N); /* A [K, r] and B [r, N] as the rank holds them */
}

/* Grouped GEMM of `groups` local experts, `tpg` tokens each: [tpg, K] x [K, N]. */
void mb_ops_grouped(struct mb_build *b, struct mb_oplist *l, const char *name, int graphed, double groups,
                    double tpg, double N, double K, double saved)
{
    enum mb_prec p = b->s->prec.gemm;
    struct mb_op o = mb_step__comp(name, MB_CAT_EXPERTS, MB_RCM_MOE, graphed);
    o.fwd = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, tpg, N, K);
    o.src = mb_step__src(b);
    double dgrad = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, tpg, K, N);
    double wgrad = b->gemm_scale * mb_calib_grouped_gemm(b->cal, p, groups, K, N, tpg);
    o.bwd = dgrad + wgrad;
    o.bwd_dgrad_only = dgrad;
    o.flop_f = 2.0 * groups * tpg * N * K;
    o.flop_b = 2.0 * o.flop_f;
    o.gm = tpg, o.gn = N, o.gk = K;
    o.peak = b->gpu->peak[p];
    /* TE GroupedLinear (TEGroupedMLP) runs one cuBLAS GEMM per local expert
     * (general_grouped_gemm over num_gemms): E/ep launches forward, dgrad and
     * wgrad per expert backward; fp8 adds one multi-tensor quantize each way */
    o.kf = ceil(groups) + (b->s->prec.quantize ? 1 : 0);
    o.kb = 2 * ceil(groups) + (b->s->prec.quantize ? 1 : 0);
    o.saved = b->s->prec.quantize ? saved / 2 : saved; /* as in mb_ops_gemm_p */
    if (b->s->prec.quantize) { /* as in mb_ops_gemm_p */
        o.fwd += mb_calib_quant(b->cal, b->s->prec.label, groups * tpg * K * (BF16 + 1.0));
        double q = mb_calib_quant(b->cal, b->s->prec.label, groups * tpg * N * (BF16 + 2.0));
        o.bwd += q;
        o.bwd_dgrad_only += q;
    }
    mb_ops_push(l, &o);
}

/* The compute stream waiting `fwd` / `bwd` seconds for copies on another
 * engine (no kernel of its own). */
void mb_ops_wait(struct mb_oplist *l, const char *name, enum mb_cat cat, double fwd, double bwd)
{
    struct mb_op o = mb_step__comp(name, cat, 0, 0);
    o.fwd = fwd;
    o.bwd = o.bwd_dgrad_only = bwd;
    o.src = MB_SRC_LINK;
    mb_ops_push(l, &o);
}

double mb_ops_dropout_mask(const struct mb_scenario *s, double elems)
{
    return s->hidden_dropout > 0 ? elems : 0;
}

/* Memory-bound op moving `bytes`; backward moves about twice as much. */
void mb_ops_mem(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                int graphed, double bytes, double saved)
{
    struct mb_op o = mb_step__comp(name, cat, mod, graphed);
    o.fwd = mb_calib_membound(b->cal, bytes);
    o.src = mb_step__src(b);
    o.bwd = mb_calib_membound(b->cal, 2 * bytes);
    o.bwd_dgrad_only = o.bwd;
    o.bytes_f = bytes;
    o.bytes_b = 2 * bytes;
    o.peak = b->gpu->hbm_bw;
    o.saved = saved;
    o.kf = o.kb = 1; /* one fused elementwise kernel each way (callers override) */
    mb_ops_push(l, &o);
}

/* Memory-bound gather/scatter of `bytes` (permute, unpermute): its backward is
 * the inverse gather, the same bytes. */
void mb_ops_mem_sym(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                    int graphed, double bytes, double saved)
{
    mb_ops_mem(b, l, name, cat, mod, graphed, bytes, saved);
    struct mb_op *o = &l->op[l->n - 1];
    o->bwd = o->bwd_dgrad_only = o->fwd;
    o->bytes_b = bytes;
}

/* Fused attention kernel of `flop` forward FLOP over `bh` (batch x head)
 * problems of sequence `seq`. */
void mb_ops_attn(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                 int graphed, double flop, double seq, int head_dim, double bh, int causal, double saved)
{
    struct mb_op o = mb_step__comp(name, cat, mod, graphed);
    enum mb_attn_backend ab = b->s->attn_backend; /* flash2, flash3, triton: at their rate relative to the table's */
    o.fwd = mb_calib_attn_bh(b->cal, b->s->prec.attn, flop, seq, head_dim, bh, causal, 0) *
            mb_attn_backend_slowdown(ab, causal, 0, seq);
    o.src = mb_step__src(b);
    /* flash backward recomputes QK^T: 2.5x the forward FLOPs (FlashAttention-2/3 papers' convention) */
    o.bwd = mb_calib_attn_bh(b->cal, b->s->prec.attn, 2.5 * flop, seq, head_dim, bh, causal, 1) *
            mb_attn_backend_slowdown(ab, causal, 1, seq);
    o.bwd_dgrad_only = o.bwd;
    o.flop_f = flop;
    o.flop_b = 2.5 * flop;
    /* mb_calib_attn_bh times attention at the BF16 (FP16) peak */
    o.peak = b->gpu->peak[b->s->prec.attn == MB_PREC_FP16 ? MB_PREC_FP16 : MB_PREC_BF16];
    o.saved = saved;
    /* flash attention: one forward kernel; backward = preprocess (rowsum dO*O),
     * the main kernel and the dQ fp32->bf16 conversion (FlashAttention-2/3 and
     * cuDNN fused attention all split backward this way) */
    o.kf = 1;
    o.kb = 3;
    mb_ops_push(l, &o);
}

void mb_ops_attn_window(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, unsigned mod,
                        int graphed, double flop, double seq, double window, int dq, int dv, double bh, double share,
                        double saved)
{
    struct mb_op o = mb_step__comp(name, cat, mod, graphed);
    enum mb_prec p = b->s->prec.attn;
    /* another implementation at its causal rate relative to the table's (mb_attn_backend.h), at the window */
    enum mb_attn_backend ab = b->s->attn_backend;
    o.fwd = share * mb_attn_window_s(b->cal, p, seq, window, dq, dv, bh, 0) *
            mb_attn_backend_slowdown(ab, 1, 0, window);
    o.bwd = share * mb_attn_window_s(b->cal, p, seq, window, dq, dv, bh, 1) *
            mb_attn_backend_slowdown(ab, 1, 1, window);
    o.src = mb_step__src(b);
    o.bwd_dgrad_only = o.bwd;
    o.flop_f = flop;
    o.flop_b = 2.5 * flop;
    o.peak = b->gpu->peak[p == MB_PREC_FP16 ? MB_PREC_FP16 : MB_PREC_BF16];
    o.saved = saved;
    o.kf = 1; /* kernels as mb_ops_attn */
    o.kb = 3;
    mb_ops_push(l, &o);
}

/* (RMS)LayerNorm over `tok` tokens of width h. */
void mb_ops_norm(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_cat cat, int g, double tok,
                 int h)
{
    /* forward reads x and writes y; backward reads x and dy and writes dx (the
     * gamma gradient is a [h] reduction): 3 activations, 1.5x the forward bytes,
     * as cuDNN-frontend's norm benchmark counts them (its GB/s set membound.eff) */
    double fb = 2 * tok * h * BF16;
    mb_ops_mem(b, l, name, cat, MB_RCM_LAYERNORM, g, fb, tok * h * BF16);
    struct mb_op *o = &l->op[l->n - 1];
    o->bwd = o->bwd_dgrad_only = mb_calib_membound(b->cal, 1.5 * fb);
    o->bytes_b = 1.5 * fb;
    o->kb = 2; /* TE (RMS)LayerNorm backward: dx kernel + dgamma reduction */
}
