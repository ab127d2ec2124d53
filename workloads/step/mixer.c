/*
 * mixer.c -- the op list of a decoder layer's token mixer: softmax attention
 * (MHA/GQA, sliding window, DeepSeek MLA), Gated DeltaNet and Mamba-2, with
 * the TP (sequence-parallel) and CP communication around them. Op names
 * follow Megatron-Core's modules (input_layernorm, linear_qkv, core_attn,
 * linear_proj, ...).
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>

/* Tokens of one microbatch on this rank (before the sequence-parallel split). */
static double mb_step__tokens(const struct mb_scenario *s)
{
    return (double)s->micro_batch_size * s->seq_length / s->cp;
}

/* Q/K/V projections of MLA: q (optionally through the q LoRA rank), the
 * compressed kv and its up-projection, and rope. *dq, *dv: head dims.
 * mla_up_proj recompute checkpoints qkv_up_proj_and_rope_apply (the q up- or,
 * without a q LoRA, the whole q projection, the kv up-projection and rope;
 * NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/multi_latent_attention.py):
 * its inputs stay saved (the projections' saved inputs: rc_kept), its outputs q,
 * k, v (the rope op's saved bytes, which core attention keeps) are freed. */
static void mb_step__mla_proj(struct mb_build *b, struct mb_oplist *l, int g, int frozen, double *dq, double *dv)
{
    const struct mb_model *m = b->m;
    double T = mb_step__tokens(b->s), Tsp = mb_ops_sp_tokens(b->s, T), nl = (double)m->num_heads / b->s->tp;
    int h = m->hidden;
    enum mb_cat cat = MB_CAT_ATTN;
    *dq = m->qk_head_dim + m->qk_rope_head_dim;
    *dv = m->v_head_dim;
    int q, kv;
    if (m->q_lora_rank > 0) {
        mb_ops_gemm(b, l, "linear_q_down_proj", cat, 0, g, T, m->q_lora_rank, h, Tsp * h * BF16, frozen);
        mb_ops_mem(b, l, "q_layernorm", cat, MB_RCM_LAYERNORM, g, 2 * T * m->q_lora_rank * BF16,
                   T * m->q_lora_rank * BF16);
        q = l->n;
        mb_ops_gemm(b, l, "linear_q_up_proj", cat, MB_RCM_MLA_UP_PROJ, g, T, nl * *dq, m->q_lora_rank,
                    T * m->q_lora_rank * BF16, frozen);
    } else {
        q = l->n;
        mb_ops_gemm(b, l, "linear_q_proj", cat, MB_RCM_MLA_UP_PROJ, g, T, nl * *dq, h, Tsp * h * BF16, frozen);
    }
    l->op[q].rc_kept = l->op[q].saved;
    l->op[q].rc_keeps = MB_RCM_MLA_UP_PROJ;
    mb_ops_gemm(b, l, "linear_kv_down_proj", cat, 0, g, T, m->kv_lora_rank + m->qk_rope_head_dim, h, 0, frozen);
    mb_ops_mem(b, l, "kv_layernorm", cat, MB_RCM_LAYERNORM, g, 2 * T * m->kv_lora_rank * BF16,
               T * m->kv_lora_rank * BF16);
    kv = l->n;
    mb_ops_gemm(b, l, "linear_kv_up_proj", cat, MB_RCM_MLA_UP_PROJ, g, T, nl * (m->qk_head_dim + *dv),
                m->kv_lora_rank, T * m->kv_lora_rank * BF16, frozen);
    l->op[kv].rc_kept = l->op[kv].saved;
    l->op[kv].rc_keeps = MB_RCM_MLA_UP_PROJ;
    /* rope on q and k: read + write */
    mb_ops_mem(b, l, "rope", cat, MB_RCM_MLA_UP_PROJ, g, 2 * T * nl * (*dq + *dq + *dv) * BF16,
               T * nl * (*dq + *dq + *dv) * BF16);
}

/* Fused QKV projection of MHA/GQA (+ output gate), then rope (+ qk-norm): the
 * rotary kernel runs only under position_embedding_type rope (Megatron-Core's
 * SelfAttention applies rotary_pos_emb only when GPTModel built one:
 * NVIDIA/Megatron-LM@d98e8a64 megatron/core/models/gpt/gpt_model.py,
 * position_embedding_type == 'rope'); partial RoPE (rotary_percent < 1) is the
 * same pass, TE's fused kernel copying the unrotated dims. */
