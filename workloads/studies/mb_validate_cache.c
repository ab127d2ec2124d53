/*
 * mb_validate_cache.c -- models and systems loaded once per name (a small linear cache: the public CSV
 * has ~300 rows but only ~30 models and 7 systems, and a system load runs hwloc on its node XML).
 */
#include "validate_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* model / system cache                                               */
/* ------------------------------------------------------------------ */

/* Drop the entries after the first n_models / n_systems. */
static void mb_validate__cache_trim(struct mb_val__cache *c, size_t n_models, size_t n_systems)
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

static void mb_validate__cache_free(struct mb_val__cache *c)
{
    if (!c)
        return;
    mb_validate__cache_trim(c, 0, 0);
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
    mb_validate__cache_free(c);
}

/* A summary is done with its cache: its own is freed; a shared one loses what the summary added. */
void mb_validate__release_cache(struct mb_val_summary *out)
{
    if (out->shared_cache)
        mb_validate__cache_trim(out->shared_cache, out->shared_cache->keep_models, out->shared_cache->keep_systems);
    if (out->state) {
        if (!out->shared_cache)
            mb_validate__cache_free(out->state->cache);
        out->state->cache = NULL;
    }
}

/* The loader's own message in a cache entry's "... does not load: MSG". */
const char *mb_validate__load_error(const char *why)
{
    const char *p = strstr(why, "does not load: ");
    return p ? p + strlen("does not load: ") : why;
}

/* A model or system cell that names a file (a '/' or a .yaml ending) rather than a shipped name. */
int mb_validate__is_file_ref(const char *key)
{
    size_t n = strlen(key);
    return strchr(key, '/') || (n > 5 && !strcmp(key + n - 5, ".yaml")) || (n > 4 && !strcmp(key + n - 4, ".yml"));
}

const struct mb_val__model_ent *mb_validate__cache_model(struct mb_val__cache *c, const char *key)
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
    mb_validate__copy_str(e->key, sizeof e->key, key);
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

const struct mb_val__sys_ent *mb_validate__cache_system(struct mb_val__cache *c, const char *key)
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
    mb_validate__copy_str(e->key, sizeof e->key, key);
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
