/*
 * mb_yaml.c -- load YAML with libyaml into an mbsim-owned node tree, and the
 * table-driven field reader every loader uses. See mb_yaml.h.
 *
 * libyaml reports 0-based marks; every position stored here is 1-based.
 * libyaml's "1 = ok / 0 = error" and parser.problem/context are translated
 * in exactly one function (mb_yaml__parser_error).
 */
#include "mb_yaml.h"
#include "mb_input.h"

#include <errno.h>
#include <limits.h>
#include <float.h>
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
/* Of those, nodes made by copying anchored nodes for aliases. Shipped files
 * share blocks through aliases a few hundred nodes at a time; a few lines of
 * nested aliases reach this in a millisecond, where the full budget costs
 * a tenth of a second and 200 MB before it refuses the file. */
#define MB_YAML_MAX_ALIAS_NODES 100000

/* libyaml's reader errors (a control character, invalid UTF-8) carry a byte offset
 * (problem_offset), not a mark: the line and column of that byte in the input string,
 * the column in characters as libyaml's marks count them (UTF-8 continuation bytes,
 * 10xxxxxx, start no character). */
static void mb_yaml__reader_mark(const yaml_parser_t *p, yaml_mark_t *m)
{
    const unsigned char *s = p->input.string.start, *end = p->input.string.end;
    memset(m, 0, sizeof *m);
    if (!s || p->problem_offset > (size_t)(end - s))
        return;
    for (size_t i = 0; i < p->problem_offset; i++) {
        if (s[i] == '\n') {
            m->line++;
            m->column = 0;
        } else if ((s[i] & 0xC0) != 0x80) {
            m->column++;
        }
    }
}

