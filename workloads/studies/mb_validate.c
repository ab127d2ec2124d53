/*
 * mb_validate.c -- `mbsim validate`: predict measured runs and report the error.
 *
 * A measured-runs CSV is parsed with libcsv (quoted fields may hold commas,
 * quotes and newlines). The file is fed to the parser one byte at a time so
 * that every field's line:column is known for error messages; the public CSV
 * is ~150 kB, so this costs nothing measurable. Each record is mapped onto a
 * struct mb_scenario (docs/validation.md has the column mapping and the skip
 * rules) and simulated with mb_step_simulate().
 *
 * Models and systems are loaded once per name (a small linear cache): the
 * public CSV has ~300 rows but only ~30 models and 7 systems, and a system
 * load runs hwloc on its node XML.
 *
 * The recipe columns (dispatcher ... other_recipe) are read one parser per
 * column and applied to the row's scenario, each column checked with
 * mb_scenario_check and taken back when the row's layout cannot hold it; what
 * is not modelled, not determinable or unparseable goes into the row's note.
 * A TFLOP/s-only row is converted to tokens/s with its publisher's FLOP
 * convention (chosen by the `source` column) and compared in time.
 *
 * Memory: a measured peak (CSV peak_memory_gib / peak_memory_kind, a "peak N
 * GB" item of the notes, a scenario's measured.peak_memory_gib) is compared
 * with the predicted peak of the same kind, and the memory verdict is counted
 * against whether the run ran (notes saying OOM mark the runs that did not).
 * Only reads the simulator's mb_memory; the time comparison is unchanged.
 *
 * Statistics are exact: mean, median (sorted copy) and max of |error %|.
 * Known limit: a row is compared on one metric only (tokens/s/GPU, else step
 * time, else model TFLOP/s/GPU converted to tokens/s); rows measuring several
 * could be checked on all of them, but they are redundant up to the
 * publisher's FLOP formula.
 */
#include "validate_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* statistics                                                         */
/* ------------------------------------------------------------------ */

static int mb_validate__cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mb_validate_stats(const double *err_pct, size_t n, double *mape, double *median, double *max)
{
    double *a, sum = 0.0, mx = 0.0, med;
    size_t i;
    if (n == 0) {
        if (mape)
            *mape = NAN;
        if (median)
            *median = NAN;
        if (max)
            *max = NAN;
        return -1;
    }
    a = mb_malloc(n * sizeof *a);
    for (i = 0; i < n; i++) {
        a[i] = fabs(err_pct[i]);
        sum += a[i];
        if (a[i] > mx)
            mx = a[i];
    }
    qsort(a, n, sizeof *a, mb_validate__cmp_dbl);
    med = (n % 2) ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
    mb_free(a);
    if (mape)
        *mape = sum / (double)n;
    if (median)
        *median = med;
    if (max)
        *max = mx;
    return 0;
}

/* scenario files                                                     */
/* ------------------------------------------------------------------ */

int mb_validate_add_scenario(struct mb_val_summary *out, const char *path, struct mb_err *err)
{
    struct mb_scenario s;
    struct mb_val_row *r;
    const char *base;

    memset(&s, 0, sizeof s);
    if (mb_scenario_load(path, &s, err) != 0) {
        mb_scenario_free(&s);
        return -1;
    }
    r = mb_validate__new_row(out);
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    mb_validate__copy_str(r->id, sizeof r->id, s.name[0] ? s.name : base);
    mb_validate__copy_str(r->model, sizeof r->model, s.model.name);
    mb_validate__copy_str(r->system, sizeof r->system, s.system.name);
    mb_validate__copy_str(r->source, sizeof r->source, path);
    mb_validate__copy_str(r->mem_kind, sizeof r->mem_kind, "allocated");
    if (s.meas_peak_memory_gib > 0) {
        r->meas_mem_gib = s.meas_peak_memory_gib;
        mb_validate__copy_str(r->mem_from, sizeof r->mem_from, "scenario");
        r->mem_first_iter = s.meas_peak_iteration == 1;
    }
    r->reported_oom = s.meas_oom;
    int timed = s.meas_tokens_per_s_per_gpu > 0 || s.meas_step_time_s > 0 || s.meas_model_tflops_per_gpu > 0;
    r->mem_only = !timed && (s.meas_oom || s.meas_peak_memory_gib > 0);
    if (timed)
        mb_validate__pick_metric(r, s.meas_tokens_per_s_per_gpu, s.meas_step_time_s, s.meas_model_tflops_per_gpu);
    else if (!r->mem_only)
        mb_validate__skip_row(r, "no measured block");
    if (!r->skipped) {
        s.roofline |= out->roofline;
        if (out->parse_only) {
            mb_validate__skip_row(r, "parse only");
        } else {
            /* with jobs > 1 the row waits for a batch: scenario files given one after the
             * other run side by side (flushed by a full batch, the next CSV or finish) */
            mb_validate__submit_row(out, r, &s, 0, NULL, NULL);
            mb_validate__report_progress(out, out->n_rows - mb_validate_pending(out));
            return 0;
        }
    }
    mb_scenario_free(&s);
    mb_validate__report_progress(out, out->n_rows - mb_validate_pending(out));
    return 0;
}

