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

#include <assert.h>
#include <math.h>
#include <string.h>

static const char *const op_names[MB_COLL_OP_COUNT] = {"all_reduce", "all_gather", "reduce_scatter",
                                                      "broadcast",  "alltoall",   "sendrecv"};
static const char *const algo_names[MB_COLL_ALGO_COUNT] = {"auto", "ring", "tree", "nvls", "pairwise"};

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

static int gpu_of(const struct mb_coll_req *r, int i)
{
    return r->ranks ? r->ranks[i] : r->first_gpu + i;
}

static void shape_free(struct shape *s)
{
    mb_free(s->gpu);
    mb_free(s->mem);
}

static int shape_make(const struct mb_coll_net *net, const struct mb_coll_req *r, struct shape *s,
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
        int g = gpu_of(r, i);
        if (g < 0 || g >= net->n_gpus) {
            mb_free(dom);
            mb_free(cnt);
            shape_free(s);
            return mb_err_set(err, NULL, 0, 0, "collective: rank %d is GPU %d, outside the fabric's %d GPUs",
                              i, g, net->n_gpus);
        }
        for (int j = 0; j < i; j++)
            if (s->gpu[j] == g) {
                mb_free(dom);
                mb_free(cnt);
                shape_free(s);
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

static int log2ceil(int x)
{
    int k = 0;
    while ((1 << k) < x)
        k++;
    return k;
}

/* ---- algorithm table: applicability, latency, volumes --------------------- */

/* Applicability of algorithm a to op on a group of D domains of L ranks;
 * nvls_ok: the fabric has NVLS for this group. */
static int algo_ok_vol(enum mb_coll_op op, enum mb_coll_algo a, int L, int D, int nvls_ok)
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
    default:
        return 0;
    }
}

int mb_coll_algo_ok(const struct mb_coll_net *net, const struct mb_coll_req *req, enum mb_coll_algo a)
{
    struct shape s;
    if (shape_make(net, req, &s, NULL))
        return 0;
    int nvls_ok = net->nvls && net->nvls_bw > 0 && s.uniform && net->nvl_tx && net->nvl_tx[s.gpu[0]] >= 0;
    int ok = algo_ok_vol(req->op, a, s.L, s.D, nvls_ok);
    shape_free(&s);
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
        v->steps_nic = op == MB_COLL_ALL_REDUCE ? 2.0 * log2ceil(D) : D - 1;
        break;
    case MB_COLL_ALGO_NVLS:
        v->nvls = S;
        v->nic = D > 1 ? 2.0 * (D - 1) / D * S / L : 0;
        v->steps_nv = 2;
        v->steps_nic = 2.0 * log2ceil(D);
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

/* Latency of an algorithm: steps x per-step latency of the slowest hop. */
static double coll_latency(const struct mb_coll_net *net, const struct mb_coll_req *req, const struct shape *s,
                           enum mb_coll_algo a)
{
    struct mb_coll_vol v;
    if (mb_coll_volume(req->op, a, s->n, s->L, s->D, req->bytes, &v))
        return 0;
    return mb_coll_vol_latency(&v, net->lat[MB_COLL_HOP_NVLINK], net->lat[MB_COLL_HOP_NIC], net->nvls_lat);
}

/* Rates and latencies AUTO estimates with. */
struct rates {
    double nvl_bw, nic_bw, nvls_bw, nv_lat, nic_lat, nvls_lat;
};

static double estimate_vol(enum mb_coll_op op, enum mb_coll_algo a, int n, int L, int D, double S,
                           const struct rates *r)
{
    struct mb_coll_vol v;
    mb_coll_volume(op, a, n, L, D, S, &v);
    return mb_coll_vol_time(&v, r->nvl_bw, r->nic_bw, r->nvls_bw, r->nv_lat, r->nic_lat, r->nvls_lat);
}

/* The applicable algorithm with the least estimate; order = preference on
 * ties: ring, tree, nvls, pairwise. */
static enum mb_coll_algo choose_vol(enum mb_coll_op op, int n, int L, int D, double S, int nvls_ok,
                                    const struct rates *r)
{
    enum mb_coll_algo best = MB_COLL_ALGO_RING;
    double tbest = -1;
    for (int a = MB_COLL_ALGO_RING; a < MB_COLL_ALGO_COUNT; a++) {
        if (a == MB_COLL_ALGO_TREE && op != MB_COLL_ALL_REDUCE)
            continue; /* NCCL's trees are all_reduce only */
        if (!algo_ok_vol(op, (enum mb_coll_algo)a, L, D, nvls_ok))
            continue;
        double t = estimate_vol(op, (enum mb_coll_algo)a, n, L, D, S, r);
        if (tbest < 0 || t < tbest * (1 - 1e-12)) {
            tbest = t;
            best = (enum mb_coll_algo)a;
        }
    }
    return best;
}

static struct rates net_rates(const struct mb_coll_net *net)
{
    return (struct rates){net->nvl_bw, net->nic_bw, net->nvls_bw, net->lat[MB_COLL_HOP_NVLINK],
                          net->lat[MB_COLL_HOP_NIC], net->nvls_lat};
}

double mb_coll_estimate(const struct mb_coll_net *net, const struct mb_coll_req *req, enum mb_coll_algo a)
{
    if (!mb_coll_algo_ok(net, req, a))
        return -1;
    struct shape s;
    if (shape_make(net, req, &s, NULL))
        return -1;
    struct rates r = net_rates(net);
    double t = estimate_vol(req->op, a, s.n, s.L, s.D, req->bytes, &r);
    shape_free(&s);
    return t;
}

enum mb_coll_algo mb_coll_choose(const struct mb_coll_net *net, const struct mb_coll_req *req)
{
    struct shape s;
    if (shape_make(net, req, &s, NULL))
        return MB_COLL_ALGO_RING;
    int nvls_ok = net->nvls && net->nvls_bw > 0 && s.uniform && net->nvl_tx && net->nvl_tx[s.gpu[0]] >= 0;
    struct rates r = net_rates(net);
    enum mb_coll_algo a = choose_vol(req->op, s.n, s.L, s.D, req->bytes, nvls_ok, &r);
    shape_free(&s);
    return a;
}

/* A measured time for the call (req->meas_paced > 0): the task holds its
 * stream for the measured fixed part and every flow is capped at its bytes /
 * meas_paced. */
static void pace(const struct mb_coll_req *req, struct mb_task_desc *t, struct mb_flow_desc *f, int n)
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
static struct mb_flow_desc *flows_push(struct flows *f)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 64;
        f->v = mb_realloc(f->v, (size_t)f->cap * sizeof *f->v);
    }
    struct mb_flow_desc *d = &f->v[f->n++];
    memset(d, 0, sizeof *d);
    return d;
}

