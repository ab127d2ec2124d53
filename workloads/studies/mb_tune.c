/*
 * mb_tune.c -- the screened exact search over the guide's controls, the
 * overlap step, and the explanation (see mb_tune.h). The recommendation is
 * written by mb_scenario_write_yaml (mb_scenario_write.c).
 */
#include "mb_tune.h"
#include "mb_compare.h"
#include "mb_keys.h"

#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MB_TUNE_MIN_GAIN 0.005 /* 0.5 %: below typical step-time noise of a training run */

/* ---- scenario copies ------------------------------------------------------ */

static void mb_tune__copy(struct mb_scenario *dst, const struct mb_scenario *src)
{
    *dst = *src;
    if (src->model.n_layers > 0 && src->model.layer) {
        size_t n = (size_t)src->model.n_layers * sizeof *src->model.layer;
        dst->model.layer = mb_malloc(n);
        memcpy(dst->model.layer, src->model.layer, n);
    }
}

static int mb_tune__has(const struct mb_model *m, enum mb_mixer x, enum mb_ffn f)
{
    for (int i = 0; i < m->n_layers; i++)
        if ((x != MB_MIX_NONE && m->layer[i].mixer == x) || (f != MB_FFN_NONE && m->layer[i].ffn == f))
            return 1;
    return 0;
}

/* ---- the grid ------------------------------------------------------------- */

/* Values of one axis, built as text. */
struct mb_tune__vals {
    int n;
    char v[24][MB_SWEEP_VAL_LEN];
};

static void mb_tune__push(struct mb_tune__vals *a, const char *v)
{
    if (a->n < 24)
        snprintf(a->v[a->n++], MB_SWEEP_VAL_LEN, "%s", v);
}

static void mb_tune__push_int(struct mb_tune__vals *a, int v)
{
    char b[16];
    snprintf(b, sizeof b, "%d", v);
    mb_tune__push(a, b);
}

static int mb_tune__axis(struct mb_sweep *sw, const char *key, const struct mb_tune__vals *a, struct mb_err *err)
{
    const char *p[24];
    for (int i = 0; i < a->n; i++)
        p[i] = a->v[i];
    return mb_sweep_add_axis(sw, key, a->n, p, err);
}

/* Selective recompute boundaries the model has (modules "none" = Megatron's default core_attn). */
static void mb_tune__rc_modules(const struct mb_model *m, struct mb_tune__vals *a)
{
    int moe = m->num_experts > 0, mla = mb_tune__has(m, MB_MIX_MLA, MB_FFN_NONE) || m->kv_lora_rank > 0;
    mb_tune__push(a, "none");
    mb_tune__push(a, "layernorm");
    if (moe) {
        mb_tune__push(a, "moe_act");
        mb_tune__push(a, "moe_act+layernorm");
        mb_tune__push(a, "moe");
    }
    if (mla) {
        mb_tune__push(a, "mla_up_proj");
        mb_tune__push(a, moe ? "mla_up_proj+moe_act" : "mla_up_proj+mlp");
    }
    if (mb_tune__has(m, MB_MIX_NONE, MB_FFN_DENSE)) {
        mb_tune__push(a, "mlp");
        mb_tune__push(a, "mlp+layernorm");
    }
}

/* The base: start with what the grid does not search set to what every path accepts. */
static void mb_tune__base(struct mb_scenario *b, const struct mb_scenario *start)
{
    mb_tune__copy(b, start);
    b->dist_opt = 1; /* same gradient bytes as DDP's all-reduce; shards 12 B/param of state: never loses */
    b->vpp = 1;
    b->pipeline_layout[0] = '\0';
    b->sequence_parallel = -1;
    b->overlap_ep_comm = b->overlap_tp_comm = 0; /* tried last, on the winner */
    b->fsdp_prefetch = 1;
    b->fsdp_impl = MB_FSDP_MEGATRON;
    b->fsdp_reshard_after_forward = 1;
    b->fsdp_grad_sync = b->fsdp_reshard_after_backward = 1; /* FSDP2's, refused under Megatron-FSDP */
    b->recompute_num_layers = 0;
    b->recompute_method = MB_RC_UNIFORM;
    b->meas_tokens_per_s_per_gpu = b->meas_model_tflops_per_gpu = b->meas_step_time_s = 0;
    b->meas_peak_memory_gib = 0;
    b->meas_oom = 0;
    b->meas_source[0] = '\0';
}

