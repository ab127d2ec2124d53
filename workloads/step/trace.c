/*
 * trace.c -- Chrome/Perfetto trace (JSON Trace Event Format) of the simulated
 * ranks: one process per pipeline stage's representative rank, a compute
 * thread, one thread per communication kind and the host launch thread.
 * Slices are named by op, layer, direction and microbatch ("L12 linear_fc1
 * fwd mb3", "L3 ep dispatch fwd mb0"); a fused compute task is drawn as its
 * ops one after the other. Written with jansson; gzip (zlib) when the path
 * ends in ".gz"; "-" writes the JSON alone to stdout.
 */
#include "step_int.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <unistd.h>
#include <zlib.h>

#include "mb_outfile.h"

static const char *const mb__ck_track[MB_CK_COUNT] = {"TP comm", "CP comm", "EP comm", "PP p2p", "DP comm",
                                                      "FSDP comm"};
static const char *const mb__dir_name[] = {"fwd", "bwd", "recompute"};

static const char *mb_step__src_name(enum mb_src s)
{
    static const char *const n[] = {"none", "table", "roofline", "link model", "measured collective"};
    return s <= MB_SRC_MEASURED ? n[s] : "?";
}

static void mb_step__meta(json_t *ev, int pid, int tid, const char *what, const char *name)
{
    json_array_append_new(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "ph", "M", "name", what, "pid", pid, "tid", tid,
                                        "args", "name", name));
}

/* Process and thread names of every stage. */
static void mb_step__tracks(const struct mb_build *b, json_t *ev)
{
    for (int st = 0; st < b->lay.p; st++) {
        char name[64];
        snprintf(name, sizeof name, "pipeline stage %d (representative rank)", st);
        mb_step__meta(ev, st, 0, "process_name", name);
        mb_step__meta(ev, st, 0, "thread_name", "compute");
        for (int c = 0; c < MB_CK_COUNT; c++)
            mb_step__meta(ev, st, c + 1, "thread_name", mb__ck_track[c]);
        mb_step__meta(ev, st, MB_CK_COUNT + 1, "thread_name", "host (kernel launches)");
    }
}

/* "L12 linear_fc1 fwd mb3" (decoder layer 12), "V3 vit_qkv fwd mb0" (ViT block 3) */
static void mb_step__slice_name(const struct mb_tinfo *ti, const struct mb_op *o, const char *op, char *out, size_t n)
{
    char layer[16] = "", mb[16] = "";
    const char *dir = ti->dir >= 0 && ti->dir <= 2 ? mb__dir_name[ti->dir] : "";
    if (ti->layer >= 0)
        snprintf(layer, sizeof layer, "L%d ", ti->layer);
    else if (o && o->vblock > 0)
        snprintf(layer, sizeof layer, "V%d ", o->vblock - 1);
    if (ti->mb >= 0)
        snprintf(mb, sizeof mb, " mb%d", ti->mb);
    snprintf(out, n, "%s%s%s%s%s", layer, op, *dir ? " " : "", dir, mb);
}

/* One slice with the op's arguments. */
static void mb_step__slice(json_t *ev, const struct mb_tinfo *ti, const struct mb_op *o, const char *cat, int bcat,
                      double t0, double dur, int pid, int tid)
{
    char name[128];
    mb_step__slice_name(ti, o, o ? o->name : ti->name ? ti->name : "task", name, sizeof name);
    json_t *args = json_object();
    json_object_set_new(args, "category", json_string(mb_cat_name((enum mb_cat)bcat)));
    json_object_set_new(args, "layer", json_integer(ti->layer));
    if (o && o->vblock > 0)
        json_object_set_new(args, "vision_block", json_integer(o->vblock - 1));
    json_object_set_new(args, "microbatch", json_integer(ti->mb));
    json_object_set_new(args, "chunk", json_integer(ti->chunk));
    if (o) {
        int bwd = ti->dir == 1;
        json_object_set_new(args, "flop", json_real(bwd ? o->flop_b : o->flop_f));
        if (o->type == MB_OP_COMM) {
            json_object_set_new(args, "bytes_nvlink", json_real(o->bytes_nv));
            json_object_set_new(args, "bytes_nic", json_real(o->bytes_nic));
        } else {
            json_object_set_new(args, "bytes", json_real(bwd ? o->bytes_b : o->bytes_f));
        }
        if (o->gm > 0) {
            char shape[96];
            snprintf(shape, sizeof shape, "%.0fx%.0fx%.0f", o->gm, o->gn, o->gk);
            json_object_set_new(args, "gemm_mnk", json_string(shape));
        }
        json_object_set_new(args, "time_from", json_string(mb_step__src_name(o->src)));
    } else if (ti->bytes > 0) {
        json_object_set_new(args, "bytes", json_real(ti->bytes));
    }
    if (!o && ti->src != MB_SRC_NONE)
        json_object_set_new(args, "time_from", json_string(mb_step__src_name(ti->src)));
    json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:o}", "ph", "X", "name", name, "cat", cat,
                                        "ts", t0 * 1e6, "dur", dur * 1e6, "pid", pid, "tid", tid, "args", args));
}

struct mb__slices {
    json_t *ev;
    const struct mb_tinfo *ti;
    int bcat, pid;
    double at; /* where the next op's slice starts */
};

static void mb_step__part_slice(const struct mb_op *part, double sec, void *ctx)
{
    struct mb__slices *c = ctx;
    if (sec > 0)
        mb_step__slice(c->ev, c->ti, part, "compute", c->bcat, c->at, sec, c->pid, 0);
    c->at += sec;
}

/* A compute task: its ops (the parts it was fused from) one after the other,
 * each its share of the task's time. */
