/*
 * mb_tune.c -- the fit-first tuning order (see mb_tune.h). The recommendation
 * is written by mb_scenario_write_yaml (mb_scenario_write.c).
 */
#include "mb_tune.h"
#include "mb_coll.h"
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

/* ---- evaluation ----------------------------------------------------------- */

struct mb_eval {
    int valid;         /* layout exists and simulated */
    int fits;
    double tput;       /* tokens/s/GPU */
    double mem_gib;
    char why[600];     /* reason when not valid */
    struct mb_result r;
};

struct mb_tuner {
    FILE *log;
    int evals;
    struct mb_tune_result *out;
};

static struct mb_eval mb_tune__eval(struct mb_tuner *t, struct mb_scenario *s)
{
    struct mb_eval ev;
    struct mb_err e;
    memset(&ev, 0, sizeof ev);
    mb_err_clear(&e);
    struct mb_step_opts opts = {.critical_path = 0}; /* default cap, no critical path */
    if (mb_scenario_check(s, &e) || mb_step_simulate_opts(s, &opts, &ev.r, &e)) {
        snprintf(ev.why, sizeof ev.why, "%s", e.msg);
        return ev;
    }
    t->evals++;
    ev.valid = 1;
    ev.fits = !ev.r.oom;
    ev.tput = ev.r.tokens_per_s_per_gpu;
    ev.mem_gib = ev.r.mem.peak_allocated / GIB;
    return ev;
}

static void mb_tune__say(struct mb_tuner *t, const char *what, const struct mb_eval *ev)
{
    if (!ev->valid)
        fprintf(t->log, "      %-34s invalid: %s\n", what, ev->why);
    else
        fprintf(t->log, "      %-34s %9.1f tok/s/GPU  %6.1f GiB  %s\n", what, ev->tput, ev->mem_gib,
                ev->fits ? "fits" : "OOM");
}

/* b is better than a: fits beats OOM, then throughput. */
static int mb_tune__better(const struct mb_eval *b, const struct mb_eval *a)
{
    if (!b->valid)
        return 0;
    if (!a->valid)
        return 1;
    if (b->fits != a->fits)
        return b->fits;
    return b->tput > a->tput * (1 + 1e-9);
}

/* ---- candidate spellings ---------------------------------------------------- */

/* Names come from the scenario key table (mb_keys.h). */
static void mb_tune__flags(const char *key, unsigned flags, const char *sep, char *buf, size_t len)
{
    mb_key_flag_names(key, flags, sep, buf, len);
}

static const char *mb_tune__disp_name(enum mb_dispatcher d) { return mb_key_value_name("moe.dispatcher", d); }

static void mb_tune__rc_name(unsigned gran, unsigned mods, char *buf, size_t len)
{
    char list[160];
    mb_tune__flags("recompute.modules", mods, ",", list, sizeof list);
    if (gran == MB_RC_SELECTIVE)
        snprintf(buf, len, "selective[%.80s]", list);
    else
        snprintf(buf, len, "%s", gran == MB_RC_FULL ? "full" : "none");
}

static int mb_tune__has(const struct mb_model *m, enum mb_mixer x, enum mb_ffn f)
{
    for (int i = 0; i < m->n_layers; i++)
        if ((x != MB_MIX_NONE && m->layer[i].mixer == x) || (f != MB_FFN_NONE && m->layer[i].ffn == f))
            return 1;
    return 0;
}

/* ---- the steps ------------------------------------------------------------ */

