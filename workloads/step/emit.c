/*
 * emit.c -- the emit phase: forward, backward and recompute units of op lists
 * as engine tasks on a stage's compute, communication and host streams, with
 * the host's kernel launches, CUDA-graph launches, device-to-host syncs, FSDP
 * gathers gated by the prefetch depth, and EP-overlapped pairs of units.
 */
#include "step_int.h"

#include <math.h>
#include <string.h>

/* Launches closer than this to the end of the op before them are kept as
 * tasks (the breakdown tests "launch ended as the op started" to 1e-12 s). */
#define MB_HOST_FOLD_MARGIN 1e-9

/* A host task of `dur` seconds on stage st's thread, after `dep` (or -1). */
static int mb_step__host_task(struct mb_build *b, int st, double dur, int dep)
{
    struct mb_tinfo keep = b->cur;
    mb_emit_describe(b, "launch", st, keep.layer, keep.mb, keep.dir);
    int h = mb_emit_task(b, b->host[st], MB_CAT_HOST, dur, NULL, 0, dep);
    b->cur = keep;
    b->host_last[st] = h;
    b->host_acc[st] = 0;
    return h;
}

/* Launch time folded on stage st and not yet a task becomes one (before a
 * device-to-host sync, and at the end of the stage's schedule). */
void mb_emit_host_flush(struct mb_build *b, int st)
{
    if (b->host_acc[st] > 0)
        mb_step__host_task(b, st, b->host_acc[st], -1);
}

/* A launch task of d seconds on stage st's thread, after the launches folded
 * so far; `sync`: after GPU task sync >= 0 too, the folded launches then a
 * task of their own first. Out of line: most launches fold (mb__host). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int mb_step__host_launch(struct mb_build *b, int st, double d, int sync)
{
    if (sync >= 0)
        mb_emit_host_flush(b, st);
    return mb_step__host_task(b, st, b->host_acc[st] + d, sync);
}

/* The host side of op o: the stage's host thread issues the op's kernels in
 * program order, launch_s + the framework's host_kernel each (kf forward or
 * recomputed, kb backward; one NCCL kernel per communication op), or a single
 * cudaGraphLaunch (launch_s) when the op opens
 * a captured region (the rest of the region costs the host nothing). The
 * host never waits for the GPU, except at a device-to-host sync (o->host_sync
 * in a forward pass), where it cannot issue further work until the GPU has
 * reached that point. Returns the host task the GPU op must wait for, or -1.
 *
 * An op of n kernels waits only for the launch of its first one (d / n): a
 * kernel starts once launched and its stream is free, so the op's later
 * kernels are launched while its first ones run. The other (n - 1) d / n
 * seconds are the thread's, added to its next task (host_acc): the next op's
 * launch, and so the next op, still waits for all of them. (Gating the op on
 * all n launches exposed the launches of a grouped GEMM's every expert, or of
 * the router's ~18 kernels, before the op's first kernel, and made splitting
 * one op into several, as moe_act recompute splits the expert MLP, shorten
 * the step.)
 *
 * Folding: between syncs the thread runs its launches back to back, so the
 * first kernel's launch ends host_acc + d / n seconds after the thread's last
 * task. When the op before (em->last, which the GPU op waits for anyway) is
 * known to end at least that much later (em->lb), the launch cannot delay the
 * op: it becomes no task of its own and its seconds are added to the thread's
 * next task, which therefore ends exactly when the unfolded launches would
 * have. */
static inline int mb_step__host(struct mb_build *b, int st, struct mb_em *em, const struct mb_op *o, int dir,
                           int recompute)
{
    if (b->launch <= 0)
        return -1; /* full-iteration graph: one launch per step */
    double n;
    if (o->region) {
        n = o->region == em->region ? 0 : 1;
        em->region = o->region;
    } else {
        n = o->type == MB_OP_COMM ? 1 : (dir && !recompute ? o->kb : o->kf);
        em->region = 0;
    }
    int sync = o->host_sync && (!dir || recompute) && em->last >= 0;
    if (n <= 0 && !sync)
        return -1;
    /* a graph launch is one call; an eager kernel also pays the framework's host time */
    double d1 = b->launch + (o->region ? 0 : b->fw_host), d = n * d1;
    if (n < 1)
        d1 = d; /* a fraction of a kernel (an average count) is one launch's part */
    if (!sync && b->host_fold && em->lb_host >= 0 && em->lb_host == b->host_last[st] &&
        em->lb >= b->host_acc[st] + d1 + MB_HOST_FOLD_MARGIN) {
        b->host_acc[st] += d;
        return -1;
    }
    int h = mb_step__host_launch(b, st, d1, sync ? em->last : -1);
    b->host_acc[st] = d - d1; /* the op's later kernels, launched while its first runs */
    return h;
}

