/*
 * mb_validate_recipes.c -- scenario files that state the recipe of a measured-runs CSV row.
 *
 * A CSV row carries its recipe in columns where the publisher's configuration could be
 * recovered; where it could not, but was found later (a Megatron-Bridge recipe at a commit),
 * a scenario file states it and names the row in `measured.csv_row`. `mbsim validate CSV
 * --recipes FILE|DIR` then simulates that row from the file, with the row's measured values,
 * after checking that the file's layout is the row's (docs/validation.md, "Recipe files").
 */
#include "validate_int.h"
#include "mb_keys.h"
#include "mb_scenario.h"
#include "mb_util.h"

#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct mb_val__recipe_ent {
    char id[160];
    char *path;
    struct mb_scenario s; /* the file as loaded (and checked) once */
    dev_t dev; /* the file, to take one given twice (a folder and a file in it) once */
    ino_t ino;
    int used;
};

struct mb_val__recipes {
    struct mb_val__recipe_ent *e;
    size_t n, cap;
};

static int mb_validate__cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Register one file: 1 when it is a recipe file (newly or already registered), 0 when it has no
 * measured.csv_row (an error when named alone: `required`), -1 on error. */
static int mb_validate__add_file(struct mb_val__recipes *rs, const char *path, int required, struct mb_err *err)
{
    struct mb_scenario s;
    struct stat st;
    memset(&st, 0, sizeof st);
    if (stat(path, &st) == 0)
        for (size_t i = 0; i < rs->n; i++)
            if (rs->e[i].dev == st.st_dev && rs->e[i].ino == st.st_ino)
                return 1; /* the same file again */
    memset(&s, 0, sizeof s);
    if (mb_scenario_load(path, &s, err) != 0) {
        mb_scenario_free(&s);
        return -1;
    }
    const char *id = s.meas_csv_row;
    if (!id[0]) {
        mb_scenario_free(&s);
        return required ? mb_err_set(err, path, 0, 0, "no measured.csv_row: expected the id of the CSV row whose "
                                     "recipe this file states") : 0;
    }
    for (size_t i = 0; i < rs->n; i++)
        if (!strcmp(rs->e[i].id, id)) { /* at the second file's key, naming the first's (issue 37) */
            mb_err_set(err, path, s.meas_csv_row_line, s.meas_csv_row_col, "measured.csv_row '%s' is also the row of "
                       "%s:%d:%d: one recipe file per row", id, rs->e[i].path, rs->e[i].s.meas_csv_row_line,
                       rs->e[i].s.meas_csv_row_col);
            mb_scenario_free(&s);
            return -1;
        }
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 16;
        rs->e = mb_realloc(rs->e, rs->cap * sizeof *rs->e);
    }
    struct mb_val__recipe_ent *e = &rs->e[rs->n++];
    snprintf(e->id, sizeof e->id, "%s", id);
    e->path = mb_strdup(path);
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->used = 0;
    e->s = s; /* owns the model's layers now */
    return 1;
}

static int mb_validate__is_yaml_name(const char *name)
{
    size_t l = strlen(name);
    return name[0] != '.' && ((l > 5 && !strcmp(name + l - 5, ".yaml")) || (l > 4 && !strcmp(name + l - 4, ".yml")));
}

/* Every regular *.yaml / *.yml file of a folder, in name order (the same errors on every machine):
 * how many are recipe files, or -1 on error. */
static int mb_validate__add_dir(struct mb_val__recipes *rs, const char *dir_arg, struct mb_err *err)
{
    char *dir = mb_strdup(dir_arg);
    for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--) /* "d/" names its files "d/x.yaml" */
        dir[l - 1] = '\0';
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0, found = 0;
    if (!d) {
        mb_free(dir);
        return mb_err_set(err, dir_arg, 0, 0, "cannot open the folder");
    }
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!mb_validate__is_yaml_name(de->d_name))
            continue;
        char *full = mb_malloc(strlen(dir) + strlen(de->d_name) + 2);
        sprintf(full, "%s/%s", dir, de->d_name);
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) { /* a folder named x.yaml is no scenario */
            mb_free(full);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            names = mb_realloc(names, cap * sizeof *names);
        }
        names[n++] = full;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, mb_validate__cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (rc >= 0) {
            rc = mb_validate__add_file(rs, names[i], 0, err);
            found += rc > 0;
        }
        mb_free(names[i]);
    }
    mb_free(names);
    mb_free(dir);
    return rc < 0 ? -1 : found;
}

