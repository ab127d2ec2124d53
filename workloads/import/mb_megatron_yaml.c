/*
 * mb_megatron_yaml.c -- a Megatron-LM `--yaml-cfg` file or a Megatron-Bridge
 * `--config-file` as settings (private/megatron_yaml.h), read through the
 * project's YAML loader (sim/yaml/mb_yaml.h: libyaml; duplicate keys refused,
 * aliases copied under a node budget) into the list the flag and override
 * readers fill, so every rule, note and check of the import applies.
 *
 * Megatron-LM (NVIDIA/Megatron-LM d98e8a64dd, megatron/training/yaml_arguments.py):
 * load_yaml reads the document with yaml.safe_load into a nested namespace
 * that replaces argparse's (flags are ignored); validate_yaml reads
 * args.model_parallel.* and args.language_model.* unconditionally, then
 * merges both sections into the arguments with SimpleNamespace(**args,
 * **section), which refuses a name given twice. So: the root is a mapping;
 * `model_parallel:` and `language_model:` are mappings and must be there;
 * their keys are arguments as the top-level keys are; a name at the top
 * level and in a section (or in both sections) is an error. A plain scalar
 * holding `${VAR}` is the run's environment variable (env_constructor),
 * which mbsim cannot see. `world_size` and `rank` in the file are replaced
 * by the WORLD_SIZE and RANK environment variables after the load
 * (arguments.py parse_args): set aside with a note.
 *
 * Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge 067f987df03b,
 * src/megatron/bridge/training/utils/omegaconf_utils.py
 * process_config_with_overrides): OmegaConf.load, merged over the recipe's
 * ConfigContainer, then the CLI overrides, then _apply_overrides, which skips
 * (with a warning) a key the config has no field for. So each `section:`
 * mapping gives `section.key` settings as the overrides `section.key=value`
 * do (deeper mappings `section.a.b`), a top-level scalar is the field itself
 * (`mixed_precision: bf16_mixed`), `null` is None; the ConfigContainer
 * fields that are dataclasses without a None (model, train, optimizer, ...)
 * must be mappings. A scalar holding `${...}` is an OmegaConf interpolation,
 * resolved against the whole merged config (resolve=True), which mbsim does
 * not have.
 *
 * Values: YAML 1.1 booleans (true/True/yes/on/..., as PyYAML's SafeLoader)
 * become true/false, nulls (null, Null, NULL, ~, empty) None, a sequence of
 * scalars a list; a mapping or a sequence holding one as the value of an
 * argument is marked `bad` (an error if the import reads that setting).
 */
#include "megatron_yaml.h"
#include "mb_yaml.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

int mb_myaml__is_yaml(const char *path, const char *buf)
{
    size_t n = path ? strlen(path) : 0;
    if ((n > 5 && !strcasecmp(path + n - 5, ".yaml")) || (n > 4 && !strcasecmp(path + n - 4, ".yml")))
        return 1;
    const char *p = buf;
    while (*p) { /* the first line that is neither blank nor a comment */
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q == '\n' || *q == '#' || (q[0] == '-' && q[1] == '-' && q[2] == '-' && (q[3] == '\n' || !q[3]))) {
            const char *nl = strchr(q, '\n');
            p = nl ? nl + 1 : q + strlen(q);
            continue;
        }
        if (q != p || !(islower((unsigned char)*p) || *p == '_'))
            return 0;
        while (islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')
            p++;
        return p[0] == ':' && (p[1] == ' ' || p[1] == '\n' || !p[1]);
    }
    return 0;
}

/* PyYAML SafeLoader (YAML 1.1) resolution of a plain scalar: 1 null, 2 true, 3 false, else 0. */
static int mb_myaml__plain(const struct mb_node *n)
{
    static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL};
    static const char *const f[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL};
    if (n->quoted)
        return 0;
    if (!n->str[0] || !strcmp(n->str, "~") || !strcmp(n->str, "null") || !strcmp(n->str, "Null") ||
        !strcmp(n->str, "NULL"))
        return 1;
    for (int i = 0; t[i]; i++)
        if (!strcmp(n->str, t[i]))
            return 2;
    for (int i = 0; f[i]; i++)
        if (!strcmp(n->str, f[i]))
            return 3;
    return 0;
}

