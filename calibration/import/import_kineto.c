/*
 * import_kineto.c -- PyTorch profiler / Kineto Chrome traces (JSON, or gzip
 * JSON) into calibration points, collectives and a per-class time summary.
 *
 * SUMMARY: the whole trace is read through zlib (gzread passes plain files
 * through unchanged) and parsed with jansson. GPU events are `ph: X` with
 * `cat` kernel / gpu_memcpy / gpu_memset. A kernel is joined to the CPU op
 * that launched it by args["External id"] (or, when the kernel lacks it, by
 * args.correlation -> the cuda_runtime/cuda_driver launch -> its External id),
 * and the op's args["Input Dims"] / ["Input type"] / ["Concrete Inputs"] give
 * the shape: aten::mm, addmm, bmm, baddbmm, linear, _grouped_mm and the
 * scaled-dot-product / flash attention forward and backward ops. All kernels
 * of one op instance that belong to a shaped class (GEMM, grouped GEMM,
 * attention) are summed (e.g. a GEMM plus its split-K reduce), and instances
 * with the same shape are averaged into one point. NCCL kernels carry their
 * collective (Collective name, In/Out msg nelems, Group size, dtype; else
 * taken from the record_param_comms op with the same External id) and become
 * nccl-tests-style bus-bandwidth entries.
 *
 * Known limits: ops without Input Dims (record_shapes=False, or ops not in the
 * list above) only count in the summary; varlen attention ([T, H, D] inputs)
 * is not shaped; the causal flag comes from Concrete Inputs and defaults to
 * non-causal when the trace does not record it.
 */
#include "mb_import.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mb_input.h"

#define MB_KIN__MAX_INT 9007199254740992.0 /* 2^53: integers a double (JSON real) holds exactly */
#define MB_KIN__MAX_GROUP (1 << 24)     /* ranks in one collective */
#define MB_KIN__MAX_ELEMS 1e15          /* elements in one message */
#define MB_KIN__MAX_DIM (1LL << 40)     /* one tensor dimension */

/* Reads a whole (possibly gzip-compressed) file into a NUL-terminated buffer. */
static char *mb_kin__read(const char *path, size_t *len, struct mb_err *err)
{
    char *buf;
    if (mb_input_read_gz(path, "a Kineto trace (.json or .json.gz)", 0, &buf, len, err))
        return NULL;
    return buf;
}

/* ------------------------------------------------------------ indexes */

struct mb_kin__ref {
    long long key;
    size_t ev; /* index into traceEvents */
};

static int mb_kin__ref_cmp(const void *a, const void *b)
{
    long long x = ((const struct mb_kin__ref *)a)->key, y = ((const struct mb_kin__ref *)b)->key;
    return (x > y) - (x < y);
}

static const struct mb_kin__ref *mb_kin__find(const struct mb_kin__ref *v, size_t n, long long key)
{
    struct mb_kin__ref k = {key, 0};
    return n ? bsearch(&k, v, n, sizeof *v, mb_kin__ref_cmp) : NULL;
}

static int mb_kin__int_arg(json_t *args, const char *key, long long *out)
{
    json_t *v = json_object_get(args, key);
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_real(v) && mb_dbl_is_whole(json_real_value(v), -MB_KIN__MAX_INT, MB_KIN__MAX_INT)) {
        *out = (long long)json_real_value(v);
        return 1;
    }
    return 0; /* absent, or not an integer a cast keeps */
}

static const char *mb_kin__str(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ------------------------------------------------------------ shapes from ops */

static int mb_kin__prec(json_t *types, enum mb_prec *p)
{
    const char *t = json_is_array(types) ? json_string_value(json_array_get(types, 0)) : NULL;
    if (!t)
        return 0;
    if (strstr(t, "BFloat16"))
        *p = MB_PREC_BF16;
    else if (strstr(t, "Half"))
        *p = MB_PREC_FP16;
    else if (strstr(t, "Float8"))
        *p = MB_PREC_FP8;
    else if (strcmp(t, "float") == 0)
        *p = MB_PREC_FP32;
    else
        return 0;
    return 1;
}

/* Dims of input i: fills d[] (at most 8), returns the rank or -1. */
static int mb_kin__dims(json_t *dims, size_t i, double d[8])
{
    json_t *a = json_array_get(dims, i);
    if (!json_is_array(a) || json_array_size(a) > 8)
        return -1;
    for (size_t j = 0; j < json_array_size(a); j++) {
        json_t *v = json_array_get(a, j);
        if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > MB_KIN__MAX_DIM)
            return -1;
        d[j] = (double)json_integer_value(v);
    }
    return (int)json_array_size(a);
}

