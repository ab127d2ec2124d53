/*
 * mb_megatron_log.c -- what a Megatron-LM training log says beyond its
 * arguments block (mb_megatron.h): the values Python prints for enums and
 * torch dtypes, made the names the import reads, and the iteration lines,
 * reduced to the median steady-state step time and throughput.
 *
 * Formats, from NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553:
 *  - megatron/training/arguments.py `_print_args`: `'  {} {} {}'.format(arg,
 *    dots, value)`, i.e. str(value): an enum member prints as `Class.member`
 *    (AttnBackend.auto, megatron/core/transformer/enums.py), a list of them as
 *    its repr `[<CudaGraphModule.attn: 1>]`, a torch dtype as `torch.bfloat16`
 *    (validate_args maps --main-grads-dtype etc. through dtype_map:
 *    fp32 -> torch.float32, bf16 -> torch.bfloat16, fp16 -> torch.float16,
 *    fp8 -> torch.uint8).
 *  - megatron/training/training.py `training_log`: ` [date] iteration
 *    {:8d}/{:8d} | consumed samples: ... | elapsed time per iteration (ms):
 *    {:.1f} | throughput per GPU (TFLOP/s/GPU): {:.1f} | ... | global batch
 *    size: {:5d} | ... | number of skipped iterations: {:3d} | number of nan
 *    iterations: {:3d} |` (throughput only under --log-throughput); each line
 *    averages the log_interval iterations since the one before.
 */
#include "megatron_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ values */

/* `torch.bfloat16` -> "bf16" (dtype_map of arguments.py read backwards); NULL when not a dtype it maps. */
static const char *mb_mgl__dtype(const char *v)
{
    static const char *const map[][2] = {{"torch.float32", "fp32"}, {"torch.bfloat16", "bf16"},
                                         {"torch.float16", "fp16"}, {"torch.uint8", "fp8"}, {NULL, NULL}};
    for (int i = 0; map[i][0]; i++)
        if (!strcmp(v, map[i][0]))
            return map[i][1];
    return NULL;
}

int mb_megatron_log_value(const char *v, char *out, size_t n)
{
    const char *d = mb_mgl__dtype(v);
    if (d) {
        snprintf(out, n, "%s", d);
        return 1;
    }
    /* `Class.member` (str) or `<Class.member: value>` (repr): Class an identifier
     * starting upper case, member an identifier */
    const char *p = v + (v[0] == '<');
    if (!isupper((unsigned char)*p))
        return 0;
    const char *q = p;
    while (isalnum((unsigned char)*q) || *q == '_')
        q++;
    if (*q != '.')
        return 0;
    const char *m = ++q;
    while (isalnum((unsigned char)*q) || *q == '_')
        q++;
    if (q == m || isdigit((unsigned char)*m))
        return 0;
    if (v[0] == '<' ? !(q[0] == ':' && q[strlen(q) - 1] == '>') : *q != '\0')
        return 0;
    snprintf(out, n, "%.*s", (int)(q - m), m);
    return 1;
}

/* ------------------------------------------------------------ iteration lines */

/* The number after `label` in line (NULL end: to the line's end), as strtod reads it; 0 with the
 * value, 1 when the label is absent, -1 (column in *col) when what follows is no number. */
static int mb_mgl__field(const char *line, size_t len, const char *label, double *out, int *col)
{
    size_t ll = strlen(label);
    for (size_t i = 0; i + ll <= len; i++) {
        if (memcmp(line + i, label, ll))
            continue;
        const char *s = line + i + ll;
        while (*s == ' ')
            s++;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        *col = (int)(s - line) + 1;
        if (end == s || errno || !isfinite(v) || (*end != ' ' && *end != '|' && *end != '\n' && *end))
            return -1;
        *out = v;
        return 0;
    }
    return 1;
}

/* Largest iteration number an iteration line may carry: above any training run (10^15 steps), far
 * below where the warm-up arithmetic on it could overflow a long. */
#define MB_MGL_MAX_ITER 1000000000000000L

/* An iteration line: ` iteration       N/       M |` with N, M digits. 1 with *it filled, 0 when the
 * line is none, -1 with err when it is one whose time is not a number. */
static int mb_mgl__iter_line(const char *file, const char *line, size_t len, int lineno,
                             struct mb_megatron_iter *it, struct mb_err *err)
{
    const char *at = NULL;
    for (size_t i = 0; i + 11 <= len && !at; i++)
        if (!memcmp(line + i, " iteration ", 11))
            at = line + i + 11;
    if (!at)
        return 0;
    while (*at == ' ')
        at++;
    char *end;
    errno = 0;
    long n = strtol(at, &end, 10);
    if (end == at || *end != '/')
        return 0;
    if (errno == ERANGE || n < 0 || n > MB_MGL_MAX_ITER) /* strtol saturates: a garbled count read as LONG_MAX */
        return mb_err_set(err, file, lineno, (int)(at - line) + 1, "iteration number '%.*s' is out of range: expected "
                          "0 to %.0e (Megatron-LM's training_log prints the iteration count)", (int)(end - at > 40 ? 40 : end - at),
                          at, (double)MB_MGL_MAX_ITER);
    const char *t = end + 1;
    while (*t == ' ')
        t++;
    long total = strtol(t, &end, 10);
    if (end == t || strncmp(end, " |", 2))
        return 0;
    memset(it, 0, sizeof *it);
    it->iteration = n;
    it->line = lineno;
    it->tflops = -1;
    it->gbs = -1;
    (void)total;
    struct {
        const char *label;
        double *to;
        int required;
    } f[] = {{"elapsed time per iteration (ms):", &it->ms, 1},
             {"throughput per GPU (TFLOP/s/GPU):", &it->tflops, 0},
             {"global batch size:", &it->gbs, 0},
             {"number of skipped iterations:", &it->skipped, 0},
             {"number of nan iterations:", &it->nan, 0}};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        int col = 0, rc = mb_mgl__field(line, len, f[k].label, f[k].to, &col);
        if (rc < 0)
            return mb_err_set(err, file, lineno, col, "'%s' is not followed by a number (Megatron-LM's "
                              "training_log prints one)", f[k].label);
        if (rc > 0 && f[k].required)
            return mb_err_set(err, file, lineno, (int)(at - line) + 1, "iteration %ld: no 'elapsed time per "
                              "iteration (ms):' on the line (Megatron-LM's training_log prints it on every "
                              "iteration line)", n);
    }
    if (it->ms <= 0)
        return mb_err_set(err, file, lineno, 1, "iteration %ld: elapsed time per iteration %.17g ms; expected "
                          "a positive time", n, it->ms);
    return 1;
}

