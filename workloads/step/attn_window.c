/*
 * attn_window.c -- the time of a sliding-window fused attention kernel, from
 * the tiles it visits.
 *
 * A flash attention kernel (FlashAttention-2/3, cuDNN fused attention) runs one
 * CTA per (batch x head, 128-row query block) and loops over the 128-key KV
 * tiles the block's mask reaches; a tile the mask cuts is still computed in
 * full (the mask is applied inside the tile). So a query block costs a fixed
 * part a (load Q, the softmax epilogue, write O and the log-sum-exp; backward:
 * load K and V, write dK and dV) plus b per KV tile visited:
 *
 *     t = bh x (nQ x a + tiles x b),   tiles = sum over the query blocks of
 *                                              the KV tiles each one visits
 *
 * A causal kernel of sequence L visits i + 1 tiles in block i, (L/128 + 1)/2 on
 * average; its time at two sequences of the table's causal curve (the kernel's
 * measured cost, mb_calib_attn_bh) gives a and b. A window-w layer's block i
 * visits min(i, ceil((w - 1)/128)) + 1 tiles: at GPT-OSS's w = 128, 2 tiles
 * whatever the sequence, so the fixed part, which a long causal loop hides,
 * dominates. Checked against cuDNN's GPT-OSS window kernels (cudnn_sdpa_training.csv,
 * docs/modeling.md "Sliding-window attention").
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>

/* FlashAttention-2/3 and cuDNN: 128-row query blocks and 128-key KV tiles (as
 * mb_calib's wave factor assumes; FA3 arXiv 2407.08608 at hdim 128). */
#define MB_ATTN_WINDOW_TILE 128.0

/* The two causal sequences a and b are derived at: the two shortest of the
 * shipped cuDNN curves (2k-32k), inside the FA3 curves (512-16k) too. The
 * shortest loops are the nearest to a window's. */
#define MB_ATTN_WINDOW_L1 2048.0
#define MB_ATTN_WINDOW_L2 4096.0

double mb_attn_window_tiles(double seq, double window)
{
    if (!(seq > 0) || !(window > 0))
        return 0;
    double nq = ceil(seq / MB_ATTN_WINDOW_TILE), reach = ceil((window - 1) / MB_ATTN_WINDOW_TILE), tiles = 0;
    for (double i = 0; i < nq; i++)
        tiles += fmin(i, reach) + 1;
    return tiles;
}

/* Per-problem time of a causal kernel of sequence L (FLOP 2 L (L/2) (dq + dv)
 * forward, 2.5x backward, as mixer.c counts it) with `ctas` CTAs in the grid. */
static double mb_attn_window__causal(struct mb_calib *c, enum mb_prec p, double L, int dq, int dv, double ctas,
                                     int bwd)
{
    double flop = 2.0 * L * (L / 2) * (dq + dv) * (bwd ? 2.5 : 1.0);
    double bh = ctas / ceil(L / MB_ATTN_WINDOW_TILE);
    return mb_calib_attn_bh(c, p, flop * bh, L, dq, bh, 1, bwd) / bh;
}

double mb_attn_window_s(struct mb_calib *c, enum mb_prec p, double seq, double window, int dq, int dv, double bh,
                        int bwd)
{
    if (!(seq > 0) || !(window > 0) || dq <= 0 || dv <= 0 || !(bh > 0))
        return 0;
    /* the same number of CTAs as the windowed kernel, so the wave factor is its own */
    double nq = ceil(seq / MB_ATTN_WINDOW_TILE), ctas = bh * nq;
    double n1 = ceil(MB_ATTN_WINDOW_L1 / MB_ATTN_WINDOW_TILE), n2 = ceil(MB_ATTN_WINDOW_L2 / MB_ATTN_WINDOW_TILE);
    /* per query block, at the mean loop length (n + 1)/2 of each causal kernel */
    double y1 = mb_attn_window__causal(c, p, MB_ATTN_WINDOW_L1, dq, dv, ctas, bwd) / n1;
    double y2 = mb_attn_window__causal(c, p, MB_ATTN_WINDOW_L2, dq, dv, ctas, bwd) / n2;
    double b = (y2 - y1) / ((n2 - n1) / 2), a = y1 - (n1 + 1) / 2 * b;
    if (!(a >= 0) || !(b > 0)) {
        /* a curve flat or falling in seq has no fixed part to show: every tile
         * at the shortest loop's cost per tile */
        a = 0;
        b = y1 / ((n1 + 1) / 2);
    }
    return bh * (nq * a + mb_attn_window_tiles(seq, window) * b);
}
