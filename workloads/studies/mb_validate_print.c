/*
 * mb_validate_print.c -- the validation report as text and as JSON.
 */
#include "validate_int.h"

#include <jansson.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* output                                                             */
/* ------------------------------------------------------------------ */

static const char *mb_validate__metric_short(const char *m)
{
    if (!strcmp(m, MB_VAL_TOKENS))
        return "tok/s/gpu";
    if (!strcmp(m, MB_VAL_STEP))
        return "step_s";
    if (!strcmp(m, MB_VAL_TFLOPS))
        return "tflops/gpu";
    return m;
}

static void mb_validate__print_groups(FILE *fp, const char *title, const struct mb_val_group *g, size_t n)
{
    size_t i;
    fprintf(fp, "MAPE by %s:\n", title);
    for (i = 0; i < n; i++)
        fprintf(fp, "  %-28s %4zu row%s %7.1f %%\n", g[i].name, g[i].n, g[i].n == 1 ? " " : "s",
                g[i].mape_pct);
}

/* An id cut to 40 characters for the text tables (longer ones end in "..."). */
static void mb_validate__row_id40(char *id, size_t n, const char *full)
{
    if (strlen(full) > 40)
        snprintf(id, n, "%.37s...", full);
    else
        mb_validate__copy_str(id, n, full);
}

/* Is a row a predicted OOM that ran? (listed with its largest memory terms) */
static int mb_validate__pred_oom_ran(const struct mb_val_row *r)
{
    return !r->skipped && !r->reported_oom && r->verdict == MB_MEM_OOM;
}

/* The memory part of the text summary: peak-memory MAPE, OOM verdicts against
 * what ran, and the predicted-OOM rows that ran with their largest terms (ids
 * whole: the rows of one card differ only at the end). */
static void mb_validate__print_memory_summary(const struct mb_val_summary *s, FILE *fp)
{
    if (s->n_mem && s->n_mem_oom_later)
        fprintf(fp, "peak memory: %zu row%s compared (%zu reported OOM after the first iteration their peak is of), "
                "MAPE %.2f %%, signed median error %+.2f %%\n", s->n_mem, s->n_mem == 1 ? "" : "s", s->n_mem_oom_later,
                s->mape_mem_pct, s->median_mem_err_pct);
    else if (s->n_mem)
        fprintf(fp, "peak memory: %zu row%s that ran compared, MAPE %.2f %%, signed median error %+.2f %%\n", s->n_mem,
                s->n_mem == 1 ? "" : "s", s->mape_mem_pct, s->median_mem_err_pct);
    else
        fprintf(fp, "peak memory: no row that ran states a measured peak\n");
    fprintf(fp, "memory verdicts: %zu row%s ran: %zu predicted OOM, %zu at risk; %zu reported OOM: %zu predicted to fit, "
            "%zu at risk, %zu OOM\n",
            s->n_ran, s->n_ran == 1 ? "" : "s", s->n_ran_pred_oom, s->n_ran_pred_at_risk, s->n_reported_oom,
            s->n_reported_oom_pred_fits, s->n_reported_oom_pred_at_risk, s->n_reported_oom_pred_oom);
    if (!s->n_ran_pred_oom)
        return;
    fprintf(fp, "predicted OOM but ran (device memory / capacity; the largest terms at the peak):\n");
    for (size_t i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (!mb_validate__pred_oom_ran(r))
            continue;
        fprintf(fp, "  %-56s %6.1f / %5.1f GiB: %s\n", r->id, r->device_gib, r->capacity_gib, r->mem_terms);
    }
}

/* The rows reported out of memory, each with its verdict and device memory. */
static void mb_validate__print_reported_oom(const struct mb_val_summary *s, FILE *fp)
{
    int any = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (r->skipped || !r->reported_oom)
            continue;
        if (!any++)
            fprintf(fp, "\n%-56s %-8s %12s %12s\n", "reported OOM", "verdict", "device GiB", "capacity");
        fprintf(fp, "%-56s %-8s %12.2f %12.2f\n", r->id, mb_memory_verdict_name((enum mb_mem_verdict)r->verdict),
                r->device_gib, r->capacity_gib);
    }
}

