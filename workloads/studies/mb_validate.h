/*
 * mb_validate.h -- compare mbsim's predictions with measured training runs.
 *
 * Input is either a measured-runs CSV (the layout of
 * shared/data/measured/public_measured.csv, columns found by header name) or
 * scenario YAML files that carry a `measured:` block. Each row becomes a
 * struct mb_scenario, is simulated with mb_step_simulate() and compared on one
 * metric: tokens/s/GPU when measured, else step time, else model TFLOP/s/GPU
 * (converted to tokens/s with the publisher's FLOP convention when the source
 * is known). The CSV's optional recipe columns set the row's recipe
 * (mb_validate_recipe_cell); without them the notes column is read.
 * Rows that cannot be simulated faithfully (no model file, precision not
 * stated, VLM row without image data, impossible layout, ...) are skipped
 * with a reason instead of being guessed; docs/validation.md lists the rules.
 *
 * Errors (return -1 + struct mb_err) are reserved for input the user must
 * fix: an unreadable file, a missing required column, a malformed number or
 * quoted field, a scenario file that does not load. Everything else is a
 * per-row skip.
 *
 * Typical use (what `mbsim validate` does):
 *
 *     struct mb_val_summary s;
 *     mb_validate_init(&s);
 *     for each argument: mb_validate_add_csv() or mb_validate_add_scenario()
 *     mb_validate_finish(&s);
 *     mb_validate_print_text(&s, stdout);   (or mb_validate_print_json)
 *     mb_validate_free(&s);
 *
 * mb_validate_csv() and mb_validate_scenario_files() wrap that sequence.
 */
#ifndef MB_VALIDATE_H
#define MB_VALIDATE_H

#include <stddef.h>
#include <stdio.h>

#include "mb_scenario.h"
#include "mb_util.h"

/* Metric names used in mb_val_row.metric (also the CSV column names). */
#define MB_VAL_TOKENS "tokens_per_s_per_gpu"
#define MB_VAL_STEP "step_time_s"
#define MB_VAL_TFLOPS "model_tflops_per_gpu"

/** Knob columns two rows of an A/B pair may differ in (mb_validate_ab_knob_name): precision, the
 * layout's mbs, tp, pp, cp, vp, ep, etp, fsdp, recompute, then the 12 recipe columns. */
#define MB_VAL_AB_NKNOB 22

/** @brief Column name of knob k (0 <= k < MB_VAL_AB_NKNOB), e.g. "tp", "cuda_graph". */
const char *mb_validate_ab_knob_name(int k);

/** One measured run and its prediction (or the reason it was skipped). */
struct mb_val_row {
    char id[MB_MEASURED_ID_LEN]; /* CSV id, or the scenario name / file for YAML input */
    char model[64];      /* model key as written */
    char system[32];     /* mbsim system preset (dgx_h100, ...), a system file's stem, or the name as
                            written if unmapped */
    char source[256];    /* input file the row came from */
    int line;            /* 1-based line of the CSV record, 0 for scenario files */
    char metric[32];     /* MB_VAL_TOKENS / MB_VAL_STEP / MB_VAL_TFLOPS, "" if none measured */
    double measured;     /* measured value of `metric` (0 if none) */
    double predicted;    /* predicted value of `metric` (0 if skipped) */
    double err_pct;      /* (predicted - measured) / measured * 100 (0 if skipped) */
    int skipped;         /* 1 if not predicted; `reason` says why */
    char reason[200];    /* skip reason, "" for predicted rows */
    char note[2048];     /* informational remark on a predicted row: FSDP group != DP, what the
                            recipe columns (or the notes) set and what they state that mbsim does not
                            model, FLOP-convention conversion, predicted OOM; or "" */
    int layout_mismatch; /* recipe_match says LAYOUT-MISMATCH (weaker evidence) */
    int recipe_bad;      /* number of recipe cells that could not be parsed (named in note) */
    char flops_conv[24]; /* TFLOP/s-only row compared in time: the publisher's FLOP convention
                            (mb_validate_flop_convention_name), "" otherwise */
    double measured_tflops; /* the published TFLOP/s/GPU such a row was converted from (0 if none) */
    /* memory (docs/validation.md, "Memory"); the verdict and terms are set on predicted rows */
    int reported_oom;       /* the notes say the run was reported out of memory (mb_validate_notes_oom) */
    int verdict;            /* enum mb_mem_verdict of the prediction (the rank with the most device memory) */
    double device_gib;      /* that rank's predicted device memory */
    double capacity_gib;    /* the GPU's usable HBM */
    char mem_terms[200];    /* that rank's largest memory terms at its peak: "activations 41.2 GiB, ..." */
    double meas_mem_gib;    /* measured peak memory per GPU, GiB (0: not stated) */
    char mem_kind[12];      /* what meas_mem_gib measures: "allocated" (default), "reserved" or "device" */
    char mem_from[12];      /* where it was read: "column", "notes" or "scenario"; "" if not stated. A
                               "notes" peak is a training log's figure: Megatron-Bridge logged the
                               writer rank's (world_size - 1, the last pipeline stage) until
                               NVIDIA-NeMo/Megatron-Bridge@55c4e667 (2026-05-08) reduced it over the PP
                               group, so it is compared with the last stage's rank; the others with
                               the largest over the stages' ranks */
    int mem_first_iter;     /* 1: the peak was logged after the first iteration, and is compared with the
                               first iteration's (mb_memory_stage.first_iter_allocated): a "notes" peak
                               (Megatron-Bridge printed its memory report once, after iteration 1, until
                               NVIDIA-NeMo/Megatron-Bridge@4d82ed17, 2026-04-09, PR #3169), or a scenario's
                               measured.peak_memory_after_iteration: 1 */
    int mem_only;           /* 1: a scenario file with no measured time: compared on memory alone */
    int mem_compared;       /* 1: a predicted row with a measured peak; pred_mem_gib and mem_err_pct set */
    double pred_mem_gib;    /* predicted peak of mem_kind: the largest over the pipeline stages' ranks, or
                               the last stage's for a "notes" peak */
    double mem_err_pct;     /* (pred_mem_gib - meas_mem_gib) / meas_mem_gib * 100 */
    char recipe_file[256];  /* a CSV row simulated from the scenario file whose measured.csv_row names it
                               (mb_validate_add_recipes), "" otherwise */
    /* A/B identity of a CSV row (mb_validate_pairs.h): 64-bit FNV-1a hashes of what must match for two
     * rows to pair (model, system, GPUs, GBS, sequence length) and of each knob cell (layout columns,
     * precision, recompute, recipe columns; trimmed, lower case, integers as read); ab_keyed 0 for
     * scenario-file rows */
    int ab_keyed;
    unsigned long long ab_same;
    unsigned long long ab_knob[MB_VAL_AB_NKNOB];
};

