/*
 * cmd_calibrate_runs.c -- `mbsim calibrate runs MEASURED.csv [--gpu G]
 * [--base TABLE] [--params LIST] [--jobs N] [-o TABLE.yaml]`: fit the
 * framework-time model (calibration `framework:`) of one GPU type to the
 * measured runs of that GPU in a measured-runs CSV (calibration/fit/mb_fit.h) and
 * write the base table with the fitted `framework:` section and its
 * provenance (docs/calibration.md, "Fitting the framework-time model").
 * `mbsim calibrate transfer TABLE... --base TABLE [-o OUT.yaml]`: the same
 * section for a GPU type without measured runs, each parameter the median of
 * the fitted tables' values (mb_fit_transfer).
 * Exit codes: 0 ok, 1 bad input, 2 usage.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_fit.h"
#include "mb_outfile.h"
#include "mb_input.h"
#include "mb_yaml.h"

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim calibrate runs MEASURED.csv [--gpu GPU] [--base TABLE] [--params LIST] [-j N] "
            "[--recipes FILE|DIR]... [-o TABLE.yaml]\n"
            "\n"
            "Fits the framework-time model (tensor_fraction, membound_eff, kernel_eager, kernel_graph,\n"
            "overlap_slowdown: docs/calibration.md) of one GPU type to that GPU's measured runs in the\n"
            "CSV (the columns `mbsim validate` reads), minimizing the squared log errors plus a prior\n"
            "toward each parameter's default, inside its bounds, and writes the base table (stdout\n"
            "without -o) with the fitted `framework:` section and its provenance.\n"
            "  --gpu GPU      the GPU type whose rows are fitted (needed when the CSV has several)\n"
            "  --base TABLE   shipped GPU name or table file to start from (default: the GPU's shipped table)\n"
            "  --params LIST  comma-separated parameters to fit (default: tensor_fraction,membound_eff,\n"
            "                 kernel_eager,overlap_slowdown); the others keep their defaults\n"
            "  -j, --jobs N   simulation threads (default: the online CPUs)\n"
            "  --recipes FILE|DIR  scenario files whose measured.csv_row names a CSV row: that row is\n"
            "                 simulated from the file (as `mbsim validate --recipes`); repeatable\n"
            "exit codes: 0 ok, 1 bad input, 2 usage error\n");
}

static int mb_cli__parse_params(const char *list, unsigned *out)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    *out = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int found = -1;
        for (int p = 0; p < MB_FW_COUNT; p++)
            if (!strcmp(t, mb_calib_fw_info((enum mb_fw_param)p)->name))
                found = p;
        if (found < 0) {
            fprintf(stderr, "mbsim calibrate runs: unknown parameter '%s'; expected some of:", t);
            for (int p = 0; p < MB_FW_COUNT; p++)
                fprintf(stderr, "%s %s", p ? "," : "", mb_calib_fw_info((enum mb_fw_param)p)->name);
            fprintf(stderr, "\n");
            return -1;
        }
        *out |= MB_FIT_PARAM(found);
    }
    if (!*out)
        fprintf(stderr, "mbsim calibrate runs: --params '%s' names no parameter\n", list);
    return *out ? 0 : -1;
}

/* The folder of `path` can take a new file and path is not a folder (checked
 * before a fit of tens of seconds); errno says why not. */
static int mb_cli__writable_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return 0;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return access(".", W_OK) == 0;
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    return access(dir, W_OK) == 0;
}

/* Write `text` without its top-level `framework:` block (from that line to the
 * next line starting in column 0 with anything but a blank). */
static void mb_cli__write_without_framework(FILE *fp, const char *text)
{
    int skip = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p + 1) : strlen(p);
        if (!strncmp(p, "framework:", 10))
            skip = 1;
        else if (skip && len > 0 && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            skip = 0;
        if (!skip)
            fwrite(p, 1, len, fp);
        p += len;
    }
    if (text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', fp);
}

