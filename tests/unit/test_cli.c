/*
 * test_cli.c -- the mbsim command as a user runs it: exit codes (0 ok, 1 bad
 * input, 2 usage), the JSON report's keys, byte-identical repeated runs, and
 * `mbsim validate` on the published measurements producing its summary.
 * The binary comes from $MBSIM_BIN (set by CTest).
 * The runs use the shipped scenarios and hence the shipped calibration tables,
 * as a user would; no test here asserts a predicted value (only exit codes,
 * keys, determinism and that roofline mode differs), so recalibrating the
 * shipped tables cannot break them. The trace tests parse what --trace writes
 * (stdout, gzip) with jansson and zlib; test_json_ops asserts bytes on a
 * fixture scenario, which no calibration table moves.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>

#include "mb_util.h"

/* Run "$MBSIM_BIN args", capture stdout (+stderr when both), return exit code. */
static int run(const char *args, char **out, int with_stderr)
{
    const char *bin = getenv("MBSIM_BIN");
    assert_non_null(bin);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s%s", bin, args, with_stderr ? " 2>&1" : " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = mb_malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n < 4096) {
            cap *= 2;
            buf = mb_realloc(buf, cap);
        }
    }
    buf[n] = '\0';
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_exit_codes(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("--help", &o, 0), 0);
    assert_non_null(strstr(o, "usage: mbsim"));
    mb_free(o);
    assert_int_equal(run("run --help", &o, 0), 0);
    assert_non_null(strstr(o, "usage: mbsim run"));
    mb_free(o);
    assert_int_equal(run("", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("frobnicate", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("run", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --bogus", &o, 1), 2);
    mb_free(o);
    /* bad input: the message names file:line:col */
    assert_int_equal(run("run tests/data/scenario/bad_enum.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "tests/data/scenario/bad_enum.yaml:"));
    assert_non_null(strstr(o, "expected one of"));
    mb_free(o);
    assert_int_equal(run("run /nonexistent.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "/nonexistent.yaml: cannot open"));
    mb_free(o);
}

/* `mbsim topo` on the real hwloc samples (shared/data/formats, README there):
 * hwloc_dgx.xml is a DGX-2H, 16 V100 with 6 NVLink2 links x 25000 MB/s to the
 * NVSwitches each, so every GPU pair is 150 GB/s through the switches and the
 * NVLink domain is the 16 GPUs; hwloc_pci_gpu_nic_small.xml has 3 GPUs (the
 * GPUModel "Tesla K40m") and one NIC, mlx5_0, used by all three (no speed in
 * hwloc: null); the _v3 file is hwloc 3.0 XML, refused with exit code 1. */
static void test_topo_cli(void **state)
{
    (void)state;
    const char *sh = getenv("MBSIM_SHARED_DIR");
    char args[1024], *o;
    json_error_t je;
    snprintf(args, sizeof args, "topo %s/data/formats/hwloc_dgx.xml --json", sh ? sh : "../shared");
    assert_int_equal(run(args, &o, 0), 0);
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "gpus")), 16);
    assert_string_equal(json_string_value(json_object_get(j, "gpu_model")), "Tesla V100-SXM3-32GB-H");
    json_t *m = json_object_get(j, "nvlink_gbps");
    assert_int_equal(json_array_size(m), 16);
    for (size_t r = 0; r < 16; r++) {
        json_t *row = json_array_get(m, r);
        assert_int_equal(json_array_size(row), 16);
        for (size_t c = 0; c < 16; c++)
            assert_true(fabs(json_real_value(json_array_get(row, c)) - (r == c ? 0 : 150)) < 1e-9);
    }
    assert_int_equal(json_integer_value(json_object_get(j, "domain_gpus")), 16);
    assert_int_equal(json_array_size(json_object_get(j, "nics")), 0);
    json_decref(j);
    mb_free(o);

    snprintf(args, sizeof args, "topo %s/data/formats/hwloc_pci_gpu_nic_small.xml --json", sh ? sh : "../shared");
    assert_int_equal(run(args, &o, 0), 0);
    j = json_loads(o, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "gpus")), 3);
    assert_string_equal(json_string_value(json_object_get(j, "gpu_model")), "Tesla K40m");
    json_t *nics = json_object_get(j, "nics");
    assert_int_equal(json_array_size(nics), 1);
    json_t *n0 = json_array_get(nics, 0);
    assert_string_equal(json_string_value(json_object_get(n0, "name")), "mlx5_0");
    assert_true(json_is_null(json_object_get(n0, "gbps")));
    assert_int_equal(json_array_size(json_object_get(n0, "gpus")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "domain_gpus")), 1);
    json_decref(j);
    mb_free(o);

    snprintf(args, sizeof args, "topo %s/data/formats/hwloc_dgx_v3.xml", sh ? sh : "../shared");
    assert_int_equal(run(args, &o, 1), 1);
    assert_non_null(strstr(o, "hwloc cannot load XML (topology version 3.0; mbsim reads version 2.x XML with hwloc 2.x"));
    mb_free(o);

    /* a system: the 4-NIC DGX H100 gives each NIC 400 Gb/s and 2 GPUs, 200 Gb/s per GPU */
    assert_int_equal(run("topo dgx_h100_4nic --json", &o, 0), 0);
    j = json_loads(o, 0, &je);
    assert_non_null(j);
    nics = json_object_get(j, "nics");
    assert_int_equal(json_array_size(nics), 4);
    assert_true(fabs(json_real_value(json_object_get(json_array_get(nics, 1), "gbps")) - 400) < 1e-9);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(json_array_get(nics, 1), "gpus"), 1)), 3);
    assert_true(fabs(json_real_value(json_object_get(j, "nic_gbps_per_gpu")) - 200) < 1e-9);
    assert_int_equal(json_integer_value(json_object_get(j, "domain_gpus")), 8);
    json_decref(j);
    mb_free(o);
    /* bad input: file:line:col */
    assert_int_equal(run("topo tests/data/topology/gpu_model_mismatch.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "gpu_model_mismatch.yaml:3:6: gpu = A100"));
    mb_free(o);
    assert_int_equal(run("topo", &o, 1), 2);
    mb_free(o);
}

/* The run report names NCCL's choice per collective class. Qwen3-VL-235B on 99968 GB200 GPUs
 * (TP1 PP2 EP32, tests/data/net): the dense DP group is 49984 ranks of consecutive GPUs, 72 per
 * NVLink domain (695 domains, the last one partial); its parameter all-gather is a flat NCCL ring
 * (no tree for all-gather in NCCL, no PAT with 72 ranks per domain) whose LL latency is
 * 6.6 + (49983 - 694) x 0.6 x 1.8 + 694 x 2.7 us = 55.11252 ms (tuning.cc @ 5067397c), more than
 * its bandwidth time: latency-bound. */
static void test_report_collectives(void **state)
{
    (void)state;
    char *o;
    json_error_t je;
    assert_int_equal(run("run tests/data/net/qwen3_vl_235b_gb200_99968.yaml --json", &o, 0), 0);
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j);
    json_t *dp = json_object_get(json_object_get(json_object_get(j, "collectives"), "longest_latency"), "dp");
    assert_non_null(dp);
    assert_string_equal(json_string_value(json_object_get(dp, "op")), "all_gather");
    assert_string_equal(json_string_value(json_object_get(dp, "algorithm")), "ring");
    assert_string_equal(json_string_value(json_object_get(dp, "protocol")), "LL");
    assert_int_equal(json_integer_value(json_object_get(dp, "ranks")), 49984);
    assert_true(fabs(json_real_value(json_object_get(dp, "latency_s")) - 55112.52e-6) < 1e-9);
    assert_true(json_is_true(json_object_get(dp, "latency_bound")));
    json_t *top = json_object_get(json_object_get(j, "collectives"), "dp");
    assert_string_equal(json_string_value(json_object_get(top, "protocol")), "LL128");
    json_decref(j);
    mb_free(o);
    assert_int_equal(run("run tests/data/net/qwen3_vl_235b_gb200_99968.yaml", &o, 0), 0);
    assert_non_null(strstr(o, "DP communication is latency-bound on its 49984-rank group"));
    mb_free(o);
}