/* "True" at Concrete Inputs[i]. */
static int mb_kin__flag(json_t *args, size_t i)
{
    json_t *ci = json_object_get(args, "Concrete Inputs");
    const char *s = json_is_array(ci) ? json_string_value(json_array_get(ci, i)) : NULL;
    return s && strcmp(s, "True") == 0;
}

struct mb_kin__attn_op {
    const char *name;
    int bwd;
    int bshd;       /* layout [B, S, H, D] rather than [B, H, S, D] */
    int q, k;       /* input index of q (grad_out for bwd: same shape) and of k */
    int causal_at;  /* index of is_causal in Concrete Inputs */
};

static const struct mb_kin__attn_op mb_kin__attn_ops[] = {
    {"aten::_scaled_dot_product_flash_attention", 0, 0, 0, 1, 4},
    {"aten::_scaled_dot_product_efficient_attention", 0, 0, 0, 1, 6},
    {"aten::_scaled_dot_product_cudnn_attention", 0, 0, 0, 1, 6},
    {"aten::_flash_attention_forward", 0, 1, 0, 1, 8},
    {"aten::_scaled_dot_product_flash_attention_backward", 1, 0, 1, 2, 11},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, 0, 1, 2, 11},
    {"aten::_flash_attention_backward", 1, 1, 1, 2, 11},
    {NULL, 0, 0, 0, 0, 0}};

