/*
 * test_step_moe.c -- whole-step simulation: MoE layers and expert parallelism. Dispatcher
 * mechanisms (alltoall, DeepEP, HybridEP) against hand calculations, all-to-all over an
 * oversubscribed scale-out and from measured NCCL times, the MoE layer benchmark's times and
 * memory, the experts' eager activation and FP8 working sets, EP all-to-all overlap (its cost,
 * inside the interleaved schedule, the measured A/B), MoE options (shared-expert overlap,
 * capacity factor) and the dispatchers' buffers. The schedule and the host: test_step.c; memory
 * terms: test_step_memory.c; the shared helpers: test_step_util.h.
 *
 * Calibration: every scenario under tests/data/step/ names a test fixture
 * table (tests/data/calib/fixture_H100.yaml or fixture_GB200.yaml: flat
 * efficiencies and round link values, documented at the top of each), and
 * the shipped scenarios under scenarios/ are switched to the fixture with
 * use_fixture(), so recalibrating calibration/tables/ moves none of the hand
 * calculations here. Exceptions, which validate the SHIPPED tables against
 * published measurements: test_moe_layer_benchmark (moe_perf layer times within 10 %) and
 * test_ep_overlap (+9..+27 % measured gain).
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
#include "mb_coll.h"
#include "mb_step.h"

#include "test_step_util.h"

/* Oversubscribed scale-out under an all-to-all (system.oversubscription): EP384 on 48 DGX-H100
 * nodes spans two rail leaves of 32 nodes (256 GPUs). From the first rank, 256 group members share
 * its leaf and 8 its node, so x = (384 - 256) / (384 - 8) = 0.34043 of its NIC bytes leave the leaf.
 * With every group sending, each NIC gets nic / (os x) of an uplink that carries 32 NICs / os:
 * os 4 -> the NIC flow runs 4 x 0.34043 = 1.3617 times slower; os 2 -> 0.68 < 1, no effect. The
 * EP time is dominated by the NIC flow (376 of the 384 destinations are off-node), so the exposed
 * EP time grows by 1.3617 within 3 % (latencies and the NVLink part are unchanged). */
static void test_oversubscribed_a2a(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r1, r2, r4;
    load("tests/data/step/ep384_leaves.yaml", &s);
    sim(&s, &r1);
    s.system.oversubscription = 2;
    sim(&s, &r2);
    s.system.oversubscription = 4;
    sim(&s, &r4);
    assert_true(fabs(r2.breakdown[MB_CAT_COMM_EP] / r1.breakdown[MB_CAT_COMM_EP] - 1) < 1e-9);
    double ratio = r4.breakdown[MB_CAT_COMM_EP] / r1.breakdown[MB_CAT_COMM_EP];
    if (fabs(ratio / (4 * 128.0 / 376) - 1) > 0.03)
        fail_msg("EP time ratio %.4f at oversubscription 4, expected %.4f", ratio, 4 * 128.0 / 376);
    mb_scenario_free(&s);
}

/* Dispatcher mechanism inside one NVLink domain: HybridEP's scale-out saving
 * does not apply (no NIC traffic); what is left is sending a token once per
 * destination rank (E = 128, 4 experts per rank of EP32, k = 8: a rank is hit
 * with probability 1 - C(124,8)/C(128,8) = 0.2278, 31 x 0.2278 = 7.06 remote
 * ranks against 8 x 31/32 = 7.75 copies), the permute fused into its
 * dispatch, and the alltoall dispatcher's re-sort of the received copies by
 * local expert (sort_chunks_by_idxs, 4 local experts: one read and write of
 * every received copy each way) that HybridEP does not need: HybridEP ahead,
 * by less than 10 % (the guide: "HybridEP is a solid default on GB200";
 * before the sort pass was priced the two were within 5 %) on the headline
 * scenario; across two H100 nodes (EP16) HybridEP
 * sends each token once per remote node: with E = 128, k = 8, D = 2 domains,
 * a token reaches the other node with probability 1 - C(64,8)/C(128,8) = 0.9965,
 * instead of k/2 = 4 copies, so its NIC bytes drop ~4x and the step is faster. */
static void test_dispatchers(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result a, h;
    load("scenarios/gb200_ep32.yaml", &s);
    use_fixture(&s, FIXTURE_GB200);
    s.dispatcher = MB_DISP_ALLTOALL;
    sim(&s, &a);
    s.dispatcher = MB_DISP_HYBRIDEP;
    sim(&s, &h);
    if (!(h.step_time_s < a.step_time_s && h.step_time_s > 0.90 * a.step_time_s))
        fail_msg("HybridEP/alltoall step %.4f inside NVL72", h.step_time_s / a.step_time_s);
    mb_scenario_free(&s);

    load("scenarios/h100_qwen3_30b_a3b_ep8.yaml", &s);
    use_fixture(&s, FIXTURE_H100);
    s.gpus = 16;
    s.pp = 1;
    s.vpp = 1;
    s.ep = 16;
    s.global_batch_size = 256;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), 0);
    s.dispatcher = MB_DISP_ALLTOALL;
    sim(&s, &a);
    s.dispatcher = MB_DISP_HYBRIDEP;
    sim(&s, &h);
    assert_true(h.step_time_s < a.step_time_s);
    assert_true(h.breakdown[MB_CAT_COMM_EP] < 0.5 * a.breakdown[MB_CAT_COMM_EP]);
    mb_scenario_free(&s);
}

/* MoE layer seconds (forward + backward of one microbatch) from a one-layer
 * step's breakdown: experts, router/permute, exposed all-to-all and host
 * waits, plus `shared_s` for the shared experts, which the breakdown counts
 * under dense_other. */
