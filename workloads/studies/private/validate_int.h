/*
 * validate_int.h -- what the files of `mbsim validate` share (workloads/studies/mb_validate*.c);
 * private: only this folder's sources see it (CMake PRIVATE include), nothing outside includes it.
 * Functions here are mb_validate__<name>; the public contract is mb_validate.h.
 */
#ifndef MB_VALIDATE_INT_H
#define MB_VALIDATE_INT_H

#include "mb_validate.h"
#include "mb_input.h"
#include "mb_keys.h"
#include "mb_step.h"
#include "mb_topo.h"

#include <stdio.h>

struct mb_val__recipes; /* mb_validate_recipes.c */

#if defined(__GNUC__)
#define MB_VAL__FMT(a, b) __attribute__((format(printf, a, b)))
#else
#define MB_VAL__FMT(a, b)
#endif

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

/* One row waiting for its simulation; owns s, head and tail. */
struct mb_val__job {
    size_t row;      /* index in rows[] (the array may move while rows are added) */
    struct mb_scenario s;
    int fsdp_group;
    char *head, *tail;
};

enum {
    C_ID, C_MODEL, C_SYSTEM, C_GPUS, C_PRECISION, C_GBS, C_MBS, C_SEQ, C_TP, C_PP, C_CP, C_VP, C_EP,
    C_ETP, C_FSDP, C_RECOMPUTE, C_TOKENS, C_TFLOPS, C_STEP, C_COUNT
};

struct mb_val__field {
    char *text;
    int line, col;
};

