/*
 * mb_engine_check.c -- invariants of a task graph and of its run, checked from the engine's public
 * accessors (SimGrid's check_concurrency() pattern: a pass that asserts what the model must never
 * produce, run after each phase in debug and sanitizer builds; see workloads/step/check.c).
 */
#include "mb_engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The task graph's successors in CSR form: the dependencies and each task's next on its stream. */
struct mb_engine__csr {
    size_t *off; /* n + 1 */
    int *to;
    int *indeg;
};

static void mb_engine__csr_build(const struct mb_engine *e, size_t n, struct mb_engine__csr *g)
{
    size_t nd = mb_engine_n_deps(e);
    g->off = mb_calloc(n + 1, sizeof *g->off);
    g->indeg = mb_calloc(n ? n : 1, sizeof *g->indeg);
    g->to = mb_malloc((nd + n + 1) * sizeof *g->to);
    for (size_t i = 0; i < nd; i++) {
        int a, b;
        mb_engine_dep(e, i, &a, &b);
        g->off[a + 1]++;
    }
    for (size_t t = 0; t < n; t++)
        if (mb_engine_task_next(e, (int)t) >= 0)
            g->off[t + 1]++;
    for (size_t t = 0; t < n; t++)
        g->off[t + 1] += g->off[t];
    size_t *fill = mb_malloc((n + 1) * sizeof *fill);
    for (size_t t = 0; t <= n; t++)
        fill[t] = g->off[t];
    for (size_t i = 0; i < nd; i++) {
        int a, b;
        mb_engine_dep(e, i, &a, &b);
        g->to[fill[a]++] = b;
        g->indeg[b]++;
    }
    for (size_t t = 0; t < n; t++) {
        int nx = mb_engine_task_next(e, (int)t);
        if (nx >= 0) {
            g->to[fill[t]++] = nx;
            g->indeg[nx]++;
        }
    }
    mb_free(fill);
}

int mb_engine_check_graph(const struct mb_engine *e, char *why, size_t len)
{
    size_t n = mb_engine_n_tasks(e), nd = mb_engine_n_deps(e);
    for (size_t i = 0; i < nd; i++) {
        int a, b;
        mb_engine_dep(e, i, &a, &b);
        if (a < 0 || b < 0 || (size_t)a >= n || (size_t)b >= n || a == b) {
            snprintf(why, len, "dependency %zu: task %d before task %d, of %zu tasks", i, a, b, n);
            return -1;
        }
    }
    struct mb_engine__csr g;
    mb_engine__csr_build(e, n, &g);
    /* Kahn: a task is ready once every predecessor is; what never gets ready lies on a cycle */
    int *ready = mb_malloc((n ? n : 1) * sizeof *ready);
    size_t head = 0, tail = 0, done = 0;
    for (size_t t = 0; t < n; t++)
        if (!g.indeg[t])
            ready[tail++] = (int)t;
    while (head < tail) {
        int t = ready[head++];
        done++;
        for (size_t k = g.off[t]; k < g.off[t + 1]; k++)
            if (--g.indeg[g.to[k]] == 0)
                ready[tail++] = g.to[k];
    }
    int rc = 0;
    if (done < n) {
        size_t t = 0;
        while (g.indeg[t] == 0)
            t++;
        snprintf(why, len, "the dependencies and stream order have a cycle: %zu of %zu tasks never become ready "
                           "(first: task %zu on stream %d)", n - done, n, t, mb_engine_task_stream(e, (int)t));
        rc = -1;
    }
    mb_free(ready);
    mb_free(g.off);
    mb_free(g.to);
    mb_free(g.indeg);
    return rc;
}

int mb_engine_check_run(const struct mb_engine *e, char *why, size_t len)
{
    size_t n = mb_engine_n_tasks(e), nd = mb_engine_n_deps(e);
    double span = mb_engine_makespan(e), eps = 1e-9 * fmax(1.0, span);
    for (size_t t = 0; t < n; t++) {
        double s = mb_engine_task_start(e, (int)t), f = mb_engine_task_end(e, (int)t);
        if (!isfinite(s) || !isfinite(f) || s < 0 || f < s || f > span + eps) {
            snprintf(why, len, "task %zu on stream %d: start %.9g s, end %.9g s, makespan %.9g s", t,
                     mb_engine_task_stream(e, (int)t), s, f, span);
            return -1;
        }
        int nx = mb_engine_task_next(e, (int)t);
        if (nx >= 0 && mb_engine_task_start(e, nx) < f - eps) {
            snprintf(why, len, "stream %d: task %d starts at %.9g s, before task %zu before it ends (%.9g s)",
                     mb_engine_task_stream(e, (int)t), nx, mb_engine_task_start(e, nx), t, f);
            return -1;
        }
    }
    for (size_t i = 0; i < nd; i++) {
        int a, b;
        mb_engine_dep(e, i, &a, &b);
        if (mb_engine_task_start(e, b) < mb_engine_task_end(e, a) - eps) {
            snprintf(why, len, "task %d starts at %.9g s, before task %d it waits for ends (%.9g s)", b,
                     mb_engine_task_start(e, b), a, mb_engine_task_end(e, a));
            return -1;
        }
    }
    return 0;
}
