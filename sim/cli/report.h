/*
 * report.h -- text and JSON reports of one simulated step (CLI only).
 */
#ifndef MB_REPORT_H
#define MB_REPORT_H

#include <stdio.h>

#include "mb_step.h"

/** @brief Human-readable report: headline metrics, memory verdict, breakdown. */
void mb_report_text(const struct mb_scenario *s, const struct mb_result *r, int memory_detail, FILE *fp);

/** @brief One JSON object (keys documented in docs/cli.md). @return 0 or -1 on write error. */
int mb_report_json(const struct mb_scenario *s, const struct mb_result *r, FILE *fp);

#endif
