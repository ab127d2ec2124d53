/*
 * test_flow.c -- max-min fair solver: hand-solved systems, a brute-force
 * reference on random systems, and the max-min invariants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>

#include <cmocka.h>

#include "mb_flow.h"
#include "mb_util.h"

#define assert_dbl(a, b) assert_true(mb_dbl_eq((a), (b)))

/* One link, C = 10; flows A, B cross it. Equal shares: A = B = C/2 = 5. */
static void test_one_link_two_flows(void **state)
{
    (void)state;
    struct mb_flow_sys *s = mb_flow_new();
    int l = mb_flow_add_link(s, 10.0);
    int a = mb_flow_add(s, 1, &l, 0);
    int b = mb_flow_add(s, 1, &l, 0);
    assert_dbl(mb_flow_rate(s, a), 0.0); /* not solved yet */
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, a), 5.0);
    assert_dbl(mb_flow_rate(s, b), 5.0);
    assert_dbl(mb_flow_link_load(s, l), 10.0);
    /* B leaves: A takes the whole link */
    mb_flow_remove(s, b);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, a), 10.0);
    assert_int_equal(mb_flow_n_active(s), 1);
    mb_flow_free(s);
}

/* Two links in series (the classic example):
 *   link1 cap 1 carries A and B; link2 cap 2 carries B and C.
 *   Shares: link1 1/2 = 0.5, link2 2/2 = 1 -> link1 is the bottleneck:
 *   A = B = 0.5. Then link2 has 2 - 0.5 = 1.5 left for C alone: C = 1.5.
 *   Check: link1 0.5+0.5 = 1 (full), link2 0.5+1.5 = 2 (full). */
static void test_two_links_three_flows(void **state)
{
    (void)state;
    struct mb_flow_sys *s = mb_flow_new();
    int l1 = mb_flow_add_link(s, 1.0);
    int l2 = mb_flow_add_link(s, 2.0);
    int rb[2] = {l1, l2};
    int a = mb_flow_add(s, 1, &l1, 0);
    int b = mb_flow_add(s, 2, rb, 0);
    int c = mb_flow_add(s, 1, &l2, 0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, a), 0.5);
    assert_dbl(mb_flow_rate(s, b), 0.5);
    assert_dbl(mb_flow_rate(s, c), 1.5);
    assert_dbl(mb_flow_link_load(s, l1), 1.0);
    assert_dbl(mb_flow_link_load(s, l2), 2.0);
    mb_flow_free(s);
}

/* Parking lot: links L0, L1, L2 of cap 1; a long flow crosses all three and
 * each link also carries one short flow. Every link splits 1/2 : 1/2, so all
 * four flows get 0.5 (the long flow is not starved). */
static void test_parking_lot(void **state)
{
    (void)state;
    struct mb_flow_sys *s = mb_flow_new();
    int l[3];
    for (int i = 0; i < 3; i++)
        l[i] = mb_flow_add_link(s, 1.0);
    int lng = mb_flow_add(s, 3, l, 0);
    int sh[3];
    for (int i = 0; i < 3; i++)
        sh[i] = mb_flow_add(s, 1, &l[i], 0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, lng), 0.5);
    for (int i = 0; i < 3; i++)
        assert_dbl(mb_flow_rate(s, sh[i]), 0.5);
    mb_flow_free(s);
}

/* Bounded flow: one link C = 10 with X (bound 2), Y, Z.
 *   Equal share would be 10/3 = 3.33 > 2, so X freezes at its bound 2;
 *   Y and Z split the rest: (10 - 2)/2 = 4 each.
 * A loose bound (100) changes nothing: 10/3 each. */
static void test_bounded_flow(void **state)
{
    (void)state;
    struct mb_flow_sys *s = mb_flow_new();
    int l = mb_flow_add_link(s, 10.0);
    int x = mb_flow_add(s, 1, &l, 2.0);
    int y = mb_flow_add(s, 1, &l, 0);
    int z = mb_flow_add(s, 1, &l, 0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, x), 2.0);
    assert_dbl(mb_flow_rate(s, y), 4.0);
    assert_dbl(mb_flow_rate(s, z), 4.0);
    mb_flow_remove(s, x);
    x = mb_flow_add(s, 1, &l, 100.0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, x), 10.0 / 3);
    assert_dbl(mb_flow_rate(s, y), 10.0 / 3);
    /* a flow with only a bound and no link runs at its bound */
    int w = mb_flow_add(s, 0, NULL, 7.0);
    assert_true(w >= 0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, w), 7.0);
    mb_flow_free(s);
}

/* A route listing a link twice uses it twice (coefficient 2): link cap 6,
 * A crosses it twice, B once. Common level x: 2x + x = 6 -> A = B = 2. */
