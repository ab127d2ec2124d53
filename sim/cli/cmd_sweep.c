/*
 * cmd_sweep.c -- `mbsim sweep`: the cartesian product of scenario keys, run on
 * the CPUs this process may use, written as TSV/JSON while rows finish, with
 * the ranked configurations that fit and the throughput-vs-memory Pareto front
 * (docs/sweep.md). Made for batch clusters (docs/slurm.md): SIGINT/SIGTERM
 * keep every finished row and print how to resume, `--resume FILE` runs only
 * what FILE lacks, `--shard` defaults from a Slurm job array, progress lines
 * go to stderr also when it is a log file.
 */
#define _GNU_SOURCE /* strsignal */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mb_outfile.h"
#include "mb_sweep.h"
#include "sweep_out.h"

static void mb_cli__usage_sweep(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim sweep FILE.yaml [--set key=v1,v2,...]... [-j N] [--top N]\n"
            "                   [--tsv OUT.tsv] [--json OUT.json] [--shard i/N] [--no-header]\n"
            "                   [--resume FILE.tsv] [--progress S] [--mb-cap N | --exact] [--screen K]\n"
            "\n"
            "Predicts every configuration of the cartesian product of the scenario's\n"
            "`sweep:` block and the --set options (a --set replaces the block's key),\n"
            "lists the combinations that cannot exist with their reason, ranks the\n"
            "configurations that fit in memory and prints the throughput-vs-memory\n"
            "Pareto front (docs/sweep.md; on a cluster: docs/slurm.md).\n"
            "\n"
            "  --set key=v1,v2   sweep a dotted scenario key, e.g. parallel.tp=1,2,4;\n"
            "                    list values join names with '+': cuda_graph.modules=none,attn+moe_router\n"
            "  -j, --jobs N      worker threads (default: the CPUs this process may run on)\n"
            "  --top N           configurations in the ranking (default 10)\n"
            "  --tsv FILE        one row per configuration, written as rows finish ('-' = stdout,\n"
            "                    the summary then goes to stderr)\n"
            "  --json FILE       the same rows, the ranking and the front as one JSON object ('-' = stdout)\n"
            "  --shard i/N       run configurations i, i+N, i+2N, ... (0 <= i < N); the TSV header is\n"
            "                    written by shard 0 only, so shard files concatenate; default in a Slurm\n"
            "                    job array: SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT\n"
            "  --no-header       no TSV header row\n"
            "  --resume FILE     keep the rows FILE (the TSV of an interrupted run of this sweep and\n"
            "                    shard) has, run the others; the TSV (default: FILE itself) is then the\n"
            "                    one an uninterrupted run writes. A FILE that does not exist yet: run all\n"
            "  --progress S      a progress line on stderr every S seconds when stderr is not a terminal\n"
            "                    (default 5; 0 = none); a terminal gets a progress bar with ETA\n"
            "  --mb-cap N        simulate at most N microbatches per data-parallel rank (at least 4*pp;\n"
            "                    2*pp for 1F1B over identical microbatches)\n"
            "                    and extend the steady state linearly (default 16; 64 = `mbsim run`)\n"
            "  --exact           simulate every microbatch (mb_step_simulate_exact); slowest\n"
            "  --screen K        bound every configuration's step time first (compute alone), simulate\n"
            "                    best bound first and stop once no bound can reach the K best: the top K\n"
            "                    are those of the full sweep, the others are rows with status 'screened'\n"
            "                    (not with --resume)\n"
            "\n"
            "keys: %s\n"
            "\n"
            "SIGINT (Ctrl-C) or SIGTERM: running configurations finish, every finished row is kept in\n"
            "the TSV/JSON, the command to resume is printed, exit status 128 + the signal number.\n",
            mb_sweep_keys());
}

static double mb_cli__now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ progress */

struct progress {
    double t0, last;                /* start, time of the last progress line */
    double every;                   /* seconds between lines when not a terminal (0: none) */
    int tty;
    int ended;                      /* the 100 % line is out */
};

