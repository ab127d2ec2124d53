/*
 * mb_fabric.c -- link graph of a cluster (see mb_fabric.h for the model).
 *
 * Size: 2 NVLink links per GPU, 2 per NIC port and 2 per leaf, created in one pass; routes are
 * computed on demand in O(1) from GPU indices, so a ring over thousands of
 * GPUs costs one route call per flow and no graph search.
 */
#include "mb_fabric.h"

#include <string.h>

struct mb_fabric {
    struct mb_coll_net net;
    int n_gpus, gpn, domain, nodes, groups, n_leaves, ports;
    int *port;               /* [gpn] NIC port (rail) of each local GPU (a copy of the system's gpu_port), or NULL */
    int *nvl_tx, *nvl_rx, *nic_tx, *nic_rx, *up, *down;
    int first_link, n_links; /* links this fabric created: [first_link, first_link + n_links) */
    double *cap;             /* [n_links] */
};

static int mb_fabric__add_link(struct mb_fabric *f, struct mb_engine *e, double c)
{
    int id = mb_engine_add_link(e, c);
    if (f->n_links == 0)
        f->first_link = id;
    f->cap = mb_realloc(f->cap, (size_t)(f->n_links + 1) * sizeof *f->cap);
    f->cap[f->n_links++] = c;
    return id;
}

int mb_fabric_leaf_of(const struct mb_fabric *f, int gpu)
{
    int node = gpu / f->gpn, rail = f->port ? f->port[gpu % f->gpn] : gpu % f->gpn;
    return (node / MB_FABRIC_LEAF_NODES) * f->ports + rail;
}

int mb_fabric_route(const struct mb_fabric *f, int src, int dst, int *links)
{
    if (src / f->domain == dst / f->domain && f->nvl_tx[src] >= 0) {
        links[0] = f->nvl_tx[src];
        links[1] = f->nvl_rx[dst];
        return 2;
    }
    int la = mb_fabric_leaf_of(f, src), lb = mb_fabric_leaf_of(f, dst);
    links[0] = f->nic_tx[src];
    if (la == lb) {
        links[1] = f->nic_rx[dst];
        return 2;
    }
    links[1] = f->up[la];
    links[2] = f->down[lb];
    links[3] = f->nic_rx[dst];
    return 4;
}

static int mb_fabric__route_cb(const void *ctx, int src, int dst, int *links)
{
    return mb_fabric_route(ctx, src, dst, links);
}

