/*
 * test_kineto.c -- the Kineto / PyTorch profiler trace importer on the real
 * sample (../shared/data/formats/kineto_trace_sample.json: 21 events, A100,
 * 2-rank DDP), on a constructed trace with input shapes (plain and gzip),
 * and on broken variants with exact messages.
 *
 * Run from the repository root with MBSIM_DATA_DIR=<repo root>.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_import.h"

#define SAMPLE "../shared/data/formats/kineto_trace_sample.json"

static struct mb_prof *import_ok(const char *path)
{
    struct mb_prof *p = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    int rc = mb_prof_kineto(path, &p, &e);
    if (rc) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        print_error("%s\n", buf);
    }
    assert_int_equal(rc, 0);
    return p;
}

static void expect_err(const char *path, const char *want)
{
    struct mb_prof *p = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    char buf[1024];
    assert_int_equal(mb_prof_kineto(path, &p, &e), -1);
    assert_null(p);
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* Write p as an overlay on `base` to a temporary file and load it (the file is removed). */
static struct mb_calib *overlay_load(const struct mb_prof *p, const char *base)
{
    char tmp[] = "/tmp/mbsim_kineto_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_prof_write_table(p, base, "test", f, &e), 0);
    fclose(f);
    struct mb_calib *c = NULL;
    if (mb_calib_load(NULL, tmp, &c, &e) != 0) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        remove(tmp);
        fail_msg("%s", buf);
    }
    remove(tmp);
    return c;
}

/*
 * The sample by hand: GPU events with ph X are 2 kernels (cutlass_80_tensorop_s1688gemm -> gemm,
 * 114.911 us; ncclKernel_AllReduce_RING_LL_Sum_float -> nccl, 2636.669 us), 1 gpu_memset (4.96 us)
 * and 1 gpu_memcpy (5.088 us) -> memory. The GEMM's launching op aten::convolution_backward has no
 * Input Dims, so no point. The NCCL kernel: allreduce of 6637568 Float over 2 ranks = 26550272 B in
 * 2636.669 us: algbw 10.0696 GB/s, busbw = algbw * 2(n-1)/n = 10.0696 GB/s. GPU: "NVIDIA A100-PG509-200".
 */
static void test_sample(void **state)
{
    (void)state;
    struct mb_prof *p = import_ok(SAMPLE);
    assert_string_equal(p->gpu, "A100");
    assert_int_equal(p->n_kernels, 4);
    assert_int_equal(p->cls_kernels[MB_KC_GEMM], 1);
    assert_int_equal(p->cls_kernels[MB_KC_NCCL], 1);
    assert_int_equal(p->cls_kernels[MB_KC_MEMORY], 2);
    assert_int_equal(p->cls_kernels[MB_KC_UNKNOWN], 0);
    assert_true(fabs(p->cls_time_s[MB_KC_GEMM] - 114.911e-6) < 1e-12);
    assert_true(fabs(p->total_s - (114.911 + 2636.669 + 4.96 + 5.088) * 1e-6) < 1e-12);
    assert_int_equal(p->n_points, 0);
    assert_int_equal(p->n_noshape, 1);
    assert_int_equal(p->n_coll, 1);
    assert_string_equal(p->coll[0].op, "allreduce");
    assert_int_equal(p->coll[0].group, 2);
    assert_true(fabs(p->coll[0].bytes - 26550272.0) < 0.5);
    assert_true(fabs(p->coll[0].busbw / (26550272.0 / 2636.669e-6) - 1) < 1e-9);

    /* the written overlay loads over the shipped A100 table and reports the collective */
    struct mb_calib *c = overlay_load(p, "A100");
    assert_int_equal(mb_calib_n_coll_points(c), 1);
    assert_true(fabs(mb_calib_coll_point(c, 0).busbw / 10.0696e9 - 1) < 1e-5);
    mb_calib_free(c);
    mb_prof_free(p);
}

/*
 * tests/data/kineto/shaped_trace.json (constructed, comments in its generator are restated here):
 * two aten::mm 4096^3 bf16, each = GEMM 180 us + split-K reduce 20 us joined by correlation only
 * -> one point, 200 us, 2*4096^3/200e-6 = 687.195 TFLOP/s; SDPA flash fwd q [2,16,4096,128]
 * causal, 250 us -> 4*32*4096^2*128/2/250e-6 = 549.756 TFLOP/s; its bwd 700 us -> x2.5 = 490.853;
 * NCCL allgather 8 ranks, 8388608 bf16 out = 16777216 B in 100 us -> busbw 7/8 * 167.772 = 146.801 GB/s;
 * one unknown kernel; one memset.
 */
