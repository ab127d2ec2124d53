/*
 * test_validate_recipe.c -- `mbsim validate`: how a row's recipe reaches its scenario.
 * Configuration stated in the notes column; the recipe columns, one parser per column
 * against hand-written cells; a fixture CSV with them (LoRA rows, rows dated before
 * FlashAttention); recipe files (measured.csv_row) and the ones that cannot be; and the
 * FLOP conventions of TFLOP/s-only rows against the publishers' formulas. The rest of
 * validate: test_validate.c; memory: test_validate_memory.c; the shared helpers:
 * test_validate_util.h.
 *
 * Run from the source tree (ctest sets WORKING_DIRECTORY, MBSIM_DATA_DIR and
 * MBSIM_SHARED_DIR), so fixture paths and the paths in messages are relative.
 *
 * Calibration: as in test_validate.c (CSV rows are predicted on the SHIPPED tables).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include <jansson.h>

#include "mb_step.h"
#include "mb_validate.h"

#include "test_validate_util.h"

/* Configuration stated in the notes column, in the publishers' own words
 * (public_measured.csv rows mbcard_qwen3_30b_a3b_h100_bf16_16,
 * mbskill_qwen3_30b_a3b_h100_16_baseline, mbcard_deepseek_v3_gb300_fp8_mx_256):
 * each expectation is read off the note text. */
static void test_apply_notes(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    char applied[160];
    mb_err_clear(&e);
    if (mb_scenario_load("tests/data/step/qwen3_30b_h100_16_ep.yaml", &s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    /* MoE, EP16, pp 1: "HybridEP 32 SMs" and "EP comm overlap on" both apply */
    s.dispatcher = MB_DISP_ALLTOALL;
    s.overlap_ep_comm = 0;
    assert_int_equal(mb_validate_apply_notes(&s, "task=pretrain; HybridEP 32 SMs, 64-token combine chunks, "
                                                 "permute fusion; EP comm overlap on, delayed wgrad off",
                                             applied, sizeof applied),
                     2);
    assert_int_equal(s.dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(s.dispatcher_sms, 32);
    assert_int_equal(s.overlap_ep_comm, 1);
    assert_string_equal(applied, "dispatcher hybridep (32 SMs), EP overlap on");
    /* "controlled A/B: EP comm overlap OFF" turns it off; "DeepEP" picks DeepEP */
    assert_int_equal(mb_validate_apply_notes(&s, "controlled A/B: EP comm overlap OFF; DeepEP", applied,
                                             sizeof applied),
                     2);
    assert_int_equal(s.overlap_ep_comm, 0);
    assert_int_equal(s.dispatcher, MB_DISP_DEEPEP);
    /* "EP overlap + delayed wgrad" and "full-iteration CUDA graph" */
    assert_int_equal(mb_validate_apply_notes(&s, "HybridEP; full-iteration CUDA graph; EP overlap + delayed wgrad",
                                             NULL, 0),
                     3);
    assert_int_equal(s.overlap_ep_comm, 1);
    assert_int_equal(s.cuda_graph, MB_CG_FULL_ITERATION);
    /* pp 2 without interleaving: Megatron cannot overlap, so the note leaves it off
     * and the row stays valid */
    s.overlap_ep_comm = 0;
    s.pp = 2;
    s.vpp = 1;
    mb_validate_apply_notes(&s, "EP overlap", NULL, 0);
    assert_int_equal(s.overlap_ep_comm, 0);
    s.vpp = 2;
    mb_validate_apply_notes(&s, "EP overlap", NULL, 0);
    assert_int_equal(s.overlap_ep_comm, 1);
    /* negations are words: "no EP overlap", "without", "disabled", ": false"; "offload" is not "off" */
    static const char *const offs[] = {"no EP overlap", "without EP comm overlap", "EP overlap disabled",
                                       "EP overlap: false"};
    for (int i = 0; i < 4; i++) {
        s.overlap_ep_comm = 1;
        mb_validate_apply_notes(&s, offs[i], NULL, 0);
        assert_int_equal(s.overlap_ep_comm, 0);
    }
    s.pp = 1;
    s.overlap_ep_comm = 0;
    mb_validate_apply_notes(&s, "EP overlap on with CPU offload", applied, sizeof applied);
    assert_int_equal(s.overlap_ep_comm, 1);
    /* asked for where it cannot apply: said so, and left as it was */
    s.pp = 2;
    s.vpp = 1;
    s.overlap_ep_comm = 0;
    mb_validate_apply_notes(&s, "EP comm overlap on", applied, sizeof applied);
    assert_int_equal(s.overlap_ep_comm, 0);
    assert_string_equal(applied, "EP overlap not applicable (pp > 1 without vpp)");
    s.pp = 1;
    mb_validate_apply_notes(&s, "HybridEP 99999 SMs", applied, sizeof applied);
    assert_non_null(strstr(applied, "out of range"));
    /* CUDA-graph scopes as the notes name them; an unknown scope or one the model lacks is not guessed */
    assert_int_equal(mb_validate_apply_notes(&s, "TE CUDA graphs moe_router+moe_preprocess", applied, sizeof applied),
                     1);
    assert_int_equal(s.cuda_graph, MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS);
    assert_string_equal(applied, "CUDA graphs moe_router+moe_preprocess");
    assert_int_equal(mb_validate_apply_notes(&s, "CUDA graph attn+moe_router+moe_preprocess", NULL, 0), 1);
    assert_int_equal(s.cuda_graph, MB_CG_ATTN | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS);
    assert_int_equal(mb_validate_apply_notes(&s, "CUDA graphs off", NULL, 0), 1);
    assert_int_equal(s.cuda_graph, 0);
    assert_int_equal(mb_validate_apply_notes(&s, "CUDA graphs: FULL_CUDA_GRAPH,MCORE_CUDA_GRAPH", NULL, 0), 1);
    assert_int_equal(s.cuda_graph, MB_CG_FULL_ITERATION);
    s.cuda_graph = 0;
    assert_int_equal(mb_validate_apply_notes(&s, "TE CUDA graphs for attention and Mamba", NULL, 0), 0);
    assert_int_equal(s.cuda_graph, 0); /* qwen3_30b_a3b has no Mamba layers */
    assert_int_equal(mb_validate_apply_notes(&s, "TE CUDA graphs; CUDA graphs on; CUDA graph warp_magic", NULL, 0), 0);
    assert_int_equal(s.cuda_graph, 0);
    /* nothing recognised: nothing changes */
    s.dispatcher = MB_DISP_ALLTOALL;
    assert_int_equal(mb_validate_apply_notes(&s, "task=pretrain; tokens/s derived", applied, sizeof applied), 0);
    assert_string_equal(applied, "");
    assert_int_equal(s.dispatcher, MB_DISP_ALLTOALL);
    assert_int_equal(mb_validate_apply_notes(&s, NULL, applied, sizeof applied), 0);
    /* a dense model ignores dispatcher and overlap words */
    s.model.num_experts = 0;
    assert_int_equal(mb_validate_apply_notes(&s, "HybridEP", NULL, 0), 0);
    assert_int_equal(s.dispatcher, MB_DISP_ALLTOALL);
    mb_scenario_free(&s);
}

/* Step 10: each recipe column's parser against hand-written cells, in the
 * vocabulary of shared/data/measured/README.md, and malformed cells. The
 * scenario is Qwen3-30B-A3B on 16 H100, EP16, pp 1 (an MoE model without
 * shared experts); fields are reset between cases where it matters. */
static struct mb_scenario *load_q16(struct mb_scenario *s)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load("tests/data/step/qwen3_30b_h100_16_ep.yaml", s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    s->dispatcher = MB_DISP_ALLTOALL;
    s->dispatcher_sms = 24;
    return s;
}

/* dispatcher: flex:hybridep with its SM count; "(card)" gives no count (default kept, said);
 * deepep's count in the card's CLI spelling; n/a and empty */
static void cells_dispatcher(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:hybridep (moe_hybridep_num_sms=32)", r), 0);
    assert_int_equal(s->dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(s->dispatcher_sms, 32);
    assert_string_equal(r->applied, "dispatcher hybridep (32 SMs)");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:deepep (card) [--moe-deepep-num-sms 20]", r), 0);
    assert_int_equal(s->dispatcher, MB_DISP_DEEPEP);
    assert_int_equal(s->dispatcher_sms, 20);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "alltoall (README table 'All-to-All', dropless)", r), 0);
    assert_int_equal(s->dispatcher, MB_DISP_ALLTOALL);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:hybridep (card)", r), 0);
    assert_string_equal(r->applied, "dispatcher hybridep (20 SMs, SM count not stated: default)");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "n/a (dense)", r), 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "  ", r), 1);
    assert_string_equal(r->defaulted, "dispatcher");
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:nccl", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:hybridep (moe_hybridep_num_sms=0)", r), -1);
    assert_int_equal(r->n_bad, 2);
    assert_string_equal(r->bad, "dispatcher 'flex:nccl': expected alltoall, allgather, flex:deepep or flex:hybridep, "
                                "dispatcher 'flex:hybridep (moe_hybridep_num_sms=0)': SM count is not an integer in 1..1024");
    assert_int_equal(s->dispatcher, MB_DISP_HYBRIDEP); /* a refused cell changes nothing */
    s->ep = 1; /* no expert parallelism: said, not applied */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_DISPATCHER, "flex:deepep", r), 0);
    assert_int_equal(s->dispatcher, MB_DISP_HYBRIDEP);
    assert_string_equal(r->not_applied, "dispatcher deepep (ep = 1)");
    s->ep = 16;
}

