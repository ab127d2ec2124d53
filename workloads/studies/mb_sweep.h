/*
 * mb_sweep.h -- many predictions at once: the cartesian product of scenario
 * keys ("what-if" studies behind `mbsim sweep`, docs/sweep.md).
 *
 * A sweep is a base scenario plus axes: a dotted scenario key (parallel.tp,
 * data.micro_batch_size, moe.dispatcher, system.preset, ...) with a list of
 * values. Axes come from the scenario file's `sweep:` mapping and from
 * `--set key=v1,v2` (mb_sweep_set). Configuration i of the product is built
 * by copying the base scenario, setting one value per axis and re-running
 * mb_scenario_check; a combination the checks reject is kept as an INVALID
 * row with the reason, never dropped.
 *
 * The keys are the sweepable entries of the scenario key table (mb_keys.h).
 * Values are strings as written in YAML: integers, enum names, booleans.
 * List-valued keys (recompute.modules, cuda_graph.modules, freeze) take a
 * YAML list or, on the command line, names joined by '+' ("attn+moe_router");
 * `none` (or an empty YAML list for freeze) means "not set".
 *
 * Configurations run on worker threads (mb_step_simulate is reentrant: no
 * mutable static state; models and systems of the product are loaded once,
 * before the threads start, and shared read-only).
 */
#ifndef MB_SWEEP_H
#define MB_SWEEP_H

#include <signal.h>
#include <stdio.h>

#include "mb_scenario.h"
#include "mb_step.h"

#define MB_SWEEP_MAX_AXES 32
/* Configurations one sweep may hold: a million rows take about 45 minutes on
 * two threads and a few GiB of rows; a larger grid is refused up front (its
 * product is computed without overflow) rather than wrapping or exhausting memory. */
#define MB_SWEEP_MAX_CONFIGS 1000000
#define MB_SWEEP_KEY_LEN 48
#define MB_SWEEP_VAL_LEN 128

struct mb_sweep_axis {
    char key[MB_SWEEP_KEY_LEN];     /* canonical dotted key, e.g. "parallel.tp" */
    int n;                          /* number of values */
    char (*val)[MB_SWEEP_VAL_LEN];  /* values as text (lists joined with '+') */
};

struct mb_sweep__sys;
struct mb_sweep__model;

struct mb_sweep {
    struct mb_scenario base;        /* the scenario without its sweep block (owns the model) */
    char dir[MB_PATH_LEN];                  /* folder of the scenario file (relative references) */
    int sp_given;                   /* parallel.sequence_parallel was written in the file */
    int n_axes;
    struct mb_sweep_axis axis[MB_SWEEP_MAX_AXES];
    int n_sys, n_models;            /* loaded once, shared read-only by every configuration */
    struct mb_sweep__sys *sys;
    struct mb_sweep__model *models;
    int exact;                      /* 1: mb_step_simulate_exact (every microbatch) */
    int mb_cap;                     /* > 0: simulate at most this many microbatches per DP rank
                                       (at least 2*pp or 4*pp, mb_step.h) and extrapolate; 0:
                                       mb_step_simulate (cap 64) */
    unsigned long long scenario_hash; /* mb_hash64 of the scenario file's bytes (mb_sweep_load) */
};

/** Status of one configuration. SCREENED: not simulated by mb_sweep_screen,
 * its throughput bound is below the K-th best simulated configuration. */
enum mb_sweep_status { MB_SWEEP_OK, MB_SWEEP_INVALID, MB_SWEEP_FAILED, MB_SWEEP_SCREENED };

/** @brief "ok", "invalid", "error" or "screened" (the TSV and JSON status). */
const char *mb_sweep_status_name(enum mb_sweep_status s);

#define MB_SWEEP_TOP 3

/** One configuration's outcome (a TSV row). The numbers are rounded to the 6
 * significant digits the TSV and JSON print, so a row read back from a TSV
 * (mb_sweep_read_tsv) equals the row that was written. */
struct mb_sweep_row {
    size_t index;                   /* position in the full product (0-based) */
    enum mb_sweep_status status;
    char reason[512];               /* INVALID/FAILED: why (from mb_scenario_check / simulation) */
    double step_time_s, tokens_per_s_per_gpu, model_tflops_per_gpu, mfu;
    double peak_memory_gib, reserved_memory_gib, capacity_gib;
    int oom;
    int dp, microbatches;
    int top_cat[MB_SWEEP_TOP];      /* largest breakdown terms (enum mb_cat), -1 if none */
    double top_s[MB_SWEEP_TOP];
    double sim_wall_s;
    unsigned long long events;      /* engine events of the simulations behind the row */
};

