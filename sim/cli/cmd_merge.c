/*
 * cmd_merge.c -- `mbsim merge`: the TSVs of a sweep's shards (a Slurm job
 * array, docs/slurm.md) joined into the output of one uninterrupted run, after
 * checking that together they hold every configuration of the grid exactly
 * once. The grid comes from the scenario file and --set options the shards ran
 * with, so a missing configuration is named with its values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_sweep.h"
#include "sweep_out.h"

#define MERGE_MAX_FILES 4096
#define MERGE_SHOWN 10 /* missing configurations named in the error */

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp, "usage: mbsim merge FILE.yaml [--set key=v1,v2,...]... SHARD.tsv... [--tsv OUT.tsv] [--json OUT.json]\n"
                "                   [--top N]\n"
                "\n"
                "Joins the TSV outputs of `mbsim sweep --shard i/N` runs of the sweep FILE.yaml (with the\n"
                "same --set options) into the TSV and JSON one run of the whole grid writes, and prints\n"
                "its summary (docs/sweep.md, docs/slurm.md). Every configuration of the grid must be in\n"
                "exactly one file: a missing or duplicate configuration is an error naming it (exit 1).\n"
                "\n"
                "  --tsv FILE   the merged TSV ('-' = stdout; default when neither --tsv nor --json is given,\n"
                "               the summary then goes to stderr)\n"
                "  --json FILE  the merged rows, ranking and front as one JSON object ('-' = stdout)\n"
                "  --top N      configurations in the ranking (default 10)\n");
}

struct merge {
    const struct mb_sweep *sw;
    const char *path;               /* file being read */
    struct mb_sweep_row *rows;      /* one per configuration of the grid */
    const char **file;              /* where each configuration came from (NULL: not yet) */
    int *line;
};

static void mb_cli__values_of(const struct mb_sweep *sw, size_t idx, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int a = 0; a < sw->n_axes && k < len; a++) {
        int w = snprintf(buf + k, len - k, "%s%s=%s", a ? " " : "", sw->axis[a].key, mb_sweep_value(sw, idx, a));
        k += w > 0 ? (size_t)w : 0;
    }
}

static int mb_cli__merge_row(const struct mb_sweep_row *r, int line, void *ctx, struct mb_err *err)
{
    struct merge *m = ctx;
    if (m->file[r->index]) {
        char v[512];
        mb_cli__values_of(m->sw, r->index, v, sizeof v);
        return mb_err_set(err, m->path, line, 1, "configuration %zu (%s) is also in %s:%d", r->index, v,
                          m->file[r->index], m->line[r->index]);
    }
    m->rows[r->index] = *r;
    m->file[r->index] = m->path;
    m->line[r->index] = line;
    return 0;
}

/* Every configuration present, or an error naming the first missing ones. */
static int mb_cli__check_complete(const struct merge *m, size_t total)
{
    size_t missing = 0;
    for (size_t i = 0; i < total; i++)
        missing += !m->file[i];
    if (!missing)
        return 0;
    fprintf(stderr, "mbsim merge: the files miss %zu of the grid's %zu %s:\n", missing, total,
            mb_plural((long long)total, "configuration", "configurations"));
    size_t shown = 0;
    for (size_t i = 0; i < total && shown < MERGE_SHOWN; i++)
        if (!m->file[i]) {
            char v[512];
            mb_cli__values_of(m->sw, i, v, sizeof v);
            fprintf(stderr, "  configuration %zu: %s\n", i, v);
            shown++;
        }
    if (missing > shown)
        fprintf(stderr, "  ... and %zu more\n", missing - shown);
    fprintf(stderr, "(a shard's run that did not finish: resume it with `mbsim sweep ... --shard i/N --resume "
                    "ITS.tsv`)\n");
    return -1;
}

/* Options and files; 0, -1 (help shown) or 2 (usage error). */
static int mb_cli__parse(int argc, char **argv, const char **yaml, const char **files, int *n_files, const char **sets,
                 int *n_sets, const char **tsv, const char **json, long *top)
{
    enum { O_SET = 256, O_TSV, O_JSON, O_TOP };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},      {"set", required_argument, NULL, O_SET},
                                       {"tsv", required_argument, NULL, O_TSV}, {"json", required_argument, NULL, O_JSON},
                                       {"top", required_argument, NULL, O_TOP}, {0}};
    struct cli_opts g;
    const char *v;
    int c, rc = 0;
    cli_opts_init(&g, "mbsim merge", "h", lo, argc, argv);
    cli_opts_repeatable(&g, O_SET);
    while (!rc && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cli__usage(stdout);
            rc = -1; /* done: exit 0 */
        } else if (c == O_SET) {
            if (*n_sets == 64) {
                fprintf(stderr, "mbsim merge: too many --set options\n");
                rc = 2;
            } else {
                sets[(*n_sets)++] = v;
            }
        } else if (c == O_TSV || c == O_JSON) {
            *(c == O_TSV ? tsv : json) = v;
        } else if (c == O_TOP) {
            if (cli_parse_long(v, 0, 1000000, top)) {
                fprintf(stderr, "mbsim merge: --top expects a count from 0 to 1000000, got '%s'\n", v);
                rc = 2;
            }
        } else if (c != CLI_OPERAND) {
            rc = 2;
        } else if (!*yaml) {
            *yaml = v;
        } else if (*n_files == MERGE_MAX_FILES) {
            fprintf(stderr, "mbsim merge: at most %d files\n", MERGE_MAX_FILES);
            rc = 2;
        } else {
            files[(*n_files)++] = v;
        }
    }
    cli_opts_free(&g);
    if (rc)
        return rc;
    if (!*yaml || !*n_files) {
        fprintf(stderr, "mbsim merge: give the sweep's scenario file and the shard TSVs\n");
        mb_cli__usage(stderr);
        return 2;
    }
    if (!*tsv && !*json)
        *tsv = "-";
    if (*tsv && *json && !strcmp(*tsv, "-") && !strcmp(*json, "-")) {
        fprintf(stderr, "mbsim merge: --tsv - and --json - cannot both go to stdout\n");
        return 2;
    }
    return 0;
}

