/*
 * test_validate_junit.c -- the JUnit report of a validation (mb_validate_junit.c) on hand-built
 * rows, so every verdict is exercised, the error one too (a row whose simulation failed), which the
 * CLI test's fixture CSV has none of:
 *
 *   row        what it is                                     at --max-error 10
 *   ok         predicted, err +4 %                            pass
 *   far        predicted, err -12.5 %                         failure (|-12.5| > 10)
 *   edge       predicted, err +10 % exactly                   pass (past the threshold fails, not at it)
 *   simfail    skipped: "simulation failed: no route"         error
 *   simnone    skipped: "simulation gave no step_time_s"      error
 *   nogpus     skipped: "gpus not stated"                     skipped
 *   memonly    scenario file, memory only, mem err +20 %      failure (memory judged instead of time)
 *   memnone    scenario file, memory only, nothing compared   pass
 *
 * and the markup characters and a control character of an id written escaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_validate.h"

static void row(struct mb_val_row *r, const char *id, double err, const char *skip)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->system, sizeof r->system, "dgx_h100");
    snprintf(r->metric, sizeof r->metric, "step_time_s");
    snprintf(r->source, sizeof r->source, "runs.csv");
    r->measured = 10;
    r->predicted = 10 * (1 + err / 100);
    r->err_pct = err;
    if (skip) {
        r->skipped = 1;
        snprintf(r->reason, sizeof r->reason, "%s", skip);
    }
}

static void build(struct mb_val_summary *s, struct mb_val_row *rows)
{
    row(&rows[0], "ok", 4, NULL);
    row(&rows[1], "far", -12.5, NULL);
    row(&rows[2], "edge", 10, NULL);
    row(&rows[3], "simfail", 0, "simulation failed: no route");
    row(&rows[4], "simnone", 0, "simulation gave no step_time_s");
    row(&rows[5], "nogpus", 0, "gpus not stated");
    row(&rows[6], "memonly", 0, NULL);
    rows[6].mem_only = rows[6].mem_compared = 1;
    rows[6].meas_mem_gib = 50;
    rows[6].pred_mem_gib = 60;
    rows[6].mem_err_pct = 20;
    row(&rows[7], "memnone", 0, NULL);
    rows[7].mem_only = 1;
    memset(s, 0, sizeof *s);
    s->rows = rows;
    s->n_rows = 8;
    s->n_predicted = 5;
    s->n_skipped = 3;
    s->mape_pct = 7.5;
}

static void test_kinds(void **state)
{
    (void)state;
    struct mb_val_row rows[8];
    struct mb_val_summary s;
    build(&s, rows);
    static const enum mb_val_junit_kind want[8] = {MB_JUNIT_PASS,    MB_JUNIT_FAILURE, MB_JUNIT_PASS,
                                                   MB_JUNIT_ERROR,   MB_JUNIT_ERROR,   MB_JUNIT_SKIPPED,
                                                   MB_JUNIT_FAILURE, MB_JUNIT_PASS};
    double e;
    for (int i = 0; i < 8; i++)
        assert_int_equal(mb_validate_junit_kind(&rows[i], 10, &e), want[i]);
    assert_true(mb_validate_junit_kind(&rows[6], 10, &e) == MB_JUNIT_FAILURE && e == 20);
    size_t n[4];
    mb_validate_junit_count(&s, 10, n);
    assert_int_equal(n[MB_JUNIT_PASS], 3);
    assert_int_equal(n[MB_JUNIT_FAILURE], 2);
    assert_int_equal(n[MB_JUNIT_ERROR], 2);
    assert_int_equal(n[MB_JUNIT_SKIPPED], 1);
    /* at 25 %: no failure left; at 0: every predicted row with a non-zero error fails (ok, far, edge, memonly) */
    mb_validate_junit_count(&s, 25, n);
    assert_int_equal(n[MB_JUNIT_FAILURE], 0);
    mb_validate_junit_count(&s, 0, n);
    assert_int_equal(n[MB_JUNIT_FAILURE], 4);
}

static char *junit_text(const struct mb_val_summary *s, double max)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(mb_validate_print_junit(s, max, f), 0);
    fclose(f);
    return buf;
}

static void test_xml(void **state)
{
    (void)state;
    struct mb_val_row rows[8];
    struct mb_val_summary s;
    build(&s, rows);
    snprintf(rows[0].id, sizeof rows[0].id, "a&b<c>'d\"\x01");
    char *x = junit_text(&s, 10);
    assert_non_null(strstr(x, "<testsuite name=\"mbsim validate\" tests=\"8\" failures=\"2\" errors=\"2\" skipped=\"1\">"));
    assert_non_null(strstr(x, "name=\"a&amp;b&lt;c&gt;&apos;d&quot;?\""));
    assert_non_null(strstr(x, "<error message=\"simulation failed: no route\"/>"));
    assert_non_null(strstr(x, "<skipped message=\"gpus not stated\"/>"));
    assert_non_null(strstr(x, "<failure type=\"error\" message=\"step_time_s error -12.50% is past 10%\">"));
    assert_non_null(strstr(x, "peak memory measured 50, predicted 60, error +20.00% (limit 10%)"));
    assert_non_null(strstr(x, "<property name=\"mape_pct\" value=\"7.5\"/>"));
    /* one <testcase per row, every one closed */
    size_t open = 0, closed = 0;
    for (const char *p = x; (p = strstr(p, "<testcase ")); p++)
        open++;
    for (const char *p = x; (p = strstr(p, "</testcase>")); p++)
        closed++;
    assert_int_equal(open, 8);
    assert_int_equal(closed, 8 - 3); /* the three passing rows are empty elements: <testcase .../> */
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kinds), cmocka_unit_test(test_xml)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
