/*
 * trace.c -- Chrome/Perfetto trace (JSON Trace Event Format) of the simulated
 * ranks: one process per pipeline stage's representative rank, a compute
 * thread, one thread per communication kind and the host launch thread.
 *
 * Slice names are stable across microbatches so that a trace can be lined up
 * with a profile op by op (`mbsim trace diff`, docs/cli.md): "L12 linear_fc1
 * fwd" (decoder layer 12), "V3 vit_qkv bwd" (ViT block 3), "ep dispatch fwd";
 * the microbatch, chunk, layer, the op alone ("op": "linear_fc1") and the
 * pass ("pass": "fwd") are args. A fused compute task is drawn as its ops one
 * after the other.
 *
 * The JSON is written as it is produced, event by event, through one small
 * buffered writer (no document tree: memory does not grow with the number of
 * events; a 3D Llama-3-70B step once took 948 MB as a jansson tree). gzip
 * (zlib) when the path ends in ".gz"; "-" writes the JSON alone to stdout.
 */
#include "step_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <unistd.h>
#include <zlib.h>

#include "mb_outfile.h"

static const char *const mb__ck_track[MB_CK_COUNT] = {"TP comm", "CP comm", "EP comm", "PP p2p", "DP comm",
                                                      "FSDP comm"};
static const char *const mb__dir_name[] = {"fwd", "bwd", "recompute"};

/* ------------------------------------------------------------ the writer */

/* Text out to a stdio stream or a gzip stream, through one buffer; the first
 * failure is kept (fail) and later writes do nothing. */
struct mb__tw {
    FILE *fp;
    gzFile gz;
    char buf[1 << 16];
    size_t n;
    int fail;
    long events; /* events written so far (the comma before each but the first) */
};

static void mb_tw__flush(struct mb__tw *w)
{
    if (w->fail || w->n == 0) {
        w->n = 0;
        return;
    }
    if (w->gz)
        w->fail = gzwrite(w->gz, w->buf, (unsigned)w->n) != (int)w->n;
    else
        w->fail = fwrite(w->buf, 1, w->n, w->fp) != w->n;
    w->n = 0;
}

/* A piece that does not fit the buffer's rest: flush, then buffer it (or
 * write it through when it is larger than the buffer). */
static void __attribute__((noinline)) mb_tw__put_slow(struct mb__tw *w, const char *s, size_t len)
{
    mb_tw__flush(w);
    if (len > sizeof w->buf) { /* never for this writer's pieces (< 512 bytes); kept correct anyway */
        if (!w->fail)
            w->fail = w->gz ? gzwrite(w->gz, s, (unsigned)len) != (int)len : fwrite(s, 1, len, w->fp) != len;
        return;
    }
    memcpy(w->buf, s, len);
    w->n = len;
}

/* Inline: most pieces are a few bytes, often literals whose length and copy
 * the compiler resolves (the out-of-line copy of every piece was a quarter
 * of a large trace's time). */
