/*
 * test_fit.c -- fitting the framework-time model (calibration/fit/mb_fit.h).
 *
 * Recovery: tests/data/fit/synthetic_h100.csv lists six H100 layouts (Llama-3-8B at MBS 1,
 * 2 with TP2, 4, and PP2; Qwen3-30B-A3B EP8 at MBS 1 and 4) whose tokens/s are placeholders.
 * The test replaces each "measured" value by the prediction with known parameters on the
 * fixture table (tests/data/calib/fixture_H100.yaml: tensor_fraction 0.85, kernel_eager
 * 15 us, membound_eff and overlap_slowdown at their defaults), then fits tensor_fraction and
 * kernel_eager starting from the defaults (1, 4 us). With the prior weakened (weight 1e-4)
 * the fit must land on the truth (residuals fall to ~0; within 0.01 and 1 us); with the
 * full prior it must move from the defaults most of the way to the truth and cut the
 * objective. Then the same on 3 rows: the prior keeps the parameters inside their bounds
 * and nearer the defaults than with six.
 *
 * Optimality (test_optimum_*): the fit must land on the minimum of its documented objective,
 * prior included -- a closed-form one-parameter optimum, and first-order optimality of a
 * four-parameter fit ("optimality of the fit" below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_fit.h"

#define FIXTURE "tests/data/calib/fixture_H100.yaml"
#define CSV "tests/data/fit/synthetic_h100.csv"

static struct mb_calib *load_fixture(void)
{
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("H100", FIXTURE, &c, &e), 0);
    return c;
}

/* The six rows of the synthetic CSV (their "measured" values still the placeholders). */
static void load_rows(struct mb_fit_set *set)
{
    struct mb_err e;
    mb_err_clear(&e);
    mb_fit_set_init(set);
    set->jobs = 2;
    assert_int_equal(mb_fit_add_csv(set, CSV, &e), 0);
    mb_fit_set_finish(set);
    assert_int_equal(set->n, 6);
}

/* Rows of the synthetic CSV with "measured" = the prediction at tensor 0.85, kernel_eager 15 us. */
static void synthetic(struct mb_fit_set *set, struct mb_calib *cal, struct mb_calib_framework *truth)
{
    load_rows(set);
    mb_calib_framework_get(cal, truth);
    memcpy(truth->v, truth->def, sizeof truth->v);
    truth->v[MB_FW_TENSOR_FRACTION] = 0.85;
    truth->v[MB_FW_KERNEL_EAGER] = 15e-6;
    for (size_t i = 0; i < set->n; i++) {
        double p = mb_fit_predict(set, i, cal, truth);
        assert_true(isfinite(p) && p > 0);
        set->rows[i].measured = p;
    }
}

