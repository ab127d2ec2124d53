/*
 * test_scenario.c -- scenario loader: shipped scenarios load with the values
 * they state, every bad fixture in tests/data/scenario/ fails with its exact
 * "file:line:col: message", precision labels parse, and mb_scenario_check on a
 * hand-built scenario gives the same layout messages without a position.
 *
 * Run from the source tree (ctest sets WORKING_DIRECTORY and MBSIM_DATA_DIR),
 * so fixture paths and the paths in messages are relative to it.
 */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mb_calib.h"
#include "mb_megatron_rules.h"
#include "mb_scenario.h"

#define FIX "tests/data/scenario/"

static char msgbuf[1024];

/* Load and return the formatted error ("" on success). */
static const char *load_err(const char *path, struct mb_scenario *s, int *rc)
{
    struct mb_err e;
    mb_err_clear(&e);
    *rc = mb_scenario_load(path, s, &e);
    if (*rc == 0) {
        assert_int_equal(e.count, 0); /* no error left pending on success */
        return "";
    }
    mb_err_format(&e, msgbuf, sizeof msgbuf);
    return msgbuf;
}

static void load_ok(const char *path, struct mb_scenario *s)
{
    int rc;
    const char *m = load_err(path, s, &rc);
    if (rc)
        fail_msg("%s", m);
}

