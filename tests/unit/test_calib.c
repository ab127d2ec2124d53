/*
 * test_calib.c -- calibration tables: every shipped table loads, lookups
 * reproduce the measured points they were built from, interpolation and the
 * fallback rules behave as documented (docs/calibration.md), and broken
 * tables give exact file:line:col messages.
 *
 * Most tests here read the SHIPPED tables on purpose: they check that the
 * shipped points are reproduced and the worked examples of
 * docs/calibration.md (interpolation, head-dim donors, wave factor) hold on
 * them, so a recalibration must update them together with the docs. The
 * test fixtures other unit tests use are checked in test_fixture_tables.
 *
 * Run from the repository root with MBSIM_DATA_DIR=<repo root>.
 */
#define _XOPEN_SOURCE 700 /* mkstemp, realpath */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_calib.h"

#define TF 1e12

/* Relative closeness: |a - b| <= tol * |b|. */
static int close_rel(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fabs(b);
}

static struct mb_calib *load_ok(const char *gpu)
{
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    int rc = mb_calib_load(gpu, NULL, &c, &e);
    if (rc) {
        char buf[800];
        mb_err_format(&e, buf, sizeof buf);
        print_error("%s\n", buf);
    }
    assert_int_equal(rc, 0);
    assert_non_null(c);
    return c;
}

/* The fixture tests/data/calib/fa3_<gpu>.yaml: the table with the FA3 attention
 * curves shipped before the cuDNN ones, for the attention lookup-rule tests. */
static struct mb_calib *load_fa3(const char *gpu)
{
    char path[128];
    snprintf(path, sizeof path, "tests/data/calib/fa3_%s.yaml", gpu);
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, path, &c, &e), 0);
    return c;
}

/* Achieved TFLOP/s of a GEMM lookup. */
static double gemm_tflops(struct mb_calib *c, enum mb_prec p, double m, double n, double k)
{
    return 2.0 * m * n * k / mb_calib_gemm(c, p, m, n, k) / TF;
}

static long fallbacks(const struct mb_calib *c, const char *table)
{
    for (size_t i = 0; i < mb_calib_n_tables(c); i++) {
        struct mb_calib_table_info t = mb_calib_table(c, i);
        if (strcmp(t.name, table) == 0)
            return t.fallbacks;
    }
    fail_msg("no table %s", table);
    return -1;
}

static long lookups(const struct mb_calib *c, const char *table)
{
    for (size_t i = 0; i < mb_calib_n_tables(c); i++) {
        struct mb_calib_table_info t = mb_calib_table(c, i);
        if (strcmp(t.name, table) == 0)
            return t.lookups;
    }
    fail_msg("no table %s", table);
    return -1;
}

/* Every shipped table loads, has every table's source, and sane specs. */
static void test_all_tables_load(void **state)
{
    (void)state;
    const char *gpus[] = {"H100", "H100_96GB", "H200", "B200", "B300", "GB200", "GB300", "A100"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        struct mb_calib *c = load_ok(gpus[i]);
        const struct mb_gpu_spec *s = mb_calib_spec(c);
        assert_string_equal(s->name, gpus[i]);
        assert_true(s->peak[MB_PREC_BF16] > 0 && s->hbm_bw > 0 && s->hbm_bytes > 0 && s->sms > 0);
        assert_true(s->launch_s > 0 && s->source[0]);
        assert_int_equal(mb_calib_n_tables(c), 6);
        for (size_t t = 0; t < mb_calib_n_tables(c); t++)
            assert_true(strlen(mb_calib_table(c, t).source) > 0);
        assert_non_null(strstr(mb_calib_path(c), "calibration/tables/"));
        mb_calib_free(c);
    }
    /* Specific capacities from hardware.md A (usable). */
    struct mb_calib *c = load_ok("gb200");                  /* case-insensitive */
    /* GB200 usable HBM as nvidia-smi reports it: 189471 MiB (calibration/tables/GB200.yaml) */
    assert_true(close_rel(mb_calib_spec(c)->hbm_bytes, 189471.0 * 1048576.0, 1e-12));
    assert_true(close_rel(mb_calib_spec(c)->peak[MB_PREC_BF16], 2500e12, 1e-12));
    mb_calib_free(c);
}

/* H100_96GB is H100.yaml with the 96 GB HBM2e memory (torchtitan: 96 GB, 2.4 TB/s): GEMMs and
 * attention answer exactly as H100's; a memory-bound pass far above the floor is 3.35 / 2.4 times
 * slower (the same achieved fraction of a lower peak); capacity 96 GiB x 81559/81920 = 97871 MiB. */
static void test_h100_96gb_derived(void **state)
{
    (void)state;
    struct mb_calib *a = load_ok("H100"), *b = load_ok("H100_96GB");
    assert_true(close_rel(mb_calib_spec(b)->hbm_bw, 2.4e12, 1e-12));
    assert_true(close_rel(mb_calib_spec(b)->hbm_bytes, 97871.0 * 1048576.0, 1e-12));
    assert_true(close_rel(mb_calib_spec(b)->peak[MB_PREC_BF16], mb_calib_spec(a)->peak[MB_PREC_BF16], 1e-12));
    assert_true(close_rel(mb_calib_gemm(b, MB_PREC_BF16, 4096, 4096, 4096), mb_calib_gemm(a, MB_PREC_BF16, 4096, 4096, 4096),
                          1e-12));
    assert_true(close_rel(mb_calib_attn(b, MB_PREC_BF16, 1e12, 4096, 128, 1, 0), mb_calib_attn(a, MB_PREC_BF16, 1e12, 4096, 128, 1, 0),
                          1e-12));
    assert_true(close_rel(mb_calib_membound(b, 1e9) / mb_calib_membound(a, 1e9), 3.35 / 2.4, 1e-9));
    assert_true(close_rel(mb_calib_link_eff(b, MB_LINK_NVLINK), mb_calib_link_eff(a, MB_LINK_NVLINK), 1e-12));
    /* the framework section is H100's (copied: refit H100, copy it again) */
    struct mb_calib_framework fa, fb;
    mb_calib_framework_get(a, &fa);
    mb_calib_framework_get(b, &fb);
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (!close_rel(fb.v[p], fa.v[p], 1e-9) && !(fa.v[p] == 0 && fb.v[p] == 0))
            fail_msg("H100_96GB framework parameter %d = %g, H100.yaml has %g", p, fb.v[p], fa.v[p]);
    mb_calib_free(a);
    mb_calib_free(b);
}

static void test_unknown_gpu(void **state)
{
    (void)state;
    struct mb_calib *c = (struct mb_calib *)1;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("V100", NULL, &c, &e), -1);
    assert_null(c);
    assert_string_equal(e.msg, "unknown GPU 'V100'; known: A100, B200, B300, GB200, GB300, H100, H100_96GB, H200");
}

/*
 * Measured points are reproduced exactly:
 *   H100 BF16 4096^3: XLA sm_90 783 TFLOP/s -> t = 2*4096^3 / 783e12 s.
 *   (Memory term 2 B * 3*4096^2 / 3.35e12 = 30 us < 176 us, so compute wins.)
 *   B200 BF16 256x4096x4096: 651 TFLOP/s.
 */
static void test_gemm_points(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    double t = mb_calib_gemm(c, MB_PREC_BF16, 4096, 4096, 4096);
    assert_true(close_rel(t, 2.0 * 4096 * 4096 * 4096 / 783e12, 0.01));
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 2048, 2048, 2048), 632, 1e-9));
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 8192, 8192, 8192), 795, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    assert_int_equal(lookups(c, "gemm"), 3);
    mb_calib_free(c);

    c = load_ok("B200");
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 256, 4096, 4096), 651, 1e-9));
    /* FP8 = BF16 curve x (76.3/77.6): 1417 * 0.9832 * 2 = 2786 vs XLA e4m3 ~2765 (0.8% off). */
    assert_true(close_rel(gemm_tflops(c, MB_PREC_FP8, 4096, 4096, 4096), 2765, 0.01));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    mb_calib_free(c);
}

/*
 * Interpolation between H100 points (1024x1024x2048 -> 350) at x0 = 2^31 and
 * (1024x2048x2048 -> 524) at x1 = 2^32. A query with m*n*k = 2^31.5
 * (1024 x 1024 x 2048*sqrt 2) sits halfway in log space:
 *   t = (ln 2^31.5 - ln 2^31) / (ln 2^32 - ln 2^31) = 0.5
 *   eff = (350 + 524) / 2 / 989 -> 437 TFLOP/s, strictly between 350 and 524.
 * A second query at 2^31.25 gives 350 + 0.25 * 174 = 393.5 TFLOP/s.
 */
static void test_gemm_interp(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    double v = gemm_tflops(c, MB_PREC_BF16, 1024, 1024, 2048 * sqrt(2.0));
    assert_true(v > 350 && v < 524);
    assert_true(close_rel(v, 437.0, 1e-9));
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 1024, 1024, 2048 * pow(2.0, 0.25)), 393.5, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    mb_calib_free(c);
}

/*
 * Above the largest measured size: the plateau, the largest shape measured (not a fallback).
 *   H100 BF16 16384^3 -> 795 (cuBLAS 8192^3); FP8 -> 795 x 0.8829 x 1979/989 = 1404.5
 *   (FP8 MAMF 1402.6).
 * Below the smallest point (H100 512x256x256 at 11.5 TFLOP/s = 2.92 us): the
 * smallest point's time is a floor, so 256^3 (half the FLOPs) takes the same
 * 2.92 us, and the lookup counts one fallback.
 */
