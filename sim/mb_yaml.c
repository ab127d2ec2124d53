/*
 * mb_yaml.c -- load YAML with libyaml into an mbsim-owned node tree, and the
 * table-driven field reader every loader uses. See mb_yaml.h.
 *
 * libyaml reports 0-based marks; every position stored here is 1-based.
 * libyaml's "1 = ok / 0 = error" and parser.problem/context are translated
 * in exactly one function (mb_yaml__parser_error).
 */
#include "mb_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#define MB_YAML_MAX_DEPTH 64
/* Nodes a document may expand to: aliases are copied, so a few lines of
 * nested aliases (a "billion laughs" file) would otherwise exhaust memory. The
 * largest shipped file (a calibration table) has about 10,000. */
#define MB_YAML_MAX_NODES 2000000

static int mb_yaml__parser_error(const yaml_parser_t *p, const char *file, struct mb_err *err)
{
    const yaml_mark_t *m = p->problem_mark.line || p->problem_mark.column ? &p->problem_mark
                                                                          : &p->context_mark;
    const char *what = p->error == YAML_READER_ERROR ? "invalid input" : "YAML syntax error";
    if (p->context)
        return mb_err_set(err, file, (int)m->line + 1, (int)m->column + 1, "%s: %s %s", what,
                          p->problem ? p->problem : "unknown problem", p->context);
    return mb_err_set(err, file, (int)m->line + 1, (int)m->column + 1, "%s: %s", what,
                      p->problem ? p->problem : "unknown problem");
}

static void mb_yaml__free_node(struct mb_node *n)
{
    if (!n)
        return;
    size_t i;
    switch (n->kind) {
    case MB_NODE_SCALAR:
        mb_free(n->str);
        break;
    case MB_NODE_SEQ:
        for (i = 0; i < n->n; i++)
            mb_yaml__free_node(n->items[i]);
        mb_free(n->items);
        break;
    case MB_NODE_MAP:
        for (i = 0; i < n->n; i++) {
            mb_free(n->pairs[i].key);
            mb_yaml__free_node(n->pairs[i].val);
        }
        mb_free(n->pairs);
        break;
    }
    mb_free(n);
}

