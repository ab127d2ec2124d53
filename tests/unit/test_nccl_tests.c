/*
 * test_nccl_tests.c -- nccl-tests log importer (calibration/import/import_nccl_tests.c)
 * on the real A3-Mega sample and on broken variants in tests/data/nccl/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <math.h>
#include <unistd.h>

#include "mb_calib.h"
#include "mb_import.h"
#include "mb_util.h"

static char path_buf[1024];

static const char *sample(void)
{
    const char *sh = getenv("MBSIM_SHARED_DIR");
    snprintf(path_buf, sizeof path_buf, "%s/data/formats/nccl_tests_all_reduce.txt", sh ? sh : "../shared");
    return path_buf;
}

/* 1. The real sample: 31 rows 8 B .. 8 GiB, 16 ranks on 2 hosts, two blocks. */
static void test_sample(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests(sample(), &log, &e), 0);
    assert_int_equal(log.n_runs, 1);
    const struct mb_nccl_run *r = &log.runs[0];
    assert_string_equal(r->op, "all_reduce");
    assert_int_equal(r->n_ranks, 16);
    assert_int_equal(r->n_hosts, 2);
    assert_string_equal(r->gpu_name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(r->dtype, "float");
    assert_string_equal(r->redop, "sum");
    assert_int_equal(r->root, -1);
    assert_int_equal(r->truncated, 0);
    assert_int_equal(r->n_points, 31);
    assert_true(r->points[0].size == 8 && r->points[0].time_us[0] == 135.8 && r->points[0].time_us[1] == 123.5);
    const struct mb_nccl_point *last = &r->points[30];
    assert_true(last->size == 8589934592.0 && last->time_us[0] == 47535 && last->busbw[0] == 338.82);
    assert_true(last->busbw[1] == 337.35 && last->wrong[0] == 0 && last->n_blocks == 2);
    assert_true(r->avg_busbw == 70.742);
    /* YAML table writes without error */
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    assert_int_equal(mb_nccl_log_write_table(&log, "H100", "H100", 0, tmp, &e), 0);
    assert_true(ftell(tmp) > 1000);
    fclose(tmp);
    mb_nccl_log_free(&log);
    assert_int_equal(log.n_runs, 0);
}

/* 2. MPI-prefixed lines parse like plain ones; op from columns (ratio 1, sum, root -1). */
static void test_mpi_prefix(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/mpi_prefixed.txt", &log, &e), 0);
    assert_int_equal(log.n_runs, 1);
    assert_string_equal(log.runs[0].op, "all_reduce");
    assert_string_equal(log.runs[0].op_from, "columns");
    assert_int_equal(log.runs[0].n_points, 9);
    assert_true(log.runs[0].points[8].size == 8589934592.0);
    assert_true(log.runs[0].avg_busbw == 70.742);
    mb_nccl_log_free(&log);
}

/* 3. Two runs in one file, older layout (no root, `error`), NCCL INFO and blank lines, ops from header. */
static void test_multi_old(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/multi_op_old.txt", &log, &e), 0);
    assert_int_equal(log.n_runs, 2);
    assert_string_equal(log.runs[0].op, "all_gather");
    assert_string_equal(log.runs[0].op_from, "header");
    assert_int_equal(log.runs[0].n_points, 3);
    assert_int_equal(log.runs[0].n_ranks, 2);
    assert_int_equal(log.runs[0].n_hosts, 1);
    assert_true(log.runs[0].points[2].busbw[1] == 73.37 && log.runs[0].points[2].wrong[1] == 0);
    assert_string_equal(log.runs[1].op, "reduce_scatter");
    assert_string_equal(log.runs[1].redop, "sum");
    assert_int_equal(log.runs[1].n_points, 2);
    /* a second file appends */
    assert_int_equal(mb_import_nccl_tests(sample(), &log, &e), 0);
    assert_int_equal(log.n_runs, 3);
    mb_nccl_log_free(&log);
}

