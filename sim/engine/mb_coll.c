/*
 * mb_coll.c -- collectives as flows (see mb_coll.h and docs/collectives.md).
 *
 * Model. A collective on n ranks in D NVLink domains of L ranks each becomes
 * one engine task: latency = steps x per-step latency (the slowest hop class a
 * step crosses, calibration `links.*.latency`), then one flow per (rank, hop)
 * carrying every byte that rank sends on that hop during the operation. NCCL
 * pipelines chunks through all steps, so in steady state all hops are busy
 * together and the operation takes latency + max over ports of bytes / rate,
 * which is what the concurrent flows give; the flow solver adds contention
 * with whatever else is running.
 *
 * Per-rank volumes (S = nccl-tests size):
 *   ring all_reduce        2(n-1)/n S on the ring edge, 2(n-1) steps
 *   ring all_gather / RS   (n-1)/n S, n-1 steps
 *   ring broadcast         S on each chain edge, n-1 steps
 *   tree all_reduce, D>1   2S/L to each of L-1 domain peers (reduce-scatter +
 *                          all-gather over NVLink) and 2(D-1)/D S/L to the same
 *                          local rank of the next domain (scale-out ring on
 *                          the shard; NCCL's double binary tree moves the same
 *                          volume per NIC); 2((L-1) + ceil(log2 D)) steps
 *   tree all_reduce, D=1   chain: S down, S back up; 2(L-1) steps
 *   tree AG / RS, D>1      (D-1) S/n over the NIC, S/L to each domain peer
 *                          (a hierarchical variant NCCL does not have: only
 *                          when asked for; AUTO uses the ring, as NCCL does)
 *   nvls all_reduce        S through the GPU's NVLink port (multimem
 *                          ld_reduce + st), rate bound = achieved NVLS bw,
 *                          plus the tree's scale-out flow when D>1; 2 steps
 *                          (+ 2 ceil(log2 D) NIC steps) + the measured fixed
 *                          cost of an NVLS all_reduce (links.nvls.latency)
 *   pairwise alltoall      S/n to each other rank, 1 step
 *   sendrecv               S to rank r+1, 1 step
 * Rings that span domains use C = L channels: channel c visits each domain's
 * ranks starting at local index c, so every GPU's NIC carries exactly one
 * channel's domain-crossing edge (NCCL's rail-aligned rings).
 */
#include "mb_coll.h"
#include "mb_coll_nccl.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static const char *const op_names[MB_COLL_OP_COUNT] = {"all_reduce", "all_gather", "reduce_scatter",
                                                      "broadcast",  "alltoall",   "sendrecv"};
static const char *const algo_names[MB_COLL_ALGO_COUNT] = {"auto", "ring", "tree", "nvls", "pairwise", "pat"};
static const char *const proto_names[MB_COLL_PROTO_COUNT] = {"LL", "LL128", "Simple"};

const char *mb_coll_proto_name(enum mb_coll_proto p)
{
    return (unsigned)p < MB_COLL_PROTO_COUNT ? proto_names[p] : NULL;
}

const char *mb_coll_algo_label(enum mb_coll_algo a, int D)
{
    return a == MB_COLL_ALGO_NVLS && D > 1 ? "nvls_tree" : mb_coll_algo_name(a);
}

const char *mb_coll_op_name(enum mb_coll_op op)
{
    return (unsigned)op < MB_COLL_OP_COUNT ? op_names[op] : NULL;
}

const char *mb_coll_algo_name(enum mb_coll_algo a)
{
    return (unsigned)a < MB_COLL_ALGO_COUNT ? algo_names[a] : NULL;
}

int mb_coll_op_parse(const char *s, enum mb_coll_op *out)
{
    static const struct { const char *name; enum mb_coll_op op; } alias[] = {
        {"allreduce", MB_COLL_ALL_REDUCE},   {"allgather", MB_COLL_ALL_GATHER},
        {"reducescatter", MB_COLL_REDUCE_SCATTER}, {"all_to_all", MB_COLL_ALLTOALL},
        {"alltoallv", MB_COLL_ALLTOALL},     {"send_recv", MB_COLL_SENDRECV},
        {"bcast", MB_COLL_BROADCAST}};
    if (!s)
        return -1;
    for (int i = 0; i < MB_COLL_OP_COUNT; i++)
        if (!strcmp(s, op_names[i])) {
            *out = (enum mb_coll_op)i;
            return 0;
        }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(s, alias[i].name)) {
            *out = alias[i].op;
            return 0;
        }
    return -1;
}