/* Step 1: each shipped scenario loads, with the values it states. */
static void test_headline(void **state)
{
    (void)state;
    struct mb_scenario s;
    load_ok("scenarios/gb200_ep32.yaml", &s);
    assert_string_equal(s.name, "gb200_ep32");
    assert_string_equal(s.model.name, "qwen3_vl_30b_a3b");
    assert_string_equal(s.system.name, "gb200_nvl72");
    assert_int_equal(s.gpus, 32);
    assert_int_equal(s.strategy, MB_STRAT_FSDP);
    assert_int_equal(s.ep, 32);
    assert_int_equal(s.dp, 32); /* 32 / (tp1 * pp1 * cp1) */
    assert_int_equal(s.dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(s.dispatcher_sms, 32);
    assert_string_equal(s.prec.label, "bf16");
    assert_int_equal(s.seq_length, 4096);
    assert_int_equal(s.global_batch_size, 256);
    assert_int_equal(s.micro_batch_size, 1);
    assert_int_equal(s.images.dist, MB_IMG_UNIFORM);
    assert_int_equal(s.images.per_sample_min, 1);
    assert_int_equal(s.images.per_sample_max, 2);
    assert_int_equal(s.images.side_min, 384);
    assert_int_equal(s.images.side_max, 1280);
    assert_int_equal(s.recompute, MB_RC_NONE);
    assert_int_equal(s.sequence_parallel, 0); /* tp = 1 */
    assert_true(s.overlap_grad_reduce && s.overlap_param_gather && s.overlap_ep_comm);
    /* real samples: text 64..1536 tokens, packed */
    assert_int_equal(s.text_min, 64);
    assert_int_equal(s.text_max, 1536);
    assert_int_equal(s.packed, 1);
    mb_scenario_free(&s);
}

static void test_shipped(void **state)
{
    (void)state;
    struct mb_scenario s;

    load_ok("scenarios/h100_llama3_70b_3d.yaml", &s);
    assert_int_equal(s.tp, 4);
    assert_int_equal(s.pp, 8);
    assert_int_equal(s.vpp, 5);
    assert_int_equal(s.dp, 2);
    assert_int_equal(s.sequence_parallel, 1);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_int_equal(s.prec.gemm, MB_PREC_FP8);
    assert_true(mb_dbl_eq(s.meas_tokens_per_s_per_gpu, 1602));
    assert_true(mb_dbl_eq(s.meas_model_tflops_per_gpu, 719));
    assert_non_null(strstr(s.meas_source, "mbridge_2511_llama3_70b_h100_fp8cs_64"));
    mb_scenario_free(&s);

    load_ok("scenarios/gb200_qwen3_vl_235b_3d.yaml", &s);
    assert_int_equal(s.pp, 2);
    assert_int_equal(s.ep, 32);
    assert_int_equal(s.dp, 32);
    assert_int_equal(s.recompute, MB_RC_SELECTIVE);
    assert_int_equal(s.recompute_modules, MB_RCM_CORE_ATTN | MB_RCM_MOE_ACT);
    mb_scenario_free(&s);

    load_ok("scenarios/h100_qwen3_30b_a3b_ep8.yaml", &s);
    assert_int_equal(s.ep, 8);
    assert_int_equal(s.vpp, 12);
    assert_int_equal(s.dp, 8);
    assert_string_equal(s.prec.label, "fp8");
    assert_true(mb_dbl_eq(s.meas_tokens_per_s_per_gpu, 9058));
    mb_scenario_free(&s);

    /* inline model, CSV-style precision label, full-iteration graphs, full recompute (which Megatron-Core
     * allows with full-iteration graphs only) */
    load_ok(FIX "good_inline_model.yaml", &s);
    assert_string_equal(s.model.name, "tiny");
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_int_equal(s.cuda_graph, MB_CG_FULL_ITERATION);
    assert_int_equal(s.recompute, MB_RC_FULL);
    assert_int_equal(s.recompute_method, MB_RC_BLOCK);
    assert_int_equal(s.recompute_num_layers, 1);
    assert_int_equal(s.dp, 2);
    mb_scenario_free(&s);
}

/* Step 2: defaults are the documented ones. */
static void test_defaults(void **state)
{
    (void)state;
    struct mb_scenario s;
    mb_scenario_defaults(&s);
    assert_string_equal(s.prec.label, "bf16");
    assert_int_equal(s.micro_batch_size, 1);
    assert_int_equal(s.tp * s.pp * s.vpp * s.cp * s.ep * s.etp, 1);
    assert_int_equal(s.strategy, MB_STRAT_3D);
    assert_int_equal(s.dispatcher, MB_DISP_ALLTOALL);
    assert_int_equal(s.routing, MB_ROUTE_BALANCED);
    assert_int_equal(s.routing_seed, 1);
    assert_int_equal(s.dispatcher_sms, 24);
    assert_int_equal(s.recompute, MB_RC_NONE);
    assert_int_equal(s.cuda_graph, 0);
    assert_int_equal(s.freeze, 0);
    assert_int_equal(s.overlap_grad_reduce, 1);
    assert_int_equal(s.overlap_param_gather, 1);
    assert_int_equal(s.overlap_tp_comm, 0);
    assert_int_equal(s.overlap_ep_comm, 0);
    assert_int_equal(s.mock, 0);
    assert_int_equal(s.images.dist, MB_IMG_NONE);
}

/* Step 3 (bad input): every fixture fails with its exact message. */
static const struct {
    const char *file, *msg;
} bad[] = {
    {"bad_missing_schema_version.yaml",
     "1:1: missing required key 'schema_version' in scenario (this mbsim reads schema_version 1 to 2)"},
    {"bad_schema_version_3.yaml", "1:17: unsupported schema_version '3'; this mbsim reads schema_version 1 to 2"},
    {"bad_unknown_top_key.yaml",
     "10:1: unknown key 'optimiser' in scenario; expected one of: schema_version, name, model, system, "
     "precision, data, parallel, moe, recompute, cuda_graph, freeze, peft, overlap, optimizer, training, memory, collectives, calibration, measured"},
    {"bad_unknown_nested_key.yaml",
     "12:3: unknown key 'pipeline' in parallel; expected one of: strategy, tp, pp, vpp, cp, ep, etp, "
     "pipeline_layout, cp_comm_type, fsdp_impl, fsdp_reshard_after_forward, fsdp_sharded_dtype, fsdp_requires_gradient_sync, "
     "fsdp_reshard_after_backward, fsdp_double_buffer, fsdp_keep_fp8_transpose_cache, fsdp_communication_unit_size, sequence_parallel"},
    {"bad_duplicate_key.yaml", "12:3: duplicate key 'tp' (first defined at line 11)"},
    {"bad_wrong_type.yaml", "11:7: parallel.tp: expected an integer, got 'four'"},
    {"bad_enum.yaml",
     "13:15: moe.dispatcher: unknown value 'nccl'; expected one of: alltoall, allgather, hybridep, deepep"},
    {"bad_unit.yaml", "11:16: measured.step_time_s: bad unit 'hours' in '5.2 hours': expected a time with a unit "
                      "(ns, us, ms, s); a bare number is in s"},
    {"bad_peak_memory.yaml", "11:20: measured.peak_memory_gib: expected a size such as '1 GB', got 'abc'; a bare "
                             "number is in GiB"},
    {"bad_tp_pp_cp_gpus.yaml", "11:3: tp*pp*cp = 12 does not divide gpus = 16"},
    {"bad_ep_experts.yaml", "11:7: ep = 5 does not divide num_experts = 128 of model qwen3_30b_a3b"},
    {"bad_images_seq.yaml",
     "25:5: data.images: a sample can hold 2 images of up to 1600 LLM tokens each (3200 tokens), more than "
     "seq_length = 64"},
    {"bad_kv_tp.yaml", "21:7: tp = 16 does not divide num_kv_heads = 8 (query groups) of model llama3_70b"},
    {"bad_text_mock.yaml", "10:16: data.text_tokens describes real samples; mock data fills whole sequences"},
    {"bad_gbs.yaml",
     "9:22: global_batch_size = 100 is not divisible by micro_batch_size*dp = 16 (micro_batch_size = 1, dp = 16)"},
    {"bad_inline_model.yaml",
     "7:3: unknown key 'ffn_hiden' in model; expected one of: name, source, num_layers, hidden, ffn_hidden, "
     "num_heads, num_kv_heads, head_dim, vocab, tied_embeddings, activation, norm, position_embedding_type, "
     "qk_norm, qkv_bias, attention_output_gate, mtp_layers, pattern, moe, mla, sliding_window, gdn, mamba, vision"},
    {"bad_vlm_no_images.yaml",
     "8:3: model qwen3_vl_30b_a3b has a vision encoder: give data.images or data.mock: true"},
    {"bad_null_value.yaml", "11:3: key 'tp' in parallel has no value; give one or leave the key out"},
    {"bad_calib_gpu.yaml", "11:10: calibration.table is a table for H100, but the system's GPUs are GB200"},
    {"bad_ddp_fsdp.yaml",
     "13:16: optimizer.distributed: false needs strategy 3d (FSDP shards the optimizer state by construction)"},
    {"bad_pad_no_capacity.yaml", "13:33: moe.pad_expert_input_to_capacity needs moe.capacity_factor (Megatron "
                                 "--moe-pad-expert-input-to-capacity pads to the expert capacity)"},
    {"bad_nvls_a100.yaml",
     "12:15: collectives.all_reduce: nvls needs NVLink SHARP (NVSwitch gen3+); system dgx_a100 has none"},
    {"bad_nvls_dp_local.yaml",
     "8:27: collectives.all_reduce: nvls needs 2 or more GPUs of the DP group in one NVLink domain; with tp*cp = 8 "
     "on 8-GPU domains each has 1"},
    /* an FSDP flavour's setting on a layout without it does nothing: refused */
    {"bad_fsdp_impl_3d.yaml", "12:14: parallel.fsdp_impl applies to strategy fsdp only (this scenario is 3d)"},
    {"bad_reshard_megatron_fsdp.yaml",
     "12:31: parallel.fsdp_reshard_after_forward applies to strategy fsdp with fsdp_impl torch_fsdp2 only "
     "(PyTorch FSDP2's reshard_after_forward)"},
    {"bad_states_fsdp2.yaml",
     "14:11: optimizer.states applies to Megatron's optimizers; under FSDP2 torch.optim.Adam keeps its moments "
     "in the sharded parameters' dtype (parallel.fsdp_sharded_dtype)"},
    {"bad_policy_granularity.yaml",
     "12:11: recompute.policy torchtitan_op excludes recompute.granularity selective (torchtitan's selective "
     "checkpointing and Megatron-Core's recompute are two frameworks' mechanisms)"},
    {"bad_policy_every.yaml",
     "12:10: recompute.every applies to policy torchtitan_layer only (torchtitan's integer selective_ac_option)"},
    {"bad_policy_moe.yaml",
     "13:11: recompute.policy torchtitan_op is modelled for dense softmax-attention layers only; qwen3_30b_a3b "
     "has MoE layers"},
    {"bad_loss_chunks_tp.yaml",
     "13:16: training.loss_chunks needs tp = 1 (tp is 2): the fused linear cross-entropy (Liger-Kernel) is not "
     "vocab-parallel"},
    {"bad_sharded_dtype_megatron_fsdp.yaml",
     "12:23: parallel.fsdp_sharded_dtype applies to strategy fsdp with fsdp_impl torch_fsdp2 only "
     "(Megatron keeps fp32 main weights in its optimizer)"},
    {"bad_fsdp_double_buffer_fsdp2.yaml",
     "13:23: parallel.fsdp_double_buffer applies to strategy fsdp with fsdp_impl megatron_fsdp only "
     "(Megatron-FSDP's --fsdp-double-buffer)"},
    /* MoE settings that did nothing: dispatcher SMs without a dispatcher kernel, overlap without shared experts */
    {"bad_dispatcher_sms_alltoall.yaml",
     "16:19: moe.dispatcher_sms applies to the hybridep and deepep dispatchers (their kernels occupy SMs); "
     "moe.dispatcher is alltoall, whose NCCL collectives use none"},
    {"bad_shared_overlap_no_shared.yaml",
     "15:26: moe.shared_expert_overlap: model qwen3_30b_a3b has no shared experts to overlap"},
    /* CPU activation offloading as Megatron-Core allows it (transformer_config.py) */
    /* Megatron-Core's own checks, mirrored (mb_megatron_rules.h); [] is the whole-layer graph */
    {"bad_full_recompute_graph.yaml",
     "13:16: recompute.granularity full needs cuda_graph.modules [full_iteration] or no CUDA graphs: Megatron-Core "
     "supports full recompute only with full-iteration CUDA graphs, not per-layer ones (Megatron-LM "
     "megatron/core/transformer/transformer_config.py:2854-2858 @d98e8a64dd)"},
    {"bad_attn_flash2_b200.yaml", "14:22: training.attention_backend flash2: its rates are published for Hopper "
                                  "GPUs (H100, H200) only and the system's GPU is B200; use fused or flash (the "
                                  "table's curves)"},
    {"bad_ep_overlap_ep1.yaml", "14:12: overlap.ep_comm needs expert parallelism (parallel.ep > 1); ep = 1 "
                                "(Megatron-LM megatron/core/transformer/transformer_config.py:3013-3015 @d98e8a64dd)"},
    {"bad_offload_pp.yaml", "13:30: memory.cpu_offloading_num_layers needs pp = 1 (Megatron-Core: no pipeline "
                            "parallelism with CPU offloading); pp = 2"},
    {"bad_offload_layers.yaml", "10:37: memory.cpu_offloading_num_layers = 32: Megatron offloads fewer layers "
                                "than the model has (32)"},
    /* a quoted number is a string: YAML's types, not a guess */
    {"bad_quoted_bool.yaml", "10:31: memory.expandable_segments: expected true or false, got the quoted string "
                             "\"true\" (write it without quotes)"},
    {"bad_quoted_number.yaml",
     "4:34: system.gpus: expected an integer, got the quoted string \"8\" (write the number without quotes)"},
    /* a list key's name twice is a typo, not one more setting */
    {"bad_flag_twice.yaml", "6:20: freeze: 'language' is listed twice (or with a name of the same meaning)"},
    /* vpp without pp is the error, not the split it cannot make (vpp 3 does not split 32 layers) */
    {"bad_vpp_no_pp.yaml", "6:24: vpp = 3 requires pp > 1"},
    /* LoRA: adapters on a frozen base; targets only with a rank */
    {"bad_lora_unfrozen.yaml",
     "10:19: peft.lora_rank = 16: LoRA trains adapters on a frozen base model; add `freeze: [language]`"},
    {"bad_lora_targets.yaml", "10:22: peft.lora_targets needs peft.lora_rank > 0"},
    /* Megatron's asserts on FP8 weights and the deferred output-layer wgrad */
    {"bad_fp8pg_bf16.yaml", "11:30: training.fp8_param_gather needs an FP8 or FP4 precision (this scenario is "
                            "bf16): Megatron holds and gathers the weights in the recipe's format"},
    {"bad_fp8pg_ddp.yaml", "12:30: training.fp8_param_gather needs the distributed optimizer (optimizer.distributed: "
                           "true) or FSDP: Megatron gathers the quantized weights after the sharded update"},
    {"bad_defer_pp1.yaml", "10:42: overlap.defer_embedding_wgrad_compute needs pipeline parallelism (pp > 1) and the "
                           "3d strategy: it defers the last stage's output-layer wgrad to the pipeline flush"},
    {"bad_defer_limit_alone.yaml",
     "11:33: overlap.wgrad_deferral_limit = 22 applies with overlap.defer_embedding_wgrad_compute: true only"},
    {"bad_calib_dir.yaml",
     "11:10: calibration.table 'dir_not_table' is a directory; expected a calibration table file"},
    /* the L40S preset describes a node no shipped table prices */
    {"bad_uncalibrated_l40s.yaml",
     "5:11: system 'l40s_pcie8' has L40S GPUs, which have no calibration table (calibration/tables/L40S.yaml): "
     "mbsim cannot price their kernels; give one with calibration: {table: FILE} (docs/calibration.md)"},
    /* a number too large for any integer is out of the key's range, not "no integer" */
    /* MX / NVFP4 block scaling on a Hopper part */
    {"bad_mxfp8_h100.yaml", "6:12: precision mxfp8 needs Blackwell tensor cores (MX/NVFP4 block scaling, compute "
                            "capability 10.0+); system dgx_h100 has H100 GPUs: use fp8_blockwise, fp8_cs or fp8"},
    {"bad_tp_huge.yaml", "12:7: parallel.tp = 99999999999999999999 is out of range [1, 65536]"},
    /* 32 layers over pp*vpp = 14: neither 32 nor 32 + 2 divides, so Megatron-Core cannot split them */
    {"bad_uneven_vpp.yaml",
     "12:8: num_layers = 32 of model llama3_8b does not split over pp*vpp = 14 virtual stages (pp = 2, vpp = 7): "
     "Megatron-Core splits num_layers evenly, or num_layers + 2 with the embedding and the loss counted as a layer "
     "each (account_for_embedding/loss_in_pipeline_split); set parallel.pipeline_layout for another split"},
};

static void test_bad_fixtures(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256], want[1024];
        struct mb_scenario s;
        int rc;
        snprintf(path, sizeof path, FIX "%s", bad[i].file);
        snprintf(want, sizeof want, "%s:%s", path, bad[i].msg);
        const char *got = load_err(path, &s, &rc);
        assert_int_equal(rc, -1);
        assert_string_equal(got, want);
        mb_scenario_free(&s); /* safe after a failed load */
    }
}

