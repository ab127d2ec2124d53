/*
 * layout.c -- decoder layers to virtual pipeline stages, parameters per
 * stage, and the CUDA-graph static buffers each stage holds.
 */
#include "step_int.h"

#include <math.h>
#include <string.h>

/* Layers per virtual stage: an even split when it divides; otherwise as
 * Megatron's account_for_embedding/loss_in_pipeline_split: the embedding and
 * the loss each count as one layer of the first and last virtual stage, and
 * the num_layers + 2 units are spread as evenly as possible (extra ones
 * first). An explicit --pipeline-model-parallel-layout counts the 't's of
 * each '|'-separated segment (segment i is virtual stage i, as in Megatron). */
static void mb_step__split(const struct mb_scenario *s, int nl, int nv_st, int *first, int *count)
{
    int units = nl % nv_st ? nl + 2 : nl;
    for (int i = 0, at = 0; i < nv_st; i++) {
        count[i] = units / nv_st + (i < units % nv_st ? 1 : 0);
        if (units != nl)
            count[i] -= (i == 0) + (i == nv_st - 1);
        if (count[i] < 0)
            count[i] = 0;
        first[i] = at;
        at += count[i];
    }
    if (!s->pipeline_layout[0])
        return;
    int seg = 0;
    memset(count, 0, (size_t)nv_st * sizeof *count);
    for (const char *c = s->pipeline_layout; *c && seg < nv_st; c++) {
        if (*c == '|')
            seg++;
        else if (*c == 't')
            count[seg]++;
    }
    for (int i = 0, at = 0; i < nv_st; i++) {
        first[i] = at;
        at += count[i];
    }
}

/* Parameters (elements) per stage, for DP/FSDP traffic and memory. */
static void mb_step__params(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    struct mb_layout *lay = &b->lay;
    int p = lay->p, v = lay->v, nl = m->n_layers, n_moe = 0;
    struct mb_params par;
    mb_model_params(m, &par);
    for (int i = 0; i < nl; i++)
        n_moe += m->layer[i].ffn == MB_FFN_MOE;
    double body_dense = par.attn + par.dense_mlp + par.shared + par.router + par.norms;
    lay->dense_layer_params = nl ? body_dense / nl : 0;
    /* TE linear layers: the mixers' and FFNs' weights (norms and routers stay BF16) */
    double layer_linear = nl ? (par.attn + par.dense_mlp + par.shared) / nl : 0;
    lay->expert_layer_params = n_moe ? par.experts / n_moe : 0;
    for (int st = 0; st < p; st++)
        for (int c = 0; c < v; c++) {
            int vs = c * p + st;
            for (int i = lay->first[vs]; i < lay->first[vs] + lay->count[vs]; i++) {
                lay->params_dense_stage[st] += lay->dense_layer_params;
                lay->params_qdense_stage[st] += s->prec.quantize ? layer_linear : 0;
                if (m->layer[i].ffn == MB_FFN_MOE)
                    lay->params_expert_stage[st] += lay->expert_layer_params;
            }
        }
    lay->layer_params = lay->dense_layer_params / s->tp + (n_moe ? lay->expert_layer_params / (s->ep * s->etp) : 0);
    lay->params_dense_stage[0] += par.embedding;
    /* output layer and MTP block on the last stage; an MTP block whose layer is MoE
     * holds one layer of routed experts, sharded by EP like the others */
    double mtp_experts = (m->mtp_layers > 0 && nl > 0 && m->layer[nl - 1].ffn == MB_FFN_MOE)
                             ? fmin(par.mtp, m->mtp_layers * lay->expert_layer_params)
                             : 0;
    lay->params_dense_stage[p - 1] += par.output + par.mtp - mtp_experts;
    lay->params_expert_stage[p - 1] += mtp_experts;
    lay->params_vision = par.vision;
    lay->weight_q_bytes = mb_memory_qweight_bytes(s, b->gpu);
    lay->weight_q_gather = mb_memory_qweight_gather_bytes(s);
    lay->fp8_transpose = mb_memory_fp8_transpose_cache_bytes(s, b->gpu);
}

void mb_layout_build(struct mb_build *b, int mbs_n)
{
    const struct mb_scenario *s = b->s;
    struct mb_layout *lay = &b->lay;
    lay->p = s->pp;
    lay->v = s->vpp > 0 ? s->vpp : 1;
    lay->m = mbs_n;
    int nv_st = lay->p * lay->v;
    lay->first = mb_calloc((size_t)nv_st, sizeof *lay->first);
    lay->count = mb_calloc((size_t)nv_st, sizeof *lay->count);
    mb_step__split(s, b->m->n_layers, nv_st, lay->first, lay->count);
    mb_step__params(b);
}