static void check_shaped(const char *path)
{
    struct mb_prof *p = import_ok(path);
    assert_string_equal(p->gpu, "H100");
    assert_int_equal(p->n_points, 3);
    assert_int_equal(p->cls_kernels[MB_KC_UNKNOWN], 1);
    assert_int_equal(p->cls_kernels[MB_KC_GEMM], 2);
    const double want[3] = {687.195e12, 549.756e12, 490.853e12};
    for (int i = 0; i < 3; i++)
        assert_true(fabs(p->points[i].achieved / want[i] - 1) < 1e-5);
    assert_int_equal(p->points[0].instances, 2);
    assert_true(p->points[1].shape.causal && !p->points[1].shape.bwd && p->points[2].shape.bwd);
    assert_int_equal(p->n_coll, 1);
    assert_true(fabs(p->coll[0].busbw / 146.801e9 - 1) < 1e-5);
    mb_prof_free(p);
}

static void test_shaped_json_and_gzip(void **state)
{
    (void)state;
    check_shaped("tests/data/kineto/shaped_trace.json");
    check_shaped("tests/data/kineto/shaped_trace.json.gz");
}

/*
 * Host time per launch, tests/data/kineto/host_trace.json (constructed): thread 100/100 issues 25
 * cudaLaunchKernel calls, 5 us each except launch 10 (105 us: blocked on a full queue); the gaps
 * between starts are 30 us, except 60 us after launches 3 and 7, 130 us after launch 10 (100 us of
 * it inside the blocked call: 130 - (105 - median 5) = 30) and 530 us after launch 15, which holds a
 * cudaStreamSynchronize (left out). A cudaMemcpyAsync inside a gap (not synchronizing) and a
 * cudaDeviceSynchronize on another thread change nothing; thread 100/200 has only 3 launches.
 * So 23 gaps: 21 x 30 + 2 x 60 = 750 us -> mean 32.6087 us, median 30 us. 23 >= 20 gaps, so the
 * overlay carries measured.launch, and the loaded table's launch_s is the mean.
 * The real sample has 1 launch on its thread: no gap, no launch entry (the A100 table keeps its own).
 */
static void test_host_launch(void **state)
{
    (void)state;
    struct mb_prof *p = import_ok("tests/data/kineto/host_trace.json");
    assert_int_equal(p->host_launches, 25);
    assert_int_equal(p->host_gaps, 23);
    assert_int_equal(p->host_pid, 100);
    assert_int_equal(p->host_tid, 100);
    assert_true(fabs(p->host_launch_s - 750e-6 / 23) < 1e-12);
    assert_true(fabs(p->host_launch_med_s - 30e-6) < 1e-12);

    struct mb_calib *c = overlay_load(p, "H100");
    assert_true(fabs(mb_calib_spec(c)->launch_s / (750e-6 / 23) - 1) < 1e-5);
    mb_calib_free(c);
    mb_prof_free(p);

    /* a 5 ms gap (no synchronizing call) is no per-kernel cost: 24 gaps, one of 5000 us left out */
    p = import_ok("tests/data/kineto/host_long_gap.json");
    assert_int_equal(p->host_gaps, 23);
    assert_true(fabs(p->host_launch_s - 30e-6) < 1e-12);
    mb_prof_free(p);
    expect_err("tests/data/kineto", "tests/data/kineto: is a directory, expected a Kineto trace (.json or .json.gz)");
    /* launch calls with a bad ts or dur are errors, as kernels' are */
    expect_err("tests/data/kineto/host_bad_ts.json",
                "tests/data/kineto/host_bad_ts.json: $.traceEvents[1].ts: missing or not a non-negative number "
                "(cudaLaunchKernel)");
    expect_err("tests/data/kineto/host_bad_pid.json",
               "tests/data/kineto/host_bad_pid.json: $.traceEvents[1].pid: missing or not a non-negative integer "
               "(cudaLaunchKernel)");
    expect_err("tests/data/kineto/host_bad_dur.json",
                "tests/data/kineto/host_bad_dur.json: $.traceEvents[2].dur: missing or not a non-negative number "
                "(cudaLaunchKernel)");

    p = import_ok(SAMPLE);
    assert_int_equal(p->host_launches, 1);
    assert_int_equal(p->host_gaps, 0);
    assert_true(p->host_launch_s == 0);
    mb_prof_free(p);
}

static void test_broken(void **state)
{
    (void)state;
    expect_err("tests/data/kineto/truncated.json",
               "tests/data/kineto/truncated.json:208:1: JSON error: ']' expected near end of file (byte offset 3271)");
    expect_err("tests/data/kineto/truncated.json.gz",
               "tests/data/kineto/truncated.json.gz: gzip error: unexpected end of file (truncated file?)");
    expect_err("tests/data/kineto/bad_dur.json",
               "tests/data/kineto/bad_dur.json: $.traceEvents[4].dur: missing or not a non-negative number (kernel "
               "'nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT')");
    expect_err("tests/data/kineto/no_events.json",
               "tests/data/kineto/no_events.json: $.traceEvents: missing or not an array (not a Kineto/Chrome trace)");
    expect_err("tests/data/kineto/missing.json", "tests/data/kineto/missing.json: cannot open: No such file or directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_shaped_json_and_gzip),
        cmocka_unit_test(test_broken), cmocka_unit_test(test_host_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