static void test_json_report(void **state)
{
    (void)state;
    char *a, *b;
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --json", &a, 0), 0);
    static const char *keys[] = {"\"scenario\"", "\"gpus\"", "\"step_time_s\"", "\"tokens_per_s_per_gpu\"",
                                 "\"model_tflops_per_gpu\"", "\"mfu\"", "\"peak_memory_gib\"", "\"oom\"",
                                 "\"breakdown_s\"", "\"calibration\"", "\"vision_encoder\"", "\"pipeline_bubble\"",
                                 "\"distributed_optimizer\": true", "\"all_reduce_algorithm\": \"auto\"",
                                 "\"publication_check\"", "\"target_model_tflops_per_gpu\": 400",
                                 "\"fraction_of_target\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strstr(a, keys[i]))
            fail_msg("key %s missing from --json output", keys[i]);
    /* determinism: the same scenario twice gives the same bytes */
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --json", &b, 0), 0);
    assert_string_equal(a, b);
    mb_free(a);
    mb_free(b);
    /* --trace writes a Chrome trace: complete slices on named tracks */
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --trace mbsim_test_trace.json --json", &a, 0), 0);
    assert_non_null(strstr(a, "\"critical_path_s\""));
    mb_free(a);
    FILE *tf = fopen("mbsim_test_trace.json", "r");
    assert_non_null(tf);
    char head[4096] = "";
    size_t got = fread(head, 1, sizeof head - 1, tf);
    head[got] = '\0';
    fclose(tf);
    remove("mbsim_test_trace.json");
    assert_non_null(strstr(head, "\"traceEvents\""));
    assert_non_null(strstr(head, "\"process_name\""));
    assert_non_null(strstr(head, "\"ph\":\"X\""));
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --trace", &a, 1), 2);
    mb_free(a);
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --trace /nonexistent/dir/t.json", &a, 1), 1);
    mb_free(a);
    assert_int_equal(run("run scenarios/gb200_ep32.yaml", &a, 0), 0);
    assert_non_null(strstr(a, "step time"));
    assert_non_null(strstr(a, "critical path:"));
    assert_non_null(strstr(a, "peak memory"));
    /* gb200_ep32 is BF16 on GB200: the guide's 400 model TFLOP/s/GPU target applies (the
     * verdict depends on the prediction); h100_llama3_70b_3d is FP8: no target */
    assert_non_null(strstr(a, "publication check"));
    assert_non_null(strstr(a, "the guide's BF16 target for GB200 (about 400)"));
    mb_free(a);
    assert_int_equal(run("run scenarios/h100_llama3_70b_3d.yaml", &a, 0), 0);
    assert_non_null(strstr(a, "publication check    n/a: the guide's targets are for BF16 recipes (this one is fp8_cs)"));
    mb_free(a);
}

/* `mbsim validate` end to end on a small CSV (the public CSV is exercised by
 * test_validate): the summary keys are there and rows are predicted. */
static void test_validate_cli(void **state)
{
    (void)state;
    char *o, *rf;
    assert_int_equal(run("validate tests/data/validate/small.csv --json", &o, 0), 0);
    assert_non_null(strstr(o, "\"n_predicted\""));
    assert_non_null(strstr(o, "\"mape_pct\""));
    assert_non_null(strstr(o, "\"median_ape_pct\""));
    assert_non_null(strstr(o, "\"max_ape_pct\""));
    assert_non_null(strstr(o, "\"rows\""));
    const char *np = strstr(o, "\"n_predicted\"");
    assert_true(strtol(strchr(np, ':') + 1, NULL, 10) >= 1);
    /* roofline-only mode predicts differently from the calibrated tables */
    assert_int_equal(run("validate tests/data/validate/small.csv --json --roofline", &rf, 0), 0);
    assert_non_null(strstr(rf, "\"mape_pct\""));
    assert_string_not_equal(rf, o);
    mb_free(rf);
    mb_free(o);
    assert_int_equal(run("validate scenarios/h100_llama3_70b_3d.yaml", &o, 0), 0);
    assert_non_null(strstr(o, "MAPE"));
    mb_free(o);
    assert_int_equal(run("validate tests/data/validate/missing_column.csv", &o, 1), 1);
    mb_free(o);
    /* nothing predicted is no result: the skip summary, then exit 1 (a MAPE of no row is not a number) */
    assert_int_equal(run("validate tests/data/validate/header_only.csv", &o, 1), 1);
    assert_non_null(strstr(o, "MAPE: n/a (no row predicted)"));
    assert_non_null(strstr(o, "mbsim validate: no row could be predicted in tests/data/validate/header_only.csv "
                              "(0 rows read, 0 skipped)"));
    mb_free(o);
    /* -j: the same JSON on one thread and three; --progress: lines on stderr (here not a
     * terminal), then the closing count; stdout is unchanged */
    char *j1, *j3;
    assert_int_equal(run("validate tests/data/validate/small.csv --json -j 1", &j1, 0), 0);
    assert_int_equal(run("validate tests/data/validate/small.csv --json --jobs=3 --progress 1e-9", &j3, 0), 0);
    assert_string_equal(j1, j3);
    mb_free(j1);
    mb_free(j3);
    /* stderr alone through the pipe (the exit status is cat's) */
    assert_int_equal(run("validate tests/data/validate/small.csv --progress 1e-9 -j2 2>&1 >/dev/null | cat", &o, 0), 0);
    assert_non_null(strstr(o, "mbsim validate: 11 rows done, "));
    assert_non_null(strstr(o, "mbsim validate: 11 rows (3 predicted, 8 skipped) in "));
    mb_free(o);
    assert_int_equal(run("validate tests/data/validate/small.csv -j 0", &o, 1), 2);
    assert_non_null(strstr(o, "mbsim validate: -j '0': expected a number of threads from 1 to 1024"));
    mb_free(o);
}

/* `mbsim calibrate nccl-tests` on the real A3-Mega log writes a table that
 * `mbsim collective --calib` and scenarios load: the 1 MiB row predicts the
 * mean of the log's two blocks (203.2 and 207.2 us -> 205.2 us). The GPU comes
 * from the log's device lines ("NVIDIA H100 80GB HBM3" -> H100), so the table
 * does not fit an A100 system; unusable input is refused with its reason. */
/* calibrate runs and validate --cv refuse unusable arguments before any
 * simulation (and --cv --json is whole and deterministic): an empty --params, an output folder that does not exist, a CSV
 * with no predictable row (tests/data/validate/header_only.csv: a header only), a recipe file whose layout is
 * not its row's. */
static void test_fit_cli_errors(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("calibrate runs tests/data/validate/small.csv --params ''", &o, 1), 2);
    assert_non_null(strstr(o, "names no parameter"));
    mb_free(o);
    assert_int_equal(run("calibrate runs tests/data/validate/small.csv -o /nonexistent-dir/t.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "cannot write /nonexistent-dir/t.yaml"));
    mb_free(o);
    assert_int_equal(run("validate tests/data/validate/header_only.csv --cv family", &o, 1), 1);
    assert_non_null(strstr(o, "no row could be predicted"));
    mb_free(o);
    /* --recipes reaches calibrate runs and --cv: a recipe file that is not the row's run is bad input */
    assert_int_equal(run("calibrate runs tests/data/validate/recipes.csv --gpu H100 --recipes "
                         "tests/data/validate/recipes_bad/tp4.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "states tp 4, the row 2"));
    mb_free(o);
    assert_int_equal(run("validate tests/data/validate/recipes.csv --cv family --recipes "
                         "tests/data/validate/recipes_bad/tp4.yaml", &o, 1), 1);
    assert_non_null(strstr(o, "states tp 4, the row 2"));
    mb_free(o);
    /* --cv --json: one row object per predicted row; the overall MAPE is the mean
     * of the rows' |held-out error| (recomputed here); -j does not change a byte */
    char *o2;
    assert_int_equal(run("validate tests/data/fit/synthetic_h100.csv --cv family --json -j 1", &o, 0), 0);
    assert_int_equal(run("validate tests/data/fit/synthetic_h100.csv --cv family --json -j 2", &o2, 0), 0);
    assert_string_equal(o, o2);
    json_error_t je;
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j);
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 6);
    double sum = 0;
    for (size_t i = 0; i < 6; i++)
        sum += fabs(json_real_value(json_object_get(json_array_get(rows, i), "err_cv_pct")));
    assert_true(fabs(json_real_value(json_object_get(j, "mape_cv_pct")) - sum / 6) < 1e-6 * sum);
    assert_int_equal(json_array_size(json_object_get(j, "by_family")), 2);
    json_decref(j);
    mb_free(o);
    mb_free(o2);
}

/* `mbsim calibrate transfer`: the three fixture tables' fitted values, medians by
 * hand (tests/data/fit/fitted_{a,b,c}.yaml): tensor_fraction 0.8, 1.0, 0.9 -> 0.9;
 * kernel_eager 10, 30, 50 us -> 30 us; kernel_moe fitted by a and b only
 * (10, 30 us) -> 20 us (c's 5 us does not count); overlap_slowdown fitted by
 * none -> the base's (fixture_H100.yaml: 0). The written table loads, and a table
 * that was transferred, not fitted, is refused as a source. */
static void test_calibrate_transfer_cli(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim_cli_transfer_XXXXXX", args[1024], *o;
    assert_non_null(mkdtemp(dir));
    const char *from = "tests/data/fit/fitted_a.yaml tests/data/fit/fitted_b.yaml tests/data/fit/fitted_c.yaml";
    snprintf(args, sizeof args, "calibrate transfer %s --base tests/data/calib/fixture_H100.yaml -o %s/t.yaml", from,
             dir);
    assert_int_equal(run(args, &o, 0), 0);
    mb_free(o);
    snprintf(args, sizeof args, "%s/t.yaml", dir);
    FILE *f = fopen(args, "r");
    assert_non_null(f);
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "\n  tensor_fraction: 0.9\n"));
    assert_non_null(strstr(text, "\n  kernel_eager: 30 us\n"));
    assert_non_null(strstr(text, "\n  kernel_moe: 20 us\n"));
    assert_non_null(strstr(text, "\n  overlap_slowdown: 0   # no fitted table moved it"));
    snprintf(args, sizeof args, "calibrate transfer %s/t.yaml --base tests/data/calib/fixture_H100.yaml", dir);
    assert_int_equal(run(args, &o, 1), 1);
    assert_non_null(strstr(o, "t.yaml has no fitted framework parameters"));
    mb_free(o);
    assert_int_equal(run("calibrate transfer tests/data/fit/fitted_a.yaml", &o, 1), 2); /* no --base */
    assert_non_null(strstr(o, "--base TABLE is required"));
    mb_free(o);
    /* a table named twice, however it is spelled, would weigh twice in the median */
    assert_int_equal(run("calibrate transfer tests/data/fit/fitted_a.yaml tests/data/fit/../fit/fitted_a.yaml "
                         "--base tests/data/calib/fixture_H100.yaml",
                         &o, 1),
                     2);
    assert_non_null(strstr(o, "tests/data/fit/fitted_a.yaml and tests/data/fit/../fit/fitted_a.yaml are the same "
                              "table"));
    mb_free(o);
    snprintf(args, sizeof args, "%s/t.yaml", dir);
    unlink(args);
    rmdir(dir);
}