/** MAPE of one group of predicted rows (one system, model or metric). */
struct mb_val_group {
    char name[64];
    size_t n;            /* predicted rows in the group */
    double mape_pct;     /* mean absolute percentage error of the group */
};

/** Skipped rows sharing one reason string. */
struct mb_val_reason {
    char reason[200];
    size_t count;
};

struct mb_val__cache; /* opaque: models and systems loaded once per name */
struct mb_val__state; /* opaque: the rows' allocation, cache, recipe files and pending simulations */

/** Result of a validation run. Every array is owned; free with mb_validate_free(). */
struct mb_val_summary {
    size_t n_rows;                   /* rows read (predicted + skipped) */
    size_t n_predicted, n_skipped;
    double mape_pct;                 /* mean |err_pct| over predicted rows; NaN if none */
    double median_ape_pct;           /* median |err_pct| (mean of the two middle values for even n); NaN if none */
    double max_ape_pct;              /* max |err_pct|; NaN if none */
    double median_err_pct;           /* signed median of err_pct (positive: optimistic on throughput); NaN if none */
    size_t n_layout_mismatch;        /* predicted rows whose recipe_match says LAYOUT-MISMATCH */
    double mape_layout_mismatch_pct; /* MAPE over those rows; NaN if none */
    double mape_layout_ok_pct;       /* MAPE over the other predicted rows; NaN if none */
    size_t n_recipe_bad;             /* predicted rows with at least one unparseable recipe cell */
    size_t n_recipe_files;           /* predicted CSV rows simulated from a recipe file */
    size_t n_by_flops_conv;
    struct mb_val_group *by_flops_conv; /* TFLOP/s-only rows compared in time, by FLOP convention */
    size_t max_ape_row;              /* index in rows[] of the max; (size_t)-1 if none */
    char unknown_cols[1024];         /* a warning line per CSV header name no rule reads
                                      * (mb_validate_warn_inputs) */
    /* memory: rows that ran = predicted rows not reported OOM (every measured run ran unless its
     * notes say it was reported out of memory) */
    size_t n_mem;                    /* rows compared in peak memory (in the memory MAPE) */
    size_t n_mem_oom_later;          /* of them, reported OOM after the first iteration their peak is of */
    double mape_mem_pct;             /* mean |mem_err_pct| over them; NaN if none */
    double median_mem_err_pct;       /* signed median of mem_err_pct; NaN if none */
    size_t n_ran, n_ran_pred_oom, n_ran_pred_at_risk; /* rows that ran; of them predicted OOM / at risk */
    size_t n_reported_oom;           /* predicted rows reported OOM */
    size_t n_reported_oom_pred_fits, n_reported_oom_pred_at_risk, n_reported_oom_pred_oom;
    size_t n_by_system, n_by_model, n_by_metric, n_reasons;
    struct mb_val_group *by_system;  /* sorted by name */
    struct mb_val_group *by_model;   /* sorted by name */
    struct mb_val_group *by_metric;  /* sorted by name */
    struct mb_val_reason *reasons;   /* skipped rows grouped by reason: count descending, then reason */
    struct mb_val_row *rows;         /* n_rows rows, in input order */
    int roofline;                    /* set before adding inputs: predict in roofline-only mode */
    int parse_only;                  /* set before adding inputs: read and check every row (layout,
                                      * recipe columns, scenario check) but simulate none; each row
                                      * that would be predicted is skipped as "parse only" (fuzzing) */
    /* set before adding inputs (optional): called for every predicted row with the checked
     * scenario it was simulated with (borrowed: valid during the call only), e.g. to keep it
     * for refitting the framework-time model (mb_fit.h) */
    void (*on_row)(void *ctx, const struct mb_val_row *r, const struct mb_scenario *s);
    void *on_row_ctx;
    /* set before adding inputs (optional): threads that simulate rows at once (0 or 1: the
     * calling thread): the rows of a CSV, and scenario files added one after the other. Rows,
     * statistics and the order of on_row calls are the same for every value; rows are simulated
     * in batches of up to MB_VAL_BATCH, so on_row runs once a batch is done, always from the
     * calling thread: before mb_validate_add_csv returns (for its rows and any scenario rows
     * before them), and for scenario rows at the latest in mb_validate_finish */
    int jobs;
    /* set before adding inputs (optional): called from the calling thread whenever a row is
     * final (predicted or skipped), with the number of final rows so far, e.g. to print progress */
    void (*on_progress)(void *ctx, size_t rows_done);
    void *on_progress_ctx;
    /* set before adding inputs (optional): a model/system cache from mb_validate_cache_new()
     * used instead of the summary's own, and kept by mb_validate_finish and mb_validate_free
     * (they drop only the entries this summary added after mb_validate_cache_keep), e.g. to
     * load the shipped models and systems once for many summaries (the fuzz harness) */
    struct mb_val__cache *shared_cache;
    struct mb_val__state *state;     /* what the reading keeps between calls (opaque; made on first use,
                                      * freed by mb_validate_free()) */
};

