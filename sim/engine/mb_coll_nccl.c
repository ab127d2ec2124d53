/*
 * mb_coll_nccl.c -- NCCL's tuning model (see mb_coll_nccl.h).
 *
 * Constants and formulas from NVIDIA/nccl src/graph/tuning.cc at commit
 * 5067397c2676d5aed50042fc39e5c8ee96eb0027 (ncclTunerConstantsDefaults,
 * ncclTopoTuneModel, ncclTopoGetAlgoTime). Latencies in microseconds there,
 * seconds here. With nsteps = 2(n-1) all_reduce, n-1 all_gather/reduce_scatter,
 * n otherwise; N nodes; ppn = n / N:
 *   ring       base + (nsteps - nInter) intraLat + nInter interLat,
 *              nInter = 2(N-1) all_reduce, N-1 others (0 on one node);
 *              intraLat >= the network overhead (1 us, x3 Simple) when N > 1;
 *              broadcast: base + one step (NCCL's sameChannels case);
 *              all_reduce, Simple, N > 1, large: x 1.4 (ring plateau)
 *   tree       base + 2((ppn-1) intraLat + mb_coll__log2i(N) interLat)   (all_reduce)
 *   nvls       intraLat (+ interLat when N > 1)
 *   nvls_tree  base + intraLat + 2 mb_coll__log2i(N) interLat           (all_reduce)
 *   pat        base + mb_coll__log2i(N) interLat / 3.5 + 2.8 n          (AG/RS, ppn 1)
 * intraLat = hwLat[NVLINK or PCI][a][p] (x 1.8 for LL when N > 1), interLat =
 * hwLat[NET][a][p], or hwLat[NET][tree][p] when ppn = 1; graph latencyInter
 * is 0 (IB/RoCE plugins report none).
 */
#include "mb_coll_nccl.h"

/* Channels NCCL runs a large all-reduce on (the plateau rule's nBytes /
 * (nChannels x nRanks) >= 64): ASSUMPTION, 16 (NCCL's ring count on an 8-GPU
 * NVSwitch node is 16-32; the rule only moves the threshold). */
#define MB_NCCL_CHANNELS 16

enum { HW_NVLINK, HW_PCI, HW_NET };

/* baseLatencies[a][p], us: tree, ring, NVLS, NVLS tree, PAT (CollNet left out) */
static const double base_lat[MB_NCCL_ALGO_COUNT][MB_COLL_PROTO_COUNT] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};