/* Simulate s with the shipped H100 table as fitted (tensor_fraction, membound_eff,
 * kernel_eager), but without the terms the benchmark's protocol does not have:
 *  - host_kernel and step_overhead: the loop times one MoELayer between CUDA events,
 *    with no optimizer step and no iteration around it;
 *  - kernel_moe: fitted on training rows whose routing is real, which validation
 *    simulates as balanced (no row states its imbalance), so it carries the EP-wide
 *    waits for the most-loaded rank per MoE-block kernel; the benchmark forces balanced
 *    routing (moe_router_force_load_balancing=True in its test_cases.py).
 * kernel_eager (the Python/PyTorch/TE work per kernel the same code runs) stays. */
static void moe_layer_sim(const struct mb_scenario *s, struct mb_result *r)
{
    static struct mb_calib *cal; /* loaded once for the whole test */
    struct mb_err e;
    mb_err_clear(&e);
    if (!cal) {
        struct mb_calib_framework fw;
        assert_int_equal(mb_calib_load("H100", NULL, &cal, &e), 0);
        mb_calib_framework_get(cal, &fw);
        fw.v[MB_FW_HOST_KERNEL] = fw.v[MB_FW_STEP_OVERHEAD] = fw.v[MB_FW_KERNEL_MOE] = 0;
        mb_calib_framework_set(cal, &fw);
    }
    struct mb_step_opts o = {.critical_path = 1, .cal = cal};
    if (mb_step_simulate_opts(s, &o, r, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

/* MoE layer seconds of scenario `path`: experts, router/permute, exposed all-to-all and
 * host waits, plus the shared experts, which the breakdown counts under dense_other: the
 * difference to a twin without them (priced alike, so it is the shared experts alone). */
static double moe_layer_s(const char *path, struct mb_result *r)
{
    struct mb_scenario s;
    struct mb_result t;
    load(path, &s);
    moe_layer_sim(&s, r);
    double shared = 0;
    if (s.model.shared_ffn_hidden > 0) {
        s.model.shared_ffn_hidden = 0;
        moe_layer_sim(&s, &t);
        shared = r->breakdown[MB_CAT_DENSE] - t.breakdown[MB_CAT_DENSE];
        assert_true(shared > 0);
        mb_result_free(&t);
    }
    mb_scenario_free(&s);
    return r->breakdown[MB_CAT_EXPERTS] + r->breakdown[MB_CAT_DISPATCH] + r->breakdown[MB_CAT_COMM_EP] +
           r->breakdown[MB_CAT_HOST] + shared;
}

/*
 * The Megatron-Core MoE layer benchmark (moe_perf baseline.json, hardware.md B.1: one MoELayer
 * forward + backward timed with CUDA events, TP1 EP8 on 8 H100, 4096 tokens per rank,
 * force-balanced routing), a kernel-level measurement independent of the published runs; the
 * twelve cases' forward + backward times are in the table below.
 * Mechanisms checked by hand first: DeepEP/HybridEP send a token once per destination rank,
 * alltoall once per routed expert. Mixtral (1 expert per rank, top-2): no saving, EP bytes
 * ratio 1. DeepSeek proxy (4 experts per rank = one router group of 4, top-4 of 8 groups):
 * a rank is hit with probability 1 - C(7,4)/C(8,4) = 0.5, so 7 x 0.5 = 3.5 remote ranks per
 * token against 8 x 7/8 = 7 remote copies: ratio 0.5; without group-limited routing
 * 1 - C(28,8)/C(32,8) = 0.70450 per rank, ratio 7 x 0.70450 / 7 = 0.70450.
 * Then against the measurement: every layer time within 10 % (issue 13), DeepEP and HybridEP
 * faster or slower than alltoall as measured, and three dispatcher ratios within 0.05.
 * The benchmark's experts are GELU, not gated, unfused (its TransformerConfig sets neither
 * gated_linear_unit, activation_func nor bias_activation_fusion; Megatron-LM
 * tests/functional_tests/test_cases/common/moe_perf @d98e8a64dd), and it leaves
 * moe_permute_fusion_into_hybridep off: the scenarios say so. They name no calibration table on
 * purpose: this test validates the SHIPPED H100 table (moe_layer_sim says which of its terms the
 * benchmark has; docs/calibration.md, Framework-time model).
 */
static void test_moe_layer_benchmark(void **state)
{
    (void)state;
    /* forward + backward ms, megatron_moe_layer_baseline_h100.csv (baseline.json) */
    static const struct {
        const char *name;
        double ms;
    } c[] = {
        {"mixtral_alltoall", 4.327 + 7.684},      {"mixtral_deepep", 4.636 + 7.854},
        {"mixtral_hybridep", 4.343 + 7.741},      {"mixtral_alltoall_fp8", 3.788 + 6.618},
        {"mixtral_deepep_fp8", 4.101 + 6.827},    {"mixtral_hybridep_fp8", 3.701 + 6.572},
        {"deepseek_alltoall", 7.119 + 10.483},    {"deepseek_deepep", 5.682 + 9.055},
        {"deepseek_hybridep", 5.391 + 8.795},     {"deepseek_alltoall_fp8", 7.609 + 10.126},
        {"deepseek_deepep_fp8", 6.035 + 8.602},   {"deepseek_hybridep_fp8", 5.143 + 7.687},
    };
    enum { N = sizeof c / sizeof c[0] };
    double pred[N], ep[N];
    char p[256];
    struct mb_result r;
    int off = 0; /* every case is printed before the test fails */
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "tests/data/step/moe_perf/%s.yaml", c[i].name);
        pred[i] = moe_layer_s(p, &r) * 1e3;
        ep[i] = r.breakdown[MB_CAT_COMM_EP];
        mb_result_free(&r);
        int bad = fabs(pred[i] / c[i].ms - 1) > 0.10;
        off += bad;
        print_message("%-22s predicted %.2f ms, measured %.2f (%+.1f %%)%s\n", c[i].name, pred[i], c[i].ms,
                      100 * (pred[i] / c[i].ms - 1), bad ? "  OUTSIDE 10 %" : "");
    }
    if (off)
        fail_msg("%d of %d MoE layer cases outside 10 %%", off, N);
    /* EP time by hand (comment above): DeepSeek HybridEP / alltoall 0.5, Mixtral 1 */
    if (fabs(ep[8] / ep[6] - 0.5) > 0.01)
        fail_msg("DeepSeek proxy EP time HybridEP/alltoall %.4f, expected 0.5", ep[8] / ep[6]);
    if (fabs(ep[2] / ep[0] - 1.0) > 0.01)
        fail_msg("Mixtral proxy EP time HybridEP/alltoall %.4f, expected 1", ep[2] / ep[0]);
    {
        struct mb_scenario s;
        load("tests/data/step/moe_perf/deepseek_hybridep_nogroups.yaml", &s);
        moe_layer_sim(&s, &r);
        mb_scenario_free(&s);
        double q = r.breakdown[MB_CAT_COMM_EP] / ep[6];
        mb_result_free(&r);
        if (fabs(q - 0.70450) > 0.01)
            fail_msg("DeepSeek proxy EP time without router groups %.4f, expected 0.7045", q);
    }
    /* DeepEP and HybridEP over alltoall, per model and precision: faster or slower as
     * measured wherever the measurement differs by more than the benchmark's own 2 % spread
     * (DEFAULT_MAX_VARIANCE_RATIO), and the three BF16/FP8 ratios checked before within 0.05 */
    for (int i = 0; i < N; i += 3)
        for (int k = 1; k <= 2; k++) {
            double pr = pred[i + k] / pred[i], me = c[i + k].ms / c[i].ms;
            if (fabs(me - 1) > 0.02 && (pr - 1) * (me - 1) <= 0)
                fail_msg("%s / %s: predicted %.3f, measured %.3f", c[i + k].name, c[i].name, pr, me);
        }
    static const int pair[][2] = {{8, 6}, {7, 6}, {5, 3}};
    for (size_t i = 0; i < sizeof pair / sizeof pair[0]; i++) {
        double pr = pred[pair[i][0]] / pred[pair[i][1]], me = c[pair[i][0]].ms / c[pair[i][1]].ms;
        if (fabs(pr - me) > 0.05)
            fail_msg("%s / %s: predicted %.3f, measured %.3f", c[pair[i][0]].name, c[pair[i][1]].name, pr, me);
    }
}

/* The eager activation's time, from its bytes by hand (moe.c mb__eager_act; roofline, so every
 * memory-bound pass runs at the fixture table's 4 TB/s and no framework time is added), n elements of
 * the f-wide output:
 *  - fused: (up + 1) x 2 B forward, twice that backward: GELU 4n / 8n, gated 6n / 12n;
 *  - eager GELU: gelu 2+2, x probs (fp32 out) 2+4, .to(bf16) 4+2 = 16n; backward: the cast's
 *    gradient up 2+4, x probs 4+4 and back to bf16 4+2, x act for the probs gradient 4+2+4, its
 *    sum 4, gelu backward 2+2+2 = 40n;
 *  - eager gated: silu 2+2, + offset 2+2, product 2+2+2, then the probs part = 26n; backward
 *    28n of the probs part, the product's gradients 2 x 6, silu backward 6, the chunk's cat 4+4 = 60n. */
static void eager_act_time(double n)
{
    static const struct {
        enum mb_act act;
        int fused;
        double fwd, bwd;
    } c[] = {{MB_ACT_GELU, 1, 4, 8}, {MB_ACT_GELU, 0, 16, 40}, {MB_ACT_SWIGLU, 1, 6, 12}, {MB_ACT_SWIGLU, 0, 26, 60}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct mb_scenario s;
        struct mb_result r;
        load("tests/data/step/moe_perf/deepseek_alltoall.yaml", &s);
        s.model.act = c[i].act;
        s.bias_act_fusion = c[i].fused;
        s.roofline = 1;
        sim_fw(&s, FIXTURE_H100, NULL, 1, &r);
        double f = op_time_s(&r, "expert_act", 0), b = op_time_s(&r, "expert_act", 1);
        if (fabs(f / (c[i].fwd * n / 4e12) - 1) > 1e-6 || fabs(b / (c[i].bwd * n / 4e12) - 1) > 1e-6)
            fail_msg("case %zu: expert_act %.1f / %.1f us, expected %.1f / %.1f", i, f * 1e6, b * 1e6,
                     c[i].fwd * n / 4e12 * 1e6, c[i].bwd * n / 4e12 * 1e6);
        mb_result_free(&r);
        mb_scenario_free(&s);
    }
}

/*
 * The experts' eager activation (training.bias_activation_fusion false; experts.py bias_act_func)
 * and the FP8 forward working sets, DeepSeek proxy (32,768 routed tokens on the rank, expert
 * f = 2048, h = 7168, shared experts 4,096 tokens; n = 32,768 x 2048 = 67,108,864 elements):
 *  - GELU: autograd also keeps the activation output, n x 2 B = 134,217,728 B more saved; the fp32
 *    probs product's backward holds 3 x n x 4 B = 805,306,368 B, more than 1.5 x the 469,762,048 B
 *    expert input, so it is the backward working set; gated (SwiGLU): 3 n x 2 B = 402,653,184 B.
 *  - FP8 blockwise, DeepEP: received 16,384 + the bf16 expert input 32,768 (TE saves only its FP8
 *    copy) + at the experts' end Fp8Padding's padded input, padded and unpadded output 3 x 32,768
 *    + shared 4,096 = 151,552 tokens x 14,336 B = 2,172,649,472 B; HybridEP (pads in its dispatch):
 *    the bf16 input 32,768 + expert and combine output 32,768 + 4,096 + shared 4,096 = 73,728
 *    tokens = 1,056,964,608 B.
 */
static void test_moe_eager_act_and_fp8(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result f, u;
    load("tests/data/step/moe_perf/deepseek_alltoall.yaml", &s);
    s.model.act = MB_ACT_GELU;
    s.bias_act_fusion = 1;
    sim(&s, &f);
    s.bias_act_fusion = 0;
    sim(&s, &u);
    const double n = 32768.0 * 2048;
    if (fabs(u.mem.per_stage[0].activations - f.mem.per_stage[0].activations - 2 * n) > 1)
        fail_msg("eager GELU saves %.0f B more, expected %.0f",
                 u.mem.per_stage[0].activations - f.mem.per_stage[0].activations, 2 * n);
    assert_true(fabs(u.mem.per_stage[0].bwd_ws - 12 * n) < 1);
    assert_true(fabs(f.mem.per_stage[0].bwd_ws - 1.5 * 469762048.0) < 1);
    s.model.act = MB_ACT_SWIGLU;
    s.bias_act_fusion = 1;
    sim(&s, &f);
    s.bias_act_fusion = 0;
    sim(&s, &u);
    assert_true(fabs(u.mem.per_stage[0].activations - f.mem.per_stage[0].activations - 6 * n) < 1);
    mb_scenario_free(&s);
    eager_act_time(n);
    load("tests/data/step/moe_perf/deepseek_deepep_fp8.yaml", &s);
    sim(&s, &f);
    if (fabs(f.mem.per_stage[0].fwd_ws - 2172649472.0) > 1)
        fail_msg("DeepEP FP8 forward working set %.0f B, expected 2172649472", f.mem.per_stage[0].fwd_ws);
    mb_scenario_free(&s);
    load("tests/data/step/moe_perf/deepseek_hybridep_fp8.yaml", &s);
    sim(&s, &f);
    if (fabs(f.mem.per_stage[0].fwd_ws - 1056964608.0) > 1)
        fail_msg("HybridEP FP8 forward working set %.0f B, expected 1056964608", f.mem.per_stage[0].fwd_ws);
    mb_scenario_free(&s);
}

/* One case of the MoE layer benchmark's memory (test_moe_layer_memory): mbsim's terms of the
 * one-layer step minus those of its twin with a dense FFN of width 8 and no experts. */
static double moe_layer_mem(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "tests/data/step/moe_perf/%s.yaml", name);
    struct mb_scenario s;
    struct mb_result r, t;
    load(p, &s);
    /* the scenarios carry the benchmark's GELU, unfused experts (docs/modeling.md) */
    assert_true(s.model.act == MB_ACT_GELU && !s.bias_act_fusion);
    sim(&s, &r);
    s.model.layer[0].ffn = MB_FFN_DENSE;
    s.model.num_experts = 0;
    s.model.shared_ffn_hidden = 0;
    s.model.ffn_hidden = 8;
    s.ep = 1;
    check_sim(&s, &t);
    const struct mb_memory_stage *a = &r.mem.per_stage[0], *b = &t.mem.per_stage[0];
    /* the layer's bf16 parameters on the rank: under FP8 mbsim's training step holds TE's cached
     * FP8 copy (data and transpose, 2 B on Hopper) beside each bf16 weight, so they are half of its
     * weights (the 0.2 M-parameter bf16 router then counts 0.2 MB short) */
    double P = (a->weights - b->weights) / (s.prec.quantize ? 2 : 1);
    double act = a->activations - b->activations;
    double T = (double)s.seq_length * s.micro_batch_size, h = s.model.hidden;
    /* the loop keeps the layer input, the previous iteration's output and output gradient (or
     * this one's in backward): 3 [T, h] bf16 */
    double io = 3 * T * h * 2;
    /* FP8: the loop calls the layer without TE's weight cache (no is_first_microbatch), so each
     * forward quantizes the weights and keeps their columnwise FP8 copy for the dgrad
     * (w.update_usage(rowwise_usage=False, columnwise_usage=True) in TE's grouped linear): 1 B per
     * parameter of the quantized GEMMs, P / 2 (the bf16 router, 0.2 M parameters, included).
     * mbsim's training step counts TE's cached copy instead (see docs/modeling.md). */
    double fp8w = s.prec.quantize ? P / 2 : 0;
    /* no optimizer, no DDP buffers: bf16 param.grad exists only in the backward */
    double peak = P + io + a->workspace + fp8w + act + fmax(a->fwd_ws, P + a->bwd_ws);
    mb_result_free(&r);
    mb_result_free(&t);
    mb_scenario_free(&s);
    return peak / (1024.0 * 1024 * 1024);
}