static void mb_myaml__scalar(struct mb_megatron_args *a, struct mb_megatron_arg *g, const struct mb_node *n)
{
    int r = mb_myaml__plain(n);
    if (r == 2 || r == 3) {
        mb_mgr__val(g, r == 2 ? "true" : "false", r == 2 ? 4 : 5);
        return;
    }
    mb_mgr__val(g, n->str, strlen(n->str));
    if (strstr(n->str, "${") && (a->dialect == MB_MEGATRON_BRIDGE || !n->quoted))
        g->bad = a->dialect == MB_MEGATRON_BRIDGE
                     ? "an OmegaConf interpolation ${...}, which Megatron-Bridge resolves against the whole merged "
                       "config (mbsim has only this file); write the value"
                     : "a value with ${VAR}, which yaml_arguments.py replaces with the run's environment variable "
                       "(mbsim cannot see it); write the value";
}

/* One setting from key k (at kl:kc) with value v. */
static void mb_myaml__setting(struct mb_megatron_args *a, const char *name, const char *written, int kl, int kc,
                              const struct mb_node *v)
{
    struct mb_megatron_arg *g = mb_mgr__add(a, name, written, kl, kc);
    if (v->kind == MB_NODE_SCALAR) {
        if (mb_myaml__plain(v) == 1)
            g->none = 1;
        else
            mb_myaml__scalar(a, g, v);
        return;
    }
    if (v->kind == MB_NODE_MAP) {
        g->bad = "a mapping";
        mb_mgr__val(g, "{...}", 5);
        return;
    }
    g->is_list = 1;
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i]->kind != MB_NODE_SCALAR) {
            g->bad = "a sequence that holds a mapping or a sequence";
            mb_mgr__val(g, "[...]", 5);
            continue;
        }
        mb_myaml__scalar(a, g, v->items[i]);
    }
}

/* ------------------------------------------------------------ Megatron-LM */

static const char *const mb_myaml__lm_sections[] = {"model_parallel", "language_model"};

static int mb_myaml__lm(const struct mb_node *root, struct mb_megatron_args *a, FILE *notes, struct mb_err *err)
{
    int found[2] = {0, 0};
    for (size_t i = 0; i < root->n; i++) {
        const struct mb_pair *p = &root->pairs[i];
        int sec = !strcmp(p->key, mb_myaml__lm_sections[0]) ? 0 : !strcmp(p->key, mb_myaml__lm_sections[1]) ? 1 : -1;
        if (sec < 0) {
            mb_myaml__setting(a, p->key, p->key, p->line, p->col, p->val);
            continue;
        }
        found[sec] = 1;
        if (p->val->kind != MB_NODE_MAP)
            return mb_yaml_err(err, p->val, "%s: expected a mapping of arguments (yaml_arguments.py validate_yaml "
                               "reads args.%s.<name>)", p->key, p->key);
        for (size_t j = 0; j < p->val->n; j++) {
            const struct mb_pair *q = &p->val->pairs[j];
            char written[160];
            snprintf(written, sizeof written, "%s.%s", p->key, q->key);
            mb_myaml__setting(a, q->key, written, q->line, q->col, q->val);
        }
    }
    for (int s = 0; s < 2; s++)
        if (!found[s])
            return mb_yaml_err(err, root, "no %s: mapping; Megatron-LM's validate_yaml reads args.%s.* "
                               "(yaml_arguments.py) and fails without it", mb_myaml__lm_sections[s],
                               mb_myaml__lm_sections[s]);
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(a->a[i].name, a->a[j].name))
                return mb_err_set(err, a->file, a->a[i].line, a->a[i].col, "%s: also given as %s (%d:%d); "
                                  "yaml_arguments.py merges model_parallel: and language_model: into the arguments "
                                  "(SimpleNamespace(**args, **section)), and Python refuses a name given twice",
                                  a->a[i].written, a->a[j].written, a->a[j].line, a->a[j].col);
    for (int i = 0; i < a->n; i++) {
        struct mb_megatron_arg *g = &a->a[i];
        if (!strcmp(g->name, "world_size") || !strcmp(g->name, "rank")) {
            g->ignored = g->used = 1;
            if (notes)
                fprintf(notes, "%s:%d:%d: %s: not read: Megatron-LM replaces it with the %s environment variable "
                        "after loading the YAML (arguments.py parse_args); give --gpus\n", a->file, g->line, g->col,
                        g->written, g->name[0] == 'w' ? "WORLD_SIZE" : "RANK");
        }
    }
    return 0;
}

/* ------------------------------------------------------------ Megatron-Bridge */

/* ConfigContainer fields that are dataclasses with no None (training/config.py): a mapping or nothing. */
static const char *const mb_myaml__bridge_maps[] = {
    "rng", "rerun_state_machine", "train", "model", "optimizer", "ddp", "validation", "scheduler", "dataset", "logger",
    "tokenizer", "checkpoint", "dist", "profiling", NULL};