static void mb_cli__write_value(FILE *fp, enum mb_fw_param p, double v)
{
    const struct mb_fw_param_info *in = mb_calib_fw_info(p);
    if (in->unit[0] && v >= 1e-3) /* step_overhead: "22.42 ms", not "2.242e+04 us" */
        fprintf(fp, "%.4g ms", v * 1e3);
    else if (in->unit[0])
        fprintf(fp, "%.4g us", v * 1e6);
    else
        fprintf(fp, "%.4g", v);
}

/* Today's date, YYYY-MM-DD (UTC). */
static void mb_cli__today(char *date, size_t n)
{
    time_t now = time(NULL);
    strftime(date, n, "%Y-%m-%d", gmtime(&now));
}

/* "mbsim calibrate KIND ARGS..." into cmd (the provenance's command line). */
static void mb_cli__command_line(char *cmd, size_t n, const char *kind, int argc, char **argv)
{
    snprintf(cmd, n, "mbsim calibrate %s", kind);
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(cmd);
        snprintf(cmd + l, n - l, " %s", argv[i]);
    }
}

/* The section's parameter lines; those outside `params` get `note`. */
static void mb_cli__write_params(FILE *fp, const double *v, unsigned params, const char *note)
{
    for (int p = 0; p < MB_FW_COUNT; p++) {
        fprintf(fp, "  %s: ", mb_calib_fw_info((enum mb_fw_param)p)->name);
        mb_cli__write_value(fp, (enum mb_fw_param)p, v[p]);
        fprintf(fp, "%s%s\n", params & MB_FIT_PARAM(p) ? "" : "   # ", params & MB_FIT_PARAM(p) ? "" : note);
    }
}

/* Write cal's table file without its `framework:` section to fp; 0, or -1 with err set. */
static int mb_cli__copy_table(const struct mb_calib *cal, FILE *fp, struct mb_err *err)
{
    char *text;
    if (mb_input_read(mb_calib_path(cal), "a calibration table", 0, &text, NULL, err))
        return -1;
    mb_cli__write_without_framework(fp, text);
    mb_free(text);
    return 0;
}

/* The GPU types of the fitted rows idx[0..n), "GB200" or "B200 and GB200" (siblings fitted together). */
static void mb_cli__fit_gpus(const struct mb_fit_set *set, const size_t *idx, size_t n, char *out, size_t len)
{
    const char *seen[8];
    int k = 0;
    for (size_t a = 0; a < n; a++) {
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= !strcasecmp(seen[j], set->rows[idx[a]].gpu);
        if (!dup && k < 8)
            seen[k++] = set->rows[idx[a]].gpu;
    }
    out[0] = 0;
    for (int j = 0; j < k; j++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", j == 0 ? "" : j == k - 1 ? " and " : ", ", seen[j]);
    }
}

