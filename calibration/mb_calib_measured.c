/*
 * mb_calib_measured.c -- the `measured:` section of a calibration table or
 * overlay (imported profiles: mbsim calibrate, calibration/bench): merges its
 * GEMM, grouped GEMM and attention points into the loaded curves by the
 * precedence rule below, keeps its collective points for mb_calib_coll_line()
 * and replaces the membound and launch figures it gives.
 */
#include "mb_calib.h"
#include "calib_int.h"
#include "mb_yaml.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Merges the GEMM points of one precision p (of the n read) into that precision's curve. */
static void mb_calib__mgemm_merge(struct mb_calib *c, int p, const struct mb_calib__pt *add, const int *prec,
                                  size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += prec[i] == p;
    if (!m)
        return;
    struct mb_calib__pt *sel = mb_calloc(m, sizeof *sel);
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (prec[i] == p)
            sel[m++] = add[i];
    mb_calib__materialize(c, p);
    mb_calib__merge(&c->gemm[p].pts, &c->gemm[p].n, sel, m);
    mb_free(sel);
}

/* Dense GEMM, per precision: y = achieved / peak(p). */
static int mb_calib__measured_gemm(struct mb_calib *c, const struct mb_node *pts, const char *msrc,
                                   struct mb_err *err)
{
    size_t n = pts->n;
    struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
    int *prec = mb_calloc(n, sizeof *prec);
    for (size_t i = 0; i < n; i++) {
        const struct mb_node *pn = pts->items[i];
        struct mb_calib__mgemm_in g;
        memset(&g, 0, sizeof g);
        g.batch = 1;
        if (mb_yaml_read_fields(pn, mb_calib__mgemm_fields, &g, "measured gemm point", NULL, err) ||
            mb_calib__prec_parse(g.prec, &prec[i], err))
            goto fail;
        if (c->spec.peak[prec[i]] <= 0) {
            mb_yaml_err(err, g.prec, "measured gemm point for %s but spec.peak.%s is not set",
                        mb_calib__prec_names[prec[i]], mb_calib__prec_names[prec[i]]);
            goto fail;
        }
        add[i].x = (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
        add[i].y = g.achieved / c->spec.peak[prec[i]];
        if (add[i].y > 1 + 1e-9) {
            mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                        "measured gemm point achieves %.4g of spec.peak.%s (more than 1)", add[i].y,
                        mb_calib__prec_names[prec[i]]);
            goto fail;
        }
    }
    for (int p = 0; p < MB_PREC_COUNT; p++)
        mb_calib__mgemm_merge(c, p, add, prec, n);
    mb_calib__note_source(c, T_GEMM, msrc, n);
    c->n_measured += n;
    mb_free(add);
    mb_free(prec);
    return 0;
fail:
    mb_free(add);
    mb_free(prec);
    return -1;
}

/* Grouped GEMM: rel = (achieved / peak) / eff_dense(ref_m * n * k), after the GEMM merge. */
static int mb_calib__measured_grouped(struct mb_calib *c, const struct mb_node *pts, const char *msrc,
                                      struct mb_err *err)
{
    size_t n = pts->n;
    struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
    for (size_t i = 0; i < n; i++) {
        const struct mb_node *pn = pts->items[i];
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
    return 0;
}

/* Merges the attention points per key (causal, bwd, head_dim); a head dim the kind lacks gets a new curve. */
static void mb_calib__mattn_merge(struct mb_calib *c, const struct mb_calib__pt *add, long *key, size_t n)
{
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
    mb_free(sel);
}

/* Attention: y = achieved / peak(bf16, or fp16 when prec: fp16) / wave factor at the point's
 * batch_heads (so the curve holds benchmark-shape efficiencies, mb_calib__attn_wave), merged per
 * (causal, bwd, head_dim); a head dim the kind lacks gets a new curve. */
static int mb_calib__measured_attn(struct mb_calib *c, const struct mb_node *pts, const char *msrc,
                                   struct mb_err *err)
{
    size_t n = pts->n;
    struct mb_calib__pt *add = mb_calloc(n, sizeof *add);
    long *key = mb_calloc(n, sizeof *key); /* (causal * 2 + bwd) * 2048 + head_dim; -1 once merged */
    for (size_t i = 0; i < n; i++) {
        const struct mb_node *pn = pts->items[i];
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
            double frac = add[i].y; /* read before add is freed */
            mb_free(add);
            mb_free(key);
            return mb_yaml_err(err, mb_yaml_get(pn, "achieved"),
                               "measured attention point achieves %.4g of the peak (more than 1)", frac);
        }
        add[i].y /= mb_calib__attn_wave(c, g.batch_heads, g.seq, g.seq, (double)g.head_dim);
    }
    mb_calib__mattn_merge(c, add, key, n);
    mb_calib__note_source(c, T_ATTN, msrc, n);
    c->n_measured += n;
    mb_free(add);
    mb_free(key);
    return 0;
}

