/*
 * test_topology.c -- node topology from hwloc XML and system presets.
 *
 * Steps:
 *  1. the real hwloc samples in shared/data/formats load with the numbers
 *     counted by hand from the files (comments give the line evidence);
 *  2. the hwloc 3.0 copies, non-hwloc XML, a missing file and a GPU-less
 *     topology fail with a clear message naming the file, and do not crash;
 *  3. every shipped preset loads, and its numbers match hardware.md section A;
 *  4. bad system YAMLs under tests/data/topology give the exact message at
 *     the exact line:col.
 *
 * Environment (set by tests/CMakeLists.txt): cwd = repo root,
 * MBSIM_DATA_DIR = repo root, MBSIM_SHARED_DIR = repo/../shared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_topo.h"

/* ---- helpers ------------------------------------------------------------ */

static char *shared_path(const char *rel)
{
    const char *dir = getenv("MBSIM_SHARED_DIR");
    char *base = mb_path_join(dir && dir[0] ? dir : "../shared", "data/formats");
    char *p = mb_path_join(base, rel);
    mb_free(base);
    return p;
}

static char *data_path(const char *rel)
{
    return mb_path_join(mb_data_dir(), rel);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void assert_dbl(double got, double want)
{
    if (!mb_dbl_eq(got, want))
        fail_msg("expected %.17g, got %.17g", want, got);
}

/* mb_topo_load_xml keeps the node descriptions it parsed, by content (topo_hwloc.c): a file
 * rewritten at the same path with the same size, at once (so within the file clock's
 * resolution), must be parsed anew, and the same bytes again must give the first result.
 * tests/data/topology/pcie_node.xml has 8 PCI devices of class 0302 with vendor 10de; the
 * edit gives the first of them vendor 10df, which is no NVIDIA GPU: 7 GPUs. */
static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_xml_memo_by_content(void **state)
{
    (void)state;
    char *src = data_path("tests/data/topology/pcie_node.xml");
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    static char text[1 << 16], edited[1 << 16];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof text);
    memcpy(edited, text, len);
    char *gpu = strstr(edited, "0302 [10de");
    assert_non_null(gpu);
    memcpy(gpu, "0302 [10df", 10);

    char tmp[] = "/tmp/mbsim-test-topo-XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    struct mb_node_topo a, b, c;
    struct mb_err e;
    mb_err_clear(&e);
    write_text(tmp, text, len);
    assert_int_equal(mb_topo_load_xml(tmp, &a, &e), 0);
    assert_int_equal(a.n_gpus, 8);
    write_text(tmp, edited, len);
    assert_int_equal(mb_topo_load_xml(tmp, &b, &e), 0);
    assert_int_equal(b.n_gpus, 7);
    write_text(tmp, text, len);
    assert_int_equal(mb_topo_load_xml(tmp, &c, &e), 0);
    assert_memory_equal(&a, &c, sizeof a);
    assert_int_equal(e.count, 0);
    unlink(tmp);
    mb_free(src);
}

/* ---- 1. real hwloc samples ---------------------------------------------- */

/*
 * hwloc_dgx.xml = upstream nvidiaDGX2.xml (NVIDIA DGX-2H, data/formats/README.md):
 *  - 16 PCIDev of class 0302 vendor 10de (V100), each with one NVML OS device
 *    nvml0..nvml15 ("Tesla V100-SXM3-32GB-H"); no CUDA OS device, so no memory size;
 *  - 12 PCIDev with subtype="NVSwitch" (11 of class 0680, one with class 0000);
 *  - no NICs (README: "no NICs/NVMe");
 *  - 2 Packages each with one NUMANode; GPUs nvml0-7 under Package 0, nvml8-15 under 1;
 *  - NVLinkBandwidth distances2hetero, 28 objects: each GPU row has 25000 MB/s to
 *    6 of the 12 switches and 0 elsewhere (hardware.md C.3.4) = 150000 MB/s = 150e9 B/s.
 */
static void test_real_dgx2(void **state)
{
    (void)state;
    struct mb_node_topo n;
    struct mb_err e;
    char *p = shared_path("hwloc_dgx.xml");
    int i;

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), 0);
    assert_int_equal(e.count, 0);
    assert_int_equal(n.n_gpus, 16);
    assert_string_equal(n.gpu_model, "Tesla V100-SXM3-32GB-H");
    assert_dbl(n.gpu_mem_bytes, 0.0);
    assert_int_equal(n.n_nics, 0);
    assert_int_equal(n.n_numa, 2);
    assert_int_equal(n.n_nvswitch, 12);
    assert_dbl(n.nvlink_bw_per_gpu, 6 * 25000 * 1e6);
    /* the matrix lists GPU <-> NVSwitch entries (6 x 25000 MB/s per GPU row), so
     * every GPU pair gets min(row a, row b) = 150 GB/s through the switches, one island */
    assert_true(n.nvlink_switched);
    assert_int_equal(n.n_islands, 1);
    assert_int_equal(n.island_size, 16);
    for (i = 0; i < 16; i++) {
        assert_int_equal(n.gpu_numa[i], i < 8 ? 0 : 1);
        assert_int_equal(n.gpu_nic[i], -1); /* no NIC in the file */
        assert_dbl(n.gpu_nvlink_bw[i], 150e9);
        assert_dbl(n.nvlink_pair[i][(i + 5) % 16], 150e9);
        assert_dbl(n.nvlink_pair[i][i], 0);
        assert_int_equal(n.gpu_island[i], 0);
    }
    mb_free(p);
}