static void test_recover(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    struct mb_calib_framework truth;
    synthetic(&set, cal, &truth);
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER), .max_iter = 12, .prior_weight = 1e-4};
    struct mb_fit_result r;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r, &e), 0);
    assert_int_equal(r.n_rows, 6);
    /* the start: the defaults; the fixture's own framework section does not move them */
    assert_true(mb_dbl_eq(r.prior.v[MB_FW_TENSOR_FRACTION], 1.0) && mb_dbl_eq(r.prior.v[MB_FW_KERNEL_EAGER], 4e-6));
    print_message("weak prior: tensor %.4f kernel_eager %.2f us, MAPE %.2f -> %.3f %%\n",
                  r.fit.v[MB_FW_TENSOR_FRACTION], r.fit.v[MB_FW_KERNEL_EAGER] * 1e6, r.mape_prior, r.mape_fit);
    assert_true(fabs(r.fit.v[MB_FW_TENSOR_FRACTION] - 0.85) < 0.01);
    assert_true(fabs(r.fit.v[MB_FW_KERNEL_EAGER] - 15e-6) < 1e-6);
    assert_true(r.mape_fit < 0.5 && r.mape_prior > 5);
    /* unfitted parameters keep the base table's values (the fixture's section: overlap_slowdown 0;
     * membound_eff not given: the table's membound.eff 0.5) */
    assert_true(r.fit.v[MB_FW_OVERLAP_SLOWDOWN] == 0 && mb_dbl_eq(r.fit.v[MB_FW_MEMBOUND_EFF], 0.5));

    /* the full prior: most of the way, objective cut */
    o.prior_weight = 0;
    struct mb_fit_result rp;
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &rp, &e), 0);
    print_message("full prior: tensor %.4f kernel_eager %.2f us, MAPE %.2f -> %.3f %%\n",
                  rp.fit.v[MB_FW_TENSOR_FRACTION], rp.fit.v[MB_FW_KERNEL_EAGER] * 1e6, rp.mape_prior, rp.mape_fit);
    assert_true(rp.obj_fit < 0.5 * rp.obj_prior);
    assert_true(rp.fit.v[MB_FW_TENSOR_FRACTION] < 1 - 0.5 * 0.15);
    assert_true(rp.fit.v[MB_FW_KERNEL_EAGER] > 4e-6 + 0.5 * 11e-6);

    /* three rows: the prior holds the fit nearer the defaults than six rows do */
    struct mb_fit_result r3;
    assert_int_equal(mb_fit_framework(&set, idx, 3, cal, &o, &r3, &e), 0);
    double d6 = fabs(rp.fit.v[MB_FW_TENSOR_FRACTION] - 1) / 0.1 + fabs(rp.fit.v[MB_FW_KERNEL_EAGER] - 4e-6) / 10e-6;
    double d3 = fabs(r3.fit.v[MB_FW_TENSOR_FRACTION] - 1) / 0.1 + fabs(r3.fit.v[MB_FW_KERNEL_EAGER] - 4e-6) / 10e-6;
    assert_true(d3 <= d6 + 1e-9);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
        assert_true(r3.fit.v[p] >= in->lo && r3.fit.v[p] <= in->hi);
    }
    /* deterministic: one thread, the same answer */
    set.jobs = 1;
    for (size_t i = 0; i < set.n; i++)
        set.rows[i].lin_ok = 0;
    struct mb_fit_result r1;
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r1, &e), 0);
    assert_true(r1.fit.v[MB_FW_TENSOR_FRACTION] == rp.fit.v[MB_FW_TENSOR_FRACTION]);
    assert_true(r1.fit.v[MB_FW_KERNEL_EAGER] == rp.fit.v[MB_FW_KERNEL_EAGER]);
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* Host time per kernel (host_kernel) fitted beside the GPU-side parameters. Truth:
 * tensor 0.85, kernel_eager 15 us, host_kernel 40 us (the fixture's launch 10 us:
 * 50 us per eager kernel on the host); weak prior. An op waits only for its
 * first kernel's launch (emit.c), and each kernel of these rows runs at least
 * kernel_eager 15 us plus its table time on the GPU, so the host keeps ahead but
 * at the device-to-host syncs: 40 us moves the rows' steps by under 1 % from
 * host_kernel 0 (checked), and the fit must reproduce the rows (MAPE < 0.5 %) and
 * tensor_fraction (within 0.01) whatever it makes of host_kernel, which these
 * rows cannot pin (it stays in its bounds). A fit starting from host_kernel 0
 * cannot find a host time that binds only past that threshold (a row made with
 * 90 us: the fit ends at host_kernel 0 with kernel_eager 51 us, docs/calibration.md). */
