/*
 * test_net.c -- one network model: a collective of a given size on a given
 * group costs the same inside a training step (workloads/step/net.c, one
 * representative rank's ports) as in `mbsim collective` (sim/engine/mb_coll.c's
 * mb_coll_add on the whole fabric of topology/mb_fabric.c). Each case runs
 * a step whose named collective runs alone (nothing else on the links while
 * it runs), reads its time from the step's op table, and simulates the same
 * call alone on the fabric with the same calibration table's links (the test
 * fixture tests/data/calib/fixture_H100.yaml). Both must agree to 1e-9.
 * Independent check of the common value: the fixture's closed form
 * (latency steps x per-step latency + the busiest port's bytes / rate).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_fabric.h"
#include "mb_step.h"

#define FIXTURE "tests/data/calib/fixture_H100.yaml"

/* Time of one `op` call of `bytes` (nccl-tests size) with algorithm `algo` on
 * the first n GPUs of `gpus` x system `sysname`, alone on the fabric, as
 * `mbsim collective` runs it. */
static double coll_alone_on(const char *sysname, enum mb_coll_algo algo, int gpus, enum mb_coll_op op, int n,
                            double bytes, enum mb_coll_algo *used)
{
    struct mb_calib *c;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", FIXTURE, &c, &e), 0);
    struct mb_fabric_params p = {mb_calib_link_eff(c, MB_LINK_NVLINK), mb_calib_link_eff(c, MB_LINK_NIC),
                                 mb_calib_link_eff(c, MB_LINK_NVLS),   mb_calib_link_latency(c, MB_LINK_NVLINK),
                                 mb_calib_link_latency(c, MB_LINK_NIC), mb_calib_link_latency(c, MB_LINK_NVLS), 0};
    mb_calib_free(c);
    struct mb_system sys;
    assert_int_equal(mb_topo_load_system(sysname, &sys, &e), 0);
    struct mb_engine *eng = mb_engine_new();
    struct mb_fabric *f = mb_fabric_build(eng, &sys, gpus, &p, &e);
    assert_non_null(f);
    struct mb_coll_req r = {op, algo, n, NULL, 0, bytes, 0, 0, 0};
    int st = mb_engine_add_stream(eng);
    assert_true(mb_coll_add(eng, mb_fabric_net(f), &r, st, used, &e) >= 0);
    assert_int_equal(mb_engine_run(eng, &e), 0);
    double t = mb_engine_makespan(eng);
    mb_fabric_free(f);
    mb_engine_free(eng);
    return t;
}

static double coll_alone(int gpus, enum mb_coll_op op, int n, double bytes, enum mb_coll_algo *used)
{
    return coll_alone_on("dgx_h100", MB_COLL_ALGO_AUTO, gpus, op, n, bytes, used);
}

/* Seconds per call of op `name` in direction `dir` in the step of `file`;
 * *count gets its calls per step. */
static double step_call(const char *file, const char *name, int dir, double *count, struct mb_scenario *s)
{
    struct mb_err e;
    struct mb_result r;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_load(file, s, &e), 0);
    struct mb_step_opts o = {.critical_path = 0, .ops = 1};
    assert_int_equal(mb_step_simulate_opts(s, &o, &r, &e), 0);
    double t = -1;
    for (size_t i = 0; i < r.n_ops; i++)
        if (!strcmp(r.ops[i].name, name) && r.ops[i].dir == dir) {
            t = r.ops[i].time_s / r.ops[i].count;
            *count = r.ops[i].count;
        }
    mb_result_free(&r);
    if (t < 0)
        fail_msg("%s: no op '%s' dir %d", file, name, dir);
    return t;
}

static void assert_rel(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s: %.12g, expected %.12g (rel %.3g)", what, got, want, fabs(got - want) / fabs(want));
}

/* TP8 sequence-parallel all-gather of the [s, b, h] activations: S = 4096 x
 * 4096 x 2 B = 32 MiB gathered; the ring sends 7/8 S over NVLink in 7 steps
 * with NCCL's Simple-protocol latency (tuning.cc @ 5067397c: base 8.4 us +
 * 7 x 3.4 us NVLink; LL128 would cost 14 + 7 x 1.9 us and 1/0.92 of the
 * bandwidth time, LL 2x it): 32.2 us + 7/8 S / (450 GB/s x 0.8). */
