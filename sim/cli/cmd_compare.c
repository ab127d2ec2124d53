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
#include "mb_scenario.h"
#include "mb_step.h"
#include "mb_yaml.h"

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

/* ---- the settings that differ: both scenarios as the writer states them, compared key by key ---- */

static struct mb_node *mb_cli__cmp_tree(const struct mb_scenario *s, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp)
        return NULL;
    int bad = mb_scenario_write_yaml(s, fp);
    fclose(fp);
    struct mb_err err;
    mb_err_clear(&err);
    struct mb_node *n = bad ? NULL : mb_yaml_load_string(buf, len, name, &err);
    free(buf);
    return n;
}

static void mb_cli__cmp_scalar(const struct mb_node *n, char *out, size_t len)
{
    if (!n)
        snprintf(out, len, "(not set)");
    else if (n->kind == MB_NODE_SCALAR)
        snprintf(out, len, "%s", n->str);
    else
        snprintf(out, len, "(%zu %s)", n->n, n->kind == MB_NODE_SEQ ? mb_plural((long long)n->n, "item", "items")
                                                                     : mb_plural((long long)n->n, "key", "keys"));
}

static int mb_cli__cmp_same(const struct mb_node *a, const struct mb_node *b)
{
    if (!a || !b || a->kind != b->kind || a->n != b->n)
        return a == b;
    if (a->kind == MB_NODE_SCALAR)
        return !strcmp(a->str, b->str);
    for (size_t i = 0; i < a->n; i++)
        if (a->kind == MB_NODE_SEQ ? !mb_cli__cmp_same(a->items[i], b->items[i])
                                   : strcmp(a->pairs[i].key, b->pairs[i].key) ||
                                         !mb_cli__cmp_same(a->pairs[i].val, b->pairs[i].val))
            return 0;
    return 1;
}

/* Print "path: A -> B" for each key whose value differs (maps recursively; lists and scalars whole). */
static void mb_cli__cmp_diff(const struct mb_node *a, const struct mb_node *b, const char *path, int *shown, FILE *fp)
{
    if (mb_cli__cmp_same(a, b))
        return;
    /* a section one side leaves out (its defaults): compare key by key against nothing */
    int amap = !a || a->kind == MB_NODE_MAP, bmap = !b || b->kind == MB_NODE_MAP;
    if (amap && bmap && (a || b)) {
        for (size_t i = 0; a && i < a->n; i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", a->pairs[i].key);
            mb_cli__cmp_diff(a->pairs[i].val, b ? mb_yaml_get(b, a->pairs[i].key) : NULL, sub, shown, fp);
        }
        for (size_t i = 0; b && i < b->n; i++)
            if (!a || !mb_yaml_get(a, b->pairs[i].key)) {
                char sub[256];
                snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", b->pairs[i].key);
                mb_cli__cmp_diff(NULL, b->pairs[i].val, sub, shown, fp);
            }
        return;
    }
    char va[64], vb[64];
    mb_cli__cmp_scalar(a, va, sizeof va);
    mb_cli__cmp_scalar(b, vb, sizeof vb);
    if ((*shown)++ < 40)
        fprintf(fp, "  %-44s %-24s -> %s\n", path, va, vb);
}

static void mb_cli__cmp_settings(const struct mb_cmp__side *a, const struct mb_cmp__side *b, FILE *fp)
{
    struct mb_node *ta = mb_cli__cmp_tree(&a->s, a->file), *tb = mb_cli__cmp_tree(&b->s, b->file);
    int shown = 0;
    fprintf(fp, "settings that differ (A -> B, as the scenario writer states them; \"(not set)\": the default):\n");
    if (ta && tb) {
        mb_cli__cmp_diff(ta, tb, "", &shown, fp);
        if (!shown)
            fprintf(fp, "  none\n");
        else if (shown > 40)
            fprintf(fp, "  ... and %d more\n", shown - 40);
    } else {
        fprintf(fp, "  (a scenario could not be written back: not compared)\n");
    }
    mb_yaml_free(ta);
    mb_yaml_free(tb);
}

/* ---- the terms ---- */

static void mb_cli__cmp_row(const char *name, double a, double b, const char *unit, FILE *fp)
{
    double d = b - a;
    if (a != 0)
        fprintf(fp, "  %-28s %12.6g %12.6g %+12.6g %+8.1f %%  %s\n", name, a, b, d, 100 * d / fabs(a), unit);
    else
        fprintf(fp, "  %-28s %12.6g %12.6g %+12.6g %10s  %s\n", name, a, b, d, "", unit);
}

