/*
 * import_nsys.c -- `nsys stats --report cuda_gpu_kern_sum --format csv` into
 * calibration points, plus what the nsys and Kineto importers share: the
 * kernel-name classifier, the shapes side-file, the table writer.
 *
 * SUMMARY: the CSV (any preamble lines before the header are skipped; the
 * header of Nsight Systems 2022+ `Time (%),Total Time (ns),Instances,Avg (ns),
 * Med (ns),Min (ns),Max (ns),StdDev (ns),Name` and of the older `gpukernsum`
 * report `Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,StdDev,
 * Name` are both accepted) is parsed with libcsv, so quoted demangled names
 * with commas are one field. Each row is one kernel name; it is classified by
 * mb_prof_classify. A kernel that matches a rule of the shapes side-file
 * becomes a measured point: achieved FLOP/s = FLOP(shape) / median time
 * (average when the report has no median).
 *
 * Approximation: a summary row aggregates every launch of a kernel name, so a
 * side-file shape is assumed for all of its instances (the median keeps
 * outliers such as warm-up launches out). Without a side-file only the
 * per-class time summary is produced.
 */
#include "mb_import.h"
#include "mb_input.h"
#include "mb_yaml.h"

#include <csv.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ classifier */

static const char *const mb_prof__kc_names[MB_KC_COUNT] = {
    "gemm", "grouped_gemm", "attn_fwd", "attn_bwd", "nccl",   "norm",
    "permute", "router", "elementwise", "memory", "other", "unknown"};

const char *mb_prof_kclass_name(enum mb_kclass k)
{
    return (k >= 0 && k < MB_KC_COUNT) ? mb_prof__kc_names[k] : "?";
}

/*
 * Rule table, first match wins (case-sensitive substrings). Order matters:
 * MoE permute kernels carry "GroupedGemm" in their template arguments and
 * cutlass GEMMs carry "NoPermute", so the specific permute names come before
 * grouped GEMM, and the generic "permute" rule is lower-case only. The same
 * table is in docs/calibration.md.
 */
struct mb_prof__rule {
    enum mb_kclass cls;
    const char *pat;
};

static const struct mb_prof__rule mb_prof__rules[] = {
    {MB_KC_NCCL, "ncclDevKernel_"},
    {MB_KC_NCCL, "ncclKernel_"},
    {MB_KC_ATTN_BWD, "FlashAttnBwd"},
    {MB_KC_ATTN_BWD, "flash_bwd"},
    {MB_KC_ATTN_BWD, "fmha_bwd"},
    {MB_KC_ATTN_BWD, "fmha_cutlassB"},
    {MB_KC_ATTN_BWD, "attention_backward"},
    {MB_KC_ATTN_FWD, "FlashAttnFwd"},
    {MB_KC_ATTN_FWD, "flash_fwd"},
    {MB_KC_ATTN_FWD, "flash::"},
    {MB_KC_ATTN_FWD, "fmha"},
    {MB_KC_ATTN_FWD, "flash_attn"},
    {MB_KC_PERMUTE, "expandInputRows"},
    {MB_KC_PERMUTE, "finalizeMoeRouting"},
    {MB_KC_PERMUTE, "BuildExpertMaps"},
    {MB_KC_PERMUTE, "moe_permute"},
    {MB_KC_PERMUTE, "unpermute"},
    {MB_KC_PERMUTE, "permute"},
    {MB_KC_ROUTER, "topkGating"},
    {MB_KC_ROUTER, "topk"},
    {MB_KC_ROUTER, "moe_align"},
    {MB_KC_ROUTER, "router"},
    {MB_KC_GROUPED_GEMM, "GroupProblemShape"},
    {MB_KC_GROUPED_GEMM, "MoeFCGemm"},
    {MB_KC_GROUPED_GEMM, "fused_moe"},
    {MB_KC_GROUPED_GEMM, "grouped_gemm"},
    {MB_KC_GROUPED_GEMM, "GroupedGemm"},
    {MB_KC_GEMM, "nvjet_"},
    {MB_KC_GEMM, "splitKreduce"},
    {MB_KC_GEMM, "xmma_gemm"},
    {MB_KC_GEMM, "gemm"},
    {MB_KC_GEMM, "Gemm"},
    {MB_KC_GEMM, "GEMM"},
    {MB_KC_NORM, "rms_norm"},
    {MB_KC_NORM, "rmsnorm"},
    {MB_KC_NORM, "RMSNorm"},
    {MB_KC_NORM, "layer_norm"},
    {MB_KC_NORM, "layernorm"},
    {MB_KC_NORM, "LayerNorm"},
    {MB_KC_NORM, "group_norm"},
    {MB_KC_NORM, "batch_norm"},
    {MB_KC_MEMORY, "Memcpy"},
    {MB_KC_MEMORY, "Memset"},
    {MB_KC_ELEMENTWISE, "elementwise"},
    {MB_KC_ELEMENTWISE, "rotary"},
    {MB_KC_ELEMENTWISE, "reshape_and_cache"},
    {MB_KC_ELEMENTWISE, "reduce_kernel"},
    {MB_KC_ELEMENTWISE, "softmax"},
    {MB_KC_ELEMENTWISE, "act_and_mul"},
    {MB_KC_ELEMENTWISE, "Fill"},
    {MB_KC_ELEMENTWISE, "copy"},
    {MB_KC_ELEMENTWISE, "cat_"},
    {MB_KC_ELEMENTWISE, "CatArray"},
    {MB_KC_ELEMENTWISE, "dropout"},
    {MB_KC_ELEMENTWISE, "embedding"},
    {MB_KC_ELEMENTWISE, "cross_entropy"},
    {MB_KC_ELEMENTWISE, "multi_tensor_apply"},
    {MB_KC_OTHER, "delayStreamKernel"},
    {MB_KC_OTHER, "conv"},
    {MB_KC_OTHER, "cudnn"},
    {MB_KC_UNKNOWN, NULL}};

