/*
 * test_model.c -- model files, layer expansion, parameter counts, Megatron
 * model FLOPs, ViT FLOPs and image patch counts, and bad model files.
 *
 * Every expected number below is derived by hand (or a few lines of python
 * written independently of mb_model.c) from hardware.md D.1/D.2 and stated in
 * the comment above the test; published totals are checked with a stated
 * tolerance. Runs with cwd = repo root and MBSIM_DATA_DIR = repo root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "mb_model.h"
#include "mb_util.h"
#include "mb_yaml.h"

/* |got - want| <= rel * |want| */
static void assert_rel(double got, double want, double rel)
{
    if (fabs(got - want) > rel * fabs(want)) {
        print_error("got %.10g, want %.10g (rel tol %g, off by %.3g%%)\n", got, want, rel,
                    100.0 * (got - want) / want);
        fail();
    }
}

static void load_ok(const char *name, struct mb_model *m)
{
    struct mb_err e;
    mb_err_clear(&e);
    int rc = mb_model_load(name, m, &e);
    if (rc != 0) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        print_error("loading %s: %s\n", name, buf);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(e.count, 0);
}

/* ------------------------------------------------------------------------ */

/*
 * Llama-3-8B, one sequence of s = 8192 (T = 8192, Q = 8192^2).
 * h 4096, L 32, n 32, g 8, d 128, f 14336 (SwiGLU, gamma 3), V 128256.
 * Per token (D.1):
 *   MLP     6 h gamma f L          = 6*4096*3*14336*32             = 33,822,867,456
 *   A_lin   6 [h(nd + 2gd) + nd h] L = 6*(4096*(4096+2048)+4096^2)*32 = 8,053,063,680
 *   logits  6 h V                  = 6*4096*128256                 = 3,152,019,456
 *   core    s * 6 n d * L          = 8192*6*4096*32                = 6,442,450,944
 *   sum = 51,470,401,536 FLOP/token = 51.47 GFLOP/token.
 * Cross-check: public_measured.csv llama3_8b seq 8192 rows say
 * implied_GFLOP_per_token = 51.5 (same formula; matches to 0.06%).
 */
static void test_flops_llama3_8b(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("llama3_8b", &m);
    double s = 8192;
    double f = mb_model_flops(&m, s, s * s);
    assert_rel(f / s, 51470401536.0, 1e-12);
    assert_rel(f / s / 1e9, 51.5, 0.002); /* the CSV's rounded value */
    /* linear in the batch: 4 sequences = 4x */
    assert_rel(mb_model_flops(&m, 4 * s, 4 * s * s), 4 * f, 1e-12);
    mb_model_free(&m);
}

/*
 * Qwen3-30B-A3B, s = 4096. h 2048, L 48 (all MoE), n 32, g 4, d 128,
 * E 128, k 8, f_e 768, V 151936, no shared expert.
 * Per token:
 *   experts 6 h gamma f_e k L      = 6*2048*3*768*8*48           = 10,871,635,968
 *   A_lin   6 [h(nd+2gd) + nd h] L = 6*(2048*(4096+1024)+4096*2048)*48 = 5,435,817,984
 *   logits  6 h V                  = 6*2048*151936               = 1,866,989,568
 *   core    s * 6 n d * L          = 4096*6*4096*48              = 4,831,838,208
 *   sum = 23,006,281,728 FLOP/token = 23.006 GFLOP/token.
 * Cross-check: the CSV's qwen3_30b_a3b seq-4096 rows say 22.9 .. 23.1
 * (23.0 median). Those values are TFLOP/s x GPUs / (tokens/s), i.e. rounded
 * throughput ratios, so +-0.1 is rounding noise of the published numbers.
 */
static void test_flops_qwen3_30b_a3b(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("qwen3_30b_a3b", &m);
    double s = 4096;
    double f = mb_model_flops(&m, s, s * s);
    assert_rel(f / s, 23006281728.0, 1e-12);
    assert_rel(f / s / 1e9, 23.05, 0.0045); /* inside the CSV's 22.9 .. 23.1 band */
    mb_model_free(&m);
}

/*
 * DeepSeek-V3 at s = 4096 with the shipped mtp_layers = 1 (MLA, 3 dense +
 * 58 MoE layers, the MTP layer counts as one more MoE + MLA layer):
 * independent python evaluation of D.1 gives 259,992,950,784 FLOP/token
 * = 260.0 GFLOP/token, exactly the CSV's implied 260.0 (26.x rows);
 * without MTP it would be 249.8, which matches no row -> the public
 * numbers include 1 MTP layer.
 */
