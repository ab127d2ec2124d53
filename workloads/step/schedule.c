/*
 * schedule.c -- the schedule phase: per pipeline stage, the order of forward
 * and backward units (FSDP and 1F1B, Megatron's interleaved 1F1B with VPP),
 * what each unit contains (embedding, vision, decoder layers with their FSDP
 * gathers and recompute, MTP, head), the EP-overlapped pairs, and the
 * cross-stage p2p edges.
 */
#include "step_int.h"

#include <math.h>

/* Megatron interleaved 1F1B order (v = 1 gives plain 1F1B): k-th forward or
 * backward of stage s maps to (chunk, microbatch). */
static void mb_step__fmap(int k, int p, int v, int *chunk, int *mb)
{
    if (v == 1) {
        *chunk = 0;
        *mb = k;
        return;
    }
    int grp = k / (p * v), in = k % (p * v);
    *chunk = in / p;
    *mb = grp * p + in % p;
}

static void mb_step__bmap(int k, int p, int v, int *chunk, int *mb)
{
    mb_step__fmap(k, p, v, chunk, mb);
    *chunk = v - 1 - *chunk;
}

/* Warm-up forwards of stage st before its first backward (Megatron's
 * get_pp_rank_microbatches / the interleaved schedule's num_warmup_microbatches),
 * for enough microbatches. */
int mb_sched_warmup_depth(int st, int p, int v)
{
    return v == 1 ? p - st - 1 : (p - st - 1) * 2 + (v - 1) * p;
}

/* The same, capped at the stage's m * v chunk-forwards. */
int mb_sched_warmup(int st, int p, int v, int m)
{
    int w = mb_sched_warmup_depth(st, p, v);
    return w < m * v ? w : m * v;
}

int mb_sched_forward_done(const struct mb_build *b, int st, int k)
{
    const struct mb_sched *q = &b->sched;
    if (st < 0 || st >= q->p || k < 0 || k >= q->n * q->v)
        return -1;
    int c, i;
    mb_step__fmap(k, q->p, q->v, &c, &i);
    return q->fdone[mb_slot(q, st, c, i)];
}

static void mb_step__sched_alloc(struct mb_build *b)
{
    struct mb_sched *q = &b->sched;
    int nl = b->m->n_layers;
    q->p = b->lay.p;
    q->v = b->lay.v;
    q->n = b->lay.m;
    size_t nslots = (size_t)q->p * q->v * (q->n > 0 ? q->n : 1);
    int **arr[] = {&q->fentry, &q->fsend, &q->fdone, &q->fpair, &q->bentry, &q->bsend, &q->bdone};
    for (size_t k = 0; k < sizeof arr / sizeof *arr; k++) {
        *arr[k] = mb_malloc(nslots * sizeof(int));
        for (size_t i = 0; i < nslots; i++)
            (*arr[k])[i] = -1;
    }
    q->lastb_layer = mb_malloc((size_t)(nl > 0 ? nl : 1) * sizeof(int));
    for (int i = 0; i < nl; i++)
        q->lastb_layer[i] = -1;
}

void mb_sched_free(struct mb_sched *q)
{
    mb_free(q->fentry);
    mb_free(q->fsend);
    mb_free(q->fdone);
    mb_free(q->fpair);
    mb_free(q->bentry);
    mb_free(q->bsend);
    mb_free(q->bdone);
    mb_free(q->lastb_layer);
}

/* Parameters (elements) of decoder layer li on this rank, for FSDP traffic. */
static double mb_step__layer_params(const struct mb_build *b, int li)
{
    const struct mb_scenario *s = b->s;
    return b->lay.dense_layer_params / s->tp +
           (b->m->layer[li].ffn == MB_FFN_MOE ? b->lay.expert_layer_params / (s->ep * s->etp) : 0);
}

/* Full recompute, block method: only the first num_layers layers of each
 * chunk are checkpointed; uniform re-forwards every layer. */
int mb_sched_recompute_here(const struct mb_build *b, int li, int first)
{
    const struct mb_scenario *s = b->s;
    if (s->rc_policy == MB_RCP_TORCHTITAN_LAYER)
        return mb_sac_layer_checkpointed(s, li - first);
    return b->plan.rc_mask && !(s->recompute == MB_RC_FULL && s->recompute_method == MB_RC_BLOCK &&
                                s->recompute_num_layers > 0 && li - first >= s->recompute_num_layers);
}

