/*
 * cmd_plot.c -- `mbsim plot KIND INPUT [-o OUT.png|OUT.svg]` (docs/plots.md).
 *
 * The C side only turns mbsim's JSON/TSV outputs into tidy TSV files (one row
 * per point, a header row) and runs, without a shell,
 *     gnuplot -c plots/KIND.gp INFILE INFILE2 OUTFILE MBS_AXIS
 * (fork and execv: every path is one argv entry, which gnuplot's -c hands to the
 * script as the string ARG1..ARG4; nothing is pasted into a gnuplot command, whose
 * quotes, backquotes and @macros a path could otherwise reach). A relative path is
 * given as ./PATH: gnuplot reads a file name that starts with '<' as a shell
 * command to read from, and an output name that starts with '|' as one to write
 * to. The scripts in plots/ choose the terminal from the output's extension and
 * read every column by name; no gnuplot syntax is generated here.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mb_input.h"
#include "mb_outfile.h"
#include "mb_util.h"
#include "cli.h"
#include "mb_text.h"
#include "tsv.h"

static void mb_cli__usage_plot(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim plot KIND INPUT [-o OUT.png|OUT.svg]\n"
            "\n"
            "Draws a chart with gnuplot (scripts in plots/, docs/plots.md). KIND:\n"
            "  validate   predicted vs measured, y = x, a +-10%% band and the 5 worst rows labelled;\n"
            "             INPUT is the output of `mbsim validate --json` or a TSV with columns\n"
            "             metric, measured, predicted (optional: id, system, model, err_pct)\n"
            "  sweep      best tokens/s/GPU vs micro-batch size per recompute granularity, and\n"
            "             peak memory per rank of every configuration against the GPU capacity;\n"
            "             INPUT is the TSV of `mbsim sweep --tsv`\n"
            "  breakdown  step-time breakdown bars; INPUT is the output of `mbsim run --json`\n"
            "  gantt      timeline of the simulated ranks; INPUT is a `mbsim run --trace` file\n"
            "  memory     memory of the peak rank over the step (allocated, its dynamic terms stacked on\n"
            "             the static state) against reserved, device memory and capacity; INPUT is the\n"
            "             output of `mbsim run --json`\n"
            "\n"
            "  -o FILE    output; the extension picks PNG or SVG (default KIND.png)\n"
            "\n"
            "Needs gnuplot on PATH (Debian: apt-get install gnuplot-nox), or its path in\n"
            "$MBSIM_GNUPLOT.\n");
}

/* ------------------------------------------------------------- helpers */

/* The JSON input of a plot: a file (plain or gzip: `mbsim run --trace out.json.gz`)
 * or "-" for stdin, at most the input size limit; NULL after printing
 * "mbsim plot: FILE:line:col: what" when it cannot be read or does not parse. */
