/*
 * mb_calib.c -- GPU specifications and kernel-efficiency tables.
 *
 * SUMMARY: loads calibration/tables/<GPU>.yaml into plain arrays and answers
 * "how long does this kernel take" for dense GEMM, grouped (MoE) GEMM, fused
 * attention and memory-bound ops, plus the achieved fraction of line rate and
 * per-step latency of each link class.
 *
 * Approximation: a kernel's time is
 *     max(FLOP / (peak(prec) * eff(shape)), bytes / bandwidth)
 * where eff(shape) is interpolated linearly in eff against log(size) between
 * measured points (size = b*m*n*k for GEMM, tokens per group for grouped GEMM,
 * sequence length for attention; attention also interpolates in log(head dim)
 * between curves and corrects for wave quantization over the SMs). Every number in the tables comes from a
 * kernel/hardware measurement cited in the table (docs/calibration.md), never
 * from end-to-end training runs. Outside the measured range the lookup falls
 * back (see each lookup) and counts the fallback so reports can show where the
 * prediction rests on assumptions rather than measurements.
 *
 * Known limits: GEMM efficiency is a function of one size measure (m*n*k), so
 * two shapes with equal m*n*k but different aspect ratio get the same
 * efficiency (skinny K = 256 shapes are over-predicted by ~25% on H100, see
 * docs/calibration.md). A scattered-data interpolation over (log mn, log k)
 * would fix this once enough measured points exist.
 */
#include "mb_calib.h"
#include "mb_yaml.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { T_SPEC, T_GEMM, T_GROUPED, T_ATTN, T_MEM, T_LINKS, T_COUNT };
static const char *const mb_calib__table_names[T_COUNT] = {"spec", "gemm", "grouped_gemm", "attention",
                                                            "membound", "links"};
static const char *const mb_calib__known[] = {"A100", "B200", "B300", "GB200", "GB300", "H100", "H100_96GB", "H200", NULL};
static const char *const mb_calib__prec_names[MB_PREC_COUNT] = {"fp32", "bf16", "fp16", "fp8", "fp4"};
static const char *const mb_calib__link_names[MB_LINK_COUNT] = {"nvlink", "nic", "pcie", "nvls"};

/* One interpolation point: x = size measure (> 0, strictly increasing), y = efficiency. */
struct mb_calib__pt {
    double x, y;
};

struct mb_calib__curve {
    int present;              /* curve given in the table */
    int from;                 /* -1: own points; else precision whose curve is scaled */
    double scale;             /* own points: multiplies achieved FLOP/s; from: multiplies eff */
    int assumed;              /* lookups count as fallbacks (no measurement behind it) */
    double plateau;           /* efficiency above the largest point (MAMF / peak) */
    size_t n;
    struct mb_calib__pt *pts; /* x = b*m*n*k, y = achieved * scale / peak */
};

/* One attention curve: efficiency over seq at one head dim. */
struct mb_calib__acurve {
    int head_dim;             /* Q.K head dim the curve was measured at */
    size_t n;
    struct mb_calib__pt *pts; /* x = seq, y = achieved * scale / peak.bf16, at the benchmark shape */
};

/* The attention curves of one (causal, bwd) kind, sorted by increasing head_dim (no duplicates). */
struct mb_calib__akind {
    size_t n;
    struct mb_calib__acurve *cv;
};

struct mb_calib {
    struct mb_gpu_spec spec;
    double roofline_eff;                  /* spec-level default efficiency (roofline mode) */
    double triton_frac;                   /* gemm.triton_frac: Triton kernels' share of the GEMM rate */
    char *path;
    char *source[T_COUNT];
    long lookups[T_COUNT], fallbacks[T_COUNT];
    int last_fb;                          /* the last lookup was a fallback (mb_calib_last_source) */
    const struct mb_calib *base;          /* a view (mb_calib_view): the tables belong to base */
    int roofline;
    struct mb_calib__curve gemm[MB_PREC_COUNT];
    double grouped_ref_m;                 /* dense reference M of the relative curve */
    size_t n_grouped;
    struct mb_calib__pt *grouped;         /* x = tokens per group, y = relative efficiency */
    double attn_margin;                   /* clamp factor outside the attention range */
    double attn_bench_bh;                 /* batch x heads the curves were measured at; 0: FA3's shape */
    struct mb_calib__akind attn[2][2];    /* [causal][bwd]: curves by head dim */
    double mem_eff, mem_floor;
    double link_eff[MB_LINK_COUNT], link_lat[MB_LINK_COUNT];
    size_t n_flex;                        /* links.hybridep_nic points (0: none) */
    struct mb_calib__pt flex[MB_CALIB_FLEX_COUNT][MB_CALIB_MAX_FLEX_POINTS]; /* x = domains, y = eff */
    size_t n_measured;                    /* measured points merged from `measured:` sections */
    size_t n_coll;
    struct mb_calib_coll_point *coll;     /* measured collectives (strings owned) */
    int n_recipe;                         /* `recipes:` GEMM-time scales per precision recipe */
    double fw[MB_FW_COUNT];               /* `framework:` parameters (SI units) */
    unsigned fw_set;                      /* bit p: fw[p] given (else the default) */
    unsigned fw_fitted;                   /* bit p: fw[p] fitted (the section's fit.params) */
    char *fw_source;                      /* the section's source, or NULL */
    int fw_on;                            /* lookups apply tensor_fraction / membound_eff */
    struct {
        char name[32];
        double gemm_time_scale;
        double quant_eff;                 /* 0: the recipe's casts run at membound.eff */
    } recipe[MB_CALIB_MAX_RECIPES];
};

const char *mb_prec_name(enum mb_prec p)
{
    return (p >= 0 && p < MB_PREC_COUNT) ? mb_calib__prec_names[p] : "?";
}

static int mb_calib__prec_parse(const struct mb_node *n, int *out, struct mb_err *err)
{
    if (mb_yaml_expect(n, MB_NODE_SCALAR, "prec", err))
        return -1;
    for (int i = 0; i < MB_PREC_COUNT; i++)
        if (strcmp(n->str, mb_calib__prec_names[i]) == 0) {
            *out = i;
            return 0;
        }
    return mb_yaml_err(err, n, "unknown precision '%s'; expected one of: fp32, bf16, fp16, fp8, fp4", n->str);
}

/* Bytes per element of each precision (fp4 packs two per byte). */
static double mb_calib__elem_bytes(enum mb_prec p)
{
    static const double b[MB_PREC_COUNT] = {4, 2, 2, 1, 0.5};
    return b[p];
}

/*
 * Piecewise-linear interpolation of y against ln(x) between pts[i] and
 * pts[i+1] (x strictly increasing, n >= 1, pts[0].x <= x <= pts[n-1].x):
 *     y = y0 + (y1 - y0) * (ln x - ln x0) / (ln x1 - ln x0)
 */
static double mb_calib__interp(const struct mb_calib__pt *pts, size_t n, double x)
{
    assert(n >= 1 && x >= pts[0].x && x <= pts[n - 1].x);
    for (size_t i = 0; i + 1 < n; i++)
        if (x <= pts[i + 1].x) {
            double t = (log(x) - log(pts[i].x)) / (log(pts[i + 1].x) - log(pts[i].x));
            return pts[i].y + (pts[i + 1].y - pts[i].y) * t;
        }
    return pts[n - 1].y;
}

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

/* The curve of kind k at exactly head dim d, or NULL. */
static struct mb_calib__acurve *mb_calib__acurve_find(struct mb_calib__akind *k, int d)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->cv[i].head_dim == d)
            return &k->cv[i];
    return NULL;
}

/* Inserts an empty curve at head dim d (not yet present) keeping k sorted by head dim. */
static struct mb_calib__acurve *mb_calib__acurve_insert(struct mb_calib__akind *k, int d)
{
    assert(!mb_calib__acurve_find(k, d));
    k->cv = mb_realloc(k->cv, (k->n + 1) * sizeof *k->cv);
    size_t i = k->n;
    while (i > 0 && k->cv[i - 1].head_dim > d) {
        k->cv[i] = k->cv[i - 1];
        i--;
    }
    k->n++;
    memset(&k->cv[i], 0, sizeof k->cv[i]);
    k->cv[i].head_dim = d;
    return &k->cv[i];
}

