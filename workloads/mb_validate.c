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
 * Statistics are exact: mean, median (sorted copy) and max of |error %|.
 * Known limit: a row is compared on one metric only (tokens/s/GPU, else step
 * time, else model TFLOP/s/GPU); rows measuring several could be checked on
 * all of them, but they are redundant up to the publisher's FLOP formula.
 */
#include "mb_validate.h"

#include <csv.h>
#include <jansson.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mb_step.h"

/* ------------------------------------------------------------------ */
/* small string helpers                                               */
/* ------------------------------------------------------------------ */

/* Copy with truncation; always NUL-terminates (len > 0). */
static void copy_str(char *dst, size_t len, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Trim ASCII whitespace in place; returns the first non-space char. */
static char *trim(char *s)
{
    char *e;
    while (*s && isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

static int starts_with_ci(const char *s, const char *pre)
{
    for (; *pre; s++, pre++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*pre))
            return 0;
    return 1;
}

static int contains_ci(const char *s, const char *needle)
{
    for (; *s; s++)
        if (starts_with_ci(s, needle))
            return 1;
    return 0;
}

/* Remove every "(...)" group (nesting aware) from s in place. */
static void strip_parens(char *s)
{
    char *w = s;
    int depth = 0;
    for (; *s; s++) {
        if (*s == '(')
            depth++;
        else if (*s == ')' && depth > 0)
            depth--;
        else if (depth == 0)
            *w++ = *s;
    }
    *w = '\0';
}

/* ------------------------------------------------------------------ */
/* mappings                                                           */
/* ------------------------------------------------------------------ */

static const struct {
    const char *csv, *key;
} mb_val__systems[] = {
    {"DGX-H100", "dgx_h100"},       {"H100-SXM-80GB", "h100_sxm"},    {"DGX-B200", "dgx_b200"},
    {"DGX-B300", "dgx_b300"},       {"DGX-GB200", "gb200_nvl72"},     {"DGX-GB300", "gb300_nvl72"},
    {"DGX-A100-80GB", "dgx_a100"},
};

const char *mb_validate_system_key(const char *csv_system)
{
    char buf[64];
    size_t i;
    if (!csv_system)
        return NULL;
    copy_str(buf, sizeof buf, csv_system);
    const char *t = trim(buf);
    for (i = 0; i < sizeof mb_val__systems / sizeof mb_val__systems[0]; i++) {
        const char *c = mb_val__systems[i].csv;
        if (strlen(c) == strlen(t) && starts_with_ci(t, c))
            return mb_val__systems[i].key;
    }
    return NULL;
}

static int is_blackwell(const char *key)
{
    return key && (!strcmp(key, "dgx_b200") || !strcmp(key, "dgx_b300") || !strcmp(key, "gb200_nvl72") ||
                   !strcmp(key, "gb300_nvl72"));
}

/* mb_precision_parse, retried with '-' -> '_' (fp8-cs -> fp8_cs). */
static int parse_prec_base(const char *base, struct mb_precision *out)
{
    char alt[64];
    char *p;
    if (mb_precision_parse(base, out) == 0)
        return 0;
    copy_str(alt, sizeof alt, base);
    lower(alt);
    for (p = alt; *p; p++)
        if (*p == '-' || *p == ' ')
            *p = '_';
    return mb_precision_parse(alt, out) == 0 ? 0 : -1;
}

int mb_validate_precision(const char *label, const char *system_key, struct mb_precision *out,
                          char *why, size_t why_len)
{
    char buf[160];
    const char *base;
    char *t;
    int fp8_attn;

    copy_str(buf, sizeof buf, label ? label : "");
    t = trim(buf);
    if (!*t) {
        snprintf(why, why_len, "precision not stated");
        return -1;
    }
    fp8_attn = contains_ci(t, "FP8 attention") || contains_ci(t, "FP8_DPA=True");
    if (starts_with_ci(t, "FP8-finer-granularity")) {
        /* The publisher's footnote: MXFP8 on GB200/B200, 128x128 blockwise on H100. */
        base = is_blackwell(system_key) ? "MXFP8" : "FP8-blockwise";
    } else if (starts_with_ci(t, "FP8") && contains_ci(t, "tensorwise current scaling")) {
        base = "FP8-CS";
    } else {
        strip_parens(t);
        base = trim(t);
    }
    if (!*base || parse_prec_base(base, out) != 0) {
        char shown[80];
        copy_str(shown, sizeof shown, label);
        snprintf(why, why_len, "precision '%s' not recognised", shown);
        return -1;
    }
    if (fp8_attn)
        out->attn = MB_PREC_FP8;
    return 0;
}

/* One recompute module name (already trimmed, lower case); 0 if unknown. */
static unsigned rc_module(const char *name)
{
    if (!strcmp(name, "up_proj"))
        name = "mla_up_proj";
    return mb_recompute_module(name);
}

int mb_validate_recompute(const char *cell, enum mb_rc_gran *gran, unsigned *modules, char *why,
                          size_t why_len)
{
    char buf[256];
    char *t, *list, *end, *item, *save = NULL;
    unsigned mods = 0;

    *gran = MB_RC_NONE;
    *modules = 0;
    copy_str(buf, sizeof buf, cell ? cell : "");
    lower(buf);
    strip_parens(buf);
    t = trim(buf);

    if (!*t || !strncmp(t, "none", 4))
        return 0;
    if (!strncmp(t, "full", 4)) {
        *gran = MB_RC_FULL;
        return 0;
    }
    if (!strncmp(t, "selective", 9)) {
        t = trim(t + 9);
        if (*t == ':')
            t = trim(t + 1);
        if (!*t) { /* "selective" alone: Megatron's default module list */
            *gran = MB_RC_SELECTIVE;
            *modules = MB_RCM_CORE_ATTN;
            return 0;
        }
    }
    /* t is a module list: "[a, b] [suffix]" or "a, b [suffix]" */
    if (*t == '[') {
        list = t + 1;
        end = strchr(list, ']');
        if (end)
            *end = '\0';
    } else {
        list = t;
        end = strchr(list, '[');
        if (end)
            *end = '\0';
    }
    for (item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *name = trim(item);
        size_t n = strlen(name);
        unsigned f;
        if (n >= 2 && (name[0] == '\'' || name[0] == '"') && name[n - 1] == name[0]) {
            name[n - 1] = '\0';
            name = trim(name + 1);
        }
        if (!*name)
            continue;
        f = rc_module(name);
        if (!f) {
            char shown[64];
            copy_str(shown, sizeof shown, name);
            snprintf(why, why_len, "recompute module '%s' not known", shown);
            return -1;
        }
        mods |= f;
    }
    if (mods) {
        *gran = MB_RC_SELECTIVE;
        *modules = mods;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* statistics                                                         */
/* ------------------------------------------------------------------ */

static int cmp_dbl(const void *a, const void *b)
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
    qsort(a, n, sizeof *a, cmp_dbl);
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

/* ------------------------------------------------------------------ */
/* model / system cache                                               */
/* ------------------------------------------------------------------ */

struct mb_val__model_ent {
    char key[64];
    int ok;
    struct mb_model m;
    char why[200];
};

struct mb_val__sys_ent {
    char key[64];
    int ok;
    struct mb_system sys;
    char why[200];
};

struct mb_val__cache {
    size_t n_models, n_systems;
    struct mb_val__model_ent *models;
    struct mb_val__sys_ent *systems;
};

static void cache_free(struct mb_val__cache *c)
{
    size_t i;
    if (!c)
        return;
    for (i = 0; i < c->n_models; i++)
        if (c->models[i].ok)
            mb_model_free(&c->models[i].m);
    mb_free(c->models);
    mb_free(c->systems);
    mb_free(c);
}

static const struct mb_val__model_ent *cache_model(struct mb_val__cache *c, const char *key)
{
    size_t i;
    struct mb_val__model_ent *e;
    struct mb_err err;
    for (i = 0; i < c->n_models; i++)
        if (!strcmp(c->models[i].key, key))
            return &c->models[i];
    c->models = mb_realloc(c->models, (c->n_models + 1) * sizeof *c->models);
    e = &c->models[c->n_models++];
    memset(e, 0, sizeof *e);
    copy_str(e->key, sizeof e->key, key);
    mb_err_clear(&err);
    if (mb_model_load(key, &e->m, &err) == 0) {
        e->ok = 1;
    } else if (!strncmp(err.msg, "unknown model", 13)) {
        snprintf(e->why, sizeof e->why, "model '%.60s' has no model file", key);
    } else {
        char msg[600];
        mb_err_format(&err, msg, sizeof msg);
        snprintf(e->why, sizeof e->why, "model '%.30s' does not load: %.140s", key, msg);
    }
    return e;
}

static const struct mb_val__sys_ent *cache_system(struct mb_val__cache *c, const char *key)
{
    size_t i;
    struct mb_val__sys_ent *e;
    struct mb_err err;
    for (i = 0; i < c->n_systems; i++)
        if (!strcmp(c->systems[i].key, key))
            return &c->systems[i];
    c->systems = mb_realloc(c->systems, (c->n_systems + 1) * sizeof *c->systems);
    e = &c->systems[c->n_systems++];
    memset(e, 0, sizeof *e);
    copy_str(e->key, sizeof e->key, key);
    mb_err_clear(&err);
    if (mb_topo_load_system(key, &e->sys, &err) == 0) {
        e->ok = 1;
    } else {
        char msg[600];
        mb_err_format(&err, msg, sizeof msg);
        snprintf(e->why, sizeof e->why, "system '%.30s' does not load: %.140s", key, msg);
    }
    return e;
}

/* ------------------------------------------------------------------ */
/* summary bookkeeping                                                */
/* ------------------------------------------------------------------ */

void mb_validate_init(struct mb_val_summary *out)
{
    memset(out, 0, sizeof *out);
    out->mape_pct = out->median_ape_pct = out->max_ape_pct = NAN;
    out->max_ape_row = (size_t)-1;
}

static struct mb_val__cache *get_cache(struct mb_val_summary *out)
{
    if (!out->cache)
        out->cache = mb_calloc(1, sizeof *out->cache);
    return out->cache;
}

static struct mb_val_row *new_row(struct mb_val_summary *out)
{
    struct mb_val_row *r;
    if (out->n_rows == out->cap_rows) {
        out->cap_rows = out->cap_rows ? 2 * out->cap_rows : 64;
        out->rows = mb_realloc(out->rows, out->cap_rows * sizeof *out->rows);
    }
    r = &out->rows[out->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

static void skip_row(struct mb_val_row *r, const char *reason)
{
    r->skipped = 1;
    r->predicted = 0.0;
    r->err_pct = 0.0;
    copy_str(r->reason, sizeof r->reason, reason);
}

/* Choose the compared metric: tokens/s/GPU, else step time, else TFLOP/s/GPU. */
static int pick_metric(struct mb_val_row *r, double tokens, double step, double tflops)
{
    if (tokens > 0) {
        copy_str(r->metric, sizeof r->metric, MB_VAL_TOKENS);
        r->measured = tokens;
    } else if (step > 0) {
        copy_str(r->metric, sizeof r->metric, MB_VAL_STEP);
        r->measured = step;
    } else if (tflops > 0) {
        copy_str(r->metric, sizeof r->metric, MB_VAL_TFLOPS);
        r->measured = tflops;
    } else {
        skip_row(r, "no measured throughput");
        return -1;
    }
    return 0;
}

/* Simulate a checked scenario and compare on r->metric. fsdp_group > 0: the
 * CSV's sharding group, noted when it differs from DP; `applied`: what the
 * notes column set (mb_validate_apply_notes), noted when not empty. */
static void predict_row(struct mb_val_row *r, const struct mb_scenario *s, int fsdp_group, const char *applied)
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
        skip_row(r, why);
        return;
    }
    if (!strcmp(r->metric, MB_VAL_TOKENS))
        pred = res.tokens_per_s_per_gpu;
    else if (!strcmp(r->metric, MB_VAL_STEP))
        pred = res.step_time_s;
    else
        pred = res.model_tflops_per_gpu;
    if (!isfinite(pred) || pred <= 0) {
        snprintf(why, sizeof why, "simulation gave no %s", r->metric);
        skip_row(r, why);
        return;
    }
    r->predicted = pred;
    r->err_pct = (pred - r->measured) / r->measured * 100.0;
    if (fsdp_group > 0 && s->strategy == MB_STRAT_FSDP && fsdp_group != s->dp)
        snprintf(r->note, sizeof r->note, "FSDP sharding group %d differs from DP %d (simulated over DP)",
                 fsdp_group, s->dp);
    if (applied && applied[0]) {
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%sfrom notes: %s", l ? "; " : "", applied);
    }
    if (res.oom) {
        size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%spredicted OOM (peak %.1f GiB, reserved %.1f GiB, capacity %.1f GiB)",
                 l ? "; " : "", res.mem.peak_allocated / 1073741824.0, res.mem.reserved / 1073741824.0,
                 res.mem.capacity / 1073741824.0);
    }
}

/* ------------------------------------------------------------------ */
/* CSV                                                                */
/* ------------------------------------------------------------------ */

enum {
    C_ID, C_MODEL, C_SYSTEM, C_GPUS, C_PRECISION, C_GBS, C_MBS, C_SEQ, C_TP, C_PP, C_CP, C_VP, C_EP,
    C_ETP, C_FSDP, C_RECOMPUTE, C_TOKENS, C_TFLOPS, C_STEP, C_COUNT
};

static const char *const mb_val__colname[C_COUNT] = {
    "id", "model", "system", "gpus", "precision", "gbs", "mbs", "seq_len", "tp", "pp", "cp", "vp", "ep",
    "etp", "fsdp", "recompute", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "step_time_s",
};

struct csv_field {
    char *text;
    int line, col;
};

struct csv_ctx {
    const char *path;
    struct mb_val_summary *out;
    struct mb_err *err;
    int failed;
    /* position of the byte being fed */
    int line, col;
    /* start of the field / record being read */
    int fline, fcol, rec_line, rec_pending;
    /* fields of the current record */
    struct csv_field *f;
    size_t nf, capf;
    /* header */
    int have_header;
    size_t n_header;
    int idx[C_COUNT];
    int notes_idx; /* optional "notes" column, -1 if absent */
};

static void csv_on_field(void *data, size_t len, void *vctx)
{
    struct csv_ctx *c = vctx;
    struct csv_field *f;
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

static int csv_header(struct csv_ctx *c)
{
    size_t i;
    int k;
    char missing[400] = "";
    int n_missing = 0;
    for (k = 0; k < C_COUNT; k++)
        c->idx[k] = -1;
    c->notes_idx = -1;
    for (i = 0; i < c->nf; i++) {
        char *name = trim(c->f[i].text);
        if (!strcmp(name, "notes"))
            c->notes_idx = (int)i;
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

static int is_absent(const char *s)
{
    return !*s || !strcmp(s, "-") || !strcasecmp(s, "null") || !strcasecmp(s, "n/a") || !strcasecmp(s, "na");
}

/* Integer cell: *present = 0 when empty/null. Bad text is an error. */
static int cell_int(struct csv_ctx *c, int k, int *v, int *present)
{
    struct csv_field *f = &c->f[c->idx[k]];
    char *s = trim(f->text), *end;
    long long x;
    *v = 0;
    *present = 0;
    if (is_absent(s))
        return 0;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE || x < INT_MIN || x > INT_MAX)
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected an integer, got '%.60s'",
                          mb_val__colname[k], s);
    *v = (int)x;
    *present = 1;
    return 0;
}

/* Number cell: 0 when empty/null. */
static int cell_num(struct csv_ctx *c, int k, double *v)
{
    struct csv_field *f = &c->f[c->idx[k]];
    char *s = trim(f->text), *end;
    double x;
    *v = 0.0;
    if (is_absent(s))
        return 0;
    errno = 0;
    x = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(x))
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected a number, got '%.60s'",
                          mb_val__colname[k], s);
    *v = x;
    return 0;
}

/* A measured value, when given, must be positive: 0 or below is a typo, not "not stated". */
static int measured_positive(struct csv_ctx *c, int k, double v)
{
    struct csv_field *f = &c->f[c->idx[k]];
    if (is_absent(trim(f->text)) || v > 0)
        return 0;
    return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected a positive number, got '%.60s'",
                      mb_val__colname[k], trim(f->text));
}

static const char *cell(struct csv_ctx *c, int k)
{
    return trim(c->f[c->idx[k]].text);
}

/* Append ", what" (or "what" first) to buf of size n. */
static void note_add(char *buf, size_t n, const char *what)
{
    size_t l = strlen(buf);
    if (l < n)
        snprintf(buf + l, n - l, "%s%s", l ? ", " : "", what);
}

/* A note item that says "off": a word off, no, without, disabled or false
 * ("offload" is not "off"). */
static int note_negated(const char *t)
{
    static const char *const neg[] = {"off", "no", "without", "disabled", "false", NULL};
    for (const char *p = t; *p;) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz");
        for (int i = 0; n && neg[i]; i++)
            if (strlen(neg[i]) == n && !strncmp(p, neg[i], n))
                return 1;
        p += n ? n : 1;
    }
    return 0;
}

