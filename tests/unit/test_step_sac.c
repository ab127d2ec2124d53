/*
 * test_step_sac.c -- whole-step simulation: torchtitan's selective activation checkpointing
 * (recompute.policy torchtitan_op, torchtitan_layer) and Megatron-FSDP's kept FP8 transpose cache
 * (parallel.fsdp_keep_fp8_transpose_cache): the bytes kept and the seconds re-run, derived by hand from
 * shapes and dtypes on fixtures with the fixture calibration tables (tests/data/calib/fixture_*.yaml), so
 * recalibrating the shipped tables moves none of them. The rest of the memory model: test_step_memory.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_scenario.h"
#include "mb_step.h"

#include "test_step_util.h"

/*
 * recompute.policy torchtitan_op (torchtitan's op-level selective checkpointing, pytorch/torchtitan@cfb93265
 * torchtitan/distributed/activation_checkpoint.py; save list of @81c12433
 * torchtitan/models/llama3/infra/parallelize.py) on tests/data/step/sac_dense.yaml: 4 Llama-3-8B-shaped
 * layers (h 4096, 32 query / 8 KV heads of 128, SwiGLU f 14336), T = 4096 tokens, one H100, fixture table.
 * Kept per layer (BF16 but the FP32 log-sum-exp), the block's aten.mm in order wq 1, wk 2, wv 3, wo 4,
 * w1 5, w3 6, w2 7, the odd ones saved:
 *   input x [T, 4096] 33,554,432 + wq [T, 4096] 33,554,432 + wv [T, 1024] 8,388,608
 *   + SDPA output [T, 32 x 128] 33,554,432 + lse [32, T] x 4 B 524,288 + w1 [T, 14336] 117,440,512
 *   + w2 [T, 4096] 33,554,432 = 260,571,136 B; one microbatch: all 4 layers at the peak.
 * TP 2 (sequence parallel, 2 GPUs): x [T/2, 4096] 16,777,216 + wq [T, 2048] 16,777,216 + wv [T, 512]
 *   4,194,304 + SDPA [T, 16 x 128] 16,777,216 + lse 262,144 + w1 [T, 7168] 58,720,256 + w2's local
 *   output [T, 4096] 33,554,432 + the two reduce-scatter outputs [T/2, 4096] 2 x 16,777,216
 *   = 180,617,216 B.
 * FP8: every linear is torchao's Float8Linear (aten._scaled_mm, not on the list): x + SDPA + lse =
 *   67,633,152 B.
 * Time re-run per layer (fixture: GEMM 500 TFLOP/s, memory-bound bytes / 2 TB/s, framework off):
 *   wk, wo, w3: 2 T 4096 (1024 + 4096 + 14336) = 652,835,028,992 FLOP -> 1,305.67 us;
 *   two RMSNorms 2 x 2 T h 2 B, rope 2 T (4096 + 2 x 1024) 2 B, SwiGLU 3 T f 2 B, two residual adds
 *   2 x 3 T h 2 B = T (20 h + 24,576 + 6 f) = 788,529,152 B -> 394.26 us; 1,699.93 us per layer,
 *   6,799.73 us for the 4: the recompute category, and the step's growth (one stream) less the host-launch
 *   gaps the longer backward hides.
 * The recompute working set is the layer's saved set without the policy less what it keeps.
 */