static void mb_step__qkv_proj(struct mb_build *b, struct mb_oplist *l, int g, int frozen)
{
    const struct mb_model *m = b->m;
    int tp = b->s->tp, d = m->head_dim, kv = m->num_kv_heads, h = m->hidden;
    double T = mb_step__tokens(b->s), Tsp = mb_ops_sp_tokens(b->s, T), nl = (double)m->num_heads / tp;
    double kvl = kv >= tp ? (double)kv / tp : 1.0; /* KV heads replicate when kv < tp */
    double nqkv = (nl + 2 * kvl) * d + (m->attn_output_gate ? nl * d : 0);
    mb_ops_gemm(b, l, "linear_qkv", MB_CAT_ATTN, 0, g, T, nqkv, h, Tsp * h * BF16, frozen);
    mb_net_wgrad_gather(b, l, b->g_tp, T * h * mb_precision_gather_bytes(&b->s->prec), frozen);
    int rope = m->pos == MB_POS_ROPE;
    if (!rope && !m->qk_norm)
        return;
    /* rope (+ qk-norm), or the qk-norm alone */
    mb_ops_mem(b, l, rope ? "rope" : "qk_layernorm", MB_CAT_ATTN, 0, g, 2 * T * nqkv * BF16, T * nqkv * BF16);
    /* TE fused RoPE on q and on k; qk-norm adds a norm kernel for each */
    l->op[l->n - 1].kf = l->op[l->n - 1].kb = (rope ? 2 : 0) + (m->qk_norm ? 2 : 0);
}

/* Core attention with the scores in memory (Megatron's CoreAttention /
 * DotProductAttention, NVIDIA/Megatron-LM@00baee46489c
 * megatron/model/transformer.py, and TE's UnfusedDotProductAttention): a
 * baddbmm writes the [bh, s, s] scores -- the whole square, the causal mask is
 * applied after it -- FusedScaleMaskSoftmax reads and writes them, dropout
 * (p > 0) writes them again with a 1-byte mask, and a bmm multiplies them with
 * V. bh = MBS x heads per rank. The saved tensors are Korthikanti et al.,
 * "Reducing Activation Recomputation in Large Transformer Models" (2022),
 * Sec. 4.1: softmax output 2as^2b, dropout mask as^2b and dropout output
 * 2as^2b bytes, plus Q, K and V. The bmm GEMMs run in BF16/FP16 (no FP8 recipe
 * covers them); a GEMM's time is the larger of its FLOP and byte times, so the
 * score-sized operands make them memory-bound at small head dims. */
static void mb_step__core_attn_scores(struct mb_build *b, struct mb_oplist *l, int g, double bh, double seq, double dq,
                                 double dv)
{
    enum mb_prec pa = b->s->prec.attn == MB_PREC_FP16 ? MB_PREC_FP16 : MB_PREC_BF16;
    double E = bh * seq * seq, p = b->s->attn_dropout, rows = bh * seq;
    enum mb_cat cat = MB_CAT_ATTN;
    unsigned mod = MB_RCM_CORE_ATTN;
    mb_ops_gemm_p(b, l, "core_attn_qk", cat, mod, g, pa, 0, rows, seq, dq, 2 * rows * dq * BF16, 0);
    /* fused scale-mask-softmax: reads and writes the scores; backward reads the
     * output and its gradient and writes the input gradient (1.5x) */
    mb_ops_mem(b, l, "attention_softmax", cat, mod, g, 2 * E * BF16, E * BF16);
    struct mb_op *o = &l->op[l->n - 1];
    o->bwd = o->bwd_dgrad_only = mb_calib_membound(b->cal, 3 * E * BF16);
    o->bytes_b = 3 * E * BF16;
    if (p > 0) /* reads the probabilities, writes them and the mask; backward the same bytes */
        mb_ops_mem_sym(b, l, "attention_dropout", cat, mod, g, 2 * E * BF16 + E, E);
    /* the bmm keeps its inputs: V and the dropout output (without dropout, the
     * softmax output the softmax already keeps) */
    mb_ops_gemm_p(b, l, "core_attn_av", cat, mod, g, pa, 0, rows, dv, seq, (p > 0 ? E * BF16 : 0) + rows * dv * BF16,
                  0);
}