/* ep_overlap: on with delayed wgrad (not modelled, said), without; off; pp > 1 without vpp */
static void cells_ep_overlap(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm, delay_wgrad_compute)", r), 0);
    assert_int_equal(s->overlap_ep_comm, 1);
    assert_string_equal(r->unmodelled, "delay_wgrad_compute");
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm), delay_wgrad_compute=False", r), 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm, no delay_wgrad)", r), 0);
    assert_string_equal(r->unmodelled, "");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "off (no CommOverlapConfig)", r), 0);
    assert_int_equal(s->overlap_ep_comm, 0);
    s->pp = 2;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "on (card: overlap_1f1b)", r), 0);
    assert_int_equal(s->overlap_ep_comm, 0);
    assert_string_equal(r->not_applied, "EP overlap (pp > 1 without vpp)");
    s->pp = 1;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_EP_OVERLAP, "online", r), -1);
}

/* cuda_graph: te scopes, local full layer, full_iteration, none; unknown scope; scope not stated */
static void cells_cuda_graph(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "te:attn+moe_router+moe_preprocess (impl=transformer_engine)", r), 0);
    assert_int_equal(s->cuda_graph, MB_CG_ATTN | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS);
    assert_string_equal(r->applied, "CUDA graphs te:attn+moe_router+moe_preprocess");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "local:full_layer (enable_cuda_graph=True)", r), 0);
    assert_int_equal(s->cuda_graph, MB_CG_LAYER);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "full_iteration (impl=local, scope=full_iteration)", r), 0);
    assert_int_equal(s->cuda_graph, MB_CG_FULL_ITERATION);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "none (eager baseline)", r), 0);
    assert_int_equal(s->cuda_graph, 0);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "enabled (scope not stated)", r), 0);
    assert_string_equal(r->defaulted, "cuda_graph (scope not stated)");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "te:attn+warp_drive", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "te:", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CUDA_GRAPH, "always", r), -1);
    assert_non_null(strstr(r->bad, "cuda_graph 'te:attn+warp_drive': unknown scope 'warp_drive'"));
    assert_int_equal(s->cuda_graph, 0);
}

/* recompute_detail: every spelling of the README, the empty list, full with method and count */
static void cells_recompute_detail(struct mb_scenario *s, struct mb_val_recipe *r)
{
    static const struct {
        const char *cell;
        enum mb_rc_gran g;
        unsigned mods;
        enum mb_rc_method meth;
        int layers;
    } rc[] = {
        {"none", MB_RC_NONE, 0, MB_RC_UNIFORM, 0},
        {"selective:moe+layernorm+core_attn+moe_act", MB_RC_SELECTIVE,
         MB_RCM_MOE | MB_RCM_LAYERNORM | MB_RCM_CORE_ATTN | MB_RCM_MOE_ACT, MB_RC_UNIFORM, 0},
        {"selective:core_attn (MCore default modules)", MB_RC_SELECTIVE, MB_RCM_CORE_ATTN, MB_RC_UNIFORM, 0},
        {"selective:up_proj+mlp", MB_RC_SELECTIVE, MB_RCM_MLA_UP_PROJ | MB_RCM_MLP, MB_RC_UNIFORM, 0},
        {"selective:[] (nothing)", MB_RC_NONE, 0, MB_RC_UNIFORM, 0},
        {"full:uniform:1 layer (--checkpoint-activations, default --checkpoint-num-layers 1)", MB_RC_FULL, 0,
         MB_RC_UNIFORM, 1},
        {"full:block:4 layers", MB_RC_FULL, 0, MB_RC_BLOCK, 4},
        {"full (per-block activation checkpointing, AutoModel parallelizer)", MB_RC_FULL, 0, MB_RC_UNIFORM, 0},
    };
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        mb_validate_recipe_init(r);
        if (mb_validate_recipe_cell(s, MB_VAL_RC_RECOMPUTE_DETAIL, rc[i].cell, r) != 0)
            fail_msg("'%s': %s", rc[i].cell, r->bad);
        assert_int_equal(s->recompute, rc[i].g);
        assert_int_equal(s->recompute_modules, rc[i].mods);
        if (rc[i].g == MB_RC_FULL) {
            assert_int_equal(s->recompute_method, rc[i].meth);
            assert_int_equal(s->recompute_num_layers, rc[i].layers);
        }
    }
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_RECOMPUTE_DETAIL, "selective:flux_capacitor", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_RECOMPUTE_DETAIL, "full:sideways:2 layers", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_RECOMPUTE_DETAIL, "full:block:many layers", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_RECOMPUTE_DETAIL, "partial", r), -1);
    assert_int_equal(r->n_bad, 4);
    assert_non_null(strstr(r->bad, "recompute_detail 'selective:flux_capacitor': recompute module 'flux_capacitor' not known"));
    assert_int_equal(s->recompute, MB_RC_FULL); /* unchanged by the refused cells */
}

