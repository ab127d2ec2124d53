/*
 * test_queue.c -- event queue: (time, key) order, ties by key, peek, and
 * differential tests (push/pop, and peek then pop or replace the top) against
 * an unsorted reference array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mb_queue.h"
#include "mb_util.h"

/* Push times 3, 1, 2 -> pops come out 1, 2, 3 with their keys intact. */
static void test_order_by_time(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    mb_queue_push(q, 3.0, 30);
    mb_queue_push(q, 1.0, 10);
    mb_queue_push(q, 2.0, 20);
    assert_int_equal(mb_queue_size(q), 3);
    struct mb_event ev;
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(mb_queue_pop(q, &ev), 1);
        assert_true(ev.time == (double)i);
        assert_true(ev.key == (unsigned long long)(10 * i));
    }
    assert_int_equal(mb_queue_pop(q, &ev), 0);
    assert_int_equal(mb_queue_size(q), 0);
    mb_queue_free(q);
}

/* Ten events at t = 5 with keys 0..9 pushed in reverse, plus one at t = 4:
 * the t = 4 one first, then keys 0..9 (equal times pop by key, which the
 * engine makes its push order). */
static void test_ties_by_key(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    for (int i = 9; i >= 0; i--)
        mb_queue_push(q, 5.0, (unsigned long long)i << 32);
    mb_queue_push(q, 4.0, 99);
    struct mb_event ev;
    assert_int_equal(mb_queue_pop(q, &ev), 1);
    assert_true(ev.time == 4.0 && ev.key == 99);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(mb_queue_pop(q, &ev), 1);
        assert_true(ev.key == (unsigned long long)i << 32);
    }
    mb_queue_free(q);
}

/* Peek shows the minimum without removing it; NULL when empty. */
static void test_peek(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    assert_null(mb_queue_peek(q));
    mb_queue_push(q, 2.0, 2);
    mb_queue_push(q, 1.0, 1);
    const struct mb_event *top = mb_queue_peek(q);
    assert_non_null(top);
    assert_true(top->time == 1.0 && top->key == 1);
    assert_int_equal(mb_queue_size(q), 2);
    mb_queue_pop(q, NULL);
    assert_true(mb_queue_peek(q)->key == 2);
    mb_queue_free(q);
}

/* Reference: an unsorted array of (time, key, alive); its minimum live entry
 * by (time, key) is what the heap must pop. Random interleavings of push and
 * pop (times drawn from 16 values so ties are frequent; keys = push order). */
struct ref_ev {
    double time;
    unsigned long long key;
    int alive;
};

static void test_random_differential(void **state)
{
    (void)state;
    struct mb_rng rng;
    mb_rng_seed(&rng, 12345);
    struct mb_queue *q = mb_queue_new();
    enum { N = 20000 };
    struct ref_ev *ref = calloc(N, sizeof *ref);
    int n_ref = 0, live = 0;
    double now = 0;
    for (int step = 0; step < N; step++) {
        if (mb_rng_uniform(&rng) < 0.55 || live == 0) {
            double t = now + (double)(int)(mb_rng_uniform(&rng) * 16);
            ref[n_ref] = (struct ref_ev){t, (unsigned long long)n_ref, 1};
            mb_queue_push(q, t, ref[n_ref].key);
            n_ref++;
            live++;
        } else {
            int best = -1;
            for (int i = 0; i < n_ref; i++)
                if (ref[i].alive && (best < 0 || ref[i].time < ref[best].time ||
                                     (ref[i].time == ref[best].time && ref[i].key < ref[best].key)))
                    best = i;
            struct mb_event ev;
            assert_int_equal(mb_queue_pop(q, &ev), 1);
            assert_true(ev.key == ref[best].key && ev.time == ref[best].time);
            ref[best].alive = 0;
            live--;
            now = ev.time; /* like the engine: never schedule in the past */
        }
        assert_int_equal(mb_queue_size(q), live);
    }
    struct mb_event ev;
    double last = -1;
    while (mb_queue_pop(q, &ev)) { /* drain: times never decrease */
        assert_true(ev.time >= last);
        last = ev.time;
        live--;
    }
    assert_int_equal(live, 0);
    free(ref);
    mb_queue_free(q);
}

