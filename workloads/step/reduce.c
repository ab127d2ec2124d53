/*
 * reduce.c -- the reduce phase: the distributed optimizer's parameter
 * all-gather before the first forward, the gradient reduction (reduce-scatter
 * with the distributed optimizer, all-reduce under DDP; per-layer buckets
 * with overlap_grad_reduce), and the Adam step over this rank's shard.
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>

/* Distributed-optimizer parameter all-gather (bf16; per-tensor FP8 weights at 1 B with
 * fp8_param_gather, mb_memory_qweight_gather_bytes) of each stage before its
 * first forward: pg_done[st] is the task the first forward waits for (-1
 * with overlap_param_gather, FSDP, DDP or a frozen language model). */
void mb_reduce_param_gather(struct mb_build *b, int *pg_done)
{
    const struct mb_scenario *s = b->s;
    int frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    for (int st = 0; st < b->lay.p; st++) {
        pg_done[st] = -1;
        if (s->strategy == MB_STRAT_FSDP || frozen || !s->dist_opt) /* DDP: every rank updates all its parameters */
            continue;
        mb_emit_describe(b, "dp param allgather", st, -1, -1, -1);
        const struct mb_layout *lay = &b->lay;
        double qd = lay->params_qdense_stage[st] / s->tp;
        int t = mb_net_coll(b, st, MB_CK_DP, MB_CK_DP, MB_COLL_ALL_GATHER, b->g_dp,
                            (lay->params_dense_stage[st] / s->tp - qd) * BF16 + qd * lay->weight_q_gather, -1);
        mb_emit_describe(b, "edp param allgather", st, -1, -1, -1);
        t = mb_net_coll(b, st, MB_CK_DP, MB_CK_DP, MB_COLL_ALL_GATHER, b->g_edp,
                        lay->params_expert_stage[st] / (s->ep * s->etp) * lay->weight_q_gather, t);
        pg_done[st] = s->overlap_param_gather ? -1 : t;
    }
}

/* DP gradient reduction of `bytes` over g: reduce-scatter with the distributed
 * optimizer, all-reduce without it. */
static int mb_step__grad_reduce(struct mb_build *b, int st, struct mb_group g, const char *name, int layer, double bytes,
                           int dep)
{
    mb_emit_describe(b, name, st, layer, -1, 1);
    enum mb_coll_op op = b->s->dist_opt ? MB_COLL_REDUCE_SCATTER : MB_COLL_ALL_REDUCE;
    return mb_net_coll(b, st, MB_CK_DP, MB_CK_DP, op, g, bytes, dep);
}

/* Gradient reduction of stage st after its last backward `stage_end`;
 * returns the task the optimizer waits for. */
static int mb_step__stage_grads(struct mb_build *b, int st, int stage_end)
{
    const struct mb_scenario *s = b->s;
    const struct mb_layout *lay = &b->lay;
    int p = lay->p, v = lay->v;
    double rest = lay->params_dense_stage[st], exp_rest = lay->params_expert_stage[st];
    double dense_b = lay->dense_layer_params / s->tp * s->grad_bytes;
    double exp_b = lay->expert_layer_params / (s->ep * s->etp) * s->grad_bytes;
    if (s->overlap_grad_reduce) {
        /* one bucket per layer, issued as that layer's last backward ends (chunks
         * finish in reverse order under interleaving) */
        for (int c = v - 1; c >= 0; c--) {
            int vs = c * p + st;
            for (int li = lay->first[vs] + lay->count[vs] - 1; li >= lay->first[vs]; li--) {
                int t = mb_step__grad_reduce(b, st, b->g_dp, "dp grad reduce", li, dense_b, b->sched.lastb_layer[li]);
                rest -= lay->dense_layer_params;
                if (b->m->layer[li].ffn == MB_FFN_MOE) {
                    mb_step__grad_reduce(b, st, b->g_edp, "edp grad reduce", li, exp_b, t);
                    exp_rest -= lay->expert_layer_params;
                }
            }
        }
    }
    /* what is left (all of it without overlap; embedding/output with it) */
    int last = mb_step__grad_reduce(b, st, b->g_dp, "dp grad reduce", -1, fmax(rest, 0) / s->tp * s->grad_bytes,
                               stage_end);
    return mb_step__grad_reduce(b, st, b->g_edp, "edp grad reduce", -1,
                           fmax(exp_rest, 0) / (s->ep * s->etp) * s->grad_bytes, last);
}

/* HBM bytes of stage st's optimizer step. Adam over this rank's shard,
 * memory-bound: fp32 master, grad, m, v read and master, m, v written, bf16
 * param written = 10 + grad + 2 (m + v) bytes per element: 30 with fp32 grads
 * and moments. */
double mb_reduce_optimizer_bytes(const struct mb_build *b, int st)
{
    const struct mb_scenario *s = b->s;
    const struct mb_layout *lay = &b->lay;
    int frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0, frozen_v = (s->freeze & MB_FREEZE_VISION) != 0;
    /* the distributed optimizer shards the dense state over DP x CP, as memory.c counts it
     * (Megatron-Core's data-parallel group with context parallelism); DDP: no sharding */
    double dpd = s->dist_opt ? (double)s->dp * s->cp : 1, edpd = s->dist_opt ? lay->edp : 1;
    double shard = frozen ? 0
                          : lay->params_dense_stage[st] / s->tp / dpd +
                                lay->params_expert_stage[st] / (s->ep * s->etp) / edpd;
    if (st == 0 && !frozen_v)
        shard += lay->params_vision / s->tp / dpd;
    return shard * (10.0 + s->grad_bytes + 2.0 * s->state_bytes);
}

/* Gradient reduction (3D path; FSDP reduce-scatters per layer in its units)
 * and the optimizer step of every stage. */
void mb_reduce_grads_and_step(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    const struct mb_layout *lay = &b->lay;
    int frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    for (int st = 0; st < lay->p; st++) {
        int stage_end = b->sched.bdone[mb_slot(&b->sched, st, 0, lay->m - 1)]; /* last backward of the stage */
        int last = stage_end;
        if (s->strategy != MB_STRAT_FSDP && !frozen)
            last = mb_step__stage_grads(b, st, stage_end);
        double bytes = mb_reduce_optimizer_bytes(b, st);
        mb_emit_describe(b, "optimizer", st, -1, -1, -1);
        b->cur.bytes = bytes;
        b->cur.peak = b->gpu->hbm_bw;
        int t = mb_emit_task(b, b->comp[st], MB_CAT_OPTIMIZER, mb_calib_membound(b->cal, bytes), NULL, 0, last);
        if (b->fw_step > 0) { /* the iteration's fixed framework work (calibration framework.step_overhead) */
            mb_emit_describe(b, "iteration overhead", st, -1, -1, -1);
            mb_emit_task(b, b->comp[st], MB_CAT_OPTIMIZER, b->fw_step, NULL, 0, t);
        }
    }
}
