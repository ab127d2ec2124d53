/*
 * mb_validate_pairs.h -- A/B validation: does mbsim predict the effect of a change, not only the
 * level? (`mbsim validate CSV --pairs [FILE]`, docs/validation.md "A/B pairs").
 *
 * A pair is two predicted rows of a validated summary: a baseline A and a variant B. Found pairs
 * (mb_validate_pairs_find) are every two CSV rows with the same model, system, GPU count, GBS and
 * sequence length, measured on the same metric, that differ in at least one named knob column
 * (MB_VAL_AB_NKNOB: precision, MBS, TP, PP, CP, VPP, EP, ETP, FSDP, recompute and the recipe
 * columns other than the free-text other_recipe, which is listed when it differs too); A is the
 * row that comes first in the input. Found pairs with a LAYOUT-MISMATCH row are counted apart
 * (mismatch). Explicit pairs (mb_validate_pairs_read) name their rows by id in a file and are
 * all compared.
 *
 * Effects are on throughput: measured effect = T_B / T_A - 1 with T the row's measured tokens/s/GPU
 * or model TFLOP/s/GPU, or 1 / step time; predicted effect likewise from the predictions. The
 * effect error is predicted - measured effect, in percentage points. The sign is judged only on
 * pairs whose measured effect exceeds MB_PAIR_SIGN_MIN (smaller effects are within run-to-run noise).
 */
#ifndef MB_VALIDATE_PAIRS_H
#define MB_VALIDATE_PAIRS_H

#include <stddef.h>
#include <stdio.h>

#include "mb_util.h"
#include "mb_validate.h"

/** Measured |effect| above which a pair's sign is judged (fraction: 2 %). */
#define MB_PAIR_SIGN_MIN 0.02

/** One pair and its effects. */
struct mb_val_pair {
    size_t a, b;          /* indices in the summary's rows[]: baseline, variant */
    char knobs[200];      /* the knob columns that differ, comma-separated ("tp,pp"), or the
                             explicit pair's label */
    double meas_effect;   /* T_B / T_A - 1, measured (fraction) */
    double pred_effect;   /* the same from the predictions (fraction) */
    double err_pts;       /* (pred_effect - meas_effect) * 100, percentage points */
    int judged;           /* |meas_effect| > MB_PAIR_SIGN_MIN */
    int sign_right;       /* judged and the predicted effect has the measured sign */
};

/** Statistics of a set of pairs (all, or one knob label). */
struct mb_val_pair_stats {
    char knobs[200];      /* the label ("" for all pairs) */
    size_t n;             /* pairs */
    size_t n_judged;      /* pairs with |measured effect| > MB_PAIR_SIGN_MIN */
    size_t n_sign_right;  /* of them, with the right sign */
    double median_abs_err_pts; /* median |err_pts| (NaN if n = 0) */
    double mean_abs_err_pts;   /* mean |err_pts| (NaN if n = 0) */
};

/** The pairs of a summary. Owned arrays: mb_validate_pairs_free(). */
struct mb_val_pairs {
    size_t n;
    struct mb_val_pair *p;       /* sorted by |err_pts| descending, then input order */
    size_t n_unpredicted;        /* found or named pairs left out: a row skipped (or memory only) */
    struct mb_val_pair_stats all;
    size_t n_by_knob;
    struct mb_val_pair_stats *by_knob; /* per label: most pairs first, then label */
    struct mb_val_pair_stats unnamed;  /* found pairs whose rows differ in other_recipe alone (free text: a
                                          release, or settings no column names), not in p[] nor in all */
    struct mb_val_pair_stats mismatch; /* found pairs with a LAYOUT-MISMATCH row (recipe_match: the recipe's
                                          layout is not the published one, so which layout ran is in doubt;
                                          set apart as validate sets those rows' MAPE apart), not in p[]
                                          nor in all */
};

/**
 * @brief Find every A/B pair among a finished summary's CSV rows (see the file comment).
 * @param s    summary after mb_validate_finish()
 * @param out  filled; free with mb_validate_pairs_free()
 */
void mb_validate_pairs_find(const struct mb_val_summary *s, struct mb_val_pairs *out);

/**
 * @brief Check, before a (long) validation, that path is a readable pairs file with at least one
 * line that is neither blank nor a '#' comment (the ids are checked by mb_validate_pairs_read).
 * @param[out] err  "FILE: cannot open (...)", "FILE:L:1: no pairs: ..."
 * @return 0 or -1.
 */
int mb_validate_pairs_check(const char *path, struct mb_err *err);

/**
 * @brief Read explicit pairs: one per line, "A_ID,B_ID[,LABEL]" (commas; surrounding blanks
 * trimmed); blank lines and lines starting with '#' are skipped. Each id must name exactly one
 * row of the summary. LABEL (default: the differing knob columns of two CSV rows, else
 * "explicit") groups the pairs.
 * @param[out] out  filled (free with mb_validate_pairs_free(), also on error)
 * @param[out] err  "FILE:L:C: id 'X' names no row of the validated input", "... names N rows",
 *                  "FILE:L:C: expected 'A_ID,B_ID[,LABEL]'", "FILE:L:C: a pair of a row with itself",
 *                  "FILE:L:1: no pairs: ..." (only blank and comment lines), "FILE: cannot open (...)"
 * @return 0 or -1.
 */
int mb_validate_pairs_read(const struct mb_val_summary *s, const char *path, struct mb_val_pairs *out,
                           struct mb_err *err);

/** @brief Print the pairs: summary, per knob label, then every pair worst first. */
void mb_validate_pairs_print_text(const struct mb_val_summary *s, const struct mb_val_pairs *p, FILE *fp);

/**
 * @brief Print the pairs as one JSON object (n_pairs, n_judged, sign_right_pct,
 * median_abs_err_pts, mean_abs_err_pts, n_unpredicted, by_knob[], pairs[]; docs/validation.md).
 * @return 0, or -1 if writing fails.
 */
int mb_validate_pairs_print_json(const struct mb_val_summary *s, const struct mb_val_pairs *p, FILE *fp);

/** @brief Free what mb_validate_pairs_find / _read filled (a zeroed struct is fine). */
void mb_validate_pairs_free(struct mb_val_pairs *p);

#endif
