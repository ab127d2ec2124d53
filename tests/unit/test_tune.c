/*
 * test_tune.c -- tune on the headline scenario: the explanation follows the
 * guide's order, the recommendation fits, beats the start, is the best of the
 * exact sweep of the grid tune searched (every configuration simulated here,
 * the reference), breaks no mirrored Megatron rule, and the recommended
 * scenario written as YAML loads back to the same result.
 * The headline scenario runs on the GB200 test fixture table
 * (tests/data/calib/fixture_GB200.yaml), not the shipped one, so recalibrating
 * calibration/tables/GB200.yaml does not change what the tuner walks through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mb_tune.h"

static void test_tune_headline(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_load("scenarios/gb200_ep32.yaml", &s, &e), 0);
    snprintf(s.calib_path, sizeof s.calib_path, "%s", "tests/data/calib/fixture_GB200.yaml");
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *log = open_memstream(&logbuf, &loglen);
    struct mb_tune_result t;
    /* a narrowed grid (the test's run time); the dispatchers, EPs and recompute granularities are tune's own */
    struct mb_tune_opts o = {.jobs = 2, .n_set = 4, .set = {"parallel.tp=1,2", "parallel.pp=1,2",
                                                          "recompute.modules=none,moe_act",
                                                          "cuda_graph.modules=none,attn+moe_router+moe_preprocess"}};
    assert_int_equal(mb_tune_opts(&s, &o, log, &t, &e), 0);
    fclose(log);
    /* the explanation in the guide's order */
    const char *steps[] = {"searching", "best of the grid", "[1] EP", "[2] TP", "[2] PP", "[3] recompute", "[4] MBS",
                           "[6] dispatcher", "[7] CUDA graphs", "the winner (A) against the runner-up (B)",
                           "[7] communication overlap", "the starting scenario (A) against the recommendation (B)",
                           "recommended:"};
    const char *at = logbuf;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const char *p = strstr(at, steps[i]);
        if (!p)
            fail_msg("tune log lacks '%s' after position %td", steps[i], at - logbuf);
        at = p + 1;
    }
    assert_true(t.start_ok);
    assert_false(t.best_r.oom);
    assert_true(t.best_r.tokens_per_s_per_gpu > t.start_r.tokens_per_s_per_gpu);
    /* workload, GBS, precision and sequence stay fixed */
    assert_int_equal(t.best.global_batch_size, s.global_batch_size);
    assert_int_equal(t.best.seq_length, s.seq_length);
    assert_string_equal(t.best.prec.label, s.prec.label);
    assert_string_equal(t.best.model.name, s.model.name);
    assert_true(t.screen.simulated > 0 && t.screen.simulated < t.configurations - t.invalid);

    /* the reference: every configuration of the same grid simulated (no screen) */
    struct mb_sweep sw;
    assert_int_equal(mb_tune_grid(&s, &o, &sw, &e), 0);
    assert_int_equal(mb_sweep_size(&sw), t.configurations);
    struct mb_sweep_row *rows;
    size_t n;
    assert_int_equal(mb_sweep_run(&sw, 0, 1, 2, NULL, NULL, &rows, &n), 0);
    size_t *order = malloc(n * sizeof *order);
    assert_true(mb_sweep_rank(rows, n, order) > 0);
    assert_true(t.grid_best_tput == rows[order[0]].tokens_per_s_per_gpu); /* the same row, 6 digits */
    assert_true(t.best_r.tokens_per_s_per_gpu >= 0.99 * rows[order[0]].tokens_per_s_per_gpu);
    free(order);
    mb_free(rows);
    mb_sweep_free(&sw);
    /* no recommendation or runner-up breaks a mirrored Megatron rule */
    assert_int_equal(mb_scenario_check(&t.best, &e), 0);
    for (int i = 0; i < t.n_runners; i++)
        assert_int_equal(mb_scenario_check(&t.runner[i], &e), 0);

    /* YAML round trip: the written recommendation loads and predicts the same */
    FILE *fp = fopen("mbsim_test_tuned.yaml", "w");
    assert_non_null(fp);
    assert_int_equal(mb_scenario_write_yaml(&t.best, fp), 0);
    fclose(fp);
    struct mb_scenario back;
    if (mb_scenario_load("mbsim_test_tuned.yaml", &back, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    remove("mbsim_test_tuned.yaml");
    struct mb_result r;
    assert_int_equal(mb_step_simulate(&back, &r, &e), 0);
    assert_true(fabs(r.step_time_s / t.best_r.step_time_s - 1) < 1e-12);
    assert_non_null(strstr(r.calib_path, "fixture_GB200.yaml")); /* the table travels with the scenario */
    mb_scenario_free(&back);
    mb_tune_free(&t);
    mb_scenario_free(&s);
    free(logbuf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tune_headline)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