/* CUDA-graph module names in notes; the first name of a flag is how it is reported. */
static const struct {
    const char *name;
    unsigned flag;
} graph_names[] = {{"attn", MB_CG_ATTN},           {"attention", MB_CG_ATTN},
                   {"mlp", MB_CG_MLP},             {"moe", MB_CG_MOE},
                   {"moe_router", MB_CG_MOE_ROUTER}, {"moe_preprocess", MB_CG_MOE_PREPROCESS},
                   {"mamba", MB_CG_MAMBA}};

/* The module list after "CUDA graph(s)" in a note ("attn+moe_router+moe_preprocess",
 * "for attention and Mamba"), as MB_CG_* flags; 0 when the list is absent, holds a
 * name this does not know, or names a module the model lacks (never guessed). */
static unsigned note_graph_modules(const char *p, const struct mb_model *m)
{
    unsigned cg = 0;
    if (*p == 's')
        p++;
    p += strspn(p, " :");
    if (!strncmp(p, "for ", 4))
        p += 4;
    while (*p) {
        size_t n = strcspn(p, "+ ");
        if (n == 3 && !strncmp(p, "and", 3)) {
            p += n + strspn(p + n, "+ ");
            continue;
        }
        unsigned f = 0;
        for (size_t i = 0; i < sizeof graph_names / sizeof graph_names[0]; i++)
            if (strlen(graph_names[i].name) == n && !strncmp(p, graph_names[i].name, n))
                f = graph_names[i].flag;
        if (!f)
            return 0;
        cg |= f;
        p += n + strspn(p + n, "+ ");
    }
    int moe = m->num_experts > 0, mamba = m->mamba_heads > 0;
    if (((cg & (MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS | MB_CG_MOE)) && !moe) || ((cg & MB_CG_MAMBA) && !mamba) ||
        ((cg & MB_CG_MOE_PREPROCESS) && !(cg & MB_CG_MOE_ROUTER)))
        return 0;
    return cg;
}