/*
 * hwloc_pci_gpu_nic_small.xml = upstream 32em64t-2n8c2t-pci-wholeio.xml, counted
 * by reading the file:
 *  - NVIDIA GPUs (class 0302, vendor 10de): 0000:03:00.0 (Package 0), 0000:83:00.0 and
 *    0000:84:00.0 (Package 1) = 3. Not GPUs for mbsim: Matrox VGA 102b:0532 and AMD
 *    VGA 1002:6798 (wrong vendor);
 *  - GPUModel: only cuda0 under 84:00.0 has it, "Tesla K40m", with
 *    CUDAGlobalMemorySize 11796032 KiB = 12079136768 bytes;
 *    (the PCIDevice names say "Tesla M2075": GPUModel wins over the PCI name);
 *  - NICs: one OpenFabrics OS device, mlx5_0 (osdev_type 3) under the ConnectX-4
 *    15b3:1013 in Package 1; eth0/eth1 are Intel Ethernet network devices, not counted;
 *  - 2 NUMA nodes; no NVSwitch; no NVLinkBandwidth matrix.
 * GPU -> NIC: the NIC is on another host bridge of Package 1, so GPUs on NUMA 1
 * pick it as "same NUMA" and the GPU on NUMA 0 as "any": all map to NIC 0.
 */
static void test_real_small_pci(void **state)
{
    (void)state;
    struct mb_node_topo n;
    struct mb_err e;
    char *p = shared_path("hwloc_pci_gpu_nic_small.xml");

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), 0);
    assert_int_equal(n.n_gpus, 3);
    assert_string_equal(n.gpu_model, "Tesla K40m");
    assert_dbl(n.gpu_mem_bytes, 11796032.0 * 1024.0);
    assert_int_equal(n.n_nics, 1);
    assert_int_equal(n.n_numa, 2);
    assert_int_equal(n.n_nvswitch, 0);
    assert_dbl(n.nvlink_bw_per_gpu, 0.0);
    assert_int_equal(n.gpu_numa[0], 0);
    assert_int_equal(n.gpu_numa[1], 1);
    assert_int_equal(n.gpu_numa[2], 1);
    assert_int_equal(n.gpu_nic[0], 0);
    assert_int_equal(n.gpu_nic[1], 0);
    assert_int_equal(n.gpu_nic[2], 0);
    /* the one NIC is used by all 3 GPUs: a third of its line rate each; GPU 0 (NUMA 0)
     * reaches it across sockets (no shared PCIe switch or root complex) */
    assert_string_equal(n.nic_name[0], "mlx5_0");
    assert_int_equal(n.nic_numa[0], 1);
    assert_int_equal(n.nic_users[0], 3);
    for (int i = 0; i < 3; i++)
        assert_dbl(n.gpu_nic_share[i], 1.0 / 3);
    assert_true(n.gpu_nic_cross_numa[0]);
    assert_false(n.gpu_nic_cross_numa[1]);
    assert_int_equal(n.n_islands, 0);
    mb_free(p);
}

/*
 * hwloc_power8_gpu_nvlink.xml = upstream power8gpudistances.xml: 4 P100
 * ("Tesla P100-SXM2-16GB", CUDAGlobalMemorySize 16671616 KiB), each with a cuda and
 * an nvml OS device (deduplicated on the PCI device). Its NVLinkBandwidth matrix has
 * 6 objects (4 GPUs, 2 Packages) and a 1000000 diagonal; each GPU row has 40000 to its
 * peer GPU and 40000 to its CPU = 80000 MB/s = 80e9 B/s (diagonal excluded).
 */
static void test_real_power8(void **state)
{
    (void)state;
    struct mb_node_topo n;
    struct mb_err e;
    char *p = shared_path("hwloc_power8_gpu_nvlink.xml");

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), 0);
    assert_int_equal(n.n_gpus, 4);
    assert_string_equal(n.gpu_model, "Tesla P100-SXM2-16GB");
    assert_dbl(n.gpu_mem_bytes, 16671616.0 * 1024.0);
    assert_int_equal(n.n_numa, 2);
    assert_dbl(n.nvlink_bw_per_gpu, 80000 * 1e6);
    /* GPU-GPU entries: 40000 MB/s between GPUs 0-1 and 2-3 (the CPU links are not
     * pairs), so two NVLink islands of 2 consecutive GPUs */
    assert_false(n.nvlink_switched);
    assert_dbl(n.nvlink_pair[0][1], 40e9);
    assert_dbl(n.nvlink_pair[3][2], 40e9);
    assert_dbl(n.nvlink_pair[0][2], 0);
    assert_int_equal(n.n_islands, 2);
    assert_int_equal(n.island_size, 2);
    assert_int_equal(n.gpu_island[1], 0);
    assert_int_equal(n.gpu_island[2], 1);
    mb_free(p);
}

/* ---- 2. XML that must fail cleanly -------------------------------------- */

