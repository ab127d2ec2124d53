/*
 * topo_system.c -- a cluster system = one node description (hwloc XML) plus a
 * small YAML file with what hwloc cannot know: NVLink domain size and link
 * rates, NIC rate per GPU, latencies, scale-out switch tiers and taper.
 *
 * The YAML is read through one field table (STYLE.md point 18), so unknown
 * and duplicate keys, bad units and wrong types are reported at file:line:col
 * the same way as in every other mbsim loader. The node XML path is relative
 * to the YAML file's folder. Cross checks: the XML's GPU count must equal
 * gpus_per_node, and nvlink_domain must be a whole number of nodes.
 *
 * Presets live in <data dir>/topology/systems/NAME.yaml; see docs/topology.md.
 */
#include "mb_fabric.h"
#include "mb_input.h"
#include "mb_topo.h"
#include "mb_yaml.h"

#include <unistd.h>
#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The YAML as read (integers are long for the table reader). */
struct mb_topo__sys_yaml {
    char name[64];
    char gpu[32];
    char node_xml[512];
    long gpus_per_node;
    long nvlink_domain;
    double nvlink_bw;
    double nvlink_latency;
    double nic_bw;
    double nic_speed;
    double nic_latency;
    long switch_tiers;
    double oversubscription;
    int nvls;
    double pcie_bw;
    long max_gpus;
    double power_cap;
    double gpu_memory;
    double inter_socket_bw;
    long rack_gpus;
    long rails;
    double nics_per_gpu;
    double host_time_scale;
    char source[1024];
};

#define F_(key, type, member, req, mn, mx, unit)                                      \
    { key, type, offsetof(struct mb_topo__sys_yaml, member),                          \
      sizeof(((struct mb_topo__sys_yaml *)0)->member), req, mn, mx, unit }

/* Ranges are sanity bounds, not physics: they catch a unit slip
 * ("450 MB/s" for NVLink) while allowing future hardware. */
static const struct mb_field mb_topo__sys_fields[] = {
    F_("name", MB_F_STRBUF, name, 0, 1, 0, MB_UNIT_NONE),
    F_("gpu", MB_F_STRBUF, gpu, 1, 1, 0, MB_UNIT_NONE),
    F_("node_xml", MB_F_STRBUF, node_xml, 1, 1, 0, MB_UNIT_NONE),
    F_("gpus_per_node", MB_F_INT, gpus_per_node, 1, 1, MB_TOPO_MAX_GPUS, MB_UNIT_NONE),
    F_("nvlink_domain", MB_F_INT, nvlink_domain, 1, 1, 1e6, MB_UNIT_NONE),
    F_("nvlink_bw", MB_F_DOUBLE, nvlink_bw, 0, 1e9, 1e14, MB_UNIT_BW),
    F_("nvlink_latency", MB_F_DOUBLE, nvlink_latency, 1, 0, 1e-3, MB_UNIT_TIME),
    F_("nic_bw", MB_F_DOUBLE, nic_bw, 0, 1e8, 1e13, MB_UNIT_BW),
    F_("nic_speed", MB_F_DOUBLE, nic_speed, 0, 1e8, 1e13, MB_UNIT_BW),
    F_("nic_latency", MB_F_DOUBLE, nic_latency, 1, 0, 1e-2, MB_UNIT_TIME),
    F_("switch_tiers", MB_F_INT, switch_tiers, 1, 1, 4, MB_UNIT_NONE),
    F_("oversubscription", MB_F_DOUBLE, oversubscription, 0, 1, 64, MB_UNIT_NONE),
    F_("nvls", MB_F_BOOL, nvls, 1, 1, 0, MB_UNIT_NONE),
    F_("pcie_bw", MB_F_DOUBLE, pcie_bw, 1, 1e9, 1e13, MB_UNIT_BW),
    F_("max_gpus", MB_F_INT, max_gpus, 0, 0, 1e9, MB_UNIT_NONE),
    F_("power_cap", MB_F_DOUBLE, power_cap, 0, 1, 1e5, MB_UNIT_POWER),
    F_("gpu_memory", MB_F_DOUBLE, gpu_memory, 0, 1073741824.0, 17592186044416.0, MB_UNIT_BYTES),
    F_("inter_socket_bw", MB_F_DOUBLE, inter_socket_bw, 0, 1e8, 1e13, MB_UNIT_BW),
    F_("rack_gpus", MB_F_INT, rack_gpus, 0, 1, 1e6, MB_UNIT_NONE),
    F_("rails", MB_F_INT, rails, 0, 1, MB_TOPO_MAX_GPUS, MB_UNIT_NONE),
    F_("nics_per_gpu", MB_F_DOUBLE, nics_per_gpu, 0, 0.01, 64, MB_UNIT_NONE),
    F_("host_time_scale", MB_F_DOUBLE, host_time_scale, 0, 0.1, 20, MB_UNIT_NONE),
    F_("source", MB_F_STRBUF, source, 1, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 0, 0, MB_UNIT_NONE}};

