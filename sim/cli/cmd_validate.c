/*
 * cmd_validate.c -- `mbsim validate FILE.csv|FILE.yaml...`: predict measured
 * runs and report the errors (docs/validation.md); --cv family cross-validates
 * the framework-time fit, --baseline reports the drift from an earlier run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_fit.h"
#include "mb_validate.h"
#include "mb_validate_pairs.h"
#include "mb_input.h"
#include "mb_outfile.h"

#define EXIT_DRIFT 3 /* validate --baseline: predictions or memory moved past the threshold */

/* validate --baseline OLD.json [--drift-threshold PCT] */
#define DRIFT_DEFAULT_PCT 5.0
struct validate_drift_opts {
    const char *baseline;
    double threshold_pct;
    int threshold_given;
};

/* validate --recipes FILE|DIR (repeatable) */
struct validate_recipes {
    const char **paths;
    int n;
};

/* validate --pairs [FILE] */
struct validate_pairs_opt {
    int on;           /* --pairs given */
    const char *file; /* its explicit pairs file, NULL: find the pairs */
};

/* validate --junit FILE --max-error PCT */
struct validate_junit_opt {
    const char *file;
    double max_err_pct;
    int max_given;
};

/* Register the recipe files before the CSVs are read. */
static int mb_cli__add_recipes(struct mb_val_summary *sum, const struct validate_recipes *rp)
{
    struct mb_err err;
    mb_err_clear(&err);
    for (int i = 0; i < rp->n; i++)
        if (mb_validate_add_recipes(sum, rp->paths[i], &err)) {
            mb_cli_print_err(&err);
            return -1;
        }
    return 0;
}

static void mb_cli__usage_validate(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim validate FILE.csv|FILE.yaml... [--json] [--roofline] [-j N] [--progress S]\n"
            "                      [--recipes FILE|DIR]... [--baseline OLD.json [--drift-threshold PCT]]\n"
            "                      [--pairs [PAIRS_FILE]] [--junit OUT.xml --max-error PCT]\n"
            "       mbsim validate FILE.csv... --cv family|family-all [--recipes FILE|DIR]... [--json] [-j N]\n"
            "\n"
            "Reads measured runs (CSV columns as in shared/data/measured/public_measured.csv,\n"
            "or scenario files with a measured: block), predicts each and prints measured,\n"
            "predicted and error per run, then MAPE, median and max absolute error, MAPE per\n"
            "system and per model, and skipped rows grouped by reason (docs/validation.md).\n"
            "\n"
            "  --json       print the summary as one JSON object (with --pairs: the pairs report)\n"
            "  --pairs [F]  A/B validation: every two CSV rows that differ only in layout or recipe\n"
            "               columns (same model, system, GPUs, GBS, sequence), their measured and\n"
            "               predicted effect, the sign and the effect error in points, per knob;\n"
            "               F (not a .csv/.yaml; or --pairs=F) lists pairs as A_ID,B_ID[,LABEL]\n"
            "  --roofline   predict without the measured kernel tables (to compare)\n"
            "  --recipes FILE|DIR\n"
            "               scenario files whose measured.csv_row names a CSV row: that row is\n"
            "               simulated from the file (the recipe its columns lack), with the row's\n"
            "               measured values; the file's layout must be the row's (else an error);\n"
            "               a folder: its *.yaml / *.yml files that have measured.csv_row; repeatable\n"
            "  --baseline OLD.json\n"
            "               compare each row's prediction with OLD.json (an earlier `validate --json`):\n"
            "               rows added, removed, newly skipped or predicted, the largest drifts of\n"
            "               the predictions and of the predicted device memory (after the report;\n"
            "               with --json on stderr); exit status 3 when a prediction or a memory\n"
            "               moved more than the threshold, a memory verdict changed or a predicted\n"
            "               row is now skipped\n"
            "  --junit F    also write the rows as a JUnit XML report to F (for CI test views; written\n"
            "               whole or not at all): one testcase per row, a failure when |error| is past\n"
            "               --max-error, an error when its simulation failed, skipped rows skipped;\n"
            "               the exit status does not change (docs/ci.md)\n"
            "  --max-error PCT\n"
            "               the |error| in percent past which a row fails in the --junit report\n"
            "  --drift-threshold PCT\n"
            "               |new - old| / old in percent past which --baseline fails (default 5)\n"
            "  --cv family  leave-one-model-family-out cross-validation of the framework-time\n"
            "               model: per family and GPU, fit on the GPU's other families' rows\n"
            "               (as `mbsim calibrate runs` does), predict the family's rows; prints\n"
            "               the cross-validated and zero-shot MAPE, signed median, per GPU and family;\n"
            "               a GPU with no other family takes the median of the other GPUs' fits of\n"
            "               the fold (as `mbsim calibrate transfer` does);\n"
            "               a GPU whose shipped table has no fitted framework section is scored as\n"
            "               shipped, at the defaults (--cv family-all fits it too); with --json one\n"
            "               object: the groups and each row's zero-shot and held-out error; it takes\n"
            "               minutes (the public set: about 4 on 2 idle cores) and prints no progress\n"
            "  -j, --jobs N simulations at once: CSV rows and scenario files alike (default:\n"
            "               the CPUs this process may run on); the output does not depend on it\n"
            "  --progress S a progress line on stderr every S seconds, also when stderr is not a\n"
            "               terminal, and a closing count if any was printed (default 5; 0 = none)\n");
}

