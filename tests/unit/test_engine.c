/*
 * test_engine.c -- task-graph engine: streams, dependencies, flows sharing
 * links, the 1F1B closed form, deadlock detection, determinism, bad input.
 * Each test states the tiny system and the hand-derived answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_engine.h"
#include "mb_util.h"

#define assert_dbl(a, b)                                                                   \
    do {                                                                                   \
        double a_ = (a), b_ = (b);                                                         \
        if (!mb_dbl_eq(a_, b_))                                                            \
            fail_msg("%s = %.15g, expected %.15g", #a, a_, b_);                            \
    } while (0)

#define MB 1e6

static int add_compute(struct mb_engine *e, int stream, double dur)
{
    struct mb_task_desc d = {.stream = stream, .duration = dur};
    return mb_engine_add_task(e, &d);
}

static int add_xfer(struct mb_engine *e, int stream, double lat, double bytes, int link)
{
    struct mb_flow_desc f = {.bytes = bytes, .n_links = 1, .links = {link}};
    struct mb_task_desc d = {.stream = stream, .duration = lat, .n_flows = 1, .flows = &f};
    return mb_engine_add_task(e, &d);
}

/* Chain on one stream: durations 1, 2, 3.5 run back to back:
 * [0,1], [1,3], [3,6.5]; makespan = 1 + 2 + 3.5 = 6.5, one event per task. */
static void test_chain_one_stream(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    int s = mb_engine_add_stream(e);
    int t0 = add_compute(e, s, 1.0), t1 = add_compute(e, s, 2.0), t2 = add_compute(e, s, 3.5);
    struct mb_err err;
    mb_err_clear(&err);
    assert_int_equal(mb_engine_run(e, &err), 0);
    assert_int_equal(err.count, 0);
    assert_dbl(mb_engine_task_start(e, t0), 0.0);
    assert_dbl(mb_engine_task_end(e, t0), 1.0);
    assert_dbl(mb_engine_task_start(e, t1), 1.0);
    assert_dbl(mb_engine_task_end(e, t1), 3.0);
    assert_dbl(mb_engine_task_start(e, t2), 3.0);
    assert_dbl(mb_engine_task_end(e, t2), 6.5);
    assert_dbl(mb_engine_makespan(e), 6.5);
    assert_int_equal(mb_engine_n_events(e), 3);
    assert_int_equal(mb_engine_n_tasks(e), 3);
    mb_engine_free(e);
}

/* Two streams with a dependency:
 *   stream 0: A (2 s)
 *   stream 1: X (1.5 s), B (1 s, after A), C (1 s)
 * X runs [0,1.5] (no deps); B waits for A: [2,3]; C follows B on its
 * stream: [3,4]. Makespan 4. Kind and tag are carried through. */
static void test_two_streams_dependency(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
    int a = add_compute(e, s0, 2.0);
    int x = add_compute(e, s1, 1.5);
    struct mb_task_desc db = {.stream = s1, .duration = 1.0, .kind = 3, .tag = 42};
    int b = mb_engine_add_task(e, &db);
    int c = add_compute(e, s1, 1.0);
    mb_engine_add_dep(e, a, b);
    assert_int_equal(mb_engine_run(e, NULL), 0);
    assert_dbl(mb_engine_task_end(e, x), 1.5);
    assert_dbl(mb_engine_task_start(e, b), 2.0);
    assert_dbl(mb_engine_task_end(e, b), 3.0);
    assert_dbl(mb_engine_task_start(e, c), 3.0);
    assert_dbl(mb_engine_task_end(e, c), 4.0);
    assert_dbl(mb_engine_makespan(e), 4.0);
    assert_int_equal(mb_engine_task_kind(e, b), 3);
    assert_int_equal(mb_engine_task_tag(e, b), 42);
    assert_int_equal(mb_engine_task_stream(e, c), s1);
    mb_engine_free(e);
}

/* The same graph with a zero-length join on stream 0: each stream's busy
 * time is the sum of its tasks' end - start (A 2; X + B + C 3.5; the join 0),
 * with or without the critical-path bookkeeping, which only empties the path. */