/* Softmax attention (MHA/GQA, sliding window, MLA): projections, CP exchange,
 * the fused attention kernel and the output projection. */
static void mb_step__attention(struct mb_build *b, struct mb_oplist *l, enum mb_mixer mix, int g, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    int tp = s->tp, h = m->hidden;
    double T = mb_step__tokens(s), nl = (double)m->num_heads / tp, seq = s->seq_length;
    double dq, dv;
    if (mix == MB_MIX_MLA) {
        mb_step__mla_proj(b, l, g, frozen, &dq, &dv);
    } else {
        dq = dv = m->head_dim;
        mb_step__qkv_proj(b, l, g, frozen);
    }
    double ctx = seq / 2; /* causal average context */
    int windowed = mix == MB_MIX_ATTN_SWA && m->swa_window > 0 && m->swa_window < seq;
    if (windowed) {
        double w = m->swa_window;
        ctx = w - w * (w - 1) / (2 * seq); /* Megatron-Bridge SWA average context */
    }
    double flop = 2.0 * T * ctx * nl * (dq + dv);
    /* CP ring attention: KV blocks pass around the ring beside the compute */
    double kvl_d = mix == MB_MIX_MLA ? nl * (dq + dv) / 2
                                     : (m->num_kv_heads >= tp ? (double)m->num_kv_heads / tp : 1.0) * m->head_dim;
    if (s->cp > 1 && !s->cp_a2a)
        mb_net_ring(b, l, "cp ring kv", MB_CK_CP, MB_COLL_ALL_GATHER, b->g_cp, T * 2 * kvl_d * BF16 * s->cp, 1);
    /* CP all-to-all (Ulysses): Q, K, V go from sequence-sharded to head-sharded
     * before attention (blocking), the output back after it; each rank sends
     * (cp-1)/cp of its tokens' heads */
    if (s->cp > 1 && s->cp_a2a)
        mb_net_a2a(b, l, "cp a2a", MB_CK_CP, b->g_cp, T * (nl * dq + 2 * kvl_d) * BF16);
    if (s->attn_backend == MB_ATTN_UNFUSED || s->attn_backend == MB_ATTN_LOCAL)
        mb_step__core_attn_scores(b, l, g, (double)s->micro_batch_size * nl, seq, dq, dv);
    else if (windowed) /* saves what the fused kernel below saves; timed by the tiles it visits */
        mb_ops_attn_window(b, l, "core_attn", MB_CAT_ATTN, MB_RCM_CORE_ATTN, g, flop, seq, m->swa_window, (int)dq,
                           (int)dv, (double)s->micro_batch_size * nl, 1.0 / s->cp,
                           T * nl * 4.0 + (s->prec.quantize && s->prec.attn != MB_PREC_FP8 ? T * nl * dv * BF16 : 0));
    else /* flash attention keeps its output and the fp32 log-sum-exp per head and
          * token; one kernel over MBS x heads-per-rank (batch x head) problems. The
          * output is counted once, as the output GEMM's input, when that GEMM saves
          * it as it is (BF16); under a quantized recipe the GEMM saves its own FP8
          * copy (mb_ops_gemm_p) and the kernel still keeps the BF16 output for its
          * backward (Transformer Engine's FusedAttnFunc saves q, k, v and out) */
        mb_ops_attn(b, l, "core_attn", MB_CAT_ATTN, MB_RCM_CORE_ATTN, g, flop, seq, (int)dq,
                    (double)s->micro_batch_size * nl, 1,
                    T * nl * 4.0 + (s->prec.quantize && s->prec.attn != MB_PREC_FP8 ? T * nl * dv * BF16 : 0));
    if (s->cp > 1 && s->cp_a2a)
        mb_net_a2a(b, l, "cp a2a", MB_CK_CP, b->g_cp, T * nl * dv * BF16);
    mb_ops_gemm(b, l, "linear_proj", MB_CAT_ATTN, 0, g, T, h, nl * dv, T * nl * dv * BF16, frozen);
}

