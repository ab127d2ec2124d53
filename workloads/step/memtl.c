/*
 * memtl.c -- the dynamic memory timeline of each stage's rank. Four kinds of
 * allocation, each counted whole over its lifetime:
 *  - a microbatch's activations on a chunk, from the end of its forward's
 *    first task (they are allocated while the forward runs: counting them whole
 *    from its start bounds the peak inside it) until its backward ends; a
 *    forward paired with a backward under EP overlap (combined 1F1B, which runs
 *    the two layer by layer and releases each backward layer as it goes,
 *    NVIDIA/Megatron-LM@d98e8a64 megatron/core/models/common/
 *    model_chunk_schedule_plan.py) counts from the pair's end, with one layer's
 *    activations during the pair;
 *  - the loss working set (logits, fp32 softmax or in-place gradient) of a
 *    microbatch on the last stage's last chunk, from the end of its forward
 *    (the loss is its last op) until its backward's first task (the loss
 *    backward) ends;
 *  - the deferred output-layer wgrad's buffers on the last stage's last chunk
 *    (overlap.defer_embedding_wgrad_compute), counted with the activations: the
 *    output gradient from the end of the microbatch's loss backward, the input from
 *    the end of its backward, both until the stage's last backward ends (the flush
 *    drains them);
 *  - the recompute working set (activations re-materialised for a layer's
 *    backward) and the gradient working set (the output and input gradients
 *    of the op running backward), from the end of the backward's first task
 *    until it ends.
 * The running sum's maximum is the stage's dynamic peak; the terms at that
 * moment go to the memory estimate, the activation running sum to the
 * trace's "activation memory" counter.
 */
#include "step_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MB__ACT, MB__LOGITS, MB__RC, MB__GR, MB__DEF, MB__NK };

struct mb__mev {
    double t, bytes; /* time (s), bytes allocated (> 0) or freed (< 0) */
    int kind;        /* MB__ACT, MB__LOGITS, MB__RC, MB__GR */
    int prio;        /* order at equal times (mb__prio) */
    int seq;         /* creation order, for a stable sort */
};

/* Order of events at one instant: frees of activations and recompute first (a
 * backward that ends as the next forward starts has released its memory),
 * then allocations; the loss working set is freed and the recompute working
 * set allocated after that, as the backward's first task (the loss backward,
 * a zero-length entry elsewhere) ends: both are alive with the activations at
 * the start of the backward, one after the other. */
static int mb_step__prio(int kind, int alloc)
{
    if (kind == MB__LOGITS)
        return alloc ? 1 : 2;
    if (kind == MB__RC || kind == MB__GR)
        return alloc ? 3 : 0;
    return alloc ? 1 : 0;
}

/* By time, then mb__prio, then creation order. */
static int mb_step__mev_cmp(const void *pa, const void *pb)
{
    const struct mb__mev *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio - b->prio;
    return a->seq - b->seq;
}

static inline int mb_step__mev_less(const struct mb__mev *a, const struct mb__mev *b)
{
    return mb_step__mev_cmp(a, b) < 0;
}

/* Sort ev[0..n) by mb__mev_cmp: insertion sort of runs of 16, then bottom-up
 * merges through tmp (n entries). The order is total (seq is unique), so the
 * result is the one qsort gives; typed and with the comparison inlined, it
 * costs a fraction of qsort's calls through a pointer (the sort showed in
 * sweep profiles). */
static void mb_step__mev_sort(struct mb__mev *ev, struct mb__mev *tmp, int n)
{
    enum { RUN = 16 };
    for (int lo = 0; lo < n; lo += RUN) {
        int hi = lo + RUN < n ? lo + RUN : n;
        for (int i = lo + 1; i < hi; i++) {
            struct mb__mev x = ev[i];
            int j = i;
            for (; j > lo && mb_step__mev_less(&x, &ev[j - 1]); j--)
                ev[j] = ev[j - 1];
            ev[j] = x;
        }
    }
    struct mb__mev *src = ev, *dst = tmp;
    for (int w = RUN; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = mb_step__mev_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        struct mb__mev *t = src;
        src = dst;
        dst = t;
    }
    if (src != ev)
        memcpy(ev, src, (size_t)n * sizeof *ev);
}