static void test_stream_busy(void **state)
{
    (void)state;
    for (int track = 0; track < 2; track++) {
        struct mb_engine *e = mb_engine_new();
        mb_engine_track_critical(e, track);
        int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
        int a = add_compute(e, s0, 2.0);
        add_compute(e, s0, 0.0);
        add_compute(e, s1, 1.5);
        int b = add_compute(e, s1, 1.0);
        add_compute(e, s1, 1.0);
        mb_engine_add_dep(e, a, b);
        assert_int_equal(mb_engine_run(e, NULL), 0);
        assert_dbl(mb_engine_stream_busy(e, s0), 2.0);
        assert_dbl(mb_engine_stream_busy(e, s1), 3.5);
        assert_dbl(mb_engine_stream_busy(e, 7), 0.0);
        assert_dbl(mb_engine_makespan(e), 4.0);
        int path[8];
        assert_int_equal(mb_engine_critical_path(e, path, 8) > 0, track);
        mb_engine_free(e);
    }
}

/* Two flows share one 100 MB/s link, both start at t = 0:
 *   F1 = 100 MB, F2 = 300 MB. Max-min: 50 MB/s each.
 *   F1 done at 100/50 = 2 s; F2 has moved 100 MB, 200 MB left, now alone at
 *   100 MB/s: done at 2 + 200/100 = 4 s.
 * Same with 0.5 s latency (task duration) in front of both: 2.5 s and 4.5 s. */
static void test_two_flows_share_link(void **state)
{
    (void)state;
    for (int lat = 0; lat < 2; lat++) {
        double l0 = lat ? 0.5 : 0.0;
        struct mb_engine *e = mb_engine_new();
        int link = mb_engine_add_link(e, 100 * MB);
        int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
        int t1 = add_xfer(e, s0, l0, 100 * MB, link);
        int t2 = add_xfer(e, s1, l0, 300 * MB, link);
        assert_int_equal(mb_engine_run(e, NULL), 0);
        assert_dbl(mb_engine_task_start(e, t1), 0.0);
        assert_dbl(mb_engine_task_end(e, t1), 2.0 + l0);
        assert_dbl(mb_engine_task_end(e, t2), 4.0 + l0);
        assert_dbl(mb_engine_makespan(e), 4.0 + l0);
        mb_engine_free(e);
    }
}

/* Staggered start on a 100 MB/s link:
 *   T1: 200 MB, latency 0; T2: 300 MB, latency 1 s.
 *   [0,1]: T1 alone at 100 -> 100 MB left. From 1: 50 MB/s each; T1 done at
 *   1 + 100/50 = 3 (T2 moved 100, 200 left); T2 alone: 3 + 200/100 = 5. */
static void test_staggered_flows(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    int link = mb_engine_add_link(e, 100 * MB);
    int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
    int t1 = add_xfer(e, s0, 0.0, 200 * MB, link);
    int t2 = add_xfer(e, s1, 1.0, 300 * MB, link);
    assert_int_equal(mb_engine_run(e, NULL), 0);
    assert_dbl(mb_engine_task_end(e, t1), 3.0);
    assert_dbl(mb_engine_task_end(e, t2), 5.0);
    mb_engine_free(e);
}

/* A comm stream is busy while its transfer runs: two 100 MB transfers queued
 * on one stream over a 100 MB/s link run [0,1] and [1,2], not together.
 * A task with two flows ends with its slower flow: 100 MB on link A
 * (100 MB/s, 1 s) and 100 MB on link B (50 MB/s, 2 s) -> lasts 2 s; started
 * after the second transfer (t = 2) it ends at 4. */
