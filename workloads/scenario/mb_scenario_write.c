/*
 * mb_scenario_write.c -- scenario YAML out (mb_scenario_write_yaml), driven
 * by the key table of mb_keys.h and emitted with libyaml's emitter, so
 * quoting is libyaml's business and every file written loads back.
 *
 * Sections and keys come out in table order. A key is written when it
 * applies to the scenario (recompute.method only under full, ...) and either
 * differs from its default or is one of the layout keys always shown. Strings
 * a YAML reader would take for something else (null, true, 12, "") are
 * double-quoted. Model and system references are written as loaded: a
 * shipped name, or an absolute path; an inline model mapping is copied from
 * the scenario's source file node by node.
 */
#include "mb_keys.h"
#include "mb_schema.h"
#include "mb_scenario.h"
#include "mb_yaml.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

struct mb_wr {
    yaml_emitter_t em;
    int failed;
};

static void mb_wr__emit(struct mb_wr *w, yaml_event_t *ev)
{
    if (!w->failed && !yaml_emitter_emit(&w->em, ev))
        w->failed = 1;
}

/* A string that a YAML 1.1 reader resolves to null, a bool or a number. */
static int mb_wr__ambiguous(const char *s)
{
    static const char *const words[] = {"~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", NULL};
    if (!*s)
        return 1;
    for (int i = 0; words[i]; i++)
        if (!strcasecmp(s, words[i]))
            return 1;
    char *end;
    strtod(s, &end);
    return *end == '\0' || s[0] == '.'; /* a number, or .inf/.nan */
}

/* plain: a number, bool or name of mbsim's own; text: anything a user wrote. */
static void mb_wr__scalar(struct mb_wr *w, const char *s, int text)
{
    yaml_event_t ev;
    yaml_scalar_style_t st = text && mb_wr__ambiguous(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, st);
    mb_wr__emit(w, &ev);
}

static void mb_wr__map(struct mb_wr *w, int start, int flow)
{
    yaml_event_t ev;
    if (start)
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    else
        yaml_mapping_end_event_initialize(&ev);
    mb_wr__emit(w, &ev);
}

static void mb_wr__seq(struct mb_wr *w, int start)
{
    yaml_event_t ev;
    if (start)
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE);
    else
        yaml_sequence_end_event_initialize(&ev);
    mb_wr__emit(w, &ev);
}

static void mb_wr__int(struct mb_wr *w, long long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    mb_wr__scalar(w, buf, 0);
}

/* An mbsim node tree back to events (the inline model). */
static void mb_wr__node(struct mb_wr *w, const struct mb_node *n)
{
    if (n->kind == MB_NODE_SCALAR) {
        yaml_event_t ev;
        yaml_scalar_style_t st = n->quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;
        yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)n->str, (int)strlen(n->str), 1, 1, st);
        mb_wr__emit(w, &ev);
    } else if (n->kind == MB_NODE_SEQ) {
        mb_wr__seq(w, 1);
        for (size_t i = 0; i < n->n; i++)
            mb_wr__node(w, n->items[i]);
        mb_wr__seq(w, 0);
    } else {
        mb_wr__map(w, 1, 0);
        for (size_t i = 0; i < n->n; i++) {
            mb_wr__scalar(w, n->pairs[i].key, 1);
            mb_wr__node(w, n->pairs[i].val);
        }
        mb_wr__map(w, 0, 0);
    }
}

/* model: the reference as loaded, the inline mapping from the source file, or the name. */
static void mb_wr__model(struct mb_wr *w, const struct mb_scenario *s)
{
    if (s->model_inline && s->file[0]) {
        struct mb_err e;
        mb_err_clear(&e);
        struct mb_node *root = mb_yaml_load_file(s->file, &e);
        const struct mb_node *m = root ? mb_yaml_get(root, "model") : NULL;
        if (m && m->kind == MB_NODE_MAP)
            mb_wr__node(w, m);
        else
            w->failed = 1;
        mb_yaml_free(root);
        return;
    }
    mb_wr__scalar(w, s->model_ref[0] ? s->model_ref : s->model.name, 1);
}

static void mb_wr__images(struct mb_wr *w, const struct mb_images *im)
{
    char buf[48];
    mb_wr__map(w, 1, 0);
    mb_wr__scalar(w, "per_sample", 0);
    mb_wr__seq(w, 1);
    mb_wr__int(w, im->per_sample_min);
    mb_wr__int(w, im->per_sample_max);
    mb_wr__seq(w, 0);
    mb_wr__scalar(w, "sizes", 0);
    if (im->dist == MB_IMG_UNIFORM) {
        mb_wr__map(w, 1, 1);
        mb_wr__scalar(w, "distribution", 0);
        mb_wr__scalar(w, "uniform", 0);
        mb_wr__scalar(w, "min", 0);
        mb_wr__int(w, im->side_min);
        mb_wr__scalar(w, "max", 0);
        mb_wr__int(w, im->side_max);
        mb_wr__map(w, 0, 1);
    } else {
        mb_wr__seq(w, 1);
        for (int i = 0; i < im->n_sizes; i++) {
            snprintf(buf, sizeof buf, "%dx%d", im->height[i], im->width[i]);
            mb_wr__scalar(w, buf, 1);
        }
        mb_wr__seq(w, 0);
    }
    mb_wr__scalar(w, "seed", 0);
    snprintf(buf, sizeof buf, "%llu", im->seed);
    mb_wr__scalar(w, buf, 0);
    mb_wr__map(w, 0, 0);
}

