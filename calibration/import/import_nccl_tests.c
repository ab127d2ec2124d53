/*
 * import_nccl_tests.c -- parse nccl-tests output (hardware.md C.1) into runs
 * of (size, time, algbw, busbw) rows; see mb_import.h for what is accepted
 * and docs/calibration.md "nccl-tests tables" for the YAML written.
 *
 * The column header is keyed by its text, not by position, so the older
 * layout (no `root`, `error` instead of `#wrong`) and single-block tables
 * parse with the same code.
 */
#include "mb_import.h"
#include "mb_input.h"
#include "mb_yaml.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_MAX_TOK 48
#define NCCL_MAX_COUNT 1e15 /* largest count read (#wrong, root): far above any real one, exact as a double */
#define NCCL_MAX_HOSTS 256

static const char *const op_names[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                       "sendrecv",   "broadcast",  "reduce",         "hypercube",
                                       "scatter",    "gather"};

/* Strip an MPI launcher prefix: "[1,0]<stdout>:" or "[1,0]:" (Open MPI --tag-output). */
static char *mb_nccl__strip_prefix(char *s)
{
    if (s[0] != '[')
        return s;
    char *p = s + 1;
    while (isdigit((unsigned char)*p) || *p == ',')
        p++;
    if (*p != ']')
        return s;
    p++;
    if (*p == '<') {
        char *q = strchr(p, '>');
        if (!q)
            return s;
        p = q + 1;
    }
    if (*p != ':')
        return s;
    return p + 1;
}

static int mb_nccl__tokenize(char *s, char **tok, int max)
{
    int n = 0;
    for (char *p = strtok(s, " \t\r\n"); p; p = strtok(NULL, " \t\r\n"))
        if (n < max)
            tok[n++] = p;
        else
            return max + 1;
    return n;
}