static void test_stream_held_during_transfer(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    int la = mb_engine_add_link(e, 100 * MB), lb = mb_engine_add_link(e, 50 * MB);
    int s = mb_engine_add_stream(e), s2 = mb_engine_add_stream(e);
    int t1 = add_xfer(e, s, 0, 100 * MB, la);
    int t2 = add_xfer(e, s, 0, 100 * MB, la);
    struct mb_flow_desc f[2] = {{.bytes = 100 * MB, .n_links = 1, .links = {la}},
                                {.bytes = 100 * MB, .n_links = 1, .links = {lb}}};
    struct mb_task_desc d = {.stream = s2, .duration = 0, .n_flows = 2, .flows = f};
    int t3 = mb_engine_add_task(e, &d);
    mb_engine_add_dep(e, t2, t3); /* starts at 2, link A free again */
    assert_int_equal(mb_engine_run(e, NULL), 0);
    assert_dbl(mb_engine_task_end(e, t1), 1.0);
    assert_dbl(mb_engine_task_start(e, t2), 1.0);
    assert_dbl(mb_engine_task_end(e, t2), 2.0);
    assert_dbl(mb_engine_task_start(e, t3), 2.0);
    assert_dbl(mb_engine_task_end(e, t3), 4.0);
    mb_engine_free(e);
}

/* Work conservation: 8 streams each push 3 transfers (sizes 10..80 MB,
 * zero latency) over one 100 MB/s link. The link is never idle while bytes
 * are pending, so makespan = total bytes / 100 MB/s, whatever the sharing. */
static void test_work_conserving(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    int link = mb_engine_add_link(e, 100 * MB);
    double total = 0;
    for (int s = 0; s < 8; s++) {
        int st = mb_engine_add_stream(e);
        for (int k = 0; k < 3; k++) {
            double bytes = (10 + 10 * ((s * 3 + k * 5) % 8)) * MB;
            add_xfer(e, st, 0, bytes, link);
            total += bytes;
        }
    }
    assert_int_equal(mb_engine_run(e, NULL), 0);
    assert_dbl(mb_engine_makespan(e), total / (100 * MB));
    mb_engine_free(e);
}

/* 1F1B pipeline, p stages on p streams, m microbatches, forward f, backward
 * 2f, zero-cost p2p (plain dependencies). Stage s runs min(p-1-s, m) warm-up
 * forwards, then alternates F, B, then drains the remaining backwards.
 * Deps: F(s,i) after F(s-1,i); B(s,i) after B(s+1,i).
 * Closed form: makespan = (m + p - 1)(f + 2f) = (m + p - 1) 3f; each stage is
 * busy m * 3f, so its bubble fraction is (p - 1)/(m + p - 1).
 * Example p = 4, m = 8, f = 1: makespan 33, bubble 3/11. */
static double build_1f1b(struct mb_engine *e, int p, int m, double f)
{
    int *F = malloc(sizeof(int) * (size_t)(p * m)), *B = malloc(sizeof(int) * (size_t)(p * m));
    for (int s = 0; s < p; s++) {
        int st = mb_engine_add_stream(e);
        assert_int_equal(st, s);
        int w = p - 1 - s < m ? p - 1 - s : m;
        int nf = 0, nb = 0;
        for (; nf < w; nf++)
            F[s * m + nf] = add_compute(e, st, f);
        while (nf < m) {
            F[s * m + nf++] = add_compute(e, st, f);
            B[s * m + nb++] = add_compute(e, st, 2 * f);
        }
        while (nb < m)
            B[s * m + nb++] = add_compute(e, st, 2 * f);
    }
    for (int s = 0; s < p; s++)
        for (int i = 0; i < m; i++) {
            if (s > 0)
                mb_engine_add_dep(e, F[(s - 1) * m + i], F[s * m + i]);
            if (s < p - 1)
                mb_engine_add_dep(e, B[(s + 1) * m + i], B[s * m + i]);
        }
    free(F);
    free(B);
    return f;
}

