/*
 * memory.c -- the memory phase: per-rank memory of one training step, each
 * term at the moment of the rank's peak (docs/modeling.md, Memory, cites the
 * sources of every mechanism below).
 *
 * Static state follows Megatron's theoretical_memory_usage.py and the
 * distributed-optimizer table (shared/docs/reference/hardware.md D.2), by
 * default (optimizer.main_grads / optimizer.states change the 4 and the 8 of 12):
 * bf16 parameters (2 B), fp32 main gradients (4 B), fp32 master weights and
 * Adam m, v (12 B) sharded over the data-parallel x context-parallel group
 * (Megatron's distributed optimizer and its gradient reduce-scatter use the
 * DP x CP group; expert-DP for experts): 6 + 12/(d cp) bytes per parameter; 18
 * without the distributed optimizer. FSDP shards all of it over DP x CP and
 * keeps gathered layers (parallel.fsdp_impl: Megatron-FSDP's double buffers or
 * FSDP2's mixed-precision policy).
 *
 * Dynamic terms come from the timeline (memtl.c): activations (the bytes each
 * op saves, minus what recompute discards; CPU-offloaded layers but one), the
 * loss working set on the last stage, the recompute working set and the
 * backward's gradient working set, alive at the peak moment; and the MoE
 * forward working set (dispatcher token tensors, moe.c mb__fwd_ws), counted
 * instead of the backward ones when it is larger (a forward and a backward are
 * not at the same moment).
 *
 * Beside the allocations: the PyTorch caching allocator's reserve
 * (fragmentation of non-expandable segments) and what lives outside it (CUDA
 * context, NCCL communicator buffers, DeepEP/HybridEP registered buffers).
 */
#include "step_int.h"
#include "memory_fsdp.h"

#include <math.h>
#include <string.h>

/* Megatron-Core full recompute (transformer_block.py _checkpointed_forward):
 * block: the first num_layers layers of each model chunk are checkpointed
 * (their input kept), the rest keep all activations; uniform: the layers are
 * checkpointed in groups of num_layers, keeping only each group's input. */
static double mb_step__layer_act(const struct mb_scenario *s, const struct mb_oplist *l, int layer_in_stage)
{
    if (s->rc_policy == MB_RCP_TORCHTITAN_OP)
        return mb_sac_layer_kept(l);
    /* torchtitan's layer option: the checkpointed layer keeps its input (torch.utils.checkpoint's argument) */
    if (s->rc_policy == MB_RCP_TORCHTITAN_LAYER && mb_sac_layer_checkpointed(s, layer_in_stage))
        return l->input_bytes;
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
        sum += o->saved;
        if (s->recompute == MB_RC_SELECTIVE)
            sum -= mb_op_rc_freed(o, s->recompute_modules);
    }
    if (s->recompute == MB_RC_SELECTIVE && (s->recompute_modules & MB_RCM_MOE))
        sum += l->input_bytes; /* the checkpointed MoE keeps its input */
    return sum;
}

/* CPU activation offloading (memory.cpu_offloading_num_layers n; TE's
 * AsyncDoubleBufferGroupOffloadHandler behind Megatron's get_cpu_offload_context,
 * NVIDIA/TransformerEngine@7e6b21ef transformer_engine/pytorch/cpu_offload.py):
 * the saved tensors of the first n layers (offload groups 0..n-1) are copied to
 * pinned host memory during the forward and their device copies freed once the
 * copy is done; the backward reloads a group one layer ahead. So one offloaded
 * layer's activations stay on the device at a time (the one in transit: being
 * copied out in forward, prefetched in backward), the largest of them here. */
double mb_memory_chunk_act(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                           int st, int c)
{
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double a = 0, transit = 0;
    for (int li = lay->first[vs], k = 0; li < lay->first[vs] + lay->count[vs]; li++, k++) {
        double x = mb_step__layer_act(s, &plan->kind[m->layer[li].mixer][m->layer[li].ffn], k);
        if (li < s->cpu_offload_layers)
            transit = fmax(transit, x);
        else
            a += x;
    }
    return a + transit;
}


#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* GEMM workspaces allocated through the PyTorch allocator: PyTorch's cuBLAS /
 * cuBLASLt workspace (CUBLAS_WORKSPACE_CONFIG default ":4096:8" = 32 MiB on
 * Hopper and later, ATen/cuda/CublasHandlePool.cpp), Transformer Engine's GEMM
 * workspace (32 MiB on sm90+, get_cublas_workspace_size_bytes) and its four
 * multi-stream workspaces for grouped GEMMs: 6 x 32 MiB. */