static int mb_nccl__num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int mb_nccl__type_size(const char *t)
{
    static const struct { const char *n; int s; } ts[] = {
        {"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8}, {"int8", 1}, {"uint8", 1}, {"int32", 4},
        {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"f8e4m3", 1}, {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        if (!strcmp(t, ts[i].n))
            return ts[i].s;
    return 0;
}

/* Column layout of the current header. */
struct layout {
    int n;                     /* tokens per data row */
    int size, count, type, redop, root;
    int nb;                    /* blocks */
    int time[2], algbw[2], busbw[2], wrong[2];
};

static int mb_nccl__parse_header(char **tok, int n, struct layout *L)
{
    memset(L, -1, sizeof *L);
    L->n = n;
    L->nb = 0;
    for (int i = 0; i < n; i++) {
        const char *t = tok[i];
        if (!strcmp(t, "size")) L->size = i;
        else if (!strcmp(t, "count")) L->count = i;
        else if (!strcmp(t, "type")) L->type = i;
        else if (!strcmp(t, "redop")) L->redop = i;
        else if (!strcmp(t, "root")) L->root = i;
        else if (!strcmp(t, "time")) {
            if (L->nb == 2)
                return -1;
            L->time[L->nb++] = i;
        } else if (!strcmp(t, "algbw") && L->nb) L->algbw[L->nb - 1] = i;
        else if (!strcmp(t, "busbw") && L->nb) L->busbw[L->nb - 1] = i;
        else if ((!strcmp(t, "#wrong") || !strcmp(t, "error") || !strcmp(t, "wrong")) && L->nb)
            L->wrong[L->nb - 1] = i;
    }
    if (L->size < 0 || L->count < 0 || L->type < 0 || L->nb < 1)
        return -1;
    for (int b = 0; b < L->nb; b++)
        if (L->algbw[b] < 0 || L->busbw[b] < 0)
            return -1;
    return 0;
}

struct pstate {
    char pending_op[32];
    int n_ranks, n_hosts;
    char *hosts[NCCL_MAX_HOSTS];
    char gpu[64], gpu_other[64]; /* rank 0's device name; the first rank's that differs */
};

static void mb_nccl__pstate_reset(struct pstate *p)
{
    for (int i = 0; i < p->n_hosts; i++)
        mb_free(p->hosts[i]);
    p->n_hosts = 0;
    p->n_ranks = 0;
    p->gpu[0] = p->gpu_other[0] = '\0';
}

static void mb_nccl__parse_rank_line(struct pstate *p, char *line)
{
    /* "  Rank  0 Group  0 Pid   6899 on HOST device  0 [0000:04:00] NVIDIA H100 80GB HBM3" */
    char *on = strstr(line, " on ");
    p->n_ranks++;
    if (!on)
        return;
    char host[128];
    if (sscanf(on + 4, "%127s", host) == 1) {
        int k;
        for (k = 0; k < p->n_hosts && strcmp(p->hosts[k], host); k++)
            ;
        if (k == p->n_hosts && p->n_hosts < NCCL_MAX_HOSTS)
            p->hosts[p->n_hosts++] = mb_strdup(host);
    }
    char *br = strchr(on, ']');
    if (br) {
        char dev[64];
        br++;
        while (*br == ' ')
            br++;
        snprintf(dev, sizeof dev, "%s", br);
        size_t l = strlen(dev);
        while (l && isspace((unsigned char)dev[l - 1]))
            dev[--l] = '\0';
        if (p->n_ranks == 1)
            snprintf(p->gpu, sizeof p->gpu, "%s", dev);
        else if (!p->gpu_other[0] && strcmp(dev, p->gpu))
            snprintf(p->gpu_other, sizeof p->gpu_other, "%s", dev);
    }
}

static void mb_nccl__run_push_point(struct mb_nccl_run *r, const struct mb_nccl_point *pt)
{
    r->points = mb_realloc(r->points, (size_t)(r->n_points + 1) * sizeof *r->points);
    r->points[r->n_points++] = *pt;
}

/* Op from the columns when neither a header line nor the file name says it. */
static void mb_nccl__infer_op(struct mb_nccl_run *r, const char *path)
{
    if (r->op[0])
        return;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++) {
        char nodash[32];
        size_t k = 0;
        for (const char *c = op_names[i]; *c && k + 1 < sizeof nodash; c++)
            if (*c != '_')
                nodash[k++] = *c;
        nodash[k] = '\0';
        if (strstr(base, op_names[i]) || strstr(base, nodash)) {
            snprintf(r->op, sizeof r->op, "%s", op_names[i]);
            snprintf(r->op_from, sizeof r->op_from, "file name");
            return;
        }
    }
    snprintf(r->op_from, sizeof r->op_from, "columns");
    int ws = mb_nccl__type_size(r->dtype);
    const struct mb_nccl_point *p = r->n_points ? &r->points[0] : NULL;
    double ratio = (p && ws && p->count > 0) ? p->size / (p->count * ws) : 0;
    int sum = strcmp(r->redop, "none") != 0 && r->redop[0];
    const char *op = "unknown";
    if (ratio > 0.99 && ratio < 1.01)
        op = sum ? (r->root >= 0 ? "reduce" : "all_reduce") : (r->root >= 0 ? "broadcast" : "sendrecv");
    else if (ratio > 1.5)
        op = sum ? "reduce_scatter" : "all_gather"; /* all_gather and alltoall print alike */
    snprintf(r->op, sizeof r->op, "%s", op);
}

/* One log being read (mb_import_nccl_tests). */
struct mb_nccl__parse {
    const char *path;
    struct mb_err *err;
    struct mb_nccl_log add;   /* the runs read so far */
    struct pstate ps;
    struct layout L;          /* the current column header */
    struct mb_nccl_run *cur;  /* the run whose rows are being read, or NULL */
    char *row;                /* the row being tokenized (tokens point into it) */
    size_t rowcap;
    int lineno;
};

/* Starts a run at the column header line (its layout already in P->L). */
static void mb_nccl__begin_run(struct mb_nccl__parse *P)
{
    struct mb_nccl_run *cur;
    P->add.runs = mb_realloc(P->add.runs, (size_t)(P->add.n_runs + 1) * sizeof *P->add.runs);
    cur = P->cur = &P->add.runs[P->add.n_runs++];
    memset(cur, 0, sizeof *cur);
    snprintf(cur->file, sizeof cur->file, "%s", P->path);
    cur->line = P->lineno;
    cur->root = -1;
    cur->avg_busbw = -1;
    cur->truncated = 1; /* until a footer is seen */
    cur->n_ranks = P->ps.n_ranks;
    cur->n_hosts = P->ps.n_hosts;
    snprintf(cur->gpu_name, sizeof cur->gpu_name, "%s", P->ps.gpu);
    snprintf(cur->gpu_other, sizeof cur->gpu_other, "%s", P->ps.gpu_other);
    if (P->ps.pending_op[0]) {
        snprintf(cur->op, sizeof cur->op, "%s", P->ps.pending_op);
        snprintf(cur->op_from, sizeof cur->op_from, "header");
    }
}

/* A '#' line at s: test name, thread line, rank line, footer or column header. @return 0, or -1 on an error. */
static int mb_nccl__comment(struct mb_nccl__parse *P, const char *s)
{
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", s + 1);
    char *start = strstr(copy, "Collective test starting:");
    if (start) {
        char name[64] = "";
        if (sscanf(start + 25, "%63s", name) == 1) {
            char *suf = strstr(name, "_perf");
            if (suf)
                *suf = '\0';
            /* a longer name is cut to fit, as before, without a -Wformat-truncation */
            snprintf(P->ps.pending_op, sizeof P->ps.pending_op, "%.*s", (int)sizeof P->ps.pending_op - 1, name);
        }
        return 0;
    }
    if (strstr(copy, "nThread")) {
        mb_nccl__pstate_reset(&P->ps);
        P->cur = NULL;
        return 0;
    }
    char *rk = copy;
    while (*rk == ' ')
        rk++;
    if (!strncmp(rk, "Rank ", 5)) {
        mb_nccl__parse_rank_line(&P->ps, rk);
        return 0;
    }
    if (strstr(copy, "Avg bus bandwidth") && P->cur) {
        char *c = strchr(copy, ':');
        double v;
        char tmp[64];
        if (c && sscanf(c + 1, "%63s", tmp) == 1 && !mb_nccl__num(tmp, &v))
            P->cur->avg_busbw = v;
        P->cur->truncated = 0;
        P->cur = NULL;
        return 0;
    }
    char *tok[NCCL_MAX_TOK];
    int nt = mb_nccl__tokenize(copy, tok, NCCL_MAX_TOK);
    int has_size = 0, has_time = 0;
    for (int i = 0; i < nt && i < NCCL_MAX_TOK; i++) {
        has_size |= !strcmp(tok[i], "size");
        has_time |= !strcmp(tok[i], "time");
    }
    if (has_size && has_time) {
        if (nt > NCCL_MAX_TOK || mb_nccl__parse_header(tok, nt, &P->L))
            return mb_err_set(P->err, P->path, P->lineno, 1,
                              "unrecognized nccl-tests column header (need size, count, type, time, algbw, busbw)");
        mb_nccl__begin_run(P);
    }
    return 0;
}

/* Reads the numeric fields of a result row into *pt. @return the name of the first bad field (its token index
 * in *badi, what it should be in *want), or NULL. */
static const char *mb_nccl__row_fields(const struct layout *L, char **tok, struct mb_nccl_point *pt, int *badi,
                                       const char **want)
{
    const char *bad = NULL;
    if (mb_nccl__num(tok[L->size], &pt->size) || !mb_dbl_is_whole(pt->size, 0, NCCL_MAX_COUNT))
        bad = "size", *badi = L->size, *want = "a whole number of bytes";
    else if (mb_nccl__num(tok[L->count], &pt->count) || !mb_dbl_is_whole(pt->count, 0, 1e18))
        bad = "count", *badi = L->count;
    for (int b = 0; b < L->nb && !bad; b++) {
        if (mb_nccl__num(tok[L->time[b]], &pt->time_us[b]) || !(pt->time_us[b] > 0))
            bad = "time", *badi = L->time[b], *want = "a positive number of microseconds";
        else if (mb_nccl__num(tok[L->algbw[b]], &pt->algbw[b]) || pt->algbw[b] < 0)
            bad = "algbw", *badi = L->algbw[b];
        else if (mb_nccl__num(tok[L->busbw[b]], &pt->busbw[b]) || pt->busbw[b] < 0)
            bad = "busbw", *badi = L->busbw[b];
        pt->wrong[b] = -1;
        if (!bad && L->wrong[b] >= 0 && strcmp(tok[L->wrong[b]], "N/A")) {
            double w;
            if (mb_nccl__num(tok[L->wrong[b]], &w) || !mb_dbl_is_whole(ceil(w), 0, NCCL_MAX_COUNT))
                bad = "#wrong", *badi = L->wrong[b], *want = "a non-negative count or N/A";
            else
                pt->wrong[b] = (long)ceil(w);
        }
    }
    return bad;
}

/* A non-'#' line at s (inside buf, of file f): a result row of the current run, or noise.
 * @return 0 to read on, 1 to stop (a truncated file's cut last row), -1 on an error. */
static int mb_nccl__row(struct mb_nccl__parse *P, FILE *f, const char *buf, const char *s, int complete)
{
    struct mb_nccl_run *cur = P->cur;
    const struct layout *L = &P->L;
    size_t sl = strlen(s) + 1;
    if (sl > P->rowcap)
        P->row = mb_realloc(P->row, P->rowcap = sl);
    char *row = P->row;
    memcpy(row, s, sl); /* tokens point into row: token - row is the column */
    char *tok[NCCL_MAX_TOK];
    int nt = mb_nccl__tokenize(row, tok, NCCL_MAX_TOK);
    if (nt == 0 || strstr(s, "NCCL INFO") || strstr(s, "NCCL WARN") || !cur)
        return 0; /* blank, NCCL debug output, or launcher noise outside a table */
    if (!isdigit((unsigned char)tok[0][0])) {
        if (!complete && feof(f))
            return 1;
        return mb_err_set(P->err, P->path, P->lineno, (int)(tok[0] - row) + (int)(s - buf) + 1,
                          "expected an nccl-tests result row (size first), got '%.40s'", tok[0]);
    }
    struct mb_nccl_point pt;
    memset(&pt, 0, sizeof pt);
    pt.line = P->lineno;
    pt.n_blocks = L->nb;
    const char *bad = NULL, *want = "a non-negative number";
    int badi = -1; /* token index of the bad field */
    if (nt != L->n) {
        if (!complete) { /* cut last row of a truncated file */
            cur->truncated = 1;
            return 1;
        }
        return mb_err_set(P->err, P->path, P->lineno, 1, "expected %d fields like the column header, got %d", L->n,
                          nt > NCCL_MAX_TOK ? NCCL_MAX_TOK + 1 : nt);
    }
    bad = mb_nccl__row_fields(L, tok, &pt, &badi, &want);
    if (bad) {
        if (!complete) {
            cur->truncated = 1;
            return 1;
        }
        return mb_err_set(P->err, P->path, P->lineno, (int)(tok[badi] - row) + (int)(s - buf) + 1,
                          "%s (field %d): '%.40s' is not %s", bad, badi + 1, tok[badi], want);
    }
    if (cur->n_points && pt.size < cur->points[cur->n_points - 1].size)
        return mb_err_set(P->err, P->path, P->lineno, 1, "size %.0f after %.0f: rows must not decrease in size",
                          pt.size, cur->points[cur->n_points - 1].size);
    if (cur->n_points == 0) {
        snprintf(cur->dtype, sizeof cur->dtype, "%s", tok[L->type]);
        snprintf(cur->redop, sizeof cur->redop, "%s", L->redop >= 0 ? tok[L->redop] : "");
        double root;
        if (L->root >= 0 && !mb_nccl__num(tok[L->root], &root) && mb_dbl_is_whole(root, -1, NCCL_MAX_COUNT))
            cur->root = (int)root;
    }
    mb_nccl__run_push_point(cur, &pt);
    return 0;
}

/* Appends the runs with rows to log (their op inferred where no header named it), frees the rest. */
static void mb_nccl__keep_runs(struct mb_nccl_log *add, struct mb_nccl_log *log, const char *path)
{
    for (int i = 0; i < add->n_runs; i++) {
        if (add->runs[i].n_points == 0) {
            mb_free(add->runs[i].points);
            continue;
        }
        mb_nccl__infer_op(&add->runs[i], path);
        log->runs = mb_realloc(log->runs, (size_t)(log->n_runs + 1) * sizeof *log->runs);
        log->runs[log->n_runs++] = add->runs[i];
    }
    mb_free(add->runs);
}

int mb_import_nccl_tests(const char *path, struct mb_nccl_log *log, struct mb_err *err)
{
    FILE *f = mb_input_open(path, "an nccl-tests log file", 0, err);
    if (!f)
        return -1;
    struct mb_nccl__parse P;
    memset(&P, 0, sizeof P);
    P.path = path;
    P.err = err;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        P.lineno++;
        int complete = len > 0 && buf[len - 1] == '\n';
        char *s = mb_nccl__strip_prefix(buf);
        while (*s == ' ' || *s == '\t')
            s++;
        int r = *s == '#' ? mb_nccl__comment(&P, s) : mb_nccl__row(&P, f, buf, s, complete);
        if (r < 0)
            rc = r;
        if (r)
            break;
    }
    free(buf);
    mb_free(P.row);
    fclose(f);
    mb_nccl__pstate_reset(&P.ps);
    if (!rc) {
        int pts = 0;
        for (int i = 0; i < P.add.n_runs; i++)
            pts += P.add.runs[i].n_points;
        if (pts == 0)
            rc = mb_err_set(err, path, P.lineno, 1, "no nccl-tests result rows found");
    }
    if (rc) {
        mb_nccl_log_free(&P.add);
        return -1;
    }
    mb_nccl__keep_runs(&P.add, log, path);
    return 0;
}

void mb_nccl_log_free(struct mb_nccl_log *log)
{
    if (!log)
        return;
    for (int i = 0; i < log->n_runs; i++)
        mb_free(log->runs[i].points);
    mb_free(log->runs);
    log->runs = NULL;
    log->n_runs = 0;
}

/* Group size of run r: its "# Rank" lines, else the caller's `ranks`. */
static int mb_nccl__run_group(const struct mb_nccl_run *r, int ranks)
{
    return r->n_ranks > 0 ? r->n_ranks : ranks;
}

int mb_nccl_log_write_table(const struct mb_nccl_log *log, const char *gpu, const char *base, int ranks, FILE *o,
                            struct mb_err *err)
{
    /* every run must say what it measured before anything is written */
    for (int i = 0; i < log->n_runs; i++) {
        const struct mb_nccl_run *r = &log->runs[i];
        size_t k = 0, nops = sizeof op_names / sizeof op_names[0];
        while (k < nops && strcmp(r->op, op_names[k]))
            k++;
        if (!strcmp(r->op, "unknown"))
            return mb_err_set(err, r->file, r->line, 1,
                              "cannot tell which collective this run measured (no header line names it, the file "
                              "name has no test name such as all_reduce_perf, and the columns fit several); "
                              "rename the log after its test binary");
        if (k == nops)
            return mb_err_set(err, r->file, r->line, 1,
                              "'%s' is not an nccl-tests collective; expected all_reduce, all_gather, "
                              "reduce_scatter, alltoall, sendrecv, broadcast, reduce, hypercube, scatter or gather",
                              r->op);
        if (r->gpu_other[0])
            return mb_err_set(err, r->file, r->line, 1,
                              "the ranks of this run are on different GPUs ('%s' and '%s'); calibrate one GPU kind "
                              "at a time", r->gpu_name, r->gpu_other);
        if (r->n_ranks > 0 && ranks > 0 && ranks != r->n_ranks)
            return mb_err_set(err, r->file, r->line, 1,
                              "the log lists %d ranks ('#  Rank N ...' lines) but --ranks is %d; --ranks is for "
                              "logs that list none",
                              r->n_ranks, ranks);
        if (mb_nccl__run_group(r, ranks) < 2)
            return mb_err_set(err, r->file, r->line, 1,
                              "the log lists %d rank(s) ('#  Rank N ...' lines); a collective needs 2 or more%s",
                              r->n_ranks, r->n_ranks ? "" : ": give the group size with --ranks N");
    }
    if (!o)
        return 0;
    fprintf(o, "# Calibration overlay written by `mbsim calibrate nccl-tests` (docs/calibration.md,\n"
               "# \"Measured collectives\"): every valid row of every run, out-of-place and in-place.\n"
               "# A scenario names it as calibration: {table: FILE}; `mbsim collective --calib FILE` uses it.\n");
    fprintf(o, "schema_version: 1\ngpu: %s\nbase: ", gpu);
    mb_yaml_write_quoted(o, base);
    fprintf(o, "\nmeasured:\n  source: ");
    char src[1200];
    int n = snprintf(src, sizeof src, "nccl-tests log%s", log->n_runs > 1 ? "s" : "");
    for (int i = 0; i < log->n_runs && n > 0 && (size_t)n < sizeof src; i++)
        if (i == 0 || strcmp(log->runs[i].file, log->runs[i - 1].file))
            n += snprintf(src + n, sizeof src - (size_t)n, "%s%s", i ? ", " : " ", log->runs[i].file);
    mb_yaml_write_quoted(o, src);
    fprintf(o, "\n  collectives:\n");
    long skipped = 0;
    for (int i = 0; i < log->n_runs; i++) {
        const struct mb_nccl_run *r = &log->runs[i];
        for (int k = 0; k < r->n_points; k++) {
            const struct mb_nccl_point *p = &r->points[k];
            for (int bl = 0; bl < p->n_blocks; bl++) {
                if (!(p->size > 0) || !(p->time_us[bl] > 0) || p->wrong[bl] > 0) {
                    skipped++; /* empty message, no time, or a run that failed validation */
                    continue;
                }
                fprintf(o, "    - {op: %s, group: %d, bytes: %.0f B, time: %.6g us, busbw: %.6g GB/s, dtype: %s, "
                           "source: ",
                        r->op, mb_nccl__run_group(r, ranks), p->size, p->time_us[bl], p->busbw[bl], r->dtype);
                snprintf(src, sizeof src, "%s:%d %s", r->file, p->line, bl ? "in-place" : "out-of-place");
                mb_yaml_write_quoted(o, src);
                fprintf(o, "}\n");
            }
        }
    }
    fprintf(o, "  summary:   # informative, not read: the runs (rows skipped: %ld with size 0, no time or #wrong > 0)\n",
            skipped);
    for (int i = 0; i < log->n_runs; i++) {
        const struct mb_nccl_run *r = &log->runs[i];
        fprintf(o, "    - {op: %s, op_from: %s, group: %d, rank_lines: %d, hosts: %d, rows: %d, dtype: %s, redop: %s, "
                   "root: %d, truncated: %s",
                r->op, r->op_from, mb_nccl__run_group(r, ranks), r->n_ranks, r->n_hosts, r->n_points, r->dtype,
                r->redop[0] ? r->redop : "none", r->root, r->truncated ? "true" : "false");
        if (r->avg_busbw >= 0)
            fprintf(o, ", avg_busbw: %g GB/s", r->avg_busbw);
        fprintf(o, ", gpu: ");
        mb_yaml_write_quoted(o, r->gpu_name);
        snprintf(src, sizeof src, "%s:%d", r->file, r->line);
        fprintf(o, ", source: ");
        mb_yaml_write_quoted(o, src);
        fprintf(o, "}\n");
    }
    if (ferror(o))
        return mb_err_set(err, NULL, 0, 0, "write error");
    return 0;
}