static void test_1f1b_pipeline(void **state)
{
    (void)state;
    int cases[][2] = {{1, 1}, {2, 4}, {4, 8}, {4, 4}, {3, 7}, {8, 32}, {16, 64}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int p = cases[c][0], m = cases[c][1];
        double f = 0.25;
        struct mb_engine *e = mb_engine_new();
        build_1f1b(e, p, m, f);
        assert_int_equal(mb_engine_run(e, NULL), 0);
        double T = mb_engine_makespan(e);
        assert_dbl(T, (m + p - 1) * 3 * f);
        /* per-stage busy time and bubble fraction */
        double *busy = calloc((size_t)p, sizeof *busy);
        for (size_t t = 0; t < mb_engine_n_tasks(e); t++)
            busy[mb_engine_task_stream(e, (int)t)] +=
                mb_engine_task_end(e, (int)t) - mb_engine_task_start(e, (int)t);
        for (int s = 0; s < p; s++) {
            assert_dbl(busy[s], m * 3 * f);
            assert_dbl(1 - busy[s] / T, (double)(p - 1) / (m + p - 1));
        }
        free(busy);
        mb_engine_free(e);
    }
}

/* Deadlock 1: A (stream 0) after B (stream 1) and B after A: neither can
 * start -> "deadlock: 2 tasks never became ready (first: task 0 on stream 0)".
 * Deadlock 2 (through stream order): stream 0 runs X then Y, stream 1 runs Z;
 * X after Z, Z after Y. Y waits for X (stream), X for Z, Z for Y. An
 * unrelated task W on stream 2 still completes, and is not counted. */
static void test_deadlock(void **state)
{
    (void)state;
    struct mb_err err;
    struct mb_engine *e = mb_engine_new();
    int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
    int a = add_compute(e, s0, 1), b = add_compute(e, s1, 1);
    mb_engine_add_dep(e, b, a);
    mb_engine_add_dep(e, a, b);
    mb_err_clear(&err);
    assert_int_equal(mb_engine_run(e, &err), -1);
    assert_string_equal(err.msg, "deadlock: 2 tasks never became ready (first: task 0 on stream 0)");
    mb_engine_free(e);

    e = mb_engine_new();
    s0 = mb_engine_add_stream(e);
    s1 = mb_engine_add_stream(e);
    int s2 = mb_engine_add_stream(e);
    int w = add_compute(e, s2, 5);
    int x = add_compute(e, s0, 1), y = add_compute(e, s0, 1), z = add_compute(e, s1, 1);
    mb_engine_add_dep(e, z, x);
    mb_engine_add_dep(e, y, z);
    mb_err_clear(&err);
    assert_int_equal(mb_engine_run(e, &err), -1);
    assert_string_equal(err.msg, "deadlock: 3 tasks never became ready (first: task 1 on stream 0)");
    assert_dbl(mb_engine_task_end(e, w), 5.0);
    assert_true(mb_engine_task_start(e, x) < 0);
    mb_engine_free(e);
}

/* A random graph with compute and transfers: 16 streams, 8 links,
 * 3000 tasks, random backward dependencies (always to an earlier task, so
 * no deadlock). Run it on two engines and twice on one engine: times must be
 * bit-identical. Also check the schedule invariants: end >= start + duration,
 * tasks of a stream do not overlap and run in order, deps are respected. */
static void build_random(struct mb_engine *e, unsigned long long seed, int n, double *dur)
{
    struct mb_rng rng;
    mb_rng_seed(&rng, seed);
    for (int l = 0; l < 8; l++)
        mb_engine_add_link(e, (1 + l % 3) * 100 * MB);
    for (int s = 0; s < 16; s++)
        mb_engine_add_stream(e);
    for (int t = 0; t < n; t++) {
        struct mb_flow_desc f[3];
        int nf = mb_rng_uniform(&rng) < 0.4 ? 1 + (int)(mb_rng_uniform(&rng) * 3) : 0;
        for (int i = 0; i < nf; i++) {
            f[i].bytes = (1 + mb_rng_uniform(&rng) * 99) * MB;
            f[i].n_links = 1 + (int)(mb_rng_uniform(&rng) * 2);
            f[i].links[0] = (int)(mb_rng_uniform(&rng) * 8);
            f[i].links[1] = (f[i].links[0] + 1 + (int)(mb_rng_uniform(&rng) * 7)) % 8;
            f[i].bound = mb_rng_uniform(&rng) < 0.2 ? 30 * MB : 0;
        }
        struct mb_task_desc d = {.stream = (int)(mb_rng_uniform(&rng) * 16),
                                 .duration = (int)(mb_rng_uniform(&rng) * 4) * 0.125,
                                 .n_flows = nf,
                                 .flows = f};
        dur[t] = d.duration;
        assert_int_equal(mb_engine_add_task(e, &d), t);
        if (t > 0 && mb_rng_uniform(&rng) < 0.5)
            mb_engine_add_dep(e, (int)(mb_rng_uniform(&rng) * t), t);
    }
}

