/*
 * mb_sweep.c -- cartesian sweeps over scenario keys (mb_sweep.h, docs/sweep.md).
 *
 * The base scenario is loaded once through the ordinary loader (the `sweep:`
 * pair is taken out of the YAML tree first). Each configuration is a struct
 * copy of the base with one value per axis set by mb_scenario_set and then
 * mb_scenario_check; models and systems named by the axes are loaded once up
 * front and shared read-only, so worker threads never touch files except the
 * calibration table mb_step_simulate reads itself.
 */
#include "mb_sweep.h"
#include "mb_coll.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mb_input.h"
#include "mb_keys.h"
#include "mb_yaml.h"

struct mb_sweep__sys {
    char key[MB_SWEEP_VAL_LEN];
    char ref[512];                  /* as the writer records it (absolute path or preset name) */
    struct mb_system sys;
};

struct mb_sweep__model {
    char key[MB_SWEEP_VAL_LEN];
    char ref[512];
    struct mb_model m;
};

/* ------------------------------------------------------------ keys */

/* The key list, aliases and value parsing are the scenario key table's
 * (mb_keys.h): every key with MB_KEYF_SWEEP is an axis. */

static pthread_once_t mb_sw__keys_once = PTHREAD_ONCE_INIT;
static char mb_sw__keys_text[2048];

static void mb_sw__keys_build(void) { mb_keys_list(1, 1, mb_sw__keys_text, sizeof mb_sw__keys_text); }

const char *mb_sweep_keys(void)
{
    pthread_once(&mb_sw__keys_once, mb_sw__keys_build);
    return mb_sw__keys_text;
}

/* Sweep key for a name or alias; NULL if unknown or not sweepable. */
static const struct mb_key *mb_sw__key(const char *name)
{
    const struct mb_key *k = mb_key_find(name);
    return k && (k->flags & MB_KEYF_SWEEP) ? k : NULL;
}

/* "unknown key 'X'" at file:line:col (NULL, 0, 0: none), naming the nearest sweepable key or alias
 * when one is within 2 edits (1 for short names), and where the whole list is: `mbsim sweep --help`
 * prints it (the list is longer than an error message). */
static int mb_sw__unknown(struct mb_err *err, const char *file, int line, int col, const char *key_in,
                          const char *where)
{
    size_t nk;
    const struct mb_key *k = mb_keys(&nk);
    const char *best = NULL;
    int bd = 3;
    for (size_t i = 0; i < 2 * nk; i++) {
        const char *c = i < nk ? k[i].key : k[i - nk].alias;
        if (!c || !(k[i % nk].flags & MB_KEYF_SWEEP))
            continue;
        int lim = strlen(c) >= 6 ? 2 : 1, d = mb_edit_distance(key_in, c, lim);
        if (d <= lim && d < bd) {
            best = c;
            bd = d;
        }
    }
    char near[160] = "";
    if (best)
        snprintf(near, sizeof near, " (did you mean %s?)", best);
    return mb_err_set(err, file, line, col, "unknown key '%s'%s%s; `mbsim sweep --help` lists the keys it takes",
                      key_in, where, near);
}

static int mb_sw__is_none(const char *v)
{
    return !*v || !strcasecmp(v, "none") || !strcmp(v, "[]");
}

int mb_scenario_set(struct mb_scenario *s, const char *key_in, const char *v, struct mb_err *err)
{
    const struct mb_key *k = mb_sw__key(key_in);
    if (!k)
        return mb_sw__unknown(err, NULL, 0, 0, key_in, "");
    if (k->flags & MB_KEYF_REF)
        return mb_err_set(err, NULL, 0, 0, "%s: set it through a sweep (mb_sweep_add_axis), not mb_scenario_set",
                          k->key);
    return mb_key_set(s, k, v, err);
}

/* ------------------------------------------------------------ references */

static const struct mb_sweep__sys *mb_sw__find_sys(const struct mb_sweep *sw, const char *key)
{
    for (int i = 0; i < sw->n_sys; i++)
        if (!strcmp(sw->sys[i].key, key))
            return &sw->sys[i];
    return NULL;
}

const char *mb_sweep_sys_gpu(const struct mb_sweep *sw, int i)
{
    return i >= 0 && i < sw->n_sys ? sw->sys[i].sys.gpu : "";
}

static const struct mb_sweep__model *mb_sw__find_model(const struct mb_sweep *sw, const char *key)
{
    for (int i = 0; i < sw->n_models; i++)
        if (!strcmp(sw->models[i].key, key))
            return &sw->models[i];
    return NULL;
}

/* A resolved reference as the scenario writer wants it: paths absolute. */
static void mb_sw__keep_ref(const char *v, const char *resolved, char *out, size_t len)
{
    char *abs = strcmp(v, resolved) || strchr(v, '/') ? mb_path_absolute(resolved) : mb_strdup(resolved);
    snprintf(out, len, "%s", strlen(abs) < len ? abs : resolved);
    mb_free(abs);
}