static json_t *mb_cli__read_input(const char *in)
{
    struct mb_err e;
    char *buf, msg[MB_ERR_TEXT_LEN];
    size_t n;
    mb_err_clear(&e);
    if (mb_input_read_gz(in, "a JSON file", 1, &buf, &n, &e)) {
        mb_err_format(&e, msg, sizeof msg);
        fprintf(stderr, "mbsim plot: %s\n", msg);
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(buf, n, 0, &je);
    mb_free(buf);
    if (!root)
        fprintf(stderr, "mbsim plot: %s:%d:%d: %s\n", in, je.line, je.column, je.text);
    return root;
}

static int mb_cli__has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The gnuplot executable: $MBSIM_GNUPLOT, else `gnuplot` found on PATH. */
static int mb_cli__find_gnuplot(char *out, size_t len)
{
    const char *env = getenv("MBSIM_GNUPLOT");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char *dup = mb_strdup(path);
    int rc = -1;
    for (char *p = dup; p && rc; ) {
        char *c = strchr(p, ':');
        if (c)
            *c = 0;
        snprintf(out, len, "%s/gnuplot", *p ? p : ".");
        if (access(out, X_OK) == 0)
            rc = 0;
        p = c ? c + 1 : NULL;
    }
    mb_free(dup);
    return rc;
}

/* A temporary TSV file in $TMPDIR (else /tmp); NULL with errno set (ENAMETOOLONG
 * when the folder's name leaves no room: the name is never cut). */
static FILE *mb_cli__tmp_tsv(char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");
    int n = snprintf(path, len, "%s/mbsim-plot-XXXXXX", dir && *dir ? dir : "/tmp");
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    return fdopen(fd, "w");
}

/* A path as gnuplot is given it: absolute as it is, relative as ./PATH, so that no
 * name reaches gnuplot starting with '<' or '|' (a shell command to read from or
 * write to), '~', '$' (a datablock), '-' or '+' (stdin, the pseudo-files). 0, or -1
 * when it does not fit in out. */
static int mb_cli__gp_path(const char *p, char *out, size_t len)
{
    int n = snprintf(out, len, "%s%s", p[0] == '/' ? "" : "./", p);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void mb_cli__clean_field(const char *s, FILE *fp)
{
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, fp);
}

/* What a chart says besides its data: the scenario or input it shows (the title), and the
 * categories its legend lists (gantt: those in the data, spaces as '~'). */
struct mb_plot_meta {
    char subject[512];
    char legend[1024];
};

/* The subject of a chart of `in`: the scenario the JSON names, else the input's name. */
static void mb_cli__subject(struct mb_plot_meta *m, const char *in, json_t *root)
{
    const char *scn = root ? json_string_value(json_object_get(root, "scenario")) : NULL;
    const char *name = strcmp(in, "-") ? in : "standard input";
    if (scn && *scn)
        snprintf(m->subject, sizeof m->subject, "%s (%s)", scn, name);
    else
        snprintf(m->subject, sizeof m->subject, "%s", name);
}

/* ------------------------------------------------------------- validate */

/* The rows labelled on the chart: the PLOT_WORST largest |err_pct|. */
#define PLOT_WORST 5

/* One predicted row (strings borrowed from the JSON or the TSV). */
struct vpt {
    const char *id, *system, *model, *metric;
    double meas, pred, err;
    int worst;
    double label_y; /* worst rows: log10 of the label's height (mb_cli__stagger_labels) */
};

static int mb_cli__by_abs_err(const void *a, const void *b)
{
    const struct vpt *x = *(const struct vpt *const *)a, *y = *(const struct vpt *const *)b;
    double ex = fabs(x->err), ey = fabs(y->err);
    return ex < ey ? 1 : ex > ey ? -1 : strcmp(x->id, y->id);
}

static int mb_cli__by_label_y(const void *a, const void *b)
{
    const struct vpt *x = *(const struct vpt *const *)a, *y = *(const struct vpt *const *)b;
    return x->label_y < y->label_y ? -1 : x->label_y > y->label_y;
}

/* The heights of the worst rows' labels (log10 of the y axis), at least PLOT_LABEL_GAP of the
 * axis' decades apart so that no two one-line labels overprint: each at its point's height,
 * moved up past the label below it, then all moved down together if the top one left the axis
 * (lo, hi: validate.gp's axis, the data's extent widened 1.5x each way). */
#define PLOT_LABEL_GAP 0.035 /* of the axis height: 28 px of the 800 px chart's ~ 650 px axis; the 8 pt labels are ~ 11 px */
static void mb_cli__stagger_labels(struct vpt **w, size_t k, double lo, double hi)
{
    double top = log10(hi), bottom = log10(lo), gap = PLOT_LABEL_GAP * (top - bottom);
    for (size_t i = 0; i < k; i++)
        w[i]->label_y = log10(w[i]->pred);
    qsort(w, k, sizeof *w, mb_cli__by_label_y);
    for (size_t i = 1; i < k; i++)
        if (w[i]->label_y < w[i - 1]->label_y + gap)
            w[i]->label_y = w[i - 1]->label_y + gap;
    double over = k ? w[k - 1]->label_y - (top - gap / 2) : 0;
    if (over > 0)
        for (size_t i = 0; i < k; i++)
            w[i]->label_y = fmax(w[i]->label_y - over, bottom + gap / 2 + (double)i * gap);
}

/* Mark the worst rows and write id, system, model, metric, measured, predicted, err_pct, worst,
 * label_y (the worst rows' label heights, mb_cli__stagger_labels; NA on the others). */
static void mb_cli__write_points(struct vpt *p, size_t n, FILE *out)
{
    struct vpt **by = mb_calloc(n + 1, sizeof *by);
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        by[i] = &p[i];
        lo = fmin(lo, fmin(p[i].meas, p[i].pred));
        hi = fmax(hi, fmax(p[i].meas, p[i].pred));
    }
    qsort(by, n, sizeof *by, mb_cli__by_abs_err);
    size_t k = n < PLOT_WORST ? n : PLOT_WORST;
    for (size_t i = 0; i < k; i++)
        by[i]->worst = 1;
    mb_cli__stagger_labels(by, k, lo / 1.5, hi * 1.5);
    mb_free(by);
    fprintf(out, "id\tsystem\tmodel\tmetric\tmeasured\tpredicted\terr_pct\tworst\tlabel_y\n");
    for (size_t i = 0; i < n; i++) {
        const char *f[4] = {p[i].id, p[i].system, p[i].model, p[i].metric};
        for (int j = 0; j < 4; j++) {
            mb_cli__clean_field(f[j] && f[j][0] ? f[j] : "NA", out);
            fputc('\t', out);
        }
        fprintf(out, "%.10g\t%.10g\t%.6g\t%d\t", p[i].meas, p[i].pred, p[i].err, p[i].worst);
        if (p[i].worst)
            fprintf(out, "%.10g\n", pow(10, p[i].label_y));
        else
            fputs("NA\n", out);
    }
}