#undef F_

/* GPU type keys understood by the calibration tables. */
static const char *const mb_topo__gpu_keys[] = {"A100", "H100", "H100_96GB", "H200", "B200",
                                               "B300", "GB200", "GB300", NULL};

/* Parts a system may describe although no calibration table prices their
 * kernels: mbsim topo shows them; a simulation needs a table of the user's
 * (calibration: {table: FILE}) and is refused without one. */
static const char *const mb_topo__described_keys[] = {"L40S", NULL};

/* TDP (W) of the part each calibration table was measured on, at its
 * default power limit; 0 = no sourced figure (power_cap is then refused). */
static const struct { const char *key; double tdp; const char *source; } mb_topo__tdp[] = {
    {"A100", 400, "A100 SXM4 400 W, NVIDIA A100 datasheet (not in hardware.md A)"},
    {"H100", 700, "hardware.md A, TDP row"},
    {"H100_96GB", 700, "\"700W TDP\" (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md)"},
    {"H200", 700, "hardware.md A, TDP row"},
    {"B200", 1000, "hardware.md A, TDP row"},
    {"GB200", 1200, "hardware.md A, TDP row"},
    {"GB300", 1400, "hardware.md A, TDP row"},
    {NULL, 0, NULL}};

double mb_topo_gpu_tdp(const char *key)
{
    for (int i = 0; key && mb_topo__tdp[i].key; i++)
        if (!strcmp(key, mb_topo__tdp[i].key))
            return mb_topo__tdp[i].tdp;
    return 0;
}

double mb_topo_power_clock_scale(double cap, double tdp)
{
    if (!(cap > 0) || !(tdp > 0) || cap >= tdp)
        return 1.0;
    return cbrt(cap / tdp);
}

/* power_cap: at most the part's TDP, at least the cap whose clock scale
 * reaches MB_TOPO_POWER_MIN_SCALE. */
static int mb_topo__power(const struct mb_node *root, const struct mb_topo__sys_yaml *y, struct mb_system *out,
                          struct mb_err *err)
{
    double tdp = mb_topo_gpu_tdp(y->gpu);
    out->power_tdp = tdp;
    out->power_cap = 0;
    out->power_clock_scale = 1.0;
    if (!mb_yaml_get(root, "power_cap"))
        return 0;
    const struct mb_node *n = mb_yaml_get(root, "power_cap");
    if (!(tdp > 0))
        return mb_yaml_err(err, n, "power_cap: no sourced TDP for GPU %s, so a cap cannot be related to the "
                                   "calibration table's default power (known for: A100, H100, H200, B200, GB200, GB300)",
                           y->gpu);
    if (y->power_cap > tdp)
        return mb_yaml_err(err, n, "power_cap = %.4g W is above the %s's TDP of %.4g W (a board cannot be "
                                   "allowed more than its rating)", y->power_cap, y->gpu, tdp);
    double lo = tdp * MB_TOPO_POWER_MIN_SCALE * MB_TOPO_POWER_MIN_SCALE * MB_TOPO_POWER_MIN_SCALE;
    if (y->power_cap < lo)
        return mb_yaml_err(err, n, "power_cap = %.4g W is below %.4g W = %.3g^3 x the %s's TDP of %.4g W, where the "
                                   "sustained-clock model reaches the lowest tensor fraction mbsim accepts (%.3g)",
                           y->power_cap, lo, MB_TOPO_POWER_MIN_SCALE, y->gpu, tdp, MB_TOPO_POWER_MIN_SCALE);
    out->power_cap = y->power_cap;
    out->power_clock_scale = mb_topo_power_clock_scale(y->power_cap, tdp);
    return 0;
}

/* GPU families in model strings, longest first ("GB200" before "B200"), and
 * the calibration key each one uses (NULL: no table). H800 / A800 are the
 * export variants of H100 / A100: same die and HBM, fewer NVLink links. */