static void test_tp_allgather(void **state)
{
    (void)state;
    struct mb_scenario s;
    double count, S = 4096.0 * 4096 * 2;
    double in_step = step_call("tests/data/net/tp8_dense.yaml", "tp allgather", 0, &count, &s);
    mb_scenario_free(&s);
    enum mb_coll_algo used;
    double alone = coll_alone(8, MB_COLL_ALL_GATHER, 8, S, &used);
    assert_int_equal(used, MB_COLL_ALGO_RING);
    assert_rel(in_step, alone, 1e-9, "tp allgather: step vs collective");
    assert_rel(alone, 32.2e-6 + 7.0 / 8 * S / (450e9 * 0.8), 1e-9, "tp allgather: closed form");
    assert_true(count == 32 * 2 + 1); /* 32 layers x (attention + MLP) + the head's */
}

/* Sequence parallelism keeps only the shard of a column-parallel linear's
 * input, so its backward all-gathers the input again for the weight gradient
 * (TransformerEngine _Linear.backward, Megatron-Core
 * LinearWithGradAccumulationAndAsyncCommunication.backward): one more
 * all-gather per QKV, fc1 and output layer, in backward only, of the same size
 * as the forward one. Llama3-8B: 32 layers x (QKV + fc1) + the output layer. */
static void test_tp_wgrad_regather(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    struct mb_result r;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_load("tests/data/net/tp8_dense.yaml", &s, &e), 0);
    struct mb_step_opts o = {.ops = 1};
    assert_int_equal(mb_step_simulate_opts(&s, &o, &r, &e), 0);
    double fwd = 0, bwd = 0, ag_fwd = 0;
    for (size_t i = 0; i < r.n_ops; i++) {
        if (!strcmp(r.ops[i].name, "tp allgather wgrad input"))
            *(r.ops[i].dir == 1 ? &bwd : &fwd) += r.ops[i].count;
        if (!strcmp(r.ops[i].name, "tp allgather") && r.ops[i].dir == 0)
            ag_fwd += r.ops[i].count;
    }
    assert_true(fwd == 0);
    assert_true(bwd == 32 * 2 + 1);
    assert_true(ag_fwd == 32 * 2 + 1);
    mb_result_free(&r);
    mb_scenario_free(&s);
}

/* DDP gradient all-reduce of Llama3-8B's fp32 gradients on 16 GPUs (2 nodes):
 * AUTO picks the same algorithm in both, and the step's call takes what
 * mb_coll_add's takes. */
static void test_ddp_allreduce(void **state)
{
    (void)state;
    struct mb_scenario s;
    double count;
    double in_step = step_call("tests/data/step/llama3_8b_h100_16_ddp.yaml", "dp grad reduce", 1, &count, &s);
    struct mb_params par;
    mb_model_params(&s.model, &par);
    double S = (par.total - par.vision) * 4.0; /* every parameter's fp32 gradient */
    mb_scenario_free(&s);
    enum mb_coll_algo used;
    double alone = coll_alone(16, MB_COLL_ALL_REDUCE, 16, S, &used);
    assert_rel(in_step, alone, 1e-9, "ddp all-reduce: step vs collective");
    assert_true(count == 1);
    /* ring or tree, both cross the NIC: at least 2 (D-1)/D S / L = S / 8 at 50 GB/s x 0.9 */
    assert_true(alone > S / 8 / (50e9 * 0.9));
}

/* EP16 NCCL all-to-all of the routed token copies: S = 4096 tokens x top-8 x
 * 2048 x 2 B per rank; 7/16 S over NVLink, 8/16 S over the NIC, one step of
 * the NIC latency: 5 us + (S / 2) / (50 GB/s x 0.9). */
static void test_ep_alltoall(void **state)
{
    (void)state;
    struct mb_scenario s;
    double count, S = 4096.0 * 8 * 2048 * 2;
    double in_step = step_call("tests/data/net/ep16_alltoall.yaml", "ep dispatch", 0, &count, &s);
    mb_scenario_free(&s);
    enum mb_coll_algo used;
    double alone = coll_alone(16, MB_COLL_ALLTOALL, 16, S, &used);
    assert_int_equal(used, MB_COLL_ALGO_PAIRWISE);
    assert_rel(in_step, alone, 1e-9, "ep all-to-all: step vs collective");
    assert_rel(alone, 5e-6 + S / 2 / (50e9 * 0.9), 1e-9, "ep all-to-all: closed form");
    assert_true(count == 48); /* one dispatch per MoE layer and microbatch */
}