/* `mbsim validate --json` -> the points (predicted rows only). */
static int mb_cli__conv_validate(const char *in, FILE *out)
{
    json_t *root = mb_cli__read_input(in);
    if (!root)
        return -1;
    json_t *rows = json_object_get(root, "rows");
    if (!json_is_array(rows)) {
        fprintf(stderr, "mbsim plot: %s: no \"rows\" array (expected the output of mbsim validate --json)\n", in);
        json_decref(root);
        return -1;
    }
    struct vpt *p = mb_calloc(json_array_size(rows) + 1, sizeof *p);
    char(*label)[32] = mb_calloc(json_array_size(rows) + 1, sizeof *label); /* "rows[N]" for rows without an id */
    size_t i, k = 0;
    json_t *r;
    int rc = 0;
    json_array_foreach(rows, i, r) {
        json_t *pred = json_object_get(r, "predicted"), *meas = json_object_get(r, "measured");
        if (!json_is_number(pred) || !json_is_number(meas) || json_is_true(json_object_get(r, "skipped")))
            continue;
        json_t *e = json_object_get(r, "err_pct");
        double m = json_number_value(meas), pr = json_number_value(pred);
        /* as in the TSV: a measured 0 made the error NaN, which no sort can order */
        if (!(m > 0) || !(pr > 0)) {
            fprintf(stderr, "mbsim plot: %s: $.rows[%zu].%s: expected a positive number, got %g\n", in, i,
                    m > 0 ? "predicted" : "measured", m > 0 ? pr : m);
            rc = -1;
            break;
        }
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!id) { /* the sort breaks ties by id */
            snprintf(label[i], sizeof label[i], "rows[%zu]", i);
            id = label[i];
        }
        p[k++] = (struct vpt){id, json_string_value(json_object_get(r, "system")),
                              json_string_value(json_object_get(r, "model")),
                              json_string_value(json_object_get(r, "metric")), m, pr,
                              json_is_number(e) ? json_number_value(e) : (pr - m) / m * 100, 0, 0};
    }
    if (!rc && k)
        mb_cli__write_points(p, k, out);
    else if (!rc)
        fprintf(stderr, "mbsim plot: %s: no predicted rows to plot\n", in);
    mb_free(p);
    mb_free(label);
    json_decref(root);
    return !rc && k ? 0 : -1;
}

/* A TSV with columns metric, measured, predicted (id, system, model, err_pct
 * optional; err_pct computed when absent) -> the points. */
static int mb_cli__conv_validate_tsv(const char *in, FILE *out)
{
    struct mb_tsv t;
    char msg[1024];
    if (mb_tsv_read(in, &t, msg, sizeof msg)) {
        fprintf(stderr, "mbsim plot: %s\n", msg);
        return -1;
    }
    int c_id = mb_tsv_col(&t, "id"), c_sys = mb_tsv_col(&t, "system"), c_model = mb_tsv_col(&t, "model");
    int c_met = mb_tsv_col(&t, "metric"), c_meas = mb_tsv_col(&t, "measured"), c_pred = mb_tsv_col(&t, "predicted");
    int c_err = mb_tsv_col(&t, "err_pct"), rc = 0;
    if (c_met < 0 || c_meas < 0 || c_pred < 0) {
        fprintf(stderr, "mbsim plot: %s:1: the header needs the columns metric, measured and predicted "
                        "(docs/plots.md)\n", in);
        mb_tsv_free(&t);
        return -1;
    }
    struct vpt *p = mb_calloc(t.nrow + 1, sizeof *p);
    char(*label)[24] = mb_calloc(t.nrow + 1, sizeof *label); /* "line N" for rows without an id */
    for (size_t i = 0; i < t.nrow && !rc; i++) {
        char **c = t.cell[i], *end;
        double v[3] = {0, 0, 0};
        const int col[3] = {c_meas, c_pred, c_err};
        for (int j = 0; j < 3 && !rc; j++) {
            if (col[j] < 0)
                continue;
            v[j] = strtod(c[col[j]], &end);
            if (end == c[col[j]] || *end || !isfinite(v[j]) || (j < 2 && !(v[j] > 0))) {
                fprintf(stderr, "mbsim plot: %s:%d: column '%s': expected a %snumber, got '%s'\n", in, t.line[i],
                        t.col[col[j]], j < 2 ? "positive " : "", c[col[j]]);
                rc = -1;
            }
        }
        snprintf(label[i], sizeof label[i], "line %d", t.line[i]);
        p[i] = (struct vpt){c_id >= 0 ? c[c_id] : label[i], c_sys >= 0 ? c[c_sys] : NULL,
                            c_model >= 0 ? c[c_model] : NULL, c[c_met], v[0], v[1],
                            c_err >= 0 ? v[2] : (v[1] - v[0]) / v[0] * 100, 0, 0};
    }
    if (!rc && !t.nrow) {
        fprintf(stderr, "mbsim plot: %s: no data rows after the header (docs/plots.md gives the columns)\n", in);
        rc = -1;
    }
    if (!rc)
        mb_cli__write_points(p, t.nrow, out);
    mb_free(p);
    mb_free(label);
    mb_tsv_free(&t);
    return rc;
}

/* ------------------------------------------------------------- sweep */

struct mem_pt {
    double mem, cap;
    int oom;
    const char *config;
};

static int mb_cli__by_mem(const void *a, const void *b)
{
    const struct mem_pt *x = a, *y = b;
    return x->mem < y->mem ? -1 : x->mem > y->mem;
}