/* Items of the backward of microbatch bi on virtual stage vs. */
static void mb_step__fill_backward(struct mb_build *b, struct mb_unit *u, int vs, int bi)
{
    const struct mb_scenario *s = b->s;
    const struct mb_plan *pl = &b->plan;
    const struct mb_data *d = &b->data;
    int nv_st = b->lay.p * b->lay.v, first = b->lay.first[vs], frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    int frozen_v = (s->freeze & MB_FREEZE_VISION) != 0, frozen_p = (s->freeze & MB_FREEZE_VISION_PROJ) != 0;
    int is_fsdp = s->strategy == MB_STRAT_FSDP;
    if (vs == nv_st - 1) {
        mb_unit_ops(u, &pl->head, -1, 1, 0, 0, frozen);
        for (int q = 0; pl->mtp && q < b->m->mtp_layers; q++)
            mb_unit_ops(u, pl->mtp, -1, 1, 0, 0, frozen);
    }
    for (int li = first + b->lay.count[vs] - 1; li >= first; li--) {
        const struct mb_oplist *L = mb_plan_layer(b, li);
        if (is_fsdp)
            mb_unit_item(u, MB_IT_FSDP_AG, mb_step__layer_params(b, li) * BF16, li, 1);
        if (mb_sched_recompute_here(b, li, first))
            mb_unit_ops(u, L, li, 0, 1, pl->rc_mask, 0);
        mb_unit_ops(u, L, li, 1, 0, 0, frozen);
        /* reduce-scatter of this layer's main grads; FSDP2 without gradient sync only on the step's
         * last microbatch (set_requires_gradient_sync(False) on the others) */
        if (is_fsdp && !frozen && (s->fsdp_grad_sync || s->fsdp_impl != MB_FSDP_TORCH2 || bi == b->data.n - 1))
            mb_unit_item(u, MB_IT_FSDP_RS, mb_step__layer_params(b, li) * s->grad_bytes, li, 1);
        mb_unit_item(u, MB_IT_LASTB, 0, li, 1);
    }
    if (vs == 0) {
        mb_unit_ops(u, &pl->emb, -1, 1, 0, 0, frozen);
        if (d->visl[bi].n && !(frozen_v && frozen_p))
            mb_unit_ops(u, frozen_v ? &d->visp[bi] : &d->visl[bi], -1, 1, 0, 0, 0);
    }
}

/* Items of the forward of microbatch fi on virtual stage vs. */
static void mb_step__fill_forward(struct mb_build *b, struct mb_unit *u, int vs, int fi)
{
    const struct mb_plan *pl = &b->plan;
    const struct mb_data *d = &b->data;
    int nv_st = b->lay.p * b->lay.v, first = b->lay.first[vs];
    if (vs == 0) {
        if (d->visl[fi].n)
            mb_unit_ops(u, &d->visl[fi], -1, 0, 0, 0, 0);
        mb_unit_ops(u, &pl->emb, -1, 0, 0, 0, 0);
    }
    for (int li = first; li < first + b->lay.count[vs]; li++) {
        if (b->s->strategy == MB_STRAT_FSDP)
            mb_unit_item(u, MB_IT_FSDP_AG, mb_step__layer_params(b, li) * BF16, li, 0);
        mb_unit_ops(u, mb_plan_layer(b, li), li, 0, 0, 0, 0);
    }
    if (vs == nv_st - 1) {
        for (int q = 0; pl->mtp && q < b->m->mtp_layers; q++)
            mb_unit_ops(u, pl->mtp, -1, 0, 0, 0, 0);
        mb_unit_ops(u, &pl->head, -1, 0, 0, 0, 0);
    }
}

/* One stage's 1F1B order: warm-up forwards, then one forward and one
 * backward alternately, then the cool-down backwards. With EP overlap a
 * backward is paired with the forward that follows it (Megatron's combined
 * 1F1B): B(j) no longer depends on F(j+1), which the naive pairing F(j)+B(j)
 * on the last stage would break. pg_done: the parameter all-gather the first
 * forward waits for, or -1. */