/* The engine's pattern: peek the earliest event, then either pop it or
 * replace it by the next event scheduled (mb_queue_replace_top). The
 * reference is the unsorted array again: a replace is its pop of the minimum
 * plus a push, and every event must come out as that minimum. */
static int ref_min(const struct ref_ev *ref, int n_ref)
{
    int best = -1;
    for (int i = 0; i < n_ref; i++)
        if (ref[i].alive &&
            (best < 0 || ref[i].time < ref[best].time || (ref[i].time == ref[best].time && ref[i].key < ref[best].key)))
            best = i;
    return best;
}

static void test_replace_top_differential(void **state)
{
    (void)state;
    struct mb_rng rng;
    mb_rng_seed(&rng, 777);
    struct mb_queue *q = mb_queue_new();
    enum { N = 20000 };
    struct ref_ev *ref = calloc(N, sizeof *ref);
    int n_ref = 0, live = 0, replaced = 0;
    double now = 0;
    for (int step = 0; step < N - 1 && n_ref < N - 1; step++) {
        double u = mb_rng_uniform(&rng);
        double t = now + (double)(int)(mb_rng_uniform(&rng) * 16);
        if (u < 0.4 || live == 0) {
            ref[n_ref] = (struct ref_ev){t, (unsigned long long)n_ref, 1};
            mb_queue_push(q, t, ref[n_ref].key);
            n_ref++;
            live++;
            continue;
        }
        int best = ref_min(ref, n_ref);
        const struct mb_event *top = mb_queue_peek(q);
        assert_non_null(top);
        assert_true(top->key == ref[best].key && top->time == ref[best].time);
        now = top->time;
        ref[best].alive = 0;
        if (u < 0.8) { /* handled, and its successor scheduled in its place */
            ref[n_ref] = (struct ref_ev){now + (t - now) * 0.5, (unsigned long long)n_ref, 1};
            mb_queue_replace_top(q, ref[n_ref].time, ref[n_ref].key);
            n_ref++;
            replaced++;
        } else {
            assert_int_equal(mb_queue_pop(q, NULL), 1);
            live--;
        }
        assert_int_equal(mb_queue_size(q), live);
    }
    assert_true(replaced > 1000); /* the path under test ran */
    struct mb_event ev;
    while (live > 0) {
        int best = ref_min(ref, n_ref);
        assert_int_equal(mb_queue_pop(q, &ev), 1);
        assert_true(ev.key == ref[best].key && ev.time == ref[best].time);
        ref[best].alive = 0;
        live--;
    }
    assert_int_equal(mb_queue_pop(q, NULL), 0);
    free(ref);
    mb_queue_free(q);
}

/* Bad input: NULL free is a no-op; pop on an empty queue returns 0; clear
 * empties the queue and it can be reused. */
static void test_bad_input(void **state)
{
    (void)state;
    mb_queue_free(NULL);
    struct mb_queue *q = mb_queue_new();
    assert_int_equal(mb_queue_pop(q, NULL), 0);
    mb_queue_push(q, 1.0, 1);
    mb_queue_clear(q);
    assert_int_equal(mb_queue_size(q), 0);
    assert_int_equal(mb_queue_pop(q, NULL), 0);
    mb_queue_push(q, 1.0, 2);
    assert_int_equal(mb_queue_size(q), 1);
    mb_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_by_time),
        cmocka_unit_test(test_ties_by_key),
        cmocka_unit_test(test_peek),
        cmocka_unit_test(test_random_differential),
        cmocka_unit_test(test_replace_top_differential),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
