/*
 * mb_coll.h -- NCCL-style collectives executed as flows on the engine's links.
 *
 * A collective becomes ONE engine task on a caller-chosen stream: the task
 * first holds the stream for the algorithm's latency (steps x per-step
 * latency of the slowest hop class crossed, as in NCCL's cost model
 * "latency + bytes / bandwidth"), then starts all its flows at once. The
 * flows carry the bytes each rank puts on each hop for the whole operation
 * (NCCL pipelines chunks through every step, so in steady state every hop of
 * the algorithm is busy at the same time); the task ends when the slowest
 * flow has delivered. Concurrent collectives on other streams share links
 * max-min fairly through the engine's flow solver, which is how contention
 * between e.g. an FSDP all-gather and an EP all-to-all is modeled.
 *
 * The fabric (which links a GPU-to-GPU transfer crosses) is not known here:
 * the topology layer (topology/mb_fabric.h) fills a struct mb_coll_net with a
 * route callback and per-GPU NVLink port ids. This keeps sim/ free of
 * topology code (dependencies point one way, see CMakeLists.txt).
 *
 * Size conventions follow nccl-tests (hardware.md B.3): `bytes` is the
 * per-rank buffer for all_reduce / broadcast / alltoall / sendrecv and the
 * TOTAL (gathered) size for all_gather / reduce_scatter. busBW factors:
 * 2(n-1)/n all_reduce, (n-1)/n all_gather / reduce_scatter / alltoall,
 * 1 broadcast / sendrecv.
 *
 * Algorithms and the automatic choice are documented in docs/collectives.md.
 */
#ifndef MB_COLL_H
#define MB_COLL_H

#include "mb_engine.h"
#include "mb_util.h"

/** Collective operations (nccl-tests binaries of the same names). */
enum mb_coll_op {
    MB_COLL_ALL_REDUCE,
    MB_COLL_ALL_GATHER,
    MB_COLL_REDUCE_SCATTER,
    MB_COLL_BROADCAST,
    MB_COLL_ALLTOALL,
    MB_COLL_SENDRECV,
    MB_COLL_OP_COUNT
};

/** Algorithms. AUTO picks by NCCL's rule (min of latency + bytes/bw estimates). */
enum mb_coll_algo {
    MB_COLL_ALGO_AUTO,
    MB_COLL_ALGO_RING,     /**< rings; one channel per local GPU when the group spans domains */
    MB_COLL_ALGO_TREE,     /**< hierarchical: NVLink domain first, scale-out second (NCCL tree) */
    MB_COLL_ALGO_NVLS,     /**< NVLink SHARP all_reduce (+ scale-out stage when spanning domains) */
    MB_COLL_ALGO_PAIRWISE, /**< all flows at once (alltoall, sendrecv) */
    MB_COLL_ALGO_PAT,      /**< NCCL's PAT all_gather / reduce_scatter, one rank per NVLink domain */
    MB_COLL_ALGO_COUNT
};

/** NCCL protocols (NCCL's order: LL, LL128, Simple). The collective's bytes are
 *  divided by the protocol's bandwidth factor (mb_nccl_bw_factor: LL moves 8
 *  bytes per 4 of data) and its latency is NCCL's for that protocol. */
enum mb_coll_proto { MB_COLL_PROTO_LL, MB_COLL_PROTO_LL128, MB_COLL_PROTO_SIMPLE, MB_COLL_PROTO_COUNT };

/** What one call resolved to: algorithm, protocol, its latency and its
 *  bandwidth time alone on its ports (both s; latency-bound when lat_s >= bw_s). */
struct mb_coll_choice {
    enum mb_coll_algo algo;
    enum mb_coll_proto proto;
    double lat_s, bw_s;
};

/** @brief "LL", "LL128", "Simple"; NULL out of range. */
const char *mb_coll_proto_name(enum mb_coll_proto p);

/** @brief NCCL's name of algorithm a on D NVLink domains: "nvls_tree" for NVLS across domains, else
 *  mb_coll_algo_name(a). */
const char *mb_coll_algo_label(enum mb_coll_algo a, int D);

/** Hop classes, for per-step latency. */
enum mb_coll_hop { MB_COLL_HOP_NVLINK, MB_COLL_HOP_NIC, MB_COLL_HOP_COUNT };

/* Work limits of one simulated collective (measured on the ASan build, one
 * size): a ring all_reduce over 4096 GPUs takes 0.8 s and 1.3 GiB and grows
 * faster than linearly; an alltoall has n(n-1) flows, 1024 GPUs about 1 M. */
#define MB_COLL_MAX_RANKS 4096
#define MB_COLL_MAX_ALLTOALL_RANKS 1024
/* Sizes one `mbsim collective` table may simulate (8:8G at factor 2 is 31). */
#define MB_COLL_MAX_SIZES 1000

/** Maximum number of links on a route returned by mb_coll_net.route. */
#define MB_COLL_ROUTE_MAX MB_FLOW_MAX_LINKS

