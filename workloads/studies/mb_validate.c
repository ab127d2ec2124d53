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
#include "mb_validate.h"
#include "mb_input.h"
#include "mb_keys.h"
#include "mb_topo.h"

#include <csv.h>
#include <jansson.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
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

/* The recipe columns (mb_val_rcol order), as the CSV header names them. */
static const char *const mb_val__rcolname[MB_VAL_RC_COUNT] = {
    "dispatcher", "ep_overlap", "cuda_graph",  "recompute_detail", "tp_overlap", "fsdp_impl",
    "cpu_offload", "fp8_recipe", "ce_fusion", "mtp_layers",       "pp_layout",  "other_recipe",
};

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

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
    /* mbsim's own preset names (gb200_nvl72, dgx_h100_4nic, ...) stand for themselves, and so
     * does the path of a system file (relative to the working directory, as scenarios' are) */
    if (strcmp(t, csv_system))
        return NULL;
    if (mb_topo_is_preset(csv_system))
        return csv_system;
    return strchr(csv_system, '/') && (ends_with(csv_system, ".yaml") || ends_with(csv_system, ".yml")) &&
                   mb_file_exists(csv_system)
               ? csv_system
               : NULL;
}

static int is_blackwell(const char *key)
{
    if (!key)
        return 0;
    if (!strcmp(key, "dgx_b200") || !strcmp(key, "dgx_b300") || !strcmp(key, "gb200_nvl72") ||
        !strcmp(key, "gb300_nvl72"))
        return 1;
    if (!strchr(key, '/'))
        return 0;
    /* a system file: its GPU */
    struct mb_system *sys = mb_calloc(1, sizeof *sys);
    struct mb_err err;
    mb_err_clear(&err);
    int bw = mb_topo_load_system(key, sys, &err) == 0 && mb_topo_gpu_blackwell(sys->gpu);
    mb_free(sys);
    return bw;
}

/* mb_precision_parse, retried with '-' -> '_' (fp8-cs -> fp8_cs). */
void mb_validate_precision_key(const char *label, char *out, size_t n)
{
    copy_str(out, n, label);
    lower(out);
    for (char *p = out; *p; p++)
        if (*p == '-' || *p == ' ')
            *p = '_';
}

static int parse_prec_base(const char *base, struct mb_precision *out)
{
    char alt[64];
    if (mb_precision_parse(base, out) == 0)
        return 0;
    mb_validate_precision_key(base, alt, sizeof alt);
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
    int ok, unknown; /* unknown: no model of that name or path (a typo), not a file that fails to load */
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
    size_t keep_models, keep_systems; /* a shared cache: entries kept by mb_validate_cache_keep */
};

/* Drop the entries after the first n_models / n_systems. */
static void cache_trim(struct mb_val__cache *c, size_t n_models, size_t n_systems)
{
    size_t i;
    for (i = n_models; i < c->n_models; i++)
        if (c->models[i].ok)
            mb_model_free(&c->models[i].m);
    if (c->n_models > n_models)
        c->n_models = n_models;
    if (c->n_systems > n_systems)
        c->n_systems = n_systems;
}

static void cache_free(struct mb_val__cache *c)
{
    if (!c)
        return;
    cache_trim(c, 0, 0);
    mb_free(c->models);
    mb_free(c->systems);
    mb_free(c);
}

struct mb_val__cache *mb_validate_cache_new(void)
{
    return mb_calloc(1, sizeof(struct mb_val__cache));
}

void mb_validate_cache_keep(struct mb_val__cache *c)
{
    c->keep_models = c->n_models;
    c->keep_systems = c->n_systems;
}

void mb_validate_cache_free(struct mb_val__cache *c)
{
    cache_free(c);
}

/* A summary is done with its cache: its own is freed; a shared one loses what the summary added. */
static void release_cache(struct mb_val_summary *out)
{
    if (out->shared_cache)
        cache_trim(out->shared_cache, out->shared_cache->keep_models, out->shared_cache->keep_systems);
    else
        cache_free(out->cache);
    out->cache = NULL;
}

/* The loader's own message in a cache entry's "... does not load: MSG". */
static const char *load_error(const char *why)
{
    const char *p = strstr(why, "does not load: ");
    return p ? p + strlen("does not load: ") : why;
}

/* A model or system cell that names a file (a '/' or a .yaml ending) rather than a shipped name. */
static int is_file_ref(const char *key)
{
    size_t n = strlen(key);
    return strchr(key, '/') || (n > 5 && !strcmp(key + n - 5, ".yaml")) || (n > 4 && !strcmp(key + n - 4, ".yml"));
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
    } else if (!strncmp(err.msg, "unknown model", 13) || !strncmp(err.msg, "cannot open", 11)) {
        e->unknown = 1;
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
    out->median_err_pct = out->mape_layout_mismatch_pct = out->mape_layout_ok_pct = NAN;
    out->mape_mem_pct = out->median_mem_err_pct = NAN;
    out->max_ape_row = (size_t)-1;
}

static struct mb_val__cache *get_cache(struct mb_val_summary *out)
{
    if (out->shared_cache)
        return out->shared_cache;
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

#define GIB 1073741824.0

/* The predicted peak of a kind ("allocated", "reserved", "device") on the rank of one pipeline stage;
 * first_iter: through the first iteration only, whose allocation is lower by (peak_allocated -
 * first_iter_allocated) at the same reserve and outside terms. */
static double stage_mem(const struct mb_memory_stage *st, const char *kind, int first_iter)
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
static void row_memory(struct mb_val_row *r, const struct mb_memory *m)
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
            best = stage_mem(&m->per_stage[m->n_stages - 1], r->mem_kind, r->mem_first_iter);
        } else if (m->n_stages > 0) {
            for (int st = 0; st < m->n_stages; st++)
                best = fmax(best, stage_mem(&m->per_stage[st], r->mem_kind, r->mem_first_iter));
        } else {
            struct mb_memory_stage one = {.peak_allocated = m->peak_allocated, .reserved = m->reserved,
                                          .device = m->device, .first_iter_allocated = m->first_iter_allocated};
            best = stage_mem(&one, r->mem_kind, r->mem_first_iter);
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
static void predict_row(struct mb_val_row *r, const struct mb_scenario *s, int fsdp_group, const char *head,
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
        skip_row(r, why);
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
            skip_row(r, why);
            return;
        }
        r->predicted = pred;
        r->err_pct = (pred - r->measured) / r->measured * 100.0;
    }
    row_memory(r, &res.mem);
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

/* One row waiting for its simulation; owns s, head and tail. */
struct mb_val__job {
    size_t row;      /* index in rows[] (the array may move while rows are added) */
    struct mb_scenario s;
    int fsdp_group;
    char *head, *tail;
};

struct mb_val__pool {
    struct mb_val_summary *out;
    size_t next, done;
    pthread_mutex_t mu;
};

static void report_progress(struct mb_val_summary *out, size_t done)
{
    if (out->on_progress)
        out->on_progress(out->on_progress_ctx, done);
}

/* Claim and simulate jobs until none is left; the calling thread
 * (is_main) reports progress after each of its jobs. */
static void run_jobs(struct mb_val__pool *p, int is_main)
{
    struct mb_val_summary *out = p->out;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t k = p->next < out->n_pending ? p->next++ : out->n_pending;
        size_t done = p->done;
        pthread_mutex_unlock(&p->mu);
        if (is_main && done)
            report_progress(out, out->n_rows - out->n_pending + done);
        if (k == out->n_pending)
            return;
        struct mb_val__job *j = &out->pending[k];
        predict_row(&out->rows[j->row], &j->s, j->fsdp_group, j->head, j->tail);
        pthread_mutex_lock(&p->mu);
        p->done++;
        pthread_mutex_unlock(&p->mu);
    }
}

static void *job_worker(void *arg)
{
    run_jobs(arg, 0);
    return NULL;
}

/* Simulate the pending rows on out->jobs threads, then, in row order, call
 * on_row and free the jobs. */