static void test_double_crossing(void **state)
{
    (void)state;
    struct mb_flow_sys *s = mb_flow_new();
    int l = mb_flow_add_link(s, 6.0);
    int r[2] = {l, l};
    int a = mb_flow_add(s, 2, r, 0);
    int b = mb_flow_add(s, 1, &l, 0);
    mb_flow_solve(s);
    assert_dbl(mb_flow_rate(s, a), 2.0);
    assert_dbl(mb_flow_rate(s, b), 2.0);
    mb_flow_free(s);
}

/* ---- reference and invariants ------------------------------------------ */

struct sys {
    int n_links, n_flows;
    double cap[16];
    int nl[64];
    int route[64][MB_FLOW_ROUTE_MAX];
    double bound[64];
};

/* Brute-force water-filling: raise one common level lambda for all unfrozen
 * flows; per round recompute, from scratch, the level at which each link
 * saturates, (C_l - frozen load) / (unfrozen crossings), and each bound; the
 * smallest one freezes everything that attains it. O(F^2 L), obviously right. */
static void ref_solve(const struct sys *y, double *x)
{
    int frozen[64] = {0};
    int left = y->n_flows;
    while (left > 0) {
        double lvl = INFINITY;
        for (int l = 0; l < y->n_links; l++) {
            double used = 0;
            int cnt = 0;
            for (int f = 0; f < y->n_flows; f++)
                for (int k = 0; k < y->nl[f]; k++)
                    if (y->route[f][k] == l) {
                        if (frozen[f])
                            used += x[f];
                        else
                            cnt++;
                    }
            if (cnt > 0 && (y->cap[l] - used) / cnt < lvl)
                lvl = (y->cap[l] - used) / cnt;
        }
        for (int f = 0; f < y->n_flows; f++)
            if (!frozen[f] && y->bound[f] > 0 && y->bound[f] < lvl)
                lvl = y->bound[f];
        /* freeze flows on saturating links and flows at their bound */
        int newly[64] = {0};
        for (int l = 0; l < y->n_links; l++) {
            double used = 0;
            int cnt = 0;
            for (int f = 0; f < y->n_flows; f++)
                for (int k = 0; k < y->nl[f]; k++)
                    if (y->route[f][k] == l) {
                        if (frozen[f])
                            used += x[f];
                        else
                            cnt++;
                    }
            if (cnt > 0 && mb_dbl_eq((y->cap[l] - used) / cnt, lvl))
                for (int f = 0; f < y->n_flows; f++)
                    for (int k = 0; k < y->nl[f]; k++)
                        if (y->route[f][k] == l && !frozen[f])
                            newly[f] = 1;
        }
        for (int f = 0; f < y->n_flows; f++)
            if (!frozen[f] && y->bound[f] > 0 && mb_dbl_eq(y->bound[f], lvl))
                newly[f] = 1;
        for (int f = 0; f < y->n_flows; f++)
            if (newly[f]) {
                frozen[f] = 1;
                x[f] = lvl;
                left--;
            }
    }
}

/* Conservation as the solver itself reports it: load(l) <= C_l. */
static void check_link_loads(const struct mb_flow_sys *s)
{
    for (int l = 0; l < mb_flow_n_links(s); l++)
        assert_true(mb_flow_link_load(s, l) <= mb_flow_link_capacity(s, l) * (1 + 1e-9));
}

/* Max-min invariants on a solved system:
 *  (1) feasibility: load(l) <= C_l and x_f <= b_f (within MB_EPS), x_f > 0;
 *  (2) every flow is at its bound, or crosses a saturated link on which
 *      no other flow has a larger rate. */
static void check_bottlenecks(const struct sys *y, const double *x)
{
    double load[16] = {0}, maxr[16] = {0};
    for (int f = 0; f < y->n_flows; f++) {
        assert_true(x[f] > 0);
        if (y->bound[f] > 0)
            assert_true(x[f] <= y->bound[f] * (1 + 1e-9));
        for (int k = 0; k < y->nl[f]; k++) {
            int l = y->route[f][k];
            load[l] += x[f];
            if (x[f] > maxr[l])
                maxr[l] = x[f];
        }
    }
    for (int l = 0; l < y->n_links; l++)
        assert_true(load[l] <= y->cap[l] * (1 + 1e-9));
    for (int f = 0; f < y->n_flows; f++) {
        int ok = y->bound[f] > 0 && mb_dbl_eq(x[f], y->bound[f]);
        for (int k = 0; k < y->nl[f] && !ok; k++) {
            int l = y->route[f][k];
            if (mb_dbl_eq(load[l], y->cap[l]) && mb_dbl_eq(x[f], maxr[l]))
                ok = 1;
        }
        assert_true(ok);
    }
}