static void test_recover_host(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    struct mb_calib_framework truth;
    synthetic(&set, cal, &truth);
    truth.v[MB_FW_HOST_KERNEL] = 40e-6;
    for (size_t i = 0; i < set.n; i++) {
        double gpu_only = set.rows[i].measured;
        set.rows[i].measured = mb_fit_predict(&set, i, cal, &truth);
        assert_true(fabs(set.rows[i].measured / gpu_only - 1) < 0.01);
    }
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER) |
                                      MB_FIT_PARAM(MB_FW_HOST_KERNEL),
                            .max_iter = 16, .prior_weight = 1e-4};
    struct mb_fit_result r;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r, &e), 0);
    print_message("host: tensor %.4f kernel_eager %.2f us host_kernel %.2f us, MAPE %.2f -> %.3f %%, %d iterations\n",
                  r.fit.v[MB_FW_TENSOR_FRACTION], r.fit.v[MB_FW_KERNEL_EAGER] * 1e6, r.fit.v[MB_FW_HOST_KERNEL] * 1e6,
                  r.mape_prior, r.mape_fit, r.iterations);
    assert_true(fabs(r.fit.v[MB_FW_TENSOR_FRACTION] - 0.85) < 0.01);
    assert_true(r.fit.v[MB_FW_HOST_KERNEL] >= 0 && r.fit.v[MB_FW_HOST_KERNEL] <= 100e-6);
    assert_true(r.mape_fit < 0.5 && r.mape_prior > 5);
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* Leave-one-family-out cross-validation (mb_fit_cv) on the fixture table. The
 * synthetic rows' two families get different truths: Llama-3-8B rows are the
 * predictions at tensor 0.85, kernel_eager 15 us, the Qwen3-30B-A3B rows at 0.95,
 * 8 us (weak prior, both parameters fitted). A held-out family is predicted by
 * the fit on the other family, which lands on the other family's truth (as
 * test_recover shows), so each held-out row's error must be the other truth's
 * prediction against its own, computed here directly with mb_fit_predict
 * (within 0.5 points: the fit's own tolerance); the zero-shot error is the
 * prediction at the defaults against the row (the parameters not fitted at the
 * fixture's values throughout). */
static void test_cv_family(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    struct mb_calib_framework t1, t2, def;
    synthetic(&set, cal, &t1);
    /* the parameters not fitted keep the base table's values (as in every fold) */
    mb_calib_framework_get(cal, &def);
    def.v[MB_FW_TENSOR_FRACTION] = def.def[MB_FW_TENSOR_FRACTION];
    def.v[MB_FW_KERNEL_EAGER] = def.def[MB_FW_KERNEL_EAGER];
    t1 = t2 = def;
    t1.v[MB_FW_TENSOR_FRACTION] = 0.85;
    t1.v[MB_FW_KERNEL_EAGER] = 15e-6;
    t2.v[MB_FW_TENSOR_FRACTION] = 0.95;
    t2.v[MB_FW_KERNEL_EAGER] = 8e-6;
    double expect_cv[6], expect_zero[6];
    for (size_t i = 0; i < set.n; i++) {
        int llama = !strcmp(set.rows[i].family, "llama");
        double own = mb_fit_predict(&set, i, cal, llama ? &t1 : &t2);
        double other = mb_fit_predict(&set, i, cal, llama ? &t2 : &t1);
        set.rows[i].measured = own;
        expect_cv[i] = 100 * (other / own - 1);
        expect_zero[i] = 100 * (mb_fit_predict(&set, i, cal, &def) / own - 1);
    }
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER),
                            .max_iter = 12, .prior_weight = 1e-4, .fit_unfitted = 1, .table = FIXTURE};
    struct mb_fit_cv cv;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_cv(&set, &o, &cv, &e), 0);
    assert_int_equal(cv.n_fits, 2);
    assert_int_equal(cv.n_family, 2);
    double sum = 0;
    for (size_t i = 0; i < set.n; i++) {
        print_message("%-24s cv %+6.2f %% (expected %+6.2f), zero-shot %+6.2f %% (expected %+6.2f)\n", set.rows[i].id,
                      cv.err_cv[i], expect_cv[i], cv.err_zero[i], expect_zero[i]);
        assert_true(fabs(expect_cv[i]) > 2); /* the truths differ enough to see */
        assert_true(fabs(cv.err_cv[i] - expect_cv[i]) < 0.5);
        assert_true(fabs(cv.err_zero[i] - expect_zero[i]) < 1e-6);
        sum += fabs(cv.err_cv[i]);
    }
    assert_true(fabs(cv.all.mape_cv - sum / 6) < 1e-9);
    assert_string_equal(cv.by_family[0].name, "llama");
    assert_int_equal(cv.by_family[0].n, 4);
    mb_fit_cv_free(&cv);
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* ------------------------------------------------------------------ optimality of the fit
 *
 * The tests above check that a fit moves toward the truth; the two below check that it
 * lands on the minimum of the objective it documents, prior included, so that a prior
 * term of the wrong sign (pushing away from the defaults instead of toward them) or a fit
 * stopping short of the minimum fails. The objective, as docs/calibration.md "Fitting the
 * framework-time model: mbsim calibrate runs" and mb_fit.h state it:
 *
 *     F(theta) = sum_rows H(ln(pred_i / meas_i)) / 0.15^2 + weight * sum_fitted ((theta_j - default_j) / sigma_j)^2
 *
 * H(r) = r^2 for |r| <= 0.3, 2 * 0.3 |r| - 0.3^2 beyond (MB_FIT_SIGMA_OBS, MB_FIT_HUBER);
 * default_j the table's default of parameter j (mb_calib_framework def: where a fit starts,
 * mb_fit_result.prior), sigma_j its prior width (mb_calib_fw_info: docs/calibration.md's
 * parameter table), weight = mb_fit_opts.prior_weight (0: 1). objective() computes F here
 * from mb_fit_predict's predictions alone; nothing of the fitter's arithmetic is reused.
 * mb_fit_result's obj_prior and obj_fit are F in the fitter's own scale (a constant
 * factor): obj_prior / F(defaults) gives it, the prior term being 0 there. */

/* H of the objective. */
static double huber(double r)
{
    double a = fabs(r), d = MB_FIT_HUBER;
    return a <= d ? r * r : 2 * d * a - d * d;
}

/* dH/dr. */
static double huber_d(double r)
{
    return fabs(r) <= MB_FIT_HUBER ? 2 * r : (r > 0 ? 2 : -2) * MB_FIT_HUBER;
}