/** Rows simulated together when mb_val_summary.jobs > 1 (each holds a scenario, ~50 kB). */
#define MB_VAL_BATCH 256

/**
 * @brief A model/system cache to share between summaries (mb_val_summary.shared_cache).
 * Entries are loaded by the summaries that use it; mb_validate_cache_keep() marks those
 * loaded so far as kept, and every later entry is dropped when the summary that loaded it
 * is finished or freed, so each summary starts from the kept entries. Not thread-safe:
 * one summary at a time.
 */
struct mb_val__cache *mb_validate_cache_new(void);
/** @brief Keep the entries loaded so far (see mb_validate_cache_new). */
void mb_validate_cache_keep(struct mb_val__cache *c);
/** @brief Free a cache from mb_validate_cache_new() (NULL: nothing). */
void mb_validate_cache_free(struct mb_val__cache *c);

/** @brief Start an empty summary (all counts 0, statistics NaN). */
void mb_validate_init(struct mb_val_summary *out);

/** @brief Rows read but not simulated yet (jobs > 1: they wait for their batch of MB_VAL_BATCH). */
size_t mb_validate_pending(const struct mb_val_summary *s);

/**
 * @brief Read a measured-runs CSV and append one row per record to `out`.
 *
 * Columns are located by header name; required: id, model, system, gpus,
 * precision, gbs, mbs, seq_len, tp, pp, cp, vp, ep, etp, fsdp, recompute,
 * tokens_per_s_per_gpu, model_tflops_per_gpu, step_time_s. Optional: notes,
 * source, recipe_match, the recipe columns, peak_memory_gib (a positive
 * number) and peak_memory_kind (allocated, reserved or device; empty =
 * allocated). Others are ignored.
 * @param[in,out] out   summary started with mb_validate_init()
 * @param[in]     path  CSV file
 * @param[out]    err   "path: cannot open (...)", "path:1:1: missing column 'gbs'",
 *                      "path:L:C: column 'gbs': expected an integer, got 'x'",
 *                      "path:L:C: column 'step_time_s': expected a number, got 'x'",
 *                      "path:L:1: unterminated quoted field at end of file",
 *                      "path:L:C: malformed quoted field"
 *                      (L = line where the record starts, C = column of the field)
 * @return 0, or -1 with rows appended so far kept in `out`.
 */
int mb_validate_add_csv(struct mb_val_summary *out, const char *path, struct mb_err *err);

/**
 * @brief Load a scenario YAML file (mb_scenario_load) and append one row
 * comparing its `measured:` block with the prediction. A file without
 * measured values becomes a skipped row ("no measured block"). With
 * out->jobs > 1 the prediction waits for the batch (mb_validate_finish
 * completes it), so consecutive scenario files are simulated in parallel.
 * @return 0, or -1 if the scenario does not load (err from mb_scenario_load).
 */
int mb_validate_add_scenario(struct mb_val_summary *out, const char *path, struct mb_err *err);

/**
 * @brief Register recipe files before adding CSVs: a scenario file whose
 * `measured.csv_row` names a CSV row states that row's recipe (the publisher's
 * configuration the row's columns lack), and every later mb_validate_add_csv()
 * simulates that row from the file instead of from its columns and recipe
 * columns, with the row's measured values (time, and memory from its
 * peak_memory_gib column or notes: the file's measured block is not read).
 * Before that, the file's layout must be the row's (mb_validate_recipe_layout):
 * a file that differs is an error naming the CSV line, never a silent
 * substitution. The row's note says "recipe from FILE" (docs/validation.md,
 * "Recipe files").
 * @param[in,out] out   summary started with mb_validate_init()
 * @param[in]     path  a scenario file (it must have measured.csv_row), or a
 *                      folder: its regular *.yaml / *.yml files in name order
 *                      (each must load; those without measured.csv_row are not
 *                      recipes; at least one must have it). A file given twice
 *                      (also through its folder) counts once.
 * @param[out]    err   mb_scenario_load's error, "path: no measured.csv_row: ...",
 *                      "path: measured.csv_row 'ID' is also the row of OTHER: ...",
 *                      "path: cannot open (...)"
 * @return 0 or -1.
 */
