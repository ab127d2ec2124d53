/*
 * report_ops.c -- the per-op table: what a performance engineer reads first
 * (which GEMM, attention or all-to-all takes the step, and how far from peak).
 */
#include "report_ops.h"

#include <stdlib.h>

static const char *mb_cli__dir(int d)
{
    static const char *const n[] = {"fwd", "bwd", "recompute"};
    return d >= 0 && d <= 2 ? n[d] : "-";
}

/* Achieved rate of op x: FLOP/s when it does FLOPs, else bytes/s. */
static double mb_cli__rate(const struct mb_op_stat *x)
{
    if (x->time_s <= 0)
        return 0;
    return (x->flop > 0 ? x->flop : x->bytes) / x->time_s;
}

static int mb_cli__by_time(const void *pa, const void *pb)
{
    const struct mb_op_stat *a = *(const struct mb_op_stat *const *)pa, *b = *(const struct mb_op_stat *const *)pb;
    return a->time_s < b->time_s ? 1 : a->time_s > b->time_s ? -1 : 0;
}

/* r->ops longest first (caller frees). */
static const struct mb_op_stat **mb_cli__sorted(const struct mb_result *r)
{
    const struct mb_op_stat **v = malloc((r->n_ops ? r->n_ops : 1) * sizeof *v);
    for (size_t i = 0; v && i < r->n_ops; i++)
        v[i] = &r->ops[i];
    if (v)
        qsort(v, r->n_ops, sizeof *v, mb_cli__by_time);
    return v;
}

void mb_report_ops_text(const struct mb_result *r, FILE *fp)
{
    if (!r->ops || !r->n_ops)
        return;
    const struct mb_op_stat **v = mb_cli__sorted(r);
    if (!v)
        return;
    fprintf(fp, "\n  ops (pipeline stage %d, per step; communication overlaps compute):\n", r->critical_stage);
    fprintf(fp, "    %-26s %-9s %8s %10s %7s %15s %8s\n", "op", "direction", "count", "time s", "share", "achieved",
            "of peak");
    for (size_t i = 0; i < r->n_ops; i++) {
        const struct mb_op_stat *x = v[i];
        double rate = mb_cli__rate(x);
        char ach[32] = "", frac[16] = "";
        if (rate > 0)
            snprintf(ach, sizeof ach, x->flop > 0 ? "%.1f TFLOP/s" : "%.1f GB/s", rate / (x->flop > 0 ? 1e12 : 1e9));
        if (rate > 0 && x->peak > 0)
            snprintf(frac, sizeof frac, "%.1f %%", 100 * rate / x->peak);
        fprintf(fp, "    %-26s %-9s %8.0f %10.4f %6.1f%% %15s %8s%s\n", x->name, mb_cli__dir(x->dir), x->count, x->time_s,
                r->step_time_s > 0 ? 100 * x->time_s / r->step_time_s : 0, ach, frac, x->comm ? "  (comm)" : "");
    }
    free(v);
}

json_t *mb_report_ops_json(const struct mb_result *r)
{
    if (!r->ops)
        return NULL;
    const struct mb_op_stat **v = mb_cli__sorted(r);
    json_t *a = json_array();
    for (size_t i = 0; v && i < r->n_ops; i++) {
        const struct mb_op_stat *x = v[i];
        double rate = mb_cli__rate(x);
        json_t *o = json_object();
        json_object_set_new(o, "op", json_string(x->name));
        json_object_set_new(o, "direction", json_string(mb_cli__dir(x->dir)));
        json_object_set_new(o, "comm", json_boolean(x->comm));
        json_object_set_new(o, "count", json_real(x->count));
        json_object_set_new(o, "time_s", json_real(x->time_s));
        json_object_set_new(o, "share", json_real(r->step_time_s > 0 ? x->time_s / r->step_time_s : 0));
        json_object_set_new(o, "flop", json_real(x->flop));
        json_object_set_new(o, "bytes", json_real(x->bytes));
        json_object_set_new(o, "achieved_tflops", json_real(x->flop > 0 ? rate / 1e12 : 0));
        json_object_set_new(o, "achieved_gbps", json_real(x->flop > 0 ? 0 : rate / 1e9));
        json_object_set_new(o, "fraction_of_peak", json_real(rate > 0 && x->peak > 0 ? rate / x->peak : 0));
        json_array_append_new(a, o);
    }
    free(v);
    return a;
}