/* Static graph inputs that duplicate a tensor eager execution holds anyway, on one virtual stage
 * vs of nv: a captured region whose input is the previous region's static output (two graphs
 * back to back, in one layer or across layers) or the activation received from the previous
 * pipeline stage (the schedule keeps it for the backward); plus the last region's static output on
 * a stage that sends it on, which eager execution frees once sent (deallocate_output_tensor,
 * NVIDIA/Megatron-LM@d98e8a64 megatron/core/pipeline_parallel/schedules.py). A region fed by an
 * eager op gets no count: the eager output is freed once copied in, and the static input is the
 * tensor the region saves, already counted as its activation. *graphed is set when vs has a region. */
static int mb_step__graph_copies(struct mb_build *b, int vs, int nv, int *graphed)
{
    const struct mb_layout *lay = &b->lay;
    int n = 0, prev = vs > 0 ? -1 : 0; /* region of the op before; -1: a tensor held anyway */
    for (int i = lay->first[vs]; i < lay->first[vs] + lay->count[vs]; i++) {
        const struct mb_oplist *L = mb_plan_layer(b, i);
        if (prev > 0)
            prev = -1; /* another layer's graph, whatever its id */
        for (int q = 0; q < L->n; q++) {
            int r = L->op[q].region;
            n += r && prev && r != prev;
            *graphed |= r != 0;
            prev = r;
        }
    }
    return n + (vs < nv - 1 && prev > 0);
}

/* CUDA-graph memory.
 * Scoped graphs: TE's make_graphed_callables (Megatron-Core --cuda-graph-impl transformer_engine)
 * captures a forward and a backward graph per captured module, layer and microbatch. With TE >= 2.7
 * Megatron passes _reuse_graph_input_output_buffers=True (NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/transformer/cuda_graphs.py), and TE (NVIDIA/TransformerEngine@d0067d0d
 * transformer_engine/pytorch/graph.py): reuses a microbatch's static inputs for a later one once
 * its backward is done, so a region holds them for the microbatches in flight; keeps a static
 * output only until its backward (weak reference after); shares one static grad-output buffer per
 * shape across all graphs; drops each grad input after the next backward. What this adds to eager
 * execution is the copies of mb__graph_copies per microbatch in flight, and the shared grad output
 * [s/tp, b, h] of the stage. Each is an allocation of the graphs' private pool, which never uses
 * expandable segments: at least a 2 MiB segment (mb_memory_segment), which is what short sequences
 * pay. The graphs' saved tensors are the activations already counted.
 * Full-iteration graph (Megatron-Core full_cuda_graph.py): the whole
 * forward-backward of every microbatch is one graph; its StaticBufferLoader
 * keeps a static copy of every microbatch's input batch for the step (tokens
 * and position ids, int64, on the first stage; labels int64 and loss mask
 * fp32 on the last), and its private pool holds the step's dynamic peak (the
 * activations, counted) without expandable segments (memory.c). */
void mb_layout_graphs(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    struct mb_layout *lay = &b->lay;
    int p = lay->p, v = lay->v;
    if (!s->cuda_graph)
        return;
    int m_all = s->global_batch_size / (s->micro_batch_size * s->dp);
    if (s->cuda_graph & MB_CG_FULL_ITERATION) {
        double tok = (double)s->micro_batch_size * s->seq_length;
        for (int st = 0; st < p; st++) {
            double per = 0;
            if (st == 0)
                per += 2 * mb_memory_segment(8 * tok);
            if (st == p - 1)
                per += mb_memory_segment(8 * tok) + mb_memory_segment(4 * tok);
            lay->graph_bytes_stage[st] = per * m_all;
        }
        return;
    }
    double hbuf = (double)s->micro_batch_size * s->seq_length / s->cp / s->tp * m->hidden * BF16;
    double seg = mb_memory_segment(hbuf);
    for (int st = 0; st < p; st++) {
        int inflight = mb_sched_warmup_depth(st, p, v) + 1 + (s->overlap_ep_comm && m->num_experts > 0 && s->ep > 1);
        if (inflight > m_all * v)
            inflight = m_all * v;
        double per_chunk_mb = (double)inflight / v; /* microbatches in flight per chunk */
        int copies = 0, graphed = 0;
        for (int c = 0; c < v; c++)
            copies += mb_step__graph_copies(b, c * p + st, p * v, &graphed);
        lay->graph_bytes_stage[st] = graphed ? seg * (copies * per_chunk_mb + 1) : 0;
        lay->graph_bytes_stage[st] += mb_memory_graph_unreused_bytes(b, st, seg);
    }
}

void mb_layout_free(struct mb_layout *lay)
{
    mb_free(lay->first);
    mb_free(lay->count);
    lay->first = lay->count = NULL;
}
