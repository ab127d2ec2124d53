/*
 * test_ops.c -- the per-op table (mb_step_opts.ops) against closed forms
 * derived independently of the op builders: each mixer's GEMM shapes and
 * attention FLOPs from Megatron-LM's model-FLOPs formulas
 * (num_floating_point_operations, hybrid_flops; Megatron-Bridge for sliding
 * windows), the EP dispatchers' bytes from what each dispatcher sends
 * (Megatron-Core's AlltoAll and AllGather token dispatchers, DeepEP/HybridEP)
 * and the ETP all-gather / reduce-scatter around the expert GEMMs.
 *
 * Every scenario lives under tests/data/ops/ (one- to four-layer test models
 * under tests/data/ops/models/), runs BF16 on mock data with the test
 * fixture calibration tests/data/calib/fixture_H100.yaml, whose header gives
 * the lookups used here: a BF16 GEMM [m,k] x [k,n] takes
 * max(2mnk / 500 TFLOP/s, 2 (mk + kn + mn) B / 4 TB/s), a Triton scan (SSD,
 * delta rule) twice that (triton_frac 0.5); attention runs at
 * 500 TFLOP/s for every kind (wave factor 1 when batch x heads x seq is a
 * multiple of 16384); a memory-bound pass takes max(bytes / 2 TB/s, 1 us);
 * NVLink delivers 0.8 x 450 = 360 GB/s after 1 us per step, the NIC
 * 0.9 x 50 = 45 GB/s after 5 us per step.
 *
 * Notation: T tokens of a microbatch on the rank (micro_batch_size x seq /
 * cp), s the sequence length, h hidden, n heads, g query groups, d head dim,
 * L layers of a kind, m microbatches per DP rank; every op runs L x m times
 * per step in each direction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_scenario.h"
#include "mb_step.h"

/* Exact closed forms agree to rounding: 1e-9 relative. */
#define EXACT 1e-9

/* fixture_H100.yaml lookups (its header) */
#define FX_GEMM_RATE 500e12 /* BF16 GEMM and attention FLOP/s */
#define FX_HBM 4e12         /* GEMM operand traffic, bytes/s */
#define FX_MEM_RATE 2e12    /* memory-bound passes: 4 TB/s x 0.5 */
#define FX_MEM_FLOOR 1e-6
#define FX_NV_RATE 360e9    /* NVLink 450 GB/s x 0.8 */
#define FX_NIC_RATE 45e9    /* NIC 50 GB/s x 0.9 */
#define FX_NV_LAT 1e-6      /* per collective step */
#define FX_NIC_LAT 5e-6

/* NCCL's ring all-gather / reduce-scatter latency, Simple protocol, n ranks
 * in N NVLink domains (NVIDIA/nccl src/graph/tuning.cc @ 5067397c, the
 * collectives' latency since the NCCL tuning model, docs/collectives.md):
 * base 8.4 us + (n-1 - (N-1)) steps x 3.4 us NVLink (at least 3 us, the
 * network overhead x 3, when N > 1) + (N-1) steps x 14 us NET. */
static double nccl_ring_lat(int n, int N)
{
    double inter = N > 1 ? N - 1 : 0, intra = N > 1 ? (3.4 > 3.0 ? 3.4 : 3.0) : 3.4;
    return (8.4 + (n - 1 - inter) * intra + inter * 14.0) * 1e-6;
}
/* HybridEP's scale-out rate across 2 domains (fixture links.hybridep_nic): 0.5 (dispatch) and 0.6
 * (combine) of the 50 GB/s NIC line rate, below the NIC's 45 GB/s */
#define FX_HEP2_DISPATCH_RATE (0.5 * 50e9)
#define FX_HEP2_COMBINE_RATE (0.6 * 50e9)
#define FX_TRITON 0.5       /* gemm.triton_frac */

#define BF16 2.0

static double gemm_s(double m, double n, double k)
{
    return fmax(2 * m * n * k / FX_GEMM_RATE, BF16 * (m * k + k * n + m * n) / FX_HBM);
}

/* Backward of Y[M,N] = X[M,K] W[K,N]: dgrad dX = dY W^T ([M,N] x [N,K]) and
 * wgrad dW = X^T dY ([K,M] x [M,N]): twice the forward FLOP. */
static double gemm_bwd_s(double m, double n, double k)
{
    return gemm_s(m, k, n) + gemm_s(k, n, m);
}

static double mem_s(double bytes)
{
    return fmax(bytes / FX_MEM_RATE, FX_MEM_FLOOR);
}

static void load(const char *path, struct mb_scenario *s)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load(path, s, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

/* Re-check a scenario after a test changed fields of it. */
static void recheck(struct mb_scenario *s)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_check(s, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

static void sim_ops(const struct mb_scenario *s, struct mb_result *r)
{
    struct mb_step_opts o = {.critical_path = 1, .ops = 1};
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_step_simulate_opts(s, &o, r, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    assert_non_null(r->ops);
}

/* The table entry of (name, dir); fails when it is missing. */
static const struct mb_op_stat *op(const struct mb_result *r, const char *name, int dir)
{
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].dir == dir && strcmp(r->ops[i].name, name) == 0)
            return &r->ops[i];
    fail_msg("op '%s' dir %d missing from the op table (%zu entries)", name, dir, r->n_ops);
    return NULL;
}

static int has_op(const struct mb_result *r, const char *name)
{
    for (size_t i = 0; i < r->n_ops; i++)
        if (strcmp(r->ops[i].name, name) == 0)
            return 1;
    return 0;
}

static void near(double got, double want, double rel, const char *what, const char *name)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("%s %s: got %.12g, expected %.12g (relative error %.3g)", name, what, got, want,
                 want != 0 ? fabs(got / want - 1) : got);
}

/* count per step, FLOP per step and seconds per execution of (name, dir). */
static void expect_op(const struct mb_result *r, const char *name, int dir, double count, double flop, double sec)
{
    const struct mb_op_stat *x = op(r, name, dir);
    char what[80];
    snprintf(what, sizeof what, "%s count", dir == 0 ? "fwd" : "bwd");
    near(x->count, count, EXACT, what, name);
    snprintf(what, sizeof what, "%s flop per step", dir == 0 ? "fwd" : "bwd");
    near(x->flop, flop, EXACT, what, name);
    snprintf(what, sizeof what, "%s seconds per execution", dir == 0 ? "fwd" : "bwd");
    near(x->time_s / x->count, sec, EXACT, what, name);
}

/* A trainable linear layer Y[M,N] = X[M,K] W[K,N] run `count` times per step
 * in each direction: forward 2MNK FLOP, backward (dgrad + wgrad) 4MNK. */
static void expect_linear(const struct mb_result *r, const char *name, double count, double M, double N, double K)
{
    expect_op(r, name, 0, count, count * 2 * M * N * K, gemm_s(M, N, K));
    expect_op(r, name, 1, count, count * 4 * M * N * K, gemm_bwd_s(M, N, K));
}

/* Forward FLOP of one microbatch's core attention written as Megatron's
 * num_floating_point_operations term Q x A_core / 3 with Q = s^2 (one
 * sequence), A_core = 6 x (n dq / 2 + n dv / 2) (MLA form; MHA/GQA: dq = dv
 * = d, A_core = 6nd): QK^T and PV, halved for the causal mask. */