static void mb_step__ev(struct mb__mev *ev, int *k, double t0, double t1, double bytes, int kind)
{
    if (bytes <= 0)
        return;
    ev[*k] = (struct mb__mev){t0, bytes, kind, mb_step__prio(kind, 1), *k};
    (*k)++;
    ev[*k] = (struct mb__mev){t1, -bytes, kind, mb_step__prio(kind, 0), *k};
    (*k)++;
}

/* Allocation and free events of stage st (n written to ev). */
static int mb_step__stage_events(struct mb_build *b, int st, struct mb__mev *ev)
{
    const struct mb_scenario *s = b->s;
    const struct mb_sched *q = &b->sched;
    const struct mb_data *d = &b->data;
    int frozen_v = (s->freeze & MB_FREEZE_VISION) != 0, k = 0, last = st == q->p - 1;
    double lg = last ? mb_memory_logits_bytes(s) : 0;
    /* deferred output-layer wgrad: what microbatch i's calls keep from its backward to the flush,
     * after the stage's last backward (mb_memory_deferred_call_bytes) */
    double din = 0, dcall = last && s->defer_wgrad ? mb_memory_deferred_call_bytes(s, &din) : 0, flush = 0;
    for (int c = 0; dcall > 0 && c < q->v; c++)
        for (int i = 0; i < q->n; i++)
            if (q->bdone[mb_slot(q, st, c, i)] >= 0)
                flush = fmax(flush, mb_engine_task_end(b->e, q->bdone[mb_slot(q, st, c, i)]));
    for (int c = 0; c < q->v; c++) {
        double a = mb_memory_chunk_act(s, &b->lay, &b->plan, st, c);
        double rc = mb_memory_recompute_ws(s, &b->lay, &b->plan, st, c);
        double gr = mb_memory_grad_ws(s, &b->lay, &b->plan, st, c);
        for (int i = 0; i < q->n; i++) {
            double ai = a;
            if (st == 0 && c == 0 && !frozen_v && d->vP[i] > 0)
                ai += d->act_vision * d->vP[i] / d->vP[d->vis_max];
            size_t sl = mb_slot(q, st, c, i);
            int fe = q->fentry[sl], fd = q->fdone[sl], be = q->bentry[sl], bd = q->bdone[sl];
            if (fe < 0 || bd < 0)
                continue;
            double tbd = mb_engine_task_end(b->e, bd), tfe = mb_engine_task_end(b->e, fe);
            if (q->fpair[sl] >= 0) {
                /* combined 1F1B: the paired backward releases its layers as this forward
                 * builds its own, one layer of each at a time, so this microbatch's chunk
                 * counts from the pair's end, and one layer's activations during the pair */
                double tp = fmax(mb_engine_task_end(b->e, fd), mb_engine_task_end(b->e, q->fpair[sl]));
                mb_step__ev(ev, &k, tfe, tp, mb_memory_chunk_layer_max(s, &b->lay, &b->plan, st, c), MB__ACT);
                tfe = tp;
            }
            mb_step__ev(ev, &k, tfe, tbd, ai, MB__ACT);
            double tbe = be >= 0 ? mb_engine_task_end(b->e, be) : tbd;
            if (c == q->v - 1 && fd >= 0)
                mb_step__ev(ev, &k, mb_engine_task_end(b->e, fd), tbe, lg, MB__LOGITS);
            mb_step__ev(ev, &k, tbe, tbd, rc, MB__RC);
            mb_step__ev(ev, &k, tbe, tbd, gr, MB__GR);
            if (c == q->v - 1 && dcall > 0) {
                int calls = mb_memory_deferred_calls(s, i + 1) - mb_memory_deferred_calls(s, i);
                /* the output gradient from the loss backward on, the input once its backward is done */
                mb_step__ev(ev, &k, tbe, flush, calls * (dcall - din), MB__DEF);
                mb_step__ev(ev, &k, tbd, flush, calls * din, MB__DEF);
            }
        }
    }
    return k;
}