static void flush_jobs(struct mb_val_summary *out)
{
    if (!out->n_pending)
        return;
    struct mb_val__pool p = {out, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    int nt = out->jobs < 1 ? 1 : out->jobs;
    if ((size_t)nt > out->n_pending)
        nt = (int)out->n_pending;
    pthread_t *th = mb_calloc((size_t)nt, sizeof *th);
    int started = 0;
    for (int t = 1; t < nt; t++) /* the calling thread is worker 0 */
        if (pthread_create(&th[started], NULL, job_worker, &p) == 0)
            started++;
    run_jobs(&p, 1);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    mb_free(th);
    pthread_mutex_destroy(&p.mu);
    for (size_t k = 0; k < out->n_pending; k++) {
        struct mb_val__job *j = &out->pending[k];
        if (!out->rows[j->row].skipped && out->on_row)
            out->on_row(out->on_row_ctx, &out->rows[j->row], &j->s);
        mb_scenario_free(&j->s);
        mb_free(j->head);
        mb_free(j->tail);
    }
    out->n_pending = 0;
    report_progress(out, out->n_rows);
}

/* Predict row r from s (taken: s is left empty, head and tail are freed by
 * the callee): now, or in the next batch when out->jobs > 1. */
static void submit_row(struct mb_val_summary *out, struct mb_val_row *r, struct mb_scenario *s, int fsdp_group,
                       char *head, char *tail)
{
    if (out->jobs <= 1) {
        predict_row(r, s, fsdp_group, head, tail);
        if (!r->skipped && out->on_row)
            out->on_row(out->on_row_ctx, r, s);
        mb_scenario_free(s);
        mb_free(head);
        mb_free(tail);
        return;
    }
    if (!out->pending)
        out->pending = mb_calloc(MB_VAL_BATCH, sizeof *out->pending);
    struct mb_val__job *j = &out->pending[out->n_pending++];
    j->row = (size_t)(r - out->rows);
    j->s = *s;
    memset(s, 0, sizeof *s);
    j->fsdp_group = fsdp_group;
    j->head = head;
    j->tail = tail;
    if (out->n_pending == MB_VAL_BATCH)
        flush_jobs(out);
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
    int source_idx, match_idx;     /* optional "source" and "recipe_match" columns, -1 if absent */
    int date_idx;                  /* optional "source_date" column (YYYY-MM-DD), -1 if absent */
    int mem_idx, kind_idx;         /* optional "peak_memory_gib" and "peak_memory_kind", -1 if absent */
    int ridx[MB_VAL_RC_COUNT];     /* optional recipe columns, -1 if absent */
    int have_recipe;               /* any recipe column present: the notes are not read for the recipe */
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
    c->notes_idx = c->source_idx = c->match_idx = c->mem_idx = c->kind_idx = c->date_idx = -1;
    c->have_recipe = 0;
    for (k = 0; k < MB_VAL_RC_COUNT; k++)
        c->ridx[k] = -1;
    for (i = 0; i < c->nf; i++) {
        char *name = trim(c->f[i].text);
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
    /* layout counts: at least 1 (fsdp: 0 = off); a 0 or negative one is a typo, not a row to skip */
    if (x < (k == C_FSDP ? 0 : 1))
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': expected %s integer, got '%.60s'",
                          mb_val__colname[k], k == C_FSDP ? "a non-negative (0: no FSDP)" : "a positive", s);
    *v = (int)x;
    *present = 1;
    return 0;
}

/* Number cell of field `fi` (header name `name`): 0 when empty/null. */
static int cell_num_at(struct csv_ctx *c, int fi, const char *name, double *v)
{
    struct csv_field *f = &c->f[fi];
    char *s = trim(f->text), *end;
    double x;
    *v = 0.0;
    if (is_absent(s))
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
static int cell_num(struct csv_ctx *c, int k, double *v)
{
    return cell_num_at(c, c->idx[k], mb_val__colname[k], v);
}

/* The optional measured-memory cells: peak_memory_gib (positive when given)
 * and peak_memory_kind (allocated / reserved / device, empty = allocated). */
static int cell_memory(struct csv_ctx *c, double *gib, const char **kind)
{
    static const char *const kinds[] = {"allocated", "reserved", "device"};
    *gib = 0.0;
    *kind = kinds[0];
    if (c->mem_idx >= 0) {
        struct csv_field *f = &c->f[c->mem_idx];
        if (cell_num_at(c, c->mem_idx, "peak_memory_gib", gib) != 0)
            return -1;
        if (!is_absent(trim(f->text)) && !(*gib > 0))
            return mb_err_set(c->err, c->path, f->line, f->col,
                              "column 'peak_memory_gib': expected a positive number, got '%.60s'", trim(f->text));
    }
    if (c->kind_idx >= 0) {
        struct csv_field *f = &c->f[c->kind_idx];
        const char *t = trim(f->text);
        if (is_absent(t))
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
static int measured_positive(struct csv_ctx *c, int k, double v)
{
    struct csv_field *f = &c->f[c->idx[k]];
    double hi = k == C_TOKENS ? 1e8 : k == C_TFLOPS ? 1e5 : 1e7;
    if (is_absent(trim(f->text)) || (v > 0 && v <= hi))
        return 0;
    if (v > hi)
        return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': %.60s is beyond any training run "
                          "(at most %g); expected the measured value", mb_val__colname[k], trim(f->text), hi);
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

/* The word before position `at` of `text`, lower case, in w (size n); "" at the start. */
static void word_before(const char *text, const char *at, char *w, size_t n)
{
    const char *e = at, *b;
    size_t k = 0;
    while (e > text && !isalnum((unsigned char)e[-1]))
        e--;
    b = e;
    while (b > text && isalpha((unsigned char)b[-1]))
        b--;
    for (; b < e && k + 1 < n; b++)
        w[k++] = (char)tolower((unsigned char)*b);
    w[k] = '\0';
}

int mb_validate_notes_oom(const char *notes)
{
    static const char *const neg[] = {"no", "not", "without", "avoid", "avoids", NULL};
    const char *p = notes ? notes : "";
    for (const char *q = p; *q; q++) {
        size_t len = 0;
        if (!strncasecmp(q, "oom", 3) && !isalpha((unsigned char)q[3]))
            len = 3;
        else if (!strncasecmp(q, "out of memory", 13))
            len = 13;
        if (!len || (q > p && isalnum((unsigned char)q[-1])))
            continue;
        char w[16];
        int negated = 0;
        word_before(p, q, w, sizeof w);
        for (int i = 0; neg[i]; i++)
            negated |= !strcmp(w, neg[i]);
        if (!negated)
            return 1;
        q += len - 1;
    }
    return 0;
}

int mb_validate_notes_peak_memory(const char *notes, double *gib)
{
    const char *p = notes ? notes : "";
    *gib = 0.0;
    while (*p) {
        size_t len = strcspn(p, ";");
        char item[128], *t, *end;
        size_t k = len < sizeof item ? len : 0; /* an item this long is not "peak N GB" */
        memcpy(item, p, k);
        item[k] = '\0';
        t = trim(item);
        if (!strncasecmp(t, "peak ", 5)) {
            t += 5;
            t += strspn(t, " ");
            errno = 0;
            double v = isdigit((unsigned char)*t) ? strtod(t, &end) : 0.0;
            if (v > 0 && isfinite(v) && errno == 0) {
                end += strspn(end, " ");
                size_t u = strcspn(end, " ,(");
                if (u == 3 && !strncasecmp(end, "GiB", 3)) {
                    *gib = v;
                    return 1;
                }
                if (u == 2 && !strncasecmp(end, "GB", 2)) {
                    *gib = v * 1e9 / 1073741824.0;
                    return 1;
                }
            }
        }
        p += len;
        if (*p)
            p++;
    }
    return 0;
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

/* ------------------------------------------------------------------ */
/* recipe columns                                                     */
/* ------------------------------------------------------------------ */

/*
 * One function per column, each reading the vocabulary of
 * shared/data/measured/README.md. The cell is lower-cased first; "(...)" and
 * "[...]" hold remarks and flags. A column handler sets scenario fields only
 * when the cell parses and applies; it lists in r what it set (only values
 * that differ from what the scenario held), what it cannot model, and why a
 * cell was refused. Nothing is guessed: an empty cell is "not determinable".
 */

const char *mb_validate_recipe_column(enum mb_val_rcol col)
{
    return (int)col >= 0 && col < MB_VAL_RC_COUNT ? mb_val__rcolname[col] : NULL;
}

void mb_validate_recipe_init(struct mb_val_recipe *r)
{
    memset(r, 0, sizeof *r);
}

#if defined(__GNUC__)
#define MB_VAL__FMT(a, b) __attribute__((format(printf, a, b)))
#else
#define MB_VAL__FMT(a, b)
#endif

/* Append a formatted item to a comma-separated list. */
static void MB_VAL__FMT(3, 4) rl_add(char *buf, size_t n, const char *fmt, ...)
{
    char item[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    note_add(buf, n, item);
}

/* A cell as shown in messages: at most 60 characters, "..." when cut. */
static const char *rc_shown(const char *cell, char *buf, size_t n)
{
    size_t l = strlen(cell);
    if (l < 61 || n < 64)
        copy_str(buf, n, cell);
    else
        snprintf(buf, n, "%.57s...", cell);
    return buf;
}

/* Record an unparseable cell: "column 'cell': why". Returns -1. */
static int MB_VAL__FMT(4, 5) rc_bad(struct mb_val_recipe *r, enum mb_val_rcol col, const char *cell,
                                    const char *fmt, ...)
{
    char why[200], sh[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rl_add(r->bad, sizeof r->bad, "%s '%s': %s", mb_val__rcolname[col], rc_shown(cell, sh, sizeof sh), why);
    r->n_bad++;
    return -1;
}

/* Lower-cased, trimmed copy. */
static char *rc_lower(char *dst, size_t n, const char *src)
{
    copy_str(dst, n, src);
    lower(dst);
    return trim(dst);
}

/* The text before the first '(' or '[' (trimmed), into dst. */
static char *rc_head(char *dst, size_t n, const char *t)
{
    copy_str(dst, n, t);
    dst[strcspn(dst, "([")] = '\0';
    return trim(dst);
}

/* Characters of an item shown in a list: its length, at most 60. */
static int rc_len60(const char *item)
{
    size_t n = strlen(item);
    return n < 60 ? (int)n : 60;
}

static int rc_is_na(const char *t)
{
    return !strncmp(t, "n/a", 3);
}

/* "true" / "false" at the start of v (up to a space, ',' or '('): 1 / 0, else -1. */
static int rc_bool(const char *v)
{
    size_t n = strcspn(v, " ,(");
    if (n == 4 && !strncmp(v, "true", 4))
        return 1;
    if (n == 5 && !strncmp(v, "false", 5))
        return 0;
    return -1;
}

/* A non-negative integer at *p (leading blanks skipped); -1 if none. */
static long rc_int(const char **p)
{
    const char *s = *p + strspn(*p, " ");
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE || v > 1000000)
        return -1;
    *p = end;
    return v;
}

/* dispatcher: alltoall, allgather, flex:deepep, flex:hybridep (moe_hybridep_num_sms=N);
 * "(card)" and other remarks ignored; an SM count also as "[--moe-deepep-num-sms N]". */
static int rc_dispatcher(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    char head[64];
    const char *name = rc_head(head, sizeof head, t), *p;
    enum mb_dispatcher d;
    long sms = 0;
    if (!strncmp(name, "flex:", 5))
        name += 5;
    if (!strcmp(name, "alltoall"))
        d = MB_DISP_ALLTOALL;
    else if (!strcmp(name, "allgather"))
        d = MB_DISP_ALLGATHER;
    else if (!strcmp(name, "deepep"))
        d = MB_DISP_DEEPEP;
    else if (!strcmp(name, "hybridep"))
        d = MB_DISP_HYBRIDEP;
    else
        return rc_bad(r, MB_VAL_RC_DISPATCHER, cell, "expected alltoall, allgather, flex:deepep or flex:hybridep");
    if ((p = strstr(t, "num_sms=")) != NULL || (p = strstr(t, "num-sms")) != NULL) {
        p += p[7] == '=' ? 8 : 7;
        sms = rc_int(&p);
        if (sms < 1 || sms > 1024)
            return rc_bad(r, MB_VAL_RC_DISPATCHER, cell, "SM count is not an integer in 1..1024");
    }
    if (s->model.num_experts <= 0 || s->ep <= 1) {
        if (d != MB_DISP_ALLTOALL)
            rl_add(r->not_applied, sizeof r->not_applied, "dispatcher %s (%s)", mb_key_value_name("moe.dispatcher", d),
                   s->model.num_experts <= 0 ? "dense model" : "ep = 1");
        return 0;
    }
    int changed = d != s->dispatcher || (sms && sms != s->dispatcher_sms);
    s->dispatcher = d;
    if (sms)
        s->dispatcher_sms = (int)sms;
    if (changed) {
        if (d == MB_DISP_HYBRIDEP || d == MB_DISP_DEEPEP)
            rl_add(r->applied, sizeof r->applied, "dispatcher %s (%d SMs%s)", mb_key_value_name("moe.dispatcher", d), s->dispatcher_sms,
                   sms ? "" : ", SM count not stated: default");
        else
            rl_add(r->applied, sizeof r->applied, "dispatcher %s", mb_key_value_name("moe.dispatcher", d));
    }
    return 0;
}

/* ep_overlap: on (overlap_moe_expert_parallel_comm[, delay_wgrad_compute | , no delay_wgrad]) / off (...) */
static int rc_ep_overlap(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    int on;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))
        on = 1;
    else if (!strncmp(t, "off", 3) && !isalnum((unsigned char)t[3]))
        on = 0;
    else
        return rc_bad(r, MB_VAL_RC_EP_OVERLAP, cell, "expected on (...) or off");
    int delay = on && strstr(t, "delay_wgrad") && !strstr(t, "no delay_wgrad") &&
                !strstr(t, "delay_wgrad_compute=false");
    int moe_ep = s->model.num_experts > 0 && s->ep > 1;
    if (on && (!moe_ep || (s->pp > 1 && s->vpp < 2))) {
        rl_add(r->not_applied, sizeof r->not_applied, "EP overlap (%s)",
               moe_ep ? "pp > 1 without vpp" : "no expert parallelism");
        return 0;
    }
    if (s->overlap_ep_comm != on)
        rl_add(r->applied, sizeof r->applied, "EP overlap %s", on ? "on" : "off");
    s->overlap_ep_comm = on;
    if (delay)
        rl_add(r->unmodelled, sizeof r->unmodelled, "delay_wgrad_compute");
    return 0;
}

/* cuda_graph: none, full_iteration, te:<scopes>, local:<scopes>, local:full_layer (...);
 * "enabled (scope not stated)" is not determinable. */
static int rc_cuda_graph(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    unsigned cg = 0;
    char scopes[128] = "";
    if (!strncmp(t, "none", 4)) {
        cg = 0;
    } else if (!strncmp(t, "full_iteration", 14)) {
        cg = MB_CG_FULL_ITERATION;
        copy_str(scopes, sizeof scopes, "full_iteration");
    } else if (!strncmp(t, "te:", 3) || !strncmp(t, "local:", 6)) {
        char list[128], *save = NULL;
        copy_str(list, sizeof list, strchr(t, ':') + 1);
        list[strcspn(list, " ([")] = '\0';
        copy_str(scopes, sizeof scopes, t);
        scopes[strcspn(scopes, " ([")] = '\0';
        if (!list[0])
            return rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "no scope after '%.8s'", t);
        for (char *it = strtok_r(list, "+", &save); it; it = strtok_r(NULL, "+", &save)) {
            unsigned f = !strcmp(it, "full_layer") ? MB_CG_LAYER : mb_cuda_graph_module(it);
            if (!f)
                return rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "unknown scope '%.40s'", it);
            cg |= f;
        }
        if ((cg & MB_CG_FULL_ITERATION) && cg != MB_CG_FULL_ITERATION)
            return rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "full_iteration goes alone");
    } else if (!strncmp(t, "enabled", 7) || (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))) {
        rl_add(r->defaulted, sizeof r->defaulted, "cuda_graph (scope not stated)");
        return 0;
    } else {
        return rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "expected none, full_iteration, te:<scopes> or local:<scopes>");
    }
    if (cg != s->cuda_graph)
        rl_add(r->applied, sizeof r->applied, "CUDA graphs %s", cg ? scopes : "none");
    s->cuda_graph = cg;
    return 0;
}

