/*
 * cmd_calibrate_profile.c -- `mbsim calibrate nsys|kineto ...`: import a
 * profile and write a calibration overlay table (docs/calibration.md,
 * "Importing profiles").
 *
 *   mbsim calibrate nsys   KERN_SUM.csv [--shapes SHAPES.yaml] [--gpu NAME] [--base TABLE] [-o OUT.yaml]
 *   mbsim calibrate kineto TRACE.json[.gz] [--gpu NAME] [--base TABLE] [-o OUT.yaml]
 *
 * The per-class summary (and any unknown kernels) goes to stderr when a table
 * is written to stdout, else to stdout. Exit codes: 0 ok, 1 bad input, 2 usage.
 */
#include "calib_target.h"
#include "cli.h"
#include "mb_import.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int mb_cp__usage(const char *kind, const char *msg)
{
    if (msg)
        fprintf(stderr, "mbsim calibrate %s: %s\n", kind ? kind : "", msg);
    fprintf(stderr,
            "usage: mbsim calibrate nsys KERN_SUM.csv [--shapes SHAPES.yaml] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
            "       mbsim calibrate kineto TRACE.json[.gz] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
            "Writes a calibration overlay table (base table + measured points) usable as\n"
            "`calibration: {table: OUT.yaml}` in a scenario; see docs/calibration.md.\n");
    return 2;
}

static int mb_cp__fail(const char *kind, const struct mb_err *e)
{
    char buf[1024];
    mb_err_format(e, buf, sizeof buf);
    fprintf(stderr, "mbsim calibrate %s: %s\n", kind, buf);
    return 1;
}

/* What mb_prof_write_table takes, for mb_cli_write_table. */
struct mb_cp__table {
    const struct mb_prof *p;
    const char *base, *source;
};

static int mb_cp__make_table(FILE *fp, void *ctx, struct mb_err *err)
{
    const struct mb_cp__table *t = ctx;
    return mb_prof_write_table(t->p, t->base, t->source, fp, err);
}

int mb_cmd_calibrate_profile(const char *kind, int argc, char **argv)
{
    int nsys = kind && strcmp(kind, "nsys") == 0;
    if (!nsys && !(kind && strcmp(kind, "kineto") == 0))
        return mb_cp__usage(kind, "unknown profile kind (expected nsys or kineto)");
    const char *in = NULL, *shapes_path = NULL, *gpu = NULL, *base = NULL, *outp = NULL;
    enum { O_SHAPES = 256, O_GPU, O_BASE };
    static const struct option lo_nsys[] = {{"help", no_argument, NULL, 'h'},         {"shapes", required_argument, NULL, O_SHAPES},
                                            {"gpu", required_argument, NULL, O_GPU},    {"base", required_argument, NULL, O_BASE},
                                            {0}};
    struct cli_opts g;
    const char *v;
    char cmd[32];
    int c, rc = -1;
    snprintf(cmd, sizeof cmd, "mbsim calibrate %s", kind);
    /* kineto has no --shapes */
    static const struct option lo_kineto[] = {{"help", no_argument, NULL, 'h'}, {"gpu", required_argument, NULL, O_GPU},
                                              {"base", required_argument, NULL, O_BASE}, {0}};
    cli_opts_init(&g, cmd, "ho:", nsys ? lo_nsys : lo_kineto, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cp__usage(kind, NULL);
            rc = 0;
        } else if (c == O_SHAPES) {
            shapes_path = v;
        } else if (c == O_GPU) {
            gpu = v;
        } else if (c == O_BASE) {
            base = v;
        } else if (c == 'o') {
            outp = v;
        } else if (c != CLI_OPERAND) {
            rc = mb_cp__usage(kind, NULL); /* the error is printed */
        } else if (in) {
            rc = mb_cp__usage(kind, "more than one input file");
        } else {
            in = v;
        }
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!in)
        return mb_cp__usage(kind, "missing input file");

    struct mb_err e;
    mb_err_clear(&e);
    struct mb_prof_shapes *shapes = NULL;
    struct mb_prof *p = NULL;
    if (shapes_path && mb_prof_shapes_load(shapes_path, &shapes, &e))
        return mb_cp__fail(kind, &e);
    rc = nsys ? mb_prof_nsys(in, shapes, &p, &e) : mb_prof_kineto(in, &p, &e);
    mb_prof_shapes_free(shapes);
    if (rc)
        return mb_cp__fail(kind, &e);
    if (gpu)
        snprintf(p->gpu, sizeof p->gpu, "%s", gpu);
    if (!p->gpu[0]) {
        mb_prof_free(p);
        return mb_cp__usage(kind, "the profile does not name its GPU: give --gpu NAME (or gpu: in the shapes file)");
    }
    if (!base)
        base = p->gpu;
    char msg[1024];
    if (mb_calib_target_check(gpu ? gpu : p->gpu, base, msg, sizeof msg)) {
        mb_prof_free(p);
        return mb_cp__usage(kind, msg);
    }

    char source[1024];
    snprintf(source, sizeof source, "mbsim calibrate %s %s%s%s", kind, in, shapes_path ? " --shapes " : "",
             shapes_path ? shapes_path : "");
    struct mb_cp__table t = {p, base, source};
    rc = mb_cli_write_table(cmd, outp, mb_cp__make_table, &t);
    if (!rc)
        mb_prof_write_summary(p, outp ? stdout : stderr);
    mb_prof_free(p);
    return rc;
}