/* tp_overlap: needs tp > 1; async TP read as TP comm overlap */
static void cells_tp_overlap(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_TP_OVERLAP, "on (TE default ub cfg)", r), 0);
    assert_int_equal(s->overlap_tp_comm, 0);
    assert_string_equal(r->not_applied, "TP overlap (tp = 1)");
    s->tp = 2;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_TP_OVERLAP, "on (userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192)", r), 0);
    assert_int_equal(s->overlap_tp_comm, 1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_TP_OVERLAP, "none (no TP comm overlap in Megatron-LM 2021)", r), 0);
    assert_int_equal(s->overlap_tp_comm, 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_TP_OVERLAP, "async TP (enable_async_tensor_parallel=True)", r), 0);
    assert_int_equal(s->overlap_tp_comm, 1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_TP_OVERLAP, "sometimes", r), -1);
    s->tp = 1;
    s->overlap_tp_comm = 0;
}

/* fsdp_impl: the distributed optimizer or DDP under 3D; an FSDP flavour against a 3D layout */
static void cells_fsdp_impl(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    s->overlap_grad_reduce = 1;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "none (--DDP-impl local; no distributed optimizer in 2021 Megatron-LM)", r), 0);
    assert_int_equal(s->dist_opt, 0);
    assert_int_equal(s->overlap_grad_reduce, 0); /* LocalDDP all-reduces after the backward */
    assert_non_null(strstr(r->applied, "grad-reduce overlap off (LocalDDP)"));
    s->overlap_grad_reduce = 1;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "none (DDP + distributed optimizer)", r), 0);
    assert_int_equal(s->dist_opt, 1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "none (DDP)", r), 0);
    assert_int_equal(s->dist_opt, 0);
    s->dist_opt = 1;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "megatron_fsdp:optim_grads_params (fsdp_double_buffer)", r), 0);
    assert_string_equal(r->not_applied, "fsdp_impl megatron_fsdp (the fsdp column says 3D: kept)");
    s->strategy = MB_STRAT_FSDP;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "megatron_fsdp:optim (fsdp_double_buffer, nccl_ub, keep_fp8_transpose_cache=False)", r), 0);
    /* keep_fp8_transpose_cache=False is Megatron's default: nothing unmodelled; the double buffer is applied */
    assert_string_equal(r->unmodelled, "data_parallel_sharding_strategy optim (simulated as optim_grads_params), nccl_ub");
    assert_int_equal(s->fsdp_impl, MB_FSDP_MEGATRON);
    assert_int_equal(s->fsdp_double_buffer, 1);
    assert_non_null(strstr(r->applied, "Megatron-FSDP double buffer"));
    s->fsdp_double_buffer = 0;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "megatron_fsdp (keep_fp8_transpose_cache=True)", r), 0);
    assert_string_equal(r->unmodelled, "keep_fp8_transpose_cache");
    assert_int_equal(s->fsdp_double_buffer, 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "zero3", r), -1);
    /* PyTorch FSDP2: the flavour is applied (it was read and dropped before 2026-12-07); NeMo AutoModel's
     * MoE models add bf16 sharded state and no resharding after forward (its MoE parallelizer), a dense
     * model keeps the defaults (fp32 sharded parameters, resharded) */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "torch_fsdp2 (AutoModel FSDP2Manager)", r), 0);
    assert_int_equal(s->fsdp_impl, MB_FSDP_TORCH2);
    assert_int_equal(s->fsdp_sharded_bytes, 2);
    assert_int_equal(s->fsdp_reshard_after_forward, 0);
    assert_string_equal(r->applied, "PyTorch FSDP2, FSDP2 sharded parameters bf16 and reshard_after_forward off "
                                    "(AutoModel's MoE models)");
    s->fsdp_sharded_bytes = 4;
    s->fsdp_reshard_after_forward = 1;
    int experts = s->model.num_experts;
    s->model.num_experts = 0;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FSDP_IMPL, "torch_fsdp2 (AutoModel FSDP2Manager)", r), 0);
    assert_int_equal(s->fsdp_sharded_bytes, 4);
    assert_int_equal(s->fsdp_reshard_after_forward, 1);
    assert_string_equal(r->applied, "PyTorch FSDP2");
    s->model.num_experts = experts;
    s->fsdp_impl = MB_FSDP_MEGATRON;
    s->strategy = MB_STRAT_3D;
}

/* cpu_offload: activation offloading of N layers is memory.cpu_offloading_num_layers N; weight
 * and optimizer offloading are not modelled, and said */
static void cells_cpu_offload(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CPU_OFFLOAD, "none", r), 0);
    assert_int_equal(s->cpu_offload_layers, 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CPU_OFFLOAD, "activations: 20 layers (weights=False)", r), 0);
    assert_int_equal(s->cpu_offload_layers, 20);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CPU_OFFLOAD, "optimizer CPU offload (card: 'long-context configs')", r), 0);
    assert_string_equal(r->unmodelled, "optimizer CPU offload");
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CPU_OFFLOAD, "activations: 2 layers (weights=True)", r), 0);
    assert_int_equal(s->cpu_offload_layers, 2);
    assert_string_equal(r->unmodelled, "CPU weight offload");
    s->cpu_offload_layers = 0;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CPU_OFFLOAD, "activations: some layers", r), -1);
}

/* fp8_recipe: refines a bare FP8; agrees with BF16; contradicts a specific label (kept, said);
 * fp8_dot_product_attention switches attention to FP8; other flags are not modelled */
static void cells_fp8_recipe(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_precision_parse("fp8", &s->prec);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "tensorwise (FP8 current scaling) (fp8=hybrid) [fp8_param_gather=True]", r), 0);
    assert_string_equal(s->prec.label, "fp8_cs");
    assert_string_equal(r->applied, "precision fp8_cs (fp8_recipe refines fp8)");
    assert_string_equal(r->unmodelled, "");
    /* read, not yet applied: the CSV reader applies it after other_recipe (dist_opt) */
    assert_true(r->fp8pg_stated && r->fp8pg == 1);
    assert_int_equal(s->fp8_param_gather, 0);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp4_param_gather=False]", r), 0);
    assert_true(r->fp8pg_stated && r->fp8pg == 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp8_param_gather=yes]", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp8_param_gather=Maybe]", r), -1);
    mb_precision_parse("fp8", &s->prec);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "blockwise (FP8-Block)", r), 0);
    assert_string_equal(s->prec.label, "fp8_blockwise");
    mb_precision_parse("mxfp8", &s->prec);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "mxfp8 (fp8=e4m3) [fp8_param_gather=True; reuse_grad_buf_for_mxfp8_param_ag; fp8_dot_product_attention]", r), 0);
    assert_string_equal(s->prec.label, "mxfp8");
    assert_int_equal(s->prec.attn, MB_PREC_FP8);
    assert_string_equal(r->applied, "FP8 attention");
    mb_precision_parse("fp8_cs", &s->prec);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "mxfp8", r), 0);
    assert_string_equal(s->prec.label, "fp8_cs");
    assert_string_equal(r->not_applied, "fp8_recipe mxfp8 (the precision column says fp8_cs: kept)");
    mb_precision_parse("fp8", &s->prec);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "per-tensor FP8 (page footnote); cs vs ds not determinable: both give the published layout", r), 0);
    assert_string_equal(s->prec.label, "fp8");
    assert_string_equal(r->defaulted, "fp8_recipe (not determinable: the precision column is used)");
    mb_precision_parse("bf16", &s->prec);
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "none (bf16)", r), 0);
    assert_string_equal(r->applied, "");
    assert_string_equal(r->not_applied, "");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "quantum (q4)", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_FP8_RECIPE, "mxfp8 [fp8_param_gather=True", r), -1);
}