/* training.attention_backend flash2 is checked against the system's GPU once it is known: the H100
 * copy of bad_attn_flash2_b200.yaml loads (before the fix the check ran with no GPU and refused H100). */
static void test_attn_backend_gpu(void **state)
{
    (void)state;
    struct mb_scenario s;
    load_ok(FIX "attn_flash2_h100.yaml", &s);
    assert_int_equal(s.attn_backend, MB_ATTN_FLASH2);
    assert_string_equal(s.system.gpu, "H100");
    mb_scenario_free(&s);
}

/* Step 3b: settings that are valid but change nothing load, with one
 * "file:line:col: warning: ..." line each at the key's value (issue 17 item 7);
 * tests/cli/warn_inert.sh checks that the report is the same without them.
 * The lines are the fixtures' own. Shipped scenarios warn about nothing. */
static const struct {
    const char *file, *warnings;
} warn[] = {
    {"warn_dispatcher_sms_hybridep.yaml",
     ":19:19: warning: moe.dispatcher_sms = 16 changes nothing here: mbsim charges the dispatcher's SMs to the "
     "compute running beside it, which needs overlap.ep_comm: true (off), and HybridEP's buffers do not depend on "
     "it; the SM count's effect on the dispatch's own speed is not modelled\n"},
    {"warn_ep1.yaml",
     ":14:19: warning: moe.dispatcher_sms changes nothing with ep = 1: no DeepEP kernel runs without expert "
     "parallelism\n"
     "@:15:26: warning: moe.shared_expert_overlap changes nothing with ep = 1: mbsim overlaps the shared experts "
     "with the EP dispatch, and there is none\n"
     "@:17:12: warning: overlap.tp_comm changes nothing with tp = 1: there is no TP communication\n"},
    {"warn_training_inert.yaml",
     ":16:22: warning: parallel.sequence_parallel: true changes nothing with tp = 1 (Megatron-LM turns it off "
     "too)\n"
     "@:19:30: warning: training.cross_entropy_fusion_impl changes nothing: it selects the fused cross-entropy, and "
     "training.cross_entropy_fusion is false\n"
     "@:20:22: warning: training.attention_dropout changes nothing with a fused attention backend: the kernel drops "
     "in-kernel, which mbsim does not price (it is a kernel of its own with attention_backend unfused or local)\n"},
    /* the value's column: two spaces of indent + "key: " (skew 8, seed 8, capacity_factor 19,
     * hybridep_permute_fusion 27), then 1 */
    {"warn_moe_routing.yaml",
     ":19:9: warning: moe.skew changes nothing with moe.routing balanced: it shapes skewed routing only\n"
     "@:20:9: warning: moe.seed changes nothing with moe.routing balanced: it seeds skewed routing only\n"
     "@:21:20: warning: moe.capacity_factor = 1.25 changes nothing with moe.routing balanced and without "
     "moe.pad_expert_input_to_capacity: no expert gets more than its balanced share, so no token is dropped, and "
     "no buffer is padded\n"
     "@:22:28: warning: moe.hybridep_permute_fusion changes nothing with moe.dispatcher alltoall: it fuses the "
     "permute into HybridEP's dispatch and combine only\n"},
    /* cp_comm_type: 2 + 14 -> col 17 on line 16; mock: 2 + 6 -> col 9 on line 13 */
    {"warn_cp_mock.yaml",
     ":16:17: warning: parallel.cp_comm_type changes nothing with cp = 1: there is no context-parallel "
     "communication\n"
     "@:13:9: warning: data.mock: true changes nothing: model llama3_8b has no vision encoder, and mock data "
     "differs from real data only in having no images\n"},
    /* a LoRA target the model lacks (lora_targets: 2 + 14 -> col 17); bias_activation_fusion on a
     * dense model (2 + 24 -> col 27) */
    {"warn_peft.yaml",
     ":13:17: warning: peft.lora_targets: model llama3_8b has no linear_kv_up_proj layer: no adapter there "
     "(adapters sit on the dense layers' linears; MoE experts, the router and the vision tower carry none)\n"
     "@:15:27: warning: training.bias_activation_fusion: false changes nothing: model llama3_8b has no experts "
     "(mbsim prices the unfused activation of MoE experts only)\n"},
    /* peak_memory_after_iteration: 2 + 27 + 2 -> col 32 on line 14 */
    {"warn_measured_iteration.yaml",
     ":14:32: warning: measured.peak_memory_after_iteration changes nothing: it says when "
     "measured.peak_memory_gib was logged, and there is none\n"},
    /* a schema-1 file that states cross_entropy_fusion and leaves hidden_dropout out: one warning at the
     * version's value (1 + "schema_version: " -> col 17) */
    {"warn_schema1.yaml",
     ":1:17: warning: training.hidden_dropout not set: schema_version 1 defaults it to 0.1 (0 since "
     "schema_version 2: schema 2 defaults to 0 (Megatron-Bridge's model providers); schema 1 kept the residual "
     "dropout masks, as at Megatron-LM's 0.1); state it to keep this meaning, or move the file to schema_version "
     "2\n"},
    {"warn_dense_moe_keys.yaml",
     ":15:15: warning: moe.dispatcher changes nothing: model llama3_8b has no experts (dense)\n"
     "@:16:20: warning: moe.capacity_factor changes nothing: model llama3_8b has no experts (dense)\n"},
};