static void test_flops_deepseek_v3(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("deepseek_v3", &m);
    assert_int_equal(m.mtp_layers, 1);
    double s = 4096;
    assert_rel(mb_model_flops(&m, s, s * s) / s, 259992950784.0, 1e-9);
    m.mtp_layers = 0;
    assert_rel(mb_model_flops(&m, s, s * s) / s / 1e9, 249.81, 1e-4);
    mb_model_free(&m);
}

/*
 * Nemotron-3 Nano (hybrid_flops path), s = 8192, per token (T=1, Q=s):
 *   23 Mamba: 2h(2*2h + 2*8*128 + 64) + 7*2h*128 + 2*2h*h, h = 2688
 *   23 MoE:   4h(1856*6 + 3712)(2/2)       (squared ReLU, gamma 2)
 *    6 attn:  4h p(h + h*2/32) + 2 s h p,  p = 32*128/2688
 *   logits 2hV, V = 131072 (assumed vocab); all x 3
 *   = 22,278,094,848 FLOP/token = 22.28 GFLOP/token.
 * Cross-check: CSV seq-8192 rows say 22.1 .. 22.6 (median 22.3). (The one
 * seq-4096 row says 19.5 vs our 21.67; that row's publisher formula is not
 * known -- noted in docs/models.md.)
 */
static void test_flops_nemotron_nano_hybrid(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("nemotron_3_nano_30b_a3b", &m);
    double s = 8192;
    assert_rel(mb_model_flops(&m, s, s * s) / s, 22278094848.0, 1e-9);
    mb_model_free(&m);
}

/*
 * Tiny inline model to pin the sliding-window and Gated-DeltaNet terms with
 * numbers small enough to do by hand. h 8, n 2, g 1, d 4, f 16 SwiGLU, V 16,
 * 2 layers, one sequence s = 8.
 *   A_lin = 6 (8 (8 + 8) + 8*8) = 1152, A_core = 6*2*4 = 48
 *   MLP   = 6*8*3*16*2 = 4608, logits = 6*8*16 = 768
 * (a) sliding_window {window 4, full_every 2}: layer 0 SWA, layer 1 full.
 *   linear per token 4608 + 2*1152 + 768 = 7680, x T=8 -> 61440
 *   full core  Q A_core = 64*48 = 3072
 *   SWA core: average context 4 - 4*3/(2*8) = 3.25 (= (1+2+3+4*5)/8 exactly),
 *   T A_core 2 ctx = 8*48*6.5 = 2496.  Total 67008.
 * (b) gdn {full_attention_every 2, k_heads 1, v_heads 2, k_dim 4, v_dim 2, conv 4}:
 *   layer 0 GDN, layer 1 ATTN. q_dim 4, v_dim 4, P = 8 + 8 + 4 = 20,
 *   G_lin = 6 (8*20 + 4*(8+4) + 4*2*2^2 + 8*4) = 6*272 = 1632.
 *   per token 4608 + 1152 + 1632 + 768 = 8160, x8 = 65280; core 3072. Total 68352.
 */
static const char *tiny_base =
    "name: tiny\nsource: test\nnum_layers: 2\nhidden: 8\nffn_hidden: 16\nnum_heads: 2\n"
    "num_kv_heads: 1\nhead_dim: 4\nvocab: 16\n";

static void tiny(const char *extra, struct mb_model *m)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s", tiny_base, extra);
    struct mb_err e;
    mb_err_clear(&e);
    struct mb_node *root = mb_yaml_load_string(buf, strlen(buf), "<tiny>", &e);
    assert_non_null(root);
    int rc = mb_model_from_node(root, m, &e);
    if (rc)
        print_error("%s\n", e.msg);
    assert_int_equal(rc, 0);
    mb_yaml_free(root);
}