void mb_validate_print_text(const struct mb_val_summary *s, FILE *fp)
{
    size_t i;
    char id[48];

    fprintf(fp, "%-40s %-24s %-12s %-10s %12s %12s %8s\n", "id", "model", "system", "metric", "measured",
            "predicted", "err%");
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (!mb_validate__time_row(r))
            continue;
        mb_validate__row_id40(id, sizeof id, r->id);
        /* the note is cut at 200 characters here; --json has it whole */
        fprintf(fp, "%-40s %-24.24s %-12.12s %-10s %12.6g %12.6g %+8.1f%s%.200s%s\n", id, r->model, r->system,
                mb_validate__metric_short(r->metric), r->measured, r->predicted, r->err_pct, r->note[0] ? "  # " : "",
                r->note, strlen(r->note) > 200 ? "..." : "");
    }
    int any_mem = 0;
    for (i = 0; i < s->n_rows; i++)
        any_mem |= s->rows[i].mem_compared;
    if (any_mem) {
        fprintf(fp, "\n%-56s %-10s %-8s %12s %12s %8s\n", "memory (peak per GPU, GiB)", "kind", "from", "measured",
                "predicted", "err%");
        for (i = 0; i < s->n_rows; i++) {
            const struct mb_val_row *r = &s->rows[i];
            if (!r->mem_compared)
                continue;
            fprintf(fp, "%-56s %-10s %-8s %12.2f %12.2f %+8.1f%s%s\n", r->id, r->mem_kind, r->mem_from,
                    r->meas_mem_gib, r->pred_mem_gib, r->mem_err_pct,
                    r->mem_first_iter ? "  # after iteration 1 (no Adam moments in its passes)" : "",
                    !r->reported_oom    ? ""
                    : mb_validate__mem_in_mape(r) ? "; reported OOM later"
                                     : "  # reported OOM: not in the memory MAPE");
        }
    }
    mb_validate__print_reported_oom(s, fp);
    fprintf(fp, "\npredicted rows: %zu of %zu\n", s->n_predicted, s->n_rows);
    fprintf(fp, "skipped rows: %zu\n", s->n_skipped);
    for (i = 0; i < s->n_reasons; i++)
        fprintf(fp, "  %4zu  %s\n", s->reasons[i].count, s->reasons[i].reason);
    if (s->n_predicted == 0) {
        fprintf(fp, "MAPE: n/a (no row predicted)\n");
        return;
    }
    if (s->max_ape_row >= s->n_rows) { /* memory-only rows alone: no time to compare */
        fprintf(fp, "MAPE: n/a (no row with a measured time)\n");
        mb_validate__print_memory_summary(s, fp);
        return;
    }
    fprintf(fp, "MAPE: %.2f %%   median APE: %.2f %%   max APE: %.2f %% (%s)\n", s->mape_pct, s->median_ape_pct,
            s->max_ape_pct, s->rows[s->max_ape_row].id);
    fprintf(fp, "signed median error: %+.2f %%\n", s->median_err_pct);
    if (s->n_layout_mismatch)
        fprintf(fp, "LAYOUT-MISMATCH rows (recipe layout != published): %zu, MAPE %.2f %% (other rows %.2f %%)\n",
                s->n_layout_mismatch, s->mape_layout_mismatch_pct, s->mape_layout_ok_pct);
    if (s->n_recipe_bad)
        fprintf(fp, "rows with an unparseable recipe mb_validate__cell (named in the note): %zu\n", s->n_recipe_bad);
    if (s->n_recipe_files)
        fprintf(fp, "rows simulated from a recipe file (--recipes; named in the note): %zu\n", s->n_recipe_files);
    mb_validate__print_memory_summary(s, fp);
    if (s->n_by_flops_conv)
        mb_validate__print_groups(fp, "FLOP convention (TFLOP/s-only rows compared in tokens/s)", s->by_flops_conv,
                     s->n_by_flops_conv);
    mb_validate__print_groups(fp, "system", s->by_system, s->n_by_system);
    mb_validate__print_groups(fp, "model", s->by_model, s->n_by_model);
    mb_validate__print_groups(fp, "metric", s->by_metric, s->n_by_metric);
}