/* 4. Truncated file: cut last row dropped, run marked truncated. */
static void test_truncated(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/truncated.txt", &log, &e), 0);
    assert_int_equal(log.runs[0].n_points, 7);
    assert_int_equal(log.runs[0].truncated, 1);
    assert_true(log.runs[0].avg_busbw < 0);
    mb_nccl_log_free(&log);
}

/* 5. Bad logs: the message names file:line. */
static void check_bad(const char *file, const char *want)
{
    struct mb_nccl_log log = {0};
    struct mb_err e;
    char msg[1024];
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests(file, &log, &e), -1);
    assert_int_equal(log.n_runs, 0);
    mb_err_format(&e, msg, sizeof msg);
    assert_string_equal(msg, want);
}

static void test_bad(void **state)
{
    (void)state;
    check_bad("tests/data/nccl/bad_row.txt",
              "tests/data/nccl/bad_row.txt:29:1: expected 13 fields like the column header, got 7");
    check_bad("tests/data/nccl/bad_garbage.txt",
              "tests/data/nccl/bad_garbage.txt:7:1: expected an nccl-tests result row (size first), got 'garbage'");
    check_bad("tests/data/nccl/no_rows.txt", "tests/data/nccl/no_rows.txt:3:1: no nccl-tests result rows found");
    /* a bad field names its column (1-based character), field number and the value */
    check_bad("tests/data/nccl/bad_time.txt",
              "tests/data/nccl/bad_time.txt:25:59: time (field 6): 'N/A' is not a positive number of microseconds");
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/does_not_exist.txt", &log, &e), -1);
    assert_non_null(strstr(e.msg, "cannot open"));
}

/* Write `log` as a calibration overlay on H100 to a temporary file and load it. */
static struct mb_calib *table_load(const struct mb_nccl_log *log, int ranks)
{
    char tmp[] = "/tmp/mbsim_nccl_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_nccl_log_write_table(log, "H100", "H100", ranks, f, &e), 0);
    fclose(f);
    struct mb_calib *c = NULL;
    int rc = mb_calib_load(NULL, tmp, &c, &e);
    remove(tmp);
    if (rc) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    return c;
}

/* 6. Held-out check of measured-collective answers on the real 2 x 8 H100
 * A3-Mega all-reduce log: calibrate from the out-of-place times of every other
 * size (8 B, 32 B, ..., 8 GiB: factor 4), then answer the 15 sizes in between
 * (16 B ... 4 GiB), which the table never saw, and compare with both measured
 * blocks. Issue 3's targets: within 10 % from 1 MiB up, within 25 % for
 * latency-bound sizes. The 16 MiB size sits on the log's switch between its two
 * regimes (150 us + S/20 GB/s up to 16 MiB, 0.87 ms + S/185 GB/s from 32 MiB):
 * the chord of 8-32 MiB would be -25 %, the neighbouring lines give -1.7 %.
 * Also: a table of the whole log answers each measured size with the mean of
 * its two blocks. */