/* HybridEP EP16 over 2 domains (Qwen3-30B-A3B: E 128, top-8, h 2048, T 4096): a token crosses to
 * the other domain when it hits one of its 64 experts, p_dom = 1 - C(64,8)/C(128,8) = 0.996904,
 * and is sent once, T p_dom h x 2 bytes (BF16) over the NIC. The flow runs at the fixture's
 * hybridep_nic rate across 2 domains -- 0.5 (dispatch), 0.6 (combine) of 50 GB/s, below the NIC's
 * 45 GB/s -- after one step of NIC latency (5 us); the NVLink part (2 x T h 2 x 7 p_rank at
 * 360 GB/s, 0.27 ms) is shorter: 16.725 MB / 25 GB/s + 5 us = 674.0 us, combine / 30 GB/s =
 * 562.5 us. Under an FP8 recipe the same: Megatron-Core hands HybridEP the BF16 hidden states
 * (token_dispatcher.py _HybridEPManager.dispatch @d98e8a64dd), so the fixture's FP8-dispatch rate
 * (0.4) is not used. */
/* Rails from the node XML. dgx_h100: 8 GPUs, 8 NICs (one behind each GPU's
 * PCIe switch); dgx_h100_4nic: the same node with 4 NICs, each behind the
 * switch of 2 GPUs (both constructed by topology/gen_node_xml.py). A ring
 * all-gather over 2 nodes (n = 16, L = 8 per NVLink domain) runs 8 channels;
 * each GPU sends V/L = (n-1)/n S / 8 through its NIC port and 7/8 V over
 * NVLink. Fixture rates: NVLink 450 GB/s x 0.8 = 360 GB/s, NIC 400 Gb/s x 0.9
 * = 45 GB/s per port: NIC-bound (V/8/45e9 > 7V/8/360e9). With 2 GPUs on a
 * port both channels share its 45 GB/s, so the bandwidth term doubles. The
 * latency is the same on both nodes; the difference between 2 GiB and 1 GiB
 * cancels it: dt = (15/16) x 1 GiB / 8 / 45e9 (1 GPU per NIC), 2x that (2). */
static void test_rails_halve_nic(void **state)
{
    (void)state;
    double S1 = 1 << 30, S2 = 2.0 * (1 << 30), want = 15.0 / 16 * (S2 - S1) / 8 / 45e9;
    double d1 = coll_alone_on("dgx_h100", MB_COLL_ALGO_RING, 16, MB_COLL_ALL_GATHER, 16, S2, NULL) -
                coll_alone_on("dgx_h100", MB_COLL_ALGO_RING, 16, MB_COLL_ALL_GATHER, 16, S1, NULL);
    double d2 = coll_alone_on("dgx_h100_4nic", MB_COLL_ALGO_RING, 16, MB_COLL_ALL_GATHER, 16, S2, NULL) -
                coll_alone_on("dgx_h100_4nic", MB_COLL_ALGO_RING, 16, MB_COLL_ALL_GATHER, 16, S1, NULL);
    assert_rel(d1, want, 1e-9, "1 GPU per NIC: NIC-bound all-gather");
    assert_rel(d2, 2 * want, 1e-9, "2 GPUs per NIC: twice the NIC-bound time");
}

/* The same DDP scenario (Llama3-8B, 16 GPUs, DP 16 across 2 nodes) on both
 * nodes: in the step the gradient all-reduce costs what the collective costs
 * alone on each fabric (half the NIC rate per GPU on dgx_h100_4nic), so the
 * step is slower on the 4-NIC node. */