static void test_calibrate_nccl_cli(void **state)
{
    (void)state;
    char *o, args[1024];
    const char *sh = getenv("MBSIM_SHARED_DIR");
    char tmp[] = "/tmp/mbsim_a3_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof args, "calibrate nccl-tests %s/data/formats/nccl_tests_all_reduce.txt -o %s",
             sh ? sh : "../shared", tmp);
    assert_int_equal(run(args, &o, 1), 0);
    mb_free(o);
    snprintf(args, sizeof args, "collective --system a3_mega --gpus 16 --op all_reduce --sizes 1M:1M --calib %s",
             tmp);
    assert_int_equal(run(args, &o, 1), 0);
    assert_non_null(strstr(o, "    205.2"));
    assert_non_null(strstr(o, "# Measured             : 1 of 1 sizes"));
    mb_free(o);
    snprintf(args, sizeof args, "collective --system dgx_a100 --gpus 8 --op all_reduce --calib %s", tmp);
    assert_int_equal(run(args, &o, 1), 1);
    assert_non_null(strstr(o, "is a table for H100, but system 'dgx_a100' has A100 GPUs"));
    mb_free(o);
    remove(tmp);
    /* --gpu may not contradict the log's device lines */
    snprintf(args, sizeof args, "calibrate nccl-tests %s/data/formats/nccl_tests_all_reduce.txt --gpu B200",
             sh ? sh : "../shared");
    assert_int_equal(run(args, &o, 1), 2);
    assert_non_null(strstr(o, "the logs were measured on H100; --gpu B200 disagrees"));
    mb_free(o);
    assert_int_equal(run("calibrate nccl-tests tests/data/nccl/mpi_prefixed.txt", &o, 1), 2);
    assert_non_null(strstr(o, "give --gpu NAME"));
    mb_free(o);
    assert_int_equal(run("calibrate nccl-tests tests/data/nccl/mpi_prefixed.txt --gpu H100", &o, 1), 1);
    assert_non_null(strstr(o, "give the group size with --ranks N"));
    mb_free(o);
    assert_int_equal(run("calibrate nccl-tests tests/data/nccl/mpi_prefixed.txt --gpu H100 --ranks 16", &o, 0), 0);
    assert_non_null(strstr(o, "group: 16, bytes: 8589934592 B"));
    mb_free(o);
    assert_int_equal(run("calibrate nccl-tests tests/data/nccl/mpi_prefixed.txt --gpu H100 --ranks 1", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("calibrate nccl-tests tests/data/nccl/mpi_prefixed.txt --gpu H100 --base A100 --ranks 8",
                         &o, 1), 2);
    assert_non_null(strstr(o, "--base A100 is a table for A100, not H100"));
    mb_free(o);
}