/* Sweep TSV -> (1) micro_batch_size, none, selective, full: best tokens/s/GPU of
 * the fitting configurations; (2) order, config, reserved_memory_gib,
 * capacity_gib, fits_gib, oom_gib sorted by memory. The reserved memory (peak
 * allocated plus the allocator's estimated reserve) is what the OOM verdict
 * compares with the capacity, so points above the line are exactly the OOM ones. */
/* The series a sweep chart has points for (sweep.gp's ARG6): the recompute granularities with a fitting
 * configuration, then "fits" and "oom" for the memory panel's two kinds; a series without a point made
 * gnuplot warn "Skipping data file with no valid points" (issue 37). */
static void mb_cli__sweep_series(double best[][3], int n_mbs, size_t n_fit, size_t n_oom, char *out, size_t len)
{
    static const char *const grans[3] = {"none", "selective", "full"};
    out[0] = '\0';
    for (int k = 0; k < 3; k++) {
        int any = 0;
        for (int i = 0; i < n_mbs; i++)
            any |= best[i][k] >= 0;
        if (any)
            snprintf(out + strlen(out), len - strlen(out), "%s%s", *out ? " " : "", grans[k]);
    }
    if (n_fit)
        snprintf(out + strlen(out), len - strlen(out), " fits");
    if (n_oom)
        snprintf(out + strlen(out), len - strlen(out), " oom");
}

static int mb_cli__conv_sweep(const char *in, FILE *out1, FILE *out2, int *mbs_axis, struct mb_plot_meta *meta)
{
    struct mb_tsv t;
    char msg[1024];
    if (mb_tsv_read(in, &t, msg, sizeof msg)) {
        fprintf(stderr, "mbsim plot: %s\n", msg);
        return -1;
    }
    int c_st = mb_tsv_col(&t, "status"), c_tok = mb_tsv_col(&t, "tokens_per_s_per_gpu"),
        c_mem = mb_tsv_col(&t, "reserved_memory_gib"), c_cap = mb_tsv_col(&t, "capacity_gib"),
        c_oom = mb_tsv_col(&t, "oom"), c_cfg = mb_tsv_col(&t, "config"),
        c_mbs = mb_tsv_col(&t, "data.micro_batch_size"), c_rc = mb_tsv_col(&t, "recompute.granularity");
    *mbs_axis = c_mbs >= 0;
    if (c_st < 0 || c_tok < 0 || c_mem < 0 || c_cap < 0 || c_oom < 0 || c_cfg < 0) {
        fprintf(stderr, "mbsim plot: %s: not a sweep TSV (needs config, status, tokens_per_s_per_gpu, "
                        "reserved_memory_gib, capacity_gib, oom columns; see docs/sweep.md)\n", in);
        mb_tsv_free(&t);
        return -1;
    }
    static const char *const grans[3] = {"none", "selective", "full"};
    int mbs_v[64], n_mbs = 0;
    double best[64][3];
    struct mem_pt *pts = mb_calloc(t.nrow ? t.nrow : 1, sizeof *pts);
    size_t np = 0;
    for (size_t r = 0; r < t.nrow; r++) {
        char **f = t.cell[r];
        if (strcmp(f[c_st], "ok"))
            continue;
        char *e1, *e2, *e3;
        double mem = strtod(f[c_mem], &e1), cap = strtod(f[c_cap], &e2), tok0 = strtod(f[c_tok], &e3);
        if (e1 == f[c_mem] || *e1 || e2 == f[c_cap] || *e2 || e3 == f[c_tok] || *e3 ||
            (strcmp(f[c_oom], "0") && strcmp(f[c_oom], "1"))) {
            fprintf(stderr, "mbsim plot: %s:%d: an ok row needs numbers in tokens_per_s_per_gpu, "
                            "reserved_memory_gib, capacity_gib and 0 or 1 in oom\n", in, t.line[r]);
            mb_free(pts);
            mb_tsv_free(&t);
            return -1;
        }
        int oom = f[c_oom][0] == '1';
        pts[np++] = (struct mem_pt){mem, cap, oom, f[c_cfg]};
        if (oom)
            continue;
        int mbs = c_mbs >= 0 ? atoi(f[c_mbs]) : 1; /* no axis: one point, labelled by the script */
        int g = 0; /* without a recompute axis every row counts as the base's choice: "none" column */
        if (c_rc >= 0)
            for (int k = 0; k < 3; k++)
                if (!strcmp(f[c_rc], grans[k]))
                    g = k;
        int m = 0;
        while (m < n_mbs && mbs_v[m] != mbs)
            m++;
        if (m == n_mbs) {
            if (n_mbs == 64)
                continue;
            mbs_v[n_mbs++] = mbs;
            best[m][0] = best[m][1] = best[m][2] = -1;
        }
        double tok = tok0;
        if (tok > best[m][g])
            best[m][g] = tok;
    }
    /* (1) sorted by micro-batch size */
    fprintf(out1, "micro_batch_size\tnone\tselective\tfull\n");
    for (int i = 0; i < n_mbs; i++) {
        int lo = i;
        for (int j = i + 1; j < n_mbs; j++)
            if (mbs_v[j] < mbs_v[lo])
                lo = j;
        int tv = mbs_v[i];
        mbs_v[i] = mbs_v[lo];
        mbs_v[lo] = tv;
        for (int k = 0; k < 3; k++) {
            double tb = best[i][k];
            best[i][k] = best[lo][k];
            best[lo][k] = tb;
        }
        fprintf(out1, "%d", mbs_v[i]);
        for (int k = 0; k < 3; k++)
            if (best[i][k] >= 0)
                fprintf(out1, "\t%.6g", best[i][k]);
            else
                fprintf(out1, "\tNA");
        fprintf(out1, "\n");
    }
    /* (2) memory, ascending */
    qsort(pts, np, sizeof *pts, mb_cli__by_mem);
    fprintf(out2, "order\tconfig\treserved_memory_gib\tcapacity_gib\tfits_gib\toom_gib\n");
    for (size_t i = 0; i < np; i++) {
        fprintf(out2, "%zu\t", i);
        mb_cli__clean_field(pts[i].config, out2); /* a quoted TSV field may hold a tab or newline */
        fprintf(out2, "\t%.6g\t%.6g\t", pts[i].mem, pts[i].cap);
        if (pts[i].oom)
            fprintf(out2, "NA\t%.6g\n", pts[i].mem);
        else
            fprintf(out2, "%.6g\tNA\n", pts[i].mem);
    }
    size_t n_oom = 0;
    double lo = 0, hi = 0, cap = np ? pts[0].cap : 0;
    for (size_t i = 0; i < np; i++)
        if (pts[i].oom) {
            lo = n_oom++ ? fmin(lo, pts[i].mem) : pts[i].mem;
            hi = fmax(hi, pts[i].mem);
        }
    mb_free(pts);
    mb_tsv_free(&t);
    if (!np) {
        fprintf(stderr, "mbsim plot: %s: no simulated configurations to plot\n", in);
        return -1;
    }
    if (!n_mbs) { /* the throughput panel would be empty: gnuplot stops on its x range */
        fprintf(stderr,
                "mbsim plot: %s: all %zu simulated configuration%s out of memory (reserved %.4g to %.4g GiB "
                "per rank, capacity %.4g GiB): no throughput to plot; sweep a layout that shards more "
                "(tp, pp, ep, recompute; docs/tune.md)\n",
                in, np, np == 1 ? " is" : "s are", lo, hi, cap);
        return -1;
    }
    mb_cli__sweep_series(best, n_mbs, np - n_oom, n_oom, meta->legend, sizeof meta->legend);
    return 0;
}