int mb_coll_algo_parse(const char *s, enum mb_coll_algo *out)
{
    if (!s)
        return -1;
    for (int i = 0; i < MB_COLL_ALGO_COUNT; i++)
        if (!strcmp(s, algo_names[i])) {
            *out = (enum mb_coll_algo)i;
            return 0;
        }
    return -1;
}

double mb_coll_bus_factor(enum mb_coll_op op, int n)
{
    if (n < 1)
        return 0;
    switch (op) {
    case MB_COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case MB_COLL_ALL_GATHER:
    case MB_COLL_REDUCE_SCATTER:
    case MB_COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

/* ---- group geometry ------------------------------------------------------ */

/* The group split by NVLink domain: D domains (in order of first appearance),
 * L ranks each (uniform == 1 when every domain holds exactly L ranks), and
 * mem[k*L + j] = GPU of the j-th rank of domain k. */
struct shape {
    int n, D, L, uniform;
    int *gpu;  /* [n] GPU of rank r */
    int *mem;  /* [n] grouped by domain (valid when uniform) */
};

static int mb_coll__gpu_of(const struct mb_coll_req *r, int i)
{
    return r->ranks ? r->ranks[i] : r->first_gpu + i;
}

static void mb_coll__shape_free(struct shape *s)
{
    mb_free(s->gpu);
    mb_free(s->mem);
}

static int mb_coll__shape_make(const struct mb_coll_net *net, const struct mb_coll_req *r, struct shape *s,
                      struct mb_err *err)
{
    memset(s, 0, sizeof *s);
    if (r->n_ranks < 1)
        return mb_err_set(err, NULL, 0, 0, "collective: group size %d must be >= 1", r->n_ranks);
    if (!(r->bytes > 0) || !isfinite(r->bytes))
        return mb_err_set(err, NULL, 0, 0, "collective: size %g bytes must be > 0", r->bytes);
    if ((unsigned)r->op >= MB_COLL_OP_COUNT)
        return mb_err_set(err, NULL, 0, 0, "collective: unknown operation %d", (int)r->op);
    int n = r->n_ranks, ds = net->domain_size > 0 ? net->domain_size : 1;
    s->n = n;
    s->gpu = mb_malloc((size_t)n * sizeof *s->gpu);
    s->mem = mb_malloc((size_t)n * sizeof *s->mem);
    /* domains in order of first appearance; ranks of one domain kept in rank order */
    int *dom = mb_malloc((size_t)n * sizeof *dom), *cnt = mb_calloc((size_t)n, sizeof *cnt);
    for (int i = 0; i < n; i++) {
        int g = mb_coll__gpu_of(r, i);
        if (g < 0 || g >= net->n_gpus) {
            mb_free(dom);
            mb_free(cnt);
            mb_coll__shape_free(s);
            return mb_err_set(err, NULL, 0, 0, "collective: rank %d is GPU %d, outside the fabric's %d GPUs",
                              i, g, net->n_gpus);
        }
        for (int j = 0; j < i; j++)
            if (s->gpu[j] == g) {
                mb_free(dom);
                mb_free(cnt);
                mb_coll__shape_free(s);
                return mb_err_set(err, NULL, 0, 0, "collective: GPU %d appears twice in the group", g);
            }
        s->gpu[i] = g;
    }
    int D = 0;
    for (int i = 0; i < n; i++) {
        int d = s->gpu[i] / ds, k;
        for (k = 0; k < D && dom[k] != d; k++)
            ;
        if (k == D)
            dom[D++] = d;
        cnt[k]++;
    }
    s->D = D;
    s->L = cnt[0];
    s->uniform = 1;
    for (int k = 0; k < D; k++)
        if (cnt[k] != s->L)
            s->uniform = 0;
    if (s->uniform) {
        int *fill = mb_calloc((size_t)D, sizeof *fill);
        for (int i = 0; i < n; i++) {
            int d = s->gpu[i] / ds, k;
            for (k = 0; dom[k] != d; k++)
                ;
            s->mem[k * s->L + fill[k]++] = s->gpu[i];
        }
        mb_free(fill);
    } else {
        s->D = n; /* irregular group: treat every rank as its own domain (flat) */
        s->L = 1;
        memcpy(s->mem, s->gpu, (size_t)n * sizeof *s->mem);
    }
    mb_free(dom);
    mb_free(cnt);
    return 0;
}

static int mb_coll__log2ceil(int x)
{
    int k = 0;
    while ((1 << k) < x)
        k++;
    return k;
}

/* ---- algorithm table: applicability, latency, volumes --------------------- */

/* Applicability of algorithm a to op on a group of D domains of L ranks;
 * nvls_ok: the fabric has NVLS for this group. */
static int mb_coll__algo_ok_vol(enum mb_coll_op op, enum mb_coll_algo a, int L, int D, int nvls_ok)
{
    switch (a) {
    case MB_COLL_ALGO_RING:
        return op != MB_COLL_ALLTOALL && op != MB_COLL_SENDRECV;
    case MB_COLL_ALGO_TREE:
        return op == MB_COLL_ALL_REDUCE ||
               ((op == MB_COLL_ALL_GATHER || op == MB_COLL_REDUCE_SCATTER) && D > 1 && L > 1);
    case MB_COLL_ALGO_NVLS:
        return op == MB_COLL_ALL_REDUCE && nvls_ok && L > 1;
    case MB_COLL_ALGO_PAIRWISE:
        return op == MB_COLL_ALLTOALL || op == MB_COLL_SENDRECV;
    case MB_COLL_ALGO_PAT:
        return (op == MB_COLL_ALL_GATHER || op == MB_COLL_REDUCE_SCATTER) && L == 1 && D > 1;
    default:
        return 0;
    }
}

static int mb_coll__net_nvls_ok(const struct mb_coll_net *net, const struct shape *s);

int mb_coll_algo_ok(const struct mb_coll_net *net, const struct mb_coll_req *req, enum mb_coll_algo a)
{
    struct shape s;
    if (mb_coll__shape_make(net, req, &s, NULL))
        return 0;
    int ok = mb_coll__algo_ok_vol(req->op, a, s.L, s.D, mb_coll__net_nvls_ok(net, &s));
    mb_coll__shape_free(&s);
    return ok;
}

int mb_coll_volume(enum mb_coll_op op, enum mb_coll_algo a, int n, int L, int D, double S, struct mb_coll_vol *v)
{
    memset(v, 0, sizeof *v);
    if ((unsigned)a >= MB_COLL_ALGO_COUNT || a == MB_COLL_ALGO_AUTO)
        return -1;
    if (n <= 1)
        return 0;
    double V = op == MB_COLL_ALL_REDUCE ? 2.0 * (n - 1) / n * S : op == MB_COLL_BROADCAST ? S : (double)(n - 1) / n * S;
    double *lmax = D > 1 ? &v->steps_nic : &v->steps_nv; /* a step costs its slowest hop */
    switch (a) {
    case MB_COLL_ALGO_RING:
    case MB_COLL_ALGO_PAT: /* PAT: the same bytes per rank as the ring (each rank sends (n-1)/n S) */
        v->nv = D > 1 ? V * (L - 1) / L : V;
        v->nic = D > 1 ? V / L : 0;
        *lmax = op == MB_COLL_ALL_REDUCE ? 2.0 * (n - 1) : (double)(n - 1);
        break;
    case MB_COLL_ALGO_TREE:
        if (op == MB_COLL_ALL_REDUCE && D == 1) {
            v->nv = 2 * S;
        } else if (op == MB_COLL_ALL_REDUCE) {
            v->nv = 2 * S * (L - 1) / L;
            v->nic = 2.0 * (D - 1) / D * S / L;
        } else {
            v->nv = S * (L - 1) / L;
            v->nic = (D - 1) * S / n;
        }
        v->steps_nv = (op == MB_COLL_ALL_REDUCE ? 2.0 : 1.0) * (L - 1);
        v->steps_nic = op == MB_COLL_ALL_REDUCE ? 2.0 * mb_coll__log2ceil(D) : D - 1;
        break;
    case MB_COLL_ALGO_NVLS:
        v->nvls = S;
        v->nic = D > 1 ? 2.0 * (D - 1) / D * S / L : 0;
        v->steps_nv = 2;
        v->steps_nic = 2.0 * mb_coll__log2ceil(D);
        v->nvls_fixed = 1;
        break;
    default: /* pairwise */
        if (op == MB_COLL_ALLTOALL) {
            v->nv = (double)(L - 1) * S / n;
            v->nic = (double)(n - L) * S / n;
        } else if (D > 1) {
            v->nic = S;
        } else {
            v->nv = S;
        }
        *lmax = 1;
        break;
    }
    return 0;
}

double mb_coll_vol_latency(const struct mb_coll_vol *v, double nv_lat, double nic_lat, double nvls_lat)
{
    return v->steps_nv * nv_lat + v->steps_nic * nic_lat + (v->nvls_fixed ? nvls_lat : 0);
}

double mb_coll_vol_time(const struct mb_coll_vol *v, double nv_bw, double nic_bw, double nvls_bw, double nv_lat,
                        double nic_lat, double nvls_lat)
{
    double t = 0;
    if (v->nv > 0 && nv_bw > 0)
        t = fmax(t, v->nv / nv_bw);
    if (v->nic > 0 && nic_bw > 0)
        t = fmax(t, v->nic / nic_bw);
    if (v->nvls > 0 && nvls_bw > 0)
        t = fmax(t, v->nvls / nvls_bw);
    return t + mb_coll_vol_latency(v, nv_lat, nic_lat, nvls_lat);
}

/* Rates and latencies the estimates use. */
struct rates {
    double nvl_bw, nic_bw, nvls_bw, nv_lat, nic_lat, nvls_lat;
    int intra_pcie;
};

/* One call's plan: algorithm, protocol, latency (s), the protocol's bandwidth
 * factor and the per-rank volumes. */
struct plan {
    enum mb_coll_algo a;
    enum mb_coll_proto p;
    double lat, eff, bw_s;
    struct mb_coll_vol v;
};

static enum mb_nccl_algo mb_coll__nccl_algo(enum mb_coll_algo a, int D)
{
    switch (a) {
    case MB_COLL_ALGO_TREE: return MB_NCCL_TREE;
    case MB_COLL_ALGO_NVLS: return D > 1 ? MB_NCCL_NVLS_TREE : MB_NCCL_NVLS;
    case MB_COLL_ALGO_PAT: return MB_NCCL_PAT;
    default: return MB_NCCL_RING;
    }
}

/* Latency (s) of (a, p), -1 when NCCL has no such pair. NCCL's model
 * (mb_coll_nccl.h) for ring, tree, NVLS (tree) and PAT; a measured NVLS fixed
 * cost (calibration links.nvls.latency) replaces NCCL's 25 us NVLS intraLat;
 * the hierarchical all-gather / reduce-scatter `tree` (only when forced; NCCL
 * has none) pays the ring's; all-to-all and send/recv (NCCL p2p, outside the
 * tuning model) pay one step of the calibrated per-hop latency. */
static double mb_coll__plan_lat(enum mb_coll_op op, enum mb_coll_algo a, enum mb_coll_proto p, int n, int L, int D,
                       double S, const struct rates *r)
{
    struct mb_nccl_comm c = {n, D, r->intra_pcie};
    if (a == MB_COLL_ALGO_PAIRWISE) {
        struct mb_coll_vol v;
        if (p != MB_COLL_PROTO_SIMPLE)
            return -1;
        mb_coll_volume(op, a, n, L, D, S, &v);
        return mb_coll_vol_latency(&v, r->nv_lat, r->nic_lat, 0);
    }
    if (a == MB_COLL_ALGO_TREE && op != MB_COLL_ALL_REDUCE)
        return mb_nccl_latency(op, MB_NCCL_RING, p, &c, S);
    double lat = mb_nccl_latency(op, mb_coll__nccl_algo(a, D), p, &c, S);
    if (lat >= 0 && a == MB_COLL_ALGO_NVLS && r->nvls_lat > 0)
        lat += r->nvls_lat - 25e-6;
    return lat;
}

/* Bandwidth time (s) of a volume alone on its ports at protocol factor eff. */
static double mb_coll__vol_bw_time(const struct mb_coll_vol *v, const struct rates *r, double eff)
{
    double t = 0;
    if (v->nv > 0 && r->nvl_bw > 0)
        t = fmax(t, v->nv / r->nvl_bw);
    if (v->nic > 0 && r->nic_bw > 0)
        t = fmax(t, v->nic / r->nic_bw);
    if (v->nvls > 0 && r->nvls_bw > 0)
        t = fmax(t, v->nvls / r->nvls_bw);
    return t / eff;
}

/* The best protocol for algorithm a (Simple wins ties); -1 when none applies. */
static int mb_coll__plan_make(enum mb_coll_op op, enum mb_coll_algo a, int n, int L, int D, double S, const struct rates *r,
                     struct plan *pl)
{
    struct mb_nccl_comm c = {n, D, r->intra_pcie};
    int found = 0;
    for (int p = MB_COLL_PROTO_SIMPLE; p >= MB_COLL_PROTO_LL; p--) {
        struct plan x;
        memset(&x, 0, sizeof x);
        x.a = a;
        x.p = (enum mb_coll_proto)p;
        x.lat = mb_coll__plan_lat(op, a, x.p, n, L, D, S, r);
        if (x.lat < 0)
            continue;
        x.eff = a == MB_COLL_ALGO_PAIRWISE ? 1 : mb_nccl_bw_factor(op, mb_coll__nccl_algo(a, D), x.p, &c);
        mb_coll_volume(op, a, n, L, D, S, &x.v);
        x.bw_s = mb_coll__vol_bw_time(&x.v, r, x.eff);
        if (!found || x.lat + x.bw_s < (pl->lat + pl->bw_s) * (1 - 1e-12))
            *pl = x;
        found = 1;
    }
    return found ? 0 : -1;
}

/* AUTO: the applicable (algorithm, protocol) with the least estimate; order =
 * preference on ties: ring, tree, nvls, pairwise, pat. */
static int mb_coll__plan_auto(enum mb_coll_op op, int n, int L, int D, double S, int nvls_ok, const struct rates *r,
                     struct plan *best)
{
    int found = 0;
    for (int a = MB_COLL_ALGO_RING; a < MB_COLL_ALGO_COUNT; a++) {
        struct plan x;
        if (a == MB_COLL_ALGO_TREE && op != MB_COLL_ALL_REDUCE)
            continue; /* NCCL's trees are all_reduce only */
        if (!mb_coll__algo_ok_vol(op, (enum mb_coll_algo)a, L, D, nvls_ok) ||
            mb_coll__plan_make(op, (enum mb_coll_algo)a, n, L, D, S, r, &x))
            continue;
        if (!found || x.lat + x.bw_s < (best->lat + best->bw_s) * (1 - 1e-12))
            *best = x;
        found = 1;
    }
    return found ? 0 : -1;
}

/* The plan of a request: AUTO's or the forced algorithm's best protocol. */
static int mb_coll__plan_req(enum mb_coll_op op, enum mb_coll_algo a, int n, int L, int D, double S, int nvls_ok,
                    const struct rates *r, struct plan *pl)
{
    if (a == MB_COLL_ALGO_AUTO)
        return mb_coll__plan_auto(op, n, L, D, S, nvls_ok, r, pl);
    if (!mb_coll__algo_ok_vol(op, a, L, D, nvls_ok))
        return -1;
    return mb_coll__plan_make(op, a, n, L, D, S, r, pl);
}

static struct rates mb_coll__net_rates(const struct mb_coll_net *net)
{
    return (struct rates){net->nvl_bw, net->nic_bw, net->nvls_bw, net->lat[MB_COLL_HOP_NVLINK],
                          net->lat[MB_COLL_HOP_NIC], net->nvls_lat, net->intra_pcie};
}

static int mb_coll__net_nvls_ok(const struct mb_coll_net *net, const struct shape *s)
{
    return net->nvls && !net->intra_pcie && net->nvls_bw > 0 && s->uniform && net->nvl_tx &&
           net->nvl_tx[s->gpu[0]] >= 0;
}

double mb_coll_estimate(const struct mb_coll_net *net, const struct mb_coll_req *req, enum mb_coll_algo a)
{
    if (!mb_coll_algo_ok(net, req, a))
        return -1;
    struct shape s;
    if (mb_coll__shape_make(net, req, &s, NULL))
        return -1;
    struct rates r = mb_coll__net_rates(net);
    struct plan pl;
    int rc = mb_coll__plan_make(req->op, a, s.n, s.L, s.D, req->bytes, &r, &pl);
    mb_coll__shape_free(&s);
    return rc ? -1 : pl.lat + pl.bw_s;
}

enum mb_coll_algo mb_coll_choose(const struct mb_coll_net *net, const struct mb_coll_req *req)
{
    struct shape s;
    if (mb_coll__shape_make(net, req, &s, NULL))
        return MB_COLL_ALGO_RING;
    struct rates r = mb_coll__net_rates(net);
    struct plan pl;
    enum mb_coll_algo a = mb_coll__plan_auto(req->op, s.n, s.L, s.D, req->bytes, mb_coll__net_nvls_ok(net, &s), &r, &pl) ? MB_COLL_ALGO_RING
                                                                                                     : pl.a;
    mb_coll__shape_free(&s);
    return a;
}

/* A measured time for the call (req->meas_paced > 0): the task holds its
 * stream for the measured fixed part and every flow is capped at its bytes /
 * meas_paced. */
static void mb_coll__pace(const struct mb_coll_req *req, struct mb_task_desc *t, struct mb_flow_desc *f, int n)
{
    if (!(req->meas_paced > 0))
        return;
    t->duration = req->meas_lat > 0 ? req->meas_lat : 0;
    for (int i = 0; i < n; i++) {
        double cap = f[i].bytes / req->meas_paced;
        if (f[i].bound <= 0 || cap < f[i].bound)
            f[i].bound = cap;
    }
}

/* ---- flow construction --------------------------------------------------- */

struct flows {
    struct mb_flow_desc *v;
    int n, cap;
};

/* A new zeroed flow at the end of f. */
static struct mb_flow_desc *mb_coll__flows_push(struct flows *f)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 64;
        f->v = mb_realloc(f->v, (size_t)f->cap * sizeof *f->v);
    }
    struct mb_flow_desc *d = &f->v[f->n++];
    memset(d, 0, sizeof *d);
    return d;
}

