/*
 * mb_attn_backend.c -- FlashAttention-2/3 and Triton flash attention at their
 * published H100 rates relative to cuDNN fused attention (mb_attn_backend.h).
 */
#include "mb_attn_backend.h"

#include <math.h>
#include <string.h>

int mb_attn_backend_hopper(const char *gpu)
{
    return gpu && (strcmp(gpu, "H100") == 0 || strcmp(gpu, "H100_96GB") == 0 || strcmp(gpu, "H200") == 0);
}

enum { MB_AB__N = 6 };

/* FA3 paper Fig. 5/6 (arXiv 2407.08608), H100 SXM5, BF16, head dim 128, TFLOP/s
 * at seq 512, 1k, 2k, 4k, 8k, 16k (shared/docs/reference/hardware.md B.2).
 * Panels: 0 forward no mask, 1 forward causal, 2 backward. */
static const double mb_ab__seq[MB_AB__N] = {512, 1024, 2048, 4096, 8192, 16384};
static const double mb_ab__cudnn[3][MB_AB__N] = {
    {497, 574, 617, 609, 600, 595}, {315, 410, 484, 518, 529, 539}, {305, 408, 465, 499, 518, 516}};
static const double mb_ab__fa2[3][MB_AB__N] = {
    {309, 350, 362, 368, 370, 370}, {191, 260, 298, 319, 333, 335}, {214, 260, 291, 310, 318, 322}};
static const double mb_ab__fa3[3][MB_AB__N] = {
    {467, 565, 625, 638, 646, 648}, {292, 423, 521, 579, 602, 616}, {316, 424, 501, 542, 559, 561}};
/* pytorch/benchmark@ff65cb67, H100, head dim 128, 16 heads, batch x seq 16k,
 * forward: Triton-tutorial flash attention against FA3 at seq 512 and 16k */
static const double mb_ab__triton_fa3[2] = {329.0 / 430.0, 477.0 / 621.0};

/* A rate table row at seq: linear in ln(seq) between points, clamped to the ends. */
static double mb_ab__at(const double *row, double seq)
{
    if (!(seq > mb_ab__seq[0]))
        return row[0];
    for (int i = 1; i < MB_AB__N; i++)
        if (seq <= mb_ab__seq[i]) {
            double f = log(seq / mb_ab__seq[i - 1]) / log(mb_ab__seq[i] / mb_ab__seq[i - 1]);
            return row[i - 1] + f * (row[i] - row[i - 1]);
        }
    return row[MB_AB__N - 1];
}

double mb_attn_backend_slowdown(enum mb_attn_backend b, int causal, int bwd, double seq)
{
    int panel = bwd ? 2 : causal ? 1 : 0;
    double cudnn = mb_ab__at(mb_ab__cudnn[panel], seq);
    switch (b) {
    case MB_ATTN_FLASH2:
        return cudnn / mb_ab__at(mb_ab__fa2[panel], seq);
    case MB_ATTN_FLASH3:
        return cudnn / mb_ab__at(mb_ab__fa3[panel], seq);
    case MB_ATTN_TRITON: {
        double lo = mb_ab__seq[0], hi = mb_ab__seq[MB_AB__N - 1], s = seq < lo ? lo : seq > hi ? hi : seq;
        double f = log(s / lo) / log(hi / lo);
        double tri = mb_ab__triton_fa3[0] + f * (mb_ab__triton_fa3[1] - mb_ab__triton_fa3[0]);
        return cudnn / (tri * mb_ab__at(mb_ab__fa3[panel], seq));
    }
    default:
        return 1.0;
    }
}