/* A percentage option's value (0 to 1e6): 0, or -1 after saying why on stderr. */
static int mb_cli__parse_pct(const char *opt, const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    if (end == v || *end || !(*out >= 0) || *out > 1e6) {
        fprintf(stderr, "mbsim validate: %s '%s': expected a percentage from 0 to 1e6\n", opt, v);
        return -1;
    }
    return 0;
}

static int mb_cli__has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static json_t *mb_cli__cv_group_json(const struct mb_fit_cv_group *g)
{
    return json_pack("{s:s, s:I, s:f, s:f, s:f, s:f}", "name", g->name, "n", (json_int_t)g->n, "mape_cv_pct",
                     g->mape_cv, "median_cv_pct", g->median_cv, "mape_zero_pct", g->mape_zero, "median_zero_pct",
                     g->median_zero);
}

/* --cv --json: the groups and every row's zero-shot and held-out error (no
 * wall time, so the output depends on the inputs only; keys in docs/cli.md). */
static int mb_cli__cv_print_json(const struct mb_fit_cv *cv, const struct mb_fit_set *set, FILE *fp)
{
    json_t *o = mb_cli__cv_group_json(&cv->all), *gpu = json_array(), *fam = json_array(), *rows = json_array();
    for (size_t i = 0; i < cv->n_gpu; i++)
        json_array_append_new(gpu, mb_cli__cv_group_json(&cv->by_gpu[i]));
    for (size_t i = 0; i < cv->n_family; i++)
        json_array_append_new(fam, mb_cli__cv_group_json(&cv->by_family[i]));
    for (size_t i = 0; i < set->n; i++) {
        const struct mb_fit_row *w = &set->rows[i];
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:f, s:f}", "id", w->id, "gpu", w->gpu, "family",
                                              w->family, "err_zero_pct", cv->err_zero[i], "err_cv_pct",
                                              cv->err_cv[i]));
    }
    json_object_set_new(o, "folds_fitted", json_integer((json_int_t)cv->n_fits));
    json_object_set_new(o, "rows_at_defaults", json_integer((json_int_t)cv->n_default));
    json_object_set_new(o, "rows_transferred", json_integer((json_int_t)cv->n_transfer));
    json_object_set_new(o, "n_recipe_files", json_integer((json_int_t)set->sum.n_recipe_files));
    json_object_set_new(o, "by_gpu", gpu);
    json_object_set_new(o, "by_family", fam);
    json_object_set_new(o, "rows", rows);
    int rc = json_dumpf(o, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    fputc('\n', fp);
    json_decref(o);
    return rc;
}

/* `mbsim validate CSV... --cv family`: mb_fit_cv over every predicted row. */
static int mb_cli__cmd_validate_cv(const char *const *files, int nfiles, int jobs, int fit_all, int json,
                           const struct validate_recipes *rp)
{
    struct mb_fit_set set;
    struct mb_err err;
    mb_err_clear(&err);
    mb_fit_set_init(&set);
    set.jobs = jobs;
    if (mb_cli__add_recipes(&set.sum, rp)) {
        mb_fit_set_free(&set);
        return EXIT_BAD_INPUT;
    }
    for (int i = 0; i < nfiles; i++) {
        if (mb_fit_add_csv(&set, files[i], &err)) {
            mb_cli_print_err(&err);
            mb_fit_set_free(&set);
            return EXIT_BAD_INPUT;
        }
    }
    mb_fit_set_finish(&set);
    mb_validate_warn_inputs(&set.sum, "mbsim validate", stderr);
    if (set.n == 0) {
        fprintf(stderr, "mbsim validate: --cv: no row could be predicted (mbsim validate without --cv says why)\n");
        mb_fit_set_free(&set);
        return EXIT_BAD_INPUT;
    }
    struct mb_fit_cv cv;
    struct mb_fit_opts fo = {.fit_unfitted = fit_all};
    int rc = mb_fit_cv(&set, &fo, &cv, &err);
    if (rc)
        mb_cli_print_err(&err);
    else if (json)
        mb_cli__cv_print_json(&cv, &set, stdout);
    else
        mb_fit_cv_print(&cv, &set, stdout);
    if (!rc && !json && set.sum.n_recipe_files)
        printf("rows simulated from a recipe file (--recipes): %zu\n", set.sum.n_recipe_files);
    mb_fit_cv_free(&cv);
    mb_fit_set_free(&set);
    return rc ? EXIT_BAD_INPUT : 0;
}