/* Collectives: measured points answering mb_calib_coll_line(); they do not change link efficiencies. */
static int mb_calib__measured_coll(struct mb_calib *c, const struct mb_node *pts, struct mb_err *err)
{
    size_t base = c->n_coll;
    c->coll = mb_realloc(c->coll, (base + pts->n) * sizeof *c->coll);
    for (size_t i = 0; i < pts->n; i++) {
        struct mb_calib__mcoll_in g;
        memset(&g, 0, sizeof g);
        int rc = mb_yaml_read_fields(pts->items[i], mb_calib__mcoll_fields, &g, "measured collective", NULL, err);
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
    return 0;
}

/* Memory-bound efficiency / floor: replaced when given. */
static int mb_calib__measured_mem(struct mb_calib *c, const struct mb_node *sec, const char *msrc,
                                  struct mb_err *err)
{
    struct mb_calib__mem_in m = {c->mem_eff, c->mem_floor};
    const struct mb_field mf[] = {
        {"eff", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, eff), 0, 0, 0.01, 1, MB_UNIT_NONE},
        {"floor", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, floor), 0, 0, 0, 1e-3, MB_UNIT_TIME},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, mf, &m, "measured.membound", NULL, err))
        return -1;
    c->mem_eff = m.eff;
    c->mem_floor = m.floor;
    mb_calib__note_source(c, T_MEM, msrc, 1);
    c->n_measured++;
    return 0;
}

/* Launch overhead: replaced when given. */
static int mb_calib__measured_launch(struct mb_calib *c, const struct mb_node *sec, const char *msrc,
                                     struct mb_err *err)
{
    struct mb_calib__mem_in l = {c->spec.launch_s, 0};
    const struct mb_field lf[] = {
        {"time", MB_F_DOUBLE, offsetof(struct mb_calib__mem_in, eff), 0, 1, 0, 1e-3, MB_UNIT_TIME},
        {"source", MB_F_SKIP, 0, 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    if (mb_yaml_read_fields(sec, lf, &l, "measured.launch", NULL, err))
        return -1;
    c->spec.launch_s = l.eff;
    mb_calib__note_source(c, T_SPEC, msrc, 1);
    c->n_measured++;
    return 0;
}

int mb_calib__apply_measured(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err)
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
    /* in this order: the grouped points are relative to the merged GEMM curves */
    if ((in.gemm && in.gemm->n && mb_calib__measured_gemm(c, in.gemm, msrc, err)) ||
        (in.grouped && in.grouped->n && mb_calib__measured_grouped(c, in.grouped, msrc, err)) ||
        (in.attn && in.attn->n && mb_calib__measured_attn(c, in.attn, msrc, err)) ||
        (in.coll && in.coll->n && mb_calib__measured_coll(c, in.coll, err)) ||
        (in.mem && mb_calib__measured_mem(c, in.mem, msrc, err)) ||
        (in.launch && mb_calib__measured_launch(c, in.launch, msrc, err)))
        return -1;
    return 0;
}