static int mb_yaml__parser_error(const yaml_parser_t *p, const char *file, struct mb_err *err)
{
    yaml_mark_t at;
    const yaml_mark_t *m = p->problem_mark.line || p->problem_mark.column ? &p->problem_mark
                                                                          : &p->context_mark;
    if (p->error == YAML_READER_ERROR) {
        mb_yaml__reader_mark(p, &at);
        m = &at;
    }
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

/* Event-driven builder: the tree is built while libyaml parses, so the depth
 * and node limits stop a hostile file at the point it crosses them (loading a
 * whole libyaml document first spends minutes on 100,000 nested '[' before
 * any check could run). Anchors are kept by name; an alias is a deep copy
 * that counts against the node budget. */
struct mb_yaml__anchor {
    char *name;
    const struct mb_node *node;
};

struct mb_yaml__ctx {
    yaml_parser_t *p;
    const char *file;
    struct mb_err *err;
    size_t nodes;                 /* nodes built so far, copies included */
    size_t copies;                /* of those, copies made for aliases */
    struct mb_yaml__anchor *anc;  /* anchors defined so far, in file order */
    size_t n_anc, cap_anc;
};

static int mb_yaml__at(struct mb_yaml__ctx *c, yaml_mark_t m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* An error at libyaml mark m (0-based) of the file being loaded; returns -1. */
static int mb_yaml__at(struct mb_yaml__ctx *c, yaml_mark_t m, const char *fmt, ...)
{
    char msg[sizeof c->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mb_err_set(c->err, c->file, (int)m.line + 1, (int)m.column + 1, "%s", msg);
}

/* Count one node and check its depth; -1 with an error at m past a limit. */
static int mb_yaml__budget(struct mb_yaml__ctx *c, yaml_mark_t m, int depth)
{
    if (++c->nodes > MB_YAML_MAX_NODES)
        return mb_err_set(c->err, c->file, (int)m.line + 1, (int)m.column + 1,
                          "document expands to more than %d nodes (nested aliases?)", MB_YAML_MAX_NODES);
    if (depth > MB_YAML_MAX_DEPTH)
        return mb_err_set(c->err, c->file, (int)m.line + 1, (int)m.column + 1,
                          "document nested deeper than %d levels", MB_YAML_MAX_DEPTH);
    return 0;
}

static struct mb_node *mb_yaml__new(struct mb_yaml__ctx *c, enum mb_node_kind kind, yaml_mark_t m)
{
    struct mb_node *n = mb_calloc(1, sizeof *n);
    n->kind = kind;
    n->file = c->file;
    n->line = (int)m.line + 1;
    n->col = (int)m.column + 1;
    return n;
}

/* Deep copy of an anchored node for an alias at mark m, `depth` levels down. */
static struct mb_node *mb_yaml__copy(struct mb_yaml__ctx *c, const struct mb_node *s, yaml_mark_t m, int depth)
{
    if (mb_yaml__budget(c, m, depth))
        return NULL;
    if (++c->copies > MB_YAML_MAX_ALIAS_NODES) {
        mb_err_set(c->err, c->file, (int)m.line + 1, (int)m.column + 1,
                   "aliases expand to more than %d nodes (nested aliases?)", MB_YAML_MAX_ALIAS_NODES);
        return NULL;
    }
    struct mb_node *n = mb_calloc(1, sizeof *n);
    *n = *s;
    n->str = NULL;
    n->items = NULL;
    n->pairs = NULL;
    n->n = 0;
    if (s->kind == MB_NODE_SCALAR) {
        n->str = mb_strdup(s->str);
        return n;
    }
    if (s->kind == MB_NODE_SEQ)
        n->items = mb_calloc(s->n, sizeof *n->items);
    else
        n->pairs = mb_calloc(s->n, sizeof *n->pairs);
    for (size_t i = 0; i < s->n; i++) {
        struct mb_node *v = mb_yaml__copy(c, s->kind == MB_NODE_SEQ ? s->items[i] : s->pairs[i].val, m, depth + 1);
        if (!v) {
            mb_yaml__free_node(n);
            return NULL;
        }
        if (s->kind == MB_NODE_SEQ) {
            n->items[n->n++] = v;
        } else {
            n->pairs[n->n] = s->pairs[i];
            n->pairs[n->n].key = mb_strdup(s->pairs[i].key);
            n->pairs[n->n++].val = v;
        }
    }
    return n;
}

static void mb_yaml__anchor(struct mb_yaml__ctx *c, const yaml_char_t *name, const struct mb_node *n)
{
    if (!name)
        return;
    if (c->n_anc == c->cap_anc) {
        c->cap_anc = c->cap_anc ? 2 * c->cap_anc : 16;
        c->anc = mb_realloc(c->anc, c->cap_anc * sizeof *c->anc);
    }
    c->anc[c->n_anc].name = mb_strdup((const char *)name);
    c->anc[c->n_anc++].node = n;
}

static struct mb_node *mb_yaml__alias(struct mb_yaml__ctx *c, const yaml_event_t *ev, int depth)
{
    const char *name = (const char *)ev->data.alias.anchor;
    for (size_t i = c->n_anc; i-- > 0;) /* the latest definition of a name wins */
        if (!strcmp(c->anc[i].name, name))
            return mb_yaml__copy(c, c->anc[i].node, ev->start_mark, depth);
    mb_yaml__at(c, ev->start_mark, "alias '*%s' names no anchor defined before it (or its own node)", name);
    return NULL;
}

static struct mb_node *mb_yaml__scalar(struct mb_yaml__ctx *c, const yaml_event_t *ev)
{
    struct mb_node *n = mb_yaml__new(c, MB_NODE_SCALAR, ev->start_mark);
    size_t len = ev->data.scalar.length;
    n->str = mb_malloc(len + 1);
    memcpy(n->str, ev->data.scalar.value, len);
    n->str[len] = '\0';
    if (strlen(n->str) != len) {
        mb_yaml__at(c, ev->start_mark, "scalar contains a NUL byte");
        mb_yaml__free_node(n);
        return NULL;
    }
    n->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    return n;
}

/* Next event into ev (the previous one deleted by the caller); -1 on a syntax error. */
static int mb_yaml__next(struct mb_yaml__ctx *c, yaml_event_t *ev)
{
    if (yaml_parser_parse(c->p, ev))
        return 0;
    mb_yaml__parser_error(c->p, c->file, c->err);
    return -1;
}

static struct mb_node *mb_yaml__node(struct mb_yaml__ctx *c, yaml_event_t *ev, int depth);

static struct mb_node *mb_yaml__seq(struct mb_yaml__ctx *c, struct mb_node *n, int depth)
{
    size_t cap = 0;
    for (;;) {
        yaml_event_t ev;
        if (mb_yaml__next(c, &ev))
            break;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return n;
        }
        struct mb_node *v = mb_yaml__node(c, &ev, depth + 1);
        yaml_event_delete(&ev);
        if (!v)
            break;
        if (n->n == cap) {
            cap = cap ? 2 * cap : 4;
            n->items = mb_realloc(n->items, cap * sizeof *n->items);
        }
        n->items[n->n++] = v;
    }
    mb_yaml__free_node(n);
    return NULL;
}

/* First pair whose key repeats an earlier one (file order), or n->n if none;
 * *first is the earlier one. Sorted (key, index) entries, so a mapping of a
 * million keys costs n log n, not n^2. */
struct mb_yaml__keyix {
    const char *key;
    size_t i;
};

static int mb_yaml__by_key(const void *a, const void *b)
{
    const struct mb_yaml__keyix *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    return r ? r : (x->i > y->i) - (x->i < y->i);
}

static size_t mb_yaml__dup(const struct mb_node *n, size_t *first)
{
    struct mb_yaml__keyix *ix = mb_malloc((n->n ? n->n : 1) * sizeof *ix);
    size_t dup = n->n;
    for (size_t i = 0; i < n->n; i++)
        ix[i] = (struct mb_yaml__keyix){n->pairs[i].key, i};
    qsort(ix, n->n, sizeof *ix, mb_yaml__by_key);
    for (size_t i = 1; i < n->n; i++)
        if (!strcmp(ix[i].key, ix[i - 1].key) && ix[i].i < dup && (i < 2 || strcmp(ix[i].key, ix[i - 2].key))) {
            dup = ix[i].i; /* the second occurrence of its key (a third is not the first duplicate) */
            *first = ix[i - 1].i;
        }
    mb_free(ix);
    return dup;
}

/* One key: value pair of a mapping, ev the key's event. */
static int mb_yaml__pair(struct mb_yaml__ctx *c, struct mb_node *n, const yaml_event_t *ev, size_t *cap, int depth)
{
    if (ev->type != YAML_SCALAR_EVENT)
        return mb_yaml__at(c, ev->start_mark, "mapping keys must be plain scalars");
    struct mb_node *k = mb_yaml__scalar(c, ev);
    if (!k)
        return -1;
    yaml_event_t vev;
    struct mb_node *v = NULL;
    if (!mb_yaml__next(c, &vev)) {
        v = mb_yaml__node(c, &vev, depth + 1);
        yaml_event_delete(&vev);
    }
    if (!v) {
        mb_yaml__free_node(k);
        return -1;
    }
    if (n->n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        n->pairs = mb_realloc(n->pairs, *cap * sizeof *n->pairs);
    }
    n->pairs[n->n++] = (struct mb_pair){k->str, k->line, k->col, v};
    mb_free(k);
    return 0;
}

static struct mb_node *mb_yaml__map(struct mb_yaml__ctx *c, struct mb_node *n, int depth)
{
    size_t cap = 0;
    for (;;) {
        yaml_event_t ev;
        if (mb_yaml__next(c, &ev))
            break;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            size_t first = 0, d = mb_yaml__dup(n, &first);
            if (d == n->n)
                return n;
            mb_err_set(c->err, c->file, n->pairs[d].line, n->pairs[d].col,
                       "duplicate key '%s' (first defined at line %d)", n->pairs[d].key, n->pairs[first].line);
            break;
        }
        int rc = mb_yaml__pair(c, n, &ev, &cap, depth);
        yaml_event_delete(&ev);
        if (rc)
            break;
    }
    mb_yaml__free_node(n);
    return NULL;
}

/* The node that starts with event ev (owned by the caller), `depth` levels down. */
static struct mb_node *mb_yaml__node(struct mb_yaml__ctx *c, yaml_event_t *ev, int depth)
{
    if (ev->type == YAML_ALIAS_EVENT)
        return mb_yaml__alias(c, ev, depth);
    if (mb_yaml__budget(c, ev->start_mark, depth))
        return NULL;
    struct mb_node *n = NULL;
    const yaml_char_t *anchor = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        anchor = ev->data.scalar.anchor;
        n = mb_yaml__scalar(c, ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = ev->data.sequence_start.anchor;
        n = mb_yaml__seq(c, mb_yaml__new(c, MB_NODE_SEQ, ev->start_mark), depth);
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = ev->data.mapping_start.anchor;
        n = mb_yaml__map(c, mb_yaml__new(c, MB_NODE_MAP, ev->start_mark), depth);
        break;
    default:
        mb_yaml__at(c, ev->start_mark, "empty YAML node");
        return NULL;
    }
    if (n)
        mb_yaml__anchor(c, anchor, n);
    return n;
}

/* Skip events up to and including one of type t; -1 on a syntax error. */
static int mb_yaml__expect_event(struct mb_yaml__ctx *c, yaml_event_type_t t, yaml_event_t *ev)
{
    if (mb_yaml__next(c, ev))
        return -1;
    if (ev->type == t)
        return 0;
    yaml_event_delete(ev);
    return 1;
}

/* stream-start, document-start, the root node, document-end, then either
 * stream-end or a second document (an error: it would be silently ignored). */
static struct mb_node *mb_yaml__document(struct mb_yaml__ctx *c)
{
    yaml_event_t ev;
    if (mb_yaml__expect_event(c, YAML_STREAM_START_EVENT, &ev))
        return NULL;
    yaml_event_delete(&ev);
    int rc = mb_yaml__expect_event(c, YAML_DOCUMENT_START_EVENT, &ev);
    if (rc) {
        if (rc > 0)
            mb_err_set(c->err, c->file, 1, 1, "empty document");
        return NULL;
    }
    yaml_event_delete(&ev);
    if (mb_yaml__next(c, &ev))
        return NULL;
    struct mb_node *root = mb_yaml__node(c, &ev, 0);
    yaml_event_delete(&ev);
    if (!root)
        return NULL;
    if (mb_yaml__expect_event(c, YAML_DOCUMENT_END_EVENT, &ev))
        goto fail;
    yaml_event_delete(&ev);
    if (mb_yaml__next(c, &ev))
        goto fail;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        return root;
    }
    yaml_event_delete(&ev);
    if (!mb_yaml__next(c, &ev)) { /* the second document's first node */
        mb_yaml__at(c, ev.start_mark, "a second YAML document starts here; mbsim files hold one document");
        yaml_event_delete(&ev);
    }
fail:
    mb_yaml__free_node(root);
    return NULL;
}