enum mb_kclass mb_prof_classify(const char *kernel)
{
    if (!kernel)
        return MB_KC_UNKNOWN;
    for (const struct mb_prof__rule *r = mb_prof__rules; r->pat; r++)
        if (strstr(kernel, r->pat))
            return r->cls;
    return MB_KC_UNKNOWN;
}

int mb_prof_name_sm(const char *kernel)
{
    int best = 0;
    for (const char *q = kernel; q && *q; q++) {
        if ((q[0] != 's' && q[0] != 'S') || q[1] != 'm' || (q > kernel && isalpha((unsigned char)q[-1])))
            continue;
        const char *d = q + 2 + (q[2] == '_');
        int v = 0, nd = 0;
        while (isdigit((unsigned char)d[nd]) && nd < 4)
            v = v * 10 + (d[nd++] - '0');
        if (nd >= 2 && nd <= 3 && !isdigit((unsigned char)d[nd]) && v >= 30 && v <= 199 && v > best)
            best = v;
    }
    return best;
}

/*
 * FLOP of one instance. GEMM: 2*b*m*n*k. Grouped: 2*groups*tokens*n*k.
 * Attention (FlashAttention papers' convention, as in the shipped curves):
 * fwd 4*bh*s*s_kv*d, halved when causal; bwd 2.5 x fwd.
 */
double mb_prof_shape_flop(const struct mb_prof_shape *s)
{
    switch (s->op) {
    case MB_PROF_GEMM:
        return 2.0 * s->batch * s->m * s->n * s->k;
    case MB_PROF_GROUPED:
        return 2.0 * s->groups * s->tokens * s->n * s->k;
    case MB_PROF_ATTN: {
        double f = 4.0 * s->batch_heads * s->seq * (s->seq_kv > 0 ? s->seq_kv : s->seq) * s->head_dim;
        if (s->causal)
            f /= 2;
        return s->bwd ? 2.5 * f : f;
    }
    }
    return 0;
}

/* ------------------------------------------------------------ shapes file */

struct mb_prof__shape_rule {
    char *match;                /* '*'-glob matched anywhere in the name */
    struct mb_prof_shape shape;
    int bwd_given;
    long used;
};

struct mb_prof_shapes {
    char gpu[32];
    size_t n;
    struct mb_prof__shape_rule *rules;
};

/* Glob with '*' only, unanchored: every piece must occur in order. */
static int mb_prof__glob(const char *pat, const char *s)
{
    char piece[512];
    while (*pat) {
        while (*pat == '*')
            pat++;
        size_t n = strcspn(pat, "*");
        if (n == 0)
            break;
        if (n >= sizeof piece)
            n = sizeof piece - 1;
        memcpy(piece, pat, n);
        piece[n] = '\0';
        const char *hit = strstr(s, piece);
        if (!hit)
            return 0;
        s = hit + n;
        pat += strcspn(pat, "*");
    }
    return 1;
}

struct mb_prof__shape_in {
    char *match;
    const struct mb_node *op, *prec;
    long m, n, k, batch, groups, head_dim;
    double tokens, batch_heads, seq, seq_kv;
    int causal, bwd;
};