static void test_flops_swa_gdn_tiny(void **state)
{
    (void)state;
    struct mb_model m;
    tiny("sliding_window: {window: 4, full_every: 2}\n", &m);
    assert_int_equal(m.layer[0].mixer, MB_MIX_ATTN_SWA);
    assert_int_equal(m.layer[1].mixer, MB_MIX_ATTN);
    assert_rel(mb_model_flops(&m, 8, 64), 67008.0, 1e-12);
    mb_model_free(&m);

    tiny("gdn: {full_attention_every: 2, k_heads: 1, v_heads: 2, k_head_dim: 4, v_head_dim: 2,"
         " conv_kernel: 4}\n", &m);
    assert_int_equal(m.layer[0].mixer, MB_MIX_GDN);
    assert_int_equal(m.layer[1].mixer, MB_MIX_ATTN);
    assert_rel(mb_model_flops(&m, 8, 64), 68352.0, 1e-12);
    mb_model_free(&m);

    /* plain dense: 7680*8 + 2*3072 = 67584 */
    tiny("", &m);
    assert_rel(mb_model_flops(&m, 8, 64), 67584.0, 1e-12);
    mb_model_free(&m);
}

/* ------------------------------------------------------------------------ */

/*
 * Llama-3-8B parameters: embedding + output 2*128256*4096 = 1,050,673,152;
 * per layer attention 4096*4096*2 + 2*4096*1024 = 41,943,040, MLP
 * 3*4096*14336 = 176,160,768, 2 RMSNorms 8192; x32 + final norm 4096
 * -> 8,030,261,248. Published: 8.03e9 (tolerance 0.1%).
 */
static void test_params_llama3_8b(void **state)
{
    (void)state;
    struct mb_model m;
    struct mb_params p;
    load_ok("llama3_8b", &m);
    mb_model_params(&m, &p);
    assert_rel(p.total, 8030261248.0, 1e-12);
    assert_rel(p.total, 8.03e9, 1e-3);
    assert_rel(p.active, p.total, 1e-12); /* dense: all active */
    mb_model_free(&m);
}

/*
 * Qwen3-30B-A3B: embedding + output 2*151936*2048 = 622,329,856; per layer
 * attention 2048*4096*2 + 2*2048*512 + qk-norm 256 = 18,874,624, experts
 * 128*3*2048*768 = 603,979,776, router 2048*128 = 262,144, norms 4096;
 * x48 + 2048 -> 30,532,122,624 total. Active = total - experts*(1 - 8/128)
 * = 3,353,032,704. Published 30.5e9 / 3.3e9 (tolerance 1% / 2%).
 */
static void test_params_qwen3_30b_a3b(void **state)
{
    (void)state;
    struct mb_model m;
    struct mb_params p;
    load_ok("qwen3_30b_a3b", &m);
    mb_model_params(&m, &p);
    assert_rel(p.total, 30532122624.0, 1e-12);
    assert_rel(p.active, 3353032704.0, 1e-12);
    assert_rel(p.total, 30.5e9, 0.01);
    assert_rel(p.active, 3.3e9, 0.02);
    mb_model_free(&m);
}

/*
 * DeepSeek-V3. MLA per layer: q_a 7168*1536 + norm 1536 + q_b 1536*128*192
 * + kv_a 7168*576 + norm 512 + kv_b 512*128*256 + o 128*128*7168
 * = 187,107,328. Dense 3 x 3*7168*18432, 58 MoE layers x (256 experts x
 * 3*7168*2048 + shared 3*7168*2048 + router 7168*256), embedding + output
 * 2*129280*7168 -> 671,026,404,352 without MTP (published 671e9; 0.5%).
 * Active (no MTP) = 37,552,282,624 (published 37e9; 2%: the published value
 * is rounded down). One MTP layer adds 11.61e9 -> 682.6e9; HF's 685e9
 * also stores a private copy of the embedding and head in the MTP module
 * (+1.85e9), which Megatron shares -> tolerance 1%.
 */
static void test_params_deepseek_v3(void **state)
{
    (void)state;
    struct mb_model m;
    struct mb_params p;
    load_ok("deepseek_v3", &m);
    mb_model_params(&m, &p);
    assert_rel(p.total, 682636472320.0, 1e-9);
    assert_rel(p.total, 685e9, 0.01);
    assert_rel(p.total - p.mtp, 671026404352.0, 1e-9);
    m.mtp_layers = 0;
    mb_model_params(&m, &p);
    assert_rel(p.total, 671e9, 0.005);
    assert_rel(p.active, 37552282624.0, 1e-9);
    assert_rel(p.active, 37e9, 0.02);
    mb_model_free(&m);
}

/*
 * Other published totals as sanity checks (looser: linear biases, sinks and
 * position tables are omitted). `active_noemb` compares active minus the input
 * embedding, for publishers that count only the unembedding as active
 * (OpenAI gpt-oss card: 116.8B total, 5.13B active).
 */
