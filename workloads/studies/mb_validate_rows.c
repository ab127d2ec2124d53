/*
 * mb_validate_rows.c -- a summary's rows: adding, skipping, predicting one (time and memory), and the
 * rows simulated on several threads (mb_val_summary.jobs).
 */
#include "validate_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* summary bookkeeping                                                */
/* ------------------------------------------------------------------ */

void mb_validate_init(struct mb_val_summary *out)
{
    memset(out, 0, sizeof *out);
    out->mape_pct = out->median_ape_pct = out->max_ape_pct = NAN;
    out->median_err_pct = out->mape_layout_mismatch_pct = out->mape_layout_ok_pct = NAN;
    out->mape_mem_pct = out->median_mem_err_pct = NAN;
    out->max_ape_row = (size_t)-1;
}

struct mb_val__state *mb_validate__st(struct mb_val_summary *out)
{
    if (!out->state)
        out->state = mb_calloc(1, sizeof *out->state);
    return out->state;
}

size_t mb_validate_pending(const struct mb_val_summary *s)
{
    return s->state ? s->state->n_pending : 0;
}

struct mb_val__cache *mb_validate__get_cache(struct mb_val_summary *out)
{
    if (out->shared_cache)
        return out->shared_cache;
    struct mb_val__state *st = mb_validate__st(out);
    if (!st->cache)
        st->cache = mb_calloc(1, sizeof *st->cache);
    return st->cache;
}