int mb_validate_apply_notes(struct mb_scenario *s, const char *notes, char *applied, size_t n)
{
    int moe_ep = s->model.num_experts > 0 && s->ep > 1, count = 0;
    char what[128];
    if (applied && n)
        applied[0] = '\0';
    const char *p = notes ? notes : "";
    while (*p) {
        size_t len = strcspn(p, ";,");
        char item[96];
        size_t k = 0;
        for (size_t i = 0; i < len && k < sizeof item - 1; i++)
            item[k++] = (char)tolower((unsigned char)p[i]);
        item[k] = '\0';
        const char *t = item + strspn(item, " \"");
        int sms;
        what[0] = '\0';
        if (moe_ep && !strncmp(t, "hybridep", 8)) {
            s->dispatcher = MB_DISP_HYBRIDEP;
            int given = sscanf(t + 8, "%d sms", &sms) == 1;
            if (given && sms > 0 && sms <= 1024)
                s->dispatcher_sms = sms;
            snprintf(what, sizeof what, "dispatcher hybridep (%d SMs%s)", s->dispatcher_sms,
                     given && (sms <= 0 || sms > 1024) ? "; the note's SM count is out of range" : "");
        } else if (moe_ep && !strncmp(t, "deepep", 6)) {
            s->dispatcher = MB_DISP_DEEPEP;
            snprintf(what, sizeof what, "dispatcher deepep");
        } else if (strstr(t, "ep overlap") || strstr(t, "ep comm overlap")) {
            int on = !note_negated(t), ok = moe_ep && (s->pp == 1 || s->vpp > 1);
            if (!on || ok) {
                s->overlap_ep_comm = on;
                snprintf(what, sizeof what, "EP overlap %s", on ? "on" : "off");
            } else {
                snprintf(what, sizeof what, "EP overlap not applicable (%s)",
                         moe_ep ? "pp > 1 without vpp" : "no expert parallelism");
            }
        } else if (!strncmp(t, "full-iteration cuda graph", 25) || strstr(t, "full_cuda_graph")) {
            s->cuda_graph = MB_CG_FULL_ITERATION;
            snprintf(what, sizeof what, "full-iteration CUDA graph");
        } else if (strstr(t, "cuda graphs off")) {
            s->cuda_graph = 0;
            snprintf(what, sizeof what, "no CUDA graphs");
        } else if (strstr(t, "cuda graph") && !strstr(t, "a/b")) {
            unsigned cg = note_graph_modules(strstr(t, "cuda graph") + 10, &s->model);
            if (cg) {
                char list[80] = "";
                unsigned said = 0;
                for (size_t i = 0; i < sizeof graph_names / sizeof graph_names[0]; i++)
                    if ((cg & graph_names[i].flag) && !(said & graph_names[i].flag)) {
                        size_t l = strlen(list);
                        snprintf(list + l, sizeof list - l, "%s%s", l ? "+" : "", graph_names[i].name);
                        said |= graph_names[i].flag;
                    }
                s->cuda_graph = cg;
                snprintf(what, sizeof what, "CUDA graphs %s", list);
            }
        }
        if (what[0]) {
            count++;
            if (applied && n)
                note_add(applied, n, what);
        }
        p += len;
        if (*p)
            p++;
    }
    return count;
}