/**
 * @brief Load a scenario file that may carry a `sweep:` mapping of dotted keys
 * to lists of values. The base scenario must itself be valid.
 * @return 0 or -1 with file:line:col in err.
 */
int mb_sweep_load(const char *path, struct mb_sweep *sw, struct mb_err *err);

/**
 * @brief As mb_sweep_load, from a scenario's text already read (`mbsim run -`
 * reads standard input). `path` names it in messages ("<stdin>") and its folder
 * is the base of relative references ("." when it has no '/').
 * @return 0 or -1 with path:line:col in err.
 */
int mb_sweep_load_text(const char *text, size_t len, const char *path, struct mb_sweep *sw, struct mb_err *err);

/**
 * @brief 1 when the base scenario's warnings (settings that change nothing)
 * hold for every configuration: no axis varies what they depend on (the
 * model, ep, tp, cp, an overlap switch, the routing, the dispatcher or the
 * capacity padding, the CUDA graph modules); 0 otherwise (the caller then prints none).
 */
int mb_sweep_warnings_hold(const struct mb_sweep *sw);

/**
 * @brief Add (or replace) an axis from "key=v1,v2,..." (the --set option).
 * Every value is tried on the base scenario at once, so a typo fails here.
 */
int mb_sweep_set(struct mb_sweep *sw, const char *spec, struct mb_err *err);

/**
 * @brief Add (or replace) an axis from a key and its values.
 * @param[in] val  n strings (lists joined with '+')
 */
int mb_sweep_add_axis(struct mb_sweep *sw, const char *key, int n, const char *const *val, struct mb_err *err);

/** @brief The GPU type of system i < n_sys that a system.preset axis loaded ("" outside). */
const char *mb_sweep_sys_gpu(const struct mb_sweep *sw, int i);

/** @brief Number of configurations: product of the axis sizes (1 with no axes). */
size_t mb_sweep_size(const struct mb_sweep *sw);

/** @brief Value of axis a in configuration idx (the last axis varies fastest). */
const char *mb_sweep_value(const struct mb_sweep *sw, size_t idx, int a);

/**
 * @brief Build configuration idx: base + one value per axis, then checked.
 * `out` shares the model with the sweep (do not mb_scenario_free it).
 * @return 0, or -1 with the reason the combination cannot exist.
 */
int mb_sweep_scenario(const struct mb_sweep *sw, size_t idx, struct mb_scenario *out, struct mb_err *err);

/**
 * @brief Set one scenario key by dotted name or alias from text (no
 * model/system keys, no layout check). The keys, aliases and value syntax are
 * the sweepable entries of the key table (mb_keys.h, docs/scenario-format.md):
 * integers, numbers, booleans, enum names, flag names joined with '+'.
 * @return 0 or -1 with e.g. "parallel.tp: expected an integer, got 'x'",
 *         "unknown key 'x'; expected one of: ..." in err.
 */
int mb_scenario_set(struct mb_scenario *s, const char *key, const char *value, struct mb_err *err);

/**
 * @brief Comma-separated list of the keys a sweep accepts, then their aliases
 * in parentheses (for messages and --help); generated from the key table.
 * @return a static string (valid for the program's life).
 */
const char *mb_sweep_keys(void);

/** Progress callback: called from the calling thread a few times a second. */
typedef void (*mb_sweep_progress_fn)(size_t done, size_t total, void *ctx);

/** Row callback: called from the calling thread with each finished row. */
typedef void (*mb_sweep_row_fn)(const struct mb_sweep_row *row, void *ctx);

/** What mb_sweep_run_opts runs and whom it tells. */
struct mb_sweep_run_opts {
    size_t shard, nshards;          /* configurations shard, shard + nshards, ... (nshards 0 = 1) */
    int jobs;                       /* worker threads (< 1 = 1) */
    const unsigned char *skip;      /* NULL, or per shard position k: 1 = rows[k] is given by the
                                       caller (a resumed row) and not run */
    const volatile sig_atomic_t *stop; /* NULL, or: once nonzero, no further configuration starts
                                       (set it from a signal handler); running ones finish */
    mb_sweep_row_fn on_row;         /* NULL, or each final row (skipped ones too) in grid order, as
                                       soon as it and every row before it are final; after a stop,
                                       the remaining final rows, still in grid order */
    mb_sweep_progress_fn progress;  /* NULL, or (configurations run, configurations to run): at most
                                       every 0.1 s, each time after the on_row calls of the rows
                                       that became final since the last call, and once at the end */
    void *ctx;                      /* passed to on_row and progress */
    /* NULL (mb_sweep_eval), or what fills a row instead (mb_sweep_eval_bound); reentrant */
    void (*eval)(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row);
};

/** @brief Number of configurations in shard i of N (N = 0 counts as 1). */
size_t mb_sweep_shard_count(const struct mb_sweep *sw, size_t shard, size_t nshards);

