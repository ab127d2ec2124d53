/*
 * megatron_int.h -- what the files of `mbsim import megatron|bridge` share
 * (workloads/import/mb_import_megatron.c, mb_megatron_args.c, mb_megatron_check.c, mb_megatron_log.c);
 * private: only this folder's sources see it (CMake PRIVATE include). Functions
 * here are mb_mgi__<name>; the public contract is mb_megatron.h.
 *
 * Layering: mb_megatron_args.c (settings, errors, names) <- mb_megatron_check.c
 * (refusals, notes) <- mb_import_megatron.c (model, rules, the scenario); mb_megatron_log.c
 * (a log's values and iteration lines) sits beside mb_megatron_check.c.
 */
#ifndef MB_MEGATRON_INT_H
#define MB_MEGATRON_INT_H

#include <stdint.h>
#include <stdio.h>

#include "mb_keys.h"
#include "mb_megatron.h"

#if defined(__GNUC__)
#define MB_MGI__FMT(a, b) __attribute__((format(printf, a, b)))
#else
#define MB_MGI__FMT(a, b)
#endif

/** One import in progress. */
struct mb_mgi {
    struct mb_megatron_args *a;
    const struct mb_megatron_opts *o;
    struct mb_scenario *s; /* being built: table keys, model_ref, system_ref */
    struct mb_model model; /* the chosen model (owned) */
    FILE *notes;
    struct mb_err *err;
    int gpus_per_node;     /* the system's (loaded once, first) */
    const struct mb_megatron_arg *by_key[MB_KEYS_MAX]; /* the setting that gave each key (mb_key_index) */
};

/* ---- mb_megatron_args.c: settings */

extern const char *const mb_mgi__aliases[][2];  /* {other spelling, canonical}, {NULL, NULL} last */
extern const char *const mb_mgi__arch_names[];  /* architecture settings compared with the model */
extern const char *const mb_mgi__arch_other[];  /* architecture settings the model file describes */
extern const char *const mb_mgi__rule_names[];  /* names the compound rules read */

void mb_mgi__canonical(struct mb_megatron_args *a);
int mb_mgi__is_none(const struct mb_megatron_arg *g);
int mb_mgi__unset(const struct mb_megatron_args *a, const struct mb_megatron_arg *g);
int mb_mgi__shadowed(const struct mb_megatron_args *a, int i);
struct mb_megatron_arg *mb_mgi__find(struct mb_megatron_args *a, const char *name);
struct mb_megatron_arg *mb_mgi__get(struct mb_megatron_args *a, const char *name);
void mb_mgi__text(const struct mb_megatron_arg *g, char *buf, size_t len);
int mb_mgi__err(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...) MB_MGI__FMT(3, 4);
void mb_mgi__note(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...) MB_MGI__FMT(3, 4);
int mb_mgi__set(struct mb_mgi *m, const char *key, const char *text, const struct mb_megatron_arg *g);
int mb_mgi__bool(const struct mb_megatron_arg *g);
int mb_mgi__flag(struct mb_mgi *m, const char *name, int *out);
int mb_mgi__long(struct mb_mgi *m, const struct mb_megatron_arg *g, long *out);
int mb_mgi__mul(struct mb_mgi *m, const struct mb_megatron_arg *g, int64_t a, int64_t b, int64_t max,
                const char *what, int64_t *out);
const struct mb_key *mb_mgi__key_of(const char *name);

/* ---- mb_megatron_check.c: refusals and notes */

int mb_mgi__is_no_effect(const struct mb_megatron_arg *g);
int mb_mgi__typos(struct mb_mgi *m);
void mb_mgi__bridge_sections(struct mb_mgi *m);
int mb_mgi__conflicts(struct mb_mgi *m);
int mb_mgi__rule_nulls(struct mb_mgi *m);
int mb_mgi__single_values(struct mb_mgi *m);
void mb_mgi__leftovers(struct mb_mgi *m);

/* ---- mb_megatron_log.c: a log's iteration lines */

int mb_mgi__measured(struct mb_mgi *m);

#endif /* MB_MEGATRON_INT_H */