static const struct { const char *family, *key; } mb_topo__families[] = {
    {"GB300", "GB300"}, {"GB200", "GB200"}, {"B300", "B300"}, {"B200", "B200"}, {"H200", "H200"},
    {"H100 96GB", "H100_96GB"}, {"H100", "H100"},   {"H800", "H100"},   {"A100", "A100"}, {"A800", "A100"}, {"L40S", NULL},
    {"L40", NULL},      {"V100", NULL},     {"P100", NULL},   {NULL, NULL}};

const char *mb_topo_gpu_family(const char *model)
{
    if (!model)
        return NULL;
    for (int i = 0; mb_topo__families[i].family; i++)
        if (strstr(model, mb_topo__families[i].family))
            return mb_topo__families[i].key ? mb_topo__families[i].key : mb_topo__families[i].family;
    return NULL;
}

int mb_topo_gpu_calibrated(const char *family)
{
    for (int i = 0; family && mb_topo__gpu_keys[i]; i++)
        if (!strcmp(family, mb_topo__gpu_keys[i]))
            return 1;
    return 0;
}

int mb_topo_gpu_blackwell(const char *gpu)
{
    return gpu && (!strcmp(gpu, "B200") || !strcmp(gpu, "B300") || !strcmp(gpu, "GB200") || !strcmp(gpu, "GB300"));
}

int mb_topo_check_calibrated(const struct mb_system *s, const char *how, struct mb_err *err)
{
    if (mb_topo_gpu_calibrated(s->gpu))
        return 0;
    return mb_err_set(err, NULL, 0, 0,
                      "system '%s' has %s GPUs, which have no calibration table (calibration/tables/%s.yaml): mbsim "
                      "cannot price their kernels; give one with %s (docs/calibration.md)",
                      s->name, s->gpu, s->gpu, how);
}

static int mb_topo__cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *mb_topo__systems_dir(void)
{
    char *top = mb_path_join(mb_data_dir(), "topology");
    char *dir = mb_path_join(top, "systems");
    mb_free(top);
    return dir;
}

void mb_topo_list_presets(char *buf, size_t len)
{
    char *dir;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;

    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    dir = mb_topo__systems_dir();
    d = opendir(dir);
    mb_free(dir);
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || e->d_name[0] == '.' || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = mb_realloc(names, cap * sizeof *names);
        }
        names[n] = mb_strdup(e->d_name);
        names[n][l - 5] = '\0';
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, mb_topo__cmp_str);
    for (i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
        mb_free(names[i]);
    }
    mb_free(names);
}

/* A preset name is a plain stem: letters, digits, '_', '-', '.' (no '/'). */
static int mb_topo__plain_name(const char *s)
{
    if (!s[0] || s[0] == '.')
        return 0;
    for (; *s; s++)
        if (*s == '/' || *s == '\\')
            return 0;
    return 1;
}

/* <data dir>/topology/systems/NAME.yaml when name is a preset that exists
 * (malloc'd), else NULL. */
static char *mb_topo__preset_path(const char *name)
{
    if (!mb_topo__plain_name(name))
        return NULL;
    char *dir = mb_topo__systems_dir();
    size_t l = strlen(name);
    char *file = mb_malloc(l + 6);
    memcpy(file, name, l);
    memcpy(file + l, ".yaml", 6);
    char *path = mb_path_join(dir, file);
    mb_free(dir);
    mb_free(file);
    if (!mb_file_exists(path)) {
        mb_free(path);
        return NULL;
    }
    return path;
}

int mb_topo_is_preset(const char *name)
{
    char *path = name ? mb_topo__preset_path(name) : NULL;
    int found = path != NULL;
    mb_free(path);
    return found;
}

/* File stem of a path ("a/b/dgx_h100.yaml" -> "dgx_h100"). */
static void mb_topo__stem(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    const char *dot;
    size_t l;
    base = base ? base + 1 : path;
    dot = strrchr(base, '.');
    l = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (l >= len)
        l = len - 1;
    memcpy(buf, base, l);
    buf[l] = '\0';
}

/* The node XML relative to the YAML file's folder (absolute paths kept). */
static char *mb_topo__resolve_xml(const char *yaml_path, const char *xml)
{
    const char *slash;
    char *dir, *full;
    if (xml[0] == '/')
        return mb_strdup(xml);
    slash = strrchr(yaml_path, '/');
    if (!slash)
        return mb_strdup(xml);
    dir = mb_malloc((size_t)(slash - yaml_path) + 1);
    memcpy(dir, yaml_path, (size_t)(slash - yaml_path));
    dir[slash - yaml_path] = '\0';
    full = mb_path_join(dir[0] ? dir : "/", xml);
    mb_free(dir);
    return full;
}