static void test_params_published(void **state)
{
    (void)state;
    static const struct { const char *name; double total, active, tol; int active_noemb; } cases[] = {
        { "llama3_70b", 70.6e9, 0, 0.005, 0 },       /* Meta: 70.6B */
        { "llama3.1_405b", 405.9e9, 0, 0.005, 0 },   /* Meta: 405B (405.85B) */
        { "mixtral_8x7b", 46.7e9, 12.9e9, 0.01, 0 }, /* Mistral: 46.7B / 12.9B */
        { "qwen3_235b_a22b", 235e9, 22e9, 0.02, 0 },
        { "kimi_k2", 1.04e12, 32.6e9, 0.02, 0 },     /* Moonshot: 1.04T / 32B (32.6 incl. embeddings) */
        { "gpt_oss_120b", 116.8e9, 5.13e9, 0.02, 1 }, /* OpenAI card: 116.8B / 5.13B */
        /* Qwen: "80B total, 3B activated"; ours 3.87e9 active (3.56e9 without the input
         * embedding: 1.51 routed + 1.21 GDN + 0.33 attn + 0.31 head + 0.15 shared + 0.05
         * router); the "3B" is not reproducible from the config, so only the total is checked */
        { "qwen3_next_80b_a3b", 80e9, 0, 0.01, 0 },
        { "nemotron_3_nano_30b_a3b", 31.6e9, 3.6e9, 0.05, 0 }, /* NVIDIA: 31.6B total, 3.6B incl. embeddings */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mb_model m;
        struct mb_params p;
        load_ok(cases[i].name, &m);
        mb_model_params(&m, &p);
        print_message("%-26s total %.4g active %.4g\n", cases[i].name, p.total, p.active);
        assert_rel(p.total, cases[i].total, cases[i].tol);
        if (cases[i].active > 0)
            assert_rel(p.active - (cases[i].active_noemb ? p.embedding : 0), cases[i].active, 2 * cases[i].tol);
        mb_model_free(&m);
    }
}

/* ------------------------------------------------------------------------ */

/* Layer expansion of each family. */
static void test_expansion(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("deepseek_v3", &m); /* 3 dense then 58 MoE, all MLA */
    assert_int_equal(m.n_layers, 61);
    for (int i = 0; i < 61; i++) {
        assert_int_equal(m.layer[i].mixer, MB_MIX_MLA);
        assert_int_equal(m.layer[i].ffn, i < 3 ? MB_FFN_DENSE : MB_FFN_MOE);
    }
    mb_model_free(&m);

    load_ok("gpt_oss_120b", &m); /* SWA on 1-based odd layers, full on even */
    assert_int_equal(m.n_layers, 36);
    assert_int_equal(m.layer[0].mixer, MB_MIX_ATTN_SWA);
    assert_int_equal(m.layer[1].mixer, MB_MIX_ATTN);
    assert_int_equal(m.layer[35].mixer, MB_MIX_ATTN);
    assert_int_equal(m.swa_window, 128);
    mb_model_free(&m);

    load_ok("qwen3_next_80b_a3b", &m); /* linear, linear, linear, full */
    int gdn = 0, attn = 0;
    for (int i = 0; i < m.n_layers; i++) {
        gdn += m.layer[i].mixer == MB_MIX_GDN;
        attn += m.layer[i].mixer == MB_MIX_ATTN;
        assert_int_equal(m.layer[i].ffn, MB_FFN_MOE);
    }
    assert_int_equal(gdn, 36);
    assert_int_equal(attn, 12);
    assert_int_equal(m.layer[3].mixer, MB_MIX_ATTN);
    assert_int_equal(m.layer[0].mixer, MB_MIX_GDN);
    mb_model_free(&m);

    load_ok("nemotron_3_nano_30b_a3b", &m); /* 23 M, 23 E, 6 * */
    int c[3] = { 0, 0, 0 };
    for (int i = 0; i < m.n_layers; i++) {
        c[0] += m.layer[i].mixer == MB_MIX_MAMBA && m.layer[i].ffn == MB_FFN_NONE;
        c[1] += m.layer[i].mixer == MB_MIX_NONE && m.layer[i].ffn == MB_FFN_MOE;
        c[2] += m.layer[i].mixer == MB_MIX_ATTN && m.layer[i].ffn == MB_FFN_NONE;
    }
    assert_int_equal(m.n_layers, 52);
    assert_int_equal(c[0], 23);
    assert_int_equal(c[1], 23);
    assert_int_equal(c[2], 6);
    mb_model_free(&m);

    load_ok("gpt_sc21_1.7b", &m); /* defaults: kv = heads, head_dim = h/n */
    assert_int_equal(m.num_kv_heads, 24);
    assert_int_equal(m.head_dim, 96);
    assert_int_equal(m.ffn_hidden, 4 * 2304);
    assert_int_equal(m.tied_embeddings, 1);
    assert_int_equal(m.act, MB_ACT_GELU);
    assert_int_equal(m.rmsnorm, 0);
    mb_model_free(&m);
}