/* ------------------------------------------------------------- breakdown */

struct term {
    const char *name;
    double s;
};

static int mb_cli__by_seconds(const void *a, const void *b)
{
    const struct term *x = a, *y = b;
    return x->s > y->s ? -1 : x->s < y->s;
}

/* `mbsim run --json` -> term, seconds, share (non-zero terms, largest first). */
static int mb_cli__conv_breakdown(const char *in, FILE *out, struct mb_plot_meta *meta)
{
    json_t *root = mb_cli__read_input(in);
    if (!root)
        return -1;
    mb_cli__subject(meta, in, root);
    json_t *bd = json_object_get(root, "breakdown_s");
    if (!json_is_object(bd)) {
        fprintf(stderr, "mbsim plot: %s: no \"breakdown_s\" object (expected the output of mbsim run --json)\n",
                in);
        json_decref(root);
        return -1;
    }
    struct term t[64];
    size_t n = 0;
    double total = 0;
    const char *key;
    json_t *v;
    json_object_foreach(bd, key, v) {
        if (n < 64 && json_is_number(v) && json_number_value(v) > 0) {
            t[n++] = (struct term){key, json_number_value(v)};
            total += json_number_value(v);
        }
    }
    qsort(t, n, sizeof t[0], mb_cli__by_seconds);
    fprintf(out, "term\tseconds\tshare_pct\n");
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s\t%.6g\t%.4g\n", t[i].name, t[i].s, total > 0 ? 100 * t[i].s / total : 0);
    json_decref(root);
    if (!n) {
        fprintf(stderr, "mbsim plot: %s: the breakdown is empty\n", in);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- memory */

static double mb_cli__num_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* `mbsim run --json` -> t_ms, static_gib, activations_gib, loss_gib, recompute_gib,
 * backward_gradients_gib, allocated_gib, reserved_gib, device_gib, capacity_gib,
 * at_risk_gib: one row per point of memory.timeline (the peak rank). Static =
 * allocated - the dynamic terms; reserved and device add the peak's
 * fragmentation and the memory outside PyTorch to each point. */
static int mb_cli__conv_memory(const char *in, FILE *out, struct mb_plot_meta *meta)
{
    json_t *root = mb_cli__read_input(in);
    if (!root)
        return -1;
    mb_cli__subject(meta, in, root);
    json_t *mem = json_object_get(root, "memory");
    json_t *tl = json_is_object(mem) ? json_object_get(mem, "timeline") : NULL;
    static const char *const cols[] = {"t_s", "allocated_gib", "activations_gib", "loss_gib", "recompute_gib",
                                       "backward_gradients_gib"};
    json_t *a[6];
    size_t n = 0;
    for (int k = 0; k < 6; k++) {
        a[k] = tl ? json_object_get(tl, cols[k]) : NULL;
        if (!json_is_array(a[k]) || (k && json_array_size(a[k]) != n) || (!k && !(n = json_array_size(a[k])))) {
            fprintf(stderr, "mbsim plot: %s: no \"memory.timeline\" (expected the output of mbsim run --json "
                            "of a simulation with microbatches)\n", in);
            json_decref(root);
            return -1;
        }
    }
    double frag = mb_cli__num_of(mem, "fragmentation_gib");
    double outside = mb_cli__num_of(mem, "comm_buffers_gib") + mb_cli__num_of(mem, "cuda_context_gib");
    double cap = mb_cli__num_of(mem, "capacity_gib"), risk = mb_cli__num_of(mem, "at_risk_fraction") * cap;
    fprintf(out, "t_ms\tstatic_gib\tactivations_gib\tloss_gib\trecompute_gib\tbackward_gradients_gib\t"
                 "allocated_gib\treserved_gib\tdevice_gib\tcapacity_gib\tat_risk_gib\n");
    for (size_t i = 0; i < n; i++) {
        double v[6];
        for (int k = 0; k < 6; k++)
            v[k] = json_number_value(json_array_get(a[k], i));
        double stat = v[1] - v[2] - v[3] - v[4] - v[5];
        fprintf(out, "%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", 1e3 * v[0], stat, v[2],
                v[3], v[4], v[5], v[1], v[1] + frag, v[1] + frag + outside, cap, risk);
    }
    json_decref(root);
    return 0;
}

/* ------------------------------------------------------------- gantt */

/* The largest stage (trace pid) a gantt chart takes. */
#define MB_PLOT_MAX_STAGE 1000000

/* `mbsim run --trace` JSON -> one row per slice: track (y), start/end (ms),
 * category. Tracks are numbered stage by stage: compute, each comm kind, host. */
/* The distinct categories of a trace's slices (at most PLOT_MAX_CATS, the rest share the legend's
 * last grey entry's colour and are not listed). */
#define PLOT_MAX_CATS 48
struct mb_plot_cats {
    char name[PLOT_MAX_CATS][64];
    int n;
};

static void mb_cli__cat_add(struct mb_plot_cats *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->name[i], name))
            return;
    if (c->n < PLOT_MAX_CATS && strlen(name) < sizeof c->name[0])
        snprintf(c->name[c->n++], sizeof c->name[0], "%s", name);
}