/*
 * The MoE layer benchmark's peak allocated memory (megatron_moe_layer_baseline_h100.csv
 * max_allocated_GiB: torch.cuda.max_memory_allocated around one MoELayer forward + backward,
 * NVIDIA/Megatron-LM@cf39a4dd tests/functional_tests/test_cases/common/moe_perf/__main__.py; the
 * peak stats are reset after the layer's gradients are dropped, so it holds the bf16 parameters,
 * the loop's input/output tensors, the GEMM workspaces and what the layer allocates). Layer =
 * parameters + the loop's tensors + workspaces + saved activations + the larger of the forward
 * working set (dispatcher tensors) and the backward one plus the parameters' gradients. Every case
 * within 10 % of the measurement.
 */
static void test_moe_layer_memory(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double gib;
    } c[] = {{"deepseek_alltoall", 3.206},    {"deepseek_alltoall_fp8", 4.110}, {"deepseek_deepep", 2.277},
             {"deepseek_deepep_fp8", 3.453},  {"deepseek_hybridep", 2.258},     {"deepseek_hybridep_fp8", 2.470},
             {"mixtral_alltoall", 2.692},     {"mixtral_alltoall_fp8", 2.883},  {"mixtral_deepep", 2.692},
             {"mixtral_deepep_fp8", 2.883},   {"mixtral_hybridep", 2.691},      {"mixtral_hybridep_fp8", 2.883}};
    int bad = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        double g = moe_layer_mem(c[i].name), err = (g / c[i].gib - 1) * 100;
        print_message("%-24s predicted %.3f GiB, measured %.3f (%+.1f %%)\n", c[i].name, g, c[i].gib, err);
        bad += fabs(err) > 10;
    }
    assert_int_equal(bad, 0);
}