static double mb_cli__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* validate's progress: a line on stderr every `every` seconds (a terminal or
 * a log file alike: the lines are short and few). */
struct validate_progress {
    double every, start, last;
    int lines;
};

static void mb_cli__on_validate_progress(void *ctx, size_t rows_done)
{
    struct validate_progress *p = ctx;
    double t = mb_cli__now_s();
    if (t - (p->last > 0 ? p->last : p->start) < p->every)
        return;
    p->last = t;
    p->lines++;
    fprintf(stderr, "mbsim validate: %zu %s done, %.0f s\n", rows_done, mb_plural((long long)rows_done, "row", "rows"),
            t - p->start);
    fflush(stderr);
}

/* The A/B report of a finished summary (after its rows' text report unless json): found pairs, or
 * those the file names. 0, or EXIT_BAD_INPUT for a pairs file in error. */
static int mb_cli__validate_pairs(const struct mb_val_summary *sum, const char *file, int json)
{
    struct mb_val_pairs p;
    struct mb_err err;
    mb_err_clear(&err);
    if (file ? mb_validate_pairs_read(sum, file, &p, &err) : (mb_validate_pairs_find(sum, &p), 0)) {
        mb_cli_print_err(&err);
        mb_validate_pairs_free(&p);
        return EXIT_BAD_INPUT;
    }
    if (json) {
        mb_validate_pairs_print_json(sum, &p, stdout);
    } else {
        mb_validate_print_text(sum, stdout);
        mb_validate_pairs_print_text(sum, &p, stdout);
    }
    mb_validate_pairs_free(&p);
    return 0;
}