/* Step 2 helper: smallest TP (and PP for 3D) that fits with full recompute. */
static int mb_tune__fit_layout(struct mb_tuner *t, struct mb_scenario *cur, int allow_pp)
{
    static const int tps[] = {1, 2, 4, 8};
    static const int pps[] = {1, 2, 4, 8, 16};
    int npp = allow_pp ? 5 : 1;
    for (int pi = 0; pi < npp; pi++) {
        for (int ti = 0; ti < 4; ti++) {
            struct mb_scenario c;
            mb_tune__copy(&c, cur);
            c.tp = tps[ti];
            c.pp = pps[pi];
            c.vpp = 1;
            c.sequence_parallel = -1;
            c.recompute = MB_RC_FULL;
            c.recompute_num_layers = 0;
            if (c.pp > 1)
                c.overlap_ep_comm = 0;
            char what[64];
            snprintf(what, sizeof what, "TP%d PP%d, full recompute", c.tp, c.pp);
            struct mb_eval ev = mb_tune__eval(t, &c);
            mb_tune__say(t, what, &ev);
            if (ev.valid && ev.fits) {
                fprintf(t->log, "    keep TP%d PP%d: the smallest that fits (full recompute only as the fit "
                                "diagnostic)\n", c.tp, c.pp);
                cur->tp = c.tp;
                cur->pp = c.pp;
                cur->vpp = 1;
                cur->sequence_parallel = -1;
                cur->overlap_ep_comm = c.overlap_ep_comm;
                mb_scenario_free(&c);
                return 0;
            }
            mb_scenario_free(&c);
        }
    }
    return -1;
}

/* Step 3 (and 5): the fastest recompute policy that fits; full only if nothing else does. */
static struct mb_eval mb_tune__pick_recompute(struct mb_tuner *t, struct mb_scenario *cur)
{
    const struct mb_model *m = &cur->model;
    unsigned cand[16][2];
    int n = 0;
    cand[n][0] = MB_RC_NONE, cand[n++][1] = 0;
    cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_CORE_ATTN;
    cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_LAYERNORM;
    int moe = m->num_experts > 0, mla = mb_tune__has(m, MB_MIX_MLA, MB_FFN_NONE);
    if (moe) {
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MOE_ACT;
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MOE_ACT | MB_RCM_LAYERNORM;
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MOE;
    }
    if (mla) {
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MLA_UP_PROJ;
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MLA_UP_PROJ | (moe ? MB_RCM_MOE_ACT : MB_RCM_MLP);
    }
    if (mb_tune__has(m, MB_MIX_NONE, MB_FFN_DENSE)) {
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MLP;
        cand[n][0] = MB_RC_SELECTIVE, cand[n++][1] = MB_RCM_MLP | MB_RCM_LAYERNORM;
    }
    cand[n][0] = MB_RC_FULL, cand[n++][1] = 0;
    struct mb_eval best = {0};
    unsigned bg = 0, bm = 0;
    for (int i = 0; i < n; i++) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.recompute = (enum mb_rc_gran)cand[i][0];
        c.recompute_modules = cand[i][1];
        c.recompute_num_layers = 0;
        char what[96];
        mb_tune__rc_name(cand[i][0], cand[i][1], what, sizeof what);
        struct mb_eval ev = mb_tune__eval(t, &c);
        mb_tune__say(t, what, &ev);
        mb_scenario_free(&c);
        /* full recompute is kept only when nothing lighter fits */
        if (cand[i][0] == MB_RC_FULL && best.valid && best.fits)
            continue;
        if (mb_tune__better(&ev, &best)) {
            best = ev;
            bg = cand[i][0];
            bm = cand[i][1];
        }
    }
    if (best.valid) {
        char what[96];
        mb_tune__rc_name(bg, bm, what, sizeof what);
        fprintf(t->log, "    keep recompute %s: %s\n", what,
                best.fits ? (bg == MB_RC_FULL ? "nothing lighter fits" : "fastest that fits")
                          : "nothing fits; least bad");
        cur->recompute = (enum mb_rc_gran)bg;
        cur->recompute_modules = bm;
        cur->recompute_num_layers = 0;
    }
    return best;
}

