/*
 * memory_fsdp.h -- Megatron-FSDP's unsharded buffers as its source sizes them (memory_fsdp.c).
 * Private to the step model; docs/modeling.md, FSDP, gives the mechanism and the sources.
 */
#ifndef MB_MEMORY_FSDP_H
#define MB_MEMORY_FSDP_H

#include "step_int.h"

/** Megatron-FSDP units (decoder layers) held unsharded at once on a stage of `on_stage` units of
 * `unit` parameters each (elements, on this rank before sharding). Without `--fsdp-double-buffer`
 * (parallel.fsdp_double_buffer false) the all-gather pipeline prefetches units until the
 * prefetched size reaches half the communication unit size U, and the reduce-scatter queue holds
 * unreduced gradient buckets until they exceed U (U = parallel.fsdp_communication_unit_size, or
 * Megatron's max(1e9, 2 x mean unit size); NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py and param_and_grad_buffer.py
 * AllGatherPipeline.all_gather_params, GradReducePipeline.wait_for_previous_grad_reduce).
 * With the double buffer, two of each. `held` (1 + overlap.fsdp_prefetch) is a floor on the
 * gathered units. Both counts are at most on_stage (plus s->fsdp_units_layers_add: the layer extension's
 * shortened runs count the full stage's cap) and at least 1.
 * @param wunits out: units of gathered bf16 parameters
 * @param gunits out: units of unsharded main gradients */
void mb_memory_mfsdp_units(const struct mb_scenario *s, double unit, int on_stage, int held, int *wunits,
                           int *gunits);

/** Elements of stage st's parameters outside Megatron-FSDP's units (the embedding on the first
 * stage; the output layer on the last; per TP rank) that the all-gather pipeline keeps gathered
 * for the whole run (AllGatherPipeline.reset(preserve_non_fsdp_units=True): non-unit buckets are
 * PRESERVED, not released). The final norm (h elements) is left out. */
double mb_memory_mfsdp_nonunit(const struct mb_scenario *s, const struct mb_layout *lay, int st);

/** PyTorch FSDP2's terms beyond mb_step__fsdp2_state's on stage st, added to *w and *g (bytes):
 * - the root's exception: FSDP2 does not reshard the root's parameter group after forward
 *   (`_lazy_init`: `post_forward_mesh_info = None`, pytorch/pytorch@1fd469d0
 *   torch/distributed/fsdp/_fully_shard/_fsdp_state.py), and torchtitan shards the final norm and output
 *   layer together with reshard_after_forward off (pytorch/torchtitan@018740b7
 *   torchtitan/models/llama3/infra/parallelize.py apply_fsdp): the output layer's bf16 copy stays
 *   gathered from the last stage's forward to its backward, which holds the stage's peak; the embedding
 *   too when the layers are not resharded after forward or backward;
 * - parallel.fsdp_reshard_after_backward false: every layer of the stage stays gathered;
 * - parallel.fsdp_requires_gradient_sync false: every FSDP-managed parameter of the stage keeps its
 *   unsharded gradient between microbatches, upcast to the fp32 reduce dtype
 *   (`to_accumulated_grad_if_needed`, pytorch/pytorch@17a7e1e0 _fsdp_param.py): 4 B each, when the
 *   rank runs more than one microbatch (the only one is the last, which syncs).
 * `held` layers are already counted gathered by mb_step__fsdp2_state. */
void mb_memory_fsdp2_extra(const struct mb_scenario *s, const struct mb_layout *lay, int st, int on_stage, int held,
                           double *w, double *g);

/** Bytes of Megatron-FSDP's unreduced gradient units beyond the first on stage st (the first is in the
 * static gradients): a unit's gradients are queued only once its layer's backward is done, and autograd
 * has then freed that layer's saved activations, which mbsim's timeline counts until the microbatch's
 * whole backward ends; so each further unit adds max(0, its gradient bytes - a layer's activations),
 * with layer_act_min the smallest layer's saved bytes on the stage (an upper bound for mixed layers).
 * 0 under FSDP2 and 3D. */
double mb_memory_mfsdp_grads_beyond(const struct mb_scenario *s, const struct mb_layout *lay, int st,
                                    double layer_act_min);

#endif