/* EP overlap is not free: the dispatcher keeps moe.dispatcher_sms of the SMs
 * while its transfer runs, and the compute beside it loses that share. Inside
 * one H100 node (NVLink-only dispatch, a small share of the step) with 24 of
 * the fixture's 128 SMs the overlap still gains; with a dispatcher holding all SMs the
 * overlapped compute stalls for the whole transfer (stall = max(sm_frac, overlap_slowdown)
 * x transfer, emit.c, with sm_frac 1), so nothing is saved: the step is within the 1 % the
 * paired schedule's different order may move it of the step without overlap, where
 * charging no stall would save the 12 % the 24-SM overlap saves. Memory: one more layer
 * in flight (test_ep_overlap). */
static void test_ep_overlap_costs(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result off, on;
    load("tests/data/step/qwen3_30b_h100_8_overlap.yaml", &s);
    sim(&s, &off);
    s.overlap_ep_comm = 1;
    sim(&s, &on);
    assert_true(on.step_time_s < off.step_time_s);
    struct mb_calib *cal = NULL;
    struct mb_err ce;
    mb_err_clear(&ce);
    assert_int_equal(mb_calib_load("H100", s.calib_path, &cal, &ce), 0);
    s.dispatcher_sms = mb_calib_spec(cal)->sms; /* every SM of the fixture GPU (128) */
    mb_calib_free(cal);
    sim(&s, &on);
    if (!(on.step_time_s > 0.99 * off.step_time_s))
        fail_msg("overlap with all SMs taken: %.4f s vs %.4f s without", on.step_time_s, off.step_time_s);
    mb_scenario_free(&s);
}

