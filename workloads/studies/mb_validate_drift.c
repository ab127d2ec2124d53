/*
 * mb_validate_drift.c -- a validation run against a previous `mbsim validate
 * --json` output (mb_validate.h, "drift against a baseline"): which rows were
 * added, removed, newly skipped or predicted, how far each prediction
 * moved, and whose predicted memory or memory verdict changed, for CI
 * (docs/ci.md).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_input.h"
#include "mb_step.h"
#include "mb_validate.h"

/* `validate --json` writes 10 significant digits: values that agree to them are the same. */
#define SAME_REL 1e-9

/* One row of either side, reduced to what drift compares. */
struct side {
    const char *id;
    int occ;
    const char *metric; /* "" when none */
    int skipped;
    double measured, predicted, err_pct;
    const char *reason;
    int has_mem;         /* a predicted row with device_memory_gib */
    double mem_gib;
    const char *verdict; /* "" when none */
    int paired;
};

static const char *mb_validate__kind_name(enum mb_val_drift_kind k)
{
    static const char *const n[] = {"unchanged", "changed", "metric changed", "now skipped", "now predicted",
                                    "added", "removed"};
    return n[k];
}

/* Occurrence numbers: the k-th row with the same id gets k. O(n^2), fine for thousands of rows. */
static void mb_validate__number(struct side *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        v[i].occ = 1;
        for (size_t j = 0; j < i; j++)
            v[i].occ += !strcmp(v[i].id, v[j].id);
    }
}

static int mb_validate__num_field(json_t *o, const char *key, double *out)
{
    json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) {
        *out = 0;
        return 0;
    }
    if (!json_is_number(x))
        return -1;
    *out = json_number_value(x);
    return 0;
}

/* A row's predicted memory and verdict, both or neither (a baseline from before mbsim predicted memory
 * has neither). NULL, or what is wrong with them. */
static const char *mb_validate__read_memory(json_t *o, struct side *v)
{
    json_t *gib = json_object_get(o, "device_memory_gib"), *verdict = json_object_get(o, "memory_verdict");
    v->verdict = "";
    if (!gib && !verdict)
        return NULL;
    if (!gib || !verdict)
        return gib ? "'device_memory_gib' without 'memory_verdict'" : "'memory_verdict' without 'device_memory_gib'";
    if (!json_is_number(gib) || !(json_number_value(gib) > 0))
        return "'device_memory_gib' is not a positive number";
    const char *t = json_is_string(verdict) ? json_string_value(verdict) : "";
    if (strcmp(t, mb_memory_verdict_name(MB_MEM_FITS)) && strcmp(t, mb_memory_verdict_name(MB_MEM_AT_RISK)) &&
        strcmp(t, mb_memory_verdict_name(MB_MEM_OOM)))
        return "'memory_verdict' is not one of \"fits\", \"at risk\", \"OOM\"";
    v->verdict = t;
    v->has_mem = 1;
    v->mem_gib = json_number_value(gib);
    return NULL;
}

/* Free v after the error (which may quote its strings) is set. */
static int mb_validate__fail(struct side *v, int rc)
{
    mb_free(v);
    return rc;
}