static void flows_add(struct flows *f, const struct mb_coll_net *net, int src, int dst, double bytes,
                      double bound)
{
    if (src == dst || !(bytes > 0))
        return;
    struct mb_flow_desc *d = flows_push(f);
    d->bytes = bytes;
    d->bound = bound;
    d->n_links = net->route(net->ctx, src, dst, d->links);
    assert(d->n_links >= 1 && d->n_links <= MB_FLOW_MAX_LINKS);
}

/* Rings: C channels; channel c visits each domain's ranks from local index c. */
static void build_ring(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
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
            flows_add(f, net, seq[i], seq[(i + 1) % n], V / C, 0);
    }
    mb_free(seq);
}

/* Scale-out stage of the hierarchical algorithms: ring over the D ranks with the same local index. */
static void build_cross(struct flows *f, const struct mb_coll_net *net, const struct shape *s, double bytes)
{
    if (s->D < 2)
        return;
    for (int k = 0; k < s->D; k++)
        for (int j = 0; j < s->L; j++)
            flows_add(f, net, s->mem[k * s->L + j], s->mem[((k + 1) % s->D) * s->L + j], bytes, 0);
}

static void build_tree(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                       const struct shape *s)
{
    int n = s->n, L = s->L, D = s->D;
    double S = req->bytes;
    if (req->op == MB_COLL_ALL_REDUCE && D == 1) { /* chain: reduce down, broadcast back */
        for (int j = 0; j + 1 < L; j++) {
            flows_add(f, net, s->mem[j], s->mem[j + 1], S, 0);
            flows_add(f, net, s->mem[j + 1], s->mem[j], S, 0);
        }
        return;
    }
    double intra = req->op == MB_COLL_ALL_REDUCE ? 2 * S / L : S / L;
    double cross = req->op == MB_COLL_ALL_REDUCE ? 2.0 * (D - 1) / D * S / L : (D - 1) * S / n;
    for (int k = 0; k < D; k++)
        for (int a = 0; a < L; a++)
            for (int b = 0; b < L; b++)
                if (a != b)
                    flows_add(f, net, s->mem[k * L + a], s->mem[k * L + b], intra, 0);
    if (req->op == MB_COLL_ALL_REDUCE)
        build_cross(f, net, s, cross);
    else /* all-gather / reduce-scatter: ring over D moving (D-1) shards of S/n */
        build_cross(f, net, s, cross);
}

static void build_nvls(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                       const struct shape *s)
{
    double S = req->bytes;
    for (int i = 0; i < s->n; i++) {
        int g = s->gpu[i];
        struct mb_flow_desc *d = flows_push(f);
        d->bytes = S;
        d->bound = net->nvls_bw;
        d->n_links = 2;
        d->links[0] = net->nvl_tx[g];
        d->links[1] = net->nvl_rx[g];
    }
    build_cross(f, net, s, 2.0 * (s->D - 1) / s->D * S / s->L);
}