int mb_validate_add_recipes(struct mb_val_summary *out, const char *path, struct mb_err *err);

/**
 * @brief The recipe file registered for CSV row `id`, marked used: its scenario
 * as loaded (borrowed: owned by the summary) and its path in *path; NULL if none.
 */
const struct mb_scenario *mb_validate_recipe_file(struct mb_val_summary *s, const char *id, const char **path);

/**
 * @brief A precision label as mb_validate_precision reads it: lower case, '-'
 * and ' ' as '_' ("FP8-CS" -> "fp8_cs"), cut to n - 1 characters.
 */
void mb_validate_precision_key(const char *label, char *out, size_t n);

/**
 * @brief Recipe files no CSV row added so far was simulated from: their row is in no
 * CSV (a typo in measured.csv_row, or another CSV), or it was skipped before its
 * recipe applies (a layout cell not stated, an unknown model, ...; the row's reason
 * says which). Up to `max` paths and their measured.csv_row ids (borrowed) in
 * `paths` and `ids`.
 * @return how many there are (may exceed max).
 */
size_t mb_validate_recipes_unused(const struct mb_val_summary *s, const char **paths, const char **ids, size_t max);

/**
 * @brief Print "PROG: warning: recipe file F not used: ..." on fp for each unused
 * recipe file (mb_validate_recipes_unused), saying whether its row is in no CSV or
 * was skipped (with the row's file:line and reason); the first 8, then a count.
 * @return the number of unused files.
 */
size_t mb_validate_warn_unused_recipes(const struct mb_val_summary *s, const char *prog, FILE *fp);

/**
 * @brief Print the warnings about the inputs on fp: "PROG: warning: FILE:LINE:COL: unknown column
 * 'NAME' (ignored)[; did you mean 'KNOWN'?]" for each CSV header name no rule reads (a misspelt
 * `dispatchr` would otherwise drop its recipe silently), then the unused recipe files
 * (mb_validate_warn_unused_recipes).
 */
void mb_validate_warn_inputs(const struct mb_val_summary *s, const char *prog, FILE *fp);

/** @brief Free the registered recipe files (mb_validate_free calls it). */
void mb_validate_recipes_free(struct mb_val_summary *s);

/**
 * @brief Does a recipe file describe the run of a CSV row? The row's scenario
 * (from its layout columns) and the file's must agree on model (name, layers,
 * widths, heads, vocabulary, experts, MTP depth, parameter count), system (name,
 * GPU, GPUs per node, NVLink domain and bandwidth, NIC bandwidth and latency,
 * switch tiers, oversubscription, power cap), GPUs, precision (label, case and
 * '-'/'_' aside), sequence length, GBS, MBS, TP, PP, CP, VPP, EP, ETP, strategy,
 * frozen modules, LoRA rank and targets, and recompute (selective with no
 * module counts as none). Everything else is the recipe the file adds.
 * @param[out] why  the first difference, "tp 4, the row 8" (file first)
 * @return 0 when they agree, 1 otherwise.
 */
int mb_validate_recipe_layout(const struct mb_scenario *row, const struct mb_scenario *file, char *why, size_t n);

/**
 * @brief Compute the statistics, per-system/model/metric MAPE and the skip
 * reason groups from out->rows; release the model/system cache. May be
 * called again after more rows are added.
 */
void mb_validate_finish(struct mb_val_summary *out);

/**
 * @brief mb_validate_init + mb_validate_add_csv + mb_validate_finish.
 * @param[out] out  filled summary; free with mb_validate_free() even on error
 * @return 0 or -1 (see mb_validate_add_csv).
 */
int mb_validate_csv(const char *path, struct mb_val_summary *out, struct mb_err *err);

/**
 * @brief mb_validate_init + mb_validate_add_scenario for each path + mb_validate_finish.
 * Stops at the first file that does not load.
 * @param[out] out  filled summary; free with mb_validate_free() even on error
 * @return 0 or -1.
 */
int mb_validate_scenario_files(const char *const *paths, size_t n, struct mb_val_summary *out,
                               struct mb_err *err);

/**
 * @brief Print a table of predicted rows (id truncated to 40 characters, model,
 * system, metric, measured, predicted, err%), the rows compared in peak memory
 * (id, kind, source, measured and predicted GiB, err%), then the summary:
 * predicted and skipped counts, skipped rows grouped by reason, MAPE, median
 * and max APE, the memory MAPE, the memory verdicts against the rows that ran
 * or were reported OOM, the predicted-OOM rows that ran with their largest
 * memory terms, MAPE per system, per model and per metric.
 */
void mb_validate_print_text(const struct mb_val_summary *s, FILE *fp);