static void rc_describe(char *buf, size_t n, enum mb_rc_gran g, unsigned mods, enum mb_rc_method meth, int layers)
{
    if (g == MB_RC_NONE) {
        snprintf(buf, n, "none");
    } else if (g == MB_RC_FULL) {
        if (layers > 0)
            snprintf(buf, n, "full %s %d layer%s", meth == MB_RC_BLOCK ? "block" : "uniform", layers,
                     layers == 1 ? "" : "s");
        else
            snprintf(buf, n, "full");
    } else {
        size_t l = (size_t)snprintf(buf, n, "selective ");
        if (l < n)
            mb_key_flag_names("recompute.modules", mods, "+", buf + l, n - l);
    }
}

/* recompute_detail: none; selective:<a+b> (also "[] (nothing)", "core_attn (MCore default modules)");
 * full:<uniform|block>:<N> layer[s]; full (...) = all layers. Overrides the recompute column. */
static int rc_recompute(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    enum mb_rc_gran g;
    unsigned mods = 0;
    enum mb_rc_method meth = MB_RC_UNIFORM;
    long layers = 0;
    if (!strncmp(t, "none", 4)) {
        g = MB_RC_NONE;
    } else if (!strncmp(t, "selective", 9)) {
        char list[160], *save = NULL, *l = list;
        copy_str(list, sizeof list, t + 9);
        l = trim(list);
        if (*l != ':' && *l && *l != '(')
            return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected 'selective:<modules>'");
        g = MB_RC_SELECTIVE;
        if (*l == ':') {
            l = trim(l + 1);
            if (*l == '[') {
                char *e = strchr(l, ']');
                if (!e)
                    return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "unclosed '['");
                *e = '\0';
                l++;
            } else {
                l[strcspn(l, " ([")] = '\0';
            }
            for (char *it = strtok_r(l, "+,", &save); it; it = strtok_r(NULL, "+,", &save)) {
                char *name = trim(it);
                unsigned f;
                if (!*name)
                    continue;
                f = rc_module(name);
                if (!f)
                    return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "recompute module '%.40s' not known", name);
                mods |= f;
            }
            if (!mods)
                g = MB_RC_NONE; /* an empty module list recomputes nothing */
        } else {
            mods = MB_RCM_CORE_ATTN; /* Megatron's default --recompute-modules */
        }
    } else if (!strncmp(t, "full", 4) && (!t[4] || t[4] == ' ' || t[4] == '(' || t[4] == ':')) {
        g = MB_RC_FULL;
        if (t[4] == ':') {
            const char *p = t + 5;
            if (!strncmp(p, "uniform:", 8)) {
                p += 8;
            } else if (!strncmp(p, "block:", 6)) {
                meth = MB_RC_BLOCK;
                p += 6;
            } else {
                return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected full:<uniform|block>:<N> layers");
            }
            layers = rc_int(&p);
            p += strspn(p, " ");
            if (layers < 0 || (strncmp(p, "layer", 5) != 0))
                return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected full:<uniform|block>:<N> layers");
        }
    } else {
        return rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected none, selective:<modules> or full[:<method>:<N> layers]");
    }
    if (g != s->recompute || (g == MB_RC_SELECTIVE && mods != s->recompute_modules) ||
        (g == MB_RC_FULL && (layers != s->recompute_num_layers || meth != s->recompute_method))) {
        char now[160], was[160];
        rc_describe(now, sizeof now, g, mods, meth, (int)layers);
        rc_describe(was, sizeof was, s->recompute, s->recompute_modules, s->recompute_method, s->recompute_num_layers);
        rl_add(r->applied, sizeof r->applied, "recompute %s (recompute column: %s)", now, was);
    }
    s->recompute = g;
    s->recompute_modules = g == MB_RC_SELECTIVE ? mods : 0;
    s->recompute_method = meth;
    s->recompute_num_layers = g == MB_RC_FULL ? (int)layers : 0;
    return 0;
}

/* tp_overlap: on (<ub cfg>), off, none (...), async TP (enable_async_tensor_parallel=True). */
static int rc_tp_overlap(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    int on, async = 0;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))
        on = 1;
    else if (!strncmp(t, "async tp", 8))
        on = async = 1;
    else if (!strncmp(t, "off", 3) || !strncmp(t, "none", 4))
        on = 0;
    else
        return rc_bad(r, MB_VAL_RC_TP_OVERLAP, cell, "expected on (...), off, none or async TP");
    if (s->tp <= 1) {
        if (on)
            rl_add(r->not_applied, sizeof r->not_applied, "TP overlap (tp = 1)");
        return 0;
    }
    if (on != s->overlap_tp_comm)
        rl_add(r->applied, sizeof r->applied, "TP comm overlap %s%s", on ? "on" : "off",
               async ? " (async TP read as overlap.tp_comm)" : "");
    s->overlap_tp_comm = on;
    return 0;
}

/* fsdp_impl: none (DDP + distributed optimizer), none (DDP), none (... no distributed optimizer ...),
 * megatron_fsdp[:<sharding>] (...), torch_fsdp2 (...). The fsdp column decides the strategy. */
static int rc_fsdp_impl(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    if (!strncmp(t, "none", 4)) {
        int dist = strstr(t, "distributed optimizer") && !strstr(t, "no distributed optimizer");
        if (s->strategy == MB_STRAT_FSDP) {
            rl_add(r->not_applied, sizeof r->not_applied, "fsdp_impl none (the fsdp column says FSDP: kept)");
            return 0;
        }
        if (dist != s->dist_opt)
            rl_add(r->applied, sizeof r->applied, "%s", dist ? "distributed optimizer" : "DDP, no distributed optimizer");
        s->dist_opt = dist;
        /* Megatron-LM's LocalDDP (--DDP-impl local, before 2023) all-reduces the
         * gradient buffer in train_step after the last microbatch's backward
         * (model_module.allreduce_gradients()): nothing overlaps it */
        if (strstr(t, "ddp-impl local") && s->overlap_grad_reduce) {
            rl_add(r->applied, sizeof r->applied, "grad-reduce overlap off (LocalDDP)");
            s->overlap_grad_reduce = 0;
        }
        return 0;
    }
    int mfsdp = !strncmp(t, "megatron_fsdp", 13);
    if (!mfsdp && strncmp(t, "torch_fsdp2", 11) != 0)
        return rc_bad(r, MB_VAL_RC_FSDP_IMPL, cell, "expected none (...), megatron_fsdp[:<sharding>] or torch_fsdp2");
    if (s->strategy != MB_STRAT_FSDP) {
        rl_add(r->not_applied, sizeof r->not_applied, "fsdp_impl %s (the fsdp column says 3D: kept)",
               mfsdp ? "megatron_fsdp" : "torch_fsdp2");
        return 0;
    }
    if (mfsdp && t[13] == ':') {
        char shard[64];
        copy_str(shard, sizeof shard, t + 14);
        shard[strcspn(shard, " ([;")] = '\0';
        if (strcmp(shard, "optim_grads_params") != 0)
            rl_add(r->unmodelled, sizeof r->unmodelled,
                   "data_parallel_sharding_strategy %s (simulated as optim_grads_params)", shard);
    }
    if (strstr(t, "nccl_ub"))
        rl_add(r->unmodelled, sizeof r->unmodelled, "nccl_ub");
    if (strstr(t, "keep_fp8_transpose_cache"))
        rl_add(r->unmodelled, sizeof r->unmodelled, "keep_fp8_transpose_cache");
    /* fsdp_double_buffer / fsdp2_prefetch: one layer gathered ahead = overlap.fsdp_prefetch 1, the default */
    return 0;
}

/* cpu_offload: none; activations: N layers (weights=...) -> memory.cpu_offloading_num_layers N
 * (weight offloading, weights=True, is listed as not modelled); fine_grained_activation_offloading ...
 * and optimizer(_)cpu offload ... are not modelled. */
static int rc_cpu_offload(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    if (!strncmp(t, "none", 4))
        return 0;
    if (!strncmp(t, "activations:", 12)) {
        const char *p = t + 12;
        long n = rc_int(&p);
        if (n < 0 || n > 100000)
            return rc_bad(r, MB_VAL_RC_CPU_OFFLOAD, cell, "expected 'activations: N layers'");
        s->cpu_offload_layers = (int)n;
        if (n > 0)
            rl_add(r->applied, sizeof r->applied, "CPU activation offload %ld layers", n);
        if (strstr(t, "weights=true"))
            rl_add(r->unmodelled, sizeof r->unmodelled, "CPU weight offload");
        return 0;
    }
    if (!strncmp(t, "fine_grained_activation_offloading", 34)) {
        rl_add(r->unmodelled, sizeof r->unmodelled, "fine-grained activation offload");
        return 0;
    }
    if (!strncmp(t, "optimizer cpu offload", 21) || !strncmp(t, "optimizer_cpu_offload", 21)) {
        rl_add(r->unmodelled, sizeof r->unmodelled, "optimizer CPU offload");
        return 0;
    }
    return rc_bad(r, MB_VAL_RC_CPU_OFFLOAD, cell, "expected none, activations: N layers, "
                                                  "fine_grained_activation_offloading or optimizer_cpu_offload");
}

/* fp8_recipe: tensorwise ... -> fp8_cs, delayed scaling -> fp8, mxfp8, blockwise -> fp8_blockwise,
 * nvfp4, none (bf16) / none (fp16 ...); "[flags; ...]": fp8_dot_product_attention switches
 * attention to FP8, the rest are listed as not modelled. "... not determinable ..." keeps the
 * precision column. */
static int rc_kv_bool(const char *x, const char *key, int *b);

static int rc_fp8_recipe(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    const char *label;
    if (strstr(t, "not determinable")) {
        rl_add(r->defaulted, sizeof r->defaulted, "fp8_recipe (not determinable: the precision column is used)");
        return 0;
    }
    if (!strncmp(t, "tensorwise", 10))
        label = "fp8_cs";
    else if (!strncmp(t, "delayed", 7))
        label = "fp8";
    else if (!strncmp(t, "mxfp8", 5))
        label = "mxfp8";
    else if (!strncmp(t, "blockwise", 9))
        label = "fp8_blockwise";
    else if (!strncmp(t, "nvfp4", 5))
        label = "nvfp4";
    else if (!strncmp(t, "none", 4) && strstr(t, "fp16"))
        label = "fp16";
    else if (!strncmp(t, "none", 4) && strstr(t, "bf16"))
        label = "bf16";
    else
        return rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell,
                      "expected tensorwise, delayed scaling, mxfp8, blockwise, nvfp4 or none (bf16|fp16)");
    struct mb_precision rp;
    if (mb_precision_parse(label, &rp) != 0)
        return rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "precision '%s' not known to mbsim", label);
    /* bracketed flags */
    int dpa = 0, fp8pg = -2; /* -2 not said, -1 neither True nor False */
    const char *br = strchr(t, '[');
    if (br) {
        char flags[400], *save = NULL;
        copy_str(flags, sizeof flags, br + 1);
        char *e = strchr(flags, ']');
        if (!e)
            return rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "unclosed '['");
        *e = '\0';
        if (!strncmp(trim(flags), "inferred", 8))
            flags[0] = '\0'; /* "[inferred: why]" is a remark, not flags */
        for (char *it = strtok_r(flags, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
            char *f = trim(it);
            if (!*f)
                continue;
            int pg = -1;
            if (!strncmp(f, "fp8_dot_product_attention", 25))
                dpa = 1;
            else if (rc_kv_bool(f, "fp8_param_gather", &pg) || rc_kv_bool(f, "fp4_param_gather", &pg) ||
                     rc_kv_bool(f, "fp8_param_gather/params", &pg)) /* MLPerf: NeMo's fp8_params too */
                fp8pg = pg;
            else if (!strcmp(f, "reuse_grad_buf_for_mxfp8_param_ag"))
                ; /* the BF16 gather through the gradient buffer: mb_memory_qweight_gather_bytes */
            else /* in the cell's own spelling */
                rl_add(r->unmodelled, sizeof r->unmodelled, "%.*s%s", rc_len60(f), cell + (br + 1 - t) + (f - flags),
                       strlen(f) > 60 ? "..." : "");
        }
    }
    if (fp8pg == -1)
        return rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "fp8_param_gather: expected =True or =False");
    if (fp8pg >= 0) {
        r->fp8pg_stated = 1;
        r->fp8pg = fp8pg;
    }
    const char *was = s->prec.label;
    int refine = strcmp(was, label) != 0 && !strcmp(was, "fp8") && rp.gemm == MB_PREC_FP8 && rp.quantize;
    if (strcmp(was, label) != 0 && !refine) {
        rl_add(r->not_applied, sizeof r->not_applied, "fp8_recipe %s (the precision column says %s: kept)", label,
               was);
        return 0;
    }
    if (refine) {
        enum mb_prec attn = s->prec.attn;
        rl_add(r->applied, sizeof r->applied, "precision %s (fp8_recipe refines fp8%s)", label,
               strstr(t, "inferred") ? "; the cell says inferred" : "");
        s->prec = rp;
        if (attn == MB_PREC_FP8)
            s->prec.attn = MB_PREC_FP8;
    }
    if (dpa && s->prec.quantize && s->prec.attn != MB_PREC_FP8) {
        s->prec.attn = MB_PREC_FP8;
        rl_add(r->applied, sizeof r->applied, "FP8 attention");
    }
    return 0;
}

