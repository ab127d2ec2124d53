/*
 * mb_topo.h -- node topology (from hwloc XML) and cluster fabric (from a small
 * YAML system description). mbsim's topology structs are hwloc-free: only
 * topology/topo_hwloc.c includes <hwloc.h>.
 *
 * Units: bandwidth in bytes/s per direction (unidirectional), latency in
 * seconds, memory in bytes.
 */
#ifndef MB_TOPO_H
#define MB_TOPO_H

#include <stdint.h>

#include "mb_util.h"

#define MB_TOPO_MAX_GPUS 64   /* GPUs per node description */
#define MB_TOPO_MAX_NICS 64

/** What one node's hwloc XML says. */
struct mb_node_topo {
    int n_gpus;                          /* GPU PCI devices (class 0302/0300, vendor 10de), deduplicated */
    char gpu_model[64];                  /* GPUModel info or PCI id text, "" if unknown */
    double gpu_mem_bytes;                /* CUDAGlobalMemorySize (KiB in XML) * 1024, 0 if absent */
    int n_nics;                          /* InfiniBand/Ethernet NICs (OpenFabrics OS devices or class 0207/0200) */
    int n_numa;                          /* NUMA nodes */
    int n_nvswitch;                      /* PCI devices with subtype NVSwitch */
    double nvlink_bw_per_gpu;            /* bytes/s uni: mean over GPUs of the NVLinkBandwidth row sum
                                            (MB/s * 1e6), excluding the diagonal; 0 if no matrix */
    int gpu_numa[MB_TOPO_MAX_GPUS];      /* NUMA os_index of each GPU's non-I/O ancestor, -1 unknown */
    int gpu_nic[MB_TOPO_MAX_GPUS];       /* nearest NIC index per GPU (closest common PCI ancestor,
                                            then same NUMA), -1 if none */
    /* NVLinkBandwidth matrix, per GPU (all 0 without a matrix) */
    double gpu_nvlink_bw[MB_TOPO_MAX_GPUS];  /* bytes/s uni: the GPU's row sum without the diagonal */
    double nvlink_pair[MB_TOPO_MAX_GPUS][MB_TOPO_MAX_GPUS]; /* bytes/s uni GPU i -> GPU j: the direct
                                            entry, or min(row i, row j) when the matrix lists NVSwitches
                                            (non-blocking switch); 0 = no NVLink between them */
    int nvlink_switched;                 /* the matrix lists GPU <-> NVSwitch entries */
    int n_islands;                       /* NVLink islands (connected GPUs); 0 without a matrix */
    int island_size;                     /* GPUs per island when all islands are equal and contiguous
                                            in GPU order, else 0 */
    int gpu_island[MB_TOPO_MAX_GPUS];    /* island of each GPU, -1 without NVLink */
    /* NICs and the PCIe paths to them (hwloc pci_link_speed, GB/s -> bytes/s) */
    char nic_name[MB_TOPO_MAX_NICS][32]; /* OpenFabrics name (mlx5_0) or PCI bus id */
    int nic_numa[MB_TOPO_MAX_NICS];      /* NUMA os_index of the NIC, -1 unknown */
    double nic_pcie_bw[MB_TOPO_MAX_NICS];/* bytes/s of the NIC's own PCIe link, 0 unknown */
    int nic_users[MB_TOPO_MAX_NICS];     /* GPUs that use the NIC (gpu_nics) */
    uint64_t gpu_nics[MB_TOPO_MAX_GPUS]; /* NICs a GPU uses: its nearest one, plus every NIC no GPU
                                            has as nearest whose closest GPU it is (rail assignment) */
    double gpu_nic_share[MB_TOPO_MAX_GPUS]; /* sum over its NICs of 1 / nic_users: the fraction of one
                                            NIC's line rate the GPU gets when all GPUs send at once */
    double gpu_pcie_bw[MB_TOPO_MAX_GPUS];   /* bytes/s of the GPU's own PCIe link, 0 unknown */
    double gpu_nic_path_bw[MB_TOPO_MAX_GPUS]; /* bytes/s: slowest PCIe link between the GPU and its
                                            nearest NIC (GPUDirect RDMA path), 0 unknown */
    int gpu_nic_cross_numa[MB_TOPO_MAX_GPUS]; /* nearest NIC shares no PCIe switch / root complex
                                            with the GPU and sits on another NUMA node */
    char cpu_model[64];                  /* CPUModel info of the first Package, "" if absent */
};

/**
 * @brief Load a node description from an hwloc XML file (hwloc 2.x format).
 * @param[in]  path  XML file
 * @param[out] out   filled on success
 * @param[out] err   on failure: "path: hwloc cannot load XML (...)" or
 *                   "path: no GPU found" etc.
 * @return 0 or -1.
 */
int mb_topo_load_xml(const char *path, struct mb_node_topo *out, struct mb_err *err);