/* The legend of a gantt chart: the categories present, in gantt.gp's order of its colours, then
 * any other in the order met; spaces (and tabs) written as '~', gantt.gp's word separator. */
static void mb_cli__gantt_legend(const struct mb_plot_cats *c, char *out, size_t len)
{
    static const char *const order[] = {
        "vision_encoder",    "projector",       "decoder_attention", "moe_experts",     "dispatch_combine_compute",
        "dense_other",       "recompute",       "optimizer",         "exposed_tp_comm", "exposed_ep_comm",
        "exposed_pp_comm",   "exposed_dp_comm", "exposed_fsdp_comm", "TP comm",         "CP comm",
        "EP comm",           "PP p2p",          "DP comm",           "FSDP comm",       "launch",
        "exposed_host_launch"};
    const size_t no = sizeof order / sizeof order[0];
    size_t used = 0;
    out[0] = '\0';
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < (pass ? (size_t)c->n : no); k++) {
            const char *name = pass ? c->name[k] : order[k];
            int known = 0, present = 0;
            for (size_t j = 0; j < no && pass; j++)
                known |= !strcmp(order[j], name);
            for (int j = 0; j < c->n && !pass; j++)
                present |= !strcmp(c->name[j], name);
            if (pass ? known : !present)
                continue;
            if (used + strlen(name) + 2 > len)
                return;
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "", name);
            for (char *q = out + used - strlen(name); *q; q++)
                if (*q == ' ' || *q == '\t')
                    *q = '~';
        }
}