/* The baseline's rows; -1 with err set when the file is not a validate --json output. */
static int mb_validate__read_baseline(json_t *root, const char *path, struct side **out, size_t *n, double *mape,
                         struct mb_err *err)
{
    json_t *rows = json_is_object(root) ? json_object_get(root, "rows") : NULL;
    if (!json_is_array(rows))
        return mb_err_set(err, path, 0, 0, "not an mbsim validate --json output (no 'rows' array)");
    json_t *mape_j = json_object_get(root, "mape_pct");
    *mape = json_is_number(mape_j) ? json_number_value(mape_j) : NAN;
    *n = json_array_size(rows);
    struct side *v = mb_calloc(*n + 1, sizeof *v);
    for (size_t i = 0; i < *n; i++) {
        json_t *o = json_array_get(rows, i), *id = json_object_get(o, "id"), *met = json_object_get(o, "metric");
        if (!json_is_object(o))
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu]: expected an object", i));
        if (!json_is_string(id))
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu]: 'id' is not a string", i));
        v[i].id = json_string_value(id);
        if (met && !json_is_string(met))
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu] (id '%s'): 'metric' is not a string", i,
                                      v[i].id));
        v[i].metric = met ? json_string_value(met) : "";
        /* a memory-only row has no time to drift: compared as skipped */
        v[i].skipped =
            json_is_true(json_object_get(o, "skipped")) || json_is_true(json_object_get(o, "memory_only"));
        v[i].reason = json_is_string(json_object_get(o, "reason")) ? json_string_value(json_object_get(o, "reason")) : "";
        static const char *const keys[] = {"measured", "predicted", "err_pct"};
        double *dst[] = {&v[i].measured, &v[i].predicted, &v[i].err_pct};
        for (int k = 0; k < 3; k++)
            if (mb_validate__num_field(o, keys[k], dst[k]))
                return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu] (id '%s'): '%s' is not a number", i,
                                          v[i].id, keys[k]));
        if (!v[i].skipped && !json_is_number(json_object_get(o, "predicted")))
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu] (id '%s'): a row not skipped needs 'predicted'",
                                      i, v[i].id));
        if (!v[i].skipped && !(v[i].predicted > 0))
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu] (id '%s'): 'predicted' must be positive, got %g",
                                      i, v[i].id, v[i].predicted));
        const char *bad = mb_validate__read_memory(o, &v[i]);
        if (bad)
            return mb_validate__fail(v, mb_err_set(err, path, 0, 0, "rows[%zu] (id '%s'): %s", i, v[i].id, bad));
    }
    mb_validate__number(v, *n);
    *out = v;
    return 0;
}

static double mb_validate__absd(double x)
{
    return x < 0 ? -x : x;
}

static int mb_validate__cmp_rows(const void *a, const void *b)
{
    const struct mb_val_drift_row *x = a, *y = b;
    if (x->over != y->over)
        return y->over - x->over;
    if (mb_validate__absd(x->drift_pct) != mb_validate__absd(y->drift_pct))
        return mb_validate__absd(x->drift_pct) < mb_validate__absd(y->drift_pct) ? 1 : -1;
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    int c = strcmp(x->id, y->id);
    return c ? c : x->occurrence - y->occurrence;
}

static void mb_validate__set_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static int mb_validate__cmp_mem_rows(const void *a, const void *b)
{
    const struct mb_val_mem_drift_row *x = a, *y = b;
    if (x->over != y->over)
        return y->over - x->over;
    if (mb_validate__absd(x->drift_pct) != mb_validate__absd(y->drift_pct))
        return mb_validate__absd(x->drift_pct) < mb_validate__absd(y->drift_pct) ? 1 : -1;
    int c = strcmp(x->id, y->id);
    return c ? c : x->occurrence - y->occurrence;
}

/* A paired row's memory: a new mem_rows entry when its device memory or verdict moved. */
static void mb_validate__compare_memory(const struct side *a, const struct side *b, struct mb_val_drift *out)
{
    if (!a->has_mem || !b->has_mem)
        return;
    out->n_mem_compared++;
    int flip = strcmp(a->verdict, b->verdict) != 0;
    if (!flip && mb_validate__absd(b->mem_gib - a->mem_gib) <= SAME_REL * mb_validate__absd(a->mem_gib))
        return;
    struct mb_val_mem_drift_row m = {.occurrence = b->occ, .old_gib = a->mem_gib, .new_gib = b->mem_gib,
                                     .verdict_changed = flip};
    mb_validate__set_str(m.id, sizeof m.id, b->id);
    mb_validate__set_str(m.old_verdict, sizeof m.old_verdict, a->verdict);
    mb_validate__set_str(m.new_verdict, sizeof m.new_verdict, b->verdict);
    m.drift_pct = (b->mem_gib - a->mem_gib) / a->mem_gib * 100; /* a->mem_gib > 0 (read_memory) */
    m.over = flip || mb_validate__absd(m.drift_pct) > out->threshold_pct;
    if (mb_validate__absd(m.drift_pct) > out->max_abs_mem_drift_pct)
        out->max_abs_mem_drift_pct = mb_validate__absd(m.drift_pct);
    out->n_verdict_changed += (size_t)flip;
    out->n_mem_over += (size_t)m.over;
    out->mem_rows[out->n_mem++] = m;
}

