/*
 * mb_calib_load.c -- reading a calibration table (calibration/tables/<GPU>.yaml
 * or an overlay on one) into struct mb_calib: the spec, gemm, grouped_gemm,
 * attention, membound and links sections, `recipes:`, the overlay's base chain
 * (`base:`), and the table's view and release. The `measured:` points are merged
 * by mb_calib_measured.c, `framework:` is read by mb_calib.c; the file format is
 * docs/calibration.md.
 */
#include "mb_calib.h"
#include "calib_int.h"
#include "mb_input.h"
#include "mb_yaml.h"

#include <assert.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const mb_calib__known[] = {"A100", "B200", "B300", "GB200", "GB300", "H100", "H100_96GB", "H200", NULL};
static const char *const mb_calib__link_names[MB_LINK_COUNT] = {"nvlink", "nic", "pcie", "nvls"};

/* ------------------------------------------------------------------ loading */

struct mb_calib__spec_in {
    double hbm, hbm_bw, launch, roofline_eff;
    long sms;
    const struct mb_node *peak;
};

struct mb_calib__peak_in {
    double p[MB_PREC_COUNT];
};

static int mb_calib__load_spec(struct mb_calib *c, const struct mb_node *n, struct mb_err *err)
{
    struct mb_calib__spec_in in = {0};
    const struct mb_field f[] = {
        {"peak", MB_F_NODE, offsetof(struct mb_calib__spec_in, peak), 0, 1, 1, 0, MB_UNIT_NONE},
        {"hbm", MB_F_DOUBLE, offsetof(struct mb_calib__spec_in, hbm), 0, 1, 1e9, 1e13, MB_UNIT_BYTES},
        {"hbm_bw", MB_F_DOUBLE, offsetof(struct mb_calib__spec_in, hbm_bw), 0, 1, 1e9, 1e14, MB_UNIT_BW},
        {"sms", MB_F_INT, offsetof(struct mb_calib__spec_in, sms), 0, 1, 1, 10000, MB_UNIT_NONE},
        {"launch", MB_F_DOUBLE, offsetof(struct mb_calib__spec_in, launch), 0, 1, 0, 1e-3, MB_UNIT_TIME},
        {"roofline_eff", MB_F_DOUBLE, offsetof(struct mb_calib__spec_in, roofline_eff), 0, 1, 0.01, 1,
         MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(n, f, &in, "spec", NULL, err))
        return -1;
    const struct mb_node *src = mb_yaml_get(n, "source");
    if (mb_yaml_expect(src, MB_NODE_SCALAR, "spec.source", err))
        return -1;
    snprintf(c->spec.source, sizeof c->spec.source, "%s", src->str);
    c->source[T_SPEC] = mb_strdup(src->str);

    struct mb_calib__peak_in pk = {{0}};
    const struct mb_field pf[] = {
        {"fp32", MB_F_DOUBLE, offsetof(struct mb_calib__peak_in, p) + 0 * sizeof(double), 0, 1, 1e12, 1e17,
         MB_UNIT_FLOPS},
        {"bf16", MB_F_DOUBLE, offsetof(struct mb_calib__peak_in, p) + 1 * sizeof(double), 0, 1, 1e12, 1e17,
         MB_UNIT_FLOPS},
        {"fp16", MB_F_DOUBLE, offsetof(struct mb_calib__peak_in, p) + 2 * sizeof(double), 0, 1, 1e12, 1e17,
         MB_UNIT_FLOPS},
        {"fp8", MB_F_DOUBLE, offsetof(struct mb_calib__peak_in, p) + 3 * sizeof(double), 0, 0, 1e12, 1e17,
         MB_UNIT_FLOPS},
        {"fp4", MB_F_DOUBLE, offsetof(struct mb_calib__peak_in, p) + 4 * sizeof(double), 0, 0, 1e12, 1e17,
         MB_UNIT_FLOPS},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(in.peak, pf, &pk, "spec.peak", NULL, err))
        return -1;
    for (int i = 0; i < MB_PREC_COUNT; i++)
        c->spec.peak[i] = pk.p[i];
    c->spec.hbm_bytes = in.hbm;
    c->spec.hbm_bw = in.hbm_bw;
    c->spec.sms = (int)in.sms;
    c->spec.launch_s = in.launch;
    c->roofline_eff = in.roofline_eff;
    return 0;
}

/* Reads `source:` of a table section (required, a scalar). */
static int mb_calib__source(struct mb_calib *c, int t, const struct mb_node *sec, struct mb_err *err)
{
    const struct mb_node *src = mb_yaml_get(sec, "source");
    if (mb_yaml_expect(src, MB_NODE_SCALAR, "source", err))
        return -1;
    c->source[t] = mb_strdup(src->str);
    return 0;
}

/* Checks that x strictly increases along a point list (sorted, no duplicates). */
static int mb_calib__check_sorted(const struct mb_calib__pt *pts, size_t i, const struct mb_node *at,
                                  const char *what, const char *measure, struct mb_err *err)
{
    if (i > 0 && !(pts[i].x > pts[i - 1].x))
        return mb_yaml_err(err, at, "%s points must be sorted by increasing %s (%.6g after %.6g)", what, measure,
                           pts[i].x, pts[i - 1].x);
    return 0;
}

struct mb_calib__curve_in {
    const struct mb_node *prec, *from, *points;
    double scale;
    int assumed;
    double plateau;
};

struct mb_calib__gpt_in {
    long m, n, k, batch;
    double achieved;
};

static int mb_calib__load_gemm(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    struct {
        double triton_frac;
    } gin = {1.0};
    const struct mb_field sf[] = {{"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                  {"curves", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                  {"triton_frac", MB_F_DOUBLE, 0, 0, 0, 0.01, 1, MB_UNIT_NONE},
                                  {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, sf, &gin, "gemm", NULL, err) || mb_calib__source(c, T_GEMM, sec, err))
        return -1;
    c->triton_frac = gin.triton_frac;
    const struct mb_node *curves = mb_yaml_get(sec, "curves");
    if (mb_yaml_expect(curves, MB_NODE_SEQ, "gemm.curves", err))
        return -1;
    const struct mb_field cf[] = {
        {"prec", MB_F_NODE, offsetof(struct mb_calib__curve_in, prec), 0, 1, 1, 0, MB_UNIT_NONE},
        {"from", MB_F_NODE, offsetof(struct mb_calib__curve_in, from), 0, 0, 1, 0, MB_UNIT_NONE},
        {"points", MB_F_NODE, offsetof(struct mb_calib__curve_in, points), 0, 0, 1, 0, MB_UNIT_NONE},
        {"scale", MB_F_DOUBLE, offsetof(struct mb_calib__curve_in, scale), 0, 0, 0.01, 100, MB_UNIT_NONE},
        {"assumed", MB_F_BOOL, offsetof(struct mb_calib__curve_in, assumed), 0, 0, 1, 0, MB_UNIT_NONE},
        {"plateau", MB_F_DOUBLE, offsetof(struct mb_calib__curve_in, plateau), 0, 0, 1e9, 1e17, MB_UNIT_FLOPS},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    for (size_t ci = 0; ci < curves->n; ci++) {
        const struct mb_node *cn = curves->items[ci];
        struct mb_calib__curve_in in = {NULL, NULL, NULL, 1.0, 0, 0};
        if (mb_yaml_read_fields(cn, cf, &in, "gemm curve", NULL, err))
            return -1;
        int p = 0;
        if (mb_calib__prec_parse(in.prec, &p, err))
            return -1;
        struct mb_calib__curve *cv = &c->gemm[p];
        if (cv->present)
            return mb_yaml_err(err, in.prec, "duplicate gemm curve for %s", mb_calib__prec_names[p]);
        if (c->spec.peak[p] <= 0)
            return mb_yaml_err(err, in.prec, "gemm curve for %s but spec.peak.%s is not set",
                               mb_calib__prec_names[p], mb_calib__prec_names[p]);
        cv->present = 1;
        cv->scale = in.scale;
        cv->assumed = in.assumed;
        cv->from = -1;
        if (in.from) {
            if (in.points || in.plateau > 0)
                return mb_yaml_err(err, in.from, "gemm curve with 'from' takes no points or plateau");
            if (mb_calib__prec_parse(in.from, &cv->from, err))
                return -1;
            if (cv->from == p || !c->gemm[cv->from].present)
                return mb_yaml_err(err, in.from, "gemm curve %s: 'from: %s' must name an earlier curve",
                                   mb_calib__prec_names[p], mb_calib__prec_names[cv->from]);
            continue;
        }
        if (!(in.plateau > 0))
            return mb_yaml_err(err, cn, "missing required key 'plateau' in gemm curve");
        if (in.plateau > c->spec.peak[p] * (1 + 1e-9))
            return mb_yaml_err(err, mb_yaml_get(cn, "plateau"), "gemm plateau exceeds spec.peak.%s",
                               mb_calib__prec_names[p]);
        cv->plateau = in.plateau / c->spec.peak[p];
        if (!in.points)
            continue; /* no measured shapes: every lookup is a roofline fallback */
        if (mb_yaml_expect(in.points, MB_NODE_SEQ, "gemm curve points", err))
            return -1;
        cv->n = in.points->n;
        cv->pts = mb_calloc(cv->n ? cv->n : 1, sizeof *cv->pts);
        const struct mb_field pf[] = {
            {"m", MB_F_INT, offsetof(struct mb_calib__gpt_in, m), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
            {"n", MB_F_INT, offsetof(struct mb_calib__gpt_in, n), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
            {"k", MB_F_INT, offsetof(struct mb_calib__gpt_in, k), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
            {"batch", MB_F_INT, offsetof(struct mb_calib__gpt_in, batch), 0, 0, 1, 1 << 16, MB_UNIT_NONE},
            {"achieved", MB_F_DOUBLE, offsetof(struct mb_calib__gpt_in, achieved), 0, 1, 1e9, 1e17,
             MB_UNIT_FLOPS},
            {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
            {NULL, 0, 0, 0, 0, 0, 0, 0}};
        for (size_t i = 0; i < cv->n; i++) {
            const struct mb_node *pn = in.points->items[i];
            struct mb_calib__gpt_in g = {0, 0, 0, 1, 0};
            if (mb_yaml_read_fields(pn, pf, &g, "gemm point", NULL, err))
                return -1;
            double eff = g.achieved * cv->scale / c->spec.peak[p];
            if (eff > 1 + 1e-9)
                return mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                                   "gemm point achieves %.4g of spec.peak.%s (more than 1)", eff,
                                   mb_calib__prec_names[p]);
            cv->pts[i].x = (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
            cv->pts[i].y = eff;
            if (mb_calib__check_sorted(cv->pts, i, pn, "gemm", "b*m*n*k", err))
                return -1;
        }
    }
    return 0;
}

struct mb_calib__grp_in {
    double ref_m;
    const struct mb_node *points;
};
struct mb_calib__grp_pt_in {
    double tokens, rel;
};

static int mb_calib__load_grouped(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    struct mb_calib__grp_in in = {0, NULL};
    const struct mb_field f[] = {
        {"ref_m", MB_F_DOUBLE, offsetof(struct mb_calib__grp_in, ref_m), 0, 1, 1, 1e7, MB_UNIT_NONE},
        {"points", MB_F_NODE, offsetof(struct mb_calib__grp_in, points), 0, 1, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, &in, "grouped_gemm", NULL, err) || mb_calib__source(c, T_GROUPED, sec, err))
        return -1;
    if (mb_yaml_expect(in.points, MB_NODE_SEQ, "grouped_gemm.points", err))
        return -1;
    if (in.points->n == 0)
        return mb_yaml_err(err, in.points, "grouped_gemm.points is empty");
    c->grouped_ref_m = in.ref_m;
    c->n_grouped = in.points->n;
    c->grouped = mb_calloc(c->n_grouped, sizeof *c->grouped);
    const struct mb_field pf[] = {
        {"tokens", MB_F_DOUBLE, offsetof(struct mb_calib__grp_pt_in, tokens), 0, 1, 1, 1e8, MB_UNIT_NONE},
        {"rel", MB_F_DOUBLE, offsetof(struct mb_calib__grp_pt_in, rel), 0, 1, 1e-4, 1.5, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    for (size_t i = 0; i < c->n_grouped; i++) {
        struct mb_calib__grp_pt_in g = {0, 0};
        if (mb_yaml_read_fields(in.points->items[i], pf, &g, "grouped_gemm point", NULL, err))
            return -1;
        c->grouped[i].x = g.tokens;
        c->grouped[i].y = g.rel;
        if (mb_calib__check_sorted(c->grouped, i, in.points->items[i], "grouped_gemm", "tokens", err))
            return -1;
    }
    return 0;
}

struct mb_calib__attn_in {
    double scale, margin, bench_bh;
    const struct mb_node *curves;
};
struct mb_calib__acurve_in {
    int causal, bwd;
    long head_dim;
    const struct mb_node *points;
};
struct mb_calib__apt_in {
    double seq, achieved;
};

/*
 * attention: curves keyed by (causal, bwd, head_dim); several head dims per
 * (causal, bwd) kind are allowed, a repeated key is an error.
 */
static int mb_calib__load_attn(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    struct mb_calib__attn_in in = {1.0, 2.0, 0.0, NULL};
    const struct mb_field f[] = {
        {"scale", MB_F_DOUBLE, offsetof(struct mb_calib__attn_in, scale), 0, 0, 0.01, 100, MB_UNIT_NONE},
        {"clamp_margin", MB_F_DOUBLE, offsetof(struct mb_calib__attn_in, margin), 0, 0, 1, 16, MB_UNIT_NONE},
        {"batch_heads", MB_F_DOUBLE, offsetof(struct mb_calib__attn_in, bench_bh), 0, 0, 1, 1e6, MB_UNIT_NONE},
        {"curves", MB_F_NODE, offsetof(struct mb_calib__attn_in, curves), 0, 1, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, &in, "attention", NULL, err) || mb_calib__source(c, T_ATTN, sec, err))
        return -1;
    if (mb_yaml_expect(in.curves, MB_NODE_SEQ, "attention.curves", err))
        return -1;
    c->attn_margin = in.margin;
    c->attn_bench_bh = in.bench_bh;
    double peak = c->spec.peak[MB_PREC_BF16];
    const struct mb_field cf[] = {
        {"causal", MB_F_BOOL, offsetof(struct mb_calib__acurve_in, causal), 0, 1, 1, 0, MB_UNIT_NONE},
        {"bwd", MB_F_BOOL, offsetof(struct mb_calib__acurve_in, bwd), 0, 1, 1, 0, MB_UNIT_NONE},
        {"head_dim", MB_F_INT, offsetof(struct mb_calib__acurve_in, head_dim), 0, 1, 1, 1024, MB_UNIT_NONE},
        {"points", MB_F_NODE, offsetof(struct mb_calib__acurve_in, points), 0, 1, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    const struct mb_field pf[] = {
        {"seq", MB_F_DOUBLE, offsetof(struct mb_calib__apt_in, seq), 0, 1, 1, 1e8, MB_UNIT_NONE},
        {"achieved", MB_F_DOUBLE, offsetof(struct mb_calib__apt_in, achieved), 0, 1, 1e9, 1e17, MB_UNIT_FLOPS},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    for (size_t ci = 0; ci < in.curves->n; ci++) {
        const struct mb_node *cn = in.curves->items[ci];
        struct mb_calib__acurve_in a = {0, 0, 0, NULL};
        if (mb_yaml_read_fields(cn, cf, &a, "attention curve", NULL, err))
            return -1;
        struct mb_calib__akind *kind = &c->attn[a.causal][a.bwd];
        if (mb_calib__acurve_find(kind, (int)a.head_dim))
            return mb_yaml_err(err, cn, "duplicate attention curve (causal %d, bwd %d, head_dim %ld)", a.causal,
                               a.bwd, a.head_dim);
        if (mb_yaml_expect(a.points, MB_NODE_SEQ, "attention curve points", err))
            return -1;
        if (a.points->n == 0)
            return mb_yaml_err(err, a.points, "attention curve has no points");
        size_t n = a.points->n;
        struct mb_calib__pt *pts = mb_calloc(n, sizeof *pts);
        struct mb_calib__acurve *cv = mb_calib__acurve_insert(kind, (int)a.head_dim);
        cv->pts = pts;
        cv->n = n;
        for (size_t i = 0; i < n; i++) {
            struct mb_calib__apt_in g = {0, 0};
            const struct mb_node *pn = a.points->items[i];
            if (mb_yaml_read_fields(pn, pf, &g, "attention point", NULL, err))
                return -1;
            pts[i].x = g.seq;
            pts[i].y = g.achieved * in.scale / peak;
            if (pts[i].y > 1 + 1e-9)
                return mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                                   "attention point achieves %.4g of spec.peak.bf16 (more than 1)", pts[i].y);
            if (mb_calib__check_sorted(pts, i, pn, "attention", "seq", err))
                return -1;
        }
    }
    return 0;
}

struct mb_calib__link_in {
    double eff, latency;
};
struct mb_calib__flex_in {
    const struct mb_node *points;
};
struct mb_calib__flex_pt_in {
    double domains, eff[MB_CALIB_FLEX_COUNT];
};

static int mb_calib__load_mem(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    struct mb_calib__mem_in in = {0, 0};
    const struct mb_field f[] = {
        {"eff", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, eff), 0, 1, 0.01, 1, MB_UNIT_NONE},
        {"floor", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, floor), 0, 1, 0, 1e-3, MB_UNIT_TIME},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, &in, "membound", NULL, err) || mb_calib__source(c, T_MEM, sec, err))
        return -1;
    c->mem_eff = in.eff;
    c->mem_floor = in.floor;
    return 0;
}

/* links.hybridep_nic (optional): points {domains, dispatch, dispatch_fp8,
 * combine}, strictly increasing in domains (>= 2), each value the fraction
 * of the NIC line rate the library's scale-out bytes reach. */
static int mb_calib__load_flex(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    c->n_flex = 0;
    if (!sec)
        return 0;
    struct mb_calib__flex_in in = {NULL};
    const struct mb_field f[] = {
        {"points", MB_F_NODE, offsetof(struct mb_calib__flex_in, points), 0, 1, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    const struct mb_field pf[] = {
        {"domains", MB_F_DOUBLE, offsetof(struct mb_calib__flex_pt_in, domains), 0, 1, 2, 1e6, MB_UNIT_NONE},
        {"dispatch", MB_F_DOUBLE, offsetof(struct mb_calib__flex_pt_in, eff[MB_CALIB_FLEX_DISPATCH]), 0, 1, 0.01, 1,
         MB_UNIT_NONE},
        {"dispatch_fp8", MB_F_DOUBLE, offsetof(struct mb_calib__flex_pt_in, eff[MB_CALIB_FLEX_DISPATCH_FP8]), 0, 1,
         0.01, 1, MB_UNIT_NONE},
        {"combine", MB_F_DOUBLE, offsetof(struct mb_calib__flex_pt_in, eff[MB_CALIB_FLEX_COMBINE]), 0, 1, 0.01, 1,
         MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, &in, "links.hybridep_nic", NULL, err) ||
        mb_yaml_expect(in.points, MB_NODE_SEQ, "links.hybridep_nic.points", err))
        return -1;
    if (in.points->n == 0 || in.points->n > MB_CALIB_MAX_FLEX_POINTS)
        return mb_yaml_err(err, in.points, "links.hybridep_nic.points: %zu points (1 to %d)", in.points->n,
                           MB_CALIB_MAX_FLEX_POINTS);
    for (size_t i = 0; i < in.points->n; i++) {
        struct mb_calib__flex_pt_in g = {0, {0, 0, 0}};
        const struct mb_node *pn = in.points->items[i];
        if (mb_yaml_read_fields(pn, pf, &g, "links.hybridep_nic point", NULL, err))
            return -1;
        for (int k = 0; k < MB_CALIB_FLEX_COUNT; k++)
            c->flex[k][i] = (struct mb_calib__pt){g.domains, g.eff[k]};
        if (mb_calib__check_sorted(c->flex[0], i, pn, "links.hybridep_nic", "domains", err))
            return -1;
    }
    c->n_flex = in.points->n;
    return 0;
}

static int mb_calib__load_links(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    const struct mb_field f[] = {{"nvlink", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                 {"nic", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                 {"pcie", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                 {"nvls", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
                                 {"hybridep_nic", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
                                 {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
                                 {NULL, 0, 0, 0, 0, 0, 0, 0}};
    const struct mb_field lf[] = {
        {"eff", MB_F_DOUBLE, offsetof(struct mb_calib__link_in, eff), 0, 1, 0.01, 1, MB_UNIT_NONE},
        {"latency", MB_F_DOUBLE, offsetof(struct mb_calib__link_in, latency), 0, 1, 0, 1e-2, MB_UNIT_TIME},
        {"source", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, NULL, "links", NULL, err) || mb_calib__source(c, T_LINKS, sec, err))
        return -1;
    for (int k = 0; k < MB_LINK_COUNT; k++) {
        struct mb_calib__link_in in = {0, 0};
        char what[32];
        if (k == MB_LINK_NVLS && !mb_yaml_get(sec, mb_calib__link_names[k])) {
            c->link_eff[k] = c->link_lat[k] = 0; /* optional: no NVLS figures */
            continue;
        }
        snprintf(what, sizeof what, "links.%s", mb_calib__link_names[k]);
        if (mb_yaml_read_fields(mb_yaml_get(sec, mb_calib__link_names[k]), lf, &in, what, NULL, err))
            return -1;
        c->link_eff[k] = in.eff;
        c->link_lat[k] = in.latency;
    }
    return mb_calib__load_flex(c, mb_yaml_get(sec, "hybridep_nic"), err);
}

/* ------------------------------------------ overlays, recipes and the table */

static int mb_calib__load_file(struct mb_calib *c, const char *file, int depth, struct mb_err *err);
static int mb_calib__load_tree(struct mb_calib *c, const struct mb_node *root, int depth, struct mb_err *err);

enum { MB_CALIB__MAX_BASE_DEPTH = 4 };

/* Path of the shipped table for a known GPU name (case-insensitive), or NULL. */
static char *mb_calib__shipped_path(const char *gpu)
{
    char up[32];
    size_t i = 0;
    if (!gpu || strlen(gpu) >= sizeof up)
        return NULL;
    for (; gpu[i]; i++)
        up[i] = (char)toupper((unsigned char)gpu[i]);
    up[i] = '\0';
    for (const char *const *k = mb_calib__known; *k; k++)
        if (strcmp(*k, up) == 0) {
            char name[80];
            snprintf(name, sizeof name, "calibration/tables/%s.yaml", up);
            return mb_path_join(mb_data_dir(), name);
        }
    return NULL;
}

struct mb_calib__overlay_in {
    long schema_version;
    char gpu[32];
    char base[512];
    const struct mb_node *measured;
};

/*
 * Overlay table: `schema_version`, `gpu`, `base` (a shipped GPU name, or a
 * table path relative to this file's folder), `measured`. The base table is
 * loaded first (itself possibly an overlay, at most 4 deep), then the
 * measured points are merged.
 */
static int mb_calib__load_overlay(struct mb_calib *c, const struct mb_node *root, int depth, struct mb_err *err)
{
    struct mb_calib__overlay_in in;
    memset(&in, 0, sizeof in);
    const struct mb_field f[] = {
        {"schema_version", MB_F_INT, offsetof(struct mb_calib__overlay_in, schema_version), 0, 1, 1, 1,
         MB_UNIT_NONE},
        {"gpu", MB_F_STRBUF, offsetof(struct mb_calib__overlay_in, gpu), 32, 1, 1, 0, MB_UNIT_NONE},
        {"base", MB_F_STRBUF, offsetof(struct mb_calib__overlay_in, base), 512, 1, 1, 0, MB_UNIT_NONE},
        {"measured", MB_F_NODE, offsetof(struct mb_calib__overlay_in, measured), 0, 0, 1, 0, MB_UNIT_NONE},
        {"framework", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(root, f, &in, "calibration overlay", NULL, err))
        return -1;
    const struct mb_node *bn = mb_yaml_get(root, "base");
    if (depth >= MB_CALIB__MAX_BASE_DEPTH)
        return mb_yaml_err(err, bn, "calibration base chain deeper than %d tables", MB_CALIB__MAX_BASE_DEPTH);
    char *file = mb_calib__shipped_path(in.base);
    if (!file) {
        if (in.base[0] == '/') {
            file = mb_strdup(in.base);
        } else {
            char dir[512];
            snprintf(dir, sizeof dir, "%s", root->file ? root->file : ".");
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = '\0';
            else
                snprintf(dir, sizeof dir, ".");
            file = mb_path_join(dir, in.base);
        }
        if (!mb_file_exists(file)) {
            mb_free(file);
            return mb_yaml_err(err, bn,
                               "base '%s' is neither a shipped GPU (A100, B200, B300, GB200, GB300, H100, H100_96GB, H200) nor "
                               "a table file (relative to this file's folder)",
                               in.base);
        }
    }
    int rc = mb_calib__load_file(c, file, depth + 1, err);
    mb_free(file);
    if (rc)
        return -1;
    if (strcasecmp(in.gpu, c->spec.name) != 0)
        return mb_yaml_err(err, mb_yaml_get(root, "gpu"), "gpu '%s' does not match the base table's gpu '%s'",
                           in.gpu, c->spec.name);
    if (mb_calib__load_framework(c, mb_yaml_get(root, "framework"), err))
        return -1;
    if (!in.measured && !mb_yaml_get(root, "framework"))
        return mb_yaml_err(err, root, "a calibration overlay needs measured: or framework:");
    return in.measured ? mb_calib__apply_measured(c, in.measured, err) : 0;
}

static int mb_calib__load_file(struct mb_calib *c, const char *file, int depth, struct mb_err *err)
{
    /* mb_yaml_load_file, with the bytes hashed on the way (mb_calib_files_hash) */
    char *text;
    size_t len;
    if (mb_input_read(file, "a YAML file", 0, &text, &len, err))
        return -1;
    c->files_hash = mb_hash64(text, len, depth ? c->files_hash : MB_HASH64_INIT);
    struct mb_node *root = mb_yaml_load_string(text, len, file, err);
    mb_free(text);
    if (!root)
        return -1;
    int rc = mb_calib__load_tree(c, root, depth, err);
    mb_yaml_free(root);
    return rc;
}

struct mb_calib__top_in {
    long schema_version;
    char gpu[32];
    const struct mb_node *spec, *gemm, *grouped, *attn, *mem, *links, *recipes;
};

struct mb_calib__recipe_in {
    char recipe[32];
    double scale, quant_eff;
};

/* Canonical precision recipe labels (as mb_precision_parse writes them). */
static const char *const mb_calib__recipe_names[] = {"bf16", "fp16", "fp8", "fp8_cs", "fp8_blockwise", "mxfp8",
                                                     "nvfp4", NULL};

const char *const *mb_calib_recipe_names(void)
{
    return mb_calib__recipe_names;
}

/* Optional `recipes:` list: {recipe, gemm_time_scale, source} per precision
 * recipe whose GEMMs run slower (or faster) than the table's curve for their
 * precision predicts (docs/calibration.md, "Recipes"). */
static int mb_calib__load_recipes(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    const struct mb_field f[] = {
        {"recipe", MB_F_STRBUF, offsetof(struct mb_calib__recipe_in, recipe), 32, 1, 1, 0, MB_UNIT_NONE},
        {"gemm_time_scale", MB_F_DOUBLE, offsetof(struct mb_calib__recipe_in, scale), 0, 0, 0.1, 10,
         MB_UNIT_NONE},
        {"quant_eff", MB_F_DOUBLE, offsetof(struct mb_calib__recipe_in, quant_eff), 0, 0, 0.01, 1, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (!sec || mb_yaml_is_null(sec))
        return 0;
    if (mb_yaml_expect(sec, MB_NODE_SEQ, "recipes", err))
        return -1;
    for (size_t i = 0; i < sec->n; i++) {
        struct mb_calib__recipe_in in;
        memset(&in, 0, sizeof in);
        in.scale = 1.0;
        if (mb_yaml_read_fields(sec->items[i], f, &in, "recipes[]", NULL, err))
            return -1;
        int known = 0;
        for (const char *const *r = mb_calib__recipe_names; *r; r++)
            known |= strcmp(*r, in.recipe) == 0;
        if (!known)
            return mb_yaml_err(err, mb_yaml_get(sec->items[i], "recipe"),
                               "unknown recipe '%s'; expected one of: bf16, fp16, fp8, fp8_cs, fp8_blockwise, "
                               "mxfp8, nvfp4",
                               in.recipe);
        for (int j = 0; j < c->n_recipe; j++)
            if (strcmp(c->recipe[j].name, in.recipe) == 0)
                return mb_yaml_err(err, mb_yaml_get(sec->items[i], "recipe"), "duplicate recipe '%s'", in.recipe);
        if (c->n_recipe == MB_CALIB_MAX_RECIPES)
            return mb_yaml_err(err, sec->items[i], "more than %d recipes", MB_CALIB_MAX_RECIPES);
        snprintf(c->recipe[c->n_recipe].name, sizeof c->recipe[0].name, "%s", in.recipe);
        c->recipe[c->n_recipe].quant_eff = in.quant_eff;
        c->recipe[c->n_recipe++].gemm_time_scale = in.scale;
    }
    return 0;
}

static int mb_calib__load_tree(struct mb_calib *c, const struct mb_node *root, int depth, struct mb_err *err)
{
    struct mb_calib__top_in in;
    memset(&in, 0, sizeof in);
    const struct mb_field f[] = {
        {"schema_version", MB_F_INT, offsetof(struct mb_calib__top_in, schema_version), 0, 1, 1, 1,
         MB_UNIT_NONE},
        {"gpu", MB_F_STRBUF, offsetof(struct mb_calib__top_in, gpu), 32, 1, 1, 0, MB_UNIT_NONE},
        {"spec", MB_F_NODE, offsetof(struct mb_calib__top_in, spec), 0, 1, 1, 0, MB_UNIT_NONE},
        {"gemm", MB_F_NODE, offsetof(struct mb_calib__top_in, gemm), 0, 1, 1, 0, MB_UNIT_NONE},
        {"grouped_gemm", MB_F_NODE, offsetof(struct mb_calib__top_in, grouped), 0, 1, 1, 0, MB_UNIT_NONE},
        {"attention", MB_F_NODE, offsetof(struct mb_calib__top_in, attn), 0, 1, 1, 0, MB_UNIT_NONE},
        {"membound", MB_F_NODE, offsetof(struct mb_calib__top_in, mem), 0, 1, 1, 0, MB_UNIT_NONE},
        {"links", MB_F_NODE, offsetof(struct mb_calib__top_in, links), 0, 1, 1, 0, MB_UNIT_NONE},
        {"recipes", MB_F_NODE, offsetof(struct mb_calib__top_in, recipes), 0, 0, 1, 0, MB_UNIT_NONE},
        {"measured", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {"framework", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_get(root, "base"))
        return mb_calib__load_overlay(c, root, depth, err);
    if (!mb_yaml_get(root, "spec") && mb_yaml_get(root, "measured"))
        return mb_yaml_err(err, root, "a table with measured: but no spec: must name its base table: add "
                                      "base: <GPU name or table path>");
    if (mb_yaml_read_fields(root, f, &in, "calibration table", NULL, err))
        return -1;
    snprintf(c->spec.name, sizeof c->spec.name, "%s", in.gpu);
    if (mb_calib__load_spec(c, in.spec, err) || mb_calib__load_gemm(c, in.gemm, err) ||
        mb_calib__load_grouped(c, in.grouped, err) || mb_calib__load_attn(c, in.attn, err) ||
        mb_calib__load_mem(c, in.mem, err) || mb_calib__load_links(c, in.links, err) ||
        mb_calib__load_recipes(c, in.recipes, err) || mb_calib__load_framework(c, mb_yaml_get(root, "framework"), err))
        return -1;
    const struct mb_node *measured = mb_yaml_get(root, "measured");
    if (measured && !mb_yaml_is_null(measured))
        return mb_calib__apply_measured(c, measured, err);
    return 0;
}

int mb_calib_load(const char *gpu, const char *path, struct mb_calib **out, struct mb_err *err)
{
    *out = NULL;
    char *file = NULL;
    if (path) {
        file = mb_strdup(path);
    } else {
        char up[32];
        size_t i = 0;
        for (; gpu && gpu[i] && i + 1 < sizeof up; i++)
            up[i] = (char)toupper((unsigned char)gpu[i]);
        up[i] = '\0';
        int known = 0;
        for (const char *const *k = mb_calib__known; *k; k++)
            known |= gpu && strlen(gpu) < sizeof up && strcmp(*k, up) == 0;
        if (!known) {
            char list[128] = "";
            for (const char *const *k = mb_calib__known; *k; k++) {
                strcat(list, *k);
                if (k[1])
                    strcat(list, ", ");
            }
            return mb_err_set(err, NULL, 0, 0, "unknown GPU '%s'; known: %s", gpu ? gpu : "(null)", list);
        }
        char name[80];
        snprintf(name, sizeof name, "calibration/tables/%s.yaml", up);
        file = mb_path_join(mb_data_dir(), name);
    }
    struct mb_calib *c = mb_calloc(1, sizeof *c);
    c->path = file;
    int rc = mb_calib__load_file(c, file, 0, err);
    if (rc) {
        mb_calib_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

struct mb_calib *mb_calib_view(const struct mb_calib *base)
{
    assert(base);
    struct mb_calib *c = mb_malloc(sizeof *c);
    *c = *base;
    c->base = base->base ? base->base : base;
    memset(c->lookups, 0, sizeof c->lookups);
    memset(c->fallbacks, 0, sizeof c->fallbacks);
    c->last_fb = 0;
    return c;
}

void mb_calib_free(struct mb_calib *c)
{
    if (!c)
        return;
    if (c->base) {
        mb_free(c);
        return;
    }
    for (int p = 0; p < MB_PREC_COUNT; p++)
        mb_free(c->gemm[p].pts);
    for (int t = 0; t < T_COUNT; t++)
        mb_free(c->source[t]);
    mb_free(c->grouped);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            for (size_t i = 0; i < c->attn[a][b].n; i++)
                mb_free(c->attn[a][b].cv[i].pts);
            mb_free(c->attn[a][b].cv);
        }
    for (size_t i = 0; i < c->n_coll; i++) {
        mb_free((char *)c->coll[i].op);
        mb_free((char *)c->coll[i].dtype);
        mb_free((char *)c->coll[i].source);
    }
    mb_free(c->coll);
    mb_free(c->fw_source);
    mb_free(c->path);
    mb_free(c);
}

const struct mb_gpu_spec *mb_calib_spec(const struct mb_calib *c)
{
    return &c->spec;
}
