/*
 * memory_graph.c -- what CUDA graphs' private memory pools hold beyond eager execution, the parts
 * not in layout.c's reuse model (docs/modeling.md, Memory, "CUDA graphs"):
 *  - TE-scoped graphs without buffer reuse (Transformer Engine before 2.7): every captured layer
 *    keeps its static output, static grad output and static grad input for every microbatch of
 *    the step, for the life of the graphs;
 *  - a full-iteration graph with the optimizer step left eager: the graph's pool stays reserved
 *    while the eager optimizer step allocates its transient tensors beside it.
 */
#include "step_int.h"

/* Decoder layers of virtual stage vs with at least one captured region: the callables
 * Megatron-Core hands make_graphed_callables (one per layer, captured parts of the layer). */
static int mb_graph__captured_layers(const struct mb_build *b, int vs)
{
    const struct mb_layout *lay = &b->lay;
    int n = 0;
    for (int i = lay->first[vs]; i < lay->first[vs] + lay->count[vs]; i++) {
        const struct mb_oplist *L = mb_plan_layer(b, i);
        int any = 0;
        for (int q = 0; q < L->n && !any; q++)
            any = L->op[q].region != 0;
        n += any;
    }
    return n;
}

double mb_memory_graph_unreused_bytes(const struct mb_build *b, int st, double seg)
{
    const struct mb_scenario *s = b->s;
    const struct mb_layout *lay = &b->lay;
    if (!s->cuda_graph || (s->cuda_graph & MB_CG_FULL_ITERATION) || s->cg_reuse_buffers)
        return 0;
    /* make_graphed_callables without _reuse_graph_input_output_buffers
     * (NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/graph.py, _make_graphed_callables):
     * per callable and microbatch of _order a static grad output per output (torch.empty_like, not
     * shared by shape), and its static outputs and static grad inputs held in
     * per_callable_static_outputs / per_callable_static_grad_inputs (weak references only under reuse);
     * Megatron-Core's sample inputs are reused across microbatches either way
     * (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/cuda_graphs.py _get_sample_arguments),
     * as layout.c counts them. The order holds every microbatch of the step on every chunk. */
    int m_all = s->global_batch_size / (s->micro_batch_size * s->dp);
    int layers = 0;
    for (int c = 0; c < lay->v; c++)
        layers += mb_graph__captured_layers(b, c * lay->p + st);
    /* layout.c's shared grad-output buffer is replaced by the per-graph ones */
    return layers > 0 ? seg * (3.0 * layers * m_all - 1) : 0;
}

double mb_memory_graph_step_extra(const struct mb_scenario *s, double step_transient)
{
    /* FullCudaGraphWrapper captures forward_backward_func only; optimizer.step() is eager unless
     * --optimizer-cuda-graph wraps it in a graph of the same pool (NVIDIA/Megatron-LM@d98e8a64
     * megatron/core/full_cuda_graph.py, megatron/core/optimizer/optimizer_cuda_graph.py,
     * megatron/training/training.py). A graph's private pool keeps its segments reserved while the
     * graph lives, and eager allocations never take blocks from it (pytorch/pytorch
     * c10/cuda/CUDACachingAllocator.cpp: a private pool serves only allocations made while
     * capturing into it), so the eager step's transients add to the passes' peak held in the pool. */
    return (s->cuda_graph & MB_CG_FULL_ITERATION) ? step_transient : 0;
}