static void mb_cli__fmt_hms(char *buf, size_t len, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void mb_cli__on_progress(size_t done, size_t total, void *ctx)
{
    struct progress *p = ctx;
    double now = mb_cli__now_s(), el = now - p->t0;
    /* the final line always goes out (the driver now reports on every finished row) */
    if (!total || p->ended || (!p->tty && (p->every <= 0 || (done < total && now - p->last < p->every))))
        return;
    p->ended = done == total;
    p->last = now;
    char e[32], eta[32];
    mb_cli__fmt_hms(e, sizeof e, el);
    if (done)
        mb_cli__fmt_hms(eta, sizeof eta, el / (double)done * (double)(total - done));
    else
        snprintf(eta, sizeof eta, "?");
    double pct = 100.0 * (double)done / (double)total;
    if (!p->tty) {
        fprintf(stderr, "mbsim sweep: %zu/%zu configurations (%.0f%%), %s elapsed, ETA %s\n", done, total, pct, e,
                eta);
        return;
    }
    const int w = 30;
    int fill = (int)((double)done / (double)total * w);
    char bar[64];
    for (int i = 0; i < w; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    /* to the terminal itself: standard error escapes the carriage return (main.c) */
    char line[192];
    int n = snprintf(line, sizeof line, "\r[%s] %zu/%zu %3.0f%% %s ETA %s %s", bar, done, total, pct, e, eta,
                     done == total ? "\n" : "");
    fflush(stderr);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        p->tty = 0; /* a terminal that went away: plain lines from now on */
}

/* ------------------------------------------------------------ options */

struct sweep_args {
    const char *file, *tsv, *json, *resume;
    const char *sets[64];
    int n_sets, header, exact, shard_given, mb_cap_given;
    long jobs, top, shard, nshards, mb_cap, screen;
    double progress_every;
};

static int mb_cli__parse_shard(const char *s, long *shard, long *nshards)
{
    const char *slash = strchr(s, '/');
    char buf[32];
    if (!slash || (size_t)(slash - s) >= sizeof buf)
        return -1;
    memcpy(buf, s, (size_t)(slash - s));
    buf[slash - s] = 0;
    if (cli_parse_long(buf, 0, 1000000, shard) || cli_parse_long(slash + 1, 1, 1000000, nshards) || *shard >= *nshards)
        return -1;
    return 0;
}

enum { O_SET = 256, O_TOP, O_TSV, O_JSON, O_SHARD, O_MBCAP, O_RESUME, O_PROGRESS, O_NOHEADER, O_EXACT, O_SCREEN };

/* One option c, spelled opt, with value v (cli_opts_next); 0 ok, 1 help shown, 2 usage error. */
static int mb_cli__parse_opt(int c, const char *opt, const char *v, struct sweep_args *a)
{
    switch (c) {
    case 'h':
        mb_cli__usage_sweep(stdout);
        return 1;
    case O_SET:
        if (a->n_sets == (int)(sizeof a->sets / sizeof a->sets[0])) {
            fprintf(stderr, "mbsim sweep: too many --set options\n");
            return 2;
        }
        a->sets[a->n_sets++] = v;
        return 0;
    case 'j': {
        int j;
        if (cli_parse_jobs("mbsim sweep", opt, v, &j))
            return 2;
        a->jobs = j;
        return 0;
    }
    case O_TOP:
        if (cli_parse_long(v, 0, 1000000, &a->top)) {
            fprintf(stderr, "mbsim sweep: --top expects a count from 0 to 1000000, got '%s'\n", v);
            return 2;
        }
        return 0;
    case O_MBCAP:
        if (cli_parse_long(v, 1, 1000000, &a->mb_cap)) {
            fprintf(stderr, "mbsim sweep: --mb-cap expects a count from 1 to 1000000, got '%s'\n", v);
            return 2;
        }
        a->mb_cap_given = 1;
        return 0;
    case O_SCREEN:
        if (cli_parse_long(v, 1, 1000000, &a->screen)) {
            fprintf(stderr, "mbsim sweep: --screen expects a count from 1 to 1000000, got '%s'\n", v);
            return 2;
        }
        return 0;
    case O_SHARD:
        if (mb_cli__parse_shard(v, &a->shard, &a->nshards)) {
            fprintf(stderr, "mbsim sweep: --shard expects i/N with 0 <= i < N <= 1000000, got '%s'\n", v);
            return 2;
        }
        a->shard_given = 1;
        return 0;
    case O_PROGRESS: {
        char *end;
        a->progress_every = strtod(v, &end);
        if (end == v || *end || !(a->progress_every >= 0) || a->progress_every > 1e6) {
            fprintf(stderr, "mbsim sweep: --progress expects seconds from 0 to 1e6, got '%s'\n", v);
            return 2;
        }
        return 0;
    }
    case O_TSV:
        a->tsv = v;
        return 0;
    case O_JSON:
        a->json = v;
        return 0;
    case O_RESUME:
        a->resume = v;
        return 0;
    case O_NOHEADER:
        a->header = 0;
        return 0;
    case O_EXACT:
        a->exact = 1;
        return 0;
    case CLI_OPERAND:
        if (!a->file) {
            a->file = v;
            return 0;
        }
        fprintf(stderr, "mbsim sweep: one scenario file expected, got '%s' too\n", v);
        return 2;
    default: /* CLI_USAGE: printed */
        mb_cli__usage_sweep(stderr);
        return 2;
    }
}

/* Read a Slurm array variable: -1 when unset, -2 when not an integer. */
static long mb_cli__slurm_env(const char *name)
{
    const char *v = getenv(name);
    long n;
    if (!v || !*v)
        return -1;
    return cli_parse_long(v, 0, 100000000L, &n) ? -2 : n;
}

/* --shard from a Slurm job array (--array=MIN-MAX[:STEP]): shard =
 * (SLURM_ARRAY_TASK_ID - MIN) / STEP of SLURM_ARRAY_TASK_COUNT. */
static int mb_cli__shard_from_slurm(struct sweep_args *a)
{
    long id = mb_cli__slurm_env("SLURM_ARRAY_TASK_ID"), count = mb_cli__slurm_env("SLURM_ARRAY_TASK_COUNT");
    long min = mb_cli__slurm_env("SLURM_ARRAY_TASK_MIN"), step = mb_cli__slurm_env("SLURM_ARRAY_TASK_STEP");
    if (a->shard_given || id == -1 || count == -1)
        return 0;
    if (min == -1)
        min = 0;
    if (step == -1 || step == 0)
        step = 1;
    if (id < 0 || count < 1 || min < 0 || step < 0 || id < min || (id - min) % step || (id - min) / step >= count) {
        fprintf(stderr,
                "mbsim sweep: SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s, SLURM_ARRAY_TASK_MIN=%s, "
                "SLURM_ARRAY_TASK_STEP=%s: expected an array of COUNT tasks MIN, MIN+STEP, ...; give --shard i/N\n",
                getenv("SLURM_ARRAY_TASK_ID"), getenv("SLURM_ARRAY_TASK_COUNT"),
                getenv("SLURM_ARRAY_TASK_MIN") ? getenv("SLURM_ARRAY_TASK_MIN") : "(unset)",
                getenv("SLURM_ARRAY_TASK_STEP") ? getenv("SLURM_ARRAY_TASK_STEP") : "(unset)");
        return -1;
    }
    a->shard = (id - min) / step;
    a->nshards = count;
    fprintf(stderr, "mbsim sweep: shard %ld/%ld from the Slurm job array (SLURM_ARRAY_TASK_ID=%ld)\n", a->shard,
            a->nshards, id);
    return 0;
}

static int mb_cli__parse_args(int argc, char **argv, struct sweep_args *a)
{
    memset(a, 0, sizeof *a);
    a->header = -1;
    a->jobs = cli_default_jobs();
    a->top = 10;
    a->nshards = 1;
    a->mb_cap = 16;
    a->progress_every = 5;
    static const struct option lo[] = {
        {"help", no_argument, NULL, 'h'},           {"set", required_argument, NULL, O_SET},
        {"top", required_argument, NULL, O_TOP},     {"tsv", required_argument, NULL, O_TSV},
        {"json", required_argument, NULL, O_JSON},   {"shard", required_argument, NULL, O_SHARD},
        {"mb-cap", required_argument, NULL, O_MBCAP}, {"resume", required_argument, NULL, O_RESUME},
        {"progress", required_argument, NULL, O_PROGRESS}, {"no-header", no_argument, NULL, O_NOHEADER},
        {"exact", no_argument, NULL, O_EXACT},       {"screen", required_argument, NULL, O_SCREEN},
        {"jobs", required_argument, NULL, 'j'},      {0}};
    struct cli_opts g;
    const char *v;
    int c, rc = 0;
    cli_opts_init(&g, "mbsim sweep", "hj:", lo, argc, argv);
    cli_opts_repeatable(&g, O_SET);
    while (!rc && (c = cli_opts_next(&g, &v)) != CLI_END)
        rc = mb_cli__parse_opt(c, cli_opts_name(&g), v, a);
    cli_opts_free(&g);
    if (rc)
        return rc;
    if (!a->file) {
        mb_cli__usage_sweep(stderr);
        return 2;
    }
    if (!a->tsv)
        a->tsv = a->resume;
    if (a->tsv && a->json && !strcmp(a->tsv, "-") && !strcmp(a->json, "-")) {
        fprintf(stderr, "mbsim sweep: --tsv - and --json - cannot both go to stdout\n");
        return 2;
    }
    if (a->exact && a->mb_cap_given) {
        fprintf(stderr, "mbsim sweep: --mb-cap and --exact exclude each other (--exact simulates every microbatch)\n");
        return 2;
    }
    if (a->resume && a->screen) {
        fprintf(stderr, "mbsim sweep: --screen cannot resume (which configurations run depends on every row)\n");
        return 2;
    }
    if (a->resume && !strcmp(a->resume, "-")) {
        fprintf(stderr, "mbsim sweep: --resume needs the TSV file of the interrupted run, not '-'\n");
        return 2;
    }
    if (mb_cli__shard_from_slurm(a))
        return 2;
    if (a->header < 0)
        a->header = a->shard == 0;
    return 0;
}

/* ------------------------------------------------------------ resume */

struct resume {
    const char *path;
    size_t shard, nshards, count, kept;
    struct mb_sweep_row *rows;
    unsigned char *have;
    int *line;
    const struct mb_sweep_prov *prov; /* this run's: FILE must have been written with the same */
};

static int mb_cli__resume_row(const struct mb_sweep_row *r, int line, void *ctx, struct mb_err *err)
{
    struct resume *rs = ctx;
    if (r->index < rs->shard || (r->index - rs->shard) % rs->nshards)
        return mb_err_set(err, rs->path, line, 1, "configuration %zu is not in shard %zu/%zu of this run", r->index,
                          rs->shard, rs->nshards);
    size_t k = (r->index - rs->shard) / rs->nshards;
    if (rs->have[k])
        return mb_err_set(err, rs->path, line, 1, "configuration %zu is already on line %d", r->index, rs->line[k]);
    rs->rows[k] = *r;
    rs->have[k] = 1;
    rs->line[k] = line;
    rs->kept++;
    return 0;
}

/* Load the rows an earlier run kept; 0, or -1 (printed). A missing file is an
 * empty one (a job array task that had not started). */
static int mb_cli__resume_load(struct resume *rs, const struct mb_sweep *sw)
{
    if (access(rs->path, F_OK) != 0) {
        fprintf(stderr, "mbsim sweep: --resume %s: no such file yet, running every configuration\n", rs->path);
        return 0;
    }
    struct mb_err err;
    mb_err_clear(&err);
    int partial = 0;
    struct mb_sweep_read_opts o = {.allow_partial = 1, .partial_p = &partial, .want = rs->prov};
    if (mb_sweep_read_tsv_opts(sw, rs->path, &o, mb_cli__resume_row, rs, &err)) {
        mb_cli_print_err(&err);
        return -1;
    }
    fprintf(stderr, "mbsim sweep: --resume %s: %zu of %zu %s done, running the other %zu%s\n",
            rs->path, rs->kept, rs->count, mb_plural((long long)rs->count, "configuration", "configurations"),
            rs->count - rs->kept,
            partial ? " (its unfinished last line is dropped)" : "");
    return 0;
}

/* ------------------------------------------------------------ signals */

static volatile sig_atomic_t stop_signal;

/* SIGINT/SIGTERM ask the run to stop; a second one ends it at once, after
 * removing the temporary files not yet renamed (a TSV that does not yet hold
 * every resumed row: the file it was to replace is still whole). */
static void mb_cli__on_signal(int sig)
{
    if (!stop_signal) {
        stop_signal = sig;
        return;
    }
    mb_outfile_signal_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void mb_cli__install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mb_cli__on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* argv as a shell would take it back. */
static void mb_cli__print_word(const char *w, FILE *fp)
{
    if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:%@") == strlen(w)) {
        fputs(w, fp);
        return;
    }
    fputc('\'', fp);
    for (; *w; w++)
        if (*w == '\'')
            fputs("'\\''", fp);
        else
            fputc(*w, fp);
    fputc('\'', fp);
}

static void mb_cli__print_resume_hint(int argc, char **argv, const struct sweep_args *a, size_t kept, size_t count)
{
    fprintf(stderr, "\nmbsim sweep: interrupted by %s: %zu of %zu %s finished", strsignal(stop_signal),
            kept, count, mb_plural((long long)count, "configuration", "configurations"));
    if (!a->tsv || !strcmp(a->tsv, "-")) {
        fprintf(stderr, "; %s\n", a->tsv ? "save the TSV rows to a file and resume with --resume FILE"
                                         : "without --tsv FILE there is nothing to resume from");
        return;
    }
    fprintf(stderr, ", kept in %s.\nresume with:\n  mbsim sweep", a->tsv);
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--"); i++) { /* after "--" only operands: --resume goes before it */
        if (!strcmp(argv[i], "--resume") && i + 1 < argc) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "--resume=", 9))
            continue;
        fputc(' ', stderr);
        mb_cli__print_word(argv[i], stderr);
    }
    fputs(" --resume ", stderr);
    mb_cli__print_word(a->tsv, stderr);
    for (; i < argc; i++) {
        fputc(' ', stderr);
        mb_cli__print_word(argv[i], stderr);
    }
    fputc('\n', stderr);
}