/* Relative mismatch above 1 %: two statements of one rate disagree. */
static int mb_topo__differ(double a, double b)
{
    return fabs(a - b) > 0.01 * fmax(a, b);
}

/* The XML's GPU model against the YAML's gpu (and so its calibration table). */
static int mb_topo__check_gpu(const struct mb_node *root, const struct mb_topo__sys_yaml *y,
                              const struct mb_system *out, struct mb_err *err)
{
    const char *fam = mb_topo_gpu_family(out->node.gpu_model);
    if (!fam || !strcmp(fam, y->gpu))
        return 0;
    return mb_yaml_err(err, mb_yaml_get(root, "gpu"),
                       "gpu = %s (calibration table calibration/tables/%s.yaml) but node_xml '%s' has GPU model '%s' "
                       "(%s%s)",
                       y->gpu, y->gpu, y->node_xml, out->node.gpu_model, fam,
                       mb_topo_gpu_calibrated(fam) ? "" : ", which has no calibration table");
}

/* NVLink from the XML's matrix (the YAML's nvlink_bw, when given, must agree),
 * else the YAML's nvlink_bw, else a PCIe-only node; NVLink islands smaller
 * than the node set the domain. */
static int mb_topo__nvlink(const struct mb_node *root, const struct mb_topo__sys_yaml *y, struct mb_system *out,
                           struct mb_err *err)
{
    const struct mb_node_topo *n = &out->node;
    int g = (int)y->gpus_per_node;
    out->nvlink_domain = (int)y->nvlink_domain;
    out->nvls = y->nvls;
    if (n->nvlink_bw_per_gpu > 0) {
        double lo = 0;
        for (int i = 0; i < g; i++) {
            out->gpu_nvlink_bw[i] = n->gpu_nvlink_bw[i] > 0 ? n->gpu_nvlink_bw[i] : y->pcie_bw;
            lo = i == 0 || out->gpu_nvlink_bw[i] < lo ? out->gpu_nvlink_bw[i] : lo;
        }
        if (y->nvlink_bw > 0 && mb_topo__differ(y->nvlink_bw, n->nvlink_bw_per_gpu))
            return mb_yaml_err(err, mb_yaml_get(root, "nvlink_bw"),
                               "nvlink_bw = %.4g GB/s but node_xml '%s' has an NVLinkBandwidth matrix of %.4g GB/s "
                               "per GPU (drop nvlink_bw or make them agree)",
                               y->nvlink_bw / 1e9, y->node_xml, n->nvlink_bw_per_gpu / 1e9);
        out->nvlink_bw = lo;
        if (n->island_size > 0 && n->island_size < g) {
            if (y->nvlink_domain != n->island_size)
                return mb_yaml_err(err, mb_yaml_get(root, "nvlink_domain"),
                                   "nvlink_domain = %ld but node_xml '%s' has NVLink islands of %d GPUs",
                                   y->nvlink_domain, y->node_xml, n->island_size);
        } else if (n->n_islands > 1) {
            return mb_yaml_err(err, mb_yaml_get(root, "node_xml"),
                               "node_xml '%s': %d NVLink islands of unequal size or not in GPU order; "
                               "mbsim needs equal islands of consecutive GPUs", y->node_xml, n->n_islands);
        }
        return 0;
    }
    if (y->nvlink_bw > 0) { /* no matrix: the YAML's figure for every GPU */
        out->nvlink_bw = y->nvlink_bw;
        for (int i = 0; i < g; i++)
            out->gpu_nvlink_bw[i] = y->nvlink_bw;
        return 0;
    }
    /* PCIe-only node: GPUs of the node talk over their PCIe links */
    if (y->nvls)
        return mb_yaml_err(err, mb_yaml_get(root, "nvls"),
                           "nvls: true but node_xml '%s' has no NVLink (no NVLinkBandwidth matrix, no nvlink_bw)",
                           y->node_xml);
    if (y->nvlink_domain != g)
        return mb_yaml_err(err, mb_yaml_get(root, "nvlink_domain"),
                           "nvlink_domain = %ld on a PCIe-only node: expected gpus_per_node = %d (GPUs of a node "
                           "share its PCIe fabric)", y->nvlink_domain, g);
    out->intra_pcie = 1;
    out->nvlink_bw = y->pcie_bw;
    for (int i = 0; i < g; i++)
        out->gpu_nvlink_bw[i] = y->pcie_bw;
    return 0;
}

