/*
 * mb_tune.h -- the best configuration of a scenario under the fit-first rules
 * of the practitioner guide (shared/docs/seed-moe-vlm-training-guide.md,
 * "Fit-First Tuning Order"), found by search, explained in the guide's order.
 *
 * Search: the grid of the controls the guide tunes -- strategy (FSDP or 3D),
 * EP, TP, PP, recompute (none, the selective boundaries the model has, full),
 * MBS, dispatcher and CUDA-graph scope -- built as a sweep (mb_sweep.h) over
 * the starting scenario and run with mb_sweep_screen, whose top-K guarantee
 * makes the K best fitting configurations those of simulating every one of
 * them. Workload, GBS, precision, sequence shape and trainable parameters stay
 * fixed; a combination Megatron-Core refuses (mb_scenario_check, with
 * mb_megatron_rules.h) is an invalid row, never a candidate. Then, last as
 * the guide says, communication overlap (overlap.ep_comm, overlap.tp_comm,
 * FSDP prefetch) is tried on the winner and kept when it fits and pays.
 *
 * Explanation: the winner's value of each control in the guide's order (EP,
 * TP/PP, recompute, MBS, dispatcher, CUDA graphs), each against the other
 * values of that control with everything else the winner's (their
 * throughput, or why not: out of memory, invalid, screened out); then the
 * winner against the runner-up and against the starting scenario term by
 * term (mb_compare.h).
 */
#ifndef MB_TUNE_H
#define MB_TUNE_H

#include <stdio.h>

#include "mb_scenario.h"
#include "mb_step.h"
#include "mb_sweep.h"

#define MB_TUNE_RUNNERS_UP 3
#define MB_TUNE_MAX_SET 16

/** What mb_tune_opts searches and how. */
struct mb_tune_opts {
    int jobs;                       /* worker threads for the search (< 1 = 1); the result does not depend on it */
    int n_set;                      /* axes to replace, "key=v1,v2,..." as `sweep --set` (mb_sweep_set) */
    const char *set[MB_TUNE_MAX_SET];
};

struct mb_tune_result {
    struct mb_scenario best;                          /* owned; mb_scenario_free */
    struct mb_result best_r;
    struct mb_result start_r;                         /* the starting scenario (may be OOM) */
    int start_ok;                                     /* starting scenario simulated */
    int n_runners;                                    /* runners-up: the next best of the grid */
    struct mb_scenario runner[MB_TUNE_RUNNERS_UP];    /* owned */
    struct mb_result runner_r[MB_TUNE_RUNNERS_UP];
    double grid_best_tput;                            /* tokens/s/GPU of the grid's best (before the overlap
                                                         step), at the sweep TSV's 6 digits */
    size_t configurations;                            /* grid size */
    size_t invalid;                                   /* of them, refused by the layout and Megatron rules */
    struct mb_sweep_screen_stats screen;              /* bounded / simulated / screened out */
    int evaluations;                                  /* simulations run (grid and overlap step) */
};

/**
 * @brief The grid mb_tune searches for `start`: a sweep whose base is `start`
 * with the distributed optimizer on, vpp 1, no pipeline layout, no overlap,
 * no recompute options beyond granularity and modules, Megatron FSDP defaults,
 * and whose axes are the controls above (their values in docs/tune.md), each
 * then replaced by o->set.
 * @param[out] sw  the sweep (mb_sweep_free)
 * @return 0, or -1 with err (a bad --set).
 */
int mb_tune_grid(const struct mb_scenario *start, const struct mb_tune_opts *o, struct mb_sweep *sw, struct mb_err *err);

/**
 * @brief The `mbsim sweep` options that give the same grid as mb_tune_grid
 * ("--set parallel.strategy=3d,fsdp --set ..."), for a reader to run the
 * exact sweep of what tune searched (on a scenario file that states the base
 * settings mb_tune_grid sets).
 */
void mb_tune_sweep_args(const struct mb_sweep *sw, char *buf, size_t len);

/**
 * @brief Tune `start` (a loaded, checked scenario); the search, the overlap
 * step and the explanation are logged to `log`.
 * @return 0, or -1 with err when no configuration of the grid fits.
 */
int mb_tune_opts(const struct mb_scenario *start, const struct mb_tune_opts *o, FILE *log, struct mb_tune_result *out,
                 struct mb_err *err);

/** @brief mb_tune_opts with one thread and tune's own grid. */
int mb_tune(const struct mb_scenario *start, FILE *log, struct mb_tune_result *out, struct mb_err *err);

void mb_tune_free(struct mb_tune_result *t);

/* The recommendation is written with mb_scenario_write_yaml (mb_scenario.h). */

#endif /* MB_TUNE_H */
