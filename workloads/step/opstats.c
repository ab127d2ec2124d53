/*
 * opstats.c -- the per-op table of the critical stage's rank: for every op
 * and direction, executions per step, seconds, FLOP and bytes, and the rate
 * of a perfect kernel, from the recorded tasks (fused compute tasks split
 * into their ops by their share of the time, as the trace draws them).
 */
#include "step_int.h"

#include <stdio.h>
#include <string.h>

/* The entry of (name, dir, comm) in r->ops, added when missing. */
static struct mb_op_stat *mb_step__entry(struct mb_result *r, size_t *cap, const char *name, int dir, int comm)
{
    for (size_t i = 0; i < r->n_ops; i++) {
        struct mb_op_stat *x = &r->ops[i];
        if (x->dir == dir && x->comm == comm && strcmp(x->name, name) == 0)
            return x;
    }
    if (r->n_ops == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        r->ops = mb_realloc(r->ops, *cap * sizeof *r->ops);
    }
    struct mb_op_stat *x = &r->ops[r->n_ops++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->dir = dir;
    x->comm = comm;
    return x;
}

static void mb_step__add(struct mb_result *r, size_t *cap, const struct mb_op *o, const struct mb_tinfo *ti, double sec)
{
    int bwd = ti->dir == 1, comm = o->type == MB_OP_COMM;
    struct mb_op_stat *x = mb_step__entry(r, cap, o->name, ti->dir, comm);
    x->count += 1;
    x->time_s += sec;
    double rr = ti->dir == 2 && !comm ? mb_op_rerun_share(o) : 1; /* recompute: the part re-run */
    x->flop += bwd ? o->flop_b : o->flop_f * rr;
    x->bytes += comm ? o->bytes_nv + o->bytes_nic : bwd ? o->bytes_b : o->bytes_f * rr;
    x->peak = o->peak;
}

struct mb__acc {
    struct mb_result *r;
    size_t *cap;
    const struct mb_tinfo *ti;
};

static void mb_step__add_part(const struct mb_op *part, double sec, void *ctx)
{
    struct mb__acc *a = ctx;
    mb_step__add(a->r, a->cap, part, a->ti, sec);
}

/* A recorded task without an op (collective, optimizer, stall). */
static void mb_step__add_named(struct mb_result *r, size_t *cap, const struct mb_tinfo *ti, int comm, double sec)
{
    struct mb_op_stat *x = mb_step__entry(r, cap, ti->name, ti->dir, comm);
    x->count += 1;
    x->time_s += sec;
    x->flop += ti->flop;
    x->bytes += ti->bytes;
    x->peak = ti->peak;
}

void mb_opstats_collect(struct mb_build *b, struct mb_result *r)
{
    size_t nt = mb_engine_n_tasks(b->e), cap = 0;
    int cs = r->critical_stage;
    for (size_t t = 0; t < nt && t < b->n_tinfo; t++) {
        struct mb_tinfo tk;
        mb_tinfo_get(b, t, &tk);
        const struct mb_tinfo *ti = &tk;
        int c = mb_results_task_cat(b->e, (int)t), sid = mb_engine_task_stream(b->e, (int)t);
        double sec = mb_engine_task_end(b->e, (int)t) - mb_engine_task_start(b->e, (int)t);
        if (c < 0 || sid == b->host[cs] || ti->stage != cs || !(ti->op || ti->name) || sec <= 0)
            continue;
        int comm = sid != b->comp[cs];
        if (!ti->op) {
            mb_step__add_named(r, &cap, ti, comm, sec);
            continue;
        }
        struct mb__acc acc = {r, &cap, ti};
        mb_tinfo_split(ti, sec, mb_step__add_part, &acc);
    }
}

/* r->ops (simulated at the larger count) + k x (r->ops - r1->ops), entry by
 * entry (mb_step's linear extensions). */
void mb_opstats_extend(struct mb_result *r, const struct mb_result *r1, double k)
{
    for (size_t i = 0; i < r->n_ops; i++) {
        struct mb_op_stat *x = &r->ops[i];
        const struct mb_op_stat *y = NULL;
        for (size_t j = 0; j < r1->n_ops && !y; j++)
            if (r1->ops[j].dir == x->dir && r1->ops[j].comm == x->comm && strcmp(r1->ops[j].name, x->name) == 0)
                y = &r1->ops[j];
        double c0 = y ? y->count : 0, t0 = y ? y->time_s : 0, f0 = y ? y->flop : 0, b0 = y ? y->bytes : 0;
        x->count += k * (x->count - c0);
        x->time_s += k * (x->time_s - t0);
        x->flop += k * (x->flop - f0);
        x->bytes += k * (x->bytes - b0);
        if (x->time_s < 0)
            x->time_s = 0;
    }
}