static void test_warnings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof warn / sizeof warn[0]; i++) {
        char path[256], want[2048];
        struct mb_scenario s;
        snprintf(path, sizeof path, FIX "%s", warn[i].file);
        /* "@" in the table stands for the path at the start of each further line */
        size_t k = (size_t)snprintf(want, sizeof want, "%s", path);
        for (const char *p = warn[i].warnings; *p && k + sizeof path < sizeof want; p++)
            k += (size_t)snprintf(want + k, sizeof want - k, "%s", *p == '@' ? path : (char[2]){*p, 0});
        load_ok(path, &s);
        assert_string_equal(s.warnings, want);
        mb_scenario_free(&s);
    }
    static const char *const shipped[] = {"scenarios/gb200_ep32.yaml", "scenarios/gb200_qwen3_vl_235b_3d.yaml",
                                          "scenarios/h100_llama3_70b_3d.yaml", "scenarios/h100_qwen3_30b_a3b_ep8.yaml"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        struct mb_scenario s;
        load_ok(shipped[i], &s);
        assert_string_equal(s.warnings, "");
        mb_scenario_free(&s);
    }
    glob_t g; /* the measured experiments too */
    assert_int_equal(glob("scenarios/measured/*.yaml", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 12);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct mb_scenario s;
        load_ok(g.gl_pathv[i], &s);
        if (s.warnings[0])
            fail_msg("%s warns: %s", g.gl_pathv[i], s.warnings);
        mb_scenario_free(&s);
    }
    globfree(&g);
}