/* Load a system/model value once (main thread only). */
static int mb_sw__preload(struct mb_sweep *sw, const char *key, const char *v, struct mb_err *err)
{
    struct mb_err sub;
    mb_err_clear(&sub);
    if (!strcmp(key, "system.preset") && !mb_sw__find_sys(sw, v)) {
        struct mb_system sys;
        char *ref = mb_scenario_ref(sw->dir, v);
        int r = mb_topo_load_system(ref, &sys, &sub);
        if (r) {
            mb_free(ref);
            return mb_err_set(err, sub.file[0] ? sub.file : NULL, sub.line, sub.col, "system.preset: %s", sub.msg);
        }
        sw->sys = mb_realloc(sw->sys, (size_t)(sw->n_sys + 1) * sizeof *sw->sys);
        snprintf(sw->sys[sw->n_sys].key, MB_SWEEP_VAL_LEN, "%s", v);
        mb_sw__keep_ref(v, ref, sw->sys[sw->n_sys].ref, sizeof sw->sys[sw->n_sys].ref);
        mb_free(ref);
        sw->sys[sw->n_sys++].sys = sys;
    } else if (!strcmp(key, "model") && !mb_sw__find_model(sw, v)) {
        struct mb_model m;
        char *ref = mb_scenario_ref(sw->dir, v);
        int r = mb_model_load(ref, &m, &sub);
        if (r) {
            mb_free(ref);
            return mb_err_set(err, sub.file[0] ? sub.file : NULL, sub.line, sub.col, "model: %s", sub.msg);
        }
        sw->models = mb_realloc(sw->models, (size_t)(sw->n_models + 1) * sizeof *sw->models);
        snprintf(sw->models[sw->n_models].key, MB_SWEEP_VAL_LEN, "%s", v);
        mb_sw__keep_ref(v, ref, sw->models[sw->n_models].ref, sizeof sw->models[sw->n_models].ref);
        mb_free(ref);
        sw->models[sw->n_models++].m = m;
    }
    return 0;
}

/* --------------------------------------------------------------- axes */

/* The grid with axis `key` set to n values stays within MB_SWEEP_MAX_CONFIGS:
 * every factor is at most the limit, so each partial product fits a size_t. */
static int mb_sw__grid_check(const struct mb_sweep *sw, const char *key, int n, struct mb_err *err)
{
    size_t total = (size_t)n;
    for (int a = 0; a < sw->n_axes && total <= MB_SWEEP_MAX_CONFIGS; a++)
        if (strcmp(sw->axis[a].key, key))
            total *= (size_t)sw->axis[a].n;
    if (total <= MB_SWEEP_MAX_CONFIGS)
        return 0;
    return mb_err_set(err, NULL, 0, 0,
                      "sweep key '%s' with %d values makes the grid larger than %d configurations "
                      "(the product of every key's value count); sweep fewer values or split the sweep",
                      key, n, MB_SWEEP_MAX_CONFIGS);
}

int mb_sweep_add_axis(struct mb_sweep *sw, const char *key_in, int n, const char *const *val, struct mb_err *err)
{
    const struct mb_key *k = mb_sw__key(key_in);
    const char *key = k ? k->key : NULL;
    if (!key)
        return mb_sw__unknown(err, NULL, 0, 0, key_in, "");
    if (n < 1)
        return mb_err_set(err, NULL, 0, 0, "sweep key '%s' has no values", key);
    if (mb_sw__grid_check(sw, key, n, err))
        return -1;
    /* every value must parse (the combination is checked per configuration), once */
    for (int i = 0; i < n; i++) {
        if (strlen(val[i]) >= MB_SWEEP_VAL_LEN)
            return mb_err_set(err, NULL, 0, 0, "%s: value too long: '%s'", key, val[i]);
        for (int j = 0; j < i; j++)
            if (!strcmp(val[i], val[j]))
                return mb_err_set(err, NULL, 0, 0, "%s: value '%s' given twice (each would be its own configuration)",
                                  key, val[i]);
        if (k->flags & MB_KEYF_REF) {
            if (mb_sw__preload(sw, key, val[i], err))
                return -1;
        } else {
            struct mb_scenario tmp = sw->base;
            if (mb_scenario_set(&tmp, key, val[i], err))
                return -1;
        }
    }
    int a = 0;
    while (a < sw->n_axes && strcmp(sw->axis[a].key, key))
        a++;
    if (a == sw->n_axes) {
        if (sw->n_axes == MB_SWEEP_MAX_AXES)
            return mb_err_set(err, NULL, 0, 0, "too many sweep keys (at most %d)", MB_SWEEP_MAX_AXES);
        sw->n_axes++;
    } else {
        mb_free(sw->axis[a].val);
    }
    struct mb_sweep_axis *ax = &sw->axis[a];
    snprintf(ax->key, sizeof ax->key, "%s", key);
    ax->n = n;
    ax->val = mb_calloc((size_t)n, sizeof *ax->val);
    for (int i = 0; i < n; i++)
        snprintf(ax->val[i], MB_SWEEP_VAL_LEN, "%s", val[i]);
    return 0;
}