struct mb_val__csv {
    const char *path;
    struct mb_val_summary *out;
    struct mb_err *err;
    int failed;
    /* position of the byte being fed (col in characters: pend, mb_text_col_step) */
    int line, col, pend;
    /* start of the field / record being read */
    int fline, fcol, rec_line, rec_pending;
    /* fields of the current record */
    struct mb_val__field *f;
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

/* The required columns' header names (C_* order). */
extern const char *const mb_val__colname[C_COUNT];
/* The recipe columns' header names (mb_val_rcol order). */
extern const char *const mb_val__rcolname[MB_VAL_RC_COUNT];

/* ---- mb_validate_map.c: string helpers and mappings ---- */

/* Trim ASCII whitespace in place; returns the first non-space char. */
char *mb_validate__trim(char *s);
/* Copy with truncation; always NUL-terminates (len > 0). */
void mb_validate__copy_str(char *dst, size_t len, const char *src);
/* Whether s starts with pre, ASCII case-insensitively. */
int mb_validate__starts_with_ci(const char *s, const char *pre);
/* Lower-case s in place (ASCII). */
void mb_validate__lower(char *s);
/* One recompute module name (already trimmed, lower case); 0 if unknown. */
unsigned mb_validate__rc_module(const char *name);

/* ---- mb_validate_cache.c: the model / system cache ---- */

/* A summary is done with its cache: its own is freed; a shared one loses what the summary added. */
void mb_validate__release_cache(struct mb_val_summary *out);
/* The model (a shipped name or a file) loaded once: the entry says ok, unknown or why it fails. */
const struct mb_val__model_ent *mb_validate__cache_model(struct mb_val__cache *c, const char *key);
/* The system (a preset or a file) loaded once: the entry says ok or why it fails. */
const struct mb_val__sys_ent *mb_validate__cache_system(struct mb_val__cache *c, const char *key);
/* A model or system cell that names a file (a '/' or a .yaml ending) rather than a shipped name. */
int mb_validate__is_file_ref(const char *key);
/* The loader's own message in a cache entry's "... does not load: MSG". */
const char *mb_validate__load_error(const char *why);

/* ---- mb_validate_rows.c: a summary's rows and their simulation ---- */

/* What a summary keeps while rows are added (mb_val_summary.state). */
struct mb_val__state {
    size_t cap_rows;                 /* allocated rows */
    struct mb_val__cache *cache;     /* its own cache, released by mb_validate_finish() */
    struct mb_val__recipes *recipes; /* from mb_validate_add_recipes(), freed by mb_validate_free() */
    struct mb_val__job *pending;     /* rows waiting for their simulation (jobs > 1) */
    size_t n_pending;
    size_t *ids, cap_ids, n_ids;     /* CSV rows with an id: index + 1 in rows[] (0: free slot), open
                                      * addressing on the id's hash (mb_validate__same_id) */
};

/* The summary's state, made on first use. */
struct mb_val__state *mb_validate__st(struct mb_val_summary *out);

/* The summary's model/system cache: the shared one when set, else its own (made on first use). */
struct mb_val__cache *mb_validate__get_cache(struct mb_val_summary *out);
/* Append a zeroed row (rows[] may move). */
struct mb_val_row *mb_validate__new_row(struct mb_val_summary *out);
/* The earlier CSV row with this id, or NULL after recording rows[ri] (a CSV row with an id; it may be
 * the next row, made right after) as the row of the id: ids are unique over the CSVs of one summary. */
const struct mb_val_row *mb_validate__same_id(struct mb_val_summary *out, const char *id, size_t ri);
/* Mark r skipped with reason (its prediction cleared). */
void mb_validate__skip_row(struct mb_val_row *r, const char *reason);
/* Choose the compared metric: tokens/s/GPU, else step time, else TFLOP/s/GPU. */
int mb_validate__pick_metric(struct mb_val_row *r, double tokens, double step, double tflops);
/* Predict row r from s (taken: s is left empty, head and tail are freed by
 * the callee): now, or in the next batch when out->jobs > 1. */
void mb_validate__submit_row(struct mb_val_summary *out, struct mb_val_row *r, struct mb_scenario *s, int fsdp_group,
                             char *head, char *tail);
/* Simulate the pending rows on out->jobs threads, then, in row order, call
 * on_row and free the jobs. */
void mb_validate__flush_jobs(struct mb_val_summary *out);
/* Call on_progress (if set) with the number of final rows. */
void mb_validate__report_progress(struct mb_val_summary *out, size_t done);

/* ---- mb_validate_csv.c: the CSV reader and its cells ---- */

/* libcsv's field callback: appends the field, with its line:column, to the record (vctx: struct mb_val__csv). */
void mb_validate__csv_on_field(void *data, size_t len, void *vctx);
/* Read the header record: locate the required and optional columns; -1 (c->err set) if one is missing. */
int mb_validate__csv_header(struct mb_val__csv *c);
/* Whether a cell says "not stated" (empty, "-", "null", "n/a", ...). */
int mb_validate__is_absent(const char *s);
/* The trimmed text of required column k of the current record. */
const char *mb_validate__cell(struct mb_val__csv *c, int k);
/* Integer cell: *present = 0 when empty/null. Bad text is an error. */
int mb_validate__cell_int(struct mb_val__csv *c, int k, int *v, int *present);
/* Number cell of a required column: 0 when empty/null. */
int mb_validate__cell_num(struct mb_val__csv *c, int k, double *v);
/* The optional measured-memory cells: peak_memory_gib (positive when given)
 * and peak_memory_kind (allocated / reserved / device, empty = allocated). */
int mb_validate__cell_memory(struct mb_val__csv *c, double *gib, const char **kind);
/* A measured value, when given, must be positive: 0 or below is a typo, not "not stated"; and
 * below a bound no training run comes near (a typo such as 1e308 otherwise scores 100 % off):
 * 1e8 tokens/s per GPU, 1e5 model TFLOP/s per GPU (100 PFLOP/s), a step of 1e7 s (116 days). */
int mb_validate__measured_positive(struct mb_val__csv *c, int k, double v);

/* ---- mb_validate_pairs.c: A/B pairs ---- */

/* Set r's A/B identity (mb_val_row.ab_*) from the current record; r's metric must be chosen. */
void mb_validate__csv_ab_key(struct mb_val__csv *c, struct mb_val_row *r);

/* ---- mb_validate_notes.c: the notes column ---- */

/* Append ", what" (or "what" first) to buf of size n. */
void mb_validate__note_add(char *buf, size_t n, const char *what);

/* ---- mb_validate_recipe_cols.c: the recipe columns ---- */

/* A cell as shown in messages: at most 60 characters, "..." when cut. */
const char *mb_validate__rc_shown(const char *cell, char *buf, size_t n);
/* Append a formatted item to a comma-separated list. */
void MB_VAL__FMT(3, 4) mb_validate__rl_add(char *buf, size_t n, const char *fmt, ...);

/* ---- mb_validate.c: the summary ---- */

/* Whether a compared peak enters the memory MAPE: a run that ran, or one reported out of memory whose
 * scenario states its peak after iteration 1 (the first iteration completed and logged it; the run failed
 * later, as the Nemotron 3 Nano runs of the activation-recompute card did in iteration 2). A reported-OOM
 * peak otherwise is where the run failed. */
int mb_validate__mem_in_mape(const struct mb_val_row *r);
/* Is r in the time comparison? (predicted, and not a memory-only row) */
int mb_validate__time_row(const struct mb_val_row *r);

#endif