/* ce_fusion: on is not modelled (mbsim runs the unfused cross-entropy); "impl=te" alone says no on/off */
static void cells_ce_fusion(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CE_FUSION, "on (impl=te)", r), 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CE_FUSION, "off (impl=te)", r), 0);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CE_FUSION, "impl=te", r), 0);
    assert_string_equal(r->unmodelled, "cross-entropy fusion (impl=te)");
    assert_string_equal(r->defaulted, "ce_fusion (on/off not stated)");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_CE_FUSION, "maybe", r), -1);
}

/* mtp_layers: replaces the model file's depth; not a number is refused */
static void cells_mtp_layers(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_MTP_LAYERS, "0", r), 0);
    assert_string_equal(r->applied, "");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_MTP_LAYERS, "1", r), 0);
    assert_int_equal(s->model.mtp_layers, 1);
    assert_string_equal(r->applied, "MTP layers 1 (model file: 0)");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_MTP_LAYERS, "one", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_MTP_LAYERS, "2 layers", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_MTP_LAYERS, "-1", r), -1);
    s->model.mtp_layers = 0;
}

/* pp_layout: an explicit layout, expanded; embedding and loss counted as layers (48 + 2 over
 * pp 2: 25 each, so E + 24 t | 24 t + L); an even split is the default; malformed layouts */
static void cells_pp_layout(struct mb_scenario *s, struct mb_val_recipe *r)
{
    s->pp = 2;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "Et*23|(t*5)*5L", r), 0);
    assert_int_equal((int)strlen(s->pipeline_layout), 1 + 23 + 1 + 25 + 1);
    assert_int_equal(strncmp(s->pipeline_layout, "Ettt", 4), 0);
    assert_int_equal(s->pipeline_layout[24], '|');
    assert_string_equal(r->applied, "pipeline layout Et*23|(t*5)*5L");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=True, account_for_loss=True)", r), 0);
    {
        char want[64] = "E";
        memset(want + 1, 't', 24);
        want[25] = '|';
        memset(want + 26, 't', 24);
        want[50] = 'L';
        want[51] = '\0';
        assert_string_equal(s->pipeline_layout, want);
    }
    s->pipeline_layout[0] = '\0';
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=False, account_for_loss=False)", r), 0);
    assert_string_equal(s->pipeline_layout, "");
    s->vpp = 2; /* 50 over 4 virtual stages is not whole: said, not applied */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=True, account_for_loss=True)", r), 0);
    assert_string_equal(s->pipeline_layout, "");
    assert_non_null(strstr(r->not_applied, "num_layers + 2 = 50 not divisible by pp*vpp = 4"));
    s->vpp = 1;
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "Et*4|(t*4|", r), -1);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_PP_LAYOUT, "two stages", r), -1);
    assert_string_equal(s->pipeline_layout, "");
    s->pp = 1;
}

/* other_recipe: the modelled settings, provenance skipped, the rest listed in the cell's spelling */
static void cells_other_recipe(struct mb_scenario *s, struct mb_val_recipe *r)
{
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER,
                                             "grouped_gemm=True; permute_fusion=True; overlap_grad_reduce=False; "
                                             "co.overlap_param_gather=False; grad_reduce_in_fp32=False; "
                                             "precision_aware_opt=True (grads float32, exp_avg bfloat16, params float32); "
                                             "TOKEN-DROP capacity_factor=1.0; force_balance=True; dist_opt=True; "
                                             "shared_expert_overlap=True; DP1; "
                                             "provider-class default used for: cross_entropy_loss_fusion; "
                                             "env: CUDA_DEVICE_MAX_CONNECTIONS=32",
                                             r),
                     0);
    assert_int_equal(s->overlap_grad_reduce, 0);
    assert_int_equal(s->overlap_param_gather, 0);
    assert_int_equal(s->grad_bytes, 2); /* grad_reduce_in_fp32=False wins over the optimizer's grads dtype */
    assert_int_equal(s->state_bytes, 4);
    assert_true(mb_dbl_eq(s->capacity_factor, 1.0));
    assert_string_equal(r->unmodelled, "env: CUDA_DEVICE_MAX_CONNECTIONS=32");
    assert_string_equal(r->not_applied, "shared_expert_overlap (no shared experts)");
    assert_int_equal(s->permute_fusion, 1); /* permute_fusion=True: mbsim's default already */
    /* the two fusion knobs (moe.router_fusion, moe.permute_fusion) */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "router_fusion=True; permute_fusion=False", r), 0);
    assert_int_equal(s->router_fusion, 1);
    assert_int_equal(s->permute_fusion, 0);
    assert_string_equal(r->applied, "router fusion on, permute fusion off");
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "router_fusion=maybe", r), -1);
    s->router_fusion = 0;
    s->permute_fusion = 1;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "overlap_grad_reduce=maybe; seq_parallel=yes; "
                                                                 "TOKEN-DROP capacity_factor=0.5",
                                             r),
                     -1);
    assert_int_equal(r->n_bad, 3);
    assert_int_equal(s->overlap_grad_reduce, 0);
    /* attention_backend (Megatron-Core --attention-backend names) */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "attention_backend=local", r), 0);
    assert_int_equal(s->attn_backend, MB_ATTN_LOCAL);
    assert_non_null(strstr(r->applied, "attention backend local"));
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "attention_backend=fused", r), 0);
    assert_int_equal(s->attn_backend, MB_ATTN_FUSED);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "attention_backend=paged", r), -1);
    assert_int_equal(s->attn_backend, MB_ATTN_FUSED);
    s->attn_backend = MB_ATTN_AUTO;
    /* defer_embedding_wgrad: needs pp > 1 (said at pp 1); the limit with it, else Megatron's 0 (said) */
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=True", r), 0);
    assert_int_equal(s->defer_wgrad, 0);
    assert_non_null(strstr(r->not_applied, "defer_embedding_wgrad (needs pp > 1, 3d)"));
    s->pp = 2;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "wgrad_deferral_limit=22; defer_embedding_wgrad=True", r), 0);
    assert_int_equal(s->defer_wgrad, 1);
    assert_int_equal(s->wgrad_deferral_limit, 22);
    s->wgrad_deferral_limit = 0;
    mb_validate_recipe_init(r);
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=True", r), 0);
    assert_int_equal(s->wgrad_deferral_limit, 0);
    assert_non_null(strstr(r->defaulted, "wgrad_deferral_limit (Megatron's 0: every microbatch)"));
    assert_int_equal(mb_validate_recipe_cell(s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=False; wgrad_deferral_limit=-3", r), -1);
    assert_int_equal(s->defer_wgrad, 0);
    s->pp = 1;
}

/* The columns above, in this order, on one scenario (load_q16): each case starts from the fields
 * the cases before it left. Then a bad column index. */
static void test_recipe_cells(void **state)
{
    (void)state;
    static void (*const columns[])(struct mb_scenario *, struct mb_val_recipe *) = {
        cells_dispatcher, cells_ep_overlap, cells_cuda_graph, cells_recompute_detail, cells_tp_overlap,
        cells_fsdp_impl, cells_cpu_offload, cells_fp8_recipe, cells_ce_fusion, cells_mtp_layers, cells_pp_layout,
        cells_other_recipe,
    };
    struct mb_scenario s;
    struct mb_val_recipe r;
    load_q16(&s);
    for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++)
        columns[i](&s, &r);

    /* bad column index */
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_COUNT, "x", &r), -1);
    assert_null(mb_validate_recipe_column(MB_VAL_RC_COUNT));
    assert_string_equal(mb_validate_recipe_column(MB_VAL_RC_OTHER), "other_recipe");
    mb_scenario_free(&s);
}