int mb_sweep_set(struct mb_sweep *sw, const char *spec, struct mb_err *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
        return mb_err_set(err, NULL, 0, 0, "expected key=v1,v2,... (e.g. parallel.tp=1,2,4)");
    char key[MB_SWEEP_KEY_LEN];
    size_t kn = (size_t)(eq - spec);
    if (kn >= sizeof key)
        return mb_err_set(err, NULL, 0, 0, "--set '%s': key too long", spec);
    memcpy(key, spec, kn);
    key[kn] = 0;
    char *vals = mb_strdup(eq + 1);
    int n = 1;
    for (char *p = vals; *p; p++)
        n += *p == ',';
    const char **v = mb_calloc((size_t)n, sizeof *v);
    int k = 0;
    for (char *p = vals; p;) {
        char *c = strchr(p, ',');
        if (c)
            *c = 0;
        v[k++] = p;
        p = c ? c + 1 : NULL;
    }
    int rc = mb_sweep_add_axis(sw, key, n, v, err);
    mb_free(v);
    mb_free(vals);
    return rc;
}

size_t mb_sweep_size(const struct mb_sweep *sw)
{
    size_t n = 1;
    for (int a = 0; a < sw->n_axes; a++)
        n *= (size_t)sw->axis[a].n;
    return n;
}

const char *mb_sweep_value(const struct mb_sweep *sw, size_t idx, int a)
{
    for (int b = sw->n_axes - 1; b > a; b--)
        idx /= (size_t)sw->axis[b].n;
    return sw->axis[a].val[idx % (size_t)sw->axis[a].n];
}

/* ------------------------------------------------------------ loading */

/* A sweep value node: a scalar, or a list of names joined with '+'. */
static int mb_sw__value_text(const struct mb_node *n, char *buf, size_t len, struct mb_err *err)
{
    if (n->kind == MB_NODE_SCALAR) {
        if (strlen(n->str) >= len)
            return mb_yaml_err(err, n, "sweep value too long");
        snprintf(buf, len, "%s", mb_yaml_is_null(n) ? "none" : n->str);
        return 0;
    }
    if (n->kind != MB_NODE_SEQ)
        return mb_yaml_err(err, n, "sweep value: expected a scalar or a list of names");
    size_t k = 0;
    buf[0] = 0;
    if (n->n == 0) {
        snprintf(buf, len, "none");
        return 0;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct mb_node *it = n->items[i];
        if (it->kind != MB_NODE_SCALAR || strchr(it->str, '+'))
            return mb_yaml_err(err, it, "sweep value: expected a name");
        int w = snprintf(buf + k, len - k, "%s%s", i ? "+" : "", it->str);
        if (w < 0 || (size_t)w >= len - k)
            return mb_yaml_err(err, n, "sweep value too long");
        k += (size_t)w;
    }
    return 0;
}

/* A quoted value of a number or boolean key is a string in YAML, an error as in a scenario file
 * (mb_yaml_int and friends); enum names may be quoted. */
static int mb_sw__check_quoted(const struct mb_key *k, const struct mb_node *item, struct mb_err *err)
{
    const char *want = k->type == MB_KEY_BOOL ? "true or false"
                       : k->type == MB_KEY_DOUBLE ? "a number"
                       : k->type == MB_KEY_INT || k->type == MB_KEY_U64 ? "an integer"
                                                                          : NULL;
    if (!want || item->kind != MB_NODE_SCALAR || !item->quoted)
        return 0;
    return mb_yaml_err(err, item, "sweep.%s: expected %s, got the quoted string \"%s\" (write it without quotes)",
                       k->key, want, item->str);
}

