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

#include "mb_outfile.h"
#include "mb_sweep.h"

struct mb_swout {
    const struct mb_sweep *sw;
    struct mb_outfile tsv_out, json_out; /* temporary files renamed at the end (mb_outfile.h) */
    FILE *tsv, *json;               /* their streams; NULL: not written */
    int header;                     /* TSV header row */
    int published;                  /* the TSV replaced its file (mb_swout_publish) */
    size_t json_rows;               /* rows written to the JSON so far */
    int failed;                     /* a write failed */
};

/** Where a sweep writes ("-" = stdout, NULL = not written). */
struct mb_swout_paths {
    const char *tsv, *json;
    const char *tsv_may_replace;    /* the one input the TSV may replace (--resume FILE), or NULL */
};

/**
 * @brief Open the outputs and write what precedes the rows: the TSV's
 * provenance line and, when header != 0, its header row; the JSON up to
 * `"rows": `. Each output is a temporary file beside its path (mb_outfile.h):
 * the JSON replaces its file at mb_swout_close, the TSV at mb_swout_publish
 * (as soon as it holds every row of the file it replaces) or at the close.
 * An output that is an input (the scenario, a resumed TSV other than
 * tsv_may_replace) or given twice is refused.
 * @return 0, or -1 with the reason printed on stderr.
 */
int mb_swout_open(struct mb_swout *o, const struct mb_sweep *sw, const struct mb_sweep_prov *prov,
                  const struct mb_swout_paths *paths, int header, size_t shard, size_t nshards);

/**
 * @brief Let the TSV replace its file now and go on writing there, so the
 * rows show while the sweep runs (docs/sweep.md); call it once the TSV holds
 * every row of the file it replaces. 0, or -1 (printed; the old file stays).
 */
int mb_swout_publish(struct mb_swout *o);

/** @brief Give both outputs up: their temporary files are removed, nothing is replaced. */
void mb_swout_abort(struct mb_swout *o);

/**
 * @brief Write one row to both outputs (buffered: mb_swout_flush, publish or
 * close pushes it out).
 */
void mb_swout_row(struct mb_swout *o, const struct mb_sweep_row *r);

/**
 * @brief Flush both outputs (a sweep calls it once per batch of rows handed
 * on, at most every 0.1 s, not per row: a write per configuration was 2 % of
 * the moe256 grid's CPU time). A failure is kept for close.
 */
void mb_swout_flush(struct mb_swout *o);

/**
 * @brief Finish and close: the JSON's `top` and `pareto` over rows[0..n) (the
 * rows written), and `"interrupted": true` when complete == 0; each output
 * flushed, synced and renamed over its path (a TSV whose writes failed is not).
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
