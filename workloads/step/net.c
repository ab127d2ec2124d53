/*
 * net.c -- the step's communication, priced by the collective layer that
 * `mbsim collective` uses (sim/engine/mb_coll.h): every TP, CP, EP, ETP, PP, DP and
 * FSDP transfer is a struct mb_coll_req on the group it runs on, and
 * mb_coll_rank_task gives the simulated rank's task -- AUTO's algorithm
 * choice, the per-rank volumes, the latency, a measured curve's pacing
 * (mb_calib_coll_pace) -- from the same rules as mb_coll_add. The step
 * simulates one rank per pipeline stage, so its flows run on that rank's
 * NVLink and NIC ports; an all-to-all across rail leaves of an
 * oversubscribed fabric is capped at the rank's share of the leaf uplink.
 * DeepEP/HybridEP dispatch and combine are their own kernels, not NCCL
 * collectives: their volumes come from the dispatcher (moe.c), their
 * latency is one pairwise step, and HybridEP's scale-out flow is capped at
 * the rate its own benchmark reaches across that many domains (calibration
 * `links.hybridep_nic`; the link model's NIC efficiency is NCCL's ring).
 */
#include "step_int.h"
#include "mb_calib.h"
#include "mb_fabric.h"

#include <math.h>
#include <string.h>

/* Scale-out rate left to one rank of an all-to-all over group g when every
 * group sends at once, on an oversubscribed fabric (topology/mb_fabric.h:
 * rail leaves of MB_FABRIC_LEAF_NODES nodes whose uplink carries that many
 * NICs' worth / oversubscription). A fraction x of the rank's NIC bytes goes
 * to peers under other leaves; the symmetric max-min share of the uplink is
 * nic_cap / (oversubscription * x) per NIC, binding when that product
 * exceeds 1. Rings cross a leaf boundary on a single edge per leaf, so only
 * all-to-alls are capped. 0 = no cap. */
static double mb_step__a2a_nic_cap(const struct mb_build *b, struct mb_group g)
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

/* Stage st's rank as the collective layer sees it (st < 0: placeholder
 * links 0 = NVLink, 1 = NIC, for op lists built before the engine). */
static struct mb_coll_rank mb_step__rank(const struct mb_build *b, int st, double nic_bound)
{
    struct mb_coll_rank rk = {st >= 0 ? b->l_nv[st] : 0,
                              st >= 0 ? b->l_nic[st] : 1,
                              b->nv_cap,
                              b->nic_cap,
                              b->nvls_bw,
                              {b->nv_lat, b->nic_lat},
                              b->nvls_lat,
                              b->nvls_bw > 0,
                              nic_bound,
                              b->s->system.intra_pcie};
    return rk;
}

/* A request on group g, with the scenario calibration's measured pacing when
 * `measured` and a curve of op on g's size exists. */
static struct mb_coll_req mb_step__req(const struct mb_build *b, enum mb_coll_op op, enum mb_coll_algo algo,
                                  struct mb_group g, double bytes, int measured)
{
    struct mb_coll_req q = {op, algo, g.size, NULL, 0, bytes, 0, 0, 0};
    if (measured)
        mb_calib_coll_pace(b->cal, mb_coll_op_name(op), g.size, bytes, &q.meas_lat, &q.meas_paced);
    return q;
}

static struct mb_op mb_step__comm_op(const char *name, enum mb_commk ck, const struct mb_coll_req *q)
{
    struct mb_op o = {0};
    o.type = MB_OP_COMM;
    o.name = name;
    o.ck = ck;
    o.src = q->meas_paced > 0 ? MB_SRC_MEASURED : MB_SRC_LINK;
    return o;
}

_Static_assert((int)MB_CC_COUNT == (int)MB_CK_COUNT, "report classes = comm kinds");

/* Keep what the costliest call (latency + bandwidth time alone) of kind ck
 * and the one with the longest latency resolved to, for the report. */
static void mb_step__note(struct mb_build *b, enum mb_commk ck, const struct mb_coll_req *q, struct mb_group g,
                     const struct mb_coll_choice *ch)
{
    struct mb_coll_use x = {1, (int)q->op, (int)ch->algo, (int)ch->proto, g.size, g.domains, q->bytes, ch->lat_s,
                            ch->bw_s};
    if (!b->coll[ck].used || x.lat_s + x.bw_s > b->coll[ck].lat_s + b->coll[ck].bw_s)
        b->coll[ck] = x;
    if (!b->coll_lat[ck].used || x.lat_s > b->coll_lat[ck].lat_s)
        b->coll_lat[ck] = x;
}

