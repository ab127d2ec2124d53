/*
 * sweep_out.c -- a sweep's TSV and JSON written row by row, and its text
 * summary (sweep_out.h, docs/sweep.md).
 *
 * The JSON object is written in pieces that add up to jansson's dump of the
 * whole object: the keys before `rows` are dumped as one object whose last
 * key is an empty `rows` array, cut before the `[]`; each row is dumped alone
 * and indented by the two levels it sits at; `top` and `pareto` are dumped as
 * an object whose opening brace is dropped. tests/unit/test_cli.c checks the
 * result against jansson's own dump of the parsed file.
 */
#include "sweep_out.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MB_SWOUT_JSON_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(6))

static void mb_cli__print_values(const struct mb_sweep *sw, size_t idx, FILE *fp)
{
    for (int a = 0; a < sw->n_axes; a++)
        fprintf(fp, "%s%s=%s", a ? " " : "", sw->axis[a].key, mb_sweep_value(sw, idx, a));
}

static void mb_cli__print_row_line(const struct mb_sweep *sw, const struct mb_sweep_row *r, FILE *fp)
{
    fprintf(fp, "%7zu  %9.1f  %8.1f  %5.1f%%  %8.3f  %7.1f  ", r->index, r->tokens_per_s_per_gpu,
            r->model_tflops_per_gpu, 100.0 * r->mfu, r->step_time_s, r->peak_memory_gib);
    mb_cli__print_values(sw, r->index, fp);
    fprintf(fp, "\n");
}

struct reason_group {
    const char *reason;
    size_t count, example;
};

static int mb_cli__by_count(const void *a, const void *b)
{
    const struct reason_group *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->example < y->example ? -1 : x->example > y->example;
}

void mb_swout_summary(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, size_t total, int top,
                      FILE *fp)
{
    size_t ok = 0, invalid = 0, failed = 0, oom = 0, screened = 0, screened_mem = 0;
    for (size_t i = 0; i < n; i++) {
        screened += rows[i].status == MB_SWEEP_SCREENED;
        /* mb_sweep_screen's reason for a memory bound above capacity */
        screened_mem += rows[i].status == MB_SWEEP_SCREENED &&
                        !strncmp(rows[i].reason, "screened out: out of memory", 27);
        ok += rows[i].status == MB_SWEEP_OK;
        invalid += rows[i].status == MB_SWEEP_INVALID;
        failed += rows[i].status == MB_SWEEP_FAILED;
        oom += rows[i].status == MB_SWEEP_OK && rows[i].oom;
    }
    fprintf(fp, "sweep of %s: %zu %s", sw->base.name, total, mb_plural((long long)total, "configuration", "configurations"));
    if (n != total)
        fprintf(fp, " (%zu in this shard)", n);
    fprintf(fp, "; %zu simulated (%zu fit, %zu out of memory), %zu invalid, %zu failed", ok, ok - oom, oom,
            invalid, failed);
    if (screened)
        fprintf(fp, ", %zu screened out (%zu by a throughput bound below the best simulated ones, %zu out of memory by "
                    "the memory bound)",
                screened, screened - screened_mem, screened_mem);
    fprintf(fp, "\n");
    for (int a = 0; a < sw->n_axes; a++) {
        fprintf(fp, "  %s:", sw->axis[a].key);
        for (int k = 0; k < sw->axis[a].n; k++)
            fprintf(fp, " %s", sw->axis[a].val[k]);
        fprintf(fp, "\n");
    }

    if (invalid + failed) {
        struct reason_group *g = calloc(invalid + failed, sizeof *g);
        size_t ng = 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].status == MB_SWEEP_OK || rows[i].status == MB_SWEEP_SCREENED)
                continue;
            size_t k = 0;
            while (k < ng && strcmp(g[k].reason, rows[i].reason))
                k++;
            if (k == ng)
                g[ng++] = (struct reason_group){rows[i].reason, 0, rows[i].index};
            g[k].count++;
        }
        qsort(g, ng, sizeof *g, mb_cli__by_count);
        fprintf(fp, "\ninvalid or failed combinations, by reason (every one is a row of --tsv/--json):\n");
        const size_t shown = 25;
        for (size_t k = 0; k < ng && k < shown; k++) {
            fprintf(fp, "  %5zu x %s\n          e.g. config %zu: ", g[k].count, g[k].reason, g[k].example);
            mb_cli__print_values(sw, g[k].example, fp);
            fprintf(fp, "\n");
        }
        if (ng > shown)
            fprintf(fp, "  ... %zu more reasons\n", ng - shown);
        free(g);
    }

    size_t *order = calloc(n ? n : 1, sizeof *order);
    size_t m = mb_sweep_rank(rows, n, order);
    fprintf(fp, "\ntop %d %s that fit (of %zu):\n", top, mb_plural(top, "configuration", "configurations"), m);
    if (m) {
        fprintf(fp, "   rank   config  tok/s/GPU  TFLOP/s    MFU    step s  peak GiB  values\n");
        for (size_t i = 0; i < m && i < (size_t)top; i++) {
            fprintf(fp, "  %5zu", i + 1);
            mb_cli__print_row_line(sw, &rows[order[i]], fp);
        }
    } else {
        fprintf(fp, "  none\n");
    }
    size_t f = mb_sweep_pareto(rows, n, order);
    fprintf(fp, "\nthroughput-vs-memory Pareto front (%zu %s, memory ascending):\n", f,
            mb_plural((long long)f, "configuration", "configurations"));
    if (f) {
        fprintf(fp, "           config  tok/s/GPU  TFLOP/s    MFU    step s  peak GiB  values\n");
        for (size_t i = 0; i < f; i++) {
            fprintf(fp, "       ");
            mb_cli__print_row_line(sw, &rows[order[i]], fp);
        }
    }
    free(order);
}