struct mb_val_row *mb_validate__new_row(struct mb_val_summary *out)
{
    struct mb_val__state *st = mb_validate__st(out);
    struct mb_val_row *r;
    if (out->n_rows == st->cap_rows) {
        st->cap_rows = st->cap_rows ? 2 * st->cap_rows : 64;
        out->rows = mb_realloc(out->rows, st->cap_rows * sizeof *out->rows);
    }
    r = &out->rows[out->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* The slot where the id set's probe for id starts (cap_ids is a power of two). */
static size_t mb_validate__id_home(const struct mb_val__state *st, const char *id)
{
    return (size_t)mb_hash64(id, strlen(id), MB_HASH64_INIT) & (st->cap_ids - 1);
}

/* Grow the id set to twice its size (at least 64 slots), re-placing every row. */
static void mb_validate__ids_grow(struct mb_val_summary *out, struct mb_val__state *st)
{
    size_t old = st->cap_ids, *was = st->ids;
    st->cap_ids = old ? 2 * old : 64;
    st->ids = mb_calloc(st->cap_ids, sizeof *st->ids);
    for (size_t i = 0; i < old; i++) {
        if (!was[i])
            continue;
        size_t h = mb_validate__id_home(st, out->rows[was[i] - 1].id);
        while (st->ids[h])
            h = (h + 1) & (st->cap_ids - 1);
        st->ids[h] = was[i];
    }
    mb_free(was);
}

const struct mb_val_row *mb_validate__same_id(struct mb_val_summary *out, const char *id, size_t ri)
{
    struct mb_val__state *st = mb_validate__st(out);
    if (2 * (st->n_ids + 1) > st->cap_ids)
        mb_validate__ids_grow(out, st);
    size_t h = mb_validate__id_home(st, id);
    for (; st->ids[h]; h = (h + 1) & (st->cap_ids - 1))
        if (!strcmp(out->rows[st->ids[h] - 1].id, id))
            return &out->rows[st->ids[h] - 1];
    st->ids[h] = ri + 1;
    st->n_ids++;
    return NULL;
}

void mb_validate__skip_row(struct mb_val_row *r, const char *reason)
{
    r->skipped = 1;
    r->predicted = 0.0;
    r->err_pct = 0.0;
    mb_validate__copy_str(r->reason, sizeof r->reason, reason);
}

/* Choose the compared metric: tokens/s/GPU, else step time, else TFLOP/s/GPU. */
int mb_validate__pick_metric(struct mb_val_row *r, double tokens, double step, double tflops)
{
    if (tokens > 0) {
        mb_validate__copy_str(r->metric, sizeof r->metric, MB_VAL_TOKENS);
        r->measured = tokens;
    } else if (step > 0) {
        mb_validate__copy_str(r->metric, sizeof r->metric, MB_VAL_STEP);
        r->measured = step;
    } else if (tflops > 0) {
        mb_validate__copy_str(r->metric, sizeof r->metric, MB_VAL_TFLOPS);
        r->measured = tflops;
    } else {
        mb_validate__skip_row(r, "no measured throughput");
        return -1;
    }
    return 0;
}

#define GIB 1073741824.0

/* The predicted peak of a kind ("allocated", "reserved", "device") on the rank of one pipeline stage;
 * first_iter: through the first iteration only, whose allocation is lower by (peak_allocated -
 * first_iter_allocated) at the same reserve and outside terms. */
static double mb_validate__stage_mem(const struct mb_memory_stage *st, const char *kind, int first_iter)
{
    double less = first_iter ? st->peak_allocated - st->first_iter_allocated : 0;
    if (!strcmp(kind, "reserved"))
        return st->reserved - less;
    if (!strcmp(kind, "device"))
        return st->device - less;
    return st->peak_allocated - less;
}

/* Memory of a predicted row: the verdict, the peak rank's largest terms at its
 * peak, and the comparison with a measured peak (largest over the stages'
 * ranks, as a published peak is the worst rank's). */
static void mb_validate__row_memory(struct mb_val_row *r, const struct mb_memory *m)
{
    const struct {
        const char *name;
        double v;
    } t[] = {{"weights", m->weights},         {"gradients", m->grads},
             {"optimizer", m->optimizer},     {"activations", m->activations},
             {"recompute", m->recompute},     {"backward gradients", m->bwd_grads},
             {"loss", m->logits},             {"dispatch", m->dispatch},
             {"GEMM workspaces", m->workspace}, {"CUDA graphs", m->graphs},
             {"fragmentation", m->fragmentation}, {"comm buffers", m->comm_buffers},
             {"CUDA context", m->context},    {"optimizer-step gradients", m->at_step ? m->step_grads : 0}};
    enum { NT = sizeof t / sizeof t[0] };
    int used[NT] = {0};
    size_t l = 0;

    r->verdict = (int)m->verdict;
    r->device_gib = m->device / GIB;
    r->capacity_gib = m->capacity / GIB;
    r->mem_terms[0] = '\0';
    for (int k = 0; k < 3; k++) { /* the three largest, first listed on a tie */
        int b = -1;
        for (int i = 0; i < NT; i++)
            if (!used[i] && t[i].v > 0 && (b < 0 || t[i].v > t[b].v))
                b = i;
        if (b < 0)
            break;
        used[b] = 1;
        if (l < sizeof r->mem_terms)
            l += (size_t)snprintf(r->mem_terms + l, sizeof r->mem_terms - l, "%s%s %.1f GiB", k ? ", " : "",
                                  t[b].name, t[b].v / GIB);
    }
    if (r->meas_mem_gib > 0) {
        double best = 0.0;
        if (m->n_stages > 0 && !strcmp(r->mem_from, "notes")) {
            /* a logged peak: the last pipeline stage's rank (mb_val_row.mem_from) */
            best = mb_validate__stage_mem(&m->per_stage[m->n_stages - 1], r->mem_kind, r->mem_first_iter);
        } else if (m->n_stages > 0) {
            for (int st = 0; st < m->n_stages; st++)
                best = fmax(best, mb_validate__stage_mem(&m->per_stage[st], r->mem_kind, r->mem_first_iter));
        } else {
            struct mb_memory_stage one = {.peak_allocated = m->peak_allocated, .reserved = m->reserved,
                                          .device = m->device, .first_iter_allocated = m->first_iter_allocated};
            best = mb_validate__stage_mem(&one, r->mem_kind, r->mem_first_iter);
        }
        r->pred_mem_gib = best / GIB;
        r->mem_err_pct = (r->pred_mem_gib - r->meas_mem_gib) / r->meas_mem_gib * 100.0;
        r->mem_compared = 1;
    }
}

/* Simulate a checked scenario and compare on r->metric. fsdp_group > 0: the
 * CSV's sharding group, noted when it differs from DP; `head` and `tail`: what
 * the recipe columns or the notes set and state (built by the CSV reader),
 * noted before and after the predicted-OOM remark when not empty. */
static void mb_validate__predict_row(struct mb_val_row *r, const struct mb_scenario *s, int fsdp_group, const char *head,
                        const char *tail)
{
    struct mb_result res;
    struct mb_err err;
    double pred;
    char msg[600], why[200];

    memset(&res, 0, sizeof res);
    mb_err_clear(&err);
    struct mb_step_opts opts = {.critical_path = 0}; /* default cap, no critical path */
    if (mb_step_simulate_opts(s, &opts, &res, &err) != 0) {
        mb_err_format(&err, msg, sizeof msg);
        snprintf(why, sizeof why, "simulation failed: %.170s", msg);
        mb_validate__skip_row(r, why);
        return;
    }
    if (!r->mem_only) { /* a memory-only row has no time to compare */
        if (!strcmp(r->metric, MB_VAL_TOKENS))
            pred = res.tokens_per_s_per_gpu;
        else if (!strcmp(r->metric, MB_VAL_STEP))
            pred = res.step_time_s;
        else
            pred = res.model_tflops_per_gpu;
        if (!isfinite(pred) || pred <= 0) {
            snprintf(why, sizeof why, "simulation gave no %s", r->metric);
            mb_validate__skip_row(r, why);
            return;
        }
        r->predicted = pred;
        r->err_pct = (pred - r->measured) / r->measured * 100.0;
    }
    mb_validate__row_memory(r, &res.mem);
    if (fsdp_group > 0 && s->strategy == MB_STRAT_FSDP && fsdp_group != s->dp)
        snprintf(r->note, sizeof r->note, "FSDP sharding group %d differs from DP %d (simulated over DP)",
                 fsdp_group, s->dp);
    if (head && head[0]) {
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%s%s", l ? "; " : "", head);
    }
    if (res.oom) {
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l,
                 "%spredicted OOM (peak %.1f GiB, reserved %.1f GiB, on the device %.1f GiB, capacity %.1f GiB)",
                 l ? "; " : "", res.mem.peak_allocated / GIB, res.mem.reserved / GIB, res.mem.device / GIB,
                 res.mem.capacity / GIB);
    }
    if (tail && tail[0]) {
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%s%s", l ? "; " : "", tail);
    }
}

/* ------------------------------------------------------------------ */
/* rows simulated on several threads (mb_val_summary.jobs)            */
/* ------------------------------------------------------------------ */

struct mb_val__pool {
    struct mb_val_summary *out;
    size_t next, done;
    pthread_mutex_t mu;
};

void mb_validate__report_progress(struct mb_val_summary *out, size_t done)
{
    if (out->on_progress)
        out->on_progress(out->on_progress_ctx, done);
}

/* Claim and simulate jobs until none is left; the calling thread
 * (is_main) reports progress after each of its jobs. */
static void mb_validate__run_jobs(struct mb_val__pool *p, int is_main)
{
    struct mb_val_summary *out = p->out;
    const struct mb_val__state *st = out->state; /* made by the rows being flushed */
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t k = p->next < st->n_pending ? p->next++ : st->n_pending;
        size_t done = p->done;
        pthread_mutex_unlock(&p->mu);
        if (is_main && done)
            mb_validate__report_progress(out, out->n_rows - st->n_pending + done);
        if (k == st->n_pending)
            return;
        struct mb_val__job *j = &st->pending[k];
        mb_validate__predict_row(&out->rows[j->row], &j->s, j->fsdp_group, j->head, j->tail);
        pthread_mutex_lock(&p->mu);
        p->done++;
        pthread_mutex_unlock(&p->mu);
    }
}