/* The op list entry of request q on group g: its task's latency and flows. */
static void mb_step__push_req(struct mb_build *b, struct mb_oplist *l, struct mb_op *o, const struct mb_coll_req *q,
                         struct mb_group g, double nic_bound)
{
    struct mb_coll_rank rk = mb_step__rank(b, -1, nic_bound);
    struct mb_task_desc t;
    struct mb_flow_desc f[3];
    struct mb_coll_choice ch;
    if (mb_coll_rank_plan(&rk, q, g.local, g.domains, &t, f, &ch) <= 0)
        return;
    mb_step__note(b, o->ck, q, g, &ch);
    o->latency = t.duration;
    for (int i = 0; i < t.n_flows; i++) {
        if (f[i].links[0] == rk.nv_link) {
            o->bytes_nv += f[i].bytes;
            o->bound_nv = f[i].bound;
        } else {
            o->bytes_nic += f[i].bytes;
            o->bound_nic = f[i].bound;
        }
    }
    o->peak = o->bytes_nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    o->region = b->cur_region; /* NCCL kernels inside a captured module are part of its graph */
    mb_ops_push(l, o);
}

/* All-gather or reduce-scatter (op) of a `total`-byte buffer over group g
 * (NCCL's rings: (n-1)/n of it leaves each rank, 1/local of that on the NIC
 * when g spans domains). CP ring attention passes KV blocks with p2p sends
 * along the same ring: not an NCCL collective, no measured curve answers it. */
void mb_net_ring(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_commk ck, enum mb_coll_op op,
                 struct mb_group g, double total, int parallel)
{
    if (g.size <= 1 || total <= 0)
        return;
    struct mb_coll_req q = mb_step__req(b, op, MB_COLL_ALGO_AUTO, g, total, ck != MB_CK_CP);
    struct mb_op o = mb_step__comm_op(name, ck, &q);
    o.parallel = parallel;
    if (ck == MB_CK_CP) { /* TE's p2p sends: the ring's bytes, one calibrated step per hop, no NCCL tuning */
        struct mb_coll_vol v;
        mb_coll_volume(op, MB_COLL_ALGO_RING, g.size, g.local, g.domains, total, &v);
        o.bytes_nv = v.nv;
        o.bytes_nic = v.nic;
        o.latency = mb_coll_vol_latency(&v, b->nv_lat, b->nic_lat, 0);
        o.peak = v.nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
        o.region = b->cur_region;
        mb_ops_push(l, &o);
        return;
    }
    mb_step__push_req(b, l, &o, &q, g, 0);
}

/* Backward of a column-parallel linear under sequence parallelism: Transformer
 * Engine and Megatron-Core keep only the sequence-sharded input in forward and
 * all-gather it again for the weight gradient, beside the dgrad GEMM
 * (NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py at
 * 0004dbd, _Linear.backward "Overlap input AG with dgrad"; Megatron-Core
 * tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication
 * .backward). Pushed right after the GEMM: backward runs the list in reverse,
 * so the gather runs beside that GEMM's backward. Nothing for frozen weights
 * (no wgrad), without sequence parallelism (the input is whole) or on one rank. */
void mb_net_wgrad_gather(struct mb_build *b, struct mb_oplist *l, struct mb_group g, double total, int frozen)
{
    int n0 = l->n;
    if (frozen || !b->s->sequence_parallel)
        return;
    mb_net_ring(b, l, "tp allgather wgrad input", MB_CK_TP, MB_COLL_ALL_GATHER, g, total, 1);
    if (l->n > n0)
        l->op[l->n - 1].bwd_only = 1;
}

/* NCCL all-to-all of `bytes` per rank (nccl-tests size: the rank's send
 * buffer, 1/n of it to each rank) over g: Megatron's alltoall dispatcher (EP)
 * and Ulysses context parallelism (CP). */
void mb_net_a2a(struct mb_build *b, struct mb_oplist *l, const char *name, enum mb_commk ck, struct mb_group g,
                double bytes)
{
    if (g.size <= 1 || !(bytes > 0))
        return;
    struct mb_coll_req q = mb_step__req(b, MB_COLL_ALLTOALL, MB_COLL_ALGO_PAIRWISE, g, bytes, ck == MB_CK_EP);
    struct mb_op o = mb_step__comm_op(name, ck, &q);
    if (ck == MB_CK_CP)
        o.kf = o.kb = 1;
    mb_step__push_req(b, l, &o, &q, g, mb_step__a2a_nic_cap(b, g));
}

/* DeepEP / HybridEP dispatch or combine: bytes_nv / bytes_nic leave this rank
 * for peers inside / outside its NVLink domain (token deduplication in
 * moe.c); one pairwise step of latency, as an all-to-all. HybridEP's NIC
 * flow runs at most at the fraction of the NIC line rate its benchmark
 * reaches for this transfer kind across g.domains domains
 * (mb_calib_flex_nic_eff; `kind` < 0 or a table without the entry: no cap),
 * and at most at an oversubscribed uplink's share. */