/* The _v3 files are hwloc 3.0 XML, which hwloc 2.9 refuses (data/formats/README.md). */
static void test_xml_v3_refused(void **state)
{
    (void)state;
    static const char *const files[] = {"hwloc_dgx_v3.xml", "hwloc_pci_gpu_nic_small_v3.xml"};
    size_t i;
    for (i = 0; i < 2; i++) {
        struct mb_node_topo n;
        struct mb_err e;
        char *p = shared_path(files[i]);
        mb_err_clear(&e);
        assert_int_equal(mb_topo_load_xml(p, &n, &e), -1);
        assert_string_equal(e.file, p);
        assert_int_equal(e.line, 3); /* <topology version="3.0">, refused before hwloc reads it */
        assert_string_equal(e.msg, "hwloc cannot load XML (topology version 3.0; mbsim reads version 2.x "
                                   "XML with hwloc 2.x: export the topology with hwloc 2's lstopo --of xml)");
        mb_free(p);
    }
}

static void test_xml_bad_files(void **state)
{
    (void)state;
    struct mb_node_topo n;
    struct mb_err e;
    char *p;

    /* mbsim checks the XML's structure before hwloc sees it (topo_xml.c):
     * the first element must be <topology>, at line 2 column 2 of this file */
    p = data_path("tests/data/topology/not_hwloc.xml"); /* truncated, wrong root */
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), -1);
    assert_string_equal(e.file, p);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 2);
    assert_string_equal(e.msg, "hwloc XML: expected one <topology> root element");
    mb_free(p);

    p = data_path("tests/data/topology/bad_unit.yaml"); /* not XML at all: its first byte */
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), -1);
    assert_int_equal(e.line, 1);
    assert_string_equal(e.msg, "hwloc XML: text outside the root element");
    mb_free(p);

    p = data_path("tests/data/topology/no_gpu.xml"); /* valid hwloc, one core, no GPU */
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml(p, &n, &e), -1);
    assert_string_equal(e.file, p);
    assert_string_equal(e.msg, "no GPU found (no PCI device of class 0302/0300 with vendor 10de)");
    mb_free(p);

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_xml("tests/data/topology/does_not_exist.xml", &n, &e), -1);
    assert_string_equal(e.file, "tests/data/topology/does_not_exist.xml");
    assert_string_equal(e.msg, "cannot open: No such file or directory"); /* mb_input_open */
}

/* ---- 3. shipped presets --------------------------------------------------- */

struct preset_expect {
    const char *name, *gpu;
    int gpus, nics, numa, nvswitch, domain, nvls;
    double nvlink_bw, nic_bw, pcie_bw, xml_nvlink_bw, mem;
};

/*
 * Expected numbers and where they come from (hardware.md = shared/docs/reference/hardware.md):
 *  nvlink_bw: A "NVLink per GPU uni" row: 450 GB/s (H100), 900 GB/s (B200/GB200/GB300; B300 per note 4);
 *             A100 300 GB/s = 12 NVLink3 links x 25 GB/s (DGX A100 spec, not in hardware.md).
 *  nic_bw:    A note 5: CX-7 400 Gb/s = 50e9 B/s (H100, B200, GB200); CX-8 800 Gb/s = 100e9 (B300,
 *             GB300); A100: CX-6 HDR 200 Gb/s = 25e9 (DGX A100 spec).
 *  pcie_bw:   A note 6: Gen5 x16 ~63 GB/s/dir; A100 Gen4 x16 31.5 GB/s (C.3.3 pci_link_speed 31.51);
 *             GB200/GB300 host link NVLink-C2C 450 GB/s uni (note 7).
 *  domain:    A "NVLink domain" row: 8 for HGX/DGX, 72 for NVL72.
 *  gpus/nics: DGX 8 GPUs + 8 NICs (note 5); NVL72 compute tray 4 GPUs + 4 NICs (note 5).
 *  numa:      2 sockets (DGX) / 2 Grace CPUs (NVL72 tray), as built in the node XMLs.
 *  nvswitch:  4 NVSwitch gen3 (DGX H100, note 4), 2 NVLink-5 switch chips (B200, A; assumed
 *             for B300), 6 (DGX A100 spec), 0 in an NVL72 compute tray (switches in switch trays).
 *  xml_nvlink_bw: NVLinkBandwidth row sums in the XML: 18 x 25000 MB/s (NVLink4), 18 x 50000
 *             (NVLink5), 12 x 25000 (NVLink3) -- hwloc's per-link values, note 4 / C.3.4.
 *  mem:       A "HBM capacity": 80 GB, 180 GB usable (B200), 186 GB (GB200), 288 GB (GB300; B300
 *             assumed equal), A100 80 GB; stored as GB*1e9/1024 KiB in CUDAGlobalMemorySize.
 */
static const struct preset_expect presets[] = {
    {"dgx_h100", "H100", 8, 8, 2, 4, 8, 1, 450e9, 50e9, 63e9, 450e9, 80e9},
    {"h100_sxm", "H100", 8, 8, 2, 4, 8, 1, 450e9, 50e9, 63e9, 450e9, 80e9},
    {"dgx_a100", "A100", 8, 8, 2, 6, 8, 0, 300e9, 25e9, 31.5e9, 300e9, 80e9},
    {"dgx_b200", "B200", 8, 8, 2, 2, 8, 1, 900e9, 50e9, 63e9, 900e9, 180e9},
    {"dgx_b300", "B300", 8, 8, 2, 2, 8, 1, 900e9, 100e9, 63e9, 900e9, 288e9},
    {"gb200_nvl72", "GB200", 4, 4, 2, 0, 72, 1, 900e9, 50e9, 450e9, 900e9, 186e9},
    {"gb300_nvl72", "GB300", 4, 4, 2, 0, 72, 1, 900e9, 100e9, 450e9, 900e9, 288e9},
    /* the 96 GB HBM2e H100 host of pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md:
     * HGX H100 NVLink (8 GPUs fully connected), 400 Gb/s per GPU, 96 GB */
    {"hgx_h100_96gb", "H100_96GB", 8, 8, 2, 4, 8, 1, 450e9, 50e9, 63e9, 450e9, 96e9},
};