static int mb_tune__axes(struct mb_sweep *sw, struct mb_err *err)
{
    const struct mb_scenario *b = &sw->base;
    const struct mb_model *m = &b->model;
    int moe = m->num_experts > 0;
    struct mb_tune__vals a;
    memset(&a, 0, sizeof a);
    mb_tune__push(&a, "3d");
    mb_tune__push(&a, "fsdp");
    if (mb_tune__axis(sw, "parallel.strategy", &a, err))
        return -1;
    if (moe) { /* every EP that divides the experts and the GPUs */
        a.n = 0;
        for (int ep = 1; ep <= m->num_experts && ep <= b->gpus; ep++)
            if (m->num_experts % ep == 0 && b->gpus % ep == 0)
                mb_tune__push_int(&a, ep);
        if (mb_tune__axis(sw, "parallel.ep", &a, err))
            return -1;
    }
    a.n = 0;
    for (int tp = 1; tp <= 8 && tp <= b->gpus; tp *= 2)
        mb_tune__push_int(&a, tp);
    if (mb_tune__axis(sw, "parallel.tp", &a, err))
        return -1;
    a.n = 0;
    for (int pp = 1; pp <= 16 && pp <= b->gpus && pp <= m->num_layers; pp *= 2)
        mb_tune__push_int(&a, pp);
    if (mb_tune__axis(sw, "parallel.pp", &a, err))
        return -1;
    a.n = 0;
    mb_tune__push(&a, "none");
    mb_tune__push(&a, "selective");
    mb_tune__push(&a, "full");
    if (mb_tune__axis(sw, "recompute.granularity", &a, err))
        return -1;
    a.n = 0;
    mb_tune__rc_modules(m, &a);
    if (mb_tune__axis(sw, "recompute.modules", &a, err))
        return -1;
    a.n = 0;
    for (int mbs = 1; mbs <= 8 && mbs <= b->global_batch_size; mbs *= 2)
        mb_tune__push_int(&a, mbs);
    if (mb_tune__axis(sw, "data.micro_batch_size", &a, err))
        return -1;
    if (moe && b->gpus > 1) {
        a.n = 0;
        mb_tune__push(&a, "alltoall");
        mb_tune__push(&a, "deepep");
        mb_tune__push(&a, "hybridep");
        if (mb_tune__axis(sw, "moe.dispatcher", &a, err))
            return -1;
    }
    a.n = 0;
    mb_tune__push(&a, "none");
    mb_tune__push(&a, moe ? "attn+moe_router+moe_preprocess" : "attn+mlp"); /* the guide's safer default */
    mb_tune__push(&a, "layer");
    mb_tune__push(&a, "full_iteration");
    return mb_tune__axis(sw, "cuda_graph.modules", &a, err);
}

int mb_tune_grid(const struct mb_scenario *start, const struct mb_tune_opts *o, struct mb_sweep *sw, struct mb_err *err)
{
    memset(sw, 0, sizeof *sw);
    mb_tune__base(&sw->base, start);
    snprintf(sw->dir, sizeof sw->dir, ".");
    if (mb_tune__axes(sw, err))
        goto fail;
    for (int i = 0; o && i < o->n_set; i++)
        if (mb_sweep_set(sw, o->set[i], err))
            goto fail;
    return 0;
fail:
    mb_sweep_free(sw);
    memset(sw, 0, sizeof *sw);
    return -1;
}

