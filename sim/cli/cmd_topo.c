/*
 * cmd_topo.c -- `mbsim topo FILE.xml|SYSTEM [--json]`: what mbsim understood
 * of a node (hwloc XML) or a system (preset or YAML): GPUs and their model,
 * the NVLink matrix, NICs with their speed and the GPUs behind each, the
 * NVLink domain, and for a system the per-GPU bandwidth each collective
 * class sees (line rate x the calibration table's achieved fraction, the
 * rates the link graph and the training step use). docs/topology.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_fabric.h"
#include "mb_topo.h"

/* What one run shows: the node, and the system when one was named. */
struct topo_view {
    const char *arg;
    struct mb_node_topo node;
    const struct mb_system *sys; /* NULL for a bare XML */
    double nv_eff, nic_eff, nvls_eff;
};

static int mb_cli__ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* GPUs per NVLink domain: the system's, else the XML's islands (1 without NVLink). */
static int mb_cli__view_domain(const struct topo_view *v)
{
    if (v->sys)
        return v->sys->nvlink_domain;
    if (v->node.n_islands == 0)
        return 1;
    return v->node.island_size > 0 ? v->node.island_size : v->node.n_gpus;
}

/* Line rate of NIC j in bytes/s: the system's nic_speed; 0 unknown (bare XML). */
static double mb_cli__view_nic_speed(const struct topo_view *v)
{
    return v->sys ? v->sys->nic_speed : 0;
}

static void mb_cli__print_matrix(const struct mb_node_topo *n)
{
    printf("NVLink matrix, GB/s per direction (row -> column):\n      ");
    for (int j = 0; j < n->n_gpus; j++)
        printf(" %5d", j);
    printf("\n");
    for (int i = 0; i < n->n_gpus; i++) {
        printf("  %3d ", i);
        for (int j = 0; j < n->n_gpus; j++)
            printf(" %5.0f", i == j ? 0 : n->nvlink_pair[i][j] / 1e9);
        printf("\n");
    }
}

static void mb_cli__print_nvlink(const struct topo_view *v)
{
    const struct mb_node_topo *n = &v->node;
    if (n->nvlink_bw_per_gpu <= 0) {
        printf("NVLink: none in the XML (no NVLinkBandwidth matrix)%s\n",
               v->sys && v->sys->intra_pcie ? "; GPUs of a node talk over PCIe" : "");
        return;
    }
    double lo = 0, hi = 0, plo = 0, phi = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        lo = i == 0 || n->gpu_nvlink_bw[i] < lo ? n->gpu_nvlink_bw[i] : lo;
        hi = n->gpu_nvlink_bw[i] > hi ? n->gpu_nvlink_bw[i] : hi;
        for (int j = 0; j < n->n_gpus; j++)
            if (j != i) {
                double p = n->nvlink_pair[i][j];
                plo = (i == 0 && j == 1) || p < plo ? p : plo;
                phi = p > phi ? p : phi;
            }
    }
    printf("NVLink: %s; per GPU %.4g GB/s per direction (min %.4g, max %.4g); per pair %.4g..%.4g GB/s; "
           "%d island%s%s\n",
           n->nvlink_switched ? "through NVSwitch" : "direct GPU-GPU links", n->nvlink_bw_per_gpu / 1e9, lo / 1e9,
           hi / 1e9, plo / 1e9, phi / 1e9, n->n_islands, n->n_islands == 1 ? "" : "s",
           n->n_islands > 1 && n->island_size ? " of equal size" : "");
    if (v->sys && v->sys->nvlink_domain > v->sys->gpus_per_node)
        printf("  (the XML's pairs share each GPU's rate among its tray; across the NVLink domain of %d GPUs the "
               "flows run through the NVLink switches at the per-GPU rate, docs/topology.md)\n",
               v->sys->nvlink_domain);
    mb_cli__print_matrix(n);
}

