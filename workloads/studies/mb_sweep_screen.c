/*
 * mb_sweep_screen.c -- `mbsim sweep --screen K` (mb_sweep.h): a cheap lower
 * bound on every configuration's step time, then full simulations, best bound
 * first, until nothing left can reach the K best.
 *
 * Why nothing of the top K is dropped: rows rank by tokens/s/GPU at the TSV's
 * 6 significant digits (ties: memory, then index). A configuration whose
 * throughput bound, rounded the same way, is below the K-th best simulated
 * fitting throughput has a rounded throughput below it too, so K simulated
 * configurations rank ahead of it. Rounds simulate candidates in bound order
 * (a fixed number per round, whatever the thread count), so the rows -- which
 * configurations were simulated -- do not depend on -j.
 */
#include "mb_sweep.h"

#include <stdlib.h>
#include <string.h>

static double mb_scr__digits(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", x);
    return strtod(buf, NULL);
}

/* Candidates (shard positions of bounded rows), best throughput bound first. */
struct mb_scr__cand {
    size_t pos;
    double ub;                      /* tokens/s/GPU bound at 6 digits */
    double lb_s;                    /* step-time bound, s */
};

static int mb_scr__by_ub(const void *a, const void *b)
{
    const struct mb_scr__cand *x = a, *y = b;
    if (x->ub != y->ub)
        return x->ub > y->ub ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int mb_scr__desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* The k-th best throughput of the simulated fitting rows, or -1 with fewer. */
static double mb_scr__kth(const struct mb_sweep_row *rows, const unsigned char *sim, size_t n, size_t k, double *buf)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (sim[i] && rows[i].status == MB_SWEEP_OK && !rows[i].oom)
            buf[m++] = rows[i].tokens_per_s_per_gpu;
    if (m < k)
        return -1;
    qsort(buf, m, sizeof *buf, mb_scr__desc);
    return buf[k - 1];
}

/* The bound pass: every row of the shard bounded (or INVALID/FAILED). */
static int mb_scr__bound(const struct mb_sweep *sw, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows)
{
    struct mb_sweep_run_opts b = *o;
    b.skip = NULL;
    b.on_row = NULL;
    b.eval = mb_sweep_eval_bound; /* progress: the bound pass is the one over every configuration */
    return mb_sweep_run_opts(sw, &b, rows, NULL);
}

/* One round: simulate the candidates [from, to) into rows; sim[pos] = 1 for
 * each that ran (all of them unless a stop came). */
static int mb_scr__round(const struct mb_sweep *sw, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows,
                         size_t n, const struct mb_scr__cand *c, size_t from, size_t to, unsigned char *skip,
                         unsigned char *sim)
{
    memset(skip, 1, n);
    for (size_t i = from; i < to; i++)
        skip[c[i].pos] = 0;
    struct mb_sweep_run_opts r = *o;
    r.skip = skip;
    r.on_row = NULL;
    r.progress = NULL;
    r.eval = NULL;
    unsigned char *fin = mb_calloc(n ? n : 1, 1);
    int stopped = mb_sweep_run_opts(sw, &r, rows, fin);
    for (size_t i = from; i < to; i++)
        sim[c[i].pos] = fin[c[i].pos];
    mb_free(fin);
    return stopped;
}

/* Rows of round [from, to) faster than their bound allows. */
static size_t mb_scr__violations(const struct mb_sweep_row *rows, const struct mb_scr__cand *c, size_t from,
                                 size_t to)
{
    size_t v = 0;
    for (size_t i = from; i < to; i++) {
        const struct mb_sweep_row *r = &rows[c[i].pos];
        v += r->status == MB_SWEEP_OK && r->tokens_per_s_per_gpu > c[i].ub;
    }
    return v;
}

/* Candidates gathered from the bound pass, sorted; returns how many. */
static size_t mb_scr__gather(const struct mb_sweep_row *rows, size_t n, struct mb_scr__cand *c)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].status == MB_SWEEP_SCREENED && !rows[i].oom)
            c[m++] = (struct mb_scr__cand){i, mb_scr__digits(rows[i].tokens_per_s_per_gpu), rows[i].step_time_s};
    qsort(c, m, sizeof *c, mb_scr__by_ub);
    return m;
}