static json_t *mb_cli__row_json(const struct mb_sweep *sw, const struct mb_sweep_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "config", json_integer((json_int_t)r->index));
    json_t *v = json_object();
    for (int a = 0; a < sw->n_axes; a++)
        json_object_set_new(v, sw->axis[a].key, json_string(mb_sweep_value(sw, r->index, a)));
    json_object_set_new(o, "values", v);
    json_object_set_new(o, "status",
                        json_string(mb_sweep_status_name(r->status)));
    if (r->status != MB_SWEEP_OK) {
        json_object_set_new(o, "reason", json_string(r->reason));
        return o;
    }
    json_object_set_new(o, "step_time_s", json_real(r->step_time_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(r->tokens_per_s_per_gpu));
    json_object_set_new(o, "model_tflops_per_gpu", json_real(r->model_tflops_per_gpu));
    json_object_set_new(o, "mfu", json_real(r->mfu));
    json_object_set_new(o, "peak_memory_gib", json_real(r->peak_memory_gib));
    json_object_set_new(o, "reserved_memory_gib", json_real(r->reserved_memory_gib));
    json_object_set_new(o, "capacity_gib", json_real(r->capacity_gib));
    json_object_set_new(o, "oom", json_boolean(r->oom));
    json_object_set_new(o, "dp", json_integer(r->dp));
    json_object_set_new(o, "microbatches", json_integer(r->microbatches));
    json_t *top = json_array();
    for (int k = 0; k < MB_SWEEP_TOP; k++)
        if (r->top_cat[k] >= 0) {
            json_t *t = json_object();
            json_object_set_new(t, "term", json_string(mb_cat_name((enum mb_cat)r->top_cat[k])));
            json_object_set_new(t, "seconds", json_real(r->top_s[k]));
            json_array_append_new(top, t);
        }
    json_object_set_new(o, "top_breakdown", top);
    return o;
}


/* s without its last `cut` characters. */
static void mb_cli__put_cut(FILE *fp, const char *s, size_t cut)
{
    size_t n = strlen(s);
    fwrite(s, 1, n > cut ? n - cut : 0, fp);
}

static void mb_cli__json_head(const struct mb_sweep *sw, size_t shard, size_t nshards, FILE *fp)
{
    json_t *o = json_object();
    json_object_set_new(o, "scenario", json_string(sw->base.name));
    json_object_set_new(o, "configurations", json_integer((json_int_t)mb_sweep_size(sw)));
    json_t *sh = json_object();
    json_object_set_new(sh, "index", json_integer((json_int_t)shard));
    json_object_set_new(sh, "count", json_integer((json_int_t)nshards));
    json_object_set_new(o, "shard", sh);
    json_t *axes = json_array();
    for (int a = 0; a < sw->n_axes; a++) {
        json_t *ax = json_object(), *vals = json_array();
        json_object_set_new(ax, "key", json_string(sw->axis[a].key));
        for (int k = 0; k < sw->axis[a].n; k++)
            json_array_append_new(vals, json_string(sw->axis[a].val[k]));
        json_object_set_new(ax, "values", vals);
        json_array_append_new(axes, ax);
    }
    json_object_set_new(o, "axes", axes);
    json_object_set_new(o, "rows", json_array());
    char *s = json_dumps(o, MB_SWOUT_JSON_FLAGS);
    mb_cli__put_cut(fp, s, strlen("[]\n}")); /* ... "rows": */
    free(s);
    json_decref(o);
}