#define MB_MEM_WORKSPACE (6 * 32.0 * MIB)
/* Outside PyTorch. CUDA context and lazily loaded kernel images: an assumption
 * (not a documented constant). NCCL: NCCL_BUFFSIZE (4 MiB, the SIMPLE protocol
 * buffer per channel and peer, NCCL's documented default) for the two ring
 * peers of each channel, 16 channels assumed, per communicator of >1 rank. */
#define MB_MEM_CONTEXT (0.5 * GIB)
#define MB_MEM_NCCL_COMM (2 * 16 * 4.0 * MIB)
/* PyTorch CUDACachingAllocator.cpp: sizes round up to 512 B (kMinBlockSize);
 * requests <= 1 MiB are packed into 2 MiB segments (kSmallBuffer), larger ones
 * into 20 MiB segments (kLargeBuffer) up to 10 MiB (kMinLargeAlloc), else
 * rounded up to 2 MiB (kRoundLarge). */
#define MB_MEM_SMALL_SEG (2.0 * MIB)
#define MB_MEM_ROUND_LARGE (2.0 * MIB)

const char *mb_memory_verdict_name(enum mb_mem_verdict v)
{
    return v == MB_MEM_OOM ? "OOM" : v == MB_MEM_AT_RISK ? "at risk" : "fits";
}

double mb_memory_segment(double bytes)
{
    if (bytes <= 0)
        return 0;
    if (bytes <= 1.0 * MIB)
        return MB_MEM_SMALL_SEG;
    return ceil(bytes / MB_MEM_ROUND_LARGE) * MB_MEM_ROUND_LARGE;
}

/* Tokens of one microbatch on a rank before the TP split (s b / cp). */
static double mb_step__tokens(const struct mb_scenario *s)
{
    return (double)s->micro_batch_size * s->seq_length / s->cp;
}

double mb_memory_chunked_loss_bytes(double tokens, double hidden, double vocab, int chunks)
{
    double chunk = ceil(tokens / chunks);
    return BF16 * (tokens * hidden + vocab * hidden + chunk * vocab);
}

double mb_memory_logits_bytes(const struct mb_scenario *s)
{
    const struct mb_model *m = &s->model;
    double elems = mb_step__tokens(s) * (double)m->vocab / s->tp; /* [s/cp, b, V/tp] per head */
    int heads = 1 + (m->mtp_layers > 0 ? m->mtp_layers : 0);
    if (s->loss_chunks > 0)
        return heads * mb_memory_chunked_loss_bytes(mb_step__tokens(s), m->hidden, m->vocab, s->loss_chunks);
    /* TE parallel_cross_entropy: the gradient is written into the bf16 logits
     * during forward; that tensor is what backward needs, per head */
    if (s->ce_fusion && s->ce_impl == MB_CE_TE)
        return heads * elems * BF16;
    /* vocab_parallel_cross_entropy and the native fused one: calculate_logits_max
     * makes an fp32 copy, exp/softmax in place and saved for backward (fp32, per
     * head), beside the bf16 output-layer logits of the head being computed */
    return heads * elems * 4.0 + elems * BF16;
}

/*
 * Transformer Engine's quantized weight, bytes per element (TE 2.x, NVIDIA/TransformerEngine
 * transformer_engine/pytorch/tensor/): the forward GEMM reads it row-wise, the dgrad column-wise.
 * Per-tensor FP8 (delayed or current scaling) keeps a transposed FP8 copy for the dgrad unless the
 * GPU runs non-TN FP8 GEMMs (compute capability 10.x, `is_non_tn_fp8_gemm_supported`): 2 B on
 * Hopper, 1 B on Blackwell. Blockwise FP8 keeps row-wise and column-wise data (2 B; its FP32 scales
 * per 128 x 128 block are left out), MXFP8 both with an E8M0 scale per 32 elements (2 x 33/32 B),
 * NVFP4 both at 4 bits with an E4M3 scale per 16 (2 x 9/16 B).
 */
static double mb_step__qweight_copy(const struct mb_scenario *s, const struct mb_gpu_spec *g)
{
    const char *l = s->prec.label;
    if (!strcmp(l, "mxfp8"))
        return 2 * (1 + 1.0 / 32);
    if (s->prec.gemm == MB_PREC_FP4)
        return 2 * (0.5 + 1.0 / 16);
    if (!strcmp(l, "fp8_blockwise"))
        return 2;
    return g && g->peak[MB_PREC_FP4] > 0 ? 1 : 2;
}

