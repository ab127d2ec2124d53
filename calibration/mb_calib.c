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
 *
 * Files: this one holds the lookups, the framework-time parameters and the
 * measured collectives; mb_calib_load.c reads a table (sections, overlays,
 * recipes), mb_calib_measured.c merges its measured points, and
 * private/calib_int.h holds the struct mb_calib they share.
 */
#include "mb_calib.h"
#include "calib_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const mb_calib__table_names[T_COUNT] = {"spec", "gemm", "grouped_gemm", "attention",
                                                            "membound", "links"};
const char *const mb_calib__prec_names[MB_PREC_COUNT] = {"fp32", "bf16", "fp16", "fp8", "fp4"};

const char *mb_prec_name(enum mb_prec p)
{
    return (p >= 0 && p < MB_PREC_COUNT) ? mb_calib__prec_names[p] : "?";
}


/* ---- the table's structures, shared by the loader (mb_calib_load.c) and the measured: merge ---- */

int mb_calib__prec_parse(const struct mb_node *n, int *out, struct mb_err *err)
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

/* The curve of kind k at exactly head dim d, or NULL. */
struct mb_calib__acurve *mb_calib__acurve_find(struct mb_calib__akind *k, int d)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->cv[i].head_dim == d)
            return &k->cv[i];
    return NULL;
}

/* Inserts an empty curve at head dim d (not yet present) keeping k sorted by head dim. */
struct mb_calib__acurve *mb_calib__acurve_insert(struct mb_calib__akind *k, int d)
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
int mb_calib__load_framework(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
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

double mb_calib__attn_wave(const struct mb_calib *c, double bh, double seq, double seq_b, double hd)
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
double mb_calib__gemm_eff(const struct mb_calib *c, enum mb_prec p, double x, int *fb)
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

/* Sibling groups (mb_calib_sibling_group): the first name of each is the group's. */
static const char *const mb_calib__siblings[][4] = {
    {"B200", "GB200", NULL},
    {"B300", "GB300", NULL},
    {"H100", "H200", "H100_96GB", NULL},
};

const char *mb_calib_sibling_group(const char *gpu)
{
    for (size_t g = 0; g < sizeof mb_calib__siblings / sizeof mb_calib__siblings[0]; g++)
        for (int k = 0; mb_calib__siblings[g][k]; k++)
            if (!strcasecmp(gpu, mb_calib__siblings[g][k]))
                return mb_calib__siblings[g][0];
    return gpu;
}

int mb_calib_siblings(const char *a, const char *b)
{
    return !strcasecmp(mb_calib_sibling_group(a), mb_calib_sibling_group(b));
}

const char *mb_calib_path(const struct mb_calib *c)
{
    return c->path;
}

unsigned long long mb_calib_files_hash(const struct mb_calib *c)
{
    return c->files_hash;
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

/* ----------------------------------------------------- measured collectives */

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