double mb_topo_inter_socket_bw(const char *m, const char **src)
{
    const char *s = NULL;
    double gbs = 0;
    if (m && (strstr(m, "AMD") || strstr(m, "EPYC"))) {
        s = "AMD_BW", gbs = 16;
    } else if (m && (strstr(m, "Grace") || strstr(m, "Neoverse") || strstr(m, "ARM") || strstr(m, "aarch64"))) {
        s = "ARM_BW", gbs = 6;
    } else if (m && strstr(m, "POWER9")) {
        s = "P9_BW", gbs = 32;
    } else if (m && (strstr(m, "Intel") || strstr(m, "Xeon"))) {
        s = "BDW_QPI_BW", gbs = 6; /* NCCL's value for Intel models it does not list */
        static const char *const tiers[] = {"Platinum ", "Gold ", "Silver ", "Bronze ", NULL};
        for (int i = 0; tiers[i]; i++) {
            const char *p = strstr(m, tiers[i]);
            if (!p)
                continue;
            p += strlen(tiers[i]);
            if (p[0] >= '1' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' &&
                p[3] >= '0' && p[3] <= '9') {
                int gen = p[1] - '0';
                if (gen == 1 || gen == 2)
                    s = "SKL_QPI_BW", gbs = 10;
                else if (gen == 4)
                    s = "SRP_QPI_BW", gbs = 22;
                else if (gen == 5)
                    s = "ERP_QPI_BW", gbs = 40;
            }
            break;
        }
    }
    if (src)
        *src = s;
    return gbs * 1e9;
}

/* A GPU whose NIC sits on another NUMA node (no shared PCIe switch or root
 * complex) on a node without NVLink sends its NIC traffic over the SMP link
 * (NCCL path type SYS): the GPUs doing so between one pair of NUMA nodes share
 * inter_socket_bw. With NVLink, NCCL relays through a peer GPU next to the NIC
 * (PXN), so nothing crosses the SMP link. */
static int mb_topo__smp(const struct mb_node *root, const struct mb_topo__sys_yaml *y, struct mb_system *out,
                        struct mb_err *err)
{
    const struct mb_node_topo *n = &out->node;
    int g = (int)y->gpus_per_node, any = 0;
    for (int i = 0; i < g; i++) {
        out->gpu_nic_via_smp[i] = n->gpu_nic_cross_numa[i] && out->intra_pcie && n->gpu_nic[i] >= 0;
        any |= out->gpu_nic_via_smp[i];
    }
    out->inter_socket_bw = y->inter_socket_bw > 0 ? y->inter_socket_bw : any ? mb_topo_inter_socket_bw(n->cpu_model, NULL) : 0;
    if (any && !(out->inter_socket_bw > 0))
        return mb_yaml_err(err, mb_yaml_get(root, "node_xml"),
                           "node_xml '%s': a GPU reaches its NIC across NUMA nodes but the CPU model '%s' has no known "
                           "inter-socket bandwidth; give inter_socket_bw", y->node_xml, n->cpu_model);
    return 0;
}

/* NIC rates: nic_speed (per NIC) x each GPU's share, capped by its PCIe path;
 * or the YAML's per-GPU nic_bw. GPUs using the same NICs share one port. */