static double megatron_core_attn_fwd(double s, double n, double dq, double dv)
{
    return s * s * 6 * (n * dq / 2 + n * dv / 2) / 3;
}

/* Causal core attention of one microbatch: forward Megatron's FLOP at the
 * fixture's 500 TFLOP/s; backward 2.5x the forward FLOP (FlashAttention-2:
 * five matmuls backward against two forward, QK^T recomputed), also at
 * 500 TFLOP/s. Wave factor 1: mbs x n x s is a multiple of 16384 here. */
static void expect_core_attn(const struct mb_result *r, double count, double fwd_flop)
{
    expect_op(r, "core_attn", 0, count, count * fwd_flop, fwd_flop / FX_GEMM_RATE);
    expect_op(r, "core_attn", 1, count, count * 2.5 * fwd_flop, 2.5 * fwd_flop / FX_GEMM_RATE);
}

/* ---- mixers -------------------------------------------------------------- */

/* GQA (gqa2: h 2048, n 16, g 4, d 128, s 4096, 2 layers, 2 microbatches),
 * then the same model as MHA (g = n). Megatron's A_lin = 6 [h (nd + 2gd) +
 * nd h]: the fused QKV GEMM is [T, h] x [h, (n + 2g) d] and the output
 * projection [T, nd] x [nd, h]; core attention 2 s^2 n d forward per
 * sequence (A_core = 6nd). */
static void test_attention_gqa_mha(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gqa2.yaml", &s);
    const double T = 4096, sq = 4096, h = 2048, n = 16, d = 128, c = 2 * 2;
    for (int mha = 0; mha < 2; mha++) {
        double g = mha ? n : 4;
        if (mha) {
            s.model.num_kv_heads = (int)n;
            recheck(&s);
        }
        sim_ops(&s, &r);
        assert_int_equal(r.microbatches, 2);
        expect_linear(&r, "linear_qkv", c, T, (n + 2 * g) * d, h);
        expect_linear(&r, "linear_proj", c, T, h, n * d);
        /* causal average context s/2 in the op's own terms: 2 T (s/2) n (dq + dv) */
        double core = 2 * T * (sq / 2) * n * (d + d);
        near(core, megatron_core_attn_fwd(sq, n, d, d), EXACT, "closed forms", "core_attn");
        expect_core_attn(&r, c, core);
        /* the dense SwiGLU MLP (gamma = 3 in Megatron's 6 h gamma f): fc1 [T,h] x [h,2f], fc2 [T,f] x [f,h] */
        expect_linear(&r, "linear_fc1", c, T, 2 * 4096, h);
        expect_linear(&r, "linear_fc2", c, T, h, 4096);
        /* the pre-norm reads and writes one [T, h] BF16 activation */
        expect_op(&r, "input_layernorm", 0, c, 0, mem_s(2 * T * h * BF16));
        mb_result_free(&r);
    }
    mb_scenario_free(&s);
}

/* Position embeddings (model.position_embedding_type) on gqa2 (T = 4096
 * tokens, h 2048, 16 query heads and 4 groups of d 128, 2 layers, m = 2):
 *  - rope (the default): TE's fused rotary kernel on q and k in each layer,
 *    reading and writing the [T, (n + 2g) d] BF16 q/k/v (2 kernels each way);
 *  - learned_absolute: no rotary kernel; Megatron-Core's LanguageModelEmbedding
 *    gathers the position rows of all T tokens and adds them to the word
 *    embeddings: read + write T h, then two reads and a write, 5 T h BF16 in
 *    2 kernels once per microbatch; backward the table's gradient reads the
 *    T h gradient and writes the rows, 2 T h;
 *  - none: neither. */
static void test_position_embeddings(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gqa2.yaml", &s);
    const double T = 4096, h = 2048, n = 16, g = 4, d = 128, m = 2;
    sim_ops(&s, &r);
    double qkv = T * (n + 2 * g) * d * BF16;
    expect_op(&r, "rope", 0, 2 * m, 0, mem_s(2 * qkv));
    assert_false(has_op(&r, "position_embeddings"));
    mb_result_free(&r);
    s.model.pos = MB_POS_LEARNED;
    recheck(&s);
    sim_ops(&s, &r);
    assert_false(has_op(&r, "rope"));
    expect_op(&r, "position_embeddings", 0, m, 0, mem_s(5 * T * h * BF16));
    expect_op(&r, "position_embeddings", 1, m, 0, mem_s(2 * T * h * BF16));
    mb_result_free(&r);
    s.model.pos = MB_POS_NONE;
    recheck(&s);
    sim_ops(&s, &r);
    assert_false(has_op(&r, "rope"));
    assert_false(has_op(&r, "position_embeddings"));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* training.attention_backend flash2, flash3, triton (mb_attn_backend.c) on
 * gqa2 (seq 4096, causal, the flat 500 TFLOP/s fixture): the table's time
 * times cuDNN's rate over the implementation's, read here from the FA3
 * paper's H100 panels at seq 4k (shared/docs/reference/hardware.md B.2):
 * forward causal cuDNN 518, FA2 319, FA3 579; backward cuDNN 499, FA2 310,
 * FA3 542 TFLOP/s. Triton = FA3 x the pytorch/benchmark Triton/FA3 ratio,
 * 329/430 at seq 512 and 477/621 at 16k, at 4k 3/5 of the way in ln(seq).
 * A GPU other than a Hopper part is refused (the rates are H100's). */
static void test_attention_backends(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gqa2.yaml", &s);
    const double sq = 4096, n = 16, d = 128, m = 2;
    double core = megatron_core_attn_fwd(sq, n, d, d), tf = 2 * m * core / FX_GEMM_RATE, tb = 2.5 * tf;
    double tri = 329.0 / 430 + 0.6 * (477.0 / 621 - 329.0 / 430);
    const struct {
        enum mb_attn_backend b;
        double fwd_rate, bwd_rate; /* relative to cuDNN */
    } cases[] = {{MB_ATTN_FUSED, 1, 1},
                 {MB_ATTN_FLASH2, 319.0 / 518, 310.0 / 499},
                 {MB_ATTN_FLASH3, 579.0 / 518, 542.0 / 499},
                 {MB_ATTN_TRITON, tri * 579.0 / 518, tri * 542.0 / 499}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s.attn_backend = cases[i].b;
        recheck(&s);
        sim_ops(&s, &r);
        near(op(&r, "core_attn", 0)->time_s, tf / cases[i].fwd_rate, EXACT, "fwd seconds per step", "core_attn");
        near(op(&r, "core_attn", 1)->time_s, tb / cases[i].bwd_rate, EXACT, "bwd seconds per step", "core_attn");
        mb_result_free(&r);
    }
    /* refused on a GPU whose rates are not published */
    snprintf(s.system.gpu, sizeof s.system.gpu, "%s", "B200");
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), -1);
    assert_non_null(strstr(e.msg, "published for Hopper GPUs (H100, H200) only and the system's GPU is B200"));
    mb_scenario_free(&s);
}