/* --junit: the finished rows as JUnit XML, through a temporary file renamed when whole. */
static int mb_cli__validate_junit(const struct mb_val_summary *sum, const struct validate_junit_opt *ju)
{
    struct mb_outfile o;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_outfile_open(&o, ju->file, NULL, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    mb_validate_print_junit(sum, ju->max_err_pct, o.fp); /* a write error is kept by o and reported by commit */
    if (mb_outfile_commit(&o, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    return 0;
}

/* Validate the files once the options are read. */
static int mb_cli__validate_files(const char *const *files, int nfiles, int json, int roofline, int cv, int jobs,
                          double progress_every, const struct validate_drift_opts *drift,
                          const struct validate_recipes *rp, const struct validate_pairs_opt *pairs,
                          const struct validate_junit_opt *ju)
{
    if (!nfiles) {
        mb_cli__usage_validate(stderr);
        return EXIT_USAGE;
    }
    if (pairs->on && (cv || drift->baseline)) {
        fprintf(stderr, "mbsim validate: --pairs compares the rows' effects: no --cv or --baseline\n");
        return EXIT_USAGE;
    }
    if (pairs->file) { /* a pairs file that cannot be read fails before the (long) validation */
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_validate_pairs_check(pairs->file, &e)) {
            mb_cli_print_err(&e);
            return EXIT_BAD_INPUT;
        }
    }
    if (!!ju->file != ju->max_given) {
        fprintf(stderr, "mbsim validate: %s\n", ju->file ? "--junit needs --max-error PCT (the |error| past which a "
                                                           "row fails)"
                                                         : "--max-error needs --junit FILE");
        return EXIT_USAGE;
    }
    if (ju->file && !strcmp(ju->file, "-")) {
        fprintf(stderr, "mbsim validate: --junit -: the report owns standard output; give the XML a file\n");
        return EXIT_USAGE;
    }
    if (ju->file && cv) {
        fprintf(stderr, "mbsim validate: --junit reports the validated rows: no --cv\n");
        return EXIT_USAGE;
    }
    if (ju->file) { /* a report that cannot be written fails before the (long) validation, not after it */
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_outfile_probe(ju->file, NULL, &e)) {
            mb_cli_print_err(&e);
            return EXIT_BAD_INPUT;
        }
    }
    if (drift->threshold_given && !drift->baseline) {
        fprintf(stderr, "mbsim validate: --drift-threshold needs --baseline OLD.json\n");
        return EXIT_USAGE;
    }
    if (cv) {
        for (int i = 0; i < nfiles; i++)
            if (!mb_cli__has_suffix(files[i], ".csv")) {
                fprintf(stderr, "mbsim validate: --cv takes measured-runs CSVs, got '%s'\n", files[i]);
                return EXIT_USAGE;
            }
        if (roofline || drift->baseline) {
            fprintf(stderr, "mbsim validate: --cv fits the tables: no --roofline or --baseline\n");
            return EXIT_USAGE;
        }
        if (mb_cli_check_data_dir())
            return EXIT_BAD_INPUT;
        return mb_cli__cmd_validate_cv(files, nfiles, jobs, cv == 2, json, rp);
    }
    struct mb_val_summary sum;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_cli_check_data_dir())
        return EXIT_BAD_INPUT;
    mb_validate_init(&sum);
    struct mb_val_drift d;
    if (drift->baseline) { /* a bad baseline fails before the (long) validation, not after it */
        int bad = mb_validate_drift(&sum, drift->baseline, drift->threshold_pct, &d, &err);
        mb_validate_drift_free(&d);
        if (bad) {
            mb_cli_print_err(&err);
            return EXIT_BAD_INPUT;
        }
    }
    sum.roofline = roofline;
    sum.jobs = jobs;
    if (mb_cli__add_recipes(&sum, rp)) {
        mb_validate_free(&sum);
        return EXIT_BAD_INPUT;
    }
    struct validate_progress pr = {progress_every, mb_cli__now_s(), 0, 0};
    if (progress_every > 0) {
        sum.on_progress = mb_cli__on_validate_progress;
        sum.on_progress_ctx = &pr;
    }
    for (int i = 0; i < nfiles; i++) {
        int rc = mb_cli__has_suffix(files[i], ".yaml") || mb_cli__has_suffix(files[i], ".yml")
                     ? mb_validate_add_scenario(&sum, files[i], &err)
                     : mb_validate_add_csv(&sum, files[i], &err);
        if (rc) {
            mb_cli_print_err(&err);
            mb_validate_free(&sum);
            return EXIT_BAD_INPUT;
        }
    }
    mb_validate_finish(&sum);
    mb_validate_warn_inputs(&sum, "mbsim validate", stderr);
    if (pr.lines) /* a long validation: say it ended */
        fprintf(stderr, "mbsim validate: %zu %s (%zu predicted, %zu skipped) in %.1f s\n", sum.n_rows,
                mb_plural((long long)sum.n_rows, "row", "rows"), sum.n_predicted, sum.n_skipped, mb_cli__now_s() - pr.start);
    if (drift->baseline && mb_validate_drift(&sum, drift->baseline, drift->threshold_pct, &d, &err)) {
        mb_cli_print_err(&err);
        mb_validate_free(&sum);
        return EXIT_BAD_INPUT;
    }
    int rc = 0;
    if (pairs->on)
        rc = mb_cli__validate_pairs(&sum, pairs->file, json);
    else if (json)
        mb_validate_print_json(&sum, stdout);
    else
        mb_validate_print_text(&sum, stdout);
    if (!rc && sum.n_predicted == 0) { /* a MAPE of nothing is not a result: the reasons are printed above */
        fprintf(stderr, "mbsim validate: no row could be predicted in %s%s (%zu %s read, %zu skipped)\n", files[0],
                nfiles > 1 ? " and the other files" : "", sum.n_rows, mb_plural((long long)sum.n_rows, "row", "rows"),
                sum.n_skipped);
        rc = EXIT_BAD_INPUT;
    }
    if (ju->file) { /* also when no row was predicted: the CI view then lists why */
        int jrc = mb_cli__validate_junit(&sum, ju);
        if (!rc)
            rc = jrc;
    }
    if (drift->baseline) {
        /* --json: stdout is the new baseline, the drift report goes to stderr */
        mb_validate_drift_print(&d, drift->baseline, 10, json ? stderr : stdout);
        if (!rc)
            rc = d.n_over || d.n_mem_over ? EXIT_DRIFT : 0;
        mb_validate_drift_free(&d);
    }
    mb_validate_free(&sum);
    return rc;
}