/* Map one data record onto a scenario, simulate it, append the row. */
static int csv_record(struct csv_ctx *c)
{
    enum { I_GPUS, I_GBS, I_MBS, I_SEQ, I_TP, I_PP, I_CP, I_VP, I_EP, I_ETP, I_FSDP, I_N };
    static const int icol[I_N] = {C_GPUS, C_GBS, C_MBS, C_SEQ, C_TP, C_PP, C_CP, C_VP, C_EP, C_ETP, C_FSDP};
    int iv[I_N], ip[I_N], i;
    double tokens, tflops, step;
    struct mb_val_row *r;
    const char *key, *model_key;
    struct mb_precision prec;
    enum mb_rc_gran gran;
    unsigned mods;
    char why[200];
    struct mb_val__cache *cache = get_cache(c->out);
    const struct mb_val__model_ent *me;
    const struct mb_val__sys_ent *se;
    struct mb_scenario s;
    struct mb_err cerr;

    if (c->nf != c->n_header)
        return mb_err_set(c->err, c->path, c->rec_line, 1, "record has %zu fields, the header has %zu", c->nf,
                          c->n_header);
    /* numbers first: a malformed cell is an error even in a row that would be skipped */
    for (i = 0; i < I_N; i++)
        if (cell_int(c, icol[i], &iv[i], &ip[i]) != 0)
            return -1;
    if (cell_num(c, C_TOKENS, &tokens) || cell_num(c, C_TFLOPS, &tflops) || cell_num(c, C_STEP, &step) ||
        measured_positive(c, C_TOKENS, tokens) || measured_positive(c, C_TFLOPS, tflops) ||
        measured_positive(c, C_STEP, step))
        return -1;

    r = new_row(c->out);
    r->line = c->rec_line;
    copy_str(r->source, sizeof r->source, c->path);
    copy_str(r->id, sizeof r->id, cell(c, C_ID));
    if (!r->id[0])
        snprintf(r->id, sizeof r->id, "line %d", c->rec_line);
    model_key = cell(c, C_MODEL);
    copy_str(r->model, sizeof r->model, model_key);
    key = mb_validate_system_key(cell(c, C_SYSTEM));
    copy_str(r->system, sizeof r->system, key ? key : cell(c, C_SYSTEM));

    if (pick_metric(r, tokens, step, tflops) != 0)
        return 0;
    if (!*model_key) {
        skip_row(r, "model not stated");
        return 0;
    }
    if (!key) {
        char shown[64];
        copy_str(shown, sizeof shown, cell(c, C_SYSTEM));
        snprintf(why, sizeof why, "system '%s' has no preset", shown);
        skip_row(r, why);
        return 0;
    }
    if (mb_validate_precision(cell(c, C_PRECISION), key, &prec, why, sizeof why) != 0 ||
        mb_validate_recompute(cell(c, C_RECOMPUTE), &gran, &mods, why, sizeof why) != 0) {
        skip_row(r, why);
        return 0;
    }
    if (!ip[I_GPUS] || !ip[I_GBS] || !ip[I_MBS] || !ip[I_SEQ]) {
        static const int need[] = {I_GPUS, I_GBS, I_MBS, I_SEQ};
        size_t k, l;
        int n = 0;
        why[0] = '\0';
        for (k = 0; k < sizeof need / sizeof need[0]; k++) {
            if (ip[need[k]])
                continue;
            l = strlen(why);
            snprintf(why + l, sizeof why - l, "%s%s", n++ ? ", " : "", mb_val__colname[icol[need[k]]]);
        }
        l = strlen(why);
        snprintf(why + l, sizeof why - l, " not stated");
        skip_row(r, why);
        return 0;
    }
    me = cache_model(cache, model_key);
    if (!me->ok) {
        skip_row(r, me->why);
        return 0;
    }
    if (me->m.vision.depth > 0) {
        skip_row(r, "VLM row without image data");
        return 0;
    }
    se = cache_system(cache, key);
    if (!se->ok) {
        skip_row(r, se->why);
        return 0;
    }

    mb_scenario_defaults(&s);
    copy_str(s.name, sizeof s.name, r->id);
    s.file[0] = '\0';
    s.model = me->m;
    s.model.layer = NULL;
    if (me->m.n_layers > 0) {
        s.model.layer = mb_malloc((size_t)me->m.n_layers * sizeof *s.model.layer);
        memcpy(s.model.layer, me->m.layer, (size_t)me->m.n_layers * sizeof *s.model.layer);
    }
    s.system = se->sys;
    s.gpus = iv[I_GPUS];
    s.prec = prec;
    s.seq_length = iv[I_SEQ];
    s.global_batch_size = iv[I_GBS];
    s.micro_batch_size = iv[I_MBS];
    s.tp = ip[I_TP] ? iv[I_TP] : 1;
    s.pp = ip[I_PP] ? iv[I_PP] : 1;
    s.cp = ip[I_CP] ? iv[I_CP] : 1;
    s.vpp = ip[I_VP] ? iv[I_VP] : 1;
    s.ep = ip[I_EP] ? iv[I_EP] : 1;
    s.etp = ip[I_ETP] ? iv[I_ETP] : 1;
    s.strategy = (ip[I_FSDP] && iv[I_FSDP] > 0) ? MB_STRAT_FSDP : MB_STRAT_3D;
    s.recompute = gran;
    s.recompute_modules = mods;
    s.recompute_num_layers = 0;
    /* LoRA fine-tuning (notes "task=lora"): the base model is frozen; the adapters'
     * own weights, gradients and optimizer state are negligible next to it */
    if (c->notes_idx >= 0 && strstr(c->f[c->notes_idx].text, "task=lora"))
        s.freeze = MB_FREEZE_LANGUAGE | (s.model.vision.depth > 0 ? MB_FREEZE_VISION | MB_FREEZE_VISION_PROJ : 0);
    char applied[200] = "";
    if (c->notes_idx >= 0)
        mb_validate_apply_notes(&s, c->f[c->notes_idx].text, applied, sizeof applied);
    s.meas_tokens_per_s_per_gpu = tokens;
    s.meas_model_tflops_per_gpu = tflops;
    s.meas_step_time_s = step;
    s.roofline = c->out->roofline;

    mb_err_clear(&cerr);
    if (mb_scenario_check(&s, &cerr) != 0) {
        char msg[600];
        mb_err_format(&cerr, msg, sizeof msg);
        copy_str(why, sizeof why, msg);
        skip_row(r, why);
    } else {
        predict_row(r, &s, s.strategy == MB_STRAT_FSDP ? iv[I_FSDP] : 0, applied);
        if (!r->skipped && c->out->on_row)
            c->out->on_row(c->out->on_row_ctx, r, &s);
    }
    mb_scenario_free(&s);
    return 0;
}