static inline void mb_tw__put(struct mb__tw *w, const char *s, size_t len)
{
    if (w->n + len > sizeof w->buf) {
        mb_tw__put_slow(w, s, len);
        return;
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

static inline void mb_tw__puts(struct mb__tw *w, const char *s)
{
    mb_tw__put(w, s, strlen(s));
}

static void mb_tw__printf(struct mb__tw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mb_tw__printf(struct mb__tw *w, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0)
        mb_tw__put(w, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* A JSON string's contents (mb_tw__esc) and the string (mb_tw__str): quotes,
 * backslash and control characters escaped (RFC 8259 section 7); runs of
 * other bytes copied whole. */
static void mb_tw__esc(struct mb__tw *w, const char *s)
{
    for (;;) {
        const char *end = s;
        while ((unsigned char)*end >= 0x20 && *end != '"' && *end != '\\')
            end++;
        size_t run = (size_t)(end - s);
        mb_tw__put(w, s, run);
        s += run;
        if (!*s)
            break;
        if (*s == '"' || *s == '\\') {
            char e[2] = {'\\', *s};
            mb_tw__put(w, e, 2);
        } else {
            char e[7] = {'\\', 'u', '0', '0', (char)('0' + (*s >> 4)), "0123456789abcdef"[*s & 15], 0};
            mb_tw__puts(w, e);
        }
        s++;
    }
}

static void mb_tw__str(struct mb__tw *w, const char *s)
{
    mb_tw__put(w, "\"", 1);
    mb_tw__esc(w, s);
    mb_tw__put(w, "\"", 1);
}

/* Digits of u, most significant first, into the writer. */
static void mb_tw__uint(struct mb__tw *w, uint64_t u)
{
    char d[24];
    int k = sizeof d;
    do {
        d[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    mb_tw__put(w, d + k, sizeof d - (size_t)k);
}

/* An int as digits. */
static void mb_tw__int(struct mb__tw *w, long v)
{
    if (v < 0)
        mb_tw__puts(w, "-");
    mb_tw__uint(w, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v);
}

/* A JSON number: finite doubles with 17 significant digits (round trip); NaN
 * or infinity, which JSON has no spelling for, as null. */
static void mb_tw__num(struct mb__tw *w, double v)
{
    if (v != v || v - v != 0)
        mb_tw__puts(w, "null");
    else
        mb_tw__printf(w, "%.17g", v);
}

/* A FLOP or byte count (>= 0, a model's estimate) rounded to a whole number,
 * as digits: printf's %.17g for every one of them took most of the time of
 * a large trace. Counts from 2^63 on (never a step's) keep %.17g. */
static void mb_tw__count(struct mb__tw *w, double v)
{
    if (v >= 0 && v < 9.2e18)
        mb_tw__uint(w, (uint64_t)(v + 0.5));
    else
        mb_tw__num(w, v);
}

/* A time in microseconds with three decimals (nanoseconds: the trace's
 * resolution; the simulation's times are seconds as doubles). */
static void mb_tw__usec(struct mb__tw *w, double sec)
{
    double ns = sec * 1e9;
    if (ns != ns || ns < 0 || ns >= 9e18) { /* never for a simulated step; kept exact anyway */
        mb_tw__num(w, sec * 1e6);
        return;
    }
    uint64_t n = (uint64_t)(ns + 0.5);
    char frac[4] = {(char)('0' + n / 100 % 10), (char)('0' + n / 10 % 10), (char)('0' + n % 10), 0};
    mb_tw__uint(w, n / 1000);
    mb_tw__puts(w, ".");
    mb_tw__puts(w, frac);
}

/* ,"key": */
static void mb_tw__key(struct mb__tw *w, const char *key)
{
    mb_tw__puts(w, ",");
    mb_tw__str(w, key);
    mb_tw__puts(w, ":");
}

/* The start of one event object in the traceEvents array: {"ph":"X" */
static void mb_tw__begin(struct mb__tw *w, const char *ph)
{
    if (w->events++)
        mb_tw__puts(w, ",");
    mb_tw__puts(w, "\n{\"ph\":");
    mb_tw__str(w, ph);
}

/* ------------------------------------------------------------ events */

static const char *mb_step__src_name(enum mb_src s)
{
    static const char *const n[] = {"none", "table", "roofline", "link model", "measured collective"};
    return s <= MB_SRC_MEASURED ? n[s] : "?";
}

static void mb_step__meta(struct mb__tw *w, int pid, int tid, const char *what, const char *name)
{
    mb_tw__begin(w, "M");
    mb_tw__key(w, "name");
    mb_tw__str(w, what);
    mb_tw__printf(w, ",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", pid, tid);
    mb_tw__str(w, name);
    mb_tw__puts(w, "}}");
}

/* Process and thread names of every stage. */
static void mb_step__tracks(const struct mb_build *b, struct mb__tw *w)
{
    for (int st = 0; st < b->lay.p; st++) {
        char name[64];
        snprintf(name, sizeof name, "pipeline stage %d (representative rank)", st);
        mb_step__meta(w, st, 0, "process_name", name);
        mb_step__meta(w, st, 0, "thread_name", "compute");
        for (int c = 0; c < MB_CK_COUNT; c++)
            mb_step__meta(w, st, c + 1, "thread_name", mb__ck_track[c]);
        mb_step__meta(w, st, MB_CK_COUNT + 1, "thread_name", "host (kernel launches)");
    }
}

/* The slice's name as a JSON string: "L12 linear_fc1 fwd" (decoder layer 12),
 * "V3 vit_qkv fwd" (ViT block 3): the same name in every microbatch. */
static void mb_step__slice_name(struct mb__tw *w, const struct mb_tinfo *ti, const struct mb_op *o, const char *op)
{
    const char *dir = ti->dir >= 0 && ti->dir <= 2 ? mb__dir_name[ti->dir] : "";
    mb_tw__puts(w, "\"");
    if (ti->layer >= 0 || (o && o->vblock > 0)) {
        mb_tw__puts(w, ti->layer >= 0 ? "L" : "V");
        mb_tw__int(w, ti->layer >= 0 ? ti->layer : o->vblock - 1);
        mb_tw__puts(w, " ");
    }
    mb_tw__esc(w, op);
    if (*dir) {
        mb_tw__puts(w, " ");
        mb_tw__puts(w, dir);
    }
    mb_tw__puts(w, "\"");
}

/* ,"key":N for a count that is not 0 (absent: none; keeps a large trace small). */
static void mb_step__count_arg(struct mb__tw *w, const char *key, double v)
{
    if (v > 0) {
        mb_tw__key(w, key);
        mb_tw__count(w, v);
    }
}

/* One complete slice with the op's arguments. */
static void mb_step__slice(struct mb__tw *w, const struct mb_tinfo *ti, const struct mb_op *o, const char *cat,
                           int bcat, double t0, double dur, int pid, int tid)
{
    const char *op = o ? o->name : ti->name ? ti->name : "task";
    mb_tw__begin(w, "X");
    mb_tw__key(w, "name");
    mb_step__slice_name(w, ti, o, op);
    mb_tw__key(w, "cat");
    mb_tw__str(w, cat);
    mb_tw__key(w, "ts");
    mb_tw__usec(w, t0);
    mb_tw__key(w, "dur");
    mb_tw__usec(w, dur);
    mb_tw__puts(w, ",\"pid\":");
    mb_tw__int(w, pid);
    mb_tw__puts(w, ",\"tid\":");
    mb_tw__int(w, tid);
    mb_tw__puts(w, ",\"args\":{\"op\":");
    mb_tw__str(w, op);
    mb_tw__key(w, "pass");
    mb_tw__str(w, ti->dir >= 0 && ti->dir <= 2 ? mb__dir_name[ti->dir] : "");
    mb_tw__key(w, "category");
    mb_tw__str(w, mb_cat_name((enum mb_cat)bcat));
    mb_tw__puts(w, ",\"layer\":");
    mb_tw__int(w, ti->layer);
    if (o && o->vblock > 0) {
        mb_tw__puts(w, ",\"vision_block\":");
        mb_tw__int(w, o->vblock - 1);
    }
    mb_tw__puts(w, ",\"microbatch\":");
    mb_tw__int(w, ti->mb);
    mb_tw__puts(w, ",\"chunk\":");
    mb_tw__int(w, ti->chunk);
    if (o) {
        int bwd = ti->dir == 1;
        double rr = ti->dir == 2 && o->type == MB_OP_COMP ? mb_op_rerun_share(o) : 1; /* recompute: the part re-run */
        mb_step__count_arg(w, "flop", bwd ? o->flop_b : o->flop_f * rr);
        if (o->type == MB_OP_COMM) {
            mb_step__count_arg(w, "bytes_nvlink", o->bytes_nv);
            mb_step__count_arg(w, "bytes_nic", o->bytes_nic);
        } else {
            mb_step__count_arg(w, "bytes", bwd ? o->bytes_b : o->bytes_f * rr);
        }
        if (o->gm > 0) {
            mb_tw__puts(w, ",\"gemm_mnk\":\"");
            mb_tw__count(w, o->gm);
            mb_tw__puts(w, "x");
            mb_tw__count(w, o->gn);
            mb_tw__puts(w, "x");
            mb_tw__count(w, o->gk);
            mb_tw__puts(w, "\"");
        }
        mb_tw__key(w, "time_from");
        mb_tw__str(w, mb_step__src_name(o->src));
    } else {
        mb_step__count_arg(w, "bytes", ti->bytes);
        if (ti->src != MB_SRC_NONE) {
            mb_tw__key(w, "time_from");
            mb_tw__str(w, mb_step__src_name(ti->src));
        }
    }
    mb_tw__puts(w, "}}");
}

struct mb__slices {
    struct mb__tw *w;
    const struct mb_tinfo *ti;
    int bcat, pid;
    double at; /* where the next op's slice starts */
};

static void mb_step__part_slice(const struct mb_op *part, double sec, void *ctx)
{
    struct mb__slices *c = ctx;
    if (sec > 0)
        mb_step__slice(c->w, c->ti, part, "compute", c->bcat, c->at, sec, c->pid, 0);
    c->at += sec;
}

/* A compute task: its ops (the parts it was fused from) one after the other,
 * each its share of the task's time. */
static void mb_step__compute_slices(struct mb__tw *w, const struct mb_tinfo *ti, int bcat, double t0, double t1,
                                    int pid)
{
    struct mb__slices c = {w, ti, bcat, pid, t0};
    mb_tinfo_split(ti, t1 - t0, mb_step__part_slice, &c);
}

/* Stream id -> (process, thread). */
struct mb__map {
    int *pid, *tid;
};

static void mb_step__map_build(const struct mb_build *b, struct mb__map *mp)
{
    int nstream = 0;
    for (int st = 0; st < b->lay.p; st++) {
        int ids[MB_CK_COUNT + 2] = {b->comp[st], b->host[st]};
        for (int k = 0; k < MB_CK_COUNT; k++)
            ids[k + 2] = b->cstream[st][k];
        for (int k = 0; k < MB_CK_COUNT + 2; k++)
            if (ids[k] + 1 > nstream)
                nstream = ids[k] + 1;
    }
    mp->pid = mb_malloc((size_t)nstream * sizeof *mp->pid);
    mp->tid = mb_malloc((size_t)nstream * sizeof *mp->tid);
    for (int i = 0; i < nstream; i++)
        mp->pid[i] = -1, mp->tid[i] = 0;
    for (int st = 0; st < b->lay.p; st++) {
        mp->pid[b->comp[st]] = st;
        mp->pid[b->host[st]] = st;
        mp->tid[b->host[st]] = MB_CK_COUNT + 1;
        for (int k = 0; k < MB_CK_COUNT; k++) {
            mp->pid[b->cstream[st][k]] = st;
            mp->tid[b->cstream[st][k]] = k + 1;
        }
    }
}

static void mb_step__slices(const struct mb_build *b, const struct mb__map *mp, struct mb__tw *w)
{
    size_t nt = mb_engine_n_tasks(b->e);
    for (size_t t = 0; t < nt && !w->fail; t++) {
        int sid = mb_engine_task_stream(b->e, (int)t), c = mb_results_task_cat(b->e, (int)t);
        double t0 = mb_engine_task_start(b->e, (int)t), t1 = mb_engine_task_end(b->e, (int)t);
        if (c < 0 || t1 <= t0)
            continue;
        struct mb_tinfo tk;
        const struct mb_tinfo *ti = NULL;
        if (t < b->n_tinfo) {
            mb_tinfo_get(b, t, &tk);
            ti = &tk;
        }
        struct mb_tinfo none = {NULL, NULL, mb_cat_name((enum mb_cat)c), -1, -1, -1, -1, 0, 0, 0, 0, 0, MB_SRC_NONE};
        if (!ti || (!ti->op && !ti->name))
            ti = &none;
        int pid = mp->pid[sid], tid = mp->tid[sid];
        if (tid == 0 && ti->op)
            mb_step__compute_slices(w, ti, c, t0, t1, pid);
        else
            mb_step__slice(w, ti, ti->op, tid == MB_CK_COUNT + 1 ? "host" : tid ? "comm" : "compute", c, t0,
                           t1 - t0, pid, tid);
    }
}

/* Dependencies between pipeline stages (activations and gradients handed
 * over) as flow arrows: from the end of the producer to the consumer. */
static void mb_step__flows(const struct mb_build *b, const struct mb__map *mp, struct mb__tw *w)
{
    size_t nd = mb_engine_n_deps(b->e);
    int flow_id = 0;
    for (size_t i = 0; i < nd && !w->fail; i++) {
        int u, v;
        mb_engine_dep(b->e, i, &u, &v);
        int su = mb_engine_task_stream(b->e, u), sv = mb_engine_task_stream(b->e, v);
        if (mp->pid[su] == mp->pid[sv])
            continue;
        double te = mb_engine_task_end(b->e, u), ts = mb_engine_task_start(b->e, v);
        if (te < 0 || ts < 0)
            continue;
        flow_id++;
        mb_tw__begin(w, "s");
        mb_tw__printf(w, ",\"name\":\"p2p\",\"cat\":\"pipeline\",\"id\":%d,\"ts\":", flow_id);
        mb_tw__usec(w, te);
        mb_tw__printf(w, ",\"pid\":%d,\"tid\":%d}", mp->pid[su], mp->tid[su]);
        mb_tw__begin(w, "f");
        mb_tw__printf(w, ",\"name\":\"p2p\",\"cat\":\"pipeline\",\"id\":%d,\"ts\":", flow_id);
        mb_tw__usec(w, ts);
        mb_tw__printf(w, ",\"pid\":%d,\"tid\":%d,\"bp\":\"e\"}", mp->pid[sv], mp->tid[sv]);
    }
}

/* Activation memory of each stage's rank as a counter track. */
static void mb_step__counters(const struct mb_build *b, struct mb__tw *w)
{
    for (int st = 0; st < b->lay.p; st++)
        for (int i = 0; i < b->mem_n[st]; i++) {
            mb_tw__begin(w, "C");
            mb_tw__puts(w, ",\"name\":\"activation memory\",\"ts\":");
            mb_tw__usec(w, b->mem_t[st][i]);
            mb_tw__printf(w, ",\"pid\":%d,\"args\":{\"GiB\":", st);
            mb_tw__num(w, b->mem_v[st][i] / (1024.0 * 1024.0 * 1024.0));
            mb_tw__puts(w, "}}");
        }
}

/* Every event, in the order: track names, slices, pipeline flows, memory counters. */
static void mb_step__events(struct mb_build *b, struct mb__tw *w)
{
    struct mb__map mp;
    mb_tw__puts(w, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    mb_step__tracks(b, w);
    mb_step__map_build(b, &mp);
    mb_step__slices(b, &mp, w);
    mb_step__flows(b, &mp, w);
    mb_free(mp.pid);
    mb_free(mp.tid);
    mb_step__counters(b, w);
    mb_tw__puts(w, "\n]}\n");
    mb_tw__flush(w);
}

/* Write the trace to path: "-" stdout, "*.gz" gzip, else a plain file;
 * through a temporary file renamed at the end (mb_outfile.h), so a failed
 * write leaves no cut trace and never replaces an input. */
int mb_trace_write(struct mb_build *b, const char *path, struct mb_err *err)
{
    struct mb_outfile o;
    if (mb_outfile_open(&o, path, NULL, err))
        return -1;
    size_t n = strlen(path);
    int gzip = strcmp(path, "-") != 0 && n >= 3 && strcmp(path + n - 3, ".gz") == 0;
    struct mb__tw *w = mb_calloc(1, sizeof *w);
    w->fp = o.fp;
    errno = 0;
    if (gzip) {
        int fd = dup(o.fd); /* gzclose closes it; o's stream writes nothing */
        w->gz = fd >= 0 ? gzdopen(fd, "wb") : NULL;
        if (!w->gz && fd >= 0)
            close(fd);
        w->fail = !w->gz;
    }
    if (!w->fail)
        mb_step__events(b, w);
    if (w->gz && gzclose(w->gz) != Z_OK)
        w->fail = 1;
    int fail = w->fail;
    mb_free(w);
    if (fail) {
        int e = errno;
        mb_outfile_abort(&o);
        return mb_err_set(err, path, 0, 0, "cannot write the trace: %s", e ? strerror(e) : "write error");
    }
    return mb_outfile_commit(&o, err);
}