/* F(th) over rows idx[0..n) of set priced with cal, the prior on the `params` bits. */
static double objective(const struct mb_fit_set *set, const size_t *idx, size_t n, const struct mb_calib *cal,
                        const struct mb_calib_framework *th, unsigned params, double weight)
{
    struct mb_calib_framework tab;
    mb_calib_framework_get(cal, &tab);
    double f = 0;
    for (size_t a = 0; a < n; a++) {
        double p = mb_fit_predict(set, idx[a], cal, th);
        assert_true(isfinite(p) && p > 0);
        f += huber(log(p / set->rows[idx[a]].measured)) / (MB_FIT_SIGMA_OBS * MB_FIT_SIGMA_OBS);
    }
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (params & MB_FIT_PARAM(p)) {
            double z = (th->v[p] - tab.def[p]) / mb_calib_fw_info((enum mb_fw_param)p)->sigma;
            f += weight * z * z;
        }
    return f;
}

/* A one-parameter fit whose optimum is known in closed form: step_overhead alone (default
 * 0, sigma 50 ms; the other parameters at the fixture table's values), the six rows
 * measured at 0.25 s. step_overhead is a task of that many seconds after the optimizer step
 * (docs/calibration.md), so a row's step time is T0_i + theta and its tokens/s K_i / (T0_i +
 * theta): T0_i is solved here from the predictions at 0 and at the truth, and the form
 * checked at the upper bound 0.5 s to 1e-9. The residual is then exactly
 * r_i(theta) = ln((T0_i + 0.25) / (T0_i + theta)), and
 *     dF/dtheta = -sum_i H'(r_i) / ((T0_i + theta) 0.15^2) + 2 weight theta / sigma^2
 * rises on [0, 0.25] (H'(r_i) and 1 / (T0_i + theta) both fall), negative at 0 and positive
 * at the truth: its root, found by bisection, is the optimum. The rows know step_overhead
 * only weakly (T0_i 1.8-5.5 s: one sigma moves them 1-3 %, below the 15 % one row is trusted
 * to), so the full prior holds the optimum near the default (~21 ms, far short of the truth)
 * while a weak prior (weight 1e-3) lets it reach ~247 ms. The fit must land within 0.01
 * sigma of the optimum (the fitter's stopping tolerance, MB_FIT__TOL) and report F there.
 * With the prior's sign flipped the data's curvature (~0.1 per sigma^2) is below the
 * prior's (1) and F is concave in theta: such a fit ends at a bound (0.5 s) instead. */
static void test_optimum_step_overhead(void **state)
{
    (void)state;
    const double truth = 0.25, sigma = mb_calib_fw_info(MB_FW_STEP_OVERHEAD)->sigma;
    const double s2 = MB_FIT_SIGMA_OBS * MB_FIT_SIGMA_OBS;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    load_rows(&set);
    struct mb_calib_framework fw;
    mb_calib_framework_get(cal, &fw);
    assert_true(fw.def[MB_FW_STEP_OVERHEAD] == 0 && fw.v[MB_FW_STEP_OVERHEAD] == 0);
    double T0[6];
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    for (size_t i = 0; i < set.n; i++) {
        fw.v[MB_FW_STEP_OVERHEAD] = 0;
        double p0 = mb_fit_predict(&set, i, cal, &fw);
        fw.v[MB_FW_STEP_OVERHEAD] = truth;
        double pt = mb_fit_predict(&set, i, cal, &fw);
        fw.v[MB_FW_STEP_OVERHEAD] = 0.5;
        double ph = mb_fit_predict(&set, i, cal, &fw);
        T0[i] = truth * pt / (p0 - pt);
        assert_true(T0[i] > 1 && T0[i] < 10);
        assert_true(fabs(ph / (p0 * T0[i] / (T0[i] + 0.5)) - 1) < 1e-9);
        set.rows[i].measured = pt;
    }
    const double weights[2] = {1, 1e-3};
    for (int wi = 0; wi < 2; wi++) {
        double lo = 0, hi = truth;
        for (int it = 0; it < 100; it++) {
            double th = 0.5 * (lo + hi), g = 2 * weights[wi] * th / (sigma * sigma);
            for (size_t i = 0; i < set.n; i++)
                g -= huber_d(log((T0[i] + truth) / (T0[i] + th))) / ((T0[i] + th) * s2);
            *(g > 0 ? &hi : &lo) = th;
        }
        double expect = 0.5 * (lo + hi);
        /* the prior matters: the full one holds the optimum near the default, the weak one does not */
        assert_true(wi == 0 ? expect > 0.2 * sigma && expect < 0.2 * truth : expect > 0.9 * truth);
        struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_STEP_OVERHEAD),
                                .prior_weight = wi == 0 ? 0 : weights[wi]}; /* 0: the full prior */
        struct mb_fit_result r;
        struct mb_err e;
        mb_err_clear(&e);
        assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r, &e), 0);
        fw.v[MB_FW_STEP_OVERHEAD] = 0;
        double f_def = objective(&set, idx, 6, cal, &fw, o.params, weights[wi]);
        double f_fit = objective(&set, idx, 6, cal, &r.fit, o.params, weights[wi]);
        print_message("step_overhead, prior weight %g: fit %.3f ms, optimum %.3f ms (truth %.0f ms); F %.6f at the "
                      "fit, reported %.6f; %d iterations\n",
                      weights[wi], r.fit.v[MB_FW_STEP_OVERHEAD] * 1e3, expect * 1e3, truth * 1e3, f_fit,
                      r.obj_fit * f_def / r.obj_prior, r.iterations);
        assert_true(fabs(r.fit.v[MB_FW_STEP_OVERHEAD] - expect) < 0.01 * sigma);
        assert_true(fabs(r.obj_fit - r.obj_prior / f_def * f_fit) <= 1e-9 * fabs(r.obj_fit));
    }
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* First-order optimality where no closed form exists: tensor_fraction, kernel_eager,
 * step_overhead and kernel_graph fitted with the full prior (the default 8 iterations) to
 * the six rows measured at tensor 0.85, kernel_eager 15 us, step_overhead 0.1 s (1.5, 1.1
 * and 2 sigma from the defaults 1, 4 us, 0), the rest at the fixture's values. At the
 * returned point F must not fall when any fitted parameter is nudged by +-0.05 sigma within
 * its bounds (at a bound only inward): F is smooth here, so a point further than ~0.025
 * sigma from the minimum along a parameter fails (the fitter stops within 0.01). F there
 * must be below F at the defaults and at the truth (the prior charges the truth
 * 1.5^2 + 1.1^2 + 2^2 = 7.46, which a compromise beats), and the reported obj_fit must be
 * F at the fit in obj_prior's scale. kernel_graph prices graphed kernels only, and these
 * eager rows have none: the data cannot identify it, so the prior must hold it at its
 * default 2 us exactly (its column is 0 and it starts at its default, so this holds
 * whatever the prior's sign; test_optimum_step_overhead's weakly identified parameter is
 * the one a flipped prior drives to a bound). */