/* GPU task t of `dur` seconds, after em->last, became em->last: its lower
 * bound relative to the host thread (after its launch h, or after the op
 * before it). */
static void mb_step__note_lb(struct mb_em *em, int h, double dur)
{
    if (h >= 0) {
        em->lb_host = h;
        em->lb = dur;
    } else if (em->lb_host >= 0)
        em->lb += dur;
}

/* Remember that GPU task t waited for host task h (for the breakdown). */
static void mb_step__note_host(struct mb_build *b, int t, int h)
{
    if ((size_t)t >= b->hostdep_cap) {
        size_t cap = b->hostdep_cap ? 2 * b->hostdep_cap : 4096;
        while (cap <= (size_t)t)
            cap *= 2;
        b->hostdep = mb_realloc(b->hostdep, cap * sizeof *b->hostdep);
        for (size_t i = b->hostdep_cap; i < cap; i++)
            b->hostdep[i] = -1;
        b->hostdep_cap = cap;
    }
    b->hostdep[t] = h;
}

/* A zero-length join on the compute stream after em->last and the pending
 * parallel communication. */
static void mb_step__close_pending(struct mb_build *b, int st, struct mb_em *em)
{
    b->cur = (struct mb_tinfo){0};
    em->last = mb_emit_join(b, st, em->last, em->pending);
    em->pending = -1;
    em->beside_par = 0; /* what follows waits for it: nothing runs beside it any more */
}

/* Table seconds of compute op o in this pass (recompute: the forward again;
 * skip_bwd: dgrad only), before the framework model. */
double mb_emit_comp_s(const struct mb_op *o, int dir, int recompute, int skip_bwd)
{
    return recompute ? o->fwd - o->sac_keep_s : dir ? (skip_bwd ? o->bwd_dgrad_only : o->bwd) : o->fwd;
}

/* A compute op on stage st's compute stream. */
static void mb_step__emit_comp(struct mb_build *b, int st, struct mb_em *em, const struct mb_op *o, int dir, int recompute,
                          int skip_bwd)
{
    double dur = mb_emit_comp_s(o, dir, recompute, skip_bwd);
    if (dur <= 0)
        return;
    dur = mb_fw_comp(b, em, o, dir, recompute, dur); /* framework time: kernels, compute beside comm */
    int h = mb_step__host(b, st, em, o, dir, recompute);
    int t = mb_emit_task(b, b->comp[st], recompute ? MB_CAT_RECOMPUTE : (int)o->cat, dur, NULL, 0, em->last);
    if (h >= 0) {
        mb_engine_add_dep(b->e, h, t);
        mb_step__note_host(b, t, h);
    }
    em->last = t;
    mb_step__note_lb(em, h, dur);
    if (em->pending >= 0) /* join: the op after this one also waits for the parallel comm */
        mb_step__close_pending(b, st, em);
}

/* Emit one op forward (dir = 0) or backward (dir = 1) on stage st. recompute:
 * the forward again, tagged MB_CAT_RECOMPUTE. skip_bwd: dgrad only (frozen).
 * Returns 1 when the op was an expert-parallel dispatch/combine (a
 * point where an overlapped schedule may switch to the other microbatch). */
static int mb_step__emit_op(struct mb_build *b, int st, struct mb_em *em, const struct mb_op *o, int dir, int recompute,
                       int skip_bwd)
{
    b->cur.op = o;
    b->cur.dir = recompute ? 2 : dir;
    if (o->type == MB_OP_COMP) {
        mb_step__emit_comp(b, st, em, o, dir, recompute, skip_bwd);
        b->cur.op = NULL;
        return 0;
    }
    struct mb_flow_desc f[2];
    int nf = 0;
    if (o->bytes_nv > 0)
        f[nf++] = (struct mb_flow_desc){o->bytes_nv, 1, {b->l_nv[st]}, o->bound_nv};
    if (o->bytes_nic > 0)
        f[nf++] = (struct mb_flow_desc){o->bytes_nic, 1, {b->l_nic[st]}, o->bound_nic};
    int h = mb_step__host(b, st, em, o, dir, recompute);
    int t = mb_emit_task(b, b->cstream[st][o->ck], MB_TK_OF_COMM(o->ck), o->latency, f, nf, em->last);
    if (h >= 0)
        mb_engine_add_dep(b->e, h, t);
    if (o->parallel) {
        em->pending = t;
        em->beside_par = mb_fw_comm_est(b, o); /* the next compute op runs beside it */
    } else {
        em->last = t;
        mb_step__note_lb(em, h, o->latency);
    }
    return o->ck == MB_CK_EP && !o->parallel;
}

/* Close a unit: wait for a parallel comm still in flight. */
static void mb_step__em_close(struct mb_build *b, int st, struct mb_em *em)
{
    if (em->pending >= 0)
        mb_step__close_pending(b, st, em);
}