/*
 * A decoder linear weight's bytes on its rank. Without quantization, BF16 (2 B). Under FP8/FP4 with
 * Megatron's default BF16 parameters, TE quantizes each weight on a step's first microbatch and
 * keeps the copy for the others (Megatron-Core passes `is_first_microbatch` to TE's modules,
 * NVIDIA/Megatron-LM@d98e8a64 megatron/core/extensions/transformer_engine.py; TE's
 * `get_weight_workspace(cache_name="weight")`): 2 B + the copy. With `--fp8-param-gather` the
 * parameter itself is the quantized tensor (Float8Tensor / MXFP8Tensor / NVFP4Tensor) and no BF16
 * weight is kept: the copy's bytes alone.
 */
double mb_memory_qweight_bytes(const struct mb_scenario *s, const struct mb_gpu_spec *g)
{
    if (!s->prec.quantize)
        return BF16;
    return (s->fp8_param_gather ? 0 : BF16) + mb_step__qweight_copy(s, g);
}

/*
 * Megatron-FSDP's FP8 transpose cache (NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py: the post-forward hook releases a unit's
 * parameters and, unless keep_fp8_transpose_cache, fp8_discard_transpose_cache of each FP8 parameter,
 * mixed_precision.py): a Float8Tensor drops `_transpose`, a blockwise tensor its column-wise usage, an
 * MXFP8 tensor nothing. With the flag the transposed copy, built from the gathered parameter, stays:
 * "number of parameter x 1 Byte" (megatron/core/distributed/fsdp/src/README.md), none on Blackwell,
 * whose FP8 GEMMs take the row-wise data in any layout (TE `is_non_tn_fp8_gemm_supported`).
 */
double mb_memory_fp8_transpose_cache_bytes(const struct mb_scenario *s, const struct mb_gpu_spec *g)
{
    if (!s->fsdp_keep_fp8_transpose || s->strategy != MB_STRAT_FSDP || s->fsdp_impl != MB_FSDP_MEGATRON ||
        !s->prec.quantize || !s->fp8_param_gather)
        return 0;
    if (!mb_precision_fp8_tensor(&s->prec))
        return 0;
    if (!strcmp(s->prec.label, "fp8_blockwise"))
        return 1;
    return g && g->peak[MB_PREC_FP4] > 0 ? 0 : 1; /* per-tensor scaling: none on Blackwell */
}

double mb_memory_qweight_gather_bytes(const struct mb_scenario *s)
{
    return s->prec.quantize && s->fp8_param_gather && mb_precision_fp8_tensor(&s->prec) ? 1 : BF16;
}

/*
 * Megatron-Core's deferred output-layer wgrad (NVIDIA/Megatron-LM@d98e8a64
 * megatron/core/tensor_parallel/layers.py ColumnParallelLinear.forward / backward,
 * megatron/core/pipeline_parallel/schedules.py finish_embedding_wgrad_compute): each forward of the
 * output layer appends its input_parallel (the sequence-parallel shard: the all-gather happens
 * inside the linear) to embedding_activation_buffer and each backward its grad_output, cast to the
 * input's BF16, to grad_output_buffer, while fewer than wgrad_deferral_limit are held (0: no limit);
 * both are drained by the wgrad GEMMs after the last backward of the step.
 */
double mb_memory_deferred_call_bytes(const struct mb_scenario *s, double *input)
{
    const struct mb_model *m = &s->model;
    int sp = s->tp > 1 && s->sequence_parallel != 0;
    double T = mb_step__tokens(s), in = T / (sp ? s->tp : 1) * m->hidden * BF16;
    if (input)
        *input = in;
    return in + T * (double)m->vocab / s->tp * BF16;
}

int mb_memory_deferred_calls(const struct mb_scenario *s, int i)
{
    if (!s->defer_wgrad || i <= 0)
        return 0;
    int heads = 1 + (s->model.mtp_layers > 0 ? s->model.mtp_layers : 0);
    long long n = (long long)heads * i;
    if (s->wgrad_deferral_limit > 0 && n > s->wgrad_deferral_limit)
        n = s->wgrad_deferral_limit;
    return (int)n;
}