/* Schema versions (mb_schema.h): a schema-1 file that leaves out a key whose default changed in schema 2
 * is read with the schema-1 default (docs/scenario-format.md, Schema versions: cross-entropy unfused,
 * hidden dropout 0.1), the same file as schema 2 with the key table's defaults (fused, 0); a stated value
 * wins over either; and the writer writes the current schema, so a written schema-1 scenario keeps its
 * meaning as schema 2 (the old defaults are written as the values they now are). */
static void test_schema_old_defaults(void **state)
{
    (void)state;
    struct mb_scenario s1, s2, sw, back;
    load_ok(FIX "schema1_old_defaults.yaml", &s1);
    assert_int_equal(s1.ce_fusion, 0);
    assert_true(s1.hidden_dropout == 0.1);
    assert_non_null(strstr(s1.warnings, "training.cross_entropy_fusion not set: schema_version 1 defaults it to "
                                        "false"));
    assert_non_null(strstr(s1.warnings, "training.hidden_dropout not set"));
    load_ok(FIX "schema2_defaults.yaml", &s2);
    assert_int_equal(s2.ce_fusion, 1);
    assert_true(s2.hidden_dropout == 0);
    assert_string_equal(s2.warnings, "");
    load_ok(FIX "warn_schema1.yaml", &sw);
    assert_int_equal(sw.ce_fusion, 1);
    char path[] = "/tmp/mbsim_schema_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(mb_scenario_write_yaml(&s1, f), 0);
    fclose(f);
    load_ok(path, &back);
    remove(path);
    assert_int_equal(back.ce_fusion, 0);
    assert_true(back.hidden_dropout == 0.1);
    assert_string_equal(back.warnings, "");
    mb_scenario_free(&back);
    mb_scenario_free(&sw);
    mb_scenario_free(&s2);
    mb_scenario_free(&s1);
}

/* Step 3c: model and system references: a path is taken from the scenario's
 * folder, without a "./" in messages ("././m.yaml: cannot open" before);
 * a shipped name and an absolute path stay as written. */
static void test_refs(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {".", "./m.yaml", "m.yaml"},     {".", "m.yaml", "m.yaml"},           {"d", "./m.yaml", "d/m.yaml"},
        {"d", "m.yaml", "d/m.yaml"},     {"d", "../m.yaml", "d/../m.yaml"},   {"d", "llama3_8b", "llama3_8b"},
        {"d", "/abs/m.yaml", "/abs/m.yaml"}, {"d", "././m.yaml", "d/m.yaml"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = mb_scenario_ref(cases[i][0], cases[i][1]);
        assert_string_equal(r, cases[i][2]);
        mb_free(r);
    }
}

/* Step 4: precision labels, scenario spellings and CSV spellings. */
static void test_precision(void **state)
{
    (void)state;
    static const struct {
        const char *in, *label;
        enum mb_prec gemm;
        int quantize;
    } t[] = {
        {"bf16", "bf16", MB_PREC_BF16, 0},          {"BF16", "bf16", MB_PREC_BF16, 0},
        {"fp16", "fp16", MB_PREC_FP16, 0},          {"FP16 (mixed)", "fp16", MB_PREC_FP16, 0},
        {"fp8", "fp8", MB_PREC_FP8, 1},             {"FP8", "fp8", MB_PREC_FP8, 1},
        {"FP8 (unlabeled; table has no precision column)", "fp8", MB_PREC_FP8, 1},
        {"fp8_cs", "fp8_cs", MB_PREC_FP8, 1},       {"FP8-CS", "fp8_cs", MB_PREC_FP8, 1},
        {"fp8_blockwise", "fp8_blockwise", MB_PREC_FP8, 1},
        {"FP8-blockwise", "fp8_blockwise", MB_PREC_FP8, 1},
        {"mxfp8", "mxfp8", MB_PREC_FP8, 1},         {"MXFP8", "mxfp8", MB_PREC_FP8, 1},
        {"FP8-MX", "mxfp8", MB_PREC_FP8, 1},        {"nvfp4", "nvfp4", MB_PREC_FP4, 1},
        {"NVFP4", "nvfp4", MB_PREC_FP4, 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct mb_precision p;
        assert_int_equal(mb_precision_parse(t[i].in, &p), 0);
        assert_string_equal(p.label, t[i].label);
        assert_int_equal(p.gemm, t[i].gemm);
        assert_int_equal(p.attn, t[i].gemm == MB_PREC_FP16 ? MB_PREC_FP16 : MB_PREC_BF16);
        assert_int_equal(p.quantize, t[i].quantize);
    }
    struct mb_precision p;
    assert_int_equal(mb_precision_parse("int8", &p), -1);
    assert_int_equal(mb_precision_parse("FP8-finer-granularity (MXFP8 on GB200/B200; 128x128 blockwise on H100)", &p), -1);
    assert_int_equal(mb_precision_parse("", &p), -1);
    /* every recipe a calibration table's `recipes:` may name is a canonical scenario label */
    for (const char *const *r = mb_calib_recipe_names(); *r; r++) {
        assert_int_equal(mb_precision_parse(*r, &p), 0);
        assert_string_equal(p.label, *r);
    }
    assert_int_equal(mb_precision_parse(NULL, &p), -1);
}

static void test_module_names(void **state)
{
    (void)state;
    assert_int_equal(mb_recompute_module("core_attn"), MB_RCM_CORE_ATTN);
    assert_int_equal(mb_recompute_module("gdn_norm_out"), MB_RCM_GDN_NORM_OUT);
    assert_int_equal(mb_recompute_module("attn"), 0);
    assert_int_equal(mb_cuda_graph_module("moe_router"), MB_CG_MOE_ROUTER);
    assert_int_equal(mb_cuda_graph_module("full"), MB_CG_LAYER);
    assert_int_equal(mb_cuda_graph_module("layer"), MB_CG_LAYER);
    assert_int_equal(mb_cuda_graph_module("full_iteration"), MB_CG_FULL_ITERATION);
    assert_int_equal(mb_cuda_graph_module("core_attn"), 0);
}

/* Step 5: mb_scenario_check on hand-built scenarios (file "") gives the layout
 * messages without a position. Model: a hand-made 8-layer MoE with 16 heads,
 * 64 experts. */
static void hand(struct mb_scenario *s)
{
    mb_scenario_defaults(s);
    snprintf(s->model.name, sizeof s->model.name, "toy");
    s->model.num_layers = 8;
    s->model.num_heads = 16;
    s->model.num_experts = 64;
    s->gpus = 16;
    s->seq_length = 4096;
    s->global_batch_size = 64;
}

static void check_fails(struct mb_scenario *s, const char *want)
{
    struct mb_err e;
    char buf[1024];
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(s, &e), -1);
    mb_err_format(&e, buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* The valid layout, and the pipeline splits of the 8 layers (an explicit layout may split unevenly). */
static void check_hand_splits(void)
{
    struct mb_scenario s;
    struct mb_err e;

    hand(&s);
    s.tp = 2;
    s.ep = 8;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), 0);
    assert_int_equal(s.dp, 8);                /* 16 / 2 */
    assert_int_equal(s.sequence_parallel, 1); /* default on when tp > 1 */

    /* pipeline splits of the 8 layers: even (pp 2 x vpp 2 = 4, 8 % 4 = 0), with embedding and loss
     * as a layer each (pp 2 x vpp 5 = 10 = 8 + 2); pp 2 x vpp 3 = 6 divides neither 8 nor 10,
     * and pp 3 (24 GPUs) neither: Megatron's account_for_embedding alone (9) is not what mbsim
     * models, so it needs a layout */
    static const struct {
        int gpus, pp, vpp, ok;
    } split[] = {{16, 2, 2, 1}, {16, 2, 5, 1}, {16, 2, 3, 0}, {24, 3, 1, 0}, {16, 2, 1, 1}};
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++) {
        hand(&s);
        s.gpus = split[i].gpus;
        s.global_batch_size = 96;
        s.pp = split[i].pp;
        s.vpp = split[i].vpp;
        mb_err_clear(&e);
        if (split[i].ok) {
            if (mb_scenario_check(&s, &e) != 0)
                fail_msg("pp %d vpp %d: %s", s.pp, s.vpp, e.msg);
        } else {
            char want[512];
            snprintf(want, sizeof want,
                     "num_layers = 8 of model toy does not split over pp*vpp = %d virtual stages (pp = %d, vpp = %d): "
                     "Megatron-Core splits num_layers evenly, or num_layers + 2 with the embedding and the loss "
                     "counted as a layer each (account_for_embedding/loss_in_pipeline_split); set "
                     "parallel.pipeline_layout for another split",
                     s.pp * s.vpp, s.pp, s.vpp);
            check_fails(&s, want);
        }
    }
    /* an explicit layout may split unevenly: 3 + 2 + 1 + 1 + 1 + 0 decoder layers over pp 2 x vpp 3 */
    hand(&s);
    s.pp = 2;
    s.vpp = 3;
    snprintf(s.pipeline_layout, sizeof s.pipeline_layout, "Ettt|tt|t|t|t|L");
    mb_err_clear(&e);
    if (mb_scenario_check(&s, &e) != 0)
        fail_msg("explicit layout: %s", e.msg);
}