static void test_determinism(void **state)
{
    (void)state;
    enum { N = 3000 };
    double *dur = malloc(N * sizeof *dur);
    double *t1 = malloc(2 * N * sizeof *t1), *t2 = malloc(2 * N * sizeof *t2);
    struct mb_engine *e1 = mb_engine_new(), *e2 = mb_engine_new();
    build_random(e1, 99, N, dur);
    build_random(e2, 99, N, dur);
    assert_int_equal(mb_engine_run(e1, NULL), 0);
    assert_int_equal(mb_engine_run(e2, NULL), 0);
    for (int t = 0; t < N; t++) {
        t1[2 * t] = mb_engine_task_start(e1, t);
        t1[2 * t + 1] = mb_engine_task_end(e1, t);
        t2[2 * t] = mb_engine_task_start(e2, t);
        t2[2 * t + 1] = mb_engine_task_end(e2, t);
    }
    assert_memory_equal(t1, t2, 2 * N * sizeof *t1);
    assert_true(mb_engine_n_events(e1) == mb_engine_n_events(e2));
    assert_true(mb_engine_max_active_flows(e1) > 1);
    assert_true(mb_engine_n_solves(e1) > 0);
    /* rerun on the same engine */
    assert_int_equal(mb_engine_run(e1, NULL), 0);
    for (int t = 0; t < N; t++) {
        t2[2 * t] = mb_engine_task_start(e1, t);
        t2[2 * t + 1] = mb_engine_task_end(e1, t);
    }
    assert_memory_equal(t1, t2, 2 * N * sizeof *t1);

    /* invariants */
    double *last_end = calloc(16, sizeof *last_end);
    for (int t = 0; t < N; t++) {
        double st = t1[2 * t], en = t1[2 * t + 1];
        int s = mb_engine_task_stream(e1, t);
        assert_true(st >= 0);
        assert_true(en >= st + dur[t] - 1e-9);
        assert_true(st >= last_end[s] - 1e-9); /* program order, no overlap */
        last_end[s] = en;
        assert_true(en <= mb_engine_makespan(e1));
    }
    free(last_end);
    free(dur);
    free(t1);
    free(t2);
    mb_engine_free(e1);
    mb_engine_free(e2);
}

/* Dependencies respected: in the random graph above every dep edge
 * before -> after has start(after) >= end(before). Rebuilt here with the edge
 * list recorded (same generator). */
static void test_deps_respected(void **state)
{
    (void)state;
    enum { N = 2000 };
    struct mb_rng rng;
    mb_rng_seed(&rng, 5);
    struct mb_engine *e = mb_engine_new();
    mb_engine_add_link(e, 100 * MB);
    for (int s = 0; s < 4; s++)
        mb_engine_add_stream(e);
    int *eb = malloc(N * sizeof *eb), *ea = malloc(N * sizeof *ea), ne = 0;
    for (int t = 0; t < N; t++) {
        struct mb_flow_desc f = {.bytes = 10 * MB, .n_links = 1, .links = {0}};
        int xfer = mb_rng_uniform(&rng) < 0.3;
        struct mb_task_desc d = {.stream = (int)(mb_rng_uniform(&rng) * 4),
                                 .duration = mb_rng_uniform(&rng),
                                 .n_flows = xfer,
                                 .flows = &f};
        mb_engine_add_task(e, &d);
        if (t > 0) {
            eb[ne] = (int)(mb_rng_uniform(&rng) * t);
            ea[ne] = t;
            mb_engine_add_dep(e, eb[ne], ea[ne]);
            ne++;
        }
    }
    assert_int_equal(mb_engine_run(e, NULL), 0);
    for (int i = 0; i < ne; i++)
        assert_true(mb_engine_task_start(e, ea[i]) >= mb_engine_task_end(e, eb[i]));
    free(eb);
    free(ea);
    mb_engine_free(e);
}