/**
 * @brief Run one shard on worker threads, streaming rows through o->on_row.
 * @param[in,out] rows  mb_sweep_shard_count() rows in shard order (position k
 *                      is configuration shard + k * nshards); skipped rows are
 *                      the caller's, the others are filled here
 * @param[out]    done  NULL, or per position: 1 = rows[k] is final
 * @return 0 when every row is final, 1 when a stop left some unrun.
 */
int mb_sweep_run_opts(const struct mb_sweep *sw, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows,
                      unsigned char *done);

/*
 * Provenance: what a TSV's rows were computed from, beyond the axes and values
 * every row names. The TSV's first line (and each shard's, so a `cat` of
 * shards keeps them) is
 *   # mbsim sweep: scenario=HEX16 calibration=HEX16 options=OPTIONS
 * scenario: mb_hash64 of the scenario file's bytes; calibration: of the
 * calibration tables the grid's configurations use (each table file and its
 * `base:` chain, mb_calib_files_hash); options: what else changes a row
 * ("mb-cap:16", "exact", ",screen:K" added for --screen). Resume and merge
 * refuse a file whose provenance differs from theirs (docs/sweep.md).
 */
#define MB_SWEEP_OPTIONS_LEN 64

struct mb_sweep_prov {
    unsigned long long scenario;    /* mb_sweep.scenario_hash */
    unsigned long long calibration; /* mb_sweep_provenance */
    char options[MB_SWEEP_OPTIONS_LEN]; /* [a-z0-9:,-], e.g. "mb-cap:16,screen:10"; "" = any (reading) */
};

/**
 * @brief The provenance of this sweep's rows: the scenario file's hash, the
 * hash of the calibration tables of the base scenario's GPU and of every
 * system an axis names (or of the scenario's calibration.table: the same for
 * all), loaded through mb_calib_shared (so the simulations use those very
 * tables), and options as given.
 * @param[in] options  the row-changing options, as mb_sweep_prov.options
 * @return 0, or -1 with err set (options not of [a-z0-9:,-], too long).
 */
int mb_sweep_provenance(const struct mb_sweep *sw, const char *options, struct mb_sweep_prov *p, struct mb_err *err);

/** @brief Write the provenance line ("# mbsim sweep: ...\n") that precedes a TSV's rows. */
void mb_sweep_write_prov(const struct mb_sweep_prov *p, FILE *fp);

/** How mb_sweep_read_tsv_opts reads. */
struct mb_sweep_read_opts {
    int allow_partial;              /* 1: a last line without its newline (a write cut short) is
                                       skipped and *partial_p set; 0: it is an error */
    int *partial_p;                 /* NULL, or 1 when such a last line was skipped */
    const struct mb_sweep_prov *want; /* NULL: provenance lines are checked for form only and may be
                                       absent; else the file must start with one, and every one must
                                       equal *want (options "" = any) */
    struct mb_sweep_prov *found;    /* NULL, or the file's first provenance line (zeros: none) */
    int no_resimulation;            /* 1: the first finished row is not simulated again (the fuzz
                                       harness's parse-only mode; resume and merge never set it) */
};

/**
 * @brief mb_sweep_read_tsv with provenance checks (mb_sweep_read_opts): a file
 * without the provenance line before its rows (written by an older mbsim, or
 * edited) or with another one is an error at that line ("written with other
 * calibration tables ...").
 */
int mb_sweep_read_tsv_opts(const struct mb_sweep *sw, const char *path, const struct mb_sweep_read_opts *o,
                           int (*fn)(const struct mb_sweep_row *row, int line, void *ctx, struct mb_err *err),
                           void *ctx, struct mb_err *err);

/**
 * @brief Read rows back from a TSV that mb_sweep_write_tsv wrote for this
 * sweep (an interrupted run, a shard). A header row, when present, must be the
 * one this sweep writes; each row's configuration must be in the grid with
 * that configuration's axis values; numbers as written (6 significant digits).
 * @param[in] allow_partial  1: a last line without its newline (a write cut
 *                           short) is skipped and reported in *partial_p;
 *                           0: it is an error
 * @param[in] fn   called with each row, its 1-based line and err; returns 0, or
 *                 -1 with err set to stop the read
 * @param[out] partial_p  NULL, or 1 when such a last line was skipped
 * @return 0, or -1 with "file:line:col: what was expected" in err.
 */
int mb_sweep_read_tsv(const struct mb_sweep *sw, const char *path, int allow_partial,
                      int (*fn)(const struct mb_sweep_row *row, int line, void *ctx, struct mb_err *err), void *ctx,
                      int *partial_p,
                      struct mb_err *err);

