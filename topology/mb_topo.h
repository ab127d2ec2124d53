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
    char gpu[32];             /* GPU type key for calibration: A100, H100, H200, B200, B300, GB200, GB300 */
    char node_xml[512];       /* resolved path of the node hwloc XML */
    struct mb_node_topo node; /* loaded from node_xml */
    int gpus_per_node;        /* GPUs per node / compute tray (from the XML, checked against the YAML) */
    int nvlink_domain;        /* GPUs in one NVLink domain (8 HGX, 72 NVL72) */
    double nvlink_bw;         /* bytes/s per GPU per direction, line rate */
    double nvlink_latency;    /* s, one NVLink hop through the switch */
    double nic_bw;            /* bytes/s per GPU per direction, line rate (sum of its NICs) */
    double nic_latency;       /* s, one scale-out traversal */
    int switch_tiers;         /* scale-out switch tiers (1 leaf, 2 leaf-spine, ...) */
    double oversubscription;  /* scale-out taper above the leaf, >= 1 */
    int nvls;                 /* NVLink SHARP available (NVSwitch gen3+) */
    double pcie_bw;           /* bytes/s per direction, GPU host link */
    int max_gpus;             /* largest cluster the preset describes; 0 = unlimited */
    char source[1024];        /* where the numbers come from */
};

/**
 * @brief Load a system by preset name (topology/systems/NAME.yaml under the data
 * directory) or by path to a YAML file, then load its node XML through hwloc.
 * @param[out] err  file:line:col errors for bad YAML; "unknown system 'x'; known: ..."
 * @return 0 or -1.
 */
int mb_topo_load_system(const char *name_or_path, struct mb_system *out, struct mb_err *err);

/**
 * @brief Write the preset names (comma separated) into buf, for messages and --help.
 * @param[out] buf  receives the sorted *.yaml stems of <data dir>/topology/systems,
 *                  "" if none; truncated to fit
 * @param[in]  len  size of buf
 */
void mb_topo_list_presets(char *buf, size_t len);

#endif /* MB_TOPO_H */