static int mb_prof__prec(const struct mb_node *n, enum mb_prec *out, struct mb_err *err)
{
    static const char *const names[MB_PREC_COUNT] = {"fp32", "bf16", "fp16", "fp8", "fp4"};
    for (int i = 0; i < MB_PREC_COUNT; i++)
        if (strcmp(n->str, names[i]) == 0) {
            *out = (enum mb_prec)i;
            return 0;
        }
    return mb_yaml_err(err, n, "unknown precision '%s'; expected one of: fp32, bf16, fp16, fp8, fp4", n->str);
}

struct mb_prof__shapes_top {
    long schema_version;
    char gpu[32];
    const struct mb_node *shapes;
};

int mb_prof_shapes_load(const char *path, struct mb_prof_shapes **out, struct mb_err *err)
{
    *out = NULL;
    struct mb_node *root = mb_yaml_load_file(path, err);
    if (!root)
        return -1;
    struct mb_prof__shapes_top top;
    memset(&top, 0, sizeof top);
    const struct mb_field tf[] = {
        {"schema_version", MB_F_INT, offsetof(struct mb_prof__shapes_top, schema_version), 0, 1, 1, 1, MB_UNIT_NONE},
        {"gpu", MB_F_STRBUF, offsetof(struct mb_prof__shapes_top, gpu), 32, 0, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {"shapes", MB_F_NODE, offsetof(struct mb_prof__shapes_top, shapes), 0, 1, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    struct mb_prof_shapes *s = mb_calloc(1, sizeof *s);
    if (mb_yaml_read_fields(root, tf, &top, "shapes file", NULL, err) ||
        mb_yaml_expect(top.shapes, MB_NODE_SEQ, "shapes", err))
        goto fail;
    snprintf(s->gpu, sizeof s->gpu, "%s", top.gpu);
    s->rules = mb_calloc(top.shapes->n ? top.shapes->n : 1, sizeof *s->rules);
    const struct mb_field f[] = {
        {"match", MB_F_STR, offsetof(struct mb_prof__shape_in, match), 0, 1, 1, 0, MB_UNIT_NONE},
        {"op", MB_F_NODE, offsetof(struct mb_prof__shape_in, op), 0, 1, 1, 0, MB_UNIT_NONE},
        {"prec", MB_F_NODE, offsetof(struct mb_prof__shape_in, prec), 0, 0, 1, 0, MB_UNIT_NONE},
        {"m", MB_F_INT, offsetof(struct mb_prof__shape_in, m), 0, 0, 1, 1 << 24, MB_UNIT_NONE},
        {"n", MB_F_INT, offsetof(struct mb_prof__shape_in, n), 0, 0, 1, 1 << 24, MB_UNIT_NONE},
        {"k", MB_F_INT, offsetof(struct mb_prof__shape_in, k), 0, 0, 1, 1 << 24, MB_UNIT_NONE},
        {"batch", MB_F_INT, offsetof(struct mb_prof__shape_in, batch), 0, 0, 1, 1 << 20, MB_UNIT_NONE},
        {"groups", MB_F_INT, offsetof(struct mb_prof__shape_in, groups), 0, 0, 1, 1 << 20, MB_UNIT_NONE},
        {"tokens", MB_F_DOUBLE, offsetof(struct mb_prof__shape_in, tokens), 0, 0, 1, 1e8, MB_UNIT_NONE},
        {"batch_heads", MB_F_DOUBLE, offsetof(struct mb_prof__shape_in, batch_heads), 0, 0, 1, 1e9, MB_UNIT_NONE},
        {"seq", MB_F_DOUBLE, offsetof(struct mb_prof__shape_in, seq), 0, 0, 1, 1e8, MB_UNIT_NONE},
        {"seq_kv", MB_F_DOUBLE, offsetof(struct mb_prof__shape_in, seq_kv), 0, 0, 1, 1e8, MB_UNIT_NONE},
        {"head_dim", MB_F_INT, offsetof(struct mb_prof__shape_in, head_dim), 0, 0, 1, 1024, MB_UNIT_NONE},
        {"causal", MB_F_BOOL, offsetof(struct mb_prof__shape_in, causal), 0, 0, 1, 0, MB_UNIT_NONE},
        {"bwd", MB_F_BOOL, offsetof(struct mb_prof__shape_in, bwd), 0, 0, 1, 0, MB_UNIT_NONE},
        {"source", MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE},
        {NULL, 0, 0, 0, 0, 0, 0, 0}};
    for (size_t i = 0; i < top.shapes->n; i++) {
        const struct mb_node *rn = top.shapes->items[i];
        struct mb_prof__shape_in in;
        memset(&in, 0, sizeof in);
        in.batch = 1;
        in.bwd = -1;
        unsigned long long seen = 0;
        struct mb_prof__shape_rule *r = &s->rules[s->n];
        int rc = mb_yaml_read_fields(rn, f, &in, "shape", &seen, err);
        r->match = in.match;
        s->n++; /* counted before any error, so fail frees its match */
        if (rc)
            goto fail;
        r->shape.prec = MB_PREC_BF16;
        r->shape.batch = (double)in.batch;
        if (in.prec && mb_prof__prec(in.prec, &r->shape.prec, err))
            goto fail;
        if (mb_yaml_expect(in.op, MB_NODE_SCALAR, "shape.op", err))
            goto fail;
        const char *need = NULL;
        if (strcmp(in.op->str, "gemm") == 0) {
            r->shape.op = MB_PROF_GEMM;
            need = (in.m && in.n && in.k) ? NULL : "m, n, k";
        } else if (strcmp(in.op->str, "grouped_gemm") == 0) {
            r->shape.op = MB_PROF_GROUPED;
            need = (in.groups && in.tokens > 0 && in.n && in.k) ? NULL : "groups, tokens, n, k";
        } else if (strcmp(in.op->str, "attention") == 0) {
            r->shape.op = MB_PROF_ATTN;
            need = (in.batch_heads > 0 && in.seq > 0 && in.head_dim) ? NULL : "batch_heads, seq, head_dim";
        } else {
            mb_yaml_err(err, in.op, "unknown op '%s'; expected one of: gemm, grouped_gemm, attention", in.op->str);
            goto fail;
        }
        if (need) {
            mb_yaml_err(err, rn, "shape for op %s needs %s", in.op->str, need);
            goto fail;
        }
        r->shape.m = (double)in.m;
        r->shape.n = (double)in.n;
        r->shape.k = (double)in.k;
        r->shape.groups = (double)in.groups;
        r->shape.tokens = in.tokens;
        r->shape.batch_heads = in.batch_heads;
        r->shape.seq = in.seq;
        r->shape.seq_kv = in.seq_kv > 0 ? in.seq_kv : in.seq;
        r->shape.head_dim = (int)in.head_dim;
        r->shape.causal = in.causal;
        r->bwd_given = in.bwd >= 0;
        r->shape.bwd = in.bwd > 0;
    }
    mb_yaml_free(root);
    *out = s;
    return 0;
fail:
    mb_yaml_free(root);
    mb_prof_shapes_free(s);
    return -1;
}

void mb_prof_shapes_free(struct mb_prof_shapes *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        mb_free(s->rules[i].match);
    mb_free(s->rules);
    mb_free(s);
}

const char *mb_prof_shapes_gpu(const struct mb_prof_shapes *s)
{
    return s ? s->gpu : "";
}

/* ------------------------------------------------------------ profile */

void mb_prof_free(struct mb_prof *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_kernels; i++)
        mb_free(p->kernels[i].name);
    for (size_t i = 0; i < p->n_points; i++)
        mb_free(p->points[i].source);
    mb_free(p->kernels);
    mb_free(p->points);
    mb_free(p->coll);
    mb_free(p->file);
    mb_free(p);
}

/* Adds one kernel (name copied) to the profile and its class totals. */
static struct mb_prof_kernel *mb_prof__add_kernel(struct mb_prof *p, const char *name, enum mb_kclass cls)
{
    p->kernels = mb_realloc(p->kernels, (p->n_kernels + 1) * sizeof *p->kernels);
    struct mb_prof_kernel *k = &p->kernels[p->n_kernels++];
    memset(k, 0, sizeof *k);
    k->name = mb_strdup(name);
    k->cls = cls;
    p->cls_kernels[cls]++;
    return k;
}

/* ------------------------------------------------------------ CSV */

enum { MB_NSYS__MAX_COLS = 32 };

struct mb_nsys__ctx {
    const char *file;
    int line;                         /* line being fed to libcsv */
    size_t nf;                        /* fields of the current row */
    char *f[MB_NSYS__MAX_COLS];
    int too_many;
    /* header */
    int have_header;
    size_t ncols;
    char *hdr[MB_NSYS__MAX_COLS];
    int c_total, c_inst, c_avg, c_med, c_name;
    /* output */
    struct mb_prof *p;
    const struct mb_prof_shapes *shapes;
    struct mb_err *err;
    int failed;
};

static void mb_nsys__field(void *s, size_t len, void *data)
{
    struct mb_nsys__ctx *c = data;
    if (c->nf >= MB_NSYS__MAX_COLS) {
        c->too_many = 1;
        return;
    }
    char *v = mb_malloc(len + 1);
    memcpy(v, s, len);
    v[len] = '\0';
    c->f[c->nf++] = v;
}

static void mb_nsys__clear_row(struct mb_nsys__ctx *c)
{
    for (size_t i = 0; i < c->nf; i++)
        mb_free(c->f[i]);
    c->nf = 0;
    c->too_many = 0;
}

static int mb_nsys__col(const struct mb_nsys__ctx *c, const char *a, const char *b, const char *d)
{
    for (size_t i = 0; i < c->ncols; i++)
        if (strcmp(c->hdr[i], a) == 0 || (b && strcmp(c->hdr[i], b) == 0) || (d && strcmp(c->hdr[i], d) == 0))
            return (int)i;
    return -1;
}

/* Header row: a row with a field "Name"; checks the required columns. */
static int mb_nsys__header(struct mb_nsys__ctx *c)
{
    c->ncols = c->nf;
    for (size_t i = 0; i < c->nf; i++) {
        c->hdr[i] = c->f[i];
        c->f[i] = NULL;
    }
    c->nf = 0;
    c->have_header = 1;
    c->c_total = mb_nsys__col(c, "Total Time (ns)", "Total Time", NULL);
    c->c_inst = mb_nsys__col(c, "Instances", NULL, NULL);
    c->c_avg = mb_nsys__col(c, "Avg (ns)", "Average", "Average (ns)");
    c->c_med = mb_nsys__col(c, "Med (ns)", "Median", "Median (ns)");
    c->c_name = mb_nsys__col(c, "Name", NULL, NULL);
    const char *missing = c->c_total < 0 ? "Total Time (ns)" : c->c_inst < 0 ? "Instances" : NULL;
    if (missing)
        return mb_err_set(c->err, c->file, c->line, 1,
                          "wrong columns: no '%s' column in the header (expected a cuda_gpu_kern_sum or "
                          "gpukernsum report)",
                          missing);
    return 0;
}

static int mb_nsys__number(struct mb_nsys__ctx *c, size_t col, double *out)
{
    const char *s = c->f[col];
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || end == s || *end || errno || !isfinite(v) || v < 0)
        return mb_err_set(c->err, c->file, c->line, 1, "column '%s' (field %zu): '%s' is not a non-negative number",
                          c->hdr[col], col + 1, s);
    *out = v;
    return 0;
}

static const struct mb_prof__shape_rule *mb_nsys__match(const struct mb_prof_shapes *s, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (mb_prof__glob(s->rules[i].match, name))
            return &s->rules[i];
    return NULL;
}

/* A shortened kernel name for `source:` strings. */
static char *mb_prof__short(const char *prefix, const char *name, const char *suffix)
{
    char cut[100];
    size_t n = strlen(name);
    if (n > 80)
        snprintf(cut, sizeof cut, "%.72s...", name);
    else
        snprintf(cut, sizeof cut, "%s", name);
    int len = snprintf(NULL, 0, "%s%s%s", prefix, cut, suffix);
    char *s = mb_malloc((size_t)len + 1);
    snprintf(s, (size_t)len + 1, "%s%s%s", prefix, cut, suffix);
    return s;
}

static int mb_nsys__data_row(struct mb_nsys__ctx *c)
{
    if (c->nf != c->ncols)
        return mb_err_set(c->err, c->file, c->line, 1, "expected %zu fields as in the header, found %zu%s", c->ncols,
                          c->nf, c->nf < c->ncols ? " (truncated row?)" : "");
    double v[MB_NSYS__MAX_COLS] = {0};
    for (size_t i = 0; i < c->ncols; i++)
        if ((int)i != c->c_name && mb_nsys__number(c, i, &v[i]))
            return -1;
    double inst = v[c->c_inst];
    if (!mb_dbl_is_whole(inst, 0, 1e15)) /* 1e15 launches: far beyond any profile, exact as a double */
        return mb_err_set(c->err, c->file, c->line, 1, "column 'Instances': '%s' is not an integer in [0, 1e15]",
                          c->f[c->c_inst]);
    const char *name = c->c_name >= 0 ? c->f[c->c_name] : "";
    if (!*name)
        return mb_err_set(c->err, c->file, c->line, 1, "empty kernel name");
    struct mb_prof *p = c->p;
    enum mb_kclass cls = mb_prof_classify(name);
    struct mb_prof_kernel *k = mb_prof__add_kernel(p, name, cls);
    k->line = c->line;
    k->instances = (long)inst;
    k->total_s = v[c->c_total] * 1e-9;
    k->avg_s = c->c_avg >= 0 ? v[c->c_avg] * 1e-9 : (inst > 0 ? k->total_s / inst : 0);
    k->med_s = c->c_med >= 0 ? v[c->c_med] * 1e-9 : k->avg_s;
    p->cls_instances[cls] += k->instances;
    p->cls_time_s[cls] += k->total_s;
    p->total_s += k->total_s;

    const struct mb_prof__shape_rule *r = mb_nsys__match(c->shapes, name);
    if (r && k->med_s > 0) {
        ((struct mb_prof__shape_rule *)r)->used++;
        p->points = mb_realloc(p->points, (p->n_points + 1) * sizeof *p->points);
        struct mb_prof_point *pt = &p->points[p->n_points++];
        memset(pt, 0, sizeof *pt);
        pt->shape = r->shape;
        if (r->shape.op == MB_PROF_ATTN && !r->bwd_given)
            pt->shape.bwd = cls == MB_KC_ATTN_BWD;
        pt->time_s = k->med_s;
        pt->instances = k->instances;
        pt->achieved = mb_prof_shape_flop(&pt->shape) / pt->time_s;
        char suffix[96];
        snprintf(suffix, sizeof suffix, " (nsys line %d, %s of %ld instances)", c->line,
                 c->c_med >= 0 ? "median" : "average", k->instances);
        pt->source = mb_prof__short("", name, suffix);
    } else if (cls == MB_KC_GEMM || cls == MB_KC_GROUPED_GEMM || cls == MB_KC_ATTN_FWD || cls == MB_KC_ATTN_BWD) {
        p->n_noshape++;
        k->noshape = 1;
    }
    return 0;
}

static void mb_nsys__row(int term, void *data)
{
    (void)term;
    struct mb_nsys__ctx *c = data;
    if (c->failed) {
        mb_nsys__clear_row(c);
        return;
    }
    if (c->too_many) {
        c->failed = 1;
        mb_err_set(c->err, c->file, c->line, 1, "more than %d fields in a row", MB_NSYS__MAX_COLS);
    } else if (c->nf == 0 || (c->nf == 1 && !c->f[0][0])) {
        /* blank line */
    } else if (!c->have_header) {
        for (size_t i = 0; i < c->nf; i++)
            if (strcmp(c->f[i], "Name") == 0) {
                c->failed = mb_nsys__header(c) != 0;
                break;
            }
        /* else: a preamble line ("Generating SQLite file ...", "Processing [...]") */
    } else {
        c->failed = mb_nsys__data_row(c) != 0;
    }
    mb_nsys__clear_row(c);
}

int mb_prof_nsys(const char *path, const struct mb_prof_shapes *shapes, struct mb_prof **out, struct mb_err *err)
{
    *out = NULL;
    FILE *fp = mb_input_open(path, "an nsys cuda_gpu_kern_sum CSV file", 0, err);
    if (!fp)
        return -1;
    struct mb_nsys__ctx c;
    memset(&c, 0, sizeof c);
    c.file = path;
    c.shapes = shapes;
    c.err = err;
    c.p = mb_calloc(1, sizeof *c.p);
    c.p->file = mb_strdup(path);
    if (shapes) {
        snprintf(c.p->gpu, sizeof c.p->gpu, "%s", shapes->gpu);
        for (size_t i = 0; i < shapes->n; i++)
            shapes->rules[i].used = 0;
    }
    struct csv_parser parser;
    csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!c.failed && (len = getline(&line, &cap, fp)) >= 0) {
        c.line++;
        if (csv_parse(&parser, line, (size_t)len, mb_nsys__field, mb_nsys__row, &c) != (size_t)len) {
            mb_err_set(err, path, c.line, 1, "CSV error: %s", csv_strerror(csv_error(&parser)));
            c.failed = 1;
        }
    }
    int io_err = ferror(fp);
    free(line);
    fclose(fp);
    if (!c.failed && csv_fini(&parser, mb_nsys__field, mb_nsys__row, &c) != 0) {
        mb_err_set(err, path, c.line, 1, "unterminated quoted field at end of file (truncated file?)");
        c.failed = 1;
    }
    csv_free(&parser);
    mb_nsys__clear_row(&c);
    if (!c.failed && io_err) {
        mb_err_set(err, path, 0, 0, "read error");
        c.failed = 1;
    }
    if (!c.failed && !c.have_header) {
        mb_err_set(err, path, 0, 0,
                   "no cuda_gpu_kern_sum header (a row with 'Total Time (ns)', 'Instances' and 'Name') in %d lines",
                   c.line);
        c.failed = 1;
    }
    if (!c.failed && c.p->n_kernels == 0) {
        mb_err_set(err, path, c.line, 1, "no kernel rows after the header (truncated file?)");
        c.failed = 1;
    }
    for (size_t i = 0; i < c.ncols; i++)
        mb_free(c.hdr[i]);
    if (c.failed) {
        mb_prof_free(c.p);
        return -1;
    }
    for (size_t i = 0; shapes && i < shapes->n; i++)
        c.p->n_unused_shapes += shapes->rules[i].used == 0;
    *out = c.p;
    return 0;
}