/**
 * What a fabric tells the collective layer. GPUs are numbered 0..n_gpus-1;
 * GPU g sits in NVLink domain g / domain_size. Filled by mb_fabric_build().
 */
struct mb_coll_net {
    int n_gpus;          /**< GPUs in the fabric */
    int domain_size;     /**< GPUs per NVLink domain (8 HGX, 72 NVL72); >= 1 */
    int nvls;            /**< NVLink SHARP available in the domain (NVSwitch gen3+) */
    int intra_pcie;      /**< the "NVLink" ports are PCIe links (PCIe-only node): NCCL's PCI latencies, no LL128 */
    double nvl_bw;       /**< achieved NVLink bytes/s per GPU per direction (line x eff), for AUTO */
    double nic_bw;       /**< achieved NIC bytes/s per GPU per direction (line x eff), for AUTO */
    double nvls_bw;      /**< achieved NVLS all_reduce algorithm bandwidth per GPU, bytes/s (flow bound) */
    double lat[MB_COLL_HOP_COUNT]; /**< per-step latency by hop class, s (calibration `links`) */
    double nvls_lat;     /**< fixed cost of one NVLS all_reduce, s (calibration `links.nvls`) */
    const int *nvl_tx;   /**< [n_gpus] link id of each GPU's NVLink port, GPU -> switch; -1 if none */
    const int *nvl_rx;   /**< [n_gpus] link id of each GPU's NVLink port, switch -> GPU; -1 if none */
    /**
     * @brief Route of a transfer src -> dst (src != dst).
     * @param[in]  ctx    the fabric
     * @param[out] links  up to MB_COLL_ROUTE_MAX link ids
     * @return number of links (1..MB_COLL_ROUTE_MAX).
     */
    int (*route)(const void *ctx, int src, int dst, int *links);
    const void *ctx;     /**< passed to route */
};

/** One collective call. */
struct mb_coll_req {
    enum mb_coll_op op;
    enum mb_coll_algo algo;  /**< MB_COLL_ALGO_AUTO or a forced algorithm */
    int n_ranks;             /**< group size, >= 1 */
    const int *ranks;        /**< [n_ranks] GPU of each rank; NULL = GPUs first_gpu .. first_gpu+n-1 */
    int first_gpu;           /**< used when ranks == NULL */
    double bytes;            /**< nccl-tests size convention (see file header), > 0 */
    int root;                /**< broadcast root rank (0..n-1) */
    /** A measured time for this call (calibration `measured.collectives`, mb_calib_coll_line):
     *  when meas_paced > 0 the task holds the stream for meas_lat seconds instead of the
     *  algorithm's latency and every flow is capped at its bytes / meas_paced, so the call
     *  alone takes meas_lat + meas_paced and contention on its links slows it further. */
    double meas_lat, meas_paced;
};

/** @brief "all_reduce", "all_gather", ...; NULL for an out-of-range value. */
const char *mb_coll_op_name(enum mb_coll_op op);
/** @brief "auto", "ring", "tree", "nvls", "pairwise"; NULL for an out-of-range value. */
const char *mb_coll_algo_name(enum mb_coll_algo a);
/** @brief Parse an op name ("all_reduce", "allreduce", "alltoall", "sendrecv", ...). @return 0 or -1. */
int mb_coll_op_parse(const char *s, enum mb_coll_op *out);
/** @brief Parse an algorithm name. @return 0 or -1. */
int mb_coll_algo_parse(const char *s, enum mb_coll_algo *out);

/** @brief nccl-tests busBW factor for an op on n ranks (B.3). */
double mb_coll_bus_factor(enum mb_coll_op op, int n);

/**
 * @brief Is `algo` implemented for this op and group on this net?
 * ring: all ops but alltoall/sendrecv; tree: all_reduce, all_gather, reduce_scatter;
 * nvls: all_reduce with net->nvls; pairwise: alltoall, sendrecv.
 */
int mb_coll_algo_ok(const struct mb_coll_net *net, const struct mb_coll_req *req,
                    enum mb_coll_algo algo);

/**
 * @brief NCCL-style analytic estimate (seconds) of an algorithm in isolation,
 * with its best protocol: NCCL's latency (mb_coll_nccl.h) + max over ports of
 * (bytes per GPU port / protocol factor / achieved bw).
 * Used by AUTO; the simulated time (with contention) comes from mb_coll_add().
 * @return seconds, or -1 when the algorithm does not apply.
 */
double mb_coll_estimate(const struct mb_coll_net *net, const struct mb_coll_req *req,
                        enum mb_coll_algo algo);

/** What one rank moves in an algorithm (mb_coll_volume), per direction. */
struct mb_coll_vol {
    double nv, nic, nvls;          /**< bytes on its NVLink port, its NIC, through NVLS (multimem) */
    double steps_nv, steps_nic;    /**< pipelined steps paying the NVLink / the NIC per-step latency */
    int nvls_fixed;                /**< pays the NVLS fixed cost per call (links.nvls.latency) */
};