/* Divisibility of the layout: tp, ep, batch, heads, vpp, EP overlap, CP, an MoE model for ep. */
static void check_hand_layout(void)
{
    struct mb_scenario s;

    hand(&s);
    s.tp = 3;
    check_fails(&s, "tp*pp*cp = 3 does not divide gpus = 16");
    hand(&s);
    s.ep = 3;
    check_fails(&s, "ep = 3 does not divide num_experts = 64 of model toy");
    /* ep*etp = 32 > tp*cp*dp = 16: expert data parallel would be 1/2 */
    hand(&s);
    s.ep = 32;
    check_fails(&s, "ep*etp = 32 does not divide tp*cp*dp = 16 (expert data parallel = gpus / (ep*etp*pp) "
                     "must be whole)");
    hand(&s);
    s.global_batch_size = 24;
    check_fails(&s, "global_batch_size = 24 is not divisible by micro_batch_size*dp = 16 "
                     "(micro_batch_size = 1, dp = 16)");
    hand(&s);
    s.tp = 16;
    s.model.num_heads = 24;
    check_fails(&s, "tp = 16 does not divide num_heads = 24 of model toy");
    hand(&s);
    hand(&s);
    s.vpp = 2;
    check_fails(&s, "vpp = 2 requires pp > 1");
    hand(&s);
    s.pp = 2;
    s.vpp = 1;
    s.overlap_ep_comm = 1; /* with pp > 1, combined 1F1B needs an interleaved schedule */
    check_fails(&s, "overlap.ep_comm with pp = 2 needs an interleaved schedule (parallel.vpp >= 2), as "
                    "Megatron-Core's combined 1F1B does; set vpp or turn the overlap off");
    s.overlap_ep_comm = 0;
    s.vpp = 6; /* 12 virtual stages for 8 layers + embedding + loss: some would be empty */
    check_fails(&s, "pp*vpp = 12 exceeds num_layers + 2 = 10 of model toy (embedding and loss may each take "
                    "one pipeline slot, no more)");
    /* pp 4, vpp 2, dp 4: microbatches = 8/(1*4) = 2, not a multiple of pp 4 */
    hand(&s);
    s.pp = 4;
    s.vpp = 2;
    s.global_batch_size = 8;
    check_fails(&s, "interleaved pipeline (vpp = 2) needs microbatches % pp == 0; microbatches = "
                     "global_batch_size/(micro_batch_size*dp) = 2, pp = 4");
    hand(&s);
    s.cp = 16;
    s.seq_length = 1000;
    check_fails(&s, "2*cp = 32 does not divide seq_length = 1000 (context parallel cuts each sequence into "
                     "2*cp chunks)");
    hand(&s);
    s.model.num_experts = 0;
    s.ep = 2;
    check_fails(&s, "ep = 2 needs an MoE model; toy has no experts");
}

