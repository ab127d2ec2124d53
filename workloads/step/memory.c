/*
 * memory.c -- the memory phase: per-rank memory of one training step.
 *
 * Static state follows Megatron's theoretical_memory_usage.py and the
 * distributed-optimizer table (shared/docs/reference/hardware.md D.2), by
 * default (optimizer.main_grads / optimizer.states change the 4 and the 8 of 12):
 * bf16 parameters (2 B), fp32 main gradients (4 B), fp32 master weights and
 * Adam m, v (12 B) sharded over the data-parallel group (expert-DP for
 * experts): 6 + 12/d bytes per parameter; 18 without the distributed
 * optimizer (optimizer.distributed: false, D.2's DDP row). FSDP shards all 18 bytes and keeps
 * the current and the prefetched layer unsharded.
 *
 * Activations are the bytes each op saves for backward (set where the op list
 * is built in the ops phase), minus what the recompute policy discards, times the
 * microbatches in flight on the stage: min(p - stage, m) for 1F1B, and the
 * warm-up depth + 1 chunk-forwards for interleaved 1F1B.
 *
 * Assumptions (stated, not measured): 1 GiB of CUDA/cuBLAS/NCCL workspace per
 * rank; the caching allocator reserves 5% more than it has allocated.
 */
#include "step_int.h"

#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MB_WORKSPACE_BYTES (1.0 * GIB)
#define MB_RESERVE_FACTOR 1.05

/* Megatron-Core full recompute (transformer_block.py _checkpointed_forward):
 * block: the first num_layers layers of each model chunk are checkpointed
 * (their input kept), the rest keep all activations; uniform: the layers are
 * checkpointed in groups of num_layers, keeping only each group's input. */
static double mb__layer_act(const struct mb_scenario *s, const struct mb_oplist *l, int layer_in_stage)
{
    if (s->recompute == MB_RC_FULL) {
        int n = s->recompute_num_layers;
        if (s->recompute_method == MB_RC_UNIFORM)
            return n > 1 ? l->input_bytes / n : l->input_bytes;
        if (n <= 0 || layer_in_stage < n)
            return l->input_bytes;
    }
    double sum = 0;
    for (int i = 0; i < l->n; i++) {
        const struct mb_op *o = &l->op[i];
        if (s->recompute == MB_RC_SELECTIVE && (o->module & s->recompute_modules))
            continue;
        sum += o->saved;
    }
    if (s->recompute == MB_RC_SELECTIVE && (s->recompute_modules & MB_RCM_MOE))
        sum += l->input_bytes; /* the checkpointed MoE keeps its input */
    return sum;
}

double mb_memory_chunk_act(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                           int st, int c)
{
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double a = 0;
    for (int li = lay->first[vs], k = 0; li < lay->first[vs] + lay->count[vs]; li++, k++)
        a += mb__layer_act(s, &plan->kind[m->layer[li].mixer][m->layer[li].ffn], k);
    return a;
}

