/*
 * mb_fit.h -- fit the framework-time model (calibration `framework:`,
 * mb_calib.h "Framework-time model") to measured runs, and cross-validate it.
 *
 * Rows come from mb_validate (a measured-runs CSV becomes checked scenarios
 * and zero-shot predictions through its public API); a fit re-simulates the
 * rows of one GPU type with candidate parameter sets -- a view of the base
 * table with its framework section replaced (mb_calib_framework_set), passed
 * as struct mb_step_opts.cal, so nothing is written per evaluation -- and
 * minimizes
 *
 *     sum_i H(ln(pred_i / meas_i)) / sigma_obs^2  +  sum_j ((theta_j - default_j) / sigma_j)^2
 *
 * with Huber's loss H(r) = r^2 for |r| <= MB_FIT_HUBER, 2 delta |r| - delta^2
 * beyond (a row further off than ~35 % -- a run whose cost the step does not
 * model -- pulls with a bounded force instead of dominating the fit), where sigma_obs (MB_FIT_SIGMA_OBS = 0.15) is the log error one measured row
 * is trusted to: the same published configuration varies by up to +-40 %
 * between software releases (docs/validation.md), about 0.15 in ln as one
 * standard deviation. So a parameter moves one sigma_j when that lowers the
 * rows' squared log errors by 0.0225, e.g. three rows by 9 % each;
 * inside each parameter's bounds (mb_calib_fw_info: defaults, bounds, sigma),
 * by a projected Levenberg-Marquardt (Gauss-Newton) iteration: a forward-
 * difference Jacobian at the defaults, Broyden updates after every
 * evaluation, bounds enforced by an active set. The prior keeps three runs
 * from overfitting four parameters. Deterministic: the same rows give the same
 * parameters whatever the thread count. Simulations run on `jobs` threads
 * (mb_step_simulate is reentrant).
 *
 * Cross-validation (mb_fit_cv): leave one model family out -- for each family
 * and GPU type, fit on that GPU's rows of every other family and predict the
 * family's rows -- reported next to the zero-shot figure (shipped tables,
 * nothing fitted). The Jacobian at the defaults is computed once per row and
 * shared by every fold.
 */
#ifndef MB_FIT_H
#define MB_FIT_H

#include <stddef.h>
#include <stdio.h>

#include "mb_calib.h"
#include "mb_scenario.h"
#include "mb_util.h"
#include "mb_validate.h"

/** One measured row kept for fitting. */
struct mb_fit_row {
    struct mb_scenario s;    /* owned copy of the checked scenario validate simulated */
    char id[MB_MEASURED_ID_LEN], model[64];
    char family[32];         /* mb_fit_family(model) */
    char gpu[32];            /* s.system.gpu */
    char metric[32];         /* MB_VAL_TOKENS / MB_VAL_STEP / MB_VAL_TFLOPS */
    double measured;
    double zero_shot;        /* validate's prediction (the GPU's table as shipped, its framework section included) */
    unsigned inert;          /* MB_FIT_PARAM bits of the parameters the row's simulation never reads
                                (mb_fit_inert_params): its prediction does not move with them */
    size_t same;             /* the first row of the set with this row's scenario and metric (itself if
                                none, mb_fit_set_finish): one simulation gives both predictions */
    int shares;              /* 1: another row of the set simulates the same run */
    /* private: residual and Jacobian at the defaults, shared by every fit (lin_ok); lin_have: the
     * columns of J0 computed so far (a fit computes those of its parameters only), lin_v: the
     * parameters the defaults run used (later columns step from them); cost_s: wall seconds of the
     * row's last simulation (the pool starts the longest first) */
    int lin_ok;
    unsigned lin_have;
    double r0, J0[MB_FW_COUNT], lin_v[MB_FW_COUNT];
    double cost_s;
};

/** Rows of one or more CSVs; free with mb_fit_set_free(). */
struct mb_fit_set {
    struct mb_fit_row *rows;
    size_t n, cap;
    struct mb_val_summary sum; /* the zero-shot validation of every row (skipped ones included) */
    int jobs;                  /* threads for simulations (0: online CPUs) */
    const char *sibling_table; /* the table file a row of a sibling GPU (mb_calib_siblings) of the fit's
                                  base is priced with, its framework section replaced; NULL: that GPU's
                                  shipped table (mb_fit_cv sets it to mb_fit_opts.table) */
};

/** @brief Empty set. */
void mb_fit_set_init(struct mb_fit_set *set);

/**
 * @brief Validate a measured-runs CSV (mb_validate_add_csv) and keep every
 * predicted row's scenario. Rows whose scenario names its own calibration
 * table are not kept (a fit replaces the GPU's table).
 * @return 0, or -1 with the validate error.
 */