/**
 * @brief Print the summary as one JSON object (jansson): n_rows, n_predicted,
 * n_skipped, mape_pct, median_ape_pct, max_ape_pct (null when nothing was
 * predicted), mape_by_system, mape_by_model, mape_by_metric (name -> MAPE),
 * skipped_by_reason (reason -> count), the memory counts (n_memory,
 * memory_mape_pct, memory_median_err_pct, n_ran, n_ran_predicted_oom, ...,
 * predicted_oom_ran; docs/validation.md, Memory) and rows (objects with id,
 * model, system, line, metric, measured, then predicted + err_pct [+ note] +
 * memory_verdict ..., or skipped: true + reason; measured_memory_gib ... where stated).
 * @return 0, or -1 if encoding or writing failed.
 */
int mb_validate_print_json(const struct mb_val_summary *s, FILE *fp);

/* ---- JUnit XML (`mbsim validate --junit FILE --max-error PCT`, mb_validate_junit.c) ---- */

/** What a row is in the JUnit report (the index of mb_validate_junit_count's counts). */
enum mb_val_junit_kind { MB_JUNIT_PASS, MB_JUNIT_FAILURE, MB_JUNIT_ERROR, MB_JUNIT_SKIPPED };

/**
 * @brief A row's JUnit verdict: FAILURE when |error| > max_err_pct (the time
 * metric's err_pct; a memory-only scenario row's mem_err_pct), ERROR when it
 * was skipped because its simulation failed ("simulation failed: ...",
 * "simulation gave no ..."), SKIPPED for the other skipped rows (their input
 * cannot be simulated faithfully: docs/validation.md), else PASS.
 * @param[out] err_pct  the error compared (percent), 0 for skipped rows
 */
enum mb_val_junit_kind mb_validate_junit_kind(const struct mb_val_row *r, double max_err_pct, double *err_pct);

/** @brief count[k]: the rows of kind k (enum mb_val_junit_kind) at this threshold (percent). */
void mb_validate_junit_count(const struct mb_val_summary *s, double max_err_pct, size_t count[4]);

/**
 * @brief Write the rows as JUnit XML: <testsuites><testsuite name="mbsim
 * validate" tests failures errors skipped> with the properties max_error_pct
 * and mape_pct, one <testcase classname="mbsim.validate.SYSTEM" name="ID"
 * file line> per row, holding <failure> (the metric, measured, predicted,
 * error and limit), <error> or <skipped> (the reason) as mb_validate_junit_kind
 * says. Text is XML-escaped; control characters become '?'.
 * @param[in] max_err_pct  the |error| in percent past which a row fails
 * @return 0, or -1 when the stream reports a write error.
 */
int mb_validate_print_junit(const struct mb_val_summary *s, double max_err_pct, FILE *fp);

/** @brief Free everything the summary owns; accepts NULL; leaves an empty summary. */
void mb_validate_free(struct mb_val_summary *s);

/* ---- drift against a baseline (`mbsim validate --baseline OLD.json`) ---- */

/** What happened to one row between a baseline and this run. */
enum mb_val_drift_kind {
    MB_DRIFT_SAME,          /* predicted in both with the same value (to the 10 significant digits that
                               validate --json writes), or skipped in both */
    MB_DRIFT_CHANGED,       /* predicted in both on the same metric, the prediction moved */
    MB_DRIFT_METRIC,        /* predicted in both, but on another metric (the measured columns changed) */
    MB_DRIFT_NOW_SKIPPED,   /* predicted in the baseline, skipped now (counts as past the threshold) */
    MB_DRIFT_NOW_PREDICTED, /* skipped in the baseline, predicted now */
    MB_DRIFT_ADDED,         /* only in this run */
    MB_DRIFT_REMOVED        /* only in the baseline */
};

/** One row of a drift report. */
struct mb_val_drift_row {
    char id[MB_MEASURED_ID_LEN];
    int occurrence;          /* 1 for the first row with this id, 2 for the second, ... (rows pair by both) */
    enum mb_val_drift_kind kind;
    char metric[32];         /* the metric now (the baseline's for REMOVED rows) */
    double old_pred, new_pred;     /* predicted value in the baseline / now, in the metric's unit (0 if none) */
    double old_err_pct, new_err_pct; /* error vs measured, % (0 if not predicted) */
    double drift_pct;        /* CHANGED: (new_pred - old_pred) / old_pred * 100; else 0 */
    char reason[200];        /* NOW_SKIPPED: why the row is skipped now */
    int over;                /* 1: |drift_pct| > the threshold, or NOW_SKIPPED */
};

/**
 * One row whose predicted memory moved: predicted in both runs (a memory-only
 * scenario row included) and carrying `device_memory_gib` in both, with a
 * different value or verdict.
 */
struct mb_val_mem_drift_row {
    char id[MB_MEASURED_ID_LEN];
    int occurrence;               /* as in mb_val_drift_row */
    double old_gib, new_gib;      /* predicted device memory of the peak rank (`device_memory_gib`), GiB */
    double drift_pct;             /* (new_gib - old_gib) / old_gib * 100 */
    char old_verdict[12], new_verdict[12]; /* "fits", "at risk", "OOM" ("" if the baseline has none) */
    int verdict_changed;          /* 1: both verdicts known and different */
    int over;                     /* 1: |drift_pct| > the threshold, or verdict_changed */
};