static void test_gemm_plateau_and_below(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 16384, 16384, 16384), 795, 1e-9));
    assert_true(close_rel(gemm_tflops(c, MB_PREC_FP8, 16384, 16384, 16384), 1404.5, 0.001));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    double t = mb_calib_gemm(c, MB_PREC_BF16, 256, 256, 256);
    assert_true(close_rel(t, 2.0 * 512 * 256 * 256 / 11.5e12, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 1);
    /* Invalid dims: 0 s, not counted. */
    assert_true(mb_calib_gemm(c, MB_PREC_BF16, 0, 10, 10) == 0.0);
    assert_true(mb_calib_gemm(c, MB_PREC_BF16, -4, 10, 10) == 0.0);
    assert_int_equal(lookups(c, "gemm"), 3);
    mb_calib_reset_usage(c);
    assert_int_equal(lookups(c, "gemm"), 0);
    assert_int_equal(fallbacks(c, "gemm"), 0);
    mb_calib_free(c);

    /* A100 has no per-shape points and no FP8: both are counted fallbacks.
     * FP8 runs at the BF16 rate: MAMF 271.2 TFLOP/s. */
    c = load_ok("A100");
    assert_true(close_rel(gemm_tflops(c, MB_PREC_FP8, 8192, 8192, 8192), 271.2, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 1);
    mb_calib_free(c);

    /* FP4 is an assumption (FP8 efficiency): always a fallback. */
    c = load_ok("B200");
    (void)mb_calib_gemm(c, MB_PREC_FP4, 8192, 8192, 8192);
    assert_int_equal(fallbacks(c, "gemm"), 1);
    mb_calib_free(c);
}

/*
 * No shipped BF16 GEMM curve runs above what a measurement at a comparable
 * (training-size) shape supports. Training GEMMs are M = 8k-32k tokens with N,
 * K of 2k-28k, i.e. m*n*k from 4096^3 up. The largest such measurements:
 *   Hopper (H100, H200 reuse H100's points): cuBLAS 8192^3 = 795 TFLOP/s
 *     (fast.cu README; XLA sm_90 4096^3 783, b=4 789).
 *   Blackwell: Transformer Engine's B300 BF16 layer, 12 GEMMs (fprop, dgrad,
 *     wgrad of QKV [T,h]x[h,3h], proj [T,h]x[h,h], fc1 [T,h]x[h,f], fc2
 *     [T,f]x[f,h]) at h 4096, f 16384, T 15872: FLOP = 3 x 2T h (3h + h + f + f)
 *     = 19.17e12 in 12.9 ms -> 1486.2 TFLOP/s on B300; B200 = 1486.2 / 1.01375
 *     (B300/B200 MAMF ratio) = 1466.1, below XLA's B200 b=4 4096^3 1670; GB200
 *     x 1.04413 (GB200/B200 MAMF) = 1530.8; GB300 = GB200 x 1.102, the median
 *     GB300/GB200 time ratio of cuDNN's BF16 SDPA backward at the 90 shapes both
 *     measured (cudnn_sdpa_training.csv) = 1686.9.
 * A100 has no per-shape points: its roofline at MAMF 271.2 is the only number.
 * The TE layer itself is reproduced on the B300 table (12.9 ms within 1 %).
 */
static void test_gemm_training_ceiling(void **state)
{
    (void)state;
    static const struct {
        const char *gpu;
        double ceil_tflops;
    } g[] = {{"H100", 795},     {"H200", 795},     {"B200", 1466.1}, {"B300", 1486.2},
             {"GB200", 1530.8}, {"GB300", 1686.9}, {"A100", 271.2}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        struct mb_calib *c = load_ok(g[i].gpu);
        for (double m = 4096; m <= 65536; m *= 1.25)
            for (double n = 2048; n <= 32768; n *= 2)
                for (double k = 2048; k <= 32768; k *= 2) {
                    double v = gemm_tflops(c, MB_PREC_BF16, m, n, k);
                    if (v > g[i].ceil_tflops * (1 + 1e-9))
                        fail_msg("%s BF16 %gx%gx%g runs at %.1f TFLOP/s, above the measured %.1f", g[i].gpu, m,
                                 n, k, v, g[i].ceil_tflops);
                }
        mb_calib_free(c);
    }
    struct mb_calib *c = load_ok("B300");
    const double T = 15872, h = 4096, f = 16384;
    const double sh[4][2] = {{3 * h, h}, {h, h}, {f, h}, {h, f}}; /* {N, K} of QKV, proj, fc1, fc2 */
    double t = 0;
    for (int i = 0; i < 4; i++) {
        double N = sh[i][0], K = sh[i][1];
        t += mb_calib_gemm(c, MB_PREC_BF16, T, N, K) + mb_calib_gemm(c, MB_PREC_BF16, T, K, N) +
             mb_calib_gemm(c, MB_PREC_BF16, K, N, T);
    }
    assert_true(close_rel(t, 12.9e-3, 0.01));
    mb_calib_free(c);
}

/* FA3 on H100, hdim 128: causal fwd at 4k = 579 TFLOP/s, bwd at 16k = 561;
 * 3k interpolates log-space between 521 (2k) and 579 (4k):
 *   t = ln(1.5)/ln(2) = 0.58496 -> 521 + 58 * 0.58496 = 554.93. */
static void test_attention(void **state)
{
    (void)state;
    struct mb_calib *c = load_fa3("H100");
    double flop = 1e12;
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 4096, 128, 1, 0) / TF, 579, 1e-9));
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 16384, 128, 0, 1) / TF, 561, 1e-9));
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 3072, 128, 1, 0) / TF,
                          521 + 58 * log(1.5) / log(2.0), 1e-9));
    assert_int_equal(fallbacks(c, "attention"), 0);
    /* Within the clamp margin (x2): end points, no fallback. */
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 300, 128, 1, 0) / TF, 292, 1e-9));
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 32768, 128, 1, 0) / TF, 616, 1e-9));
    assert_int_equal(fallbacks(c, "attention"), 0);
    /* Beyond it: counted fallback; below the range still the shortest point's
     * efficiency (efficiency falls with seq: the longest-seq value would
     * overstate it), above it the longest's. */
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 128, 128, 1, 0) / TF, 292, 1e-9));
    assert_int_equal(fallbacks(c, "attention"), 1);
    mb_calib_free(c);

    /* B200: FA3 curve x 1613/740; the best FA3 point (648 at 16k, non-causal) -> 1412.5. */
    c = load_fa3("B200");
    assert_true(close_rel(flop / mb_calib_attn(c, MB_PREC_BF16, flop, 16384, 128, 0, 0) / TF,
                          648 * 2.1797, 1e-9));
    mb_calib_free(c);
}

/* Achieved TFLOP/s of an attention lookup (1 TFLOP of work). */
static double attn_tflops(struct mb_calib *c, double seq, int hd, double bh, int causal, int bwd)
{
    return 1e12 / mb_calib_attn_bh(c, MB_PREC_BF16, 1e12, seq, hd, bh, causal, bwd) / TF;
}

/*
 * The shipped attention curves are cuDNN fused attention (what TE runs)
 * measured at real shapes (cudnn-frontend benchmark/sdpa_benchmark_training,
 * cudnn_sdpa_training.csv, BF16). mbsim's FLOP: forward 2 b h s ctx (d_qk +
 * d_vo), ctx s/2 causal, backward 2.5x forward; a lookup at the measured
 * shape (b x heads = batch_heads) must return the measured time:
 *   GB200 Llama-3.1 (b 2, 64 heads, d 128), s 8192: causal fwd 1.397 ms,
 *     causal bwd 4.127 ms, no-mask bwd 7.831 ms (causal bwd is on its own
 *     curve: 1332 vs no-mask 1404 TFLOP/s in cuDNN's count).
 *   H200 Llama-3.1 (b 1, 64 heads), s 4096: causal bwd 1.450 ms.
 *   H200 DeepSeek-V3 MLA (b 1, 128 heads, d_qk 192, d_vo 128), s 4096:
 *     causal fwd 1.148 ms (a curve stored at b x heads 64, so 128 tests the
 *     wave normalization both ways; 0.5 %).
 *   GB300 Kimi-K2.6 (b 2, 64 heads, 192/128), s 16384: causal bwd 24.921 ms
 *     measured on GB200, 21.253 ms on GB300.
 *   H100 = H200 x 1 (same 132 SMs x 1830 MHz); B200 = GB200 x 0.953 (148 SMs
 *     x 1965 / 2062 MHz).
 */