static void test_optimum_first_order(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    struct mb_calib_framework truth, def;
    load_rows(&set);
    unsigned params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER) |
                      MB_FIT_PARAM(MB_FW_STEP_OVERHEAD) | MB_FIT_PARAM(MB_FW_KERNEL_GRAPH);
    mb_calib_framework_get(cal, &def);
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (params & MB_FIT_PARAM(p))
            def.v[p] = def.def[p];
    assert_true(mb_dbl_eq(def.v[MB_FW_TENSOR_FRACTION], 1) && mb_dbl_eq(def.v[MB_FW_KERNEL_EAGER], 4e-6) &&
                def.v[MB_FW_STEP_OVERHEAD] == 0 && mb_dbl_eq(def.v[MB_FW_KERNEL_GRAPH], 2e-6));
    truth = def;
    truth.v[MB_FW_TENSOR_FRACTION] = 0.85;
    truth.v[MB_FW_KERNEL_EAGER] = 15e-6;
    truth.v[MB_FW_STEP_OVERHEAD] = 0.1;
    for (size_t i = 0; i < set.n; i++)
        set.rows[i].measured = mb_fit_predict(&set, i, cal, &truth);
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    struct mb_fit_opts o = {.params = params};
    struct mb_fit_result r;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r, &e), 0);
    double f_fit = objective(&set, idx, 6, cal, &r.fit, params, 1);
    double f_def = objective(&set, idx, 6, cal, &def, params, 1);
    double f_truth = objective(&set, idx, 6, cal, &truth, params, 1);
    print_message("first order: tensor %.4f kernel_eager %.2f us step_overhead %.2f ms kernel_graph %.3f us; F %.5f "
                  "(defaults %.5f, truth %.5f), reported %.5f; %d iterations\n",
                  r.fit.v[MB_FW_TENSOR_FRACTION], r.fit.v[MB_FW_KERNEL_EAGER] * 1e6,
                  r.fit.v[MB_FW_STEP_OVERHEAD] * 1e3, r.fit.v[MB_FW_KERNEL_GRAPH] * 1e6, f_fit, f_def, f_truth,
                  r.obj_fit * f_def / r.obj_prior, r.iterations);
    assert_true(f_fit < f_def && f_fit < f_truth);
    assert_true(fabs(r.obj_fit - r.obj_prior / f_def * f_fit) <= 1e-9 * fabs(r.obj_fit));
    assert_true(r.fit.v[MB_FW_KERNEL_GRAPH] == def.v[MB_FW_KERNEL_GRAPH]);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        if (!(params & MB_FIT_PARAM(p)))
            continue;
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
        for (int s = -1; s <= 1; s += 2) {
            struct mb_calib_framework th = r.fit;
            double v = th.v[p] + s * 0.05 * in->sigma;
            th.v[p] = v < in->lo ? in->lo : v > in->hi ? in->hi : v;
            if (th.v[p] == r.fit.v[p])
                continue; /* at a bound: only the inward nudge counts */
            double f = objective(&set, idx, 6, cal, &th, params, 1);
            print_message("  %-16s %+.2f sigma: F %+.3e\n", in->name, s * 0.05, f - f_fit);
            assert_true(f >= f_fit);
        }
    }
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* The transfer prior (mb_fit_transfer): per parameter, the median over the fits
 * that moved it, by hand: tensor_fraction of three fits 0.80, 1.00, 0.90 ->
 * 0.90; host_kernel moved by two of them (10 and 30 us) -> their mean 20 us
 * (the third's 99 us does not count: its params lack it); kernel_moe wanted but
 * moved by none -> the prior's 7 us; overlap_slowdown moved by all but not
 * wanted -> the prior's 0.1. */
static void test_transfer(void **state)
{
    (void)state;
    struct mb_calib_framework prior, out, fits[3];
    memset(&prior, 0, sizeof prior);
    prior.v[MB_FW_TENSOR_FRACTION] = 1;
    prior.v[MB_FW_HOST_KERNEL] = 0;
    prior.v[MB_FW_KERNEL_MOE] = 7e-6;
    prior.v[MB_FW_OVERLAP_SLOWDOWN] = 0.1;
    const double tf[3] = {0.80, 1.00, 0.90}, hk[3] = {10e-6, 30e-6, 99e-6};
    unsigned all = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_OVERLAP_SLOWDOWN), params[3];
    for (int i = 0; i < 3; i++) {
        fits[i] = prior;
        fits[i].v[MB_FW_TENSOR_FRACTION] = tf[i];
        fits[i].v[MB_FW_HOST_KERNEL] = hk[i];
        fits[i].v[MB_FW_OVERLAP_SLOWDOWN] = 0.3;
        params[i] = all | (i < 2 ? MB_FIT_PARAM(MB_FW_HOST_KERNEL) : 0);
    }
    unsigned want = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_HOST_KERNEL) |
                    MB_FIT_PARAM(MB_FW_KERNEL_MOE);
    mb_fit_transfer(fits, params, 3, want, &prior, &out);
    assert_float_equal(out.v[MB_FW_TENSOR_FRACTION], 0.90, 1e-12);
    assert_float_equal(out.v[MB_FW_HOST_KERNEL], 20e-6, 1e-15);
    assert_float_equal(out.v[MB_FW_KERNEL_MOE], 7e-6, 1e-15);
    assert_float_equal(out.v[MB_FW_OVERLAP_SLOWDOWN], 0.1, 1e-12);
    mb_fit_transfer(fits, params, 0, want, &prior, &out); /* no fit to transfer from: the prior */
    assert_float_equal(out.v[MB_FW_TENSOR_FRACTION], 1, 1e-12);
}