double mb_memory_chunk_layer_max(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                                 int st, int c)
{
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double x = 0;
    for (int li = lay->first[vs], k = 0; li < lay->first[vs] + lay->count[vs]; li++, k++)
        x = fmax(x, mb_step__layer_act(s, &plan->kind[m->layer[li].mixer][m->layer[li].ffn], k));
    return x;
}

/* The smallest saved activations of stage st's decoder layers (bytes; 0: no layer). */
static double mb_step__stage_layer_min(const struct mb_scenario *s, const struct mb_layout *lay,
                                       const struct mb_plan *plan, int st)
{
    const struct mb_model *m = &s->model;
    double x = INFINITY;
    for (int c = 0; c < lay->v; c++) {
        int vs = c * lay->p + st;
        for (int li = lay->first[vs], k = 0; li < lay->first[vs] + lay->count[vs]; li++, k++)
            x = fmin(x, mb_step__layer_act(s, &plan->kind[m->layer[li].mixer][m->layer[li].ffn], k));
    }
    return isinf(x) ? 0 : x;
}

/* Saved bytes of a layer with nothing recomputed. */
static double mb_step__layer_full(const struct mb_oplist *l)
{
    double sum = 0;
    for (int i = 0; i < l->n; i++)
        sum += l->op[i].saved;
    return sum;
}

double mb_memory_recompute_ws(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                              int st, int c)
{
    if (s->recompute == MB_RC_NONE && s->rc_policy == MB_RCP_NONE)
        return 0;
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double ws = 0;
    for (int li = lay->first[vs], k = 0; li < lay->first[vs] + lay->count[vs]; li++, k++) {
        const struct mb_oplist *l = &plan->kind[m->layer[li].mixer][m->layer[li].ffn];
        /* the layer's backward runs on its re-forwarded activations: what recompute
         * discarded is allocated again; uniform full recompute re-forwards a whole
         * group of recompute_num_layers layers before their backward */
        double w = fmax(0, mb_step__layer_full(l) - mb_step__layer_act(s, l, k));
        if (s->recompute == MB_RC_FULL && s->recompute_method == MB_RC_UNIFORM && s->recompute_num_layers > 1)
            w = s->recompute_num_layers * mb_step__layer_full(l) - l->input_bytes;
        if (w > ws)
            ws = w;
    }
    return ws;
}

double mb_memory_grad_ws(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan, int st,
                         int c)
{
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double ws = 0;
    for (int li = lay->first[vs]; li < lay->first[vs] + lay->count[vs]; li++) {
        const struct mb_oplist *l = &plan->kind[m->layer[li].mixer][m->layer[li].ffn];
        /* autograd holds an op's output gradient while it computes its input gradient;
         * the largest is the MLP / expert activation (saves its gated input of 2f per
         * token, outputs f): grad in 2f + grad out f = 1.5 x what it saved */
        const struct mb_op *ops = l->part ? l->part : l->op; /* the ops before fusion */
        int n = l->part ? l->nparts : l->n;
        for (int i = 0; i < n; i++)
            ws = fmax(ws, fmax(1.5 * ops[i].saved, ops[i].bwd_ws));
    }
    return ws;
}

/* The largest MoE forward working set of the chunk's layers (mb_oplist.fwd_ws) and its
 * largest single tensor (*block). */
static double mb_step__chunk_fwd_ws(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                               int st, int c, double *block)
{
    const struct mb_model *m = &s->model;
    int vs = c * lay->p + st;
    double ws = 0;
    for (int li = lay->first[vs]; li < lay->first[vs] + lay->count[vs]; li++) {
        const struct mb_oplist *l = &plan->kind[m->layer[li].mixer][m->layer[li].ffn];
        ws = fmax(ws, l->fwd_ws);
        *block = fmax(*block, l->fwd_ws_block);
    }
    return ws;
}

/* PyTorch FSDP2 (`fully_shard` with MixedPrecisionPolicy(param_dtype bf16, reduce_dtype fp32)) on a rank
 * holding `shard` parameters sharded, `tshard` of them trainable (bytes out):
 * - the sharded parameter keeps the dtype the model was built in (parallel.fsdp_sharded_dtype: fp32, the
 *   master; bf16); the reduce-scatter output is cast back to it (`_to_dtype_if_needed(reduce_output,
 *   orig_dtype)`, pytorch/pytorch@010ae4a8 torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
 *   foreach_reduce), and torch.optim.Adam makes its two moments `zeros_like` the parameter
 *   (torch/optim/adam.py `_init_group`): w, g and each moment at the sharded dtype;
 * - unsharded, bf16: the gathered parameters of the `held` layers (all of the stage's layers without
 *   reshard_after_forward), and one layer's bf16 gradient with its fp32 copy for the reduce-scatter
 *   (reduce_dtype fp32: 6 B per parameter of the layer);
 * - a layer's routed experts are gathered and reduce-scattered only when FSDP2 manages them, that is when
 *   they have an expert-data-parallel group to shard over (edp > 1): at edp 1 NeMo AutoModel leaves them out
 *   of the block's `fully_shard` (`ignored_params`, NVIDIA-NeMo/Automodel@8d9bfb90
 *   nemo_automodel/components/moe/parallelizer.py apply_fsdp), and their gradients are plain `.grad`s
 *   already counted in *g. */