/* ce_fusion: on (impl=te|native) / off; mbsim runs the unfused vocab-parallel cross-entropy. */
static int rc_ce_fusion(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    (void)s;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2])) {
        char impl[32] = "";
        const char *p = strstr(t, "impl=");
        if (p) {
            copy_str(impl, sizeof impl, p + 5);
            impl[strcspn(impl, " ,;)")] = '\0';
        }
        rl_add(r->unmodelled, sizeof r->unmodelled, "cross-entropy fusion%s%s%s", impl[0] ? " (impl=" : "", impl,
               impl[0] ? ")" : "");
        return 0;
    }
    if (!strncmp(t, "off", 3) && !isalnum((unsigned char)t[3]))
        return 0;
    if (!strncmp(t, "impl=", 5)) {
        rl_add(r->defaulted, sizeof r->defaulted, "ce_fusion (on/off not stated)");
        return 0;
    }
    return rc_bad(r, MB_VAL_RC_CE_FUSION, cell, "expected on (impl=...) or off");
}

/* mtp_layers: an integer; replaces the model file's MTP depth. */
static int rc_mtp(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    const char *p = t;
    long n = rc_int(&p);
    p += strspn(p, " ");
    if (n < 0 || *p || n > 1000)
        return rc_bad(r, MB_VAL_RC_MTP_LAYERS, cell, "expected an integer 0..1000");
    if (n == s->model.mtp_layers)
        return 0;
    if (n > 0 && (s->model.pattern[0] || s->model.n_layers <= 0)) {
        rl_add(r->not_applied, sizeof r->not_applied, "mtp_layers %ld (model %s has a hybrid layer pattern)", n,
               s->model.name);
        return 0;
    }
    rl_add(r->applied, sizeof r->applied, "MTP layers %ld (model file: %d)", n, s->model.mtp_layers);
    s->model.mtp_layers = (int)n;
    return 0;
}

/* Megatron's uniform split with embedding / loss counted as one layer each
 * (account_for_embedding/loss_in_pipeline_split): (L + e + l) / (pp*vpp) per
 * virtual stage, the first one e fewer decoder layers, the last one l fewer
 * (MTP layers sit with the loss). Written as an expanded layout. 0, or -1
 * when the split is not whole (why in msg). */
static int rc_account_layout(const struct mb_scenario *s, int e, int l, char *out, size_t n, char *msg, size_t mlen)
{
    int nv = s->pp * s->vpp, L = s->model.num_layers, tot = L + e + l;
    if (nv < 2) {
        snprintf(msg, mlen, "one pipeline stage");
        return -1;
    }
    if (tot % nv) {
        snprintf(msg, mlen, "num_layers + %d = %d not divisible by pp*vpp = %d", e + l, tot, nv);
        return -1;
    }
    int k = tot / nv;
    size_t w = 0;
    for (int v = 0; v < nv; v++) {
        int nt = k - (v == 0 ? e : 0) - (v == nv - 1 ? l : 0);
        size_t need = (size_t)nt + (size_t)s->model.mtp_layers + 4;
        if (w + need >= n) {
            snprintf(msg, mlen, "layout longer than %zu characters", n - 1);
            return -1;
        }
        if (v > 0)
            out[w++] = '|';
        if (v == 0)
            out[w++] = 'E';
        for (int i = 0; i < nt; i++)
            out[w++] = 't';
        if (v == nv - 1) {
            for (int i = 0; i < s->model.mtp_layers; i++)
                out[w++] = 'm';
            out[w++] = 'L';
        }
    }
    out[w] = '\0';
    return 0;
}

/* pp_layout: n/a (PP=1); an explicit MCore layout ("Et*4|(t*4|)*14tmL"); uniform split
 * (account_for_embedding=X, account_for_loss=Y); uniform split (non-interleaved 1F1B);
 * interleaved 1F1B via --num-layers-per-virtual-pipeline-stage (an even split). */
static int rc_pp_layout(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    char buf[sizeof s->pipeline_layout], msg[160];
    if (!strncmp(t, "uniform split", 13) || !strncmp(t, "interleaved 1f1b", 16)) {
        int e = strstr(t, "account_for_embedding=true") != NULL, l = strstr(t, "account_for_loss=true") != NULL;
        if (!e && !l)
            return 0; /* an even split: mbsim's default */
        if (rc_account_layout(s, e, l, buf, sizeof buf, msg, sizeof msg) != 0) {
            rl_add(r->not_applied, sizeof r->not_applied, "pp_layout uniform split with embedding/loss as layers (%s)",
                   msg);
            return 0;
        }
        copy_str(s->pipeline_layout, sizeof s->pipeline_layout, buf);
        rl_add(r->applied, sizeof r->applied, "pipeline layout: uniform split with %s as a layer",
               e && l ? "embedding and loss each" : e ? "embedding" : "loss");
        return 0;
    }
    /* an explicit layout, as written (case matters: E, t, m, L) */
    char raw[256];
    size_t bad = 0;
    copy_str(raw, sizeof raw, cell);
    char *lay = trim(raw);
    if (strspn(lay, "EtmL|()*0123456789") != strlen(lay))
        return rc_bad(r, MB_VAL_RC_PP_LAYOUT, cell,
                      "expected n/a, uniform split (...) or a layout of E, t, m, L, |, (...)*N");
    if (mb_pipeline_layout_expand(lay, buf, sizeof buf, &bad, msg, sizeof msg) != 0)
        return rc_bad(r, MB_VAL_RC_PP_LAYOUT, cell, "%s (at character %zu)", msg, bad + 1);
    if (strcmp(buf, s->pipeline_layout) != 0)
        rl_add(r->applied, sizeof r->applied, "pipeline layout %s", lay);
    copy_str(s->pipeline_layout, sizeof s->pipeline_layout, buf);
    return 0;
}

/* One dtype word of precision_aware_opt: bytes per element (2 or 4), 0 if unknown. */
static int rc_dtype_bytes(const char *t, const char *key)
{
    const char *p = strstr(t, key);
    if (!p)
        return 0;
    p += strlen(key);
    p += strspn(p, " =:");
    if (!strncmp(p, "bfloat16", 8) || !strncmp(p, "bf16", 4))
        return 2;
    if (!strncmp(p, "float32", 7) || !strncmp(p, "fp32", 4))
        return 4;
    return 0;
}

/* other_recipe items that are provenance or layout restated, not knobs. */
static const char *const rc_info_items[] = {
    "provider-class default used for", "container ", "readme ", "nemo 2.x perf script", "card:",
    "table kernels", "seq ", "dp", "expert-data-parallel", "expert_data_parallel_size", "b300 26.06 numbers",
    "25.09 run_script", NULL};

/* An other_recipe item "key=True|False": 1 when the item has that key (*b = 1 / 0,
 * or -1 when the value is neither), 0 otherwise. */
static int rc_kv_bool(const char *x, const char *key, int *b)
{
    size_t n = strlen(key);
    if (strncmp(x, key, n) != 0 || x[n] != '=')
        return 0;
    *b = rc_bool(x + n + 1);
    return 1;
}

/* An overlap switch from other_recipe: b = 1 / 0 sets *field (said when it
 * changes), -1 (neither True nor False) is refused. */
static int rc_overlap(int *field, int b, const char *what, struct mb_val_recipe *r)
{
    if (b < 0)
        return -1;
    if (b != *field)
        rl_add(r->applied, sizeof r->applied, "%s overlap %s", what, b ? "on" : "off");
    *field = b;
    return 0;
}

/* other_recipe "attention_backend=NAME" (Megatron-Core --attention-backend). */
static int rc_attn_backend(struct mb_scenario *s, const char *name, struct mb_val_recipe *r)
{
    int was_scores = s->attn_backend >= MB_ATTN_UNFUSED;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_key_set(s, mb_key_find("training.attention_backend"), name, &e)) /* the key table's names */
        return -1;
    /* auto, flash and fused cost the same (one fused kernel) */
    if ((s->attn_backend >= MB_ATTN_UNFUSED) != was_scores)
        rl_add(r->applied, sizeof r->applied, "attention backend %s",
               mb_key_value_name("training.attention_backend", (unsigned)s->attn_backend));
    return 0;
}

/* other_recipe: ';'-separated settings. Modelled: precision_aware_opt (dtypes), grad_reduce_in_fp32,
 * defer_embedding_wgrad (with wgrad_deferral_limit),
 * overlap_grad_reduce / overlap_param_gather (also co.*), shared_expert_overlap, seq_parallel,
 * dist_opt, TOKEN-DROP capacity_factor, force-balanced routing, grouped GEMM, HybridEP/DeepEP SM
 * counts. Provenance items (rc_info_items) are skipped; every other item is listed as not
 * modelled, in the cell's own spelling (o is the cell as written, aligned with t). */
