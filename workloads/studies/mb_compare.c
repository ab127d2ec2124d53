/*
 * mb_compare.c -- two simulated configurations term by term (mb_compare.h),
 * shared by `mbsim compare` (sim/cli/cmd_compare.c) and `mbsim tune`.
 */
#include "mb_compare.h"
#include "mb_yaml.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the settings that differ: both scenarios as the writer states them, compared key by key ---- */

static struct mb_node *mb_cmp__tree(const struct mb_scenario *s, const char *name)
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

static void mb_cmp__scalar(const struct mb_node *n, char *out, size_t len)
{
    if (!n)
        snprintf(out, len, "(not set)");
    else if (n->kind == MB_NODE_SCALAR)
        snprintf(out, len, "%s", n->str);
    else
        snprintf(out, len, "(%zu %s)", n->n, n->kind == MB_NODE_SEQ ? mb_plural((long long)n->n, "item", "items")
                                                                     : mb_plural((long long)n->n, "key", "keys"));
}

static int mb_cmp__same(const struct mb_node *a, const struct mb_node *b)
{
    if (!a || !b || a->kind != b->kind || a->n != b->n)
        return a == b;
    if (a->kind == MB_NODE_SCALAR)
        return !strcmp(a->str, b->str);
    for (size_t i = 0; i < a->n; i++)
        if (a->kind == MB_NODE_SEQ ? !mb_cmp__same(a->items[i], b->items[i])
                                   : strcmp(a->pairs[i].key, b->pairs[i].key) ||
                                         !mb_cmp__same(a->pairs[i].val, b->pairs[i].val))
            return 0;
    return 1;
}

/* Print "path: A -> B" for each key whose value differs (maps recursively; lists and scalars whole). */
static void mb_cmp__diff(const struct mb_node *a, const struct mb_node *b, const char *path, int *shown, FILE *fp)
{
    if (mb_cmp__same(a, b))
        return;
    /* a section one side leaves out (its defaults): compare key by key against nothing */
    int amap = !a || a->kind == MB_NODE_MAP, bmap = !b || b->kind == MB_NODE_MAP;
    if (amap && bmap && (a || b)) {
        for (size_t i = 0; a && i < a->n; i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", a->pairs[i].key);
            mb_cmp__diff(a->pairs[i].val, b ? mb_yaml_get(b, a->pairs[i].key) : NULL, sub, shown, fp);
        }
        for (size_t i = 0; b && i < b->n; i++)
            if (!a || !mb_yaml_get(a, b->pairs[i].key)) {
                char sub[256];
                snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", b->pairs[i].key);
                mb_cmp__diff(NULL, b->pairs[i].val, sub, shown, fp);
            }
        return;
    }
    char va[64], vb[64];
    mb_cmp__scalar(a, va, sizeof va);
    mb_cmp__scalar(b, vb, sizeof vb);
    if ((*shown)++ < 40)
        fprintf(fp, "  %-44s %-24s -> %s\n", path, va, vb);
}

/* What two system files state beyond the preset's name that the step reads as a what-if: the power
 * cap's clock scale and the host CPU's time scale (docs/topology.md). Returns the lines printed. */
static int mb_cmp__system(const struct mb_system *a, const struct mb_system *b, FILE *fp)
{
    int n = 0;
    double ha = a->host_time_scale > 0 ? a->host_time_scale : 1, hb = b->host_time_scale > 0 ? b->host_time_scale : 1;
    if (ha != hb) {
        fprintf(fp, "  system host_time_scale: %g -> %g (the system files' host CPU: launch and host_kernel x it)\n", ha,
                hb);
        n++;
    }
    if (a->power_cap != b->power_cap) {
        fprintf(fp, "  system power_cap: %g W -> %g W (0: the part's default)\n", a->power_cap, b->power_cap);
        n++;
    }
    return n;
}

void mb_compare_settings(const struct mb_scenario *a, const struct mb_scenario *b, FILE *fp)
{
    struct mb_node *ta = mb_cmp__tree(a, "A"), *tb = mb_cmp__tree(b, "B");
    int shown = 0;
    fprintf(fp, "settings that differ (A -> B, as the scenario writer states them; \"(not set)\": the default):\n");
    if (ta && tb) {
        mb_cmp__diff(ta, tb, "", &shown, fp);
        shown += mb_cmp__system(&a->system, &b->system, fp);
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

void mb_compare_row(const char *name, double a, double b, const char *unit, FILE *fp)
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

static int mb_cmp__by_delta(const void *x, const void *y)
{
    const struct mb_cmp__term *p = x, *q = y;
    double dp = fabs(p->b - p->a), dq = fabs(q->b - q->a);
    return (dp < dq) - (dp > dq);
}

static void mb_cmp__terms(const char *title, struct mb_cmp__term *t, size_t n, double scale, const char *unit,
                              FILE *fp)
{
    double ta = 0, tb = 0;
    for (size_t i = 0; i < n; i++) {
        ta += t[i].a;
        tb += t[i].b;
    }
    qsort(t, n, sizeof *t, mb_cmp__by_delta);
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

void mb_compare_time(const struct mb_result *a, const struct mb_result *b, FILE *fp)
{
    struct mb_cmp__term t[MB_CAT_COUNT];
    for (int c = 0; c < MB_CAT_COUNT; c++)
        t[c] = (struct mb_cmp__term){mb_cat_name((enum mb_cat)c), a->breakdown[c], b->breakdown[c]};
    mb_cmp__terms("time per step on each critical pipeline stage's rank", t, MB_CAT_COUNT, 1, "seconds", fp);
}

void mb_compare_memory(const struct mb_memory *a, const struct mb_memory *b, FILE *fp)
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
    mb_cmp__terms("device memory of each peak rank", t, sizeof t / sizeof t[0], gib, "GiB", fp);
}

void mb_compare_headline(const struct mb_result *a, const struct mb_result *b, FILE *fp)
{
    fprintf(fp, "  %-28s %12s %12s %12s %10s\n", "", "A", "B", "B - A", "");
    mb_compare_row("step time", a->step_time_s, b->step_time_s, "s", fp);
    mb_compare_row("tokens/s/GPU", a->tokens_per_s_per_gpu, b->tokens_per_s_per_gpu, "", fp);
    mb_compare_row("model TFLOP/s/GPU", a->model_tflops_per_gpu, b->model_tflops_per_gpu, "", fp);
    mb_compare_row("MFU", a->mfu * 100, b->mfu * 100, "%", fp);
    mb_compare_row("peak device memory", a->mem.device / 1073741824.0, b->mem.device / 1073741824.0, "GiB", fp);
    fprintf(fp, "  %-28s %12s %12s\n", "memory verdict", mb_memory_verdict_name(a->mem.verdict),
            mb_memory_verdict_name(b->mem.verdict));
}