static void mb_cli__print_nics(const struct topo_view *v)
{
    const struct mb_node_topo *n = &v->node;
    double sp = mb_cli__view_nic_speed(v);
    printf("NICs: %d\n", n->n_nics);
    for (int j = 0; j < n->n_nics; j++) {
        printf("  %-12s", n->nic_name[j]);
        if (sp > 0)
            printf(" %6.0f Gb/s", sp * 8 / 1e9);
        else
            printf("   speed ?  ");
        printf("  PCIe %5.1f GB/s  NUMA %2d  GPUs", n->nic_pcie_bw[j] / 1e9, n->nic_numa[j]);
        for (int i = 0; i < n->n_gpus; i++)
            if ((n->gpu_nics[i] >> j) & 1)
                printf(" %d", i);
        printf("\n");
    }
    if (n->n_nics > 0 && !v->sys)
        printf("  (hwloc records no NIC speed: a system YAML's nic_speed gives it)\n");
    printf("GPU  NUMA  NIC          share  PCIe path GB/s%s\n", v->sys ? "  NIC rate Gb/s" : "");
    for (int i = 0; i < n->n_gpus; i++) {
        printf("%3d  %4d  %-12s %5.2f  %14.1f", i, n->gpu_numa[i], n->gpu_nic[i] >= 0 ? n->nic_name[n->gpu_nic[i]] : "-",
               n->gpu_nic_share[i], n->gpu_nic_path_bw[i] / 1e9);
        if (v->sys)
            printf("  %13.0f", v->sys->gpu_nic_bw[i] * 8 / 1e9);
        if (v->sys && v->sys->gpu_nic_via_smp[i])
            printf("  (NIC on another NUMA node: over the SMP link, %.1f GB/s shared)\n", v->sys->inter_socket_bw / 1e9);
        else
            printf("%s\n", n->gpu_nic_cross_numa[i] ? "  (NIC on another NUMA node, no shared PCIe switch)" : "");
    }
}

/* Per-GPU busBW each collective class sees in isolation (achieved rates):
 * inside a domain the NVLink port; NVLS its rate; a ring across D domains of
 * L GPUs moves V/L on the NIC and V(L-1)/L on NVLink, so busBW =
 * min(L nic, L/(L-1) nvl); an all-to-all across domains is NIC bound. */
struct class_bw {
    double intra, nvls, ring_x, a2a_x;
};

static struct class_bw mb_cli__view_classes(const struct topo_view *v)
{
    struct class_bw c = {0};
    const struct mb_system *s = v->sys;
    int L = s->nvlink_domain;
    double nvl = s->nvlink_bw * v->nv_eff, nic = s->nic_bw * v->nic_eff;
    c.intra = nvl;
    c.nvls = s->nvls ? s->nvlink_bw * (v->nvls_eff > 0 ? v->nvls_eff : MB_FABRIC_NVLS_EFF) : 0;
    c.ring_x = L > 1 ? (nic * L < nvl * L / (L - 1) ? nic * L : nvl * L / (L - 1)) : nic;
    c.a2a_x = nic;
    return c;
}

static void mb_cli__print_text(const struct topo_view *v)
{
    const struct mb_node_topo *n = &v->node;
    const char *fam = mb_topo_gpu_family(n->gpu_model);
    if (v->sys)
        printf("system %s: node %s\n", v->sys->name, v->sys->node_xml);
    else
        printf("node %s (hwloc XML)\n", v->arg);
    printf("GPUs: %d x %s", n->n_gpus, n->gpu_model[0] ? n->gpu_model : "(no model in the XML)");
    if (fam)
        printf(" (family %s%s)", fam, mb_topo_gpu_calibrated(fam) ? "" : ", no calibration table");
    if (v->sys && mb_topo_gpu_calibrated(v->sys->gpu))
        printf("; system gpu %s (calibration/tables/%s.yaml)", v->sys->gpu, v->sys->gpu);
    else if (v->sys)
        printf("; system gpu %s (no calibration table)", v->sys->gpu);
    printf("\n");
    if (n->gpu_mem_bytes > 0)
        printf("memory per GPU: %.1f GB\n", n->gpu_mem_bytes / 1e9);
    if (v->sys && v->sys->power_cap > 0)
        printf("power cap: %.0f W of the part's %.0f W TDP: sustained tensor rate x %.4f ((cap/TDP)^(1/3))\n",
               v->sys->power_cap, v->sys->power_tdp, v->sys->power_clock_scale);
    if (v->sys && v->sys->host_time_scale != 1)
        printf("host CPU: %s: kernel issue x %.2f of the calibration table's host (host_time_scale)\n",
               n->cpu_model[0] ? n->cpu_model : "unknown", v->sys->host_time_scale);
    printf("NUMA nodes: %d; NVSwitch PCI devices: %d\n", n->n_numa, n->n_nvswitch);
    mb_cli__print_nvlink(v);
    mb_cli__print_nics(v);
    printf("NVLink domain: %d GPUs%s", mb_cli__view_domain(v), v->sys ? "" : " (from the XML alone)");
    if (v->sys && v->sys->rack_gpus > 0)
        printf(" (%d rack%s of %d GPUs%s)", mb_cli__view_domain(v) > v->sys->rack_gpus ? 2 : 1,
               mb_cli__view_domain(v) > v->sys->rack_gpus ? "s" : "", v->sys->rack_gpus,
               mb_cli__view_domain(v) > v->sys->rack_gpus ? ": NVL36x2, inter-rack hop not modelled" : "");
    printf("\n");
    if (!v->sys)
        return;
    if (!mb_topo_gpu_calibrated(v->sys->gpu)) {
        printf("per-GPU bandwidth each collective class sees: not shown, %s has no calibration table (no achieved "
               "link fractions); line rates: %s %.1f GB/s, NIC %.0f Gb/s per GPU\n", v->sys->gpu,
               v->sys->intra_pcie ? "PCIe" : "NVLink", v->sys->nvlink_bw / 1e9, v->sys->nic_bw * 8 / 1e9);
        return;
    }
    struct class_bw c = mb_cli__view_classes(v);
    printf("per-GPU bandwidth each collective class sees (achieved, per direction, GB/s):\n");
    printf("  inside an NVLink domain (TP, CP, EP, DP rings):     %8.1f  (%s x %.2f)\n", c.intra / 1e9,
           v->sys->intra_pcie ? "PCIe" : "NVLink", v->nv_eff);
    if (c.nvls > 0)
        printf("  NVLS all-reduce inside a domain (algBW):            %8.1f\n", c.nvls / 1e9);
    int L = v->sys->nvlink_domain;
    double nic_l = v->sys->nic_bw * v->nic_eff * L, nvl_l = L > 1 ? c.intra * L / (L - 1) : 0;
    printf("  ring across domains (DP all-reduce/gather busBW):   %8.1f  (NIC %.1f x %d GPUs per domain = %.1f%s)\n",
           c.ring_x / 1e9, v->sys->nic_bw * v->nic_eff / 1e9, L, nic_l / 1e9,
           L > 1 && nvl_l < nic_l ? ", capped by the domain's NVLink ring rate L/(L-1) x NVLink" : "");
    printf("  all-to-all across domains (EP dispatch, per GPU):   %8.1f  (NIC x %.2f)\n", c.a2a_x / 1e9, v->nic_eff);
}