static void mb_cli__write_framework(FILE *fp, const struct mb_fit_set *set, const size_t *idx, const struct mb_fit_result *r,
                            unsigned params, const char *csv, const char *gpu, const char *cmd)
{
    char date[32];
    mb_cli__today(date, sizeof date);
    fprintf(fp, "framework:   # fitted by `mbsim calibrate runs` (docs/calibration.md); bounds and defaults there\n");
    mb_cli__write_params(fp, r->fit.v, params, "not fitted: the default");
    char src[512], gpus[128];
    mb_cli__fit_gpus(set, idx, r->n_rows, gpus, sizeof gpus);
    snprintf(src, sizeof src,
             "fitted to %zu measured %s runs (%s) on %s by mbsim calibrate runs: MAPE %.1f %% -> %.1f %%; "
             "defaults, bounds and evidence: docs/calibration.md, Framework-time model",
             r->n_rows, gpus, csv, date, r->mape_prior, r->mape_fit);
    fprintf(fp, "  source: ");
    mb_yaml_write_quoted(fp, src);
    fprintf(fp, "\n  fit:\n    command: ");
    mb_yaml_write_quoted(fp, cmd);
    fprintf(fp, "\n    date: \"%s\"\n    csv: ", date);
    mb_yaml_write_quoted(fp, csv);
    fprintf(fp, "\n    gpu: \"%s\"\n    params: [", gpu);
    int first = 1;
    for (int p = 0; p < MB_FW_COUNT; p++)
        if (params & MB_FIT_PARAM(p)) {
            fprintf(fp, "%s%s", first ? "" : ", ", mb_calib_fw_info((enum mb_fw_param)p)->name);
            first = 0;
        }
    fprintf(fp, "]\n    prior: {");
    for (int p = 0; p < MB_FW_COUNT; p++) {
        fprintf(fp, "%s%s: ", p ? ", " : "", mb_calib_fw_info((enum mb_fw_param)p)->name);
        mb_cli__write_value(fp, (enum mb_fw_param)p, r->prior.v[p]);
    }
    fprintf(fp, "}\n    rows: %zu\n", r->n_rows);
    fprintf(fp, "    mape_before_pct: %.2f\n    mape_after_pct: %.2f\n", r->mape_prior, r->mape_fit);
    fprintf(fp, "    signed_median_before_pct: %.2f\n    signed_median_after_pct: %.2f\n", r->median_prior,
            r->median_fit);
    fprintf(fp, "    objective_before: %.6g\n    objective_after: %.6g\n", r->obj_prior, r->obj_fit);
    fprintf(fp, "    iterations: %d\n    simulations: %d\n", r->iterations, r->sims);
    fprintf(fp, "    leave_one_out:   # each parameter's range with one row left out (linearized at the fit), "
                "and the rows that pin it\n");
    for (int p = 0; p < MB_FW_COUNT; p++) {
        if (!(params & MB_FIT_PARAM(p)))
            continue;
        fprintf(fp, "      %s: {range: [", mb_calib_fw_info((enum mb_fw_param)p)->name);
        mb_cli__write_value(fp, (enum mb_fw_param)p, r->loo_lo[p]);
        fprintf(fp, ", ");
        mb_cli__write_value(fp, (enum mb_fw_param)p, r->loo_hi[p]);
        fprintf(fp, "], pinned_by: [");
        for (int q = 0; q < MB_FIT_PINS && r->pin_shift[p][q] != 0; q++) {
            fprintf(fp, "%s", q ? ", " : "");
            mb_yaml_write_quoted(fp, set->rows[r->pin_row[p][q]].id);
        }
        fprintf(fp, "]}\n");
    }
    fprintf(fp, "    row_ids:\n");
    for (size_t a = 0; a < r->n_rows; a++) {
        fprintf(fp, "      - ");
        mb_yaml_write_quoted(fp, set->rows[idx[a]].id);
        fputc('\n', fp);
    }
}

/* A shipped GPU name or a table file. */
static int mb_cli__load_table(const char *name, struct mb_calib **cal, struct mb_err *err)
{
    int shipped = !strchr(name, '/') && !strstr(name, ".yaml");
    return mb_calib_load(shipped ? name : NULL, shipped ? NULL : name, cal, err);
}

/* What `mbsim calibrate runs` was asked for. */
struct mb_cli__runs_opts {
    const char *csv, *gpu, *base, *out, *recipes[16];
    int n_recipes, jobs;
    unsigned params;
};

/* The options and the CSV: -1 to go on, else the exit code (0 for --help). */
static int mb_cli__runs_parse(int argc, char **argv, struct mb_cli__runs_opts *o)
{
    enum { O_GPU = 256, O_BASE, O_PARAMS, O_RECIPES };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},          {"output", required_argument, NULL, 'o'},
                                       {"gpu", required_argument, NULL, O_GPU},     {"base", required_argument, NULL, O_BASE},
                                       {"params", required_argument, NULL, O_PARAMS}, {"jobs", required_argument, NULL, 'j'},
                                       {"recipes", required_argument, NULL, O_RECIPES}, {0}};
    struct cli_opts g;
    const char *v;
    int c, rc = -1;
    cli_opts_init(&g, "mbsim calibrate runs", "ho:j:", lo, argc, argv);
    cli_opts_repeatable(&g, O_RECIPES);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cli__usage(stdout);
            rc = 0;
        } else if (c == 'o') {
            o->out = v;
        } else if (c == O_GPU) {
            o->gpu = v;
        } else if (c == O_BASE) {
            o->base = v;
        } else if (c == O_RECIPES) {
            if (o->n_recipes == (int)(sizeof o->recipes / sizeof o->recipes[0])) {
                fprintf(stderr, "mbsim calibrate runs: at most 16 --recipes (a folder holds many files)\n");
                rc = 2;
            } else {
                o->recipes[o->n_recipes++] = v;
            }
        } else if (c == O_PARAMS) {
            if (mb_cli__parse_params(v, &o->params))
                rc = 2;
        } else if (c == 'j') {
            if (cli_parse_jobs("mbsim calibrate runs", cli_opts_name(&g), v, &o->jobs))
                rc = 2;
        } else if (c != CLI_OPERAND) {
            mb_cli__usage(stderr);
            rc = 2;
        } else if (!o->csv) {
            o->csv = v;
        } else {
            fprintf(stderr, "mbsim calibrate runs: one measured-runs CSV expected, got '%s' too\n", v);
            rc = 2;
        }
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!o->csv) {
        mb_cli__usage(stderr);
        return 2;
    }
    if (o->out && !mb_cli__writable_dir(o->out)) {
        fprintf(stderr, "mbsim calibrate runs: cannot write %s (%s)\n", o->out, strerror(errno));
        return 1;
    }
    return -1;
}

