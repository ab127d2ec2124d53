/*
 * test_queue.c -- event queue: (time, seq) order, ids, lazy cancellation,
 * and a differential test against a sorted array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mb_queue.h"
#include "mb_util.h"

/* Push times 3, 1, 2 -> pops come out 1, 2, 3 with their payloads intact. */
static void test_order_by_time(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    mb_queue_push(q, 3.0, 7, 30, 31);
    mb_queue_push(q, 1.0, 7, 10, 11);
    mb_queue_push(q, 2.0, 7, 20, 21);
    assert_int_equal(mb_queue_size(q), 3);
    struct mb_event ev;
    double want[] = {1.0, 2.0, 3.0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(mb_queue_pop(q, &ev), 1);
        assert_true(mb_dbl_eq(ev.time, want[i]));
        assert_int_equal(ev.type, 7);
        assert_int_equal(ev.a, 10 * (i + 1));
        assert_int_equal(ev.b, 10 * (i + 1) + 1);
    }
    assert_int_equal(mb_queue_pop(q, &ev), 0);
    assert_int_equal(mb_queue_size(q), 0);
    mb_queue_free(q);
}

/* Five events at the same time 5.0 pushed with a = 0..4 must pop in push
 * order 0..4 (seq breaks ties); an earlier event pushed last still pops first. */
static void test_ties_by_push_order(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    for (int i = 0; i < 5; i++)
        mb_queue_push(q, 5.0, 0, i, 0);
    mb_queue_push(q, 4.0, 0, 99, 0);
    struct mb_event ev;
    unsigned long long last_seq = 0;
    assert_int_equal(mb_queue_pop(q, &ev), 1);
    assert_int_equal(ev.a, 99);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(mb_queue_pop(q, &ev), 1);
        assert_int_equal(ev.a, i);
        assert_true(ev.seq > last_seq);
        last_seq = ev.seq;
    }
    mb_queue_free(q);
}

/* Events A(1), B(2), C(3); cancel B -> pops A, C. Cancelling B again, or A
 * after it popped, or a made-up id, returns -1. Peek skips a cancelled top. */
static void test_cancel(void **state)
{
    (void)state;
    struct mb_queue *q = mb_queue_new();
    unsigned long long a = mb_queue_push(q, 1.0, 0, 1, 0);
    unsigned long long b = mb_queue_push(q, 2.0, 0, 2, 0);
    unsigned long long c = mb_queue_push(q, 3.0, 0, 3, 0);
    assert_true(a != 0 && b != 0 && c != 0 && a != b && b != c);
    assert_int_equal(mb_queue_cancel(q, b), 0);
    assert_int_equal(mb_queue_cancel(q, b), -1);
    assert_int_equal(mb_queue_size(q), 2);
    struct mb_event ev;
    assert_int_equal(mb_queue_pop(q, &ev), 1);
    assert_int_equal(ev.a, 1);
    assert_true(ev.id == a);
    assert_int_equal(mb_queue_cancel(q, a), -1); /* already popped */
    assert_int_equal(mb_queue_cancel(q, 0), -1);
    assert_int_equal(mb_queue_cancel(q, 0xdeadbeef00000007ULL), -1);
    /* the recycled slot of A gets a new id; A's old id stays dead */
    unsigned long long d = mb_queue_push(q, 2.5, 0, 4, 0);
    assert_true(d != a);
    assert_int_equal(mb_queue_cancel(q, a), -1);
    assert_int_equal(mb_queue_cancel(q, d), 0);
    assert_int_equal(mb_queue_peek(q, &ev), 1);
    assert_int_equal(ev.a, 3);
    assert_int_equal(mb_queue_pop(q, &ev), 1);
    assert_int_equal(ev.a, 3);
    assert_int_equal(mb_queue_pop(q, &ev), 0);
    assert_int_equal(mb_queue_peek(q, &ev), 0);
    /* cancelling the only event leaves an empty queue */
    unsigned long long e = mb_queue_push(q, 9.0, 0, 5, 0);
    assert_int_equal(mb_queue_cancel(q, e), 0);
    assert_int_equal(mb_queue_size(q), 0);
    assert_int_equal(mb_queue_pop(q, NULL), 0);
    mb_queue_free(q);
}

/* Reference: an array of (time, seq, alive) kept unsorted; its minimum live
 * entry by (time, seq) is what the heap must pop. Random interleavings of
 * push / pop / cancel (times drawn from 16 values so ties are frequent). */
struct ref_ev {
    double time;
    unsigned long long seq, id;
    int a;
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
    unsigned long long seq = 0;
    double now = 0;
    for (int step = 0; step < N; step++) {
        double u = mb_rng_uniform(&rng);
        if (u < 0.5 || live == 0) {
            double t = now + (double)(int)(mb_rng_uniform(&rng) * 16);
            struct ref_ev *r = &ref[n_ref];
            r->time = t;
            r->seq = seq++;
            r->a = n_ref;
            r->alive = 1;
            r->id = mb_queue_push(q, t, 0, n_ref, 0);
            n_ref++;
            live++;
        } else if (u < 0.85) {
            int best = -1;
            for (int i = 0; i < n_ref; i++) {
                if (!ref[i].alive)
                    continue;
                if (best < 0 || ref[i].time < ref[best].time ||
                    (ref[i].time == ref[best].time && ref[i].seq < ref[best].seq))
                    best = i;
            }
            struct mb_event ev;
            assert_int_equal(mb_queue_pop(q, &ev), 1);
            assert_int_equal(ev.a, ref[best].a);
            assert_true(ev.id == ref[best].id);
            ref[best].alive = 0;
            live--;
            now = ev.time; /* like the engine: never schedule in the past */
        } else {
            /* cancel a random entry (possibly already gone) */
            int i = (int)(mb_rng_uniform(&rng) * n_ref);
            int rc = mb_queue_cancel(q, ref[i].id);
            assert_int_equal(rc, ref[i].alive ? 0 : -1);
            if (ref[i].alive) {
                ref[i].alive = 0;
                live--;
            }
        }
        assert_int_equal(mb_queue_size(q), live);
    }
    /* drain: times never decrease */
    struct mb_event ev;
    double last = -1;
    while (mb_queue_pop(q, &ev)) {
        assert_true(ev.time >= last);
        last = ev.time;
        live--;
    }
    assert_int_equal(live, 0);
    free(ref);
    mb_queue_free(q);
}

/* Bad input: NULL free is a no-op; clear empties but ids stay unique. */
static void test_bad_input(void **state)
{
    (void)state;
    mb_queue_free(NULL);
    struct mb_queue *q = mb_queue_new();
    unsigned long long a = mb_queue_push(q, 1.0, 0, 0, 0);
    mb_queue_clear(q);
    assert_int_equal(mb_queue_size(q), 0);
    assert_int_equal(mb_queue_cancel(q, a), -1);
    unsigned long long b = mb_queue_push(q, 1.0, 0, 0, 0);
    assert_true(a != b);
    mb_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_by_time),
        cmocka_unit_test(test_ties_by_push_order),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_random_differential),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