static json_t *mb_cli__json_view(const struct topo_view *v)
{
    const struct mb_node_topo *n = &v->node;
    json_t *o = json_object(), *m = json_array(), *nics = json_array();
    const char *fam = mb_topo_gpu_family(n->gpu_model);
    json_object_set_new(o, "gpus", json_integer(n->n_gpus));
    json_object_set_new(o, "gpu_model", json_string(n->gpu_model));
    json_object_set_new(o, "gpu_family", fam ? json_string(fam) : json_null());
    if (v->sys) {
        json_object_set_new(o, "system", json_string(v->sys->name));
        json_object_set_new(o, "gpu", json_string(v->sys->gpu));
    }
    json_object_set_new(o, "gpu_mem_bytes", json_real(n->gpu_mem_bytes));
    json_object_set_new(o, "numa_nodes", json_integer(n->n_numa));
    for (int i = 0; i < n->n_gpus; i++) {
        json_t *row = json_array();
        for (int j = 0; j < n->n_gpus; j++)
            json_array_append_new(row, json_real(i == j ? 0 : n->nvlink_pair[i][j] / 1e9));
        json_array_append_new(m, row);
    }
    json_object_set_new(o, "nvlink_gbps", m);
    json_object_set_new(o, "nvlink_gbps_per_gpu", json_real(n->nvlink_bw_per_gpu / 1e9));
    json_object_set_new(o, "nvlink_islands", json_integer(n->n_islands));
    for (int j = 0; j < n->n_nics; j++) {
        json_t *x = json_object(), *g = json_array();
        json_object_set_new(x, "name", json_string(n->nic_name[j]));
        json_object_set_new(x, "gbps", mb_cli__view_nic_speed(v) > 0 ? json_real(mb_cli__view_nic_speed(v) * 8 / 1e9) : json_null());
        json_object_set_new(x, "numa", json_integer(n->nic_numa[j]));
        for (int i = 0; i < n->n_gpus; i++)
            if ((n->gpu_nics[i] >> j) & 1)
                json_array_append_new(g, json_integer(i));
        json_object_set_new(x, "gpus", g);
        json_array_append_new(nics, x);
    }
    json_object_set_new(o, "nics", nics);
    json_t *gn = json_array();
    for (int i = 0; i < n->n_gpus; i++)
        json_array_append_new(gn, json_integer(n->gpu_numa[i]));
    json_object_set_new(o, "gpu_numa", gn);
    json_object_set_new(o, "domain_gpus", json_integer(mb_cli__view_domain(v)));
    json_object_set_new(o, "units", json_pack("{s:s, s:s}", "nvlink_gbps", "GB/s per direction",
                                              "nics.gbps", "Gb/s line rate"));
    if (v->sys) {
        struct class_bw c = mb_cli__view_classes(v);
        int cal = mb_topo_gpu_calibrated(v->sys->gpu);
        json_object_set_new(o, "calibrated", json_boolean(cal));
        json_object_set_new(o, "nic_gbps_per_gpu", json_real(v->sys->nic_bw * 8 / 1e9));
        json_object_set_new(o, "inter_socket_gbps",
                            v->sys->inter_socket_bw > 0 ? json_real(v->sys->inter_socket_bw / 1e9) : json_null());
        json_object_set_new(o, "power_cap_w", v->sys->power_cap > 0 ? json_real(v->sys->power_cap) : json_null());
        json_object_set_new(o, "tdp_w", v->sys->power_tdp > 0 ? json_real(v->sys->power_tdp) : json_null());
        json_object_set_new(o, "power_clock_scale", json_real(v->sys->power_clock_scale));
        json_object_set_new(o, "host_time_scale", json_real(v->sys->host_time_scale));
        json_object_set_new(o, "collective_gbps",
                            !cal ? json_null()
                                 : json_pack("{s:f, s:f, s:f, s:f}", "intra_domain", c.intra / 1e9, "nvls", c.nvls / 1e9,
                                             "ring_across_domains", c.ring_x / 1e9, "alltoall_across_domains",
                                             c.a2a_x / 1e9));
    }
    return o;
}