/* Try one change; keep it if it fits and is faster. */
static int mb_tune__try(struct mb_tuner *t, struct mb_scenario *cur, struct mb_eval *cur_ev, struct mb_scenario *cand,
                   const char *what)
{
    struct mb_eval ev = mb_tune__eval(t, cand);
    mb_tune__say(t, what, &ev);
    /* a change that costs memory must pay at least MB_TUNE_MIN_GAIN: a gain below
     * run-to-run noise is not worth the headroom (guide: "fits and pays") */
    double need = ev.mem_gib > cur_ev->mem_gib ? 1 + MB_TUNE_MIN_GAIN : 1 + 1e-9;
    if (ev.valid && ev.fits && (!cur_ev->fits || ev.tput > cur_ev->tput * need)) {
        mb_scenario_free(cur);
        *cur = *cand;
        *cur_ev = ev;
        fprintf(t->log, "    keep %s\n", what);
        return 1;
    }
    mb_scenario_free(cand);
    return 0;
}

/* Keep the n best fitting configurations seen (runners-up). */
static void mb_tune__remember(struct mb_tuner *t, const struct mb_scenario *s, const struct mb_eval *ev)
{
    struct mb_tune_result *o = t->out;
    if (!ev->valid || !ev->fits)
        return;
    int at = o->n_runners;
    for (int i = 0; i < o->n_runners; i++)
        if (ev->tput > o->runner_r[i].tokens_per_s_per_gpu) {
            at = i;
            break;
        }
    if (at >= MB_TUNE_RUNNERS_UP)
        return;
    if (o->n_runners == MB_TUNE_RUNNERS_UP)
        mb_scenario_free(&o->runner[--o->n_runners]);
    for (int i = o->n_runners; i > at; i--) {
        o->runner[i] = o->runner[i - 1];
        o->runner_r[i] = o->runner_r[i - 1];
    }
    mb_tune__copy(&o->runner[at], s);
    o->runner_r[at] = ev->r;
    o->n_runners++;
}