static void test_sac_torchtitan_op(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result sac, none, tp2, fp8;
    load("tests/data/step/sac_dense.yaml", &s);
    sim(&s, &sac);
    const double T = 4096, kept = 260571136.0, kept_tp2 = 180617216.0, kept_fp8 = 67633152.0;
    assert_true(fabs(2 * T * (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + T * 32 * 4 - kept) < 1);
    if (fabs(sac.mem.activations - 4 * kept) > 1)
        fail_msg("kept %.0f B, expected 4 x %.0f", sac.mem.activations, kept);
    double rc_s = 2 * T * 4096 * (1024 + 4096 + 14336) / 500e12 + T * (20 * 4096 + 24576 + 6 * 14336.0) * 2 / 4e12;
    if (fabs(sac.breakdown[MB_CAT_RECOMPUTE] - 4 * rc_s) > 1e-9)
        fail_msg("recompute %.9f s, expected %.9f", sac.breakdown[MB_CAT_RECOMPUTE], 4 * rc_s);
    s.rc_policy = MB_RCP_NONE;
    sim(&s, &none);
    assert_true(none.breakdown[MB_CAT_RECOMPUTE] == 0 && none.mem.recompute == 0);
    /* one stream: the step grows by the recompute, less the host-launch gaps it hides (the host gets ahead) */
    double hidden = none.breakdown[MB_CAT_HOST] - sac.breakdown[MB_CAT_HOST];
    if (!(hidden >= 0) || fabs(sac.step_time_s - none.step_time_s - (4 * rc_s - hidden)) > 1e-9)
        fail_msg("step %.9f s vs %.9f + %.9f - %.9f", sac.step_time_s, none.step_time_s, 4 * rc_s, hidden);
    assert_true(fabs(sac.mem.recompute - (none.mem.activations / 4 - kept)) < 1);
    assert_true(sac.mem.peak_allocated < none.mem.peak_allocated);
    /* the op table's recompute rows re-run the wk, wo, w3 shares only: 2 T 4096 x 1024, 4096, 14336 FLOP
     * per layer (linear_qkv, linear_proj, linear_fc1), none of linear_fc2 (w2 saved) */
    s.rc_policy = MB_RCP_TORCHTITAN_OP;
    struct mb_result ops;
    sim_fw(&s, "tests/data/calib/fixture_H100.yaml", NULL, 1, &ops);
    const char *const name[] = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
    const double cols[] = {1024, 4096, 14336, 0};
    for (int k = 0; k < 4; k++) {
        double flop = 0;
        for (size_t i = 0; i < ops.n_ops; i++)
            if (ops.ops[i].dir == 2 && !strcmp(ops.ops[i].name, name[k]))
                flop += ops.ops[i].flop;
        if (fabs(flop - 4 * 2 * T * 4096 * cols[k]) > 1)
            fail_msg("%s recompute %.0f FLOP, expected %.0f", name[k], flop, 4 * 2 * T * 4096 * cols[k]);
    }
    mb_result_free(&ops);
    s.gpus = 2;
    s.tp = 2;
    s.sequence_parallel = 1;
    check_sim(&s, &tp2);
    if (fabs(tp2.mem.activations - 4 * kept_tp2) > 1)
        fail_msg("TP 2 kept %.0f B, expected 4 x %.0f", tp2.mem.activations, kept_tp2);
    s.gpus = 1;
    s.tp = 1;
    s.sequence_parallel = 0;
    assert_int_equal(mb_precision_parse("fp8", &s.prec), 0);
    check_sim(&s, &fp8);
    if (fabs(fp8.mem.activations - 4 * kept_fp8) > 1)
        fail_msg("FP8 kept %.0f B, expected 4 x %.0f", fp8.mem.activations, kept_fp8);
    mb_scenario_free(&s);
}

/*
 * recompute.policy torchtitan_layer (torchtitan's integer selective_ac_option N, pytorch/torchtitan@cfb93265
 * torchtitan/distributed/activation_checkpoint.py _apply_layer_sac: the wrapped layers counted from 1, those
 * at a multiple of N checkpointed whole). sac_dense.yaml, N = 2: layers 2 and 4 keep their input [4096,
 * 4096] BF16 = 33,554,432 B and re-run their whole forward before their backward; layers 1 and 3 keep
 * everything (the policy-free run's saved set, a quarter of its 4 layers each). The re-run is half of
 * what Megatron's full recompute (uniform, 1 layer per group: every layer re-run) adds; N = 1 is all of it,
 * with the same activations (4 inputs).
 */
static void test_sac_torchtitan_layer(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result none, l2, l1, full;
    load("tests/data/step/sac_dense.yaml", &s);
    s.rc_policy = MB_RCP_NONE;
    sim(&s, &none);
    s.rc_policy = MB_RCP_TORCHTITAN_LAYER;
    s.rc_every = 2;
    check_sim(&s, &l2);
    const double in = 4096.0 * 4096 * 2;
    if (fabs(l2.mem.activations - (2 * none.mem.activations / 4 + 2 * in)) > 1)
        fail_msg("N 2: activations %.0f B, expected %.0f", l2.mem.activations, 2 * none.mem.activations / 4 + 2 * in);
    s.rc_every = 1;
    check_sim(&s, &l1);
    assert_true(fabs(l1.mem.activations - 4 * in) < 1);
    s.rc_policy = MB_RCP_NONE;
    s.recompute = MB_RC_FULL;
    s.recompute_method = MB_RC_UNIFORM;
    s.recompute_num_layers = 1;
    check_sim(&s, &full);
    double rc = full.breakdown[MB_CAT_RECOMPUTE];
    assert_true(rc > 0);
    if (fabs(l2.breakdown[MB_CAT_RECOMPUTE] - rc / 2) > 1e-12 || fabs(l1.breakdown[MB_CAT_RECOMPUTE] - rc) > 1e-12)
        fail_msg("recompute N 2 %.9f, N 1 %.9f s; full %.9f", l2.breakdown[MB_CAT_RECOMPUTE],
                 l1.breakdown[MB_CAT_RECOMPUTE], rc);
    mb_scenario_free(&s);
}

/* parallel.fsdp_keep_fp8_transpose_cache (Megatron-FSDP --keep-fp8-transpose-cache, NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/distributed/fsdp/src/README.md: "number of parameter x 1 Byte"): every FP8 parameter keeps its
 * transposed copy after its unit is resharded. mfsdp_buffers.yaml (16 layers, h 1024, MHA 8 x 128, GELU FFN
 * 4096, TP 1) under fp8_cs with fp8_param_gather: the decoder's linear weights are q, k, v, o 4 x 1024^2 +
 * fc1, fc2 2 x 1024 x 4096 = 12,582,912 per layer, 201,326,592 for the 16, unsharded: 201,326,592 B more
 * weights on an H100, the same under fp8_blockwise (its column-wise copy); none on a GB200 (its FP8 GEMMs
 * need no transpose; pipe_1f1b_gb200.yaml as Megatron-FSDP), none under MXFP8 (both copies kept either way)
 * or without fp8_param_gather (no FP8 parameters); the step time is the same. Under 3D the key is an error
 * naming it. */
static void test_fp8_transpose_cache(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result off, on, bw_off, bw_on, nopg;
    struct mb_err e;
    load("tests/data/step/mfsdp_buffers.yaml", &s);
    assert_int_equal(mb_precision_parse("fp8_cs", &s.prec), 0);
    s.fp8_param_gather = 1;
    check_sim(&s, &off);
    s.fsdp_keep_fp8_transpose = 1;
    check_sim(&s, &on);
    const double cache = 16 * (4 * 1024.0 * 1024 + 2 * 1024.0 * 4096);
    assert_true(fabs(cache - 201326592.0) < 1);
    if (fabs(on.mem.per_stage[0].weights - off.mem.per_stage[0].weights - cache) > 1)
        fail_msg("transpose cache %.0f B, expected %.0f", on.mem.per_stage[0].weights - off.mem.per_stage[0].weights,
                 cache);
    assert_true(on.step_time_s == off.step_time_s);
    s.fp8_param_gather = 0;
    check_sim(&s, &nopg);
    s.fp8_param_gather = 1;
    assert_int_equal(mb_precision_parse("fp8_blockwise", &s.prec), 0); /* its column-wise copy: 1 B too */
    check_sim(&s, &bw_on);
    s.fsdp_keep_fp8_transpose = 0;
    check_sim(&s, &bw_off);
    assert_true(fabs(bw_on.mem.per_stage[0].weights - bw_off.mem.per_stage[0].weights - cache) < 1);
    s.fsdp_keep_fp8_transpose = 1;
    assert_int_equal(mb_precision_parse("fp8_cs", &s.prec), 0);
    s.fp8_param_gather = 0;
    struct mb_result nopg_off;
    s.fsdp_keep_fp8_transpose = 0;
    check_sim(&s, &nopg_off);
    assert_true(nopg.mem.per_stage[0].weights == nopg_off.mem.per_stage[0].weights);
    s.fsdp_keep_fp8_transpose = 1;
    s.strategy = MB_STRAT_3D;
    s.recompute = MB_RC_NONE;
    /* GB200 (pipe_1f1b_gb200.yaml as Megatron-FSDP over its 4 stages, fp8_cs + fp8_param_gather): no cache */
    struct mb_scenario g;
    struct mb_result g_on, g_off;
    load("tests/data/step/pipe_1f1b_gb200.yaml", &g);
    g.strategy = MB_STRAT_FSDP;
    assert_int_equal(mb_precision_parse("fp8_cs", &g.prec), 0);
    g.fp8_param_gather = 1;
    g.fsdp_keep_fp8_transpose = 1;
    check_sim(&g, &g_on);
    g.fsdp_keep_fp8_transpose = 0;
    check_sim(&g, &g_off);
    assert_true(g_on.mem.per_stage[0].weights == g_off.mem.per_stage[0].weights);
    assert_int_equal(mb_precision_parse("mxfp8", &g.prec), 0); /* MXFP8 keeps both copies either way */
    check_sim(&g, &g_off);
    g.fsdp_keep_fp8_transpose = 1;
    check_sim(&g, &g_on);
    assert_true(g_on.mem.per_stage[0].weights == g_off.mem.per_stage[0].weights);
    mb_scenario_free(&g);
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), -1);
    assert_string_equal(e.msg, "parallel.fsdp_keep_fp8_transpose_cache applies to strategy fsdp with fsdp_impl "
                               "megatron_fsdp only (Megatron-FSDP's --keep-fp8-transpose-cache)");
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sac_torchtitan_op),
        cmocka_unit_test(test_sac_torchtitan_layer),
        cmocka_unit_test(test_fp8_transpose_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
