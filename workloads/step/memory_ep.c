/*
 * memory_ep.c -- the device memory DeepEP's and HybridEP's registered buffers take on a rank,
 * outside PyTorch's allocator (docs/modeling.md, Memory, "Dispatcher buffers"; the sources of
 * every size below are cited there and at each function).
 */
#include "step_int.h"

#include <math.h>

/* Megatron-Core's DeepEP buffer (fused_a2a.get_buffer: the larger of the dispatch and combine
 * configs' NVL and RDMA size hints; DeepEP csrc/config.hpp, deep_ep/buffer.py
 * get_dispatch_config / get_combine_config). */
double mb_memory_deepep_bytes(int ranks, int sms, double hidden_bytes)
{
    /* {ranks, dispatch nvl recv, dispatch rdma recv, combine nvl recv, combine rdma recv} */
    static const int cfg[][5] = {{2, 256, 128, 256, 128},  {4, 256, 128, 256, 128},  {8, 256, 128, 256, 128},
                                 {16, 288, 128, 288, 128}, {24, 288, 128, 288, 128}, {32, 288, 128, 288, 128},
                                 {64, 288, 128, 288, 128}, {128, 560, 128, 560, 128}, {144, 720, 128, 720, 128},
                                 {160, 720, 128, 720, 128}};
    int n = (int)(sizeof cfg / sizeof cfg[0]), i = 0;
    while (i < n - 1 && cfg[i][0] < ranks)
        i++;
    const double topk = 128, scales = 128, meta = 8, idx = 8, f32 = 4;
    double ch = sms / 2, nvl_r = ranks < 8 ? ranks : 8, rdma_r = ranks / 8 > 1 ? ranks / 8 : 1;
    double best_nvl = 0, best_rdma = 0;
    for (int k = 0; k < 2; k++) {
        double nrecv = cfg[i][1 + 2 * k], rrecv = cfg[i][2 + 2 * k];
        double nvl = ch * nvl_r * (2 * rdma_r + 3) * 4 +
                     ch * nvl_r * nrecv * (hidden_bytes + meta + topk * idx + topk * f32 + scales * f32);
        double rdma = 0;
        if (ranks > 8)
            rdma = ch * rdma_r * (8 * 2 + 2) * 2 * 4 +
                   ch * rdma_r * rrecv * 2 * (hidden_bytes + meta + topk * idx + topk * f32 + scales * f32 + 16);
        best_nvl = fmax(best_nvl, nvl);
        best_rdma = fmax(best_rdma, rdma);
    }
    return best_nvl + best_rdma;
}

/* Bytes HybridEP's ExtendedMemoryAllocator maps for a request: rounded up to the fabric allocation
 * granularity (csrc/hybrid_ep/allocator/allocator.cu get_size_align_to_granularity,
 * CU_MEM_ALLOC_GRANULARITY_MINIMUM), taken as 2 MiB (an assumption: the driver reports it per GPU). */
static double mb_ep__granule(double bytes)
{
    const double g = 2.0 * 1024 * 1024;
    return bytes > 0 ? ceil(bytes / g) * g : g;
}

/* HybridEP's NVLink-side buffers (NVLCoordinator, csrc/hybrid_ep/buffer/intranode.cu): sized for
 * every token of the group landing on this rank, Tmax = T x ranks_per_domain x domains:
 *  - the combine input, bf16 tokens [Tmax, h] and fp32 probabilities [Tmax, experts of the domain];
 *  - the dispatch output shares them (use_shared_buffer, HybridEPBuffer's default since DeepEP
 *    1dddd19, 2025-11-18; Megatron passes nothing else), so it adds only its fp32 scaling factors
 *    [Tmax, h/128], allocated whatever the token dtype;
 *  - one uint32 flag per chunk of 128 tokens per source rank, for dispatch and for combine;
 * each a mapping of the remote allocator (mb_ep__granule). The preprocessing scratch (blocks x ranks
 * tmp_state_t, cudaMalloc) is a few KiB and left out. */
static double mb_ep__hybridep_nvl(double T, int group, double h, double e_dom)
{
    double tmax = T * group, chunks = ceil(T / 128);
    double combine = mb_ep__granule(tmax * h * 2) + mb_ep__granule(tmax * e_dom * 4);
    double dispatch = mb_ep__granule(tmax * floor(h / 128) * 4);
    return combine + dispatch + 2 * mb_ep__granule(chunks * group * 4);
}

/* HybridEP's RDMA-side buffers across NVLink domains (RDMACoordinator,
 * csrc/hybrid_ep/buffer/internode_doca.cu), allocated when the group spans more than one domain
 * (n domains): for the dispatch this rank's own tokens [T, h] with their probabilities over every
 * expert of the group and scaling factors, and the tokens it relays from the n-1 other domains
 * [T (n-1), h] with probabilities over the domain's experts and scaling factors; for the combine a
 * reduction and a relay buffer of [T (n-1), h] bf16 with the domain's probabilities each; uint64
 * flags (one per 128-token chunk per remote domain, plus 2 per remote domain) in two arrays on
 * each side. Tokens travel bf16 (token_data_type UINT16: Megatron-Core's init_hybrid_ep_buffer
 * asserts no FP8 dispatch). */
static double mb_ep__hybridep_rdma(double T, int domains, double h, double e_dom, double e_all)
{
    if (domains <= 1)
        return 0;
    double r = domains - 1, sc = floor(h / 128) * 4;
    double own = T * (h * 2 + e_all * 4 + sc);
    double relay = T * r * (h * 2 + e_dom * 4 + sc);
    double combine = 2 * T * r * (h * 2 + e_dom * 4);
    double flags = 2 * 2 * (ceil(T / 128) * r + 2 * r) * 8;
    return own + relay + combine + flags;
}

double mb_memory_hybridep_bytes(double T, int group, int per_domain, double h, double experts_per_rank)
{
    if (group < 2)
        return 0;
    if (per_domain < 1 || per_domain > group)
        per_domain = group;
    int domains = group / per_domain;
    double e_dom = experts_per_rank * per_domain;
    return mb_ep__hybridep_nvl(T, group, h, e_dom) + mb_ep__hybridep_rdma(T, domains, h, e_dom, experts_per_rank * group);
}

double mb_memory_dispatcher_bytes(const struct mb_scenario *s, double T)
{
    const struct mb_model *m = &s->model;
    if (m->num_experts <= 0 || s->ep <= 1)
        return 0;
    if (s->dispatcher == MB_DISP_DEEPEP)
        return mb_memory_deepep_bytes(s->ep, s->dispatcher_sms, m->hidden * 2.0);
    if (s->dispatcher != MB_DISP_HYBRIDEP)
        return 0;
    /* the flex dispatcher's group is expert-TP x EP (MoEFlexTokenDispatcher, tp_ep_group), its ranks
     * consecutive; each holds T/tp tokens (sequence-sharded) and num_experts/ep local experts */
    int group = s->ep * s->etp;
    int dom = s->system.nvlink_domain > 0 ? s->system.nvlink_domain : s->system.gpus_per_node;
    int per_domain = mb_scenario_group_local(group, 1, dom > 0 ? dom : group);
    return mb_memory_hybridep_bytes(T / s->tp, group, per_domain, m->hidden, (double)m->num_experts / s->ep);
}