static int mb_cli__conv_gantt(const char *in, FILE *out, struct mb_plot_meta *meta)
{
    json_t *root = mb_cli__read_input(in);
    if (!root)
        return -1;
    struct mb_plot_cats cats = {.n = 0};
    mb_cli__subject(meta, in, root);
    json_t *ev = json_object_get(root, "traceEvents");
    if (!json_is_array(ev)) {
        fprintf(stderr, "mbsim plot: %s: no \"traceEvents\" array (expected the output of mbsim run --trace)\n", in);
        json_decref(root);
        return -1;
    }
    size_t i, n = 0;
    json_t *e;
    fprintf(out, "track\tlabel\tstart_ms\tend_ms\tcategory\n");
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!ph || strcmp(ph, "X") || !name)
            continue;
        json_int_t pid = json_integer_value(json_object_get(e, "pid"));
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        if (pid < 0 || pid > MB_PLOT_MAX_STAGE || tid < 0 || tid > 7)
            continue; /* not a slice of mbsim's stages and tracks: pid * 8 + tid must not overflow */
        double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
        /* slices are named per op ("L3 linear_fc1 fwd"); colour by breakdown category */
        const char *cat = json_string_value(json_object_get(json_object_get(e, "args"), "category"));
        if (cat)
            name = cat;
        /* 8 tracks per stage: compute, 6 communication kinds, host launches (mb_step_trace) */
        static const char *const track[8] = {"compute", "TP", "CP", "EP", "PP", "DP", "FSDP", "host"};
        fprintf(out, "%d\tstage %d %s\t%.6f\t%.6f\t", (int)(pid * 8 + tid), (int)pid, track[tid], ts / 1e3,
                (ts + dur) / 1e3);
        mb_cli__clean_field(name, out);
        fputc('\n', out);
        mb_cli__cat_add(&cats, name);
        n++;
    }
    json_decref(root);
    mb_cli__gantt_legend(&cats, meta->legend, sizeof meta->legend);
    if (!n) {
        fprintf(stderr, "mbsim plot: %s: the trace has no slices\n", in);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- command */

/* The arguments gnuplot runs with: gnuplot -c SCRIPT INFILE INFILE2 OUTFILE MBS_AXIS SUBJECT LEGEND
 * (the scripts take ARG1..ARG6 as infile, infile2, outfile, mbs_axis, the title's subject and
 * gantt's legend; the last two are strings gnuplot prints, never commands). */
struct mb_cli__gp_args {
    char script[1100], in1[1100], in2[1100], out[1100];
    char *argv[10];
};

/* Fill a from the paths; -1 (after a message) when one is too long. */
static int mb_cli__gp_argv(struct mb_cli__gp_args *a, const char *script, const char *in1, const char *in2,
                           const char *out, int mbs_axis, struct mb_plot_meta *meta)
{
    if (mb_cli__gp_path(script, a->script, sizeof a->script) || mb_cli__gp_path(in1, a->in1, sizeof a->in1) ||
        (in2 && mb_cli__gp_path(in2, a->in2, sizeof a->in2)) || mb_cli__gp_path(out, a->out, sizeof a->out)) {
        fprintf(stderr, "mbsim plot: a path given to gnuplot is longer than %zu bytes\n", sizeof a->out - 3);
        return -1;
    }
    if (!in2)
        a->in2[0] = '\0';
    char *v[] = {"gnuplot", "-c", a->script, a->in1, a->in2, a->out, mbs_axis ? "1" : "0", meta->subject,
                 meta->legend, NULL};
    memcpy(a->argv, v, sizeof v);
    return 0;
}

/* The user's input of this `mbsim plot`, named with what gnuplot prints (its argv has temporary files). */
static const char *mb_cli__plot_input = "";

/* gnuplot's messages (read from fd until it closes), each as "mbsim plot: INPUT: gnuplot: LINE": a
 * warning the scripts did not foresee names the input that caused it (issue 37), escaped (mb_text.h). */
static void mb_cli__relay_gnuplot(int fd)
{
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        return;
    }
    char line[2048], safe[4 * sizeof line], in[4 * 1024];
    mb_text_escape(in, sizeof in, mb_cli__plot_input, NULL);
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (!*line)
            continue;
        mb_text_escape(safe, sizeof safe, line, NULL);
        fprintf(stderr, "mbsim plot: %s: gnuplot: %s\n", in, safe);
    }
    fclose(fp);
}