static struct mb_node *mb_yaml__convert(yaml_document_t *doc, yaml_node_t *yn, const char *file,
                                        int depth, size_t *nodes, struct mb_err *err)
{
    if (++*nodes > MB_YAML_MAX_NODES) {
        mb_err_set(err, file, (int)yn->start_mark.line + 1, (int)yn->start_mark.column + 1,
                   "document expands to more than %d nodes (nested aliases?)", MB_YAML_MAX_NODES);
        return NULL;
    }
    if (depth > MB_YAML_MAX_DEPTH) {
        mb_err_set(err, file, (int)yn->start_mark.line + 1, (int)yn->start_mark.column + 1,
                   "document nested deeper than %d levels (recursive alias?)", MB_YAML_MAX_DEPTH);
        return NULL;
    }
    struct mb_node *n = mb_calloc(1, sizeof *n);
    n->file = file;
    n->line = (int)yn->start_mark.line + 1;
    n->col = (int)yn->start_mark.column + 1;
    switch (yn->type) {
    case YAML_SCALAR_NODE:
        n->kind = MB_NODE_SCALAR;
        n->str = mb_malloc(yn->data.scalar.length + 1);
        memcpy(n->str, yn->data.scalar.value, yn->data.scalar.length);
        n->str[yn->data.scalar.length] = '\0';
        if (strlen(n->str) != yn->data.scalar.length) {
            mb_err_set(err, file, n->line, n->col, "scalar contains a NUL byte");
            mb_yaml__free_node(n);
            return NULL;
        }
        n->quoted = yn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    yn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return n;
    case YAML_SEQUENCE_NODE: {
        n->kind = MB_NODE_SEQ;
        size_t cnt = (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);
        n->items = mb_calloc(cnt, sizeof *n->items);
        for (yaml_node_item_t *it = yn->data.sequence.items.start; it < yn->data.sequence.items.top; it++) {
            struct mb_node *c = mb_yaml__convert(doc, yaml_document_get_node(doc, *it), file, depth + 1, nodes, err);
            if (!c) {
                mb_yaml__free_node(n);
                return NULL;
            }
            n->items[n->n++] = c;
        }
        return n;
    }
    case YAML_MAPPING_NODE: {
        n->kind = MB_NODE_MAP;
        size_t cnt = (size_t)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
        n->pairs = mb_calloc(cnt, sizeof *n->pairs);
        for (yaml_node_pair_t *p = yn->data.mapping.pairs.start; p < yn->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            int kl = (int)k->start_mark.line + 1, kc = (int)k->start_mark.column + 1;
            if (k->type != YAML_SCALAR_NODE) {
                mb_err_set(err, file, kl, kc, "mapping keys must be plain scalars");
                mb_yaml__free_node(n);
                return NULL;
            }
            char *key = mb_malloc(k->data.scalar.length + 1);
            memcpy(key, k->data.scalar.value, k->data.scalar.length);
            key[k->data.scalar.length] = '\0';
            for (size_t i = 0; i < n->n; i++) {
                if (strcmp(n->pairs[i].key, key) == 0) {
                    mb_err_set(err, file, kl, kc, "duplicate key '%s' (first defined at line %d)", key,
                               n->pairs[i].line);
                    mb_free(key);
                    mb_yaml__free_node(n);
                    return NULL;
                }
            }
            struct mb_node *v = mb_yaml__convert(doc, yaml_document_get_node(doc, p->value), file, depth + 1, nodes,
                                                 err);
            if (!v) {
                mb_free(key);
                mb_yaml__free_node(n);
                return NULL;
            }
            n->pairs[n->n].key = key;
            n->pairs[n->n].line = kl;
            n->pairs[n->n].col = kc;
            n->pairs[n->n].val = v;
            n->n++;
        }
        return n;
    }
    default:
        mb_free(n);
        mb_err_set(err, file, (int)yn->start_mark.line + 1, (int)yn->start_mark.column + 1, "empty YAML node");
        return NULL;
    }
}