/* The recipe files, then the CSV's rows predicted into set: 0, or -1 after the message. */
static int mb_cli__runs_read(const struct mb_cli__runs_opts *o, struct mb_fit_set *set)
{
    struct mb_err err;
    mb_err_clear(&err);
    for (int i = 0; i < o->n_recipes; i++)
        if (mb_validate_add_recipes(&set->sum, o->recipes[i], &err)) {
            mb_cli_print_err(&err);
            return -1;
        }
    if (mb_fit_add_csv(set, o->csv, &err)) {
        mb_cli_print_err(&err);
        return -1;
    }
    mb_fit_set_finish(set);
    mb_validate_warn_inputs(&set->sum, "mbsim calibrate runs", stderr);
    return 0;
}

/* The GPU fitted: --gpu, or the only one in the CSV; -1 after the message (exit 2) when there are several. */
static int mb_cli__runs_gpu(const struct mb_cli__runs_opts *o, const struct mb_fit_set *set, const char **gpu)
{
    *gpu = o->gpu;
    if (*gpu)
        return 0;
    for (size_t i = 0; i < set->n; i++)
        if (!*gpu) {
            *gpu = set->rows[i].gpu;
        } else if (!mb_calib_siblings(*gpu, set->rows[i].gpu)) {
            fprintf(stderr, "mbsim calibrate runs: %s has rows of several GPU types (%s, %s, ...): name one with "
                            "--gpu\n",
                    o->csv, *gpu, set->rows[i].gpu);
            return -1;
        }
    return 0;
}