int mb_validate_drift(const struct mb_val_summary *now, const char *baseline_path, double threshold_pct,
                      struct mb_val_drift *out, struct mb_err *err)
{
    memset(out, 0, sizeof *out);
    out->threshold_pct = threshold_pct;
    char *buf;
    size_t len;
    if (mb_input_read(baseline_path, "a baseline JSON", 0, &buf, &len, err))
        return -1;
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    mb_free(buf);
    if (!root)
        return mb_err_set(err, baseline_path, je.line > 0 ? je.line : 0, je.column > 0 ? je.column : 0,
                          "invalid JSON: %s", je.text);
    struct side *old = NULL;
    size_t n_old = 0;
    if (mb_validate__read_baseline(root, baseline_path, &old, &n_old, &out->old_mape_pct, err)) {
        json_decref(root);
        return -1;
    }
    size_t n_new = now->n_rows;
    struct side *nw = mb_calloc(n_new + 1, sizeof *nw);
    for (size_t i = 0; i < n_new; i++) {
        const struct mb_val_row *r = &now->rows[i];
        const char *why = r->mem_only ? "memory only (no measured time)" : r->reason;
        nw[i] = (struct side){r->id, 0, r->metric, r->skipped || r->mem_only, r->measured, r->predicted, r->err_pct,
                              why, !r->skipped, r->device_gib,
                              r->skipped ? "" : mb_memory_verdict_name((enum mb_mem_verdict)r->verdict), 0};
    }
    mb_validate__number(nw, n_new);
    out->n_old = n_old;
    out->n_new = n_new;
    out->new_mape_pct = now->n_predicted ? now->mape_pct : NAN;
    out->rows = mb_calloc(n_old + n_new + 1, sizeof *out->rows);
    out->mem_rows = mb_calloc(n_new + 1, sizeof *out->mem_rows);

    for (size_t i = 0; i < n_new; i++) {
        struct side *b = &nw[i], *a = NULL;
        for (size_t j = 0; j < n_old && !a; j++)
            if (!old[j].paired && old[j].occ == b->occ && !strcmp(old[j].id, b->id))
                a = &old[j];
        struct mb_val_drift_row d = {.occurrence = b->occ, .new_pred = b->skipped ? 0 : b->predicted,
                                     .new_err_pct = b->skipped ? 0 : b->err_pct};
        mb_validate__set_str(d.id, sizeof d.id, b->id);
        mb_validate__set_str(d.metric, sizeof d.metric, b->metric);
        if (!a) {
            d.kind = MB_DRIFT_ADDED;
        } else {
            a->paired = 1;
            d.old_pred = a->skipped ? 0 : a->predicted;
            d.old_err_pct = a->skipped ? 0 : a->err_pct;
            if (a->skipped && b->skipped) {
                d.kind = MB_DRIFT_SAME;
            } else if (b->skipped) {
                d.kind = MB_DRIFT_NOW_SKIPPED;
                d.over = 1;
                mb_validate__set_str(d.metric, sizeof d.metric, a->metric); /* the metric it was predicted on */
                mb_validate__set_str(d.reason, sizeof d.reason, b->reason);
            } else if (a->skipped) {
                d.kind = MB_DRIFT_NOW_PREDICTED;
            } else if (strcmp(a->metric, b->metric)) {
                d.kind = MB_DRIFT_METRIC;
            } else if (mb_validate__absd(b->predicted - a->predicted) <= SAME_REL * mb_validate__absd(a->predicted)) {
                d.kind = MB_DRIFT_SAME;
            } else {
                d.kind = MB_DRIFT_CHANGED;
                d.drift_pct = (b->predicted - a->predicted) / a->predicted * 100; /* > 0 (read_baseline) */
                d.over = mb_validate__absd(d.drift_pct) > threshold_pct;
                if (mb_validate__absd(d.drift_pct) > out->max_abs_drift_pct)
                    out->max_abs_drift_pct = mb_validate__absd(d.drift_pct);
            }
        }
        if (a)
            mb_validate__compare_memory(a, b, out);
        out->n_kind[d.kind]++;
        out->n_over += (size_t)d.over;
        if (d.kind != MB_DRIFT_SAME)
            out->rows[out->n++] = d;
    }
    for (size_t j = 0; j < n_old; j++)
        if (!old[j].paired) {
            struct mb_val_drift_row d = {.occurrence = old[j].occ, .kind = MB_DRIFT_REMOVED,
                                         .old_pred = old[j].skipped ? 0 : old[j].predicted,
                                         .old_err_pct = old[j].skipped ? 0 : old[j].err_pct};
            mb_validate__set_str(d.id, sizeof d.id, old[j].id);
            mb_validate__set_str(d.metric, sizeof d.metric, old[j].metric);
            out->n_kind[MB_DRIFT_REMOVED]++;
            out->rows[out->n++] = d;
        }
    qsort(out->rows, out->n, sizeof *out->rows, mb_validate__cmp_rows);
    qsort(out->mem_rows, out->n_mem, sizeof *out->mem_rows, mb_validate__cmp_mem_rows);
    mb_free(nw);
    mb_free(old);
    json_decref(root);
    return 0;
}

