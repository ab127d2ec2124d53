/*
 * placement.c -- the placement phase: which ranks form the TP, CP, EP, DP and
 * expert-DP groups of the simulated rank (Megatron's rank order: TP fastest,
 * then CP, DP, PP; EP carved from CP x DP with ETP fastest, as in
 * megatron/core/parallel_state.py), the achieved link rates and latencies from
 * the calibration table, and the routing imbalance.
 */
#include "step_int.h"
#include "mb_calib.h"
#include "mb_fabric.h"

#include <math.h>

struct mb_group mb_step_group(int size, int stride, int dom)
{
    if (size <= 1)
        return (struct mb_group){1, 1, 1, stride};
    struct mb_group g = {size, mb_scenario_group_local(size, stride, dom), 1, stride};
    g.domains = (size + g.local - 1) / g.local;
    return g;
}

/* Most-loaded EP rank / mean under the routing model. Balanced: 1 (Megatron's
 * force-balanced benchmarks). Skewed: expert popularity ~ Zipf(skew) in a
 * seeded random order; the rank holding the heaviest E/ep experts sets the pace. */
static double mb_step__imbalance(const struct mb_scenario *s)
{
    int E = s->model.num_experts, ep = s->ep;
    if (s->routing != MB_ROUTE_SKEWED || E <= 0 || ep <= 1)
        return 1.0;
    double *w = mb_calloc((size_t)E, sizeof *w);
    int *perm = mb_calloc((size_t)E, sizeof *perm);
    struct mb_rng r;
    mb_rng_seed(&r, s->routing_seed);
    for (int i = 0; i < E; i++)
        perm[i] = i;
    for (int i = E - 1; i > 0; i--) {
        int j = (int)(mb_rng_uniform(&r) * (i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    double tot = 0;
    for (int i = 0; i < E; i++) {
        w[perm[i]] = pow(i + 1.0, -s->routing_skew);
        tot += w[perm[i]];
    }
    int per = E / ep;
    double worst = 0;
    for (int rk = 0; rk < ep; rk++) {
        double sum = 0;
        for (int i = 0; i < per; i++)
            sum += w[rk * per + i];
        if (sum > worst)
            worst = sum;
    }
    mb_free(w);
    mb_free(perm);
    return worst / (tot / ep);
}

/* Achieved link rates and per-step latencies, as `mbsim collective` builds
 * its fabric (sim/cli/cmd_collective.c, topology/mb_fabric.h): line rate x
 * the calibrated efficiency, and the calibrated per-collective-step latency
 * (calibration `links:`). */
static void mb_step__links(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    /* nvlink_bw / nic_bw: the slowest GPU's rates from the node XML (its NVLink
     * row, its share of the NICs it uses; the PCIe link on a PCIe-only node) */
    b->nv_cap = s->system.nvlink_bw * mb_calib_link_eff(b->cal, s->system.intra_pcie ? MB_LINK_PCIE : MB_LINK_NVLINK);
    b->nic_cap = s->system.nic_bw * mb_calib_link_eff(b->cal, MB_LINK_NIC);
    b->nv_lat = mb_calib_link_latency(b->cal, MB_LINK_NVLINK);
    b->nic_lat = mb_calib_link_latency(b->cal, MB_LINK_NIC);
    if (s->system.nvls) {
        double eff = mb_calib_link_eff(b->cal, MB_LINK_NVLS);
        b->nvls_bw = s->system.nvlink_bw * (eff > 0 ? eff : MB_FABRIC_NVLS_EFF);
        b->nvls_lat = mb_calib_link_latency(b->cal, MB_LINK_NVLS);
    }
}

int mb_step_place(struct mb_build *b, struct mb_err *err)
{
    const struct mb_scenario *s = b->s;
    b->gpu = mb_calib_spec(b->cal);
    if (b->gpu->peak[s->prec.gemm] <= 0)
        return mb_err_set(err, s->file, 0, 0, "%s has no dense %s tensor-core rate (precision '%s')", b->gpu->name,
                          mb_prec_name(s->prec.gemm), s->prec.label);
    b->launch = (s->cuda_graph & MB_CG_FULL_ITERATION) ? 0 : b->gpu->launch_s * mb_step_host_scale(s);
    b->gemm_scale = mb_calib_recipe_gemm_scale(b->cal, s->prec.label);
    mb_fw_setup(b);
    mb_step__links(b);
    int dom = s->system.nvlink_domain > 0 ? s->system.nvlink_domain : s->system.gpus_per_node;
    b->g_tp = mb_step_group(s->tp, 1, dom);
    b->g_cp = mb_step_group(s->cp, s->tp, dom);
    b->g_dp = mb_step_group(s->dp, s->tp * s->cp, dom);
    b->g_ep = mb_step_group(s->ep, s->etp, dom);
    int edp = (s->tp * s->cp * s->dp) / (s->ep * s->etp);
    b->lay.edp = edp < 1 ? 1 : edp;
    b->g_edp = mb_step_group(b->lay.edp, s->ep * s->etp, dom);
    b->pp_over_nic = (long)s->tp * s->cp * s->dp * 2 > dom;
    b->route_imbalance = mb_step__imbalance(s);
    /* with a capacity factor (Megatron --moe-expert-capacity-factor) no expert
     * takes more than cf x its balanced share; the rest is dropped */
    if (s->capacity_factor >= 1 && b->route_imbalance > s->capacity_factor)
        b->route_imbalance = s->capacity_factor;
    return 0;
}