static void test_attention_cudnn(void **state)
{
    (void)state;
    static const struct {
        const char *gpu;
        double b, h, s, dq, dv;
        int causal, bwd;
        double ms, tol;
    } r[] = {{"GB200", 2, 64, 8192, 128, 128, 1, 0, 1.397, 2e-3}, {"GB200", 2, 64, 8192, 128, 128, 1, 1, 4.127, 2e-3},
             {"GB200", 2, 64, 8192, 128, 128, 0, 1, 7.831, 2e-3}, {"H200", 1, 64, 4096, 128, 128, 1, 1, 1.450, 2e-3},
             {"H100", 1, 64, 4096, 128, 128, 1, 1, 1.450, 2e-3},  {"H200", 1, 128, 4096, 192, 128, 1, 0, 1.148, 5e-3},
             {"GB200", 2, 64, 16384, 192, 128, 1, 1, 24.921, 2e-3}, {"GB300", 2, 64, 16384, 192, 128, 1, 1, 21.253, 2e-3},
             {"B200", 2, 64, 8192, 128, 128, 1, 1, 4.127 / 0.953, 2e-3}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        struct mb_calib *c = load_ok(r[i].gpu);
        double ctx = r[i].causal ? r[i].s / 2 : r[i].s;
        double flop = 2 * r[i].b * r[i].h * r[i].s * ctx * (r[i].dq + r[i].dv) * (r[i].bwd ? 2.5 : 1);
        double t = mb_calib_attn_bh(c, MB_PREC_BF16, flop, r[i].s, (int)r[i].dq, r[i].b * r[i].h, r[i].causal,
                                    r[i].bwd);
        if (!close_rel(t, r[i].ms * 1e-3, r[i].tol))
            fail_msg("%s s %g hd %g causal %d bwd %d: %.4f ms, cuDNN %.4f ms", r[i].gpu, r[i].s, r[i].dq,
                     r[i].causal, r[i].bwd, t * 1e3, r[i].ms);
        assert_int_equal(fallbacks(c, "attention"), 0);
        mb_calib_free(c);
    }
}

/*
 * The head-dim curves reproduce their points (hardware.md B.2 "other panels"):
 *   H100 bwd hdim 64: 272 at seq 512, 474 at 16k; fwd causal hdim 256: 286, 642.
 *   B200 = the same points x scale 2.1797: bwd hdim 64 at 512 -> 272 x 2.1797 = 592.88.
 *   A100 (FA2 column x 0.6071): bwd hdim 64 at 16k -> 291 x 0.6071 = 176.67.
 * Causal bwd has no curve of its own: it uses the non-causal bwd curve
 * (hdim 128 at 4k: 542), not counted (it used to fall to roofline 0.803 x 989 = 794).
 */