static int mb_sw__read_block(struct mb_sweep *sw, const struct mb_node *blk, struct mb_err *err)
{
    if (mb_yaml_expect(blk, MB_NODE_MAP, "sweep", err))
        return -1;
    for (size_t i = 0; i < blk->n; i++) {
        const struct mb_pair *p = &blk->pairs[i];
        const struct mb_node *v = p->val;
        const struct mb_key *key = mb_sw__key(p->key);
        if (!key)
            return mb_sw__unknown(err, v->file, p->line, p->col, p->key, " in sweep");
        /* an alias and its dotted name are one axis: the later would silently replace the earlier */
        for (size_t j = 0; j < i; j++)
            if (mb_sw__key(blk->pairs[j].key) == key)
                return mb_err_set(err, v->file, p->line, p->col,
                                  "sweep.%s: the same key as '%s' at line %d (both are %s); give it once", p->key,
                                  blk->pairs[j].key, blk->pairs[j].line, key->key);
        if (mb_yaml_is_null(v))
            return mb_err_set(err, v->file, p->line, p->col, "sweep.%s has no value; give a list of values",
                              p->key);
        /* a scalar is one value; a list of scalars/lists is the values */
        int n = v->kind == MB_NODE_SEQ ? (int)v->n : 1;
        if (v->kind == MB_NODE_MAP || n < 1)
            return mb_yaml_err(err, v, "sweep.%s: expected a non-empty list of values", p->key);
        char(*txt)[MB_SWEEP_VAL_LEN] = mb_calloc((size_t)n, sizeof *txt);
        const char **ptr = mb_calloc((size_t)n, sizeof *ptr);
        int rc = 0;
        for (int k = 0; k < n && !rc; k++) {
            const struct mb_node *item = v->kind == MB_NODE_SEQ ? v->items[k] : v;
            rc = mb_sw__check_quoted(key, item, err) || mb_sw__value_text(item, txt[k], MB_SWEEP_VAL_LEN, err);
            ptr[k] = txt[k];
        }
        if (!rc) {
            struct mb_err sub;
            mb_err_clear(&sub);
            if (mb_sweep_add_axis(sw, p->key, n, ptr, &sub)) {
                char where[MB_ERR_TEXT_LEN + 64]; /* a model or system file's own error, named from its axis */
                if (sub.file[0] && sub.line > 0)
                    snprintf(where, sizeof where, "sweep.%s: %s:%d:%d: %s", p->key, sub.file, sub.line, sub.col,
                             sub.msg);
                else if (sub.file[0])
                    snprintf(where, sizeof where, "sweep.%s: %s: %s", p->key, sub.file, sub.msg);
                else
                    snprintf(where, sizeof where, "%s", sub.msg);
                mb_yaml_err(err, v, "%s", where);
                rc = -1;
            }
        }
        mb_free(ptr);
        mb_free(txt);
        if (rc)
            return -1;
    }
    return 0;
}

int mb_sweep_load(const char *path, struct mb_sweep *sw, struct mb_err *err)
{
    memset(sw, 0, sizeof *sw);
    if (!path)
        return mb_err_set(err, NULL, 0, 0, "no scenario file given");
    /* mb_yaml_load_file, with the bytes hashed on the way (the TSV's provenance line) */
    char *text;
    size_t len;
    if (mb_input_read(path, "a YAML file", 0, &text, &len, err))
        return -1;
    int rc = mb_sweep_load_text(text, len, path, sw, err);
    mb_free(text);
    return rc;
}

int mb_sweep_load_text(const char *text, size_t len, const char *path, struct mb_sweep *sw, struct mb_err *err)
{
    memset(sw, 0, sizeof *sw);
    unsigned long long hash = mb_hash64(text, len, MB_HASH64_INIT);
    struct mb_node *root = mb_yaml_load_string(text, len, path, err);
    if (!root)
        return -1;
    sw->scenario_hash = hash;
    /* take the sweep pair out of the tree (moved last, hidden from the loader) */
    const struct mb_node *blk = NULL;
    size_t n_saved = root->n;
    if (root->kind == MB_NODE_MAP) {
        for (size_t i = 0; i < root->n; i++)
            if (!strcmp(root->pairs[i].key, "sweep")) {
                struct mb_pair t = root->pairs[i];
                memmove(&root->pairs[i], &root->pairs[i + 1], (root->n - i - 1) * sizeof t);
                root->pairs[root->n - 1] = t;
                root->n--;
                blk = t.val;
                break;
            }
    }
    int rc = mb_scenario_load_node(root, path, &sw->base, err);
    if (!rc) {
        const char *slash = strrchr(path, '/');
        if (!slash)
            snprintf(sw->dir, sizeof sw->dir, ".");
        else if (slash == path)
            snprintf(sw->dir, sizeof sw->dir, "/");
        else
            snprintf(sw->dir, sizeof sw->dir, "%.*s", (int)(slash - path), path);
        const struct mb_node *par = mb_yaml_get(root, "parallel");
        const struct mb_node *sp = par ? mb_yaml_get(par, "sequence_parallel") : NULL;
        sw->sp_given = sp && !mb_yaml_is_null(sp);
        if (blk && (mb_yaml_is_null(blk) || (blk->kind == MB_NODE_MAP && blk->n == 0)))
            rc = mb_yaml_err(err, blk, "sweep block is empty; give keys with lists of values, or leave it out");
        else if (blk)
            rc = mb_sw__read_block(sw, blk, err);
    }
    root->n = n_saved;
    mb_yaml_free(root);
    if (rc) {
        mb_sweep_free(sw);
        memset(sw, 0, sizeof *sw);
    }
    return rc;
}

int mb_sweep_warnings_hold(const struct mb_sweep *sw)
{
    /* what mb_scn__warn_inert (mb_scenario.c) reads besides the key it warns about */
    static const char *const dep[] = {"model",           "parallel.ep",     "parallel.tp",
                                      "parallel.cp",     "overlap.ep_comm", "overlap.tp_comm",
                                      "moe.routing",     "moe.dispatcher",  "moe.pad_expert_input_to_capacity",
                                      "cuda_graph.modules"};
    for (int i = 0; i < sw->n_axes; i++)
        for (size_t k = 0; k < sizeof dep / sizeof dep[0]; k++)
            if (!strcmp(sw->axis[i].key, dep[k]))
                return 0;
    return 1;
}