int mb_cmd_validate(int argc, char **argv)
{
    int json = 0, nfiles = 0, roofline = 0, cv = 0, jobs = cli_default_jobs();
    int c, rc = -1;
    double progress = 5;
    struct validate_drift_opts drift = {NULL, DRIFT_DEFAULT_PCT, 0};
    const char *v, **files = mb_calloc((size_t)argc + 1, sizeof *files);
    struct validate_recipes recipes = {mb_calloc((size_t)argc + 1, sizeof *recipes.paths), 0};
    struct validate_pairs_opt pairs = {0, NULL};
    int pairs_file_next = 0; /* "--pairs F": the operand after a bare --pairs may be its file */
    struct validate_junit_opt junit = {NULL, 0, 0};
    enum { O_CV = 256, O_JSON, O_ROOFLINE, O_BASELINE, O_THRESHOLD, O_PROGRESS, O_RECIPES, O_PAIRS, O_JUNIT, O_MAXERR };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                       {"cv", required_argument, NULL, O_CV},
                                       {"jobs", required_argument, NULL, 'j'},
                                       {"progress", required_argument, NULL, O_PROGRESS},
                                       {"json", no_argument, NULL, O_JSON},
                                       {"roofline", no_argument, NULL, O_ROOFLINE},
                                       {"baseline", required_argument, NULL, O_BASELINE},
                                       {"drift-threshold", required_argument, NULL, O_THRESHOLD},
                                       {"recipes", required_argument, NULL, O_RECIPES},
                                       {"pairs", optional_argument, NULL, O_PAIRS},
                                       {"junit", required_argument, NULL, O_JUNIT},
                                       {"max-error", required_argument, NULL, O_MAXERR},
                                       {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim validate", "hj:", lo, argc, argv);
    cli_opts_repeatable(&g, O_RECIPES);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        int after_pairs = pairs_file_next;
        pairs_file_next = 0;
        switch (c) {
        case O_PAIRS: /* given twice: refused by cli_opts_next */
            pairs.on = 1;
            pairs.file = v;
            pairs_file_next = !v;
            break;
        case 'h':
            mb_cli__usage_validate(stdout);
            rc = 0;
            break;
        case 'j':
            if (cli_parse_jobs("mbsim validate", cli_opts_name(&g), v, &jobs))
                rc = EXIT_USAGE;
            break;
        case O_PROGRESS: {
            char *end;
            progress = strtod(v, &end);
            if (end == v || *end || !(progress >= 0) || progress > 1e6) {
                fprintf(stderr, "mbsim validate: --progress expects seconds from 0 to 1e6, got '%s'\n", v);
                rc = EXIT_USAGE;
            }
            break;
        }
        case O_CV:
            if (!strcmp(v, "family") || !strcmp(v, "family-all")) {
                cv = strcmp(v, "family") ? 2 : 1;
            } else {
                fprintf(stderr, "mbsim validate: --cv '%s': expected 'family' or 'family-all'\n", v);
                rc = EXIT_USAGE;
            }
            break;
        case O_JSON:
            json = 1;
            break;
        case O_ROOFLINE:
            roofline = 1;
            break;
        case O_BASELINE:
            drift.baseline = v;
            break;
        case O_RECIPES:
            recipes.paths[recipes.n++] = v;
            break;
        case O_JUNIT:
            junit.file = v;
            break;
        case O_MAXERR:
            junit.max_given = 1;
            if (mb_cli__parse_pct("--max-error", v, &junit.max_err_pct))
                rc = EXIT_USAGE;
            break;
        case O_THRESHOLD:
            drift.threshold_given = 1;
            if (mb_cli__parse_pct("--drift-threshold", v, &drift.threshold_pct))
                rc = EXIT_USAGE;
            break;
        case CLI_OPERAND:
            if (after_pairs && !mb_cli__has_suffix(v, ".csv") && !mb_cli__has_suffix(v, ".yaml") &&
                !mb_cli__has_suffix(v, ".yml"))
                pairs.file = v; /* measured runs are .csv or .yaml: anything else is the pairs file */
            else
                files[nfiles++] = v;
            break;
        default:
            mb_cli__usage_validate(stderr);
            rc = EXIT_USAGE;
        }
    }
    cli_opts_free(&g);
    if (rc < 0)
        rc = mb_cli__validate_files(files, nfiles, json, roofline, cv, jobs, progress, &drift, &recipes, &pairs, &junit);
    mb_free(files);
    mb_free(recipes.paths);
    return rc;
}