/** Drift of a validation run against a baseline. Free with mb_validate_drift_free(). */
struct mb_val_drift {
    double threshold_pct;    /* as given */
    size_t n_old, n_new;     /* rows in the baseline / now */
    size_t n_kind[MB_DRIFT_REMOVED + 1]; /* rows per enum mb_val_drift_kind */
    size_t n_over;           /* rows past the threshold (CHANGED over it, and NOW_SKIPPED) */
    double max_abs_drift_pct; /* largest |drift_pct| of the CHANGED rows (0 if none) */
    double old_mape_pct, new_mape_pct; /* the baseline's mape_pct and this run's (NaN if none) */
    size_t n;                /* rows[]: every row that is not SAME: past the threshold first, then by |drift_pct|
                                descending, then kind and id */
    struct mb_val_drift_row *rows;
    /* memory: rows paired with `device_memory_gib` on both sides (a baseline from before mbsim predicted
       memory has none, and none of its rows is compared) */
    size_t n_mem_compared;        /* rows compared on memory */
    size_t n_verdict_changed;     /* of them, with a different verdict */
    size_t n_mem_over;            /* of them, past the threshold or with a different verdict */
    double max_abs_mem_drift_pct; /* largest |drift_pct| of mem_rows (0 if none) */
    size_t n_mem;                 /* mem_rows[]: the compared rows whose memory or verdict changed, past the
                                     threshold first, then by |drift_pct| descending, id */
    struct mb_val_mem_drift_row *mem_rows;
};

/**
 * @brief Compare the rows of a finished validation with a previous
 * `mbsim validate --json` output. Rows pair by id (and by occurrence when ids
 * repeat); predictions compare on the row's metric, and the predicted device
 * memory of the peak rank and its verdict where both sides have them.
 * @param[in]  now            summary after mb_validate_finish()
 * @param[in]  baseline_path  the JSON file
 * @param[in]  threshold_pct  |drift| above this (percent, >= 0) is past the threshold
 * @param[out] out            the report (empty on error)
 * @param[out] err            "path:L:C: invalid JSON: ..." (jansson's position),
 *                            "path: not an mbsim validate --json output (no 'rows' array)",
 *                            "path: rows[3]: 'id' is not a string",
 *                            "path: rows[3] (id 'x'): 'predicted' is not a number",
 *                            "path: rows[3] (id 'x'): 'memory_verdict' is not a string"
 *                            (the position of a well-formed value is not known: the JSON path is given)
 * @return 0, or -1 with err set.
 */
int mb_validate_drift(const struct mb_val_summary *now, const char *baseline_path, double threshold_pct,
                      struct mb_val_drift *out, struct mb_err *err);

/**
 * @brief Print the report: the row counts per kind, MAPE then and now, the
 * rows past the threshold and up to `top` further largest drifts (id, metric,
 * baseline and predicted value, drift %, error then and now), added, removed,
 * newly skipped (with the reason) and newly predicted rows, and a last line
 * "drift: N rows past P %" or "drift: none past P %".
 */
void mb_validate_drift_print(const struct mb_val_drift *d, const char *baseline_path, size_t top, FILE *fp);

/** @brief Free the report; accepts NULL; leaves it empty. */
void mb_validate_drift_free(struct mb_val_drift *d);

/* ---- building blocks, exposed for tests and for the CLI's messages ---- */

/**
 * @brief Apply the configuration a CSV row's notes column states in words, as
 * the published sources write it. Items are separated by ';' or ',' and
 * matched case-insensitively:
 *  - "HybridEP[ N SMs]" / "DeepEP": moe.dispatcher (and moe.dispatcher_sms);
 *  - "EP overlap", "EP overlap on", "EP comm overlap ON", "EP overlap + delayed
 *    wgrad": overlap.ep_comm on; an item that also says "off": off (delayed
 *    wgrad is not modelled);
 *  - "full-iteration CUDA graph" or "FULL_CUDA_GRAPH": cuda_graph full_iteration;
 *    "CUDA graph(s) [for] a+b" / "a and b" with known module names the model has
 *    (attn/attention, mlp, moe, moe_router, moe_preprocess, mamba): those modules;
 *    "CUDA graphs off": none.
 * Other items are ignored. Dispatcher and overlap apply only where a scenario
 * may ask for them (MoE model with ep > 1; overlap also needs pp = 1 or vpp > 1),
 * so a note never makes a row invalid.
 * @param[in,out] s        scenario built from the row (model, ep, pp, vpp set)
 * @param[in]      notes    the notes cell (may be NULL)
 * @param[out]     applied  comma-separated summary of what was set (may be NULL)
 * @param[in]      n        size of applied
 * @return the number of items recognised (applied, or said in `applied` to be not applicable).
 */
int mb_validate_apply_notes(struct mb_scenario *s, const char *notes, char *applied, size_t n);