/* `mbsim tune` on a scenario whose model and system are custom files named by
 * paths relative to it, and whose name needs quoting: the recommendation,
 * written to another folder, runs with `mbsim run` and names the same model,
 * system and scenario. */
static void test_tune_output_runs(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim_cli_tune_XXXXXX", args[256], *o;
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "tune tests/data/keys/base.yaml -o %s/tuned.yaml", dir);
    assert_int_equal(run(args, &o, 1), 0);
    /* runners-up name every knob tune varies (two differing only in CUDA graphs read apart) */
    if (strstr(o, "runners-up:\n  1.") && !strstr(o, ", CUDA graphs "))
        fail_msg("runners-up without their recompute and CUDA-graph settings:\n%s", o);
    assert_non_null(strstr(o, "publication check: ")); /* of the recommendation */
    mb_free(o);
    snprintf(args, sizeof args, "run %s/tuned.yaml", dir);
    int rc = run(args, &o, 1);
    if (rc != 0)
        fail_msg("mbsim %s: exit %d: %s", args, rc, o);
    assert_non_null(strstr(o, "mbsim: keys: round-trip #1_tuned"));
    assert_non_null(strstr(o, "model keys_tiny_vlm on 16 x H100 (keys_h100)"));
    mb_free(o);
    snprintf(args, sizeof args, "%s/tuned.yaml", dir);
    remove(args);
    rmdir(dir);
}

/* Parse a whole JSON text; fails with jansson's position when it is not one. */
static json_t *parse_json(const char *text, const char *what)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("%s is not valid JSON: line %d col %d: %s", what, je.line, je.column, je.text);
    return j;
}

/* Op name of a trace slice: "L12 linear_fc1 fwd" -> "linear_fc1" (layer
 * prefix and direction dropped, as mb_step.h names them; a microbatch suffix
 * " mb3", which older traces carried, too). */
static void slice_op(const char *name, char *out, size_t n)
{
    const char *p = name;
    if (p[0] == 'L' && p[1] >= '0' && p[1] <= '9') {
        const char *q = p + 1;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q == ' ')
            p = q + 1;
    }
    snprintf(out, n, "%s", p);
    char *sp = strrchr(out, ' ');
    if (sp && sp[1] == 'm' && sp[2] == 'b' && sp[3] >= '0' && sp[3] <= '9' &&
        strspn(sp + 3, "0123456789") == strlen(sp + 3))
        *sp = '\0';
    static const char *const dirs[] = {" fwd", " bwd", " recompute"};
    size_t len = strlen(out);
    for (int i = 0; i < 3; i++) {
        size_t dl = strlen(dirs[i]);
        if (len > dl && strcmp(out + len - dl, dirs[i]) == 0) {
            out[len - dl] = '\0';
            break;
        }
    }
}

/* Distinct op names over the complete ("X") slices of a Chrome trace; sets
 * *dispatch / *combine when "ep dispatch" / "ep combine" slices are there. */
static size_t trace_ops(const json_t *root, int *dispatch, int *combine)
{
    const json_t *ev = json_object_get(root, "traceEvents");
    assert_true(json_is_array(ev));
    char seen[128][48];
    size_t n = 0;
    *dispatch = *combine = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        const json_t *e = json_array_get(ev, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!ph || strcmp(ph, "X") != 0 || !name)
            continue;
        char op[48];
        slice_op(name, op, sizeof op);
        *dispatch |= strcmp(op, "ep dispatch") == 0;
        *combine |= strcmp(op, "ep combine") == 0;
        size_t k = 0;
        while (k < n && strcmp(seen[k], op) != 0)
            k++;
        if (k == n && n < 128)
            snprintf(seen[n++], sizeof seen[0], "%s", op);
    }
    return n;
}

/* `--trace -` writes the trace alone on stdout (the report goes to stderr):
 * stdout parses as one JSON document whose slices name at least 20 distinct
 * ops of the headline scenario (a Qwen3-VL MoE: ViT, attention, router,
 * experts, EP dispatch and combine as separate slices, FSDP, loss). */