static void mb_coll__flows_add(struct flows *f, const struct mb_coll_net *net, int src, int dst, double bytes,
                      double bound)
{
    if (src == dst || !(bytes > 0))
        return;
    struct mb_flow_desc *d = mb_coll__flows_push(f);
    d->bytes = bytes;
    d->bound = bound;
    d->n_links = net->route(net->ctx, src, dst, d->links);
    assert(d->n_links >= 1 && d->n_links <= MB_FLOW_MAX_LINKS);
}

/* Rings: C channels; channel c visits each domain's ranks from local index c. */
static void mb_coll__build_ring(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                       const struct shape *s)
{
    int n = s->n, L = s->L, D = s->D, C = D > 1 ? L : 1;
    double S = req->bytes;
    double V = req->op == MB_COLL_ALL_REDUCE ? 2.0 * (n - 1) / n * S
             : req->op == MB_COLL_BROADCAST ? S : (double)(n - 1) / n * S;
    int *seq = mb_malloc((size_t)n * sizeof *seq);
    for (int c = 0; c < C; c++) {
        for (int k = 0; k < D; k++)
            for (int j = 0; j < L; j++)
                seq[k * L + j] = s->mem[k * L + (c + j) % L];
        int edges = req->op == MB_COLL_BROADCAST ? n - 1 : n; /* broadcast: open chain */
        for (int i = 0; i < edges; i++)
            mb_coll__flows_add(f, net, seq[i], seq[(i + 1) % n], V / C, 0);
    }
    mb_free(seq);
}