int mb_memory_estimate(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                       double act_vision, double hbm_bytes, const double *act_timeline, struct mb_memory *out)
{
    const struct mb_model *m = &s->model;
    int p = lay->p, v = lay->v;
    int frozen_lang = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    int frozen_vis = (s->freeze & MB_FREEZE_VISION) != 0;
    memset(out, 0, sizeof *out);
    for (int st = 0; st < p; st++) {
        double dense = lay->params_dense_stage[st] / s->tp;
        double expert = lay->params_expert_stage[st] / (s->ep * s->etp);
        double vis = st == 0 ? lay->params_vision / s->tp : 0;
        double train_dense = frozen_lang ? 0 : dense, train_exp = frozen_lang ? 0 : expert;
        double train_vis = frozen_vis ? 0 : vis;
        double w, g, o;
        /* main grads (fp32, or bf16 with --grad-reduce-in-bf16) and fp32 master weights
         * plus Adam's two moments (fp32, or bf16 with the precision-aware optimizer) */
        double gb = s->grad_bytes, ob = 4.0 + s->state_bytes;
        if (s->strategy == MB_STRAT_FSDP) {
            w = 2 * (dense + vis) / s->dp + 2 * expert / lay->edp;
            g = gb * (train_dense + train_vis) / s->dp + gb * train_exp / lay->edp;
            o = ob * (train_dense + train_vis) / s->dp + ob * train_exp / lay->edp;
            /* unsharded working copies: the current layer and the fsdp_prefetch layers
             * gathered ahead (bf16), one layer of main grads */
            double layer = lay->layer_params;
            int held = 1 + s->fsdp_prefetch, on_stage = 0; /* no more layers than the stage has */
            for (int c = 0; c < v; c++)
                on_stage += lay->count[c * p + st];
            if (on_stage > 0 && held > on_stage)
                held = on_stage;
            w += 2.0 * held * layer;
            g += gb * layer;
        } else {
            /* the distributed optimizer shards master weights and moments over DP; DDP keeps them whole */
            double dpd = s->dist_opt ? s->dp : 1, edpd = s->dist_opt ? lay->edp : 1;
            w = 2 * (dense + expert + vis);
            g = gb * (train_dense + train_exp + train_vis);
            o = ob * (train_dense + train_vis) / dpd + ob * train_exp / edpd;
        }
        /* activations of one chunk-forward, averaged over the stage's chunks */
        double act_chunks = 0;
        for (int c = 0; c < v; c++)
            act_chunks += mb_memory_chunk_act(s, lay, plan, st, c);
        double per_chunk = act_chunks / v;
        int total = lay->m * v;
        int warm = mb_sched_warmup_depth(st, p, v);
        int inflight = warm + 1 < total ? warm + 1 : total;
        /* EP all-to-all overlap starts the next forward before the backward ends */
        if (s->overlap_ep_comm && m->num_experts > 0 && s->ep > 1 && inflight < total)
            inflight++;
        double act = per_chunk * inflight;
        if (st == 0 && !frozen_vis)
            act += act_vision * (inflight < lay->m ? inflight : lay->m) / v;
        /* the timeline's own peak (allocations at each forward's end, frees at
         * each backward's end) replaces the in-flight formula when given */
        if (act_timeline)
            act = act_timeline[st];
        double T = (double)s->micro_batch_size * s->seq_length / s->cp;
        double buf = MB_WORKSPACE_BYTES;
        if (st == p - 1) /* fp32 logits and their gradient (vocab-parallel cross-entropy) */
            buf += 2 * T * (double)m->vocab / s->tp * 4;
        if (m->num_experts > 0) /* dispatch + combine buffers of one MoE layer (two with EP overlap) */
            buf += (s->overlap_ep_comm ? 2 : 1) * 2 * T / s->tp * m->topk * m->hidden * 2.0 * s->etp;
        double graphs = lay->graph_bytes_stage[st];
        double total_b = w + g + o + act + buf + graphs;
        if (st < 64) {
            struct mb_memory_stage *ps = &out->per_stage[st];
            ps->weights = w;
            ps->grads = g;
            ps->optimizer = o;
            ps->activations = act;
            ps->buffers = buf;
            ps->graphs = graphs;
            ps->peak_allocated = total_b;
            ps->reserved = total_b * MB_RESERVE_FACTOR;
            out->n_stages = st + 1;
        }
    }
    out->capacity = hbm_bytes;
    mb_memory_summarize(out);
    return 0;
}

void mb_memory_summarize(struct mb_memory *m)
{
    static const char *const names[] = {"weights", "gradients", "optimizer", "activations", "buffers", "cuda_graphs"};
    int best = 0;
    for (int i = 1; i < m->n_stages; i++)
        if (m->per_stage[i].peak_allocated > m->per_stage[best].peak_allocated)
            best = i;
    if (m->n_stages <= 0)
        return;
    const struct mb_memory_stage *a = &m->per_stage[best];
    m->weights = a->weights;
    m->grads = a->grads;
    m->optimizer = a->optimizer;
    m->activations = a->activations;
    m->buffers = a->buffers;
    m->graphs = a->graphs;
    m->peak_allocated = a->peak_allocated;
    m->reserved = a->reserved;
    m->stage = best;
    double v[] = {a->weights, a->grads, a->optimizer, a->activations, a->buffers, a->graphs};
    int d = 0;
    for (int i = 1; i < 6; i++)
        if (v[i] > v[d])
            d = i;
    m->dominant = names[d];
}
