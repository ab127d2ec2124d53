/*
 * mb_tune.h -- the practitioner guide's fit-first tuning order, automated
 * (shared/docs/seed-moe-vlm-training-guide.md, "Fit-First Tuning Order").
 *
 * Starting from a scenario, each step changes one control and keeps what
 * fits and is fastest: (1) the largest topology-compatible EP that shards the
 * experts, (2) the smallest TP (and, for 3D, PP) that fits with full
 * recompute as the fit diagnostic, (3) no / selective / full recompute,
 * (4) MBS up while it fits and pays, (5) TP down where activations were the
 * reason, (6) HybridEP / DeepEP / AllToAll on the same topology, (7) EP and TP
 * communication overlap and CUDA graphs last. Workload, GBS, precision,
 * sequence shape and trainable parameters stay fixed. FSDP and 3D-parallel
 * paths are tuned separately and compared on tokens/s/GPU (same useful work).
 */
#ifndef MB_TUNE_H
#define MB_TUNE_H

#include <stdio.h>

#include "mb_scenario.h"
#include "mb_step.h"

#define MB_TUNE_RUNNERS_UP 3

struct mb_tune_result {
    struct mb_scenario best;                          /* owned; mb_scenario_free */
    struct mb_result best_r;
    struct mb_result start_r;                         /* the starting scenario (may be OOM) */
    int start_ok;                                     /* starting scenario simulated */
    int n_runners;
    struct mb_scenario runner[MB_TUNE_RUNNERS_UP];    /* owned */
    struct mb_result runner_r[MB_TUNE_RUNNERS_UP];
    int evaluations;                                  /* simulations run */
};

/**
 * @brief Tune `start` (a loaded, checked scenario). Every step is logged to
 * `log` (what was tried, its numbers, what was kept and why).
 * @return 0, or -1 with err when no configuration fits at all.
 */
int mb_tune(const struct mb_scenario *start, FILE *log, struct mb_tune_result *out, struct mb_err *err);

void mb_tune_free(struct mb_tune_result *t);

/* The recommendation is written with mb_scenario_write_yaml (mb_scenario.h). */

#endif /* MB_TUNE_H */
