/*
 * tasks.c -- the engine tasks of the step and what each ran: every phase
 * that adds a task (emit, net, reduce) adds it here, so that the trace and
 * the per-op table can name it (b->cur describes the next task).
 */
#include "step_int.h"

#include <assert.h>
#include <string.h>

/* A hash of a description's fields that are the same in every microbatch and
 * layer: each field's bits mixed in by a multiply (splitmix64's constants). */
static uint64_t mb_step__mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xbf58476d1ce4e5b9ull;
}

static uint64_t mb_step__bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static uint64_t mb_step__desc_hash(const struct mb_tinfo *d)
{
    uint64_t h = 0;
    h = mb_step__mix(h, (uint64_t)(uintptr_t)d->op);
    h = mb_step__mix(h, (uint64_t)(uintptr_t)d->list);
    h = mb_step__mix(h, (uint64_t)(uintptr_t)d->name);
    h = mb_step__mix(h, (uint64_t)(uint32_t)d->skip_bwd << 32 | (uint32_t)d->stage);
    h = mb_step__mix(h, mb_step__bits(d->flop));
    h = mb_step__mix(h, mb_step__bits(d->bytes));
    h = mb_step__mix(h, mb_step__bits(d->peak));
    h = mb_step__mix(h, (uint64_t)d->src);
    return h ^ h >> 31;
}

static int mb_step__desc_same(const struct mb_tinfo *a, const struct mb_tinfo *c)
{
    return a->op == c->op && a->list == c->list && a->name == c->name && a->skip_bwd == c->skip_bwd &&
           a->stage == c->stage && !memcmp(&a->flop, &c->flop, sizeof a->flop) &&
           !memcmp(&a->bytes, &c->bytes, sizeof a->bytes) && !memcmp(&a->peak, &c->peak, sizeof a->peak) &&
           a->src == c->src;
}

/* The index of description d (layer, mb, chunk, dir ignored), added when new. */
static uint32_t mb_step__desc(struct mb_build *b, const struct mb_tinfo *d)
{
    if (2 * (b->n_tdesc + 1) > b->hash_cap) { /* grow and rehash */
        size_t cap = b->hash_cap ? 2 * b->hash_cap : 1024;
        int *h = mb_calloc(cap, sizeof *h);
        for (size_t i = 0; i < b->n_tdesc; i++) {
            size_t k = mb_step__desc_hash(&b->tdesc[i]) & (cap - 1);
            while (h[k])
                k = (k + 1) & (cap - 1);
            h[k] = (int)i + 1;
        }
        mb_free(b->tdesc_hash);
        b->tdesc_hash = h;
        b->hash_cap = cap;
    }
    size_t k = mb_step__desc_hash(d) & (b->hash_cap - 1);
    for (; b->tdesc_hash[k]; k = (k + 1) & (b->hash_cap - 1))
        if (mb_step__desc_same(&b->tdesc[b->tdesc_hash[k] - 1], d))
            return (uint32_t)(b->tdesc_hash[k] - 1);
    if (b->n_tdesc == b->cap_tdesc) {
        b->cap_tdesc = b->cap_tdesc ? 2 * b->cap_tdesc : 256;
        b->tdesc = mb_realloc(b->tdesc, b->cap_tdesc * sizeof *b->tdesc);
    }
    struct mb_tinfo *x = &b->tdesc[b->n_tdesc];
    *x = *d;
    x->layer = x->mb = x->chunk = x->dir = -1;
    b->tdesc_hash[k] = (int)b->n_tdesc + 1;
    return (uint32_t)b->n_tdesc++;
}

/* Keep what task t ran (b->cur) when a trace or the op table is asked for. */
static void mb_step__record(struct mb_build *b, int t)
{
    if (!b->record)
        return;
    if (b->n_tinfo == b->cap_tinfo) {
        b->cap_tinfo = b->cap_tinfo ? 2 * b->cap_tinfo : 4096;
        b->trec = mb_realloc(b->trec, b->cap_tinfo * sizeof *b->trec);
    }
    (void)t; /* tasks are numbered in creation order: t == n_tinfo */
    const struct mb_tinfo *c = &b->cur;
    /* layers, microbatches and chunks are counts well inside 32 and 16 bits (mb_scenario_check) */
    assert(c->chunk >= INT16_MIN && c->chunk <= INT16_MAX && c->dir >= -1 && c->dir <= 2);
    b->trec[b->n_tinfo++] = (struct mb_trec){mb_step__desc(b, c), c->layer, c->mb, (int16_t)c->chunk,
                                             (int8_t)c->dir};
}

void mb_tinfo_get(const struct mb_build *b, size_t t, struct mb_tinfo *out)
{
    const struct mb_trec *r = &b->trec[t];
    *out = b->tdesc[r->desc];
    out->layer = r->layer;
    out->mb = r->mb;
    out->chunk = r->chunk;
    out->dir = r->dir;
}

/* A single task on a stream after `dep`; takes b->cur as its description. */
int mb_emit_task(struct mb_build *b, int stream, int kind, double dur, const struct mb_flow_desc *f, int nf, int dep)
{
    struct mb_task_desc d = {stream, dur, nf, f, kind, 0};
    int t = mb_engine_add_task(b->e, &d);
    if (dep >= 0)
        mb_engine_add_dep(b->e, dep, t);
    if (b->record) {
        mb_step__record(b, t);
        b->cur = (struct mb_tinfo){0};
    }
    return t;
}

/* Name the next task (collectives, optimizer, stalls). */
void mb_emit_describe(struct mb_build *b, const char *name, int stage, int layer, int mb, int dir)
{
    b->cur = (struct mb_tinfo){0};
    b->cur.name = name;
    b->cur.stage = stage;
    b->cur.layer = layer;
    b->cur.mb = mb;
    b->cur.chunk = -1;
    b->cur.dir = dir;
}

/* Zero-length task on the compute stream that waits for both a and c. */
int mb_emit_join(struct mb_build *b, int st, int a, int c)
{
    int j = mb_emit_task(b, b->comp[st], MB_TK_JOIN, 0, NULL, 0, a);
    if (c >= 0)
        mb_engine_add_dep(b->e, c, j);
    return j;
}

/* Seconds part q of a fused op takes in the direction task ti ran. */
static double mb_step__part_time(const struct mb_op *q, const struct mb_tinfo *ti)
{
    if (ti->dir == 2)
        return q->fwd * mb_op_rerun_share(q);
    return ti->dir == 1 ? (ti->skip_bwd ? q->bwd_dgrad_only : q->bwd) : q->fwd;
}

void mb_tinfo_split(const struct mb_tinfo *ti, double sec,
                    void (*fn)(const struct mb_op *part, double sec, void *ctx), void *ctx)
{
    const struct mb_op *o = ti->op;
    int fused = ti->list && ti->list->part && o->type == MB_OP_COMP;
    const struct mb_op *parts = fused ? &ti->list->part[o->part0] : o;
    int n = fused ? o->nparts : 1;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += mb_step__part_time(&parts[i], ti);
    for (int i = 0; i < n; i++)
        fn(&parts[i], sum > 0 ? sec * mb_step__part_time(&parts[i], ti) / sum : sec / n, ctx);
}
