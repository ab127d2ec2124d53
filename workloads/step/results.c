/*
 * results.c -- the results phase: the time breakdown of the critical stage's
 * rank (compute by category; idle gaps blamed on the communication kind or
 * the host launches that overlap them, else the bubble), the critical path by
 * category, and the headline metrics (tokens/s/GPU, model TFLOP/s/GPU, MFU).
 */
#include "step_int.h"

#include <string.h>
#include "mb_calib.h"

#include <math.h>
#include <stdio.h>

static const char *const mb__cat_names[MB_CAT_COUNT] = {
    "vision_encoder", "projector", "decoder_attention", "moe_experts", "dispatch_combine_compute",
    "dense_other", "recompute", "optimizer", "exposed_tp_comm", "exposed_cp_comm", "exposed_ep_comm",
    "exposed_pp_comm", "exposed_dp_comm", "exposed_fsdp_comm", "exposed_cpu_offload",
    "exposed_host_launch", "pipeline_bubble"};

const char *mb_cat_name(enum mb_cat c) { return c < MB_CAT_COUNT ? mb__cat_names[c] : "?"; }

static const enum mb_cat mb__comm_cat[MB_CK_COUNT] = {MB_CAT_COMM_TP, MB_CAT_COMM_CP, MB_CAT_COMM_EP,
                                                       MB_CAT_COMM_PP, MB_CAT_COMM_DP, MB_CAT_COMM_FSDP};

/* Category of a task for reports: compute categories as they are, comm tasks
 * by kind; -1 for zero-length joins. */
int mb_results_task_cat(const struct mb_engine *e, int t)
{
    int kd = mb_engine_task_kind(e, t);
    if (kd >= MB_TK_COMM && kd < MB_TK_COMM + MB_CK_COUNT)
        return (int)mb__comm_cat[kd - MB_TK_COMM];
    return kd < MB_CAT_COUNT ? kd : -1;
}

/* The stage whose compute stream is busiest (the engine sums each stream's
 * task times as they complete; the compute stream's other tasks are
 * zero-length joins, which add nothing). */
static int mb_step__busiest_stage(const struct mb_build *b)
{
    int cs = 0;
    for (int q = 1; q < b->lay.p; q++)
        if (mb_engine_stream_busy(b->e, b->comp[q]) > mb_engine_stream_busy(b->e, b->comp[cs]))
            cs = q;
    return cs;
}

/* Busy intervals of stage cs's communication tasks (index = kind) and, at
 * MB_CK_COUNT, its host launch thread, each in task id order (a kind may run
 * on two streams: FSDP reduce-scatters use the DP stream); the streams are
 * FIFO, so each stream's intervals are sorted by start. */
struct mb__ivs {
    double *s[MB_CK_COUNT + 1], *e[MB_CK_COUNT + 1];
    int n[MB_CK_COUNT + 1], cap[MB_CK_COUNT + 1], ptr[MB_CK_COUNT + 1];
};

static void mb_step__ivs_add(struct mb__ivs *iv, int k, double t0, double t1)
{
    if (iv->n[k] == iv->cap[k]) {
        iv->cap[k] = iv->cap[k] ? 2 * iv->cap[k] : 256;
        iv->s[k] = mb_realloc(iv->s[k], (size_t)iv->cap[k] * sizeof(double));
        iv->e[k] = mb_realloc(iv->e[k], (size_t)iv->cap[k] * sizeof(double));
    }
    iv->s[k][iv->n[k]] = t0;
    iv->e[k][iv->n[k]++] = t1;
}