static void test_trace_stdout(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --trace -", &o, 0), 0);
    json_t *root = parse_json(o, "stdout of --trace -");
    int dispatch, combine;
    size_t n = trace_ops(root, &dispatch, &combine);
    if (n < 20)
        fail_msg("the trace names %zu distinct ops, expected at least 20", n);
    assert_true(dispatch);
    assert_true(combine);
    json_decref(root);
    mb_free(o);
}

/* The trace of tests/data/step/trace_tiny.yaml (4 layers on PP 2, 8
 * microbatches of 1 per rank, DP 1), counted by hand:
 *  - 2 stages x 9 tracks (process, compute, TP/CP/EP/PP/DP/FSDP comm, host) = 18 "M" events;
 *  - 8 microbatches x 2 hand-overs (activations 0 -> 1 forward, gradients 1 -> 0 backward)
 *    = 16 flow starts "s" and 16 flow ends "f";
 *  - each decoder layer's linear_fc1 runs once per microbatch and pass: "L<l> linear_fc1
 *    fwd" and "... bwd" are 8 slices each, microbatch args 0..7 once each, on stage l / 2;
 *  - names are stable: no microbatch in any name, the op alone in args.op.
 * Parsed with jansson: the streamed text is one valid JSON document. */
static void test_trace_counts(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("run tests/data/step/trace_tiny.yaml --trace -", &o, 0), 0);
    json_t *root = parse_json(o, "stdout of --trace - (trace_tiny)");
    const json_t *ev = json_object_get(root, "traceEvents");
    assert_true(json_is_array(ev));
    int meta = 0, fs = 0, ff = 0, fc1[4][2][8] = {{{0}}}, other_fc1 = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        const json_t *e = json_array_get(ev, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        meta += !strcmp(ph, "M");
        fs += !strcmp(ph, "s");
        ff += !strcmp(ph, "f");
        if (strcmp(ph, "X"))
            continue;
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *args = json_object_get(e, "args");
        const char *op = json_string_value(json_object_get(args, "op"));
        assert_non_null(name);
        assert_non_null(op);
        if (strstr(name, " mb"))
            fail_msg("slice name '%s' carries a microbatch", name);
        assert_non_null(strstr(name, op)); /* the op alone is part of the name */
        if (strcmp(op, "linear_fc1"))
            continue;
        int l, mb = (int)json_integer_value(json_object_get(args, "microbatch"));
        char pass[8];
        if (sscanf(name, "L%d linear_fc1 %7s", &l, pass) != 2 || l < 0 || l > 3 || mb < 0 || mb > 7) {
            other_fc1++;
            continue;
        }
        assert_int_equal(json_integer_value(json_object_get(args, "layer")), l);
        assert_int_equal(json_integer_value(json_object_get(e, "pid")), l / 2);
        fc1[l][strcmp(pass, "fwd") ? 1 : 0][mb]++;
        assert_string_equal(json_string_value(json_object_get(args, "pass")), pass);
    }
    assert_int_equal(meta, 18);
    assert_int_equal(fs, 16);
    assert_int_equal(ff, 16);
    assert_int_equal(other_fc1, 0);
    for (int l = 0; l < 4; l++)
        for (int d = 0; d < 2; d++)
            for (int m = 0; m < 8; m++)
                if (fc1[l][d][m] != 1)
                    fail_msg("L%d linear_fc1 %s microbatch %d: %d slices, expected 1", l, d ? "bwd" : "fwd", m,
                             fc1[l][d][m]);
    json_decref(root);
    mb_free(o);
}

/* `--trace F.json.gz` writes gzip (magic 1f 8b) that inflates to the same
 * kind of trace. */
static void test_trace_gzip(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim_trace_XXXXXX", path[256], args[512], *o;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.json.gz", dir);
    snprintf(args, sizeof args, "run scenarios/gb200_ep32.yaml --trace %s", path);
    assert_int_equal(run(args, &o, 0), 0);
    mb_free(o);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char magic[2] = {0, 0};
    assert_int_equal(fread(magic, 1, 2, f), 2);
    fclose(f);
    assert_int_equal(magic[0], 0x1f);
    assert_int_equal(magic[1], 0x8b);
    gzFile gz = gzopen(path, "rb");
    assert_non_null(gz);
    size_t cap = 1 << 20, n = 0;
    char *buf = mb_malloc(cap);
    int got;
    while ((got = gzread(gz, buf + n, (unsigned)(cap - n - 1))) > 0) {
        n += (size_t)got;
        if (cap - n < 4096) {
            cap *= 2;
            buf = mb_realloc(buf, cap);
        }
    }
    assert_true(got == 0);
    gzclose(gz);
    buf[n] = '\0';
    json_t *root = parse_json(buf, "the inflated --trace .json.gz");
    int dispatch, combine;
    assert_true(trace_ops(root, &dispatch, &combine) >= 20);
    assert_true(dispatch && combine);
    json_decref(root);
    mb_free(buf);
    remove(path);
    rmdir(dir);
}

/* `--json` carries the op table as an "ops" array. On the fixture scenario
 * tests/data/ops/moe_ep8.yaml (AlltoAll, EP 8 in one domain) the forward "ep
 * dispatch" entry runs 2 MoE layers x 2 microbatches = 4 times and sends
 * 4 x T k h BF16 (ep - 1)/ep = 4 x 4096 x 4 x 2048 x 2 x 7/8 = 234,881,024 B
 * (bytes do not depend on calibration; the JSON keeps 8 significant digits). */
static void test_json_ops(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("run tests/data/ops/moe_ep8.yaml --json", &o, 0), 0);
    json_t *root = parse_json(o, "--json output");
    const json_t *ops = json_object_get(root, "ops");
    assert_true(json_is_array(ops));
    assert_true(json_array_size(ops) > 0);
    int found = 0, combine = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        const json_t *x = json_array_get(ops, i);
        const char *name = json_string_value(json_object_get(x, "op"));
        const char *dir = json_string_value(json_object_get(x, "direction"));
        assert_non_null(name);
        assert_non_null(dir);
        combine |= strcmp(name, "ep combine") == 0;
        if (strcmp(name, "ep dispatch") != 0 || strcmp(dir, "fwd") != 0)
            continue;
        found = 1;
        assert_true(json_is_true(json_object_get(x, "comm")));
        assert_true(json_number_value(json_object_get(x, "count")) == 4);
        double bytes = json_number_value(json_object_get(x, "bytes")), want = 4 * 4096.0 * 4 * 2048 * 2 * 7 / 8;
        if (!(fabs(bytes / want - 1) < 1e-7))
            fail_msg("ep dispatch fwd bytes %.9g, expected %.9g", bytes, want);
    }
    assert_true(found);
    assert_true(combine);
    json_decref(root);
    mb_free(o);
}