/* Shape of one CPU op from its args; 1 when the op is one we understand. */
static int mb_kin__op_shape(const char *op, json_t *args, struct mb_prof_shape *s)
{
    json_t *dims = json_object_get(args, "Input Dims");
    if (!op || !json_is_array(dims))
        return 0;
    memset(s, 0, sizeof *s);
    s->batch = 1;
    if (!mb_kin__prec(json_object_get(args, "Input type"), &s->prec))
        return 0;
    double a[8], b[8];
    int ra, rb;
    if (strcmp(op, "aten::mm") == 0 || strcmp(op, "aten::addmm") == 0) {
        size_t o = op[6] == 'a'; /* addmm: (bias, mat1, mat2) */
        ra = mb_kin__dims(dims, o, a);
        rb = mb_kin__dims(dims, o + 1, b);
        if (ra != 2 || rb != 2 || a[1] != b[0])
            return 0;
        s->op = MB_PROF_GEMM;
        s->m = a[0], s->k = a[1], s->n = b[1];
        return 1;
    }
    if (strcmp(op, "aten::bmm") == 0 || strcmp(op, "aten::baddbmm") == 0) {
        size_t o = op[6] == 'b' && op[7] == 'a'; /* baddbmm: (input, batch1, batch2) */
        ra = mb_kin__dims(dims, o, a);
        rb = mb_kin__dims(dims, o + 1, b);
        if (ra != 3 || rb != 3 || a[0] != b[0] || a[2] != b[1])
            return 0;
        s->op = MB_PROF_GEMM;
        s->batch = a[0], s->m = a[1], s->k = a[2], s->n = b[2];
        return 1;
    }
    if (strcmp(op, "aten::linear") == 0) { /* (input [..., K], weight [N, K], bias) */
        ra = mb_kin__dims(dims, 0, a);
        rb = mb_kin__dims(dims, 1, b);
        if (ra < 1 || rb != 2 || a[ra - 1] != b[1])
            return 0;
        s->op = MB_PROF_GEMM;
        s->m = 1;
        for (int i = 0; i + 1 < ra; i++)
            s->m *= a[i];
        s->k = b[1], s->n = b[0];
        return 1;
    }
    if (strcmp(op, "aten::_grouped_mm") == 0) { /* (mat_a [T, K], mat_b [G, K, N], offs [G]) */
        ra = mb_kin__dims(dims, 0, a);
        rb = mb_kin__dims(dims, 1, b);
        if (ra != 2 || rb != 3 || a[1] != b[1])
            return 0;
        s->op = MB_PROF_GROUPED;
        s->groups = b[0], s->tokens = a[0] / b[0], s->k = b[1], s->n = b[2];
        return 1;
    }
    for (const struct mb_kin__attn_op *t = mb_kin__attn_ops; t->name; t++) {
        if (strcmp(op, t->name) != 0)
            continue;
        ra = mb_kin__dims(dims, (size_t)t->q, a);
        rb = mb_kin__dims(dims, (size_t)t->k, b);
        if (ra != 4 || rb != 4 || a[3] > 4096) /* a head dim that fits the int it is stored in */
            return 0;
        s->op = MB_PROF_ATTN;
        s->bwd = t->bwd;
        s->batch_heads = a[0] * (t->bshd ? a[2] : a[1]);
        s->seq = t->bshd ? a[1] : a[2];
        s->seq_kv = t->bshd ? b[1] : b[2];
        s->head_dim = (int)a[3];
        s->causal = mb_kin__flag(args, (size_t)t->causal_at);
        if (s->prec == MB_PREC_FP32)
            return 0;
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ collectives */

static double mb_kin__dtype_bytes(const char *t)
{
    static const struct {
        const char *name;
        double bytes;
    } tab[] = {{"Float", 4},  {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4},  {"Long", 8},
               {"Short", 2},  {"Byte", 1},   {"Char", 1}, {"Bool", 1},     {"Float8_e4m3fn", 1},
               {"Float8_e5m2", 1}, {NULL, 0}};
    for (size_t i = 0; t && tab[i].name; i++)
        if (strcmp(t, tab[i].name) == 0)
            return tab[i].bytes;
    return 0;
}

/*
 * nccl-tests convention: size = In msg bytes (Out msg bytes for all-gather),
 * busbw = size / time * factor, factor 2(n-1)/n all-reduce, (n-1)/n
 * all-gather / reduce-scatter / all-to-all, 1 otherwise.
 */
/* A collective from an NCCL kernel's (or its op's) args: 1, 0 when the args
 * name none, -1 with err set when they give a group size or element count
 * out of range (a negative count would be written as negative bandwidth). */
static int mb_kin__coll(json_t *args, double dur_s, struct mb_prof_coll *c, const char *path, size_t ev,
                        struct mb_err *err)
{
    const char *name = mb_kin__str(args, "Collective name");
    const char *dtype = mb_kin__str(args, "dtype");
    long long in = 0, outn = 0, group = 0;
    if (!name || !mb_kin__int_arg(args, "In msg nelems", &in) || !mb_kin__int_arg(args, "Group size", &group))
        return 0;
    mb_kin__int_arg(args, "Out msg nelems", &outn);
    if (group < 1 || group > MB_KIN__MAX_GROUP)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].args.Group size: %lld is not in [1, %d]", ev, group,
                          MB_KIN__MAX_GROUP);
    if (in < 0 || outn < 0 || in > MB_KIN__MAX_ELEMS || outn > MB_KIN__MAX_ELEMS)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].args: message element counts %lld, %lld are not in "
                          "[0, %.0e]", ev, in, outn, MB_KIN__MAX_ELEMS);
    double eb = mb_kin__dtype_bytes(dtype);
    if (eb <= 0 || dur_s <= 0)
        return 0;
    char norm[32];
    size_t j = 0;
    for (const char *q = name; *q && j + 1 < sizeof norm; q++)
        if (*q != '_')
            norm[j++] = (char)tolower((unsigned char)*q);
    norm[j] = '\0';
    double n = (double)group, factor = 1;
    double elems = (double)in;
    if (strcmp(norm, "allreduce") == 0)
        factor = 2 * (n - 1) / n;
    else if (strcmp(norm, "allgather") == 0 || strcmp(norm, "allgatherbase") == 0) {
        factor = (n - 1) / n;
        elems = outn > 0 ? (double)outn : (double)in * n;
    } else if (strncmp(norm, "reducescatter", 13) == 0 || strncmp(norm, "alltoall", 8) == 0)
        factor = (n - 1) / n;
    memset(c, 0, sizeof *c);
    snprintf(c->op, sizeof c->op, "%s", name);
    snprintf(c->dtype, sizeof c->dtype, "%s", dtype);
    c->group = (int)group;
    c->bytes = elems * eb;
    c->time_s = dur_s;
    c->busbw = c->bytes / dur_s * factor;
    c->instances = 1;
    return 1;
}