/* ------------------------------------------------------------ run */

struct stream {
    struct mb_swout out;
    size_t written;
    const struct resume *rs;        /* the rows resumed from FILE */
    size_t resumed;                 /* of them, written again */
};

/* Each row goes out as it comes; once every row resumed from FILE is written
 * again, the new TSV replaces FILE (before, FILE stays whole: a kill loses
 * none of its rows). */
static void mb_cli__on_row(const struct mb_sweep_row *r, void *ctx)
{
    struct stream *st = ctx;
    const struct resume *rs = st->rs;
    mb_swout_row(&st->out, r);
    st->written++;
    st->resumed += rs->have[(r->index - rs->shard) / rs->nshards];
    if (st->resumed == rs->kept)
        mb_swout_publish(&st->out);
}

struct run_ctx {
    struct stream st;
    struct progress pr;
};

/* Called after each batch of rows handed on: they go out to their files now. */
static void mb_cli__on_progress_ctx(size_t done, size_t total, void *ctx)
{
    struct run_ctx *rc = ctx;
    mb_swout_flush(&rc->st.out);
    mb_cli__on_progress(done, total, &rc->pr);
}

static void mb_cli__on_row_ctx(const struct mb_sweep_row *r, void *ctx) { mb_cli__on_row(r, &((struct run_ctx *)ctx)->st); }