/* Recompute modules the model lacks; cuda_graph.modules that Megatron-Core refuses. */
static void check_hand_modules(void)
{
    struct mb_scenario s;
    struct mb_err e;

    hand(&s);
    s.recompute = MB_RC_SELECTIVE;
    s.recompute_modules = MB_RCM_MLA_UP_PROJ;
    check_fails(&s, "recompute module mla_up_proj needs an MLA model; toy has none");
    hand(&s);
    s.recompute = MB_RC_SELECTIVE;
    s.recompute_modules = MB_RCM_GDN_NORM_OUT;
    check_fails(&s, "recompute module gdn_norm_out needs a Gated DeltaNet model; toy has none");
    hand(&s);
    s.model.num_experts = 0;
    s.recompute = MB_RC_SELECTIVE;
    s.recompute_modules = MB_RCM_MOE_ACT;
    check_fails(&s, "recompute module moe_act needs an MoE model; toy has no experts");
    /* cuda_graph.modules that Megatron-Core's TransformerConfig refuses (transformer_config.py @d98e8a64dd) */
    hand(&s);
    s.cuda_graph = MB_CG_MOE | MB_CG_MOE_ROUTER;
    s.capacity_factor = 1.25;
    s.pad_to_capacity = 1;
    check_fails(&s, "cuda_graph modules moe and moe_router exclude each other (moe captures the router inside "
                    "the whole MoE block)");
    hand(&s);
    s.cuda_graph = MB_CG_MOE; /* dropless (the default) */
    check_fails(&s, "cuda_graph module moe needs drop-and-pad MoE (moe.capacity_factor and "
                    "moe.pad_expert_input_to_capacity: true): dropless expert inputs change shape every step; "
                    "graph moe_router instead");
    s.capacity_factor = 1.25;
    s.pad_to_capacity = 1;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), 0);
    hand(&s);
    s.cuda_graph = MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS;
    s.dispatcher = MB_DISP_ALLTOALL;
    s.capacity_factor = 1.5; /* drop without padding: the token counts go to the host */
    check_fails(&s, "cuda_graph module moe_preprocess cannot capture the alltoall dispatcher's preprocess with "
                    "moe.capacity_factor = 1.5 and no padding to capacity (it copies token counts to the host and "
                    "synchronizes)");
    s.pad_to_capacity = 1;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), 0);
    hand(&s);
    s.cuda_graph = MB_CG_ATTN | MB_CG_MLP;
    check_fails(&s, "cuda_graph module mlp graphs dense MLP layers; every FFN of toy is MoE (graph moe_router, "
                    "or moe with drop-and-pad)");
    s.model.first_dense = 1; /* DeepSeek-style leading dense layers: their MLP can be graphed */
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_check(&s, &e), 0);
}

/* The mirrored Megatron rules (mb_megatron_rules.h): per rule, a hand-built layout that breaks it
 * (the rule's own condition, read off the cited Megatron-LM / Transformer Engine line) and the
 * nearest layout that does not. Every rule of the table must have a case here. */
struct rule_case {
    const char *id;
    void (*breaks)(struct mb_scenario *s); /* applied to hand(): breaks the rule */
    void (*passes)(struct mb_scenario *s); /* applied after breaks: the nearest valid layout */
};

static void prec(struct mb_scenario *s, const char *label) { assert_int_equal(mb_precision_parse(label, &s->prec), 0); }

static void rb_full_graph(struct mb_scenario *s) { s->recompute = MB_RC_FULL, s->cuda_graph = MB_CG_ATTN; }
static void rp_full_graph(struct mb_scenario *s) { s->cuda_graph = MB_CG_FULL_ITERATION; }
static void rb_moe_router(struct mb_scenario *s)
{
    s->recompute = MB_RC_SELECTIVE, s->recompute_modules = MB_RCM_MOE, s->cuda_graph = MB_CG_MOE_ROUTER;
}
static void rp_moe_router(struct mb_scenario *s) { s->cuda_graph = MB_CG_ATTN; }
static void rb_offload(struct mb_scenario *s) { s->cpu_offload_layers = 2, s->cuda_graph = MB_CG_ATTN; }
static void rp_offload(struct mb_scenario *s) { s->cuda_graph = MB_CG_FULL_ITERATION; }
static void rb_shared_rc(struct mb_scenario *s)
{
    s->model.shared_ffn_hidden = 1024, s->recompute = MB_RC_SELECTIVE;
    s->recompute_modules = MB_RCM_SHARED_EXPERTS, s->shared_expert_overlap = 1;
}
static void rp_shared_rc(struct mb_scenario *s) { s->shared_expert_overlap = 0; }
static void rb_delayed(struct mb_scenario *s)
{
    prec(s, "fp8");
    s->recompute = MB_RC_SELECTIVE, s->recompute_modules = MB_RCM_MOE_ACT | MB_RCM_LAYERNORM;
}
static void rp_delayed(struct mb_scenario *s) { prec(s, "fp8_cs"); }
static void rb_deepep(struct mb_scenario *s)
{
    s->ep = 8, s->dispatcher = MB_DISP_DEEPEP, s->capacity_factor = 1.25, s->pad_to_capacity = 1;
}
static void rp_deepep(struct mb_scenario *s) { s->dispatcher = MB_DISP_HYBRIDEP; }
static void rb_epo_ep(struct mb_scenario *s) { s->ep = 1, s->overlap_ep_comm = 1; }
static void rp_epo_ep(struct mb_scenario *s) { s->ep = 2; }
static void rb_epo_disp(struct mb_scenario *s) { s->ep = 8, s->overlap_ep_comm = 1, s->dispatcher = MB_DISP_ALLGATHER; }
static void rp_epo_disp(struct mb_scenario *s) { s->dispatcher = MB_DISP_ALLTOALL; }
static void rb_epo_full(struct mb_scenario *s) { s->ep = 8, s->overlap_ep_comm = 1, s->recompute = MB_RC_FULL; }
static void rp_epo_full(struct mb_scenario *s) { s->recompute = MB_RC_SELECTIVE, s->recompute_modules = MB_RCM_CORE_ATTN; }
static void rb_epo_moe(struct mb_scenario *s)
{
    s->ep = 8, s->overlap_ep_comm = 1, s->recompute = MB_RC_SELECTIVE, s->recompute_modules = MB_RCM_MOE;
}
static void rp_epo_moe(struct mb_scenario *s) { s->recompute_modules = MB_RCM_MOE_ACT; }
static void rb_epo_seo(struct mb_scenario *s)
{
    s->model.shared_ffn_hidden = 1024, s->ep = 8, s->overlap_ep_comm = 1, s->shared_expert_overlap = 1;
}
static void rp_epo_seo(struct mb_scenario *s) { s->shared_expert_overlap = 0; }
static void rb_epo_mtp(struct mb_scenario *s) { s->model.mtp_layers = 2, s->ep = 8, s->overlap_ep_comm = 1; }
static void rp_epo_mtp(struct mb_scenario *s) { s->model.mtp_layers = 1; }
static void rb_epo_graph(struct mb_scenario *s)
{
    s->ep = 8, s->overlap_ep_comm = 1, s->cuda_graph = MB_CG_MOE, s->capacity_factor = 1.25, s->pad_to_capacity = 1;
}
static void rp_epo_graph(struct mb_scenario *s) { s->cuda_graph = MB_CG_ATTN | MB_CG_MOE_ROUTER; }
static void rb_fp8_cc(struct mb_scenario *s) { snprintf(s->system.gpu, sizeof s->system.gpu, "A100"), prec(s, "fp8"); }
static void rp_fp8_cc(struct mb_scenario *s) { snprintf(s->system.gpu, sizeof s->system.gpu, "L40S"); } /* Ada 8.9 */
static void rb_block_cc(struct mb_scenario *s)
{
    snprintf(s->system.gpu, sizeof s->system.gpu, "L40S"), prec(s, "fp8_blockwise");
}
static void rp_block_cc(struct mb_scenario *s) { snprintf(s->system.gpu, sizeof s->system.gpu, "H100"); }