static void mb_kin__add_coll(struct mb_prof *p, const struct mb_prof_coll *c)
{
    for (size_t i = 0; i < p->n_coll; i++) {
        struct mb_prof_coll *o = &p->coll[i];
        if (strcmp(o->op, c->op) == 0 && strcmp(o->dtype, c->dtype) == 0 && o->group == c->group &&
            o->bytes == c->bytes) {
            /* mean time over instances; busbw from the mean time */
            o->time_s = (o->time_s * (double)o->instances + c->time_s) / (double)(o->instances + 1);
            o->busbw = o->busbw * (double)o->instances / (double)(o->instances + 1) +
                       c->busbw / (double)(o->instances + 1);
            o->instances++;
            return;
        }
    }
    p->coll = mb_realloc(p->coll, (p->n_coll + 1) * sizeof *p->coll);
    p->coll[p->n_coll++] = *c;
}

/* ------------------------------------------------------------ import */

struct mb_kin__inst { /* one shaped kernel event */
    long long ext;
    struct mb_prof_shape shape;
    double dur_s;
    const char *kernel;
};

static int mb_kin__inst_ext_cmp(const void *a, const void *b)
{
    long long x = ((const struct mb_kin__inst *)a)->ext, y = ((const struct mb_kin__inst *)b)->ext;
    return (x > y) - (x < y);
}

static int mb_kin__shape_eq(const struct mb_prof_shape *a, const struct mb_prof_shape *b)
{
    return a->op == b->op && a->prec == b->prec && a->m == b->m && a->n == b->n && a->k == b->k &&
           a->batch == b->batch && a->groups == b->groups && a->tokens == b->tokens &&
           a->batch_heads == b->batch_heads && a->seq == b->seq && a->seq_kv == b->seq_kv &&
           a->head_dim == b->head_dim && a->causal == b->causal && a->bwd == b->bwd;
}

/* ------------------------------------------------------------ host time per launch */

struct mb_kin__call {
    long long pid, tid;
    double ts, dur; /* microseconds */
};

static int mb_kin__call_cmp(const void *a, const void *b)
{
    const struct mb_kin__call *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int mb_kin__dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double mb_kin__median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, mb_kin__dbl_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int mb_kin__is_launch(const char *name)
{
    static const char *const launch[] = {"cudaLaunchKernel",  "cudaLaunchKernelExC", "cuLaunchKernel",
                                         "cuLaunchKernelEx",  "cudaLaunchCooperativeKernel",
                                         "cudaGraphLaunch",   NULL};
    for (size_t i = 0; launch[i]; i++)
        if (strcmp(name, launch[i]) == 0)
            return 1;
    return 0;
}

static int mb_kin__is_sync(const char *name)
{
    return strstr(name, "Synchronize") != NULL || strcmp(name, "cudaMemcpy") == 0 ||
           (strncmp(name, "cuMemcpy", 8) == 0 && strstr(name, "Async") == NULL);
}

/* A launch or synchronizing runtime/driver call (event i): its thread and
 * interval. A pid or tid that is not a non-negative integer, or a missing,
 * non-numeric, negative or non-finite ts or dur, is an error (-1), as for
 * kernels: such an event cannot be placed on a thread's timeline. */
static int mb_kin__call(json_t *e, size_t i, const char *name, struct mb_kin__call *c, const char *path,
                        struct mb_err *err)
{
    json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
    json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
    if (!json_is_integer(pid) || json_integer_value(pid) < 0)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].pid: missing or not a non-negative integer (%s)", i,
                          name);
    if (!json_is_integer(tid) || json_integer_value(tid) < 0)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].tid: missing or not a non-negative integer (%s)", i,
                          name);
    if (!json_is_number(ts) || !isfinite(json_number_value(ts)) || json_number_value(ts) < 0)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].ts: missing or not a non-negative number (%s)", i,
                          name);
    if (!json_is_number(dur) || !isfinite(json_number_value(dur)) || json_number_value(dur) < 0)
        return mb_err_set(err, path, 0, 0, "$.traceEvents[%zu].dur: missing or not a non-negative number (%s)", i,
                          name);
    *c = (struct mb_kin__call){json_integer_value(pid), json_integer_value(tid), json_number_value(ts),
                               json_number_value(dur)};
    return 1;
}