void mb_sweep_drop_axes(struct mb_sweep *sw)
{
    for (int a = 0; a < sw->n_axes; a++)
        mb_free(sw->axis[a].val);
    for (int i = 0; i < sw->n_models; i++)
        mb_model_free(&sw->models[i].m);
    mb_free(sw->models);
    mb_free(sw->sys);
    sw->n_axes = sw->n_models = sw->n_sys = 0;
    sw->models = NULL;
    sw->sys = NULL;
}

void mb_sweep_free(struct mb_sweep *sw)
{
    if (!sw)
        return;
    mb_sweep_drop_axes(sw);
    mb_scenario_free(&sw->base);
}

/* ------------------------------------------------------------ one config */

int mb_sweep_scenario(const struct mb_sweep *sw, size_t idx, struct mb_scenario *s, struct mb_err *err)
{
    *s = sw->base;
    int gran_set = 0, mod_set = 0, layers_set = 0, method_set = 0;
    for (int a = 0; a < sw->n_axes; a++) {
        const char *key = sw->axis[a].key, *v = mb_sweep_value(sw, idx, a);
        if (!strcmp(key, "system.preset")) {
            const struct mb_sweep__sys *sys = mb_sw__find_sys(sw, v);
            if (!sys)
                return mb_err_set(err, NULL, 0, 0, "system.preset '%s' was not loaded", v);
            s->system = sys->sys;
            snprintf(s->system_ref, sizeof s->system_ref, "%s", sys->ref);
            continue;
        }
        if (!strcmp(key, "model")) {
            const struct mb_sweep__model *m = mb_sw__find_model(sw, v);
            if (!m)
                return mb_err_set(err, NULL, 0, 0, "model '%s' was not loaded", v);
            s->model = m->m; /* shared, read-only */
            snprintf(s->model_ref, sizeof s->model_ref, "%s", m->ref);
            s->model_inline = 0;
            continue;
        }
        if (mb_scenario_set(s, key, v, err))
            return -1;
        gran_set |= !strcmp(key, "recompute.granularity");
        mod_set |= !strcmp(key, "recompute.modules") && !mb_sw__is_none(v);
        layers_set |= !strcmp(key, "recompute.num_layers") && strcmp(v, "0");
        method_set |= !strcmp(key, "recompute.method");
    }
    /* recompute options follow the loader's rules: modules only with selective,
     * method/num_layers only with full; a granularity switched by the sweep drops
     * the options of the base's granularity that do not apply. */
    if (s->recompute != MB_RC_SELECTIVE) {
        if (mod_set)
            return mb_err_set(err, NULL, 0, 0, "recompute.modules applies only to granularity: selective");
        s->recompute_modules = 0;
    } else if (!s->recompute_modules) {
        s->recompute_modules = MB_RCM_CORE_ATTN; /* Megatron-Core default ["core_attn"] */
    }
    if (s->recompute != MB_RC_FULL) {
        if (layers_set)
            return mb_err_set(err, NULL, 0, 0, "recompute.num_layers applies only to granularity: full");
        if (method_set && s->recompute_method != MB_RC_UNIFORM)
            return mb_err_set(err, NULL, 0, 0, "recompute.method applies only to granularity: full");
        s->recompute_num_layers = 0;
        s->recompute_method = MB_RC_UNIFORM;
    }
    (void)gran_set;
    if (!sw->sp_given)
        s->sequence_parallel = -1; /* "on when tp > 1", resolved by the check */
    s->file[0] = 0;                /* hand-built: messages without a position */
    return mb_scenario_check(s, err);
}