struct mb_fabric *mb_fabric_build(struct mb_engine *e, const struct mb_system *sys, int n_gpus,
                                  const struct mb_fabric_params *p, struct mb_err *err)
{
    if (!e || !sys || !p) {
        mb_err_set(err, NULL, 0, 0, "fabric: missing engine, system or parameters");
        return NULL;
    }
    int gpn = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    if (n_gpus < 1 || (n_gpus > gpn && n_gpus % gpn != 0)) {
        mb_err_set(err, NULL, 0, 0,
                   "fabric: %d GPUs on system '%s': expected 1..%d or a multiple of %d GPUs per node", n_gpus,
                   sys->name, gpn, gpn);
        return NULL;
    }
    if (sys->max_gpus > 0 && n_gpus > sys->max_gpus) {
        mb_err_set(err, NULL, 0, 0, "fabric: %d GPUs on system '%s': at most %d", n_gpus, sys->name,
                   sys->max_gpus);
        return NULL;
    }
    if (!(p->nvlink_eff > 0 && p->nvlink_eff <= 1) || !(p->nic_eff > 0 && p->nic_eff <= 1) ||
        p->nvls_eff < 0 || p->nvls_eff > 1 || p->nvlink_lat < 0 || p->nic_lat < 0) {
        mb_err_set(err, NULL, 0, 0, "fabric: efficiencies must be in (0, 1] and latencies >= 0");
        return NULL;
    }
    if (!(sys->nic_bw > 0) || !(sys->nvlink_bw > 0)) {
        mb_err_set(err, NULL, 0, 0, "fabric: system '%s' has no NVLink or NIC bandwidth", sys->name);
        return NULL;
    }
    struct mb_fabric *f = mb_calloc(1, sizeof *f);
    f->n_gpus = n_gpus;
    f->gpn = gpn;
    f->domain = sys->nvlink_domain > 0 ? sys->nvlink_domain : gpn;
    f->nodes = (n_gpus + gpn - 1) / gpn;
    f->groups = (f->nodes + MB_FABRIC_LEAF_NODES - 1) / MB_FABRIC_LEAF_NODES;
    f->ports = sys->n_ports > 0 ? sys->n_ports : gpn;
    f->port = NULL;
    if (sys->n_ports > 0) {
        f->port = mb_malloc((size_t)gpn * sizeof *f->port);
        memcpy(f->port, sys->gpu_port, (size_t)gpn * sizeof *f->port);
    }
    f->n_leaves = f->groups * f->ports;
    size_t ng = (size_t)n_gpus, nl = (size_t)f->n_leaves;
    f->nvl_tx = mb_malloc(ng * sizeof(int));
    f->nvl_rx = mb_malloc(ng * sizeof(int));
    f->nic_tx = mb_malloc(ng * sizeof(int));
    f->nic_rx = mb_malloc(ng * sizeof(int));
    f->up = mb_malloc(nl * sizeof(int));
    f->down = mb_malloc(nl * sizeof(int));
    double nv_eff = sys->intra_pcie && p->pcie_eff > 0 ? p->pcie_eff : p->nvlink_eff;
    double nvl = sys->nvlink_bw * nv_eff, nic = sys->nic_bw * p->nic_eff;
    int has_nvl = f->domain > 1;
    int port_tx[MB_TOPO_MAX_GPUS], port_rx[MB_TOPO_MAX_GPUS];
    for (int g = 0; g < n_gpus; g++) {
        int loc = g % gpn, pt = f->port ? f->port[loc] : loc;
        double nv_g = sys->gpu_nvlink_bw[loc] > 0 ? sys->gpu_nvlink_bw[loc] * nv_eff : nvl;
        double port_g = sys->port_bw[pt] > 0 ? sys->port_bw[pt] * p->nic_eff : nic;
        f->nvl_tx[g] = has_nvl ? mb_fabric__add_link(f, e, nv_g) : -1;
        f->nvl_rx[g] = has_nvl ? mb_fabric__add_link(f, e, nv_g) : -1;
        int first = 1; /* the first local GPU of this port creates its links */
        for (int k = 0; k < loc && f->port; k++)
            if (f->port[k] == pt)
                first = 0;
        if (first) {
            port_tx[pt] = mb_fabric__add_link(f, e, port_g);
            port_rx[pt] = mb_fabric__add_link(f, e, port_g);
        }
        f->nic_tx[g] = port_tx[pt];
        f->nic_rx[g] = port_rx[pt];
    }
    double ovs = sys->oversubscription >= 1 ? sys->oversubscription : 1;
    for (int l = 0; l < f->n_leaves; l++) {
        int pt = l % f->ports;
        double port_l = sys->port_bw[pt] > 0 ? sys->port_bw[pt] * p->nic_eff : nic;
        f->up[l] = mb_fabric__add_link(f, e, MB_FABRIC_LEAF_NODES * port_l / ovs);
        f->down[l] = mb_fabric__add_link(f, e, MB_FABRIC_LEAF_NODES * port_l / ovs);
    }
    struct mb_coll_net *net = &f->net;
    net->n_gpus = n_gpus;
    net->domain_size = f->domain;
    net->nvls = sys->nvls && has_nvl;
    net->intra_pcie = sys->intra_pcie;
    net->nvl_bw = has_nvl ? nvl : 0;
    net->nic_bw = nic;
    net->nvls_bw = sys->nvlink_bw * (p->nvls_eff > 0 ? p->nvls_eff : MB_FABRIC_NVLS_EFF);
    net->lat[MB_COLL_HOP_NVLINK] = p->nvlink_lat;
    net->lat[MB_COLL_HOP_NIC] = p->nic_lat;
    net->nvls_lat = p->nvls_lat;
    net->nvl_tx = f->nvl_tx;
    net->nvl_rx = f->nvl_rx;
    net->route = mb_fabric__route_cb;
    net->ctx = f;
    return f;
}

void mb_fabric_free(struct mb_fabric *f)
{
    if (!f)
        return;
    mb_free(f->nvl_tx);
    mb_free(f->nvl_rx);
    mb_free(f->nic_tx);
    mb_free(f->nic_rx);
    mb_free(f->up);
    mb_free(f->down);
    mb_free(f->cap);
    mb_free(f->port);
    mb_free(f);
}

const struct mb_coll_net *mb_fabric_net(const struct mb_fabric *f)
{
    return f ? &f->net : NULL;
}

int mb_fabric_link(const struct mb_fabric *f, enum mb_fabric_link role, int i)
{
    if (!f)
        return -1;
    int lim = (role == MB_FABRIC_LEAF_UP || role == MB_FABRIC_LEAF_DOWN) ? f->n_leaves : f->n_gpus;
    if (i < 0 || i >= lim)
        return -1;
    switch (role) {
    case MB_FABRIC_NVL_TX: return f->nvl_tx[i];
    case MB_FABRIC_NVL_RX: return f->nvl_rx[i];
    case MB_FABRIC_NIC_TX: return f->nic_tx[i];
    case MB_FABRIC_NIC_RX: return f->nic_rx[i];
    case MB_FABRIC_LEAF_UP: return f->up[i];
    case MB_FABRIC_LEAF_DOWN: return f->down[i];
    }
    return -1;
}

int mb_fabric_n_leaves(const struct mb_fabric *f)
{
    return f ? f->n_leaves : 0;
}

double mb_fabric_link_capacity(const struct mb_fabric *f, int link)
{
    if (!f || link < f->first_link || link >= f->first_link + f->n_links)
        return 0;
    return f->cap[link - f->first_link];
}