static int mb_topo__nics(const struct mb_node *root, const struct mb_topo__sys_yaml *y, struct mb_system *out,
                         struct mb_err *err)
{
    const struct mb_node_topo *n = &out->node;
    int g = (int)y->gpus_per_node;
    if (!(y->nic_speed > 0) && !(y->nic_bw > 0))
        return mb_yaml_err(err, root, "missing required key 'nic_speed' (line rate of one NIC) or 'nic_bw' (per GPU)");
    double lo = 0;
    out->n_ports = 0;
    for (int i = 0; i < g; i++) {
        double share = n->n_nics > 0 ? n->gpu_nic_share[i] : 1;
        double bw = y->nic_speed > 0 ? y->nic_speed * share : y->nic_bw;
        if (y->nic_speed > 0 && n->gpu_nic_path_bw[i] > 0 && n->gpu_nic_path_bw[i] < bw)
            bw = n->gpu_nic_path_bw[i];
        if (out->gpu_nic_via_smp[i]) { /* the SMP link, shared by the GPUs crossing it the same way */
            int k = 0;
            for (int q = 0; q < g; q++)
                k += out->gpu_nic_via_smp[q] && n->gpu_numa[q] == n->gpu_numa[i] &&
                     n->nic_numa[n->gpu_nic[q]] == n->nic_numa[n->gpu_nic[i]];
            if (out->inter_socket_bw / k < bw)
                bw = out->inter_socket_bw / k;
        }
        out->gpu_nic_bw[i] = bw;
        lo = i == 0 || bw < lo ? bw : lo;
        int k = 0; /* port: the first GPU with the same NIC set */
        while (k < i && !(n->n_nics > 0 && y->nic_speed > 0 && n->gpu_nics[k] == n->gpu_nics[i]))
            k++;
        out->gpu_port[i] = k < i ? out->gpu_port[k] : out->n_ports++;
        out->port_bw[out->gpu_port[i]] += bw;
    }
    if (y->nic_speed > 0 && y->nic_bw > 0 && mb_topo__differ(y->nic_bw, lo))
        return mb_yaml_err(err, mb_yaml_get(root, "nic_bw"),
                           "nic_bw = %.4g Gb/s per GPU but nic_speed = %.4g Gb/s and node_xml '%s' (%d NICs for %d "
                           "GPUs) give %.4g Gb/s per GPU", y->nic_bw * 8 / 1e9, y->nic_speed * 8 / 1e9, y->node_xml,
                           n->n_nics, g, lo * 8 / 1e9);
    out->nic_bw = lo;
    out->nic_speed = y->nic_speed > 0 ? y->nic_speed
                     : n->n_nics > 0 && n->gpu_nic_share[0] > 0 ? y->nic_bw / n->gpu_nic_share[0] : y->nic_bw;
    return 0;
}

/* Rack-scale NVLink parts: the NVLink ports of a compute tray go to NVSwitch
 * trays, so one domain spans trays (hardware.md A "NVLink domain": 72 for
 * NVL72, 18 trays x 4; NVL36x2 = 2 racks of 36 joined by NVLink cables). */
static int mb_topo__rack_nvlink(const char *gpu)
{
    return !strcmp(gpu, "GB200") || !strcmp(gpu, "GB300");
}

/* The fabric description against the node: NVLink domain size, racks, rails,
 * NICs per GPU, switch tiers and taper, NVLink SHARP. */