/* Run gp with argv (no shell, no PATH search: gp is the binary's path), relay its messages, and wait. */
static int mb_cli__run_gnuplot(const char *gp, char *const argv[])
{
    int pfd[2];
    if (pipe(pfd)) {
        fprintf(stderr, "mbsim plot: pipe: %s\n", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mbsim plot: fork: %s\n", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pfd[0]);
        if (dup2(pfd[1], 2) < 0)
            _exit(127);
        close(pfd[1]);
        execv(gp, argv);
        fprintf(stderr, "mbsim plot: cannot run %s: %s\n", gp, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    mb_cli__relay_gnuplot(pfd[0]);
    int st;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "mbsim plot: gnuplot failed on %s\n", argv[2]);
        return -1;
    }
    return 0;
}

/* The fuzz harness (tests/fuzz/fuzz_plot.c) compiles this file with
 * MB_PLOT_RUN_HOOK defined: gnuplot is then started through mb_plot_run_hook,
 * which the harness may point at a stand-in that runs no process (it gets the
 * argv gnuplot would get). mbsim itself always calls mb_cli__run_gnuplot. */
#ifdef MB_PLOT_RUN_HOOK
extern int (*mb_plot_run_hook)(const char *gp, char *const argv[]);
int (*mb_plot_run_hook)(const char *gp, char *const argv[]) = mb_cli__run_gnuplot;
#define MB_RUN_GNUPLOT mb_plot_run_hook
#else
#define MB_RUN_GNUPLOT mb_cli__run_gnuplot
#endif

int mb_cmd_plot(int argc, char **argv)
{
    const char *kind = NULL, *in = NULL, *out = NULL, *v;
    int c, rc = -1;
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'}, {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim plot", "ho:", lo, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cli__usage_plot(stdout);
            rc = 0;
        } else if (c == 'o') {
            out = v;
        } else if (c == CLI_OPERAND && (!kind || !in)) {
            *(kind ? &in : &kind) = v;
        } else if (c == CLI_OPERAND) {
            fprintf(stderr, "mbsim plot: one input expected, got '%s' too\n", v);
            rc = EXIT_USAGE;
        } else {
            mb_cli__usage_plot(stderr);
            rc = EXIT_USAGE;
        }
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!kind || !in) {
        mb_cli__usage_plot(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(kind, "validate") && strcmp(kind, "sweep") && strcmp(kind, "breakdown") && strcmp(kind, "gantt") &&
        strcmp(kind, "memory")) {
        fprintf(stderr, "mbsim plot: unknown kind '%s'; expected one of: validate, sweep, breakdown, gantt, memory\n",
                kind);
        return EXIT_USAGE;
    }
    char def_out[64];
    if (!out) {
        snprintf(def_out, sizeof def_out, "%s.png", kind);
        out = def_out;
    }
    if (!mb_cli__has_suffix(out, ".png") && !mb_cli__has_suffix(out, ".svg")) {
        fprintf(stderr, "mbsim plot: -o %s: the output must end in .png or .svg\n", out);
        return EXIT_USAGE;
    }
    struct mb_err oe; /* gnuplot writes the chart: a folder mbsim cannot write to is named here, not by gnuplot */
    mb_err_clear(&oe);
    if (mb_outfile_probe(out, NULL, &oe)) {
        mb_cli_print_err(&oe);
        return EXIT_BAD_INPUT;
    }
    char gp[1024];
    if (mb_cli__find_gnuplot(gp, sizeof gp)) {
        fprintf(stderr, "mbsim plot: gnuplot not found (install it: apt-get install gnuplot-nox, or set "
                        "MBSIM_GNUPLOT to its path); every other mbsim command works without it\n");
        return EXIT_BAD_INPUT;
    }
    char script[1024];
    int sn = snprintf(script, sizeof script, "%s/plots/%s.gp", mb_data_dir(), kind);
    if (sn < 0 || (size_t)sn >= sizeof script || !mb_file_exists(script)) {
        fprintf(stderr,
                "mbsim plot: script '%s' not found (data directory from %s; set MBSIM_DATA_DIR to an mbsim "
                "source tree or to the share/mbsim of an install)\n",
                script, mb_data_dir_origin());
        return EXIT_BAD_INPUT;
    }
    struct mb_err ie;
    mb_err_clear(&ie);
    if (strcmp(in, "-") && mb_input_check(in, "a TSV or JSON file", &ie)) {
        char msg[MB_ERR_TEXT_LEN];
        mb_err_format(&ie, msg, sizeof msg);
        fprintf(stderr, "mbsim plot: %s\n", msg);
        return EXIT_BAD_INPUT;
    }

    char t1[1024], t2[1024];
    FILE *f1 = mb_cli__tmp_tsv(t1, sizeof t1), *f2 = NULL;
    if (!f1) {
        fprintf(stderr, "mbsim plot: cannot create a temporary file in %s ($TMPDIR, else /tmp): %s\n",
                getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
        return EXIT_BAD_INPUT;
    }
    int mbs_axis = 1;
    struct mb_plot_meta meta = {.legend = ""};
    mb_cli__subject(&meta, in, NULL); /* breakdown, memory and gantt may name the scenario instead */
    if (!strcmp(kind, "validate")) {
        rc = mb_cli__has_suffix(in, ".tsv") ? mb_cli__conv_validate_tsv(in, f1) : mb_cli__conv_validate(in, f1);
    } else if (!strcmp(kind, "sweep")) {
        f2 = mb_cli__tmp_tsv(t2, sizeof t2);
        if (!f2)
            fprintf(stderr, "mbsim plot: cannot create a temporary file: %s\n", strerror(errno));
        rc = f2 ? mb_cli__conv_sweep(in, f1, f2, &mbs_axis, &meta) : -1;
    } else if (!strcmp(kind, "gantt")) {
        rc = mb_cli__conv_gantt(in, f1, &meta);
    } else if (!strcmp(kind, "memory")) {
        rc = mb_cli__conv_memory(in, f1, &meta);
    } else {
        rc = mb_cli__conv_breakdown(in, f1, &meta);
    }
    fclose(f1);
    if (f2)
        fclose(f2);
    struct mb_cli__gp_args ga;
    if (!rc)
        rc = mb_cli__gp_argv(&ga, script, t1, f2 ? t2 : NULL, out, mbs_axis, &meta);
    if (!rc) {
        mb_cli__plot_input = in;
        rc = MB_RUN_GNUPLOT(gp, ga.argv);
        if (rc)
            unlink(out); /* gnuplot opens the output before it fails: no blank chart left behind */
    }
    unlink(t1);
    if (f2)
        unlink(t2);
    if (rc)
        return EXIT_BAD_INPUT;
    struct stat st;
    if (stat(out, &st) || st.st_size == 0) {
        fprintf(stderr, "mbsim plot: gnuplot wrote nothing to %s\n", out);
        unlink(out);
        return EXIT_BAD_INPUT;
    }
    fprintf(stderr, "mbsim plot: wrote %s\n", out);
    return 0;
}