/*
 * Wave quantization of a FlashAttention kernel (a mechanism, not a fit).
 *
 * FlashAttention-2/3 launch one CTA per (batch*head, 128-row query block) in
 * the forward pass and one per (batch*head, 128-column key/value block) in
 * the backward pass; for self-attention (seq_q = seq_k) both give
 *     tiles(bh, seq) = bh * ceil(seq / 128).
 * With one resident CTA per SM the tiles run in waves of `sms`, and the
 * fraction of SM-time doing work is
 *     occ(t) = t / (ceil(t / sms) * sms)        (continuous in t >= 0).
 * The curves hold efficiencies at the table's `attention.batch_heads` (the
 * cuDNN benchmark's batch x heads, the same at every seq), or without it at
 * the FA3 benchmark shape (batch*seq = 16384 tokens, heads*head_dim = 2048,
 * hardware.md B.2), i.e. at
 *     bh_bench(seq, hd) = 16384 / seq * 2048 / hd,
 * so a kernel over bh problems runs at
 *     eff * occ(tiles(bh, seq)) / occ(tiles(bh_bench(seq_b, hd), seq_b))
 * where seq_b is the curve seq that answered (seq itself inside the range).
 * Block size 128: FA2 paper (arXiv 2307.08691 sec. 3.3: blocks of
 * {64,128} x {64,128} by head dim) and FA3 (arXiv 2407.08608: 128-row query
 * tiles at hdim 128) -- from memory, not in hardware.md; ASSUMPTION: 128 for
 * every head dim. Limits: every tile counts as equal work (causal tiles are
 * not; FA3 schedules them longest first), one CTA per SM, no split-KV.
 * bh <= 0 (unknown) or no SM count: 1 (no correction).
 */
enum { MB_CALIB__ATTN_BLOCK = 128 };
static const double mb_calib__attn_bench_tokens = 16384; /* FA3 benchmark batch * seq */
static const double mb_calib__attn_bench_hidden = 2048;  /* FA3 benchmark heads * head_dim */

static double mb_calib__occ(double tiles, int sms)
{
    return tiles / (ceil(tiles / sms) * sms);
}

static double mb_calib__attn_wave(const struct mb_calib *c, double bh, double seq, double seq_b, double hd)
{
    if (!(bh > 0) || !(seq > 0) || !(seq_b > 0) || !(hd > 0) || c->spec.sms <= 0)
        return 1.0;
    double bh_bench = c->attn_bench_bh > 0 ? c->attn_bench_bh
                                           : mb_calib__attn_bench_tokens / seq_b * mb_calib__attn_bench_hidden / hd;
    double t = bh * ceil(seq / MB_CALIB__ATTN_BLOCK);
    double t_bench = bh_bench * ceil(seq_b / MB_CALIB__ATTN_BLOCK);
    return mb_calib__occ(t, c->spec.sms) / mb_calib__occ(t_bench, c->spec.sms);
}

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

struct mb_calib__mem_in {
    double eff, floor;
};
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

/* ------------------------------------------------- imported (measured) points */

/*
 * Tables imported from profiles (mbsim calibrate nsys|kineto, calibration/bench)
 * are overlays: `base: <GPU name or table path>` plus a `measured:` section
 * whose points take precedence over the base table's (docs/calibration.md,
 * "Importing profiles"). A full table may carry a `measured:` section too.
 *
 * Precedence rule (mb_calib__merge): the measured points of one curve replace
 * every base point whose size lies inside [smallest, largest] measured size;
 * base points outside that range are kept, so the measured range is answered
 * from measurements only and the base table still covers the rest. Measured
 * points at the same size are averaged.
 */
static int mb_calib__load_file(struct mb_calib *c, const char *file, int depth, struct mb_err *err);
static int mb_calib__load_tree(struct mb_calib *c, const struct mb_node *root, int depth, struct mb_err *err);
static int mb_calib__load_framework(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err);
static double mb_calib__gemm_eff(const struct mb_calib *c, enum mb_prec p, double x, int *fb);

enum { MB_CALIB__MAX_BASE_DEPTH = 4 };

static int mb_calib__pt_cmp(const void *a, const void *b)
{
    double x = ((const struct mb_calib__pt *)a)->x, y = ((const struct mb_calib__pt *)b)->x;
    return (x > y) - (x < y);
}

/* Merges `m` measured points (any order) into *pts / *n by the precedence rule above. */
static void mb_calib__merge(struct mb_calib__pt **pts, size_t *n, struct mb_calib__pt *add, size_t m)
{
    if (m == 0)
        return;
    qsort(add, m, sizeof *add, mb_calib__pt_cmp);
    size_t u = 0; /* unique sizes, y averaged */
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double sum = 0;
        while (j < m && mb_dbl_eq(add[j].x, add[i].x))
            sum += add[j++].y;
        add[u].x = add[i].x;
        add[u++].y = sum / (double)(j - i);
        i = j;
    }
    double lo = add[0].x, hi = add[u - 1].x;
    struct mb_calib__pt *out = mb_calloc(*n + u, sizeof *out);
    size_t k = 0, a = 0;
    for (size_t i = 0; i < *n; i++) {
        double x = (*pts)[i].x;
        if (x >= lo * (1 - 1e-12) && x <= hi * (1 + 1e-12))
            continue; /* superseded by measurements */
        while (a < u && add[a].x < x)
            out[k++] = add[a++];
        out[k++] = (*pts)[i];
    }
    while (a < u)
        out[k++] = add[a++];
    mb_free(*pts);
    *pts = out;
    *n = k;
}

/* Replaces a section's source with "measured: <msrc> (N points); base: <old>". */
static void mb_calib__note_source(struct mb_calib *c, int t, const char *msrc, size_t npts)
{
    const char *old = c->source[t] ? c->source[t] : "";
    int len = snprintf(NULL, 0, "measured: %s (%zu points); base: %s", msrc, npts, old);
    char *s = mb_malloc((size_t)len + 1);
    snprintf(s, (size_t)len + 1, "measured: %s (%zu points); base: %s", msrc, npts, old);
    mb_free(c->source[t]);
    c->source[t] = s;
}

/* Turns a `from` curve (or a missing one) into an own-points curve so points can be merged. */
static void mb_calib__materialize(struct mb_calib *c, int p)
{
    struct mb_calib__curve *cv = &c->gemm[p];
    if (!cv->present) {
        memset(cv, 0, sizeof *cv);
        cv->present = 1;
        cv->from = -1;
        cv->scale = 1;
        cv->plateau = c->roofline_eff;
        return;
    }
    if (cv->from < 0)
        return;
    double scale = 1;
    int assumed = 0, q = p;
    while (c->gemm[q].from >= 0) { /* `from` names an earlier curve: the chain ends */
        scale *= c->gemm[q].scale;
        assumed |= c->gemm[q].assumed;
        q = c->gemm[q].from;
    }
    const struct mb_calib__curve *base = &c->gemm[q];
    cv->from = -1;
    cv->assumed = assumed | base->assumed;
    cv->plateau = base->plateau * scale;
    cv->scale = 1;
    cv->n = base->n;
    cv->pts = mb_calloc(base->n ? base->n : 1, sizeof *cv->pts);
    for (size_t i = 0; i < base->n; i++) {
        cv->pts[i].x = base->pts[i].x;
        cv->pts[i].y = base->pts[i].y * scale;
    }
}

struct mb_calib__mgemm_in {
    const struct mb_node *prec;
    long m, n, k, batch, groups, causal, bwd, head_dim, instances;
    double tokens, seq, batch_heads, achieved, time;
};

static const struct mb_field mb_calib__mgemm_fields[] = {
    {"prec", MB_F_NODE, offsetof(struct mb_calib__mgemm_in, prec), 0, 1, 1, 0, MB_UNIT_NONE},
    {"m", MB_F_INT, offsetof(struct mb_calib__mgemm_in, m), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"n", MB_F_INT, offsetof(struct mb_calib__mgemm_in, n), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"k", MB_F_INT, offsetof(struct mb_calib__mgemm_in, k), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"batch", MB_F_INT, offsetof(struct mb_calib__mgemm_in, batch), 0, 0, 1, 1 << 20, MB_UNIT_NONE},
    {"achieved", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, achieved), 0, 1, 1e6, 1e17, MB_UNIT_FLOPS},
    {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, time), 0, 0, 0, 1e3, MB_UNIT_TIME},
    {"instances", MB_F_INT, offsetof(struct mb_calib__mgemm_in, instances), 0, 0, 1, 1e15, MB_UNIT_NONE},
    {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
    {NULL, 0, 0, 0, 0, 0, 0, 0}};