/* EP overlap with pp > 1 runs inside the interleaved schedule (Megatron-Core's
 * combined 1F1B needs a virtual pipeline). Qwen3-30B-A3B (48 layers) on 16 H100,
 * TP1 PP2 VPP2 EP8: 12 layers per chunk. Interleaved 1F1B warms up
 * (p - 1 - st) * 2 + (v - 1) * p chunk forwards (Megatron's
 * get_num_warmup_microbatches), so stage 0 holds 2 + 2 + 1 = 5 chunks at its
 * peak. Overlap pairs a forward with a backward layer by layer (Megatron-Core's
 * model_chunk_schedule_plan.py runs forward layer i beside backward layer L-1-i and
 * releases each backward layer), so the pair holds one chunk plus one layer: the
 * stage-0 activation peak grows by 1/(5 x 12) = 1/60, not by a sixth chunk (the
 * embedding's share makes chunk 0 slightly larger, hence the 0.2 % tolerance), and
 * the exposed all-to-all shrinks. pp 2 with vpp 1 is rejected, as Megatron rejects it. */
static void test_ep_overlap_interleaved(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result off, on;
    struct mb_err e;
    load("tests/data/step/qwen3_30b_h100_16_ep.yaml", &s);
    s.pp = 2;
    s.vpp = 2;
    s.ep = 8;
    check_sim(&s, &off);
    s.overlap_ep_comm = 1;
    check_sim(&s, &on);
    double ratio = on.mem.per_stage[0].activations / off.mem.per_stage[0].activations;
    if (fabs(ratio - 61.0 / 60.0) > 0.002)
        fail_msg("stage-0 activation peak ratio %.4f, expected 61/60", ratio);
    assert_true(on.breakdown[MB_CAT_COMM_EP] < 0.5 * off.breakdown[MB_CAT_COMM_EP]);
    assert_true(on.step_time_s < off.step_time_s);
    s.vpp = 1;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), -1);
    char buf[512];
    mb_err_format(&e, buf, sizeof buf);
    assert_non_null(strstr(buf, "needs an interleaved schedule"));
    mb_scenario_free(&s);
}

/* EP all-to-all overlap A/B (issue 6 acceptance): Qwen3-30B-A3B on 16 H100,
 * measured 244.0 -> 287.3 model TFLOP/s/GPU (+17.7%, public_measured.csv rows
 * mbskill_qwen3_30b_a3b_h100_16_baseline/_epoverlap); the prediction must come
 * from the modeled mechanism (dispatch/combine beside the other microbatch's
 * compute, minus the SMs the dispatcher takes) and land within +9%..+27%. */
static void test_ep_overlap(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result off, on;
    load("tests/data/step/qwen3_30b_h100_16_ep.yaml", &s);
    s.calib_path[0] = '\0'; /* the shipped H100 table: this checks it against the measured A/B */
    sim(&s, &off);
    s.overlap_ep_comm = 1;
    sim(&s, &on);
    double gain = off.step_time_s / on.step_time_s - 1;
    if (gain < 0.09 || gain > 0.27)
        fail_msg("EP overlap gain %.1f%% outside +9..+27%%", 100 * gain);
    /* the exposed all-to-all shrinks; the SM share shows up as dispatch compute */
    assert_true(on.breakdown[MB_CAT_COMM_EP] < 0.2 * off.breakdown[MB_CAT_COMM_EP]);
    assert_true(on.breakdown[MB_CAT_DISPATCH] > off.breakdown[MB_CAT_DISPATCH]);
    /* it costs memory: one more layer's activations (pp 1: one microbatch of 48 identical layers
     * in flight, the paired forward adds its layers as the backward releases its own) */
    double ratio = on.mem.activations / off.mem.activations;
    if (fabs(ratio - 49.0 / 48.0) > 0.002)
        fail_msg("activation peak ratio %.4f, expected 49/48", ratio);
    mb_scenario_free(&s);
}