/* msg as a one-line reason in dst (len > 0 bytes): cut to fit (a TSV cell), blanks for tabs and ends of line. */
static void mb_sw__reason(char *dst, size_t len, const char *msg)
{
    size_t n = strnlen(msg, len - 1);
    memcpy(dst, msg, n);
    dst[n] = '\0';
    for (char *p = dst; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
}

/* mb_step_simulate with the sweep's microbatch cap (0: the default 64, < 0:
 * every microbatch), the layer extension for models of identical layers
 * (layers != 0) and no critical path (sweeps rank by throughput and memory). */
static int mb_sw__simulate(const struct mb_scenario *s, int cap, int layers, struct mb_result *r, struct mb_err *err)
{
    struct mb_step_opts o = {.mb_cap = cap, .critical_path = 0, .layer_cap = layers, .mb_window = layers};
    return mb_step_simulate_opts(s, &o, r, err);
}

/* x to the 6 significant digits the TSV and JSON carry (%.6g reads back to
 * the same double, and prints the same again). */
static double mb_sw__digits(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", x);
    return strtod(buf, NULL);
}

/* A row holds what its TSV line says, so rows read back from a TSV (resume,
 * merge) rank and print exactly as the ones just simulated. */
static void mb_sw__round(struct mb_sweep_row *r)
{
    double *v[] = {&r->step_time_s,     &r->tokens_per_s_per_gpu, &r->model_tflops_per_gpu, &r->mfu,
                   &r->peak_memory_gib, &r->reserved_memory_gib,  &r->capacity_gib};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = mb_sw__digits(*v[i]);
    for (int k = 0; k < MB_SWEEP_TOP; k++)
        r->top_s[k] = mb_sw__digits(r->top_s[k]);
}

/* Start row for configuration idx: its scenario into s, or an INVALID row (returns -1). */
static int mb_sw__start(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row, struct mb_scenario *s)
{
    struct mb_err err;
    memset(row, 0, sizeof *row);
    row->index = idx;
    for (int k = 0; k < MB_SWEEP_TOP; k++)
        row->top_cat[k] = -1;
    mb_err_clear(&err);
    if (mb_sweep_scenario(sw, idx, s, &err)) {
        row->status = MB_SWEEP_INVALID;
        mb_sw__reason(row->reason, sizeof row->reason, err.msg);
        return -1;
    }
    row->dp = s->dp;
    return 0;
}

/* Below the step-time bound by more than the rounding a simulation may show
 * against it (the floor summed in another order and extended, 1e-9 in step.c). */
#define MB_SW__BOUND_SLACK 1e-8

void mb_sweep_eval_bound(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row)
{
    struct mb_scenario s;
    struct mb_err err;
    if (mb_sw__start(sw, idx, row, &s))
        return;
    mb_err_clear(&err);
    struct mb_step_opts o = {.mb_cap = sw->exact ? -1 : sw->mb_cap, .critical_path = 0, .layer_cap = !sw->exact,
                             .mb_window = !sw->exact};
    struct mb_step_bound lb;
    if (mb_step_bound(&s, &o, &lb, &err) || !(lb.step_s > 0)) {
        row->status = MB_SWEEP_FAILED;
        mb_sw__reason(row->reason, sizeof row->reason, err.msg[0] ? err.msg : "no step-time bound");
        return;
    }
    const double gib = 1024.0 * 1024.0 * 1024.0;
    row->status = MB_SWEEP_SCREENED;
    row->step_time_s = lb.step_s * (1 - MB_SW__BOUND_SLACK);
    row->tokens_per_s_per_gpu = (double)s.global_batch_size * s.seq_length / (row->step_time_s * s.gpus);
    row->reserved_memory_gib = lb.device_bytes / gib;
    row->capacity_gib = lb.capacity / gib;
    row->oom = lb.device_bytes > lb.capacity;
}

void mb_sweep_eval(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row)
{
    struct mb_scenario s;
    struct mb_err err;
    if (mb_sw__start(sw, idx, row, &s))
        return;
    mb_err_clear(&err);
    struct mb_result *r = mb_malloc(sizeof *r);
    int rc = mb_sw__simulate(&s, sw->exact ? -1 : sw->mb_cap, !sw->exact, r, &err);
    if (rc) {
        row->status = MB_SWEEP_FAILED;
        mb_sw__reason(row->reason, sizeof row->reason, err.msg);
        mb_free(r);
        return;
    }
    const double gib = 1024.0 * 1024.0 * 1024.0;
    row->status = MB_SWEEP_OK;
    row->step_time_s = r->step_time_s;
    row->tokens_per_s_per_gpu = r->tokens_per_s_per_gpu;
    row->model_tflops_per_gpu = r->model_tflops_per_gpu;
    row->mfu = r->mfu;
    row->peak_memory_gib = r->mem.peak_allocated / gib;
    row->reserved_memory_gib = r->mem.reserved / gib;
    row->capacity_gib = r->mem.capacity / gib;
    row->oom = r->oom;
    row->microbatches = r->microbatches;
    row->sim_wall_s = r->sim_wall_s;
    row->events = r->events;
    /* the three largest breakdown terms */
    int used[MB_CAT_COUNT] = {0};
    for (int k = 0; k < MB_SWEEP_TOP; k++) {
        int best = -1;
        for (int c = 0; c < MB_CAT_COUNT; c++)
            if (!used[c] && r->breakdown[c] > 0 && (best < 0 || r->breakdown[c] > r->breakdown[best]))
                best = c;
        if (best < 0)
            break;
        used[best] = 1;
        row->top_cat[k] = best;
        row->top_s[k] = r->breakdown[best];
    }
    mb_sw__round(row);
    mb_free(r);
}

/* ------------------------------------------------------------ running */

/* Workers take the next shard position from one counter; the calling thread
 * polls every 100 ms, hands the finished rows to on_row in grid order (a row
 * goes out once it and every row before it finished) and reports progress.
 * A finished row does not wake it (a futex wake and a context switch per
 * configuration cost the moe256 grid 7-10 % of its CPU time, docs/sweep.md);
 * a worker that ends does, so a small sweep does not wait out the poll.
 * A stop request only ends the hand-out: configurations already running
 * finish, and every finished row still goes out (in grid order, past the
 * unfinished ones). */
struct mb_sw__job {
    const struct mb_sweep *sw;
    const struct mb_sweep_run_opts *o;
    size_t count;
    struct mb_sweep_row *rows;
    atomic_uchar *fin;              /* per shard position: 1 once rows[k] is final */
    atomic_size_t next, evaluated;
    atomic_int live;                /* workers still running */
    pthread_mutex_t mu;             /* with `wake`: a worker ended */
    pthread_cond_t wake;
};

/* Wake the caller (a worker is done). */
static void mb_sw__wake(struct mb_sw__job *j)
{
    pthread_mutex_lock(&j->mu);
    pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->mu);
}