static void test_attention_head_dim_points(void **state)
{
    (void)state;
    struct mb_calib *c = load_fa3("H100");
    assert_true(close_rel(attn_tflops(c, 512, 64, 0, 0, 1), 272, 1e-12));
    assert_true(close_rel(attn_tflops(c, 16384, 64, 0, 0, 1), 474, 1e-12));
    assert_true(close_rel(attn_tflops(c, 512, 256, 0, 1, 0), 286, 1e-12));
    assert_true(close_rel(attn_tflops(c, 16384, 256, 0, 1, 0), 642, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 0, 1, 1), 542, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 0, 0, 1), 542, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    mb_calib_free(c);
    c = load_fa3("B200");
    assert_true(close_rel(attn_tflops(c, 512, 64, 0, 0, 1), 272 * 2.1797, 1e-12));
    mb_calib_free(c);
    c = load_ok("A100");
    assert_true(close_rel(attn_tflops(c, 16384, 64, 0, 0, 1), 291 * 0.6071, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    mb_calib_free(c);
}

/*
 * Between head dims: linear in ln(head_dim), H100.
 *   bwd hdim 96 at seq 512, between hdim 64 (272) and 128 (316):
 *     t = ln(96/64) / ln(128/64) = 0.5849625 -> 272 + 44 t = 297.738.
 *   fwd causal hdim 192 (MLA q-k) between 128 and 256, same t = ln 1.5 / ln 2:
 *     seq 16k: 616 + 26 t = 631.209; seq 512: 292 - 6 t = 288.490.
 * Along seq the two-point hdim-64 curve follows the hdim-128 curve's shape:
 *   rho(512) = 272/316 = 0.860759, rho(16k) = 474/561 = 0.844920; at 2k
 *   (ln 4 / ln 32 = 0.4 of the way): rho = 0.854424 -> 501 x rho = 428.066,
 *   not the 512-16k chord 272 + 0.4 x 202 = 352.8.
 */
static void test_attention_head_dim_interp(void **state)
{
    (void)state;
    struct mb_calib *c = load_fa3("H100");
    double t = log(1.5) / log(2.0);
    assert_true(close_rel(attn_tflops(c, 512, 96, 0, 0, 1), 272 + 44 * t, 1e-12));
    assert_true(close_rel(attn_tflops(c, 16384, 192, 0, 1, 0), 616 + 26 * t, 1e-12));
    assert_true(close_rel(attn_tflops(c, 512, 192, 0, 1, 0), 292 - 6 * t, 1e-12));
    double rho = 272.0 / 316 + (474.0 / 561 - 272.0 / 316) * 0.4;
    assert_true(close_rel(attn_tflops(c, 2048, 64, 0, 0, 1), 501 * rho, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    mb_calib_free(c);
}

/*
 * A kind without a curve at the head dim borrows the other kind's measured
 * ratio at the same seq (assumption, not counted), H100:
 *   fwd no-mask hdim 64 at 512: 467 x bwd(64)/bwd(128) = 467 x 272/316 = 401.975;
 *   bwd hdim 256 at 16k: 561 x fwd causal(256)/(128) = 561 x 642/616 = 584.679.
 * Outside every curve's head dims (64..256): clamped, counted as fallbacks:
 *   bwd hdim 32 at 512 -> the hdim-64 value 272; fwd causal hdim 512 at 16k -> 642.
 */
static void test_attention_head_dim_donor_and_clamp(void **state)
{
    (void)state;
    struct mb_calib *c = load_fa3("H100");
    assert_true(close_rel(attn_tflops(c, 512, 64, 0, 0, 0), 467.0 * 272 / 316, 1e-12));
    assert_true(close_rel(attn_tflops(c, 16384, 256, 0, 0, 1), 561.0 * 642 / 616, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    assert_true(close_rel(attn_tflops(c, 512, 32, 0, 0, 1), 272, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 1);
    assert_true(close_rel(attn_tflops(c, 16384, 512, 0, 1, 0), 642, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 2);
    assert_int_equal(lookups(c, "attention"), 4);
    mb_calib_free(c);
}

/*
 * Wave quantization: tiles = bh x ceil(seq/128) over the SMs,
 * occ(t) = t / (ceil(t/sms) x sms); factor = occ(tiles) / occ(benchmark tiles),
 * benchmark bh = 16384/seq x 2048/hdim.
 *   H100 (132 SMs), fwd causal hdim 128, seq 4096 (579 TFLOP/s): benchmark bh
 *   = 4 x 16 = 64, tiles 64 x 32 = 2048 -> 16 waves, occ 2048/2112 = 0.969697.
 *   bh 5: 160 tiles -> 2 waves, occ 160/264 = 0.606061; factor 0.625 -> 361.875.
 *   bh 66: 2112 tiles fill 16 waves, occ 1; factor 2112/2048 -> 597.094.
 *   bh 64 (the benchmark) -> 579; bh 0 or < 0 (unknown) -> 579.
 *   hdim 96 (no curve): benchmark bh = 4 x 2048/96 = 85.33, tiles 2730.67 ->
 *   21 waves, occ 2730.67/2772 = 0.985089; bh 5: factor 0.606061/0.985089 =
 *   0.615234 (checked as a time ratio, independent of the efficiency).
 *   B200 (148 SMs): occ(160) = 160/296, occ(2048) = 2048/2072; factor 0.546875.
 */
static void test_attention_wave(void **state)
{
    (void)state;
    struct mb_calib *c = load_fa3("H100");
    assert_true(close_rel(attn_tflops(c, 4096, 128, 5, 1, 0), 579 * 0.625, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 66, 1, 0), 579 * 2112.0 / 2048, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 64, 1, 0), 579, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 0, 1, 0), 579, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, -3, 1, 0), 579, 1e-12));
    assert_true(close_rel(mb_calib_attn(c, MB_PREC_BF16, 1e12, 4096, 128, 1, 0), 1e12 / 579e12, 1e-12));
    double f = mb_calib_attn(c, MB_PREC_BF16, 1e12, 4096, 96, 1, 0) /
               mb_calib_attn_bh(c, MB_PREC_BF16, 1e12, 4096, 96, 5, 1, 0);
    assert_true(close_rel(f, (160.0 / 264) / ((4 * 2048.0 / 96 * 32) / 2772), 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    /* roofline mode ignores the correction: peak x 0.803 */
    mb_calib_set_roofline(c, 1);
    assert_true(close_rel(attn_tflops(c, 4096, 128, 5, 1, 0), 0.803 * 989, 1e-12));
    mb_calib_free(c);
    c = load_fa3("B200");
    assert_true(close_rel(attn_tflops(c, 4096, 128, 5, 1, 0), 579 * 2.1797 * 0.546875, 1e-12));
    mb_calib_free(c);
}

/* Writes text to a fresh temporary file; path receives its name. */
static void write_tmp(const char *text, char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/*
 * Table format: several curves per (causal, bwd) at different head dims, in
 * any order (sorted on load); a repeated (causal, bwd, head_dim) is an error
 * naming the curve's line:col. TEST GPU (bf16 peak 1000), fwd causal:
 *   hdim 128: 300 at 512; hdim 64: 200 at 512 (listed second).
 *   hdim 96: 200 + 100 x ln(1.5)/ln 2 = 258.496; hdim 64: 200; hdim 128: 300.
 */
static void test_attention_table_curves(void **state)
{
    (void)state;
    static const char head[] =
        "schema_version: 1\n"
        "gpu: TEST\n"
        "spec:\n"
        "  peak: {fp32: 500 TFLOP/s, bf16: 1000 TFLOP/s, fp16: 1000 TFLOP/s}\n"
        "  hbm: 80 GB\n"
        "  hbm_bw: 3 TB/s\n"
        "  sms: 100\n"
        "  launch: 4 us\n"
        "  roofline_eff: 0.8\n"
        "  source: \"t\"\n"
        "gemm: {source: \"t\", curves: [{prec: bf16, plateau: 800 TFLOP/s, source: \"t\"}]}\n"
        "grouped_gemm: {source: \"t\", ref_m: 4096, points: [{tokens: 64, rel: 0.2}]}\n"
        "membound: {eff: 0.8, floor: 1 us, source: \"t\"}\n"
        "links:\n"
        "  source: \"t\"\n"
        "  nvlink: {eff: 0.8, latency: 1 us}\n"
        "  nic: {eff: 0.9, latency: 4 us}\n"
        "  pcie: {eff: 0.9, latency: 2 us}\n"
        "attention:\n"
        "  source: \"t\"\n"
        "  curves:\n"
        "    - {causal: true, bwd: false, head_dim: 128, source: \"t\", points: [{seq: 512, achieved: 300 TFLOP/s}]}\n"
        "    - {causal: true, bwd: false, head_dim: 64, source: \"t\", points: [{seq: 512, achieved: 200 TFLOP/s}]}\n";
    char path[] = "/tmp/mbsim_calib_XXXXXX";
    write_tmp(head, path);
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, path, &c, &e), 0);
    assert_true(close_rel(attn_tflops(c, 512, 64, 0, 1, 0), 200, 1e-12));
    assert_true(close_rel(attn_tflops(c, 512, 128, 0, 1, 0), 300, 1e-12));
    assert_true(close_rel(attn_tflops(c, 512, 96, 0, 1, 0), 200 + 100 * log(1.5) / log(2.0), 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    mb_calib_free(c);
    remove(path);

    char text[sizeof head + 200];
    snprintf(text, sizeof text, "%s%s", head,
             "    - {causal: true, bwd: false, head_dim: 64, source: \"u\", points: [{seq: 1024, achieved: 250 "
             "TFLOP/s}]}\n");
    char bad[] = "/tmp/mbsim_calib_XXXXXX";
    write_tmp(text, bad);
    char want[200], buf[800];
    snprintf(want, sizeof want, "%s:24:7: duplicate attention curve (causal 1, bwd 0, head_dim 64)", bad);
    c = NULL;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, bad, &c, &e), -1);
    assert_null(c);
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, want);
    remove(bad);
}

/*
 * Measured overlay points (base H100): a point with batch_heads is stored at
 * the benchmark shape (divided by its wave factor) so a lookup at the same bh
 * gives it back; a point at a head dim the kind lacks starts a new curve.
 *   fwd causal hdim 128, bh 5, seq 4k, 300 TFLOP/s: factor 0.625 (test_attention_wave)
 *   -> stored 480; lookup bh 5 -> 300, bh unknown -> 480.
 *   bwd hdim 96, seq 2k, 400 TFLOP/s (no bh): new curve; at 2k -> 400; at 4k it
 *   follows the hdim-128 shape: 542 x 400/501 = 432.735.
 */
static void test_attention_measured(void **state)
{
    (void)state;
    char path[] = "/tmp/mbsim_calib_XXXXXX", text[8192], base[4096];
    assert_non_null(realpath("tests/data/calib/fa3_H100.yaml", base)); /* the FA3 fixture, as above */
    snprintf(text, sizeof text, "schema_version: 1\n"
              "gpu: H100\n"
              "base: \"%s\"\n"
              "measured:\n"
              "  source: \"test\"\n"
              "  attention:\n"
              "    - {causal: true, bwd: false, head_dim: 128, batch_heads: 5, seq: 4096, achieved: 300 TFLOP/s, "
              "source: \"t\"}\n"
              "    - {causal: false, bwd: true, head_dim: 96, seq: 2048, achieved: 400 TFLOP/s, source: \"t\"}\n",
             base);
    write_tmp(text, path);
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, path, &c, &e), 0);
    assert_int_equal(mb_calib_n_measured(c), 2);
    assert_true(close_rel(attn_tflops(c, 4096, 128, 5, 1, 0), 300, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 128, 0, 1, 0), 480, 1e-12));
    assert_true(close_rel(attn_tflops(c, 2048, 96, 0, 0, 1), 400, 1e-12));
    assert_true(close_rel(attn_tflops(c, 4096, 96, 0, 0, 1), 542.0 * 400 / 501, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    mb_calib_free(c);
    remove(path);
}

/* Grouped GEMM efficiency falls as tokens per expert fall (DeepGEMM H800 ratios):
 * H100 BF16, N x K = 4096 x 7168. At 1024 tokens: rel 0.8745 x dense eff at
 * 4096 x 4096 x 7168, which lies between 4096^3 (783) and 8192^3 (795) at
 * t = ln(7168/4096) / ln 8 = 0.2691 -> 786.23, so 0.8745 x 786.23 = 687.6 TFLOP/s. */
static void test_grouped_monotone(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    const double toks[] = {16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 8};
    double prev = 1e30;
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        double M = toks[i];
        double v = 8 * 2.0 * M * 4096 * 7168 / mb_calib_grouped_gemm(c, MB_PREC_BF16, 8, M, 4096, 7168) / TF;
        /* monotone within 1 %: the dense points it can fall back to are themselves not (MAMF 794.5
         * at 2048 x 2048 x 13312, 783 at the larger 4096^3) */
        assert_true(v <= prev * 1.01);
        if (M < 4096)
            assert_true(v < prev);
        prev = v;
    }
    /* below ref_m (4096) tokens per group: the DeepGEMM grouped ratio, 0.8745 at 1024, times the
     * dense efficiency at 4096 x 4096 x 7168 (783 + 12 ln(1.75)/ln(8) between 4096^3 and 8192^3) */
    double v = 2.0 * 1024 * 4096 * 7168 / mb_calib_grouped_gemm(c, MB_PREC_BF16, 1, 1024, 4096, 7168) / TF;
    assert_true(close_rel(v, 0.8745 * (783 + 12 * log(1.75) / log(8.0)), 1e-9));
    /* from 4096 on a group is a full-size cuBLAS GEMM (TE GroupedLinear): the dense lookup of its
     * own shape when that is higher, here 8192 x 4096 x 7168 above 0.9546 x dense(4096 x ...) */
    double g8k = 2.0 * 8192 * 4096 * 7168 / mb_calib_grouped_gemm(c, MB_PREC_BF16, 1, 8192, 4096, 7168) / TF;
    double d8k = 2.0 * 8192 * 4096 * 7168 / mb_calib_gemm(c, MB_PREC_BF16, 8192, 4096, 7168) / TF;
    assert_true(close_rel(g8k, d8k, 1e-9));
    assert_true(d8k > 0.9546 * (783 + 12 * log(1.75) / log(8.0)));
    /* Below 64 tokens (32 and 8 above) are counted fallbacks. */
    assert_int_equal(fallbacks(c, "grouped_gemm"), 2);
    assert_true(mb_calib_grouped_gemm(c, MB_PREC_BF16, 0, 10, 10, 10) == 0.0);
    mb_calib_free(c);
}

/* Roofline mode: peak x spec roofline_eff (0.803 on H100) for every compute
 * lookup, each counted as a fallback; membound uses the raw HBM bandwidth. */
static void test_roofline_mode(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    mb_calib_set_roofline(c, 1);
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 4096, 4096, 4096), 0.803 * 989, 1e-9));
    (void)mb_calib_grouped_gemm(c, MB_PREC_BF16, 8, 1024, 4096, 7168);
    assert_true(close_rel(1e12 / mb_calib_attn(c, MB_PREC_BF16, 1e12, 4096, 128, 1, 0) / TF, 0.803 * 989, 1e-9));
    assert_true(close_rel(mb_calib_membound(c, 3.35e9), 1e-3, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 1);
    assert_int_equal(fallbacks(c, "grouped_gemm"), 1);
    assert_int_equal(fallbacks(c, "attention"), 1);
    assert_int_equal(fallbacks(c, "membound"), 1);
    mb_calib_set_roofline(c, 0);
    assert_true(close_rel(gemm_tflops(c, MB_PREC_BF16, 4096, 4096, 4096), 783, 1e-9));
    assert_int_equal(fallbacks(c, "gemm"), 1);
    mb_calib_free(c);
}

/*
 * membound.eff of the shipped H200, GB200 and GB300 tables reproduces cuDNN's
 * RMSNorm/LayerNorm kernels (cudnn-frontend benchmark/norms, cudnn_norms.csv,
 * backend cudnn, BF16) over its 15 model shapes {N tokens, C hidden, fwd ms,
 * bwd ms}: forward moves x and y (4NC bytes), backward x, dy and dx (6NC), the
 * convention of that benchmark's GB/s and of mb_ops_norm. The summed times of
 * the 30 kernels, priced by mb_calib_membound, match the measured sums within
 * 2 % (small shapes are slower and large ones faster than the mean; the sum is
 * what a training step adds up).
 */