static void mb_step__ivs_build(const struct mb_build *b, int cs, struct mb__ivs *iv)
{
    memset(iv, 0, sizeof *iv);
    for (int t = mb_engine_stream_first(b->e, b->host[cs]); t >= 0; t = mb_engine_task_next(b->e, t)) {
        double t0 = mb_engine_task_start(b->e, t), t1 = mb_engine_task_end(b->e, t);
        if (t1 > t0)
            mb_step__ivs_add(iv, MB_CK_COUNT, t0, t1);
    }
    /* the communication streams merged in task id order */
    int cur[MB_CK_COUNT];
    for (int c = 0; c < MB_CK_COUNT; c++)
        cur[c] = mb_engine_stream_first(b->e, b->cstream[cs][c]);
    for (;;) {
        int c = -1;
        for (int j = 0; j < MB_CK_COUNT; j++)
            if (cur[j] >= 0 && (c < 0 || cur[j] < cur[c]))
                c = j;
        if (c < 0)
            break;
        int t = cur[c], kd = mb_engine_task_kind(b->e, t);
        cur[c] = mb_engine_task_next(b->e, t);
        if (kd >= MB_TK_COMM)
            mb_step__ivs_add(iv, kd - MB_TK_COMM, mb_engine_task_start(b->e, t), mb_engine_task_end(b->e, t));
    }
}

static void mb_step__ivs_free(struct mb__ivs *iv)
{
    for (int c = 0; c <= MB_CK_COUNT; c++) {
        mb_free(iv->s[c]);
        mb_free(iv->e[c]);
    }
}

/* Blame the idle gap [g0, g1) before compute task t: to the communication
 * kind (or, when t's launch ended as it started, the host) overlapping it
 * most; the rest is bubble. */
static void mb_step__blame_gap(const struct mb_build *b, struct mb__ivs *iv, int t, double g0, double g1, double *bd)
{
    double ov[MB_CK_COUNT + 1] = {0}, best = 0;
    int bestk = -1;
    int hd = (size_t)t < b->hostdep_cap ? b->hostdep[t] : -1;
    int host_late = hd >= 0 && mb_engine_task_end(b->e, hd) >= g1 - 1e-12;
    for (int c = 0; c <= MB_CK_COUNT; c++) {
        if (c == MB_CK_COUNT && !host_late)
            break;
        while (iv->ptr[c] < iv->n[c] && iv->e[c][iv->ptr[c]] <= g0)
            iv->ptr[c]++;
        for (int j = iv->ptr[c]; j < iv->n[c] && iv->s[c][j] < g1; j++) {
            /* sorted by start: a short interval behind a longer one may have ended before the gap */
            double o = mb_step_min(g1, iv->e[c][j]) - mb_step_max(g0, iv->s[c][j]);
            if (o > 0)
                ov[c] += o;
        }
        if (ov[c] > best) {
            best = ov[c];
            bestk = c;
        }
    }
    double gap = g1 - g0, covered = bestk >= 0 ? mb_step_min(best, gap) : 0;
    if (bestk >= 0)
        bd[bestk == MB_CK_COUNT ? MB_CAT_HOST : mb__comm_cat[bestk]] += covered;
    bd[MB_CAT_BUBBLE] += gap - covered;
}

/* Breakdown of stage cs's compute stream over [lo, hi) into bd: its compute
 * by category and its idle gaps, blamed by mb__blame_gap; the time after its
 * last task up to min(step, hi) is bubble. Over [0, inf) every task and gap
 * counts whole, with the sums of the unclipped loop. */
static void mb_step__breakdown(struct mb_build *b, int cs, double step, double lo, double hi, double *bd)
{
    struct mb__ivs iv;
    mb_step__ivs_build(b, cs, &iv);
    double prev_end = lo;
    for (int t = mb_engine_stream_first(b->e, b->comp[cs]); t >= 0; t = mb_engine_task_next(b->e, t)) {
        int kd = mb_engine_task_kind(b->e, t);
        double t0 = mb_engine_task_start(b->e, t), t1 = mb_engine_task_end(b->e, t);
        if (t0 >= hi)
            break; /* the stream runs its tasks in order */
        if (kd < MB_CAT_COUNT && t1 > lo)
            bd[kd] += mb_step_min(t1, hi) - mb_step_max(t0, lo);
        if (t0 > prev_end)
            mb_step__blame_gap(b, &iv, t, prev_end, t0, bd);
        if (t1 > prev_end)
            prev_end = t1;
    }
    double end = mb_step_min(step, hi);
    if (end > prev_end)
        bd[MB_CAT_BUBBLE] += end - prev_end;
    mb_step__ivs_free(&iv);
}