/* ------------------------------------------------------------------------ */

/*
 * Qwen3-VL patching (patch 16, merge 2):
 *   448 x 448  -> 28 x 28 = 784 patches -> 784/4 = 196 LLM tokens
 *   1024 x 768 -> 64 x 48 = 3072 patches -> 768 tokens
 *   1000 x 1000 -> ceil(62.5) = 63 -> rounded up to 64: 4096 patches -> 1024
 *   500 x 375 -> 32 x ceil(23.4)=24 -> 768 patches -> 192
 */
static void test_image_patches(void **state)
{
    (void)state;
    struct mb_model m;
    double merged;
    load_ok("qwen3_vl_30b_a3b", &m);
    assert_rel(mb_model_image_patches(&m, 448, 448, &merged), 784, 0);
    assert_rel(merged, 196, 0);
    assert_rel(mb_model_image_patches(&m, 768, 1024, &merged), 3072, 0);
    assert_rel(merged, 768, 0);
    assert_rel(mb_model_image_patches(&m, 1000, 1000, &merged), 4096, 0);
    assert_rel(merged, 1024, 0);
    assert_rel(mb_model_image_patches(&m, 500, 375, NULL), 768, 0);
    mb_model_free(&m);

    load_ok("llama3_8b", &m); /* no vision encoder */
    assert_true(mb_model_image_patches(&m, 448, 448, &merged) == 0 && merged == 0);
    assert_true(mb_model_vit_flops(&m, 784, 784.0 * 784) == 0);
    mb_model_free(&m);
}

/*
 * ViT FLOPs of one 448x448 image on qwen3_vl_30b_a3b (D = 27, h_v = 1152,
 * f_v = 4304, S = 2, n_ds = 3, h_out = 2048): p = 784, sum p^2 = 614,656,
 * merged m = 196, h_v S^2 = 4608.
 *   8 h_v^2 + 4 h_v f_v = 10,616,832 + 19,832,832 = 30,449,664
 *   x p                 = 30,449,664 * 784        = 23,872,536,576
 *   4 h_v p^2           = 4608 * 614,656          =  2,832,334,848
 *   blocks  27 * 26,704,871,424                   = 721,031,528,448
 *   mergers (1+3) * 196 * (2*4608^2 + 2*4608*2048)
 *         = 784 * (42,467,328 + 18,874,368)       =  48,091,889,664
 *   x3 -> 3 * 769,123,418,112 = 2,307,370,254,336 FLOP (~2.3 TFLOP/image).
 * Second image 1024x768: p = 3072 (python, same formula):
 *   3*(27*(30,449,664*3072 + 4608*3072^2) + 4*768*61,341,696) = 11,664,585,916,416.
 * A batch of both images as separate attention sequences is the sum
 * (sum p and sum p^2 add).
 */
static void test_vit_flops(void **state)
{
    (void)state;
    struct mb_model m;
    load_ok("qwen3_vl_30b_a3b", &m);
    double f1 = mb_model_vit_flops(&m, 784, 784.0 * 784);
    double f2 = mb_model_vit_flops(&m, 3072, 3072.0 * 3072);
    assert_rel(f1, 2307370254336.0, 1e-12);
    assert_rel(f2, 11664585916416.0, 1e-12);
    assert_rel(mb_model_vit_flops(&m, 784 + 3072, 784.0 * 784 + 3072.0 * 3072), f1 + f2, 1e-12);
    mb_model_free(&m);
}

/* ------------------------------------------------------------------------ */

