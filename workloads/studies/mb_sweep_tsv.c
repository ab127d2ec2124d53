/*
 * mb_sweep_tsv.c -- reading a sweep's TSV back (mb_sweep.h): the rows an
 * interrupted run kept (`mbsim sweep --resume`) and shard outputs
 * (`mbsim merge`).
 *
 * The format is mb_sweep_write_tsv's: tab-separated, no quoting (reasons have
 * their tabs and newlines replaced), an optional header row. Every field is
 * checked: the configuration index is in the grid and the axis columns hold
 * that configuration's values, so a file from another sweep (other axes, other
 * values, another order) is an error at its first differing cell rather than
 * rows silently attached to the wrong configurations. Numbers come back with
 * the 6 significant digits the writer printed; writing them again gives the
 * same bytes. What the axes cannot say (the base scenario, the calibration
 * tables, the fidelity and screening options) is the provenance line each
 * file starts with (mb_sweep.h), compared by resume and merge.
 */
#include "mb_calib.h"
#include "mb_input.h"
#include "mb_sweep.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MB_SWT_METRICS 10 /* step_time_s .. microbatches */
#define MB_SWT_PROV "# mbsim sweep: "

/* ------------------------------------------------------------ provenance */

static int mb_swt__options_ok(const char *o)
{
    return strlen(o) < MB_SWEEP_OPTIONS_LEN && strspn(o, "abcdefghijklmnopqrstuvwxyz0123456789:,-") == strlen(o);
}