/* ------------------------------------------------------------------ */
/* summary                                                            */
/* ------------------------------------------------------------------ */

struct name_val {
    const char *name;
    double v;
};

static int mb_validate__cmp_name_val(const void *a, const void *b)
{
    return strcmp(((const struct name_val *)a)->name, ((const struct name_val *)b)->name);
}

/* Is r in the time comparison? (predicted, and not a memory-only row) */
int mb_validate__time_row(const struct mb_val_row *r)
{
    return !r->skipped && !r->mem_only;
}

/* Group (name, |err|) pairs by name: sorted by name, MAPE per group. */
static struct mb_val_group *mb_validate__group_by(const struct mb_val_summary *s, size_t field_off, int skip_empty, size_t *n_out)
{
    struct name_val *nv = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *nv);
    struct mb_val_group *g = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *g);
    size_t i, n = 0, ng = 0;
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (!mb_validate__time_row(r) || (skip_empty && !((const char *)r + field_off)[0]))
            continue;
        nv[n].name = (const char *)r + field_off;
        nv[n].v = fabs(r->err_pct);
        n++;
    }
    qsort(nv, n, sizeof *nv, mb_validate__cmp_name_val);
    for (i = 0; i < n;) {
        size_t j = i;
        double sum = 0.0;
        while (j < n && !strcmp(nv[j].name, nv[i].name))
            sum += nv[j++].v;
        mb_validate__copy_str(g[ng].name, sizeof g[ng].name, nv[i].name);
        g[ng].n = j - i;
        g[ng].mape_pct = sum / (double)(j - i);
        ng++;
        i = j;
    }
    mb_free(nv);
    *n_out = ng;
    return g;
}

static int mb_validate__cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int mb_validate__cmp_reason(const void *a, const void *b)
{
    const struct mb_val_reason *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->reason, y->reason);
}

/* Whether a compared peak enters the memory MAPE: a run that ran, or one reported out of memory whose
 * scenario states its peak after iteration 1 (the first iteration completed and logged it; the run failed
 * later, as the Nemotron 3 Nano runs of the activation-recompute card did in iteration 2). A reported-OOM
 * peak otherwise is where the run failed. */
int mb_validate__mem_in_mape(const struct mb_val_row *r)
{
    if (!r->mem_compared)
        return 0;
    return !r->reported_oom || (r->mem_first_iter && !strcmp(r->mem_from, "scenario"));
}