/** A cluster: identical nodes joined by an NVLink domain and a scale-out fabric. */
struct mb_system {
    char name[64];            /* preset key or file stem, e.g. "gb200_nvl72" */
    char gpu[32];             /* GPU type key for calibration: A100, H100, H100_96GB, H200, B200, B300,
                                 GB200, GB300; or L40S, a part without a calibration table
                                 (mb_topo_gpu_calibrated() = 0: simulations need the user's table) */
    char node_xml[MB_PATH_LEN];       /* resolved path of the node hwloc XML */
    struct mb_node_topo node; /* loaded from node_xml */
    int gpus_per_node;        /* GPUs per node / compute tray (from the XML, checked against the YAML) */
    int nvlink_domain;        /* GPUs in one NVLink domain (8 HGX, 72 NVL72) */
    int rack_gpus;            /* GPUs per NVL rack (YAML rack_gpus: 36 or 72) of rack-scale parts
                                 (GB200, GB300), 72 when absent; 0 for other parts. A domain of 72
                                 with rack_gpus 36 is NVL36x2 (the inter-rack hop is not modelled) */
    double nvlink_bw;         /* bytes/s per GPU per direction, line rate: the XML's NVLinkBandwidth
                                 row sum (slowest GPU) when the XML has one, else the YAML's
                                 nvlink_bw; the GPU's PCIe link (pcie_bw) on a PCIe-only node */
    double nvlink_latency;    /* s, one NVLink hop through the switch */
    double nic_bw;            /* bytes/s per GPU per direction, line rate (slowest GPU): nic_speed x
                                 the GPU's NIC share (node.gpu_nic_share), capped by its PCIe path;
                                 or the YAML's nic_bw when it gives no nic_speed */
    double nic_speed;         /* bytes/s line rate of one NIC (YAML nic_speed; derived from nic_bw) */
    int intra_pcie;           /* no NVLink: GPUs of a node talk over PCIe (nvlink_bw = pcie_bw) */
    double gpu_nvlink_bw[MB_TOPO_MAX_GPUS]; /* bytes/s per local GPU: its NVLink (or PCIe) port */
    double gpu_nic_bw[MB_TOPO_MAX_GPUS];    /* bytes/s per local GPU: its share of its NICs */
    int gpu_port[MB_TOPO_MAX_GPUS];         /* NIC port (rail) of each local GPU: GPUs that use the
                                               same NICs share one port */
    int n_ports;                            /* NIC ports (rails) per node */
    double port_bw[MB_TOPO_MAX_GPUS];       /* bytes/s line rate of each port (sum of its GPUs' shares) */
    double nic_latency;       /* s, one scale-out traversal */
    int switch_tiers;         /* scale-out switch tiers (1 leaf, 2 leaf-spine, ...) */
    double oversubscription;  /* scale-out taper above the leaf, >= 1 */
    int nvls;                 /* NVLink SHARP available (NVSwitch gen3+) */
    double pcie_bw;           /* bytes/s per direction, GPU host link */
    int max_gpus;             /* largest cluster the preset describes; 0 = unlimited */
    double inter_socket_bw;   /* bytes/s per direction of the SMP link between two NUMA nodes
                                 (YAML inter_socket_bw, else mb_topo_inter_socket_bw(cpu_model));
                                 0 when no GPU reaches its NIC across sockets and none is given */
    int gpu_nic_via_smp[MB_TOPO_MAX_GPUS]; /* the GPU's NIC traffic crosses the SMP link: its NIC is
                                 on another NUMA node with no shared PCIe switch, and the node has
                                 no NVLink to relay it through a peer next to the NIC (NCCL PXN) */
    double power_cap;         /* W, the YAML's power_cap (sustained board power limit); 0 = the
                                 part's default, i.e. what its calibration table was measured at */
    double power_tdp;         /* W, TDP of the calibration table's part (mb_topo_gpu_tdp), 0 unknown */
    double power_clock_scale; /* sustained tensor-core rate under power_cap / at the TDP:
                                 mb_topo_power_clock_scale(power_cap, power_tdp); 1 without a cap */
    double host_time_scale;   /* host seconds per kernel issue on this node's CPU / on the host the
                                 calibration table's launch and fitted host_kernel describe (YAML
                                 host_time_scale, a what-if; 1 when absent, every preset): multiplies
                                 both in the step (docs/topology.md "Host CPU") */
    double gpu_memory;        /* bytes, the YAML's gpu_memory: the usable device memory per GPU
                                 where the part differs from its calibration table's (a 40 GB A100
                                 on the 80 GB table); 0 = the table's spec.hbm */
    char source[MB_SOURCE_LEN]; /* where the numbers come from */
};