static const struct rule_case rule_cases[] = {
    {"full_recompute_cuda_graph", rb_full_graph, rp_full_graph},
    {"moe_recompute_moe_router_graph", rb_moe_router, rp_moe_router},
    {"cpu_offload_cuda_graph", rb_offload, rp_offload},
    {"shared_experts_recompute_overlap", rb_shared_rc, rp_shared_rc},
    {"fp8_delayed_recompute", rb_delayed, rp_delayed},
    {"deepep_pad_to_capacity", rb_deepep, rp_deepep},
    {"ep_overlap_needs_ep", rb_epo_ep, rp_epo_ep},
    {"ep_overlap_dispatcher", rb_epo_disp, rp_epo_disp},
    {"ep_overlap_full_recompute", rb_epo_full, rp_epo_full},
    {"ep_overlap_moe_recompute", rb_epo_moe, rp_epo_moe},
    {"ep_overlap_shared_expert_overlap", rb_epo_seo, rp_epo_seo},
    {"ep_overlap_mtp", rb_epo_mtp, rp_epo_mtp},
    {"ep_overlap_cuda_graph", rb_epo_graph, rp_epo_graph},
    {"fp8_compute_capability", rb_fp8_cc, rp_fp8_cc},
    {"fp8_blockwise_compute_capability", rb_block_cc, rp_block_cc},
};

static void test_megatron_rules(void **state)
{
    (void)state;
    size_t n;
    const struct mb_megatron_rule *r = mb_megatron_rules(&n);
    assert_int_equal(n, sizeof rule_cases / sizeof rule_cases[0]); /* a rule without a case fails here */
    for (size_t i = 0; i < n; i++) {
        const struct rule_case *c = NULL;
        for (size_t k = 0; k < n; k++)
            if (!strcmp(rule_cases[k].id, r[i].id))
                c = &rule_cases[k];
        assert_non_null(c);
        assert_non_null(strstr(r[i].source, ".py:")); /* a file and line */
        struct mb_scenario s;
        struct mb_err e;
        const struct mb_megatron_rule *hit;
        char msg[800], buf[1024];
        hand(&s);
        c->breaks(&s);
        mb_err_clear(&e);
        assert_int_equal(mb_scenario_check(&s, &e), -1);
        assert_int_equal(mb_megatron_rules_check(&s, &hit, msg, sizeof msg), 1);
        assert_string_equal(hit->id, c->id);
        mb_err_format(&e, buf, sizeof buf);
        assert_string_equal(buf, msg); /* the loader's error is the rule's, with its source */
        assert_non_null(strstr(msg, r[i].source));
        c->passes(&s);
        mb_err_clear(&e);
        if (mb_scenario_check(&s, &e))
            fail_msg("%s: the passing layout fails: %s", c->id, e.msg);
        assert_int_equal(mb_megatron_rules_check(&s, &hit, msg, sizeof msg), 0);
    }
    /* compute capabilities from NVIDIA's table; unknown GPUs are never refused */
    assert_int_equal(mb_megatron_gpu_cc("A100"), 80);
    assert_int_equal(mb_megatron_gpu_cc("H100_96GB"), 90);
    assert_int_equal(mb_megatron_gpu_cc("GB200"), 100);
    assert_int_equal(mb_megatron_gpu_cc("L40S"), 89);
    assert_int_equal(mb_megatron_gpu_cc("X9"), 0);
    assert_int_equal(mb_megatron_gpu_cc(NULL), 0);
}

/* Images against the vision encoder, max_gpus of the system, and the "file: message" form. */
static void check_hand_inputs(void)
{
    struct mb_scenario s;

    hand(&s);
    s.model.vision.depth = 2;
    check_fails(&s, "model toy has a vision encoder: give data.images or data.mock: true");
    hand(&s);
    s.images.dist = MB_IMG_FIXED;
    check_fails(&s, "data.images given but model toy has no vision encoder");
    hand(&s);
    s.system.max_gpus = 8;
    snprintf(s.system.name, sizeof s.system.name, "tiny_sys");
    check_fails(&s, "gpus = 16 exceeds max_gpus = 8 of system tiny_sys");
    /* with a file name but no nodes: "file: message" */
    hand(&s);
    snprintf(s.file, sizeof s.file, "row.csv");
    s.tp = 3;
    check_fails(&s, "row.csv: tp*pp*cp = 3 does not divide gpus = 16");
}

/* The parts above, in order, as one test case. */
static void test_check_hand_built(void **state)
{
    (void)state;
    static void (*const parts[])(void) = {check_hand_splits, check_hand_layout, check_hand_modules,
                                          check_hand_inputs};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        parts[i]();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headline),      cmocka_unit_test(test_shipped), cmocka_unit_test(test_warnings), cmocka_unit_test(test_refs),
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_bad_fixtures),
        cmocka_unit_test(test_precision),     cmocka_unit_test(test_module_names),
        cmocka_unit_test(test_check_hand_built), cmocka_unit_test(test_megatron_rules),
        cmocka_unit_test(test_schema_old_defaults), cmocka_unit_test(test_attn_backend_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