/* Every key of shared/docs/reference/models.md plus qwen3_vl_30b_a3b. */
static const char *const models_md_keys[] = {
    "gpt_sc21_1.7b", "gpt_sc21_3.6b", "gpt_sc21_7.5b", "gpt_sc21_18b", "gpt_sc21_39b", "gpt_sc21_76b",
    "gpt_sc21_145b", "gpt_sc21_310b", "gpt_sc21_530b", "gpt_sc21_1t", "gpt_h100ws_1.7b", "gpt_h100ws_7.1b",
    "gpt_h100ws_16b", "gpt_h100ws_32b", "gpt_h100ws_70b", "gpt_h100ws_119b", "gpt_h100ws_177b",
    "gpt_h100ws_314b", "gpt_h100ws_462b", "gpt3_5b", "gpt3_20b", "gpt3_175b", "gpt3_175b_mlperf",
    "llama2_7b", "llama2_13b", "llama2_70b", "llama3_8b", "llama3.1_8b", "llama3_70b", "llama3.1_405b",
    "llama3.1_405b_mlperf", "qwen2.5_7b", "qwen2.5_32b", "nemotron3_8b", "nemotron3_22b", "nemotron4_15b",
    "nemotron4_340b", "mixtral_8x7b", "qwen3_30b_a3b", "qwen3_235b_a22b", "gpt_oss_120b", "gpt_oss_20b",
    "deepseek_v3", "kimi_k2", "moonlight_16b_a3b", "qwen3_next_80b_a3b", "qwen3.5_397b_a17b",
    "nemotron_3_nano_30b_a3b", "qwen3_vl_235b_a22b", "qwen3.5_35b_a3b_vl", "qwen3.6_35b_a3b_vl",
    "qwen3_vl_30b_a3b",
};

/* Each listed key loads, has a source, and gives positive params/FLOPs. */
static void test_all_keys_load(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof models_md_keys / sizeof models_md_keys[0]; i++) {
        struct mb_model m;
        struct mb_params p;
        load_ok(models_md_keys[i], &m);
        assert_string_equal(m.name, models_md_keys[i]);
        assert_true(strlen(m.source) > 10);
        assert_true(m.n_layers == m.num_layers);
        mb_model_params(&m, &p);
        assert_true(p.total > 0 && p.active > 0 && p.active <= p.total);
        assert_true(mb_model_flops(&m, 4096, 4096.0 * 4096) > 0);
        mb_model_free(&m);
    }
}

/* The key column of models.md itself (when the shared docs are present):
 * every first cell of a table row that looks like a key must load. */
static void test_models_md_keys_load(void **state)
{
    (void)state;
    const char *shared = getenv("MBSIM_SHARED_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/reference/models.md", shared ? shared : "../shared");
    FILE *f = fopen(path, "r");
    if (!f) {
        print_message("skipping: %s not readable\n", path);
        skip();
    }
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] != '|' || line[1] != ' ')
            continue;
        char key[128];
        size_t k = 0;
        const char *s = line + 2;
        while (*s && *s != ' ' && *s != '|' && k < sizeof key - 1)
            key[k++] = *s++;
        key[k] = '\0';
        if (!k || strcmp(key, "key") == 0 || key[0] == '-')
            continue;
        struct mb_model m;
        load_ok(key, &m);
        mb_model_free(&m);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 51); /* models.md rows; qwen3_vl_30b_a3b is ours */
}

/* Every file shipped in workloads/models/ loads and its name is its stem. */
static void test_shipped_dir_loads(void **state)
{
    (void)state;
    char *dir = mb_path_join(mb_data_dir(), "workloads/models");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        char *path = mb_path_join(dir, e->d_name);
        struct mb_model m;
        load_ok(path, &m);
        assert_int_equal(strncmp(m.name, e->d_name, len - 5), 0);
        assert_int_equal(m.name[len - 5], '\0');
        mb_model_free(&m);
        mb_free(path);
        n++;
    }
    closedir(d);
    mb_free(dir);
    assert_int_equal(n, (int)(sizeof models_md_keys / sizeof models_md_keys[0]));

    char list[4096];
    mb_model_list(list, sizeof list);
    assert_non_null(strstr(list, "deepseek_v3, gpt3_175b"));
    assert_true(strncmp(list, "deepseek_v3, ", 13) == 0);
}

/* ------------------------------------------------------------------------ */

static void expect_error(const char *file, int line, int col, const char *msg)
{
    char path[512];
    snprintf(path, sizeof path, "tests/data/model/%s", file);
    struct mb_model m;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_model_load(path, &m, &e), -1);
    assert_null(m.layer);
    assert_string_equal(e.file, path);
    if (e.line != line || e.col != col)
        print_error("%s: got %d:%d (%s), want %d:%d\n", file, e.line, e.col, e.msg, line, col);
    assert_int_equal(e.line, line);
    assert_int_equal(e.col, col);
    assert_string_equal(e.msg, msg);
}