static int rc_other(struct mb_scenario *s, const char *o, const char *t, struct mb_val_recipe *r)
{
    char all[2048], *save = NULL;
    int grf = -1, pao_grads = 0, pao_states = 0, rc = 0, b = -1, dlim = -1;
    copy_str(all, sizeof all, t);
    for (char *it = strtok_r(all, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
        char *x = trim(it);
        const char *xo = o + (x - all); /* the item as written */
        int info = 0;
        if (!*x)
            continue;
        for (int i = 0; rc_info_items[i]; i++) {
            size_t n = strlen(rc_info_items[i]);
            if (!strncmp(x, rc_info_items[i], n) && (rc_info_items[i][n - 1] == ' ' || !isalpha((unsigned char)x[n])))
                info = 1;
        }
        if (info)
            continue;
        if (rc_kv_bool(x, "precision_aware_opt", &b)) {
            if (b < 0) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "precision_aware_opt: expected =True or =False");
            } else if (!b) {
                pao_states = 4; /* fp32 moments, Megatron's default */
            } else if (!(pao_states = rc_dtype_bytes(x, "exp_avg"))) {
                rl_add(r->defaulted, sizeof r->defaulted, "precision_aware_opt dtypes (not stated)");
            } else {
                pao_grads = rc_dtype_bytes(x, "grads");
                if (rc_dtype_bytes(x, "params") == 2)
                    rl_add(r->unmodelled, sizeof r->unmodelled, "bf16 master params");
            }
        } else if (rc_kv_bool(x, "grad_reduce_in_fp32", &b)) {
            if (b < 0)
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "grad_reduce_in_fp32: expected =True or =False");
            else
                grf = b;
        } else if (rc_kv_bool(x, "overlap_grad_reduce", &b) || rc_kv_bool(x, "co.overlap_grad_reduce", &b)) {
            if (rc_overlap(&s->overlap_grad_reduce, b, "grad-reduce", r) < 0)
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "overlap_grad_reduce: expected =True or =False");
        } else if (rc_kv_bool(x, "overlap_param_gather", &b) || rc_kv_bool(x, "co.overlap_param_gather", &b)) {
            if (rc_overlap(&s->overlap_param_gather, b, "param-gather", r) < 0)
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "overlap_param_gather: expected =True or =False");
        } else if (rc_kv_bool(x, "shared_expert_overlap", &b)) {
            if (b < 0) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "shared_expert_overlap: expected =True or =False");
            } else if (s->model.shared_ffn_hidden <= 0) {
                if (b)
                    rl_add(r->not_applied, sizeof r->not_applied, "shared_expert_overlap (no shared experts)");
            } else {
                if (b != s->shared_expert_overlap)
                    rl_add(r->applied, sizeof r->applied, "shared-expert overlap %s", b ? "on" : "off");
                s->shared_expert_overlap = b;
            }
        } else if (rc_kv_bool(x, "seq_parallel", &b) || (!strncmp(x, "no sequence parallel", 20) && (b = 0) == 0)) {
            if (b < 0) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "seq_parallel: expected =True or =False");
            } else if (s->tp > 1) {
                int was = s->sequence_parallel < 0 ? 1 : s->sequence_parallel;
                if (b != was)
                    rl_add(r->applied, sizeof r->applied, "sequence parallel %s", b ? "on" : "off");
                s->sequence_parallel = b;
                if (!b && s->overlap_tp_comm) { /* Megatron overlaps TP comm only under SP */
                    s->overlap_tp_comm = 0;
                    rl_add(r->not_applied, sizeof r->not_applied, "TP comm overlap (needs sequence parallelism)");
                }
            }
        } else if (rc_kv_bool(x, "dist_opt", &b)) {
            if (b < 0) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "dist_opt: expected =True or =False");
            } else if (!b && s->strategy == MB_STRAT_FSDP) {
                rl_add(r->not_applied, sizeof r->not_applied, "dist_opt=False (FSDP)");
            } else {
                if (b != s->dist_opt)
                    rl_add(r->applied, sizeof r->applied, "%s",
                           b ? "distributed optimizer" : "DDP, no distributed optimizer");
                s->dist_opt = b;
            }
        } else if (rc_kv_bool(x, "defer_embedding_wgrad", &b)) {
            if (b < 0) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "defer_embedding_wgrad: expected =True or =False");
            } else if (b && (s->pp <= 1 || s->strategy == MB_STRAT_FSDP)) {
                rl_add(r->not_applied, sizeof r->not_applied, "defer_embedding_wgrad (needs pp > 1, 3d)");
            } else {
                if (b != s->defer_wgrad)
                    rl_add(r->applied, sizeof r->applied, "deferred output-layer wgrad%s", b ? "" : " off");
                s->defer_wgrad = b;
            }
        } else if (!strncmp(x, "wgrad_deferral_limit=", 21)) {
            const char *p = x + 21;
            long n = rc_int(&p);
            if (n < 0 || n > 1000000 || *p)
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "wgrad_deferral_limit: expected an integer >= 0");
            else
                dlim = (int)n;
        } else if (!strncmp(x, "token-drop capacity_factor=", 27)) {
            char *end;
            double cf = strtod(x + 27, &end);
            if (end == x + 27 || !isfinite(cf) || (cf != 0 && cf < 1) || cf > 1000) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "capacity_factor: expected 0 or a number >= 1");
            } else if (s->model.num_experts <= 0) {
                rl_add(r->not_applied, sizeof r->not_applied, "capacity_factor (dense model)");
            } else {
                if (!mb_dbl_eq(cf, s->capacity_factor))
                    rl_add(r->applied, sizeof r->applied, "capacity factor %g (token drop)", cf);
                s->capacity_factor = cf;
            }
        } else if (!strcmp(x, "force_balance=true") || !strcmp(x, "routing=force_balance") ||
                   !strcmp(x, "force_balance routing") || !strcmp(x, "fake_balanced_gate")) {
            if (s->routing != MB_ROUTE_BALANCED)
                rl_add(r->applied, sizeof r->applied, "balanced routing");
            s->routing = MB_ROUTE_BALANCED;
        } else if (!strcmp(x, "force_balance=false")) {
            rl_add(r->unmodelled, sizeof r->unmodelled,
                   "force_balance=False (the routing imbalance is not stated: simulated balanced)");
        } else if (!strncmp(x, "attention_backend=", 18)) {
            if (rc_attn_backend(s, x + 18, r) < 0)
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "attention_backend: expected auto, flash, fused, unfused or local");
        } else if (!strcmp(x, "grouped_gemm=true") || !strcmp(x, "grouped gemm") || !strcmp(x, "experts=gmm")) {
            /* mbsim runs the routed experts as grouped GEMMs */
        } else if (!strncmp(x, "hybridep_num_sms=", 17) || !strncmp(x, "--moe-deepep-num-sms", 20)) {
            int hy = x[0] == 'h';
            const char *p = x + (hy ? 17 : 20);
            long n = rc_int(&p);
            if (n < 1 || n > 1024) {
                rc = rc_bad(r, MB_VAL_RC_OTHER, o, "SM count is not an integer in 1..1024");
                continue;
            }
            if (s->dispatcher == (hy ? MB_DISP_HYBRIDEP : MB_DISP_DEEPEP) && n != s->dispatcher_sms) {
                rl_add(r->applied, sizeof r->applied, "%s SMs %ld", hy ? "HybridEP" : "DeepEP", n);
                s->dispatcher_sms = (int)n;
            }
            if (hy && strstr(x, "combine chunk"))
                rl_add(r->unmodelled, sizeof r->unmodelled, "HybridEP combine chunk size");
        } else {
            rl_add(r->unmodelled, sizeof r->unmodelled, "%.*s%s", rc_len60(x), xo, strlen(x) > 60 ? "..." : "");
        }
    }
    /* the deferral limit with the deferral only; unstated: Megatron's 0 (every microbatch) */
    if (s->defer_wgrad && dlim >= 0)
        s->wgrad_deferral_limit = dlim;
    else if (s->defer_wgrad)
        rl_add(r->defaulted, sizeof r->defaulted, "wgrad_deferral_limit (Megatron's 0: every microbatch)");
    else if (dlim >= 0)
        rl_add(r->not_applied, sizeof r->not_applied, "wgrad_deferral_limit (no deferral)");
    /* main grads: grad_reduce_in_fp32 (the DDP buffer and its reduction) when stated, else
     * the precision-aware optimizer's grads dtype */
    int gb = grf >= 0 ? (grf ? 4 : 2) : pao_grads;
    if (gb && gb != s->grad_bytes) {
        rl_add(r->applied, sizeof r->applied, "main grads %s", gb == 2 ? "bf16" : "fp32");
        s->grad_bytes = gb;
    }
    int sb = 2 * pao_states;
    if (sb && sb != s->state_bytes) {
        rl_add(r->applied, sizeof r->applied, "Adam states %s", sb == 4 ? "bf16" : "fp32");
        s->state_bytes = sb;
    }
    return rc;
}

int mb_validate_recipe_cell(struct mb_scenario *s, enum mb_val_rcol col, const char *cell, struct mb_val_recipe *r)
{
    char orig[2048], low[2048];
    const char *t;
    if ((int)col < 0 || col >= MB_VAL_RC_COUNT)
        return -1;
    /* the cell as written (trimmed) and its lower-case twin, aligned character by character */
    copy_str(orig, sizeof orig, cell ? cell : "");
    cell = trim(orig);
    t = rc_lower(low, sizeof low, cell);
    if (!*t) {
        note_add(r->defaulted, sizeof r->defaulted, mb_val__rcolname[col]);
        return 1;
    }
    if (rc_is_na(t))
        return 0;
    switch (col) {
    case MB_VAL_RC_DISPATCHER:
        return rc_dispatcher(s, cell, t, r);
    case MB_VAL_RC_EP_OVERLAP:
        return rc_ep_overlap(s, cell, t, r);
    case MB_VAL_RC_CUDA_GRAPH:
        return rc_cuda_graph(s, cell, t, r);
    case MB_VAL_RC_RECOMPUTE_DETAIL:
        return rc_recompute(s, cell, t, r);
    case MB_VAL_RC_TP_OVERLAP:
        return rc_tp_overlap(s, cell, t, r);
    case MB_VAL_RC_FSDP_IMPL:
        return rc_fsdp_impl(s, cell, t, r);
    case MB_VAL_RC_CPU_OFFLOAD:
        return rc_cpu_offload(s, cell, t, r);
    case MB_VAL_RC_FP8_RECIPE:
        return rc_fp8_recipe(s, cell, t, r);
    case MB_VAL_RC_CE_FUSION:
        return rc_ce_fusion(s, cell, t, r);
    case MB_VAL_RC_MTP_LAYERS:
        return rc_mtp(s, cell, t, r);
    case MB_VAL_RC_PP_LAYOUT:
        return rc_pp_layout(s, cell, t, r);
    case MB_VAL_RC_OTHER:
        return rc_other(s, cell, t, r);
    default:
        return -1;
    }
}

/* ------------------------------------------------------------------ */
/* FLOP conventions of TFLOP/s-only rows                              */
/* ------------------------------------------------------------------ */

/* Which publisher counted how; matched as substrings of the `source` cell,
 * first match wins (docs/validation.md, "FLOP conventions"). */
static const struct {
    const char *needle;
    enum mb_val_flops conv;
} mb_val__flop_sources[] = {
    {"arXiv:2104.04473", MB_VAL_FLOPS_SC21},         /* Narayanan et al., SC21, Table 1 */
    {"cases_april2021", MB_VAL_FLOPS_SC21},          /* the same table in Megatron-LM's README, April 2021 */
    {"Megatron-LM@0b981f9c5305", MB_VAL_FLOPS_MLM_2024}, /* MoE README, MCore v0.8 (2024-08) */
    {"Megatron-LM@c230e0d7c298", MB_VAL_FLOPS_MLM_2024}, /* MoE README, MCore v0.9 (2024-11) */
    {"Megatron-Bridge@", MB_VAL_FLOPS_MCORE},        /* Megatron-Bridge flop_utils (causal /2) */
};

enum mb_val_flops mb_validate_flop_convention(const char *source)
{
    if (!source)
        return MB_VAL_FLOPS_UNKNOWN;
    for (size_t i = 0; i < sizeof mb_val__flop_sources / sizeof mb_val__flop_sources[0]; i++)
        if (strstr(source, mb_val__flop_sources[i].needle))
            return mb_val__flop_sources[i].conv;
    return MB_VAL_FLOPS_UNKNOWN;
}

const char *mb_validate_flop_convention_name(enum mb_val_flops conv)
{
    switch (conv) {
    case MB_VAL_FLOPS_SC21:
        return "sc21";
    case MB_VAL_FLOPS_MLM_2024:
        return "megatron-lm-2024";
    case MB_VAL_FLOPS_MCORE:
        return "megatron-core";
    default:
        return "unknown";
    }
}

/* Every decoder layer has the same FFN kind (all dense or all MoE). */
static int uniform_ffn(const struct mb_model *m)
{
    for (int i = 1; i < m->n_layers; i++)
        if (m->layer[i].ffn != m->layer[0].ffn)
            return 0;
    return 1;
}