static void test_presets(void **state)
{
    (void)state;
    size_t k;
    for (k = 0; k < sizeof presets / sizeof presets[0]; k++) {
        const struct preset_expect *x = &presets[k];
        struct mb_system s;
        struct mb_err e;
        int i;
        mb_err_clear(&e);
        if (mb_topo_load_system(x->name, &s, &e)) {
            char buf[1024];
            mb_err_format(&e, buf, sizeof buf);
            fail_msg("%s: %s", x->name, buf);
        }
        assert_string_equal(s.name, x->name);
        assert_string_equal(s.gpu, x->gpu);
        {
            char want[128];
            snprintf(want, sizeof want, "/topology/systems/%s.xml", x->name);
            assert_true(ends_with(s.node_xml, want));
        }
        assert_int_equal(s.gpus_per_node, x->gpus);
        assert_int_equal(s.node.n_gpus, x->gpus);
        assert_int_equal(s.node.n_nics, x->nics);
        assert_int_equal(s.node.n_numa, x->numa);
        assert_int_equal(s.node.n_nvswitch, x->nvswitch);
        assert_int_equal(s.nvlink_domain, x->domain);
        assert_int_equal(s.nvls, x->nvls);
        assert_dbl(s.nvlink_bw, x->nvlink_bw);
        assert_dbl(s.nic_bw, x->nic_bw);
        assert_dbl(s.pcie_bw, x->pcie_bw);
        assert_dbl(s.node.nvlink_bw_per_gpu, x->xml_nvlink_bw);
        assert_dbl(s.node.nvlink_bw_per_gpu, s.nvlink_bw); /* XML and YAML agree */
        assert_dbl(s.node.gpu_mem_bytes, x->mem);
        /* Assumed placeholders in every preset (not in hardware.md): 1 us, 5 us, 2 tiers, 1:1. */
        assert_dbl(s.nvlink_latency, 1e-6);
        assert_dbl(s.nic_latency, 5e-6);
        assert_int_equal(s.switch_tiers, 2);
        assert_dbl(s.oversubscription, 1.0);
        assert_int_equal(s.max_gpus, 0);
        assert_true(strlen(s.source) > 20);
        assert_int_equal(s.nvlink_domain % s.gpus_per_node, 0);
        /* Constructed XMLs: one NIC per GPU on its own PCIe host bridge -> 1:1 pairing;
         * first half of the GPUs on socket/Grace 0. */
        for (i = 0; i < x->gpus; i++) {
            assert_int_equal(s.node.gpu_nic[i], i);
            assert_int_equal(s.node.gpu_numa[i], i < x->gpus / 2 ? 0 : 1);
        }
    }
}

static void test_preset_list_and_unknown(void **state)
{
    (void)state;
    char buf[512];
    struct mb_system s;
    struct mb_err e;

    /* The *.yaml stems of topology/systems, sorted. */
    mb_topo_list_presets(buf, sizeof buf);
    assert_string_equal(buf, "a3_mega, dgx_a100, dgx_a100_40gb, dgx_b200, dgx_b300, dgx_h100, dgx_h100_4nic, "
                             "gb200_nvl36x2, gb200_nvl72, gb300_nvl72, h100_sxm, hgx_h100_96gb, hgx_h200, hgx_h800, "
                             "l40s_pcie8");

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("dgx_h200", &s, &e), -1);
    assert_string_equal(e.msg, "unknown system 'dgx_h200'; known: a3_mega, dgx_a100, dgx_a100_40gb, dgx_b200, dgx_b300, "
                               "dgx_h100, dgx_h100_4nic, gb200_nvl36x2, gb200_nvl72, gb300_nvl72, h100_sxm, "
                               "hgx_h100_96gb, hgx_h200, hgx_h800, l40s_pcie8");
    mb_err_clear(&e);
    /* a path (it has a '/') that names nothing, and a directory, say so rather than list presets */
    assert_int_equal(mb_topo_load_system("../sim/x", &s, &e), -1);
    assert_string_equal(e.msg, "system file '../sim/x' not found");
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("topology/", &s, &e), -1);
    assert_string_equal(e.msg, "system 'topology/' is a directory; expected a preset name or a system YAML file");

    /* A path to an existing file is loaded as a system file; name defaults from the YAML. */
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("topology/systems/dgx_h100.yaml", &s, &e), 0);
    assert_string_equal(s.name, "dgx_h100");
}

/* ---- 4. bad system files ---------------------------------------------------- */

struct bad_case {
    const char *file;
    int line, col;
    const char *msg;
};

/* Each fixture is the valid good_minimal.yaml with one change; line 1 is a comment,
 * so the mapping starts at 2:1 and key N of good_minimal sits on line N+1. */