/* Folded chains (mb_engine_fold_chains), by hand: stream 0 runs A (1 s),
 * B (2 s, also after A by an edge), C (3.5 s); stream 1 runs X (0.5 s) after
 * B. B's only predecessor is A and A has no other successor, so B rides in
 * A's event; C does not (X sees B end). Times as unfolded: A [0,1], B [1,3],
 * C [3,6.5], X [3,3.5]; events 3 instead of 4, and 4 again when the
 * critical path is tracked (folding is off then). */
static void test_fold_chains(void **state)
{
    (void)state;
    for (int critical = 0; critical <= 1; critical++) {
        struct mb_engine *e = mb_engine_new();
        mb_engine_track_critical(e, critical);
        mb_engine_fold_chains(e, 1);
        int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
        int a = add_compute(e, s0, 1.0), b = add_compute(e, s0, 2.0), c = add_compute(e, s0, 3.5);
        int x = add_compute(e, s1, 0.5);
        mb_engine_add_dep(e, a, b);
        mb_engine_add_dep(e, b, x);
        assert_int_equal(mb_engine_run(e, NULL), 0);
        assert_dbl(mb_engine_task_start(e, b), 1.0);
        assert_dbl(mb_engine_task_end(e, b), 3.0);
        assert_dbl(mb_engine_task_start(e, c), 3.0);
        assert_dbl(mb_engine_task_end(e, c), 6.5);
        assert_dbl(mb_engine_task_start(e, x), 3.0);
        assert_dbl(mb_engine_task_end(e, x), 3.5);
        assert_dbl(mb_engine_stream_busy(e, s0), 6.5);
        assert_dbl(mb_engine_makespan(e), 6.5);
        assert_int_equal(mb_engine_n_events(e), critical ? 4 : 3);
        mb_engine_free(e);
    }
}

/* A random graph whose durations are drawn from a continuum (no two events
 * tie): 8 streams, 3 links, transfers, zero-length tasks, edges from the
 * stream predecessor and from random earlier tasks. Folded and unfolded runs
 * give bit-identical starts, ends, busy sums and makespan, in fewer events. */
static void build_fold_random(struct mb_engine *e, unsigned long long seed, int n)
{
    struct mb_rng rng;
    mb_rng_seed(&rng, seed);
    int last[8];
    for (int l = 0; l < 3; l++)
        mb_engine_add_link(e, (1 + l) * 100 * MB);
    for (int s = 0; s < 8; s++) {
        mb_engine_add_stream(e);
        last[s] = -1;
    }
    for (int t = 0; t < n; t++) {
        struct mb_flow_desc f = {.bytes = (1 + mb_rng_uniform(&rng) * 9) * MB, .n_links = 1,
                                 .links = {(int)(mb_rng_uniform(&rng) * 3)}};
        double u = mb_rng_uniform(&rng);
        int st = (int)(mb_rng_uniform(&rng) * 8);
        struct mb_task_desc d = {.stream = st, .duration = u < 0.1 ? 0 : mb_rng_uniform(&rng),
                                 .n_flows = u > 0.8, .flows = &f};
        assert_int_equal(mb_engine_add_task(e, &d), t);
        if (last[st] >= 0 && mb_rng_uniform(&rng) < 0.5)
            mb_engine_add_dep(e, last[st], t);
        if (t > 0 && mb_rng_uniform(&rng) < 0.15)
            mb_engine_add_dep(e, (int)(mb_rng_uniform(&rng) * t), t);
        last[st] = t;
    }
}