/* What the fit did, on stderr: rows, iterations, rows not predicted, each parameter prior -> fitted, MAPE. */
static void mb_cli__runs_summary(const struct mb_cli__runs_opts *o, const struct mb_fit_set *set, const size_t *idx,
                                 const struct mb_fit_result *r)
{
    char gpus[128];
    mb_cli__fit_gpus(set, idx, r->n_rows, gpus, sizeof gpus);
    fprintf(stderr, "mbsim calibrate runs: %zu %s %s, %d %s, %d %s in %.1f s\n", r->n_rows, gpus,
            mb_plural((long long)r->n_rows, "row", "rows"), r->iterations,
            mb_plural(r->iterations, "iteration", "iterations"), r->sims,
            mb_plural(r->sims, "simulation", "simulations"), r->wall_s);
    if (set->sum.n_skipped) { /* rows of any GPU the validate reader could not predict, and why */
        fprintf(stderr, "  %zu %s of %s %s not predicted (all GPUs; mbsim validate lists them):",
                set->sum.n_skipped, mb_plural((long long)set->sum.n_skipped, "row", "rows"), o->csv,
                mb_plural((long long)set->sum.n_skipped, "was", "were"));
        for (size_t k = 0; k < set->sum.n_reasons && k < 3; k++)
            fprintf(stderr, "%s %zu x %s", k ? ";" : "", set->sum.reasons[k].count, set->sum.reasons[k].reason);
        fprintf(stderr, "%s\n", set->sum.n_reasons > 3 ? "; ..." : "");
    }
    for (int p = 0; p < MB_FW_COUNT; p++) {
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
        fprintf(stderr, "  %-17s ", in->name);
        mb_cli__write_value(stderr, (enum mb_fw_param)p, r->prior.v[p]);
        fprintf(stderr, " -> ");
        mb_cli__write_value(stderr, (enum mb_fw_param)p, r->fit.v[p]);
        fprintf(stderr, "%s\n", o->params & MB_FIT_PARAM(p) ? "" : "  (not fitted)");
    }
    fprintf(stderr, "  MAPE %.2f %% -> %.2f %%, signed median %+.1f %% -> %+.1f %%\n", r->mape_prior, r->mape_fit,
            r->median_prior, r->median_fit);
    fprintf(stderr, "  which rows pin each parameter (leave one row out, linearized at the fit): range, then the rows "
                    "whose removal moves it most\n");
    for (int p = 0; p < MB_FW_COUNT; p++) {
        if (!(o->params & MB_FIT_PARAM(p)))
            continue;
        fprintf(stderr, "  %-17s ", mb_calib_fw_info((enum mb_fw_param)p)->name);
        mb_cli__write_value(stderr, (enum mb_fw_param)p, r->loo_lo[p]);
        fprintf(stderr, " .. ");
        mb_cli__write_value(stderr, (enum mb_fw_param)p, r->loo_hi[p]);
        for (int q = 0; q < MB_FIT_PINS && r->pin_shift[p][q] != 0; q++) {
            fprintf(stderr, "%s %s (", q ? "," : ";", set->rows[r->pin_row[p][q]].id);
            mb_cli__write_value(stderr, (enum mb_fw_param)p, r->fit.v[p] + r->pin_shift[p][q]);
            fprintf(stderr, ")");
        }
        fprintf(stderr, "\n");
    }
}

/* What the fitted table is made of, for mb_cli_write_table. */
struct mb_cli__runs_table {
    const struct mb_calib *cal;
    const struct mb_fit_set *set;
    const size_t *idx;
    const struct mb_fit_result *r;
    const struct mb_cli__runs_opts *o;
    const char *gpu, *cmd;
};

static int mb_cli__make_runs_table(FILE *fp, void *ctx, struct mb_err *err)
{
    const struct mb_cli__runs_table *t = ctx;
    if (mb_cli__copy_table(t->cal, fp, err))
        return -1;
    mb_cli__write_framework(fp, t->set, t->idx, t->r, t->o->params, t->o->csv, t->gpu, t->cmd);
    return 0;
}

/* Fit the rows idx[0..n) of set against the base table, report, and write the table: the exit code. */
static int mb_cli__runs_fit(const struct mb_cli__runs_opts *o, struct mb_fit_set *set, const char *gpu, size_t *idx,
                            size_t n, const char *cmd)
{
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    struct mb_calib *cal = NULL;
    if (mb_cli__load_table(o->base ? o->base : gpu, &cal, &err)) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim calibrate runs: %s%s%s%s\n", o->base ? "--base " : "", o->base ? o->base : "", o->base ? ": " : "",
                msg);
        return 1;
    }
    /* an output that is an input (the CSV, a recipe) is refused before the fit; the base table
     * itself may be rewritten in place (mb_cli_write_table) */
    if (o->out && mb_outfile_probe(o->out, mb_calib_path(cal), &err)) {
        mb_cli_print_err(&err);
        mb_calib_free(cal);
        return 1;
    }
    struct mb_fit_result r;
    struct mb_fit_opts fo = {.params = o->params};
    int rc = mb_fit_framework(set, idx, n, cal, &fo, &r, &err);
    if (rc) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    } else {
        /* idx of the rows the fit used (rows that do not simulate are left out) */
        size_t m = 0;
        for (size_t a = 0; a < n; a++)
            if (set->rows[idx[a]].lin_ok > 0)
                idx[m++] = idx[a];
        mb_cli__runs_summary(o, set, idx, &r);
        struct mb_cli__runs_table t = {cal, set, idx, &r, o, gpu, cmd};
        rc = mb_cli_write_table("mbsim calibrate runs", o->out, mb_calib_path(cal), mb_cli__make_runs_table, &t);
    }
    mb_calib_free(cal);
    return rc ? 1 : 0;
}