void mb_tune_sweep_args(const struct mb_sweep *sw, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int a = 0; a < sw->n_axes && k < len; a++) {
        k += (size_t)snprintf(buf + k, len - k, "%s--set %s=", a ? " " : "", sw->axis[a].key);
        for (int i = 0; i < sw->axis[a].n && k < len; i++)
            k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "," : "", sw->axis[a].val[i]);
    }
}

/* ---- one configuration by its axis values --------------------------------- */

/* Grid index of `idx` with axis a's value replaced by value v (the last axis varies fastest). */
static size_t mb_tune__with(const struct mb_sweep *sw, size_t idx, int a, int v)
{
    size_t stride = 1;
    for (int k = sw->n_axes - 1; k > a; k--)
        stride *= (size_t)sw->axis[k].n;
    size_t cur = (idx / stride) % (size_t)sw->axis[a].n;
    return idx - cur * stride + (size_t)v * stride;
}

static int mb_tune__axis_of(const struct mb_sweep *sw, const char *key)
{
    for (int a = 0; a < sw->n_axes; a++)
        if (!strcmp(sw->axis[a].key, key))
            return a;
    return -1;
}

/* Simulate configuration idx into *s (owned) and *r; 0 or -1. */
static int mb_tune__build(const struct mb_sweep *sw, size_t idx, struct mb_scenario *s, struct mb_result *r)
{
    struct mb_scenario tmp;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_sweep_scenario(sw, idx, &tmp, &e))
        return -1;
    mb_tune__copy(s, &tmp);
    struct mb_step_opts opts = {.critical_path = 0};
    if (mb_step_simulate_opts(s, &opts, r, &e)) {
        mb_scenario_free(s);
        return -1;
    }
    return 0;
}

/* ---- the explanation, in the guide's order --------------------------------- */

static void mb_tune__row_text(const struct mb_sweep_row *r, double best, char *buf, size_t len)
{
    if (r->status == MB_SWEEP_INVALID)
        snprintf(buf, len, "invalid: %.200s", r->reason);
    else if (r->status == MB_SWEEP_SCREENED)
        snprintf(buf, len, "%.220s", r->reason);
    else if (r->status != MB_SWEEP_OK)
        snprintf(buf, len, "error: %.200s", r->reason);
    else if (r->oom)
        snprintf(buf, len, "out of memory (%.1f GiB of %.1f GiB)", r->peak_memory_gib, r->capacity_gib);
    else
        snprintf(buf, len, "%.1f tok/s/GPU (%+.1f %%), %.1f GiB", r->tokens_per_s_per_gpu,
                 100 * (r->tokens_per_s_per_gpu / best - 1), r->peak_memory_gib);
}

/* The label of configuration idx on axis a1 (and a2: recompute.modules, shown under selective only,
 * "none" being Megatron's default core_attn). */
static void mb_tune__label(const struct mb_sweep *sw, size_t idx, int a1, int a2, char *buf, size_t len)
{
    const char *v1 = mb_sweep_value(sw, idx, a1), *v2 = a2 >= 0 ? mb_sweep_value(sw, idx, a2) : NULL;
    if (v2 && !strcmp(v1, "selective"))
        snprintf(buf, len, "selective [%s]", strcmp(v2, "none") ? v2 : "core_attn");
    else
        snprintf(buf, len, "%s", v1);
}

/* The winner's value of control k1 (with k2: granularity + modules) and the configurations that
 * differ from it in those alone. */