/* hwLatencies[hw][a][p], us */
static const double hw_lat[3][MB_NCCL_ALGO_COUNT][MB_COLL_PROTO_COUNT] = {
    /* NVLINK */ {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    /* PCI    */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    /* NET    */ {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};

static const char *const algo_names[MB_NCCL_ALGO_COUNT] = {"tree", "ring", "nvls", "nvls_tree", "pat"};

const char *mb_nccl_algo_name(enum mb_nccl_algo a)
{
    return (unsigned)a < MB_NCCL_ALGO_COUNT ? algo_names[a] : "?";
}

/* NCCL's log2i: floor(log2(n)), 0 for n <= 1. */
static int mb_coll__log2i(int n)
{
    int k = 0;
    while (n >>= 1)
        k++;
    return k;
}

static int mb_coll__is_agrs(enum mb_coll_op op)
{
    return op == MB_COLL_ALL_GATHER || op == MB_COLL_REDUCE_SCATTER;
}

/* Does NCCL offer (op, a, p) on this communicator? */
static int mb_coll__enabled(enum mb_coll_op op, enum mb_nccl_algo a, enum mb_coll_proto p, const struct mb_nccl_comm *c)
{
    int N = c->n_nodes, ppn1 = c->n_ranks == c->n_nodes;
    if (op != MB_COLL_ALL_REDUCE && !mb_coll__is_agrs(op) && op != MB_COLL_BROADCAST)
        return 0;
    if (op == MB_COLL_BROADCAST && a != MB_NCCL_RING)
        return 0;
    if (p == MB_COLL_PROTO_LL128 && c->intra_pcie)
        return 0; /* LL128 needs NVLink inside the node (typeIntra <= PATH_NVB) */
    switch (a) {
    case MB_NCCL_RING: return 1;
    case MB_NCCL_TREE: return op == MB_COLL_ALL_REDUCE;
    case MB_NCCL_NVLS: return p == MB_COLL_PROTO_SIMPLE && !c->intra_pcie && N == 1; /* > 1 node needs CollNet */
    case MB_NCCL_NVLS_TREE: return p == MB_COLL_PROTO_SIMPLE && !c->intra_pcie && op == MB_COLL_ALL_REDUCE && N > 1;
    case MB_NCCL_PAT: return p == MB_COLL_PROTO_SIMPLE && mb_coll__is_agrs(op) && ppn1 && N > 1;
    default: return 0;
    }
}

double mb_nccl_latency(enum mb_coll_op op, enum mb_nccl_algo a, enum mb_coll_proto p, const struct mb_nccl_comm *c,
                       double bytes)
{
    if (!c || c->n_ranks < 2 || c->n_nodes < 1 || c->n_nodes > c->n_ranks || (unsigned)p >= MB_COLL_PROTO_COUNT ||
        !mb_coll__enabled(op, a, p, c))
        return -1;
    int n = c->n_ranks, N = c->n_nodes, ppn = n / N; /* NCCL's integer nRanks / nNodes */
    double intra = hw_lat[c->intra_pcie ? HW_PCI : HW_NVLINK][a][p];
    double inter = hw_lat[HW_NET][n == N ? MB_NCCL_TREE : a][p]; /* NCCL: float ppn == 1 */
    double lat = base_lat[a][p];
    if (N > 1 && p == MB_COLL_PROTO_LL)
        intra *= 1.8;
    switch (a) {
    case MB_NCCL_RING: {
        if (op == MB_COLL_BROADCAST)
            return (lat + hw_lat[N == 1 ? (c->intra_pcie ? HW_PCI : HW_NVLINK) : HW_NET][a][p]) * 1e-6;
        double nsteps = op == MB_COLL_ALL_REDUCE ? 2.0 * (n - 1) : n - 1;
        double ninter = N == 1 ? 0 : op == MB_COLL_ALL_REDUCE ? 2.0 * (N - 1) : N - 1;
        double overhead = N > 1 ? (p == MB_COLL_PROTO_SIMPLE ? 3.0 : 1.0) : 0;
        if (intra < overhead)
            intra = overhead;
        lat += (nsteps - ninter) * intra + ninter * inter;
        if (op == MB_COLL_ALL_REDUCE && p == MB_COLL_PROTO_SIMPLE && N > 1 &&
            bytes / ((double)MB_NCCL_CHANNELS * n) >= 64)
            lat *= 1.4;
        break;
    }
    case MB_NCCL_TREE: lat += 2 * ((ppn - 1) * intra + mb_coll__log2i(N) * inter); break;
    case MB_NCCL_NVLS: lat = intra + (N > 1 ? inter : 0); break;
    case MB_NCCL_NVLS_TREE: lat += intra + 2 * mb_coll__log2i(N) * inter; break;
    case MB_NCCL_PAT: lat += mb_coll__log2i(N) * (inter / 3.5) + n * 2.8; break;
    default: return -1;
    }
    return lat * 1e-6;
}

double mb_nccl_bw_factor(enum mb_coll_op op, enum mb_nccl_algo a, enum mb_coll_proto p, const struct mb_nccl_comm *c)
{
    switch (a) {
    case MB_NCCL_RING: return p == MB_COLL_PROTO_LL ? 0.5 : p == MB_COLL_PROTO_LL128 ? 0.92 : 1.0;
    case MB_NCCL_TREE: {
        double f = op == MB_COLL_ALL_REDUCE ? 0.92 : 1.0;
        if (p == MB_COLL_PROTO_LL)
            f /= 3.8;
        else if (p == MB_COLL_PROTO_LL128)
            f *= c && c->n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
        return f;
    }
    case MB_NCCL_PAT: return 0.75;
    default: return 1.0;
    }
}