/* The sliding-window kernel by its tiles (attn_window.c), derived here by hand.
 * A flash kernel runs one CTA per 128-row query block and computes in full
 * every 128-key tile its mask reaches: per problem t = nQ a + tiles b, a a
 * query block's fixed cost, b one tile's. A causal kernel of L tokens (nQ =
 * L/128 blocks, block i visits i + 1 tiles: (nQ + 1)/2 on average) takes
 * y = t / nQ = a + b (nQ + 1)/2 per block, so its times at L 2048 (nQ 16) and
 * 4096 (32) give b = (y2 - y1) / 8 and a = y1 - 8.5 b. A negative a (a curve
 * that does not fall in cost per block as the loop grows) becomes a = 0,
 * b = y1 / 8.5. Block i of a window w reaches keys back to 128 i - w + 1:
 * tiles floor(max(0, 128 i - w + 1) / 128) ... i. */
struct win_fit { double a, b; };

static struct win_fit win_fit(double rate_2048, double rate_4096, double d, double bwd_x)
{
    /* one (batch x head) problem: causal FLOP 2 L (L/2) (dq + dv), x 2.5 backward */
    double y1 = bwd_x * 2048.0 * 2048 * 2 * d / rate_2048 / 16, y2 = bwd_x * 4096.0 * 4096 * 2 * d / rate_4096 / 32;
    struct win_fit f = {.b = (y2 - y1) / 8};
    f.a = y1 - 8.5 * f.b;
    if (f.a < 0) {
        f.a = 0;
        f.b = y1 / 8.5;
    }
    return f;
}

static double win_tiles(double seq, double w)
{
    double tiles = 0;
    for (int i = 0; i < (int)(seq / 128); i++)
        tiles += i - floor(fmax(0, 128.0 * i - w + 1) / 128) + 1;
    return tiles;
}

/* Sliding window (swa2: window w 1024, full_every 2 -> layer 1 windowed, layer
 * 2 full). A causal query at position i (0-based) sees min(i + 1, w) keys;
 * the mean over the sequence, summed here term by term, is Megatron-Bridge's
 * w - w(w-1)/(2s): the model FLOP. Full causal layers keep Megatron's s/2. The
 * projections do not depend on the window. Time: on this flat fixture (500
 * TFLOP/s) y1 = 2048^2 x 256 / 500e12 / 16 = 134.2 ns and y2 = 268.4 ns, so a
 * would be 134.2 - 8.5 x 16.78 < 0: a = 0, b = 15.79 ns per tile (the
 * masked-tile work a flat curve still shows: every visited tile at the causal
 * kernel's cost per tile); 252 tiles (blocks 0-7 visit 1..8, the other 24
 * visit 9) over 16 problems. */
