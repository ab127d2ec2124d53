/*
 * mb_megatron_read.c -- Megatron-LM / Megatron-Bridge settings from a file
 * into a list of (name, values, position) (mb_megatron_read, mb_megatron.h).
 *
 * Three forms:
 *  - a training log's arguments block: lines `  NAME ...... VALUE` with
 *    Python reprs for values (None, True, ['a', 'b']); other log lines are
 *    ignored. Chosen when at least three lines have that shape.
 *  - a Megatron-LM command line or launch script: its one command that runs
 *    a Python script, with the script's variables, arrays and if blocks
 *    evaluated as bash would (mb_megatron_shell.c), or every word of a file
 *    of flags alone; `--name value...` or `--name=value`; words
 *    before the first flag (torchrun, python, script.py, -m mod) and words
 *    ending in .py are the launcher; VAR=value words before the first flag
 *    are environment settings.
 *  - Megatron-Bridge overrides: `section.name=value` words (Hydra's leading
 *    `+`/`++` dropped, values `[a,b]` lists); words before the first
 *    override are the launcher.
 *  - a YAML file (name ending in .yaml/.yml, or a first line `key:`):
 *    Megatron-LM's --yaml-cfg or Bridge's --config-file (mb_megatron_yaml.c).
 * Names become Megatron's `args` attribute spelling: '-' -> '_', the Bridge
 * section removed (kept in `written`).
 */
#include "mb_megatron.h"
#include "megatron_shell.h"
#include "megatron_list.h"
#include "megatron_yaml.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mb_mgr__word {
    char *s;
    int line, col;
    int quoted; /* a quote or a backslash escape in it: never a shell operator */
};

struct mb_mgr__words {
    struct mb_mgr__word *w;
    int n, cap;
};

static void mb_mgr__push_word(struct mb_mgr__words *ws, char *s, int line, int col, int quoted)
{
    if (ws->n == ws->cap) {
        ws->cap = ws->cap ? 2 * ws->cap : 64;
        ws->w = mb_realloc(ws->w, (size_t)ws->cap * sizeof *ws->w);
    }
    ws->w[ws->n++] = (struct mb_mgr__word){s, line, col, quoted};
}

static void mb_mgr__free_words(struct mb_mgr__words *ws)
{
    for (int i = 0; i < ws->n; i++)
        mb_free(ws->w[i].s);
    mb_free(ws->w);
}

/* The words of the file's command: a launch script's variables, arrays and
 * if blocks evaluated (mb_megatron_shell.c). */
static int mb_mgr__script_words(const char *buf, const char *file, struct mb_mgr__words *ws, FILE *notes,
                                struct mb_err *err)
{
    struct mb_shell_words sw;
    if (mb_shell_command(buf, file, &sw, notes, err))
        return -1;
    for (int i = 0; i < sw.n; i++)
        mb_mgr__push_word(ws, mb_strdup(sw.w[i].s), sw.w[i].line, sw.w[i].col, sw.w[i].quoted);
    mb_shell_words_free(&sw);
    return 0;
}

/* ------------------------------------------------------------ settings */

/* A value as text: "[a, b]" (Python or Hydra list) becomes a list, else one value. */
static void mb_mgr__value(struct mb_megatron_arg *g, const char *v)
{
    size_t len = strlen(v);
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    if (len >= 2 && v[0] == '[' && v[len - 1] == ']') {
        g->is_list = 1;
        const char *p = v + 1, *end = v + len - 1;
        while (p < end) {
            const char *c = memchr(p, ',', (size_t)(end - p));
            const char *stop = c ? c : end;
            size_t l = (size_t)(stop - p);
            while (l && isspace((unsigned char)*p))
                p++, l--;
            if (l)
                mb_mgr__val(g, p, l);
            p = stop + 1;
        }
        return;
    }
    mb_mgr__val(g, v, len);
}

static int mb_mgr__is_number(const char *w)
{
    return (w[0] == '-' || w[0] == '+') && (isdigit((unsigned char)w[1]) || w[1] == '.');
}

static int mb_mgr__ends_py(const char *w)
{
    size_t n = strlen(w);
    return n > 3 && !strcmp(w + n - 3, ".py");
}

static int mb_mgr__is_env(const char *w)
{
    if (!(isupper((unsigned char)w[0]) || w[0] == '_'))
        return 0;
    const char *p = w;
    while (isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')
        p++;
    return *p == '=';
}

static void mb_mgr__env(struct mb_megatron_args *a, const struct mb_mgr__word *w)
{
    const char *eq = strchr(w->s, '=');
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)(eq - w->s), w->s);
    struct mb_megatron_arg *g = mb_mgr__add(a, name, name, w->line, w->col);
    snprintf(g->name, sizeof g->name, "%s", name); /* environment names keep their case */
    g->env = 1;
    mb_mgr__val(g, eq + 1, strlen(eq + 1));
}

