/*
 * mb_validate_flops.c -- FLOP conventions of TFLOP/s-only rows: which publisher counted how, and the
 * conversion to tokens/s.
 */
#include "validate_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* FLOP conventions of TFLOP/s-only rows                              */
/* ------------------------------------------------------------------ */

/* Which publisher counted how; matched as substrings of the `source` cell,
 * first match wins (docs/validation.md, "FLOP conventions"). */
static const struct {
    const char *needle;
    enum mb_val_flops conv;
} mb_val__flop_sources[] = {
    {"arXiv:2104.04473", MB_VAL_FLOPS_SC21},         /* Narayanan et al., SC21, Table 1 */
    {"cases_april2021", MB_VAL_FLOPS_SC21},          /* the same table in Megatron-LM's README, April 2021 */
    {"Megatron-LM@0b981f9c5305", MB_VAL_FLOPS_MLM_2024}, /* MoE README, MCore v0.8 (2024-08) */
    {"Megatron-LM@c230e0d7c298", MB_VAL_FLOPS_MLM_2024}, /* MoE README, MCore v0.9 (2024-11) */
    {"Megatron-Bridge@", MB_VAL_FLOPS_MCORE},        /* Megatron-Bridge flop_utils (causal /2) */
};

enum mb_val_flops mb_validate_flop_convention(const char *source)
{
    if (!source)
        return MB_VAL_FLOPS_UNKNOWN;
    for (size_t i = 0; i < sizeof mb_val__flop_sources / sizeof mb_val__flop_sources[0]; i++)
        if (strstr(source, mb_val__flop_sources[i].needle))
            return mb_val__flop_sources[i].conv;
    return MB_VAL_FLOPS_UNKNOWN;
}

const char *mb_validate_flop_convention_name(enum mb_val_flops conv)
{
    switch (conv) {
    case MB_VAL_FLOPS_SC21:
        return "sc21";
    case MB_VAL_FLOPS_MLM_2024:
        return "megatron-lm-2024";
    case MB_VAL_FLOPS_MCORE:
        return "megatron-core";
    default:
        return "unknown";
    }
}

/* Every decoder layer has the same FFN kind (all dense or all MoE). */
static int mb_validate__uniform_ffn(const struct mb_model *m)
{
    for (int i = 1; i < m->n_layers; i++)
        if (m->layer[i].ffn != m->layer[0].ffn)
            return 0;
    return 1;
}

double mb_validate_publisher_flops(enum mb_val_flops conv, const struct mb_model *m, double gbs, double seq,
                                   int recompute, char *why, size_t why_len)
{
    double B = gbs, s = seq, l = m->num_layers, h = m->hidden, V = (double)m->vocab;
    int gated = m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU;
    int special = m->pattern[0] || m->kv_lora_rank > 0 || m->swa_window > 0 || m->gdn_v_heads > 0 ||
                  m->moe_latent > 0 || m->mamba_heads > 0 || m->vision.depth > 0;
    if (why && why_len)
        why[0] = '\0';
    if (B <= 0 || s <= 0 || h <= 0 || l <= 0) {
        if (why && why_len)
            snprintf(why, why_len, "batch, sequence or model size not positive");
        return 0;
    }
    switch (conv) {
    case MB_VAL_FLOPS_SC21:
        /* Narayanan et al. 2021, appendix: a GPT layer (4h MLP, no GQA) does 24Bsh^2 + 4Bs^2h
         * forward, the logits 2BshV. With activation recomputation the layers run 4 passes
         * (forward, recompute forward, backward = 2 forwards), the logits 3:
         * F = 96 B s l h^2 (1 + s/6h + V/16lh); without it 72 B s l h^2 (1 + s/6h + V/12lh). */
        if (special || m->num_experts > 0 || gated || m->ffn_hidden != 4 * m->hidden ||
            (m->num_kv_heads > 0 && m->num_kv_heads != m->num_heads) ||
            (m->head_dim > 0 && (long)m->head_dim * m->num_heads != m->hidden) || m->mtp_layers > 0) {
            if (why && why_len)
                snprintf(why, why_len, "the SC21 formula covers GPT layers (4h GeLU MLP, MHA) only");
            return 0;
        }
        if (recompute)
            return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
        return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    case MB_VAL_FLOPS_MLM_2024: {
        /* Megatron-LM megatron/training/training.py num_floating_point_operations at
         * 0b981f9c5305 / c230e0d7c298: 12 B s l h^2 [ (1 + g/n + s/h) nd/h
         * + (f/h) k c + (f_sh/h) c + V/(2lh) ], c = 3/2 with SwiGLU; f = ffn_hidden_size,
         * the expert width in MCore v0.8; attention not halved for the causal mask.
         * Recomputation is not counted. */
        if (special || !mb_validate__uniform_ffn(m) || m->first_dense > 0 || m->mtp_layers > 0) {
            if (why && why_len)
                snprintf(why, why_len, "the 2024 Megatron-LM formula covers uniform dense or MoE GPT layers only");
            return 0;
        }
        double n = m->num_heads, g = m->num_kv_heads > 0 ? m->num_kv_heads : n;
        double d = m->head_dim > 0 ? m->head_dim : h / n;
        double moe = m->num_experts > 0;
        double f = moe ? m->moe_ffn_hidden : m->ffn_hidden, k = moe ? m->topk : 1, c = gated ? 1.5 : 1.0;
        double fsh = moe ? m->shared_ffn_hidden : 0;
        return 12 * B * s * l * h * h *
               ((1 + g / n + s / h) * (n * d / h) + (f / h) * k * c + (fsh / h) * c + V / (2 * l * h));
    }
    case MB_VAL_FLOPS_MCORE:
        /* Megatron-Core >= 0.12 and Megatron-Bridge count what mbsim counts (causal /2) */
        return mb_model_flops(m, B * s, B * s * s);
    default:
        if (why && why_len)
            snprintf(why, why_len, "the source's FLOP convention is not known");
        return 0;
    }
}

double mb_validate_tflops_to_tokens(double tflops, double flops_per_step, double gbs, double seq)
{
    if (!(flops_per_step > 0) || !(tflops > 0))
        return 0;
    return gbs * seq * tflops * 1e12 / flops_per_step;
}
