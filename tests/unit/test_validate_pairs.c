/*
 * test_validate_pairs.c -- A/B pairs of a validated summary (mb_validate_pairs.h) on the fixture
 * tests/data/validate/pairs.csv: which rows pair, with what label, and the effects worked out by hand
 * from the fixture's measured values.
 *
 * The fixture (llama3_8b on DGX-H100, 8 GPUs, sequence 8192): base (TP 1, 10,000 tokens/s/GPU), tp2
 * (TP 2, 9,000), tp2_other (TP 2 and an other_recipe text, 9,200), repeat (base again, written
 * "bf16" and TP "01": the same configuration, 10,100), fp8 (FP8-CS, 12,000), gbs256 (another GBS:
 * pairs with nothing), step_a / step_b (base and TP 2 measured as step times 50 / 40 s: a metric of
 * their own), no_precision (skipped: precision not stated).
 */
#include "test_validate_util.h"

#include <math.h>

#include "mb_validate_pairs.h"

static const struct mb_val_pair *find_pair(const struct mb_val_summary *s, const struct mb_val_pairs *p, const char *a,
                                           const char *b)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(s->rows[p->p[i].a].id, a) && !strcmp(s->rows[p->p[i].b].id, b))
            return &p->p[i];
    fail_msg("pair %s -> %s not found", a, b);
    return NULL;
}

static void load(struct mb_val_summary *s)
{
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_validate_csv(FIX "pairs.csv", s, &err))
        fail_msg("%s", err.msg);
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Which rows pair: the five rows of one (model, system, GPUs, GBS, sequence, metric) give 10
 * combinations; base/repeat are one configuration (no pair), tp2/tp2_other differ in other_recipe
 * alone (kept apart), and the four pairs with no_precision are left out: 8 pairs, plus step_a/step_b. */
static void test_pairs_found(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_val_pairs p;
    load(&s);
    mb_validate_pairs_find(&s, &p);
    assert_int_equal(p.n, 9);
    assert_int_equal(p.unnamed.n, 1);
    assert_int_equal(p.n_unpredicted, 5); /* no_precision with base, tp2, tp2_other, repeat, fp8 */
    assert_string_equal(find_pair(&s, &p, "base", "tp2")->knobs, "tp");
    assert_string_equal(find_pair(&s, &p, "base", "tp2_other")->knobs, "tp,other_recipe");
    assert_string_equal(find_pair(&s, &p, "tp2", "fp8")->knobs, "precision,tp");
    assert_string_equal(find_pair(&s, &p, "repeat", "fp8")->knobs, "precision");
    for (size_t i = 0; i < p.n; i++) { /* gbs256 pairs with nothing */
        assert_string_not_equal(s.rows[p.p[i].a].id, "gbs256");
        assert_string_not_equal(s.rows[p.p[i].b].id, "gbs256");
    }
    /* the labels: tp (base/tp2, tp2/repeat, step_a/step_b), precision (base/fp8, repeat/fp8), ... */
    assert_int_equal(p.by_knob[0].n, 3);
    assert_string_equal(p.by_knob[0].knobs, "tp");
    mb_validate_pairs_free(&p);
    mb_validate_free(&s);
}

/* The effects by hand: 9,000 / 10,000 - 1 = -10 %; step times 50 -> 40 s = +25 % throughput; the
 * predicted effect is the ratio of the two rows' predictions, and step_a/step_b are the base/tp2
 * scenarios again, so their predicted effects agree. */
static void test_pairs_effects(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_val_pairs p;
    load(&s);
    mb_validate_pairs_find(&s, &p);
    const struct mb_val_pair *x = find_pair(&s, &p, "base", "tp2"), *y = find_pair(&s, &p, "step_a", "step_b");
    assert_true(fabs(x->meas_effect - (-0.10)) < 1e-12);
    assert_true(fabs(y->meas_effect - 0.25) < 1e-12);
    double pred = find_row(&s, "tp2")->predicted / find_row(&s, "base")->predicted - 1;
    assert_true(fabs(x->pred_effect - pred) < 1e-12);
    assert_true(fabs(x->err_pts - (pred + 0.10) * 100) < 1e-9);
    assert_true(fabs(y->pred_effect - x->pred_effect) < 1e-9);
    assert_true(x->judged && y->judged);
    assert_int_equal(x->sign_right, pred < 0);
    assert_int_equal(y->sign_right, y->pred_effect > 0);
    /* the statistics from the pairs themselves */
    double e[9];
    size_t judged = 0, right = 0;
    for (size_t i = 0; i < p.n; i++) {
        e[i] = fabs(p.p[i].err_pts);
        judged += fabs(p.p[i].meas_effect) > 0.02;
        right += fabs(p.p[i].meas_effect) > 0.02 && (p.p[i].meas_effect > 0) == (p.p[i].pred_effect > 0);
        if (i)
            assert_true(fabs(p.p[i].err_pts) <= fabs(p.p[i - 1].err_pts)); /* worst first */
    }
    qsort(e, p.n, sizeof e[0], cmp_dbl);
    assert_true(fabs(p.all.median_abs_err_pts - e[4]) < 1e-12);
    assert_int_equal(p.all.n_judged, judged);
    assert_int_equal(p.all.n_sign_right, right);
    mb_validate_pairs_free(&p);
    mb_validate_free(&s);
}

/* Explicit pairs: a label kept as written (trimmed), the knobs when none is given, a skipped row left
 * out; the errors at file:line:col. */