static const struct bad_case bad_cases[] = {
    /* line 7 "nvlink_bandwidth: 450 GB/s", error at the key */
    {"unknown_key.yaml", 7, 1,
     "unknown key 'nvlink_bandwidth' in system; expected one of: name, gpu, node_xml, gpus_per_node, "
     "nvlink_domain, nvlink_bw, nvlink_latency, nic_bw, nic_speed, nic_latency, switch_tiers, oversubscription, "
     "nvls, pcie_bw, max_gpus, power_cap, gpu_memory, inter_socket_bw, rack_gpus, rails, nics_per_gpu, "
     "host_time_scale, source"},
    /* line 3 "gpu: A100" against the XML's "NVIDIA H100 80GB HBM3", error at the value */
    {"gpu_model_mismatch.yaml", 3, 6,
     "gpu = A100 (calibration table calibration/tables/A100.yaml) but node_xml "
     "'../../../topology/systems/dgx_h100.xml' has GPU model 'NVIDIA H100 80GB HBM3' (H100)"},
    /* line 7 "nvlink_bw: 300 GB/s"; the matrix has 5+4+4+5 links x 25000 MB/s = 450 GB/s per GPU */
    {"nvlink_mismatch.yaml", 7, 12,
     "nvlink_bw = 300 GB/s but node_xml '../../../topology/systems/dgx_h100.xml' has an NVLinkBandwidth "
     "matrix of 450 GB/s per GPU (drop nvlink_bw or make them agree)"},
    /* line 9 "nic_bw: 400 Gb/s"; 4 NICs x 400 Gb/s for 8 GPUs = 200 Gb/s per GPU */
    {"nic_mismatch.yaml", 9, 9,
     "nic_bw = 400 Gb/s per GPU but nic_speed = 400 Gb/s and node_xml "
     "'../../../topology/systems/dgx_h100_4nic.xml' (4 NICs for 8 GPUs) give 200 Gb/s per GPU"},
    /* line 11 "nvls: true" on a node without NVLink */
    {"pcie_only_nvls.yaml", 11, 7,
     "nvls: true but node_xml 'pcie_node.xml' has no NVLink (no NVLinkBandwidth matrix, no nvlink_bw)"},
    /* second "gpu:" on line 7; first on line 3 */
    {"duplicate_key.yaml", 7, 1, "duplicate key 'gpu' (first defined at line 3)"},
    /* "nvlink_bw: 450 GB" on line 7, error at the value (column 12) */
    {"bad_unit.yaml", 7, 12,
     "bad unit 'GB' in '450 GB': expected a bandwidth with a unit (B/s, KB/s, MB/s, GB/s, TB/s, Mb/s, "
     "Gb/s, Gbit/s, Tb/s, GiB/s)"},
    /* "gpus_per_node: 4" on line 5, value at column 16; dgx_h100.xml has 8 GPUs */
    {"gpu_count_mismatch.yaml", 5, 16,
     "gpus_per_node = 4 but node_xml '../../../topology/systems/dgx_h100.xml' has 8 GPUs"},
    /* no "source:" -- reported at the mapping start */
    {"missing_source.yaml", 2, 1, "missing required key 'source' in system"},
    /* "nvlink_domain: 12" on line 6, value at column 16 */
    {"domain_not_multiple.yaml", 6, 16, "nvlink_domain = 12 is not a multiple of gpus_per_node = 8"},
    /* "gpu: V100" on line 3, value at column 6 */
    {"unknown_gpu.yaml", 3, 6,
     "unknown GPU type 'V100'; expected one of: A100, H100, H100_96GB, H200, B200, B300, GB200, GB300 "
     "(calibrated), L40S (described, no calibration table)"},
    /* "power_cap: 800 W" on line 16, value at column 12: above the H100's 700 W TDP */
    {"power_cap_above.yaml", 16, 12,
     "power_cap = 800 W is above the H100's TDP of 700 W (a board cannot be allowed more than its rating)"},
    /* 100 W < 0.6^3 x 700 W = 151.2 W */
    {"power_cap_low.yaml", 16, 12,
     "power_cap = 100 W is below 151.2 W = 0.6^3 x the H100's TDP of 700 W, where the sustained-clock model "
     "reaches the lowest tensor fraction mbsim accepts (0.6)"},
    /* "host_time_scale: 0.05" on line 16: below the sanity bound */
    {"host_time_scale_low.yaml", 16, 18, "system.host_time_scale = 0.05 is out of range [0.1, 20]"},
    /* a bare number has no unit */
    {"power_cap_bare.yaml", 16, 12, "bad unit '' in '500': expected a power with a unit (mW, kW, MW, W)"},
    /* ---- the fabric against the node (docs/topology.md, "Fabric checks") ---- */
    /* "nvlink_domain: 16" on line 6: HGX nodes keep NVLink inside the node */
    {"fabric_domain_hgx.yaml", 6, 16,
     "nvlink_domain = 16 spans 2 nodes, but H100 nodes have no NVLink out of the node (the NVSwitch chips are in "
     "the node); only rack-scale parts (GB200, GB300: NVL36, NVL72, NVL36x2) join nodes by NVLink: use "
     "nvlink_domain = gpus_per_node = 8"},
    /* GB200 trays: two NVL72 racks are no NVLink domain */
    {"fabric_rack_two_nvl72.yaml", 6, 16,
     "nvlink_domain = 144 with 72-GPU racks (rack_gpus absent: NVL72): expected 4 (one tray), 72 (one rack); "
     "mbsim knows no NVLink domain beyond one NVL72 rack or two NVL36 racks (NVL36x2: rack_gpus 36)"},
    /* NVL36 racks join in pairs only (NVL36x2) */
    {"fabric_rack_36x3.yaml", 6, 16,
     "nvlink_domain = 108 with 36-GPU racks: expected 4 (one tray), 36 (one rack) or 72 (NVL36x2, two racks "
     "joined by NVLink)"},
    {"fabric_rack_gpus_48.yaml", 7, 12, "rack_gpus = 48: an NVL rack holds 36 (NVL36) or 72 (NVL72) GPUs"},
    {"fabric_rack_gpus_hgx.yaml", 16, 12, "rack_gpus applies to rack-scale NVLink parts (GB200, GB300), not H100"},
    /* rails = NIC ports of the node (8 on dgx_h100.xml) */
    {"fabric_rails.yaml", 16, 8,
     "rails = 4 but node_xml '../../../topology/systems/dgx_h100.xml' gives 8 NIC ports per node (8 NICs for 8 "
     "GPUs); one rail (leaf plane) per port"},
    /* 4 NICs for 8 GPUs is 0.5 per GPU */
    {"fabric_nics_per_gpu.yaml", 16, 15,
     "nics_per_gpu = 1 but node_xml '../../../topology/systems/dgx_h100_4nic.xml' has 4 NICs for 8 GPUs (0.5 per "
     "GPU)"},
    /* a taper needs a tier above the leaf */
    {"fabric_oversub_one_tier.yaml", 12, 19,
     "oversubscription = 2 with switch_tiers = 1: a single leaf tier has no uplinks to taper (oversubscription "
     "needs switch_tiers >= 2)"},
    /* one tier: MB_FABRIC_LEAF_NODES = 32 nodes x 8 GPUs */
    {"fabric_one_tier_unbounded.yaml", 11, 15,
     "switch_tiers = 1: one leaf switch per rail holds 32 nodes, at most 256 GPUs; set max_gpus (<= that) or add "
     "a tier"},
    {"fabric_nvls_a100.yaml", 13, 7,
     "nvls: true but A100 nodes have NVSwitch gen2, which has no NVLink SHARP (gen3 and later: H100 onwards)"},
    /* B300: hardware.md A has no B300 TDP */
    {"power_cap_no_tdp.yaml", 17, 12,
     "power_cap: no sourced TDP for GPU B300, so a cap cannot be related to the calibration table's default "
     "power (known for: A100, H100, H200, B200, GB200, GB300)"},
};