int mb_cmd_calibrate_runs(int argc, char **argv)
{
    struct mb_cli__runs_opts o = {.params = MB_FIT_DEFAULT_PARAMS};
    char cmd[2048];
    mb_cli__command_line(cmd, sizeof cmd, "runs", argc, argv);
    int rc = mb_cli__runs_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct mb_fit_set set;
    mb_fit_set_init(&set);
    set.jobs = o.jobs;
    const char *gpu;
    if (mb_cli__runs_read(&o, &set)) {
        mb_fit_set_free(&set);
        return 1;
    }
    if (mb_cli__runs_gpu(&o, &set, &gpu)) {
        mb_fit_set_free(&set);
        return 2;
    }
    size_t *idx = malloc((set.n + 1) * sizeof *idx), n = 0;
    for (size_t i = 0; gpu && i < set.n; i++) /* the GPU's rows and its siblings' (mb_calib_siblings) */
        if (mb_calib_siblings(set.rows[i].gpu, gpu))
            idx[n++] = i;
    if (n == 0) {
        if (gpu)
            fprintf(stderr, "mbsim calibrate runs: no predicted row of GPU '%s' in %s\n", gpu, o.csv);
        else
            fprintf(stderr, "mbsim calibrate runs: no predicted row in %s (mbsim validate %s says why)\n", o.csv,
                    o.csv);
        rc = 1;
    } else {
        rc = mb_cli__runs_fit(&o, &set, gpu, idx, n, cmd);
    }
    free(idx);
    mb_fit_set_free(&set);
    return rc;
}

static void mb_cli__write_transfer(FILE *fp, const struct mb_calib_framework *fw, unsigned params, const char **from, int n,
                           const char *cmd)
{
    char date[32], names[512] = "";
    mb_cli__today(date, sizeof date);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", from[i]);
    }
    fprintf(fp, "framework:   # transferred by `mbsim calibrate transfer` (docs/calibration.md): no measured runs of "
                "this GPU\n");
    mb_cli__write_params(fp, fw->v, params, "no fitted table moved it: the base's value");
    char src[768];
    snprintf(src, sizeof src,
             "the median of the fitted values of %s on %s (mbsim calibrate transfer; no measured run of this GPU "
             "fitted them); defaults, bounds and evidence: docs/calibration.md, Framework-time model",
             names, date);
    fprintf(fp, "  source: ");
    mb_yaml_write_quoted(fp, src);
    fprintf(fp, "\n  fit:\n    command: ");
    mb_yaml_write_quoted(fp, cmd);
    fprintf(fp, "\n    date: \"%s\"\n    transfer_from: [", date);
    for (int i = 0; i < n; i++) {
        fprintf(fp, "%s", i ? ", " : "");
        mb_yaml_write_quoted(fp, from[i]);
    }
    fprintf(fp, "]\n    rows: 0\n");
}

/* What the transferred table is made of, for mb_cli_write_table. */
struct mb_cli__transfer_table {
    const struct mb_calib *cal;
    const struct mb_calib_framework *fw;
    unsigned params;
    const char **from;
    int n;
    const char *cmd;
};

static int mb_cli__make_transfer_table(FILE *fp, void *ctx, struct mb_err *err)
{
    const struct mb_cli__transfer_table *t = ctx;
    if (mb_cli__copy_table(t->cal, fp, err))
        return -1;
    mb_cli__write_transfer(fp, t->fw, t->params, t->from, t->n, t->cmd);
    return 0;
}

static int mb_cli__transfer_usage(FILE *fp, int rc)
{
    fprintf(fp, "usage: mbsim calibrate transfer TABLE... --base TABLE [-o TABLE.yaml]\n"
                "\n"
                "Writes the base table (stdout without -o) with a `framework:` section for a GPU type\n"
                "that has no measured runs: each parameter is the median of the values that\n"
                "`mbsim calibrate runs` fitted in the TABLEs (shipped GPU names or table files; a\n"
                "parameter counts where the table's fit.params names it); a parameter none of them\n"
                "fitted keeps the base's value. docs/calibration.md, \"A GPU without measured runs\".\n"
                "exit codes: 0 ok, 1 bad input, 2 usage error\n");
    return rc;
}