/* `mbsim import` and `--emit` as a user runs them: exit codes 0 / 1 (bad input,
 * file:line:col) / 2 (usage), the imported scenario runs, --emit prints flags. */
static void test_import_emit_cli(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("import megatron tests/data/import/qwen3_30b_a3b_h100_ep16.sh", &o, 1), 2); /* no --system */
    mb_free(o);
    assert_int_equal(run("import nemo x --system dgx_h100", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("import megatron tests/data/import/bad_value.sh --system dgx_h100 --gpus 8", &o, 1), 1);
    assert_non_null(strstr(o, "bad_value.sh:2:1: --tensor-model-parallel-size: parallel.tp: expected an integer"));
    mb_free(o);
    /* a misspelt flag is bad input too (it was a "not imported" note with exit 0, TP left at 1) */
    assert_int_equal(run("import megatron tests/data/import/typo_flag.sh --system dgx_h100 --gpus 8", &o, 1), 1);
    assert_non_null(strstr(o, "typo_flag.sh:6:19: --tensor-model-paralel-size: unknown Megatron-LM flag (did you "
                              "mean --tensor-model-parallel-size?)"));
    mb_free(o);
    assert_int_equal(run("import megatron tests/data/import/qwen3_30b_a3b_h100_ep16.sh --system dgx_h100 "
                         "-o mbsim_test_import.yaml", &o, 1), 0);
    assert_non_null(strstr(o, "--moe-router-load-balancing-type: aux_loss: not imported"));
    mb_free(o);
    assert_int_equal(run("run mbsim_test_import.yaml --json", &o, 0), 0);
    assert_non_null(strstr(o, "\"tokens_per_s_per_gpu\""));
    mb_free(o);
    assert_int_equal(run("run mbsim_test_import.yaml --emit megatron", &o, 0), 0);
    assert_non_null(strstr(o, "--expert-model-parallel-size 16 \\\n"));
    assert_non_null(strstr(o, "--moe-flex-dispatcher-backend hybridep \\\n"));
    mb_free(o);
    assert_int_equal(run("run mbsim_test_import.yaml --emit nemo", &o, 1), 2);
    mb_free(o);
    /* --emit simulates nothing: report options with it are a usage error, not silently dropped */
    assert_int_equal(run("run mbsim_test_import.yaml --emit megatron --json", &o, 1), 2);
    assert_non_null(strstr(o, "it takes no --json"));
    mb_free(o);
    remove("mbsim_test_import.yaml");
}

/* --version names the git revision CMake found; systems/models --json are JSON arrays of the names. */
static void test_version_and_lists(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("--version", &o, 0), 0);
    assert_non_null(strstr(o, "mbsim 0.1.0 (git "));
    mb_free(o);
    static const char *const cmds[][2] = {{"models --json", "qwen3_30b_a3b"}, {"systems --json", "dgx_h100"}};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(run(cmds[c][0], &o, 0), 0);
        json_error_t je;
        json_t *a = json_loads(o, 0, &je);
        if (!a || !json_is_array(a))
            fail_msg("%s: not a JSON array: %s", cmds[c][0], o);
        int found = 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            found |= json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), cmds[c][1]);
        assert_true(found);
        json_decref(a);
        mb_free(o);
    }
    assert_int_equal(run("models --bogus", &o, 1), 2);
    mb_free(o);
}

/* `mbsim sweep --json` writes its object row by row (sim/cli/sweep_out.c); the
 * bytes must be jansson's own dump of the whole object (JSON_INDENT(2),
 * JSON_REAL_PRECISION(6), as before streaming), checked by dumping the parsed
 * output again. --json - adds one newline. Also the usage errors of --resume,
 * --progress and merge. */
static void test_sweep_json_stream(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --shard 0/1 --progress 0 --json -", &o, 0), 0);
    json_error_t je;
    json_t *j = json_loads(o, 0, &je);
    if (!j)
        fail_msg("sweep --json -: not JSON at %d:%d: %s", je.line, je.column, je.text);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 36);
    assert_null(json_object_get(j, "interrupted"));
    char *again = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    size_t n = strlen(o);
    assert_true(n > 0 && o[n - 1] == '\n');
    o[n - 1] = 0;
    assert_string_equal(o, again);
    free(again);
    json_decref(j);
    mb_free(o);
    /* an empty shard: "rows": [] */
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --shard 40/50 --progress 0 --json -", &o, 0), 0);
    j = json_loads(o, 0, &je);
    assert_non_null(j);
    again = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    o[strlen(o) - 1] = 0;
    assert_string_equal(o, again);
    free(again);
    json_decref(j);
    mb_free(o);
    /* a count of one takes the singular noun (issue 17: "1 rows past"): a grid of one
     * configuration, one thread, ranked --top 1 */
    assert_int_equal(run("sweep scenarios/h100_qwen3_30b_a3b_ep8.yaml --set mbs=1 -j 1 --top 1 --progress 0 "
                         "--tsv /dev/null", &o, 1), 0);
    assert_non_null(strstr(o, "sweep of h100_qwen3_30b_a3b_ep8: 1 configuration"));
    assert_non_null(strstr(o, "top 1 configuration that fit (of 1):"));
    assert_non_null(strstr(o, "Pareto front (1 configuration, memory ascending)"));
    assert_non_null(strstr(o, "mbsim sweep: 1 configuration in "));
    assert_non_null(strstr(o, "configurations/s, 1 thread; "));
    mb_free(o);
    /* stderr is a pipe here, not a terminal: progress comes as lines (at least the last one) */
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --shard 0/1 --progress 0.001 --tsv /dev/null", &o, 1), 0);
    assert_non_null(strstr(o, "mbsim sweep: 36/36 configurations (100%), "));
    mb_free(o);
    /* -j defaults to the CPUs the process may run on (one under taskset -c 0), not the machine's */
    if (system("taskset -c 0 true > /dev/null 2>&1") == 0) { /* taskset present and CPU 0 allowed */
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "taskset -c 0 %s sweep tests/data/sweep/small.yaml --shard 0/1 --progress 0 "
                                  "--tsv /dev/null 2>&1", getenv("MBSIM_BIN"));
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char buf[8192];
        size_t got = fread(buf, 1, sizeof buf - 1, p);
        buf[got] = 0;
        assert_int_equal(pclose(p), 0);
        assert_non_null(strstr(buf, "configurations/s, 1 thread; "));
    }
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --resume -", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --progress -1", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("sweep tests/data/sweep/small.yaml --progress", &o, 1), 2);
    assert_non_null(strstr(o, "--progress needs a value"));
    mb_free(o);
    assert_int_equal(run("merge tests/data/sweep/small.yaml", &o, 1), 2);
    mb_free(o);
    assert_int_equal(run("merge tests/data/sweep/small.yaml /nonexistent.tsv", &o, 1), 1);
    assert_non_null(strstr(o, "/nonexistent.tsv: cannot open"));
    mb_free(o);
}