static void test_bad_systems(void **state)
{
    (void)state;
    size_t k;
    for (k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
        const struct bad_case *c = &bad_cases[k];
        char rel[256];
        char *p;
        struct mb_system s;
        struct mb_err e;
        snprintf(rel, sizeof rel, "tests/data/topology/%s", c->file);
        p = data_path(rel);
        mb_err_clear(&e);
        if (mb_topo_load_system(p, &s, &e) != -1)
            fail_msg("%s: loaded, expected an error", c->file);
        if (strcmp(e.msg, c->msg) != 0 || e.line != c->line || e.col != c->col)
            fail_msg("%s: got %d:%d: %s\nwant %d:%d: %s", c->file, e.line, e.col, e.msg, c->line, c->col,
                     c->msg);
        assert_string_equal(e.file, p);
        mb_free(p);
    }
}

/* Rails and PCIe-only nodes from the XML.
 * dgx_h100_4nic.xml (topology/gen_node_xml.py, gpus_per_nic=2): 4 NICs, each
 * behind the PCIe switch of GPUs 2k and 2k+1, so 4 ports of 2 GPUs, half a
 * NIC each: nic_speed 400 Gb/s = 50e9 B/s -> 25e9 B/s per GPU, 50e9 per port.
 * pcie_only.yaml: dgx_h100.xml without its NVLinkBandwidth matrix and no
 * nvlink_bw: the GPUs of a node talk over PCIe at pcie_bw = 63 GB/s. */
static void test_rails_and_pcie(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("dgx_h100_4nic", &s, &e), 0);
    assert_int_equal(s.node.n_nics, 4);
    assert_int_equal(s.n_ports, 4);
    assert_dbl(s.nic_speed, 50e9);
    assert_dbl(s.nic_bw, 25e9);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(s.gpu_port[i], i / 2);
        assert_int_equal(s.node.gpu_nic[i], i / 2);
        assert_dbl(s.gpu_nic_bw[i], 25e9);
        assert_dbl(s.node.gpu_nic_path_bw[i], (double)63.015385f * 1e9); /* hwloc keeps pci_link_speed as a float */
    }
    assert_dbl(s.port_bw[3], 50e9);
    assert_int_equal(s.node.nic_users[2], 2);

    char *p = data_path("tests/data/topology/pcie_only.yaml");
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    assert_true(s.intra_pcie);
    assert_dbl(s.nvlink_bw, 63e9);
    assert_int_equal(s.nvlink_domain, 8);
    mb_free(p);
}