int mb_swout_open(struct mb_swout *o, const struct mb_sweep *sw, const struct mb_sweep_prov *prov,
                  const struct mb_swout_paths *paths, int header, size_t shard, size_t nshards)
{
    struct mb_err err;
    memset(o, 0, sizeof *o);
    o->sw = sw;
    o->header = header;
    mb_err_clear(&err);
    if (paths->tsv && mb_outfile_open(&o->tsv_out, paths->tsv, paths->tsv_may_replace, &err)) {
        mb_cli_print_err(&err);
        return -1;
    }
    if (paths->json && mb_outfile_open(&o->json_out, paths->json, NULL, &err)) {
        mb_cli_print_err(&err);
        if (paths->tsv)
            mb_outfile_abort(&o->tsv_out);
        return -1;
    }
    o->tsv = paths->tsv ? o->tsv_out.fp : NULL;
    o->json = paths->json ? o->json_out.fp : NULL;
    if (o->tsv) {
        mb_sweep_write_prov(prov, o->tsv);
        mb_sweep_write_tsv(sw, NULL, 0, header, o->tsv);
        o->failed |= fflush(o->tsv) != 0;
    }
    if (o->json) {
        mb_cli__json_head(sw, shard, nshards, o->json);
        o->failed |= fflush(o->json) != 0;
    }
    return 0;
}

int mb_swout_publish(struct mb_swout *o)
{
    struct mb_err err;
    mb_err_clear(&err);
    if (!o->tsv || o->published)
        return 0;
    o->published = 1;
    if (mb_outfile_publish(&o->tsv_out, &err)) {
        mb_cli_print_err(&err);
        o->failed = 1;
        return -1;
    }
    return 0;
}

void mb_swout_abort(struct mb_swout *o)
{
    if (o->tsv)
        mb_outfile_abort(&o->tsv_out);
    if (o->json)
        mb_outfile_abort(&o->json_out);
    o->tsv = o->json = NULL;
}

void mb_swout_row(struct mb_swout *o, const struct mb_sweep_row *r)
{
    if (o->tsv)
        mb_sweep_write_tsv(o->sw, r, 1, 0, o->tsv);
    if (o->json) {
        json_t *j = mb_cli__row_json(o->sw, r);
        char *s = json_dumps(j, MB_SWOUT_JSON_FLAGS);
        fputs(o->json_rows++ ? ",\n    " : "[\n    ", o->json);
        for (const char *p = s; *p; p++) /* two levels deeper than a top-level dump */
            if (*p == '\n')
                fputs("\n    ", o->json);
            else
                fputc(*p, o->json);
        free(s);
        json_decref(j);
    }
}

void mb_swout_flush(struct mb_swout *o)
{
    if (o->tsv)
        o->failed |= fflush(o->tsv) != 0;
    if (o->json)
        o->failed |= fflush(o->json) != 0;
}

static void mb_cli__json_tail(const struct mb_sweep_row *rows, size_t n, int top, int complete, FILE *fp)
{
    size_t *order = calloc(n ? n : 1, sizeof *order);
    json_t *o = json_object(), *ranked = json_array(), *front = json_array();
    size_t m = mb_sweep_rank(rows, n, order);
    for (size_t i = 0; i < m && i < (size_t)top; i++)
        json_array_append_new(ranked, json_integer((json_int_t)rows[order[i]].index));
    size_t f = mb_sweep_pareto(rows, n, order);
    for (size_t i = 0; i < f; i++)
        json_array_append_new(front, json_integer((json_int_t)rows[order[i]].index));
    json_object_set_new(o, "top", ranked);
    json_object_set_new(o, "pareto", front);
    if (!complete)
        json_object_set_new(o, "interrupted", json_true());
    char *s = json_dumps(o, MB_SWOUT_JSON_FLAGS);
    fputc(',', fp);
    fputs(s + 1, fp); /* without its opening brace */
    free(s);
    json_decref(o);
    free(order);
}

int mb_swout_close(struct mb_swout *o, const struct mb_sweep_row *rows, size_t n, int top, int complete)
{
    struct mb_err err;
    int bad = 0;
    if (o->tsv) {
        mb_err_clear(&err);
        /* renamed over its file unless a write failed (the old file then stays as it was) */
        if (mb_outfile_commit(&o->tsv_out, &err)) {
            mb_cli_print_err(&err);
            bad = 1;
        }
    }
    if (o->json) {
        fputs(o->json_rows ? "\n  ]" : "[]", o->json);
        mb_cli__json_tail(rows, n, top, complete, o->json);
        if (o->json == stdout)
            fputc('\n', o->json);
        mb_err_clear(&err);
        if (mb_outfile_commit(&o->json_out, &err)) {
            mb_cli_print_err(&err);
            bad = 1;
        }
    }
    o->tsv = o->json = NULL;
    return bad ? -1 : 0;
}
