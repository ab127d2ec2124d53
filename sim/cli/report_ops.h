/*
 * report_ops.h -- the per-op table of `mbsim run --ops` and the `ops` array
 * of `mbsim run --json` (CLI only).
 */
#ifndef MB_REPORT_OPS_H
#define MB_REPORT_OPS_H

#include <stdio.h>

#include <jansson.h>

#include "mb_step.h"

/**
 * @brief Text table of r->ops, longest first: op, direction, count per step,
 * seconds per step, share of the step time, achieved TFLOP/s (GEMM,
 * attention) or GB/s (memory-bound, communication) and its fraction of the
 * op's peak rate. Communication overlaps compute, so shares need not add up
 * to 100 %. Prints nothing when r has no op table.
 */
void mb_report_ops_text(const struct mb_result *r, FILE *fp);

/**
 * @brief r->ops as a JSON array of objects with keys op, direction, comm,
 * count, time_s, share, flop, bytes, achieved_tflops, achieved_gbps,
 * fraction_of_peak (keys docs/cli.md). New reference; NULL when r has none.
 */
json_t *mb_report_ops_json(const struct mb_result *r);

#endif