static struct mb_node *mb_yaml__load(yaml_parser_t *p, const char *name, struct mb_err *err)
{
    yaml_document_t doc;
    char *file = mb_strdup(name);
    if (!yaml_parser_load(p, &doc)) {
        mb_yaml__parser_error(p, file, err);
        mb_free(file);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    struct mb_node *n = NULL;
    size_t nodes = 0;
    if (!root)
        mb_err_set(err, file, 1, 1, "empty document");
    else
        n = mb_yaml__convert(&doc, root, file, 0, &nodes, err);
    yaml_document_delete(&doc);
    if (n) {
        /* one document per file: a second one would be silently ignored */
        yaml_document_t more;
        if (!yaml_parser_load(p, &more)) {
            mb_yaml__parser_error(p, file, err);
            mb_yaml_free(n);
            return NULL;
        }
        yaml_node_t *r2 = yaml_document_get_root_node(&more);
        if (r2) {
            mb_err_set(err, file, (int)r2->start_mark.line + 1, (int)r2->start_mark.column + 1,
                       "a second YAML document starts here; mbsim files hold one document");
            yaml_document_delete(&more);
            mb_yaml_free(n);
            return NULL;
        }
        yaml_document_delete(&more);
    }
    if (!n)
        mb_free(file);
    return n;
}

struct mb_node *mb_yaml_load_string(const char *buf, size_t len, const char *name, struct mb_err *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        mb_err_set(err, name, 0, 0, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    struct mb_node *n = mb_yaml__load(&p, name, err);
    yaml_parser_delete(&p);
    return n;
}

struct mb_node *mb_yaml_load_file(const char *path, struct mb_err *err)
{
    struct stat st;
    if (!*path) {
        mb_err_set(err, NULL, 0, 0, "empty file name");
        return NULL;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        mb_err_set(err, path, 0, 0, "is a directory, expected a YAML file");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        mb_err_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        mb_err_set(err, path, 0, 0, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_file(&p, f);
    struct mb_node *n = mb_yaml__load(&p, path, err);
    yaml_parser_delete(&p);
    fclose(f);
    return n;
}

void mb_yaml_free(struct mb_node *root)
{
    if (!root)
        return;
    char *file = (char *)root->file;
    mb_yaml__free_node(root);
    mb_free(file);
}

const struct mb_node *mb_yaml_get(const struct mb_node *map, const char *key)
{
    if (!map || map->kind != MB_NODE_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->pairs[i].key, key) == 0)
            return map->pairs[i].val;
    return NULL;
}

int mb_yaml_err(struct mb_err *err, const struct mb_node *n, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mb_err_set(err, n ? n->file : NULL, n ? n->line : 0, n ? n->col : 0, "%s", msg);
}

static const char *mb_yaml__kind_name(enum mb_node_kind k)
{
    return k == MB_NODE_MAP ? "a mapping" : k == MB_NODE_SEQ ? "a sequence" : "a scalar";
}

int mb_yaml_expect(const struct mb_node *n, enum mb_node_kind kind, const char *what, struct mb_err *err)
{
    if (n && n->kind == kind)
        return 0;
    return mb_yaml_err(err, n, "expected %s for '%s', got %s", mb_yaml__kind_name(kind), what,
                       n ? mb_yaml__kind_name(n->kind) : "nothing");
}

int mb_yaml_is_null(const struct mb_node *n)
{
    return n && n->kind == MB_NODE_SCALAR && !n->quoted &&
           (!n->str[0] || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0 ||
            strcmp(n->str, "Null") == 0 || strcmp(n->str, "NULL") == 0);
}

int mb_yaml_int(const struct mb_node *n, long *out, struct mb_err *err)
{
    if (!n || n->kind != MB_NODE_SCALAR)
        return mb_yaml_err(err, n, "expected an integer, got %s", n ? mb_yaml__kind_name(n->kind) : "nothing");
    char *end;
    errno = 0;
    long v = strtol(n->str, &end, 10);
    if (end == n->str || *end || errno)
        return mb_yaml_err(err, n, "expected an integer, got '%s'", n->str);
    *out = v;
    return 0;
}

int mb_yaml_double(const struct mb_node *n, double *out, struct mb_err *err)
{
    if (!n || n->kind != MB_NODE_SCALAR)
        return mb_yaml_err(err, n, "expected a number, got %s", n ? mb_yaml__kind_name(n->kind) : "nothing");
    char *end;
    errno = 0;
    double v = strtod(n->str, &end);
    if (end == n->str || *end || errno || !isfinite(v))
        return mb_yaml_err(err, n, "expected a number, got '%s'", n->str);
    *out = v;
    return 0;
}

int mb_yaml_bool(const struct mb_node *n, int *out, struct mb_err *err)
{
    if (n && n->kind == MB_NODE_SCALAR) {
        if (!strcasecmp(n->str, "true") || !strcasecmp(n->str, "yes") || !strcasecmp(n->str, "on")) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(n->str, "false") || !strcasecmp(n->str, "no") || !strcasecmp(n->str, "off")) {
            *out = 0;
            return 0;
        }
    }
    return mb_yaml_err(err, n, "expected true or false, got '%s'",
                       n && n->kind == MB_NODE_SCALAR ? n->str : "a collection");
}

struct mb_unit_def {
    const char *sym;
    double mult;
};

static const struct mb_unit_def mb__bytes_units[] = {
    {"B", 1},        {"KB", 1e3},           {"MB", 1e6},           {"GB", 1e9},
    {"TB", 1e12},    {"KiB", 1024.0},       {"MiB", 1048576.0},    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0}, {NULL, 0}};
static const struct mb_unit_def mb__bw_units[] = {
    {"B/s", 1},       {"KB/s", 1e3},       {"MB/s", 1e6},      {"GB/s", 1e9},
    {"TB/s", 1e12},   {"Mb/s", 1e6 / 8},   {"Gb/s", 1e9 / 8},  {"Gbit/s", 1e9 / 8},
    {"Tb/s", 1e12 / 8}, {"GiB/s", 1073741824.0}, {NULL, 0}};
static const struct mb_unit_def mb__time_units[] = {
    {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {NULL, 0}};
static const struct mb_unit_def mb__flops_units[] = {
    {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {NULL, 0}};

static const struct mb_unit_def *mb__units(enum mb_unit u, const char **what)
{
    switch (u) {
    case MB_UNIT_BYTES: *what = "a size"; return mb__bytes_units;
    case MB_UNIT_BW: *what = "a bandwidth"; return mb__bw_units;
    case MB_UNIT_TIME: *what = "a time"; return mb__time_units;
    case MB_UNIT_FLOPS: *what = "a compute rate"; return mb__flops_units;
    default: *what = "a number"; return NULL;
    }
}

int mb_yaml_quantity(const struct mb_node *n, enum mb_unit unit, int bare_ok, double *out, struct mb_err *err)
{
    const char *what;
    const struct mb_unit_def *defs = mb__units(unit, &what);
    if (!defs)
        return mb_yaml_double(n, out, err);
    if (!n || n->kind != MB_NODE_SCALAR)
        return mb_yaml_err(err, n, "expected %s such as '%s', got %s", what, defs[3].sym,
                           n ? mb_yaml__kind_name(n->kind) : "nothing");
    char *end;
    errno = 0;
    double v = strtod(n->str, &end);
    if (end == n->str || errno || !isfinite(v))
        return mb_yaml_err(err, n, "expected %s such as '1 %s', got '%s'", what, defs[3].sym, n->str);
    while (*end == ' ')
        end++;
    if (!*end) {
        if (bare_ok) {
            *out = v;
            return 0;
        }
    } else {
        for (const struct mb_unit_def *d = defs; d->sym; d++)
            if (strcmp(end, d->sym) == 0) {
                *out = v * d->mult;
                return 0;
            }
    }
    char list[256] = "";
    for (const struct mb_unit_def *d = defs; d->sym; d++) {
        strncat(list, d->sym, sizeof list - strlen(list) - 1);
        if (d[1].sym)
            strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    return mb_yaml_err(err, n, "bad unit '%s' in '%s': expected %s with a unit (%s)", end, n->str, what, list);
}

/* The unit a range of `unit` quantities up to `hi` reads best in, and its
 * size in base units (*scale): time in us / ms / s, others in base units. */
static const char *mb_yaml__unit_name(enum mb_unit unit, double hi, double *scale)
{
    *scale = 1;
    switch (unit) {
    case MB_UNIT_TIME:
        if (hi < 1e-3) {
            *scale = 1e-6;
            return "us";
        }
        if (hi < 1) {
            *scale = 1e-3;
            return "ms";
        }
        return "s";
    case MB_UNIT_BYTES: return "B";
    case MB_UNIT_BW: return "B/s";
    case MB_UNIT_FLOPS: return "FLOP/s";
    default: return "";
    }
}

int mb_yaml_read_fields(const struct mb_node *map, const struct mb_field *fields, void *dst,
                        const char *what, unsigned long long *seen, struct mb_err *err)
{
    if (mb_yaml_expect(map, MB_NODE_MAP, what, err))
        return -1;
    if (seen)
        *seen = 0;
    for (size_t i = 0; i < map->n; i++) {
        const struct mb_pair *p = &map->pairs[i];
        const struct mb_field *f;
        size_t fi = 0;
        for (f = fields; f->key; f++, fi++)
            if (strcmp(f->key, p->key) == 0)
                break;
        if (!f->key) {
            char list[1024] = "";
            for (const struct mb_field *g = fields; g->key; g++) {
                if (strlen(list) + strlen(g->key) + 3 >= sizeof list)
                    break;
                strcat(list, g->key);
                if (g[1].key)
                    strcat(list, ", ");
            }
            return mb_err_set(err, map->file, p->line, p->col, "unknown key '%s' in %s; expected one of: %s",
                              p->key, what, list);
        }
        const struct mb_node *v = p->val;
        /* `key:` with nothing after it is a value left out, not "use the default" */
        if (mb_yaml_is_null(v) && f->type != MB_F_SKIP)
            return mb_err_set(err, map->file, p->line, p->col,
                              "key '%s' in %s has no value; give one or leave the key out", p->key, what);
        if (seen && fi < 64)
            *seen |= 1ULL << fi;
        char *at = (char *)dst + f->offset;
        long iv;
        double dv;
        int bv;
        switch (f->type) {
        case MB_F_INT:
            if (mb_yaml_int(v, &iv, err))
                return -1;
            if (f->min <= f->max && (iv < f->min || iv > f->max))
                return mb_yaml_err(err, v, "%s.%s = %ld is out of range [%.15g, %.15g]", what, f->key, iv,
                                   f->min, f->max);
            memcpy(at, &iv, sizeof iv);
            break;
        case MB_F_DOUBLE:
            if (mb_yaml_quantity(v, f->unit, 0, &dv, err))
                return -1;
            if (f->min <= f->max && (dv < f->min || dv > f->max)) {
                double sc;
                const char *u = mb_yaml__unit_name(f->unit, f->max, &sc);
                return mb_yaml_err(err, v, "%s.%s = %s is out of range [%.15g, %.15g]%s%s", what, f->key, v->str,
                                   f->min / sc, f->max / sc, *u ? " " : "", u);
            }
            memcpy(at, &dv, sizeof dv);
            break;
        case MB_F_BOOL:
            if (mb_yaml_bool(v, &bv, err))
                return -1;
            memcpy(at, &bv, sizeof bv);
            break;
        case MB_F_STR: {
            if (mb_yaml_expect(v, MB_NODE_SCALAR, f->key, err))
                return -1;
            char *old;
            memcpy(&old, at, sizeof old);
            mb_free(old);
            char *s = mb_strdup(v->str);
            memcpy(at, &s, sizeof s);
            break;
        }
        case MB_F_STRBUF:
            if (mb_yaml_expect(v, MB_NODE_SCALAR, f->key, err))
                return -1;
            if (strlen(v->str) >= f->size)
                return mb_yaml_err(err, v, "%s.%s is too long (at most %zu characters)", what, f->key,
                                   f->size - 1);
            memcpy(at, v->str, strlen(v->str) + 1);
            break;
        case MB_F_NODE:
            memcpy(at, &v, sizeof v);
            break;
        case MB_F_SKIP:
            break;
        }
    }
    size_t fi = 0;
    for (const struct mb_field *f = fields; f->key; f++, fi++) {
        if (!f->required)
            continue;
        const struct mb_node *v = mb_yaml_get(map, f->key);
        if (v && mb_yaml_is_null(v))
            for (size_t i = 0; i < map->n; i++)
                if (strcmp(map->pairs[i].key, f->key) == 0)
                    return mb_err_set(err, map->file, map->pairs[i].line, map->pairs[i].col,
                                      "key '%s' in %s has no value; give one or leave the key out", f->key, what);
        if (!v)
            return mb_yaml_err(err, map, "missing required key '%s' in %s", f->key, what);
    }
    return 0;
}

void mb_yaml_write_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}