/* Bad files give the exact message at the offending line:col. */
static void test_bad_files(void **state)
{
    (void)state;
    expect_error("unknown_key.yaml", 5, 1,
                 "unknown key 'hidden_size' in model; expected one of: name, source, num_layers, hidden, "
                 "ffn_hidden, num_heads, num_kv_heads, head_dim, vocab, tied_embeddings, activation, norm, "
                 "position_embedding_type, qk_norm, qkv_bias, attention_output_gate, mtp_layers, pattern, moe, mla, sliding_window, "
                 "gdn, mamba, vision");
    expect_error("wrong_type.yaml", 5, 9, "model.hidden: expected an integer, got 'big'");
    expect_error("duplicate_key.yaml", 8, 1, "duplicate key 'hidden' (first defined at line 5)");
    expect_error("negative_layers.yaml", 4, 13, "model.num_layers = -2 is out of range [1, 100000]");
    expect_error("bad_activation.yaml", 9, 13,
                 "unknown activation 'relu'; expected one of: swiglu, gelu, squared_relu, geglu");
    expect_error("bad_position.yaml", 10, 26,
                 "unknown position_embedding_type 'alibi'; expected one of: rope, yarn, mrope, learned_absolute, "
                 "none");
    expect_error("moe_unknown_key.yaml", 10, 3,
                 "unknown key 'top_k' in model.moe; expected one of: num_experts, topk, ffn_hidden, "
                 "shared_ffn_hidden, first_dense_layers, latent_size, router_groups, router_group_topk");
    expect_error("bad_pattern.yaml", 8, 10,
                 "bad character 'X' at position 3 of pattern; expected M (Mamba), E (MoE), * (attention) "
                 "or - (MLP)");
}

/* Unknown names list the shipped models; the error has no file position. */
static void test_unknown_model(void **state)
{
    (void)state;
    struct mb_model m;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_model_load("llama9_1t", &m, &e), -1);
    assert_int_equal(strncmp(e.msg, "unknown model 'llama9_1t'; known: deepseek_v3, gpt3_175b, ", 58), 0);
    assert_int_equal(e.line, 0);
    mb_err_clear(&e);
    assert_int_equal(mb_model_load("llama3 8b", &m, &e), -1); /* not a name, not a path */
    assert_int_equal(strncmp(e.msg, "unknown model 'llama3 8b'; known: ", 34), 0);
    /* anything with a '/' or a .yaml suffix is a path; a missing one says so */
    mb_err_clear(&e);
    assert_int_equal(mb_model_load("tests/data/model/no_such.yaml", &m, &e), -1);
    assert_string_equal(e.file, "tests/data/model/no_such.yaml");
    assert_string_equal(e.msg, "cannot open: No such file or directory");
}

/* Inline mappings: same schema, errors point into the inline document. */
static void test_from_node_errors(void **state)
{
    (void)state;
    const char *doc = "name: x\nsource: y\nnum_layers: 2\nhidden: 8\nnum_heads: 3\nvocab: 10\nffn_hidden: 4\n";
    struct mb_err e;
    mb_err_clear(&e);
    struct mb_node *root = mb_yaml_load_string(doc, strlen(doc), "<inline>", &e);
    assert_non_null(root);
    struct mb_model m;
    assert_int_equal(mb_model_from_node(root, &m, &e), -1);
    assert_string_equal(e.msg, "hidden = 8 is not a multiple of num_heads = 3; give head_dim");
    assert_int_equal(e.line, 5);
    assert_int_equal(e.col, 12);
    mb_yaml_free(root);

    /* MoE-only model without ffn_hidden is fine; dense layers need it */
    const char *doc2 = "name: x\nsource: y\nnum_layers: 2\nhidden: 8\nnum_heads: 2\nvocab: 10\n"
                       "moe: {num_experts: 4, topk: 2, ffn_hidden: 4, first_dense_layers: 1}\n";
    mb_err_clear(&e);
    root = mb_yaml_load_string(doc2, strlen(doc2), "<inline>", &e);
    assert_non_null(root);
    assert_int_equal(mb_model_from_node(root, &m, &e), -1);
    assert_string_equal(e.msg, "missing required key 'ffn_hidden' in model (the model has dense layers)");
    assert_int_equal(e.line, 1);
    mb_yaml_free(root);

    /* group-limited routing: G must divide E, g <= G, and k must fit in g * E/G experts;
     * the column is the offending value's ("moe: " + the flow mapping up to it, 1-based) */
    static const struct {
        const char *moe, *msg;
        int col;
    } bad[] = {
        {"{num_experts: 8, topk: 9, ffn_hidden: 4}", "model.moe.topk = 9 exceeds num_experts = 8", 29},
        {"{num_experts: 8, topk: 2, ffn_hidden: 4, router_groups: 3}",
         "model.moe.router_groups = 3 does not divide num_experts = 8", 62},
        {"{num_experts: 8, topk: 2, ffn_hidden: 4, router_groups: 4, router_group_topk: 5}",
         "model.moe.router_group_topk = 5 exceeds router_groups = 4", 84},
        {"{num_experts: 8, topk: 6, ffn_hidden: 4, router_groups: 4, router_group_topk: 2}",
         "model.moe.topk = 6 exceeds the 4 experts of router_group_topk = 2 groups", 84},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char d[400];
        snprintf(d, sizeof d, "name: x\nsource: y\nnum_layers: 2\nhidden: 8\nnum_heads: 2\nvocab: 10\nmoe: %s\n",
                 bad[i].moe);
        mb_err_clear(&e);
        root = mb_yaml_load_string(d, strlen(d), "<inline>", &e);
        assert_non_null(root);
        assert_int_equal(mb_model_from_node(root, &m, &e), -1);
        assert_string_equal(e.msg, bad[i].msg);
        assert_int_equal(e.line, 7);
        if (e.col != bad[i].col)
            fail_msg("case %zu: column %d, want %d", i, e.col, bad[i].col);
        mb_yaml_free(root);
    }
}