/* `mbsim import hf`: the model written from the public Qwen3-30B-A3B config.json
 * (tests/data/hf/README.md) runs in a scenario and predicts what the shipped
 * qwen3_30b_a3b predicts (the two files describe one architecture: the
 * expectation is the shipped model's own prediction, not a number). */
static void test_import_hf_cli(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim_cli_hf_XXXXXX", args[512], path[256], *o, *a, *b;
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "import hf tests/data/hf/qwen3_30b_a3b.json -o %s/q3.yaml", dir);
    assert_int_equal(run(args, &o, 1), 0);
    assert_non_null(strstr(o, "rope_theta = 1000000.0: RoPE"));
    assert_non_null(strstr(o, "wrote "));
    mb_free(o);
    const char *models[] = {"", "qwen3_30b_a3b"};
    char *out[2];
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/s%d.yaml", dir, k);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "schema_version: 2\nname: hf\nmodel: %s\nsystem: {preset: dgx_h100, gpus: 8}\n"
                    "data: {seq_length: 2048, global_batch_size: 16, micro_batch_size: 1}\nparallel: {tp: 1, ep: 8}\n",
                k ? models[k] : "q3.yaml");
        fclose(fp);
        snprintf(args, sizeof args, "run %s --json", path);
        if (run(args, &out[k], 1) != 0)
            fail_msg("%s: %s", args, out[k]);
    }
    a = strstr(out[0], "\"step_time_s\"");
    b = strstr(out[1], "\"step_time_s\"");
    assert_non_null(a);
    assert_non_null(b);
    assert_memory_equal(a, b, 40);
    mb_free(out[0]);
    mb_free(out[1]);
    assert_int_equal(run("import hf tests/data/hf/bad_type.json", &o, 1), 1);
    assert_non_null(strstr(o, "bad_type.json:4:3:"));
    mb_free(o);
    assert_int_equal(run("import hf tests/data/hf/llama3_8b.json --system dgx_h100", &o, 1), 2);
    mb_free(o);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/s%d.yaml", dir, k);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/q3.yaml", dir);
    remove(path);
    rmdir(dir);
}

/* Options are parsed with getopt_long by every subcommand: "--opt=value" and
 * "-jN" are the same as separate words, options and operands mix, "--" ends
 * the options, an abbreviated long option is refused as unknown (naming the
 * options it abbreviates), a missing value names the option; usage errors
 * exit 2. */
static void test_getopt_cli(void **state)
{
    (void)state;
    char *a, *b;
    /* --emit=bridge after the file == --emit bridge before it */
    assert_int_equal(run("run --emit bridge scenarios/gb200_ep32.yaml", &a, 0), 0);
    assert_int_equal(run("run scenarios/gb200_ep32.yaml --emit=bridge", &b, 0), 0);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "model.tensor_model_parallel_size="));
    mb_free(a);
    mb_free(b);
    /* "--" ends the options: what follows is a file, not an option */
    assert_int_equal(run("run -- --json", &a, 1), 1);
    assert_non_null(strstr(a, "--json: cannot open"));
    mb_free(a);
    const struct {
        const char *args, *msg;
    } bad[] = {
        {"run scenarios/gb200_ep32.yaml --js", "mbsim run: unknown option '--js' (did you mean --json?)"},
        {"run scenarios/gb200_ep32.yaml --bogus=1", "mbsim run: unknown option '--bogus'\n"},
        {"run scenarios/gb200_ep32.yaml -q", "mbsim run: unknown option '-q'"},
        {"run scenarios/gb200_ep32.yaml --trace", "mbsim run: --trace needs a value"},
        {"run scenarios/gb200_ep32.yaml --json=1", "mbsim run: --json takes no value"},
        {"sweep scenarios/gb200_ep32.yaml --t 3", "mbsim sweep: unknown option '--t' (did you mean --top or --tsv?)"},
        {"sweep scenarios/gb200_ep32.yaml -j0", "mbsim sweep: -j '0': expected a number of threads from 1 to 1024"},
        {"calibrate runs x.csv --jobs 2x", "mbsim calibrate runs: --jobs '2x': expected a number of threads from 1 to 1024"},
        {"sweep scenarios/gb200_ep32.yaml -j", "mbsim sweep: -j needs a value"},
        {"validate --jobs", "mbsim validate: --jobs needs a value"},
        {"tune scenarios/gb200_ep32.yaml -o", "mbsim tune: -o needs a value"},
        {"merge --top=-1 a.yaml b.tsv", "mbsim merge: --top expects a count from 0 to 1000000, got '-1'"},
        /* counts are digits only, no blank on either side (cli_parse_long; " 0/2" was taken, "2 " refused) */
        {"sweep scenarios/gb200_ep32.yaml --shard ' 0/2'", "mbsim sweep: --shard expects i/N with 0 <= i < N"},
        {"merge --top ' 5' a.yaml b.tsv", "mbsim merge: --top expects a count from 0 to 1000000, got ' 5'"},
        {"collective --system dgx_h100 --gpus ' 8' --op all_reduce", "mbsim collective: --gpus ' 8': expected an"},
        {"tune scenarios/gb200_ep32.yaml -j +2", "mbsim tune: -j '+2': expected a number of threads"},
        {"import megatron f.sh --system dgx_h100 --gpus=0", "mbsim import: --gpus '0': expected an integer from 1 to 1000000"},
        {"calibrate kineto t.json --shapes s.yaml", "mbsim calibrate kineto: unknown option '--shapes'"},
        {"collective --system dgx_h100 --gpus 8 --op all_reduce extra", "mbsim collective: unexpected argument 'extra'"},
        {"systems --jsn", "mbsim systems: unknown option '--jsn'"},
        {"topo dgx_h100 --xml", "mbsim topo: unknown option '--xml'"},
        {"plot validate x.json --output y.png", "mbsim plot: unknown option '--output'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(bad[i].args, &a, 1), 2);
        if (!strstr(a, bad[i].msg))
            fail_msg("mbsim %s: expected '%s' in:\n%s", bad[i].args, bad[i].msg, a);
        mb_free(a);
    }
}

/* `validate --baseline`: against its own --json output nothing drifted (exit
 * 0); against a baseline whose only row, ok_tokens, predicted 1 token/s, that
 * row moved past any threshold (exit 3) and the other 10 rows of small.csv are
 * added; with --json stdout stays the new baseline (the report goes to stderr).
 * Option misuse exits 2, an unreadable baseline 1 before anything is simulated. */