int mb_cmd_calibrate_transfer(int argc, char **argv)
{
    const char *base = NULL, *out = NULL, *from[64];
    int n = 0, rc = -1, c;
    char cmd[2048];
    mb_cli__command_line(cmd, sizeof cmd, "transfer", argc, argv);
    enum { O_BASE = 256 };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"base", required_argument, NULL, O_BASE},
                                       {0}};
    struct cli_opts g;
    const char *v;
    cli_opts_init(&g, "mbsim calibrate transfer", "ho:", lo, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h')
            rc = mb_cli__transfer_usage(stdout, 0);
        else if (c == 'o')
            out = v;
        else if (c == O_BASE) /* given twice: refused by cli_opts_next */
            base = v;
        else if (c != CLI_OPERAND)
            rc = mb_cli__transfer_usage(stderr, 2);
        else if (n < (int)(sizeof from / sizeof from[0]))
            from[n++] = v;
        else
            rc = mb_cli__transfer_usage(stderr, 2);
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!base || n == 0) {
        fprintf(stderr, "mbsim calibrate transfer: %s\n",
                !base ? "--base TABLE is required (the table of the GPU without runs)"
                      : "name at least one fitted table to transfer from");
        return mb_cli__transfer_usage(stderr, 2);
    }
    if (out && !mb_cli__writable_dir(out)) {
        fprintf(stderr, "mbsim calibrate transfer: cannot write %s (%s)\n", out, strerror(errno));
        return 1;
    }
    struct mb_calib_framework fits[64], prior, fw;
    static char real[64][PATH_MAX];
    unsigned params[64], want = 0;
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    for (int i = 0; i < n; i++) {
        struct mb_calib *t = NULL;
        if (mb_cli__load_table(from[i], &t, &err)) {
            mb_err_format(&err, msg, sizeof msg);
            fprintf(stderr, "mbsim calibrate transfer: %s\n", msg);
            return 1;
        }
        /* one file named twice, by GPU name and by path or by two paths, counts once in the median */
        if (!realpath(mb_calib_path(t), real[i]))
            snprintf(real[i], sizeof real[i], "%s", mb_calib_path(t));
        for (int j = 0; j < i; j++)
            if (!strcmp(real[i], real[j])) {
                fprintf(stderr, "mbsim calibrate transfer: %s and %s are the same table (%s; each table counts "
                                "once in the median)\n",
                        from[j], from[i], real[i]);
                mb_calib_free(t);
                return 2;
            }
        mb_calib_framework_get(t, &fits[i]);
        mb_calib_free(t);
        params[i] = fits[i].fitted;
        want |= params[i];
        if (!params[i]) {
            fprintf(stderr, "mbsim calibrate transfer: %s has no fitted framework parameters (its fit.params "
                            "names none: defaults, hand-set or transferred values; `mbsim calibrate runs` "
                            "writes a fitted section)\n",
                    from[i]);
            return 1;
        }
    }
    struct mb_calib *cal = NULL;
    if (mb_cli__load_table(base, &cal, &err)) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim calibrate transfer: --base %s: %s\n", base, msg);
        return 1;
    }
    mb_calib_framework_get(cal, &prior);
    mb_fit_transfer(fits, params, (size_t)n, want, &prior, &fw);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        fprintf(stderr, "  %-17s ", mb_calib_fw_info((enum mb_fw_param)p)->name);
        mb_cli__write_value(stderr, (enum mb_fw_param)p, fw.v[p]);
        fprintf(stderr, "%s\n", want & MB_FIT_PARAM(p) ? "" : "  (the base's)");
    }
    struct mb_cli__transfer_table t = {cal, &fw, want, from, n, cmd};
    rc = mb_cli_write_table("mbsim calibrate transfer", out, mb_calib_path(cal), mb_cli__make_transfer_table, &t);
    mb_calib_free(cal);
    return rc;
}