/* One path (FSDP or 3D) through the tuning order; *cur holds the result. */
static int mb_tune__tune_path(struct mb_tuner *t, struct mb_scenario *cur, struct mb_eval *ev)
{
    const struct mb_model *m = &cur->model;
    int fsdp = cur->strategy == MB_STRAT_FSDP;
    /* (1) EP */
    if (m->num_experts > 0) {
        fprintf(t->log, "  [1] EP: the largest topology-compatible EP that shards the experts\n");
        int best_ep = 0;
        for (int ep = m->num_experts; ep >= 1; ep--) {
            if (m->num_experts % ep)
                continue;
            struct mb_scenario c;
            mb_tune__copy(&c, cur);
            c.ep = ep;
            c.etp = 1;
            c.tp = c.pp = c.vpp = 1;
            struct mb_err e;
            mb_err_clear(&e);
            int ok = mb_scenario_check(&c, &e) == 0;
            mb_scenario_free(&c);
            if (ok) {
                best_ep = ep;
                break;
            }
        }
        if (best_ep > 0) {
            fprintf(t->log, "    %s EP%d: %d of %d experts per GPU\n", best_ep == cur->ep ? "keep" : "set",
                    best_ep, m->num_experts / best_ep, m->num_experts);
            cur->ep = best_ep;
            cur->etp = 1;
        }
    } else {
        fprintf(t->log, "  [1] EP: dense model, nothing to shard\n");
    }
    /* (2) smallest TP / PP that fits */
    fprintf(t->log, "  [2] %s: the smallest that fits the non-expert weights\n", fsdp ? "TP" : "TP and PP");
    if (mb_tune__fit_layout(t, cur, !fsdp)) {
        fprintf(t->log, "    nothing fits, even with full recompute at TP8%s\n", fsdp ? "" : " PP16");
        return -1;
    }
    /* (3) recompute */
    fprintf(t->log, "  [3] recompute: none or cheap selective boundaries; full only if nothing else fits\n");
    *ev = mb_tune__pick_recompute(t, cur);
    mb_tune__remember(t, cur, ev);
    /* (4) MBS */
    fprintf(t->log, "  [4] MBS: up while it fits and pays\n");
    for (;;) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.micro_batch_size *= 2;
        char what[64];
        snprintf(what, sizeof what, "MBS %d", c.micro_batch_size);
        if (!mb_tune__try(t, cur, ev, &c, what))
            break;
        mb_tune__remember(t, cur, ev);
    }
    /* (5) TP down where activations were the reason */
    fprintf(t->log, "  [5] TP down (activations were the reason for TP): re-pick recompute at the lower TP\n");
    while (cur->tp > 1) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.tp /= 2;
        c.sequence_parallel = -1;
        fprintf(t->log, "    TP%d:\n", c.tp);
        struct mb_eval cev = mb_tune__pick_recompute(t, &c);
        if (cev.valid && cev.fits && cev.tput > ev->tput) {
            mb_scenario_free(cur);
            *cur = c;
            *ev = cev;
            fprintf(t->log, "    keep TP%d\n", cur->tp);
            mb_tune__remember(t, cur, ev);
        } else {
            mb_scenario_free(&c);
            fprintf(t->log, "    keep TP%d: lower TP does not fit or pay\n", cur->tp);
            break;
        }
    }
    /* (6) dispatcher */
    if (m->num_experts > 0 && cur->ep > 1) {
        fprintf(t->log, "  [6] dispatcher: HybridEP vs DeepEP vs AllToAll on the same topology\n");
        static const enum mb_dispatcher ds[] = {MB_DISP_HYBRIDEP, MB_DISP_DEEPEP, MB_DISP_ALLTOALL};
        for (int i = 0; i < 3; i++) {
            if (ds[i] == cur->dispatcher)
                continue;
            struct mb_scenario c;
            mb_tune__copy(&c, cur);
            c.dispatcher = ds[i];
            char what[64];
            snprintf(what, sizeof what, "dispatcher %s", mb_tune__disp_name(ds[i]));
            if (mb_tune__try(t, cur, ev, &c, what))
                mb_tune__remember(t, cur, ev);
        }
    }
    /* (7) overlap and CUDA graphs last */
    fprintf(t->log, "  [7] communication overlap and CUDA graphs\n");
    if (m->num_experts > 0 && cur->ep > 1 && (cur->pp == 1 || cur->vpp > 1) && !cur->overlap_ep_comm) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.overlap_ep_comm = 1;
        if (mb_tune__try(t, cur, ev, &c, "overlap.ep_comm on"))
            mb_tune__remember(t, cur, ev);
    }
    if (cur->tp > 1 && !cur->overlap_tp_comm) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.overlap_tp_comm = 1;
        if (mb_tune__try(t, cur, ev, &c, "overlap.tp_comm on"))
            mb_tune__remember(t, cur, ev);
    }
    if (cur->strategy == MB_STRAT_FSDP && cur->fsdp_prefetch < 2) {
        struct mb_scenario c;
        mb_tune__copy(&c, cur);
        c.fsdp_prefetch = 2; /* one more layer gathered ahead: costs one layer of bf16 weights */
        if (mb_tune__try(t, cur, ev, &c, "overlap.fsdp_prefetch 2"))
            mb_tune__remember(t, cur, ev);
    }
    {
        unsigned safe = MB_CG_ATTN | (m->num_experts > 0 ? MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS : MB_CG_MLP);
        unsigned opts[2] = {safe, MB_CG_LAYER};
        const char *names[2] = {m->num_experts > 0 ? "cuda_graph attn moe_router moe_preprocess"
                                                   : "cuda_graph attn mlp",
                                "cuda_graph whole layer"};
        for (int i = 0; i < 2; i++) {
            if (cur->cuda_graph == opts[i])
                continue;
            struct mb_scenario c;
            mb_tune__copy(&c, cur);
            c.cuda_graph = opts[i];
            if (mb_tune__try(t, cur, ev, &c, names[i]))
                mb_tune__remember(t, cur, ev);
        }
    }
    return 0;
}