static int mb_swt__cmp_u64(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

int mb_sweep_provenance(const struct mb_sweep *sw, const char *options, struct mb_sweep_prov *p, struct mb_err *err)
{
    memset(p, 0, sizeof *p);
    if (!options || !*options || !mb_swt__options_ok(options))
        return mb_err_set(err, NULL, 0, 0, "sweep options '%s': expected [a-z0-9:,-], at most %d characters",
                          options ? options : "", MB_SWEEP_OPTIONS_LEN - 1);
    snprintf(p->options, sizeof p->options, "%s", options);
    p->scenario = sw->scenario_hash;
    /* the tables: the scenario's calibration.table for every configuration, else the
     * shipped table of each GPU the base and the system axis name */
    const char *path = sw->base.calib_path[0] ? sw->base.calib_path : NULL;
    int n = path ? 1 : 1 + sw->n_sys;
    unsigned long long *h = mb_calloc((size_t)n, sizeof *h);
    for (int i = 0; i < n; i++) {
        const char *gpu = i == 0 ? sw->base.system.gpu : mb_sweep_sys_gpu(sw, i - 1);
        struct mb_calib *c = NULL;
        struct mb_err e;
        mb_err_clear(&e);
        if (!mb_calib_shared(gpu, path, &c, &e)) {
            h[i] = mb_calib_files_hash(c);
            mb_calib_free(c);
        } else { /* its configurations fail with the loader's error: record which GPU has none */
            h[i] = mb_hash64(gpu, strlen(gpu), mb_hash64("no table:", 9, MB_HASH64_INIT));
        }
    }
    qsort(h, (size_t)n, sizeof *h, mb_swt__cmp_u64);
    unsigned long long all = MB_HASH64_INIT;
    for (int i = 0; i < n; i++)
        if (i == 0 || h[i] != h[i - 1]) {
            char hex[24];
            snprintf(hex, sizeof hex, "%016llx;", h[i]);
            all = mb_hash64(hex, strlen(hex), all);
        }
    mb_free(h);
    p->calibration = all;
    return 0;
}

void mb_sweep_write_prov(const struct mb_sweep_prov *p, FILE *fp)
{
    fprintf(fp, MB_SWT_PROV "scenario=%016llx calibration=%016llx options=%s\n", p->scenario, p->calibration,
            p->options);
}

/* 16 lower-case hex digits at s into *v; the characters read, or 0. */
static int mb_swt__hex16(const char *s, unsigned long long *v)
{
    *v = 0;
    for (int i = 0; i < 16; i++) {
        int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        *v = *v << 4 | (unsigned long long)d;
    }
    return 16;
}

/* A provenance line (without its newline) into p; 0, or -1 when it is not one. */
static int mb_swt__prov_parse(const char *line, struct mb_sweep_prov *p)
{
    memset(p, 0, sizeof *p);
    size_t k = strlen(MB_SWT_PROV);
    if (strncmp(line, MB_SWT_PROV, k) || strncmp(line + k, "scenario=", 9))
        return -1;
    const char *q = line + k + 9;
    if (!mb_swt__hex16(q, &p->scenario) || strncmp(q + 16, " calibration=", 13))
        return -1;
    q += 16 + 13;
    if (!mb_swt__hex16(q, &p->calibration) || strncmp(q + 16, " options=", 9))
        return -1;
    q += 16 + 9;
    if (!*q || !mb_swt__options_ok(q))
        return -1;
    snprintf(p->options, sizeof p->options, "%s", q);
    return 0;
}

/* The provenance line got (at path:line) against the one wanted; 0 or -1 with err set. */
static int mb_swt__prov_check(const struct mb_sweep_prov *got, const struct mb_sweep_prov *want, const char *path,
                              int line, struct mb_err *err)
{
    if (got->scenario != want->scenario)
        return mb_err_set(err, path, line, 1,
                          "the file was written from another scenario file (content hash %016llx; this sweep's "
                          "scenario file hashes to %016llx): its rows would be mixed with rows of another base "
                          "scenario; run it again",
                          got->scenario, want->scenario);
    if (got->calibration != want->calibration)
        return mb_err_set(err, path, line, 1,
                          "the file was written with other calibration tables (content hash %016llx; this sweep's "
                          "tables hash to %016llx): a table changed since, and rows of both would be ranked "
                          "together; run it again",
                          got->calibration, want->calibration);
    if (want->options[0] && strcmp(got->options, want->options)) {
        int sg = strstr(got->options, "screen:") != NULL, sw = strstr(want->options, "screen:") != NULL;
        return mb_err_set(err, path, line, 1, "the file was written with options '%s', not '%s'%s", got->options,
                          want->options,
                          sg != sw ? " (a --screen sweep's rows are not a full sweep's: screened rows were never "
                                     "simulated)"
                                   : " (--mb-cap/--exact change the rows)");
    }
    return 0;
}

struct mb_swt__line {
    const char *path;
    int line;
    char *cell[MB_SWEEP_MAX_AXES + 32];
    int col[MB_SWEEP_MAX_AXES + 32]; /* 1-based byte column of each cell */
    int n;
};

static int mb_swt__columns(const struct mb_sweep *sw) { return sw->n_axes + 3 + MB_SWT_METRICS + 2 * MB_SWEEP_TOP; }

/* Split buf (modified) at tabs. */
static void mb_swt__split(char *buf, struct mb_swt__line *l)
{
    int max = (int)(sizeof l->cell / sizeof l->cell[0]);
    l->n = 0;
    char *p = buf;
    for (;;) {
        char *t = strchr(p, '\t');
        if (l->n < max) {
            l->cell[l->n] = p;
            l->col[l->n] = (int)(p - buf) + 1;
        }
        l->n++;
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
}

static int mb_swt__err(const struct mb_swt__line *l, int c, struct mb_err *err, const char *what, const char *exp)
{
    return mb_err_set(err, l->path, l->line, l->col[c], "%s '%s': expected %s", what, l->cell[c], exp);
}

/* The header mb_sweep_write_tsv writes, as text. */
static void mb_swt__header(const struct mb_sweep *sw, char *buf, size_t len)
{
    FILE *fp = fmemopen(buf, len, "w");
    if (!fp) {
        buf[0] = 0;
        return;
    }
    mb_sweep_write_tsv(sw, NULL, 0, 1, fp);
    fclose(fp);
    buf[strcspn(buf, "\n")] = 0;
}

/* A finite number >= lo (> lo when `open`), at most hi: what a simulated row
 * can hold (a NaN, an infinity or a negative time read back as a result
 * would rank as one; QA). */
static int mb_swt__num(const struct mb_swt__line *l, int c, const char *what, double lo, int open, double hi,
                       double *out, struct mb_err *err)
{
    char *end;
    errno = 0;
    double v = strtod(l->cell[c], &end);
    if (end == l->cell[c] || *end || errno || !isfinite(v) || v < lo || (open && v == lo) || v > hi) {
        char exp[64];
        if (hi < DBL_MAX)
            snprintf(exp, sizeof exp, "a number from %g to %g", lo, hi);
        else
            snprintf(exp, sizeof exp, "a finite number %s %g", open ? ">" : ">=", lo);
        return mb_swt__err(l, c, err, what, exp);
    }
    *out = v;
    return 0;
}

static int mb_swt__int(const struct mb_swt__line *l, int c, int lo, int *out, struct mb_err *err)
{
    char *end;
    errno = 0;
    long v = strtol(l->cell[c], &end, 10);
    if (end == l->cell[c] || *end || errno || v < lo || v > 1000000000L)
        return mb_swt__err(l, c, err, "value", lo ? "a positive integer" : "an integer >= 0");
    *out = (int)v;
    return 0;
}

static int mb_swt__cat(const char *name)
{
    for (int c = 0; c < MB_CAT_COUNT; c++)
        if (!strcmp(mb_cat_name((enum mb_cat)c), name))
            return c;
    return -1;
}

/* The metric and breakdown columns of an `ok` row, from column c on. */
static int mb_swt__metrics(const struct mb_swt__line *l, int c, struct mb_sweep_row *r, struct mb_err *err)
{
    /* step, tokens/s, TFLOP/s and capacity > 0; MFU within [0, 1]; memory >= 0 */
    const struct {
        const char *name;
        double *v, hi;
        int open;
    } num[] = {{"step_time_s", &r->step_time_s, DBL_MAX, 1},
               {"tokens_per_s_per_gpu", &r->tokens_per_s_per_gpu, DBL_MAX, 1},
               {"model_tflops_per_gpu", &r->model_tflops_per_gpu, DBL_MAX, 1},
               {"mfu", &r->mfu, 1, 0},
               {"peak_memory_gib", &r->peak_memory_gib, DBL_MAX, 0},
               {"reserved_memory_gib", &r->reserved_memory_gib, DBL_MAX, 0},
               {"capacity_gib", &r->capacity_gib, DBL_MAX, 1}};
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++)
        if (mb_swt__num(l, c++, num[i].name, 0, num[i].open, num[i].hi, num[i].v, err))
            return -1;
    if (mb_swt__int(l, c++, 0, &r->oom, err) || mb_swt__int(l, c++, 1, &r->dp, err) ||
        mb_swt__int(l, c++, 1, &r->microbatches, err))
        return -1;
    if (r->oom > 1)
        return mb_swt__err(l, c - 3, err, "oom", "0 or 1");
    for (int k = 0; k < MB_SWEEP_TOP; k++, c += 2) {
        if (!strcmp(l->cell[c], "NA") && !strcmp(l->cell[c + 1], "NA"))
            continue;
        r->top_cat[k] = mb_swt__cat(l->cell[c]);
        if (r->top_cat[k] < 0)
            return mb_swt__err(l, c, err, "breakdown term", "a name of `mbsim run --json` breakdown_s, or NA");
        if (mb_swt__num(l, c + 1, "breakdown seconds", 0, 0, DBL_MAX, &r->top_s[k], err))
            return -1;
    }
    if (strcmp(l->cell[c], "NA"))
        return mb_swt__err(l, c, err, "reason", "NA on an ok row");
    return 0;
}

/* An ok row's throughput is its step's: tokens/s/GPU = GBS x sequence / (step x GPUs) of its
 * configuration (mb_step.h), each read at the 6 digits the TSV carries, so within 2e-5 (QA: a
 * plausible but wrong throughput merged and ranked). */
static int mb_swt__consistent(const struct mb_sweep *sw, const struct mb_swt__line *l, int c_tok,
                              const struct mb_sweep_row *r, struct mb_err *err)
{
    struct mb_scenario s;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_sweep_scenario(sw, r->index, &s, &e))
        return mb_err_set(err, l->path, l->line, 1,
                          "configuration %zu is 'ok' in the file, but this sweep rejects it: %s", r->index, e.msg);
    double tok = (double)s.global_batch_size * s.seq_length / (r->step_time_s * s.gpus);
    if (fabs(tok / r->tokens_per_s_per_gpu - 1) <= 2e-5)
        return 0;
    char exp[96];
    snprintf(exp, sizeof exp, "%.6g, the GBS x sequence / (step x GPUs) of its step time", tok);
    return mb_swt__err(l, c_tok, err, "tokens_per_s_per_gpu", exp);
}