/* Rows whose memory bound is above capacity: out of memory, not simulated; returns how many. */
static size_t mb_scr__oom(struct mb_sweep_row *rows, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        struct mb_sweep_row *r = &rows[i];
        if (r->status != MB_SWEEP_SCREENED || !r->oom)
            continue;
        snprintf(r->reason, sizeof r->reason,
                 "screened out: out of memory, at least %.6g GiB on the device of %.6g GiB without the step's "
                 "activations",
                 r->reserved_memory_gib, r->capacity_gib);
        r->step_time_s = r->tokens_per_s_per_gpu = r->reserved_memory_gib = r->capacity_gib = 0;
        m++;
    }
    return m;
}

/* The rows never simulated say why. */
static void mb_scr__explain(struct mb_sweep_row *rows, const struct mb_scr__cand *c, size_t from, size_t m, size_t k,
                            double kth)
{
    for (size_t i = from; i < m; i++) {
        struct mb_sweep_row *r = &rows[c[i].pos];
        snprintf(r->reason, sizeof r->reason,
                 "screened out: at most %.6g tokens/s/GPU (step time at least %.6g s), below %.6g, the "
                 "throughput of the %zu best simulated",
                 c[i].ub, c[i].lb_s, kth, k);
        r->step_time_s = r->tokens_per_s_per_gpu = r->reserved_memory_gib = r->capacity_gib = 0;
        r->oom = 0;
    }
}

int mb_sweep_screen(const struct mb_sweep *sw, size_t k, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows,
                    unsigned char *done, struct mb_sweep_screen_stats *st)
{
    size_t n = mb_sweep_shard_count(sw, o->shard, o->nshards);
    struct mb_sweep_screen_stats s = {0};
    if (k < 1)
        k = 1;
    int stopped = mb_scr__bound(sw, o, rows), bound_stopped = stopped;
    struct mb_scr__cand *c = mb_calloc(n ? n : 1, sizeof *c);
    unsigned char *skip = mb_calloc(n ? n : 1, 1), *sim = mb_calloc(n ? n : 1, 1);
    double *buf = mb_calloc(n ? n : 1, sizeof *buf);
    size_t m = stopped ? 0 : mb_scr__gather(rows, n, c), next = 0;
    double kth = -1;
    s.bounded = m;
    if (!stopped) {
        size_t oom = mb_scr__oom(rows, n);
        s.bounded += oom;
        s.screened += oom;
    }
    while (!stopped && next < m) {
        kth = mb_scr__kth(rows, sim, n, k, buf);
        size_t cap = next == 0 && k > MB_SWEEP_SCREEN_BATCH ? k : MB_SWEEP_SCREEN_BATCH, to = next;
        while (to < m && to - next < cap && (s.violations || kth < 0 || c[to].ub >= kth))
            to++;
        if (to == next)
            break;
        stopped = mb_scr__round(sw, o, rows, n, c, next, to, skip, sim);
        s.violations += mb_scr__violations(rows, c, next, to);
        s.simulated += to - next;
        s.batches++;
        next = to;
    }
    kth = mb_scr__kth(rows, sim, n, k, buf);
    mb_scr__explain(rows, c, next, m, k, kth);
    s.screened += m - next;
    int complete = !stopped;
    for (size_t i = 0; i < n; i++) {
        /* after a stop: the simulated rows and those the bound pass settled */
        int fin = complete || (!bound_stopped && (sim[i] || rows[i].status != MB_SWEEP_SCREENED));
        if (done)
            done[i] = (unsigned char)fin;
        if (fin && o->on_row)
            o->on_row(&rows[i], o->ctx);
    }
    if (st)
        *st = s;
    mb_free(buf);
    mb_free(sim);
    mb_free(skip);
    mb_free(c);
    return complete ? 0 : 1;
}
