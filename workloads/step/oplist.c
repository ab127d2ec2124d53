/*
 * oplist.c -- the op list the ops phase fills: growing it, and fusing the
 * adjacent compute ops the timeline cannot tell apart. The pricing of ops is
 * ops.c; communication ops come from net.c; both append here.
 */
#include "step_int.h"

#include <math.h>
#include <string.h>

void mb_ops_push(struct mb_oplist *l, const struct mb_op *o)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->op = mb_realloc(l->op, (size_t)l->cap * sizeof *l->op);
    }
    l->op[l->n] = *o;
    l->op[l->n].part0 = l->n;
    l->op[l->n].nparts = 1;
    l->n++;
}

/* Room for n more ops in l without growing it op by op. */
void mb_ops_reserve(struct mb_oplist *l, int n)
{
    if (n > 0 && l->n + n > l->cap) {
        l->cap = l->n + n;
        l->op = mb_realloc(l->op, (size_t)l->cap * sizeof *l->op);
    }
}

void mb_ops_free(struct mb_oplist *l)
{
    mb_free(l->op);
    mb_free(l->part);
    memset(l, 0, sizeof *l);
}

/* Where the last lookup's answer came from. */

/* Whether compute op o can join the fused op q. */
static int mb_step__fusable(const struct mb_op *q, const struct mb_op *o, unsigned rc_mask)
{
    return q->type == MB_OP_COMP && o->type == MB_OP_COMP && q->cat == o->cat &&
           (q->module & rc_mask) == (o->module & rc_mask) && (q->rc_frees & rc_mask) == (o->rc_frees & rc_mask) &&
           (q->rc_keeps & rc_mask) == (o->rc_keeps & rc_mask) &&
           q->region == o->region && !o->host_sync && q->fwd > 0 && o->fwd > 0;
}

/* Fused op q takes in the op o after it: times, saved bytes, kernel counts and work add up. */
static void mb_step__fuse_into(struct mb_op *q, const struct mb_op *o)
{
    q->module |= o->module;
    q->rc_keeps |= o->rc_keeps;
    q->rc_frees |= o->rc_frees;
    q->fwd += o->fwd;
    q->bwd += o->bwd;
    q->bwd_dgrad_only += o->bwd_dgrad_only;
    q->saved += o->saved;
    q->sac_saved += o->sac_saved;
    q->sac_keep_s += o->sac_keep_s;
    q->rc_kept += o->rc_kept;
    q->bwd_ws = fmax(q->bwd_ws, o->bwd_ws);
    q->kf += o->kf;
    q->kb += o->kb;
    q->flop_f += o->flop_f;
    q->flop_b += o->flop_b;
    q->bytes_f += o->bytes_f;
    q->bytes_b += o->bytes_b;
    q->nparts++;
}

void mb_ops_fuse_push(struct mb_oplist *l, const struct mb_op *o, unsigned rc_mask, int part)
{
    if (l->n > 0 && mb_step__fusable(&l->op[l->n - 1], o, rc_mask)) {
        mb_step__fuse_into(&l->op[l->n - 1], o);
        return;
    }
    mb_ops_push(l, o);
    l->op[l->n - 1].part0 = part;
}

/* Fuse runs of adjacent compute ops that the timeline cannot tell apart --
 * same category, recomputed or not alike, same CUDA-graph region, no host sync -- into
 * one op (times, saved bytes and kernel counts add up). GPU time is unchanged;
 * only when the host is the bottleneck does the fused op start after all of
 * its kernels are launched instead of after the first one's. Halves the tasks
 * of a step. The ops before fusion stay in l->part: fused op i is
 * part[op[i].part0 .. + nparts), for the trace and the per-op table. */
void mb_ops_fuse(struct mb_oplist *l, unsigned rc_mask)
{
    mb_ops_fuse_parts(l, rc_mask, 1);
}

/* mb_ops_fuse; l->part is kept only when keep_parts (NULL otherwise): a
 * per-microbatch vision list's parts are read only by the trace and the op
 * table, which a sweep does not record. */
void mb_ops_fuse_parts(struct mb_oplist *l, unsigned rc_mask, int keep_parts)
{
    mb_free(l->part);
    l->part = NULL;
    l->nparts = 0;
    if (keep_parts) {
        l->part = mb_malloc((size_t)(l->n > 0 ? l->n : 1) * sizeof *l->part);
        if (l->n > 0)
            memcpy(l->part, l->op, (size_t)l->n * sizeof *l->op);
        l->nparts = l->n;
    }
    int w = 0;
    for (int i = 0; i < l->n; i++) {
        struct mb_op *o = &l->op[i];
        if (w > 0 && mb_step__fusable(&l->op[w - 1], o, rc_mask)) {
            mb_step__fuse_into(&l->op[w - 1], o);
            continue;
        }
        l->op[w] = *o;
        l->op[w].part0 = i;
        l->op[w].nparts = 1;
        w++;
    }
    l->n = w;
}