/* A row of another GPU than the table's is an error; no rows: the defaults. */
static void test_bad_input(void **state)
{
    (void)state;
    struct mb_calib *cal = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_calib_load("GB200", "tests/data/calib/fixture_GB200.yaml", &cal, &e), 0);
    struct mb_fit_set set;
    mb_fit_set_init(&set);
    assert_int_equal(mb_fit_add_csv(&set, CSV, &e), 0);
    mb_fit_set_finish(&set);
    size_t idx[1] = {0};
    struct mb_fit_result r;
    assert_int_equal(mb_fit_framework(&set, idx, 1, cal, NULL, &r, &e), -1);
    char buf[512];
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, "row 'syn_llama8b_mbs1' runs on H100, the table is for GB200 (not a sibling GPU)");
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, idx, 0, cal, NULL, &r, &e), 0);
    assert_true(mb_dbl_eq(r.fit.v[MB_FW_KERNEL_EAGER], 4e-6) && r.n_rows == 0);
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* Sibling GPUs (mb_calib_siblings) share one fit: the six H100 rows fitted against an H200 base
 * (tests/data/calib/fixture_H200.yaml: the H100 fixture under H200's name), each H100 row priced with
 * its own table (set.sibling_table = the H100 fixture) and the candidate framework section, recover
 * the truth the rows were made with, as test_recover does on H100 itself. */
static void test_siblings(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture(), *h200 = NULL;
    struct mb_fit_set set;
    struct mb_calib_framework truth;
    struct mb_err e;
    mb_err_clear(&e);
    synthetic(&set, cal, &truth);
    set.sibling_table = FIXTURE;
    assert_int_equal(mb_calib_load("H200", "tests/data/calib/fixture_H200.yaml", &h200, &e), 0);
    assert_true(mb_calib_siblings("h100", "H200") && mb_calib_siblings("GB200", "B200") &&
                mb_calib_siblings("B300", "GB300") && mb_calib_siblings("H100_96GB", "H200"));
    assert_false(mb_calib_siblings("B200", "B300") || mb_calib_siblings("H100", "GB200"));
    assert_string_equal(mb_calib_sibling_group("gb300"), "B300");
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER),
                            .max_iter = 12, .prior_weight = 1e-4};
    struct mb_fit_result r;
    assert_int_equal(mb_fit_framework(&set, idx, 6, h200, &o, &r, &e), 0);
    assert_int_equal(r.n_rows, 6);
    assert_true(fabs(r.fit.v[MB_FW_TENSOR_FRACTION] - 0.85) < 0.01);
    assert_true(fabs(r.fit.v[MB_FW_KERNEL_EAGER] - 15e-6) < 1e-6);
    mb_fit_set_free(&set);
    mb_calib_free(h200);
    mb_calib_free(cal);
}