static void test_membound_cudnn_norms(void **state)
{
    (void)state;
    static const double h200[][4] = {
        {16384, 4096, 0.072, 0.106}, {8192, 8192, 0.071, 0.114}, {4096, 16384, 0.070, 0.118},
        {8192, 5120, 0.045, 0.069},  {1024, 12288, 0.016, 0.080}, {8192, 4096, 0.035, 0.058},
        {4096, 6144, 0.029, 0.049},  {4096, 8192, 0.041, 0.061},  {2048, 4096, 0.010, 0.018},
        {131072, 128, 0.021, 0.035}, {8192, 128, 0.003, 0.009},   {8192, 5120, 0.045, 0.069},
        {4096, 2048, 0.010, 0.019},  {131072, 128, 0.021, 0.035}, {16384, 128, 0.004, 0.011}};
    static const double gb200[][4] = {
        {16384, 4096, 0.042, 0.065}, {8192, 8192, 0.045, 0.077}, {4096, 16384, 0.044, 0.084},
        {8192, 5120, 0.028, 0.051},  {1024, 12288, 0.013, 0.053}, {8192, 4096, 0.023, 0.036},
        {4096, 6144, 0.017, 0.036},  {4096, 8192, 0.023, 0.041},  {2048, 4096, 0.009, 0.015},
        {131072, 128, 0.016, 0.027}, {8192, 128, 0.003, 0.009},   {8192, 5120, 0.028, 0.050},
        {4096, 2048, 0.007, 0.014},  {131072, 128, 0.016, 0.027}, {16384, 128, 0.005, 0.011}};
    static const double gb300[][4] = {
        {16384, 4096, 0.042, 0.066}, {8192, 8192, 0.045, 0.074}, {4096, 16384, 0.044, 0.082},
        {8192, 5120, 0.028, 0.050},  {1024, 12288, 0.013, 0.052}, {8192, 4096, 0.022, 0.036},
        {4096, 6144, 0.017, 0.035},  {4096, 8192, 0.022, 0.041},  {2048, 4096, 0.009, 0.014},
        {131072, 128, 0.016, 0.026}, {8192, 128, 0.003, 0.008},   {8192, 5120, 0.027, 0.050},
        {4096, 2048, 0.007, 0.014},  {131072, 128, 0.016, 0.026}, {16384, 128, 0.005, 0.010}};
    const struct {
        const char *gpu;
        const double (*row)[4];
    } g[] = {{"H200", h200}, {"GB200", gb200}, {"GB300", gb300}};
    for (size_t i = 0; i < 3; i++) {
        struct mb_calib *c = load_ok(g[i].gpu);
        double meas = 0, model = 0;
        for (int j = 0; j < 15; j++) {
            double nc = g[i].row[j][0] * g[i].row[j][1];
            meas += (g[i].row[j][2] + g[i].row[j][3]) * 1e-3;
            model += mb_calib_membound(c, 4 * nc) + mb_calib_membound(c, 6 * nc);
        }
        if (!close_rel(model, meas, 0.02))
            fail_msg("%s norms: model %.1f us, cuDNN %.1f us", g[i].gpu, model * 1e6, meas * 1e6);
        mb_calib_free(c);
    }
}

/* Memory-bound ops: bytes / (3.35 TB/s x 0.69), floor 0.7 us; links. */
static void test_membound_links(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    assert_true(close_rel(mb_calib_membound(c, 1e9), 1e9 / (3.35e12 * 0.69), 1e-9));
    assert_true(close_rel(mb_calib_membound(c, 1024), 0.7e-6, 1e-9));
    assert_true(mb_calib_membound(c, 0) == 0.0);
    assert_true(close_rel(mb_calib_link_eff(c, MB_LINK_NVLINK), 0.81, 1e-12));
    assert_true(close_rel(mb_calib_link_eff(c, MB_LINK_NIC), 0.94, 1e-12));
    assert_true(close_rel(mb_calib_link_eff(c, MB_LINK_PCIE), 0.88, 1e-12));
    assert_true(close_rel(mb_calib_link_latency(c, MB_LINK_NIC), 4.1e-6, 1e-9));
    /* optional NVLS entry: H100 275/450 and 147 us (derived in the table's source); B200 has none */
    assert_true(close_rel(mb_calib_link_eff(c, MB_LINK_NVLS), 0.6111, 1e-12));
    assert_true(close_rel(mb_calib_link_latency(c, MB_LINK_NVLS), 147e-6, 1e-9));
    assert_string_equal(mb_prec_name(MB_PREC_FP8), "fp8");
    mb_calib_free(c);
    c = load_ok("B200");
    assert_true(mb_calib_link_eff(c, MB_LINK_NVLS) == 0 && mb_calib_link_latency(c, MB_LINK_NVLS) == 0);
    mb_calib_free(c);
}

static void expect_bad(const char *file, const char *msg)
{
    struct mb_calib *c = NULL;
    struct mb_err e;
    char buf[800];
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, file, &c, &e), -1);
    assert_null(c);
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, msg);
}

/* Broken tables: exact messages with line:col (each differs from good_min.yaml in one place). */
static void test_bad_tables(void **state)
{
    (void)state;
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, "tests/data/calib/good_min.yaml", &c, &e), 0);
    assert_true(mb_calib_triton_frac(c) == 1.0); /* no gemm.triton_frac: the GEMM rate */
    mb_calib_free(c);
    expect_bad("tests/data/calib/bad_unknown_key.yaml",
               "tests/data/calib/bad_unknown_key.yaml:7:3: unknown key 'hbm_bandwidth' in spec; expected one of: "
               "peak, hbm, hbm_bw, sms, launch, roofline_eff, source");
    expect_bad("tests/data/calib/bad_unit.yaml",
               "tests/data/calib/bad_unit.yaml:7:11: bad unit 'TB' in '3 TB': expected a bandwidth with a unit "
               "(B/s, KB/s, MB/s, GB/s, TB/s, Mb/s, Gb/s, Gbit/s, Tb/s, GiB/s)");
    expect_bad("tests/data/calib/bad_unsorted.yaml",
               "tests/data/calib/bad_unsorted.yaml:20:11: gemm points must be sorted by increasing b*m*n*k "
               "(8.38861e+06 after 1.67772e+07)");
    expect_bad("tests/data/calib/bad_negative.yaml",
               "tests/data/calib/bad_negative.yaml:20:15: gemm point.m = -512 is out of range [1, 16777216]");
    expect_bad("tests/data/calib/bad_unsorted_grouped.yaml",
               "tests/data/calib/bad_unsorted_grouped.yaml:26:7: grouped_gemm points must be sorted by "
               "increasing tokens (32 after 64)");
    expect_bad("tests/data/calib/bad_hybridep_nic.yaml",
               "tests/data/calib/bad_hybridep_nic.yaml:40:9: links.hybridep_nic points must be sorted by "
               "increasing domains (4 after 8)");
}

/*
 * A measured attention point above the GPU's peak (tests/data/calib/bad_attn_over_peak.yaml, an
 * overlay of fixture_H100.yaml): 1200 TFLOP/s against the fixture's bf16 peak of 1000 TFLOP/s is
 * 1200 / 1000 = 1.2 of it ("%.4g": "1.2"), reported at the point's `achieved` value, line 10,
 * column 70 of the file (counted by hand: the value starts after the 69 characters
 * `    - {causal: true, bwd: false, head_dim: 128, seq: 4096, achieved: `). The message used to be
 * formatted from the already freed point array (heap-use-after-free under ASan).
 */
static void test_attention_over_peak(void **state)
{
    (void)state;
    expect_bad("tests/data/calib/bad_attn_over_peak.yaml",
               "tests/data/calib/bad_attn_over_peak.yaml:10:70: measured attention point achieves 1.2 of the peak "
               "(more than 1)");
}

/* links.hybridep_nic (mb_calib_flex_nic_eff): the fixture's points are 0.5 / 0.4 / 0.6 (dispatch,
 * FP8 dispatch, combine) at 2 domains and 0.8 / 0.7 / 0.9 at 8. Between them linear in ln(domains):
 * 4 domains lie halfway (ln 4 = (ln 2 + ln 8) / 2), 0.65 / 0.55 / 0.75; 3 domains at
 * t = ln(3/2) / ln 4 = 0.29248: 0.5 + 0.3 t = 0.58774. Outside: the end points (16 domains: 0.8),
 * and nothing below 2 domains (no scale-out traffic) or without the entry (fixture_GB200).
 * The shipped H100 table reproduces its HybridEP benchmark points (16 ranks: 0.717 / 0.664 /
 * 0.629, docs/calibration.md links). */
static void test_hybridep_nic(void **state)
{
    (void)state;
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", "tests/data/calib/fixture_H100.yaml", &c, &e), 0);
    static const double at2[] = {0.5, 0.4, 0.6}, at4[] = {0.65, 0.55, 0.75}, at8[] = {0.8, 0.7, 0.9};
    for (int k = 0; k < MB_CALIB_FLEX_COUNT; k++) {
        enum mb_calib_flex_kind fk = (enum mb_calib_flex_kind)k;
        assert_true(close_rel(mb_calib_flex_nic_eff(c, fk, 2), at2[k], 1e-12));
        assert_true(close_rel(mb_calib_flex_nic_eff(c, fk, 4), at4[k], 1e-12));
        assert_true(close_rel(mb_calib_flex_nic_eff(c, fk, 8), at8[k], 1e-12));
        assert_true(close_rel(mb_calib_flex_nic_eff(c, fk, 16), at8[k], 1e-12));
        assert_true(mb_calib_flex_nic_eff(c, fk, 1) == 0);
    }
    assert_true(close_rel(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_DISPATCH, 3), 0.5 + 0.3 * log(1.5) / log(4), 1e-12));
    /* links are not roofline lookups: the same answer in roofline mode */
    mb_calib_set_roofline(c, 1);
    assert_true(close_rel(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_COMBINE, 4), 0.75, 1e-12));
    mb_calib_free(c);
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("GB200", "tests/data/calib/fixture_GB200.yaml", &c, &e), 0);
    assert_true(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_DISPATCH, 4) == 0);
    mb_calib_free(c);
    c = load_ok("H100");
    assert_true(close_rel(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_DISPATCH, 2), 0.717, 1e-12));
    assert_true(close_rel(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_DISPATCH_FP8, 2), 0.664, 1e-12));
    assert_true(close_rel(mb_calib_flex_nic_eff(c, MB_CALIB_FLEX_COMBINE, 2), 0.629, 1e-12));
    mb_calib_free(c);
}

