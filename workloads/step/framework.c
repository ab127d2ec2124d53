/*
 * framework.c -- the framework-time model in the step (calibration
 * `framework:`, docs/calibration.md "Framework-time model"): what a training
 * framework adds to the kernel times the op lists are priced with.
 *
 *  - a system power_cap below the part's TDP (docs/topology.md "Power cap")
 *    multiplies tensor_fraction by its sustained-clock scale
 *    (mb_system.power_clock_scale), floored at the parameter's lower bound;
 *  - tensor_fraction and membound_eff act inside the calibration lookups of
 *    the step's table view (mb_calib_use_framework): every GEMM, grouped GEMM
 *    and attention FLOP term is divided by tensor_fraction, every memory-bound
 *    pass runs at membound_eff of HBM bandwidth;
 *  - kernel_eager / kernel_graph: GPU-timeline seconds per kernel a compute op
 *    runs (its kf forward or recomputed, kb backward), the graph value for ops
 *    inside a captured CUDA-graph region or under a full-iteration graph;
 *    kernel_moe on top of kernel_eager for the eager kernels of an MoE block's
 *    ops (module MB_RCM_MOE: router, permutes, experts, shared experts);
 *  - host_kernel: host seconds per eager kernel on top of the table's launch
 *    call (emit.c mb__host); the host runs ahead of the GPU, so it costs GPU
 *    time only after a device-to-host sync or when kernels are shorter. Both
 *    are the table's host's; system.host_time_scale (a what-if for a slower
 *    or faster host CPU, 1 by default) multiplies them (mb_step_host_scale);
 *  - step_overhead: a task of that many seconds after each stage's optimizer
 *    step (reduce.c), the iteration's fixed framework work;
 *  - overlap_slowdown: compute that the schedule runs beside communication
 *    is slowed by that fraction for as long as the communication is estimated
 *    to last (mb_fw_comp consumes the "beside" budgets that emit.c sets).
 *
 * Approximation: which compute runs beside which transfer is decided when the
 * tasks are emitted, from each transfer's estimated duration alone (latency +
 * bytes / achieved link rate, no sharing with other flows), not from the
 * simulated timeline; a transfer that ends early or late does not change it.
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>

void mb_fw_setup(struct mb_build *b)
{
    struct mb_calib_framework fw;
    mb_calib_framework_get(b->cal, &fw);
    int on = !b->s->roofline;
    double pscale = b->s->system.power_clock_scale;
    if (on && pscale > 0 && pscale < 1) { /* the view only: the shared table is untouched */
        double lo = mb_calib_fw_info(MB_FW_TENSOR_FRACTION)->lo;
        fw.v[MB_FW_TENSOR_FRACTION] = fmax(lo, fw.v[MB_FW_TENSOR_FRACTION] * pscale);
        mb_calib_framework_set(b->cal, &fw);
    }
    mb_calib_use_framework(b->cal, on);
    b->fw_on = on;
    b->fw_tensor = on ? fw.v[MB_FW_TENSOR_FRACTION] : 1;
    b->fw_mem_eff = fw.v[MB_FW_MEMBOUND_EFF];
    b->fw_kernel_eager = on ? fw.v[MB_FW_KERNEL_EAGER] : 0;
    b->fw_kernel_graph = on ? fw.v[MB_FW_KERNEL_GRAPH] : 0;
    b->fw_overlap = on ? fw.v[MB_FW_OVERLAP_SLOWDOWN] : 0;
    b->fw_step = on ? fw.v[MB_FW_STEP_OVERHEAD] : 0;
    b->fw_host_ref = on ? fw.v[MB_FW_HOST_KERNEL] : 0;
    b->fw_host = b->fw_host_ref * mb_step_host_scale(b->s);
    b->fw_kernel_moe = on ? fw.v[MB_FW_KERNEL_MOE] : 0;
}

/* GPU seconds of compute op o in this pass, from its table time `dur`: the
 * part beside communication (the larger of the two budgets, each used up by
 * the op) slowed by overlap_slowdown, plus the framework time of its kernels. */
double mb_fw_comp(struct mb_build *b, struct mb_em *em, const struct mb_op *o, int dir, int recompute, double dur)
{
    double beside = mb_step_min(dur, mb_step_max(em->beside_par, em->beside_bg));
    em->beside_par = mb_step_max(0, em->beside_par - dur);
    em->beside_bg = mb_step_max(0, em->beside_bg - dur);
    return dur + b->fw_overlap * beside + mb_fw_kernels(b, o, dir, recompute);
}

/* GPU seconds the framework adds for the kernels of compute op o in this pass
 * (kf forward or recomputed, kb backward; the graph value inside a captured region). */
double mb_fw_kernels(const struct mb_build *b, const struct mb_op *o, int dir, int recompute)
{
    double k = dir && !recompute ? o->kb : o->kf;
    int graphed = o->region || (b->s->cuda_graph & MB_CG_FULL_ITERATION);
    if (graphed)
        return k * b->fw_kernel_graph;
    return k * (b->fw_kernel_eager + ((o->module & MB_RCM_MOE) ? b->fw_kernel_moe : 0));
}

/* Estimated seconds of communication op o alone on its links. */
double mb_fw_comm_est(const struct mb_build *b, const struct mb_op *o)
{
    double nv_rate = o->bound_nv > 0 ? mb_step_min(o->bound_nv, b->nv_cap) : b->nv_cap;
    double nic_rate = o->bound_nic > 0 ? mb_step_min(o->bound_nic, b->nic_cap) : b->nic_cap;
    double nv = o->bytes_nv > 0 ? o->bytes_nv / nv_rate : 0;
    double nic = o->bytes_nic > 0 ? o->bytes_nic / nic_rate : 0;
    return o->latency + mb_step_max(nv, nic);
}