static void csv_on_record(int term, void *vctx)
{
    struct csv_ctx *c = vctx;
    size_t i;
    (void)term;
    /* a line holding only blanks is one empty field: not a record */
    int blank = c->nf == 1 && !*trim(c->f[0].text);
    if (!c->failed && !blank) {
        int rc = c->have_header ? csv_record(c) : csv_header(c);
        if (rc != 0)
            c->failed = 1;
    }
    for (i = 0; i < c->nf; i++)
        mb_free(c->f[i].text);
    c->nf = 0;
    c->rec_pending = 1;
}

static char *read_file(const char *path, size_t *len, struct mb_err *err)
{
    if (mb_dir_exists(path)) {
        mb_err_set(err, path, 0, 0, "is a directory, expected a CSV file");
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    if (!fp) {
        mb_err_set(err, path, 0, 0, "cannot open (%s)", strerror(errno));
        return NULL;
    }
    do {
        if (cap - n < 65536) {
            cap = cap ? 2 * cap : 262144;
            buf = mb_realloc(buf, cap);
        }
        got = fread(buf + n, 1, cap - n, fp);
        n += got;
    } while (got > 0);
    if (ferror(fp)) {
        mb_err_set(err, path, 0, 0, "read error");
        fclose(fp);
        mb_free(buf);
        return NULL;
    }
    fclose(fp);
    *len = n;
    return buf;
}

int mb_validate_add_csv(struct mb_val_summary *out, const char *path, struct mb_err *err)
{
    struct csv_parser p;
    struct csv_ctx c;
    size_t len, i;
    char *buf;
    int rc = 0;

    buf = read_file(path, &len, err);
    if (!buf)
        return -1;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        mb_free(buf);
        return mb_err_set(err, path, 0, 0, "cannot initialise the CSV parser");
    }
    memset(&c, 0, sizeof c);
    c.path = path;
    c.out = out;
    c.err = err;
    c.line = 1;
    c.col = 1;
    c.rec_pending = 1;

    for (i = 0; i < len && !c.failed; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (c.rec_pending && ch != '\r' && ch != '\n') {
            c.rec_pending = 0;
            c.rec_line = c.fline = c.line;
            c.fcol = c.col;
        }
        if (csv_parse(&p, &buf[i], 1, csv_on_field, csv_on_record, &c) != 1) {
            if (csv_error(&p) == CSV_EPARSE)
                rc = mb_err_set(err, path, c.line, c.col,
                                "malformed quoted field (a quote inside an unquoted field, or text after a "
                                "closing quote)");
            else
                rc = mb_err_set(err, path, c.line, c.col, "CSV parser: %s", csv_strerror(csv_error(&p)));
            c.failed = 1;
            break;
        }
        if (ch == '\n') {
            c.line++;
            c.col = 1;
        } else {
            c.col++;
        }
    }
    if (!c.failed && csv_fini(&p, csv_on_field, csv_on_record, &c) != 0)
        rc = mb_err_set(err, path, c.fline, c.fcol, "unterminated quoted field at end of file");
    if (c.failed)
        rc = -1;
    if (!rc && !c.have_header)
        rc = mb_err_set(err, path, 0, 0, "empty file (no header row)");
    for (i = 0; i < c.nf; i++)
        mb_free(c.f[i].text);
    mb_free(c.f);
    csv_free(&p);
    mb_free(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
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
    r = new_row(out);
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    copy_str(r->id, sizeof r->id, s.name[0] ? s.name : base);
    copy_str(r->model, sizeof r->model, s.model.name);
    copy_str(r->system, sizeof r->system, s.system.name);
    copy_str(r->source, sizeof r->source, path);
    if (s.meas_tokens_per_s_per_gpu <= 0 && s.meas_step_time_s <= 0 && s.meas_model_tflops_per_gpu <= 0)
        skip_row(r, "no measured block");
    else if (pick_metric(r, s.meas_tokens_per_s_per_gpu, s.meas_step_time_s, s.meas_model_tflops_per_gpu) == 0) {
        s.roofline |= out->roofline;
        predict_row(r, &s, 0, NULL);
        if (!r->skipped && out->on_row)
            out->on_row(out->on_row_ctx, r, &s);
    }
    mb_scenario_free(&s);
    return 0;
}

/* ------------------------------------------------------------------ */
/* summary                                                            */
/* ------------------------------------------------------------------ */

struct name_val {
    const char *name;
    double v;
};

static int cmp_name_val(const void *a, const void *b)
{
    return strcmp(((const struct name_val *)a)->name, ((const struct name_val *)b)->name);
}

/* Group (name, |err|) pairs by name: sorted by name, MAPE per group. */
static struct mb_val_group *group_by(const struct mb_val_summary *s, size_t field_off, size_t *n_out)
{
    struct name_val *nv = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *nv);
    struct mb_val_group *g = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *g);
    size_t i, n = 0, ng = 0;
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (r->skipped)
            continue;
        nv[n].name = (const char *)r + field_off;
        nv[n].v = fabs(r->err_pct);
        n++;
    }
    qsort(nv, n, sizeof *nv, cmp_name_val);
    for (i = 0; i < n;) {
        size_t j = i;
        double sum = 0.0;
        while (j < n && !strcmp(nv[j].name, nv[i].name))
            sum += nv[j++].v;
        copy_str(g[ng].name, sizeof g[ng].name, nv[i].name);
        g[ng].n = j - i;
        g[ng].mape_pct = sum / (double)(j - i);
        ng++;
        i = j;
    }
    mb_free(nv);
    *n_out = ng;
    return g;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_reason(const void *a, const void *b)
{
    const struct mb_val_reason *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->reason, y->reason);
}