static void mb_step__compute_slices(json_t *ev, const struct mb_tinfo *ti, int bcat, double t0, double t1, int pid)
{
    struct mb__slices c = {ev, ti, bcat, pid, t0};
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

static void mb_step__slices(const struct mb_build *b, const struct mb__map *mp, json_t *ev)
{
    size_t nt = mb_engine_n_tasks(b->e);
    for (size_t t = 0; t < nt; t++) {
        int sid = mb_engine_task_stream(b->e, (int)t), c = mb_results_task_cat(b->e, (int)t);
        double t0 = mb_engine_task_start(b->e, (int)t), t1 = mb_engine_task_end(b->e, (int)t);
        if (c < 0 || t1 <= t0)
            continue;
        const struct mb_tinfo *ti = t < b->n_tinfo ? &b->tinfo[t] : NULL;
        struct mb_tinfo none = {NULL, NULL, mb_cat_name((enum mb_cat)c), -1, -1, -1, -1, 0, 0, 0, 0, 0, MB_SRC_NONE};
        if (!ti || (!ti->op && !ti->name))
            ti = &none;
        int pid = mp->pid[sid], tid = mp->tid[sid];
        if (tid == 0 && ti->op)
            mb_step__compute_slices(ev, ti, c, t0, t1, pid);
        else
            mb_step__slice(ev, ti, ti->op, tid == MB_CK_COUNT + 1 ? "host" : tid ? "comm" : "compute", c, t0, t1 - t0,
                      pid, tid);
    }
}

/* Dependencies between pipeline stages (activations and gradients handed
 * over) as flow arrows: from the end of the producer to the consumer. */
static void mb_step__flows(const struct mb_build *b, const struct mb__map *mp, json_t *ev)
{
    size_t nd = mb_engine_n_deps(b->e);
    int flow_id = 0;
    for (size_t i = 0; i < nd; i++) {
        int u, w;
        mb_engine_dep(b->e, i, &u, &w);
        int su = mb_engine_task_stream(b->e, u), sw = mb_engine_task_stream(b->e, w);
        if (mp->pid[su] == mp->pid[sw])
            continue;
        double te = mb_engine_task_end(b->e, u), ts = mb_engine_task_start(b->e, w);
        if (te < 0 || ts < 0)
            continue;
        flow_id++;
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:i,s:f,s:i,s:i}", "ph", "s", "name", "p2p", "cat",
                                            "pipeline", "id", flow_id, "ts", te * 1e6, "pid", mp->pid[su], "tid",
                                            mp->tid[su]));
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:i,s:f,s:i,s:i,s:s}", "ph", "f", "name", "p2p", "cat",
                                            "pipeline", "id", flow_id, "ts", ts * 1e6, "pid", mp->pid[sw], "tid",
                                            mp->tid[sw], "bp", "e"));
    }
}

/* Activation memory of each stage's rank as a counter track. */
static void mb_step__counters(const struct mb_build *b, json_t *ev)
{
    for (int st = 0; st < b->lay.p; st++)
        for (int i = 0; i < b->mem_n[st]; i++)
            json_array_append_new(ev, json_pack("{s:s,s:s,s:f,s:i,s:{s:f}}", "ph", "C", "name", "activation memory",
                                                "ts", b->mem_t[st][i] * 1e6, "pid", st, "args", "GiB",
                                                b->mem_v[st][i] / (1024.0 * 1024.0 * 1024.0)));
}

/* Write root to path: "-" stdout (with a newline), "*.gz" gzip, else a plain
 * file; through a temporary file renamed at the end (mb_outfile.h), so a
 * failed write leaves no cut trace and never replaces an input. */
static int mb_step__dump(json_t *root, const char *path, struct mb_err *err)
{
    struct mb_outfile o;
    if (mb_outfile_open(&o, path, NULL, err))
        return -1;
    size_t n = strlen(path);
    int rc = 0;
    if (strcmp(path, "-") == 0) {
        rc = json_dumpf(root, o.fp, JSON_COMPACT) || fputc('\n', o.fp) == EOF ? -1 : 0;
    } else if (n < 3 || strcmp(path + n - 3, ".gz") != 0) {
        rc = json_dumpf(root, o.fp, JSON_COMPACT);
    } else {
        char *txt = json_dumps(root, JSON_COMPACT);
        int fd = txt ? dup(o.fd) : -1; /* gzclose closes it; o's stream has written nothing */
        gzFile gz = fd >= 0 ? gzdopen(fd, "wb") : NULL;
        rc = -1;
        if (gz) {
            size_t len = strlen(txt);
            rc = gzwrite(gz, txt, (unsigned)len) == (int)len ? 0 : -1;
            if (gzclose(gz) != Z_OK)
                rc = -1;
        } else if (fd >= 0) {
            close(fd);
        }
        free(txt);
    }
    if (rc) {
        int e = errno;
        mb_outfile_abort(&o);
        return mb_err_set(err, path, 0, 0, "cannot write the trace: %s", e ? strerror(e) : "write error");
    }
    return mb_outfile_commit(&o, err);
}

int mb_trace_write(struct mb_build *b, const char *path, struct mb_err *err)
{
    json_t *ev = json_array();
    struct mb__map mp;
    mb_step__tracks(b, ev);
    mb_step__map_build(b, &mp);
    mb_step__slices(b, &mp, ev);
    mb_step__flows(b, &mp, ev);
    mb_free(mp.pid);
    mb_free(mp.tid);
    mb_step__counters(b, ev);
    json_t *root = json_pack("{s:o,s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
    errno = 0;
    int rc = mb_step__dump(root, path, err);
    json_decref(root);
    return rc;
}