void mb_net_flex(struct mb_build *b, struct mb_oplist *l, const char *name, struct mb_group g, double bytes_nv,
                 double bytes_nic, int kind)
{
    if (!(bytes_nv > 0 || bytes_nic > 0))
        return;
    struct mb_coll_vol v;
    mb_coll_volume(MB_COLL_ALLTOALL, MB_COLL_ALGO_PAIRWISE, g.size, g.local, g.domains, 1, &v);
    struct mb_coll_req none = {0};
    struct mb_op o = mb_step__comm_op(name, MB_CK_EP, &none);
    o.bytes_nv = bytes_nv;
    o.bytes_nic = bytes_nic;
    o.latency = mb_coll_vol_latency(&v, b->nv_lat, b->nic_lat, 0);
    o.bound_nic = mb_step__a2a_nic_cap(b, g);
    double eff = kind >= 0 ? mb_calib_flex_nic_eff(b->cal, (enum mb_calib_flex_kind)kind, g.domains) : 0;
    if (eff > 0) {
        double cap = eff * b->s->system.nic_bw;
        o.bound_nic = o.bound_nic > 0 ? fmin(o.bound_nic, cap) : cap;
    }
    o.peak = bytes_nic > 0 ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    o.region = b->cur_region;
    mb_ops_push(l, &o);
}

/* Task of request q for stage st on the stream of kind `on`, accounted as
 * kind `ck`, after dep; dep itself when q moves nothing. */
static int mb_step__task(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, const struct mb_coll_req *q,
                    struct mb_group g, int dep)
{
    struct mb_coll_rank rk = mb_step__rank(b, st, 0);
    struct mb_task_desc t;
    struct mb_flow_desc f[3];
    struct mb_coll_choice ch;
    if (mb_coll_rank_plan(&rk, q, g.local, g.domains, &t, f, &ch) <= 0) {
        b->cur = (struct mb_tinfo){0};
        return dep;
    }
    mb_step__note(b, ck, q, g, &ch);
    b->cur.bytes = 0;
    for (int i = 0; i < t.n_flows; i++)
        b->cur.bytes += f[i].bytes;
    b->cur.peak = f[t.n_flows - 1].links[0] == rk.nic_link ? b->s->system.nic_bw : b->s->system.nvlink_bw;
    b->cur.src = q->meas_paced > 0 ? MB_SRC_MEASURED : MB_SRC_LINK;
    return mb_emit_task(b, b->cstream[st][on], MB_TK_OF_COMM(ck), t.duration, f, t.n_flows, dep);
}

/* Pipeline p2p send of `bytes` from stage st to the next or previous stage:
 * a send/recv pair on NVLink inside the domain, else the NIC. */
int mb_net_p2p(struct mb_build *b, int st, double bytes, int dep)
{
    struct mb_group g = {2, b->pp_over_nic ? 1 : 2, b->pp_over_nic ? 2 : 1, 1};
    struct mb_coll_req q = mb_step__req(b, MB_COLL_SENDRECV, MB_COLL_ALGO_PAIRWISE, g, bytes, 0);
    return mb_step__task(b, st, MB_CK_PP, MB_CK_PP, &q, g, dep);
}

/* Collective op of `bytes` (nccl-tests size) over g on the stream of kind
 * `on`, accounted as `ck`: the DP and FSDP parameter all-gathers and gradient
 * reduce-scatters, and the DDP gradient all-reduce with the scenario's
 * collectives.all_reduce algorithm (auto: NCCL-like, the least estimate of
 * ring, tree and NVLS). Returns the task, or dep when g has one rank. */
static struct mb_coll_req mb_step__coll_req(const struct mb_build *b, enum mb_coll_op op, struct mb_group g, double bytes)
{
    enum mb_coll_algo algo = op == MB_COLL_ALL_REDUCE ? (enum mb_coll_algo)b->s->allreduce_algo : MB_COLL_ALGO_AUTO;
    return mb_step__req(b, op, algo, g, bytes, 1);
}

int mb_net_coll(struct mb_build *b, int st, enum mb_commk on, enum mb_commk ck, enum mb_coll_op op,
                struct mb_group g, double bytes, int dep)
{
    if (g.size <= 1 || !(bytes > 0)) {
        b->cur = (struct mb_tinfo){0};
        return dep;
    }
    struct mb_coll_req q = mb_step__coll_req(b, op, g, bytes);
    return mb_step__task(b, st, on, ck, &q, g, dep);
}

/* Seconds the task mb_net_coll would add takes alone on the rank's links (the
 * same request: algorithm, measured pacing), each flow at the lower of its
 * link's rate and its bound; 0 when g has one rank. */
double mb_net_coll_est(const struct mb_build *b, enum mb_coll_op op, struct mb_group g, double bytes)
{
    if (g.size <= 1 || !(bytes > 0))
        return 0;
    struct mb_coll_rank rk = mb_step__rank(b, -1, 0);
    struct mb_coll_req q = mb_step__coll_req(b, op, g, bytes);
    struct mb_task_desc t;
    struct mb_flow_desc f[3];
    if (mb_coll_rank_task(&rk, &q, g.local, g.domains, &t, f, NULL) <= 0)
        return 0;
    double longest = 0;
    for (int i = 0; i < t.n_flows; i++) {
        double cap = f[i].links[0] == rk.nic_link ? b->nic_cap : b->nv_cap;
        if (f[i].bound > 0 && f[i].bound < cap)
            cap = f[i].bound;
        longest = fmax(longest, f[i].bytes / cap);
    }
    return t.duration + longest;
}