/*
 * The shipped B300 and H200 tables reproduce Transformer Engine's per-layer
 * GEMM times under each recipe (TE docs low_precision_training/speedups.rst,
 * te_gemm_precision_speedups.csv, bars read by eye +-0.2 ms): one layer of a
 * 5B model, h 4096, ffn 16384, T = 15872 tokens, 12 GEMMs (fprop [T,K]x[K,N],
 * dgrad [T,N]x[N,K], wgrad [K,T]x[T,N] of QKV N 3h K h, proj N h K h, fc1 N f
 * K h, fc2 N h K f), "autocast" = kernels + quantization. The step model
 * (mb_ops_gemm_p) prices a recipe's GEMM as gemm_time_scale x mb_calib_gemm at
 * the recipe's precision, plus the casts a training step does: the input
 * [T,K] once forward (3 B per element as mbsim counts: BF16 read, 1-byte
 * write) and the output gradient [T,N] once backward (4 B: read, write,
 * transposed write), weights cached across microbatches, through
 * mb_calib_quant. The benchmark does more: TE's benchmarks/gemm/benchmark_gemm.py
 * (NVIDIA/TransformerEngine@3329417) times every shape as a te.Linear(K, N)
 * forward on x [M,K] under autocast, which quantizes x and the weight [K,N] on
 * each call (is_first_microbatch None: no weight cache), and its chart counts
 * the fprop shapes twice for dgrad. Its quantized elements per layer,
 * 2 sum(T K + K N) + sum(K T + T N), against the training step's
 * sum(T K + T N), are 2353M / 1040M = 2.262x; at the same time per element the
 * benchmark's quantization is the training casts x that ratio, which is what
 * this test adds to the kernels.
 *   B300 (measured on this GPU): BF16 12.9, FP8 delayed 8.0, FP8 current 9.2,
 *   block 9.9, MXFP8 9.0, NVFP4 6.4 ms; within 10 %.
 *   B200, GB200: NVFP4 kernels 1.816x the FP8 rate (B300 pre-quantized 6.9 / 3.8 ms).
 *   H200 NVL is a 600 W PCIe card whose SMs run slower than the SXM the table
 *   describes (BF16 31.2 ms pre-quantized against the table's 24.1): the
 *   predicted kernel time is taken relative to BF16 (x 31.2 / predicted BF16
 *   kernels) and the quantization, HBM-bound on the same 4.8 TB/s, absolute:
 *   FP8 delayed 18.6, current 19.9, block 22.3 ms; within 10 %.
 */
static double te_layer(struct mb_calib *c, const char *recipe, enum mb_prec p, int quantize, double *quant)
{
    const double T = 15872, h = 4096, f = 16384;
    const double sh[4][2] = {{3 * h, h}, {h, h}, {f, h}, {h, f}}; /* {N, K} */
    double sc = mb_calib_recipe_gemm_scale(c, recipe), t = 0, bench_el = 0, train_el = 0;
    *quant = 0;
    for (int i = 0; i < 4; i++) {
        double N = sh[i][0], K = sh[i][1];
        t += sc * (mb_calib_gemm(c, p, T, N, K) + mb_calib_gemm(c, p, T, K, N) + mb_calib_gemm(c, p, K, N, T));
        if (quantize)
            *quant += mb_calib_quant(c, recipe, T * K * 3) + mb_calib_quant(c, recipe, T * N * 4);
        bench_el += 2 * (T * K + K * N) + (K * T + T * N); /* fprop x2 (dgrad as fprop) + wgrad calls */
        train_el += T * K + T * N;                           /* input forward, gradient backward */
    }
    *quant *= bench_el / train_el;
    return t;
}

static void test_recipes_te_layer(void **state)
{
    (void)state;
    static const struct {
        const char *recipe;
        enum mb_prec p;
        double b300_ms, h200nvl_ms; /* autocast; 0 = not measured */
    } r[] = {{"bf16", MB_PREC_BF16, 12.9, 31.3},         {"fp8", MB_PREC_FP8, 8.0, 18.6},
             {"fp8_cs", MB_PREC_FP8, 9.2, 19.9},         {"fp8_blockwise", MB_PREC_FP8, 9.9, 22.3},
             {"mxfp8", MB_PREC_FP8, 9.0, 0},             {"nvfp4", MB_PREC_FP4, 6.4, 0}};
    struct mb_calib *b300 = load_ok("B300"), *h200 = load_ok("H200");
    double q, h200_bf16 = te_layer(h200, "bf16", MB_PREC_BF16, 0, &q);
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        int quantize = r[i].p != MB_PREC_BF16;
        double k = te_layer(b300, r[i].recipe, r[i].p, quantize, &q);
        if (!close_rel(k + q, r[i].b300_ms * 1e-3, 0.10))
            fail_msg("B300 %s: %.2f ms (kernels %.2f + quantization %.2f), TE %.1f ms", r[i].recipe, (k + q) * 1e3,
                     k * 1e3, q * 1e3, r[i].b300_ms);
        if (r[i].h200nvl_ms > 0) {
            k = te_layer(h200, r[i].recipe, r[i].p, quantize, &q) * 31.2e-3 / h200_bf16;
            if (!close_rel(k + q, r[i].h200nvl_ms * 1e-3, 0.10))
                fail_msg("H200 NVL %s: %.2f ms (kernels %.2f + quantization %.2f), TE %.1f ms", r[i].recipe,
                         (k + q) * 1e3, k * 1e3, q * 1e3, r[i].h200nvl_ms);
        }
    }
    mb_calib_free(b300);
    mb_calib_free(h200);
    /* B200 and GB200 (FP4 peak 2x FP8, no NVFP4 measurement): NVFP4 kernels at
     * B300's measured rate relative to FP8 (pre-quantized 6.9 / 3.8 ms = 1.816x,
     * docs/calibration.md "recipes"), not at B300's fraction of the FP4 peak */
    const char *same_rate[] = {"B200", "GB200"};
    for (size_t i = 0; i < 2; i++) {
        struct mb_calib *c = load_ok(same_rate[i]);
        double k8 = te_layer(c, "fp8", MB_PREC_FP8, 0, &q), k4 = te_layer(c, "nvfp4", MB_PREC_FP4, 0, &q);
        if (!close_rel(k8 / k4, 6.9 / 3.8, 0.02))
            fail_msg("%s: NVFP4 kernels %.3f ms = %.3fx the FP8 rate, B300 measured 6.9 / 3.8 = 1.816x", same_rate[i],
                     k4 * 1e3, k8 / k4);
        mb_calib_free(c);
    }
}

/* Framework-time model (`framework:`, docs/calibration.md). fixture_fw_H100.yaml is an
 * overlay of fixture_H100.yaml (BF16 GEMM 2mnk / 500 TFLOP/s, memory-bound bytes / 2 TB/s,
 * neutral framework section) setting tensor_fraction 0.8, membound_eff 0.4, 5 us / 1 us per
 * kernel, overlap_slowdown 0.25, 3 us of host time per kernel and 7 us per MoE-block kernel. The lookups answer kernel times until
 * mb_calib_use_framework: then a 4096^3 BF16 GEMM takes 2 * 4096^3 / (500e12 * 0.8) and
 * 1 GB of memory-bound traffic 1e9 / (4e12 * 0.4). A view's parameters are its own; a table
 * without the section answers the defaults (membound_eff = its membound.eff); bounds and
 * unknown keys are errors at the key. */