/* The finished rows, in index order, at the front of rows; returns how many. */
static size_t mb_cli__compact(struct mb_sweep_row *rows, const unsigned char *done, size_t count)
{
    size_t m = 0;
    for (size_t k = 0; k < count; k++)
        if (done[k])
            rows[m++] = rows[k];
    return m;
}

/* What changes a row besides the grid: the fidelity and --screen (mb_sweep_prov.options). */
static void mb_cli__options(const struct sweep_args *a, char *buf, size_t len)
{
    if (a->exact)
        snprintf(buf, len, "exact");
    else
        snprintf(buf, len, "mb-cap:%ld", a->mb_cap);
    if (a->screen) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, ",screen:%ld", a->screen);
    }
}

/* The outputs' locks (two runs writing one path are refused), taken before
 * FILE is read; 0, or -1 (printed). */
static int mb_cli__lock_outputs(const struct sweep_args *a, struct mb_outlock lk[2])
{
    struct mb_err err;
    mb_err_clear(&err);
    lk[0].fd = lk[1].fd = -1;
    lk[0].path = lk[1].path = NULL;
    if ((a->tsv && mb_outlock_take(&lk[0], a->tsv, &err)) || (a->json && mb_outlock_take(&lk[1], a->json, &err))) {
        mb_cli_print_err(&err);
        mb_outlock_release(&lk[0]);
        return -1;
    }
    return 0;
}