static void mb_validate__print_id(const char *row_id, int occurrence, FILE *fp)
{
    char id[200];
    if (occurrence > 1)
        snprintf(id, sizeof id, "%.150s (#%d)", row_id, occurrence);
    else
        snprintf(id, sizeof id, "%s", row_id);
    fprintf(fp, "  %-40s", id); /* a longer id overflows the column rather than lose its end */
}

/* The rows whose predicted memory moved: those past the threshold or with another verdict, then up to `top`. */
static void mb_validate__print_memory(const struct mb_val_drift *d, size_t top, FILE *fp)
{
    if (!d->n_mem_compared)
        return;
    fprintf(fp, "memory: %zu %s compared, %zu changed, %zu %s\n", d->n_mem_compared,
            mb_plural((long long)d->n_mem_compared, "row", "rows"), d->n_mem, d->n_verdict_changed,
            mb_plural((long long)d->n_verdict_changed, "verdict changed", "verdicts changed"));
    for (size_t i = 0; i < d->n_mem; i++) {
        const struct mb_val_mem_drift_row *m = &d->mem_rows[i];
        if (!m->over && i >= top)
            break;
        if (!i)
            fprintf(fp, "largest drifts of the predicted device memory (past %.2f %% or another verdict first):\n"
                        "  %-40s %12s %12s %9s  %s\n",
                    d->threshold_pct, "id", "baseline GiB", "now GiB", "drift %", "verdict then -> now");
        mb_validate__print_id(m->id, m->occurrence, fp);
        fprintf(fp, " %12.2f %12.2f %+9.2f  %s -> %s%s\n", m->old_gib, m->new_gib, m->drift_pct, m->old_verdict,
                m->new_verdict, m->over ? "  PAST THRESHOLD" : "");
    }
}