static const struct mb_field mb_calib__mgrouped_fields[] = {
    {"prec", MB_F_NODE, offsetof(struct mb_calib__mgemm_in, prec), 0, 1, 1, 0, MB_UNIT_NONE},
    {"groups", MB_F_INT, offsetof(struct mb_calib__mgemm_in, groups), 0, 1, 1, 1 << 20, MB_UNIT_NONE},
    {"tokens", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, tokens), 0, 1, 1, 1e8, MB_UNIT_NONE},
    {"n", MB_F_INT, offsetof(struct mb_calib__mgemm_in, n), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"k", MB_F_INT, offsetof(struct mb_calib__mgemm_in, k), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"achieved", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, achieved), 0, 1, 1e6, 1e17, MB_UNIT_FLOPS},
    {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, time), 0, 0, 0, 1e3, MB_UNIT_TIME},
    {"instances", MB_F_INT, offsetof(struct mb_calib__mgemm_in, instances), 0, 0, 1, 1e15, MB_UNIT_NONE},
    {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
    {NULL, 0, 0, 0, 0, 0, 0, 0}};

static const struct mb_field mb_calib__mattn_fields[] = {
    {"prec", MB_F_NODE, offsetof(struct mb_calib__mgemm_in, prec), 0, 0, 1, 0, MB_UNIT_NONE},
    {"causal", MB_F_BOOL, offsetof(struct mb_calib__mgemm_in, causal), 0, 1, 1, 0, MB_UNIT_NONE},
    {"bwd", MB_F_BOOL, offsetof(struct mb_calib__mgemm_in, bwd), 0, 1, 1, 0, MB_UNIT_NONE},
    {"head_dim", MB_F_INT, offsetof(struct mb_calib__mgemm_in, head_dim), 0, 1, 1, 1024, MB_UNIT_NONE},
    {"batch_heads", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, batch_heads), 0, 0, 1, 1e9, MB_UNIT_NONE},
    {"seq", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, seq), 0, 1, 1, 1e8, MB_UNIT_NONE},
    {"achieved", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, achieved), 0, 1, 1e6, 1e17, MB_UNIT_FLOPS},
    {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mgemm_in, time), 0, 0, 0, 1e3, MB_UNIT_TIME},
    {"instances", MB_F_INT, offsetof(struct mb_calib__mgemm_in, instances), 0, 0, 1, 1e15, MB_UNIT_NONE},
    {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
    {NULL, 0, 0, 0, 0, 0, 0, 0}};

struct mb_calib__mcoll_in {
    char *op, *dtype, *source;
    long group, instances;
    double bytes, time, busbw;
};

static const struct mb_field mb_calib__mcoll_fields[] = {
    {"op", MB_F_STR, offsetof(struct mb_calib__mcoll_in, op), 0, 1, 1, 0, MB_UNIT_NONE},
    {"group", MB_F_INT, offsetof(struct mb_calib__mcoll_in, group), 0, 1, 1, 1 << 24, MB_UNIT_NONE},
    {"bytes", MB_F_DOUBLE, offsetof(struct mb_calib__mcoll_in, bytes), 0, 1, 0, 1e15, MB_UNIT_BYTES},
    {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mcoll_in, time), 0, 1, 1e-9, 1e3, MB_UNIT_TIME},
    {"busbw", MB_F_DOUBLE, offsetof(struct mb_calib__mcoll_in, busbw), 0, 0, 0, 1e15, MB_UNIT_BW},
    {"dtype", MB_F_STR, offsetof(struct mb_calib__mcoll_in, dtype), 0, 0, 1, 0, MB_UNIT_NONE},
    {"instances", MB_F_INT, offsetof(struct mb_calib__mcoll_in, instances), 0, 0, 1, 1e15, MB_UNIT_NONE},
    {"source", MB_F_STR, offsetof(struct mb_calib__mcoll_in, source), 0, 1, 1, 0, MB_UNIT_NONE},
    {NULL, 0, 0, 0, 0, 0, 0, 0}};

struct mb_calib__measured_in {
    const struct mb_node *gemm, *grouped, *attn, *coll, *mem, *launch;
};

/* Sequence check shared by the point lists of `measured:`. */
static int mb_calib__mseq(const struct mb_node *n, const char *what, struct mb_err *err)
{
    return n ? mb_yaml_expect(n, MB_NODE_SEQ, what, err) : 0;
}

