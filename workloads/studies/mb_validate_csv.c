/*
 * mb_validate_csv.c -- the measured-runs CSV read with libcsv (quoted fields may hold commas, quotes
 * and newlines), one byte at a time so that every field's line:column is known for error
 * messages (the public CSV is ~150 kB, so this costs nothing measurable); its header and cells.
 */
#include "validate_int.h"

#include <csv.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const mb_val__colname[C_COUNT] = {
    "id", "model", "system", "gpus", "precision", "gbs", "mbs", "seq_len", "tp", "pp", "cp", "vp", "ep",
    "etp", "fsdp", "recompute", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "step_time_s",
};

/* ------------------------------------------------------------------ */
/* CSV                                                                */
/* ------------------------------------------------------------------ */

void mb_validate__csv_on_field(void *data, size_t len, void *vctx)
{
    struct mb_val__csv *c = vctx;
    struct mb_val__field *f;
    if (c->failed)
        return;
    if (c->nf == c->capf) {
        c->capf = c->capf ? 2 * c->capf : 32;
        c->f = mb_realloc(c->f, c->capf * sizeof *c->f);
    }
    f = &c->f[c->nf++];
    f->text = mb_malloc(len + 1);
    if (len)
        memcpy(f->text, data, len);
    f->text[len] = '\0';
    f->line = c->fline;
    f->col = c->fcol;
    /* the next field starts right after this delimiter */
    c->fline = c->line;
    c->fcol = c->col + 1;
}

/* Header names read by no column rule and not among those the public CSV carries for people. */
static int mb_validate__col_known(const char *name)
{
    static const char *const extra[] = {"notes", "source", "source_date", "recipe_source", "recipe_match",
                                        "peak_memory_gib", "peak_memory_kind"};
    for (int k = 0; k < C_COUNT; k++)
        if (!strcmp(name, mb_val__colname[k]))
            return 1;
    for (int k = 0; k < MB_VAL_RC_COUNT; k++)
        if (!strcmp(name, mb_val__rcolname[k]))
            return 1;
    for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++)
        if (!strcmp(name, extra[k]))
            return 1;
    return 0;
}

/* The known column nearest to name within two edits, or NULL. */
static const char *mb_validate__col_nearest(const char *name)
{
    const char *best = NULL;
    int bd = 3;
    for (int k = 0; k < C_COUNT + MB_VAL_RC_COUNT; k++) {
        const char *cand = k < C_COUNT ? mb_val__colname[k] : mb_val__rcolname[k - C_COUNT];
        int d = mb_edit_distance(name, cand, bd);
        if (d < bd) {
            bd = d;
            best = cand;
        }
    }
    return best;
}

/* The warning line of an unknown header name, kept for mb_validate_warn_inputs (bounded: lines
 * past the buffer are dropped; a name is shown up to a tab or newline in it). */
static void mb_validate__col_unknown(struct mb_val__csv *c, const char *name, const struct mb_val__field *f)
{
    char *u = c->out->unknown_cols;
    size_t l = strlen(u);
    int n = (int)strcspn(name, "\t\n");
    const char *near = mb_validate__col_nearest(name);
    snprintf(u + l, sizeof c->out->unknown_cols - l, "%s:%d:%d: unknown column '%.*s' (ignored)%s%s%s\n", c->path,
             f->line, f->col, n < 60 ? n : 60, name, near ? "; did you mean '" : "", near ? near : "",
             near ? "'?" : "");
}

int mb_validate__csv_header(struct mb_val__csv *c)
{
    size_t i;
    int k;
    char missing[400] = "";
    int n_missing = 0;
    for (k = 0; k < C_COUNT; k++)
        c->idx[k] = -1;
    c->notes_idx = c->source_idx = c->match_idx = c->mem_idx = c->kind_idx = c->date_idx = -1;
    c->have_recipe = 0;
    for (k = 0; k < MB_VAL_RC_COUNT; k++)
        c->ridx[k] = -1;
    for (i = 0; i < c->nf; i++) {
        char *name = mb_validate__trim(c->f[i].text);
        if (!mb_validate__col_known(name))
            mb_validate__col_unknown(c, name, &c->f[i]);
        if (!strcmp(name, "notes"))
            c->notes_idx = (int)i;
        if (!strcmp(name, "source"))
            c->source_idx = (int)i;
        if (!strcmp(name, "recipe_match"))
            c->match_idx = (int)i;
        if (!strcmp(name, "source_date"))
            c->date_idx = (int)i;
        if (!strcmp(name, "peak_memory_gib") || !strcmp(name, "peak_memory_kind")) {
            int *at = !strcmp(name, "peak_memory_gib") ? &c->mem_idx : &c->kind_idx;
            if (*at >= 0)
                return mb_err_set(c->err, c->path, c->f[i].line, c->f[i].col,
                                  "duplicate column '%s' (first at column %d of the header)", name, *at + 1);
            *at = (int)i;
        }
        for (k = 0; k < MB_VAL_RC_COUNT; k++)
            if (!strcmp(name, mb_val__rcolname[k])) {
                if (c->ridx[k] >= 0)
                    return mb_err_set(c->err, c->path, c->f[i].line, c->f[i].col,
                                      "duplicate column '%s' (first at column %d of the header)", name,
                                      c->ridx[k] + 1);
                c->ridx[k] = (int)i;
                c->have_recipe = 1;
            }
        for (k = 0; k < C_COUNT; k++) {
            if (strcmp(name, mb_val__colname[k]))
                continue;
            if (c->idx[k] >= 0)
                return mb_err_set(c->err, c->path, c->f[i].line, c->f[i].col,
                                  "duplicate column '%s' (first at column %d of the header)", name, c->idx[k] + 1);
            c->idx[k] = (int)i;
        }
    }
    for (k = 0; k < C_COUNT; k++) {
        if (c->idx[k] >= 0)
            continue;
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s'%s'", n_missing ? ", " : "", mb_val__colname[k]);
        n_missing++;
    }
    if (n_missing)
        return mb_err_set(c->err, c->path, c->rec_line, 1, "missing column%s %s", n_missing > 1 ? "s" : "",
                          missing);
    c->n_header = c->nf;
    c->have_header = 1;
    return 0;
}