static void test_framework(void **state)
{
    (void)state;
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", "tests/data/calib/fixture_fw_H100.yaml", &c, &e), 0);
    struct mb_calib_framework fw;
    mb_calib_framework_get(c, &fw);
    assert_true(mb_dbl_eq(fw.v[MB_FW_TENSOR_FRACTION], 0.8) && mb_dbl_eq(fw.v[MB_FW_MEMBOUND_EFF], 0.4));
    assert_true(mb_dbl_eq(fw.v[MB_FW_KERNEL_EAGER], 5e-6) && mb_dbl_eq(fw.v[MB_FW_KERNEL_GRAPH], 1e-6));
    assert_true(mb_dbl_eq(fw.v[MB_FW_OVERLAP_SLOWDOWN], 0.25) && fw.v[MB_FW_STEP_OVERHEAD] == 0);
    assert_true(mb_dbl_eq(fw.v[MB_FW_HOST_KERNEL], 3e-6) && mb_dbl_eq(fw.v[MB_FW_KERNEL_MOE], 7e-6));
    assert_int_equal(fw.set, (1u << MB_FW_COUNT) - 1);
    assert_string_equal(fw.source, "test fixture (round numbers)");
    double g = 2.0 * 4096 * 4096 * 4096 / 500e12;
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_BF16, 4096, 4096, 4096), g, 1e-12));
    assert_true(close_rel(mb_calib_membound(c, 1e9), 1e9 / 2e12, 1e-12));
    struct mb_calib *v = mb_calib_view(c);
    mb_calib_use_framework(v, 1);
    assert_true(close_rel(mb_calib_gemm(v, MB_PREC_BF16, 4096, 4096, 4096), g / 0.8, 1e-12));
    assert_true(close_rel(mb_calib_membound(v, 1e9), 1e9 / 1.6e12, 1e-12));
    /* a view's own parameters, clamped to the bounds; the table keeps its own */
    fw.v[MB_FW_TENSOR_FRACTION] = 0.5; /* below the bound 0.6 */
    fw.v[MB_FW_KERNEL_EAGER] = 20e-6;
    mb_calib_framework_set(v, &fw);
    assert_true(close_rel(mb_calib_gemm(v, MB_PREC_BF16, 4096, 4096, 4096), g / 0.6, 1e-12));
    struct mb_calib_framework fv;
    mb_calib_framework_get(v, &fv);
    assert_true(mb_dbl_eq(fv.v[MB_FW_KERNEL_EAGER], 20e-6));
    mb_calib_framework_get(c, &fw);
    assert_true(mb_dbl_eq(fw.v[MB_FW_KERNEL_EAGER], 5e-6));
    mb_calib_set_roofline(v, 1); /* roofline mode: no framework terms */
    assert_true(close_rel(mb_calib_gemm(v, MB_PREC_BF16, 4096, 4096, 4096), 2.0 * 4096 * 4096 * 4096 / 500e12,
                          1e-12));
    mb_calib_free(v);
    mb_calib_free(c);
    /* no section: the defaults, membound_eff from membound.eff */
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, "tests/data/calib/good_min.yaml", &c, &e), 0);
    mb_calib_framework_get(c, &fw);
    assert_int_equal(fw.set, 0);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
        double want = p == MB_FW_MEMBOUND_EFF ? 0.8 : in->def; /* good_min: membound.eff 0.8 */
        assert_true(mb_dbl_eq(fw.v[p], want));
        assert_true(want >= in->lo && want <= in->hi && in->sigma > 0);
    }
    mb_calib_free(c);
    expect_bad("tests/data/calib/bad_framework_range.yaml",
               "tests/data/calib/bad_framework_range.yaml:6:17: framework.kernel_eager = 80 us is out of range [0, 60] us");
    expect_bad("tests/data/calib/bad_framework_key.yaml",
               "tests/data/calib/bad_framework_key.yaml:6:3: unknown key 'tensor_frac' in framework; expected one "
               "of: tensor_fraction, membound_eff, kernel_eager, kernel_graph, overlap_slowdown, step_overhead, "
               "host_kernel, kernel_moe, source, fit");
}

/* Recipe GEMM-time scales (`recipes:`): the shipped H100 and H200 tables carry
 * fp8_blockwise 1.078 and the tensor-scaled fp8 / fp8_cs 0.955 (TE's H200 NVL
 * pre-quantized bars: (22.3 - 3.91) / 17.07 and 2 x 0.9141 / (31.2 / 16.3), see the table's
 * source); a recipe without an entry and roofline mode get 1. A
 * fixture with two entries returns each; a repeated recipe and a scale out of
 * [0.1, 10] are errors at the offending line:col. */
static void test_recipes(void **state)
{
    (void)state;
    struct mb_calib *c = load_ok("H100");
    assert_true(mb_calib_recipe_gemm_scale(c, "fp8_blockwise") == 1.078);
    assert_true(mb_calib_recipe_gemm_scale(c, "fp8_cs") == 0.955);
    assert_true(mb_calib_recipe_gemm_scale(c, "nvfp4") == 1.0);
    assert_true(mb_calib_recipe_gemm_scale(c, NULL) == 1.0);
    mb_calib_set_roofline(c, 1);
    assert_true(mb_calib_recipe_gemm_scale(c, "fp8_blockwise") == 1.0);
    mb_calib_free(c);

    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load(NULL, "tests/data/calib/good_recipes.yaml", &c, &e), 0);
    assert_true(mb_calib_recipe_gemm_scale(c, "fp8_blockwise") == 1.5);
    assert_true(mb_calib_recipe_gemm_scale(c, "mxfp8") == 0.9);
    assert_true(mb_calib_recipe_gemm_scale(c, "bf16") == 1.0);
    /* quant_eff: fp8_cs casts run at 0.25 x 3 TB/s, floor 1 us; gemm_time_scale defaults to 1;
     * a recipe without quant_eff (mxfp8) prices its casts as membound (0.8 x 3 TB/s) */
    assert_true(mb_calib_recipe_gemm_scale(c, "fp8_cs") == 1.0);
    assert_true(close_rel(mb_calib_quant(c, "fp8_cs", 3e9), 3e9 / (0.25 * 3e12), 1e-12));
    assert_true(close_rel(mb_calib_quant(c, "fp8_cs", 100), 1e-6, 1e-12));
    assert_true(close_rel(mb_calib_quant(c, "mxfp8", 3e9), 3e9 / (0.8 * 3e12), 1e-12));
    assert_true(close_rel(mb_calib_quant(c, NULL, 3e9), 3e9 / (0.8 * 3e12), 1e-12));
    mb_calib_set_roofline(c, 1);
    assert_true(close_rel(mb_calib_quant(c, "fp8_cs", 3e9), 3e9 / 3e12, 1e-12));
    mb_calib_free(c);
    expect_bad("tests/data/calib/bad_recipe_dup.yaml",
               "tests/data/calib/bad_recipe_dup.yaml:38:14: duplicate recipe 'fp8_blockwise'");
    expect_bad("tests/data/calib/bad_recipe_name.yaml",
               "tests/data/calib/bad_recipe_name.yaml:37:14: unknown recipe 'FP8-blockwise'; expected one of: bf16, "
               "fp16, fp8, fp8_cs, fp8_blockwise, mxfp8, nvfp4");
    expect_bad("tests/data/calib/bad_recipe_scale.yaml",
               "tests/data/calib/bad_recipe_scale.yaml:37:46: recipes[].gemm_time_scale = 50 is out of range "
               "[0.1, 10]");
}

/* t = lat + bytes / bw of a measured-curve answer, microseconds. */
static double coll_us(const struct mb_calib *c, const char *op, int group, double mib, double *lat_us)
{
    double lat = -1, bw = -1;
    if (!mb_calib_coll_line(c, op, group, mib * 1048576.0, &lat, &bw))
        return 0;
    *lat_us = lat * 1e6;
    return (lat + mib * 1048576.0 / bw) * 1e6;
}

/* Measured collectives (tests/data/calib/coll_curve.yaml): points on
 * min(A: 20 + 20 x, B: 60 + 5 x) us, x in MiB, measured at 1, 2, 4 (twice,
 * averaging 80), 16 and 32 MiB. Hand values by the documented rule:
 *  - 3 MiB (gap 2..4): left line 1-2 is A -> 80, right line 4-16 is B -> 75;
 *    the lower, 75 (= min(A, B) at 3, across the switch), is above the chord
 *    60 + 20 * 1/2 = 70: 75 us, fixed part B's 60 us;
 *  - 8 MiB (gap 4..16): left line 2-4 (60 + 10 x) -> 140, right line 16-32 is
 *    B -> 100 = the chord (4 and 16 both lie on B): 100 us, fixed part 60 us;
 *  - 1.5 MiB (gap 1..2, no left line): right line 2-4 (40 + 10 x) -> 55 us,
 *    above the chord 50 (the rule's upper-bound error where a pair straddles
 *    the switch);
 *  - 4 MiB (measured): 80 us; 0.5 MiB below the range: A -> 30 us;
 *  - 48 MiB above the range (<= 2 x 32): B -> 300 us; 65 MiB: nothing;
 *  - another group size or op: nothing. Op names match regardless of case and
 *    underscores. */
static void test_coll_line(void **state)
{
    (void)state;
    struct mb_calib *c;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", "tests/data/calib/coll_curve.yaml", &c, &e), 0);
    assert_int_equal((int)mb_calib_n_coll_points(c), 6);
    double lat;
    assert_true(fabs(coll_us(c, "alltoall", 32, 3, &lat) - 75) < 1e-6 && fabs(lat - 60) < 1e-6);
    assert_true(fabs(coll_us(c, "all_to_all", 32, 8, &lat) - 100) < 1e-6 && fabs(lat - 60) < 1e-6);
    assert_true(fabs(coll_us(c, "AllToAll", 32, 1.5, &lat) - 55) < 1e-6 && fabs(lat - 40) < 1e-6);
    assert_true(fabs(coll_us(c, "alltoall", 32, 4, &lat) - 80) < 1e-6);
    assert_true(fabs(coll_us(c, "alltoall", 32, 0.5, &lat) - 30) < 1e-6 && fabs(lat - 20) < 1e-6);
    assert_true(fabs(coll_us(c, "alltoall", 32, 48, &lat) - 300) < 1e-6 && fabs(lat - 60) < 1e-6);
    assert_true(coll_us(c, "alltoall", 32, 65, &lat) == 0);
    assert_true(coll_us(c, "alltoall", 16, 8, &lat) == 0);
    assert_true(coll_us(c, "allgather", 32, 8, &lat) == 0);
    mb_calib_free(c);
    /* one measured size (coll_single.yaml: 8 MiB in 100 us): its time below it (a latency
     * floor), its bandwidth above it, nothing beyond a factor of 2 */
    assert_int_equal(mb_calib_load("H100", "tests/data/calib/coll_single.yaml", &c, &e), 0);
    assert_true(fabs(coll_us(c, "reduce_scatter", 8, 4, &lat) - 100) < 1e-6);
    assert_true(fabs(coll_us(c, "reducescatter", 8, 16, &lat) - 200) < 1e-6);
    assert_true(coll_us(c, "reduce_scatter", 8, 3.9, &lat) == 0 && coll_us(c, "reduce_scatter", 8, 16.1, &lat) == 0);
    mb_calib_free(c);
}

