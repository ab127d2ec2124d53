/*
 * test_step_util.h -- helpers shared by the whole-step tests (test_step.c, test_step_memory.c,
 * test_step_moe.c): load a scenario, point it at a fixture calibration table, simulate it (after
 * mb_scenario_check, or with replaced framework parameters), and read one op's time. Each failure
 * is a cmocka failure with the library's message.
 */
#ifndef MBSIM_TEST_STEP_UTIL_H
#define MBSIM_TEST_STEP_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_scenario.h"
#include "mb_step.h"

static inline void load(const char *path, struct mb_scenario *s)
{
    struct mb_err e;
    mb_err_clear(&e);
    int rc = mb_scenario_load(path, s, &e);
    if (rc) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

#define FIXTURE_H100 "tests/data/calib/fixture_H100.yaml"
#define FIXTURE_GB200 "tests/data/calib/fixture_GB200.yaml"

/* Point a loaded scenario at a fixture calibration table instead of the shipped one. */
static inline void use_fixture(struct mb_scenario *s, const char *table)
{
    snprintf(s->calib_path, sizeof s->calib_path, "%s", table);
}

static inline void sim(const struct mb_scenario *s, struct mb_result *r)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_step_simulate(s, r, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

/* mb_scenario_check (it must pass: the test changed fields by hand) then sim. */
static inline void check_sim(struct mb_scenario *s, struct mb_result *r)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_check(s, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    sim(s, r);
}

/* Simulate s with table `path` whose framework parameters are replaced by fw
 * (NULL: the table's own), optionally with the per-op table. */
static inline void sim_fw(const struct mb_scenario *s, const char *path, const double *fw, int ops, struct mb_result *r)
{
    struct mb_calib *cal = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", path, &cal, &e), 0);
    if (fw) {
        struct mb_calib_framework f;
        mb_calib_framework_get(cal, &f);
        for (int p = 0; p < MB_FW_COUNT; p++)
            f.v[p] = fw[p];
        mb_calib_framework_set(cal, &f);
    }
    struct mb_step_opts o = {.critical_path = 0, .ops = ops, .cal = cal};
    if (mb_step_simulate_opts(s, &o, r, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    mb_calib_free(cal);
}

/* Seconds per step of op `name` in direction dir (0 when the op table has none). */
static inline double op_time_s(const struct mb_result *r, const char *name, int dir)
{
    double t = 0;
    for (size_t k = 0; k < r->n_ops; k++)
        if (r->ops[k].dir == dir && !strcmp(r->ops[k].name, name))
            t = r->ops[k].time_s;
    return t;
}

#endif