/* Reduce the timeline to the breakdown of the stage with the most compute:
 * compute time by category; idle gaps on its compute stream attributed to the
 * communication kind with the most overlap in that gap, else to the bubble. */
void mb_results_breakdown(struct mb_build *b, double step, struct mb_result *r)
{
    int cs = mb_step__busiest_stage(b);
    r->critical_stage = cs;
    mb_step__breakdown(b, cs, step, 0, INFINITY, r->breakdown);
}

void mb_results_breakdown_in(struct mb_build *b, int cs, double lo, double hi, double *bd)
{
    for (int c = 0; c < MB_CAT_COUNT; c++)
        bd[c] = 0;
    mb_step__breakdown(b, cs, INFINITY, lo, hi, bd);
}

/* Critical path of the step by category (seconds): what to shorten to make
 * the step shorter. Waits between a task and the one that released it
 * (nothing running on the path) count as bubble. */
void mb_results_critical(struct mb_build *b, struct mb_result *r)
{
    size_t nt = mb_engine_n_tasks(b->e);
    int *path = mb_malloc((nt ? nt : 1) * sizeof *path);
    size_t n = mb_engine_critical_path(b->e, path, nt);
    for (size_t i = 0; i < n; i++) {
        int t = path[i], c = mb_results_task_cat(b->e, t);
        double t0 = mb_engine_task_start(b->e, t), t1 = mb_engine_task_end(b->e, t);
        if (c >= 0)
            r->critical[c] += t1 - t0;
        double released = i + 1 < n ? mb_engine_task_end(b->e, path[i + 1]) : 0;
        if (t0 > released)
            r->critical[MB_CAT_BUBBLE] += t0 - released;
    }
    mb_free(path);
}

/* Headline rates from the step time, and the calibration usage. */
void mb_results_metrics(struct mb_build *b, double step, struct mb_result *r)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    const struct mb_data *d = &b->data;
    double gbs = (double)b->lay.m * s->micro_batch_size * s->dp, seq = s->seq_length;
    r->tokens_per_s_per_gpu = gbs * seq / (step * s->gpus);
    memcpy(r->coll, b->coll, sizeof r->coll);
    memcpy(r->coll_lat, b->coll_lat, sizeof r->coll_lat);
    r->useful_tokens_per_s_per_gpu = gbs * d->useful_per_seq / (step * s->gpus);
    /* Megatron's count: padded (BSHD) sequences count every position; packed
     * (THD) sequences count real tokens and per-sample squared lengths */
    double llm = s->packed ? mb_model_flops(m, gbs * d->useful_per_seq, gbs * d->lsq_per_seq)
                           : mb_model_flops(m, gbs * seq, gbs * seq * seq);
    double vit = mb_model_vit_flops(m, d->sumP * s->dp, d->sumQ * s->dp);
    r->model_flops = llm + vit;
    r->model_tflops_per_gpu = r->model_flops / (step * 1e12 * s->gpus);
    r->mfu = r->model_tflops_per_gpu * 1e12 / b->gpu->peak[s->prec.gemm];
    r->vision_tokens_per_sample = d->vision_tokens_per_sample;
    snprintf(r->calib_path, sizeof r->calib_path, "%s", mb_calib_path(b->cal));
    for (size_t i = 0; i < mb_calib_n_tables(b->cal); i++) {
        struct mb_calib_table_info ti = mb_calib_table(b->cal, i);
        r->calib_lookups += ti.lookups;
        r->calib_fallbacks += ti.fallbacks;
    }
}