int mb_megatron_log_iterations(const char *file, const char *buf, struct mb_megatron_iter **out, int *n,
                               struct mb_err *err)
{
    int cap = 0;
    *out = NULL;
    *n = 0;
    int lineno = 1;
    for (const char *p = buf; *p; lineno++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        struct mb_megatron_iter it;
        int rc = mb_mgl__iter_line(file, p, len, lineno, &it, err);
        if (rc < 0) {
            mb_free(*out);
            *out = NULL;
            *n = 0;
            return -1;
        }
        if (rc > 0) {
            if (*n == cap)
                *out = mb_realloc(*out, (size_t)(cap = cap ? 2 * cap : 32) * sizeof **out);
            (*out)[(*n)++] = it;
        }
        p = nl ? nl + 1 : p + len;
    }
    return 0;
}

/* ------------------------------------------------------------ steady state */

static int mb_mgl__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v): the middle value, or the mean of the two middle ones. */
static double mb_mgl__median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, mb_mgl__cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int mb_megatron_steady(const struct mb_megatron_iter *it, int n, struct mb_megatron_measured *out)
{
    memset(out, 0, sizeof *out);
    out->lines = n;
    out->tflops = -1;
    if (n == 0)
        return -1;
    long last = it[n - 1].iteration;
    out->warmup_to = it[0].iteration; /* the first line: iteration 1's start-up is in it */
    long tenth = last / 10 + (last % 10 > 0); /* ceil(last / 10), no overflow */
    if (tenth > out->warmup_to)
        out->warmup_to = tenth;
    double gbs = it[n - 1].gbs;
    double *ms = mb_malloc((size_t)n * sizeof *ms), *tf = mb_malloc((size_t)n * sizeof *tf);
    int k = 0, ktf = 0;
    for (int i = 0; i < n; i++) {
        const struct mb_megatron_iter *x = &it[i];
        if (x->iteration <= out->warmup_to)
            continue;
        if (x->skipped > 0 || x->nan > 0 || x->gbs != gbs) {
            out->dropped++;
            continue;
        }
        if (!k)
            out->from = x->iteration;
        out->to = x->iteration;
        ms[k++] = x->ms;
        if (x->tflops >= 0)
            tf[ktf++] = x->tflops;
    }
    out->used = k;
    if (k) {
        out->step_ms = mb_mgl__median(ms, k);
        if (ktf == k) /* throughput on every line used (--log-throughput), else none */
            out->tflops = mb_mgl__median(tf, ktf);
    }
    mb_free(ms);
    mb_free(tf);
    return k ? 0 : -1;
}

/* ------------------------------------------------------------ the measured block */

/* A log's iteration lines -> the scenario's measured block (step time, and
 * model TFLOP/s/GPU when logged), with a note saying which lines it is the
 * median of; a note, and no block, when no steady-state line is left. */
int mb_mgi__measured(struct mb_mgi *m)
{
    const struct mb_megatron_args *a = m->a;
    struct mb_megatron_measured r;
    if (!a->log_block || a->n_iters == 0)
        return 0;
    if (mb_megatron_steady(a->iters, a->n_iters, &r)) {
        mb_mgi__note(m, NULL, "no measured block: none of the %d iteration lines is past the warm-up "
                     "(iterations up to %ld) with no skipped or nan iteration and the final global batch size",
                     r.lines, r.warmup_to);
        return 0;
    }
    char text[64], src[256];
    snprintf(text, sizeof text, "%.6g", r.step_ms / 1000); /* bare = seconds */
    if (mb_mgi__set(m, "measured.step_time_s", text, NULL))
        return -1;
    if (r.tflops >= 0) {
        snprintf(text, sizeof text, "%.6g", r.tflops);
        if (mb_mgi__set(m, "measured.model_tflops_per_gpu", text, NULL))
            return -1;
    }
    const char *base = strrchr(a->file, '/');
    snprintf(src, sizeof src, "%.120s: median of %d iteration lines (iterations %ld-%ld); warm-up up to "
             "iteration %ld not used", base ? base + 1 : a->file, r.used, r.from, r.to, r.warmup_to);
    if (mb_mgi__set(m, "measured.source", src, NULL))
        return -1;
    char thr[64] = " (no throughput logged: --log-throughput)";
    if (r.tflops >= 0)
        snprintf(thr, sizeof thr, ", %.6g TFLOP/s/GPU", r.tflops);
    mb_mgi__note(m, NULL, "measured: step time %.6g ms%s, the median of iteration lines %ld-%ld "
                 "(%d lines); warm-up lines up to iteration %ld not used%s", r.step_ms, thr,
                 r.from, r.to, r.used, r.warmup_to,
                 r.dropped ? ", nor lines with skipped or nan iterations or another global batch size" : "");
    return 0;
}