static int mb_topo__fabric_checks(const struct mb_node *root, const struct mb_topo__sys_yaml *y,
                                  const struct mb_system *out, struct mb_err *err)
{
    const struct mb_node_topo *n = &out->node;
    long g = y->gpus_per_node, d = y->nvlink_domain, r = y->rack_gpus;
    int rack = mb_topo__rack_nvlink(y->gpu);
    if (!rack && d != g)
        return mb_yaml_err(err, mb_yaml_get(root, "nvlink_domain"),
                           "nvlink_domain = %ld spans %ld nodes, but %s nodes have no NVLink out of the node "
                           "(%s); only rack-scale parts (GB200, GB300: NVL36, NVL72, NVL36x2) join nodes by NVLink: "
                           "use nvlink_domain = gpus_per_node = %ld",
                           d, d / g, y->gpu,
                           out->intra_pcie        ? "PCIe only"
                           : n->n_nvswitch > 0 ? "the NVSwitch chips are in the node"
                                               : "NVLink between the node's GPUs",
                           g);
    if (r > 0 && !rack)
        return mb_yaml_err(err, mb_yaml_get(root, "rack_gpus"),
                           "rack_gpus applies to rack-scale NVLink parts (GB200, GB300), not %s", y->gpu);
    if (rack) {
        if (r > 0 && r != 36 && r != 72)
            return mb_yaml_err(err, mb_yaml_get(root, "rack_gpus"),
                               "rack_gpus = %ld: an NVL rack holds 36 (NVL36) or 72 (NVL72) GPUs", r);
        if (r > 0 && r % g != 0)
            return mb_yaml_err(err, mb_yaml_get(root, "rack_gpus"),
                               "rack_gpus = %ld is not a whole number of %ld-GPU trays", r, g);
        long rg = r > 0 ? r : 72;
        int ok = d == g || d == rg || (rg == 36 && d == 72);
        if (!ok)
            return mb_yaml_err(err, mb_yaml_get(root, "nvlink_domain"),
                               "nvlink_domain = %ld with %ld-GPU racks%s: expected %ld (one tray), %ld (one rack)%s",
                               d, rg, r > 0 ? "" : " (rack_gpus absent: NVL72)", g, rg,
                               rg == 36 ? " or 72 (NVL36x2, two racks joined by NVLink)"
                                        : "; mbsim knows no NVLink domain beyond one NVL72 rack or two NVL36 "
                                          "racks (NVL36x2: rack_gpus 36)");
    }
    if (y->rails > 0 && y->rails != out->n_ports)
        return mb_yaml_err(err, mb_yaml_get(root, "rails"),
                           "rails = %ld but node_xml '%s' gives %d NIC port%s per node (%d NICs for %ld GPUs); one "
                           "rail (leaf plane) per port", y->rails, y->node_xml, out->n_ports,
                           out->n_ports == 1 ? "" : "s", n->n_nics, g);
    if (y->nics_per_gpu > 0) {
        if (n->n_nics == 0)
            return mb_yaml_err(err, mb_yaml_get(root, "nics_per_gpu"),
                               "nics_per_gpu = %g but node_xml '%s' lists no NICs (one per GPU is then assumed): "
                               "drop the key or describe the NICs in the XML", y->nics_per_gpu, y->node_xml);
        double have = (double)n->n_nics / (double)g;
        if (fabs(have - y->nics_per_gpu) > 1e-9 * have)
            return mb_yaml_err(err, mb_yaml_get(root, "nics_per_gpu"),
                               "nics_per_gpu = %g but node_xml '%s' has %d NICs for %ld GPUs (%g per GPU)",
                               y->nics_per_gpu, y->node_xml, n->n_nics, g, have);
    }
    if (y->oversubscription > 1 && y->switch_tiers < 2)
        return mb_yaml_err(err, mb_yaml_get(root, "oversubscription"),
                           "oversubscription = %g with switch_tiers = 1: a single leaf tier has no uplinks to taper "
                           "(oversubscription needs switch_tiers >= 2)", y->oversubscription);
    if (y->switch_tiers == 1) {
        long most = (long)MB_FABRIC_LEAF_NODES * g;
        if (y->max_gpus == 0 || y->max_gpus > most)
            return mb_yaml_err(err, mb_yaml_get(root, y->max_gpus ? "max_gpus" : "switch_tiers"),
                               "switch_tiers = 1: one leaf switch per rail holds %d nodes, at most %ld GPUs; %s",
                               MB_FABRIC_LEAF_NODES, most,
                               y->max_gpus ? "lower max_gpus or add a tier" : "set max_gpus (<= that) or add a tier");
    }
    if (y->nvls && !strcmp(y->gpu, "A100"))
        return mb_yaml_err(err, mb_yaml_get(root, "nvls"),
                           "nvls: true but A100 nodes have NVSwitch gen2, which has no NVLink SHARP (gen3 and later: "
                           "H100 onwards)");
    return 0;
}

/* Read and check the YAML, then load the node XML. The tree is freed by the caller. */
static int mb_topo__read_system(const char *path, const struct mb_node *root,
                                struct mb_system *out, struct mb_err *err)
{
    struct mb_topo__sys_yaml y;
    char *xml;
    int i, ok = 0;

    memset(&y, 0, sizeof y);
    y.oversubscription = 1.0; /* optional: no taper */
    y.max_gpus = 0;           /* optional: unlimited */
    if (mb_yaml_read_fields(root, mb_topo__sys_fields, &y, "system", NULL, err))
        return -1;

    for (i = 0; mb_topo__gpu_keys[i]; i++)
        if (strcmp(y.gpu, mb_topo__gpu_keys[i]) == 0)
            ok = 1;
    for (i = 0; mb_topo__described_keys[i]; i++)
        if (strcmp(y.gpu, mb_topo__described_keys[i]) == 0)
            ok = 1;
    if (!ok)
        return mb_yaml_err(err, mb_yaml_get(root, "gpu"),
                           "unknown GPU type '%s'; expected one of: A100, H100, H100_96GB, H200, B200, B300, GB200, "
                           "GB300 (calibrated), L40S (described, no calibration table)",
                           y.gpu);

    if (y.nvlink_domain % y.gpus_per_node != 0)
        return mb_yaml_err(err, mb_yaml_get(root, "nvlink_domain"),
                           "nvlink_domain = %ld is not a multiple of gpus_per_node = %ld", y.nvlink_domain,
                           y.gpus_per_node);
    if (y.max_gpus > 0 && y.max_gpus % y.gpus_per_node != 0)
        return mb_yaml_err(err, mb_yaml_get(root, "max_gpus"),
                           "max_gpus = %ld is not a multiple of gpus_per_node = %ld", y.max_gpus,
                           y.gpus_per_node);

