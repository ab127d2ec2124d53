/*
 * cmd_compare.c -- `mbsim compare A.yaml B.yaml`: two scenarios side by side, and where the
 * difference in step time comes from: the settings that differ, the headline metrics, the time
 * breakdown term by term (compute per block, exposed communication per group, host, bubble), the
 * memory terms of each peak rank, and, when the two use different calibration tables (two GPUs), how
 * much of B's step each differing fitted framework parameter carries: B simulated again with A's
 * value of that one parameter (docs/cli.md "compare").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_compare.h"
#include "mb_scenario.h"
#include "mb_step.h"

static void mb_cli__usage_compare(FILE *fp)
{
    fprintf(fp, "usage: mbsim compare A.yaml B.yaml [--roofline]\n"
                "\n"
                "Simulates two scenarios and prints them side by side: the settings that differ,\n"
                "step time, tokens/s/GPU, model TFLOP/s/GPU, MFU and peak memory, then term by\n"
                "term (compute per block, exposed communication per group, host launches, pipeline\n"
                "bubble, memory terms) how much each contributes to the difference, largest first.\n"
                "When A and B use different calibration tables (two GPUs), B is simulated again\n"
                "with A's value of each differing fitted framework parameter, one at a time, to\n"
                "show which fitted term decides the comparison.\n"
                "\n"
                "  --roofline   ignore measured kernel tables in both (roofline-only prediction)\n");
}

/* One side: its file, scenario and result. */
struct mb_cmp__side {
    const char *file;
    struct mb_scenario s;
    struct mb_result r;
    int loaded, simulated;
};

/* ---- the fitted framework terms ---- */

/* B simulated again with A's value of parameter p; its step time, or NAN. */
static double mb_cli__cmp_swap(const struct mb_cmp__side *b, const struct mb_calib_framework *fa, int p)
{
    struct mb_calib *view;
    struct mb_err err;
    mb_err_clear(&err);
    const struct mb_scenario *s = &b->s;
    if (mb_calib_shared(s->system.gpu, s->calib_path[0] ? s->calib_path : NULL, &view, &err))
        return NAN;
    struct mb_calib_framework fw;
    mb_calib_framework_get(view, &fw);
    fw.v[p] = fa->v[p];
    mb_calib_framework_set(view, &fw);
    struct mb_step_opts o = {.cal = view};
    struct mb_result r;
    double t = mb_step_simulate_opts(s, &o, &r, &err) ? NAN : r.step_time_s;
    mb_result_free(&r);
    mb_calib_free(view);
    return t;
}

static void mb_cli__cmp_framework(const struct mb_cmp__side *a, const struct mb_cmp__side *b, FILE *fp)
{
    struct mb_calib *va, *vb;
    struct mb_err err;
    mb_err_clear(&err);
    if (a->s.roofline || mb_calib_shared(a->s.system.gpu, a->s.calib_path[0] ? a->s.calib_path : NULL, &va, &err))
        return;
    if (mb_calib_shared(b->s.system.gpu, b->s.calib_path[0] ? b->s.calib_path : NULL, &vb, &err)) {
        mb_calib_free(va);
        return;
    }
    struct mb_calib_framework fa, fb;
    mb_calib_framework_get(va, &fa);
    mb_calib_framework_get(vb, &fb);
    int header = 0;
    for (int p = 0; p < MB_FW_COUNT; p++) {
        if (fa.v[p] == fb.v[p])
            continue;
        if (!header++)
            fprintf(fp, "\nfitted framework terms that differ (calibration %s vs %s); B's step with A's value of "
                        "one term:\n  %-18s %12s %12s %14s %9s\n",
                    a->r.calib_path, b->r.calib_path, "term", "A", "B", "B's step then", "change");
        const struct mb_fw_param_info *in = mb_calib_fw_info((enum mb_fw_param)p);
        double k = !strcmp(in->unit, "us") ? 1e6 : 1, t = mb_cli__cmp_swap(b, &fa, p);
        fprintf(fp, "  %-18s %10.4g%-2s %10.4g%-2s %12.4f s %+8.1f %%\n", in->name, fa.v[p] * k, in->unit, fb.v[p] * k,
                in->unit, t, 100 * (t / b->r.step_time_s - 1));
    }
    mb_calib_free(va);
    mb_calib_free(vb);
}

/* ---- the command ---- */

static int mb_cli__cmp_side(struct mb_cmp__side *x, int roofline)
{
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_scenario_load(x->file, &x->s, &err)) {
        mb_cli_print_err(&err);
        return -1;
    }
    x->loaded = 1;
    cli_print_warnings(x->s.warnings);
    if (roofline)
        x->s.roofline = 1;
    struct mb_step_opts o = {.critical_path = 1};
    if (mb_step_simulate_opts(&x->s, &o, &x->r, &err)) {
        mb_cli_print_err(&err);
        return -1;
    }
    x->simulated = 1;
    return 0;
}

static void mb_cli__cmp_print(const struct mb_cmp__side *a, const struct mb_cmp__side *b, FILE *fp)
{
    fprintf(fp, "A: %s (%s)\nB: %s (%s)\n\n", a->file, a->s.name, b->file, b->s.name);
    mb_compare_settings(&a->s, &b->s, fp);
    fprintf(fp, "\n");
    mb_compare_headline(&a->r, &b->r, fp);
    mb_compare_time(&a->r, &b->r, fp);
    mb_compare_memory(&a->r.mem, &b->r.mem, fp);
    mb_cli__cmp_framework(a, b, fp);
}

int mb_cmd_compare(int argc, char **argv)
{
    const char *v;
    int roofline = 0, c, rc = -1;
    struct mb_cmp__side side[2] = {{0}};
    int n = 0;
    enum { O_ROOFLINE = 256 };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'}, {"roofline", no_argument, NULL, O_ROOFLINE}, {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim compare", "h", lo, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cli__usage_compare(stdout);
            rc = 0;
        } else if (c == O_ROOFLINE) {
            roofline = 1;
        } else if (c == CLI_OPERAND && n < 2) {
            side[n++].file = v;
        } else {
            if (c == CLI_OPERAND)
                fprintf(stderr, "mbsim compare: two scenario files expected, got '%s' too\n", v);
            mb_cli__usage_compare(stderr);
            rc = EXIT_USAGE;
        }
    }
    cli_opts_free(&g);
    if (rc < 0 && n < 2) {
        mb_cli__usage_compare(stderr);
        rc = EXIT_USAGE;
    }
    if (rc < 0 && mb_cli_check_data_dir())
        rc = EXIT_BAD_INPUT;
    if (rc < 0 && (mb_cli__cmp_side(&side[0], roofline) || mb_cli__cmp_side(&side[1], roofline)))
        rc = EXIT_BAD_INPUT;
    if (rc < 0) {
        mb_cli__cmp_print(&side[0], &side[1], stdout);
        rc = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (side[i].simulated)
            mb_result_free(&side[i].r);
        if (side[i].loaded)
            mb_scenario_free(&side[i].s);
    }
    return rc;
}
