/*
 * memory_fsdp.c -- Megatron-FSDP's unsharded buffers (memory_fsdp.h): how many decoder-layer units
 * are gathered and how many unreduced gradient buckets are alive at once, and the non-unit
 * parameters kept gathered. Sources: NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/distributed/fsdp/src/megatron_fsdp/{megatron_fsdp.py,param_and_grad_buffer.py}.
 */
#include "memory_fsdp.h"

#include <math.h>

/* Megatron's default communication unit: twice the mean unit size, at least 1e9 elements
 * (megatron_fsdp.py: `suggested_communication_unit_size = max(1_000_000_000, ...)` under
 * optim_grads_params; the comment there says "cap", the code takes the max). */
static double mb_mfsdp__comm_unit(const struct mb_scenario *s, double unit)
{
    if (s->fsdp_unit_size > 0)
        return s->fsdp_unit_size;
    return fmax(1e9, 2.0 * unit);
}

void mb_memory_mfsdp_units(const struct mb_scenario *s, double unit, int on_stage, int held, int *wunits,
                           int *gunits)
{
    int w, g;
    if (on_stage > 0)
        on_stage += s->fsdp_units_layers_add;
    if (s->fsdp_double_buffer || unit <= 0) {
        /* FixedPoolAllocator: two persistent buffers each, alternating units */
        w = held > 2 ? held : 2;
        g = 2;
    } else {
        double U = mb_mfsdp__comm_unit(s, unit);
        /* all_gather_params: the current unit, then one more while the prefetched size
         * (beyond the current) is below U/2: ceil(U/2 / unit) more */
        double ahead = ceil(0.5 * U / unit);
        w = ahead + 1 > 1e6 ? 1000000 : (int)ahead + 1;
        if (w < held)
            w = held;
        /* reduce_gradients -> wait_for_previous_grad_reduce: before a unit's reduce-scatter is queued,
         * queued buckets are freed while their size exceeds U, so k = floor(U / unit) stay, the new one
         * joins (k + 1), and the next unit's gradients are being written: k + 2 */
        double k = floor(U / unit);
        g = k + 2 > 1e6 ? 1000000 : (int)k + 2;
    }
    if (on_stage > 0 && w > on_stage)
        w = on_stage;
    if (on_stage > 0 && g > on_stage)
        g = on_stage;
    *wunits = w < 1 ? 1 : w;
    *gunits = g < 1 ? 1 : g;
}

double mb_memory_mfsdp_nonunit(const struct mb_scenario *s, const struct mb_layout *lay, int st)
{
    struct mb_params par;
    mb_model_params(&s->model, &par);
    double n = 0;
    if (st == 0)
        n += par.embedding;
    if (st == lay->p - 1)
        n += par.output;
    return n / s->tp;
}

double mb_memory_mfsdp_grads_beyond(const struct mb_scenario *s, const struct mb_layout *lay, int st,
                                    double layer_act_min)
{
    if (s->strategy != MB_STRAT_FSDP || s->fsdp_impl != MB_FSDP_MEGATRON)
        return 0;
    int on_stage = 0, w, g;
    for (int c = 0; c < lay->v; c++)
        on_stage += lay->count[c * lay->p + st];
    if (on_stage <= 0 || (s->freeze & MB_FREEZE_LANGUAGE))
        return 0;
    mb_memory_mfsdp_units(s, lay->layer_params, on_stage, 1 + s->fsdp_prefetch, &w, &g);
    return (g - 1) * fmax(0.0, s->grad_bytes * lay->layer_params - layer_act_min);
}

void mb_memory_fsdp2_extra(const struct mb_scenario *s, const struct mb_layout *lay, int st, int on_stage, int held,
                           double *w, double *g)
{
    struct mb_params par;
    mb_model_params(&s->model, &par);
    /* the layer FSDP2 gathers: its routed experts only when it manages them (edp > 1) */
    double layer = lay->dense_layer_params / s->tp;
    if (lay->edp > 1)
        layer += lay->layer_params - lay->dense_layer_params / s->tp;
    int keep_all = !s->fsdp_reshard_after_forward || !s->fsdp_reshard_after_backward;
    double emb = st == 0 ? par.embedding / s->tp : 0, out = st == lay->p - 1 ? par.output / s->tp : 0;
    *w += 2.0 * (out + (keep_all ? emb : 0));
    /* reshard_after_forward false already keeps the stage's layers (mb_step__fsdp2_state) */
    if (!s->fsdp_reshard_after_backward && s->fsdp_reshard_after_forward && on_stage > held)
        *w += 2.0 * (on_stage - held) * layer;
    /* one microbatch is the last: it syncs and accumulates nothing */
    if (!s->fsdp_grad_sync && lay->m > 1 && !(s->freeze & MB_FREEZE_LANGUAGE))
        *g += 4.0 * (on_stage * layer + emb + out);
}