void mb_memtl_build(struct mb_build *b, struct mb_memdyn *dyn)
{
    const struct mb_sched *q = &b->sched;
    for (int st = 0; st < q->p; st++) {
        int ne = 14 * q->v * q->n; /* at most seven allocations per slot (mb__stage_events) */
        /* the events, then the sort's scratch */
        struct mb__mev *ev = mb_malloc(2 * (size_t)(ne > 0 ? ne : 1) * sizeof *ev);
        int k = mb_step__stage_events(b, st, ev);
        mb_step__mev_sort(ev, ev + (ne > 0 ? ne : 1), k);
        double cur[MB__NK] = {0}, best = 0;
        size_t n1 = (size_t)(k > 0 ? k : 1) * sizeof(double);
        b->mem_t[st] = mb_malloc(n1);
        b->mem_v[st] = mb_malloc(n1);
        b->mem_lg[st] = mb_malloc(n1);
        b->mem_rc[st] = mb_malloc(n1);
        b->mem_gr[st] = mb_malloc(n1);
        memset(&dyn[st], 0, sizeof dyn[st]);
        for (int i = 0; i < k; i++) {
            cur[ev[i].kind] += ev[i].bytes;
            b->mem_t[st][i] = ev[i].t;
            b->mem_v[st][i] = cur[MB__ACT] + cur[MB__DEF];
            b->mem_lg[st][i] = cur[MB__LOGITS];
            b->mem_rc[st][i] = cur[MB__RC];
            b->mem_gr[st][i] = cur[MB__GR];
            double tot = cur[MB__ACT] + cur[MB__DEF] + cur[MB__LOGITS] + cur[MB__RC] + cur[MB__GR];
            if (tot > best) {
                best = tot;
                dyn[st] = (struct mb_memdyn){cur[MB__ACT] + cur[MB__DEF], cur[MB__LOGITS], cur[MB__RC], cur[MB__GR],
                                             cur[MB__DEF], ev[i].t};
            }
        }
        b->mem_n[st] = k;
        mb_free(ev);
    }
}

void mb_memtl_record(struct mb_build *b, int st, double static_bytes, struct mb_memtl *tl)
{
    memset(tl, 0, sizeof *tl);
    tl->stage = st;
    int k = st >= 0 && st < MB_MAX_STAGES ? b->mem_n[st] : 0;
    if (k <= 0)
        return;
    double t0 = b->mem_t[st][0], t1 = b->mem_t[st][k - 1];
    int nb = k < MB_MEMTL_POINTS - 1 ? k : MB_MEMTL_POINTS - 1; /* the last point: the optimizer step's */
    double w = t1 > t0 ? (t1 - t0) / nb : 1;
    int last = -1;
    for (int i = 0; i < k; i++) {
        /* bucket of the event; each bucket keeps its highest point */
        int bk = k <= MB_MEMTL_POINTS - 1 ? i : (int)((b->mem_t[st][i] - t0) / w);
        if (bk >= nb)
            bk = nb - 1;
        double a = static_bytes + b->mem_v[st][i] + b->mem_lg[st][i] + b->mem_rc[st][i] + b->mem_gr[st][i];
        if (bk != last) {
            last = bk;
            tl->n++;
        } else if (a <= tl->allocated[tl->n - 1]) {
            continue;
        }
        int j = tl->n - 1;
        tl->t[j] = b->mem_t[st][i];
        tl->allocated[j] = a;
        tl->activations[j] = b->mem_v[st][i];
        tl->logits[j] = b->mem_lg[st][i];
        tl->recompute[j] = b->mem_rc[st][i];
        tl->bwd_grads[j] = b->mem_gr[st][i];
    }
}

void mb_memtl_add_step(struct mb_memtl *tl, double t, double allocated)
{
    if (tl->n <= 0 || tl->n >= MB_MEMTL_POINTS)
        return;
    int j = tl->n++;
    tl->t[j] = t;
    tl->allocated[j] = allocated;
    tl->activations[j] = tl->logits[j] = tl->recompute[j] = tl->bwd_grads[j] = 0;
}

void mb_memtl_free(struct mb_build *b)
{
    for (int st = 0; st < MB_MAX_STAGES; st++) {
        mb_free(b->mem_t[st]);
        mb_free(b->mem_v[st]);
        mb_free(b->mem_lg[st]);
        mb_free(b->mem_rc[st]);
        mb_free(b->mem_gr[st]);
        b->mem_t[st] = b->mem_v[st] = b->mem_lg[st] = b->mem_rc[st] = b->mem_gr[st] = NULL;
    }
}