/* Random systems: 1..8 links with capacities 1..10 (often equal, to create
 * ties), 1..40 flows with routes of 1..4 distinct links, some bounded.
 * The solver must match the brute-force reference within MB_EPS, and the
 * result must satisfy the bottleneck characterisation. Half of the systems
 * are built incrementally with removals to exercise recycled ids. */
static void test_random_differential(void **state)
{
    (void)state;
    struct mb_rng rng;
    mb_rng_seed(&rng, 2024);
    for (int iter = 0; iter < 2000; iter++) {
        struct sys y = {0};
        y.n_links = 1 + (int)(mb_rng_uniform(&rng) * 8);
        y.n_flows = 1 + (int)(mb_rng_uniform(&rng) * 40);
        for (int l = 0; l < y.n_links; l++)
            y.cap[l] = 1 + (int)(mb_rng_uniform(&rng) * 10);
        for (int f = 0; f < y.n_flows; f++) {
            int want = 1 + (int)(mb_rng_uniform(&rng) * 4);
            if (want > y.n_links)
                want = y.n_links;
            y.nl[f] = 0;
            while (y.nl[f] < want) {
                int l = (int)(mb_rng_uniform(&rng) * y.n_links), dup = 0;
                for (int k = 0; k < y.nl[f]; k++)
                    dup |= y.route[f][k] == l;
                if (!dup)
                    y.route[f][y.nl[f]++] = l;
            }
            y.bound[f] = mb_rng_uniform(&rng) < 0.2 ? 0.1 + mb_rng_uniform(&rng) : 0;
        }
        struct mb_flow_sys *s = mb_flow_new();
        for (int l = 0; l < y.n_links; l++)
            mb_flow_add_link(s, y.cap[l]);
        int ids[64];
        int churn = iter % 2;
        for (int f = 0; f < y.n_flows; f++) {
            if (churn) { /* a decoy flow added and removed before each real one */
                int d = mb_flow_add(s, y.nl[f], y.route[f], 0);
                mb_flow_solve(s);
                mb_flow_remove(s, d);
            }
            ids[f] = mb_flow_add(s, y.nl[f], y.route[f], y.bound[f]);
            assert_true(ids[f] >= 0);
        }
        mb_flow_solve(s);
        double ref[64], got[64];
        ref_solve(&y, ref);
        for (int f = 0; f < y.n_flows; f++) {
            got[f] = mb_flow_rate(s, ids[f]);
            if (!mb_dbl_eq(got[f], ref[f]))
                fail_msg("iter %d flow %d: solver %.12g, reference %.12g", iter, f, got[f],
                         ref[f]);
        }
        check_bottlenecks(&y, got);
        check_link_loads(s);
        mb_flow_free(s);
    }
}

/* Scale: 5000 flows over 200 links (routes of 1..4 links). Only the
 * invariants are checked (no reference at this size), plus a removal of
 * every other flow followed by a re-solve that must still satisfy them. */
static void test_many_flows_invariants(void **state)
{
    (void)state;
    enum { L = 200, F = 5000 };
    struct mb_rng rng;
    mb_rng_seed(&rng, 7);
    struct mb_flow_sys *s = mb_flow_new();
    double cap[L];
    for (int l = 0; l < L; l++) {
        cap[l] = 1e9 * (1 + (int)(mb_rng_uniform(&rng) * 4));
        mb_flow_add_link(s, cap[l]);
    }
    int (*route)[4] = malloc(sizeof(int[F][4]));
    int *nl = malloc(F * sizeof *nl), *ids = malloc(F * sizeof *ids);
    double *bound = malloc(F * sizeof *bound);
    for (int f = 0; f < F; f++) {
        nl[f] = 1 + (int)(mb_rng_uniform(&rng) * 4);
        for (int k = 0; k < nl[f]; k++)
            route[f][k] = (f * 7 + k * 53) % L; /* distinct: 53 * k mod 200 differ */
        bound[f] = f % 10 == 0 ? 1e6 * (1 + f % 7) : 0;
        ids[f] = mb_flow_add(s, nl[f], route[f], bound[f]);
    }
    for (int pass = 0; pass < 2; pass++) {
        mb_flow_solve(s);
        double *load = calloc(L, sizeof *load), *maxr = calloc(L, sizeof *maxr);
        for (int f = 0; f < F; f++) {
            if (ids[f] < 0)
                continue;
            double x = mb_flow_rate(s, ids[f]);
            assert_true(x > 0);
            for (int k = 0; k < nl[f]; k++) {
                load[route[f][k]] += x;
                if (x > maxr[route[f][k]])
                    maxr[route[f][k]] = x;
            }
        }
        for (int l = 0; l < L; l++)
            assert_true(load[l] <= cap[l] * (1 + 1e-9));
        for (int f = 0; f < F; f++) {
            if (ids[f] < 0)
                continue;
            double x = mb_flow_rate(s, ids[f]);
            int ok = bound[f] > 0 && mb_dbl_eq(x, bound[f]);
            for (int k = 0; k < nl[f] && !ok; k++)
                ok = mb_dbl_eq(load[route[f][k]], cap[route[f][k]]) &&
                     mb_dbl_eq(x, maxr[route[f][k]]);
            assert_true(ok);
        }
        free(load);
        free(maxr);
        for (int f = 0; pass == 0 && f < F; f += 2) {
            mb_flow_remove(s, ids[f]);
            ids[f] = -1;
        }
    }
    assert_int_equal(mb_flow_n_active(s), F / 2);
    free(route);
    free(nl);
    free(ids);
    free(bound);
    mb_flow_free(s);
}