/* Which rows pin a parameter (linearized leave-one-out): the six synthetic rows at the truth, one of
 * them (row 2) made 20 % faster than the truth predicts. Five rows then agree on tensor_fraction
 * 0.85 and one pulls it up; the row whose removal moves the fit most must be that one, and without it
 * the fit is the five rows' exact answer, 0.85 (within 0.01: one Gauss-Newton step). */
static void test_leave_one_out(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    struct mb_calib_framework truth;
    synthetic(&set, cal, &truth);
    /* the truth: tensor_fraction 0.85, every other parameter at the value the fit holds it at (the
     * base table's: only tensor_fraction is fitted) */
    mb_calib_framework_get(cal, &truth);
    truth.v[MB_FW_TENSOR_FRACTION] = 0.85;
    for (size_t i = 0; i < set.n; i++)
        set.rows[i].measured = mb_fit_predict(&set, i, cal, &truth) * (i == 2 ? 1.2 : 1.0);
    size_t idx[6] = {0, 1, 2, 3, 4, 5};
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION), .max_iter = 12, .prior_weight = 1e-4};
    struct mb_fit_result r;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, idx, 6, cal, &o, &r, &e), 0);
    const int p = MB_FW_TENSOR_FRACTION;
    print_message("tensor %.4f, leave-one-out %.4f .. %.4f, pinned by %s (%+.4f)\n", r.fit.v[p], r.loo_lo[p],
                  r.loo_hi[p], set.rows[r.pin_row[p][0]].id, r.pin_shift[p][0]);
    assert_int_equal(r.pin_row[p][0], 2);
    assert_true(fabs(r.fit.v[p] + r.pin_shift[p][0] - 0.85) < 0.01);
    assert_true(r.loo_lo[p] <= r.fit.v[p] && r.fit.v[p] <= r.loo_hi[p]);
    assert_true(fabs(r.pin_shift[p][1]) < fabs(r.pin_shift[p][0]));
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* Parameters a row's simulation never reads (mb_fit_inert_params): kernel_moe without a MoE
 * layer, kernel_graph without CUDA graphs. The rule is checked against the simulation itself:
 * moving an inert parameter to its upper bound (mb_calib_fw_info) must leave the prediction the
 * same to the bit, and moving kernel_moe on a MoE row must change it (so the comparison can
 * fail). Then a fit of kernel_moe alone on the four dense Llama rows simulates each row once, at
 * the defaults (its Jacobian column is 0 without a simulation, so the step from the prior is 0
 * and the fit stops there): 4 simulations, against 4 x (1 + 8 parameters) = 36 before. */