/* Whether key k is written for s. */
static int mb_wr__wanted(const struct mb_scenario *s, const struct mb_key *k)
{
    if (k->applies && !k->applies(s))
        return 0;
    if (!strcmp(k->key, "schema_version") || !strcmp(k->key, "model"))
        return 1;
    if (!strcmp(k->key, "data.images"))
        return s->images.dist != MB_IMG_NONE;
    if (!strcmp(k->key, "system.preset"))
        return 1;
    return (k->flags & MB_KEYF_SHOW) || !mb_key_is_default(s, k);
}

/* The value of key k. */
static void mb_wr__value(struct mb_wr *w, const struct mb_scenario *s, const struct mb_key *k)
{
    char buf[1024];
    if (!strcmp(k->key, "schema_version")) {
        char v[16];
        snprintf(v, sizeof v, "%d", MB_SCHEMA_VERSION);
        mb_wr__scalar(w, v, 0);
        return;
    }
    if (!strcmp(k->key, "model")) {
        mb_wr__model(w, s);
        return;
    }
    if (!strcmp(k->key, "data.images")) {
        mb_wr__images(w, &s->images);
        return;
    }
    if (!strcmp(k->key, "system.preset")) {
        mb_wr__scalar(w, s->system_ref[0] ? s->system_ref : s->system.name, 1);
        return;
    }
    mb_key_format(s, k, buf, sizeof buf);
    if (k->type == MB_KEY_FLAGS || (k->type == MB_KEY_RANGE && strchr(buf, '+'))) {
        /* '+'-joined text to a flow list: [a, b] */
        mb_wr__seq(w, 1);
        if (strcmp(buf, "none"))
            for (char *p = buf; p;) {
                char *plus = strchr(p, '+');
                if (plus)
                    *plus = 0;
                mb_wr__scalar(w, p, 0);
                p = plus ? plus + 1 : NULL;
            }
        mb_wr__seq(w, 0);
    } else if (k->flags & MB_KEYF_PATH) {
        char *abs = mb_path_absolute(buf); /* the file may be written to another folder */
        mb_wr__scalar(w, abs, 1);
        mb_free(abs);
    } else {
        mb_wr__scalar(w, buf, k->type == MB_KEY_STRING || k->type == MB_KEY_LAYOUT);
    }
}

/* Length of the section part of a key (0 at the top level). */
static size_t mb_wr__sec(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

/* Keys [i, end) of one section, written as its mapping when any is wanted. */
static void mb_wr__section(struct mb_wr *w, const struct mb_scenario *s, const struct mb_key *t, size_t i,
                           size_t end)
{
    size_t sl = mb_wr__sec(t[i].key);
    int any = 0;
    for (size_t j = i; j < end; j++)
        any |= mb_wr__wanted(s, &t[j]);
    if (!any)
        return;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)sl, t[i].key);
    mb_wr__scalar(w, name, 0);
    mb_wr__map(w, 1, 0);
    for (size_t j = i; j < end; j++)
        if (mb_wr__wanted(s, &t[j])) {
            mb_wr__scalar(w, t[j].key + sl + 1, 0);
            mb_wr__value(w, s, &t[j]);
        }
    mb_wr__map(w, 0, 0);
}

/* libyaml's write handler: 1 = ok. */
static int mb_wr__handler(void *data, unsigned char *buf, size_t size)
{
    return fwrite(buf, 1, size, (FILE *)data) == size;
}

int mb_scenario_write_yaml(const struct mb_scenario *s, FILE *fp)
{
    struct mb_wr w;
    yaml_event_t ev;
    size_t n;
    const struct mb_key *t = mb_keys(&n);
    memset(&w, 0, sizeof w);
    if (!s || !fp || !yaml_emitter_initialize(&w.em))
        return -1;
    fputs("# written by mbsim (keys: docs/scenario-format.md)\n", fp);
    yaml_emitter_set_output(&w.em, mb_wr__handler, fp);
    yaml_emitter_set_unicode(&w.em, 1);
    yaml_emitter_set_width(&w.em, -1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    mb_wr__emit(&w, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    mb_wr__emit(&w, &ev);
    mb_wr__map(&w, 1, 0);
    for (size_t i = 0; i < n;) {
        size_t sl = mb_wr__sec(t[i].key), end = i + 1;
        if (!sl) {
            if (mb_wr__wanted(s, &t[i])) {
                mb_wr__scalar(&w, t[i].key, 0);
                mb_wr__value(&w, s, &t[i]);
            }
            i++;
            continue;
        }
        while (end < n && mb_wr__sec(t[end].key) == sl && !strncmp(t[end].key, t[i].key, sl))
            end++;
        mb_wr__section(&w, s, t, i, end);
        i = end;
    }
    mb_wr__map(&w, 0, 0);
    yaml_document_end_event_initialize(&ev, 1);
    mb_wr__emit(&w, &ev);
    yaml_stream_end_event_initialize(&ev);
    mb_wr__emit(&w, &ev);
    yaml_emitter_flush(&w.em);
    yaml_emitter_delete(&w.em);
    return w.failed || ferror(fp) ? -1 : 0;
}