static void mb_step__fsdp2_state(const struct mb_scenario *s, const struct mb_layout *lay, double shard,
                                 double tshard, int held, int on_stage, double *wp, double *gp, double *op)
{
    double pb = s->fsdp_sharded_bytes;
    double layer = lay->dense_layer_params / s->tp;
    if (lay->edp > 1)
        layer += lay->layer_params - lay->dense_layer_params / s->tp;
    double gathered = s->fsdp_reshard_after_forward ? held : (on_stage > held ? on_stage : held);
    *wp = pb * shard + 2.0 * gathered * layer;
    *gp = pb * tshard + (2.0 + 4.0) * layer;
    *op = 2.0 * pb * tshard;
}

/* Static state of stage st's rank (bytes): weights *w, gradients *g, optimizer
 * state *o, for FSDP (Megatron-FSDP or FSDP2) or the 3D path (distributed
 * optimizer or DDP). */
static void mb_step__static_state(const struct mb_scenario *s, const struct mb_layout *lay, int st, double *wp, double *gp,
                             double *op)
{
    int p = lay->p, v = lay->v;
    int frozen_lang = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    int frozen_vis = (s->freeze & MB_FREEZE_VISION) != 0;
    /* Megatron's distributed optimizer and FSDP shard dense state over DP x CP */
    double dpc = (double)s->dp * s->cp;
    double dense = lay->params_dense_stage[st] / s->tp;
    double expert = lay->params_expert_stage[st] / (s->ep * s->etp);
    double vis = st == 0 ? lay->params_vision / s->tp : 0;
    double train_dense = frozen_lang ? 0 : dense, train_exp = frozen_lang ? 0 : expert;
    double train_vis = frozen_vis ? 0 : vis;
    double w, g, o;
    /* main grads (fp32, or bf16 with --grad-reduce-in-bf16) and fp32 master weights
     * plus Adam's two moments (fp32, or bf16 with the precision-aware optimizer) */
    double gb = s->grad_bytes, ob = 4.0 + s->state_bytes;
    int on_stage = 0; /* decoder layers of the stage */
    for (int c = 0; c < v; c++)
        on_stage += lay->count[c * p + st];
    if (s->strategy == MB_STRAT_FSDP) {
        double shard_d = (dense + vis) / dpc, shard_e = expert / lay->edp;
        double tshard_d = (train_dense + train_vis) / dpc, tshard_e = train_exp / lay->edp;
        double layer = lay->layer_params;
        int held = 1 + s->fsdp_prefetch; /* no more layers than the stage has */
        if (on_stage > 0 && held > on_stage)
            held = on_stage;
        if (s->fsdp_impl == MB_FSDP_TORCH2) {
            mb_step__fsdp2_state(s, lay, shard_d + shard_e, tshard_d + tshard_e, held, on_stage, &w, &g, &o);
            mb_memory_fsdp2_extra(s, lay, st, on_stage, held, &w, &g);
        } else {
            /* Megatron-FSDP (optim_grads_params): bf16 weights, main grads, fp32 main
             * weights and Adam sharded; gathered parameters and unreduced gradients of the
             * units its pipelines hold (memory_fsdp.c), and the non-unit parameters
             * (embedding, output layer) kept gathered */
            w = 2 * (shard_d + shard_e);
            g = gb * (tshard_d + tshard_e);
            o = ob * (tshard_d + tshard_e);
            int wbuf, gbuf;
            mb_memory_mfsdp_units(s, layer, on_stage, held, &wbuf, &gbuf);
            w += 2.0 * wbuf * layer + 2.0 * mb_memory_mfsdp_nonunit(s, lay, st);
            /* --keep-fp8-transpose-cache: every FP8 decoder weight's transpose, unsharded */
            w += lay->fp8_transpose * lay->params_qdense_stage[st] / s->tp;
            g += gb * layer; /* the first unit's; the others: mb_memory_mfsdp_grads_beyond */
        }
    } else {
        /* the distributed optimizer shards master weights and moments over DP x CP; DDP keeps them whole */
        double dpd = s->dist_opt ? dpc : 1, edpd = s->dist_opt ? lay->edp : 1;
        /* the decoder's linear weights (every routed expert's) at the precision's bytes */
        double qd = lay->params_qdense_stage[st] / s->tp;
        w = 2 * (dense - qd + vis) + lay->weight_q_bytes * (qd + expert);
        g = gb * (train_dense + train_exp + train_vis);
        o = ob * (train_dense + train_vis) / dpd + ob * train_exp / edpd;
    }
    *wp = w;
    *gp = g;
    *op = o;
}