/**
 * @brief Does a notes cell say the run was reported out of memory? True for
 * the word "OOM" (case-insensitive, not inside a longer word; "OOM_on_rank0"
 * counts) or "out of memory", unless the word before it is "no", "not",
 * "without" or "avoid(s)" ("no OOM").
 * @param[in] notes  the notes cell (NULL = empty)
 * @return 1 or 0.
 */
int mb_validate_notes_oom(const char *notes);

/**
 * @brief The measured peak memory a notes cell states: an item (split at ';')
 * "peak N GB" or "peak N GiB" with a plain number N (an approximate "~N" or a
 * bare "memory N GB" is not read). GB are decimal (10^9 bytes, what
 * Megatron-Bridge logs as "gigabytes").
 * @param[in]  notes  the notes cell (NULL = empty)
 * @param[out] gib    the value in GiB (0 when none)
 * @return 1 when a value was found, else 0.
 */
int mb_validate_notes_peak_memory(const char *notes, double *gib);

/**
 * @brief Exact statistics of absolute percentage errors.
 * @param[in]  err_pct  signed errors in percent (n values)
 * @param[out] mape     mean of |err_pct|
 * @param[out] median   median of |err_pct| (mean of the two middle values when n is even)
 * @param[out] max      max of |err_pct|
 * @return 0, or -1 when n == 0 (outputs set to NaN). Any out pointer may be NULL.
 */
int mb_validate_stats(const double *err_pct, size_t n, double *mape, double *median, double *max);

/**
 * @brief Map a CSV system name (DGX-H100, H100-SXM-80GB, DGX-B200, DGX-B300,
 * DGX-GB200, DGX-GB300, DGX-A100-80GB; case-insensitive) to an mbsim preset;
 * a shipped preset name as written (gb200_nvl72, ...) is that preset, and the
 * path of an existing system file (containing '/', ending in .yaml or .yml,
 * relative to the working directory) is that file.
 * @return the preset key (a static string, or csv_system itself for a preset
 *         name or a path), or NULL if unknown.
 */
const char *mb_validate_system_key(const char *csv_system);

/**
 * @brief Parse a CSV precision label such as "FP8-CS (per-tensor current
 * scaling)". Parenthesized remarks are dropped, except that "tensorwise
 * current scaling" means FP8-CS, "FP8-finer-granularity" means MXFP8 on
 * Blackwell systems and FP8-blockwise elsewhere, and "FP8 attention" switches
 * attention to FP8.
 * @param[in]  label       cell as written
 * @param[in]  system_key  preset from mb_validate_system_key (may be NULL)
 * @param[out] out         parsed recipe
 * @param[out] why         on failure: "precision not stated" or "precision 'x' not recognised"
 * @return 0 or -1.
 */
int mb_validate_precision(const char *label, const char *system_key, struct mb_precision *out,
                          char *why, size_t why_len);

/**
 * @brief Parse a CSV recompute cell: "" / "none..." -> none; "full..." -> full;
 * "selective: a, b" or a bare "a, b" -> selective with those modules
 * ("up_proj" = "mla_up_proj"); an empty list ("selective: []", "(none)",
 * "(no modules)") -> none; bracketed suffixes such as "[v0.6.0 ...]" and
 * parenthesized remarks are ignored; "selective" with no list -> core_attn
 * (Megatron's default --recompute-modules).
 * @param[out] gran     MB_RC_NONE / MB_RC_SELECTIVE / MB_RC_FULL
 * @param[out] modules  MB_RCM_* flags (0 unless selective)
 * @param[out] why      on failure: "recompute module 'x' not known"
 * @return 0 or -1.
 */
int mb_validate_recompute(const char *cell, enum mb_rc_gran *gran, unsigned *modules, char *why,
                          size_t why_len);

/* ---- recipe columns (shared/data/measured/README.md) ---- */

/** The recipe columns of a measured-runs CSV, in the CSV's order. */
enum mb_val_rcol {
    MB_VAL_RC_DISPATCHER, MB_VAL_RC_EP_OVERLAP, MB_VAL_RC_CUDA_GRAPH, MB_VAL_RC_RECOMPUTE_DETAIL,
    MB_VAL_RC_TP_OVERLAP, MB_VAL_RC_FSDP_IMPL, MB_VAL_RC_CPU_OFFLOAD, MB_VAL_RC_FP8_RECIPE,
    MB_VAL_RC_CE_FUSION, MB_VAL_RC_MTP_LAYERS, MB_VAL_RC_PP_LAYOUT, MB_VAL_RC_OTHER, MB_VAL_RC_COUNT
};

/** @brief The CSV header name of a recipe column ("dispatcher", ..., "other_recipe"); NULL if out of range. */
const char *mb_validate_recipe_column(enum mb_val_rcol col);

/**
 * What reading a row's recipe cells did, in words, for the row's note. Each
 * list is comma-separated; "" when nothing belongs there.
 */