int mb_fit_add_csv(struct mb_fit_set *set, const char *path, struct mb_err *err);

/**
 * @brief Finish the zero-shot summary (mb_validate_finish) and find the rows
 * that simulate the same run (mb_fit_row.same: the scenario equal but for its
 * name, file, measured values and warnings, the metric and GPU equal, and the
 * zero-shot prediction the same to the bit); call after the last add.
 */
void mb_fit_set_finish(struct mb_fit_set *set);

void mb_fit_set_free(struct mb_fit_set *set);

/**
 * @brief Model family of a model key, for leave-one-family-out: keys starting
 * with "gpt_oss" are "gpt-oss"; otherwise the key's leading letters, lower
 * case ("llama3.1_405b" -> "llama", "qwen3_30b_a3b" -> "qwen", "deepseek_v3"
 * -> "deepseek", "nemotron_3_nano_30b_a3b" -> "nemotron", "gpt_sc21_1t" ->
 * "gpt", "kimi_k2" -> "kimi").
 */
void mb_fit_family(const char *model, char *out, size_t n);

/**
 * @brief The framework parameters (MB_FIT_PARAM bits) that a simulation of checked scenario s
 * never reads, so that its prediction is the same, to the bit, whatever their values:
 * kernel_moe without a MoE decoder layer (the step adds it only to the kernels of ops of an
 * MoE block, workloads/step/framework.c mb_fw_kernels, and only MoE layers build those,
 * workloads/step/model_ops.c and moe.c), kernel_graph without CUDA graphs (s->cuda_graph = 0:
 * no op is captured, mb_ops_region). A fit neither simulates a row's Jacobian column of such a
 * parameter (the difference is 0) nor re-simulates the row for a step in it alone.
 */
unsigned mb_fit_inert_params(const struct mb_scenario *s);

/** Log error one measured row is trusted to (the weight of the data against the prior). */
#define MB_FIT_SIGMA_OBS 0.15
/** Huber threshold of the fit's loss on ln(pred / meas): ln 1.35 ~ 0.3. */
#define MB_FIT_HUBER 0.3

/** Bit of each parameter a fit may move (the default set: all but kernel_graph). */
#define MB_FIT_PARAM(p) (1u << (p))
#define MB_FIT_DEFAULT_PARAMS                                                                                    \
    (MB_FIT_PARAM(MB_FW_TENSOR_FRACTION) | MB_FIT_PARAM(MB_FW_MEMBOUND_EFF) | MB_FIT_PARAM(MB_FW_KERNEL_EAGER) |  \
     MB_FIT_PARAM(MB_FW_OVERLAP_SLOWDOWN) | MB_FIT_PARAM(MB_FW_STEP_OVERHEAD) | MB_FIT_PARAM(MB_FW_HOST_KERNEL) |       \
     MB_FIT_PARAM(MB_FW_KERNEL_MOE))

struct mb_fit_opts {
    unsigned params;         /* MB_FIT_PARAM bits to fit; 0 = MB_FIT_DEFAULT_PARAMS; others stay at the default */
    int max_iter;            /* 0 = 8 */
    double prior_weight;     /* multiplies the prior term; 0 = 1 (tests use a small one to check recovery) */
    int fit_unfitted;        /* mb_fit_cv: fit every GPU, also one whose shipped table keeps the defaults
                                (0: such a GPU is cross-validated as shipped, at the defaults) */
    const char *table;       /* mb_fit_cv: this table file for every GPU instead of each GPU's shipped one
                                (NULL: shipped; tests use a fixture) */
};

/** Rows reported per parameter as the ones that pin it (mb_fit_result.pin_row). */
#define MB_FIT_PINS 3

struct mb_fit_result {
    struct mb_calib_framework prior; /* the defaults the fit starts from and is pulled toward */
    struct mb_calib_framework fit;   /* fitted parameters (unfitted ones = prior) */
    size_t n_rows;
    double obj_prior, obj_fit;       /* objective at the defaults and at the fit, in the units the fit works in:
                                      * the objective above times MB_FIT_SIGMA_OBS^2 */
    double mape_prior, mape_fit;     /* MAPE (%) of the fitted rows at the defaults / the fit */
    double median_prior, median_fit; /* signed median error (%) */
    int iterations, sims;            /* accepted steps; simulations run */
    double wall_s;
    /* which rows pin each fitted parameter: leave-one-out, linearized at the fit (one Gauss-Newton step
     * of the objective without the row, from the fit, with the Jacobian the fit ended with; bounds
     * enforced): no simulation, so a first-order figure */
    double loo_lo[MB_FW_COUNT], loo_hi[MB_FW_COUNT]; /* fitted value's range over the left-out rows */
    size_t pin_row[MB_FW_COUNT][MB_FIT_PINS];        /* indices in set->rows: the rows whose removal moves the
                                                        parameter most, largest first */
    double pin_shift[MB_FW_COUNT][MB_FIT_PINS];      /* the move (parameter units; 0: fewer rows) */
};