void mb_validate_finish(struct mb_val_summary *out)
{
    size_t i, n = 0, ns = 0;
    double *e;
    const char **why;

    cache_free(out->cache);
    out->cache = NULL;
    mb_free(out->by_system);
    mb_free(out->by_model);
    mb_free(out->by_metric);
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
        if (out->max_ape_row == (size_t)-1 || fabs(r->err_pct) > fabs(out->rows[out->max_ape_row].err_pct))
            out->max_ape_row = i;
        e[n++] = r->err_pct;
    }
    mb_validate_stats(e, n, &out->mape_pct, &out->median_ape_pct, &out->max_ape_pct);
    mb_free(e);

    out->by_system = group_by(out, offsetof(struct mb_val_row, system), &out->n_by_system);
    out->by_model = group_by(out, offsetof(struct mb_val_row, model), &out->n_by_model);
    out->by_metric = group_by(out, offsetof(struct mb_val_row, metric), &out->n_by_metric);

    qsort(why, ns, sizeof *why, cmp_str_ptr);
    out->reasons = mb_malloc((ns ? ns : 1) * sizeof *out->reasons);
    out->n_reasons = 0;
    for (i = 0; i < ns;) {
        size_t j = i;
        while (j < ns && !strcmp(why[j], why[i]))
            j++;
        copy_str(out->reasons[out->n_reasons].reason, sizeof out->reasons[0].reason, why[i]);
        out->reasons[out->n_reasons].count = j - i;
        out->n_reasons++;
        i = j;
    }
    qsort(out->reasons, out->n_reasons, sizeof *out->reasons, cmp_reason);
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
    cache_free(s->cache);
    mb_free(s->by_system);
    mb_free(s->by_model);
    mb_free(s->by_metric);
    mb_free(s->reasons);
    mb_free(s->rows);
    mb_validate_init(s);
}

