/*
 * test_nccl_tests.c -- nccl-tests log importer (calibration/import_nccl_tests.c)
 * on the real A3-Mega sample and on broken variants in tests/data/nccl/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mb_import.h"

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
    assert_int_equal(mb_nccl_log_write_yaml(&log, tmp), 0);
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
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_import_nccl_tests("tests/data/nccl/does_not_exist.txt", &log, &e), -1);
    assert_non_null(strstr(e.msg, "cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample),    cmocka_unit_test(test_mpi_prefix), cmocka_unit_test(test_multi_old),
        cmocka_unit_test(test_truncated), cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