double mb_validate_publisher_flops(enum mb_val_flops conv, const struct mb_model *m, double gbs, double seq,
                                   int recompute, char *why, size_t why_len)
{
    double B = gbs, s = seq, l = m->num_layers, h = m->hidden, V = (double)m->vocab;
    int gated = m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU;
    int special = m->pattern[0] || m->kv_lora_rank > 0 || m->swa_window > 0 || m->gdn_v_heads > 0 ||
                  m->moe_latent > 0 || m->mamba_heads > 0 || m->vision.depth > 0;
    if (why && why_len)
        why[0] = '\0';
    if (B <= 0 || s <= 0 || h <= 0 || l <= 0) {
        if (why && why_len)
            snprintf(why, why_len, "batch, sequence or model size not positive");
        return 0;
    }
    switch (conv) {
    case MB_VAL_FLOPS_SC21:
        /* Narayanan et al. 2021, appendix: a GPT layer (4h MLP, no GQA) does 24Bsh^2 + 4Bs^2h
         * forward, the logits 2BshV. With activation recomputation the layers run 4 passes
         * (forward, recompute forward, backward = 2 forwards), the logits 3:
         * F = 96 B s l h^2 (1 + s/6h + V/16lh); without it 72 B s l h^2 (1 + s/6h + V/12lh). */
        if (special || m->num_experts > 0 || gated || m->ffn_hidden != 4 * m->hidden ||
            (m->num_kv_heads > 0 && m->num_kv_heads != m->num_heads) ||
            (m->head_dim > 0 && (long)m->head_dim * m->num_heads != m->hidden) || m->mtp_layers > 0) {
            if (why && why_len)
                snprintf(why, why_len, "the SC21 formula covers GPT layers (4h GeLU MLP, MHA) only");
            return 0;
        }
        if (recompute)
            return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
        return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    case MB_VAL_FLOPS_MLM_2024: {
        /* Megatron-LM megatron/training/training.py num_floating_point_operations at
         * 0b981f9c5305 / c230e0d7c298: 12 B s l h^2 [ (1 + g/n + s/h) nd/h
         * + (f/h) k c + (f_sh/h) c + V/(2lh) ], c = 3/2 with SwiGLU; f = ffn_hidden_size,
         * the expert width in MCore v0.8; attention not halved for the causal mask.
         * Recomputation is not counted. */
        if (special || !uniform_ffn(m) || m->first_dense > 0 || m->mtp_layers > 0) {
            if (why && why_len)
                snprintf(why, why_len, "the 2024 Megatron-LM formula covers uniform dense or MoE GPT layers only");
            return 0;
        }
        double n = m->num_heads, g = m->num_kv_heads > 0 ? m->num_kv_heads : n;
        double d = m->head_dim > 0 ? m->head_dim : h / n;
        double moe = m->num_experts > 0;
        double f = moe ? m->moe_ffn_hidden : m->ffn_hidden, k = moe ? m->topk : 1, c = gated ? 1.5 : 1.0;
        double fsh = moe ? m->shared_ffn_hidden : 0;
        return 12 * B * s * l * h * h *
               ((1 + g / n + s / h) * (n * d / h) + (f / h) * k * c + (fsh / h) * c + V / (2 * l * h));
    }
    case MB_VAL_FLOPS_MCORE:
        /* Megatron-Core >= 0.12 and Megatron-Bridge count what mbsim counts (causal /2) */
        return mb_model_flops(m, B * s, B * s * s);
    default:
        if (why && why_len)
            snprintf(why, why_len, "the source's FLOP convention is not known");
        return 0;
    }
}

double mb_validate_tflops_to_tokens(double tflops, double flops_per_step, double gbs, double seq)
{
    if (!(flops_per_step > 0) || !(tflops > 0))
        return 0;
    return gbs * seq * tflops * 1e12 / flops_per_step;
}

/* Rows published before FlashAttention reached Megatron-LM (NVIDIA/Megatron-LM
 * PR #267, merged January 2023; the FlashAttention paper is arXiv:2205.14135,
 * May 2022) ran Megatron's own CoreAttention: the scores in memory, with
 * Megatron's default --attention-dropout 0.1 (megatron/arguments.py), and its
 * default --hidden-dropout 0.1 (the residual dropouts keep their masks). A row's
 * other_recipe attention_backend, applied after this, overrides it. */
#define MB_VAL__FLASH_ERA "2023-01-01"
/* The record's source_date is before FlashAttention reached Megatron-LM. */
static int csv_before_flash(struct csv_ctx *c)
{
    const char *d = c->date_idx >= 0 ? trim(c->f[c->date_idx].text) : "";
    return strlen(d) >= 10 && isdigit((unsigned char)d[0]) && strncmp(d, MB_VAL__FLASH_ERA, 10) < 0;
}

static void csv_attention_era(struct csv_ctx *c, struct mb_scenario *s, char *head, size_t hn)
{
    if (!csv_before_flash(c))
        return;
    s->attn_backend = MB_ATTN_LOCAL;
    s->attn_dropout = 0.1;
    s->hidden_dropout = 0.1;
    size_t l = strlen(head);
    snprintf(head + l, hn - l, "%sattention local, dropout 0.1 (published before FlashAttention reached Megatron-LM)",
             l ? "; " : "");
}

/* --fp8-param-gather: as fp8_recipe states it (with the distributed optimizer or FSDP Megatron requires;
 * mbsim models the quantized weights of 3D layouts only), else, on a Megatron-Bridge or NeMo row, the
 * publisher's preset (mb_precision_preset_param_gather: NeMo 2.0's bf16_with_fp8_mixed sets fp8_params
 * as Bridge's FP8 presets do, NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py).
 * Other sources keep Megatron's default (off). Not for FSDP, where mbsim does not model the quantized
 * weights, nor without the distributed optimizer Megatron requires for it. */
static void csv_fp8pg(struct csv_ctx *c, struct mb_scenario *s, struct mb_val_recipe *rec)
{
    const char *src = c->source_idx >= 0 ? c->f[c->source_idx].text : "";
    const char *l = s->prec.label;
    int preset = mb_precision_preset_param_gather(&s->prec);
    if (!s->prec.quantize) {
        if (rec->fp8pg_stated && rec->fp8pg)
            rl_add(rec->not_applied, sizeof rec->not_applied, "fp8_param_gather (%s: no quantized weights)", l);
        return;
    }
    if (rec->fp8pg_stated && rec->fp8pg && s->strategy == MB_STRAT_FSDP) {
        rl_add(rec->unmodelled, sizeof rec->unmodelled, "fp8_param_gather under FSDP");
        return;
    }
    if (rec->fp8pg_stated && rec->fp8pg && !s->dist_opt) {
        rl_add(rec->not_applied, sizeof rec->not_applied, "fp8_param_gather (Megatron needs the distributed optimizer)");
        return;
    }
    if (rec->fp8pg_stated) {
        s->fp8_param_gather = rec->fp8pg;
        if (rec->fp8pg)
            rl_add(rec->applied, sizeof rec->applied, "quantized weights (fp8_param_gather)");
        return;
    }
    if (s->strategy == MB_STRAT_FSDP || !s->dist_opt)
        return;
    if (!strstr(src, "NVIDIA-NeMo/Megatron-Bridge") && !strstr(src, "NVIDIA/NeMo") &&
        !strstr(src, "docs.nvidia.com/nemo-framework"))
        return;
    s->fp8_param_gather = preset;
    rl_add(rec->defaulted, sizeof rec->defaulted, "fp8_param_gather (publisher's %s recipe: %s)", l,
           preset ? "on" : "off");
}

/* Apply every recipe column of the record to s, one column at a time; a
 * column whose result does not pass mb_scenario_check is taken back and
 * listed as not applied, with the check's message. */
static void csv_apply_recipe(struct csv_ctx *c, struct mb_scenario *s, struct mb_val_recipe *rec)
{
    mb_validate_recipe_init(rec);
    for (int k = 0; k < MB_VAL_RC_COUNT; k++) {
        if (c->ridx[k] < 0)
            continue;
        const char *cellv = c->f[c->ridx[k]].text;
        struct mb_scenario before = *s;
        struct mb_val_recipe rb = *rec;
        if (mb_validate_recipe_cell(s, (enum mb_val_rcol)k, cellv, rec) == 1)
            continue;
        struct mb_scenario t = *s;
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_scenario_check(&t, &e) != 0) {
            char sh[64];
            *s = before;
            *rec = rb;
            rl_add(rec->not_applied, sizeof rec->not_applied, "%s '%s' (%.200s)", mb_val__rcolname[k],
                   rc_shown(trim(c->f[c->ridx[k]].text), sh, sizeof sh), e.msg);
        }
    }
    csv_fp8pg(c, s, rec);
}

/* The row's note from what the recipe did: head (applied, not applied,
 * unparseable, LAYOUT-MISMATCH, not determinable), tail (not modelled). */
static void csv_recipe_note(struct csv_ctx *c, struct mb_val_row *r, const struct mb_val_recipe *rec, char *head,
                            size_t hn, char *tail, size_t tn)
{
    size_t l = strlen(head);
#define NOTE_PART(fmt, ...)                                                                                      \
    do {                                                                                                         \
        if (l < hn)                                                                                              \
            l += (size_t)snprintf(head + l, hn - l, "%s" fmt, l ? "; " : "", __VA_ARGS__);                       \
    } while (0)
    if (rec->applied[0])
        NOTE_PART("recipe: %s", rec->applied);
    if (rec->not_applied[0])
        NOTE_PART("recipe not applied: %s", rec->not_applied);
    if (rec->bad[0])
        NOTE_PART("unparseable recipe cell%s: %s", rec->n_bad > 1 ? "s" : "", rec->bad);
    if (c->match_idx >= 0) {
        const char *m = trim(c->f[c->match_idx].text);
        if (starts_with_ci(m, "LAYOUT-MISMATCH") || starts_with_ci(m, "CONTRADICTION")) {
            char cut[200];
            copy_str(cut, sizeof cut, m);
            char *close = strchr(cut, ')');
            if (close)
                close[1] = '\0';
            r->layout_mismatch = starts_with_ci(m, "LAYOUT-MISMATCH");
            NOTE_PART("%s", cut);
        }
    }
    if (rec->defaulted[0])
        NOTE_PART("not determinable (simulator default): %s", rec->defaulted);
#undef NOTE_PART
    if (rec->unmodelled[0])
        snprintf(tail, tn, "not modelled: %s", rec->unmodelled);
}

/* A TFLOP/s-only row: convert the published TFLOP/s/GPU to tokens/s/GPU with
 * the source's FLOP convention and compare that; with no known convention the
 * row stays compared in mbsim's own FLOP count, and the note says so. */
static void csv_tflops_in_time(struct csv_ctx *c, struct mb_val_row *r, const struct mb_scenario *s, char *head,
                               size_t hn)
{
    enum mb_val_flops conv =
        c->source_idx >= 0 ? mb_validate_flop_convention(c->f[c->source_idx].text) : MB_VAL_FLOPS_UNKNOWN;
    char why[160];
    double gbs = s->global_batch_size, seq = s->seq_length;
    double F = mb_validate_publisher_flops(conv, &s->model, gbs, seq, s->recompute == MB_RC_FULL, why, sizeof why);
    size_t at = strlen(head);
    if (at >= hn)
        return;
    if (F > 0) {
        double tok = mb_validate_tflops_to_tokens(r->measured, F, gbs, seq);
        double t_step = F / (r->measured * 1e12 * s->gpus);
        snprintf(head + at, hn - at,
                 "%smeasured %g TFLOP/s/GPU in %s FLOPs (%.4g PFLOP per step) = %.4g s per step = %.6g tokens/s/GPU",
                 at ? "; " : "", r->measured, mb_validate_flop_convention_name(conv), F / 1e15, t_step, tok);
        r->measured_tflops = r->measured;
        copy_str(r->flops_conv, sizeof r->flops_conv, mb_validate_flop_convention_name(conv));
        copy_str(r->metric, sizeof r->metric, MB_VAL_TOKENS);
        r->measured = tok;
    } else {
        snprintf(head + at, hn - at, "%sTFLOP/s compared in mbsim's FLOP count (%s)", at ? "; " : "", why);
    }
}

/* Map one data record onto a scenario, simulate it, append the row. */
/* A published run whose layers do not split evenly over pp*vpp (nor with the
 * embedding and the loss as a layer each) ran with a layout its source does
 * not state (Megatron-Core refuses such a split without one): the row keeps
 * mbsim's spread of num_layers + 2 units (step/layout.c) instead of being
 * refused, and says so. 1 when that applies. */
static int csv_split_unstated(struct mb_scenario *x)
{
    int nv = x->pp * x->vpp, L = x->model.num_layers;
    x->pipeline_split_unstated = !x->pipeline_layout[0] && nv > 1 && L % nv && (L + 2) % nv;
    return x->pipeline_split_unstated;
}

/* The LoRA adapters of a published LoRA run, from its publisher's recipes (the CSV has no
 * column for them; the adapters' time is bandwidth-bound, so the rank hardly matters):
 *  - NeMo AutoModel's LoRA benchmarks adapt every projection (`target_modules: '*_proj'`,
 *    dim 16: NVIDIA-NeMo/Automodel examples/llm_benchmark/llama3_3/
 *    custom_llama3_3_70b_instruct_peft_benchmark.yaml);
 *  - Megatron-Bridge's performance LoRA configs adapt linear_qkv only
 *    (NVIDIA-NeMo/Megatron-Bridge@fcbb6031103d scripts/performance/configs/llama/
 *    llama3_llm_finetune.py: "Override target_modules to only apply LoRA to QKV"), as NeMo
 *    1.0's default does (NVIDIA/NeMo megatron_gpt_finetuning_config.yaml lora_tuning
 *    target_modules ['attention_qkv'], adapter_dim 32), at LoRA's default dim 32. */