/* Of a rank's optimizer-state bytes, Adam's two moments: Transformer Engine's FusedAdam (Megatron-Core's
 * Adam) creates them in its first step() (`initialize_state` for a parameter without state,
 * NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/optimizers/fused_adam.py), while
 * Megatron builds the fp32 master shards with the optimizer. FSDP2's optimizer state is the moments
 * alone (its fp32 master is the sharded parameter). */
static double mb_step__adam_moments(const struct mb_scenario *s, double optim)
{
    if (s->strategy == MB_STRAT_FSDP && s->fsdp_impl == MB_FSDP_TORCH2)
        return optim;
    return optim * s->state_bytes / (4.0 + s->state_bytes);
}

/* Device memory outside PyTorch of a rank (bytes): NCCL communicators of its
 * groups and the DeepEP / HybridEP registered buffers (the CUDA context is
 * added by the caller). */
static double mb_step__outside(const struct mb_scenario *s, const struct mb_layout *lay, double T, double dpc)
{
    const struct mb_model *m = &s->model;
    int moe = m->num_experts > 0, p = lay->p;
    /* outside PyTorch: CUDA context, NCCL communicators of this rank, DeepEP/HybridEP buffers */
    int ncomm = 1; /* the default (world) group */
    int groups[] = {s->tp, s->cp, (int)dpc, s->ep * s->etp > 1 ? s->ep : 1, moe ? lay->edp : 1, p};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        ncomm += groups[i] > 1;
    return ncomm * MB_MEM_NCCL_COMM + mb_memory_dispatcher_bytes(s, T);
}

/* The dynamic terms of stage st without a timeline: Megatron's in-flight count
 * (warm-up + 1 chunks; EP overlap's paired forward adds one layer, memtl.c), the
 * loss working set on the last stage, the largest recompute and gradient working
 * sets; t = 0. */
static struct mb_memdyn mb_step__dyn_formula(const struct mb_scenario *s, const struct mb_layout *lay,
                                        const struct mb_plan *plan, int st, double act_vision)
{
    int p = lay->p, v = lay->v;
    double act_chunks = 0, layer = 0;
    struct mb_memdyn d = {0};
    for (int c = 0; c < v; c++) {
        act_chunks += mb_memory_chunk_act(s, lay, plan, st, c);
        layer = fmax(layer, mb_memory_chunk_layer_max(s, lay, plan, st, c));
        d.recompute = fmax(d.recompute, mb_memory_recompute_ws(s, lay, plan, st, c));
        d.grads = fmax(d.grads, mb_memory_grad_ws(s, lay, plan, st, c));
    }
    int total = lay->m * v, warm = mb_sched_warmup_depth(st, p, v);
    int inflight = warm + 1 < total ? warm + 1 : total;
    d.activations = act_chunks / v * inflight;
    if (s->overlap_ep_comm && s->model.num_experts > 0 && s->ep > 1 && inflight < total)
        d.activations += layer;
    if (st == 0 && !(s->freeze & MB_FREEZE_VISION))
        d.activations += act_vision * (inflight < lay->m ? inflight : lay->m) / v;
    d.logits = st == p - 1 ? mb_memory_logits_bytes(s) : 0;
    /* the deferred output-layer calls of every microbatch, held till the flush (at most) */
    if (st == p - 1) {
        d.deferred = mb_memory_deferred_calls(s, lay->m) * mb_memory_deferred_call_bytes(s, NULL);
        d.activations += d.deferred;
    }
    return d;
}

/* LoRA adapter parameters on stage st's rank (elements): each decoder layer's kind carries its
 * adapters' count (mb_ops_gemm). */