static int mb_cli__load_sweep(const char *yaml, const char **sets, int n_sets, struct mb_sweep *sw)
{
    struct mb_err err;
    char buf[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    if (mb_sweep_load(yaml, sw, &err)) {
        mb_err_format(&err, buf, sizeof buf);
        fprintf(stderr, "mbsim: %s\n", buf);
        return EXIT_BAD_INPUT;
    }
    if (cli_sets_once("mbsim merge", sets, n_sets)) {
        mb_sweep_free(sw);
        return EXIT_USAGE;
    }
    for (int k = 0; k < n_sets; k++)
        if (mb_sweep_set(sw, sets[k], &err)) {
            mb_err_format(&err, buf, sizeof buf);
            fprintf(stderr, "mbsim merge: --set %s: %s\n", sets[k], buf);
            mb_sweep_free(sw);
            return EXIT_USAGE;
        }
    return 0;
}

/* Every file's rows; each must come from this scenario file and these calibration
 * tables, and all with the options of the first (which *prov gets). 0, or -1 (printed). */
static int mb_cli__read_all(struct merge *m, const char **files, int n_files, struct mb_sweep_prov *prov)
{
    struct mb_err err;
    const char *first = NULL; /* the file whose options the others must have */
    for (int f = 0; f < n_files; f++) {
        mb_err_clear(&err);
        m->path = files[f];
        struct mb_sweep_prov found;
        struct mb_sweep_read_opts o = {.want = prov, .found = &found};
        if (mb_sweep_read_tsv_opts(m->sw, files[f], &o, mb_cli__merge_row, m, &err)) {
            char buf[MB_ERR_TEXT_LEN];
            mb_err_format(&err, buf, sizeof buf);
            int opts = first && strstr(err.msg, "written with options"); /* name where they came from */
            fprintf(stderr, "mbsim: %s%s%s%s\n", buf, opts ? " (the options of " : "", opts ? first : "",
                    opts ? ", the first file)" : "");
            return -1;
        }
        if (!first && found.options[0]) { /* an empty file has no provenance line */
            first = files[f];
            snprintf(prov->options, sizeof prov->options, "%s", found.options);
        }
    }
    if (!prov->options[0]) /* only empty files: nothing but missing configurations to report */
        snprintf(prov->options, sizeof prov->options, "mb-cap:16");
    return 0;
}

int mb_cmd_merge(int argc, char **argv)
{
    const char *yaml = NULL, *tsv = NULL, *json = NULL, *sets[64];
    const char **files = mb_calloc(MERGE_MAX_FILES, sizeof *files);
    int n_files = 0, n_sets = 0;
    long top = 10;
    int rc = mb_cli__parse(argc, argv, &yaml, files, &n_files, sets, &n_sets, &tsv, &json, &top);
    struct mb_sweep sw;
    if (rc || (rc = mb_cli__load_sweep(yaml, sets, n_sets, &sw)) != 0) {
        mb_free(files);
        return rc < 0 ? 0 : rc; /* -1: --help; EXIT_BAD_INPUT from the scenario */
    }
    size_t total = mb_sweep_size(&sw);
    struct merge m = {&sw, NULL, mb_calloc(total, sizeof *m.rows), mb_calloc(total, sizeof *m.file),
                      mb_calloc(total, sizeof *m.line)};
    struct mb_sweep_prov prov;
    struct mb_err err;
    mb_err_clear(&err);
    /* options "" until the first file says which; scenario and tables: this run's */
    if (mb_sweep_provenance(&sw, "any", &prov, &err)) {
        mb_cli_print_err(&err);
        rc = EXIT_BAD_INPUT;
    }
    prov.options[0] = 0;
    rc = rc || mb_cli__read_all(&m, files, n_files, &prov) || mb_cli__check_complete(&m, total) ? EXIT_BAD_INPUT : 0;
    struct mb_swout out;
    struct mb_swout_paths paths = {tsv, json, NULL};
    if (!rc && mb_swout_open(&out, &sw, &prov, &paths, 1, 0, 1))
        rc = EXIT_BAD_INPUT;
    if (!rc) {
        for (size_t i = 0; i < total; i++)
            mb_swout_row(&out, &m.rows[i]);
        if (mb_swout_close(&out, m.rows, total, (int)top, 1))
            rc = EXIT_BAD_INPUT;
        FILE *summary = (tsv && !strcmp(tsv, "-")) || (json && !strcmp(json, "-")) ? stderr : stdout;
        mb_swout_summary(&sw, m.rows, total, total, (int)top, summary);
    }
    mb_free(m.line);
    mb_free(m.file);
    mb_free(m.rows);
    mb_free(files);
    mb_sweep_free(&sw);
    return rc;
}