/**
 * @brief NCCL's bandwidth of the SMP interconnect between two CPU sockets /
 * NUMA nodes (GB/s in NCCL, returned in bytes/s per direction), from a
 * CPUModel string, as NVIDIA/nccl src/graph/topo.h and topo.cc
 * (ncclTopoGetInterCpuBw) at commit 5067397c2676 give it: AMD 16 (AMD_BW);
 * Intel Xeon Scalable by the generation digit of its model number: 1xxx/2xxx
 * Skylake / Cascade Lake 10 (SKL_QPI_BW), 4xxx Sapphire Rapids 22
 * (SRP_QPI_BW), 5xxx Emerald Rapids 40 (ERP_QPI_BW), any other Intel 6
 * (BDW_QPI_BW, NCCL's value for models it does not list); ARM (Grace,
 * Neoverse) 6 (ARM_BW); POWER9 32 (P9_BW). NCCL decides the Intel model from
 * CPUID, mbsim from the name: an APPROXIMATION of the same table.
 * @param[out] src  the constant's name ("SRP_QPI_BW") or NULL; may be NULL
 * @return bytes/s, or 0 for an empty or unknown CPU model.
 */
double mb_topo_inter_socket_bw(const char *cpu_model, const char **src);

/**
 * Lowest sustained-clock scale a power cap may give: the lower bound of the
 * calibration's framework tensor_fraction (docs/calibration.md, 0.6, below the
 * worst field report of sustained clocks). power_cap below TDP x 0.6^3 is an
 * error.
 */
#define MB_TOPO_POWER_MIN_SCALE 0.6

/**
 * @brief TDP in W of the part a calibration key's table describes, at its
 * default power limit: A100 400 (NVIDIA A100 SXM4 datasheet), H100 700,
 * H200 700, B200 1000, GB200 1200, GB300 1400 (hardware.md A, TDP row).
 * @return watts, or 0 for a key without a sourced TDP (B300, unknown keys).
 */
double mb_topo_gpu_tdp(const char *key);

/**
 * @brief Sustained tensor-core clock under a power cap relative to the clock
 * at the TDP: (cap / tdp)^(1/3). Dynamic CMOS power is P = a C V^2 f and, in
 * the DVFS range where a power limit acts, the supply voltage scales with the
 * clock, so P ~ f^3 and f ~ P^(1/3) (docs/topology.md "Power cap").
 * ASSUMPTION that the tensor-bound kernels of the tables ran at the power
 * limit; static power is ignored (it makes the true loss larger).
 * @return the scale in (0, 1]; 1 when cap >= tdp or either is not positive.
 */
double mb_topo_power_clock_scale(double cap, double tdp);

/**
 * @brief Load a system by preset name (topology/systems/NAME.yaml under the data
 * directory) or by path to a YAML file, then load its node XML through hwloc.
 * @param[out] err  file:line:col errors for bad YAML and for a fabric the node cannot have
 *                  (docs/topology.md "Fabric checks": NVLink domain vs the part, rack_gpus,
 *                  rails, nics_per_gpu, switch_tiers / oversubscription, nvls on A100), a
 *                  power_cap out of (0.6^3 TDP, TDP], a cross-socket NIC without a known
 *                  inter-socket rate; "unknown system 'x'; known: ..."
 * @return 0 or -1.
 */
int mb_topo_load_system(const char *name_or_path, struct mb_system *out, struct mb_err *err);

/**
 * @brief The calibration key of a GPU model string ("NVIDIA H100 80GB HBM3" -> "H100";
 * H800 -> H100 and A800 -> A100, the same silicon). Longest family name first, so
 * "GB200" is not read as "B200".
 * @return the key, or the family for parts without a calibration table ("V100",
 * "L40S"), or NULL when the string names no known family.
 */
const char *mb_topo_gpu_family(const char *model);

/** @brief 1 when `family` (mb_topo_gpu_family) has a calibration table. */
int mb_topo_gpu_calibrated(const char *family);

/**
 * @brief 1 when GPU key `gpu` (a system's gpu:, a calibration table name) is a
 * Blackwell part -- B200, B300, GB200, GB300 -- whose tensor cores run MX and
 * NVFP4 block scaling (compute capability 10.x); 0 otherwise (NULL too).
 */
int mb_topo_gpu_blackwell(const char *gpu);

/**
 * @brief Refuse to price a system whose GPU has no shipped calibration table
 * (L40S): a simulation needs the user's own table.
 * @param[in] how  how to give one, e.g. "calibration: {table: FILE}" or "--calib FILE"
 * @param[out] err "system 'NAME' has L40S GPUs, which have no calibration table
 *                 (calibration/tables/L40S.yaml): mbsim cannot price their kernels; give
 *                 one with HOW (docs/calibration.md)"
 * @return 0 when the system's GPU is calibrated, else -1.
 */
int mb_topo_check_calibrated(const struct mb_system *s, const char *how, struct mb_err *err);

/**
 * @brief Write the preset names (comma separated) into buf, for messages and --help.
 * @param[out] buf  receives the sorted *.yaml stems of <data dir>/topology/systems,
 *                  "" if none; truncated to fit
 * @param[in]  len  size of buf
 */
void mb_topo_list_presets(char *buf, size_t len);

/** @brief 1 when `name` is a shipped preset (<data dir>/topology/systems/NAME.yaml exists), else 0. */
int mb_topo_is_preset(const char *name);

#endif /* MB_TOPO_H */