static double mb_step__lora_stage(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                             int st)
{
    const struct mb_model *m = &s->model;
    double n = 0;
    for (int c = 0; plan && s->lora_rank > 0 && c < lay->v; c++) {
        int vs = c * lay->p + st;
        for (int i = lay->first[vs]; i < lay->first[vs] + lay->count[vs]; i++)
            n += plan->kind[m->layer[i].mixer][m->layer[i].ffn].lora_params;
    }
    return n;
}

int mb_memory_estimate(const struct mb_scenario *s, const struct mb_layout *lay, const struct mb_plan *plan,
                       double act_vision, double hbm_bytes, const struct mb_memdyn *dyn, struct mb_memory *out)
{
    const struct mb_model *m = &s->model;
    int p = lay->p, v = lay->v;
    int moe = m->num_experts > 0;
    memset(out, 0, sizeof *out);
    /* Megatron's distributed optimizer and FSDP shard dense state over DP x CP */
    double dpc = (double)s->dp * s->cp;
    for (int st = 0; st < p; st++) {
        double w, g, o;
        mb_step__static_state(s, lay, st, &w, &g, &o);
        g += mb_memory_mfsdp_grads_beyond(s, lay, st, mb_step__stage_layer_min(s, lay, plan, st));
        /* LoRA adapters are trainable: bf16 weights, main grads, fp32 master and Adam,
         * the last two sharded like the dense state */
        double ad = mb_step__lora_stage(s, lay, plan, st);
        w += 2 * ad;
        g += s->grad_bytes * ad;
        o += (4.0 + s->state_bytes) * ad / (s->dist_opt || s->strategy == MB_STRAT_FSDP ? dpc : 1);
        /* dynamic terms at the stage's peak moment (timeline), or the in-flight formula */
        struct mb_memdyn d = dyn ? dyn[st] : mb_step__dyn_formula(s, lay, plan, st, act_vision);
        double act = d.activations, logits = d.logits, rc = d.recompute, gws = d.grads, t_peak = d.t;
        double T = mb_step__tokens(s);
        /* The MoE block's forward working set (mb_oplist.fwd_ws: dispatcher token tensors,
         * expert output, combine chain; two layers' with EP overlap) is alive during a
         * forward, the recompute and gradient working sets during a backward: the peak holds
         * the larger, and the other is not counted at that moment. */
        double disp = 0, block = 0;
        for (int c = 0; moe && c < v; c++)
            disp = fmax(disp, mb_step__chunk_fwd_ws(s, lay, plan, st, c, &block));
        disp *= s->overlap_ep_comm ? 2 : 1;
        double fwd_ws = disp, bwd_ws = rc + gws;
        if (disp > rc + gws)
            rc = gws = 0;
        else
            disp = 0;
        double graphs = lay->graph_bytes_stage[st];
        double buf = logits + disp + MB_MEM_WORKSPACE;
        double alloc = w + g + o + act + rc + gws + buf + graphs;
        /* Fragmentation: without expandable segments a freed block is cached at its size
         * and split for smaller requests, so the next request of the largest transient
         * size (the loss working set, one dispatch tensor) finds no hole and takes a new
         * segment: one such block stays reserved beyond the allocation. CUDA-graph
         * private pools never use expandable segments. Expandable segments map 2 MiB
         * pages: at most a page per stream's segment. */
        double big = fmax(logits, block);
        int fullg = (s->cuda_graph & MB_CG_FULL_ITERATION) != 0;
        double frag = (!s->expandable_segments || fullg) ? mb_memory_segment(big) : (1 + MB_CK_COUNT) * MB_MEM_ROUND_LARGE;
        /* outside PyTorch: CUDA context, NCCL communicators of this rank, DeepEP/HybridEP buffers */
        double comm = mb_step__outside(s, lay, T, dpc);
        if (st < 64) {
            struct mb_memory_stage *ps = &out->per_stage[st];
            ps->weights = w;
            ps->grads = g;
            ps->optimizer = o;
            ps->activations = act;
            ps->deferred_wgrad = d.deferred;
            ps->buffers = buf;
            ps->graphs = graphs;
            ps->logits = logits;
            ps->dispatch = disp;
            ps->workspace = MB_MEM_WORKSPACE;
            ps->recompute = rc;
            ps->bwd_grads = gws;
            ps->peak_allocated = alloc;
            ps->fragmentation = frag;
            ps->reserved = alloc + frag;
            ps->comm_buffers = comm;
            ps->context = MB_MEM_CONTEXT;
            ps->device = ps->reserved + comm + MB_MEM_CONTEXT;
            ps->peak_time_s = t_peak;
            ps->fwd_ws = fwd_ws;
            ps->bwd_ws = bwd_ws;
            out->n_stages = st + 1;
            mb_memory_settle_step(s, ps);
        }
    }
    out->capacity = hbm_bytes;
    mb_memory_summarize(out);
    return 0;
}

