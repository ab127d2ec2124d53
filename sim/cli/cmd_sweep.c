/*
 * cmd_sweep.c -- `mbsim sweep`: the cartesian product of scenario keys, run on
 * every core, written as TSV/JSON, with the ranked configurations that fit and
 * the throughput-vs-memory Pareto front (docs/sweep.md).
 */
#include <jansson.h>
#if defined(__GLIBC__) || defined(__linux__)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_sweep.h"

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

int mb_cmd_sweep(int argc, char **argv);

static void usage_sweep(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim sweep FILE.yaml [--set key=v1,v2,...]... [-j N] [--top N]\n"
            "                   [--tsv OUT.tsv] [--json OUT.json] [--shard i/N] [--no-header]\n"
            "                   [--mb-cap N | --exact] [--digits N]\n"
            "\n"
            "Predicts every configuration of the cartesian product of the scenario's\n"
            "`sweep:` block and the --set options (a --set replaces the block's key),\n"
            "lists the combinations that cannot exist with their reason, ranks the\n"
            "configurations that fit in memory and prints the throughput-vs-memory\n"
            "Pareto front (docs/sweep.md).\n"
            "\n"
            "  --set key=v1,v2   sweep a dotted scenario key, e.g. parallel.tp=1,2,4;\n"
            "                    list values join names with '+': cuda_graph.modules=none,attn+moe_router\n"
            "  -j N              worker threads (default: all online CPUs)\n"
            "  --top N           configurations in the ranking (default 10)\n"
            "  --tsv FILE        one row per configuration ('-' = stdout, summary then goes to stderr)\n"
            "  --json FILE       the same rows, the ranking and the front as one JSON object ('-' = stdout)\n"
            "  --shard i/N       run configurations i, i+N, i+2N, ... (0 <= i < N); the TSV header is\n"
            "                    written by shard 0 only, so shard files concatenate\n"
            "  --no-header       no TSV header row\n"
            "  --mb-cap N        simulate at most N microbatches per data-parallel rank (at least 4*pp)\n"
            "                    and extend the steady state linearly (default 16; 64 = `mbsim run`)\n"
            "  --exact           simulate every microbatch (mb_step_simulate_exact); slowest\n"
            "  --digits N        significant digits of the numbers in --json (default 6, 17 = exact)\n"
            "\n"
            "keys: %s\n"
            "\n"
            "A progress bar with ETA is drawn on stderr when it is a terminal.\n",
            mb_sweep_keys());
}