/* Step 11: a CSV with recipe columns (tests/data/validate/recipe.csv). The
 * hook sees each row's final scenario: the fields its recipe cells set; the
 * notes column is not read for the recipe once the columns exist. */
struct seen {
    char id[160];
    struct mb_scenario s; /* shallow copy: only plain fields are read */
};
struct seen_list {
    struct seen row[16];
    int n;
};

static void remember(void *ctx, const struct mb_val_row *r, const struct mb_scenario *s)
{
    struct seen_list *l = ctx;
    if (l->n < 16) {
        snprintf(l->row[l->n].id, sizeof l->row[l->n].id, "%s", r->id);
        l->row[l->n].s = *s;
        l->row[l->n].s.model.layer = NULL;
        l->n++;
    }
}

static const struct mb_scenario *seen_get(const struct seen_list *l, const char *id)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->row[i].id, id))
            return &l->row[i].s;
    fail_msg("no scenario for '%s'", id);
    return NULL;
}

/* Validate a CSV fixture into *s, remembering each row's final scenario in *seen. */
static void validate_seen(const char *path, struct mb_val_summary *s, struct seen_list *seen)
{
    struct mb_err e;
    memset(seen, 0, sizeof *seen);
    mb_validate_init(s);
    s->on_row = remember;
    s->on_row_ctx = seen;
    mb_err_clear(&e);
    if (mb_validate_add_csv(s, path, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    mb_validate_finish(s);
}

/* Recipe files (mb_validate_add_recipes; tests/data/validate/recipes.csv and recipes/): row rec_row
 * leaves recompute and the main-gradient type unstated, and recipes/rec_row.yaml (measured.csv_row:
 * rec_row, the same layout) states full recompute and bf16 main grads. The row is simulated from the
 * file -- its prediction is the file's own simulation, to the bit, with the row's measured tokens/s
 * and notes peak (not the file's step_time_s of 99 s) -- and plain_row, the same layout without a
 * recipe file, keeps the CSV defaults (no recompute, fp32 main grads). A folder skips files without
 * measured.csv_row; a file whose row no CSV had is reported unused. */
static void test_recipe_files(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct seen_list seen;
    struct mb_err e;
    memset(&seen, 0, sizeof seen);
    mb_validate_init(&s);
    s.on_row = remember;
    s.on_row_ctx = &seen;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes", &e), 0);
    assert_int_equal(mb_validate_add_csv(&s, FIX "recipes.csv", &e), 0);
    mb_validate_finish(&s);
    const struct mb_val_row *r = find_row(&s, "rec_row"), *plain = find_row(&s, "plain_row");
    assert_false(r->skipped);
    assert_string_equal(r->recipe_file, FIX "recipes/rec_row.yaml");
    assert_non_null(strstr(r->note, "recipe from " FIX "recipes/rec_row.yaml"));
    assert_string_equal(plain->recipe_file, "");
    assert_int_equal(s.n_recipe_files, 1);
    assert_string_equal(r->metric, MB_VAL_TOKENS);
    assert_true(r->measured == 10000);
    assert_string_equal(r->mem_from, "notes");
    assert_true(mb_dbl_eq(r->meas_mem_gib, 30e9 / 1073741824.0));
    const struct mb_scenario *sr = seen_get(&seen, "rec_row"), *sp = seen_get(&seen, "plain_row");
    assert_int_equal(sr->recompute, MB_RC_FULL);
    assert_int_equal(sr->grad_bytes, 2);
    assert_int_equal(sp->recompute, MB_RC_NONE);
    assert_int_equal(sp->grad_bytes, 4);
    /* the file's own simulation */
    struct mb_scenario f;
    struct mb_result res;
    memset(&f, 0, sizeof f);
    assert_int_equal(mb_scenario_load(FIX "recipes/rec_row.yaml", &f, &e), 0);
    assert_int_equal(mb_step_simulate(&f, &res, &e), 0);
    if (fabs(r->predicted / res.tokens_per_s_per_gpu - 1) > 1e-12)
        fail_msg("rec_row predicted %.9g tokens/s, the file simulates %.9g", r->predicted, res.tokens_per_s_per_gpu);
    mb_scenario_free(&f);
    assert_true(r->predicted < plain->predicted); /* full recompute replays the forward */
    const char *unused[4], *uid[4];
    assert_int_equal(mb_validate_recipes_unused(&s, unused, uid, 4), 1);
    assert_string_equal(unused[0], FIX "recipes/nobody.yaml");
    assert_string_equal(uid[0], "no_such_row");
    json_t *j = summary_json(&s);
    assert_int_equal(json_integer_value(json_object_get(j, "n_recipe_files")), 1);
    size_t k;
    json_t *row;
    int seen_file = 0;
    json_array_foreach(json_object_get(j, "rows"), k, row) {
        const char *rf = json_string_value(json_object_get(row, "recipe_file"));
        if (!strcmp(json_string_value(json_object_get(row, "id")), "rec_row")) {
            assert_non_null(rf);
            assert_string_equal(rf, FIX "recipes/rec_row.yaml");
            seen_file = 1;
        } else {
            assert_null(rf);
        }
    }
    assert_true(seen_file);
    json_decref(j);
    mb_validate_free(&s);
}

/* Recipe files that cannot be: a layout other than the row's (an error naming the CSV line and the
 * first difference), two files for one row, a single file without measured.csv_row, a folder with
 * none, a path that does not exist; a file or folder given twice counts once. mb_validate_recipe_layout
 * itself: a selective recompute of no module is none, precision labels agree whatever their case and
 * '-' / '_', and a model or system of the row's name that is another model or cluster (a file edited)
 * differs, as do LoRA adapters. */
static void test_recipe_files_bad(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    mb_validate_init(&s);
    mb_err_clear(&e);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes_bad/tp4.yaml", &e), 0);
    assert_int_equal(mb_validate_add_csv(&s, FIX "recipes.csv", &e), -1);
    mb_err_format(&e, msgbuf, sizeof msgbuf);
    assert_non_null(strstr(msgbuf, FIX "recipes.csv:2:1: row 'rec_row'"));
    assert_non_null(strstr(msgbuf, "states tp 4, the row 2"));
    mb_validate_free(&s);

    /* one file given twice (itself, and through its folder) counts once */
    mb_validate_init(&s);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes/rec_row.yaml", &e), 0);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes", &e), 0);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes/../recipes/rec_row.yaml", &e), 0);
    const char *unused[4], *uid[4];
    assert_int_equal(mb_validate_recipes_unused(&s, unused, uid, 4), 2); /* rec_row.yaml and nobody.yaml */
    mb_validate_free(&s);
    /* a folder given twice (also spelt with a trailing slash): its recipe files are known, not absent */
    mb_validate_init(&s);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes", &e), 0);
    assert_int_equal(mb_validate_add_recipes(&s, FIX "recipes/", &e), 0);
    assert_int_equal(mb_validate_recipes_unused(&s, unused, uid, 4), 2);
    assert_string_equal(unused[0], FIX "recipes/nobody.yaml");
    mb_validate_free(&s);

    static const struct {
        const char *a, *b, *want;
    } bad[] = {
        /* at the second file's value (line 21, column 12 of "  csv_row: rec_row"), naming the first's (24:12) */
        {FIX "recipes/rec_row.yaml", FIX "recipes_bad/duplicate.yaml", FIX "recipes_bad/duplicate.yaml:21:12: "
         "measured.csv_row 'rec_row' is also the row of " FIX "recipes/rec_row.yaml:24:12: one recipe file per row"},
        {FIX "recipes/plain_scenario.yaml", NULL, "no measured.csv_row"},
        {FIX "recipes_bad/no_such.yaml", NULL, "cannot open"},
        {"", NULL, "expected a scenario file or a folder of them, got an empty path"},
        {FIX "recipes_empty_row/empty.yaml", NULL, "measured.csv_row: expected the id of a CSV row, got ''"},
        {FIX "recipes_none", NULL, "no scenario file (*.yaml, *.yml) in the folder has a measured.csv_row"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mb_validate_init(&s);
        mb_err_clear(&e);
        int rc = mb_validate_add_recipes(&s, bad[i].a, &e);
        if (bad[i].b) {
            assert_int_equal(rc, 0);
            rc = mb_validate_add_recipes(&s, bad[i].b, &e);
        }
        assert_int_equal(rc, -1);
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        if (!strstr(msgbuf, bad[i].want))
            fail_msg("%s: '%s', expected '%s'", bad[i].a, msgbuf, bad[i].want);
        mb_validate_free(&s);
    }

    struct mb_scenario a, b;
    char why[200];
    memset(&a, 0, sizeof a);
    assert_int_equal(mb_scenario_load(FIX "recipes/rec_row.yaml", &a, &e), 0);
    b = a; /* shallow: only compared */
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 0);
    b.recompute = MB_RC_SELECTIVE;
    b.recompute_modules = 0;
    a.recompute = MB_RC_NONE;
    a.recompute_modules = 0;
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 0);
    b.recompute_modules = mb_recompute_module("core_attn");
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "recompute selective core_attn, the row none");
    b = a;
    b.freeze = MB_FREEZE_LANGUAGE;
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "freeze language, the row none");
    /* the same names, another model or cluster; LoRA adapters the row has and the file not */
    b = a;
    b.model.num_layers = 16;
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_non_null(strstr(why, "model llama3_8b with 16 layers"));
    assert_non_null(strstr(why, "(the same name, another model)"));
    b = a;
    b.system.nic_bw = a.system.nic_bw / 40;
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_non_null(strstr(why, "(the same name, another cluster)"));
    b = a;
    a.lora_rank = 32;
    a.lora_targets = mb_lora_target_bit("linear_qkv");
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "LoRA none, the row rank 32 on linear_qkv");
    a.lora_rank = 0;
    a.lora_targets = 0;
    b = a;
    snprintf(a.prec.label, sizeof a.prec.label, "FP8-CS");
    snprintf(b.prec.label, sizeof b.prec.label, "fp8_cs");
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 0);
    snprintf(b.prec.label, sizeof b.prec.label, "mxfp8");
    assert_int_equal(mb_validate_recipe_layout(&a, &b, why, sizeof why), 1);
    assert_string_equal(why, "precision mxfp8, the row FP8-CS");
    mb_scenario_free(&a);
}

