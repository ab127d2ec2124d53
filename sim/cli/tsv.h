/*
 * tsv.h -- a tab-separated table with a header row, read with libcsv (CLI
 * only; `mbsim plot` reads sweep and point tables with it, docs/plots.md).
 *
 * Every row must have as many fields as the header: a row that does not is an
 * error naming its line, never skipped. Blank lines, lines starting with '#'
 * (the provenance line of a sweep's TSV) and a trailing '\r' are ignored.
 * Fields may be quoted as in CSV (mbsim writes none).
 */
#ifndef MB_TSV_H
#define MB_TSV_H

#include <stddef.h>

struct mb_tsv {
    int ncol;
    char **col;                     /* header names (owned) */
    size_t nrow;
    char ***cell;                   /* cell[row][col] (owned) */
    int *line;                      /* 1-based line of each row */
};

/**
 * @brief Read path ("-" = stdin): a regular file (mb_input_open).
 * @param[out] msg  on error: "FILE:LINE: what was expected" (or "FILE: cannot open: ...")
 * @return 0, or -1 with msg set and t empty.
 */
int mb_tsv_read(const char *path, struct mb_tsv *t, char *msg, size_t len);

/** @brief Index of the column named name, or -1. */
int mb_tsv_col(const struct mb_tsv *t, const char *name);

/** @brief Free what t owns; accepts an empty table. */
void mb_tsv_free(struct mb_tsv *t);

#endif /* MB_TSV_H */