/* A chunked linear-attention / state-space scan run by Triton kernels
 * (mamba_ssm's SSD scan, flash-linear-attention's gated delta rule), priced as
 * the BF16 GEMM [M, K] x [K, N] its matmul FLOP amount to, at the table's
 * Triton share of the GEMM rate (mb_calib_triton_frac), BF16 whatever the
 * recipe (Triton kernels outside TE's autocast). Backward = 2x the forward
 * FLOP (Megatron's hybrid_flops and G_lin count the factor 3 = forward +
 * 2x backward); it is all input gradients (the scan has no weights), so it
 * also runs in full when the weights are frozen. */
static void mb_step__triton_scan(struct mb_build *b, struct mb_oplist *l, const char *name, int g, double M, double N,
                            double K, double saved)
{
    mb_ops_gemm_p(b, l, name, MB_CAT_ATTN, 0, g, MB_PREC_BF16, 0, M, N, K, saved, 0);
    struct mb_op *o = &l->op[l->n - 1];
    double f = mb_calib_triton_frac(b->cal);
    o->fwd /= f;
    o->bwd /= f;
    o->bwd_dgrad_only = o->bwd;
}

/* Gated DeltaNet (Qwen3-Next / Qwen3.5 linear attention). */
static void mb_step__gdn(struct mb_build *b, struct mb_oplist *l, int g, int frozen)
{
    const struct mb_model *m = b->m;
    int tp = b->s->tp, h = m->hidden;
    double T = mb_step__tokens(b->s), Tsp = mb_ops_sp_tokens(b->s, T);
    double qd = (double)m->gdn_k_heads * m->gdn_k_dim / tp, vd = (double)m->gdn_v_heads * m->gdn_v_dim / tp;
    double nv = (double)m->gdn_v_heads / tp;
    double P = 2 * qd + 2 * vd + 2 * nv;
    enum mb_cat cat = MB_CAT_ATTN;
    mb_ops_gemm(b, l, "in_proj", cat, 0, g, T, P, h, Tsp * h * BF16, frozen);
    mb_net_wgrad_gather(b, l, b->g_tp, T * h * mb_precision_gather_bytes(&b->s->prec), frozen);
    mb_ops_mem(b, l, "conv1d", cat, 0, g, 2 * T * (2 * qd + vd) * BF16, T * (2 * qd + vd) * BF16);
    /* chunked delta rule: 4 n_v d_v^2 FLOP-pairs per token (Megatron G_lin term),
     * flash-linear-attention's Triton chunk_gated_delta_rule */
    mb_step__triton_scan(b, l, "delta_rule", g, T, 4 * nv * m->gdn_v_dim, m->gdn_v_dim, T * vd * BF16);
    mb_ops_mem(b, l, "gdn_norm_out", cat, MB_RCM_GDN_NORM_OUT, g, 2 * T * vd * BF16, T * vd * BF16);
    mb_ops_gemm(b, l, "out_proj", cat, 0, g, T, h, vd, T * vd * BF16, frozen);
}

/* Megatron MambaMixer's SSD chunk length (chunk_size=128, NVIDIA/Megatron-LM@00bebb45
 * megatron/core/ssm/mamba_mixer.py). */
#define MB_MAMBA_CHUNK 128.0

/*
 * HBM bytes per token the SSD chunked scan's Triton kernels move on one rank
 * (mamba_ssm's _mamba_chunk_scan_combined_fwd / _bwd, state-spaces/mamba@01b717ae
 * mamba_ssm/ops/triton/ssd_combined.py, run by Megatron's mem-eff path
 * mamba_split_conv1d_scan_combined with z gating inside the scan), each kernel
 * reading its inputs and writing its outputs once (a lower bound: tiles that
 * re-read an operand are not counted). Per token: x = heads x head_dim
 * elements (x, z, out, dx, ...: BF16), bc = groups x state (B or C: BF16),
 * s = heads x head_dim x state / chunk (the per-chunk states amortised over
 * the chunk: FP32 where chunk_state and chunk_scan_bwd_dstates write them,
 * BF16 after state passing), cb = groups x chunk (the FP32 C B^T of
 * bmm_chunk), hh = heads (dt, dA_cumsum: FP32 after chunk_cumsum).
 *  - forward: chunk_cumsum (dt 2 B read, dA_cumsum + dt 8 B written), chunk_state
 *    (x, B, dt, dA read; states FP32 written), state_passing (FP32 read, BF16
 *    written), bmm_chunk (B, C read; CB FP32 written), chunk_scan (CB, x, z,
 *    states, C, dt, dA read; out and out_x written):
 *    10 x + 8 bc + 12 s + 8 cb + 26 hh bytes;
 *  - backward: the forward's cumsum, bmm_chunk, chunk_state and (FP32) state
 *    passing recomputed; chunk_scan_bwd_dz (x, z, out, dout read; dz, dout_x
 *    written), chunk_scan_bwd_dstates (FP32 dstates written), state_passing_bwd
 *    (FP32 states and dstates read, both written BF16), chunk_scan_chunk_state_bwd_dx,
 *    chunk_state_bwd_db, chunk_scan_bwd_dC, chunk_scan_bwd_dcb, two bmm_chunk_bwd,
 *    chunk_scan_bwd_ddAcs_stable, chunk_cumsum_bwd:
 *    34 x + 34 s + 30 bc + 24 cb + 86 hh bytes.
 * The causal conv1d and the group RMSNorm are priced as their own passes.
 */