static void test_attention_sliding_window(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/swa2.yaml", &s);
    const double T = 4096, sq = 4096, h = 2048, n = 16, g = 4, d = 128, w = 1024, m = 2;
    double keys = 0;
    for (int i = 0; i < (int)sq; i++)
        keys += fmin(i + 1.0, w);
    double ctx_w = keys / sq;
    near(ctx_w, w - w * (w - 1) / (2 * sq), EXACT, "mean window context", "core_attn");
    near(win_tiles(sq, w), 36 + 24 * 9, EXACT, "tiles of window 1024 over 4096 tokens", "core_attn");
    sim_ops(&s, &r);
    double f_swa = 2 * T * ctx_w * n * (d + d), f_full = megatron_core_attn_fwd(sq, n, d, d);
    struct win_fit ff = win_fit(FX_GEMM_RATE, FX_GEMM_RATE, d, 1), fb = win_fit(FX_GEMM_RATE, FX_GEMM_RATE, d, 2.5);
    double t_swa_f = n * (32 * ff.a + 252 * ff.b), t_swa_b = n * (32 * fb.a + 252 * fb.b);
    const struct mb_op_stat *f = op(&r, "core_attn", 0), *b = op(&r, "core_attn", 1);
    near(f->count, 2 * m, EXACT, "fwd count", "core_attn");
    near(f->flop, m * (f_swa + f_full), EXACT, "fwd flop per step", "core_attn");
    near(f->time_s, m * (t_swa_f + f_full / FX_GEMM_RATE), EXACT, "fwd seconds per step", "core_attn");
    near(b->flop, 2.5 * m * (f_swa + f_full), EXACT, "bwd flop per step", "core_attn");
    near(b->time_s, m * (t_swa_b + 2.5 * f_full / FX_GEMM_RATE), EXACT, "bwd seconds per step", "core_attn");
    expect_linear(&r, "linear_qkv", 2 * m, T, (n + 2 * g) * d, h);
    expect_linear(&r, "linear_proj", 2 * m, T, h, n * d);
    mb_result_free(&r);
    /* a window covering the sequence is full causal attention */
    s.model.swa_window = (int)sq;
    sim_ops(&s, &r);
    near(op(&r, "core_attn", 0)->flop, m * 2 * f_full, EXACT, "fwd flop per step, w = s", "core_attn");
    near(op(&r, "core_attn", 0)->time_s, m * 2 * f_full / FX_GEMM_RATE, EXACT, "fwd seconds per step, w = s",
         "core_attn");
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* The window kernel on sloped causal curves (swa2 with
 * fixture_H100_causal_slope.yaml: causal fwd 400 TFLOP/s at seq 2048, 500 from
 * 4096; causal bwd 300 / 400): a fixed part per query block shows. Forward:
 * y1 = 2048^2 x 256 / 400e12 / 16 = 167.8 ns, y2 = 268.4 ns, b = 12.58 ns per
 * tile, a = 60.82 ns per block; backward (2.5x the FLOP at 300 / 400):
 * y1 = 559.2 ns, y2 = 838.9 ns, b = 34.95 ns, a = 262.1 ns. Layer 1 (window
 * 1024): 16 problems x (32 a + 252 b); layer 2 (full causal, s 4096) at 500
 * forward and 400 on the causal backward curve. Wave factor 1: 16 x 32 CTAs
 * and the benchmark shape's 2048 are whole waves of the fixture's 128 SMs. */
static void test_attention_lookup_seq_and_kind(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/swa2_slope.yaml", &s);
    sim_ops(&s, &r);
    const double sq = 4096, n = 16, d = 128, m = 2;
    double f_full = megatron_core_attn_fwd(sq, n, d, d);
    struct win_fit ff = win_fit(400e12, 500e12, d, 1), fb = win_fit(300e12, 400e12, d, 2.5);
    near(ff.a, 60.817408e-9, 1e-6, "forward fixed cost per block", "core_attn");
    near(fb.b, 34.952533e-9, 1e-6, "backward cost per tile", "core_attn");
    const struct mb_op_stat *f = op(&r, "core_attn", 0), *b = op(&r, "core_attn", 1);
    near(f->time_s, m * (n * (32 * ff.a + 252 * ff.b) + f_full / 500e12), EXACT, "fwd seconds per step", "core_attn");
    near(b->time_s, m * (n * (32 * fb.a + 252 * fb.b) + 2.5 * f_full / 400e12), EXACT, "bwd seconds per step",
         "core_attn");
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* Core attention with the scores in memory (training.attention_backend local,
 * Megatron's CoreAttention: NVIDIA/Megatron-LM@00baee46489c
 * megatron/model/transformer.py), on gqa2 with attention dropout 0.1. Per
 * microbatch bh = n = 16 (batch x heads, K and V repeated to every head), the
 * scores E = bh s^2 elements:
 *  - baddbmm Q K^T: the [bh s, d] x [d, s] GEMM over the whole square (the
 *    causal mask is applied after it), as a linear layer for its backward
 *    (dQ = dS K, dK = dS^T Q);
 *  - fused scale-mask-softmax: reads and writes E BF16 forward (4E bytes);
 *    backward reads the output and its gradient, writes the input gradient (6E);
 *  - dropout: reads E BF16, writes E BF16 and a 1-byte mask (5E) each way;
 *  - bmm P V: [bh s, s] x [s, d], backward dP = dO V^T, dV = P^T dO.
 * With cp > 1 the scenario is refused (Megatron-Core's DotProductAttention
 * asserts context_parallel_size == 1). */
static void test_attention_local(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gqa2.yaml", &s);
    s.attn_backend = MB_ATTN_LOCAL;
    s.attn_dropout = 0.1;
    recheck(&s);
    sim_ops(&s, &r);
    const double sq = 4096, d = 128, bh = 16, rows = bh * sq, E = bh * sq * sq, c = 2 * 2;
    assert_false(has_op(&r, "core_attn"));
    expect_linear(&r, "core_attn_qk", c, rows, sq, d);
    expect_linear(&r, "core_attn_av", c, rows, d, sq);
    expect_op(&r, "attention_softmax", 0, c, 0, mem_s(4 * E));
    expect_op(&r, "attention_softmax", 1, c, 0, mem_s(6 * E));
    expect_op(&r, "attention_dropout", 0, c, 0, mem_s(5 * E));
    expect_op(&r, "attention_dropout", 1, c, 0, mem_s(5 * E));
    mb_result_free(&r);
    /* without dropout there is no dropout kernel */
    s.attn_dropout = 0;
    sim_ops(&s, &r);
    assert_false(has_op(&r, "attention_dropout"));
    mb_result_free(&r);
    s.cp = 2;
    s.gpus = 2;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_not_equal(mb_scenario_check(&s, &e), 0);
    if (!strstr(e.msg, "context parallelism"))
        fail_msg("cp = 2 with local attention: %s", e.msg);
    mb_scenario_free(&s);
}

/* MLA (mla2: h 2048, n 16, q_lora_rank r_q 1536, kv_lora_rank r_kv 512,
 * qk_head_dim 128, qk_rope_head_dim d_r 64, v_head_dim 128). DeepSeek-V2/V3
 * (and Megatron-Core MLASelfAttention): q = W_qb norm(W_qa x) with W_qa [h, r_q],
 * W_qb [r_q, n (d_qk + d_r)]; the compressed kv and the shared rope key
 * W_kva [h, r_kv + d_r]; W_kvb [r_kv, n (d_qk + d_v)]; output [n d_v, h].
 * Their forward FLOP sum is Megatron's A_lin / 3 per token less its two
 * "+ 1" terms (the q/kv norm weights, not GEMMs). Core attention: A_core =
 * 6 [n (d_qk + d_r)/2 + n d_v/2]. Without q LoRA (mla2_noq): W_q [h, n (d_qk + d_r)]. */
static void test_attention_mla(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    const double T = 4096, sq = 4096, h = 2048, n = 16, rq = 1536, rkv = 512, dqk = 128, dr = 64, dv = 128, c = 4;
    load("tests/data/ops/mla2.yaml", &s);
    sim_ops(&s, &r);
    expect_linear(&r, "linear_q_down_proj", c, T, rq, h);
    expect_linear(&r, "linear_q_up_proj", c, T, n * (dqk + dr), rq);
    expect_linear(&r, "linear_kv_down_proj", c, T, rkv + dr, h);
    expect_linear(&r, "linear_kv_up_proj", c, T, n * (dqk + dv), rkv);
    expect_linear(&r, "linear_proj", c, T, h, n * dv);
    double a_lin = 6 * (rq * (h + n * (dqk + dr) + 1) + rkv * (h + n * (dqk + dv) + 1) + h * dr + n * dv * h);
    double proj = 0;
    static const char *const mla_gemms[] = {"linear_q_down_proj", "linear_q_up_proj", "linear_kv_down_proj",
                                            "linear_kv_up_proj", "linear_proj"};
    for (int i = 0; i < 5; i++)
        proj += op(&r, mla_gemms[i], 0)->flop;
    near(proj / c, T * (a_lin / 3 - 2 * (rq + rkv)), EXACT, "fwd flop per layer", "MLA projections");
    expect_core_attn(&r, c, megatron_core_attn_fwd(sq, n, dqk + dr, dv));
    assert_false(has_op(&r, "linear_q_proj"));
    mb_result_free(&r);
    mb_scenario_free(&s);

    load("tests/data/ops/mla2_noq.yaml", &s);
    sim_ops(&s, &r);
    expect_linear(&r, "linear_q_proj", c, T, n * (dqk + dr), h);
    expect_linear(&r, "linear_kv_down_proj", c, T, rkv + dr, h);
    expect_linear(&r, "linear_kv_up_proj", c, T, n * (dqk + dv), rkv);
    expect_linear(&r, "linear_proj", c, T, h, n * dv);
    assert_false(has_op(&r, "linear_q_down_proj"));
    assert_false(has_op(&r, "linear_q_up_proj"));
    expect_core_attn(&r, c, megatron_core_attn_fwd(sq, n, dqk + dr, dv));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* Gated DeltaNet (gdn2: layer 1 GDN with n_qk 16 key heads of d_qk 64, n_v
 * 32 value heads of d_v 128; layer 2 full attention).
 * Megatron's G_lin = 6 [h P + K_conv (2 q_dim + v_dim) + 4 n_v d_v^2 + h v_dim],
 * P = 2 q_dim + 2 v_dim + 2 n_v (q, k, v, the output gate z, and the beta and
 * alpha gates per value head), q_dim = n_qk d_qk, v_dim = n_v d_v: in_proj
 * [T, h] x [h, P], out_proj [T, v_dim] x [v_dim, h], the chunked delta rule
 * 8 n_v d_v^2 FLOP per token forward. The causal conv1d over q, k, v reads
 * and writes 2 q_dim + v_dim BF16 channels per token. */
static void test_gated_deltanet(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gdn2.yaml", &s);
    sim_ops(&s, &r);
    const double T = 4096, h = 2048, nqk = 16, nv = 32, dk = 64, dv = 128, m = 2;
    double qdim = nqk * dk, vdim = nv * dv, P = 2 * qdim + 2 * vdim + 2 * nv;
    /* one GDN layer: L x m = 2 executions per direction */
    expect_linear(&r, "in_proj", m, T, P, h);
    expect_linear(&r, "out_proj", m, T, h, vdim);
    const struct mb_op_stat *dr = op(&r, "delta_rule", 0);
    near(dr->count, m, EXACT, "fwd count", "delta_rule");
    near(dr->flop, m * T * 8 * nv * dv * dv, EXACT, "fwd flop per step", "delta_rule");
    /* its kernel shape is the model's choice: no faster than the fixture's GEMM
     * rate x its Triton share (fla's chunk_gated_delta_rule) */
    assert_true(dr->time_s >= dr->flop / (FX_TRITON * FX_GEMM_RATE) * (1 - EXACT));
    /* backward: G_lin's factor 6 = 2 x 3 counts it at 2x the forward FLOP */
    const struct mb_op_stat *drb = op(&r, "delta_rule", 1);
    near(drb->count, m, EXACT, "bwd count", "delta_rule");
    near(drb->flop, 2 * dr->flop, EXACT, "bwd flop per step (2x fwd)", "delta_rule");
    assert_true(drb->time_s >= drb->flop / (FX_TRITON * FX_GEMM_RATE) * (1 - EXACT));
    double glin_gemm = 2 * (h * P + 4 * nv * dv * dv + h * vdim); /* G_lin / 3 without the conv term */
    double gdn = op(&r, "in_proj", 0)->flop + dr->flop + op(&r, "out_proj", 0)->flop;
    near(gdn / m, T * glin_gemm, EXACT, "fwd flop per layer", "GDN GEMMs");
    double conv = 2 * T * (2 * qdim + vdim) * BF16;
    const struct mb_op_stat *cv = op(&r, "conv1d", 0);
    near(cv->bytes / cv->count, conv, EXACT, "fwd bytes per execution", "conv1d");
    near(cv->time_s / cv->count, mem_s(conv), EXACT, "fwd seconds per execution", "conv1d");
    /* the attention layer: GQA n 16, g 2, d 256 */
    expect_linear(&r, "linear_qkv", m, T, (16 + 2 * 2) * 256.0, h);
    expect_core_attn(&r, m, megatron_core_attn_fwd(4096, 16, 256, 256));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* Mamba-2 (mamba2: pattern "M-M-", h 2048, 64 heads x head dim 64 = d_in
 * 4096 = 2h, 8 groups, state N 128). Megatron MambaMixer: in_proj to z, x
 * (d_in each), B, C (groups x N each) and dt (one per head), out_proj
 * [T, d_in] x [d_in, h]; hybrid_flops counts 2Th (2 d_in + 2 groups N +
 * heads) + 7 T d_in N + 2 T d_in h forward, with d_in = 2h, which this model
 * has. The SSD scan's 7 T d_in N is its forward FLOP. */
static void test_mamba2(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/mamba2.yaml", &s);
    sim_ops(&s, &r);
    const double T = 4096, h = 2048, H = 64, din = 64 * 64.0, G = 8, N = 128, c = 2 * 2;
    assert_true(din == 2 * h);
    expect_linear(&r, "in_proj", c, T, 2 * din + 2 * G * N + H, h);
    expect_linear(&r, "out_proj", c, T, h, din);
    const struct mb_op_stat *ssd = op(&r, "ssd_scan", 0);
    near(ssd->count, c, EXACT, "fwd count", "ssd_scan");
    near(ssd->flop, c * 7 * T * din * N, EXACT, "fwd flop per step", "ssd_scan");
    /* mamba_ssm's Triton chunked scan at the fixture's Triton share of the GEMM
     * rate: its T x d_in x 3.5N GEMM time / 0.5 forward; backward 2x the forward
     * FLOP (hybrid_flops' x3 = fwd + 2x bwd), the dgrad + wgrad shapes / 0.5 */
    double flop_fwd_s = gemm_s(T, din, 3.5 * N) / FX_TRITON, flop_bwd_s = gemm_bwd_s(T, din, 3.5 * N) / FX_TRITON;
    /* ...but no faster than the HBM traffic of mamba_ssm's SSD kernels (ssd_combined.py), each
     * tensor read or written once per kernel, chunk Q = 128 (MambaMixer's chunk_size). Per
     * token: x, z, out 64 x 64 = 4096 BF16 elements (8192 B), B or C 8 x 128 = 1024 BF16
     * (2048 B), the chunk states 64 x 64 x 128 / 128 = 4096 elements a token (16384 B FP32,
     * 8192 B BF16), CB 8 x 128 = 1024 FP32 (4096 B), dt / dA_cumsum 64 per head row. */
    const double X2 = 8192, BC2 = 2048, S4 = 16384, S2 = 8192, CB4 = 4096, DT2 = 128, DT4 = 256;
    double fwd_b = (DT2 + 2 * DT4)                      /* chunk_cumsum: dt in, dA_cumsum + dt out */
                   + (X2 + BC2 + 2 * DT4 + S4)          /* chunk_state: x, B, dt, dA in; FP32 states */
                   + (S4 + S2)                          /* state_passing: FP32 in, BF16 out */
                   + (2 * BC2 + CB4)                    /* bmm_chunk: B, C in; FP32 CB out */
                   + (CB4 + 2 * X2 + S2 + BC2 + 2 * DT4 + 2 * X2); /* chunk_scan: CB, x, z, states,
                                                                    C, dt, dA in; out, out_x */
    double bwd_b = (DT2 + 2 * DT4) + (2 * BC2 + CB4) + (X2 + BC2 + 2 * DT4 + S4) /* recomputed */
                   + (S4 + S4)                          /* state_passing again, FP32 out */
                   + (4 * X2 + 2 * X2)                  /* chunk_scan_bwd_dz: x, z, out, dout; dz, dout_x */
                   + (BC2 + X2 + DT4 + S4)              /* chunk_scan_bwd_dstates: C, dout, dA; FP32 dstates */
                   + (2 * S4 + 2 * S2 + DT4)            /* state_passing_bwd: FP32 states, dstates; BF16 both */
                   + (2 * X2 + CB4 + 2 * DT4 + BC2 + S2 + X2 + DT4) /* bwd_dx: x, dout, CB, dt, dA, B,
                                                                      dstates; dx, ddt */
                   + (X2 + 2 * DT4 + S2 + BC2 + BC2)    /* chunk_state_bwd_db: x, dt, dA, dstates, B; dB */
                   + (S2 + X2 + DT4 + BC2 + BC2)        /* chunk_scan_bwd_dC: states, dout, dA, C; dC */
                   + (2 * X2 + 2 * DT4 + CB4)           /* chunk_scan_bwd_dcb: x, dout, dt, dA; dCB */
                   + 2 * (BC2 + CB4 + BC2 + BC2)        /* two bmm_chunk_bwd: C (B), dCB, residual; out */
                   + (2 * X2 + 2 * DT4 + CB4 + DT4)     /* chunk_scan_bwd_ddAcs_stable: x, dout, dt, dA,
                                                           CB; ddA */
                   + (3 * DT4 + DT4);                   /* chunk_cumsum_bwd: ddA, ddt, dt; ddt */
    near(fwd_b, 108160, EXACT, "fwd bytes per token", "ssd_scan");
    near(bwd_b, 339328, EXACT, "bwd bytes per token", "ssd_scan");
    assert_true(mem_s(T * fwd_b) > flop_fwd_s); /* the fixture's scan is memory-bound both ways */
    assert_true(mem_s(T * bwd_b) > flop_bwd_s);
    near(ssd->time_s / ssd->count, fmax(flop_fwd_s, mem_s(T * fwd_b)), EXACT, "fwd seconds per execution",
         "ssd_scan");
    expect_op(&r, "ssd_scan", 1, c, 2 * ssd->flop, fmax(flop_bwd_s, mem_s(T * bwd_b)));
    double mamba = op(&r, "in_proj", 0)->flop + ssd->flop + op(&r, "out_proj", 0)->flop;
    near(mamba / c, 2 * T * h * (2 * 2 * h + 2 * G * N + H) + 7 * T * 2 * h * N + 2 * T * 2 * h * h, EXACT,
         "fwd flop per layer", "hybrid_flops Mamba");
    /* the two "-" layers: squared-ReLU MLP (gamma 2) [T,h] x [h,f], [T,f] x [f,h] */
    expect_linear(&r, "linear_fc1", c, T, 4096, h);
    expect_linear(&r, "linear_fc2", c, T, h, 4096);
    assert_false(has_op(&r, "core_attn"));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* The layout copies around Megatron's Mamba scan (MambaMixer._ssm_training's
 * rearrange(...).contiguous() from sequence-first to batch-first and back): the
 * mamba2 model at MBS 2 (T = 2 x 4096 tokens a microbatch) copies the [T, proj]
 * in_proj output (proj = 2 x 4096 + 2 x 8 x 128 + 64 = 10304) forward, read +
 * write in BF16, and its gradient back; the [T, d_in] scan output forward
 * only. At MBS 1, or packed (THD), the rearranged tensors are already
 * contiguous: no copy. */
static void test_mamba_layout(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/mamba2.yaml", &s);
    sim_ops(&s, &r);
    assert_false(has_op(&r, "mamba_layout_in")); /* MBS 1 */
    assert_false(has_op(&r, "mamba_layout_out"));
    mb_result_free(&r);
    s.micro_batch_size = 2;
    s.global_batch_size = 4; /* 2 microbatches of 2 sequences */
    recheck(&s);
    sim_ops(&s, &r);
    const double T = 2 * 4096, proj = 10304, din = 4096, c = 2 * 2; /* 2 Mamba layers x 2 microbatches */
    const struct mb_op_stat *in_f = op(&r, "mamba_layout_in", 0), *in_b = op(&r, "mamba_layout_in", 1);
    near(in_f->count, c, EXACT, "fwd count", "mamba_layout_in");
    near(in_f->time_s / c, mem_s(2 * T * proj * BF16), EXACT, "fwd seconds per execution", "mamba_layout_in");
    near(in_b->time_s / c, mem_s(2 * T * proj * BF16), EXACT, "bwd seconds per execution", "mamba_layout_in");
    const struct mb_op_stat *out_f = op(&r, "mamba_layout_out", 0);
    near(out_f->time_s / c, mem_s(2 * T * din * BF16), EXACT, "fwd seconds per execution", "mamba_layout_out");
    assert_true(op(&r, "mamba_layout_out", 1)->time_s == 0); /* the scan reads its gradient strided */
    mb_result_free(&r);
    s.packed = 1; /* THD: the two sequences are one [T, 1, h] tensor, b = 1 again */
    recheck(&s);
    sim_ops(&s, &r);
    assert_false(has_op(&r, "mamba_layout_in"));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* The output layer under an FP8 recipe (gqa2 with precision fp8): Megatron
 * builds it as a ColumnParallelLinear (megatron/core/tensor_parallel), not a
 * Transformer Engine module, so TE's fp8 autocast does not reach it: it runs
 * the BF16 GEMM [T, h] x [h, V] at the fixture's BF16 rate with no cast
 * kernels, while the decoder's linear layers
 * run at the fixture's FP8 rate (2000 x 0.5 = 1000 TFLOP/s) plus a cast. */
static void test_output_layer_bf16(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/gqa2.yaml", &s);
    assert_int_equal(mb_precision_parse("fp8", &s.prec), 0);
    recheck(&s);
    sim_ops(&s, &r);
    const double T = 4096, h = 2048, V = 1024, m = 2;
    expect_op(&r, "output_layer", 0, m, m * 2 * T * V * h, gemm_s(T, V, h));
    expect_op(&r, "output_layer", 1, m, m * 4 * T * V * h, gemm_bwd_s(T, V, h));
    near(op(&r, "output_layer", 0)->peak, 1000e12, EXACT, "peak (the fixture's BF16)", "output_layer");
    /* a decoder GEMM does run at the fp8 rate: faster than BF16 even with its cast */
    const struct mb_op_stat *qkv = op(&r, "linear_qkv", 0);
    assert_true(qkv->time_s / qkv->count < gemm_s(T, (16 + 2 * 4) * 128.0, h));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* ---- MoE dispatchers ----------------------------------------------------- */

/* Binomial coefficient, exact in integers for the sizes used here. */
static double binom(int n, int k)
{
    if (k < 0 || k > n)
        return 0;
    unsigned long long c = 1;
    for (int i = 1; i <= k; i++)
        c = c * (unsigned long long)(n - k + i) / (unsigned long long)i; /* exact: C(n-k+i, i) */
    return (double)c;
}

/* Probability that a token's k distinct uniformly routed experts (of E) hit
 * a given set of e experts: 1 - C(E - e, k) / C(E, k). */
static double p_hit(int E, int k, int e)
{
    return 1 - binom(E - e, k) / binom(E, k);
}

struct moe_case {
    const char *scenario;
    int E, k, ep, local; /* experts, top-k, EP size, EP ranks per NVLink domain */
    double h, Tm;        /* hidden, tokens entering the router per rank per microbatch */
    double count;        /* MoE layers x microbatches */
};

/* moe16 (E 16, k 4) with EP 8 inside one DGX H100; moe64 (E 64, k 6) with EP
 * 16 over two: 2 MoE layers, 2 microbatches of 4096 tokens, tp 1. */
static const struct moe_case moe_ep8 = {"tests/data/ops/moe_ep8.yaml", 16, 4, 8, 8, 2048, 4096, 4};
static const struct moe_case moe_ep16 = {"tests/data/ops/moe_ep16.yaml", 64, 6, 16, 8, 2048, 4096, 4};

/* What one rank sends for one EP dispatch (and, in BF16, for the combine
 * that mirrors it), by dispatcher: bytes to peers inside its NVLink domain
 * (nv) and across it (nic), and the latency the transfer pays.
 *  - alltoall (Megatron-Core MoEAlltoAllTokenDispatcher): one BF16 copy per
 *    routed expert; balanced routing sends 1/ep of the T k copies to each
 *    rank, (local - 1)/ep of them over NVLink, (ep - local)/ep over the NIC.
 *  - allgather (MoEAllGatherTokenDispatcher): a ring all-gather of every EP
 *    rank's T tokens (ep T h BF16 in all); each rank sends (ep - 1)/ep of the
 *    total. NCCL's rings cross each domain boundary once, so 1/local of the
 *    ring's edges, and of the bytes, are NIC hops. Its combine is the
 *    reduce-scatter of the same buffer.
 *  - deepep / hybridep: a token goes once to each other rank of its NVLink
 *    domain holding at least one of its k experts (probability p_rank =
 *    1 - C(E - E/ep, k)/C(E, k)); across domains once per remote domain it
 *    hits (p_dom with E/D experts per domain) to the same-index GPU there,
 *    which forwards it over NVLink to that domain's other hit ranks (the
 *    DeepSeek-V3 paper's IB-then-NVLink dispatch, DeepEP's internode
 *    kernels): (local - 1) p_rank / p_dom per arriving token, so by symmetry
 *    a rank forwards (D - 1) T (local - 1) p_rank tokens for the other
 *    domains.
 * Latency: a direct all-to-all is one step of its slowest hop's calibrated
 * latency (the NIC once the group spans domains); a ring all-gather pays
 * NCCL's ring latency (nccl_ring_lat). */
struct traffic {
    double nv, nic, lat;
};

static struct traffic dispatch_traffic(const struct moe_case *c, enum mb_dispatcher d)
{
    double tok = c->h * BF16, D = (double)c->ep / c->local;
    struct traffic x = {0, 0, D > 1 ? FX_NIC_LAT : FX_NV_LAT};
    if (d == MB_DISP_ALLTOALL) {
        x.nv = c->Tm * c->k * tok * (c->local - 1) / c->ep;
        x.nic = c->Tm * c->k * tok * (c->ep - c->local) / c->ep;
    } else if (d == MB_DISP_ALLGATHER) {
        double sent = (c->ep - 1) * c->Tm * tok;
        x.nic = D > 1 ? sent / c->local : 0;
        x.nv = sent - x.nic;
        x.lat = nccl_ring_lat(c->ep, (int)D);
    } else {
        double p_rank = p_hit(c->E, c->k, c->E / c->ep), p_dom = p_hit(c->E, c->k, (int)(c->E / D));
        double nv_own = c->Tm * tok * (c->local - 1) * p_rank;
        double nv_fwd = (D - 1) * c->Tm * tok * (c->local - 1) * p_rank;
        x.nic = c->Tm * tok * (D - 1) * p_dom;
        x.nv = nv_own + nv_fwd;
    }
    return x;
}

/* "ep dispatch" and "ep combine" are separate entries with the dispatcher's
 * bytes in both directions (the backward of an all-to-all is the reverse
 * all-to-all of the gradients: the same volume), count = MoE layers x
 * microbatches. Forward, nothing else is on the links (tp 1; the DP
 * gradient reduction runs in the last backward, the parameter all-gather
 * before the first forward), so each forward transfer takes its latency plus
 * the slower of its NVLink (360 GB/s) and NIC (45 GB/s) flows; HybridEP's
 * NIC flow across 2 domains runs at the fixture's measured-rate entry
 * instead: 25 GB/s dispatching, 30 GB/s combining (BF16). */
static void check_dispatcher(const struct moe_case *c, enum mb_dispatcher d, const char *label)
{
    struct mb_scenario s;
    struct mb_result r;
    load(c->scenario, &s);
    s.dispatcher = d;
    recheck(&s);
    sim_ops(&s, &r);
    struct traffic want = dispatch_traffic(c, d);
    int hep2 = d == MB_DISP_HYBRIDEP && c->ep == 2 * c->local;
    double nic_rate[2] = {hep2 ? FX_HEP2_DISPATCH_RATE : FX_NIC_RATE, hep2 ? FX_HEP2_COMBINE_RATE : FX_NIC_RATE};
    static const char *const names[] = {"ep dispatch", "ep combine"};
    const struct mb_op_stat *x[2][2];
    for (int i = 0; i < 2; i++)
        for (int dir = 0; dir < 2; dir++) {
            char what[96];
            x[i][dir] = op(&r, names[i], dir);
            assert_true(x[i][dir]->comm);
            snprintf(what, sizeof what, "%s dir %d count", label, dir);
            near(x[i][dir]->count, c->count, EXACT, what, names[i]);
            snprintf(what, sizeof what, "%s dir %d bytes per step", label, dir);
            near(x[i][dir]->bytes, c->count * (want.nv + want.nic), EXACT, what, names[i]);
            if (dir == 0) {
                double sec = want.lat + fmax(want.nv / FX_NV_RATE, want.nic / nic_rate[i]);
                snprintf(what, sizeof what, "%s fwd seconds per execution", label);
                near(x[i][dir]->time_s / x[i][dir]->count, sec, EXACT, what, names[i]);
            }
        }
    assert_ptr_not_equal(x[0][0], x[1][0]);
    mb_result_free(&r);
    mb_scenario_free(&s);
}

static void test_dispatch_alltoall(void **state)
{
    (void)state;
    check_dispatcher(&moe_ep8, MB_DISP_ALLTOALL, "alltoall ep8");
    check_dispatcher(&moe_ep16, MB_DISP_ALLTOALL, "alltoall ep16");
}

static void test_dispatch_allgather(void **state)
{
    (void)state;
    check_dispatcher(&moe_ep8, MB_DISP_ALLGATHER, "allgather ep8");
    check_dispatcher(&moe_ep16, MB_DISP_ALLGATHER, "allgather ep16");
}

/* DeepEP and HybridEP: the same traffic model (hit probabilities above). For
 * EP 8, E 16, k 4: p_rank = 1 - C(14,4)/C(16,4) = 1 - 1001/1820 = 0.45. */
static void test_dispatch_deepep_hybridep(void **state)
{
    (void)state;
    near(p_hit(16, 4, 2), 1 - 1001.0 / 1820.0, EXACT, "p_rank", "E16 k4 ep8");
    check_dispatcher(&moe_ep8, MB_DISP_DEEPEP, "deepep ep8");
    check_dispatcher(&moe_ep16, MB_DISP_DEEPEP, "deepep ep16");
    check_dispatcher(&moe_ep8, MB_DISP_HYBRIDEP, "hybridep ep8");
    check_dispatcher(&moe_ep16, MB_DISP_HYBRIDEP, "hybridep ep16");
}

/* ETP 2 x EP 4 (moe_etp: moe16, E 16, k 4, f_e 1024 SwiGLU, 8 GPUs of one
 * domain). After the EP all-to-all each rank holds the T k copies routed to
 * its EP rank's E/ep = 4 experts (balanced); Megatron-Core all-gathers them
 * over the ETP group (etp T k copies, of which (etp - 1)/etp arrive from the
 * peer: the rank sends (etp - 1) T k h BF16) and reduce-scatters the expert
 * output back (the same bytes). Each expert GEMM then runs etp T k rows
 * against 1/etp of the columns: fc1 [etp T k, h] x [h, 2 f_e / etp], fc2
 * [etp T k, f_e / etp] x [f_e / etp, h]. The EP all-to-all itself moves
 * (ep - 1)/ep of the T k copies. */
static void test_etp(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/moe_etp.yaml", &s);
    assert_int_equal(s.etp, 2);
    sim_ops(&s, &r);
    const double T = 4096, k = 4, h = 2048, fe = 1024, etp = 2, ep = 4, c = 4, groups = 16 / ep;
    double etp_bytes = (etp - 1) * T * k * h * BF16;
    static const char *const names[] = {"etp allgather", "etp reducescatter"};
    for (int i = 0; i < 2; i++)
        for (int dir = 0; dir < 2; dir++) {
            const struct mb_op_stat *x = op(&r, names[i], dir);
            near(x->count, c, EXACT, "count", names[i]);
            near(x->bytes, c * etp_bytes, EXACT, "bytes per step", names[i]);
            /* a 2-rank ring is one NVLink step; forward, nothing else is on the link */
            if (dir == 0)
                near(x->time_s / x->count, nccl_ring_lat(2, 1) + etp_bytes / FX_NV_RATE, EXACT, "fwd seconds per execution",
                     names[i]);
        }
    /* grouped GEMMs: `groups` experts of etp T k / groups rows each, at the dense rate */
    double M = etp * T * k, n1 = 2 * fe / etp, n2 = fe / etp;
    expect_op(&r, "expert_fc1", 0, c, c * 2 * M * n1 * h, groups * gemm_s(M / groups, n1, h));
    expect_op(&r, "expert_fc1", 1, c, c * 4 * M * n1 * h, groups * gemm_bwd_s(M / groups, n1, h));
    expect_op(&r, "expert_fc2", 0, c, c * 2 * M * h * n2, groups * gemm_s(M / groups, h, n2));
    near(op(&r, "ep dispatch", 0)->bytes, c * T * k * h * BF16 * (ep - 1) / ep, EXACT, "bytes per step",
         "ep dispatch");
    mb_result_free(&r);
    /* the same model without ETP (EP 8): no ETP traffic, fc1 [T k, h] x [h, 2 f_e] */
    s.ep = 8;
    s.etp = 1;
    recheck(&s);
    sim_ops(&s, &r);
    assert_false(has_op(&r, "etp allgather"));
    assert_false(has_op(&r, "etp reducescatter"));
    expect_op(&r, "expert_fc1", 0, c, c * 2 * (T * k) * (2 * fe) * h, 2 * gemm_s(T * k / 2, 2 * fe, h));
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* Sequence-parallel TP all-gathers under a quantized recipe (mb_precision_gather_bytes). gqa2
 * (h 2048, 2 layers, 2 microbatches of T = 4096) on TP 2 with SP: per layer and microbatch two
 * column-parallel inputs are gathered (the attention's norm output into linear_qkv, the MLP's into
 * linear_fc1), forward and again for wgrad, plus the final norm's output into the output layer,
 * which Megatron builds outside TE and gathers in BF16 whatever the recipe. Each gather of a
 * [T, h] buffer sends (tp - 1)/tp of it. Transformer Engine gathers the quantized tensor
 * (layernorm_linear.py, gather_along_first_dim(..., quantizer=input_quantizer)): 1 byte per
 * element under fp8 where BF16 moves 2. So forward: 2 x (2 x 2 x g + 2) x T h / 2 bytes with
 * g = 2 (bf16) or 1 (fp8). The function itself: nvfp4 0.5 + 1/16, mxfp8 1 + 1/32, fp8_blockwise
 * 1 + 4/128 (the recipes' block scales). */
static void test_tp_gather_quantized(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    const double T = 4096, h = 2048, L = 2, mbs = 2;
    load("tests/data/ops/gqa2.yaml", &s);
    s.tp = 2;
    s.gpus = 2;
    s.sequence_parallel = 1;
    recheck(&s);
    for (int q = 0; q < 2; q++) {
        if (q) {
            assert_int_equal(mb_precision_parse("fp8", &s.prec), 0);
            recheck(&s);
        }
        double g = q ? 1 : 2;
        sim_ops(&s, &r);
        double want = mbs * (L * 2 * g + 2) * T * h / 2;
        near(op(&r, "tp allgather", 0)->bytes, want, EXACT, q ? "fp8 bytes per step" : "bf16 bytes per step",
             "tp allgather");
        near(op(&r, "tp allgather wgrad input", 1)->bytes, want, EXACT, q ? "fp8 bytes" : "bf16 bytes",
             "tp allgather wgrad input");
        /* the reduce-scatters carry BF16 outputs under every recipe */
        near(op(&r, "tp reducescatter", 0)->bytes, mbs * L * 2 * 2 * T * h / 2, EXACT, "bytes per step",
             "tp reducescatter");
        /* backward: each forward gather's reduce-scatter of the input gradient (BF16) and each forward
         * reduce-scatter's gather of the output gradient (quantized by TE's grad_output_preprocess):
         * a comm op keeps its forward bytes, so the two trade places, and their sum is exact */
        near(op(&r, "tp allgather", 1)->bytes + op(&r, "tp reducescatter", 1)->bytes,
             mbs * (L * 2 * (2 + g) + 2) * T * h / 2, EXACT, "backward bytes per step", "tp gathers + scatters");
        mb_result_free(&r);
    }
    mb_scenario_free(&s);
    struct mb_precision p;
    static const struct {
        const char *label;
        double bytes;
    } want[] = {{"bf16", 2}, {"fp16", 2}, {"fp8", 1}, {"fp8_cs", 1}, {"fp8_blockwise", 1.03125},
                {"mxfp8", 1.03125}, {"nvfp4", 0.5625}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(mb_precision_parse(want[i].label, &p), 0);
        near(mb_precision_gather_bytes(&p), want[i].bytes, EXACT, "bytes per element", want[i].label);
    }
}

/* ETP 2 x EP 8 on two DGX H100 nodes (moe_ep16 with ep 8, etp 2; moe64, E 64,
 * k 6). Megatron-Core orders expert ranks ETP fastest: the ETP pair is two
 * neighbouring GPUs of one node (one NVLink step), the EP group takes every
 * second rank, 4 per node: an all-to-all sends T k copies x 3/8 over NVLink
 * and x 4/8 over the NIC, in one step paced by the NIC's latency. */
static void test_etp_two_nodes(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/ops/moe_ep16.yaml", &s);
    s.ep = 8;
    s.etp = 2;
    recheck(&s);
    sim_ops(&s, &r);
    const double T = 4096, k = 6, h = 2048, fe = 1024, etp = 2, ep = 8, local = 4, c = 4, groups = 64 / ep;
    double etp_bytes = (etp - 1) * T * k * h * BF16;
    const struct mb_op_stat *ag = op(&r, "etp allgather", 0);
    near(ag->bytes, c * etp_bytes, EXACT, "bytes per step", "etp allgather");
    near(ag->time_s / ag->count, nccl_ring_lat(2, 1) + etp_bytes / FX_NV_RATE, EXACT, "fwd seconds per execution",
         "etp allgather");
    double M = etp * T * k, n1 = 2 * fe / etp;
    expect_op(&r, "expert_fc1", 0, c, c * 2 * M * n1 * h, groups * gemm_s(M / groups, n1, h));
    double nv = T * k * h * BF16 * (local - 1) / ep, nic = T * k * h * BF16 * (ep - local) / ep;
    const struct mb_op_stat *d = op(&r, "ep dispatch", 0);
    near(d->bytes, c * (nv + nic), EXACT, "bytes per step", "ep dispatch");
    near(d->time_s / d->count, FX_NIC_LAT + fmax(nv / FX_NV_RATE, nic / FX_NIC_RATE), EXACT,
         "fwd seconds per execution", "ep dispatch");
    mb_result_free(&r);
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_gqa_mha),   cmocka_unit_test(test_position_embeddings),
        cmocka_unit_test(test_attention_backends),
        cmocka_unit_test(test_attention_sliding_window),
        cmocka_unit_test(test_attention_lookup_seq_and_kind), cmocka_unit_test(test_attention_local),
        cmocka_unit_test(test_attention_mla),       cmocka_unit_test(test_gated_deltanet),
        cmocka_unit_test(test_mamba2),              cmocka_unit_test(test_mamba_layout),              cmocka_unit_test(test_output_layer_bf16),
                     cmocka_unit_test(test_dispatch_alltoall),
        cmocka_unit_test(test_dispatch_allgather),  cmocka_unit_test(test_dispatch_deepep_hybridep),
        cmocka_unit_test(test_etp), cmocka_unit_test(test_tp_gather_quantized),                 cmocka_unit_test(test_etp_two_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
