/*
 * tasks.c -- the engine tasks of the step and what each ran: every phase
 * that adds a task (emit, net, reduce) adds it here, so that the trace and
 * the per-op table can name it (b->cur describes the next task).
 */
#include "step_int.h"

/* Keep what task t ran (b->cur) when a trace or the op table is asked for. */
static void mb_step__record(struct mb_build *b, int t)
{
    if (!b->record)
        return;
    if (b->n_tinfo == b->cap_tinfo) {
        b->cap_tinfo = b->cap_tinfo ? 2 * b->cap_tinfo : 4096;
        b->tinfo = mb_realloc(b->tinfo, b->cap_tinfo * sizeof *b->tinfo);
    }
    (void)t; /* tasks are numbered in creation order: t == n_tinfo */
    b->tinfo[b->n_tinfo++] = b->cur;
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
