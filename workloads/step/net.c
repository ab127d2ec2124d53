/*
 * net.c -- the step's communication: collective and all-to-all ops of the op
 * lists (bytes per link, latency, measured pacing) and the collective tasks
 * of the schedule and the gradient reduction. Per-rank volumes come from
 * mb_coll_volume (sim/mb_coll.h), the table `mbsim collective` uses.
 */
#include "step_int.h"
#include "mb_calib.h"
#include "mb_coll.h"
#include "mb_fabric.h"

#include <math.h>
#include <string.h>

/* A measured curve of this collective in the scenario's calibration (an
 * nccl-tests table or an imported profile; mb_calib_coll_line): replaces the
 * op's fixed latency by the curve's fixed part and returns the time (s) the
 * op's flows take when alone -- each flow is capped at its bytes / that time,
 * so an uncontended op takes the measured time and contention on the links
 * slows it further. `size` in the nccl-tests convention. 0 = link model only.
 * All-gather and reduce-scatter move the same bytes and answer for each other. */
static double mb__coll_meas(struct mb_build *b, const char *op, struct mb_group g, double size, double *lat)
{
    double a, bw;
    if (g.size <= 1 || !(size > 0))
        return 0;
    if (!mb_calib_coll_line(b->cal, op, g.size, size, &a, &bw) &&
        !(strcmp(op, "allgather") == 0 && mb_calib_coll_line(b->cal, "reducescatter", g.size, size, &a, &bw)))
        return 0;
    *lat = a;
    return size / bw;
}

/* Per-flow rate cap of an op whose flows must take `paced` seconds alone
 * (mb__coll_meas), combined with another cap (0 = none). */
double mb_net_cap(double bytes, double paced, double other)
{
    double c = paced > 0 ? bytes / paced : 0;
    return other > 0 && (c <= 0 || other < c) ? other : c;
}

static struct mb_op mb__comm_op(const char *name, enum mb_commk ck)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMM;
    o.name = name;
    o.ck = ck;
    o.src = MB_SRC_LINK;
    return o;
}

/* Ring all-gather / reduce-scatter of a `total`-byte buffer over group g --
 * NCCL's rings, the same volumes as `mbsim collective` (mb_coll_volume):
 * (n-1)/n of it leaves each rank, 1/local of that on the NIC when g spans
 * domains; one per-step latency of the slowest hop per step. */
void mb_net_ring(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_commk ck, struct mb_group g,
                 double total, int parallel)
{
    if (g.size <= 1 || total <= 0)
        return;
    struct mb_op o = mb__comm_op(name, ck);
    struct mb_coll_vol v;
    mb_coll_volume(MB_COLL_ALL_GATHER, MB_COLL_ALGO_RING, g.size, g.local, g.domains, total, &v);
    o.parallel = parallel;
    o.bytes_nv = v.nv;
    o.bytes_nic = v.nic;
    o.latency = mb_coll_vol_latency(&v, b->nv_lat, b->nic_lat, 0);
    o.region = b->cur_region; /* NCCL kernels inside a captured module are part of its graph */
    o.peak = v.nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    if (ck != MB_CK_CP)
        o.paced = mb__coll_meas(b, "allgather", g, total, &o.latency);
    if (o.paced > 0)
        o.src = MB_SRC_MEASURED;
    mb_ops_push(l, &o);
}

/* Scale-out rate left to one rank of an all-to-all over group g when every
 * group sends at once, on an oversubscribed fabric (topology/mb_fabric.h:
 * rail leaves of MB_FABRIC_LEAF_NODES nodes whose uplink carries that many
 * NICs' worth / oversubscription). A fraction x of the rank's NIC bytes goes
 * to peers under other leaves; the symmetric max-min share of the uplink is
 * nic_cap / (oversubscription * x) per NIC, binding when that product
 * exceeds 1. Rings cross a leaf boundary on a single edge per leaf, so only
 * all-to-alls are capped. 0 = no cap. */
static double mb__a2a_nic_cap(const struct mb_build *b, struct mb_group g)
{
    double os = b->s->system.oversubscription;
    if (!(os > 1) || g.domains <= 1 || g.size <= g.local)
        return 0;
    double leaf = (double)b->s->system.gpus_per_node * MB_FABRIC_LEAF_NODES;
    double same = ceil(leaf / (g.stride > 0 ? g.stride : 1)); /* members under the first member's leaf */
    same = fmin(fmax(same, g.local), g.size);
    double x = (g.size - same) / (g.size - g.local);
    return os * x > 1 ? b->nic_cap / (os * x) : 0;
}

/* All-to-all: bytes_nv / bytes_nic leave this rank for peers inside / outside
 * its NVLink domain. `nccl`: an NCCL all-to-all (Megatron's alltoall
 * dispatcher), which a measured alltoall curve answers; DeepEP/HybridEP run
 * their own kernels (0). */
void mb_net_a2a(struct mb_build *b, struct mb_oplist *l, const char *name, struct mb_group g, double bytes_nv,
                double bytes_nic, int nccl)
{
    struct mb_op o = mb__comm_op(name, MB_CK_EP);
    o.bytes_nv = bytes_nv;
    o.bytes_nic = bytes_nic;
    o.latency = b->nv_lat + (g.domains > 1 ? b->nic_lat : 0);
    o.region = b->cur_region;
    /* nccl-tests alltoall size = the rank's whole send buffer (g.size/(g.size-1) of what leaves) */
    double leaving = bytes_nv + bytes_nic;
    if (nccl)
        o.paced = mb__coll_meas(b, "alltoall", g, g.size > 1 ? leaving * g.size / (g.size - 1) : 0, &o.latency);
    if (o.paced > 0)
        o.src = MB_SRC_MEASURED;
    o.bound_nic = mb__a2a_nic_cap(b, g);
    o.peak = bytes_nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    if (o.bytes_nv > 0 || o.bytes_nic > 0)
        mb_ops_push(l, &o);
}