/* One data line into row. */
static int mb_swt__row(const struct mb_sweep *sw, const struct mb_swt__line *l, struct mb_sweep_row *r,
                       struct mb_err *err)
{
    int want = mb_swt__columns(sw);
    if (l->n != want)
        return mb_err_set(err, l->path, l->line, 1,
                          "expected %d tab-separated columns (config, %d swept keys, status, metrics, reason), got %d",
                          want, sw->n_axes, l->n);
    memset(r, 0, sizeof *r);
    for (int k = 0; k < MB_SWEEP_TOP; k++)
        r->top_cat[k] = -1;
    char *end;
    errno = 0;
    unsigned long long idx = strtoull(l->cell[0], &end, 10);
    size_t total = mb_sweep_size(sw);
    if (end == l->cell[0] || *end || errno || l->cell[0][0] == '-' || idx >= total) {
        char exp[64];
        snprintf(exp, sizeof exp, "a configuration index below %zu", total);
        return mb_swt__err(l, 0, err, "config", exp);
    }
    r->index = (size_t)idx;
    for (int a = 0; a < sw->n_axes; a++) {
        const char *v = mb_sweep_value(sw, r->index, a);
        if (strcmp(l->cell[1 + a], v))
            return mb_err_set(err, l->path, l->line, l->col[1 + a],
                              "%s '%s': configuration %zu of this sweep has %s = %s (the file is from another "
                              "sweep: other axes, values or order)",
                              sw->axis[a].key, l->cell[1 + a], r->index, sw->axis[a].key, v);
    }
    int c = 1 + sw->n_axes;
    const char *st = l->cell[c];
    if (!strcmp(st, "ok")) {
        r->status = MB_SWEEP_OK;
        return mb_swt__metrics(l, c + 1, r, err);
    }
    if (strcmp(st, "invalid") && strcmp(st, "error") && strcmp(st, "screened"))
        return mb_swt__err(l, c, err, "status", "ok, invalid, error or screened");
    r->status = !strcmp(st, "invalid") ? MB_SWEEP_INVALID : !strcmp(st, "error") ? MB_SWEEP_FAILED : MB_SWEEP_SCREENED;
    for (int k = c + 1; k < want - 1; k++)
        if (strcmp(l->cell[k], "NA"))
            return mb_swt__err(l, k, err, "value", "NA on an invalid, error or screened row");
    const char *reason = l->cell[want - 1];
    snprintf(r->reason, sizeof r->reason, "%s", strcmp(reason, "NA") ? reason : "");
    return 0;
}