static int mb_cli__topo_usage(FILE *fp, int rc)
{
    fprintf(fp, "usage: mbsim topo FILE.xml|SYSTEM [--json]\n\n"
                "Prints what mbsim read from a node's hwloc XML (lstopo --of xml) or a system (preset name or\n"
                "system YAML): GPUs and model, NVLink bandwidth per pair (summary and matrix), NICs with speed\n"
                "and the GPUs behind each, NUMA placement, the NVLink domain and, for a system, the per-GPU\n"
                "bandwidth each collective class sees. --json: one JSON object (keys in docs/topology.md).\n");
    return rc;
}

/* The system's calibration effs (a table per GPU key). */
static int mb_cli__view_effs(struct topo_view *v, struct mb_err *err)
{
    struct mb_calib *cal = NULL;
    if (!mb_topo_gpu_calibrated(v->sys->gpu))
        return 0; /* no table: no achieved rates (print_text / json_view say so) */
    if (mb_calib_load(v->sys->gpu, NULL, &cal, err))
        return -1;
    v->nv_eff = mb_calib_link_eff(cal, v->sys->intra_pcie ? MB_LINK_PCIE : MB_LINK_NVLINK);
    v->nic_eff = mb_calib_link_eff(cal, MB_LINK_NIC);
    v->nvls_eff = mb_calib_link_eff(cal, MB_LINK_NVLS);
    mb_calib_free(cal);
    return 0;
}

int mb_cmd_topo(int argc, char **argv)
{
    const char *arg = NULL, *val;
    int json = 0, c, rc = -1;
    enum { O_JSON = 256 };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, O_JSON}, {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim topo", "h", lo, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &val)) != CLI_END) {
        if (c == 'h')
            rc = mb_cli__topo_usage(stdout, 0);
        else if (c == O_JSON)
            json = 1;
        else if (c == CLI_OPERAND && !arg)
            arg = val;
        else if (c == CLI_OPERAND) {
            fprintf(stderr, "mbsim topo: one hwloc XML or system expected, got '%s' too\n", val);
            rc = mb_cli__topo_usage(stderr, 2);
        } else
            rc = mb_cli__topo_usage(stderr, 2);
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!arg)
        return mb_cli__topo_usage(stderr, 2);
    struct mb_err err;
    mb_err_clear(&err);
    static struct mb_system sys; /* large: keep it off the stack */
    struct topo_view v = {arg, {0}, NULL, 0, 0, 0};
    rc = 0;
    if (mb_cli__ends_with(arg, ".xml")) {
        rc = mb_topo_load_xml(arg, &v.node, &err);
    } else {
        rc = mb_topo_load_system(arg, &sys, &err);
        if (!rc) {
            v.sys = &sys;
            v.node = sys.node;
            rc = mb_cli__view_effs(&v, &err);
        }
    }
    if (rc) {
        char msg[MB_ERR_TEXT_LEN];
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim topo: %s\n", msg);
        return 1;
    }
    if (json) {
        json_t *o = mb_cli__json_view(&v);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        mb_cli__print_text(&v);
    }
    return 0;
}