static void test_rails_change_prediction(void **state)
{
    (void)state;
    struct mb_scenario s1, s2;
    double c1, c2;
    double t1 = step_call("tests/data/step/llama3_8b_h100_16_ddp.yaml", "dp grad reduce", 1, &c1, &s1);
    double t2 = step_call("tests/data/net/llama3_8b_h100_4nic_16_ddp.yaml", "dp grad reduce", 1, &c2, &s2);
    struct mb_params par;
    mb_model_params(&s1.model, &par);
    double S = (par.total - par.vision) * 4.0;
    assert_rel(t1, coll_alone_on("dgx_h100", MB_COLL_ALGO_AUTO, 16, MB_COLL_ALL_REDUCE, 16, S, NULL), 1e-9,
               "1 GPU per NIC: step vs collective");
    assert_rel(t2, coll_alone_on("dgx_h100_4nic", MB_COLL_ALGO_AUTO, 16, MB_COLL_ALL_REDUCE, 16, S, NULL), 1e-9,
               "2 GPUs per NIC: step vs collective");
    /* 2 GPUs per NIC: AUTO's hierarchical tree is NIC-bound, 2 (D-1)/D S / L = S / 8 per GPU at
     * 45 / 2 GB/s (NVLink: 2 (L-1)/L S at 360 GB/s = S / 205.7e9 is faster), plus microseconds
     * of latency against a 0.18 s transfer */
    assert_rel(t2, S / 8 / 22.5e9, 1e-3, "2 GPUs per NIC: NIC-bound all-reduce");
    assert_true(t2 > 1.4 * t1);
    struct mb_err e;
    struct mb_result r1, r2;
    mb_err_clear(&e);
    struct mb_step_opts o = {.critical_path = 0, .ops = 0};
    assert_int_equal(mb_step_simulate_opts(&s1, &o, &r1, &e), 0);
    assert_int_equal(mb_step_simulate_opts(&s2, &o, &r2, &e), 0);
    assert_true(r2.step_time_s > r1.step_time_s);
    mb_result_free(&r1);
    mb_result_free(&r2);
    mb_scenario_free(&s1);
    mb_scenario_free(&s2);
}

static void test_ep_hybridep_nic(void **state)
{
    (void)state;
    struct mb_scenario s;
    double count, p_dom = 1, T = 4096, h = 2048;
    for (int i = 0; i < 8; i++)
        p_dom *= (64.0 - i) / (128.0 - i);
    p_dom = 1 - p_dom;
    double nic = T * p_dom * h * 2;
    double t = step_call("tests/data/net/ep16_hybridep.yaml", "ep dispatch", 0, &count, &s);
    mb_scenario_free(&s);
    assert_rel(t, 5e-6 + nic / (0.5 * 50e9), 1e-9, "hybridep dispatch");
    assert_true(count == 48);
    t = step_call("tests/data/net/ep16_hybridep.yaml", "ep combine", 0, &count, &s);
    mb_scenario_free(&s);
    assert_rel(t, 5e-6 + nic / (0.6 * 50e9), 1e-9, "hybridep combine");
    t = step_call("tests/data/net/ep16_hybridep_fp8.yaml", "ep dispatch", 0, &count, &s);
    mb_scenario_free(&s);
    assert_rel(t, 5e-6 + nic / (0.5 * 50e9), 1e-9, "hybridep dispatch under FP8 (BF16 tokens)");
    /* DeepEP has no measured entry: the same bytes at the NIC's link rate */
    struct mb_err e;
    struct mb_result r;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_load("tests/data/net/ep16_hybridep.yaml", &s, &e), 0);
    s.dispatcher = MB_DISP_DEEPEP;
    struct mb_step_opts o = {.critical_path = 0, .ops = 1};
    assert_int_equal(mb_step_simulate_opts(&s, &o, &r, &e), 0);
    for (size_t i = 0; i < r.n_ops; i++)
        if (!strcmp(r.ops[i].name, "ep dispatch") && r.ops[i].dir == 0)
            assert_rel(r.ops[i].time_s / r.ops[i].count, 5e-6 + nic / (0.9 * 50e9), 1e-9, "deepep dispatch");
    mb_result_free(&r);
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_allgather),
        cmocka_unit_test(test_tp_wgrad_regather),
        cmocka_unit_test(test_ddp_allreduce),
        cmocka_unit_test(test_ep_alltoall),
        cmocka_unit_test(test_ep_hybridep_nic),
        cmocka_unit_test(test_rails_halve_nic),
        cmocka_unit_test(test_rails_change_prediction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