/* mb_model_load keeps the models it loaded, by the name or path asked for and the file's bytes
 * (mb_model.c): a file rewritten at the same path with the same size, at once (within the file
 * clock's resolution), must be read anew, and the same bytes again must give the first model.
 * The text is a two-layer dense model written here; the edit makes hidden 64 into 96. */
static void write_model(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_load_memo_by_content(void **state)
{
    (void)state;
    static const char a[] = "name: memo_test\nsource: test_model.c\nnum_layers: 2\nhidden: 64\n"
                            "ffn_hidden: 128\nnum_heads: 4\nvocab: 100\n";
    static const char b[] = "name: memo_test\nsource: test_model.c\nnum_layers: 2\nhidden: 96\n"
                            "ffn_hidden: 128\nnum_heads: 4\nvocab: 100\n";
    char dir[] = "/tmp/mbsim-test-model-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mb_path_join(dir, "memo_test.yaml");
    struct mb_model m1, m2, m3;
    struct mb_err e;
    mb_err_clear(&e);
    write_model(path, a);
    assert_int_equal(mb_model_load(path, &m1, &e), 0);
    assert_int_equal(m1.hidden, 64);
    write_model(path, b);
    assert_int_equal(mb_model_load(path, &m2, &e), 0);
    assert_int_equal(m2.hidden, 96);
    write_model(path, a);
    assert_int_equal(mb_model_load(path, &m3, &e), 0);
    assert_int_equal(m3.hidden, 64);
    assert_int_equal(m3.n_layers, m1.n_layers);
    assert_ptr_not_equal(m3.layer, m1.layer); /* each load owns its layers */
    assert_memory_equal(m3.layer, m1.layer, (size_t)m1.n_layers * sizeof *m1.layer);
    mb_model_free(&m1);
    mb_model_free(&m2);
    mb_model_free(&m3);
    unlink(path);
    rmdir(dir);
    mb_free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_llama3_8b),
        cmocka_unit_test(test_load_memo_by_content),
        cmocka_unit_test(test_flops_qwen3_30b_a3b),
        cmocka_unit_test(test_flops_deepseek_v3),
        cmocka_unit_test(test_flops_nemotron_nano_hybrid),
        cmocka_unit_test(test_flops_swa_gdn_tiny),
        cmocka_unit_test(test_params_llama3_8b),
        cmocka_unit_test(test_params_qwen3_30b_a3b),
        cmocka_unit_test(test_params_deepseek_v3),
        cmocka_unit_test(test_params_published),
        cmocka_unit_test(test_expansion),
        cmocka_unit_test(test_image_patches),
        cmocka_unit_test(test_vit_flops),
        cmocka_unit_test(test_all_keys_load),
        cmocka_unit_test(test_models_md_keys_load),
        cmocka_unit_test(test_shipped_dir_loads),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unknown_model),
        cmocka_unit_test(test_from_node_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