static void build_pairwise(struct flows *f, const struct mb_coll_net *net, const struct mb_coll_req *req,
                           const struct shape *s)
{
    int n = s->n;
    if (req->op == MB_COLL_SENDRECV) {
        for (int i = 0; i < n; i++)
            flows_add(f, net, s->gpu[i], s->gpu[(i + 1) % n], req->bytes, 0);
        return;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            flows_add(f, net, s->gpu[i], s->gpu[j], req->bytes / n, 0);
}

int mb_coll_add(struct mb_engine *e, const struct mb_coll_net *net, const struct mb_coll_req *req, int stream,
                enum mb_coll_algo *algo_out, struct mb_err *err)
{
    struct shape s;
    if (!net || !req || !net->route)
        return mb_err_set(err, NULL, 0, 0, "collective: no fabric");
    if (shape_make(net, req, &s, err))
        return -1;
    enum mb_coll_algo a = req->algo;
    if ((unsigned)a >= MB_COLL_ALGO_COUNT) {
        shape_free(&s);
        return mb_err_set(err, NULL, 0, 0, "collective: unknown algorithm %d", (int)a);
    }
    if (a == MB_COLL_ALGO_AUTO)
        a = mb_coll_choose(net, req);
    if (!mb_coll_algo_ok(net, req, a)) {
        shape_free(&s);
        return mb_err_set(err, NULL, 0, 0, "collective: algorithm '%s' does not apply to %s on %d ranks%s",
                          mb_coll_algo_name(a), mb_coll_op_name(req->op), req->n_ranks,
                          a == MB_COLL_ALGO_NVLS && !net->nvls ? " (no NVLS on this system)" : "");
    }
    struct flows f = {0};
    switch (a) {
    case MB_COLL_ALGO_RING: build_ring(&f, net, req, &s); break;
    case MB_COLL_ALGO_TREE: build_tree(&f, net, req, &s); break;
    case MB_COLL_ALGO_NVLS: build_nvls(&f, net, req, &s); break;
    default: build_pairwise(&f, net, req, &s); break;
    }
    struct mb_task_desc t = {0};
    t.stream = stream;
    t.duration = coll_latency(net, req, &s, a);
    pace(req, &t, f.v, f.n); /* a measured time: its fixed part, flows paced to its rest */
    t.n_flows = f.n;
    t.flows = f.v;
    t.kind = (int)req->op;
    t.tag = (int)a;
    int id = mb_engine_add_task(e, &t);
    mb_free(f.v);
    shape_free(&s);
    if (algo_out)
        *algo_out = a;
    return id;
}

/* ---- one representative rank ---------------------------------------------- */

static void rank_flow(struct mb_flow_desc *f, int *n, double bytes, int link, double bound)
{
    if (!(bytes > 0))
        return;
    f[*n] = (struct mb_flow_desc){bytes, 1, {link}, bound};
    (*n)++;
}

int mb_coll_rank_task(const struct mb_coll_rank *rk, const struct mb_coll_req *req, int L, int D,
                      struct mb_task_desc *t, struct mb_flow_desc f[3], enum mb_coll_algo *used)
{
    int n = req->n_ranks;
    memset(t, 0, sizeof *t);
    if (n <= 1 || !(req->bytes > 0))
        return 0;
    struct rates r = {rk->nvl_bw, rk->nic_bw, rk->nvls_bw, rk->lat[MB_COLL_HOP_NVLINK], rk->lat[MB_COLL_HOP_NIC],
                      rk->nvls_lat};
    int nvls_ok = rk->nvls && rk->nvls_bw > 0;
    enum mb_coll_algo a = req->algo;
    if (a == MB_COLL_ALGO_AUTO)
        a = choose_vol(req->op, n, L, D, req->bytes, nvls_ok, &r);
    if (!algo_ok_vol(req->op, a, L, D, nvls_ok))
        return -1;
    struct mb_coll_vol v;
    mb_coll_volume(req->op, a, n, L, D, req->bytes, &v);
    int nf = 0;
    rank_flow(f, &nf, v.nv, rk->nv_link, 0);
    rank_flow(f, &nf, v.nvls, rk->nv_link, rk->nvls_bw);
    rank_flow(f, &nf, v.nic, rk->nic_link, rk->nic_bound);
    t->duration = mb_coll_vol_latency(&v, r.nv_lat, r.nic_lat, r.nvls_lat);
    t->n_flows = nf;
    t->flows = f;
    pace(req, t, f, nf);
    if (used)
        *used = a;
    return nf;
}