/* Term k of n with its A and B values; printed largest |B - A| first, as a share of the total's change. */
struct mb_cmp__term {
    const char *name;
    double a, b;
};

static int mb_cli__cmp_by_delta(const void *x, const void *y)
{
    const struct mb_cmp__term *p = x, *q = y;
    double dp = fabs(p->b - p->a), dq = fabs(q->b - q->a);
    return (dp < dq) - (dp > dq);
}

static void mb_cli__cmp_terms(const char *title, struct mb_cmp__term *t, size_t n, double scale, const char *unit,
                              FILE *fp)
{
    double ta = 0, tb = 0;
    for (size_t i = 0; i < n; i++) {
        ta += t[i].a;
        tb += t[i].b;
    }
    qsort(t, n, sizeof *t, mb_cli__cmp_by_delta);
    fprintf(fp, "\n%s (%s; largest change first, share of the total's change):\n", title, unit);
    fprintf(fp, "  %-28s %12s %12s %12s %9s\n", "", "A", "B", "B - A", "share");
    for (size_t i = 0; i < n; i++) {
        if (t[i].a == 0 && t[i].b == 0)
            continue;
        double d = t[i].b - t[i].a;
        fprintf(fp, "  %-28s %12.4f %12.4f %+12.4f %8.1f %%\n", t[i].name, t[i].a * scale, t[i].b * scale, d * scale,
                tb != ta ? 100 * d / (tb - ta) : 0.0);
    }
    fprintf(fp, "  %-28s %12.4f %12.4f %+12.4f\n", "total", ta * scale, tb * scale, (tb - ta) * scale);
}

static void mb_cli__cmp_time(const struct mb_result *a, const struct mb_result *b, FILE *fp)
{
    struct mb_cmp__term t[MB_CAT_COUNT];
    for (int c = 0; c < MB_CAT_COUNT; c++)
        t[c] = (struct mb_cmp__term){mb_cat_name((enum mb_cat)c), a->breakdown[c], b->breakdown[c]};
    mb_cli__cmp_terms("time per step on each critical pipeline stage's rank", t, MB_CAT_COUNT, 1, "seconds", fp);
}

static void mb_cli__cmp_memory(const struct mb_memory *a, const struct mb_memory *b, FILE *fp)
{
    const double gib = 1.0 / (1024.0 * 1024.0 * 1024.0);
    struct mb_cmp__term t[] = {
        {"weights", a->weights, b->weights},
        {"gradients", a->grads, b->grads},
        {"optimizer states", a->optimizer, b->optimizer},
        {"activations", a->activations, b->activations},
        {"buffers", a->buffers, b->buffers},
        {"CUDA graphs", a->graphs, b->graphs},
        {"recompute", a->recompute, b->recompute},
        {"backward gradients", a->bwd_grads, b->bwd_grads},
        {"fragmentation", a->fragmentation, b->fragmentation},
        {"communication buffers", a->comm_buffers, b->comm_buffers},
        {"CUDA context", a->context, b->context},
    };
    mb_cli__cmp_terms("device memory of each peak rank", t, sizeof t / sizeof t[0], gib, "GiB", fp);
}

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
    mb_cli__cmp_settings(a, b, fp);
    fprintf(fp, "\n  %-28s %12s %12s %12s %10s\n", "", "A", "B", "B - A", "");
    mb_cli__cmp_row("step time", a->r.step_time_s, b->r.step_time_s, "s", fp);
    mb_cli__cmp_row("tokens/s/GPU", a->r.tokens_per_s_per_gpu, b->r.tokens_per_s_per_gpu, "", fp);
    mb_cli__cmp_row("model TFLOP/s/GPU", a->r.model_tflops_per_gpu, b->r.model_tflops_per_gpu, "", fp);
    mb_cli__cmp_row("MFU", a->r.mfu * 100, b->r.mfu * 100, "%", fp);
    mb_cli__cmp_row("peak device memory", a->r.mem.device / 1073741824.0, b->r.mem.device / 1073741824.0, "GiB", fp);
    fprintf(fp, "  %-28s %12s %12s\n", "memory verdict", mb_memory_verdict_name(a->r.mem.verdict),
            mb_memory_verdict_name(b->r.mem.verdict));
    mb_cli__cmp_time(&a->r, &b->r, fp);
    mb_cli__cmp_memory(&a->r.mem, &b->r.mem, fp);
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