int mb_tune(const struct mb_scenario *start, FILE *log, struct mb_tune_result *out, struct mb_err *err)
{
    struct mb_tuner t = {log, 0, out};
    memset(out, 0, sizeof *out);
    struct mb_scenario s0;
    mb_tune__copy(&s0, start);
    struct mb_eval e0 = mb_tune__eval(&t, &s0);
    mb_scenario_free(&s0);
    out->start_ok = e0.valid;
    out->start_r = e0.r;
    fprintf(log, "mbsim tune: %s (%s on %d x %s; GBS %d, seq %d, %s fixed)\n", start->name, start->model.name,
            start->gpus, start->system.gpu, start->global_batch_size, start->seq_length, start->prec.label);
    mb_tune__say(&t, "starting scenario", &e0);

    struct mb_scenario path[2];
    struct mb_eval pev[2];
    int ok[2];
    for (int k = 0; k < 2; k++) {
        mb_tune__copy(&path[k], start);
        path[k].strategy = k == 0 ? MB_STRAT_FSDP : MB_STRAT_3D;
        path[k].meas_tokens_per_s_per_gpu = path[k].meas_model_tflops_per_gpu = path[k].meas_step_time_s = 0;
        path[k].meas_peak_memory_gib = 0;
        path[k].meas_oom = 0;
        path[k].meas_source[0] = '\0';
        if (k == 0) {
            path[k].pp = 1;
            path[k].vpp = 1;
            path[k].dist_opt = 1; /* FSDP shards the optimizer state by construction */
        }
        fprintf(log, "\n%s path:\n", k == 0 ? "FSDP" : "3D-parallel");
        if (k == 1 && !path[k].dist_opt) {
            /* the distributed optimizer moves the same gradient bytes (reduce-scatter +
             * all-gather = all-reduce) and shards 12 B/param of state: it never loses */
            path[k].dist_opt = 1;
            fprintf(log, "  distributed optimizer on (DDP kept the optimizer state whole on every rank)\n");
        }
        memset(&pev[k], 0, sizeof pev[k]);
        ok[k] = mb_tune__tune_path(&t, &path[k], &pev[k]) == 0 && pev[k].valid && pev[k].fits;
        if (ok[k])
            fprintf(log, "  => %s: %.1f tok/s/GPU, %.1f GiB\n", k == 0 ? "FSDP" : "3D", pev[k].tput, pev[k].mem_gib);
    }
    int pick = ok[0] && ok[1] ? (pev[1].tput > pev[0].tput) : ok[1] ? 1 : 0;
    if (!ok[pick]) {
        mb_scenario_free(&path[0]);
        mb_scenario_free(&path[1]);
        mb_tune_free(out);
        return mb_err_set(err, start->file, 0, 0, "no configuration of %s fits on %d x %s", start->model.name,
                          start->gpus, start->system.gpu);
    }
    out->best = path[pick];
    out->best_r = pev[pick].r;
    snprintf(out->best.name, sizeof out->best.name, "%.110s_tuned", start->name);
    mb_scenario_free(&path[!pick]);
    char gain[96];
    if (e0.valid)
        snprintf(gain, sizeof gain, "%+.1f%% over the starting scenario", 100 * (pev[pick].tput / e0.tput - 1));
    else
        snprintf(gain, sizeof gain, "the start did not simulate");
    fprintf(log, "\nrecommended: the %s path, %.1f tokens/s/GPU (%s), %.1f GiB of %.1f GiB\n",
            pick ? "3D-parallel" : "FSDP", pev[pick].tput, gain, pev[pick].mem_gib, pev[pick].r.mem.capacity / GIB);
    out->evaluations = t.evals;
    return 0;
}

void mb_tune_free(struct mb_tune_result *t)
{
    if (!t)
        return;
    mb_scenario_free(&t->best);
    for (int i = 0; i < t->n_runners; i++)
        mb_scenario_free(&t->runner[i]);
    t->n_runners = 0;
}