/* The same A/B with the shipped H100 table and 17 us of host time per eager kernel
 * (host_kernel, the value H100's fit found before 2026-12-08): each op waits for its
 * first kernel's launch only, so the host stays ahead of the paired schedule and the
 * gain stays in the measured A/B's band (+17.7 % measured). Gating each op on all its
 * kernels' launches put it at +6.6 % with this table (+8.9 % with 2026-12-02's). */
static void test_ep_overlap_host(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result off, on;
    load("tests/data/step/qwen3_30b_h100_16_ep.yaml", &s);
    struct mb_calib *cal = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", NULL, &cal, &e), 0); /* the shipped table's values */
    struct mb_calib_framework f;
    mb_calib_framework_get(cal, &f);
    mb_calib_free(cal);
    f.v[MB_FW_HOST_KERNEL] = 17e-6;
    sim_fw(&s, NULL, f.v, 0, &off);
    s.overlap_ep_comm = 1;
    sim_fw(&s, NULL, f.v, 0, &on);
    double gain = off.step_time_s / on.step_time_s - 1;
    if (gain < 0.09 || gain > 0.27)
        fail_msg("EP overlap gain %.1f%% with host_kernel 17 us, outside +9..+27%%", 100 * gain);
    mb_scenario_free(&s);
}

/* Recomputing moe_act splits the experts' grouped MLP into fc1, activation and fc2
 * (the activation's output is dropped and rebuilt in backward): the forward runs the
 * same kernels and the backward runs more, so the step cannot get shorter, whatever the
 * host time per kernel. Moonlight-16B, GBS 4 on 8 H100, one microbatch per rank
 * (tests/data/step/moonlight_h100_8_gbs4.yaml, fixture table, kernel_eager 15 us). With
 * each op gated on all its kernels' launches, the merged MLP's 17 launches ran before its
 * first GEMM (after the dispatch's device-to-host sync) and the split one hid them:
 * host_kernel 20 us made the step 2.8 % shorter with moe_act recomputed (0.1903 -> 0.1850 s). */
static void test_split_op_host(void **state)
{
    (void)state;
    static const double hk[] = {0, 20e-6, 50e-6};
    for (size_t i = 0; i < sizeof hk / sizeof hk[0]; i++) {
        struct mb_scenario s;
        struct mb_result none, act;
        load("tests/data/step/moonlight_h100_8_gbs4.yaml", &s);
        double fw[MB_FW_COUNT] = {1, 0.5, 15e-6, 0, 0, 0, hk[i], 0};
        sim_fw(&s, FIXTURE_H100, fw, 0, &none);
        s.recompute = MB_RC_SELECTIVE;
        s.recompute_modules = MB_RCM_MOE_ACT;
        sim_fw(&s, FIXTURE_H100, fw, 0, &act);
        if (!(act.step_time_s >= none.step_time_s))
            fail_msg("host_kernel %.0f us: moe_act recompute %.6f s < none %.6f s", hk[i] * 1e6, act.step_time_s,
                     none.step_time_s);
        mb_scenario_free(&s);
    }
}

/* Measured NCCL all-to-all times in the scenario's calibration set the EP
 * transfers (tests/data/step/qwen3_30b_h100_8_a2a_measured.yaml, fixture
 * h100_a2a_measured.yaml): one microbatch, no overlap, so every all-to-all is
 * exposed. Each moves the rank's 4096 tokens x top-8 x 2048 x 2 B = 128 MiB
 * send buffer (nccl-tests size), which the fixture's line 1000 us + (128 - 64)
 * MiB x 2000 us / 192 MiB puts at 1666.67 us; 48 MoE layers x 4 all-to-alls
 * (dispatch and combine, forward and backward) = 192 of them: 0.3200 s of
 * exposed EP communication. The link model alone gives ~0.05 s. */
static void test_measured_collective(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    load("tests/data/step/qwen3_30b_h100_8_a2a_measured.yaml", &s);
    sim(&s, &r);
    double want = 192 * (1000e-6 + 64.0 * 2000e-6 / 192.0);
    assert_true(fabs(r.breakdown[MB_CAT_COMM_EP] / want - 1) < 0.005);
    mb_scenario_free(&s);
}

/* MoE options on Moonlight-16B-A3B, 16 H100, EP16 over two nodes
 * (tests/data/step/moonlight_ep16.yaml):
 * - shared-expert overlap runs the shared experts while the dispatch is in
 *   flight: less exposed EP time, a shorter step, the same compute;
 * - a capacity factor caps the most loaded expert at cf x its balanced share:
 *   under skewed routing the step falls between balanced and uncapped skewed. */
static void test_moe_options(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result plain, ovl, bal, skew, cap;
    load("tests/data/step/moonlight_ep16.yaml", &s);
    sim(&s, &plain);
    s.shared_expert_overlap = 1;
    sim(&s, &ovl);
    assert_true(ovl.breakdown[MB_CAT_COMM_EP] < plain.breakdown[MB_CAT_COMM_EP]);
    assert_true(ovl.step_time_s < plain.step_time_s);
    assert_true(fabs(ovl.breakdown[MB_CAT_DENSE] / plain.breakdown[MB_CAT_DENSE] - 1) < 1e-9);
    s.shared_expert_overlap = 0;
    bal = plain;
    s.routing = MB_ROUTE_SKEWED;
    s.routing_skew = 1.2;
    sim(&s, &skew);
    s.capacity_factor = 1.25;
    sim(&s, &cap);
    assert_true(cap.step_time_s > bal.step_time_s && cap.step_time_s < skew.step_time_s);
    mb_scenario_free(&s);
}