static void mb_tune__explain_axis(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t win,
                                  const char *title, const char *k1, const char *k2, FILE *log)
{
    int a1 = mb_tune__axis_of(sw, k1), a2 = k2 ? mb_tune__axis_of(sw, k2) : -1;
    if (a1 < 0)
        return;
    char label[2 * MB_SWEEP_VAL_LEN + 16];
    mb_tune__label(sw, win, a1, a2, label, sizeof label);
    fprintf(log, "  %s: %s\n", title, label);
    double best = rows[win].tokens_per_s_per_gpu;
    int n2 = a2 >= 0 ? sw->axis[a2].n : 1;
    for (int i = 0; i < sw->axis[a1].n; i++)
        for (int j = 0; j < n2; j++) {
            size_t idx = mb_tune__with(sw, win, a1, i);
            if (a2 >= 0)
                idx = mb_tune__with(sw, idx, a2, j);
            if (idx == win || rows[idx].status == MB_SWEEP_INVALID)
                continue; /* combinations that cannot exist are counted, not listed */
            char what[300];
            mb_tune__row_text(&rows[idx], best, what, sizeof what);
            mb_tune__label(sw, idx, a1, a2, label, sizeof label);
            fprintf(log, "      %-34s %s\n", label, what);
        }
}

static void mb_tune__explain(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t win, FILE *log)
{
    fprintf(log, "\nwhy, in the guide's fit-first order (each control against its other values, the rest as the "
                 "winner's; invalid combinations left out):\n");
    static const char *const steps[][3] = {
        {"[1] EP (experts per GPU)", "parallel.ep", NULL},
        {"[2] TP (fit, then as low as pays)", "parallel.tp", NULL},
        {"[2] PP", "parallel.pp", NULL},
        {"[3] recompute", "recompute.granularity", "recompute.modules"},
        {"[4] MBS", "data.micro_batch_size", NULL},
        {"[6] dispatcher", "moe.dispatcher", NULL},
        {"[7] CUDA graphs", "cuda_graph.modules", NULL},
        {"path (FSDP or 3D)", "parallel.strategy", NULL},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        mb_tune__explain_axis(sw, rows, win, steps[i][0], steps[i][1], steps[i][2], log);
}

/* ---- the overlap step (last, as the guide says) ---------------------------- */

struct mb_tune__cur {
    struct mb_scenario s;
    struct mb_result r;
};

/* Try one change on cur; keep it if it fits and is faster (by MB_TUNE_MIN_GAIN when it costs memory). */
static void mb_tune__try(struct mb_tune__cur *cur, struct mb_scenario *c, const char *what, int *evals, FILE *log)
{
    struct mb_err e;
    struct mb_result r;
    mb_err_clear(&e);
    struct mb_step_opts opts = {.critical_path = 0};
    if (mb_scenario_check(c, &e)) {
        fprintf(log, "      %-34s invalid: %s\n", what, e.msg);
        mb_scenario_free(c);
        return;
    }
    if (mb_step_simulate_opts(c, &opts, &r, &e)) {
        fprintf(log, "      %-34s error: %s\n", what, e.msg);
        mb_scenario_free(c);
        return;
    }
    (*evals)++;
    double need = r.mem.peak_allocated > cur->r.mem.peak_allocated ? 1 + MB_TUNE_MIN_GAIN : 1 + 1e-9;
    int keep = !r.oom && r.tokens_per_s_per_gpu > cur->r.tokens_per_s_per_gpu * need;
    fprintf(log, "      %-34s %9.1f tok/s/GPU  %6.1f GiB  %s\n", what, r.tokens_per_s_per_gpu,
            r.mem.peak_allocated / GIB, r.oom ? "OOM" : keep ? "kept" : "does not pay");
    if (keep) {
        mb_scenario_free(&cur->s);
        mb_result_free(&cur->r);
        cur->s = *c;
        cur->r = r;
    } else {
        mb_result_free(&r);
        mb_scenario_free(c);
    }
}

static void mb_tune__overlap(struct mb_tune__cur *cur, int *evals, FILE *log)
{
    const struct mb_scenario *s = &cur->s;
    fprintf(log, "\n[7] communication overlap, last (kept when it fits and pays; 0.5 %% when it costs memory):\n");
    struct mb_scenario c;
    if (s->model.num_experts > 0 && s->ep > 1 && s->pp == 1) {
        mb_tune__copy(&c, &cur->s);
        c.overlap_ep_comm = 1;
        mb_tune__try(cur, &c, "overlap.ep_comm on", evals, log);
    }
    if (cur->s.tp > 1) {
        mb_tune__copy(&c, &cur->s);
        c.overlap_tp_comm = 1;
        mb_tune__try(cur, &c, "overlap.tp_comm on", evals, log);
    }
    if (cur->s.strategy == MB_STRAT_FSDP) {
        mb_tune__copy(&c, &cur->s);
        c.fsdp_prefetch = 2; /* one more layer gathered ahead: costs one layer of bf16 weights */
        mb_tune__try(cur, &c, "overlap.fsdp_prefetch 2", evals, log);
    }
}

/* ---- the search ----------------------------------------------------------- */

static void mb_tune__start(const struct mb_scenario *start, struct mb_tune_result *out, FILE *log)
{
    struct mb_scenario s0;
    struct mb_err e;
    mb_err_clear(&e);
    mb_tune__copy(&s0, start);
    struct mb_step_opts opts = {.critical_path = 0};
    out->start_ok = !mb_scenario_check(&s0, &e) && !mb_step_simulate_opts(&s0, &opts, &out->start_r, &e);
    mb_scenario_free(&s0);
    fprintf(log, "mbsim tune: %s (%s on %d x %s; GBS %d, seq %d, %s fixed)\n", start->name, start->model.name,
            start->gpus, start->system.gpu, start->global_batch_size, start->seq_length, start->prec.label);
    if (out->start_ok)
        fprintf(log, "  starting scenario: %.1f tok/s/GPU, %.1f GiB, %s\n", out->start_r.tokens_per_s_per_gpu,
                out->start_r.mem.peak_allocated / GIB, out->start_r.oom ? "OOM" : "fits");
    else
        fprintf(log, "  starting scenario: does not simulate: %s\n", e.msg);
}

/* Screen the grid; rows (shard order = grid order) and the ranking of the fitting ones. */
static size_t mb_tune__search(const struct mb_sweep *sw, int jobs, struct mb_sweep_row *rows, size_t *order,
                              struct mb_tune_result *out)
{
    size_t n = mb_sweep_size(sw);
    struct mb_sweep_run_opts ro = {.shard = 0, .nshards = 1, .jobs = jobs < 1 ? 1 : jobs};
    mb_sweep_screen(sw, MB_TUNE_RUNNERS_UP + 1, &ro, rows, NULL, &out->screen);
    out->configurations = n;
    for (size_t i = 0; i < n; i++)
        out->invalid += rows[i].status == MB_SWEEP_INVALID;
    out->evaluations = (int)out->screen.simulated;
    return mb_sweep_rank(rows, n, order);
}

static void mb_tune__report(const struct mb_tune_result *out, const struct mb_tune__cur *grid_best, FILE *log)
{
    if (out->n_runners > 0) {
        fprintf(log, "\nthe winner (A) against the runner-up (B), term by term:\n");
        mb_compare_settings(&grid_best->s, &out->runner[0], log);
        mb_compare_headline(&grid_best->r, &out->runner_r[0], log);
        mb_compare_time(&grid_best->r, &out->runner_r[0], log);
        mb_compare_memory(&grid_best->r.mem, &out->runner_r[0].mem, log);
    }
}

static void mb_tune__report_start(const struct mb_scenario *start, const struct mb_tune_result *out, FILE *log)
{
    if (!out->start_ok)
        return;
    fprintf(log, "\nthe starting scenario (A) against the recommendation (B), term by term:\n");
    mb_compare_settings(start, &out->best, log);
    mb_compare_headline(&out->start_r, &out->best_r, log);
    mb_compare_time(&out->start_r, &out->best_r, log);
    mb_compare_memory(&out->start_r.mem, &out->best_r.mem, log);
}

int mb_tune_opts(const struct mb_scenario *start, const struct mb_tune_opts *o, FILE *log, struct mb_tune_result *out,
                 struct mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_tune__start(start, out, log);
    struct mb_sweep sw;
    if (mb_tune_grid(start, o, &sw, err))
        return -1;
    size_t n = mb_sweep_size(&sw);
    char args[2048];
    mb_tune_sweep_args(&sw, args, sizeof args);
    fprintf(log, "  searching %zu configurations (mbsim sweep %s); screened exact search (sweep --screen %d)\n", n,
            args, MB_TUNE_RUNNERS_UP + 1);
    struct mb_sweep_row *rows = mb_calloc(n, sizeof *rows);
    size_t *order = mb_calloc(n, sizeof *order);
    size_t m = mb_tune__search(&sw, o ? o->jobs : 1, rows, order, out);
    fprintf(log, "  %zu invalid (layout or Megatron rules), %zu bounded, %zu simulated, %zu screened out\n", out->invalid,
            out->screen.bounded, out->screen.simulated, out->screen.screened);
    struct mb_tune__cur cur;
    int rc = -1;
    if (m == 0 || mb_tune__build(&sw, order[0], &cur.s, &cur.r)) {
        mb_err_set(err, start->file, 0, 0, "no configuration of %s fits on %d x %s", start->model.name, start->gpus,
                   start->system.gpu);
        goto done;
    }
    out->grid_best_tput = rows[order[0]].tokens_per_s_per_gpu;
    fprintf(log, "  best of the grid: %.6g tok/s/GPU, %.1f GiB\n", out->grid_best_tput, rows[order[0]].peak_memory_gib);
    for (size_t i = 1; i < m && out->n_runners < MB_TUNE_RUNNERS_UP; i++)
        if (!mb_tune__build(&sw, order[i], &out->runner[out->n_runners], &out->runner_r[out->n_runners]))
            out->n_runners++;
    mb_tune__explain(&sw, rows, order[0], log);
    mb_tune__report(out, &cur, log);
    mb_tune__overlap(&cur, &out->evaluations, log);
    out->best = cur.s;
    out->best_r = cur.r;
    snprintf(out->best.name, sizeof out->best.name, "%.110s_tuned", start->name);
    char gain[96];
    if (out->start_ok)
        snprintf(gain, sizeof gain, "%+.1f%% over the starting scenario",
                 100 * (out->best_r.tokens_per_s_per_gpu / out->start_r.tokens_per_s_per_gpu - 1));
    else
        snprintf(gain, sizeof gain, "the start did not simulate");
    mb_tune__report_start(start, out, log);
    fprintf(log, "\nrecommended: %s TP%d PP%d EP%d MBS %d, %.1f tokens/s/GPU (%s), %.1f GiB of %.1f GiB\n",
            mb_key_value_name("parallel.strategy", out->best.strategy), out->best.tp, out->best.pp, out->best.ep,
            out->best.micro_batch_size, out->best_r.tokens_per_s_per_gpu, gain, out->best_r.mem.peak_allocated / GIB,
            out->best_r.mem.capacity / GIB);
    rc = 0;
done:
    mb_free(order);
    mb_free(rows);
    mb_sweep_free(&sw);
    return rc;
}

int mb_tune(const struct mb_scenario *start, FILE *log, struct mb_tune_result *out, struct mb_err *err)
{
    struct mb_tune_opts o = {.jobs = 1};
    return mb_tune_opts(start, &o, log, out, err);
}

void mb_tune_free(struct mb_tune_result *t)
{
    if (!t)
        return;
    mb_scenario_free(&t->best);
    mb_result_free(&t->best_r);
    mb_result_free(&t->start_r);
    for (int i = 0; i < t->n_runners; i++) {
        mb_scenario_free(&t->runner[i]);
        mb_result_free(&t->runner_r[i]);
    }
    t->n_runners = 0;
}