/* Gaps above this (microseconds) are not a per-kernel host cost (data
 * loading, logging, the step boundary): left out of the mean. It is also the
 * largest `launch` a calibration table accepts. */
#define MB_KIN_MAX_GAP_US 1000.0

/* Fill p->host_*: see mb_prof_kineto in mb_import.h. */
static int mb_kin__host(json_t *evs, struct mb_prof *p, const char *path, struct mb_err *err)
{
    size_t nev = json_array_size(evs), nl = 0, ns = 0;
    struct mb_kin__call *l = mb_malloc((nev ? nev : 1) * sizeof *l), *sy = mb_malloc((nev ? nev : 1) * sizeof *sy);
    for (size_t i = 0; i < nev; i++) {
        json_t *e = json_array_get(evs, i);
        const char *cat = mb_kin__str(e, "cat"), *name = mb_kin__str(e, "name"), *ph = mb_kin__str(e, "ph");
        if (!cat || !name || !ph || strcmp(ph, "X") != 0 ||
            (strcmp(cat, "cuda_runtime") != 0 && strcmp(cat, "cuda_driver") != 0))
            continue;
        int launch = mb_kin__is_launch(name), sync = !launch && mb_kin__is_sync(name);
        if (!launch && !sync)
            continue;
        struct mb_kin__call c;
        int rc = mb_kin__call(e, i, name, &c, path, err);
        if (rc < 0) {
            mb_free(l);
            mb_free(sy);
            return -1;
        }
        if (launch)
            l[nl++] = c;
        else
            sy[ns++] = c;
    }
    qsort(l, nl, sizeof *l, mb_kin__call_cmp);
    qsort(sy, ns, sizeof *sy, mb_kin__call_cmp);
    /* the thread with the most launches (ties: the first in (pid, tid) order) */
    size_t best = 0, best_n = 0;
    for (size_t i = 0; i < nl;) {
        size_t j = i;
        while (j < nl && l[j].pid == l[i].pid && l[j].tid == l[i].tid)
            j++;
        if (j - i > best_n) {
            best = i;
            best_n = j - i;
        }
        i = j;
    }
    if (best_n > 0) {
        const struct mb_kin__call *t = l + best;
        double *v = mb_malloc(best_n * sizeof *v);
        for (size_t i = 0; i < best_n; i++)
            v[i] = t[i].dur;
        double med_call = mb_kin__median(v, best_n);
        size_t ng = 0, k = 0;
        double sum = 0;
        for (size_t i = 0; i + 1 < best_n; i++) {
            /* any synchronizing call of this thread starting inside [ts_i, ts_i+1) */
            while (k < ns && (sy[k].pid < t->pid || (sy[k].pid == t->pid && sy[k].tid < t->tid) ||
                              (sy[k].pid == t->pid && sy[k].tid == t->tid && sy[k].ts < t[i].ts)))
                k++;
            if (k < ns && sy[k].pid == t->pid && sy[k].tid == t->tid && sy[k].ts < t[i + 1].ts)
                continue;
            double g = t[i + 1].ts - t[i].ts - fmax(0.0, t[i].dur - med_call);
            if (g > MB_KIN_MAX_GAP_US)
                continue;
            v[ng++] = g > 0 ? g : 0;
            sum += g > 0 ? g : 0;
        }
        p->host_launches = (long)best_n;
        p->host_gaps = (long)ng;
        p->host_pid = t->pid;
        p->host_tid = t->tid;
        if (ng) {
            p->host_launch_s = sum / (double)ng * 1e-6;
            p->host_launch_med_s = mb_kin__median(v, ng) * 1e-6;
        }
        mb_free(v);
    }
    mb_free(l);
    mb_free(sy);
    return 0;
}