int mb_validate_add_recipes(struct mb_val_summary *out, const char *path, struct mb_err *err)
{
    struct stat st;
    struct mb_val__state *vs = mb_validate__st(out);
    if (!vs->recipes)
        vs->recipes = mb_calloc(1, sizeof *vs->recipes);
    if (!path || !*path)
        return mb_err_set(err, NULL, 0, 0, "--recipes: expected a scenario file or a folder of them, got an empty "
                          "path");
    if (stat(path, &st) != 0)
        return mb_err_set(err, path, 0, 0, "cannot open (expected a scenario file or a folder of them)");
    if (S_ISDIR(st.st_mode)) {
        int found = mb_validate__add_dir(vs->recipes, path, err);
        if (found < 0)
            return -1;
        if (found == 0)
            return mb_err_set(err, path, 0, 0, "no scenario file (*.yaml, *.yml) in the folder has a "
                              "measured.csv_row");
        return 0;
    }
    return mb_validate__add_file(vs->recipes, path, 1, err) < 0 ? -1 : 0;
}

/* The summary's recipe files, or NULL when none was added. */
static struct mb_val__recipes *mb_validate__recipes_of(const struct mb_val_summary *s)
{
    return s->state ? s->state->recipes : NULL;
}

const struct mb_scenario *mb_validate_recipe_file(struct mb_val_summary *s, const char *id, const char **path)
{
    struct mb_val__recipes *rs = mb_validate__recipes_of(s);
    for (size_t i = 0; rs && i < rs->n; i++)
        if (!strcmp(rs->e[i].id, id)) {
            rs->e[i].used = 1;
            *path = rs->e[i].path;
            return &rs->e[i].s;
        }
    return NULL;
}

size_t mb_validate_recipes_unused(const struct mb_val_summary *s, const char **paths, const char **ids, size_t max)
{
    const struct mb_val__recipes *rs = mb_validate__recipes_of(s);
    size_t n = 0;
    for (size_t i = 0; rs && i < rs->n; i++)
        if (!rs->e[i].used) {
            if (n < max) {
                paths[n] = rs->e[i].path;
                ids[n] = rs->e[i].id;
            }
            n++;
        }
    return n;
}

size_t mb_validate_warn_unused_recipes(const struct mb_val_summary *s, const char *prog, FILE *fp)
{
    const char *paths[8], *ids[8];
    size_t n = mb_validate_recipes_unused(s, paths, ids, 8);
    for (size_t i = 0; i < n && i < 8; i++) {
        const struct mb_val_row *skipped = NULL;
        for (size_t k = 0; k < s->n_rows && !skipped; k++)
            if (!strcmp(s->rows[k].id, ids[i]) && s->rows[k].skipped && s->rows[k].line > 0)
                skipped = &s->rows[k];
        if (skipped)
            fprintf(fp, "%s: warning: recipe file %s not used: row '%s' (%s:%d) is skipped (%s)\n", prog, paths[i],
                    ids[i], skipped->source, skipped->line, skipped->reason);
        else
            fprintf(fp, "%s: warning: recipe file %s not used: no row '%s' in the CSVs given (--recipes applies to "
                    "CSV rows)\n", prog, paths[i], ids[i]);
    }
    if (n > 8)
        fprintf(fp, "%s: warning: %zu more recipe files not used\n", prog, n - 8);
    return n;
}

void mb_validate_recipes_free(struct mb_val_summary *s)
{
    struct mb_val__recipes *rs = mb_validate__recipes_of(s);
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++) {
        mb_free(rs->e[i].path);
        mb_scenario_free(&rs->e[i].s);
    }
    mb_free(rs->e);
    mb_free(rs);
    s->state->recipes = NULL;
}

/* selective with no module recomputes nothing: the same as none */
static unsigned mb_validate__rc_mods(const struct mb_scenario *s, int *gran)
{
    *gran = s->recompute;
    if (s->recompute == MB_RC_SELECTIVE && !s->recompute_modules)
        *gran = MB_RC_NONE;
    return s->recompute == MB_RC_SELECTIVE ? s->recompute_modules : 0;
}

static const char *mb_validate__rc_name(int gran, unsigned mods, char *buf, size_t n)
{
    if (gran != MB_RC_SELECTIVE) {
        snprintf(buf, n, "%s", gran == MB_RC_FULL ? "full" : "none");
    } else {
        char m[128];
        mb_key_flag_names("recompute.modules", mods, "+", m, sizeof m);
        snprintf(buf, n, "selective %s", m);
    }
    return buf;
}

/* Two models of one name that are not the same model (a model file edited, an inline model):
 * their layer count, widths, experts and parameter count. */
static int mb_validate__model_differs(const struct mb_model *a, const struct mb_model *b, char *why, size_t n)
{
    struct mb_params pa, pb;
    mb_model_params(a, &pa);
    mb_model_params(b, &pb);
    if (a->num_layers != b->num_layers || a->hidden != b->hidden || a->ffn_hidden != b->ffn_hidden ||
        a->num_heads != b->num_heads || a->num_kv_heads != b->num_kv_heads || a->vocab != b->vocab ||
        a->num_experts != b->num_experts || a->topk != b->topk || a->mtp_layers != b->mtp_layers ||
        fabs(pa.total - pb.total) > 1e-9 * pb.total) {
        snprintf(why, n, "model %s with %d layers, hidden %d, %.4g B parameters; the row's %s: %d layers, hidden %d, "
                 "%.4g B (the same name, another model)", b->name, b->num_layers, b->hidden, pb.total / 1e9, a->name,
                 a->num_layers, a->hidden, pa.total / 1e9);
        return 1;
    }
    return 0;
}