static void mb_step__ssd_bytes(double heads, double head_dim, double groups, double state, double *fwd,
                               double *bwd)
{
    double x = heads * head_dim, bc = groups * state, s = heads * head_dim * state / MB_MAMBA_CHUNK;
    double cb = groups * MB_MAMBA_CHUNK, hh = heads;
    *fwd = 10 * x + 8 * bc + 12 * s + 8 * cb + 26 * hh;
    *bwd = 34 * x + 34 * s + 30 * bc + 24 * cb + 86 * hh;
}

/*
 * The sequence-first / batch-first copies around Megatron's Mamba scan
 * (MambaMixer._ssm_training, NVIDIA/Megatron-LM@00bebb45
 * megatron/core/ssm/mamba_mixer.py): `rearrange(zxBCdt, "l b d -> b l d").contiguous()`
 * before mamba_split_conv1d_scan_combined and `rearrange(y, "b l d -> l b d").contiguous()`
 * after it. With one sequence per microbatch (b = 1) both are views PyTorch
 * already counts contiguous (a size-1 dimension's stride is ignored) and cost
 * nothing, as under packing (THD: the microbatch is one sequence); with MBS > 1 each is a copy: read and write the [T, proj] in_proj
 * output and the [T, d_inner] scan output, BF16, forward. Backward, the
 * in_proj's output gradient arrives as the permuted view of the scan's
 * batch-first gradient and Transformer Engine's linear makes it contiguous
 * (the same [T, proj] copy); the scan takes its output gradient strided.
 */
static void mb_step__mamba_layout(struct mb_build *b, struct mb_oplist *l, int g, double T, double proj, double din)
{
    if (b->s->micro_batch_size <= 1 || b->s->packed) /* packed (THD): one [T, 1, h] sequence, b = 1 */
        return;
    mb_ops_mem_sym(b, l, "mamba_layout_in", MB_CAT_ATTN, 0, g, 2 * T * proj * BF16, 0);
    mb_ops_mem(b, l, "mamba_layout_out", MB_CAT_ATTN, 0, g, 2 * T * din * BF16, 0);
    struct mb_op *o = &l->op[l->n - 1];
    o->bwd = o->bwd_dgrad_only = 0;
    o->bytes_b = 0;
    o->kb = 0;
}

/* Mamba-2 mixer (Megatron MambaMixer): in_proj to z, x, B, C, dt; causal
 * conv1d over x, B, C; the SSD chunked scan; gated RMSNorm; out_proj.
 * d_inner = heads x head_dim (hybrid_flops' d_in) */