/**
 * @brief Per-rank volumes and steps of algorithm `a` for `op` on a group of n
 * ranks in D NVLink domains of L ranks (n = L x D), nccl-tests size S (bytes):
 * the table in sim/engine/mb_coll.c's header. Ring: every rank sends V = 2(n-1)/n S
 * (all_reduce), S (broadcast) or (n-1)/n S; with D > 1 the L rail-aligned
 * channels put V/L on each NIC and the rest on NVLink. The one formula of
 * mb_coll_estimate(), mb_coll_add()'s latency and the training step.
 * Applicability is not checked here (mb_coll_algo_ok()).
 * @return 0, or -1 for MB_COLL_ALGO_AUTO / an unknown algorithm (v zeroed).
 */
int mb_coll_volume(enum mb_coll_op op, enum mb_coll_algo a, int n, int L, int D, double S, struct mb_coll_vol *v);

/** @brief Latency (s) of a volume: steps x per-step latency by hop, + the NVLS fixed cost. */
double mb_coll_vol_latency(const struct mb_coll_vol *v, double nv_lat, double nic_lat, double nvls_lat);

/**
 * @brief NCCL-style estimate (s) of a volume in isolation: latency + the slowest
 * port's bytes / achieved rate (bytes/s; 0 = that port is not used).
 */
double mb_coll_vol_time(const struct mb_coll_vol *v, double nv_bw, double nic_bw, double nvls_bw, double nv_lat,
                        double nic_lat, double nvls_lat);

/** @brief The algorithm AUTO resolves to: the applicable (algorithm, protocol) with the least
 *  estimate, as NCCL's tuner (all_gather / reduce_scatter: ring, or PAT at one rank per NVLink
 *  domain -- NCCL has no tree for them; `tree` stays available when asked for). */
enum mb_coll_algo mb_coll_choose(const struct mb_coll_net *net, const struct mb_coll_req *req);

/**
 * @brief Add one collective as a task on `stream` of engine `e` (whose links
 * the net refers to).
 * @param[out] algo_out  algorithm used (AUTO resolved); may be NULL
 * @param[out] err       "collective: ..." for a bad group, size or algorithm
 * @return engine task id (>= 0; add dependencies to it as to any task), or -1.
 */
int mb_coll_add(struct mb_engine *e, const struct mb_coll_net *net, const struct mb_coll_req *req,
                int stream, enum mb_coll_algo *algo_out, struct mb_err *err);

/**
 * One representative rank of a symmetric group (every rank moves the same
 * bytes, as in the training step's one simulated rank per pipeline stage):
 * its transmit ports as engine links and the fabric's achieved rates.
 */
struct mb_coll_rank {
    int nv_link, nic_link;          /**< engine link ids of its NVLink and NIC transmit ports */
    double nvl_bw, nic_bw, nvls_bw; /**< achieved bytes/s, as in mb_coll_net (nvls_bw also bounds NVLS flows) */
    double lat[MB_COLL_HOP_COUNT];  /**< per-step latency by hop class, s */
    double nvls_lat;                /**< fixed cost of one NVLS all_reduce, s */
    int nvls;                       /**< NVLink SHARP available for groups of >= 2 GPUs per domain */
    double nic_bound;               /**< cap on its NIC flow (bytes/s; its share of an oversubscribed
                                         uplink), 0 = none */
    int intra_pcie;                 /**< as mb_coll_net.intra_pcie */
};

/**
 * @brief The task one rank of `req` (n_ranks in D NVLink domains of L ranks;
 * ranks/first_gpu ignored) gets from the same rules as mb_coll_add: AUTO's
 * choice, the per-rank volumes (mb_coll_volume) as at most three flows -- its
 * NVLink bytes and its NVLS bytes (bound nvls_bw) on nv_link, its NIC bytes on
 * nic_link --, the algorithm's latency, and a measured time's pacing
 * (req->meas_lat / meas_paced). On a fabric where nothing else runs the task
 * takes what mb_coll_add's takes for that rank. Fills t (duration, n_flows,
 * flows = f; the caller sets stream, kind and tag).
 * @return number of flows (0 for a group of one rank or no bytes), or -1 when
 * the (forced) algorithm does not apply.
 */
int mb_coll_rank_task(const struct mb_coll_rank *rk, const struct mb_coll_req *req, int L, int D,
                      struct mb_task_desc *t, struct mb_flow_desc f[3], enum mb_coll_algo *used);

/** @brief mb_coll_rank_task, and what the call resolved to (ch may be NULL; zeroed for no task). */
int mb_coll_rank_plan(const struct mb_coll_rank *rk, const struct mb_coll_req *req, int L, int D,
                      struct mb_task_desc *t, struct mb_flow_desc f[3], struct mb_coll_choice *ch);

/** @brief mb_coll_add, and what the call resolved to (ch may be NULL). */
int mb_coll_add_plan(struct mb_engine *e, const struct mb_coll_net *net, const struct mb_coll_req *req, int stream,
                     struct mb_coll_choice *ch, struct mb_err *err);

#endif /* MB_COLL_H */