/* Op i of list l in emission order. */
static const struct mb_op *mb_step__op_at(const struct mb_oplist *l, int dir, int i)
{
    return &l->op[dir ? l->n - 1 - i : i];
}

/* Whether op o runs in this pass: recompute passes run only recomputed
 * modules, and a backward-only op only in the backward proper. */
int mb_emit_op_runs(const struct mb_op *o, int dir, int recompute, unsigned mask)
{
    if (recompute && mask != ~0u && !(o->module & mask))
        return 0;
    return !(o->bwd_only && (!dir || recompute));
}

/* Start unit u (microbatch mb on virtual chunk `chunk`) on stage st: no items
 * yet, and a zero-length entry task on the compute stream that the
 * cross-stage dependencies attach to (returned). */
int mb_unit_open(struct mb_build *b, int st, struct mb_unit *u, int mb, int chunk)
{
    u->n = u->pos = u->opi = 0;
    u->mb = mb;
    u->chunk = chunk;
    b->cur = (struct mb_tinfo){0};
    u->em.last = mb_emit_task(b, b->comp[st], MB_TK_JOIN, 0, NULL, 0, -1);
    u->em.pending = -1;
    u->em.region = 0;
    u->em.beside_par = u->em.beside_bg = 0;
    u->em.lb_host = -1; /* the entry follows the stream, not a known launch */
    u->em.lb = 0;
    return u->em.last;
}

static void mb_step__it_add(struct mb_unit *u, struct mb_item x)
{
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 64;
        u->it = mb_realloc(u->it, (size_t)u->cap * sizeof *u->it);
    }
    u->it[u->n++] = x;
}

/* Append op list l (decoder layer li, or -1) to unit u. */
void mb_unit_ops(struct mb_unit *u, const struct mb_oplist *l, int li, int dir, int recompute, unsigned mask,
                 int skip_bwd)
{
    struct mb_item x = {MB_IT_OPS, l, dir, recompute, skip_bwd, mask, 0, li};
    mb_step__it_add(u, x);
}

/* Append an FSDP gather / reduce-scatter of `bytes` or a layer-end mark, in
 * the forward (dir 0) or backward (1) unit. */
void mb_unit_item(struct mb_unit *u, enum mb_itk k, double bytes, int li, int dir)
{
    struct mb_item x = {k, NULL, dir, 0, 0, 0, bytes, li};
    mb_step__it_add(u, x);
}

/* FSDP all-gather of a layer's parameters: the k-th gather waits for the
 * compute that preceded gather k - depth: depth 0 gathers a layer only once
 * the previous one is done, depth d keeps d layers gathered ahead (FSDP
 * forward/backward prefetch). */
static void mb_step__fsdp_gather(struct mb_build *b, int st, struct mb_unit *u, const struct mb_item *x,
                            struct mb_gate *gate)
{
    int k = gate->n++, d = b->s->fsdp_prefetch;
    gate->hist[k % (MB_MAX_FSDP_PREFETCH + 1)] = u->em.last;
    int dep = k - d >= 0 ? gate->hist[(k - d) % (MB_MAX_FSDP_PREFETCH + 1)] : -1;
    mb_emit_describe(b, "fsdp allgather", st, x->li, u->mb, x->dir);
    int t = mb_net_coll(b, st, MB_CK_FSDP, MB_CK_FSDP, MB_COLL_ALL_GATHER, b->g_dp, x->bytes, dep);
    if (t >= 0 && t != u->em.last)
        u->em.last = mb_emit_join(b, st, u->em.last, t);
    /* prefetched (d >= 1): the gathers of the next layers run beside this layer's compute */
    if (d > 0)
        u->em.beside_bg += mb_net_coll_est(b, MB_COLL_ALL_GATHER, b->g_dp, x->bytes);
}

/* Emit the ops of item x from u->opi on; returns 1 after an EP dispatch or
 * combine when yield_on_ep (the caller switches units). */
static int mb_step__run_ops(struct mb_build *b, int st, struct mb_unit *u, const struct mb_item *x, int yield_on_ep)
{
    if (u->opi == 0)
        u->em.region = 0; /* each layer's module is a graph of its own */
    while (u->opi < x->l->n) {
        const struct mb_op *o = mb_step__op_at(x->l, x->dir, u->opi++);
        if (!mb_emit_op_runs(o, x->dir, x->recompute, x->mask))
            continue;
        if (b->record) /* b->cur describes the task for the trace and the op table only */
            b->cur = (struct mb_tinfo){o, x->l, NULL, x->li, u->mb, u->chunk, 0, x->skip_bwd, st, 0, 0, 0, MB_SRC_NONE};
        if (mb_step__emit_op(b, st, &u->em, o, x->dir, x->recompute, x->skip_bwd) && yield_on_ep) {
            u->ep_busy = mb_fw_comm_est(b, o);
            return 1;
        }
    }
    return 0;
}

