/*
 * sweep_out.h -- what a sweep writes (CLI only; shared by `mbsim sweep` and
 * `mbsim merge`, docs/sweep.md): the TSV and the JSON object written row by
 * row as rows finish (flushed after each row, so an interrupted run keeps
 * them), and the text summary (counts, reasons, ranking, Pareto front).
 *
 * Rows must come in ascending configuration order; the bytes are then those of
 * one mb_sweep_write_tsv call and of one jansson dump (JSON_INDENT(2),
 * JSON_REAL_PRECISION(6)) of the whole object.
 */
#ifndef MB_SWEEP_OUT_H
#define MB_SWEEP_OUT_H

#include <stdio.h>

#include "mb_sweep.h"

struct mb_swout {
    const struct mb_sweep *sw;
    FILE *tsv, *json;               /* NULL: not written */
    int tsv_owned, json_owned;      /* 1: fclose at the end (not stdout) */
    int header;                     /* TSV header row */
    size_t json_rows;               /* rows written to the JSON so far */
    int failed;                     /* a write failed */
};

/**
 * @brief Open the outputs ("-" = stdout, NULL = none) and write what precedes
 * the rows (the TSV header when header != 0; the JSON up to `"rows": `).
 * @return 0, or -1 with "cannot write PATH" printed on stderr.
 */
int mb_swout_open(struct mb_swout *o, const struct mb_sweep *sw, const char *tsv, const char *json, int header,
                  size_t shard, size_t nshards);

/** @brief Write one row to both outputs and flush them. */
void mb_swout_row(struct mb_swout *o, const struct mb_sweep_row *r);

/**
 * @brief Finish and close: the JSON's `top` and `pareto` over rows[0..n) (the
 * rows written), and `"interrupted": true` when complete == 0.
 * @return 0, or -1 when a write failed (printed on stderr).
 */
int mb_swout_close(struct mb_swout *o, const struct mb_sweep_row *rows, size_t n, int top, int complete);

/**
 * @brief The text summary of rows[0..n) (index order) of a sweep of `total`
 * configurations: counts, axes, invalid/failed by reason, top N, Pareto front.
 */
void mb_swout_summary(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, size_t total, int top,
                      FILE *fp);

#endif /* MB_SWEEP_OUT_H */