void mb_validate_drift_print(const struct mb_val_drift *d, const char *baseline_path, size_t top, FILE *fp)
{
    fprintf(fp, "\ndrift against %s (%zu %s then, %zu now):", baseline_path, d->n_old,
            mb_plural((long long)d->n_old, "row", "rows"), d->n_new);
    for (int k = MB_DRIFT_SAME; k <= MB_DRIFT_REMOVED; k++)
        fprintf(fp, "%s %zu %s", k ? "," : "", d->n_kind[k], mb_validate__kind_name((enum mb_val_drift_kind)k));
    fputc('\n', fp);
    if (isfinite(d->old_mape_pct) || isfinite(d->new_mape_pct)) {
        char then[32] = "n/a", now[32] = "n/a"; /* the baseline may have no summary, or nothing predicted */
        if (isfinite(d->old_mape_pct))
            snprintf(then, sizeof then, "%.2f %%", d->old_mape_pct);
        if (isfinite(d->new_mape_pct))
            snprintf(now, sizeof now, "%.2f %%", d->new_mape_pct);
        fprintf(fp, "MAPE %s then, %s now\n", then, now);
    }
    size_t shown = 0;
    for (size_t i = 0; i < d->n; i++) {
        const struct mb_val_drift_row *r = &d->rows[i];
        if (r->kind != MB_DRIFT_CHANGED || (!r->over && shown >= top))
            continue;
        if (!shown++)
            fprintf(fp, "largest drifts of the predictions (past %.2f %% first):\n  %-40s %-22s %12s %12s %9s %17s\n",
                    d->threshold_pct, "id", "metric", "baseline", "now", "drift %", "err % then -> now");
        mb_validate__print_id(r->id, r->occurrence, fp);
        fprintf(fp, " %-22s %12.4g %12.4g %+9.2f %+8.1f -> %+6.1f%s\n", r->metric, r->old_pred, r->new_pred,
                r->drift_pct, r->old_err_pct, r->new_err_pct, r->over ? "  PAST THRESHOLD" : "");
    }
    static const enum mb_val_drift_kind listed[] = {MB_DRIFT_NOW_SKIPPED, MB_DRIFT_NOW_PREDICTED, MB_DRIFT_METRIC,
                                                    MB_DRIFT_ADDED, MB_DRIFT_REMOVED};
    for (size_t k = 0; k < sizeof listed / sizeof listed[0]; k++) {
        if (!d->n_kind[listed[k]])
            continue;
        fprintf(fp, "%s:\n", mb_validate__kind_name(listed[k]));
        size_t m = 0;
        for (size_t i = 0; i < d->n; i++) {
            const struct mb_val_drift_row *r = &d->rows[i];
            if (r->kind != listed[k])
                continue;
            if (++m > top && listed[k] != MB_DRIFT_NOW_SKIPPED) {
                fprintf(fp, "  ... and %zu more\n", d->n_kind[listed[k]] - top);
                break;
            }
            mb_validate__print_id(r->id, r->occurrence, fp);
            if (r->kind == MB_DRIFT_NOW_SKIPPED)
                fprintf(fp, " was %.4g (%s), now skipped: %s\n", r->old_pred, r->metric, r->reason);
            else if (r->kind == MB_DRIFT_REMOVED || r->kind == MB_DRIFT_ADDED)
                fprintf(fp, " %s\n", r->metric[0] ? r->metric : "(no metric)");
            else
                fprintf(fp, " %s: %.4g, err %+.1f %%\n", r->metric, r->new_pred, r->new_err_pct);
        }
    }
    mb_validate__print_memory(d, top, fp);
    if (d->n_over)
    {
        size_t moved = d->n_over - d->n_kind[MB_DRIFT_NOW_SKIPPED], now_skipped = d->n_kind[MB_DRIFT_NOW_SKIPPED];
        fprintf(fp, "drift: %zu %s past %.2f %% (%zu %s more, %zu %s now skipped)\n", d->n_over,
                mb_plural((long long)d->n_over, "row", "rows"), d->threshold_pct, moved,
                mb_plural((long long)moved, "prediction moved", "predictions moved"), now_skipped,
                mb_plural((long long)now_skipped, "row", "rows"));
    }
    else
        fprintf(fp, "drift: none past %.2f %% (largest %.2f %%)\n", d->threshold_pct, d->max_abs_drift_pct);
    if (!d->n_mem_compared)
        return;
    if (d->n_mem_over)
        fprintf(fp, "memory drift: %zu %s past %.2f %% or with another verdict (%zu %s)\n", d->n_mem_over,
                mb_plural((long long)d->n_mem_over, "row", "rows"), d->threshold_pct, d->n_verdict_changed,
                mb_plural((long long)d->n_verdict_changed, "verdict changed", "verdicts changed"));
    else
        fprintf(fp, "memory drift: none past %.2f %% (largest %.2f %%), no verdict changed\n", d->threshold_pct,
                d->max_abs_mem_drift_pct);
}

void mb_validate_drift_free(struct mb_val_drift *d)
{
    if (!d)
        return;
    mb_free(d->rows);
    mb_free(d->mem_rows);
    memset(d, 0, sizeof *d);
}