static int mb_sw__stopped(const struct mb_sweep_run_opts *o) { return o->stop && *o->stop; }

static void mb_sw__work(struct mb_sw__job *j)
{
    for (;;) {
        if (mb_sw__stopped(j->o))
            break;
        size_t k = atomic_fetch_add(&j->next, 1);
        if (k >= j->count)
            break;
        if (j->o->skip && j->o->skip[k])
            continue;
        (j->o->eval ? j->o->eval : mb_sweep_eval)(j->sw, j->o->shard + k * j->o->nshards, &j->rows[k]);
        atomic_store(&j->fin[k], 1);
        atomic_fetch_add(&j->evaluated, 1);
    }
}

static void *mb_sw__worker(void *arg)
{
    struct mb_sw__job *j = arg;
    mb_sw__work(j);
    atomic_fetch_sub(&j->live, 1);
    mb_sw__wake(j);
    return NULL;
}

/* Hand the finished rows from *pos on to on_row: up to the first unfinished
 * one, or (all = 1) every finished one. */
static void mb_sw__emit(struct mb_sw__job *j, size_t *pos, int all)
{
    for (; *pos < j->count; ++*pos) {
        if (!atomic_load(&j->fin[*pos])) {
            if (!all)
                return;
            continue;
        }
        if (j->o->on_row)
            j->o->on_row(&j->rows[*pos], j->o->ctx);
    }
}

size_t mb_sweep_shard_count(const struct mb_sweep *sw, size_t shard, size_t nshards)
{
    size_t total = mb_sweep_size(sw);
    if (nshards < 1)
        nshards = 1;
    return shard < total ? (total - shard + nshards - 1) / nshards : 0;
}

int mb_sweep_run_opts(const struct mb_sweep *sw, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows,
                      unsigned char *done)
{
    struct mb_sweep_run_opts oo = *o;
    if (oo.nshards < 1)
        oo.nshards = 1;
    struct mb_sw__job j;
    j.sw = sw;
    j.o = &oo;
    j.count = mb_sweep_shard_count(sw, oo.shard, oo.nshards);
    j.rows = rows;
    j.fin = mb_calloc(j.count ? j.count : 1, sizeof *j.fin);
    size_t todo = 0;
    for (size_t k = 0; k < j.count; k++) {
        atomic_init(&j.fin[k], oo.skip && oo.skip[k]);
        todo += !(oo.skip && oo.skip[k]);
    }
    atomic_init(&j.next, 0);
    atomic_init(&j.evaluated, 0);
    int jobs = oo.jobs < 1 ? 1 : oo.jobs;
    if ((size_t)jobs > todo)
        jobs = todo ? (int)todo : 1;
    atomic_init(&j.live, jobs);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.wake, NULL);
    pthread_t *th = mb_calloc((size_t)jobs, sizeof *th);
    int started = 0;
    for (int t = 0; t < jobs && pthread_create(&th[t], NULL, mb_sw__worker, &j) == 0; t++)
        started++;
    size_t pos = 0;
    if (!started) {
        mb_sw__work(&j); /* no threads: run here */
    } else {
        atomic_fetch_sub(&j.live, jobs - started);
        /* woken by each worker that ends (no polling floor on small sweeps);
         * at most 0.1 s between progress reports and rows handed on */
        pthread_mutex_lock(&j.mu);
        while (atomic_load(&j.live) > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (atomic_load(&j.live) > 0)
                pthread_cond_timedwait(&j.wake, &j.mu, &ts);
            pthread_mutex_unlock(&j.mu);
            mb_sw__emit(&j, &pos, 0);
            if (oo.progress)
                oo.progress(atomic_load(&j.evaluated), todo, oo.ctx);
            pthread_mutex_lock(&j.mu);
        }
        pthread_mutex_unlock(&j.mu);
    }
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    mb_free(th);
    mb_sw__emit(&j, &pos, 1);
    size_t evaluated = atomic_load(&j.evaluated);
    if (oo.progress)
        oo.progress(evaluated, todo, oo.ctx);
    int complete = 1;
    for (size_t k = 0; k < j.count; k++) {
        unsigned char f = atomic_load(&j.fin[k]);
        complete &= f;
        if (done)
            done[k] = f;
    }
    mb_free(j.fin);
    pthread_cond_destroy(&j.wake);
    pthread_mutex_destroy(&j.mu);
    return complete ? 0 : 1;
}