static void mb_step__stage(struct mb_build *b, int st, int pg_done, struct mb_unit *fu, struct mb_unit *bu)
{
    const struct mb_scenario *s = b->s;
    struct mb_sched *q = &b->sched;
    int p = q->p, v = q->v, n = q->n, nv_st = p * v;
    int total = n * v, w = mb_sched_warmup(st, p, v, n), fk = 0, bk = 0;
    int ep_overlap = s->overlap_ep_comm && b->m->num_experts > 0 && s->ep > 1;
    /* a dispatcher kernel occupies dispatcher_sms of the GPU's SMs while it runs */
    double sm_frac = b->gpu->sms > 0 ? fmin(1.0, (double)s->dispatcher_sms / b->gpu->sms) : 0;
    double act_bytes = (double)s->micro_batch_size * s->seq_length / s->cp / s->tp * b->m->hidden * BF16;
    struct mb_gate gate = {{0}, 0}; /* FSDP gathers of this stage, for the prefetch depth */
    while (fk < total || bk < total) {
        int is_f = fk < w ? 1 : fk >= total ? 0 : (fk - w) <= bk;
        int do_f = is_f || (ep_overlap && !is_f && fk < total), do_b = !is_f;
        int fc = 0, fi = 0, bc = 0, bi = 0;
        if (do_b) { /* the backward's entry first: in a pair it runs first on the stream */
            mb_step__bmap(bk++, p, v, &bc, &bi);
            q->bentry[mb_slot(q, st, bc, bi)] = mb_unit_open(b, st, bu, bi, bc);
            mb_step__fill_backward(b, bu, bc * p + st, bi);
        }
        if (do_f) {
            mb_step__fmap(fk++, p, v, &fc, &fi);
            q->fentry[mb_slot(q, st, fc, fi)] = mb_unit_open(b, st, fu, fi, fc);
            if (fk == 1 && pg_done >= 0)
                mb_engine_add_dep(b->e, pg_done, fu->em.last);
            mb_step__fill_forward(b, fu, fc * p + st, fi);
        }
        if (do_f && do_b)
            mb_unit_run_pair(b, st, bu, fu, sm_frac, &gate);
        else
            mb_unit_run(b, st, do_f ? fu : bu, 0, &gate);
        if (do_f)
            q->fdone[mb_slot(q, st, fc, fi)] = fu->em.last;
        if (do_f && do_b)
            q->fpair[mb_slot(q, st, fc, fi)] = bu->em.last;
        if (do_f && fc * p + st != nv_st - 1) {
            mb_emit_describe(b, "pp send activations", st, -1, fi, 0);
            q->fsend[mb_slot(q, st, fc, fi)] = mb_net_p2p(b, st, act_bytes, fu->em.last);
        }
        if (do_b) {
            if (bc * p + st != 0) {
                mb_emit_describe(b, "pp send gradients", st, -1, bi, 1);
                q->bsend[mb_slot(q, st, bc, bi)] = mb_net_p2p(b, st, act_bytes, bu->em.last);
            }
            q->bdone[mb_slot(q, st, bc, bi)] = bu->em.last;
        }
    }
}

/* Cross-stage edges: forward of virtual stage vs after the send of vs-1,
 * backward of vs after the send of vs+1 (the interleaved wrap-around is
 * vs = c*p + s, so stage p-1 chunk c feeds stage 0 chunk c+1). */
static void mb_step__edges(struct mb_build *b)
{
    const struct mb_sched *q = &b->sched;
    int p = q->p, nv_st = p * q->v;
    for (int vs = 0; vs < nv_st; vs++) {
        int st = vs % p, c = vs / p;
        for (int i = 0; i < q->n; i++) {
            if (vs > 0) {
                int ps = (vs - 1) % p, pc = (vs - 1) / p;
                mb_engine_add_dep(b->e, q->fsend[mb_slot(q, ps, pc, i)], q->fentry[mb_slot(q, st, c, i)]);
            }
            if (vs < nv_st - 1) {
                int ns = (vs + 1) % p, nc = (vs + 1) / p;
                mb_engine_add_dep(b->e, q->bsend[mb_slot(q, ns, nc, i)], q->bentry[mb_slot(q, st, c, i)]);
            }
        }
    }
}

void mb_sched_build(struct mb_build *b, const int *pg_done)
{
    struct mb_unit fu = {0}, bu = {0};
    mb_step__sched_alloc(b);
    for (int st = 0; st < b->lay.p; st++) {
        b->host_last[st] = -1;
        b->host_acc[st] = 0;
        mb_step__stage(b, st, pg_done[st], &fu, &bu);
        mb_emit_host_flush(b, st);
    }
    mb_free(fu.it);
    mb_free(bu.it);
    mb_step__edges(b);
}