/* GPU type from deviceProperties[0].name ("NVIDIA A100-PG509-200" -> "A100"); the name as
 * written goes to p->gpu_name. */
static void mb_kin__gpu(json_t *root, struct mb_prof *p)
{
    static const char *const known[] = {"GB300", "GB200", "B300", "B200", "H200", "H100", "H800", "A100", NULL};
    const char *name = mb_kin__str(json_array_get(json_object_get(root, "deviceProperties"), 0), "name");
    char *out = p->gpu;
    size_t len = sizeof p->gpu;
    snprintf(p->gpu_name, sizeof p->gpu_name, "%s", name ? name : "");
    out[0] = '\0';
    for (size_t i = 0; name && known[i]; i++)
        if (strstr(name, known[i])) {
            snprintf(out, len, "%s", strcmp(known[i], "H800") == 0 ? "H100" : known[i]);
            return;
        }
}

/* One trace being imported (mb_prof_kineto). */
struct mb_kin__scan {
    json_t *evs;                          /* $.traceEvents */
    const struct mb_kin__ref *ops, *rts;  /* cpu_op events by External id; runtime/driver calls by correlation */
    size_t nops, nrts;
    struct mb_prof *p;
    struct mb_kin__inst *inst;            /* the shaped kernel events */
    size_t ninst;
    const char *path;
    struct mb_err *err;
};

/* Indexes the cpu_op events by External id (ops) and the runtime/driver calls by correlation (rts), sorted. */
static void mb_kin__index(json_t *evs, struct mb_kin__ref *ops, size_t *nops, struct mb_kin__ref *rts,
                          size_t *nrts)
{
    size_t nev = json_array_size(evs);
    for (size_t i = 0; i < nev; i++) {
        json_t *e = json_array_get(evs, i);
        const char *cat = mb_kin__str(e, "cat");
        json_t *args = json_object_get(e, "args");
        long long key;
        if (!cat || !json_is_object(args))
            continue;
        if (strcmp(cat, "cpu_op") == 0 && mb_kin__int_arg(args, "External id", &key))
            ops[(*nops)++] = (struct mb_kin__ref){key, i};
        else if ((strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0) &&
                 mb_kin__int_arg(args, "correlation", &key))
            rts[(*nrts)++] = (struct mb_kin__ref){key, i};
    }
    qsort(ops, *nops, sizeof *ops, mb_kin__ref_cmp);
    qsort(rts, *nrts, sizeof *rts, mb_kin__ref_cmp);
}

/* Counts GPU event i (dur_s, class cls) under its kernel name and in the class totals; @return its kernel. */
static struct mb_prof_kernel *mb_kin__tally(struct mb_prof *p, const char *name, enum mb_kclass cls, size_t i,
                                            double dur_s)
{
    struct mb_prof_kernel *k = NULL;
    for (size_t j = 0; j < p->n_kernels; j++)
        if (strcmp(p->kernels[j].name, name) == 0)
            k = &p->kernels[j];
    if (!k) {
        p->kernels = mb_realloc(p->kernels, (p->n_kernels + 1) * sizeof *p->kernels);
        k = &p->kernels[p->n_kernels++];
        memset(k, 0, sizeof *k);
        k->name = mb_strdup(name);
        k->cls = cls;
        k->line = (int)i;
        p->cls_kernels[cls]++;
    }
    k->instances++;
    k->total_s += dur_s;
    k->avg_s = k->med_s = k->total_s / (double)k->instances;
    p->cls_instances[cls]++;
    p->cls_time_s[cls] += dur_s;
    p->total_s += dur_s;
    return k;
}

