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
#include "mb_megatron_rules.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
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
    char buf[MB_ERR_TEXT_LEN];
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

/* 1 when `hay` contains `needle`, ignoring case. */
static int mb_cp__contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return 1;
    return n == 0;
}

/* --gpu against the GPU the profile says it was recorded on (Kineto's deviceProperties): kernel
 * times measured on one GPU labelled as another's would price that GPU wrong. 1 after printing
 * the error naming both, 0 when they agree or the profile names no GPU. */
static int mb_cp__gpu_mismatch(const char *kind, const char *in, const struct mb_prof *p, const char *gpu)
{
    if (!p->gpu_name[0] || (p->gpu[0] ? !strcasecmp(p->gpu, gpu) : mb_cp__contains(p->gpu_name, gpu)))
        return 0;
    fprintf(stderr,
            "mbsim calibrate %s: %s: the profile was recorded on %s (deviceProperties[0].name '%s'), not on "
            "--gpu %s: its kernel times would be written as %s's; leave --gpu out%s%s, or profile on %s\n",
            kind, in, p->gpu[0] ? p->gpu : p->gpu_name, p->gpu_name, gpu, gpu, p->gpu[0] ? " or give --gpu " : "",
            p->gpu[0] ? p->gpu : "", gpu);
    return 1;
}

/* The GPU the table will be labelled with against the architecture the kernel names were built
 * for (nvjet_sm90_..., Sm90, sm80): a kernel built for sm90 does not run on an sm80 GPU, so the
 * profile was recorded on another GPU. 1 after printing the error naming both, else 0 (also when
 * the GPU's compute capability or the kernels' are not known). */
static int mb_cp__arch_mismatch(const char *kind, const char *in, const struct mb_prof *p, const char *gpu)
{
    int cc = mb_megatron_gpu_cc(gpu), best = 0;
    size_t at = 0;
    for (size_t i = 0; cc && i < p->n_kernels; i++) {
        int sm = mb_prof_name_sm(p->kernels[i].name);
        if (sm > best) {
            best = sm;
            at = i;
        }
    }
    if (!cc || best <= cc)
        return 0;
    fprintf(stderr,
            "mbsim calibrate %s: %s: kernel '%.120s' (line %d) is built for sm%d, which %s (sm%d) cannot run: the "
            "profile was recorded on a newer GPU than %s; give the GPU it was recorded on with --gpu\n",
            kind, in, p->kernels[at].name, p->kernels[at].line, best, gpu, cc, gpu);
    return 1;
}

/* nsys without shapes for its GEMM and attention kernels: say why there are no points. */
static void mb_cp__why_no_points(const char *in, const struct mb_prof *p, int shapes_given)
{
    if (p->n_points || !p->n_noshape)
        return;
    fprintf(stderr,
            "mbsim calibrate nsys: %s: 0 measured points: %zu GEMM, grouped-GEMM and attention kernels were not "
            "turned into points because their problem sizes are not known. A cuda_gpu_kern_sum report holds "
            "each kernel's name, launch count and times, not its M, N, K (or batch, heads, sequence), and the "
            "numbers in a name (nvjet_sm90_tst_64x8_64x16, GemmShape<32, 128, 64>) are the kernel's tile, not "
            "the problem. %s (docs/calibration.md, \"Importing profiles\"); the table written holds the "
            "per-class summary only, which changes no prediction\n",
            in, p->n_noshape,
            shapes_given ? "No rule of the --shapes file matched them: the summary lists the largest"
                         : "Give their shapes with --shapes FILE: the summary lists the largest");
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
    if (gpu && mb_cp__gpu_mismatch(kind, in, p, gpu)) {
        mb_prof_free(p);
        return 1;
    }
    if (gpu && !(p->gpu[0] && !strcasecmp(p->gpu, gpu))) /* the trace's spelling of its own GPU stays */
        snprintf(p->gpu, sizeof p->gpu, "%s", gpu);
    if (p->gpu[0] && mb_cp__arch_mismatch(kind, in, p, p->gpu)) {
        mb_prof_free(p);
        return 1;
    }
    if (!p->gpu[0]) {
        mb_prof_free(p);
        return mb_cp__usage(kind, "the profile does not name its GPU: give --gpu NAME (or gpu: in the shapes file)");
    }
    if (!base)
        base = p->gpu;
    char msg[1024];
    if (mb_calib_target_check(p->gpu, base, msg, sizeof msg)) {
        mb_prof_free(p);
        return mb_cp__usage(kind, msg);
    }

    char source[1024];
    snprintf(source, sizeof source, "mbsim calibrate %s %s%s%s", kind, in, shapes_path ? " --shapes " : "",
             shapes_path ? shapes_path : "");
    struct mb_cp__table t = {p, base, source};
    rc = mb_cli_write_table(cmd, outp, NULL, mb_cp__make_table, &t);
    if (!rc)
        mb_prof_write_summary(p, outp ? stdout : stderr);
    if (!rc && nsys)
        mb_cp__why_no_points(in, p, shapes_path != NULL);
    mb_prof_free(p);
    return rc;
}