static void test_validate_baseline_cli(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim_baseline_XXXXXX", args[1024], *o;
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "validate tests/data/validate/small.csv --json > %s/base.json", dir);
    assert_int_equal(run(args, &o, 0), 0);
    mb_free(o);
    snprintf(args, sizeof args, "validate tests/data/validate/small.csv --baseline %s/base.json", dir);
    assert_int_equal(run(args, &o, 0), 0);
    assert_non_null(strstr(o, "(11 rows then, 11 now): 11 unchanged, 0 changed"));
    assert_non_null(strstr(o, "drift: none past 5.00 % (largest 0.00 %)"));
    mb_free(o);
    const char *off = "validate tests/data/validate/small.csv --baseline tests/data/validate/baseline_small_off.json";
    assert_int_equal(run(off, &o, 0), 3);
    assert_non_null(strstr(o, "(1 row then, 11 now): 0 unchanged, 1 changed, 0 metric changed, 0 now skipped, 0 now "
                              "predicted, 10 added, 0 removed"));
    assert_non_null(strstr(o, "ok_tokens"));
    assert_non_null(strstr(o, "PAST THRESHOLD"));
    assert_non_null(strstr(o, "drift: 1 row past 5.00 %"));
    mb_free(o);
    snprintf(args, sizeof args, "%s --json --drift-threshold=1", off);
    assert_int_equal(run(args, &o, 0), 3);
    json_error_t je;
    json_t *j = json_loads(o, 0, &je);
    assert_non_null(j); /* stdout holds the JSON alone */
    assert_int_equal(json_integer_value(json_object_get(j, "n_rows")), 11);
    json_decref(j);
    mb_free(o);
    /* a memory-only scenario (no time to drift) whose baseline said OOM where it now fits: exit 3 */
    snprintf(args, sizeof args, "validate tests/data/validate/tiny_oom.yaml --json > %s/mem.json", dir);
    assert_int_equal(run(args, &o, 0), 0);
    mb_free(o);
    snprintf(args, sizeof args, "%s/mem.json", dir);
    j = json_load_file(args, 0, &je);
    json_t *row = json_array_get(json_object_get(j, "rows"), 0);
    assert_string_equal(json_string_value(json_object_get(row, "memory_verdict")), "fits");
    json_object_set_new(row, "memory_verdict", json_string("OOM"));
    assert_int_equal(json_dump_file(j, args, 0), 0);
    json_decref(j);
    snprintf(args, sizeof args, "validate tests/data/validate/tiny_oom.yaml --baseline %s/mem.json", dir);
    assert_int_equal(run(args, &o, 0), 3);
    assert_non_null(strstr(o, "OOM -> fits  PAST THRESHOLD"));
    assert_non_null(strstr(o, "memory drift: 1 row past 5.00 % or with another verdict (1 verdict changed)"));
    mb_free(o);
    static const char *const usage[] = {
        "validate tests/data/validate/small.csv --drift-threshold 5",
        "validate tests/data/validate/small.csv --baseline x.json --drift-threshold -1",
        "validate tests/data/validate/small.csv --baseline x.json --cv family",
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(run(usage[i], &o, 1), 2);
        mb_free(o);
    }
    assert_int_equal(run("validate tests/data/validate/small.csv --baseline tests/data/validate/baseline_no_rows.json",
                         &o, 1), 1);
    assert_non_null(strstr(o, "baseline_no_rows.json: not an mbsim validate --json output"));
    assert_null(strstr(o, "MAPE")); /* refused before validating */
    mb_free(o);
    snprintf(args, sizeof args, "rm -r %s", dir);
    assert_int_equal(system(args), 0);
}

/* `validate --recipes`: the recipe folder's file for rec_row is used (the report counts it and the
 * row's note names it), the file whose row no CSV has is warned about on stderr, as is one whose row
 * is skipped (with the row's reason); a recipe file whose layout is not the row's exits 1 (bad
 * input) with the CSV line and the difference. */
static void test_validate_recipes_cli(void **state)
{
    (void)state;
    char *o;
    assert_int_equal(run("validate tests/data/validate/recipes.csv --recipes tests/data/validate/recipes", &o, 1), 0);
    assert_non_null(strstr(o, "rows simulated from a recipe file (--recipes; named in the note): 1"));
    assert_non_null(strstr(o, "recipe from tests/data/validate/recipes/rec_row.yaml"));
    assert_non_null(strstr(o, "warning: recipe file tests/data/validate/recipes/nobody.yaml not used: no row "
                              "'no_such_row' in the CSVs given"));
    mb_free(o);
    /* the row is there but skipped before its recipe applies: the warning says so, with the row's reason */
    assert_int_equal(run("validate tests/data/validate/recipes_skipped.csv --recipes tests/data/validate/recipes/rec_row.yaml",
                         &o, 1), 1); /* nothing predicted */
    assert_non_null(strstr(o, "recipe file tests/data/validate/recipes/rec_row.yaml not used: row 'rec_row' "
                              "(tests/data/validate/recipes_skipped.csv:2) is skipped (mbs not stated)"));
    mb_free(o);
    assert_int_equal(run("validate tests/data/validate/recipes.csv --recipes tests/data/validate/recipes_bad/tp4.yaml",
                         &o, 1), 1);
    assert_non_null(strstr(o, "recipes.csv:2:1: row 'rec_row': recipe file tests/data/validate/recipes_bad/tp4.yaml"));
    assert_null(strstr(o, "MAPE"));
    mb_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_exit_codes), cmocka_unit_test(test_topo_cli),
                                       cmocka_unit_test(test_report_collectives),
                                       cmocka_unit_test(test_json_report),
                                       cmocka_unit_test(test_validate_cli), cmocka_unit_test(test_validate_recipes_cli),
                                       cmocka_unit_test(test_calibrate_nccl_cli),
                                       cmocka_unit_test(test_tune_output_runs), cmocka_unit_test(test_trace_stdout), cmocka_unit_test(test_trace_counts),
                                       cmocka_unit_test(test_trace_gzip), cmocka_unit_test(test_json_ops),
                                       cmocka_unit_test(test_fit_cli_errors), cmocka_unit_test(test_calibrate_transfer_cli),
                                       cmocka_unit_test(test_import_emit_cli),
                                       cmocka_unit_test(test_version_and_lists),
                                       cmocka_unit_test(test_sweep_json_stream),
                                       cmocka_unit_test(test_import_hf_cli),
                                       cmocka_unit_test(test_getopt_cli),
                                       cmocka_unit_test(test_validate_baseline_cli)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