static void test_fold_random(void **state)
{
    (void)state;
    enum { N = 4000 };
    struct mb_engine *e[2];
    for (int i = 0; i < 2; i++) {
        e[i] = mb_engine_new();
        mb_engine_track_critical(e[i], 0);
        mb_engine_fold_chains(e[i], i);
        build_fold_random(e[i], 7, N);
        assert_int_equal(mb_engine_run(e[i], NULL), 0);
    }
    for (int t = 0; t < N; t++) {
        double s0 = mb_engine_task_start(e[0], t), s1 = mb_engine_task_start(e[1], t);
        double f0 = mb_engine_task_end(e[0], t), f1 = mb_engine_task_end(e[1], t);
        assert_memory_equal(&s0, &s1, sizeof s0);
        assert_memory_equal(&f0, &f1, sizeof f0);
    }
    for (int s = 0; s < 8; s++) {
        double b0 = mb_engine_stream_busy(e[0], s), b1 = mb_engine_stream_busy(e[1], s);
        assert_memory_equal(&b0, &b1, sizeof b0);
    }
    double m0 = mb_engine_makespan(e[0]), m1 = mb_engine_makespan(e[1]);
    assert_memory_equal(&m0, &m1, sizeof m0);
    assert_true(mb_engine_n_events(e[1]) < mb_engine_n_events(e[0]));
    mb_engine_free(e[0]);
    mb_engine_free(e[1]);
}

/* Empty graph: nothing to do, makespan 0, no events. Streams without tasks
 * are fine. */
static void test_empty(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    mb_engine_add_stream(e);
    assert_int_equal(mb_engine_run(e, NULL), 0);
    assert_dbl(mb_engine_makespan(e), 0.0);
    assert_int_equal(mb_engine_n_events(e), 0);
    mb_engine_free(e);
    mb_engine_free(NULL);
}

/* Bad input is reported by run() with the first problem found while
 * building: unknown stream, non-positive bytes, unknown link, bad dep. */