static void mb_myaml__flatten(struct mb_megatron_args *a, const char *path, const struct mb_node *map)
{
    for (size_t i = 0; i < map->n; i++) {
        const struct mb_pair *p = &map->pairs[i];
        char written[160];
        snprintf(written, sizeof written, "%s.%s", path, p->key);
        if (p->val->kind == MB_NODE_MAP && p->val->n > 0) {
            mb_myaml__flatten(a, written, p->val);
            continue;
        }
        mb_myaml__setting(a, strchr(written, '.') + 1, written, p->line, p->col, p->val);
    }
}

static int mb_myaml__bridge(const struct mb_node *root, struct mb_megatron_args *a, struct mb_err *err)
{
    for (size_t i = 0; i < root->n; i++) {
        const struct mb_pair *p = &root->pairs[i];
        if (p->val->kind == MB_NODE_MAP) {
            mb_myaml__flatten(a, p->key, p->val);
            continue;
        }
        for (int s = 0; mb_myaml__bridge_maps[s]; s++)
            if (!strcmp(p->key, mb_myaml__bridge_maps[s]))
                return mb_yaml_err(err, p->val, "%s: expected a mapping of %s settings (ConfigContainer.%s is a "
                                   "config dataclass, not Optional: OmegaConf cannot merge %s over it)", p->key,
                                   p->key, p->key, p->val->kind == MB_NODE_SEQ ? "a sequence" : "a scalar");
        mb_myaml__setting(a, p->key, p->key, p->line, p->col, p->val);
    }
    return 0;
}

static int mb_myaml__load(const char *buf, size_t len, const char *name, struct mb_megatron_args *a, FILE *notes,
                          struct mb_err *err);

int mb_myaml__read(const char *buf, size_t len, struct mb_megatron_args *a, FILE *notes, struct mb_err *err)
{
    return mb_myaml__load(buf, len, a->file, a, notes, err);
}

int mb_myaml__config_file(const char *path, int line, int col, struct mb_megatron_args *a, FILE *notes,
                          struct mb_err *err)
{
    char beside[MB_PATH_LEN];
    const char *slash = strrchr(a->file, '/');
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        snprintf(a->config, sizeof a->config, "%s", path);
    } else if (path[0] != '/' && slash &&
               snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - a->file), a->file, path) < (int)sizeof beside &&
               (f = fopen(beside, "r")) != NULL) {
        fclose(f);
        snprintf(a->config, sizeof a->config, "%s", beside);
    } else {
        return mb_err_set(err, a->file, line, col, "--config-file %s: cannot open it (tried it as given%s)", path,
                          path[0] != '/' && slash ? " and beside this file" : "");
    }
    char *buf = mb_mgr__read_file(a->config, err);
    if (!buf)
        return -1;
    int n0 = a->n, rc = mb_myaml__load(buf, strlen(buf), a->config, a, notes, err);
    mb_free(buf);
    for (int i = n0; i < a->n; i++)
        a->a[i].in_config = 1;
    if (!rc && n0 > 0) { /* before every override, wherever the option stood: the file is merged first */
        size_t nn = (size_t)(a->n - n0);
        struct mb_megatron_arg *tmp = mb_malloc(nn * sizeof *tmp);
        memcpy(tmp, a->a + n0, nn * sizeof *tmp);
        memmove(a->a + nn, a->a, (size_t)n0 * sizeof *tmp);
        memcpy(a->a, tmp, nn * sizeof *tmp);
        mb_free(tmp);
    }
    a->yaml = 0; /* the command's own settings are overrides */
    return rc;
}

static int mb_myaml__load(const char *buf, size_t len, const char *name, struct mb_megatron_args *a, FILE *notes,
                          struct mb_err *err)
{
    struct mb_node *root = mb_yaml_load_string(buf, len, name, err);
    if (!root)
        return -1;
    int lm = a->dialect == MB_MEGATRON_LM, rc;
    a->yaml = 1;
    if (root->kind != MB_NODE_MAP)
        rc = mb_yaml_err(err, root, "expected a mapping at the top of the file (%s), got a %s", lm
                         ? "Megatron-LM arguments with model_parallel: and language_model: sections, as "
                           "yaml_arguments.py reads them"
                         : "Megatron-Bridge ConfigContainer sections: model:, train:, optimizer:, ...",
                         root->kind == MB_NODE_SEQ ? "sequence" : "scalar");
    else
        rc = lm ? mb_myaml__lm(root, a, notes, err) : mb_myaml__bridge(root, a, err);
    if (!rc && notes)
        fprintf(notes, "%s: read as %s\n", name, lm ? "a Megatron-LM YAML config (--yaml-cfg; "
                "megatron/training/yaml_arguments.py)" : "a Megatron-Bridge YAML config (--config-file; merged "
                "over the recipe's ConfigContainer)");
    mb_yaml_free(root);
    return rc;
}