double mb_memory_step_allocated(const struct mb_memory_stage *ps)
{
    return ps->weights + ps->grads + ps->optimizer + ps->step_grads + ps->graphs + ps->workspace;
}

void mb_memory_settle_step(const struct mb_scenario *s, struct mb_memory_stage *ps)
{
    /* The optimizer step: every activation freed, the static state, the CUDA-graph buffers, the
     * workspaces and the step's fp32 gradient copy; the allocator keeps what it reserved in the passes. */
    ps->step_grads = mb_memory_step_grad_copy_bytes(s, ps->optimizer);
    double step = mb_memory_step_allocated(ps);
    /* the first iteration's passes run before the optimizer has created Adam's moments */
    ps->first_iter_allocated = fmax(ps->peak_allocated - mb_step__adam_moments(s, ps->optimizer), step);
    /* a full-iteration graph's pool keeps the passes' peak reserved (freed, not allocated) through the
     * eager step, whose transients come on top: the step is the peak, its reserve holds the pool */
    double held = mb_memory_graph_step_extra(s, ps->step_grads);
    ps->at_step = held > 0 || step > ps->peak_allocated;
    if (!ps->at_step)
        return;
    double reserved = held > 0 ? ps->reserved + held : step + ps->fragmentation;
    ps->activations = ps->deferred_wgrad = ps->logits = ps->dispatch = ps->recompute = ps->bwd_grads = 0;
    ps->buffers = ps->workspace;
    ps->peak_allocated = step;
    ps->reserved = reserved;
    ps->fragmentation = reserved - step;
    ps->device = ps->reserved + ps->comm_buffers + ps->context;
}

double mb_memory_step_grad_copy_bytes(const struct mb_scenario *s, double optim)
{
    if (s->strategy != MB_STRAT_3D || s->grad_bytes >= 4 || s->state_bytes < 8)
        return 0;
    return 4.0 * optim / (4.0 + s->state_bytes);
}

enum mb_mem_verdict mb_memory_verdict_of(double device, double capacity)
{
    if (device > capacity)
        return MB_MEM_OOM;
    return device > MB_MEM_AT_RISK_FRACTION * capacity ? MB_MEM_AT_RISK : MB_MEM_FITS;
}

void mb_memory_summarize(struct mb_memory *m)
{
    static const char *const names[] = {"weights", "gradients",   "optimizer", "activations",
                                        "buffers", "cuda_graphs", "recompute", "backward_gradients"};
    int best = 0;
    if (m->n_stages <= 0)
        return;
    for (int i = 1; i < m->n_stages; i++)
        if (m->per_stage[i].device > m->per_stage[best].device)
            best = i;
    const struct mb_memory_stage *a = &m->per_stage[best];
    m->weights = a->weights;
    m->grads = a->grads;
    m->optimizer = a->optimizer;
    m->activations = a->activations;
    m->deferred_wgrad = a->deferred_wgrad;
    m->buffers = a->buffers;
    m->graphs = a->graphs;
    m->peak_allocated = a->peak_allocated;
    m->reserved = a->reserved;
    m->logits = a->logits;
    m->dispatch = a->dispatch;
    m->workspace = a->workspace;
    m->recompute = a->recompute;
    m->bwd_grads = a->bwd_grads;
    m->fragmentation = a->fragmentation;
    m->comm_buffers = a->comm_buffers;
    m->context = a->context;
    m->device = a->device;
    m->peak_time_s = a->peak_time_s;
    m->step_grads = a->step_grads;
    m->at_step = a->at_step;
    m->first_iter_allocated = a->first_iter_allocated;
    m->verdict = mb_memory_verdict_of(a->device, m->capacity);
    m->stage = best;
    double v[] = {a->weights, a->grads, a->optimizer, a->activations, a->buffers, a->graphs, a->recompute,
                  a->bwd_grads};
    int d = 0;
    for (int i = 1; i < 8; i++)
        if (v[i] > v[d])
            d = i;
    m->dominant = names[d];
}