/* CP all-to-all of `bytes` (this rank's tokens, all heads) over the CP group:
 * (cp-1)/cp of them leave, split by destination domain. */
void mb_net_cp_a2a(struct mb_build *b, struct mb_oplist *l, double bytes)
{
    struct mb_group g = b->g_cp;
    struct mb_op o = mb__comm_op("cp a2a", MB_CK_CP);
    o.bytes_nv = bytes * (g.local - 1) / g.size;
    o.bytes_nic = bytes * (g.size - g.local) / g.size;
    o.latency = b->nv_lat + (g.domains > 1 ? b->nic_lat : 0);
    o.bound_nic = mb__a2a_nic_cap(b, g);
    o.peak = o.bytes_nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    o.kf = o.kb = 1;
    mb_ops_push(l, &o);
}

/* Pipeline p2p send of `bytes` from stage st (NVLink inside the domain, else NIC). */
int mb_net_p2p(struct mb_build *b, int st, double bytes, int dep)
{
    struct mb_flow_desc f = {bytes, 1, {b->pp_over_nic ? b->l_nic[st] : b->l_nv[st]}, 0};
    b->cur.bytes = bytes;
    b->cur.peak = b->pp_over_nic ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    return mb_emit_task(b, b->cstream[st][MB_CK_PP], MB_TK_OF_COMM(MB_CK_PP), b->pp_over_nic ? b->nic_lat : b->nv_lat,
                        &f, 1, dep);
}

/* One collective task of stage st on the stream of kind `on`, accounted as
 * kind `ck`: the rank's per-hop volumes v (mb_coll_volume) as flows on its
 * NVLink port and NIC (NVLS bytes through the NVLink port at the NVLS rate),
 * after v's latency; a measured curve of `op` (mb__coll_meas) replaces the
 * latency and paces the flows. */
static int mb__coll_task(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, struct mb_group g,
                         const char *op, double size, const struct mb_coll_vol *v, int dep)
{
    double lat = mb_coll_vol_latency(v, b->nv_lat, b->nic_lat, b->nvls_lat);
    double paced = mb__coll_meas(b, op, g, size, &lat);
    struct mb_flow_desc f[3];
    int nf = 0;
    if (v->nv > 0)
        f[nf++] = (struct mb_flow_desc){v->nv, 1, {b->l_nv[st]}, mb_net_cap(v->nv, paced, 0)};
    if (v->nvls > 0)
        f[nf++] = (struct mb_flow_desc){v->nvls, 1, {b->l_nv[st]}, mb_net_cap(v->nvls, paced, b->nvls_bw)};
    if (v->nic > 0)
        f[nf++] = (struct mb_flow_desc){v->nic, 1, {b->l_nic[st]}, mb_net_cap(v->nic, paced, 0)};
    b->cur.bytes = v->nv + v->nvls + v->nic;
    b->cur.peak = v->nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    return mb_emit_task(b, b->cstream[st][on], MB_TK_OF_COMM(ck), lat, f, nf, dep);
}

/* Ring all-gather (or reduce-scatter: the same volumes) of `total` bytes over
 * g on the stream of kind `on`, accounted as kind `ck`; returns dep when g
 * has one rank. */
int mb_net_gather(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, struct mb_group g, double total,
                  int dep)
{
    if (g.size <= 1 || total <= 0) {
        b->cur = (struct mb_tinfo){0};
        return dep;
    }
    struct mb_coll_vol v;
    mb_coll_volume(MB_COLL_ALL_GATHER, MB_COLL_ALGO_RING, g.size, g.local, g.domains, total, &v);
    return mb__coll_task(b, st, on, ck, g, "allgather", total, &v, dep);
}

/* DP gradient all-reduce of `bytes` over group g (DDP: optimizer.distributed
 * false), on the DP stream: the scenario's collectives.all_reduce algorithm, or
 * NCCL-like AUTO -- the least mb_coll_vol_time() of ring, tree and NVLS (when
 * the system has it and g has >= 2 GPUs per NVLink domain) at this rank's
 * achieved rates. The same per-rank volumes as `mbsim collective`
 * (mb_coll_volume); NVLS bytes go through the NVLink port at the NVLS rate. */
int mb_net_allreduce(struct mb_build *b, int st, struct mb_group g, double bytes, int dep)
{
    if (g.size <= 1 || bytes <= 0) {
        b->cur = (struct mb_tinfo){0};
        return dep;
    }
    struct mb_coll_vol best = {0}, v;
    double tbest = -1;
    for (int a = MB_COLL_ALGO_RING; a <= MB_COLL_ALGO_NVLS; a++) {
        if (b->s->allreduce_algo != MB_COLL_ALGO_AUTO && a != b->s->allreduce_algo)
            continue;
        if (a == MB_COLL_ALGO_NVLS && !(b->nvls_bw > 0 && g.local > 1))
            continue;
        mb_coll_volume(MB_COLL_ALL_REDUCE, (enum mb_coll_algo)a, g.size, g.local, g.domains, bytes, &v);
        double t = mb_coll_vol_time(&v, b->nv_cap, b->nic_cap, b->nvls_bw, b->nv_lat, b->nic_lat, b->nvls_lat);
        if (tbest < 0 || t < tbest * (1 - 1e-12))
            tbest = t, best = v;
    }
    return mb__coll_task(b, st, MB_CK_DP, MB_CK_DP, g, "allreduce", bytes, &best, dep);
}