static void csv_lora(const char *source, struct mb_scenario *s)
{
    if (strstr(source, "NVIDIA-NeMo/Automodel")) {
        s->lora_rank = 16;
        s->lora_targets = MB_LORA_QKV | MB_LORA_PROJ | MB_LORA_FC1 | MB_LORA_FC2;
    } else {
        s->lora_rank = 32;
        s->lora_targets = MB_LORA_QKV;
    }
}

/* Take a model's layer array as its own copy (the source keeps its own). */
static void own_layers(struct mb_model *m)
{
    const struct mb_layer *src = m->layer;
    m->layer = NULL;
    if (m->n_layers > 0) {
        m->layer = mb_malloc((size_t)m->n_layers * sizeof *m->layer);
        memcpy(m->layer, src, (size_t)m->n_layers * sizeof *m->layer);
    }
}

/* Simulate the row from its recipe file `f` (mb_validate_add_recipes): check it describes the row's
 * layout (an error naming the CSV line if not), keep the row's measured values, and say so in head. */
static int csv_file_recipe(struct csv_ctx *c, struct mb_val_row *r, struct mb_scenario *s,
                           const struct mb_scenario *f, const char *path, char *head, size_t hn)
{
    char why[300];
    if (is_absent(cell(c, C_RECOMPUTE))) { /* not stated: the file's is the recipe's */
        s->recompute = f->recompute;
        s->recompute_modules = f->recompute_modules;
    }
    if (mb_validate_recipe_layout(s, f, why, sizeof why) != 0)
        return mb_err_set(c->err, c->path, c->rec_line, 1, "row '%s': recipe file %s (measured.csv_row) states "
                          "%s: a recipe file must describe the row's run", r->id, path, why);
    struct mb_scenario t = *f;
    own_layers(&t.model);
    copy_str(t.name, sizeof t.name, s->name);
    t.meas_tokens_per_s_per_gpu = s->meas_tokens_per_s_per_gpu;
    t.meas_model_tflops_per_gpu = s->meas_model_tflops_per_gpu;
    t.meas_step_time_s = s->meas_step_time_s;
    t.meas_peak_memory_gib = 0; /* the row's own peak (column or notes) is compared */
    t.meas_oom = 0;
    t.roofline |= s->roofline;
    mb_scenario_free(s);
    *s = t;
    copy_str(r->recipe_file, sizeof r->recipe_file, path);
    snprintf(head, hn, "recipe from %s", path);
    /* the CSV reader's pre-FlashAttention rule is not the file's choice: said, not applied */
    if (s->cp == 1 && s->attn_backend != MB_ATTN_LOCAL && s->attn_backend != MB_ATTN_UNFUSED && csv_before_flash(c))
        snprintf(head + strlen(head), hn - strlen(head), "; published before FlashAttention reached Megatron-LM, "
                 "but the recipe file's attention backend is used (training.attention_backend: local and "
                 "attention_dropout 0.1 would be Megatron's own CoreAttention of then)");
    return 0;
}

/* The recipe of a row without a recipe file: the pre-FlashAttention rule, then the recipe columns
 * (csv_apply_recipe) or, in a CSV without them, what the notes state (mb_validate_apply_notes). */
static void csv_row_recipe(struct csv_ctx *c, struct mb_val_row *r, struct mb_scenario *s, char *head, size_t hn,
                           char *tail, size_t tn)
{
    if (s->cp == 1)
        csv_attention_era(c, s, head, hn);
    if (c->have_recipe) {
        struct mb_val_recipe *rec = mb_malloc(sizeof *rec);
        csv_apply_recipe(c, s, rec);
        r->recipe_bad = rec->n_bad;
        if (!strcmp(r->metric, MB_VAL_TFLOPS)) /* after the recipe: SC21 counts its recompute */
            csv_tflops_in_time(c, r, s, head, hn);
        csv_recipe_note(c, r, rec, head, hn, tail, tn);
        mb_free(rec);
    } else {
        char applied[200] = "";
        if (c->notes_idx >= 0)
            mb_validate_apply_notes(s, c->f[c->notes_idx].text, applied, sizeof applied);
        if (!strcmp(r->metric, MB_VAL_TFLOPS))
            csv_tflops_in_time(c, r, s, head, hn);
        if (applied[0]) {
            size_t l = strlen(head);
            snprintf(head + l, hn - l, "%sfrom notes: %s", l ? "; " : "", applied);
        }
    }
}

static int csv_record(struct csv_ctx *c)
{
    enum { I_GPUS, I_GBS, I_MBS, I_SEQ, I_TP, I_PP, I_CP, I_VP, I_EP, I_ETP, I_FSDP, I_N };
    static const int icol[I_N] = {C_GPUS, C_GBS, C_MBS, C_SEQ, C_TP, C_PP, C_CP, C_VP, C_EP, C_ETP, C_FSDP};
    int iv[I_N], ip[I_N], i;
    double tokens, tflops, step, mem_gib;
    const char *mem_kind;
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
        measured_positive(c, C_STEP, step) || cell_memory(c, &mem_gib, &mem_kind))
        return -1;
    if (strlen(cell(c, C_ID)) >= sizeof r->id) { /* cut, two runs could pair as one in --baseline */
        const struct csv_field *f = &c->f[c->idx[C_ID]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'id': %zu characters, expected at most %zu",
                          strlen(cell(c, C_ID)), sizeof r->id - 1);
    }

    r = new_row(c->out);
    r->line = c->rec_line;
    copy_str(r->source, sizeof r->source, c->path);
    copy_str(r->id, sizeof r->id, cell(c, C_ID));
    for (char *q = r->id; *q; q++) /* a quoted id may hold a newline or tab: one table row per run */
        if ((unsigned char)*q < ' ')
            *q = ' ';
    if (!r->id[0])
        snprintf(r->id, sizeof r->id, "line %d", c->rec_line);
    model_key = cell(c, C_MODEL);
    copy_str(r->model, sizeof r->model, model_key);
    key = mb_validate_system_key(cell(c, C_SYSTEM));
    copy_str(r->system, sizeof r->system, key ? key : cell(c, C_SYSTEM));
    if (key && strchr(key, '/')) { /* a system file: its stem names the row's system */
        const char *base = strrchr(key, '/') + 1, *dot = strrchr(base, '.');
        snprintf(r->system, sizeof r->system, "%.*s", (int)(dot ? dot - base : (long)strlen(base)), base);
    }
    /* memory: the column, else a "peak N GB" the notes state (allocated, the last pipeline stage's
     * rank: see docs/validation.md) */
    {
        const char *notes = c->notes_idx >= 0 ? c->f[c->notes_idx].text : NULL;
        r->reported_oom = mb_validate_notes_oom(notes);
        copy_str(r->mem_kind, sizeof r->mem_kind, mem_kind);
        if (mem_gib > 0) {
            r->meas_mem_gib = mem_gib;
            copy_str(r->mem_from, sizeof r->mem_from, "column");
        } else if (mb_validate_notes_peak_memory(notes, &r->meas_mem_gib)) {
            copy_str(r->mem_kind, sizeof r->mem_kind, "allocated");
            copy_str(r->mem_from, sizeof r->mem_from, "notes");
            r->mem_first_iter = 1;
        }
    }

    if (pick_metric(r, tokens, step, tflops) != 0)
        return 0;
    if (!*model_key) {
        skip_row(r, "model not stated");
        return 0;
    }
    if (!key) { /* a name mbsim does not know is a typo in the CSV, not a row to skip */
        const struct csv_field *f = &c->f[c->idx[C_SYSTEM]];
        const char *v = cell(c, C_SYSTEM);
        if (strchr(v, '/'))
            return mb_err_set(c->err, c->path, f->line, f->col,
                              "column 'system': system file '%.200s' not found (a path is read relative to the "
                              "working directory and must end in .yaml)", v);
        return mb_err_set(c->err, c->path, f->line, f->col,
                          "column 'system': '%.60s' is no known system (a DGX/HGX/NVL name of the public CSV, an "
                          "mbsim preset from `mbsim systems`, or a path to a system file DIR/NAME.yaml)", v);
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
    if (!me->ok && me->unknown) {
        const struct csv_field *f = &c->f[c->idx[C_MODEL]];
        return mb_err_set(c->err, c->path, f->line, f->col,
                          "column 'model': %s (`mbsim models` lists the shipped ones; a path names a model file)",
                          me->why);
    }
    if (!me->ok && is_file_ref(model_key)) { /* the user's own model file is broken: CI must not pass over it */
        const struct csv_field *f = &c->f[c->idx[C_MODEL]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'model': model file does not load: %s",
                          load_error(me->why));
    }
    if (!me->ok) {
        skip_row(r, me->why);
        return 0;
    }
    if (me->m.vision.depth > 0) {
        skip_row(r, "VLM row without image data");
        return 0;
    }
    se = cache_system(cache, key);
    if (!se->ok && is_file_ref(key)) {
        const struct csv_field *f = &c->f[c->idx[C_SYSTEM]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'system': system file does not load: %s",
                          load_error(se->why));
    }
    if (!se->ok) {
        skip_row(r, se->why);
        return 0;
    }

    mb_scenario_defaults(&s);
    copy_str(s.name, sizeof s.name, r->id);
    s.file[0] = '\0';
    s.model = me->m;
    own_layers(&s.model);
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
    /* LoRA fine-tuning (notes "task=lora"): the base model is frozen and carries adapters
     * (ops.c mb__lora) as the publisher's recipe sets them (no column states them) */
    if (c->notes_idx >= 0 && strstr(c->f[c->notes_idx].text, "task=lora")) {
        s.freeze = MB_FREEZE_LANGUAGE | (s.model.vision.depth > 0 ? MB_FREEZE_VISION | MB_FREEZE_VISION_PROJ : 0);
        csv_lora(c->source_idx >= 0 ? c->f[c->source_idx].text : "", &s);
    }
    s.meas_tokens_per_s_per_gpu = tokens;
    s.meas_model_tflops_per_gpu = tflops;
    s.meas_step_time_s = step;
    s.roofline = c->out->roofline;

    /* the layout columns alone must make a valid scenario (else the row is
     * skipped with the layout's own message); the recipe then refines it */
    int unstated = csv_split_unstated(&s);
    struct mb_scenario t = s;
    mb_err_clear(&cerr);
    if (mb_scenario_check(&t, &cerr) != 0) {
        char msg[600];
        mb_err_format(&cerr, msg, sizeof msg);
        copy_str(why, sizeof why, msg);
        skip_row(r, why);
        mb_scenario_free(&s);
        return 0;
    }
    char *head = mb_malloc(2048), *tail = mb_malloc(1100);
    head[0] = tail[0] = '\0';
    const char *rpath = NULL;
    const struct mb_scenario *rfile = *cell(c, C_ID) ? mb_validate_recipe_file(c->out, r->id, &rpath) : NULL;
    if (rfile) { /* the file is the recipe: the columns and notes are not read for it (an id-less row, "line N",
                  * takes none) */
        if (csv_file_recipe(c, r, &s, rfile, rpath, head, 2048) != 0) {
            mb_free(head);
            mb_free(tail);
            mb_scenario_free(&s);
            return -1;
        }
        unstated = 0; /* the file states the split, or takes mbsim's spread as its own */
        if (!strcmp(r->metric, MB_VAL_TFLOPS))
            csv_tflops_in_time(c, r, &s, head, 2048);
    } else {
        csv_row_recipe(c, r, &s, head, 2048, tail, 1100);
    }

    if (unstated && !s.pipeline_layout[0]) { /* the recipe stated no layout either */
        size_t l = strlen(head);
        snprintf(head + l, 2048 - l, "%spipeline split not stated: %d layers do not split evenly over pp*vpp = %d, "
                 "mbsim's spread assumed", l ? "; " : "", s.model.num_layers, s.pp * s.vpp);
    }
    mb_err_clear(&cerr);
    if (mb_scenario_check(&s, &cerr) != 0) { /* cannot happen: every recipe cell was checked */
        char msg[600];
        mb_err_format(&cerr, msg, sizeof msg);
        copy_str(why, sizeof why, msg);
        skip_row(r, why);
    } else if (c->out->parse_only) {
        skip_row(r, "parse only");
    } else {
        submit_row(c->out, r, &s, s.strategy == MB_STRAT_FSDP ? iv[I_FSDP] : 0, head, tail);
        head = tail = NULL; /* taken */
    }
    mb_free(head);
    mb_free(tail);
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
        else if (c->have_header && c->out->n_rows > c->out->n_pending)
            report_progress(c->out, c->out->n_rows - c->out->n_pending);
    }
    for (i = 0; i < c->nf; i++)
        mb_free(c->f[i].text);
    c->nf = 0;
    c->rec_pending = 1;
}