/*
 * Dispatcher buffers outside PyTorch (DeepSeek proxy of the MoE layer benchmark: h 7168, 32
 * experts, EP8 in one node, T = 4096 tokens per rank):
 *  - DeepEP (Megatron fused_a2a.get_buffer, DeepEP Config::get_nvl_buffer_size_hint): 8 ranks use
 *    dispatch Config(sms, 6, 256, 6, 128) and combine Config(sms, 4, 256, 6, 128); with the default
 *    24 SMs, 12 channels: 12 x 8 x (2 + 3) x 4 B + 12 x 8 x 256 x (14,336 hidden + 8 meta + 128 x 8
 *    topk idx + 128 x 4 weights + 128 x 4 scales) B = 402,851,712 B, no RDMA buffer inside a node;
 *  - HybridEP (allocate_buffer): Tmax = 4096 x 8 = 32,768 tokens; combine 32,768 x (7168 x 2 +
 *    32 x 4) B = 473,956,352, dispatch (bf16) 32,768 x (7168 x 2 + 32 x 4 + 56 x 4) B =
 *    481,296,384: 955,252,736 B.
 * Both are added to the device memory beyond the NCCL communicators that all-to-all has too.
 */
static void test_dispatcher_buffers(void **state)
{
    (void)state;
    struct mb_result a, d, h;
    struct mb_scenario s;
    load("tests/data/step/moe_perf/deepseek_alltoall.yaml", &s);
    s.bias_act_fusion = 1; /* the fused activation's working set below */
    sim(&s, &a);
    s.dispatcher = MB_DISP_DEEPEP;
    sim(&s, &d);
    s.dispatcher = MB_DISP_HYBRIDEP;
    sim(&s, &h);
    if (fabs(d.mem.comm_buffers - a.mem.comm_buffers - 402851712.0) > 1)
        fail_msg("DeepEP buffer %.0f B, expected 402851712", d.mem.comm_buffers - a.mem.comm_buffers);
    /* HybridEP, one NVLink domain (8 ranks), T = 4,096, h = 7,168, 4 local experts: Tmax = 4,096 x 8 =
     * 32,768 tokens; bf16 tokens 32,768 x 7,168 x 2 = 469,762,048 (224 MiB) + fp32 probs over the domain's
     * 32 experts 32,768 x 32 x 4 = 4,194,304 (the dispatch output shares both) + fp32 scales 32,768 x 56 x 4
     * = 7 MiB, mapped as 8 MiB (2 MiB granules) + two chunk-flag arrays of 32 chunks x 8 ranks x 4 B, a
     * 2 MiB granule each: 486,539,264 B */
    if (fabs(h.mem.comm_buffers - a.mem.comm_buffers - 486539264.0) > 1)
        fail_msg("HybridEP buffers %.0f B, expected 486539264", h.mem.comm_buffers - a.mem.comm_buffers);
    /* PyTorch-side token tensors at the end of the MoE forward (MoELayer.forward's locals and the
     * combine chain), [tokens, 7168] bf16 = 14,336 B per token, T k = 32,768 routed copies, 4 local
     * experts, the shared experts' output T = 4,096 tokens:
     *  - alltoall: permuted 32,768 + dispatched 32,768 + expert output and unsorted 2 x 32,768 +
     *    shared 4,096 = 135,168 tokens = 1,937,768,448 B;
     *  - DeepEP: received tokens 4,096 x 8 ranks x P(rank hit) 0.5 = 16,384, twice (received and
     *    unpermuted), + expert output 32,768 + shared 4,096 = 69,632 tokens = 998,244,352 B;
     *  - HybridEP: expert output 32,768 + combine output 4,096 + shared 4,096 = 40,960 tokens =
     *    587,202,560 B, less than the backward's gradient working set (1.5 x the 469,762,048 B
     *    expert input the grouped fc1 saves = 704,643,072 B), so its peak is in a backward and
     *    the forward set is not counted there. */
    if (fabs(a.mem.dispatch - 1937768448.0) > 1 || fabs(d.mem.dispatch - 998244352.0) > 1)
        fail_msg("dispatch working sets %.0f / %.0f B, expected 1937768448 / 998244352", a.mem.dispatch,
                 d.mem.dispatch);
    assert_true(a.mem.bwd_grads == 0 && d.mem.bwd_grads == 0);
    assert_true(h.mem.dispatch == 0 && fabs(h.mem.bwd_grads - 704643072.0) < 1);
    assert_true(d.step_time_s > 0);
    /* drop-and-pad: the routed tensors are padded to capacity (cf 2: twice the balanced load), the
     * shared experts' output is not: (2 x 131,072 + 4,096) x 14,336 B */
    s.dispatcher = MB_DISP_ALLTOALL;
    s.capacity_factor = 2;
    struct mb_result p1;
    s.pad_to_capacity = 1;
    sim(&s, &p1);
    if (fabs(p1.mem.dispatch - (2 * 131072.0 + 4096) * 14336) > 1)
        fail_msg("padded dispatch working set %.0f B, expected %.0f", p1.mem.dispatch, (2 * 131072.0 + 4096) * 14336);
    mb_scenario_free(&s);
}