/* The axes and values of a row say which configuration it is, but not which
 * base scenario it came from: a shard of another scenario with the same axes
 * would merge or resume silently. So the first finished row of a file is
 * simulated again here and its step time compared: beyond 1 % (options such
 * as --mb-cap move it far less; another base scenario, mbsim version or
 * calibration table moves it more) the file is refused. */
static int mb_swt__same_base(const struct mb_sweep *sw, const struct mb_sweep_row *r, const char *path, int line,
                             struct mb_err *err)
{
    struct mb_sweep_row now;
    mb_sweep_eval(sw, r->index, &now);
    if (now.status == MB_SWEEP_OK && fabs(now.step_time_s - r->step_time_s) <= 0.01 * now.step_time_s)
        return 0;
    if (now.status != MB_SWEEP_OK)
        return mb_err_set(err, path, line, 1,
                          "configuration %zu is 'ok' in the file but %s with this sweep's scenario: the file was not "
                          "made from this base scenario (or by another mbsim version or calibration tables)",
                          r->index, mb_sweep_status_name(now.status));
    return mb_err_set(err, path, line, 1,
                      "configuration %zu took %.6g s in the file, %.6g s simulated now (%.1f %% apart): the file was "
                      "not made from this sweep's base scenario (or by another mbsim version or calibration tables)",
                      r->index, r->step_time_s, now.step_time_s,
                      100 * fabs(now.step_time_s - r->step_time_s) / now.step_time_s);
}