static void test_held_out(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0}, half = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests(sample(), &log, &e), 0);
    const struct mb_nccl_run *r = &log.runs[0];
    half.n_runs = 1;
    half.runs = mb_calloc(1, sizeof *half.runs);
    half.runs[0] = *r;
    half.runs[0].points = mb_calloc((size_t)r->n_points, sizeof *r->points);
    half.runs[0].n_points = 0;
    for (int k = 0; k < r->n_points; k += 2) {
        struct mb_nccl_point p = r->points[k];
        p.n_blocks = 1;
        half.runs[0].points[half.runs[0].n_points++] = p;
    }
    struct mb_calib *c = table_load(&half, 0);
    assert_int_equal((int)mb_calib_n_coll_points(c), 16);
    double worst_big = 0, worst_small = 0;
    for (int k = 1; k < r->n_points; k += 2) {
        const struct mb_nccl_point *p = &r->points[k];
        double lat, bw;
        assert_int_equal(mb_calib_coll_line(c, "all_reduce", 16, p->size, &lat, &bw), 1);
        double t = (lat + p->size / bw) * 1e6;
        for (int bl = 0; bl < 2; bl++) {
            double err = fabs(t / p->time_us[bl] - 1);
            if (p->size >= 1048576)
                worst_big = fmax(worst_big, err);
            else
                worst_small = fmax(worst_small, err);
        }
    }
    printf("held out: worst %.1f %% from 1 MiB, %.1f %% below\n", 100 * worst_big, 100 * worst_small);
    assert_true(worst_big < 0.10);
    assert_true(worst_small < 0.25);
    mb_calib_free(c);
    mb_free(half.runs[0].points);
    half.runs[0].points = NULL;
    mb_free(half.runs);

    c = table_load(&log, 0);
    assert_int_equal((int)mb_calib_n_coll_points(c), 62);
    for (int k = 0; k < r->n_points; k++) {
        const struct mb_nccl_point *p = &r->points[k];
        double lat, bw;
        assert_int_equal(mb_calib_coll_line(c, "allreduce", 16, p->size, &lat, &bw), 1);
        double mean = (p->time_us[0] + p->time_us[1]) / 2 * 1e-6;
        assert_true(fabs((lat + p->size / bw) / mean - 1) < 1e-9);
    }
    /* another group size has no measurement */
    double lat, bw;
    assert_int_equal(mb_calib_coll_line(c, "all_reduce", 8, 1 << 20, &lat, &bw), 0);
    mb_calib_free(c);
    mb_nccl_log_free(&log);
}

/* 7. Runs the table cannot use are refused before anything is written: no
 * "# Rank" lines (mpi_prefixed.txt) without a group size (--ranks supplies it),
 * a --ranks that contradicts the Rank lines, ranks on two GPU kinds. */
static void test_table_needs_ranks(void **state)
{
    (void)state;
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/mpi_prefixed.txt", &log, &e), 0);
    assert_int_equal(mb_nccl_log_write_table(&log, "H100", "H100", 0, NULL, &e), -1);
    char buf[1024];
    mb_err_format(&e, buf, sizeof buf);
    assert_non_null(strstr(buf, "tests/data/nccl/mpi_prefixed.txt:"));
    assert_non_null(strstr(buf, "give the group size with --ranks N"));
    struct mb_calib *c = table_load(&log, 16);
    assert_int_equal((int)mb_calib_n_coll_points(c), 18);
    mb_calib_free(c);
    mb_nccl_log_free(&log);
    /* --ranks does not override a log's own Rank lines (16 in the sample) */
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests(sample(), &log, &e), 0);
    assert_int_equal(mb_nccl_log_write_table(&log, "H100", "H100", 8, NULL, &e), -1);
    mb_err_format(&e, buf, sizeof buf);
    assert_non_null(strstr(buf, "the log lists 16 ranks ('#  Rank N ...' lines) but --ranks is 8"));
    mb_nccl_log_free(&log);
    /* ranks on two GPU kinds (rank 9 of this copy prints an H200) */
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/mixed_gpus_all_reduce.txt", &log, &e), 0);
    assert_int_equal(mb_nccl_log_write_table(&log, "H100", "H100", 0, NULL, &e), -1);
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, "tests/data/nccl/mixed_gpus_all_reduce.txt:22:1: the ranks of this run are on different "
                             "GPUs ('NVIDIA H100 80GB HBM3' and 'NVIDIA H200'); calibrate one GPU kind at a time");
    mb_nccl_log_free(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample),    cmocka_unit_test(test_mpi_prefix), cmocka_unit_test(test_multi_old),
        cmocka_unit_test(test_truncated), cmocka_unit_test(test_bad),
        cmocka_unit_test(test_held_out),  cmocka_unit_test(test_table_needs_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