/* ------------------------------------------------------------ writers */

static const char *mb_prof__prec_name(enum mb_prec p)
{
    return mb_prec_name(p);
}

int mb_prof_write_table(const struct mb_prof *p, const char *base, const char *source, FILE *f, struct mb_err *err)
{
    fprintf(f, "# Calibration overlay imported from a profile by mbsim (docs/calibration.md, \"Importing profiles\").\n");
    fprintf(f, "# Measured points take precedence over the base table inside their size range.\n");
    fprintf(f, "schema_version: 1\ngpu: %s\nbase: ", p->gpu[0] ? p->gpu : base);
    mb_yaml_write_quoted(f, base);
    fprintf(f, "\nmeasured:\n  source: ");
    mb_yaml_write_quoted(f, source);
    fputc('\n', f);
    static const char *const sec[3] = {"gemm", "grouped_gemm", "attention"};
    for (int op = MB_PROF_GEMM; op <= MB_PROF_ATTN; op++) {
        int first = 1;
        for (size_t i = 0; i < p->n_points; i++) {
            const struct mb_prof_point *pt = &p->points[i];
            const struct mb_prof_shape *s = &pt->shape;
            if ((int)s->op != op)
                continue;
            if (first)
                fprintf(f, "  %s:\n", sec[op]);
            first = 0;
            if (op == MB_PROF_GEMM)
                fprintf(f, "    - {prec: %s, m: %.0f, n: %.0f, k: %.0f, batch: %.0f", mb_prof__prec_name(s->prec), s->m,
                        s->n, s->k, s->batch);
            else if (op == MB_PROF_GROUPED)
                fprintf(f, "    - {prec: %s, groups: %.0f, tokens: %.6g, n: %.0f, k: %.0f", mb_prof__prec_name(s->prec),
                        s->groups, s->tokens, s->n, s->k);
            else
                fprintf(f, "    - {prec: %s, causal: %s, bwd: %s, head_dim: %d, batch_heads: %.6g, seq: %.6g",
                        mb_prof__prec_name(s->prec), s->causal ? "true" : "false", s->bwd ? "true" : "false",
                        s->head_dim, s->batch_heads, s->seq);
            fprintf(f, ", achieved: %.6g TFLOP/s, time: %.6g us, instances: %ld, source: ", pt->achieved / 1e12,
                    pt->time_s * 1e6, pt->instances);
            mb_yaml_write_quoted(f, pt->source);
            fprintf(f, "}\n");
        }
    }
    if (p->n_coll) {
        fprintf(f, "  collectives:\n");
        for (size_t i = 0; i < p->n_coll; i++) {
            const struct mb_prof_coll *cl = &p->coll[i];
            fprintf(f, "    - {op: ");
            mb_yaml_write_quoted(f, cl->op);
            fprintf(f, ", group: %d, bytes: %.0f B, time: %.6g us, busbw: %.6g GB/s, dtype: ", cl->group, cl->bytes,
                    cl->time_s * 1e6, cl->busbw / 1e9);
            mb_yaml_write_quoted(f, cl->dtype);
            fprintf(f, ", instances: %ld, source: \"NCCL kernel with collective args in %s\"}\n", cl->instances,
                    p->file ? p->file : "");
        }
    }
    if (p->host_gaps >= MB_PROF_MIN_HOST_GAPS && p->host_launch_s > 0) {
        fprintf(f, "  launch: {time: %.6g us, source: ", p->host_launch_s * 1e6);
        char src[400];
        snprintf(src, sizeof src,
                 "Kineto %s: mean host gap between %ld consecutive kernel launches on thread %ld/%ld (median %.6g "
                 "us; gaps holding a synchronizing call left out)",
                 p->file ? p->file : "", p->host_gaps, p->host_pid, p->host_tid, p->host_launch_med_s * 1e6);
        mb_yaml_write_quoted(f, src);
        fprintf(f, "}\n");
    }
    fprintf(f, "  summary:   # per kernel class: distinct kernels, instances, total GPU time\n");
    for (int k = 0; k < MB_KC_COUNT; k++)
        if (p->cls_kernels[k])
            fprintf(f, "    - {class: %s, kernels: %ld, instances: %ld, time: %.6g ms}\n", mb_prof_kclass_name(k),
                    p->cls_kernels[k], p->cls_instances[k], p->cls_time_s[k] * 1e3);
    if (p->cls_kernels[MB_KC_UNKNOWN]) {
        fprintf(f, "  unknown_kernels:\n");
        for (size_t i = 0; i < p->n_kernels; i++)
            if (p->kernels[i].cls == MB_KC_UNKNOWN) {
                char *s = mb_prof__short("", p->kernels[i].name, "");
                fprintf(f, "    - ");
                mb_yaml_write_quoted(f, s);
                fputc('\n', f);
                mb_free(s);
            }
    }
    if (fflush(f) || ferror(f))
        return mb_err_set(err, NULL, 0, 0, "write error: %s", strerror(errno));
    return 0;
}