/* LoRA rows (notes task=lora, tests/data/validate/lora.csv: one layout three times): the base
 * is frozen and the adapters are the publisher's recipe's -- NeMo AutoModel's benchmarks adapt
 * every projection at rank 16, Megatron-Bridge's performance configs linear_qkv only at rank 32
 * (csv_lora) -- so the AutoModel row is the slowest, and the SFT row has neither. */
static void test_lora_rows(void **state)
{
    (void)state;
    static struct seen_list seen;
    struct mb_val_summary s;
    validate_seen(FIX "lora.csv", &s, &seen);
    assert_int_equal(s.n_predicted, 3);
    const struct mb_scenario *a = seen_get(&seen, "lora_automodel"), *b = seen_get(&seen, "lora_bridge"),
                             *f = seen_get(&seen, "sft");
    assert_int_equal(a->freeze, MB_FREEZE_LANGUAGE);
    assert_int_equal(a->lora_rank, 16);
    assert_int_equal(a->lora_targets, MB_LORA_QKV | MB_LORA_PROJ | MB_LORA_FC1 | MB_LORA_FC2);
    assert_int_equal(b->freeze, MB_FREEZE_LANGUAGE);
    assert_int_equal(b->lora_rank, 32);
    assert_int_equal(b->lora_targets, MB_LORA_QKV);
    assert_int_equal(f->freeze, 0);
    assert_int_equal(f->lora_rank, 0);
    double ta = find_row(&s, "lora_automodel")->predicted, tb = find_row(&s, "lora_bridge")->predicted;
    assert_true(ta > 0 && ta < tb);
    mb_validate_free(&s);
    /* a quoted id with a newline is one table row: control characters become spaces */
    validate_seen(FIX "newline_id.csv", &s, &seen);
    assert_non_null(find_row(&s, "two lines"));
    mb_validate_free(&s);
    /* the same file behind a UTF-8 byte order mark (spreadsheet exports) reads the same */
    validate_seen(FIX "bom.csv", &s, &seen);
    assert_int_equal(s.n_predicted, 3);
    mb_validate_free(&s);
}

/* Rows dated before FlashAttention reached Megatron-LM (2023-01) run Megatron's
 * CoreAttention with its default dropout 0.1 (tests/data/validate/era.csv: one
 * layout three times): the 2021 row gets attention_backend local and is slower
 * than the same layout dated 2024 (the scores' memory traffic is added, nothing
 * removed); an attention_backend stated in other_recipe wins over the date. */
static void test_attention_era(void **state)
{
    (void)state;
    static struct seen_list seen;
    struct mb_val_summary s;
    validate_seen(FIX "era.csv", &s, &seen);
    assert_int_equal(s.n_predicted, 3);
    const struct mb_scenario *old = seen_get(&seen, "old_2021"), *recent = seen_get(&seen, "new_2024");
    assert_int_equal(old->attn_backend, MB_ATTN_LOCAL);
    assert_true(mb_dbl_eq(old->attn_dropout, 0.1));
    assert_int_equal(recent->attn_backend, MB_ATTN_AUTO);
    assert_int_equal(seen_get(&seen, "old_stated")->attn_backend, MB_ATTN_FUSED);
    const struct mb_val_row *ro = find_row(&s, "old_2021"), *rn = find_row(&s, "new_2024");
    assert_non_null(strstr(ro->note, "attention local, dropout 0.1"));
    assert_null(strstr(rn->note, "attention local"));
    assert_true(ro->predicted < rn->predicted);
    assert_true(mb_dbl_eq(find_row(&s, "old_stated")->predicted, rn->predicted));
    mb_validate_free(&s);
}