static void print_err(const struct mb_err *e)
{
    char buf[1024];
    mb_err_format(e, buf, sizeof buf);
    fprintf(stderr, "mbsim: %s\n", buf);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct progress {
    double t0;
    int tty;
};

static void fmt_hms(char *buf, size_t len, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void on_progress(size_t done, size_t total, void *ctx)
{
    struct progress *p = ctx;
    if (!p->tty || !total)
        return;
    double el = now_s() - p->t0;
    const int w = 30;
    int fill = (int)((double)done / (double)total * w);
    char bar[64], e[32], eta[32];
    for (int i = 0; i < w; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fmt_hms(e, sizeof e, el);
    if (done)
        fmt_hms(eta, sizeof eta, el / (double)done * (double)(total - done));
    else
        snprintf(eta, sizeof eta, "?");
    fprintf(stderr, "\r[%s] %zu/%zu %3.0f%% %s ETA %s ", bar, done, total, 100.0 * (double)done / (double)total,
            e, eta);
    if (done == total)
        fprintf(stderr, "\n");
    fflush(stderr);
}

static void print_values(const struct mb_sweep *sw, size_t idx, FILE *fp)
{
    for (int a = 0; a < sw->n_axes; a++)
        fprintf(fp, "%s%s=%s", a ? " " : "", sw->axis[a].key, mb_sweep_value(sw, idx, a));
}

static void print_row_line(const struct mb_sweep *sw, const struct mb_sweep_row *r, FILE *fp)
{
    fprintf(fp, "%7zu  %9.1f  %8.1f  %5.1f%%  %8.3f  %7.1f  ", r->index, r->tokens_per_s_per_gpu,
            r->model_tflops_per_gpu, 100.0 * r->mfu, r->step_time_s, r->peak_memory_gib);
    print_values(sw, r->index, fp);
    fprintf(fp, "\n");
}

struct reason_group {
    const char *reason;
    size_t count, example;
};

static int by_count(const void *a, const void *b)
{
    const struct reason_group *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->example < y->example ? -1 : x->example > y->example;
}

static void print_summary(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, size_t total,
                          int top, FILE *fp)
{
    size_t ok = 0, invalid = 0, failed = 0, oom = 0;
    for (size_t i = 0; i < n; i++) {
        ok += rows[i].status == MB_SWEEP_OK;
        invalid += rows[i].status == MB_SWEEP_INVALID;
        failed += rows[i].status == MB_SWEEP_FAILED;
        oom += rows[i].status == MB_SWEEP_OK && rows[i].oom;
    }
    fprintf(fp, "sweep of %s: %zu configurations", sw->base.name, total);
    if (n != total)
        fprintf(fp, " (%zu in this shard)", n);
    fprintf(fp, "; %zu simulated (%zu fit, %zu out of memory), %zu invalid, %zu failed\n", ok, ok - oom, oom,
            invalid, failed);
    for (int a = 0; a < sw->n_axes; a++) {
        fprintf(fp, "  %s:", sw->axis[a].key);
        for (int k = 0; k < sw->axis[a].n; k++)
            fprintf(fp, " %s", sw->axis[a].val[k]);
        fprintf(fp, "\n");
    }

    if (invalid + failed) {
        struct reason_group *g = calloc(invalid + failed, sizeof *g);
        size_t ng = 0;
        for (size_t i = 0; i < n; i++) {
            if (rows[i].status == MB_SWEEP_OK)
                continue;
            size_t k = 0;
            while (k < ng && strcmp(g[k].reason, rows[i].reason))
                k++;
            if (k == ng)
                g[ng++] = (struct reason_group){rows[i].reason, 0, rows[i].index};
            g[k].count++;
        }
        qsort(g, ng, sizeof *g, by_count);
        fprintf(fp, "\ninvalid or failed combinations, by reason (every one is a row of --tsv/--json):\n");
        const size_t shown = 25;
        for (size_t k = 0; k < ng && k < shown; k++) {
            fprintf(fp, "  %5zu x %s\n          e.g. config %zu: ", g[k].count, g[k].reason, g[k].example);
            print_values(sw, g[k].example, fp);
            fprintf(fp, "\n");
        }
        if (ng > shown)
            fprintf(fp, "  ... %zu more reasons\n", ng - shown);
        free(g);
    }

    size_t *order = calloc(n ? n : 1, sizeof *order);
    size_t m = mb_sweep_rank(rows, n, order);
    fprintf(fp, "\ntop %d configurations that fit (of %zu):\n", top, m);
    if (m) {
        fprintf(fp, "   rank   config  tok/s/GPU  TFLOP/s    MFU    step s  peak GiB  values\n");
        for (size_t i = 0; i < m && i < (size_t)top; i++) {
            fprintf(fp, "  %5zu", i + 1);
            print_row_line(sw, &rows[order[i]], fp);
        }
    } else {
        fprintf(fp, "  none\n");
    }
    size_t f = mb_sweep_pareto(rows, n, order);
    fprintf(fp, "\nthroughput-vs-memory Pareto front (%zu configurations, memory ascending):\n", f);
    if (f) {
        fprintf(fp, "           config  tok/s/GPU  TFLOP/s    MFU    step s  peak GiB  values\n");
        for (size_t i = 0; i < f; i++) {
            fprintf(fp, "       ");
            print_row_line(sw, &rows[order[i]], fp);
        }
    }
    free(order);
}

static json_t *row_json(const struct mb_sweep *sw, const struct mb_sweep_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "config", json_integer((json_int_t)r->index));
    json_t *v = json_object();
    for (int a = 0; a < sw->n_axes; a++)
        json_object_set_new(v, sw->axis[a].key, json_string(mb_sweep_value(sw, r->index, a)));
    json_object_set_new(o, "values", v);
    json_object_set_new(o, "status",
                        json_string(r->status == MB_SWEEP_OK ? "ok" : r->status == MB_SWEEP_INVALID ? "invalid" : "error"));
    if (r->status != MB_SWEEP_OK) {
        json_object_set_new(o, "reason", json_string(r->reason));
        return o;
    }
    json_object_set_new(o, "step_time_s", json_real(r->step_time_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(r->tokens_per_s_per_gpu));
    json_object_set_new(o, "model_tflops_per_gpu", json_real(r->model_tflops_per_gpu));
    json_object_set_new(o, "mfu", json_real(r->mfu));
    json_object_set_new(o, "peak_memory_gib", json_real(r->peak_memory_gib));
    json_object_set_new(o, "reserved_memory_gib", json_real(r->reserved_memory_gib));
    json_object_set_new(o, "capacity_gib", json_real(r->capacity_gib));
    json_object_set_new(o, "oom", json_boolean(r->oom));
    json_object_set_new(o, "dp", json_integer(r->dp));
    json_object_set_new(o, "microbatches", json_integer(r->microbatches));
    json_t *top = json_array();
    for (int k = 0; k < MB_SWEEP_TOP; k++)
        if (r->top_cat[k] >= 0) {
            json_t *t = json_object();
            json_object_set_new(t, "term", json_string(mb_cat_name((enum mb_cat)r->top_cat[k])));
            json_object_set_new(t, "seconds", json_real(r->top_s[k]));
            json_array_append_new(top, t);
        }
    json_object_set_new(o, "top_breakdown", top);
    return o;
}

static int write_json(const struct mb_sweep *sw, const struct mb_sweep_row *rows, size_t n, size_t shard,
                      size_t nshards, int top, int digits, const char *path)
{
    json_t *o = json_object();
    json_object_set_new(o, "scenario", json_string(sw->base.name));
    json_object_set_new(o, "configurations", json_integer((json_int_t)mb_sweep_size(sw)));
    json_t *sh = json_object();
    json_object_set_new(sh, "index", json_integer((json_int_t)shard));
    json_object_set_new(sh, "count", json_integer((json_int_t)nshards));
    json_object_set_new(o, "shard", sh);
    json_t *axes = json_array();
    for (int a = 0; a < sw->n_axes; a++) {
        json_t *ax = json_object(), *vals = json_array();
        json_object_set_new(ax, "key", json_string(sw->axis[a].key));
        for (int k = 0; k < sw->axis[a].n; k++)
            json_array_append_new(vals, json_string(sw->axis[a].val[k]));
        json_object_set_new(ax, "values", vals);
        json_array_append_new(axes, ax);
    }
    json_object_set_new(o, "axes", axes);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, row_json(sw, &rows[i]));
    json_object_set_new(o, "rows", arr);
    size_t *order = calloc(n ? n : 1, sizeof *order);
    size_t m = mb_sweep_rank(rows, n, order);
    json_t *ranked = json_array();
    for (size_t i = 0; i < m && i < (size_t)top; i++)
        json_array_append_new(ranked, json_integer((json_int_t)rows[order[i]].index));
    json_object_set_new(o, "top", ranked);
    size_t f = mb_sweep_pareto(rows, n, order);
    json_t *front = json_array();
    for (size_t i = 0; i < f; i++)
        json_array_append_new(front, json_integer((json_int_t)rows[order[i]].index));
    json_object_set_new(o, "pareto", front);
    free(order);
    int rc = 0;
    if (!strcmp(path, "-")) {
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(digits));
        fputc('\n', stdout);
    } else if (json_dump_file(o, path, JSON_INDENT(2) | JSON_REAL_PRECISION(digits))) {
        fprintf(stderr, "mbsim sweep: cannot write '%s'\n", path);
        rc = -1;
    }
    json_decref(o);
    return rc;
}

static int parse_count(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int mb_cmd_sweep(int argc, char **argv)
{
    const char *file = NULL, *tsv = NULL, *json = NULL;
    const char *sets[64];
    int n_sets = 0, header = -1, exact = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN), top = 10, shard = 0, nshards = 1, mb_cap = 16, digits = 6;
    if (jobs < 1)
        jobs = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_sweep(stdout);
            return 0;
        } else if (!strcmp(a, "--set") && has_val) {
            if (n_sets == (int)(sizeof sets / sizeof sets[0])) {
                fprintf(stderr, "mbsim sweep: too many --set options\n");
                return EXIT_USAGE;
            }
            sets[n_sets++] = argv[++i];
        } else if (!strcmp(a, "-j") && has_val) {
            if (parse_count(argv[++i], 1, 4096, &jobs)) {
                fprintf(stderr, "mbsim sweep: -j expects a number of threads >= 1, got '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--top") && has_val) {
            if (parse_count(argv[++i], 0, 1000000, &top)) {
                fprintf(stderr, "mbsim sweep: --top expects a count >= 0, got '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--tsv") && has_val) {
            tsv = argv[++i];
        } else if (!strcmp(a, "--json") && has_val) {
            json = argv[++i];
        } else if (!strcmp(a, "--shard") && has_val) {
            const char *s = argv[++i], *slash = strchr(s, '/');
            char buf[32];
            if (!slash || (size_t)(slash - s) >= sizeof buf) {
                fprintf(stderr, "mbsim sweep: --shard expects i/N, got '%s'\n", s);
                return EXIT_USAGE;
            }
            memcpy(buf, s, (size_t)(slash - s));
            buf[slash - s] = 0;
            if (parse_count(buf, 0, 1000000, &shard) || parse_count(slash + 1, 1, 1000000, &nshards) ||
                shard >= nshards) {
                fprintf(stderr, "mbsim sweep: --shard expects i/N with 0 <= i < N, got '%s'\n", s);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--mb-cap") && has_val) {
            if (parse_count(argv[++i], 1, 1000000, &mb_cap)) {
                fprintf(stderr, "mbsim sweep: --mb-cap expects a count >= 1, got '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--digits") && has_val) {
            if (parse_count(argv[++i], 1, 17, &digits)) {
                fprintf(stderr, "mbsim sweep: --digits expects 1..17, got '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--no-header")) {
            header = 0;
        } else if (!strcmp(a, "--exact")) {
            exact = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "mbsim sweep: unknown option or missing value: '%s'\n", a);
            usage_sweep(stderr);
            return EXIT_USAGE;
        } else if (!file) {
            file = a;
        } else {
            fprintf(stderr, "mbsim sweep: one scenario file expected, got '%s' too\n", a);
            return EXIT_USAGE;
        }
    }
    if (!file) {
        usage_sweep(stderr);
        return EXIT_USAGE;
    }
    if (tsv && json && !strcmp(tsv, "-") && !strcmp(json, "-")) {
        fprintf(stderr, "mbsim sweep: --tsv - and --json - cannot both go to stdout\n");
        return EXIT_USAGE;
    }
    if (header < 0)
        header = shard == 0;

    struct mb_sweep sw;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_sweep_load(file, &sw, &err)) {
        print_err(&err);
        return EXIT_BAD_INPUT;
    }
    for (int k = 0; k < n_sets; k++)
        if (mb_sweep_set(&sw, sets[k], &err)) {
            fprintf(stderr, "mbsim sweep: --set %s: ", sets[k]);
            char buf[1024];
            mb_err_format(&err, buf, sizeof buf);
            fprintf(stderr, "%s\n", buf);
            mb_sweep_free(&sw);
            return EXIT_USAGE; /* a bad command-line option */
        }
    sw.exact = exact;
    sw.mb_cap = mb_cap == 64 ? 0 : (int)mb_cap;

    size_t total = mb_sweep_size(&sw);
    struct progress pr = {now_s(), isatty(2)};
    struct mb_sweep_row *rows;
    size_t n;
    mb_sweep_run(&sw, (size_t)shard, (size_t)nshards, (int)jobs, on_progress, &pr, &rows, &n);
    double wall = now_s() - pr.t0;

    int rc = 0;
    FILE *summary = stdout;
    if ((tsv && !strcmp(tsv, "-")) || (json && !strcmp(json, "-")))
        summary = stderr;
    if (tsv) {
        FILE *fp = !strcmp(tsv, "-") ? stdout : fopen(tsv, "w");
        if (!fp) {
            fprintf(stderr, "mbsim sweep: cannot write '%s'\n", tsv);
            rc = EXIT_BAD_INPUT;
        } else {
            mb_sweep_write_tsv(&sw, rows, n, header, fp);
            if (fp != stdout)
                fclose(fp);
        }
    }
    if (json && write_json(&sw, rows, n, (size_t)shard, (size_t)nshards, (int)top, (int)digits, json))
        rc = EXIT_BAD_INPUT;
    print_summary(&sw, rows, n, total, (int)top, summary);
    unsigned long long events = 0;
    size_t simulated = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].status == MB_SWEEP_OK) {
            events += rows[i].events;
            simulated++;
        }
    fprintf(stderr,
            "mbsim sweep: %zu configurations in %.2f s (%.0f configurations/s, %ld threads; "
            "%.0f engine events per simulated configuration)\n",
            n, wall, wall > 0 ? (double)n / wall : 0.0, jobs, simulated ? (double)events / simulated : 0.0);
    mb_free(rows);
    mb_sweep_free(&sw);
    return rc;
}