    xml = mb_topo__resolve_xml(path, y.node_xml);
    if (strlen(xml) >= sizeof out->node_xml) {
        mb_free(xml);
        return mb_yaml_err(err, mb_yaml_get(root, "node_xml"), "node_xml path is too long");
    }
    if (!mb_file_exists(xml)) {
        struct stat st;
        int there = stat(xml, &st) == 0;
        int rc = mb_yaml_err(err, mb_yaml_get(root, "node_xml"),
                             there ? "node_xml '%s' is not a regular file ('%s'; expected an hwloc XML file)"
                                   : "node_xml '%s' not found (looked for '%s')",
                             y.node_xml, xml);
        mb_free(xml);
        return rc;
    }

    memset(out, 0, sizeof *out);
    snprintf(out->node_xml, sizeof out->node_xml, "%s", xml);
    mb_free(xml);
    if (mb_topo_load_xml(out->node_xml, &out->node, err))
        return -1;
    if (out->node.n_gpus != y.gpus_per_node)
        return mb_yaml_err(err, mb_yaml_get(root, "gpus_per_node"),
                           "gpus_per_node = %ld but node_xml '%s' has %d GPUs", y.gpus_per_node, y.node_xml,
                           out->node.n_gpus);

    if (mb_topo__check_gpu(root, &y, out, err) || mb_topo__nvlink(root, &y, out, err) ||
        mb_topo__smp(root, &y, out, err) || mb_topo__nics(root, &y, out, err) || mb_topo__power(root, &y, out, err) ||
        mb_topo__fabric_checks(root, &y, out, err))
        return -1;
    if (y.name[0])
        snprintf(out->name, sizeof out->name, "%s", y.name);
    else
        mb_topo__stem(path, out->name, sizeof out->name);
    snprintf(out->gpu, sizeof out->gpu, "%s", y.gpu);
    out->gpus_per_node = (int)y.gpus_per_node;
    out->rack_gpus = mb_topo__rack_nvlink(y.gpu) ? (int)(y.rack_gpus > 0 ? y.rack_gpus : 72) : 0;
    out->nvlink_latency = y.nvlink_latency;
    out->nic_latency = y.nic_latency;
    out->switch_tiers = (int)y.switch_tiers;
    out->oversubscription = y.oversubscription;
    out->pcie_bw = y.pcie_bw;
    out->gpu_memory = y.gpu_memory;
    out->host_time_scale = y.host_time_scale > 0 ? y.host_time_scale : 1.0;
    out->max_gpus = (int)y.max_gpus;
    snprintf(out->source, sizeof out->source, "%s", y.source);
    return 0;
}

int mb_topo_load_system(const char *name_or_path, struct mb_system *out, struct mb_err *err)
{
    char *path = NULL;
    struct mb_node *root;
    struct mb_system tmp;
    int rc;

    if (!name_or_path || !out)
        return mb_err_set(err, NULL, 0, 0, "no system given");
    if (mb_file_exists(name_or_path))
        path = mb_strdup(name_or_path);
    else
        path = mb_topo__preset_path(name_or_path);
    if (!path && mb_dir_exists(name_or_path))
        return mb_err_set(err, NULL, 0, 0, "system '%s' is a directory; expected a preset name or a system YAML file",
                          name_or_path);
    if (!path && !mb_topo__plain_name(name_or_path)) {
        /* there but not a regular file (/dev/zero, a FIFO): mb_input says what it is */
        if (access(name_or_path, F_OK) == 0 && mb_input_check(name_or_path, "a system YAML file", err))
            return -1;
        return mb_err_set(err, NULL, 0, 0, "system file '%s' not found", name_or_path);
    }
    if (!path) {
        char known[1024];
        mb_topo_list_presets(known, sizeof known);
        return mb_err_set(err, NULL, 0, 0, "unknown system '%s'; known: %s", name_or_path,
                          known[0] ? known : "(none found)");
    }

    root = mb_yaml_load_file(path, err);
    if (!root) {
        mb_free(path);
        return -1;
    }
    rc = mb_topo__read_system(path, root, &tmp, err);
    mb_yaml_free(root);
    mb_free(path);
    if (rc == 0)
        *out = tmp;
    return rc;
}