/*
 * The test fixtures tests/data/calib/fixture_H100.yaml and fixture_GB200.yaml, which the other unit
 * tests use instead of the shipped tables, answer what their header comment promises (so hand
 * calculations in those tests can rely on it). H100 fixture: bf16 peak 1000 TFLOP/s x flat 0.5,
 * HBM 4 TB/s, membound eff 0.5, floor 1 us:
 *   GEMM 4096^3 bf16: compute 2 x 4096^3 / 500e12 = 274.878 us > memory 2 x 3 x 4096^2 / 4e12 = 25.2 us;
 *   GEMM 64^3 bf16: compute 1.049 ns < memory 2 x 3 x 64^2 / 4e12 = 6.144 ns, memory wins;
 *   GEMM 4096^3 fp8: 2 x 4096^3 / 1000e12 = 137.439 us; fp32 (no curve): at 0.5 x 500 TFLOP/s, a fallback;
 *   grouped 8 x 512 tokens x 1536 x 2048: 8 x 2 x 512 x 1536 x 2048 / 500e12 = 51.540 us (rel 1);
 *   attention 1 TFLOP causal seq 4096 hdim 128, bh 32 (32 x 32 tiles = 8 waves of 128 SMs): 2 ms;
 *     hdim 64 (no curve, clamped to 128): 2 ms and one fallback;
 *   membound 1 GB: 1e9 / 2e12 = 0.5 ms; 1000 B: the 1 us floor;
 *   links NVLink 0.8 / 1 us, NIC 0.9 / 5 us, PCIe 0.9 / 2 us, NVLS 0.6 / 100 us; launch 10 us; 80 GiB.
 * GB200 fixture: bf16 2000 x 0.5 = 1000 TFLOP/s, HBM 8 TB/s (membound 4 TB/s), NVLS 0.5 / 10 us, 180 GiB.
 */
static void test_fixture_tables(void **state)
{
    (void)state;
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", "tests/data/calib/fixture_H100.yaml", &c, &e), 0);
    assert_true(mb_calib_triton_frac(c) == 0.5); /* Triton scans at half the GEMM rate */
    const struct mb_gpu_spec *s = mb_calib_spec(c);
    assert_string_equal(s->name, "H100");
    assert_true(close_rel(s->hbm_bytes, 80.0 * 1073741824.0, 1e-12));
    assert_true(close_rel(s->launch_s, 10e-6, 1e-12) && s->sms == 128);
    const double n = 4096;
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_BF16, n, n, n), 2 * n * n * n / 500e12, 1e-12));
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_FP16, n, n, n), 2 * n * n * n / 500e12, 1e-12));
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_BF16, 64, 64, 64), 2.0 * 3 * 64 * 64 / 4e12, 1e-12));
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_FP8, n, n, n), 2 * n * n * n / 1000e12, 1e-12));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_FP32, n, n, n), 2 * n * n * n / 250e12, 1e-12));
    assert_int_equal(fallbacks(c, "gemm"), 1);
    assert_true(close_rel(mb_calib_grouped_gemm(c, MB_PREC_BF16, 8, 512, 1536, 2048),
                          8 * 2.0 * 512 * 1536 * 2048 / 500e12, 1e-12));
    assert_int_equal(fallbacks(c, "grouped_gemm"), 0);
    assert_true(close_rel(mb_calib_attn_bh(c, MB_PREC_BF16, 1e12, 4096, 128, 32, 1, 0), 2e-3, 1e-12));
    assert_true(close_rel(mb_calib_attn_bh(c, MB_PREC_BF16, 1e12, 4096, 128, 32, 0, 1), 2e-3, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 0);
    assert_true(close_rel(mb_calib_attn(c, MB_PREC_BF16, 1e12, 4096, 64, 0, 0), 2e-3, 1e-12));
    assert_int_equal(fallbacks(c, "attention"), 1);
    assert_true(close_rel(mb_calib_membound(c, 1e9), 0.5e-3, 1e-12));
    assert_true(close_rel(mb_calib_membound(c, 1000), 1e-6, 1e-12));
    static const double eff[] = {0.8, 0.9, 0.9, 0.6}, lat[] = {1e-6, 5e-6, 2e-6, 100e-6};
    for (int k = 0; k < MB_LINK_COUNT; k++)
        assert_true(close_rel(mb_calib_link_eff(c, (enum mb_link_kind)k), eff[k], 1e-12) &&
                    close_rel(mb_calib_link_latency(c, (enum mb_link_kind)k), lat[k], 1e-12));
    /* roofline mode: peak x roofline_eff 0.5, raw HBM bandwidth */
    mb_calib_set_roofline(c, 1);
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_BF16, n, n, n), 2 * n * n * n / 500e12, 1e-12));
    assert_true(close_rel(mb_calib_membound(c, 1e9), 1e9 / 4e12, 1e-12));
    mb_calib_free(c);

    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("GB200", "tests/data/calib/fixture_GB200.yaml", &c, &e), 0);
    s = mb_calib_spec(c);
    assert_string_equal(s->name, "GB200");
    assert_true(close_rel(s->hbm_bytes, 180.0 * 1073741824.0, 1e-12));
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_BF16, n, n, n), 2 * n * n * n / 1000e12, 1e-12));
    assert_true(close_rel(mb_calib_gemm(c, MB_PREC_FP4, n, n, n), 2 * n * n * n / 4000e12, 1e-12));
    assert_true(close_rel(mb_calib_attn_bh(c, MB_PREC_BF16, 1e12, 4096, 128, 32, 1, 0), 1e-3, 1e-12));
    assert_true(close_rel(mb_calib_membound(c, 1e9), 1e9 / 4e12, 1e-12));
    assert_true(close_rel(mb_calib_link_eff(c, MB_LINK_NVLS), 0.5, 1e-12) &&
                close_rel(mb_calib_link_latency(c, MB_LINK_NVLS), 10e-6, 1e-12));
    assert_int_equal(fallbacks(c, "gemm"), 0);
    mb_calib_free(c);
}

/* mb_calib_shared: one parse per file version. Two views of the same file
 * share the parsed table (their path string is the table's own), have their
 * own lookup counters, and a changed file is parsed again. */
static void test_shared_tables(void **state)
{
    (void)state;
    const char *tmp = "/tmp/mbsim_test_shared_table.yaml";
    char *text = NULL;
    size_t n = 0;
    FILE *in = fopen("tests/data/calib/fixture_H100.yaml", "rb");
    assert_non_null(in);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0) {
        text = realloc(text, n + got);
        memcpy(text + n, buf, got);
        n += got;
    }
    fclose(in);
    FILE *out = fopen(tmp, "wb");
    assert_non_null(out);
    fwrite(text, 1, n, out);
    fclose(out);
    struct mb_calib *a, *b, *c;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_shared("H100", tmp, &a, &e), 0);
    assert_int_equal(mb_calib_shared("H100", tmp, &b, &e), 0);
    assert_ptr_equal(mb_calib_path(a), mb_calib_path(b)); /* one parsed table */
    mb_calib_gemm(a, MB_PREC_BF16, 1024, 1024, 1024);
    assert_int_equal(mb_calib_table(a, 0).lookups + mb_calib_table(a, 1).lookups > 0, 1);
    assert_int_equal(mb_calib_table(b, 0).lookups + mb_calib_table(b, 1).lookups, 0); /* own counters */
    out = fopen(tmp, "wb"); /* a new version of the file (one more comment line) */
    assert_non_null(out);
    fwrite(text, 1, n, out);
    fputs("# changed\n", out);
    fclose(out);
    assert_int_equal(mb_calib_shared("H100", tmp, &c, &e), 0);
    assert_ptr_not_equal(mb_calib_path(c), mb_calib_path(a)); /* parsed again */
    mb_calib_free(a);
    mb_calib_free(b);
    mb_calib_free(c);
    mb_calib_shared_clear();
    remove(tmp);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coll_line),         cmocka_unit_test(test_fixture_tables),
        cmocka_unit_test(test_hybridep_nic),
        cmocka_unit_test(test_all_tables_load),   cmocka_unit_test(test_unknown_gpu),
        cmocka_unit_test(test_h100_96gb_derived),
        cmocka_unit_test(test_gemm_points),       cmocka_unit_test(test_gemm_interp),
        cmocka_unit_test(test_gemm_plateau_and_below), cmocka_unit_test(test_gemm_training_ceiling),
        cmocka_unit_test(test_attention), cmocka_unit_test(test_attention_cudnn),
        cmocka_unit_test(test_attention_head_dim_points), cmocka_unit_test(test_attention_head_dim_interp),
        cmocka_unit_test(test_attention_head_dim_donor_and_clamp), cmocka_unit_test(test_attention_wave),
        cmocka_unit_test(test_attention_table_curves), cmocka_unit_test(test_attention_measured),
        cmocka_unit_test(test_grouped_monotone),  cmocka_unit_test(test_roofline_mode),
        cmocka_unit_test(test_membound_links),    cmocka_unit_test(test_membound_cudnn_norms),
        cmocka_unit_test(test_bad_tables), cmocka_unit_test(test_attention_over_peak),
        cmocka_unit_test(test_recipes),
        cmocka_unit_test(test_recipes_te_layer), cmocka_unit_test(test_framework), cmocka_unit_test(test_shared_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