void mb_validate_finish(struct mb_val_summary *out)
{
    size_t i, n = 0, ns = 0;
    double *e;
    const char **why;

    mb_validate__flush_jobs(out); /* scenario rows still waiting for their batch */
    mb_validate__release_cache(out);
    mb_free(out->by_system);
    mb_free(out->by_model);
    mb_free(out->by_metric);
    mb_free(out->by_flops_conv);
    mb_free(out->reasons);

    out->n_predicted = out->n_skipped = 0;
    for (i = 0; i < out->n_rows; i++) {
        if (out->rows[i].skipped)
            out->n_skipped++;
        else
            out->n_predicted++;
    }
    e = mb_malloc((out->n_predicted ? out->n_predicted : 1) * sizeof *e);
    why = mb_malloc((out->n_skipped ? out->n_skipped : 1) * sizeof *why);
    out->max_ape_row = (size_t)-1;
    for (i = 0; i < out->n_rows; i++) {
        const struct mb_val_row *r = &out->rows[i];
        if (r->skipped) {
            why[ns++] = r->reason;
            continue;
        }
        if (r->mem_only)
            continue;
        if (out->max_ape_row == (size_t)-1 || fabs(r->err_pct) > fabs(out->rows[out->max_ape_row].err_pct))
            out->max_ape_row = i;
        e[n++] = r->err_pct;
    }
    mb_validate_stats(e, n, &out->mape_pct, &out->median_ape_pct, &out->max_ape_pct);
    mb_free(e);

    out->by_system = mb_validate__group_by(out, offsetof(struct mb_val_row, system), 0, &out->n_by_system);
    out->by_model = mb_validate__group_by(out, offsetof(struct mb_val_row, model), 0, &out->n_by_model);
    out->by_metric = mb_validate__group_by(out, offsetof(struct mb_val_row, metric), 0, &out->n_by_metric);
    out->by_flops_conv = mb_validate__group_by(out, offsetof(struct mb_val_row, flops_conv), 1, &out->n_by_flops_conv);

    /* signed median; LAYOUT-MISMATCH rows apart from the rest */
    {
        double *sg = mb_malloc((out->n_predicted ? out->n_predicted : 1) * sizeof *sg);
        double *mm = mb_malloc((out->n_predicted ? out->n_predicted : 1) * sizeof *mm);
        double *ok = mb_malloc((out->n_predicted ? out->n_predicted : 1) * sizeof *ok);
        size_t nm = 0, nk = 0, ns2 = 0;
        out->n_recipe_bad = 0;
        out->n_recipe_files = 0;
        for (i = 0; i < out->n_rows; i++) {
            const struct mb_val_row *r = &out->rows[i];
            if (!mb_validate__time_row(r))
                continue;
            sg[ns2++] = r->err_pct;
            if (r->layout_mismatch)
                mm[nm++] = r->err_pct;
            else
                ok[nk++] = r->err_pct;
            out->n_recipe_bad += r->recipe_bad > 0;
            out->n_recipe_files += r->recipe_file[0] != '\0';
        }
        qsort(sg, ns2, sizeof *sg, mb_validate__cmp_dbl);
        out->median_err_pct = ns2 == 0 ? NAN : (ns2 % 2) ? sg[ns2 / 2] : 0.5 * (sg[ns2 / 2 - 1] + sg[ns2 / 2]);
        out->n_layout_mismatch = nm;
        mb_validate_stats(mm, nm, &out->mape_layout_mismatch_pct, NULL, NULL);
        mb_validate_stats(ok, nk, &out->mape_layout_ok_pct, NULL, NULL);
        mb_free(sg);
        mb_free(mm);
        mb_free(ok);
    }

    /* memory: verdicts against what ran, peak memory on the rows that ran */
    {
        double *me = mb_malloc((out->n_predicted ? out->n_predicted : 1) * sizeof *me);
        size_t nme = 0;
        out->n_ran = out->n_ran_pred_oom = out->n_ran_pred_at_risk = out->n_mem_oom_later = 0;
        out->n_reported_oom = out->n_reported_oom_pred_fits = 0;
        out->n_reported_oom_pred_at_risk = out->n_reported_oom_pred_oom = 0;
        for (i = 0; i < out->n_rows; i++) {
            const struct mb_val_row *r = &out->rows[i];
            if (r->skipped)
                continue;
            if (mb_validate__mem_in_mape(r)) {
                me[nme++] = r->mem_err_pct;
                out->n_mem_oom_later += (size_t)r->reported_oom;
            }
            if (r->reported_oom) {
                out->n_reported_oom++;
                out->n_reported_oom_pred_fits += r->verdict == MB_MEM_FITS;
                out->n_reported_oom_pred_at_risk += r->verdict == MB_MEM_AT_RISK;
                out->n_reported_oom_pred_oom += r->verdict == MB_MEM_OOM;
            } else {
                out->n_ran++;
                out->n_ran_pred_oom += r->verdict == MB_MEM_OOM;
                out->n_ran_pred_at_risk += r->verdict == MB_MEM_AT_RISK;
            }
        }
        out->n_mem = nme;
        mb_validate_stats(me, nme, &out->mape_mem_pct, NULL, NULL);
        qsort(me, nme, sizeof *me, mb_validate__cmp_dbl);
        out->median_mem_err_pct = nme == 0 ? NAN : (nme % 2) ? me[nme / 2] : 0.5 * (me[nme / 2 - 1] + me[nme / 2]);
        mb_free(me);
    }

    qsort(why, ns, sizeof *why, mb_validate__cmp_str_ptr);
    out->reasons = mb_malloc((ns ? ns : 1) * sizeof *out->reasons);
    out->n_reasons = 0;
    for (i = 0; i < ns;) {
        size_t j = i;
        while (j < ns && !strcmp(why[j], why[i]))
            j++;
        mb_validate__copy_str(out->reasons[out->n_reasons].reason, sizeof out->reasons[0].reason, why[i]);
        out->reasons[out->n_reasons].count = j - i;
        out->n_reasons++;
        i = j;
    }
    qsort(out->reasons, out->n_reasons, sizeof *out->reasons, mb_validate__cmp_reason);
    mb_free(why);
}

int mb_validate_csv(const char *path, struct mb_val_summary *out, struct mb_err *err)
{
    int rc;
    mb_validate_init(out);
    rc = mb_validate_add_csv(out, path, err);
    mb_validate_finish(out);
    return rc;
}

int mb_validate_scenario_files(const char *const *paths, size_t n, struct mb_val_summary *out,
                               struct mb_err *err)
{
    size_t i;
    int rc = 0;
    mb_validate_init(out);
    for (i = 0; i < n && rc == 0; i++)
        rc = mb_validate_add_scenario(out, paths[i], err);
    mb_validate_finish(out);
    return rc;
}

void mb_validate_free(struct mb_val_summary *s)
{
    if (!s)
        return;
    mb_validate__release_cache(s);
    mb_validate_recipes_free(s);
    struct mb_val__state *st = s->state;
    for (size_t k = 0; st && k < st->n_pending; k++) { /* scenario rows never simulated (an error came first) */
        mb_scenario_free(&st->pending[k].s);
        mb_free(st->pending[k].head);
        mb_free(st->pending[k].tail);
    }
    if (st) {
        mb_free(st->pending);
        mb_free(st->ids);
    }
    mb_free(st);
    mb_free(s->by_system);
    mb_free(s->by_model);
    mb_free(s->by_metric);
    mb_free(s->by_flops_conv);
    mb_free(s->reasons);
    mb_free(s->rows);
    mb_validate_init(s);
}

/* ------------------------------------------------------------------ */