static int mb_prof__by_time_desc(const void *a, const void *b)
{
    const struct mb_prof_kernel *x = *(const struct mb_prof_kernel *const *)a, *y = *(const struct mb_prof_kernel *const *)b;
    return x->total_s > y->total_s ? -1 : x->total_s < y->total_s;
}

/* nsys: the kernels left without a shape (k->noshape): launches, share of the GPU time, the 5
 * largest by time. */
static void mb_prof__summary_noshape(const struct mb_prof *p, FILE *f)
{
    const struct mb_prof_kernel **ks = mb_calloc(p->n_kernels + 1, sizeof *ks);
    size_t n = 0;
    long inst = 0;
    double t = 0;
    for (size_t i = 0; i < p->n_kernels; i++)
        if (p->kernels[i].noshape) {
            ks[n++] = &p->kernels[i];
            inst += p->kernels[i].instances;
            t += p->kernels[i].total_s;
        }
    if (n) {
        qsort(ks, n, sizeof *ks, mb_prof__by_time_desc);
        fprintf(f, "  (%ld launches, %.1f%% of the GPU time; the largest, for a shapes file:)\n", inst,
                p->total_s > 0 ? 100 * t / p->total_s : 0.0);
        for (size_t i = 0; i < n && i < 5; i++) {
            char suffix[96];
            snprintf(suffix, sizeof suffix, "  [line %d, %.4g ms]", ks[i]->line, ks[i]->total_s * 1e3);
            char *s = mb_prof__short("  ", ks[i]->name, suffix);
            fprintf(f, "%s\n", s);
            mb_free(s);
        }
    }
    mb_free(ks);
}