static int mb_cli__run_sweep(int argc, char **argv, const struct sweep_args *a, struct mb_sweep *sw)
{
    size_t count = mb_sweep_shard_count(sw, (size_t)a->shard, (size_t)a->nshards);
    struct mb_sweep_prov prov;
    struct resume rs = {a->resume, (size_t)a->shard, (size_t)a->nshards, count, 0, NULL, NULL, NULL, &prov};
    rs.rows = mb_calloc(count ? count : 1, sizeof *rs.rows);
    rs.have = mb_calloc(count ? count : 1, 1);
    rs.line = mb_calloc(count ? count : 1, sizeof *rs.line);
    unsigned char *done = mb_calloc(count ? count : 1, 1);
    struct run_ctx rc = {.pr = {.t0 = mb_cli__now_s(), .last = mb_cli__now_s(), .every = a->progress_every, .tty = isatty(2)}};
    rc.st.rs = &rs;
    int status = 0;
    char options[MB_SWEEP_OPTIONS_LEN];
    struct mb_err err;
    struct mb_outlock lk[2];
    mb_err_clear(&err);
    mb_cli__options(a, options, sizeof options);
    /* the calibration tables are loaded here, before any output is opened (an output that
     * names one is refused as an input) */
    if (mb_sweep_provenance(sw, options, &prov, &err)) {
        mb_cli_print_err(&err);
        status = EXIT_BAD_INPUT;
        goto out;
    }
    if (mb_cli__lock_outputs(a, lk)) {
        status = EXIT_BAD_INPUT;
        goto out;
    }
    struct mb_swout_paths paths = {a->tsv, a->json, a->resume};
    if ((a->resume && mb_cli__resume_load(&rs, sw)) ||
        mb_swout_open(&rc.st.out, sw, &prov, &paths, a->header, rs.shard, rs.nshards)) {
        status = EXIT_BAD_INPUT;
        goto unlock;
    }
    if (!rs.kept)
        mb_swout_publish(&rc.st.out); /* nothing to keep: the TSV shows its rows at once */
    mb_cli__install_signals();
    struct mb_sweep_run_opts o = {.shard = rs.shard, .nshards = rs.nshards, .jobs = (int)a->jobs, .skip = rs.have,
                                  .stop = &stop_signal, .on_row = mb_cli__on_row_ctx, .progress = mb_cli__on_progress_ctx, .ctx = &rc};
    struct mb_sweep_screen_stats ss;
    int stopped = a->screen ? mb_sweep_screen(sw, (size_t)a->screen, &o, rs.rows, done, &ss)
                            : mb_sweep_run_opts(sw, &o, rs.rows, done);
    double wall = mb_cli__now_s() - rc.pr.t0;
    size_t n = stopped ? mb_cli__compact(rs.rows, done, count) : count;
    if (mb_swout_close(&rc.st.out, rs.rows, n, (int)a->top, !stopped))
        status = EXIT_BAD_INPUT;
    size_t ran = n - rs.kept;
    if (a->screen)
        fprintf(stderr,
                "mbsim sweep: --screen %ld: %zu %s bounded, %zu simulated in %zu %s, %zu screened "
                "out%s\n",
                a->screen, ss.bounded, mb_plural((long long)ss.bounded, "configuration", "configurations"),
                ss.simulated, ss.batches, mb_plural((long long)ss.batches, "round", "rounds"), ss.screened,
                ss.violations ? "; a bound failed, so every configuration was simulated (please report it)" : "");
    if (stopped && a->screen) {
        if (rc.pr.tty)
            fputc('\n', stderr);
        fprintf(stderr, "mbsim sweep: interrupted; %zu of %zu %s kept (a screened sweep is run again from the "
                        "start)\n", n, count, mb_plural((long long)count, "row", "rows"));
        status = 128 + stop_signal;
    } else if (stopped) {
        if (rc.pr.tty)
            fputc('\n', stderr);
        mb_cli__print_resume_hint(argc, argv, a, n, count);
        status = 128 + stop_signal;
    } else {
        FILE *summary = (a->tsv && !strcmp(a->tsv, "-")) || (a->json && !strcmp(a->json, "-")) ? stderr : stdout;
        mb_swout_summary(sw, rs.rows, n, mb_sweep_size(sw), (int)a->top, summary);
    }
    unsigned long long events = 0;
    size_t simulated = 0;
    for (size_t k = 0; k < n; k++)
        if (rs.rows[k].status == MB_SWEEP_OK && rs.rows[k].events > 0) { /* resumed rows have none */
            events += rs.rows[k].events;
            simulated++;
        }
    double rate = wall > 0 ? (double)ran / wall : 0.0;
    fprintf(stderr,
            "mbsim sweep: %zu %s in %.2f s (%.*f configurations/s, %ld %s; %.0f engine events "
            "per simulated configuration)\n",
            ran, mb_plural((long long)ran, "configuration", "configurations"), wall, rate < 10 ? 2 : 0, rate, a->jobs,
            mb_plural(a->jobs, "thread", "threads"), simulated ? (double)events / simulated : 0.0);
unlock:
    mb_outlock_release(&lk[1]);
    mb_outlock_release(&lk[0]);
out:
    mb_free(done);
    mb_free(rs.line);
    mb_free(rs.have);
    mb_free(rs.rows);
    return status;
}

int mb_cmd_sweep(int argc, char **argv)
{
    struct sweep_args a;
    int rc = mb_cli__parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : EXIT_USAGE;

    struct mb_sweep sw;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_sweep_load(a.file, &sw, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    if (cli_sets_once("mbsim sweep", a.sets, a.n_sets)) {
        mb_sweep_free(&sw);
        return EXIT_USAGE;
    }
    for (int k = 0; k < a.n_sets; k++)
        if (mb_sweep_set(&sw, a.sets[k], &err)) {
            char buf[MB_ERR_TEXT_LEN];
            mb_err_format(&err, buf, sizeof buf);
            fprintf(stderr, "mbsim sweep: --set %s: %s\n", a.sets[k], buf);
            mb_sweep_free(&sw);
            return EXIT_USAGE; /* a bad command-line option */
        }
    if (mb_sweep_warnings_hold(&sw))
        cli_print_warnings(sw.base.warnings);
    sw.exact = a.exact;
    sw.mb_cap = a.mb_cap == 64 ? 0 : (int)a.mb_cap;
    rc = mb_cli__run_sweep(argc, argv, &a, &sw);
    mb_sweep_free(&sw);
    return rc;
}