/* The two presets of issue 15's last list (docs/topology.md, Presets).
 * hgx_h100_96gb: power_cap 500 W of the 700 W TDP (torchtitan) -> scale (5/7)^(1/3).
 * l40s_pcie8: no NVLinkBandwidth matrix -> PCIe-only, nvlink_bw = pcie_bw = 31.5 GB/s (Gen4 x16,
 * L40S datasheet 64 GB/s bidirectional); 4 NICs, each behind the PCIe switch of GPUs 2k, 2k+1:
 * 400 Gb/s / 2 = 25e9 B/s per GPU, below the 31.5 GB/s GPU -> NIC path, so not capped; 48 GB;
 * the part has no calibration table. */
static void test_new_presets(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("hgx_h100_96gb", &s, &e), 0);
    assert_string_equal(s.node.gpu_model, "NVIDIA H100 96GB HBM2e");
    assert_string_equal(mb_topo_gpu_family(s.node.gpu_model), "H100_96GB");
    assert_true(mb_topo_gpu_calibrated(s.gpu));
    assert_dbl(s.power_cap, 500);
    assert_dbl(s.power_tdp, 700);
    assert_true(fabs(s.power_clock_scale - cbrt(5.0 / 7.0)) < 1e-12);
    assert_int_equal(mb_topo_check_calibrated(&s, "x", &e), 0);

    assert_int_equal(mb_topo_load_system("l40s_pcie8", &s, &e), 0);
    assert_string_equal(s.gpu, "L40S");
    assert_false(mb_topo_gpu_calibrated(s.gpu));
    assert_true(s.intra_pcie);
    assert_int_equal(s.nvls, 0);
    assert_dbl(s.nvlink_bw, 31.5e9);
    assert_int_equal(s.nvlink_domain, 8);
    assert_int_equal(s.node.n_nics, 4);
    assert_int_equal(s.n_ports, 4);
    assert_dbl(s.nic_bw, 25e9);
    assert_dbl(s.node.gpu_mem_bytes, 48e9);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(s.node.gpu_nic[i], i / 2);
        assert_dbl(s.gpu_nvlink_bw[i], 31.5e9);
        assert_dbl(s.gpu_nic_bw[i], 25e9);
        assert_int_equal(s.node.gpu_numa[i], i < 4 ? 0 : 1);
    }
    assert_dbl(s.power_clock_scale, 1);
    mb_err_clear(&e);
    assert_int_equal(mb_topo_check_calibrated(&s, "--calib FILE", &e), -1);
    assert_string_equal(e.msg, "system 'l40s_pcie8' has L40S GPUs, which have no calibration table "
                               "(calibration/tables/L40S.yaml): mbsim cannot price their kernels; give one with "
                               "--calib FILE (docs/calibration.md)");
}

/* NUMA placement on the real 2-socket sample (hwloc_pci_gpu_nic_small.xml, test_real_small_pci):
 * no NVLink, one NIC on socket 1 shared by 3 GPUs; GPU 0 on socket 0 reaches it over the SMP link.
 * nic_speed 200 Gb/s = 25e9 B/s, a third each = 8.333e9. The CPU is an "Intel(R) Xeon(R) CPU
 * E5-2650" (no Scalable model number): NCCL's BDW_QPI_BW = 6 GB/s, so GPU 0 gets
 * min(8.333e9, 6e9 / 1) = 6e9 and the system's nic_bw (slowest GPU) is 6e9; GPUs 1, 2 keep
 * 8.333e9. Given inter_socket_bw 3 GB/s: 3e9. NCCL's table from CPU names: closed values. */
static void test_cross_numa_nic(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    const char *src = NULL;
    char *p = data_path("tests/data/topology/cross_numa_nic.yaml");
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    mb_free(p);
    assert_string_equal(s.node.cpu_model, "Intel(R) Xeon(R) CPU E5-2650 0 @ 2.00GHz");
    assert_true(s.intra_pcie);
    assert_dbl(s.inter_socket_bw, 6e9);
    assert_true(s.gpu_nic_via_smp[0]);
    assert_false(s.gpu_nic_via_smp[1] || s.gpu_nic_via_smp[2]);
    assert_dbl(s.gpu_nic_bw[0], 6e9);
    assert_dbl(s.gpu_nic_bw[1], 25e9 / 3);
    assert_dbl(s.gpu_nic_bw[2], 25e9 / 3);
    assert_dbl(s.nic_bw, 6e9);
    p = data_path("tests/data/topology/cross_numa_nic_given.yaml");
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    mb_free(p);
    assert_dbl(s.inter_socket_bw, 3e9);
    assert_dbl(s.gpu_nic_bw[0], 3e9);
    assert_dbl(s.nic_bw, 3e9);
    /* with NVLink (every preset) NCCL relays through a peer next to the NIC: no SMP cap */
    assert_int_equal(mb_topo_load_system("dgx_h100", &s, &e), 0);
    assert_dbl(s.inter_socket_bw, 0);
    assert_dbl(mb_topo_inter_socket_bw("Intel Xeon Platinum 8480C", &src), 22e9);
    assert_string_equal(src, "SRP_QPI_BW");
    assert_dbl(mb_topo_inter_socket_bw("Intel Xeon Platinum 8570", &src), 40e9);
    assert_dbl(mb_topo_inter_socket_bw("Intel(R) Xeon(R) Gold 6248 CPU", &src), 10e9);
    assert_dbl(mb_topo_inter_socket_bw("Intel(R) Xeon(R) Gold 6338 CPU", &src), 6e9); /* Ice Lake: not in NCCL's list */
    assert_dbl(mb_topo_inter_socket_bw("AMD EPYC 7742", &src), 16e9);
    assert_dbl(mb_topo_inter_socket_bw("NVIDIA Grace", &src), 6e9);
    assert_dbl(mb_topo_inter_socket_bw("x86_64 host CPU", &src), 0);
    assert_null(src);
}