/*
 * Selective update against the full solve: single-link flows come and go on
 * 6 links (some bounded, some bounds equal to the link's share, so ties
 * occur) over 3,000 steps, solved after each; a twin system holds the same
 * flows plus one flow across two spare links, which makes every one of its
 * solves a full one. The rates must agree to the bit: a link left untouched
 * keeps exactly the rates a full solve computes again.
 */
static void test_selective_matches_full(void **state)
{
    (void)state;
    enum { L = 6, F = 48 };
    struct mb_flow_sys *a = mb_flow_new(), *b = mb_flow_new();
    for (int l = 0; l < L; l++) {
        double c = 1 + l % 3;
        assert_int_equal(mb_flow_add_link(a, c), l);
        assert_int_equal(mb_flow_add_link(b, c), l);
    }
    int spare[2] = {mb_flow_add_link(b, 5), mb_flow_add_link(b, 7)};
    assert_true(mb_flow_add(b, 2, spare, 0) >= 0);
    int ida[F], idb[F];
    for (int f = 0; f < F; f++)
        ida[f] = idb[f] = -1;
    struct mb_rng rng;
    mb_rng_seed(&rng, 16);
    for (int step = 0; step < 3000; step++) {
        int f = (int)(mb_rng_uniform(&rng) * F);
        if (ida[f] >= 0) {
            mb_flow_remove(a, ida[f]);
            mb_flow_remove(b, idb[f]);
            ida[f] = idb[f] = -1;
        } else {
            int l = (int)(mb_rng_uniform(&rng) * L);
            double u = mb_rng_uniform(&rng);
            double bound = u < 0.3 ? 0.05 + u : u < 0.4 ? 0.5 : 0;
            ida[f] = mb_flow_add(a, 1, &l, bound);
            idb[f] = mb_flow_add(b, 1, &l, bound);
            assert_true(ida[f] >= 0 && idb[f] >= 0);
        }
        if (mb_rng_uniform(&rng) < 0.7) { /* sometimes several changes per solve */
            mb_flow_solve(a);
            mb_flow_solve(b);
            for (int g = 0; g < F; g++)
                if (ida[g] >= 0)
                    assert_true(mb_flow_rate(a, ida[g]) == mb_flow_rate(b, idb[g]));
            check_link_loads(a);
        }
    }
    mb_flow_free(a);
    mb_flow_free(b);
}

/* Bad input: routes that cannot be added return -1 and change nothing. */
static void test_bad_input(void **state)
{
    (void)state;
    mb_flow_free(NULL);
    struct mb_flow_sys *s = mb_flow_new();
    int l = mb_flow_add_link(s, 1.0);
    int bad = 5;
    int many[MB_FLOW_ROUTE_MAX + 1] = {0};
    assert_int_equal(mb_flow_add(s, 1, &bad, 0), -1);             /* unknown link */
    assert_int_equal(mb_flow_add(s, 0, NULL, 0), -1);             /* no link, no bound */
    assert_int_equal(mb_flow_add(s, 1, &l, -1.0), -1);            /* negative bound */
    assert_int_equal(mb_flow_add(s, 1, &l, NAN), -1);             /* NaN bound */
    assert_int_equal(mb_flow_add(s, MB_FLOW_ROUTE_MAX + 1, many, 0), -1);
    assert_int_equal(mb_flow_n_active(s), 0);
    mb_flow_solve(s); /* empty system: nothing to do */
    assert_int_equal(mb_flow_n_solves(s), 1);
    mb_flow_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_link_two_flows),
        cmocka_unit_test(test_two_links_three_flows),
        cmocka_unit_test(test_parking_lot),
        cmocka_unit_test(test_bounded_flow),
        cmocka_unit_test(test_double_crossing),
        cmocka_unit_test(test_random_differential),
        cmocka_unit_test(test_many_flows_invariants),
        cmocka_unit_test(test_selective_matches_full),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