static char *read_file(const char *path, size_t *len, struct mb_err *err)
{
    char *buf;
    if (mb_input_read(path, "a CSV file", 0, &buf, len, err))
        return NULL;
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

    /* a UTF-8 byte order mark (spreadsheet exports) is not part of the first column's name */
    i = len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0;
    for (; i < len && !c.failed; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (!ch) {
            rc = mb_err_set(err, path, c.line, c.col, "NUL byte: expected CSV text (is this a binary file?)");
            c.failed = 1;
            break;
        }
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
    flush_jobs(out); /* the rows read so far are kept, also on error */
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
    copy_str(r->mem_kind, sizeof r->mem_kind, "allocated");
    if (s.meas_peak_memory_gib > 0) {
        r->meas_mem_gib = s.meas_peak_memory_gib;
        copy_str(r->mem_from, sizeof r->mem_from, "scenario");
        r->mem_first_iter = s.meas_peak_iteration == 1;
    }
    r->reported_oom = s.meas_oom;
    int timed = s.meas_tokens_per_s_per_gpu > 0 || s.meas_step_time_s > 0 || s.meas_model_tflops_per_gpu > 0;
    r->mem_only = !timed && (s.meas_oom || s.meas_peak_memory_gib > 0);
    if (timed)
        pick_metric(r, s.meas_tokens_per_s_per_gpu, s.meas_step_time_s, s.meas_model_tflops_per_gpu);
    else if (!r->mem_only)
        skip_row(r, "no measured block");
    if (!r->skipped) {
        s.roofline |= out->roofline;
        if (out->parse_only) {
            skip_row(r, "parse only");
        } else {
            /* with jobs > 1 the row waits for a batch: scenario files given one after the
             * other run side by side (flushed by a full batch, the next CSV or finish) */
            submit_row(out, r, &s, 0, NULL, NULL);
            report_progress(out, out->n_rows - out->n_pending);
            return 0;
        }
    }
    mb_scenario_free(&s);
    report_progress(out, out->n_rows - out->n_pending);
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

/* Is r in the time comparison? (predicted, and not a memory-only row) */
static int time_row(const struct mb_val_row *r)
{
    return !r->skipped && !r->mem_only;
}

/* Group (name, |err|) pairs by name: sorted by name, MAPE per group. */
static struct mb_val_group *group_by(const struct mb_val_summary *s, size_t field_off, int skip_empty, size_t *n_out)
{
    struct name_val *nv = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *nv);
    struct mb_val_group *g = mb_malloc((s->n_predicted ? s->n_predicted : 1) * sizeof *g);
    size_t i, n = 0, ng = 0;
    for (i = 0; i < s->n_rows; i++) {
        const struct mb_val_row *r = &s->rows[i];
        if (!time_row(r) || (skip_empty && !((const char *)r + field_off)[0]))
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

/* Whether a compared peak enters the memory MAPE: a run that ran, or one reported out of memory whose
 * scenario states its peak after iteration 1 (the first iteration completed and logged it; the run failed
 * later, as the Nemotron 3 Nano runs of the activation-recompute card did in iteration 2). A reported-OOM
 * peak otherwise is where the run failed. */
static int mem_in_mape(const struct mb_val_row *r)
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

    flush_jobs(out); /* scenario rows still waiting for their batch */
    release_cache(out);
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

    out->by_system = group_by(out, offsetof(struct mb_val_row, system), 0, &out->n_by_system);
    out->by_model = group_by(out, offsetof(struct mb_val_row, model), 0, &out->n_by_model);
    out->by_metric = group_by(out, offsetof(struct mb_val_row, metric), 0, &out->n_by_metric);
    out->by_flops_conv = group_by(out, offsetof(struct mb_val_row, flops_conv), 1, &out->n_by_flops_conv);

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
            if (!time_row(r))
                continue;
            sg[ns2++] = r->err_pct;
            if (r->layout_mismatch)
                mm[nm++] = r->err_pct;
            else
                ok[nk++] = r->err_pct;
            out->n_recipe_bad += r->recipe_bad > 0;
            out->n_recipe_files += r->recipe_file[0] != '\0';
        }
        qsort(sg, ns2, sizeof *sg, cmp_dbl);
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
            if (mem_in_mape(r)) {
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
        qsort(me, nme, sizeof *me, cmp_dbl);
        out->median_mem_err_pct = nme == 0 ? NAN : (nme % 2) ? me[nme / 2] : 0.5 * (me[nme / 2 - 1] + me[nme / 2]);
        mb_free(me);
    }

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
    release_cache(s);
    mb_validate_recipes_free(s);
    for (size_t k = 0; k < s->n_pending; k++) { /* scenario rows never simulated (an error came first) */
        mb_scenario_free(&s->pending[k].s);
        mb_free(s->pending[k].head);
        mb_free(s->pending[k].tail);
    }
    mb_free(s->pending);
    mb_free(s->by_system);
    mb_free(s->by_model);
    mb_free(s->by_metric);
    mb_free(s->by_flops_conv);
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

/* An id cut to 40 characters for the text tables (longer ones end in "..."). */
static void row_id40(char *id, size_t n, const char *full)
{
    if (strlen(full) > 40)
        snprintf(id, n, "%.37s...", full);
    else
        copy_str(id, n, full);
}

/* Is a row a predicted OOM that ran? (listed with its largest memory terms) */
static int pred_oom_ran(const struct mb_val_row *r)
{
    return !r->skipped && !r->reported_oom && r->verdict == MB_MEM_OOM;
}

/* The memory part of the text summary: peak-memory MAPE, OOM verdicts against
 * what ran, and the predicted-OOM rows that ran with their largest terms (ids
 * whole: the rows of one card differ only at the end). */
static void print_memory_summary(const struct mb_val_summary *s, FILE *fp)
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
        if (!pred_oom_ran(r))
            continue;
        fprintf(fp, "  %-56s %6.1f / %5.1f GiB: %s\n", r->id, r->device_gib, r->capacity_gib, r->mem_terms);
    }
}

/* The rows reported out of memory, each with its verdict and device memory. */
static void print_reported_oom(const struct mb_val_summary *s, FILE *fp)
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
        if (!time_row(r))
            continue;
        row_id40(id, sizeof id, r->id);
        /* the note is cut at 200 characters here; --json has it whole */
        fprintf(fp, "%-40s %-24.24s %-12.12s %-10s %12.6g %12.6g %+8.1f%s%.200s%s\n", id, r->model, r->system,
                metric_short(r->metric), r->measured, r->predicted, r->err_pct, r->note[0] ? "  # " : "",
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
                    : mem_in_mape(r) ? "; reported OOM later"
                                     : "  # reported OOM: not in the memory MAPE");
        }
    }
    print_reported_oom(s, fp);
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
        print_memory_summary(s, fp);
        return;
    }
    fprintf(fp, "MAPE: %.2f %%   median APE: %.2f %%   max APE: %.2f %% (%s)\n", s->mape_pct, s->median_ape_pct,
            s->max_ape_pct, s->rows[s->max_ape_row].id);
    fprintf(fp, "signed median error: %+.2f %%\n", s->median_err_pct);
    if (s->n_layout_mismatch)
        fprintf(fp, "LAYOUT-MISMATCH rows (recipe layout != published): %zu, MAPE %.2f %% (other rows %.2f %%)\n",
                s->n_layout_mismatch, s->mape_layout_mismatch_pct, s->mape_layout_ok_pct);
    if (s->n_recipe_bad)
        fprintf(fp, "rows with an unparseable recipe cell (named in the note): %zu\n", s->n_recipe_bad);
    if (s->n_recipe_files)
        fprintf(fp, "rows simulated from a recipe file (--recipes; named in the note): %zu\n", s->n_recipe_files);
    print_memory_summary(s, fp);
    if (s->n_by_flops_conv)
        print_groups(fp, "FLOP convention (TFLOP/s-only rows compared in tokens/s)", s->by_flops_conv,
                     s->n_by_flops_conv);
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
    json_object_set_new(root, "median_err_pct", jnum(s->median_err_pct));
    json_object_set_new(root, "n_layout_mismatch", json_integer((json_int_t)s->n_layout_mismatch));
    json_object_set_new(root, "mape_layout_mismatch_pct", jnum(s->mape_layout_mismatch_pct));
    json_object_set_new(root, "mape_layout_ok_pct", jnum(s->mape_layout_ok_pct));
    json_object_set_new(root, "n_recipe_bad", json_integer((json_int_t)s->n_recipe_bad));
    json_object_set_new(root, "n_recipe_files", json_integer((json_int_t)s->n_recipe_files));
    json_object_set_new(root, "mape_by_system", group_obj(s->by_system, s->n_by_system));
    json_object_set_new(root, "mape_by_model", group_obj(s->by_model, s->n_by_model));
    json_object_set_new(root, "mape_by_metric", group_obj(s->by_metric, s->n_by_metric));
    json_object_set_new(root, "mape_by_flops_convention", group_obj(s->by_flops_conv, s->n_by_flops_conv));
    json_object_set_new(root, "n_memory", json_integer((json_int_t)s->n_mem));
    json_object_set_new(root, "n_memory_reported_oom_later", json_integer((json_int_t)s->n_mem_oom_later));
    json_object_set_new(root, "memory_mape_pct", jnum(s->mape_mem_pct));
    json_object_set_new(root, "memory_median_err_pct", jnum(s->median_mem_err_pct));
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
        if (!pred_oom_ran(r))
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "id", json_string(r->id));
        json_object_set_new(e, "device_memory_gib", jnum(r->device_gib));
        json_object_set_new(e, "memory_capacity_gib", jnum(r->capacity_gib));
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
            json_object_set_new(o, "measured", jnum(r->measured));
        }
        if (r->skipped) {
            json_object_set_new(o, "skipped", json_true());
            json_object_set_new(o, "reason", json_string(r->reason));
        } else {
            if (r->mem_only) {
                json_object_set_new(o, "memory_only", json_true());
            } else {
                json_object_set_new(o, "predicted", jnum(r->predicted));
                json_object_set_new(o, "err_pct", jnum(r->err_pct));
            }
            if (r->note[0])
                json_object_set_new(o, "note", json_string(r->note));
            if (r->flops_conv[0]) {
                json_object_set_new(o, "flops_convention", json_string(r->flops_conv));
                json_object_set_new(o, "measured_tflops", jnum(r->measured_tflops));
            }
            json_object_set_new(o, "memory_verdict", json_string(mb_memory_verdict_name((enum mb_mem_verdict)r->verdict)));
            json_object_set_new(o, "device_memory_gib", jnum(r->device_gib));
            json_object_set_new(o, "memory_capacity_gib", jnum(r->capacity_gib));
            json_object_set_new(o, "memory_terms", json_string(r->mem_terms));
        }
        if (r->reported_oom)
            json_object_set_new(o, "reported_oom", json_true());
        if (r->mem_from[0]) {
            json_object_set_new(o, "measured_memory_gib", jnum(r->meas_mem_gib));
            json_object_set_new(o, "memory_kind", json_string(r->mem_kind));
            json_object_set_new(o, "memory_from", json_string(r->mem_from));
            json_object_set_new(o, "memory_after_iteration", json_integer(r->mem_first_iter ? 1 : 0));
        }
        if (r->mem_compared) {
            json_object_set_new(o, "predicted_memory_gib", jnum(r->pred_mem_gib));
            json_object_set_new(o, "memory_err_pct", jnum(r->mem_err_pct));
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