static void test_pairs_file(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_val_pairs p;
    struct mb_err err;
    mb_err_clear(&err);
    load(&s);
    assert_int_equal(mb_validate_pairs_read(&s, FIX "pairs_ok.txt", &p, &err), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.n_unpredicted, 1);
    assert_string_equal(find_pair(&s, &p, "base", "tp2")->knobs, "TP 1 -> 2");
    assert_string_equal(find_pair(&s, &p, "step_a", "step_b")->knobs, "tp");
    mb_validate_pairs_free(&p);
    static const struct {
        const char *file, *msg;
    } bad[] = {
        {"pairs_bad_id.txt", "pairs_bad_id.txt:2:6: id 'nosuch' names no row"},
        {"pairs_self.txt", "pairs_self.txt:1:6: a pair of a row with itself"},
        {"pairs_one_field.txt", "pairs_one_field.txt:1:1: expected 'A_ID,B_ID[,LABEL]'"},
        {"no_such_pairs.txt", "no_such_pairs.txt"},
        {"pairs_empty.txt", "pairs_empty.txt:3:1: no pairs"}, /* a comment, a blank and a blanks-only line */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", bad[i].file);
        mb_err_clear(&err);
        assert_int_equal(mb_validate_pairs_read(&s, path, &p, &err), -1);
        mb_err_format(&err, msgbuf, sizeof msgbuf);
        if (!strstr(msgbuf, bad[i].msg))
            fail_msg("%s: got '%s'", bad[i].file, msgbuf);
        mb_validate_pairs_free(&p);
    }
    mb_err_clear(&err); /* the check before a validation: the same file errors without a summary */
    assert_int_equal(mb_validate_pairs_check(FIX "pairs_empty.txt", &err), -1);
    mb_err_format(&err, msgbuf, sizeof msgbuf);
    assert_non_null(strstr(msgbuf, "pairs_empty.txt:3:1: no pairs"));
    assert_int_equal(mb_validate_pairs_check(FIX "pairs_ok.txt", &err), 0);
    mb_validate_free(&s);
}

/* The recompute knob is compared as the row runs it (tests/data/validate/pairs_recompute.csv): rc_a
 * and rc_b write one setting two ways (the column "selective: core_attn" vs "selective", which
 * Megatron reads as core_attn; recompute_detail "selective:core_attn" with and without a space) and
 * differ in other_recipe alone, so they are kept apart; rc_c ("none [v0.6.0 recipe]") and rc_d
 * ("none") are one configuration (no pair); rc_e adds mlp in recompute_detail. Of the 10
 * combinations that leaves 8 named pairs; recompute_detail is compared as part of the recompute knob. */
static void test_pairs_recompute(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_val_pairs p;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_validate_csv(FIX "pairs_recompute.csv", &s, &err))
        fail_msg("%s", err.msg);
    mb_validate_pairs_find(&s, &p);
    assert_int_equal(p.n, 8);
    assert_int_equal(p.unnamed.n, 1);
    assert_string_equal(find_pair(&s, &p, "rc_a", "rc_e")->knobs, "recompute");
    assert_string_equal(find_pair(&s, &p, "rc_b", "rc_c")->knobs, "recompute,other_recipe");
    for (size_t i = 0; i < p.n; i++) { /* rc_c / rc_d and rc_a / rc_b are not named pairs */
        const char *a = s.rows[p.p[i].a].id, *b = s.rows[p.p[i].b].id;
        assert_false(!strcmp(a, "rc_c") && !strcmp(b, "rc_d"));
        assert_false(!strcmp(a, "rc_a") && !strcmp(b, "rc_b"));
    }
    mb_validate_pairs_free(&p);
    mb_validate_free(&s);
}

/* tests/data/validate/pairs_mismatch.csv (a recipe column, cuda_graph none, so recipe_match is read): base (TP 1, 10,000 tokens/s/GPU) and tp2 (TP 2, 9,000) are
 * "exact"; fp8 (12,000) is LAYOUT-MISMATCH. Of the three pairs, base/tp2 is compared (-10 %) and the
 * two with fp8 (base/fp8 +20 %, tp2/fp8 +33.3 %) are counted apart, their statistics from their own
 * effects. */
static void test_pairs_mismatch(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_val_pairs p;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_validate_csv(FIX "pairs_mismatch.csv", &s, &err))
        fail_msg("%s", err.msg);
    assert_true(find_row(&s, "fp8")->layout_mismatch);
    mb_validate_pairs_find(&s, &p);
    assert_int_equal(p.n, 1);
    assert_true(fabs(find_pair(&s, &p, "base", "tp2")->meas_effect - (-0.10)) < 1e-12);
    assert_int_equal(p.mismatch.n, 2);
    assert_int_equal(p.mismatch.n_judged, 2);
    double pb = find_row(&s, "base")->predicted, pt = find_row(&s, "tp2")->predicted,
           pf = find_row(&s, "fp8")->predicted;
    double e1 = fabs((pf / pb - 1 - 0.20) * 100), e2 = fabs((pf / pt - 1 - (12000.0 / 9000 - 1)) * 100);
    assert_true(fabs(p.mismatch.mean_abs_err_pts - (e1 + e2) / 2) < 1e-9);
    assert_true(fabs(p.mismatch.median_abs_err_pts - (e1 + e2) / 2) < 1e-9); /* two values: their mean */
    mb_validate_pairs_free(&p);
    mb_validate_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_found),
        cmocka_unit_test(test_pairs_effects),
        cmocka_unit_test(test_pairs_file),
        cmocka_unit_test(test_pairs_recompute),
        cmocka_unit_test(test_pairs_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