struct mb_val_recipe {
    char applied[512];     /* knobs set to a value other than the simulator default ("dispatcher hybridep (32 SMs)") */
    char unmodelled[1024]; /* knobs the cells state that mbsim does not model ("delay_wgrad_compute", ...) */
    char defaulted[512];   /* empty (not determinable) columns: the simulator default is used */
    char not_applied[512]; /* stated but not applicable to the row's layout, or contradicting a layout column */
    char bad[1024];        /* unparseable cells: "column 'cell': why" */
    int n_bad;             /* cells in `bad` */
    int fp8pg_stated;      /* fp8_recipe said [fp8_param_gather=...] or [fp4_param_gather=...] */
    int fp8pg;             /* what it said (1 / 0); the CSV reader applies it once every column is read,
                              as Megatron allows it only with the distributed optimizer or FSDP */
};

/** @brief Empty all lists of r. */
void mb_validate_recipe_init(struct mb_val_recipe *r);

/**
 * @brief Read one recipe cell and apply what it states to the scenario.
 *
 * Vocabularies as shared/data/measured/README.md defines them; docs/validation.md
 * lists, per column, the scenario fields set and the knobs reported as not
 * modelled. `n/a (...)` cells do nothing. An empty cell leaves the scenario as
 * it is and names the column in r->defaulted. An unparseable cell (an unknown
 * dispatcher, CUDA-graph scope, recompute module, a number that is not one, a
 * malformed pipeline layout, ...) leaves the scenario as it is and says which
 * cell and why in r->bad. Knobs that do not apply to the row (a dispatcher
 * with ep = 1, EP overlap with pp > 1 and no vpp, TP overlap at tp = 1, an FSDP
 * flavour where the fsdp column says 3D, an fp8_recipe contradicting a specific
 * precision label) go to r->not_applied. The caller checks the result with
 * mb_scenario_check (the CSV reader reverts a cell whose result does not pass).
 *
 * fp8_recipe refines s->prec: a generic "fp8" label (per-tensor, recipe not
 * said) becomes fp8_cs / fp8_blockwise / mxfp8 as the recipe says, and
 * fp8_dot_product_attention switches attention to FP8. mtp_layers replaces the
 * model's MTP depth; apply it before pp_layout (the layout's 'm' must match).
 *
 * @param[in,out] s    scenario built from the row's layout columns (model, tp, pp, vpp, ep, strategy, prec set)
 * @param[in]     col  which column the cell is from
 * @param[in]     cell the cell as written (NULL = empty)
 * @param[in,out] r    lists appended to
 * @return 0 the cell was read (applied, n/a, or said in r), 1 the cell was empty, -1 unparseable.
 */
int mb_validate_recipe_cell(struct mb_scenario *s, enum mb_val_rcol col, const char *cell, struct mb_val_recipe *r);

/* ---- FLOP conventions of TFLOP/s-only rows ---- */

/** How a publisher counted the FLOPs behind a published TFLOP/s/GPU. */
enum mb_val_flops {
    MB_VAL_FLOPS_UNKNOWN,   /* source not recognised: compared as TFLOP/s in mbsim's own count */
    MB_VAL_FLOPS_SC21,      /* Narayanan et al., SC21 (arXiv:2104.04473) appendix: 96 B s l h^2 (1 + s/6h + V/16lh)
                               with activation recomputation, 72 B s l h^2 (1 + s/6h + V/12lh) without */
    MB_VAL_FLOPS_MLM_2024,  /* Megatron-LM training.py num_floating_point_operations of 2024 (v0.8/v0.9):
                               12 B s l h^2 [(1 + g/n + s/h) nd/h + (f/h) k c + (f_sh/h) c + V/2lh], c = 3/2 if
                               SwiGLU else 1; attention not halved for the causal mask */
    MB_VAL_FLOPS_MCORE      /* Megatron-Core >= 0.12 / Megatron-Bridge flop_utils: mb_model_flops (causal /2) */
};

/** @brief The convention of a CSV `source` cell (table in docs/validation.md). */
enum mb_val_flops mb_validate_flop_convention(const char *source);

/** @brief Short name of a convention: "unknown", "sc21", "megatron-lm-2024", "megatron-core". */
const char *mb_validate_flop_convention_name(enum mb_val_flops conv);

/**
 * @brief FLOPs of one global batch as the publisher counts them.
 * @param[in] m         model
 * @param[in] gbs, seq  sequences per step and tokens per sequence
 * @param[in] recompute 1 if the run recomputed activations (SC21 counts the recompute forward)
 * @param[out] why      when 0 is returned: why the convention does not cover the model
 * @return FLOPs, or 0 for MB_VAL_FLOPS_UNKNOWN or a model the formula does not describe
 *         (SC21: GPT with ffn = 4h and no GQA/MoE; 2024: no MLA, hybrid, SWA or mixed dense/MoE layers).
 */
double mb_validate_publisher_flops(enum mb_val_flops conv, const struct mb_model *m, double gbs, double seq,
                                   int recompute, char *why, size_t why_len);

/**
 * @brief Tokens/s/GPU implied by a published TFLOP/s/GPU: the step time is
 * t = F / (tflops * 1e12 * gpus), so tokens/s/GPU = gbs * seq / (t * gpus)
 * = gbs * seq * tflops * 1e12 / F.
 * @return tokens/s/GPU, or 0 when flops_per_step <= 0.
 */
double mb_validate_tflops_to_tokens(double tflops, double flops_per_step, double gbs, double seq);

#endif /* MB_VALIDATE_H */
