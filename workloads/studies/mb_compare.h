/*
 * mb_compare.h -- two simulated configurations side by side, term by term:
 * the settings that differ, the headline metrics, the time breakdown and the
 * memory terms, each printed with A, B, B - A and the term's share of the
 * total's change, largest change first. Used by `mbsim compare` and by
 * `mbsim tune` to explain its recommendation (docs/cli.md).
 */
#ifndef MB_COMPARE_H
#define MB_COMPARE_H

#include <stdio.h>

#include "mb_scenario.h"
#include "mb_step.h"

/**
 * @brief Print "path: A -> B" for every scenario key whose value differs, as
 * mb_scenario_write_yaml states the two (at most 40 lines, then a count).
 */
void mb_compare_settings(const struct mb_scenario *a, const struct mb_scenario *b, FILE *fp);

/** @brief One headline row: name, A, B, B - A and the change in % of |A| (none when A is 0). */
void mb_compare_row(const char *name, double a, double b, const char *unit, FILE *fp);

/** @brief Step time (s), tokens/s/GPU, model TFLOP/s/GPU, MFU (%), peak device memory (GiB), memory verdict. */
void mb_compare_headline(const struct mb_result *a, const struct mb_result *b, FILE *fp);

/** @brief The time breakdown (mb_result.breakdown, seconds per step), largest |B - A| first. */
void mb_compare_time(const struct mb_result *a, const struct mb_result *b, FILE *fp);

/** @brief The memory terms of each peak rank (GiB), largest |B - A| first. */
void mb_compare_memory(const struct mb_memory *a, const struct mb_memory *b, FILE *fp);

#endif /* MB_COMPARE_H */