static int mb_calib__apply_measured(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    struct mb_calib__measured_in in;
    memset(&in, 0, sizeof in);
    const struct mb_field f[] = {
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {"gemm", MB_F_NODE, offsetof(struct mb_calib__measured_in, gemm), 0, 0, 1, 0, MB_UNIT_NONE},
        {"grouped_gemm", MB_F_NODE, offsetof(struct mb_calib__measured_in, grouped), 0, 0, 1, 0, MB_UNIT_NONE},
        {"attention", MB_F_NODE, offsetof(struct mb_calib__measured_in, attn), 0, 0, 1, 0, MB_UNIT_NONE},
        {"collectives", MB_F_NODE, offsetof(struct mb_calib__measured_in, coll), 0, 0, 1, 0, MB_UNIT_NONE},
        {"membound", MB_F_NODE, offsetof(struct mb_calib__measured_in, mem), 0, 0, 1, 0, MB_UNIT_NONE},
        {"launch", MB_F_NODE, offsetof(struct mb_calib__measured_in, launch), 0, 0, 1, 0, MB_UNIT_NONE},
        {"summary", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {"unknown_kernels", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, f, &in, "measured", NULL, err))
        return -1;
    const struct mb_node *srcn = mb_yaml_get(sec, "source");
    if (mb_yaml_expect(srcn, MB_NODE_SCALAR, "measured.source", err) ||
        mb_calib__mseq(in.gemm, "measured.gemm", err) || mb_calib__mseq(in.grouped, "measured.grouped_gemm", err) ||
        mb_calib__mseq(in.attn, "measured.attention", err) || mb_calib__mseq(in.coll, "measured.collectives", err))
        return -1;
    const char *msrc = srcn->str;

    /* Dense GEMM, per precision: y = achieved / peak(p). */
    if (in.gemm && in.gemm->n) {
        size_t n = in.gemm->n;
        struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
        int *prec = mb_calloc(n, sizeof *prec);
        for (size_t i = 0; i < n; i++) {
            const struct mb_node *pn = in.gemm->items[i];
            struct mb_calib__mgemm_in g;
            memset(&g, 0, sizeof g);
            g.batch = 1;
            if (mb_yaml_read_fields(pn, mb_calib__mgemm_fields, &g, "measured gemm point", NULL, err) ||
                mb_calib__prec_parse(g.prec, &prec[i], err))
                goto gemm_fail;
            if (c->spec.peak[prec[i]] <= 0) {
                mb_yaml_err(err, g.prec, "measured gemm point for %s but spec.peak.%s is not set",
                            mb_calib__prec_names[prec[i]], mb_calib__prec_names[prec[i]]);
                goto gemm_fail;
            }
            add[i].x = (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
            add[i].y = g.achieved / c->spec.peak[prec[i]];
            if (add[i].y > 1 + 1e-9) {
                mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                            "measured gemm point achieves %.4g of spec.peak.%s (more than 1)", add[i].y,
                            mb_calib__prec_names[prec[i]]);
                goto gemm_fail;
            }
        }
        for (int p = 0; p < MB_PREC_COUNT; p++) {
            size_t m = 0;
            for (size_t i = 0; i < n; i++)
                m += prec[i] == p;
            if (!m)
                continue;
            struct mb_calib__pt *sel = mb_calloc(m, sizeof *sel);
            m = 0;
            for (size_t i = 0; i < n; i++)
                if (prec[i] == p)
                    sel[m++] = add[i];
            mb_calib__materialize(c, p);
            mb_calib__merge(&c->gemm[p].pts, &c->gemm[p].n, sel, m);
            mb_free(sel);
        }
        mb_calib__note_source(c, T_GEMM, msrc, n);
        c->n_measured += n;
        mb_free(add);
        mb_free(prec);
        goto gemm_done;
    gemm_fail:
        mb_free(add);
        mb_free(prec);
        return -1;
    }
gemm_done:

    /* Grouped GEMM: rel = (achieved / peak) / eff_dense(ref_m * n * k), after the GEMM merge. */
    if (in.grouped && in.grouped->n) {
        size_t n = in.grouped->n;
        struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
        for (size_t i = 0; i < n; i++) {
            const struct mb_node *pn = in.grouped->items[i];
            struct mb_calib__mgemm_in g;
            memset(&g, 0, sizeof g);
            int p = 0, fb = 0;
            if (mb_yaml_read_fields(pn, mb_calib__mgrouped_fields, &g, "measured grouped_gemm point", NULL, err) ||
                mb_calib__prec_parse(g.prec, &p, err)) {
                mb_free(add);
                return -1;
            }
            if (c->spec.peak[p] <= 0) {
                mb_free(add);
                return mb_yaml_err(err, g.prec, "measured grouped_gemm point for %s but spec.peak.%s is not set",
                                   mb_calib__prec_names[p], mb_calib__prec_names[p]);
            }
            double dense = mb_calib__gemm_eff(c, (enum mb_prec)p, c->grouped_ref_m * (double)g.n * (double)g.k, &fb);
            add[i].x = g.tokens;
            add[i].y = g.achieved / c->spec.peak[p] / dense;
            if (add[i].y > 1.5) {
                double rel = add[i].y; /* read before add is freed */
                mb_free(add);
                return mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                                   "measured grouped_gemm point is %.4g times the dense efficiency (more than 1.5)",
                                   rel);
            }
        }
        mb_calib__merge(&c->grouped, &c->n_grouped, add, n);
        mb_calib__note_source(c, T_GROUPED, msrc, n);
        c->n_measured += n;
        mb_free(add);
    }

    /* Attention: y = achieved / peak(bf16, or fp16 when prec: fp16) / wave factor at the point's
     * batch_heads (so the curve holds benchmark-shape efficiencies, mb_calib__attn_wave), merged per
     * (causal, bwd, head_dim); a head dim the kind lacks gets a new curve. */
    if (in.attn && in.attn->n) {
        size_t n = in.attn->n;
        struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
        long *key = mb_calloc(n, sizeof *key); /* (causal * 2 + bwd) * 2048 + head_dim; -1 once merged */
        for (size_t i = 0; i < n; i++) {
            const struct mb_node *pn = in.attn->items[i];
            struct mb_calib__mgemm_in g;
            memset(&g, 0, sizeof g);
            int p = MB_PREC_BF16;
            if (mb_yaml_read_fields(pn, mb_calib__mattn_fields, &g, "measured attention point", NULL, err) ||
                (g.prec && mb_calib__prec_parse(g.prec, &p, err))) {
                mb_free(add);
                mb_free(key);
                return -1;
            }
            double peak = (p == MB_PREC_FP16) ? c->spec.peak[MB_PREC_FP16] : c->spec.peak[MB_PREC_BF16];
            add[i].x = g.seq;
            add[i].y = g.achieved / peak;
            key[i] = ((g.causal != 0) * 2 + (g.bwd != 0)) * 2048L + g.head_dim;
            if (add[i].y > 1 + 1e-9) {
                mb_free(add);
                mb_free(key);
                return mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                                   "measured attention point achieves %.4g of the peak (more than 1)", add[i].y);
            }
            add[i].y /= mb_calib__attn_wave(c, g.batch_heads, g.seq, g.seq, (double)g.head_dim);
        }
        struct mb_calib__pt *sel = mb_calloc(n, sizeof *sel);
        for (size_t i = 0; i < n; i++) {
            long k = key[i];
            if (k < 0)
                continue;
            size_t m = 0;
            for (size_t j = i; j < n; j++)
                if (key[j] == k) {
                    sel[m++] = add[j];
                    key[j] = -1;
                }
            int kind = (int)(k / 2048), d = (int)(k % 2048);
            struct mb_calib__akind *ak = &c->attn[kind / 2][kind % 2];
            struct mb_calib__acurve *cv = mb_calib__acurve_find(ak, d);
            if (!cv)
                cv = mb_calib__acurve_insert(ak, d);
            mb_calib__merge(&cv->pts, &cv->n, sel, m);
        }
        mb_calib__note_source(c, T_ATTN, msrc, n);
        c->n_measured += n;
        mb_free(sel);
        mb_free(add);
        mb_free(key);
    }

    /* Collectives: measured points answering mb_calib_coll_line(); they do not change link efficiencies. */
    if (in.coll && in.coll->n) {
        size_t base = c->n_coll;
        c->coll = mb_realloc(c->coll, (base + in.coll->n) * sizeof *c->coll);
        for (size_t i = 0; i < in.coll->n; i++) {
            struct mb_calib__mcoll_in g;
            memset(&g, 0, sizeof g);
            int rc = mb_yaml_read_fields(in.coll->items[i], mb_calib__mcoll_fields, &g, "measured collective", NULL,
                                         err);
            if (rc) {
                mb_free(g.op);
                mb_free(g.dtype);
                mb_free(g.source);
                return -1;
            }
            struct mb_calib_coll_point *cp = &c->coll[c->n_coll++];
            cp->op = g.op;
            cp->dtype = g.dtype ? g.dtype : mb_strdup("");
            cp->source = g.source;
            cp->group = (int)g.group;
            cp->bytes = g.bytes;
            cp->time_s = g.time;
            cp->busbw = g.busbw;
            cp->instances = g.instances > 0 ? g.instances : 1;
        }
    }

    /* Memory-bound efficiency / floor and launch overhead: replaced when given. */
    if (in.mem) {
        struct mb_calib__mem_in m = {c->mem_eff, c->mem_floor};
        const struct mb_field mf[] = {
            {"eff", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, eff), 0, 0, 0.01, 1, MB_UNIT_NONE},
            {"floor", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, floor), 0, 0, 0, 1e-3, MB_UNIT_TIME},
            {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
            {NULL, 0, 0, 0, 0, 0, 0, 0}};
        if (mb_yaml_read_fields(in.mem, mf, &m, "measured.membound", NULL, err))
            return -1;
        c->mem_eff = m.eff;
        c->mem_floor = m.floor;
        mb_calib__note_source(c, T_MEM, msrc, 1);
        c->n_measured++;
    }
    if (in.launch) {
        struct mb_calib__mem_in l = {c->spec.launch_s, 0};
        const struct mb_field lf[] = {
            {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, eff), 0, 1, 0, 1e-3, MB_UNIT_TIME},
            {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
            {NULL, 0, 0, 0, 0, 0, 0, 0}};
        if (mb_yaml_read_fields(in.launch, lf, &l, "measured.launch", NULL, err))
            return -1;
        c->spec.launch_s = l.eff;
        mb_calib__note_source(c, T_SPEC, msrc, 1);
        c->n_measured++;
    }
    return 0;
}

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
    struct mb_node *root = mb_yaml_load_file(file, err);
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

double mb_calib_quant(struct mb_calib *c, const char *recipe, double bytes)
{
    assert(c);
    double qe = 0;
    for (int i = 0; recipe && !c->roofline && i < c->n_recipe; i++)
        if (strcmp(c->recipe[i].name, recipe) == 0)
            qe = c->recipe[i].quant_eff;
    if (!(qe > 0) || !(bytes > 0))
        return mb_calib_membound(c, bytes);
    c->lookups[T_MEM]++;
    c->last_fb = 0;
    double t = bytes / (c->spec.hbm_bw * qe);
    return t > c->mem_floor ? t : c->mem_floor;
}

double mb_calib_triton_frac(const struct mb_calib *c)
{
    if (!c || c->roofline || !(c->triton_frac > 0))
        return 1.0;
    return c->triton_frac;
}

