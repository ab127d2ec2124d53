/*
 * bound.c -- a lower bound on the step time from the op lists alone, without
 * building or running the task graph (`mbsim sweep --screen`).
 *
 * Each stage's rank has one compute stream, a serial executor (mb_engine.h):
 * the step lasts at least as long as the compute tasks the schedule puts on
 * it, back to back. Those are, per microbatch, the forward and backward (and
 * recompute) passes of the stage's virtual chunks exactly as schedule.c and
 * emit.c select and price them -- table time plus the framework's kernel time
 * (mb_fw_kernels) -- plus the optimizer step and the iteration overhead. Left
 * out, so the bound stays below: the overlap slowdown beside communication,
 * EP-overlap SM stalls, waits for links, launches and other stages (bubbles),
 * and the work that depends on the data drawn -- the vision encoder and,
 * with packed sequences, core attention. What remains is the same per
 * microbatch and per layer of a kind, so the floor of a shortened run,
 * extended linearly, is the floor of the whole step (step.c relies on that).
 */
#include "step_int.h"
#include "mb_calib.h"

/* Whether part o is core attention scaled by the drawn sequence lengths
 * (packed data, mb_plan_scale_attention). */
static int mb_step__drawn(const struct mb_build *b, const struct mb_op *o)
{
    return b->s->packed && o->type == MB_OP_COMP && o->cat == MB_CAT_ATTN && (o->module & MB_RCM_CORE_ATTN);
}

/* Compute seconds of list l in one pass (dir 0 forward, 1 backward;
 * recompute: the forward again over the modules in mask; skip: dgrad only),
 * without the parts whose time depends on the data drawn. */
static double mb_step__pass(const struct mb_build *b, const struct mb_oplist *l, int dir, int recompute, unsigned mask,
                       int skip)
{
    double t = 0;
    for (int i = 0; i < l->n; i++) {
        const struct mb_op *o = &l->op[i];
        if (o->type != MB_OP_COMP || !mb_emit_op_runs(o, dir, recompute, mask))
            continue;
        double dur = mb_emit_comp_s(o, dir, recompute, skip);
        if (dur <= 0)
            continue;
        t += dur + mb_fw_kernels(b, o, dir, recompute);
        for (int q = 0; l->part && q < o->nparts; q++)
            if (mb_step__drawn(b, &l->part[o->part0 + q]))
                t -= mb_emit_comp_s(&l->part[o->part0 + q], dir, recompute, skip);
    }
    return t;
}

/* Embedding (first virtual stage), MTP and head (last one) of one microbatch, both passes. */
static double mb_step__ends(const struct mb_build *b, int vs, int frozen)
{
    const struct mb_plan *pl = &b->plan;
    double t = 0;
    if (vs == 0)
        t += mb_step__pass(b, &pl->emb, 0, 0, 0, 0) + mb_step__pass(b, &pl->emb, 1, 0, 0, frozen);
    if (vs == b->lay.p * b->lay.v - 1) {
        t += mb_step__pass(b, &pl->head, 0, 0, 0, 0) + mb_step__pass(b, &pl->head, 1, 0, 0, frozen);
        if (pl->mtp)
            t += b->m->mtp_layers * (mb_step__pass(b, pl->mtp, 0, 0, 0, 0) + mb_step__pass(b, pl->mtp, 1, 0, 0, frozen));
    }
    return t;
}

/* Decoder layers of virtual stage vs, one microbatch: forward, recompute, backward. */
static double mb_step__layers(const struct mb_build *b, int vs, int frozen)
{
    const struct mb_plan *pl = &b->plan;
    int first = b->lay.first[vs];
    double t = 0;
    for (int li = first; li < first + b->lay.count[vs]; li++) {
        const struct mb_oplist *L = mb_plan_layer(b, li);
        t += mb_step__pass(b, L, 0, 0, 0, 0) + mb_step__pass(b, L, 1, 0, 0, frozen);
        if (mb_sched_recompute_here(b, li, first))
            t += mb_step__pass(b, L, 0, 1, pl->rc_mask, 0);
    }
    return t;
}

void mb_bound_stages_m(const struct mb_build *b, int m, double *floor_s)
{
    int p = b->lay.p, v = b->lay.v, frozen = (b->s->freeze & MB_FREEZE_LANGUAGE) != 0;
    for (int st = 0; st < p; st++) {
        double per_mb = 0;
        for (int c = 0; c < v; c++)
            per_mb += mb_step__layers(b, c * p + st, frozen) + mb_step__ends(b, c * p + st, frozen);
        floor_s[st] = m * per_mb + mb_calib_membound(b->cal, mb_reduce_optimizer_bytes(b, st)) + b->fw_step;
    }
}

void mb_bound_stages(const struct mb_build *b, double *floor_s) { mb_bound_stages_m(b, b->lay.m, floor_s); }
