/*
 * mb_fabric.h -- the link graph of a cluster built from a struct mb_system,
 * as engine links, plus the route function the collectives use (mb_coll.h).
 *
 * Links (capacities in bytes/s per direction = line rate x achieved fraction
 * from calibration `links`):
 *   - per GPU, NVLink port to its NVSwitch domain, one link each direction
 *     (the GPU's own NVLink rate from the node XML, sys->gpu_nvlink_bw, x eff;
 *     on a PCIe-only node its PCIe link x the PCIe eff); GPU-to-GPU inside a
 *     domain = [tx(src), rx(dst)]:
 *     the NVSwitch itself is non-blocking (hardware.md A note 4: 3.6 TB/s
 *     bisection for 8 x 450 GB/s on DGX H100);
 *   - per NIC port (sys->gpu_port: GPUs that use the same NICs, e.g. 2 GPUs
 *     behind one NIC's PCIe switch), one link each direction of the port's
 *     line rate x eff, shared by its GPUs: 2 GPUs per NIC halve each GPU's
 *     NIC rate when both send;
 *   - rail-optimized leaves: GPUs of port r of node k attach to leaf
 *     (r, k / MB_FABRIC_LEAF_NODES); each leaf has one aggregate up and one
 *     aggregate down link to the tiers above, of capacity
 *     MB_FABRIC_LEAF_NODES x nic x eff / oversubscription. Same leaf:
 *     [nic_tx, nic_rx]; otherwise [nic_tx, up(leaf a), down(leaf b), nic_rx].
 *     Tiers above the leaf are folded into the leaf uplink (switch_tiers > 2
 *     adds no extra constraint besides the taper).
 * NVL72 racks: the domain is 72 GPUs (18 trays of 4), so tray-to-tray inside
 * a rack stays on NVLink ports.
 */
#ifndef MB_FABRIC_H
#define MB_FABRIC_H

#include "mb_coll.h"
#include "mb_engine.h"
#include "mb_topo.h"
#include "mb_util.h"

/**
 * Nodes under one rail leaf switch: 32 = half the 64 ports of an NVIDIA
 * Quantum-2 QM9700 NDR switch (64 x 400 Gb/s; NVIDIA datasheet) facing down in
 * a non-blocking leaf. ASSUMPTION for every preset (the system YAML has no key).
 */
#define MB_FABRIC_LEAF_NODES 32

/**
 * NVLS (NVLink SHARP) all_reduce algorithm bandwidth as a fraction of the
 * NVLink line rate: algbw ~275 GB/s of 450 on 8 x H100 (busbw ~480 at >= 1-2 GiB;
 * sjeaugey, NVIDIA/nccl-tests#212; hardware.md A "Measured fabric numbers").
 * Measured on NVLink4 only; used for NVLink5 too (ASSUMPTION).
 */
#define MB_FABRIC_NVLS_EFF (275.0 / 450.0)

/** Achieved fractions and per-step latencies (from calibration `links`). */
struct mb_fabric_params {
    double nvlink_eff;   /**< achieved fraction of NVLink line rate, (0, 1] */
    double nic_eff;      /**< achieved fraction of NIC line rate, (0, 1] */
    double nvls_eff;     /**< NVLS algbw / NVLink line rate; 0 = MB_FABRIC_NVLS_EFF */
    double nvlink_lat;   /**< s per NVLink collective step */
    double nic_lat;      /**< s per scale-out collective step */
    double nvls_lat;     /**< s fixed cost of one NVLS all_reduce (calibration links.nvls.latency) */
    double pcie_eff;     /**< achieved fraction of PCIe line rate on a PCIe-only node; 0 = nvlink_eff */
};

struct mb_fabric;

/**
 * @brief Add the links of `n_gpus` GPUs of `sys` to engine `e`.
 * @param[in]  n_gpus  1..gpus_per_node, or a multiple of gpus_per_node
 *                     (<= max_gpus when the preset sets one)
 * @param[out] err     "fabric: ..." for a bad GPU count or parameter
 * @return the fabric (free with mb_fabric_free; it must outlive the
 * collectives added with its net), or NULL.
 */
struct mb_fabric *mb_fabric_build(struct mb_engine *e, const struct mb_system *sys, int n_gpus,
                                  const struct mb_fabric_params *p, struct mb_err *err);

/** @brief Free a fabric (accepts NULL). The engine's links stay. */
void mb_fabric_free(struct mb_fabric *f);

/** @brief The collective layer's view (valid while the fabric lives). */
const struct mb_coll_net *mb_fabric_net(const struct mb_fabric *f);

/** @brief Link roles, for tests and reports. */
enum mb_fabric_link {
    MB_FABRIC_NVL_TX,
    MB_FABRIC_NVL_RX,
    MB_FABRIC_NIC_TX,
    MB_FABRIC_NIC_RX,
    MB_FABRIC_LEAF_UP,   /**< index = leaf */
    MB_FABRIC_LEAF_DOWN  /**< index = leaf */
};

/** @brief Engine link id of a role for GPU (or leaf) `i`; -1 if absent. */
int mb_fabric_link(const struct mb_fabric *f, enum mb_fabric_link role, int i);

/** @brief Number of leaves (rail leaf switches in use). */
int mb_fabric_n_leaves(const struct mb_fabric *f);

/** @brief Leaf of a GPU: rail (local index) x node group. */
int mb_fabric_leaf_of(const struct mb_fabric *f, int gpu);

/** @brief Capacity (bytes/s) the fabric gave a link id it created; 0 if not its link. */
double mb_fabric_link_capacity(const struct mb_fabric *f, int link);

/** @brief Route src -> dst into links[MB_COLL_ROUTE_MAX]. @return number of links. */
int mb_fabric_route(const struct mb_fabric *f, int src, int dst, int *links);

#endif /* MB_FABRIC_H */