/* Estimated seconds of layer li's overlapped gradient reduction (reduce.c:
 * one bucket per layer, issued as its last backward ends -- the last
 * microbatch's), which runs beside the backward of the layers after it in
 * that unit; 0 when there is none (no overlap_grad_reduce, FSDP, frozen). */
static double mb_step__grad_reduce_est(const struct mb_build *b, const struct mb_unit *u, int li)
{
    const struct mb_scenario *s = b->s;
    if (!s->overlap_grad_reduce || s->strategy == MB_STRAT_FSDP || (s->freeze & MB_FREEZE_LANGUAGE) ||
        u->mb != b->lay.m - 1 || li < 0)
        return 0;
    enum mb_coll_op op = s->dist_opt ? MB_COLL_REDUCE_SCATTER : MB_COLL_ALL_REDUCE;
    double t = mb_net_coll_est(b, op, b->g_dp, b->lay.dense_layer_params / s->tp * s->grad_bytes);
    if (b->m->layer[li].ffn == MB_FFN_MOE)
        t += mb_net_coll_est(b, op, b->g_edp, b->lay.expert_layer_params / (s->ep * s->etp) * s->grad_bytes);
    return t;
}

/* Run unit u from where it stopped. With `yield_on_ep` it returns 1 right
 * after emitting an EP dispatch/combine, so the caller can switch to the other
 * unit; otherwise it runs to the end and returns 0. `gate` implements the
 * FSDP prefetch depth; sched.lastb_layer[li] records each layer's last
 * backward task. */
int mb_unit_run(struct mb_build *b, int st, struct mb_unit *u, int yield_on_ep, struct mb_gate *gate)
{
    for (; u->pos < u->n; u->pos++, u->opi = 0) {
        struct mb_item *x = &u->it[u->pos];
        switch (x->k) {
        case MB_IT_OPS:
            if (mb_step__run_ops(b, st, u, x, yield_on_ep))
                return 1;
            break;
        case MB_IT_FSDP_AG:
            mb_step__em_close(b, st, &u->em);
            mb_step__fsdp_gather(b, st, u, x, gate);
            break;
        case MB_IT_FSDP_RS:
            mb_step__em_close(b, st, &u->em);
            mb_emit_describe(b, "fsdp reducescatter", st, x->li, u->mb, 1);
            mb_net_coll(b, st, MB_CK_DP, MB_CK_FSDP, MB_COLL_REDUCE_SCATTER, b->g_dp, x->bytes, u->em.last);
            u->em.beside_bg += mb_net_coll_est(b, MB_COLL_REDUCE_SCATTER, b->g_dp, x->bytes); /* beside the next layers */
            break;
        case MB_IT_LASTB:
            mb_step__em_close(b, st, &u->em);
            b->sched.lastb_layer[x->li] = u->em.last;
            u->em.beside_bg += mb_step__grad_reduce_est(b, u, x->li);
            break;
        }
    }
    mb_step__em_close(b, st, &u->em);
    return 0;
}

/* Emit units a and b interleaved at their EP dispatch/combine points: while
 * one unit's all-to-all is in flight the other unit computes (Megatron's
 * combined 1F1B all-to-all overlap). The dispatcher kernel occupies a share
 * `sm_frac` of the SMs for its (estimated) duration, so the overlapping
 * compute loses that share of the time: a stall of max(sm_frac,
 * overlap_slowdown) x duration is charged to dispatch_combine_compute. */
void mb_unit_run_pair(struct mb_build *b, int st, struct mb_unit *ua, struct mb_unit *ub, double sm_frac,
                      struct mb_gate *gate)
{
    struct mb_unit *cur = ua, *other = ub;
    while (ua->pos < ua->n || ub->pos < ub->n) {
        if (cur->pos >= cur->n) {
            struct mb_unit *t = cur;
            cur = other;
            other = t;
            continue;
        }
        int switched = mb_unit_run(b, st, cur, other->pos < other->n, gate);
        if (switched && other->pos < other->n) {
            /* the larger of the dispatcher's SM share and the framework model's slowdown
             * beside communication (both describe the same compute losing the GPU) */
            double stall = mb_step_max(sm_frac, b->fw_overlap) * cur->ep_busy;
            if (stall > 0) {
                mb_emit_describe(b, "ep overlap sm stall", st, -1, other->mb, -1);
                other->em.last = mb_emit_task(b, b->comp[st], MB_CAT_DISPATCH, stall, NULL, 0, other->em.last);
                mb_step__note_lb(&other->em, -1, stall);
            }
            struct mb_unit *t = cur;
            cur = other;
            other = t;
        }
    }
}