static void *mb_validate__job_worker(void *arg)
{
    mb_validate__run_jobs(arg, 0);
    return NULL;
}

/* Simulate the pending rows on out->jobs threads, then, in row order, call
 * on_row and free the jobs. */
void mb_validate__flush_jobs(struct mb_val_summary *out)
{
    if (!mb_validate_pending(out))
        return;
    struct mb_val__state *st = out->state;
    struct mb_val__pool p = {out, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    int nt = out->jobs < 1 ? 1 : out->jobs;
    if ((size_t)nt > st->n_pending)
        nt = (int)st->n_pending;
    pthread_t *th = mb_calloc((size_t)nt, sizeof *th);
    int started = 0;
    for (int t = 1; t < nt; t++) /* the calling thread is worker 0 */
        if (pthread_create(&th[started], NULL, mb_validate__job_worker, &p) == 0)
            started++;
    mb_validate__run_jobs(&p, 1);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    mb_free(th);
    pthread_mutex_destroy(&p.mu);
    for (size_t k = 0; k < st->n_pending; k++) {
        struct mb_val__job *j = &st->pending[k];
        if (!out->rows[j->row].skipped && out->on_row)
            out->on_row(out->on_row_ctx, &out->rows[j->row], &j->s);
        mb_scenario_free(&j->s);
        mb_free(j->head);
        mb_free(j->tail);
    }
    st->n_pending = 0;
    mb_validate__report_progress(out, out->n_rows);
}

/* Predict row r from s (taken: s is left empty, head and tail are freed by
 * the callee): now, or in the next batch when out->jobs > 1. */
void mb_validate__submit_row(struct mb_val_summary *out, struct mb_val_row *r, struct mb_scenario *s, int fsdp_group,
                       char *head, char *tail)
{
    if (out->jobs <= 1) {
        mb_validate__predict_row(r, s, fsdp_group, head, tail);
        if (!r->skipped && out->on_row)
            out->on_row(out->on_row_ctx, r, s);
        mb_scenario_free(s);
        mb_free(head);
        mb_free(tail);
        return;
    }
    struct mb_val__state *st = mb_validate__st(out);
    if (!st->pending)
        st->pending = mb_calloc(MB_VAL_BATCH, sizeof *st->pending);
    struct mb_val__job *j = &st->pending[st->n_pending++];
    j->row = (size_t)(r - out->rows);
    j->s = *s;
    memset(s, 0, sizeof *s);
    j->fsdp_group = fsdp_group;
    j->head = head;
    j->tail = tail;
    if (st->n_pending == MB_VAL_BATCH)
        mb_validate__flush_jobs(out);
}