int mb_sweep_read_tsv_opts(const struct mb_sweep *sw, const char *path, const struct mb_sweep_read_opts *o,
                           int (*fn)(const struct mb_sweep_row *row, int line, void *ctx, struct mb_err *err),
                           void *ctx, struct mb_err *err)
{
    int checked = 0; /* the first finished row was re-simulated (mb_swt__same_base) */
    int seen = 0;    /* a provenance line was read */
    if (o->partial_p)
        *o->partial_p = 0;
    if (o->found)
        memset(o->found, 0, sizeof *o->found);
    /* a regular file of bounded size: a directory, FIFO or /dev/zero is refused (mb_input.h) */
    FILE *fp = mb_input_open(path, "a sweep TSV (mbsim sweep --tsv)", 0, err);
    if (!fp)
        return -1;
    char header[8192];
    mb_swt__header(sw, header, sizeof header);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    struct mb_swt__line l = {.path = path};
    while (!rc && (got = getline(&buf, &cap, fp)) > 0) {
        l.line++;
        int terminated = buf[got - 1] == '\n';
        if (terminated)
            buf[--got] = 0;
        if (!terminated && o->allow_partial) {
            if (o->partial_p)
                *o->partial_p = 1;
            break;
        }
        if (!terminated) {
            rc = mb_err_set(err, path, l.line, (int)got + 1,
                            "expected a newline: the file ends in the middle of a row (was its run killed?)");
            break;
        }
        if (buf[0] == '#') {
            struct mb_sweep_prov p;
            if (mb_swt__prov_parse(buf, &p))
                rc = mb_err_set(err, path, l.line, 1,
                                "expected the provenance line '" MB_SWT_PROV
                                "scenario=HEX16 calibration=HEX16 options=...' (mbsim writes no other comment)");
            else if (o->want)
                rc = mb_swt__prov_check(&p, o->want, path, l.line, err);
            if (!rc && !seen && o->found)
                *o->found = p;
            seen = 1;
            continue;
        }
        if (o->want && !seen) {
            rc = mb_err_set(err, path, l.line, 1,
                            "no provenance line ('" MB_SWT_PROV "scenario=... calibration=... options=...') "
                            "before the rows: the file was written by an older mbsim or edited, so its scenario, "
                            "calibration tables and options cannot be checked; run it again");
            break;
        }
        if (!strncmp(buf, "config\t", 7)) {
            if (strcmp(buf, header))
                rc = mb_err_set(err, path, l.line, 1,
                                "header differs from this sweep's; expected the columns: %.300s", header);
            continue;
        }
        mb_swt__split(buf, &l);
        struct mb_sweep_row r;
        rc = mb_swt__row(sw, &l, &r, err);
        if (!rc && !checked && r.status == MB_SWEEP_OK && !o->no_resimulation) {
            checked = 1;
            rc = mb_swt__same_base(sw, &r, path, l.line, err);
        }
        if (!rc && r.status == MB_SWEEP_OK) /* tokens_per_s_per_gpu: after config, the axes, status, step */
            rc = mb_swt__consistent(sw, &l, 3 + sw->n_axes, &r, err);
        if (!rc && fn)
            rc = fn(&r, l.line, ctx, err);
    }
    free(buf);
    fclose(fp);
    return rc ? -1 : 0;
}

int mb_sweep_read_tsv(const struct mb_sweep *sw, const char *path, int allow_partial,
                      int (*fn)(const struct mb_sweep_row *row, int line, void *ctx, struct mb_err *err), void *ctx,
                      int *partial_p, struct mb_err *err)
{
    struct mb_sweep_read_opts o = {.allow_partial = allow_partial, .partial_p = partial_p};
    return mb_sweep_read_tsv_opts(sw, path, &o, fn, ctx, err);
}