int mb_sweep_run(const struct mb_sweep *sw, size_t shard, size_t nshards, int jobs, mb_sweep_progress_fn cb,
                 void *ctx, struct mb_sweep_row **rows, size_t *n)
{
    struct mb_sweep_run_opts o = {.shard = shard, .nshards = nshards, .jobs = jobs, .progress = cb, .ctx = ctx};
    size_t count = mb_sweep_shard_count(sw, shard, nshards);
    *rows = mb_calloc(count ? count : 1, sizeof **rows);
    *n = count;
    return mb_sweep_run_opts(sw, &o, *rows, NULL);
}

/* ------------------------------------------------------------ analysis */

static int mb_sw__fits(const struct mb_sweep_row *r)
{
    return r->status == MB_SWEEP_OK && !r->oom;
}

struct mb_sw__key {
    double tok, mem;
    size_t idx, pos;
};

static int mb_sw__by_tok(const void *a, const void *b)
{
    const struct mb_sw__key *x = a, *y = b;
    if (x->tok != y->tok)
        return x->tok > y->tok ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int mb_sw__by_mem(const void *a, const void *b)
{
    const struct mb_sw__key *x = a, *y = b;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    if (x->tok != y->tok)
        return x->tok > y->tok ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t mb_sw__keys_of(const struct mb_sweep_row *rows, size_t n, struct mb_sw__key *k)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (mb_sw__fits(&rows[i]))
            k[m++] = (struct mb_sw__key){rows[i].tokens_per_s_per_gpu, rows[i].peak_memory_gib, rows[i].index, i};
    return m;
}

size_t mb_sweep_rank(const struct mb_sweep_row *rows, size_t n, size_t *order)
{
    struct mb_sw__key *k = mb_calloc(n ? n : 1, sizeof *k);
    size_t m = mb_sw__keys_of(rows, n, k);
    qsort(k, m, sizeof *k, mb_sw__by_tok);
    for (size_t i = 0; i < m; i++)
        order[i] = k[i].pos;
    mb_free(k);
    return m;
}

size_t mb_sweep_pareto(const struct mb_sweep_row *rows, size_t n, size_t *front)
{
    struct mb_sw__key *k = mb_calloc(n ? n : 1, sizeof *k);
    size_t m = mb_sw__keys_of(rows, n, k), f = 0;
    qsort(k, m, sizeof *k, mb_sw__by_mem);
    double best = -1;
    for (size_t i = 0; i < m; i++)
        if (k[i].tok > best) { /* more throughput than everything using less or equal memory */
            best = k[i].tok;
            front[f++] = k[i].pos;
        }
    mb_free(k);
    return f;
}

/* ------------------------------------------------------------ output */

const char *mb_sweep_status_name(enum mb_sweep_status s)
{
    return s == MB_SWEEP_OK ? "ok" : s == MB_SWEEP_INVALID ? "invalid" : s == MB_SWEEP_SCREENED ? "screened" : "error";
}

void mb_sweep_write_tsv(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, int header, FILE *fp)
{
    if (header) {
        fprintf(fp, "config");
        for (int a = 0; a < sw->n_axes; a++)
            fprintf(fp, "\t%s", sw->axis[a].key);
        fprintf(fp, "\tstatus\tstep_time_s\ttokens_per_s_per_gpu\tmodel_tflops_per_gpu\tmfu\tpeak_memory_gib"
                    "\treserved_memory_gib\tcapacity_gib\toom\tdp\tmicrobatches");
        for (int k = 1; k <= MB_SWEEP_TOP; k++)
            fprintf(fp, "\ttop%d\ttop%d_s", k, k);
        fprintf(fp, "\treason\n");
    }
    for (size_t i = 0; i < n; i++) {
        const struct mb_sweep_row *r = &rows[i];
        fprintf(fp, "%zu", r->index);
        for (int a = 0; a < sw->n_axes; a++)
            fprintf(fp, "\t%s", mb_sweep_value(sw, r->index, a));
        fprintf(fp, "\t%s", mb_sweep_status_name(r->status));
        if (r->status == MB_SWEEP_OK) {
            fprintf(fp, "\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%d\t%d\t%d", r->step_time_s,
                    r->tokens_per_s_per_gpu, r->model_tflops_per_gpu, r->mfu, r->peak_memory_gib,
                    r->reserved_memory_gib, r->capacity_gib, r->oom, r->dp, r->microbatches);
            for (int k = 0; k < MB_SWEEP_TOP; k++)
                if (r->top_cat[k] >= 0)
                    fprintf(fp, "\t%s\t%.6g", mb_cat_name((enum mb_cat)r->top_cat[k]), r->top_s[k]);
                else
                    fprintf(fp, "\tNA\tNA");
            fprintf(fp, "\tNA\n");
        } else {
            for (int k = 0; k < 10 + 2 * MB_SWEEP_TOP; k++)
                fprintf(fp, "\tNA");
            fprintf(fp, "\t%s\n", r->reason[0] ? r->reason : "NA");
        }
    }
}