/* The CPU op that launched a kernel (its args): External id, else correlation -> runtime call ->
 * External id. *ext gets the id, *opr the op's index entry (NULL: none); @return the op, or NULL. */
static json_t *mb_kin__launcher(const struct mb_kin__scan *S, json_t *args, long long *ext,
                                const struct mb_kin__ref **opr)
{
    long long corr = 0;
    int have_ext = mb_kin__int_arg(args, "External id", ext);
    if (!have_ext && mb_kin__int_arg(args, "correlation", &corr)) {
        const struct mb_kin__ref *r = mb_kin__find(S->rts, S->nrts, corr);
        if (r)
            have_ext = mb_kin__int_arg(json_object_get(json_array_get(S->evs, r->ev), "args"), "External id", ext);
    }
    *opr = have_ext ? mb_kin__find(S->ops, S->nops, *ext) : NULL;
    return *opr ? json_array_get(S->evs, (*opr)->ev) : NULL;
}

/* Kernel event e (index i, class cls): a collective, or a GEMM / attention instance with its op's shape.
 * @return 0, or -1 with err set. */
static int mb_kin__kernel(struct mb_kin__scan *S, json_t *e, size_t i, enum mb_kclass cls, double dur_s,
                          const char *kname)
{
    struct mb_prof *p = S->p;
    json_t *args = json_object_get(e, "args");
    long long ext = 0;
    const struct mb_kin__ref *opr;
    json_t *op = mb_kin__launcher(S, args, &ext, &opr);

    if (cls == MB_KC_NCCL) {
        struct mb_prof_coll c;
        int got = mb_kin__coll(args, dur_s, &c, S->path, i, S->err);
        if (!got && op)
            got = mb_kin__coll(json_object_get(op, "args"), dur_s, &c, S->path, opr->ev, S->err);
        if (got < 0)
            return -1;
        if (got)
            mb_kin__add_coll(p, &c);
        else
            p->n_noshape++;
        return 0;
    }
    if (cls != MB_KC_GEMM && cls != MB_KC_GROUPED_GEMM && cls != MB_KC_ATTN_FWD && cls != MB_KC_ATTN_BWD)
        return 0;
    struct mb_prof_shape s;
    if (!op || !mb_kin__op_shape(mb_kin__str(op, "name"), json_object_get(op, "args"), &s)) {
        p->n_noshape++;
        return 0;
    }
    S->inst = mb_realloc(S->inst, (S->ninst + 1) * sizeof *S->inst);
    S->inst[S->ninst++] = (struct mb_kin__inst){ext, s, dur_s, kname};
    return 0;
}

/* Event i of the trace: a GPU kernel, memcpy or memset is counted (a kernel also
 * read by mb_kin__kernel), anything else skipped. @return 0, or -1 with err set. */
static int mb_kin__event(struct mb_kin__scan *S, size_t i)
{
    json_t *e = json_array_get(S->evs, i);
    if (!json_is_object(e))
        return mb_err_set(S->err, S->path, 0, 0, "$.traceEvents[%zu]: expected an object", i);
    const char *cat = mb_kin__str(e, "cat"), *ph = mb_kin__str(e, "ph");
    if (!cat || !ph || strcmp(ph, "X") != 0)
        return 0;
    int is_kernel = strcmp(cat, "kernel") == 0;
    if (!is_kernel && strcmp(cat, "gpu_memcpy") != 0 && strcmp(cat, "gpu_memset") != 0)
        return 0;
    const char *name = mb_kin__str(e, "name");
    json_t *dur = json_object_get(e, "dur");
    if (!name)
        return mb_err_set(S->err, S->path, 0, 0, "$.traceEvents[%zu].name: missing or not a string (%s event)", i,
                          cat);
    if (!json_is_number(dur) || json_number_value(dur) < 0)
        return mb_err_set(S->err, S->path, 0, 0,
                          "$.traceEvents[%zu].dur: missing or not a non-negative number (%s '%.60s')", i, cat, name);
    double dur_s = json_number_value(dur) * 1e-6;
    enum mb_kclass cls = is_kernel ? mb_prof_classify(name) : MB_KC_MEMORY;
    struct mb_prof_kernel *k = mb_kin__tally(S->p, name, cls, i, dur_s);
    if (!is_kernel)
        return 0;
    return mb_kin__kernel(S, e, i, cls, dur_s, k->name);
}