/* json_real that maps NaN/inf to null (JSON has no NaN). */
static json_t *mb_validate__jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *mb_validate__group_obj(const struct mb_val_group *g, size_t n)
{
    json_t *o = json_object();
    size_t i;
    for (i = 0; i < n; i++)
        json_object_set_new(o, g[i].name, mb_validate__jnum(g[i].mape_pct));
    return o;
}

int mb_validate_print_json(const struct mb_val_summary *s, FILE *fp)
{
    json_t *root = json_object(), *rows = json_array(), *why = json_object();
    size_t i;
    int rc;

    json_object_set_new(root, "n_rows", json_integer((json_int_t)s->n_rows));
    json_object_set_new(root, "n_predicted", json_integer((json_int_t)s->n_predicted));
    json_object_set_new(root, "n_skipped", json_integer((json_int_t)s->n_skipped));
    json_object_set_new(root, "mape_pct", mb_validate__jnum(s->mape_pct));
    json_object_set_new(root, "median_ape_pct", mb_validate__jnum(s->median_ape_pct));
    json_object_set_new(root, "max_ape_pct", mb_validate__jnum(s->max_ape_pct));
    json_object_set_new(root, "median_err_pct", mb_validate__jnum(s->median_err_pct));
    json_object_set_new(root, "n_layout_mismatch", json_integer((json_int_t)s->n_layout_mismatch));
    json_object_set_new(root, "mape_layout_mismatch_pct", mb_validate__jnum(s->mape_layout_mismatch_pct));
    json_object_set_new(root, "mape_layout_ok_pct", mb_validate__jnum(s->mape_layout_ok_pct));
    json_object_set_new(root, "n_recipe_bad", json_integer((json_int_t)s->n_recipe_bad));
    json_object_set_new(root, "n_recipe_files", json_integer((json_int_t)s->n_recipe_files));
    json_object_set_new(root, "mape_by_system", mb_validate__group_obj(s->by_system, s->n_by_system));
    json_object_set_new(root, "mape_by_model", mb_validate__group_obj(s->by_model, s->n_by_model));
    json_object_set_new(root, "mape_by_metric", mb_validate__group_obj(s->by_metric, s->n_by_metric));
    json_object_set_new(root, "mape_by_flops_convention", mb_validate__group_obj(s->by_flops_conv, s->n_by_flops_conv));
    json_object_set_new(root, "n_memory", json_integer((json_int_t)s->n_mem));
    json_object_set_new(root, "n_memory_reported_oom_later", json_integer((json_int_t)s->n_mem_oom_later));
    json_object_set_new(root, "memory_mape_pct", mb_validate__jnum(s->mape_mem_pct));
    json_object_set_new(root, "memory_median_err_pct", mb_validate__jnum(s->median_mem_err_pct));
    json_object_set_new(root, "n_ran", json_integer((json_int_t)s->n_ran));
    json_object_set_new(root, "n_ran_predicted_oom", json_integer((json_int_t)s->n_ran_pred_oom));
    json_object_set_new(root, "n_ran_predicted_at_risk", json_integer((json_int_t)s->n_ran_pred_at_risk));
    json_object_set_new(root, "n_reported_oom", json_integer((json_int_t)s->n_reported_oom));
    json_object_set_new(root, "n_reported_oom_predicted_fits", json_integer((json_int_t)s->n_reported_oom_pred_fits));
    json_object_set_new(root, "n_reported_oom_predicted_at_risk",
                        json_integer((json_int_t)s->n_reported_oom_pred_at_risk));
    json_object_set_new(root, "n_reported_oom_predicted_oom", json_integer((json_int_t)s->n_reported_oom_pred_oom));
    json_t *oomr = json_array();
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (!mb_validate__pred_oom_ran(r))
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "id", json_string(r->id));
        json_object_set_new(e, "device_memory_gib", mb_validate__jnum(r->device_gib));
        json_object_set_new(e, "memory_capacity_gib", mb_validate__jnum(r->capacity_gib));
        json_object_set_new(e, "memory_terms", json_string(r->mem_terms));
        json_array_append_new(oomr, e);
    }
    json_object_set_new(root, "predicted_oom_ran", oomr);
    for (i = 0; i < s->n_reasons; i++)
        json_object_set_new(why, s->reasons[i].reason, json_integer((json_int_t)s->reasons[i].count));
    json_object_set_new(root, "skipped_by_reason", why);
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(r->id));
        json_object_set_new(o, "model", json_string(r->model));
        json_object_set_new(o, "system", json_string(r->system));
        if (r->line > 0)
            json_object_set_new(o, "line", json_integer(r->line));
        if (r->metric[0]) {
            json_object_set_new(o, "metric", json_string(r->metric));
            json_object_set_new(o, "measured", mb_validate__jnum(r->measured));
        }
        if (r->skipped) {
            json_object_set_new(o, "skipped", json_true());
            json_object_set_new(o, "reason", json_string(r->reason));
        } else {
            if (r->mem_only) {
                json_object_set_new(o, "memory_only", json_true());
            } else {
                json_object_set_new(o, "predicted", mb_validate__jnum(r->predicted));
                json_object_set_new(o, "err_pct", mb_validate__jnum(r->err_pct));
            }
            if (r->note[0])
                json_object_set_new(o, "note", json_string(r->note));
            if (r->flops_conv[0]) {
                json_object_set_new(o, "flops_convention", json_string(r->flops_conv));
                json_object_set_new(o, "measured_tflops", mb_validate__jnum(r->measured_tflops));
            }
            json_object_set_new(o, "memory_verdict", json_string(mb_memory_verdict_name((enum mb_mem_verdict)r->verdict)));
            json_object_set_new(o, "device_memory_gib", mb_validate__jnum(r->device_gib));
            json_object_set_new(o, "memory_capacity_gib", mb_validate__jnum(r->capacity_gib));
            json_object_set_new(o, "memory_terms", json_string(r->mem_terms));
        }
        if (r->reported_oom)
            json_object_set_new(o, "reported_oom", json_true());
        if (r->mem_from[0]) {
            json_object_set_new(o, "measured_memory_gib", mb_validate__jnum(r->meas_mem_gib));
            json_object_set_new(o, "memory_kind", json_string(r->mem_kind));
            json_object_set_new(o, "memory_from", json_string(r->mem_from));
            json_object_set_new(o, "memory_after_iteration", json_integer(r->mem_first_iter ? 1 : 0));
        }
        if (r->mem_compared) {
            json_object_set_new(o, "predicted_memory_gib", mb_validate__jnum(r->pred_mem_gib));
            json_object_set_new(o, "memory_err_pct", mb_validate__jnum(r->mem_err_pct));
        }
        if (r->layout_mismatch)
            json_object_set_new(o, "layout_mismatch", json_true());
        if (r->recipe_bad)
            json_object_set_new(o, "recipe_bad_cells", json_integer(r->recipe_bad));
        if (r->recipe_file[0])
            json_object_set_new(o, "recipe_file", json_string(r->recipe_file));
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "rows", rows);
    rc = json_dumpf(root, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (rc == 0 && fputc('\n', fp) == EOF)
        rc = -1;
    json_decref(root);
    return rc == 0 ? 0 : -1;
}