/* A shell word that ends the command (a pipe, a list operator); 0 for a quoted one. */
static int mb_mgr__is_separator(const struct mb_mgr__word *w)
{
    static const char *const ops[] = {"|", "||", "&&", ";", "&", "|&", NULL};
    for (int i = 0; !w->quoted && ops[i]; i++)
        if (!strcmp(w->s, ops[i]))
            return 1;
    return 0;
}

/* A redirection (`>`, `2>&1`, `>>log`, `<in`): 2 when its target is the next
 * word (the operator alone), 1 when it is complete, else 0. */
static int mb_mgr__redirect(const struct mb_mgr__word *w)
{
    const char *p = w->s;
    if (w->quoted)
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '&' && p == w->s && p[1] == '>')
        p++;
    if (*p != '>' && *p != '<')
        return 0;
    p += p[1] == *p ? 2 : 1; /* >> << */
    if (*p == '&')
        p++;
    return *p ? 1 : 2;
}

/* The word a Megatron-LM command line's arguments follow: the first word
 * ending in .py, else the module of `-m MODULE`; -1 when there is neither (a
 * file of flags alone: the arguments begin with its first option). */
static int mb_mgr__script(const struct mb_mgr__words *ws)
{
    for (int i = 0; i < ws->n; i++)
        if (mb_mgr__ends_py(ws->w[i].s))
            return i;
    for (int i = 0; i + 1 < ws->n && strncmp(ws->w[i].s, "--", 2); i++)
        if (!strcmp(ws->w[i].s, "-m"))
            return i + 1;
    return -1;
}

/* Megatron-LM command line: flags and their values, as Megatron-LM's argparse
 * parser (megatron/training/arguments.py: ArgumentParser(allow_abbrev=False),
 * parse_args) takes them. After the script, a word that starts with one dash
 * and is not a negative number is no option of that parser: argparse exits
 * with "unrecognized arguments", and reading it as a launcher option dropped
 * its value (-tensor-model-parallel-size 4 gave TP 1); likewise a bare `--`,
 * after which argparse takes every word as a positional argument, which
 * Megatron-LM has none of. Both are errors at the word. A pipe or list
 * operator ends the command (a note names it); redirections are skipped. */
static int mb_mgr__cmdline(struct mb_mgr__words *ws, struct mb_megatron_args *a, FILE *notes, struct mb_err *err)
{
    int seen_flag = 0, script = mb_mgr__script(ws), args_from = script >= 0 ? script + 1 : ws->n;
    struct mb_megatron_arg *cur = NULL;
    if (script < 0) /* no script: the arguments begin at the first option */
        for (int i = 0; i < ws->n; i++)
            if (ws->w[i].s[0] == '-' && !mb_mgr__is_number(ws->w[i].s)) {
                args_from = i;
                break;
            }
    for (int i = 0; i < ws->n; i++) {
        const struct mb_mgr__word *w = &ws->w[i];
        int redir = mb_mgr__redirect(w);
        if (redir) {
            i += redir - 1; /* the operator's target */
            continue;
        }
        if (mb_mgr__is_separator(w)) {
            if (i < args_from)
                continue; /* `export A=1;` or `cd dir &&` before the command */
            if (notes && i + 1 < ws->n)
                fprintf(notes, "%s:%d:%d: the command ends at '%s': the words after it (%s ...) are not read\n",
                        a->file, w->line, w->col, w->s, ws->w[i + 1].s);
            return 0;
        }
        if (i >= args_from && !w->quoted && !strcmp(w->s, "--"))
            return mb_err_set(err, a->file, w->line, w->col, "'--': argparse takes every word after it as a "
                              "positional argument, and Megatron-LM has none (its parser exits with "
                              "\"unrecognized arguments\"); remove it");
        if (i >= args_from && w->s[0] == '-' && w->s[1] != '-' && !mb_mgr__is_number(w->s))
            return mb_err_set(err, a->file, w->line, w->col, "%s: a single-dash option is no Megatron-LM argument "
                              "(argparse with allow_abbrev=False exits with \"unrecognized arguments\"); "
                              "expected -%s", w->s, w->s);
        if (!strncmp(w->s, "--", 2) && w->s[2]) {
            seen_flag = 1;
            const char *eq = strchr(w->s, '=');
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq ? (size_t)(eq - w->s - 2) : strlen(w->s + 2)), w->s + 2);
            char written[160];
            snprintf(written, sizeof written, "--%s", name);
            cur = mb_mgr__add(a, name, written, w->line, w->col);
            if (eq)
                mb_mgr__value(cur, eq + 1), cur = NULL;
        } else if (!seen_flag && mb_mgr__is_env(w->s)) {
            mb_mgr__env(a, w);
        } else if (mb_mgr__ends_py(w->s) || (w->s[0] == '-' && !mb_mgr__is_number(w->s))) {
            cur = NULL; /* the script, or a launcher option (-m, -u) */
        } else if (cur) {
            mb_mgr__val(cur, w->s, strlen(w->s));
            cur->is_list = cur->nval > 1;
        } else if (i >= args_from) { /* argparse: a positional argument, which Megatron-LM has none of */
            return mb_err_set(err, a->file, w->line, w->col, "'%s' follows no flag that takes a value "
                              "(Megatron-LM's argparse exits with \"unrecognized arguments\")", w->s);
        }
        /* else a launcher word before the first flag (torchrun, python, a module) */
    }
    return 0;
}