/**
 * @brief Fit the parameters to rows idx[0..n) of set, all of base's GPU type or its siblings
 * (mb_calib_siblings: one parameter set for the group), each row priced with its own GPU's kernel
 * tables -- base for base's GPU, set->sibling_table or the shipped table for a sibling -- and the
 * candidate framework section. n = 0: the defaults, nothing run.
 * The reported MAPEs come from the normal simulation (validate's options).
 * @return 0, or -1 when a row's GPU is not base's nor a sibling, or no row simulates.
 */
int mb_fit_framework(struct mb_fit_set *set, const size_t *idx, size_t n, const struct mb_calib *base,
                     const struct mb_fit_opts *o, struct mb_fit_result *res, struct mb_err *err);

/**
 * @brief Predict row i of set with table `base` and framework parameters fw (NULL: base's own).
 * @return the predicted value of the row's metric, or NAN when the simulation fails.
 */
double mb_fit_predict(const struct mb_fit_set *set, size_t i, const struct mb_calib *base,
                      const struct mb_calib_framework *fw);

/** Cross-validation figures of one group (a GPU, a family or all rows). */
struct mb_fit_cv_group {
    char name[32];
    size_t n;
    double mape_zero, mape_cv;       /* % */
    double median_zero, median_cv;   /* signed median error, % */
};

struct mb_fit_cv {
    size_t n_rows;
    struct mb_fit_cv_group all;
    struct mb_fit_cv_group *by_gpu, *by_family;
    size_t n_gpu, n_family;
    double *err_cv;                  /* [set->n] CV error (%) of each row */
    double *err_zero;                /* [set->n] zero-shot error (%): the defaults, nothing fitted */
    size_t n_fits;                   /* (family, GPU) folds fitted */
    size_t n_transfer;               /* rows predicted with mb_fit_transfer of the other GPUs' fits of
                                        the fold (no other family on their GPU) */
    size_t n_default;                /* rows predicted with the defaults (no other GPU fitted the fold,
                                        or a GPU whose shipped table is not fitted) */
    size_t n_unfitted_gpus;          /* GPUs cross-validated at the defaults, as shipped */
    int sims;
    double wall_s;
};

/**
 * @brief Leave-one-family-out cross-validation over every row of set: for each
 * family F and GPU G with rows, fit on G's rows of the other families (with
 * G's shipped table) and predict F's rows on G with the fit; a GPU whose rows
 * are all of F predicts them with mb_fit_transfer of the other GPUs' fits of
 * the same fold (F held out everywhere; none: the defaults). A GPU whose
 * shipped table keeps the defaults predicts its rows at the defaults (unless
 * o->fit_unfitted). Free with mb_fit_cv_free().
 * @return 0 or -1 (a table does not load).
 */
int mb_fit_cv(struct mb_fit_set *set, const struct mb_fit_opts *o, struct mb_fit_cv *cv, struct mb_err *err);

/**
 * @brief The transfer prior of a GPU type without measured runs of its own:
 * each parameter p in `want` is the median (mb_fit_signed_median) of fits[i].v[p]
 * over the fits whose params[i] has p; a parameter no fit moved keeps prior's
 * value. The framework parameters describe software on the GPU timeline
 * (kernel_eager, kernel_moe, step_overhead, host_kernel) and sustained rates
 * (tensor_fraction, membound_eff, overlap_slowdown) that the fitted GPU types
 * share in range (docs/calibration.md, the fitted table): the median is the
 * estimate that assumes nothing about which type the new one resembles.
 * out may not alias prior.
 */
void mb_fit_transfer(const struct mb_calib_framework *fits, const unsigned *params, size_t n, unsigned want,
                     const struct mb_calib_framework *prior, struct mb_calib_framework *out);

/** Rows listed by mb_fit_cv_print as the worst held out. */
#define MB_FIT_WORST 12

/**
 * @brief Print the CV report of set (zero-shot vs cross-validated, per GPU and
 * per family, then the MB_FIT_WORST rows with the largest cross-validated error).
 */
void mb_fit_cv_print(const struct mb_fit_cv *cv, const struct mb_fit_set *set, FILE *fp);

void mb_fit_cv_free(struct mb_fit_cv *cv);

/** @brief Signed median of x[0..n) (mean of the two middle values for even n); NAN when n = 0. */
double mb_fit_signed_median(const double *x, size_t n);

#endif /* MB_FIT_H */
