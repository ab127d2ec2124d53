/*
 * mb_coll_nccl.h -- NCCL's tuning model: the latency of each algorithm and
 * protocol, and the bandwidth factor each protocol pays, as NCCL computes them
 * to choose an algorithm (NVIDIA/nccl src/graph/tuning.cc at commit
 * 5067397c2676d5aed50042fc39e5c8ee96eb0027, ncclTopoTuneModel and
 * ncclTopoGetAlgoTime; docs/collectives.md quotes the constants).
 *
 * The collective layer (mb_coll.c) keeps its own volumes and link rates
 * (flows on the fabric); from here it takes the latency term, the protocol's
 * bandwidth factor and which (algorithm, protocol) pairs NCCL enables.
 *
 * Units: seconds. A "node" is an NVLink domain (NCCL's nNodes with MNNVL
 * counts NVLink cliques; one HGX node = one domain).
 */
#ifndef MB_COLL_NCCL_H
#define MB_COLL_NCCL_H

#include "mb_coll.h"

/** NCCL's algorithms (the ones mbsim models; CollNet is not modelled). */
enum mb_nccl_algo { MB_NCCL_TREE, MB_NCCL_RING, MB_NCCL_NVLS, MB_NCCL_NVLS_TREE, MB_NCCL_PAT, MB_NCCL_ALGO_COUNT };

/** One communicator as NCCL's tuner sees it. */
struct mb_nccl_comm {
    int n_ranks;    /**< nRanks, >= 2 */
    int n_nodes;    /**< nNodes (NVLink domains), 1..n_ranks (ranks per node = n_ranks / n_nodes, rounded down as NCCL) */
    int intra_pcie; /**< ranks of a node reach each other over PCIe, not NVLink */
};

/**
 * @brief NCCL's latency (s) of `op` with algorithm `a` and protocol `p`:
 * baseLatencies[a][p] plus the algorithm's steps times hwLatencies (NVLink or
 * PCI inside a node, NET across), as ncclTopoTuneModel has them, including
 * the ppn = 1 rule (the tree's network latency), the network overhead floor of
 * inter-node rings (1 us, x3 for Simple) and the all-reduce ring's plateau
 * factor 1.4 of ncclTopoGetAlgoTime (Hopper+, Simple, > 1 node, large sizes).
 * all_gather / reduce_scatter / broadcast / all_reduce only.
 * @param[in] bytes  the call's size (for the plateau rule), > 0
 * @return seconds, or -1 when NCCL has no such (op, algorithm, protocol):
 * tree is all_reduce only, NVLS and NVLS tree Simple only, NVLS tree needs
 * > 1 node, NVLS 1 node (across nodes it needs CollNet), PAT
 * all_gather/reduce_scatter with 1 rank per node, Simple.
 */
double mb_nccl_latency(enum mb_coll_op op, enum mb_nccl_algo a, enum mb_coll_proto p, const struct mb_nccl_comm *c,
                       double bytes);

/**
 * @brief NCCL's bandwidth factor of (a, p) against Simple on the same
 * algorithm's links (ncclTopoTuneModel's "model refinements"): ring LL 0.5,
 * LL128 0.92; tree 0.92 x (LL 1/3.8, LL128 120/128, or 7/9 on one node);
 * PAT 0.75; NVLS 1. The per-channel caps (llMaxBw, perChMax*Bw) are not applied.
 * @return factor in (0, 1].
 */
double mb_nccl_bw_factor(enum mb_coll_op op, enum mb_nccl_algo a, enum mb_coll_proto p, const struct mb_nccl_comm *c);

/** @brief "tree", "ring", "nvls", "nvls_tree", "pat". */
const char *mb_nccl_algo_name(enum mb_nccl_algo a);

#endif /* MB_COLL_NCCL_H */