/* Megatron-Bridge overrides: section.name=value words (Hydra's override
 * grammar, which Bridge's parse_hydra_overrides applies: `null` is None, the
 * only spelling of it). Pipes and list operators end the command, as on a
 * Megatron-LM command line; redirections are skipped. */
static int mb_mgr__bridge(struct mb_mgr__words *ws, struct mb_megatron_args *a, FILE *notes, struct mb_err *err)
{
    int seen = 0;
    for (int i = 0; i < ws->n; i++) {
        const struct mb_mgr__word *w = &ws->w[i];
        const char *s = w->s;
        int redir = mb_mgr__redirect(w);
        if (redir) {
            i += redir - 1;
            continue;
        }
        if (mb_mgr__is_separator(w)) {
            if (!seen)
                continue;
            if (notes && i + 1 < ws->n)
                fprintf(notes, "%s:%d:%d: the command ends at '%s': the words after it (%s ...) are not read\n",
                        a->file, w->line, w->col, w->s, ws->w[i + 1].s);
            return 0;
        }
        if ((!strcmp(s, "--config-file") || !strcmp(s, "--config_file") ||
                      !strncmp(s, "--config-file=", 14) || !strncmp(s, "--config_file=", 14))) {
            /* Bridge's run scripts: the YAML merged over the recipe before the overrides */
            const char *path = s[13] == '=' ? s + 14 : i + 1 < ws->n ? ws->w[++i].s : NULL;
            if (!path || !*path)
                return mb_err_set(err, a->file, w->line, w->col, "%s: expected the YAML file's path", w->s);
            if (a->config[0])
                return mb_err_set(err, a->file, w->line, w->col, "a second --config-file: Megatron-Bridge's "
                                  "scripts take one");
            if (mb_myaml__config_file(path, w->line, w->col, a, notes, err))
                return -1;
            continue;
        }
        while (*s == '+')
            s++;
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) {
            if (!seen || mb_mgr__ends_py(s))
                continue; /* launcher: python script.py, torchrun ... */
            return mb_err_set(err, a->file, w->line, w->col,
                              "'%s' is not an override; expected section.key=value (e.g. "
                              "model.tensor_model_parallel_size=2)", w->s);
        }
        if (!seen && mb_mgr__is_env(s)) {
            mb_mgr__env(a, w);
            continue;
        }
        seen = 1;
        char full[160];
        snprintf(full, sizeof full, "%.*s", (int)(eq - s), s);
        const char *dot = strchr(full, '.');
        struct mb_megatron_arg *g = mb_mgr__add(a, dot ? dot + 1 : full, full, w->line, w->col);
        mb_mgr__value(g, eq + 1);
        g->none = !g->is_list && g->nval == 1 && !strcasecmp(g->val[0], "null");
    }
    return 0;
}