/* host_time_scale: 1 on every preset (the fitted host terms are the preset's own host's; a Grace
 * part runs the same per-sibling-group values as its x86 sibling, docs/topology.md "Host CPU"); a
 * system file's value is kept. */
static void test_host_time_scale(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system("gb200_nvl72", &s, &e), 0);
    assert_dbl(s.host_time_scale, 1);
    assert_int_equal(mb_topo_load_system("dgx_b200", &s, &e), 0);
    assert_dbl(s.host_time_scale, 1);
    char *p = data_path("tests/data/topology/host_time_scale_given.yaml");
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    mb_free(p);
    assert_dbl(s.host_time_scale, 1.5);
}

/* Fabric statements that agree with the node load: one tier of 32 nodes x 8 GPUs = 256 with
 * rails 8 and one NIC per GPU on dgx_h100.xml; the presets' rack_gpus (NVL36x2 = 2 x 36). */
static void test_fabric_checks_ok(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    char *p = data_path("tests/data/topology/fabric_one_tier_ok.yaml");
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    mb_free(p);
    assert_int_equal(s.switch_tiers, 1);
    assert_int_equal(s.max_gpus, 256);
    assert_int_equal(s.n_ports, 8);
    assert_int_equal(s.rack_gpus, 0);
    assert_int_equal(mb_topo_load_system("gb200_nvl36x2", &s, &e), 0);
    assert_int_equal(s.rack_gpus, 36);
    assert_int_equal(s.nvlink_domain, 72);
    assert_int_equal(mb_topo_load_system("gb300_nvl72", &s, &e), 0);
    assert_int_equal(s.rack_gpus, 72);
    assert_int_equal(mb_topo_load_system("dgx_h100_4nic", &s, &e), 0);
    assert_int_equal(s.n_ports, 4);
}

/* power_cap: the sustained-clock scale is (cap / TDP)^(1/3) (P ~ f^3 in the
 * DVFS range, mb_topo_power_clock_scale): 500 W on a 700 W H100 = (5/7)^(1/3)
 * = 0.89390; no key = the part's default, scale 1; the TDPs are hardware.md A's. */
static void test_power_cap(void **state)
{
    (void)state;
    static struct mb_system s;
    struct mb_err e;
    char *p = data_path("tests/data/topology/power_cap_500.yaml");
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    assert_dbl(s.power_cap, 500);
    assert_dbl(s.power_tdp, 700);
    assert_true(fabs(s.power_clock_scale - 0.893904) < 1e-6);
    assert_true(fabs(s.power_clock_scale * s.power_clock_scale * s.power_clock_scale - 5.0 / 7.0) < 1e-12);
    mb_free(p);
    assert_int_equal(mb_topo_load_system("dgx_h100", &s, &e), 0);
    assert_dbl(s.power_cap, 0);
    assert_dbl(s.power_clock_scale, 1);
    assert_dbl(mb_topo_gpu_tdp("GB300"), 1400);
    assert_dbl(mb_topo_gpu_tdp("B300"), 0);
    assert_dbl(mb_topo_power_clock_scale(700, 700), 1);
    assert_dbl(mb_topo_power_clock_scale(0, 700), 1);
    assert_true(fabs(mb_topo_power_clock_scale(87.5, 700) - 0.5) < 1e-12); /* 1/8 of the power: half the clock */
}

/* The node XML of a system is loaded through hwloc and its errors pass through. */
static void test_system_node_xml_errors(void **state)
{
    (void)state;
    struct mb_system s;
    struct mb_err e;
    char *p = data_path("tests/data/topology/node_xml_v3.yaml");

    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system(p, &s, &e), -1);
    assert_true(ends_with(e.file, "/hwloc_dgx_v3.xml"));
    assert_string_equal(e.msg, "hwloc cannot load XML (topology version 3.0; mbsim reads version 2.x "
                               "XML with hwloc 2.x: export the topology with hwloc 2's lstopo --of xml)");
    mb_free(p);

    p = data_path("tests/data/topology/good_minimal.yaml");
    mb_err_clear(&e);
    assert_int_equal(mb_topo_load_system(p, &s, &e), 0);
    assert_string_equal(s.name, "bad"); /* the fixture's name: key */
    assert_int_equal(s.node.n_gpus, 8);
    assert_string_equal(s.source, "test fixture");
    mb_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_dgx2),
        cmocka_unit_test(test_real_small_pci),
        cmocka_unit_test(test_real_power8),
        cmocka_unit_test(test_xml_v3_refused),
        cmocka_unit_test(test_xml_bad_files),
        cmocka_unit_test(test_xml_memo_by_content),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_preset_list_and_unknown),
        cmocka_unit_test(test_bad_systems),
        cmocka_unit_test(test_rails_and_pcie),
        cmocka_unit_test(test_system_node_xml_errors),
        cmocka_unit_test(test_power_cap),
        cmocka_unit_test(test_host_time_scale),
        cmocka_unit_test(test_new_presets),
        cmocka_unit_test(test_cross_numa_nic),
        cmocka_unit_test(test_fabric_checks_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