static void mb_step__mamba(struct mb_build *b, struct mb_oplist *l, int g, int frozen)
{
    const struct mb_model *m = b->m;
    int tp = b->s->tp, h = m->hidden;
    double T = mb_step__tokens(b->s), Tsp = mb_ops_sp_tokens(b->s, T);
    double din = (double)m->mamba_heads * m->mamba_head_dim / tp;
    double gn = 2.0 * m->mamba_groups * m->mamba_state / tp;
    double proj = 2 * din + gn + (double)m->mamba_heads / tp;
    enum mb_cat cat = MB_CAT_ATTN;
    mb_ops_gemm(b, l, "in_proj", cat, 0, g, T, proj, h, Tsp * h * BF16, frozen);
    mb_net_wgrad_gather(b, l, b->g_tp, T * h * mb_precision_gather_bytes(&b->s->prec), frozen);
    mb_step__mamba_layout(b, l, g, T, proj, din);
    /* causal_conv1d: read and write the x, B, C channels */
    mb_ops_mem(b, l, "conv1d", cat, 0, g, 2 * T * (din + gn) * BF16, T * (din + gn) * BF16);
    /* SSD chunked scan, 7 T d_in state FLOP (Megatron hybrid_flops), mamba_ssm's
     * Triton mamba_chunk_scan_combined */
    mb_step__triton_scan(b, l, "ssd_scan", g, T, din, 3.5 * m->mamba_state, T * din * BF16);
    /* ...no faster than its kernels' HBM traffic at the memory-bound rate: at
     * head_dim 64 and state 128 the FP32 chunk states (16 KB a token for 64 heads)
     * make it memory-bound (docs/modeling.md, Mamba-2) */
    double fb, bb;
    mb_step__ssd_bytes((double)m->mamba_heads / tp, m->mamba_head_dim, (double)m->mamba_groups / tp, m->mamba_state,
                       &fb, &bb);
    struct mb_op *ssd = &l->op[l->n - 1];
    ssd->fwd = fmax(ssd->fwd, mb_calib_membound(b->cal, T * fb));
    ssd->bwd = fmax(ssd->bwd, mb_calib_membound(b->cal, T * bb));
    ssd->bwd_dgrad_only = ssd->bwd;
    /* gated RMSNorm: read y and z, write the normalized output */
    mb_ops_mem(b, l, "gated_norm", cat, 0, g, 3 * T * din * BF16, T * din * BF16);
    mb_ops_gemm(b, l, "out_proj", cat, 0, g, T, h, din, T * din * BF16, frozen);
}

/* The mixer block: pre-norm, TP all-gather, the mixer, TP reduce-scatter,
 * residual add. */
void mb_ops_mixer(struct mb_build *b, struct mb_oplist *l, enum mb_mixer mix, int frozen)
{
    const struct mb_scenario *s = b->s;
    int h = b->m->hidden;
    double T = mb_step__tokens(s), Tsp = mb_ops_sp_tokens(s, T);
    if (mix == MB_MIX_NONE)
        return;
    /* Megatron-Core graphs a Mamba layer under the `mamba` scope, an attention (or GDN) mixer under
     * `attn` (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/cuda_graphs.py) */
    unsigned scope = mix == MB_MIX_MAMBA ? MB_CG_MAMBA : MB_CG_ATTN;
    int g = mb_ops_region(b, (s->cuda_graph & (scope | MB_CG_LAYER)) != 0);
    b->cur_region = g;
    mb_ops_norm(b, l, "input_layernorm", MB_CAT_ATTN, g, Tsp, h);
    /* TE gathers the norm output into the first column-parallel linear quantized (mb_precision_gather_bytes);
     * MLA's down projections are not column-parallel, its gather stays BF16 */
    double ag = mix == MB_MIX_MLA ? BF16 : mb_precision_gather_bytes(&s->prec);
    mb_net_ring(b, l, "tp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, T * h * ag, s->overlap_tp_comm);
    if (mix == MB_MIX_ATTN || mix == MB_MIX_ATTN_SWA || mix == MB_MIX_MLA)
        mb_step__attention(b, l, mix, g, frozen);
    else if (mix == MB_MIX_GDN)
        mb_step__gdn(b, l, g, frozen);
    else if (mix == MB_MIX_MAMBA)
        mb_step__mamba(b, l, g, frozen);
    mb_net_ring(b, l, "tp reducescatter", MB_CK_TP, MB_COLL_REDUCE_SCATTER, b->g_tp, T * h * BF16, s->overlap_tp_comm);
    /* residual add; a 1-byte dropout mask only with hidden dropout (mb_ops_dropout_mask) */
    mb_ops_mem(b, l, "bias_dropout_add", MB_CAT_ATTN, 0, g, 3 * Tsp * h * BF16, mb_ops_dropout_mask(s, Tsp * h));
    b->cur_region = 0;
}