/* Scale-out stage of the hierarchical algorithms: ring over the D ranks with the same local index. */
static void mb_coll__build_cross(struct flows *f, const struct mb_coll_net *net, const struct shape *s, double bytes)
{
    if (s->D < 2)
        return;
    for (int k = 0; k < s->D; k++)
        for (int j = 0; j < s->L; j++)
            mb_coll__flows_add(f, net, s->mem[k * s->L + j], s->mem[((k + 1) % s->D) * s->L + j], bytes, 0);
}

static void mb_coll__build_tree(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                       const struct shape *s)
{
    int n = s->n, L = s->L, D = s->D;
    double S = req->bytes;
    if (req->op == MB_COLL_ALL_REDUCE && D == 1) { /* chain: reduce down, broadcast back */
        for (int j = 0; j + 1 < L; j++) {
            mb_coll__flows_add(f, net, s->mem[j], s->mem[j + 1], S, 0);
            mb_coll__flows_add(f, net, s->mem[j + 1], s->mem[j], S, 0);
        }
        return;
    }
    double intra = req->op == MB_COLL_ALL_REDUCE ? 2 * S / L : S / L;
    double cross = req->op == MB_COLL_ALL_REDUCE ? 2.0 * (D - 1) / D * S / L : (D - 1) * S / n;
    for (int k = 0; k < D; k++)
        for (int a = 0; a < L; a++)
            for (int b = 0; b < L; b++)
                if (a != b)
                    mb_coll__flows_add(f, net, s->mem[k * L + a], s->mem[k * L + b], intra, 0);
    if (req->op == MB_COLL_ALL_REDUCE)
        mb_coll__build_cross(f, net, s, cross);
    else /* all-gather / reduce-scatter: ring over D moving (D-1) shards of S/n */
        mb_coll__build_cross(f, net, s, cross);
}