void mb_prof_write_summary(const struct mb_prof *p, FILE *f)
{
    fprintf(f, "%s: %zu kernels, %.6g ms GPU kernel time\n", p->file, p->n_kernels, p->total_s * 1e3);
    fprintf(f, "%-13s %8s %10s %12s %7s\n", "class", "kernels", "instances", "time_ms", "share");
    for (int k = 0; k < MB_KC_COUNT; k++)
        if (p->cls_kernels[k])
            fprintf(f, "%-13s %8ld %10ld %12.4f %6.1f%%\n", mb_prof_kclass_name(k), p->cls_kernels[k],
                    p->cls_instances[k], p->cls_time_s[k] * 1e3,
                    p->total_s > 0 ? 100.0 * p->cls_time_s[k] / p->total_s : 0.0);
    fprintf(f, "points: %zu (gemm/grouped/attention with a shape), collectives: %zu\n", p->n_points, p->n_coll);
    if (p->host_launches) {
        fprintf(f, "host: %ld kernel launches on thread %ld/%ld, %ld gaps used", p->host_launches, p->host_pid,
                p->host_tid, p->host_gaps);
        if (p->host_gaps >= MB_PROF_MIN_HOST_GAPS && p->host_launch_s > 0)
            fprintf(f, ": %.4g us per launch (median %.4g us) -> measured.launch\n", p->host_launch_s * 1e6,
                    p->host_launch_med_s * 1e6);
        else if (p->host_gaps >= MB_PROF_MIN_HOST_GAPS)
            fprintf(f, ": every gap is 0 (launches at one time stamp?): no host time per launch written\n");
        else
            fprintf(f, ": too few to estimate the host time per launch (need %d)\n", MB_PROF_MIN_HOST_GAPS);
    }
    if (p->n_noshape)
        fprintf(f, "kernels of a shaped class without a shape: %zu\n", p->n_noshape);
    mb_prof__summary_noshape(p, f);
    if (p->n_unused_shapes)
        fprintf(f, "shape rules that matched no kernel: %zu\n", p->n_unused_shapes);
    if (p->cls_kernels[MB_KC_UNKNOWN]) {
        fprintf(f, "unknown kernels: %ld (counted under 'unknown'; add a rule or ignore)\n",
                p->cls_kernels[MB_KC_UNKNOWN]);
        for (size_t i = 0; i < p->n_kernels; i++)
            if (p->kernels[i].cls == MB_KC_UNKNOWN) {
                char *s = mb_prof__short("  ", p->kernels[i].name, "");
                fprintf(f, "%s\n", s);
                mb_free(s);
            }
    }
}