/*
 * HybridEP across NVLink domains (memory_ep.c; deepseek-ai/DeepEP@94a9f8f6 hybrid-ep
 * csrc/hybrid_ep/buffer/intranode.cu and internode_doca.cu): hybridep_ep16.yaml, EP16 on two 8-GPU
 * H100 nodes, T = 4,096 tokens per rank, h = 7,168 (56 scale blocks of 128), 2 local experts, 16
 * experts per domain, 32 in the group. By hand:
 *  - NVLink side, Tmax = 4,096 x 16 = 65,536: tokens 65,536 x 7,168 x 2 = 939,524,096, probs
 *    65,536 x 16 x 4 = 4,194,304, scales 65,536 x 56 x 4 = 14,680,064 (all whole 2 MiB granules of the
 *    remote allocator), two flag arrays of 32 x 16 x 4 B, a 2 MiB granule each: 962,592,768 B;
 *  - RDMA side (1 remote domain): own tokens 4,096 x (14,336 + 32 x 4 + 224) = 60,162,048, relay
 *    4,096 x (14,336 + 16 x 4 + 224) = 59,899,904, combine 2 x 4,096 x (14,336 + 64) = 117,964,800,
 *    flags 2 x 2 x (32 + 2) x 8 = 1,088: 238,027,840 B;
 * 1,200,620,608 B in all, against the alltoall twin's comm buffers (same communicators). At EP8 on
 * one domain the same layer holds 486,539,264 B (test_dispatcher_buffers): the buffers grow with EP.
 */
static void test_hybridep_domains(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result h, a;
    load("tests/data/step/hybridep_ep16.yaml", &s);
    sim(&s, &h);
    s.dispatcher = MB_DISP_ALLTOALL;
    sim(&s, &a);
    double got = h.mem.comm_buffers - a.mem.comm_buffers;
    if (fabs(got - 1200620608.0) > 1)
        fail_msg("HybridEP EP16 buffers %.0f B, expected 1200620608", got);
    mb_result_free(&h);
    mb_result_free(&a);
    mb_scenario_free(&s);
}

/*
 * --moe-router-fusion and --moe-permute-fusion (moe.router_fusion, moe.permute_fusion; moe.c), on the
 * DeepSeek proxy layer (alltoall, EP8, one microbatch of 4,096 tokens per rank, top-8, h = 7168):
 *  - router fusion: TE's three fused kernels and their backwards instead of ~12 forward and ~8 backward
 *    PyTorch kernels, over the same bytes, so with kernel_eager 10 us and kernel_moe 5 us per eager
 *    MoE-block kernel the router is 9 x 15 = 135 us shorter forward and 5 x 15 = 75 us backward;
 *  - permute fusion off (roofline: bytes at the fixture's 4 TB/s, no framework time): index_select
 *    reads a token row per copy it writes, 2 x 32,768 copies x 7168 x 2 B, against the fused kernel's
 *    tokens read once and copies written once, (4,096 + 32,768) x 7168 x 2 B; the unpermute adds the
 *    zeroed output, 4,096 x 7168 x 2 B.
 */
static void test_moe_fusions(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result on, off;
    struct mb_calib *cal = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", FIXTURE_H100, &cal, &e), 0);
    struct mb_calib_framework f;
    mb_calib_framework_get(cal, &f);
    mb_calib_free(cal);
    f.v[MB_FW_KERNEL_EAGER] = 10e-6;
    f.v[MB_FW_KERNEL_MOE] = 5e-6;
    f.v[MB_FW_OVERLAP_SLOWDOWN] = 0;
    f.v[MB_FW_HOST_KERNEL] = 0;
    load("tests/data/step/moe_perf/deepseek_alltoall.yaml", &s);
    assert_int_equal(s.router_fusion, 0); /* Megatron-LM's default */
    assert_int_equal(s.permute_fusion, 1); /* mbsim's default: the published recipes' */
    sim_fw(&s, FIXTURE_H100, f.v, 1, &off);
    s.router_fusion = 1;
    sim_fw(&s, FIXTURE_H100, f.v, 1, &on);
    /* one layer, one microbatch, every op on the one stage's compute stream in turn: the step is
     * shorter by the kernels' framework time, 135 + 75 = 210 us */
    double d = off.step_time_s - on.step_time_s;
    print_message("router fusion saves %.2f us of the step\n", d * 1e6);
    assert_true(fabs(d - 210e-6) < 1e-9);
    mb_result_free(&on);
    mb_result_free(&off);

    s.router_fusion = 0;
    s.roofline = 1;
    sim_fw(&s, FIXTURE_H100, NULL, 1, &on);
    s.permute_fusion = 0;
    sim_fw(&s, FIXTURE_H100, NULL, 1, &off);
    const double row = 7168 * 2.0, T = 4096, copies = 4096 * 8;
    double fused = (T + copies) * row / 4e12, unfused = 2 * copies * row / 4e12;
    print_message("permute %.2f / %.2f us (fused / unfused), expected %.2f / %.2f\n",
                  op_time_s(&on, "permute", 0) * 1e6, op_time_s(&off, "permute", 0) * 1e6, fused * 1e6, unfused * 1e6);
    assert_true(fabs(op_time_s(&on, "permute", 0) / fused - 1) < 1e-6);
    assert_true(fabs(op_time_s(&off, "permute", 0) / unfused - 1) < 1e-6);
    assert_true(fabs(op_time_s(&off, "unpermute", 0) / (unfused + T * row / 4e12) - 1) < 1e-6);
    assert_true(off.step_time_s > on.step_time_s);
    mb_result_free(&on);
    mb_result_free(&off);
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatchers),
        cmocka_unit_test(test_oversubscribed_a2a),
        cmocka_unit_test(test_ep_overlap),
        cmocka_unit_test(test_ep_overlap_host),
        cmocka_unit_test(test_split_op_host),
        cmocka_unit_test(test_ep_overlap_interleaved),
        cmocka_unit_test(test_ep_overlap_costs),
        cmocka_unit_test(test_moe_layer_benchmark),
        cmocka_unit_test(test_measured_collective),
        cmocka_unit_test(test_moe_options),
        cmocka_unit_test(test_dispatcher_buffers),
        cmocka_unit_test(test_hybridep_domains),
        cmocka_unit_test(test_moe_layer_memory),
        cmocka_unit_test(test_moe_eager_act_and_fp8),
        cmocka_unit_test(test_moe_fusions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