/* Sums the kernels of one op instance, then averages instances of equal shape into p->points. */
static void mb_kin__points(struct mb_prof *p, struct mb_kin__inst *inst, size_t ninst)
{
    if (ninst)
        qsort(inst, ninst, sizeof *inst, mb_kin__inst_ext_cmp);
    size_t u = 0;
    for (size_t i = 0; i < ninst;) {
        size_t j = i + 1;
        double sum = inst[i].dur_s;
        while (j < ninst && inst[j].ext == inst[i].ext)
            sum += inst[j++].dur_s;
        inst[u] = inst[i];
        inst[u++].dur_s = sum;
        i = j;
    }
    for (size_t i = 0; i < u; i++) {
        struct mb_prof_point *pt = NULL;
        for (size_t j = 0; j < p->n_points; j++)
            if (mb_kin__shape_eq(&p->points[j].shape, &inst[i].shape))
                pt = &p->points[j];
        if (!pt) {
            p->points = mb_realloc(p->points, (p->n_points + 1) * sizeof *p->points);
            pt = &p->points[p->n_points++];
            memset(pt, 0, sizeof *pt);
            pt->shape = inst[i].shape;
            char cut[100];
            snprintf(cut, sizeof cut, "%.80s", inst[i].kernel);
            int l = snprintf(NULL, 0, "kineto: %s", cut);
            pt->source = mb_malloc((size_t)l + 1);
            snprintf(pt->source, (size_t)l + 1, "kineto: %s", cut);
        }
        pt->time_s += inst[i].dur_s; /* total for now */
        pt->instances++;
    }
    for (size_t j = 0; j < p->n_points; j++) {
        struct mb_prof_point *pt = &p->points[j];
        pt->time_s /= (double)pt->instances;
        pt->achieved = pt->time_s > 0 ? mb_prof_shape_flop(&pt->shape) / pt->time_s : 0;
    }
}

int mb_prof_kineto(const char *path, struct mb_prof **out, struct mb_err *err)
{
    *out = NULL;
    size_t len = 0;
    char *buf = mb_kin__read(path, &len, err);
    if (!buf)
        return -1;
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    mb_free(buf);
    if (!root)
        return mb_err_set(err, path, je.line > 0 ? je.line : 1, je.column > 0 ? je.column : 1,
                          "JSON error: %s (byte offset %d)", je.text, je.position);
    json_t *evs = json_object_get(root, "traceEvents");
    if (!json_is_object(root) || !json_is_array(evs)) {
        json_decref(root);
        return mb_err_set(err, path, 0, 0, "$.traceEvents: missing or not an array (not a Kineto/Chrome trace)");
    }
    size_t nev = json_array_size(evs);
    struct mb_kin__ref *ops = mb_calloc(nev ? nev : 1, sizeof *ops), *rts = mb_calloc(nev ? nev : 1, sizeof *rts);
    struct mb_kin__scan S;
    memset(&S, 0, sizeof S);
    S.evs = evs;
    S.path = path;
    S.err = err;
    mb_kin__index(evs, ops, &S.nops, rts, &S.nrts);
    S.ops = ops;
    S.rts = rts;

    struct mb_prof *p = S.p = mb_calloc(1, sizeof *p);
    p->file = mb_strdup(path);
    mb_kin__gpu(root, p);
    int rc = 0;
    for (size_t i = 0; i < nev && !rc; i++)
        rc = mb_kin__event(&S, i);
    if (!rc)
        mb_kin__points(p, S.inst, S.ninst);
    if (!rc)
        rc = mb_kin__host(evs, p, path, err);
    mb_free(S.inst);
    mb_free(ops);
    mb_free(rts);
    json_decref(root);
    if (rc) {
        mb_prof_free(p);
        return -1;
    }
    *out = p;
    return 0;
}