/* ------------------------------------------------------------------ */
/* output                                                             */
/* ------------------------------------------------------------------ */

static const char *metric_short(const char *m)
{
    if (!strcmp(m, MB_VAL_TOKENS))
        return "tok/s/gpu";
    if (!strcmp(m, MB_VAL_STEP))
        return "step_s";
    if (!strcmp(m, MB_VAL_TFLOPS))
        return "tflops/gpu";
    return m;
}

static void print_groups(FILE *fp, const char *title, const struct mb_val_group *g, size_t n)
{
    size_t i;
    fprintf(fp, "MAPE by %s:\n", title);
    for (i = 0; i < n; i++)
        fprintf(fp, "  %-28s %4zu row%s %7.1f %%\n", g[i].name, g[i].n, g[i].n == 1 ? " " : "s",
                g[i].mape_pct);
}

void mb_validate_print_text(const struct mb_val_summary *s, FILE *fp)
{
    size_t i;
    char id[48];

    fprintf(fp, "%-40s %-24s %-12s %-10s %12s %12s %8s\n", "id", "model", "system", "metric", "measured",
            "predicted", "err%");
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (r->skipped)
            continue;
        if (strlen(r->id) > 40)
            snprintf(id, sizeof id, "%.37s...", r->id);
        else
            copy_str(id, sizeof id, r->id);
        fprintf(fp, "%-40s %-24.24s %-12.12s %-10s %12.6g %12.6g %+8.1f%s%s\n", id, r->model, r->system,
                metric_short(r->metric), r->measured, r->predicted, r->err_pct, r->note[0] ? "  # " : "",
                r->note);
    }
    fprintf(fp, "\npredicted rows: %zu of %zu\n", s->n_predicted, s->n_rows);
    fprintf(fp, "skipped rows: %zu\n", s->n_skipped);
    for (i = 0; i < s->n_reasons; i++)
        fprintf(fp, "  %4zu  %s\n", s->reasons[i].count, s->reasons[i].reason);
    if (s->n_predicted == 0) {
        fprintf(fp, "MAPE: n/a (no row predicted)\n");
        return;
    }
    fprintf(fp, "MAPE: %.2f %%   median APE: %.2f %%   max APE: %.2f %% (%s)\n", s->mape_pct, s->median_ape_pct,
            s->max_ape_pct, s->max_ape_row < s->n_rows ? s->rows[s->max_ape_row].id : "");
    print_groups(fp, "system", s->by_system, s->n_by_system);
    print_groups(fp, "model", s->by_model, s->n_by_model);
    print_groups(fp, "metric", s->by_metric, s->n_by_metric);
}