static void test_inert(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_set set;
    load_rows(&set);
    struct mb_calib_framework def;
    mb_calib_framework_get(cal, &def);
    memcpy(def.v, def.def, sizeof def.v);
    int moe_rows = 0;
    for (size_t i = 0; i < set.n; i++) {
        int qwen = !strncmp(set.rows[i].id, "syn_qwen", 8);
        unsigned inert = set.rows[i].inert;
        assert_int_equal(inert, mb_fit_inert_params(&set.rows[i].s));
        assert_int_equal(!!(inert & MB_FIT_PARAM(MB_FW_KERNEL_MOE)), !qwen);
        assert_true(inert & MB_FIT_PARAM(MB_FW_KERNEL_GRAPH)); /* no row captures CUDA graphs */
        double p0 = mb_fit_predict(&set, i, cal, &def);
        assert_true(isfinite(p0) && p0 > 0);
        for (int p = 0; p < MB_FW_COUNT; p++) {
            if (p != MB_FW_KERNEL_MOE && !(inert & MB_FIT_PARAM(p)))
                continue;
            struct mb_calib_framework moved = def;
            moved.v[p] = mb_calib_fw_info((enum mb_fw_param)p)->hi;
            double p1 = mb_fit_predict(&set, i, cal, &moved);
            if (inert & MB_FIT_PARAM(p)) {
                assert_true(p1 == p0);
            } else {
                assert_true(p1 != p0);
                moe_rows++;
            }
        }
    }
    assert_int_equal(moe_rows, 2);
    size_t dense[4], nd = 0;
    for (size_t i = 0; i < set.n; i++)
        if (strncmp(set.rows[i].id, "syn_qwen", 8))
            dense[nd++] = i;
    assert_int_equal(nd, 4);
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_KERNEL_MOE)};
    struct mb_fit_result r;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_fit_framework(&set, dense, nd, cal, &o, &r, &e), 0);
    assert_int_equal(r.sims, 4);
    assert_int_equal(r.iterations, 0);
    assert_true(r.fit.v[MB_FW_KERNEL_MOE] == r.prior.v[MB_FW_KERNEL_MOE]);
    mb_fit_set_free(&set);
    mb_calib_free(cal);
}

/* Rows of one run (tests/data/fit/synthetic_h100_dup.csv: the same layout twice, as two sources would
 * publish it, with another id and measured value; and once at GBS 64) are simulated once per
 * evaluation: mb_fit_set_finish pairs the first two (same), not the third. The fit of the three rows
 * must be the same to the bit as with the pairing undone, with 2 simulations where there were 3 in every
 * batch (each batch holds one job per row: exactly 2/3 of the simulations). */
static void test_same_run(void **state)
{
    (void)state;
    struct mb_calib *cal = load_fixture();
    struct mb_fit_opts o = {.params = MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER)};
    struct mb_fit_result r[2];
    for (int undo = 0; undo < 2; undo++) {
        struct mb_fit_set set;
        struct mb_err e;
        mb_err_clear(&e);
        mb_fit_set_init(&set);
        set.jobs = 2;
        assert_int_equal(mb_fit_add_csv(&set, "tests/data/fit/synthetic_h100_dup.csv", &e), 0);
        mb_fit_set_finish(&set);
        assert_int_equal(set.n, 3);
        assert_int_equal(set.rows[0].same, 0);
        assert_int_equal(set.rows[1].same, 0);
        assert_int_equal(set.rows[2].same, 2);
        assert_true(set.rows[0].shares && set.rows[1].shares && !set.rows[2].shares);
        if (undo) {
            set.rows[1].same = 1;
            set.rows[0].shares = set.rows[1].shares = 0;
        }
        size_t idx[3] = {0, 1, 2};
        assert_int_equal(mb_fit_framework(&set, idx, 3, cal, &o, &r[undo], &e), 0);
        mb_fit_set_free(&set);
    }
    assert_true(r[0].iterations > 0);
    assert_int_equal(r[0].iterations, r[1].iterations);
    assert_int_equal(r[0].sims * 3, r[1].sims * 2);
    assert_memory_equal(r[0].fit.v, r[1].fit.v, sizeof r[0].fit.v);
    assert_true(r[0].obj_fit == r[1].obj_fit);
    mb_calib_free(cal);
}

/* Family rule (docs/validation.md): gpt_oss keys, else the leading letters, lower case. */
static void test_family(void **state)
{
    (void)state;
    static const char *const c[][2] = {{"llama3.1_405b", "llama"}, {"qwen3_30b_a3b", "qwen"},
                                       {"deepseek_v3", "deepseek"}, {"nemotron_3_nano_30b_a3b", "nemotron"},
                                       {"gpt_sc21_1t", "gpt"},       {"gpt_oss_120b", "gpt-oss"},
                                       {"kimi_k2", "kimi"},          {"Mixtral_8x7b", "mixtral"}};
    char buf[32];
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        mb_fit_family(c[i][0], buf, sizeof buf);
        assert_string_equal(buf, c[i][1]);
    }
    double x[] = {3, -1, 2, 10};
    assert_true(mb_dbl_eq(mb_fit_signed_median(x, 4), 2.5));
    assert_true(mb_dbl_eq(mb_fit_signed_median(x, 3), 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_family), cmocka_unit_test(test_bad_input),
                                       cmocka_unit_test(test_recover), cmocka_unit_test(test_recover_host),
                                       cmocka_unit_test(test_cv_family), cmocka_unit_test(test_transfer),
                                       cmocka_unit_test(test_optimum_step_overhead),
                                       cmocka_unit_test(test_optimum_first_order), cmocka_unit_test(test_siblings),
                                       cmocka_unit_test(test_leave_one_out), cmocka_unit_test(test_inert),
                                       cmocka_unit_test(test_same_run)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