double mb_calib_recipe_gemm_scale(const struct mb_calib *c, const char *recipe)
{
    if (!c || !recipe || c->roofline)
        return 1.0;
    for (int i = 0; i < c->n_recipe; i++)
        if (strcmp(c->recipe[i].name, recipe) == 0)
            return c->recipe[i].gemm_time_scale;
    return 1.0;
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

/* ------------------------------------------------------------ framework */

/*
 * The framework-time model's parameters (docs/calibration.md, "Framework-time
 * model"): bounds are physical limits, defaults come from the evidence named
 * here, sigma is the prior width `mbsim calibrate runs` pulls each fit with.
 */
static const struct mb_fw_param_info mb_calib__fw_info[MB_FW_COUNT] = {
    {"tensor_fraction", "", 0.6, 1.0, 1.0, 0.1,
     "sustained tensor-core rate under the power cap / microbenchmark rate; 1: the 8xH100 SXM Megatron MoE layer "
     "benchmark runs no faster than the tables predict, so no clock deficit is shown at default power; 0.6 is below "
     "the worst field report (H100 PCIe sustained 1384 MHz, -21% vs boost; H200 NVL 612 TFLOP/s = 0.62 of peak)"},
    {"membound_eff", "", 0.3, 0.95, NAN, 0.1,
     "achieved HBM fraction of memory-bound kernels in the step; default: the table's membound.eff; 0.95 is above "
     "any STREAM-like copy, 0.3 below the DeepGEMM M=64 kernels' 1.7 TB/s of 3.35"},
    {"kernel_eager", "us", 0.0, 60e-6, 4e-6, 10e-6,
     "GPU-timeline time per eager kernel beyond its table time: ~2 us dependent-launch gap (ASSUMPTION) + ~2 us of "
     "small kernels the op lists do not count (H100 nsys sample: norm/copy/splitK kernels 1.7-2.1 us median); "
     "60 us is above the largest eager host cost per kernel seen (Kineto host trace gaps ~33 us) with margin"},
    {"kernel_graph", "us", 0.0, 10e-6, 2e-6, 3e-6,
     "the same inside a captured CUDA graph: the small kernels stay (~2 us), the launch gap goes; 10 us bound"},
    {"overlap_slowdown", "", 0.0, 0.4, 0.189, 0.1,
     "compute slowed while communication kernels run beside it: 18.9% average, 40% maximum "
     "(arXiv 2507.03114, A100/H100); the maximum is the bound"},
    {"step_overhead", "us", 0.0, 0.5, 0.0, 0.05,
     "framework time per iteration outside the microbatch loop (the distributed optimizer's multi-tensor kernels "
     "and their Python, gradient-norm clipping with its all-reduce, zeroing the grad buffers); default 0 (nothing "
     "assumed); public rows with one microbatch per rank (GBS-4 Moonlight, 512-GPU MLPerf Llama-3.1-8B) show it; "
     "0.5 s bound: above any per-step fixed cost those rows leave"},
    {"host_kernel", "us", 0.0, 100e-6, 0.0, 20e-6,
     "host time per eager kernel beyond spec.launch (the cudaLaunchKernel call): the Python, PyTorch dispatcher "
     "and Transformer Engine work issuing it; default 0 (no measurement shipped: import an eager Kineto trace "
     "of your own); 100 us bound: a whole TE module call per kernel"},
    {"kernel_moe", "us", 0.0, 60e-6, 0.0, 10e-6,
     "GPU-timeline time per eager kernel of an MoE block beyond kernel_eager: the dispatcher's token-count-"
     "dependent kernels and syncs, per-expert GEMM launches of TE's GroupedLinear and the router's small "
     "kernels, which the op tables price as isolated kernels; default 0 (nothing assumed); public H100 rows: "
     "dense Llama rows fit kernel_eager ~0 while the MoE rows need ~20-40 us per kernel (docs/calibration.md); "
     "60 us: kernel_eager's bound"},
};

const struct mb_fw_param_info *mb_calib_fw_info(enum mb_fw_param p)
{
    assert(p >= 0 && p < MB_FW_COUNT);
    return &mb_calib__fw_info[p];
}

void mb_calib_framework_get(const struct mb_calib *c, struct mb_calib_framework *out)
{
    memset(out, 0, sizeof *out);
    for (int p = 0; p < MB_FW_COUNT; p++) {
        double d = p == MB_FW_MEMBOUND_EFF ? c->mem_eff : mb_calib__fw_info[p].def;
        out->def[p] = d;
        out->v[p] = (c->fw_set >> p) & 1u ? c->fw[p] : d;
    }
    out->set = c->fw_set;
    out->fitted = c->fw_fitted;
    out->source = c->fw_source ? c->fw_source : "";
}

void mb_calib_framework_set(struct mb_calib *c, const struct mb_calib_framework *fw)
{
    for (int p = 0; p < MB_FW_COUNT; p++) {
        const struct mb_fw_param_info *in = &mb_calib__fw_info[p];
        double v = fw->v[p];
        c->fw[p] = v < in->lo ? in->lo : v > in->hi ? in->hi : v;
    }
    c->fw_set = (1u << MB_FW_COUNT) - 1;
}

void mb_calib_use_framework(struct mb_calib *c, int on)
{
    c->fw_on = on;
}

/* The lookups' framework terms: 1 / tensor_fraction on FLOP time, and the
 * memory-bound efficiency (1 and membound.eff unless mb_calib_use_framework). */
static double mb_calib__tensor_slow(const struct mb_calib *c)
{
    if (!c->fw_on || c->roofline)
        return 1.0;
    enum mb_fw_param p = MB_FW_TENSOR_FRACTION;
    return 1.0 / ((c->fw_set >> p) & 1u ? c->fw[p] : mb_calib__fw_info[p].def);
}

static double mb_calib__mem_eff(const struct mb_calib *c)
{
    return c->fw_on && (c->fw_set >> MB_FW_MEMBOUND_EFF) & 1u ? c->fw[MB_FW_MEMBOUND_EFF] : c->mem_eff;
}

struct mb_calib__fw_in {
    double v[MB_FW_COUNT];
    char *source;
};

/* `framework:` {source, tensor_fraction?, membound_eff?, kernel_eager?,
 * kernel_graph?, overlap_slowdown?, fit?}: each given value replaces the
 * default (or an overlay's base value); bounds from mb_calib__fw_info. `fit`
 * is the provenance `mbsim calibrate runs` writes; only its `params` list is
 * read (which values a fit moved: cross-validation refits the same ones). */
static int mb_calib__load_framework(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
{
    if (!sec || mb_yaml_is_null(sec))
        return 0;
    struct mb_calib__fw_in in;
    memset(&in, 0, sizeof in);
    struct mb_field f[MB_FW_COUNT + 3];
    for (int p = 0; p < MB_FW_COUNT; p++) {
        const struct mb_fw_param_info *i = &mb_calib__fw_info[p];
        f[p] = (struct mb_field){i->name, MB_F_DOUBLE, offsetof(struct mb_calib__fw_in, v) + (size_t)p * sizeof(double), 0,
                                 0, i->lo, i->hi, i->unit[0] ? MB_UNIT_TIME : MB_UNIT_NONE};
    }
    f[MB_FW_COUNT] = (struct mb_field){"source", MB_F_STR, offsetof(struct mb_calib__fw_in, source), 0, 1, 1, 0,
                                       MB_UNIT_NONE};
    f[MB_FW_COUNT + 1] = (struct mb_field){"fit", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE};
    f[MB_FW_COUNT + 2] = (struct mb_field){NULL, 0, 0, 0, 0, 0, 0, 0};
    unsigned long long seen = 0;
    if (mb_yaml_read_fields(sec, f, &in, "framework", &seen, err)) {
        mb_free(in.source);
        return -1;
    }
    for (int p = 0; p < MB_FW_COUNT; p++)
        if ((seen >> p) & 1ull) {
            c->fw[p] = in.v[p];
            c->fw_set |= 1u << p;
        }
    mb_free(c->fw_source);
    c->fw_source = in.source;
    const struct mb_node *fit = mb_yaml_get(sec, "fit");
    const struct mb_node *ps = fit && fit->kind == MB_NODE_MAP ? mb_yaml_get(fit, "params") : NULL;
    for (size_t i = 0; ps && ps->kind == MB_NODE_SEQ && i < ps->n; i++)
        for (int p = 0; p < MB_FW_COUNT; p++)
            if (ps->items[i]->kind == MB_NODE_SCALAR && !strcmp(ps->items[i]->str, mb_calib__fw_info[p].name))
                c->fw_fitted |= 1u << p;
    return 0;
}

/* ------------------------------------------------------------------ lookups */

/*
 * Precision actually executed: an unsupported one (peak 0, e.g. FP8 on A100)
 * runs at the next wider supported precision (fp4 -> fp8 -> bf16, fp16 -> bf16);
 * *fb is set because the table cannot answer for the requested precision.
 */
static enum mb_prec mb_calib__exec_prec(const struct mb_calib *c, enum mb_prec p, int *fb)
{
    while (c->spec.peak[p] <= 0) {
        *fb = 1;
        p = (p == MB_PREC_FP4) ? MB_PREC_FP8 : MB_PREC_BF16;
    }
    return p;
}

/*
 * Dense GEMM efficiency for size x = m*n*k (fraction of peak(p)).
 *  - inside [first, last] point: log-space interpolation (measured);
 *  - above the last point: the curve's plateau = MAMF / peak (measured maximum);
 *  - below the first point: the first point's kernel time is a floor (the
 *    kernel is latency-bound there), i.e. eff = eff_first * x / x_first; fallback;
 *  - curve with no points, or no curve: roofline (plateau or spec roofline_eff); fallback;
 *  - `from` curve: eff of that precision's curve * scale; `assumed` marks fallback.
 */
static double mb_calib__gemm_eff(const struct mb_calib *c, enum mb_prec p, double x, int *fb)
{
    const struct mb_calib__curve *cv = &c->gemm[p];
    if (!cv->present) {
        *fb = 1;
        return c->roofline_eff;
    }
    if (cv->from >= 0) {
        if (cv->assumed)
            *fb = 1;
        return cv->scale * mb_calib__gemm_eff(c, (enum mb_prec)cv->from, x, fb);
    }
    if (cv->assumed)
        *fb = 1;
    if (cv->n == 0) {
        *fb = 1;
        return cv->plateau;
    }
    if (x > cv->pts[cv->n - 1].x)
        return cv->plateau;
    if (x < cv->pts[0].x) {
        *fb = 1;
        return cv->pts[0].y * x / cv->pts[0].x;
    }
    return mb_calib__interp(cv->pts, cv->n, x);
}

double mb_calib_gemm(struct mb_calib *c, enum mb_prec p, double m, double n, double k)
{
    assert(c && p >= 0 && p < MB_PREC_COUNT);
    if (!(m > 0) || !(n > 0) || !(k > 0))
        return 0.0;
    int fb = 0;
    c->lookups[T_GEMM]++;
    enum mb_prec e = mb_calib__exec_prec(c, p, &fb);
    double eff = c->roofline ? (fb = 1, c->roofline_eff) : mb_calib__gemm_eff(c, e, m * n * k, &fb);
    c->last_fb = fb;
    if (fb)
        c->fallbacks[T_GEMM]++;
    double t_flop = 2.0 * m * n * k / (c->spec.peak[e] * eff) * mb_calib__tensor_slow(c);
    double t_mem = mb_calib__elem_bytes(p) * (m * k + k * n + m * n) / c->spec.hbm_bw;
    return t_flop > t_mem ? t_flop : t_mem;
}

/*
 * Grouped GEMM: eff = rel(M) * eff_dense(ref_m x n x k), where rel(M) is the
 * measured grouped/dense ratio at M tokens per group (log-space interpolation;
 * plateau at the largest M; below the smallest M the grouped kernel is
 * weight-read bound, so rel scales linearly with M -- counted as fallback).
 */
double mb_calib_grouped_gemm(struct mb_calib *c, enum mb_prec p, double groups, double tokens_per_group,
                             double n, double k)
{
    assert(c && p >= 0 && p < MB_PREC_COUNT);
    if (!(groups > 0) || !(tokens_per_group > 0) || !(n > 0) || !(k > 0))
        return 0.0;
    int fb = 0;
    c->lookups[T_GROUPED]++;
    enum mb_prec e = mb_calib__exec_prec(c, p, &fb);
    double eff, M = tokens_per_group;
    if (c->roofline) {
        fb = 1;
        eff = c->roofline_eff;
    } else {
        const struct mb_calib__pt *g = c->grouped;
        size_t ng = c->n_grouped;
        double rel;
        if (M > g[ng - 1].x)
            rel = g[ng - 1].y;
        else if (M < g[0].x) {
            fb = 1;
            rel = g[0].y * M / g[0].x;
        } else
            rel = mb_calib__interp(g, ng, M);
        eff = rel * mb_calib__gemm_eff(c, e, c->grouped_ref_m * n * k, &fb);
        /* From ref_m tokens per group on, a group is a full-size GEMM: Megatron's
         * TE GroupedLinear runs each expert's GEMM as a cuBLAS GEMM, so it is
         * never slower than a dense GEMM of its own shape (the dense table, by
         * volume only, would flatter the skinny shapes of smaller groups) */
        if (M >= c->grouped_ref_m) {
            int fb2 = 0;
            double dense = mb_calib__gemm_eff(c, e, M * n * k, &fb2);
            if (dense > eff) {
                eff = dense;
                fb = fb2;
            }
        }
    }
    c->last_fb = fb;
    if (fb)
        c->fallbacks[T_GROUPED]++;
    double t_flop = groups * 2.0 * M * n * k / (c->spec.peak[e] * eff) * mb_calib__tensor_slow(c);
    double t_mem = groups * mb_calib__elem_bytes(p) * (M * k + k * n + M * n) / c->spec.hbm_bw;
    return t_flop > t_mem ? t_flop : t_mem;
}

/* Interpolation as mb_calib__interp, clamped to the end points outside [x_0, x_n-1]. */
static double mb_calib__interp_clamp(const struct mb_calib__pt *pts, size_t n, double x)
{
    if (x <= pts[0].x)
        return pts[0].y;
    if (x >= pts[n - 1].x)
        return pts[n - 1].y;
    return mb_calib__interp(pts, n, x);
}

/* The densest curve of a kind (most seq points; ties: the lower head dim): it
 * sets the kind's seq range and the seq shape of its other curves. */
static size_t mb_calib__akind_ref(const struct mb_calib__akind *k)
{
    size_t r = 0;
    for (size_t i = 1; i < k->n; i++)
        if (k->cv[i].n > k->cv[r].n)
            r = i;
    return r;
}

/*
 * Efficiency of curve i of kind k at seq s. The densest curve R is
 * interpolated in ln(seq) (clamped to its end points). Another curve C
 * follows R's shape: its ratio to R at C's own points, rho_j = C(x_j) / R(x_j),
 * is interpolated in ln(seq) (clamped) and eff = R(s) * rho(s), so C's points
 * are reproduced. Why: the hdim-64 bwd and hdim-256 fwd curves have only the
 * seq 512 and 16k end points, and a straight line in ln(seq) between them
 * misses the saturation every measured hdim-128 curve shows (hdim-128 bwd at
 * 2k: 501 TFLOP/s against 414 on its 512-16k chord, -17%). ASSUMPTION: the
 * head-dim ratio varies linearly in ln(seq) between its measured seqs.
 */
static double mb_calib__acurve_eff(const struct mb_calib__akind *k, size_t i, double s)
{
    const struct mb_calib__acurve *r = &k->cv[mb_calib__akind_ref(k)], *cv = &k->cv[i];
    double base = mb_calib__interp_clamp(r->pts, r->n, s);
    if (cv == r)
        return base;
    size_t a = 0, b = 0; /* C's points bracketing s (a == b at and beyond the ends) */
    if (s >= cv->pts[cv->n - 1].x) {
        a = b = cv->n - 1;
    } else if (s > cv->pts[0].x) {
        while (cv->pts[a + 1].x < s)
            a++;
        b = a + 1;
    }
    double ra = cv->pts[a].y / mb_calib__interp_clamp(r->pts, r->n, cv->pts[a].x);
    double rb = cv->pts[b].y / mb_calib__interp_clamp(r->pts, r->n, cv->pts[b].x);
    double rho = ra;
    if (b != a)
        rho = ra + (rb - ra) * (log(s) - log(cv->pts[a].x)) / (log(cv->pts[b].x) - log(cv->pts[a].x));
    return base * rho;
}

/* Efficiency of kind k at seq s and head dim d inside [lowest, highest head dim of k]:
 * linear in ln(d) between the two nearest curves, exact at a curve's head dim. */
static double mb_calib__akind_eff(const struct mb_calib__akind *k, double s, double d)
{
    assert(k->n >= 1 && d >= k->cv[0].head_dim && d <= k->cv[k->n - 1].head_dim);
    size_t i = 0;
    while (i + 1 < k->n && k->cv[i + 1].head_dim <= d)
        i++;
    double e0 = mb_calib__acurve_eff(k, i, s);
    if (i + 1 == k->n || d <= k->cv[i].head_dim)
        return e0;
    double e1 = mb_calib__acurve_eff(k, i + 1, s), d0 = k->cv[i].head_dim, d1 = k->cv[i + 1].head_dim;
    return e0 + (e1 - e0) * (log(d) - log(d0)) / (log(d1) - log(d0));
}

/* The curves answering (causal, bwd): a kind without curves uses the other
 * mask's (FA3 has no causal bwd panel: causal bwd runs on the non-causal bwd
 * curves, as documented, not counted); NULL when neither has curves. */
static const struct mb_calib__akind *mb_calib__akind_get(const struct mb_calib *c, int causal, int bwd)
{
    const struct mb_calib__akind *k = &c->attn[causal != 0][bwd != 0];
    if (k->n == 0)
        k = &c->attn[causal == 0][bwd != 0];
    return k->n ? k : NULL;
}

/* Kind k has curves at head dims at or below lo and at or above hi. */
static int mb_calib__akind_covers(const struct mb_calib__akind *k, double lo, double hi)
{
    return k && k->n && k->cv[0].head_dim <= lo && k->cv[k->n - 1].head_dim >= hi;
}

/*
 * Attention efficiency (fraction of the bf16 peak) of (causal, bwd) at seq and
 * head dim hd, at the benchmark shape (no wave correction). *seq_b and *hd_b
 * get the seq and head dim of the curves that answered (for the wave factor).
 *  - seq, on the kind's densest curve range [lo, hi]: inside, interpolated;
 *    outside but within a factor clamp_margin, the end point (not counted);
 *    farther, the asymptotic (longest-seq) efficiency, fallback.
 *  - head dim outside every curve of the table (all kinds): clamped to the
 *    nearest curve's, fallback.
 *  - inside the kind's own head-dim range: linear in ln(hd) between its two
 *    nearest curves (mb_calib__akind_eff).
 *  - outside it (e.g. fwd at hdim 64 when only bwd has an hdim-64 curve):
 *    ASSUMPTION, not counted: the head-dim ratio measured on another kind at
 *    the same seq, donor(hd) / donor(hd_edge), times this kind at its nearest
 *    head dim hd_edge. Donors in order: the same direction with the other
 *    mask, then the other direction (same mask first); a donor must span
 *    [hd, hd_edge]. No donor: the hd_edge curve, fallback.
 *  - no curve for either mask of the direction: spec roofline_eff, fallback.
 */
static double mb_calib__attn_eff(const struct mb_calib *c, int causal, int bwd, double seq, double hd,
                                 double *seq_b, double *hd_b, int *fb)
{
    causal = causal != 0;
    bwd = bwd != 0;
    const struct mb_calib__akind *k = mb_calib__akind_get(c, causal, bwd);
    *seq_b = seq;
    *hd_b = hd;
    if (!k) {
        *fb = 1;
        return c->roofline_eff;
    }
    const struct mb_calib__acurve *r = &k->cv[mb_calib__akind_ref(k)];
    double lo = r->pts[0].x, hi = r->pts[r->n - 1].x, s = seq;
    if (seq < lo) {
        /* shorter than every measurement: the shortest one's efficiency (an
         * upper bound, efficiency falls with seq); beyond the margin counted */
        *fb |= seq * c->attn_margin < lo;
        s = lo;
    } else if (seq > hi) {
        *fb |= seq > hi * c->attn_margin;
        s = hi;
    }
    double dmin = 0, dmax = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const struct mb_calib__akind *q = &c->attn[a][b];
            if (q->n && (dmin == 0 || q->cv[0].head_dim < dmin))
                dmin = q->cv[0].head_dim;
            if (q->n && q->cv[q->n - 1].head_dim > dmax)
                dmax = q->cv[q->n - 1].head_dim;
        }
    double d = hd;
    if (d < dmin || d > dmax) {
        *fb = 1;
        d = d < dmin ? dmin : dmax;
    }
    *seq_b = s;
    *hd_b = d;
    double klo = k->cv[0].head_dim, khi = k->cv[k->n - 1].head_dim;
    if (d >= klo && d <= khi)
        return mb_calib__akind_eff(k, s, d);
    double de = d < klo ? klo : khi;
    const struct mb_calib__akind *donors[3] = {mb_calib__akind_get(c, !causal, bwd),
                                               mb_calib__akind_get(c, causal, !bwd),
                                               mb_calib__akind_get(c, !causal, !bwd)};
    for (int i = 0; i < 3; i++) {
        const struct mb_calib__akind *q = donors[i];
        if (q == k || !mb_calib__akind_covers(q, d < de ? d : de, d < de ? de : d))
            continue;
        return mb_calib__akind_eff(k, s, de) * mb_calib__akind_eff(q, s, d) / mb_calib__akind_eff(q, s, de);
    }
    *fb = 1;
    *hd_b = de;
    return mb_calib__akind_eff(k, s, de);
}

/*
 * Attention: t = flop / (peak * eff), eff from mb_calib__attn_eff times the
 * wave-quantization factor for batch_heads problems (mb_calib__attn_wave),
 * capped at 1. Attention is timed at the BF16 (or FP16) peak for every
 * precision: Megatron keeps core attention in BF16 under FP8 recipes.
 */
double mb_calib_attn_bh(struct mb_calib *c, enum mb_prec p, double flop, double seq, int head_dim,
                        double batch_heads, int causal, int bwd)
{
    assert(c && p >= 0 && p < MB_PREC_COUNT);
    if (!(flop > 0) || !(seq > 0) || head_dim <= 0)
        return 0.0;
    int fb = 0;
    c->lookups[T_ATTN]++;
    double peak = (p == MB_PREC_FP16) ? c->spec.peak[MB_PREC_FP16] : c->spec.peak[MB_PREC_BF16];
    double eff;
    if (c->roofline) {
        fb = 1;
        eff = c->roofline_eff;
    } else {
        double seq_b, hd_b;
        eff = mb_calib__attn_eff(c, causal, bwd, seq, head_dim, &seq_b, &hd_b, &fb);
        eff *= mb_calib__attn_wave(c, batch_heads, seq, seq_b, hd_b);
        if (eff > 1)
            eff = 1; /* never above peak */
    }
    c->last_fb = fb;
    if (fb)
        c->fallbacks[T_ATTN]++;
    return flop / (peak * eff) * mb_calib__tensor_slow(c);
}

double mb_calib_attn(struct mb_calib *c, enum mb_prec p, double flop, double seq, int head_dim, int causal,
                     int bwd)
{
    return mb_calib_attn_bh(c, p, flop, seq, head_dim, 0, causal, bwd);
}

/* Memory-bound op: max(bytes / (hbm_bw * eff), floor); roofline: bytes / hbm_bw. */
double mb_calib_membound(struct mb_calib *c, double bytes)
{
    assert(c);
    if (!(bytes > 0))
        return 0.0;
    c->lookups[T_MEM]++;
    c->last_fb = c->roofline;
    if (c->roofline) {
        c->fallbacks[T_MEM]++;
        return bytes / c->spec.hbm_bw;
    }
    double t = bytes / (c->spec.hbm_bw * mb_calib__mem_eff(c));
    return t > c->mem_floor ? t : c->mem_floor;
}

enum mb_calib_src mb_calib_last_source(const struct mb_calib *c)
{
    assert(c);
    return c->last_fb ? MB_CALIB_SRC_FALLBACK : MB_CALIB_SRC_TABLE;
}

double mb_calib_flex_nic_eff(const struct mb_calib *c, enum mb_calib_flex_kind k, double domains)
{
    assert(k >= 0 && k < MB_CALIB_FLEX_COUNT);
    if (!c || c->n_flex == 0 || !(domains >= 2))
        return 0;
    const struct mb_calib__pt *pts = c->flex[k];
    size_t n = c->n_flex;
    return mb_calib__interp_clamp(pts, n, domains); /* outside: the nearest end point */
}

double mb_calib_link_eff(const struct mb_calib *c, enum mb_link_kind k)
{
    assert(c && k >= 0 && k < MB_LINK_COUNT);
    return c->link_eff[k];
}

double mb_calib_link_latency(const struct mb_calib *c, enum mb_link_kind k)
{
    assert(c && k >= 0 && k < MB_LINK_COUNT);
    return c->link_lat[k];
}

size_t mb_calib_n_tables(const struct mb_calib *c)
{
    (void)c;
    return T_COUNT;
}

struct mb_calib_table_info mb_calib_table(const struct mb_calib *c, size_t i)
{
    assert(c && i < T_COUNT);
    struct mb_calib_table_info t = {mb_calib__table_names[i], c->source[i] ? c->source[i] : "",
                                    c->lookups[i], c->fallbacks[i]};
    return t;
}

const char *mb_calib_path(const struct mb_calib *c)
{
    return c->path;
}

void mb_calib_reset_usage(struct mb_calib *c)
{
    memset(c->lookups, 0, sizeof c->lookups);
    memset(c->fallbacks, 0, sizeof c->fallbacks);
}

void mb_calib_add_usage(struct mb_calib *c, size_t i, long lookups, long fallbacks)
{
    assert(c && i < T_COUNT);
    c->lookups[i] += lookups;
    c->fallbacks[i] += fallbacks;
}

void mb_calib_set_roofline(struct mb_calib *c, int on)
{
    c->roofline = on != 0;
}

size_t mb_calib_n_measured(const struct mb_calib *c)
{
    return c->n_measured;
}

size_t mb_calib_n_coll_points(const struct mb_calib *c)
{
    return c->n_coll;
}

struct mb_calib_coll_point mb_calib_coll_point(const struct mb_calib *c, size_t i)
{
    assert(c && i < c->n_coll);
    return c->coll[i];
}

/* "all_gather", "AllGather", "allgather" -> "allgather" (letters only, lower case). */
static void mb_calib__opkey(const char *in, char *out, size_t len)
{
    size_t n = 0;
    for (; *in && n + 1 < len; in++)
        if ((*in >= 'a' && *in <= 'z') || (*in >= 'A' && *in <= 'Z'))
            out[n++] = (char)(*in | 0x20);
    out[n] = '\0';
}

/* One measured size of a collective curve: mean time over its points. */
struct mb_calib__cpt {
    double s, t;
};

static int mb_calib__cpt_cmp(const void *a, const void *b)
{
    double x = ((const struct mb_calib__cpt *)a)->s, y = ((const struct mb_calib__cpt *)b)->s;
    return (x > y) - (x < y);
}

/* Line through measured sizes i < j: t = *a + S * *k. @return 1 when it rises (k > 0). */
static int mb_calib__cline(const struct mb_calib__cpt *p, size_t i, size_t j, double *a, double *k)
{
    if (!(p[j].t > p[i].t))
        return 0;
    *k = (p[j].t - p[i].t) / (p[j].s - p[i].s);
    *a = p[i].t - *k * p[i].s;
    return 1;
}

int mb_calib_coll_line(const struct mb_calib *c, const char *op, int group, double bytes, double *lat_s,
                       double *bw)
{
    char want[32], have[32];
    mb_calib__opkey(op, want, sizeof want);
    if (!(bytes > 0))
        return 0;
    struct mb_calib__cpt *p = NULL;
    size_t m = 0;
    for (size_t i = 0; i < c->n_coll; i++) {
        const struct mb_calib_coll_point *q = &c->coll[i];
        mb_calib__opkey(q->op, have, sizeof have);
        if (strcmp(have, want) || q->group != group || !(q->bytes > 0) || !(q->time_s > 0))
            continue;
        if (!p)
            p = mb_calloc(c->n_coll, sizeof *p);
        p[m++] = (struct mb_calib__cpt){q->bytes, q->time_s};
    }
    if (!m)
        return 0;
    /* equal sizes (in-place and out-of-place blocks, repeated runs) are averaged */
    qsort(p, m, sizeof *p, mb_calib__cpt_cmp);
    size_t u = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        double sum = 0;
        while (j < m && mb_dbl_eq(p[j].s, p[i].s))
            sum += p[j++].t;
        p[u++] = (struct mb_calib__cpt){p[i].s, sum / (double)(j - i)};
        i = j;
    }
    /* t: the answer; (fa, fk): the line it lies on when that line rises, so its
     * intercept is the fixed (latency) part; otherwise the whole time is rate */
    double t = -1, a, k, fa = 0, fk = 0;
    if (bytes > 2 * p[u - 1].s || (u == 1 && bytes < p[0].s / 2)) {
        t = -1; /* no silent extrapolation above the measured range */
    } else if (u == 1) {
        t = p[0].t * fmax(1.0, bytes / p[0].s); /* its time below it, its bandwidth above it */
    } else if (bytes <= p[0].s) {
        /* below the range: the first segment's line (an upper bound for a concave
         * curve), or the smallest size's time when that line has no positive intercept */
        if (mb_calib__cline(p, 0, 1, &a, &k) && a > 0)
            t = a + k * bytes, fa = a, fk = k;
        else
            t = p[0].t;
    } else if (bytes >= p[u - 1].s) {
        if (mb_calib__cline(p, u - 2, u - 1, &a, &k))
            t = a + k * bytes, fa = a, fk = k;
        else
            t = p[u - 1].t;
    } else {
        size_t i = 0;
        while (p[i + 1].s < bytes)
            i++;
        /* the neighbour segments' lines extended over this segment (upper bounds for a
         * concave curve: NCCL's min over algorithm/protocol of latency + bytes/bw) ... */
        t = INFINITY;
        if (i >= 1 && mb_calib__cline(p, i - 1, i, &a, &k) && a + k * bytes < t)
            t = a + k * bytes, fa = a, fk = k;
        if (i + 2 < u && mb_calib__cline(p, i + 1, i + 2, &a, &k) && a + k * bytes < t)
            t = a + k * bytes, fa = a, fk = k;
        /* ... never below the segment's own chord (a lower bound) nor above the
         * larger end (times do not fall with size; guards noisy, non-concave data);
         * a measured size answers with its own time */
        double lo = p[i].t + (p[i + 1].t - p[i].t) * (bytes - p[i].s) / (p[i + 1].s - p[i].s);
        if (mb_dbl_eq(bytes, p[i + 1].s))
            lo = p[i + 1].t, t = INFINITY;
        if (t > fmax(p[i].t, p[i + 1].t))
            t = INFINITY;
        if (!(t > lo) || isinf(t)) {
            t = lo;
            fa = fk = 0;
            if (mb_calib__cline(p, i, i + 1, &a, &k))
                fa = a, fk = k;
        }
    }
    mb_free(p);
    if (!(t > 0))
        return 0;
    if (fk > 0 && fa >= 0) {
        *lat_s = fa;
        *bw = 1 / fk;
    } else {
        *lat_s = 0;
        *bw = bytes / t;
    }
    return 1;
}

int mb_calib_coll_pace(const struct mb_calib *c, const char *op, int group, double bytes, double *meas_lat,
                       double *meas_paced)
{
    char key[32];
    double a, bw;
    mb_calib__opkey(op, key, sizeof key);
    const char *twin = !strcmp(key, "allgather") ? "reducescatter" : !strcmp(key, "reducescatter") ? "allgather" : NULL;
    if (group <= 1 || !(bytes > 0))
        return 0;
    if (!mb_calib_coll_line(c, op, group, bytes, &a, &bw) && !(twin && mb_calib_coll_line(c, twin, group, bytes, &a, &bw)))
        return 0;
    *meas_lat = a;
    *meas_paced = bytes / bw;
    return 1;
}