/* json_real that maps NaN/inf to null (JSON has no NaN). */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *group_obj(const struct mb_val_group *g, size_t n)
{
    json_t *o = json_object();
    size_t i;
    for (i = 0; i < n; i++)
        json_object_set_new(o, g[i].name, jnum(g[i].mape_pct));
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
    json_object_set_new(root, "mape_pct", jnum(s->mape_pct));
    json_object_set_new(root, "median_ape_pct", jnum(s->median_ape_pct));
    json_object_set_new(root, "max_ape_pct", jnum(s->max_ape_pct));
    json_object_set_new(root, "mape_by_system", group_obj(s->by_system, s->n_by_system));
    json_object_set_new(root, "mape_by_model", group_obj(s->by_model, s->n_by_model));
    json_object_set_new(root, "mape_by_metric", group_obj(s->by_metric, s->n_by_metric));
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
            json_object_set_new(o, "measured", jnum(r->measured));
        }
        if (r->skipped) {
            json_object_set_new(o, "skipped", json_true());
            json_object_set_new(o, "reason", json_string(r->reason));
        } else {
            json_object_set_new(o, "predicted", jnum(r->predicted));
            json_object_set_new(o, "err_pct", jnum(r->err_pct));
            if (r->note[0])
                json_object_set_new(o, "note", json_string(r->note));
        }
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "rows", rows);
    rc = json_dumpf(root, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (rc == 0 && fputc('\n', fp) == EOF)
        rc = -1;
    json_decref(root);
    return rc == 0 ? 0 : -1;
}
