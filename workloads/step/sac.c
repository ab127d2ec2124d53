/*
 * sac.c -- recompute.policy torchtitan_op: op-level selective activation
 * checkpointing of each decoder layer, torchtitan's selective_ac_option "op".
 *
 * Mechanism (pytorch/torchtitan@cfb93265 torchtitan/distributed/activation_checkpoint.py
 * _apply_op_sac; the same policy before the move in @81c12433
 * torchtitan/models/llama3/infra/parallelize.py): every transformer block is
 * wrapped in torch.utils.checkpoint with a per-op policy
 * (create_selective_checkpoint_contexts). The block keeps its input (the
 * checkpoint's argument) and the outputs of the ops the policy marks MUST_SAVE:
 * the ops on the save list (llama3's _save_list: aten.mm, the SDPA
 * efficient/flash kernels, _c10d_functional.reduce_scatter_tensor, aten.max)
 * except every second aten.mm of the block (a counter per block and pass:
 * "saves output of all compute ops, except every second mm"). Every other op
 * is PREFER_RECOMPUTE: its saved tensors are dropped and the block's forward
 * runs again before its backward, returning the cached outputs for the saved
 * ops and recomputing the rest.
 *
 * On mbsim's Megatron-style op list (torchtitan's Llama block: wq, wk, wv, SDPA,
 * wo; w1, w3, w2, each one aten.mm, in that order):
 *  - a GEMM is one mm per weight it fuses: linear_qkv three (q, k, v: n_heads d,
 *    n_kv d, n_kv d columns per TP rank), a gated linear_fc1 two (w1, w3: half
 *    each), every other GEMM one. Odd-numbered mms keep their BF16 output
 *    [tokens, columns] and do not re-run; even-numbered ones re-run (their
 *    share of the fused GEMM's time, by columns). So a Llama block keeps wq, wv,
 *    w1 and w2 and re-runs wk, wo and w3.
 *  - Under an FP8/FP4 precision every linear is torchao's Float8Linear, whose
 *    GEMM is aten._scaled_mm, not on the list: no GEMM output is kept, every
 *    GEMM re-runs (only aten.max, a scalar amax per tensor, is kept: not counted).
 *  - core attention (flash / cuDNN / efficient SDPA) keeps its output
 *    [tokens, heads, dv] (BF16) and log-sum-exp [heads, tokens] (FP32) and does
 *    not re-run; the context-parallel exchange around it (torchtitan's CP runs
 *    inside the SDPA dispatch) does not re-run either.
 *  - the TP reduce-scatter keeps its output [tokens / tp, hidden] (BF16) and
 *    does not re-run; the TP all-gather re-runs (all_gather_into_tensor is not
 *    on the list).
 *  - every other op (norms, rope, activation, residual adds) re-runs and keeps
 *    nothing.
 */
#include "step_int.h"

#include <string.h>

/* Tokens of one microbatch on this rank before the sequence-parallel split (s b / cp). */
static double mb_sac__tokens(const struct mb_scenario *s)
{
    return (double)s->micro_batch_size * s->seq_length / s->cp;
}

/* The aten.mm calls GEMM op o stands for, as fractions of its columns (returns how many, at most 3). */
static int mb_sac__mm_parts(const struct mb_build *b, const struct mb_op *o, double frac[3])
{
    const struct mb_model *m = b->m;
    int tp = b->s->tp;
    if (!strcmp(o->name, "linear_qkv")) {
        double nl = (double)m->num_heads / tp, kvl = m->num_kv_heads >= tp ? (double)m->num_kv_heads / tp : 1.0;
        double q = nl + (m->attn_output_gate ? nl : 0), all = q + 2 * kvl;
        frac[0] = q / all;
        frac[1] = frac[2] = kvl / all;
        return 3;
    }
    if (!strcmp(o->name, "linear_fc1") && (m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU)) {
        frac[0] = frac[1] = 0.5;
        return 2;
    }
    frac[0] = 1;
    return 1;
}

/* A GEMM op: its mms numbered on from *mm; odd ones keep their output and do not re-run. */
static void mb_sac__gemm(const struct mb_build *b, struct mb_op *o, int *mm)
{
    if (b->s->prec.quantize) { /* aten._scaled_mm: not on the save list, not counted */
        o->module |= MB_MOD_SAC;
        return;
    }
    double frac[3];
    int n = mb_sac__mm_parts(b, o, frac);
    for (int k = 0; k < n; k++) {
        if (++*mm % 2) {
            o->sac_saved += o->gm * o->gn * frac[k] * BF16;
            o->sac_keep_s += o->fwd * frac[k];
        } else {
            o->module |= MB_MOD_SAC;
        }
    }
}

void mb_sac_mark(const struct mb_build *b, struct mb_oplist *l)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    double T = mb_sac__tokens(s), nl = (double)m->num_heads / s->tp;
    double dv = m->v_head_dim > 0 && m->kv_lora_rank > 0 ? m->v_head_dim : m->head_dim;
    int mm = 0;
    for (int i = 0; i < l->n; i++) {
        struct mb_op *o = &l->op[i];
        o->sac_saved = o->sac_keep_s = 0;
        if (o->bwd_only)
            continue;
        if (o->type == MB_OP_COMM) {
            if (o->ck == MB_CK_CP)
                continue; /* inside the SDPA op */
            if (!strcmp(o->name, "tp reducescatter"))
                o->sac_saved = mb_ops_sp_tokens(s, T) * m->hidden * BF16;
            else
                o->module |= MB_MOD_SAC;
            continue;
        }
        if (o->module & MB_RCM_CORE_ATTN) /* SDPA: output (BF16) and log-sum-exp (FP32) */
            o->sac_saved = T * nl * dv * BF16 + T * nl * 4.0;
        else if (o->gm > 0)
            mb_sac__gemm(b, o, &mm);
        else
            o->module |= MB_MOD_SAC;
    }
}

double mb_sac_layer_kept(const struct mb_oplist *l)
{
    double sum = l->input_bytes;
    for (int i = 0; i < l->n; i++)
        sum += l->op[i].sac_saved;
    return sum;
}