static void test_bad_input(void **state)
{
    (void)state;
    struct mb_err err;
    struct {
        int what;
        const char *msg;
    } cases[] = {
        {0, "task 0: unknown stream 7"},
        {1, "task 0 flow 0: bytes must be > 0 and finite"},
        {2, "task 0 flow 0: unknown link 3"},
        {3, "dependency 0 -> 5 names an unknown task"},
        {4, "task 0: duration must be >= 0 and finite"},
        {5, "link 0: capacity must be > 0 and finite"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct mb_engine *e = mb_engine_new();
        int s = mb_engine_add_stream(e);
        int l = mb_engine_add_link(e, cases[c].what == 5 ? 0.0 : 1.0);
        struct mb_flow_desc f = {.bytes = 1, .n_links = 1, .links = {l}};
        struct mb_task_desc d = {.stream = s, .duration = 1, .n_flows = 1, .flows = &f};
        switch (cases[c].what) {
        case 0: d.stream = 7; break;
        case 1: f.bytes = 0; break;
        case 2: f.links[0] = 3; break;
        case 4: d.duration = -1; break;
        default: break;
        }
        mb_engine_add_task(e, &d);
        if (cases[c].what == 3)
            mb_engine_add_dep(e, 0, 5);
        mb_err_clear(&err);
        assert_int_equal(mb_engine_run(e, &err), -1);
        assert_string_equal(err.msg, cases[c].msg);
        mb_engine_free(e);
    }
}

/* Critical path: stream A runs t0 (1 s) then t1 (2 s); stream B runs t2 (5 s);
 * t1 depends on t2. t1 starts at 5 (released by t2, not by t0 which ended at 1)
 * and ends at 7, so the path is t1 <- t2. Stream C runs t3 (3 s) after t0:
 * it ends at 4, before t1, so it is not on the path. */
static void test_critical_path(void **state)
{
    (void)state;
    struct mb_engine *e = mb_engine_new();
    struct mb_err err;
    mb_err_clear(&err);
    int A = mb_engine_add_stream(e), B = mb_engine_add_stream(e), C = mb_engine_add_stream(e);
    int t0 = add_compute(e, A, 1), t1 = add_compute(e, A, 2), t2 = add_compute(e, B, 5), t3 = add_compute(e, C, 3);
    mb_engine_add_dep(e, t2, t1);
    mb_engine_add_dep(e, t0, t3);
    assert_int_equal(mb_engine_run(e, &err), 0);
    int path[8];
    size_t n = mb_engine_critical_path(e, path, 8);
    assert_int_equal(n, 2);
    assert_int_equal(path[0], t1);
    assert_int_equal(path[1], t2);
    (void)t3;
    mb_engine_free(e);
}

/* The invariant pass (mb_engine_check.c). The graphs of test_deadlock: a cycle through two
 * dependencies, and one through stream order (X then Y on stream 0, X after Z, Z after Y), found before
 * any run with the tasks that never become ready; the chain of test_chain_one_stream and a two-stream
 * dependency pass, before and after their run. A run's times are checked against what was run: a
 * dependency added after the run (task 0 waiting for task 2, which ended later) is "not resolved". */
static void test_invariants(void **state)
{
    (void)state;
    char why[512];
    struct mb_err err;
    struct mb_engine *e = mb_engine_new();
    int s0 = mb_engine_add_stream(e), s1 = mb_engine_add_stream(e);
    int a = add_compute(e, s0, 1), b = add_compute(e, s1, 1);
    mb_engine_add_dep(e, b, a);
    mb_engine_add_dep(e, a, b);
    assert_int_equal(mb_engine_check_graph(e, why, sizeof why), -1);
    assert_string_equal(why, "the dependencies and stream order have a cycle: 2 of 2 tasks never become ready "
                             "(first: task 0 on stream 0)");
    mb_engine_free(e);

    e = mb_engine_new();
    s0 = mb_engine_add_stream(e);
    s1 = mb_engine_add_stream(e);
    int s2 = mb_engine_add_stream(e);
    add_compute(e, s2, 5);
    int x = add_compute(e, s0, 1), y = add_compute(e, s0, 1), z = add_compute(e, s1, 1);
    mb_engine_add_dep(e, z, x);
    mb_engine_add_dep(e, y, z);
    assert_int_equal(mb_engine_check_graph(e, why, sizeof why), -1);
    assert_string_equal(why, "the dependencies and stream order have a cycle: 3 of 4 tasks never become ready "
                             "(first: task 1 on stream 0)");
    mb_engine_free(e);

    e = mb_engine_new();
    s0 = mb_engine_add_stream(e);
    s1 = mb_engine_add_stream(e);
    int t0 = add_compute(e, s0, 1), t1 = add_compute(e, s0, 2), t2 = add_compute(e, s1, 3.5);
    mb_engine_add_dep(e, t1, t2); /* t2 runs [3, 6.5] */
    assert_int_equal(mb_engine_check_graph(e, why, sizeof why), 0);
    mb_err_clear(&err);
    assert_int_equal(mb_engine_run(e, &err), 0);
    assert_int_equal(mb_engine_check_run(e, why, sizeof why), 0);
    mb_engine_add_dep(e, t2, t0); /* t0 ran at [0, 1], before t2 ended */
    assert_int_equal(mb_engine_check_run(e, why, sizeof why), -1);
    assert_string_equal(why, "task 0 starts at 0 s, before task 2 it waits for ends (6.5 s)");
    mb_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_one_stream),
        cmocka_unit_test(test_two_streams_dependency),
        cmocka_unit_test(test_stream_busy),
        cmocka_unit_test(test_two_flows_share_link),
        cmocka_unit_test(test_staggered_flows),
        cmocka_unit_test(test_stream_held_during_transfer),
        cmocka_unit_test(test_work_conserving),
        cmocka_unit_test(test_1f1b_pipeline),
        cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_deps_respected),
        cmocka_unit_test(test_fold_chains),
        cmocka_unit_test(test_fold_random),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_critical_path),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