static void mb_coll__build_nvls(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                       const struct shape *s)
{
    double S = req->bytes;
    for (int i = 0; i < s->n; i++) {
        int g = s->gpu[i];
        struct mb_flow_desc *d = mb_coll__flows_push(f);
        d->bytes = S;
        d->bound = net->nvls_bw;
        d->n_links = 2;
        d->links[0] = net->nvl_tx[g];
        d->links[1] = net->nvl_rx[g];
    }
    mb_coll__build_cross(f, net, s, 2.0 * (s->D - 1) / s->D * S / s->L);
}

static void mb_coll__build_pairwise(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                           const struct shape *s)
{
    int n = s->n;
    if (req->op == MB_COLL_SENDRECV) {
        for (int i = 0; i < n; i++)
            mb_coll__flows_add(f, net, s->gpu[i], s->gpu[(i + 1) % n], req->bytes, 0);
        return;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            mb_coll__flows_add(f, net, s->gpu[i], s->gpu[j], req->bytes / n, 0);
}

/* Bytes on the wire at the protocol's bandwidth factor. */
static void mb_coll__flows_scale(struct mb_flow_desc *f, int n, double eff)
{
    for (int i = 0; i < n && eff < 1; i++)
        f[i].bytes /= eff;
}

static void mb_coll__choice_of(const struct plan *pl, struct mb_coll_choice *ch)
{
    if (ch)
        *ch = (struct mb_coll_choice){pl->a, pl->p, pl->lat, pl->bw_s};
}

int mb_coll_add_plan(struct mb_engine *e, const struct mb_coll_net *net, const struct mb_coll_req *req, int stream,
                     struct mb_coll_choice *ch, struct mb_err *err)
{
    struct shape s;
    if (!net || !req || !net->route)
        return mb_err_set(err, NULL, 0, 0, "collective: no fabric");
    if (mb_coll__shape_make(net, req, &s, err))
        return -1;
    enum mb_coll_algo a = req->algo;
    if ((unsigned)a >= MB_COLL_ALGO_COUNT) {
        mb_coll__shape_free(&s);
        return mb_err_set(err, NULL, 0, 0, "collective: unknown algorithm %d", (int)a);
    }
    struct rates r = mb_coll__net_rates(net);
    struct plan pl;
    if (mb_coll__plan_req(req->op, a, s.n, s.L, s.D, req->bytes, mb_coll__net_nvls_ok(net, &s), &r, &pl)) {
        mb_coll__shape_free(&s);
        if (a == MB_COLL_ALGO_AUTO)
            a = MB_COLL_ALGO_RING;
        return mb_err_set(err, NULL, 0, 0, "collective: algorithm '%s' does not apply to %s on %d ranks%s",
                          mb_coll_algo_name(a), mb_coll_op_name(req->op), req->n_ranks,
                          a == MB_COLL_ALGO_NVLS && !net->nvls ? " (no NVLS on this system)" : "");
    }
    a = pl.a;
    struct flows f = {0};
    switch (a) {
    case MB_COLL_ALGO_RING:
    case MB_COLL_ALGO_PAT: mb_coll__build_ring(&f, net, req, &s); break;
    case MB_COLL_ALGO_TREE: mb_coll__build_tree(&f, net, req, &s); break;
    case MB_COLL_ALGO_NVLS: mb_coll__build_nvls(&f, net, req, &s); break;
    default: mb_coll__build_pairwise(&f, net, req, &s); break;
    }
    mb_coll__flows_scale(f.v, f.n, pl.eff);
    struct mb_task_desc t = {0};
    t.stream = stream;
    t.duration = pl.lat;
    mb_coll__pace(req, &t, f.v, f.n); /* a measured time: its fixed part, flows paced to its rest */
    t.n_flows = f.n;
    t.flows = f.v;
    t.kind = (int)req->op;
    t.tag = (int)a;
    int id = mb_engine_add_task(e, &t);
    mb_free(f.v);
    mb_coll__shape_free(&s);
    mb_coll__choice_of(&pl, ch);
    return id;
}

int mb_coll_add(struct mb_engine *e, const struct mb_coll_net *net, const struct mb_coll_req *req, int stream,
                enum mb_coll_algo *algo_out, struct mb_err *err)
{
    struct mb_coll_choice ch;
    int id = mb_coll_add_plan(e, net, req, stream, &ch, err);
    if (id >= 0 && algo_out)
        *algo_out = ch.algo;
    return id;
}

/* ---- one representative rank ---------------------------------------------- */

static void mb_coll__rank_flow(struct mb_flow_desc *f, int *n, double bytes, int link, double bound)
{
    if (!(bytes > 0))
        return;
    f[*n] = (struct mb_flow_desc){bytes, 1, {link}, bound};
    (*n)++;
}

int mb_coll_rank_plan(const struct mb_coll_rank *rk, const struct mb_coll_req *req, int L, int D,
                      struct mb_task_desc *t, struct mb_flow_desc f[3], struct mb_coll_choice *ch)
{
    int n = req->n_ranks;
    memset(t, 0, sizeof *t);
    if (ch)
        memset(ch, 0, sizeof *ch);
    if (n <= 1 || !(req->bytes > 0))
        return 0;
    struct rates r = {rk->nvl_bw, rk->nic_bw, rk->nvls_bw, rk->lat[MB_COLL_HOP_NVLINK], rk->lat[MB_COLL_HOP_NIC],
                      rk->nvls_lat, rk->intra_pcie};
    int nvls_ok = rk->nvls && !rk->intra_pcie && rk->nvls_bw > 0;
    struct plan pl;
    if (mb_coll__plan_req(req->op, req->algo, n, L, D, req->bytes, nvls_ok, &r, &pl))
        return -1;
    int nf = 0;
    mb_coll__rank_flow(f, &nf, pl.v.nv, rk->nv_link, 0);
    mb_coll__rank_flow(f, &nf, pl.v.nvls, rk->nv_link, rk->nvls_bw);
    mb_coll__rank_flow(f, &nf, pl.v.nic, rk->nic_link, rk->nic_bound);
    mb_coll__flows_scale(f, nf, pl.eff);
    t->duration = pl.lat;
    t->n_flows = nf;
    t->flows = f;
    mb_coll__pace(req, t, f, nf);
    mb_coll__choice_of(&pl, ch);
    return nf;
}

int mb_coll_rank_task(const struct mb_coll_rank *rk, const struct mb_coll_req *req, int L, int D,
                      struct mb_task_desc *t, struct mb_flow_desc f[3], enum mb_coll_algo *used)
{
    struct mb_coll_choice ch;
    int nf = mb_coll_rank_plan(rk, req, L, D, t, f, &ch);
    if (nf > 0 && used)
        *used = ch.algo;
    return nf;
}