/* A log line `  NAME ..... VALUE`: 1 with the parts, else 0. */
static int mb_mgr__block_line(const char *line, size_t len, size_t *name_at, size_t *name_len, size_t *val_at)
{
    const char *dots = NULL;
    for (size_t i = 1; i + 3 < len; i++)
        if (line[i] == ' ' && line[i + 1] == '.' && line[i + 2] == '.') {
            dots = line + i;
            break;
        }
    if (!dots)
        return 0;
    const char *e = dots, *b = dots;
    while (b > line && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
        b--;
    if (b == e || (b > line && !isspace((unsigned char)b[-1]) && b[-1] != ':' && b[-1] != ']'))
        return 0;
    const char *v = dots + 1;
    while (v < line + len && *v == '.')
        v++;
    if (v >= line + len || *v != ' ')
        return 0;
    *name_at = (size_t)(b - line);
    *name_len = (size_t)(e - b);
    *val_at = (size_t)(v + 1 - line);
    return 1;
}

/* Values Python printed for enums and torch dtypes (AttnBackend.auto,
 * [<CudaGraphModule.attn: 1>], torch.bfloat16) as the names the import reads
 * (mb_megatron_log_value). */
static void mb_mgr__python_names(struct mb_megatron_arg *g)
{
    for (int i = 0; i < g->nval; i++) {
        char name[96];
        if (mb_megatron_log_value(g->val[i], name, sizeof name)) {
            mb_free(g->val[i]);
            g->val[i] = mb_strdup(name);
        }
    }
}

/* Read the arguments block if the file is one (>= 3 such lines); returns 1 if it was. */
static int mb_mgr__log_block(const char *buf, struct mb_megatron_args *a)
{
    int count = 0;
    for (int pass = 0; pass < 2; pass++) {
        int lineno = 1;
        for (const char *p = buf; *p; lineno++) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            size_t na, nlen, va;
            if (len && p[len - 1] == '\r')
                len--;
            if (mb_mgr__block_line(p, len, &na, &nlen, &va)) {
                if (pass == 0) {
                    count++;
                } else {
                    char name[96];
                    snprintf(name, sizeof name, "%.*s", (int)nlen, p + na);
                    struct mb_megatron_arg *g = mb_mgr__add(a, name, name, lineno, (int)na + 1);
                    char *v = mb_malloc(len - va + 1);
                    memcpy(v, p + va, len - va);
                    v[len - va] = '\0';
                    mb_mgr__value(g, v);
                    mb_free(v);
                    g->none = !g->is_list && g->nval == 1 && !strcmp(g->val[0], "None"); /* Python's repr */
                    mb_mgr__python_names(g);
                }
            }
            p = nl ? nl + 1 : p + strlen(p); /* not p + len: a trimmed '\r' stood still forever */
        }
        if (count < 3)
            return 0;
    }
    return 1;
}

int mb_megatron_read(const char *path, enum mb_megatron_dialect d, struct mb_megatron_args *out,
                     struct mb_err *err)
{
    memset(out, 0, sizeof *out);
    out->dialect = d;
    snprintf(out->file, sizeof out->file, "%s", path ? path : "");
    char *buf = path ? mb_mgr__read_file(path, err) : NULL;
    if (!buf)
        return path ? -1 : mb_err_set(err, NULL, 0, 0, "no file given");
    int rc = 0;
    size_t nlen = 0;
    FILE *notes = open_memstream(&out->notes, &nlen);
    size_t plen = strlen(path);
    int ext = (plen > 5 && !strcasecmp(path + plen - 5, ".yaml")) || (plen > 4 && !strcasecmp(path + plen - 4, ".yml"));
    int log = !ext && d == MB_MEGATRON_LM && mb_mgr__log_block(buf, out); /* reads the block when it is one */
    if (!log && mb_myaml__is_yaml(path, buf)) {
        rc = mb_myaml__read(buf, strlen(buf), out, notes, err);
    } else if (log) {
        out->log_block = 1;
        rc = mb_megatron_log_iterations(out->file, buf, &out->iters, &out->n_iters, err);
    } else {
        struct mb_mgr__words ws = {0};
        rc = mb_mgr__script_words(buf, out->file, &ws, notes, err);
        if (!rc && d == MB_MEGATRON_LM)
            rc = mb_mgr__cmdline(&ws, out, notes, err);
        else if (!rc)
            rc = mb_mgr__bridge(&ws, out, notes, err);
        mb_mgr__free_words(&ws);
    }
    if (notes)
        fclose(notes);
    mb_free(buf);
    if (!rc && out->n == 0)
        rc = mb_err_set(err, out->file, 0, 0, "no %s found", d == MB_MEGATRON_LM
                        ? "Megatron-LM arguments (--flag value, or a log's arguments block)"
                        : "Megatron-Bridge overrides (section.key=value)");
    if (rc)
        mb_megatron_args_free(out);
    return rc;
}

void mb_megatron_args_free(struct mb_megatron_args *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < a->a[i].nval; j++)
            mb_free(a->a[i].val[j]);
        mb_free(a->a[i].val);
    }
    mb_free(a->iters);
    a->iters = NULL;
    a->n_iters = 0;
    free(a->notes); /* open_memstream's */
    a->notes = NULL;
    mb_free(a->a);
    a->a = NULL;
    a->n = a->cap = 0;
}