/**
 * @brief Run configurations shard, shard + nshards, ... on `jobs` threads.
 * @param[out] rows  malloc'd array of *n rows in index order (free with mb_free)
 * @return 0 (invalid configurations are rows, not errors).
 */
int mb_sweep_run(const struct mb_sweep *sw, size_t shard, size_t nshards, int jobs, mb_sweep_progress_fn cb,
                 void *ctx, struct mb_sweep_row **rows, size_t *n);

/** @brief Evaluate configuration idx into row (used by mb_sweep_run; reentrant). */
void mb_sweep_eval(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row);

/**
 * @brief The screening pass's row of configuration idx (reentrant): INVALID
 * as mb_sweep_eval; FAILED when the bound cannot be computed; otherwise
 * SCREENED with step_time_s the lower bound on the step time mb_sweep_eval
 * would report (mb_step_bound with the same options, seconds),
 * tokens_per_s_per_gpu the upper bound that gives, reserved_memory_gib the
 * bound on the device memory, capacity_gib and oom = bound above capacity
 * (numbers not rounded).
 */
void mb_sweep_eval_bound(const struct mb_sweep *sw, size_t idx, struct mb_sweep_row *row);

/** What mb_sweep_screen did. */
struct mb_sweep_screen_stats {
    size_t bounded;                 /* configurations whose bound was computed */
    size_t simulated;               /* of them, fully simulated */
    size_t screened;                /* of them, left SCREENED */
    size_t violations;              /* simulated rows faster than their bound (0 expected; any turns the
                                       screen off: every remaining configuration is simulated) */
    size_t batches;                 /* rounds of full simulations */
};

/* Full simulations per round after the first (the first runs the K best bounds,
 * at least this many); fixed, so the rows do not depend on the thread count. */
#define MB_SWEEP_SCREEN_BATCH 32

/**
 * @brief `mbsim sweep --screen K`: bound every configuration of the shard
 * (mb_sweep_eval_bound); one whose memory bound is above capacity is out of
 * memory whatever its timeline and stays SCREENED; simulate the others in
 * rounds, best bound first, until no
 * configuration left has a throughput bound (at the TSV's 6 digits) at or
 * above the K-th best simulated fitting one. A configuration left SCREENED
 * therefore ranks below K fitting configurations that were simulated, so
 * mb_sweep_rank's first K are those of simulating every configuration -- as
 * long as each bound holds (mb_step_bound); every simulated row is checked
 * against its bound and a violation turns screening off.
 * @param[in]     k     configurations to keep exact (>= 1)
 * @param[in]     o     as for mb_sweep_run_opts (skip must be NULL; eval is ignored);
 *                      on_row gets every row in grid order at the end, progress
 *                      reports the bound pass
 * @param[in,out] rows  mb_sweep_shard_count() rows in shard order
 * @param[out]    done  NULL, or per position: 1 = rows[k] is final
 * @param[out]    st    NULL, or the counts
 * @return 0, or 1 when a stop left configurations unrun.
 */
int mb_sweep_screen(const struct mb_sweep *sw, size_t k, const struct mb_sweep_run_opts *o, struct mb_sweep_row *rows,
                    unsigned char *done, struct mb_sweep_screen_stats *st);

/**
 * @brief The configurations that ran and fit (status OK, not OOM), best
 * first: tokens/s/GPU descending, ties by lower peak memory, then index.
 * @param[out] order  indices into rows (room for n)
 * @return how many.
 */
size_t mb_sweep_rank(const struct mb_sweep_row *rows, size_t n, size_t *order);

/**
 * @brief Throughput-vs-memory Pareto front of the fitting configurations: no
 * other fitting row has >= throughput and <= peak memory with one strictly
 * better. Sorted by peak memory ascending (throughput ascending with it).
 * @param[out] front  indices into rows (room for n)
 * @return how many.
 */
size_t mb_sweep_pareto(const struct mb_sweep_row *rows, size_t n, size_t *front);

/**
 * @brief Write rows as TSV: config, each swept key, status, metrics, top
 * breakdown terms, reason (docs/sweep.md). Numbers that do not exist are NA.
 */
void mb_sweep_write_tsv(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, int header,
                        FILE *fp);

/**
 * @brief Remove every axis and the models and systems their values loaded,
 * keeping the base scenario: the sweep holds no grid again. A copy of a sweep
 * without axes (struct assignment) may be given axes and dropped this way
 * while the original keeps the base (many grids over one loaded base: the
 * sweep_set fuzz harness).
 */
void mb_sweep_drop_axes(struct mb_sweep *sw);

/** @brief Free what the sweep owns; accepts NULL. */
void mb_sweep_free(struct mb_sweep *sw);

#endif /* MB_SWEEP_H */