static struct mb_node *mb_yaml__load(yaml_parser_t *p, const char *name, struct mb_err *err)
{
    struct mb_yaml__ctx c = {p, mb_strdup(name), err, 0, 0, NULL, 0, 0};
    struct mb_node *n = mb_yaml__document(&c);
    for (size_t i = 0; i < c.n_anc; i++)
        mb_free(c.anc[i].name);
    mb_free(c.anc);
    if (!n)
        mb_free((char *)c.file);
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
    char *buf;
    size_t len;
    if (mb_input_read(path, "a YAML file", 0, &buf, &len, err))
        return NULL;
    struct mb_node *n = mb_yaml_load_string(buf, len, path, err);
    mb_free(buf);
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

/* strtol of a scalar: 0 ok, 1 not an integer, 2 an integer too large for a long. */
static int mb_yaml__strtol(const char *str, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(str, &end, 10);
    if (end == str || *end)
        return 1;
    return errno == ERANGE ? 2 : errno ? 1 : 0;
}

/* strtod of a scalar: 0 ok, 1 not a number (nan, inf, text), 2 a number out of the double range. */
static int mb_yaml__strtod(const char *str, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(str, &end);
    if (end == str || *end || isnan(*v))
        return 1;
    if (errno == ERANGE) /* overflow (+-HUGE_VAL) or underflow (a result below the normal range) */
        return 2;
    return errno || !isfinite(*v) ? 1 : 0; /* "inf" written out is no number */
}

int mb_yaml_int(const struct mb_node *n, long *out, struct mb_err *err)
{
    if (!n || n->kind != MB_NODE_SCALAR)
        return mb_yaml_err(err, n, "expected an integer, got %s", n ? mb_yaml__kind_name(n->kind) : "nothing");
    if (n->quoted)
        return mb_yaml_err(err, n, "expected an integer, got the quoted string \"%s\" (write the number without "
                           "quotes)", n->str);
    long v;
    int rc = mb_yaml__strtol(n->str, &v);
    if (rc == 2)
        return mb_yaml_err(err, n, "'%s' is out of range for an integer (from %ld to %ld)", n->str, LONG_MIN, LONG_MAX);
    if (rc)
        return mb_yaml_err(err, n, "expected an integer, got '%s'", n->str);
    *out = v;
    return 0;
}

int mb_yaml_double(const struct mb_node *n, double *out, struct mb_err *err)
{
    if (!n || n->kind != MB_NODE_SCALAR)
        return mb_yaml_err(err, n, "expected a number, got %s", n ? mb_yaml__kind_name(n->kind) : "nothing");
    if (n->quoted)
        return mb_yaml_err(err, n, "expected a number, got the quoted string \"%s\" (write the number without "
                           "quotes)", n->str);
    double v;
    int rc = mb_yaml__strtod(n->str, &v);
    if (rc == 2)
        return mb_yaml_err(err, n, "'%s' is out of range for a number (magnitude from %.1e to %.1e, or 0)", n->str,
                           DBL_MIN, DBL_MAX);
    if (rc)
        return mb_yaml_err(err, n, "expected a number, got '%s'", n->str);
    *out = v;
    return 0;
}

int mb_yaml_int_in(const struct mb_node *n, const char *what, double lo, double hi, long *out, struct mb_err *err)
{
    long v;
    if (n && n->kind == MB_NODE_SCALAR && n->quoted && what)
        return mb_yaml_err(err, n, "%s: expected an integer, got the quoted string \"%s\" (write the number "
                           "without quotes)", what, n->str);
    if (n && n->kind == MB_NODE_SCALAR) {
        int rc = mb_yaml__strtol(n->str, &v);
        if (rc == 2 || (rc == 0 && ((double)v < lo || (double)v > hi)))
            return mb_yaml_err(err, n, "%s = %s is out of range [%.15g, %.15g]", what ? what : "value", n->str, lo, hi);
        if (rc && what) /* the key, not only the position: "gpus: expected an integer, got 'x'" */
            return mb_yaml_err(err, n, "%s: expected an integer, got '%s'", what, n->str);
    } else if (n && what)
        return mb_yaml_err(err, n, "%s: expected an integer, got %s", what, mb_yaml__kind_name(n->kind));
    if (mb_yaml_int(n, &v, err))
        return -1;
    *out = v;
    return 0;
}

int mb_yaml_double_in(const struct mb_node *n, const char *what, double lo, double hi, double *out,
                      struct mb_err *err)
{
    double v;
    if (n && n->kind == MB_NODE_SCALAR && n->quoted && what)
        return mb_yaml_err(err, n, "%s: expected a number, got the quoted string \"%s\" (write the number "
                           "without quotes)", what, n->str);
    if (n && n->kind == MB_NODE_SCALAR) {
        int rc = mb_yaml__strtod(n->str, &v);
        if (rc == 2 && fabs(v) < 1) /* strtod's underflow: inside most ranges, but not representable */
            return mb_yaml_err(err, n, "%s = %s underflows (magnitude below %.1e; write 0)", what ? what : "value",
                               n->str, DBL_MIN);
        if (rc == 2 || (rc == 0 && (v < lo || v > hi)))
            return mb_yaml_err(err, n, "%s = %s is out of range [%.15g, %.15g]", what ? what : "value", n->str, lo, hi);
        if (rc && what)
            return mb_yaml_err(err, n, "%s: expected a number, got '%s'", what, n->str);
    } else if (n && what)
        return mb_yaml_err(err, n, "%s: expected a number, got %s", what, mb_yaml__kind_name(n->kind));
    if (mb_yaml_double(n, &v, err))
        return -1;
    *out = v;
    return 0;
}

int mb_yaml_bool_in(const struct mb_node *n, const char *what, int *out, struct mb_err *err)
{
    const char *w = what ? what : "", *sep = what ? ": " : "";
    /* a quoted "true" is a string in YAML, as a quoted number is (mb_yaml_int) */
    if (n && n->kind == MB_NODE_SCALAR && n->quoted)
        return mb_yaml_err(err, n, "%s%sexpected true or false, got the quoted string \"%s\" (write it without "
                           "quotes)", w, sep, n->str);
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
    return mb_yaml_err(err, n, "%s%sexpected true or false, got '%s'", w, sep,
                       n && n->kind == MB_NODE_SCALAR ? n->str : "a collection");
}

int mb_yaml_bool(const struct mb_node *n, int *out, struct mb_err *err)
{
    return mb_yaml_bool_in(n, NULL, out, err);
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
/* the 4th entry is the example unit of messages ("such as '1 W'") */
static const struct mb_unit_def mb__power_units[] = {{"mW", 1e-3}, {"kW", 1e3}, {"MW", 1e6}, {"W", 1}, {NULL, 0}};

static const struct mb_unit_def *mb_yaml__units(enum mb_unit u, const char **what)
{
    switch (u) {
    case MB_UNIT_BYTES: *what = "a size"; return mb__bytes_units;
    case MB_UNIT_BW: *what = "a bandwidth"; return mb__bw_units;
    case MB_UNIT_TIME: *what = "a time"; return mb__time_units;
    case MB_UNIT_FLOPS: *what = "a compute rate"; return mb__flops_units;
    case MB_UNIT_POWER: *what = "a power"; return mb__power_units;
    default: *what = "a number"; return NULL;
    }
}

int mb_yaml_quantity(const struct mb_node *n, enum mb_unit unit, int bare_ok, double *out, struct mb_err *err)
{
    const char *what;
    const struct mb_unit_def *defs = mb_yaml__units(unit, &what);
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
                if (!isfinite(v * d->mult))
                    return mb_yaml_err(err, n, "'%s' is out of range (not a finite number in base units)", n->str);
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
    case MB_UNIT_POWER: return "W";
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
        char *at = dst ? (char *)dst + f->offset : NULL; /* no pointer arithmetic on NULL (MB_F_SKIP tables) */
        long iv;
        double dv;
        int bv;
        switch (f->type) {
        case MB_F_INT:
            if (f->min <= f->max) {
                char name[160];
                snprintf(name, sizeof name, "%s.%s", what, f->key);
                if (mb_yaml_int_in(v, name, f->min, f->max, &iv, err))
                    return -1;
            } else if (mb_yaml_int(v, &iv, err)) {
                return -1;
            }
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