int mb_validate__is_absent(const char *s)
{
    return !*s || !strcmp(s, "-") || !strcasecmp(s, "null") || !strcasecmp(s, "n/a") || !strcasecmp(s, "na");
}

/* Integer cell: *present = 0 when empty/null. Bad text is an error. */
int mb_validate__cell_int(struct mb_val__csv *c, int k, int *v, int *present)
{
    struct mb_val__field *f = &c->f[c->idx[k]];
    char *s = mb_validate__trim(f->text), *end;
    long long x;
    *v = 0;
    *present = 0;
    if (mb_validate__is_absent(s))
        return 0;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE || x < INT_MIN || x > INT_MAX)
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected an integer, got '%.60s'",
                          mb_val__colname[k], s);
    /* layout counts: at least 1 (fsdp: 0 = off); a 0 or negative one is a typo, not a row to skip */
    if (x < (k == C_FSDP ? 0 : 1))
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected %s integer, got '%.60s'",
                          mb_val__colname[k], k == C_FSDP ? "a non-negative (0: no FSDP)" : "a positive", s);
    *v = (int)x;
    *present = 1;
    return 0;
}

/* Number cell of field `fi` (header name `name`): 0 when empty/null. */
static int mb_validate__cell_num_at(struct mb_val__csv *c, int fi, const char *name, double *v)
{
    struct mb_val__field *f = &c->f[fi];
    char *s = mb_validate__trim(f->text), *end;
    double x;
    *v = 0.0;
    if (mb_validate__is_absent(s))
        return 0;
    errno = 0;
    x = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(x))
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected a number, got '%.60s'", name,
                          s);
    *v = x;
    return 0;
}

/* Number cell of a required column: 0 when empty/null. */
int mb_validate__cell_num(struct mb_val__csv *c, int k, double *v)
{
    return mb_validate__cell_num_at(c, c->idx[k], mb_val__colname[k], v);
}

/* The optional measured-memory cells: peak_memory_gib (positive when given)
 * and peak_memory_kind (allocated / reserved / device, empty = allocated). */
int mb_validate__cell_memory(struct mb_val__csv *c, double *gib, const char **kind)
{
    static const char *const kinds[] = {"allocated", "reserved", "device"};
    *gib = 0.0;
    *kind = kinds[0];
    if (c->mem_idx >= 0) {
        struct mb_val__field *f = &c->f[c->mem_idx];
        if (mb_validate__cell_num_at(c, c->mem_idx, "peak_memory_gib", gib) != 0)
            return -1;
        if (!mb_validate__is_absent(mb_validate__trim(f->text)) && !(*gib > 0))
            return mb_err_set(c->err, c->path, f->line, f->col,
                              "column 'peak_memory_gib': expected a positive number, got '%.60s'", mb_validate__trim(f->text));
    }
    if (c->kind_idx >= 0) {
        struct mb_val__field *f = &c->f[c->kind_idx];
        const char *t = mb_validate__trim(f->text);
        if (mb_validate__is_absent(t))
            return 0;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (!strcasecmp(t, kinds[i])) {
                *kind = kinds[i];
                return 0;
            }
        return mb_err_set(c->err, c->path, f->line, f->col,
                          "column 'peak_memory_kind': expected allocated, reserved or device, got '%.60s'", t);
    }
    return 0;
}

/* A measured value, when given, must be positive: 0 or below is a typo, not "not stated"; and
 * below a bound no training run comes near (a typo such as 1e308 otherwise scores 100 % off):
 * 1e8 tokens/s per GPU, 1e5 model TFLOP/s per GPU (100 PFLOP/s), a step of 1e7 s (116 days). */
int mb_validate__measured_positive(struct mb_val__csv *c, int k, double v)
{
    struct mb_val__field *f = &c->f[c->idx[k]];
    double hi = k == C_TOKENS ? 1e8 : k == C_TFLOPS ? 1e5 : 1e7;
    if (mb_validate__is_absent(mb_validate__trim(f->text)) || (v > 0 && v <= hi))
        return 0;
    if (v > hi)
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': %.60s is beyond any training run "
                          "(at most %g); expected the measured value", mb_val__colname[k], mb_validate__trim(f->text), hi);
    return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected a positive number, got '%.60s'",
                      mb_val__colname[k], mb_validate__trim(f->text));
}

const char *mb_validate__cell(struct mb_val__csv *c, int k)
{
    return mb_validate__trim(c->f[c->idx[k]].text);
}

void mb_validate_warn_inputs(const struct mb_val_summary *s, const char *prog, FILE *fp)
{
    for (const char *p = s->unknown_cols, *nl; (nl = strchr(p, '\n')); p = nl + 1)
        fprintf(fp, "%s: warning: %.*s\n", prog, (int)(nl - p), p);
    mb_validate_warn_unused_recipes(s, prog, fp);
}