static void test_recipe_csv(void **state)
{
    (void)state;
    static struct seen_list seen;
    struct mb_val_summary s;
    const struct mb_scenario *sc;
    const struct mb_val_row *r;
    validate_seen(FIX "recipe.csv", &s, &seen);
    assert_int_equal(s.n_rows, 7);
    assert_int_equal(s.n_predicted, 7);

    /* MoE row: every modelled knob set; the notes ("HybridEP 8 SMs; EP comm overlap OFF;
     * CUDA graphs off") are not read */
    sc = seen_get(&seen, "moe_full");
    assert_int_equal(sc->dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(sc->dispatcher_sms, 32);
    assert_int_equal(sc->overlap_ep_comm, 1);
    assert_int_equal(sc->cuda_graph, MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS);
    assert_int_equal(sc->recompute, MB_RC_SELECTIVE);
    assert_int_equal(sc->recompute_modules, MB_RCM_MOE_ACT | MB_RCM_LAYERNORM);
    assert_int_equal(sc->grad_bytes, 2);
    assert_int_equal(sc->state_bytes, 4);
    assert_int_equal(sc->overlap_param_gather, 0);
    assert_int_equal(sc->overlap_grad_reduce, 1);
    assert_true(mb_dbl_eq(sc->capacity_factor, 1.0));
    assert_int_equal(sc->shared_expert_overlap, 0);
    r = find_row(&s, "moe_full");
    assert_non_null(strstr(r->note, "recipe: dispatcher hybridep (32 SMs), EP overlap on"));
    assert_non_null(strstr(r->note, "recipe not applied: shared_expert_overlap (no shared experts)"));
    assert_non_null(strstr(r->note, "not modelled: delay_wgrad_compute, cross-entropy fusion (impl=te), "
                                    "env: CUDA_DEVICE_MAX_CONNECTIONS=32, NVLINK_DOMAIN_SIZE=8"));
    assert_non_null(strstr(r->note, "router fusion on"));
    assert_null(strstr(r->note, "from notes"));
    assert_false(r->layout_mismatch);

    /* dense TP2 PP2 row: FP8 refined to current scaling with FP8 attention, DDP, no SP, the
     * Megatron split with embedding and loss as layers ((32 + 2) / 2 = 17 per stage) */
    sc = seen_get(&seen, "dense_pp");
    assert_string_equal(sc->prec.label, "fp8_cs");
    assert_int_equal(sc->prec.attn, MB_PREC_FP8);
    assert_int_equal(sc->cuda_graph, MB_CG_FULL_ITERATION);
    assert_int_equal(sc->recompute, MB_RC_FULL);
    assert_int_equal(sc->recompute_method, MB_RC_BLOCK);
    assert_int_equal(sc->recompute_num_layers, 2);
    assert_int_equal(sc->overlap_tp_comm, 0); /* stated, but Megatron overlaps TP comm only under SP: said */
    assert_int_equal(sc->dist_opt, 0);
    assert_int_equal(sc->sequence_parallel, 0);
    assert_int_equal(sc->overlap_grad_reduce, 0);
    assert_int_equal((int)strlen(sc->pipeline_layout), 1 + 16 + 1 + 16 + 1);
    assert_int_equal(sc->pipeline_layout[17], '|');
    r = find_row(&s, "dense_pp");
    assert_non_null(strstr(r->note, "TP comm overlap (needs sequence parallelism)"));
    assert_true(r->layout_mismatch);
    assert_non_null(strstr(r->note, "LAYOUT-MISMATCH (mbs recipe=2 vs table=1)"));
    /* CPU offloading needs pp 1 (Megatron-Core's TransformerConfig): this PP2 row keeps none, said */
    assert_non_null(strstr(r->note, "recipe not applied: cpu_offload 'activations: 4 layers (weights=False)' "
                                    "(memory.cpu_offloading_num_layers needs pp = 1"));
    assert_int_equal(sc->cpu_offload_layers, 0);
    /* FP8 weights need the distributed optimizer (Megatron's arguments.py assert): this DDP row keeps
     * BF16 weights and TE's cached copy, said */
    assert_int_equal(sc->fp8_param_gather, 0);
    assert_non_null(strstr(r->note, "fp8_param_gather (Megatron needs the distributed optimizer)"));
    assert_null(strstr(r->note, "provider-class")); /* provenance, not a knob */

    /* malformed cells: each named, the row still predicted with the layout columns' values */
    sc = seen_get(&seen, "bad_cells");
    assert_int_equal(sc->cuda_graph, 0); /* "full-iteration CUDA graph" in the notes is not read */
    assert_int_equal(sc->recompute, MB_RC_FULL); /* the recompute column */
    r = find_row(&s, "bad_cells");
    assert_int_equal(r->recipe_bad, 8);
    static const char *const named[] = {
        "ep_overlap 'sometimes'", "cuda_graph 'te:attn+warp_drive': unknown scope 'warp_drive'",
        "recompute_detail 'selective:flux_capacitor'", "fsdp_impl 'zero3'", "fp8_recipe 'quantum (q4)'",
        "ce_fusion 'maybe'", "mtp_layers 'one'",
        ("other_recipe 'overlap_grad_reduce=maybe; attention_backend=fused': "
         "overlap_grad_reduce: expected =True or =False")};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (!strstr(r->note, named[i]))
            fail_msg("note lacks \"%s\": %s", named[i], r->note);
    assert_non_null(strstr(r->note, "not determinable (simulator default): dispatcher, tp_overlap, cpu_offload"));

    /* EP overlap with pp 2 and no vpp cannot run: said; the explicit layout applies; a layout with
     * the wrong stage count is taken back with mb_scenario_check's message */
    sc = seen_get(&seen, "moe_pp");
    assert_int_equal(sc->overlap_ep_comm, 0);
    assert_int_equal(sc->dispatcher, MB_DISP_DEEPEP);
    assert_int_equal(sc->dispatcher_sms, 20);
    assert_int_equal(sc->pipeline_layout[24], '|');
    r = find_row(&s, "moe_pp");
    assert_non_null(strstr(r->note, "recipe not applied: EP overlap (pp > 1 without vpp)"));
    assert_non_null(strstr(r->note, "force_balance=False (the routing imbalance is not stated: simulated balanced)"));
    sc = seen_get(&seen, "moe_pp_badlayout");
    assert_string_equal(sc->pipeline_layout, "");
    r = find_row(&s, "moe_pp_badlayout");
    assert_non_null(strstr(r->note, "recipe not applied: pp_layout 'Et*3|(t*4|)*10tL' (pipeline_layout has 12 "
                                    "stages; pp*vpp = 2)"));

    /* TFLOP/s-only rows: SC21 converted to tokens/s (hand value in test_flop_conventions),
     * an unknown source compared as TFLOP/s and said so */
    r = find_row(&s, "sc21_tflops");
    assert_string_equal(r->metric, MB_VAL_TOKENS);
    assert_string_equal(r->flops_conv, "sc21");
    assert_true(mb_dbl_eq(r->measured_tflops, 137));
    assert_true(fabs(r->measured - 9287.934979) < 1e-3);
    sc = seen_get(&seen, "sc21_tflops");
    assert_int_equal(sc->dist_opt, 0);
    r = find_row(&s, "unknown_tflops");
    assert_string_equal(r->metric, MB_VAL_TFLOPS);
    assert_non_null(strstr(r->note, "TFLOP/s compared in mbsim's FLOP count (the source's FLOP convention is not known)"));

    /* summary: LAYOUT-MISMATCH rows apart, rows with bad cells counted, per-convention MAPE */
    assert_int_equal(s.n_layout_mismatch, 1);
    assert_true(mb_dbl_eq(s.mape_layout_mismatch_pct, fabs(find_row(&s, "dense_pp")->err_pct)));
    assert_int_equal(s.n_recipe_bad, 1);
    assert_int_equal(s.n_by_flops_conv, 1);
    assert_string_equal(s.by_flops_conv[0].name, "sc21");
    double sg[7];
    for (size_t i = 0; i < 7; i++)
        sg[i] = s.rows[i].err_pct;
    for (size_t i = 0; i < 7; i++) /* insertion sort: the signed median is the 4th */
        for (size_t j = i; j > 0 && sg[j] < sg[j - 1]; j--) {
            double t = sg[j];
            sg[j] = sg[j - 1];
            sg[j - 1] = t;
        }
    assert_true(mb_dbl_eq(s.median_err_pct, sg[3]));
    mb_validate_free(&s);
}

/* Step 12: FLOP conventions against hand calculations from the publishers' formulas.
 *
 * SC21 (Narayanan et al., arXiv:2104.04473, appendix), GPT-1.7B of Table 1:
 * B = 512, s = 2048, l = 24, h = 2304, V = 51200, activation recomputation on:
 *   F = 96 B s l h^2 (1 + s/6h + V/16lh)
 *     = 96 * 512 * 2048 * 24 * 2304^2 * (1 + 2048/13824 + 51200/884736)
 *     = 1.2824704e16 * (1 + 0.1481481 + 0.0578704) = 1.5466830e16 FLOP per step;
 *   without recomputation 72 B s l h^2 (1 + s/6h + V/12lh) = 1.1785665e16.
 * 137 TFLOP/s/GPU on 32 GPUs: t = F / (137e12 * 32) = 3.5281 s; tokens/s/GPU
 *   = 512 * 2048 / (3.5281 * 32) = 9287.93.
 *
 * Megatron-LM 2024 (training.py at 0b981f9c5305), Mixtral 8x7B: B = 256, s = 4096, l = 32,
 * h = 4096, n = 32, g = 8, d = 128, f = 14336, k = 2, SwiGLU (c = 3/2), V = 32000:
 *   F = 12 B s l h^2 [(1 + g/n + s/h) nd/h + (f/h) k c + V/2lh]
 *     = 12 * 256 * 4096 * 32 * 4096^2 * [2.25 + 10.5 + 0.1220703125] = 8.6955e16. */
static void test_flop_conventions(void **state)
{
    (void)state;
    struct mb_model m;
    struct mb_err e;
    char why[160];
    mb_err_clear(&e);
    assert_int_equal(mb_model_load("gpt_sc21_1.7b", &m, &e), 0);
    double hand = 96.0 * 512 * 2048 * 24 * 2304.0 * 2304.0 * (1 + 2048.0 / 13824 + 51200.0 / 884736);
    double F = mb_validate_publisher_flops(MB_VAL_FLOPS_SC21, &m, 512, 2048, 1, why, sizeof why);
    assert_true(fabs(F / hand - 1) < 1e-12);
    assert_true(fabs(F / 1.5466830e16 - 1) < 1e-7);
    double hand72 = 72.0 * 512 * 2048 * 24 * 2304.0 * 2304.0 * (1 + 2048.0 / 13824 + 51200.0 / (12.0 * 24 * 2304));
    assert_true(fabs(mb_validate_publisher_flops(MB_VAL_FLOPS_SC21, &m, 512, 2048, 0, why, sizeof why) / hand72 - 1) <
                1e-12);
    double tok = mb_validate_tflops_to_tokens(137, F, 512, 2048);
    assert_true(fabs(tok - 512.0 * 2048 / ((F / (137e12 * 32)) * 32)) < 1e-9);
    assert_true(fabs(tok - 9287.93) < 0.01);
    assert_true(mb_dbl_eq(mb_validate_tflops_to_tokens(137, 0, 512, 2048), 0));
    /* megatron-core: mbsim's own count, so a Bridge row's ratio is unchanged */
    assert_true(mb_dbl_eq(mb_validate_publisher_flops(MB_VAL_FLOPS_MCORE, &m, 512, 2048, 1, why, sizeof why),
                          mb_model_flops(&m, 512.0 * 2048, 512.0 * 2048 * 2048)));
    assert_true(mb_dbl_eq(mb_validate_publisher_flops(MB_VAL_FLOPS_UNKNOWN, &m, 512, 2048, 1, why, sizeof why), 0));
    assert_string_equal(why, "the source's FLOP convention is not known");
    mb_model_free(&m);

    assert_int_equal(mb_model_load("mixtral_8x7b", &m, &e), 0);
    hand = 12.0 * 256 * 4096 * 32 * 4096.0 * 4096.0 * (2.25 + 10.5 + 32000.0 / (2.0 * 32 * 4096));
    F = mb_validate_publisher_flops(MB_VAL_FLOPS_MLM_2024, &m, 256, 4096, 0, why, sizeof why);
    assert_true(fabs(F / hand - 1) < 1e-12);
    assert_true(fabs(F / 8.6955e16 - 1) < 1e-4);
    /* SC21's formula does not describe a SwiGLU MoE: 0, and why */
    assert_true(mb_dbl_eq(mb_validate_publisher_flops(MB_VAL_FLOPS_SC21, &m, 256, 4096, 0, why, sizeof why), 0));
    assert_string_equal(why, "the SC21 formula covers GPT layers (4h GeLU MLP, MHA) only");
    mb_model_free(&m);
    assert_int_equal(mb_model_load("deepseek_v3", &m, &e), 0); /* MLA, MTP, dense first layers */
    assert_true(mb_dbl_eq(mb_validate_publisher_flops(MB_VAL_FLOPS_MLM_2024, &m, 256, 4096, 0, why, sizeof why), 0));
    mb_model_free(&m);

    /* sources, as the public CSV writes them */
    assert_int_equal(mb_validate_flop_convention("NVIDIA/Megatron-LM@50a4b5fa0280:images/cases_april2021.png (README "
                                                 "table, April 2021) + ...; paper arXiv:2104.04473 Table 1"),
                     MB_VAL_FLOPS_SC21);
    assert_int_equal(mb_validate_flop_convention("NVIDIA/Megatron-LM@c230e0d7c298:megatron/core/transformer/moe/README.md"),
                     MB_VAL_FLOPS_MLM_2024);
    assert_int_equal(mb_validate_flop_convention("NVIDIA-NeMo/Megatron-Bridge@067f987df03b:skills/x/card.yaml"),
                     MB_VAL_FLOPS_MCORE);
    assert_int_equal(mb_validate_flop_convention("a blog post"), MB_VAL_FLOPS_UNKNOWN);
    assert_int_equal(mb_validate_flop_convention(NULL), MB_VAL_FLOPS_UNKNOWN);
    assert_string_equal(mb_validate_flop_convention_name(MB_VAL_FLOPS_MLM_2024), "megatron-lm-2024");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_notes),
        cmocka_unit_test(test_recipe_cells),
        cmocka_unit_test(test_recipe_csv),
        cmocka_unit_test(test_lora_rows),
        cmocka_unit_test(test_attention_era),
        cmocka_unit_test(test_flop_conventions),
        cmocka_unit_test(test_recipe_files),
        cmocka_unit_test(test_recipe_files_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