static int mb_validate__near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Two systems of one name that are not the same cluster (a system file beside the preset it copies). */
static int mb_validate__system_differs(const struct mb_system *a, const struct mb_system *b, char *why, size_t n)
{
    if (strcmp(a->gpu, b->gpu) || a->gpus_per_node != b->gpus_per_node || a->nvlink_domain != b->nvlink_domain ||
        !mb_validate__near(a->nvlink_bw, b->nvlink_bw) || !mb_validate__near(a->nic_bw, b->nic_bw) || !mb_validate__near(a->nic_latency, b->nic_latency) ||
        a->switch_tiers != b->switch_tiers || !mb_validate__near(a->oversubscription, b->oversubscription) ||
        !mb_validate__near(a->power_cap, b->power_cap)) {
        snprintf(why, n, "system %s of %s GPUs, %d per node, NIC %.4g GB/s per GPU; the row's %s: %s, %d per node, "
                 "%.4g GB/s (the same name, another cluster)", b->name, b->gpu, b->gpus_per_node, b->nic_bw / 1e9,
                 a->name, a->gpu, a->gpus_per_node, a->nic_bw / 1e9);
        return 1;
    }
    return 0;
}

static const char *mb_validate__lora_name(const struct mb_scenario *s, char *buf, size_t n)
{
    if (s->lora_rank <= 0) {
        snprintf(buf, n, "none");
    } else {
        char t[128];
        mb_key_flag_names("peft.lora_targets", s->lora_targets, "+", t, sizeof t);
        snprintf(buf, n, "rank %d on %s", s->lora_rank, t);
    }
    return buf;
}

int mb_validate_recipe_layout(const struct mb_scenario *row, const struct mb_scenario *file, char *why, size_t n)
{
    static const struct {
        const char *name;
        size_t off;
    } ints[] = {
#define F(name, m) {name, offsetof(struct mb_scenario, m)}
        F("gpus", gpus), F("seq_length", seq_length), F("global_batch_size", global_batch_size),
        F("micro_batch_size", micro_batch_size), F("tp", tp), F("pp", pp), F("cp", cp), F("vpp", vpp),
        F("ep", ep), F("etp", etp),
#undef F
    };
    int g_row, g_file;
    unsigned m_row = mb_validate__rc_mods(row, &g_row), m_file = mb_validate__rc_mods(file, &g_file);
    if (strcmp(row->model.name, file->model.name)) {
        snprintf(why, n, "model %s, the row %s", file->model.name, row->model.name);
        return 1;
    }
    if (mb_validate__model_differs(&row->model, &file->model, why, n))
        return 1;
    if (strcmp(row->system.name, file->system.name)) {
        snprintf(why, n, "system %s, the row %s", file->system.name, row->system.name);
        return 1;
    }
    if (mb_validate__system_differs(&row->system, &file->system, why, n))
        return 1;
    char pa[sizeof row->prec.label], pb[sizeof row->prec.label];
    mb_validate_precision_key(row->prec.label, pa, sizeof pa);
    mb_validate_precision_key(file->prec.label, pb, sizeof pb);
    if (strcmp(pa, pb)) {
        snprintf(why, n, "precision %s, the row %s", file->prec.label, row->prec.label);
        return 1;
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int a = *(const int *)((const char *)row + ints[i].off), b = *(const int *)((const char *)file + ints[i].off);
        if (a != b) {
            snprintf(why, n, "%s %d, the row %d", ints[i].name, b, a);
            return 1;
        }
    }
    if (row->strategy != file->strategy) {
        snprintf(why, n, "strategy %s, the row %s", file->strategy == MB_STRAT_FSDP ? "fsdp" : "3d",
                 row->strategy == MB_STRAT_FSDP ? "fsdp" : "3d");
        return 1;
    }
    if (row->freeze != file->freeze) {
        char a[128], b[128];
        mb_key_flag_names("freeze", file->freeze, "+", a, sizeof a);
        mb_key_flag_names("freeze", row->freeze, "+", b, sizeof b);
        snprintf(why, n, "freeze %s, the row %s", a[0] ? a : "none", b[0] ? b : "none");
        return 1;
    }
    if (row->lora_rank != file->lora_rank || (row->lora_rank > 0 && row->lora_targets != file->lora_targets)) {
        char a[160], b[160];
        snprintf(why, n, "LoRA %s, the row %s", mb_validate__lora_name(file, a, sizeof a), mb_validate__lora_name(row, b, sizeof b));
        return 1;
    }
    if (g_row != g_file || m_row != m_file) {
        char a[160], b[160];
        snprintf(why, n, "recompute %s, the row %s", mb_validate__rc_name(g_file, m_file, a, sizeof a),
                 mb_validate__rc_name(g_row, m_row, b, sizeof b));
        return 1;
    }
    return 0;
}
