/*
 * memtl.c -- the activation-memory timeline of each stage's rank: a
 * microbatch's activations on a chunk count from the start of its forward
 * (they are allocated while it runs: counting them whole from its start
 * bounds the peak inside it) until its backward ends; the running sum's
 * maximum is the stage's activation peak, and the running sum is the trace's
 * "activation memory" counter.
 */
#include "step_int.h"

#include <stdlib.h>

struct mb__mev {
    double t, bytes; /* time (s), bytes allocated (> 0) or freed (< 0) */
    int seq;         /* creation order, for a stable sort */
};

/* By time; at equal times frees first (a backward that ends as the next
 * forward starts has released its memory), then creation order. */
static int mb__mev_cmp(const void *pa, const void *pb)
{
    const struct mb__mev *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    int fa = a->bytes < 0, fb = b->bytes < 0;
    if (fa != fb)
        return fa ? -1 : 1;
    return a->seq - b->seq;
}

/* Allocation and free events of stage st (n written to ev). */
static int mb__stage_events(struct mb_build *b, int st, struct mb__mev *ev)
{
    const struct mb_scenario *s = b->s;
    const struct mb_sched *q = &b->sched;
    const struct mb_data *d = &b->data;
    int frozen_v = (s->freeze & MB_FREEZE_VISION) != 0, k = 0;
    for (int c = 0; c < q->v; c++) {
        double a = mb_memory_chunk_act(s, &b->lay, &b->plan, st, c);
        for (int i = 0; i < q->n; i++) {
            double ai = a;
            if (st == 0 && c == 0 && !frozen_v && d->vP[i] > 0)
                ai += d->act_vision * d->vP[i] / d->vP[d->vis_max];
            int fe = q->fentry[mb_slot(q, st, c, i)], bd = q->bdone[mb_slot(q, st, c, i)];
            if (fe < 0 || bd < 0 || ai == 0)
                continue;
            ev[k] = (struct mb__mev){mb_engine_task_end(b->e, fe), ai, k};
            k++;
            ev[k] = (struct mb__mev){mb_engine_task_end(b->e, bd), -ai, k};
            k++;
        }
    }
    return k;
}

/* act_tl[st] = stage st's activation peak (bytes); the running sums are kept
 * in b->mem_t / mem_v for the trace. */
void mb_memtl_build(struct mb_build *b, double *act_tl)
{
    const struct mb_sched *q = &b->sched;
    for (int st = 0; st < q->p; st++) {
        int ne = 2 * q->v * q->n;
        struct mb__mev *ev = mb_malloc((size_t)(ne > 0 ? ne : 1) * sizeof *ev);
        int k = mb__stage_events(b, st, ev);
        qsort(ev, (size_t)k, sizeof *ev, mb__mev_cmp);
        double cur = 0, peak = 0;
        b->mem_t[st] = mb_malloc((size_t)(k > 0 ? k : 1) * sizeof(double));
        b->mem_v[st] = mb_malloc((size_t)(k > 0 ? k : 1) * sizeof(double));
        for (int i = 0; i < k; i++) {
            cur += ev[i].bytes;
            b->mem_t[st][i] = ev[i].t;
            b->mem_v[st][i] = cur;
            if (cur > peak)
                peak = cur;
        }
        b->mem_n[st] = k;
        act_tl[st] = peak;
        mb_free(ev);
    }
}

void mb_memtl_free(struct mb_build *b)
{
    for (int st = 0; st < MB_MAX_STAGES; st++) {
        mb_free(b->mem_t[st]);
        mb_free(b->mem_v[st]);
        b->mem_t[st] = b->mem_v[st] = NULL;
    }
}
