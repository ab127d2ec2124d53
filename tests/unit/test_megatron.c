/*
 * test_megatron.c -- Megatron-LM / Megatron-Bridge settings in and out
 * (workloads/import/mb_megatron.h): `mbsim import` and `--emit`.
 *
 * Where the expectations come from: tests/data/import/qwen3_30b_a3b_h100_ep16.sh
 * is the published Megatron-Bridge Qwen3-30B-A3B run on 16 H100 of
 * shared/data/measured/public_measured.csv (row mbridge_2606_qwen3_30b_a3b_h100_fp8_16:
 * TP1 PP1 CP1 EP16, MBS 1, GBS 1024, seq 4096, flex + HybridEP on 32 SMs,
 * tensorwise FP8, bf16 gradient reduction) written as a Megatron-LM command
 * line; the asserted scenario values are that row's, the emitted flags must be
 * the file's own parallel and MoE lines. The same run as a training log's
 * arguments block and as Bridge overrides must import to the same layout. No
 * predicted number is asserted (only that the scenario simulates), so
 * calibration changes cannot break these tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mb_keys.h"
#include "mb_megatron.h"
#include "test_megatron_util.h"
#include "mb_step.h"

#define QWEN "tests/data/import/qwen3_30b_a3b_h100_ep16.sh"

/* The formatted error of an import that must fail (-1); the text lives until the next call. */
static const char *import_err(const char *path, enum mb_megatron_dialect d, const struct mb_megatron_opts *o)
{
    static char msg[1024];
    struct mb_scenario s;
    struct mb_err err;
    assert_int_equal(import(path, d, o, &s, NULL, &err), -1);
    mb_err_format(&err, msg, sizeof msg);
    return msg;
}

static char *emit(const struct mb_scenario *s, enum mb_megatron_dialect d)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);
    assert_int_equal(mb_megatron_emit(s, d, fp, NULL), 0);
    fclose(fp);
    return out;
}

/* The published layout of the Qwen3-30B-A3B H100 row. */
static void check_qwen_layout(const struct mb_scenario *s)
{
    assert_string_equal(s->model.name, "qwen3_30b_a3b");
    assert_int_equal(s->gpus, 16);
    assert_int_equal(s->tp, 1);
    assert_int_equal(s->pp, 1);
    assert_int_equal(s->cp, 1);
    assert_int_equal(s->ep, 16);
    assert_int_equal(s->etp, 1);
    assert_int_equal(s->micro_batch_size, 1);
    assert_int_equal(s->global_batch_size, 1024);
    assert_int_equal(s->seq_length, 4096);
    assert_int_equal(s->dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(s->dispatcher_sms, 32);
    assert_string_equal(s->prec.label, "fp8_cs");
    assert_int_equal(s->grad_bytes, 2);
    assert_int_equal(s->dist_opt, 1);
}

/* Megatron-LM command line: imports, simulates, and --emit megatron gives
 * back every parallel and MoE line of the input file verbatim. */
static void test_qwen3_roundtrip(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100"};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import(QWEN, MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    check_qwen_layout(&s);
    struct mb_result r;
    assert_int_equal(mb_step_simulate(&s, &r, &err), 0);
    assert_true(r.tokens_per_s_per_gpu > 0);
    mb_result_free(&r);

    char *out = emit(&s, MB_MEGATRON_LM);
    static const char *const prefixes[] = {"--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                                           "--context-parallel-size", "--expert-model-parallel-size",
                                           "--expert-tensor-parallel-size", "--moe-", "--num-experts"};
    FILE *in = fopen(QWEN, "r");
    assert_non_null(in);
    char line[512];
    int checked = 0;
    while (fgets(line, sizeof line, in)) {
        char flag[256];
        if (sscanf(line, " %255[^\\\n]", flag) != 1)
            continue;
        for (size_t n = strlen(flag); n && flag[n - 1] == ' ';)
            flag[--n] = '\0';
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
            if (!strncmp(flag, prefixes[i], strlen(prefixes[i])) && strcmp(flag, "--moe-router-load-balancing-type aux_loss") &&
                strcmp(flag, "--moe-aux-loss-coeff 1e-3") && strcmp(flag, "--moe-router-force-load-balancing") &&
                strcmp(flag, "--moe-permute-fusion") && strcmp(flag, "--moe-router-fusion")) {
                char want[300];
                snprintf(want, sizeof want, "%s \\\n", flag);
                if (!strstr(out, want) && !strstr(out, flag))
                    fail_msg("emitted flags lack '%s':\n%s", flag, out);
                checked++;
                break;
            }
    }
    fclose(in);
    assert_int_equal(checked, 13); /* 5 parallel sizes, 8 MoE flags mbsim simulates */
    /* flags mbsim does not simulate are listed, with their position */
    assert_non_null(strstr(notes, QWEN ":33:5: --moe-router-load-balancing-type: aux_loss: not imported"));
    assert_null(strstr(notes, "--fp8-param-gather")); /* imported: training.fp8_param_gather */
    assert_int_equal(s.fp8_param_gather, 1);
    free(notes);

    /* the emitted flags import back to the same scenario */
    FILE *fp = fopen("test_megatron_emitted.sh", "w");
    fputs(out, fp);
    fclose(fp);
    struct mb_scenario s2;
    o.gpus = 16;
    if (import("test_megatron_emitted.sh", MB_MEGATRON_LM, &o, &s2, NULL, &err))
        fail_msg("%s", err.msg);
    remove("test_megatron_emitted.sh");
    check_qwen_layout(&s2);
    assert_int_equal(s2.hybridep_permute_fusion, s.hybridep_permute_fusion);
    assert_int_equal(s2.ce_impl, s.ce_impl);
    assert_int_equal(s2.overlap_grad_reduce, 1);
    mb_scenario_free(&s2);
    free(out);
    mb_scenario_free(&s);
}

/* A VLM's emit says that its vision encoder has no Megatron-LM flags (issue 17
 * QA: the round trip silently gave the text twin). scenarios/gb200_ep32.yaml is
 * Qwen3-VL-30B-A3B, whose vision tower has 27 blocks of hidden 1152 (its
 * Hugging Face config, vision_config depth / hidden_size). */
static void test_emit_vlm_note(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_load("scenarios/gb200_ep32.yaml", &s, &e), 0);
    char *out = NULL, *notes = NULL;
    size_t lo = 0, ln = 0;
    FILE *fo = open_memstream(&out, &lo), *fn = open_memstream(&notes, &ln);
    assert_int_equal(mb_megatron_emit(&s, MB_MEGATRON_LM, fo, fn), 0);
    fclose(fo);
    fclose(fn);
    assert_non_null(strstr(notes, "# the vision encoder (27 blocks, hidden 1152) and data.images have no Megatron-LM "
                                  "flags"));
    free(out);
    free(notes);
    mb_scenario_free(&s);
}

/* --attention-dropout absent: Megatron-LM's default 0.1 (megatron/training/arguments.py),
 * which local/unfused attention prices as a dropout kernel; --emit leaves the default out
 * and writes any other value, 0 included (else Megatron would train with 0.1). */
static void test_attention_dropout_default(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    if (import("tests/data/import/llama3_8b_unfused.sh", MB_MEGATRON_LM, &o, &s, NULL, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    assert_int_equal(s.attn_backend, MB_ATTN_UNFUSED);
    assert_true(mb_dbl_eq(s.attn_dropout, 0.1));
    char *out = emit(&s, MB_MEGATRON_LM);
    assert_null(strstr(out, "--attention-dropout"));
    free(out);
    s.attn_dropout = 0;
    out = emit(&s, MB_MEGATRON_LM);
    assert_non_null(strstr(out, "--attention-dropout 0"));
    free(out);
    mb_scenario_free(&s);
}

/* Megatron-Bridge's LoRA overrides (tests/data/import/llama3_8b_lora.txt): peft.dim and
 * peft.target_modules become peft.lora_rank / lora_targets on a frozen base, alpha is noted
 * as not simulated, and --emit bridge writes the same two overrides back. */
static void test_bridge_lora(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    char *notes = NULL;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    if (import("tests/data/import/llama3_8b_lora.txt", MB_MEGATRON_BRIDGE, &o, &s, &notes, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    assert_int_equal(s.lora_rank, 16);
    assert_int_equal(s.lora_targets, MB_LORA_QKV | MB_LORA_PROJ);
    assert_int_equal(s.freeze, MB_FREEZE_LANGUAGE);
    assert_non_null(strstr(notes, "peft.alpha: not simulated"));
    free(notes);
    char *out = emit(&s, MB_MEGATRON_BRIDGE);
    assert_non_null(strstr(out, "peft.dim=16"));
    assert_non_null(strstr(out, "peft.target_modules='[linear_qkv,linear_proj]'"));
    free(out);
    out = emit(&s, MB_MEGATRON_LM);
    assert_null(strstr(out, "peft"));
    free(out);
    mb_scenario_free(&s);
}

/* Megatron-Bridge's Llama-3-70B SFT performance settings (NVIDIA-NeMo/Megatron-Bridge@caa14efa
 * scripts/performance/configs/llama/llama3_llm_finetune.py, llama3_70b_sft_config_h100): the FP8-CS
 * preset holds FP8 weights (its fp8_param_gather=True) and comm_overlap defers the output layer's wgrad
 * for 22 microbatches; both import, and --emit bridge writes them back (Megatron-LM has no flag for the
 * deferral: a note says so). */
static void test_bridge_fp8_weights_and_deferral(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    char *notes = NULL;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_70b", .gpus = 32};
    if (import("tests/data/import/llama3_70b_sft_defer.txt", MB_MEGATRON_BRIDGE, &o, &s, &notes, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_int_equal(s.fp8_param_gather, 1);
    assert_int_equal(s.defer_wgrad, 1);
    assert_int_equal(s.wgrad_deferral_limit, 22);
    assert_null(strstr(notes ? notes : "", "not imported"));
    free(notes);
    char *out = emit(&s, MB_MEGATRON_BRIDGE);
    assert_non_null(strstr(out, "mixed_precision.fp8_param_gather=true"));
    assert_non_null(strstr(out, "comm_overlap.defer_embedding_wgrad_compute=true"));
    assert_non_null(strstr(out, "comm_overlap.wgrad_deferral_limit=22"));
    free(out);
    out = emit(&s, MB_MEGATRON_LM);
    assert_non_null(strstr(out, "--fp8-param-gather"));
    assert_null(strstr(out, "defer"));
    free(out);
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len), *flags = fopen("/dev/null", "w");
    assert_non_null(flags);
    assert_int_equal(mb_megatron_emit(&s, MB_MEGATRON_LM, flags, fp), 0);
    fclose(flags);
    fclose(fp);
    assert_non_null(strstr(out, "has no Megatron-LM flag: set TransformerConfig defer_embedding_wgrad_compute"));
    free(out);
    mb_scenario_free(&s);
}

/* A training log's arguments block and Bridge overrides of the same run. */
static void test_log_and_bridge(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100"};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/qwen3_30b_a3b_log.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    check_qwen_layout(&s); /* gpus from world_size */
    assert_null(strstr(notes, "recompute_modules")); /* Megatron's default list, granularity None */
    assert_non_null(strstr(notes, ":28:3: moe_router_load_balancing_type: aux_loss: not imported"));
    free(notes);
    mb_scenario_free(&s);

    o.model = "qwen3_30b_a3b";
    o.nodes = 2; /* 2 x 8 GPUs of dgx_h100 */
    if (import("tests/data/import/qwen3_30b_a3b_bridge.txt", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    check_qwen_layout(&s);
    assert_int_equal(s.recompute, MB_RC_SELECTIVE);
    assert_int_equal(s.recompute_modules, MB_RCM_CORE_ATTN | MB_RCM_MOE_ACT);
    assert_int_equal(s.router_fusion, 1); /* model.moe_router_fusion=true */
    assert_non_null(strstr(notes, "without effect on a simulated step (training schedule, data, checkpoints, "
                                  "logging): logger.log_interval"));
    char *out = emit(&s, MB_MEGATRON_BRIDGE);
    assert_non_null(strstr(out, "model.recompute_modules='[core_attn,moe_act]' \\\n"));
    assert_non_null(strstr(out, "mixed_precision=bf16_with_fp8_current_scaling_mixed \\\n"));
    assert_non_null(strstr(out, "model.moe_flex_dispatcher_backend=hybridep \\\n"));
    free(out);
    free(notes);
    mb_scenario_free(&s);
}

/* A training log as Megatron-LM prints it (tests/data/import/llama3_8b_fp8_log.txt, written by
 * make_llama3_8b_fp8_log.py beside it with Megatron-LM's own format strings at d98e8a64): every
 * value Python prints for an enum or a dtype imports (AttnBackend.fused, InferenceCudaGraphScope.none,
 * torch.bfloat16, torch.float32), and the iteration lines give the measured block.
 * Expected, by hand from the generator's MS list: 30 lines; warm-up = the first line and up to
 * ceil(30 / 10) = 3, so iterations 4..30 (27 lines) are used; their times sorted, the 14th is
 * 11804.6 ms (the 13th 11803.5, the 15th 11805.1; iteration 20's 13942.3 sorts last); the
 * throughput column's 14th of 27 sorted is 639.6 TFLOP/s/GPU. */
static void test_log_measured(void **state)
{
    (void)state;
    /* Llama 3 and 3.1 8B share the architecture the log prints: the model is named */
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b"};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/llama3_8b_fp8_log.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.model.name, "llama3_8b");
    assert_int_equal(s.gpus, 8); /* world_size */
    assert_true(s.meas_step_time_s > 11.8045 && s.meas_step_time_s < 11.8047);
    assert_true(s.meas_model_tflops_per_gpu > 639.59 && s.meas_model_tflops_per_gpu < 639.61);
    assert_non_null(strstr(s.meas_source, "median of 27 iteration lines (iterations 4-30); warm-up up to "
                                          "iteration 3 not used"));
    assert_non_null(strstr(notes, "measured: step time 11804.6 ms, 639.6 TFLOP/s/GPU"));
    free(notes);
    mb_scenario_free(&s);
}

/* Python's printed values -> the names the import reads (arguments.py _print_args prints str(value)). */
static void test_log_values(void **state)
{
    (void)state;
    char out[32] = "unchanged";
    assert_int_equal(mb_megatron_log_value("AttnBackend.auto", out, sizeof out), 1);
    assert_string_equal(out, "auto");
    assert_int_equal(mb_megatron_log_value("<CudaGraphModule.moe_router: 4>", out, sizeof out), 1);
    assert_string_equal(out, "moe_router");
    assert_int_equal(mb_megatron_log_value("torch.bfloat16", out, sizeof out), 1);
    assert_string_equal(out, "bf16");
    assert_int_equal(mb_megatron_log_value("torch.uint8", out, sizeof out), 1);
    assert_string_equal(out, "fp8");
    /* not an enum or a mapped dtype: left alone */
    snprintf(out, sizeof out, "unchanged");
    assert_int_equal(mb_megatron_log_value("1e-05", out, sizeof out), 0);
    assert_int_equal(mb_megatron_log_value("RMSNorm", out, sizeof out), 0);
    assert_int_equal(mb_megatron_log_value("torch.float64", out, sizeof out), 0);
    assert_int_equal(mb_megatron_log_value("Foo.1x", out, sizeof out), 0);
    assert_int_equal(mb_megatron_log_value("<Foo.bar: 1", out, sizeof out), 0);
    assert_string_equal(out, "unchanged");
}

/* The steady state, on iteration lists built here: warm-up, skipped iterations, batch ramp-up. */
static void test_log_steady(void **state)
{
    (void)state;
    struct mb_megatron_iter it[12];
    struct mb_megatron_measured r;
    /* 12 lines every 10 iterations (log_interval 10): iterations 10..120; warm-up = the first line
     * (10) and up to ceil(120 / 10) = 12: only iteration 10. Line 30 had a skipped iteration, line
     * 40 a smaller batch (ramp-up): both dropped. Left: 20, 50..120 = 9 lines, times
     * 100 + iteration/10 -> 102, 105..112: the median is the 5th, 108 ms. */
    for (int i = 0; i < 12; i++)
        it[i] = (struct mb_megatron_iter){.iteration = 10 * (i + 1), .ms = 100 + i + 1, .tflops = -1, .gbs = 64,
                                          .line = i + 1};
    it[2].skipped = 1;
    it[3].gbs = 32;
    assert_int_equal(mb_megatron_steady(it, 12, &r), 0);
    assert_int_equal(r.warmup_to, 12);
    assert_int_equal(r.used, 9);
    assert_int_equal(r.dropped, 2);
    assert_int_equal(r.from, 20);
    assert_int_equal(r.to, 120);
    assert_true(r.step_ms == 108);
    assert_true(r.tflops < 0); /* not logged */
    /* one line only: it is warm-up, nothing is left */
    assert_int_equal(mb_megatron_steady(it, 1, &r), -1);
    assert_int_equal(r.lines, 1);
}

/* An iteration line whose time is not a number is named at its line and column. */
static void test_log_bad_iteration(void **state)
{
    (void)state;
    FILE *f = fopen("mbsim_test_badlog.txt", "w");
    assert_non_null(f);
    fputs("  tensor_model_parallel_size ...... 1\n  pipeline_model_parallel_size .... 1\n"
          "  num_layers ...................... 32\n"
          " [2026-08-24 09:14:25.431700] iteration        1/      30 | consumed samples:          128 | "
          "elapsed time per iteration (ms): n/a | global batch size:   128 |\n", f);
    fclose(f);
    struct mb_megatron_args a;
    struct mb_err err;
    mb_err_clear(&err);
    assert_int_equal(mb_megatron_read("mbsim_test_badlog.txt", MB_MEGATRON_LM, &a, &err), -1);
    remove("mbsim_test_badlog.txt");
    char msg[512];
    mb_err_format(&err, msg, sizeof msg);
    assert_string_equal(msg, "mbsim_test_badlog.txt:4:127: 'elapsed time per iteration (ms):' is not followed "
                             "by a number (Megatron-LM's training_log prints one)");
    /* an iteration count past 10^15 (strtol saturates a garbled one at LONG_MAX, and the warm-up's
     * ceil(last / 10) overflowed: a fuzz finding) is named at its column, 41 on line 4 */
    f = fopen("mbsim_test_badlog.txt", "w");
    assert_non_null(f);
    fputs("  tensor_model_parallel_size ...... 1\n  pipeline_model_parallel_size .... 1\n"
          "  num_layers ...................... 32\n"
          " [2026-08-24 09:14:25.431700] iteration 57777777777777777777777/      30 | consumed samples:  128 | "
          "elapsed time per iteration (ms): 100.0 | global batch size:   128 |\n", f);
    fclose(f);
    mb_err_clear(&err);
    assert_int_equal(mb_megatron_read("mbsim_test_badlog.txt", MB_MEGATRON_LM, &a, &err), -1);
    remove("mbsim_test_badlog.txt");
    mb_err_format(&err, msg, sizeof msg);
    assert_string_equal(msg, "mbsim_test_badlog.txt:4:41: iteration number '57777777777777777777777' is out of range: "
                             "expected 0 to 1e+15 (Megatron-LM's training_log prints the iteration count)");
    /* the warm-up bound of the largest count allowed does not overflow */
    struct mb_megatron_iter big[2] = {{.iteration = 1, .ms = 1, .tflops = -1, .gbs = 8, .line = 1},
                                      {.iteration = 1000000000000000L, .ms = 1, .tflops = -1, .gbs = 8, .line = 2}};
    struct mb_megatron_measured r;
    mb_megatron_steady(big, 2, &r);
    assert_true(r.warmup_to == 100000000000000L);
}

static void put(const char *path, const char *text);

/* Megatron-LM's own example launch scripts (tests/data/import/megatron_examples/, verbatim at
 * NVIDIA/Megatron-LM d98e8a64) import as bash runs them with no arguments and no environment.
 * Expected values are the scripts' own: Llama-3-8B: GPUS_PER_NODE=8 x NUM_NODES=1, TP_SIZE=1, PP not
 * given, MICRO_BATCH_SIZE=1, GLOBAL_BATCH_SIZE=128, SEQ_LENGTH=8192, DTYPE fp8 -> DTYPE_ARGS holds
 * "--fp8-format hybrid" (line 108, element at column 9; "--fp8-amax-history-len 1024" on line 109);
 * --sequence-parallel from MODEL_PARALLEL_ARGS, the DDP_ARGS appended to TRAINING_ARGS. Mixtral:
 * PP 4, EP 8, GBS 256, seq 4096, the alltoall dispatcher; NNODES=${SLURM_NNODES:-"1"} gives 8 GPUs,
 * too few for PP 4 x EP 8, so the test gives --gpus 32 (4 nodes). */
static void test_example_scripts(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b"};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/megatron_examples/train_llama3_8b_h100_fp8.sh", MB_MEGATRON_LM, &o, &s, &notes,
               &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.gpus, 8);
    assert_int_equal(s.tp, 1);
    assert_int_equal(s.pp, 1);
    assert_int_equal(s.seq_length, 8192);
    assert_int_equal(s.global_batch_size, 128);
    assert_int_equal(s.micro_batch_size, 1);
    assert_string_equal(s.prec.label, "fp8");
    assert_int_equal(s.fp8_param_gather, 1);
    assert_int_equal(s.dist_opt, 1);
    assert_non_null(strstr(notes, "train_llama3_8b_h100_fp8.sh:109:9: --fp8-amax-history-len: 1024: not imported"));
    assert_non_null(strstr(notes, "train_llama3_8b_h100_fp8.sh:12:17: $1 is not set in the script: its default "
                                  "'checkpoints/llama3_8b_fp8' is used"));
    free(notes);
    mb_scenario_free(&s);

    o.model = NULL;
    o.gpus = 32;
    if (import("tests/data/import/megatron_examples/train_mixtral_8x7b_distributed.sh", MB_MEGATRON_LM, &o, &s,
               &notes, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.model.name, "mixtral_8x7b");
    assert_int_equal(s.pp, 4);
    assert_int_equal(s.ep, 8);
    assert_int_equal(s.global_batch_size, 256);
    assert_int_equal(s.seq_length, 4096);
    assert_int_equal(s.dispatcher, MB_DISP_ALLTOALL);
    assert_non_null(strstr(notes, "$SLURM_NNODES is not set in the script: its default '1' is used"));
    free(notes);
    mb_scenario_free(&s);

    /* --nodes wins over the script's torchrun count (1 node of 8 there, as $SLURM_NNODES is unset):
     * 4 nodes x 8 GPUs of dgx_h100 = 32 */
    o.gpus = 0;
    o.nodes = 4;
    if (import("tests/data/import/megatron_examples/train_mixtral_8x7b_distributed.sh", MB_MEGATRON_LM, &o, &s,
               NULL, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.gpus, 32);
    mb_scenario_free(&s);
}

/* tests/data/import/script_constructs.sh: each construct with the value bash gives it (the file's
 * comments): 4 x ${SLURM_NNODES:-2} = 8 GPUs, PP $(( 8 / 4 )) = 2, ${GBS-128}, : ${MBS:=1}, an array
 * with a comment inside, "--fp8-format hybrid" appended under [[ "$DTYPE" == "fp8" ]] and split in
 * two when expanded unquoted, --sequence-parallel under [ "$TP" -gt 1 ], export NCCL_ALGO=ring. */
static void test_script_constructs(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b"};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/script_constructs.sh", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.gpus, 8);
    assert_int_equal(s.tp, 2);
    assert_int_equal(s.pp, 2);
    assert_int_equal(s.global_batch_size, 128);
    assert_int_equal(s.micro_batch_size, 1);
    assert_string_equal(s.prec.label, "fp8");
    assert_int_equal(s.sequence_parallel, 1);
    assert_string_equal(mb_key_value_name("collectives.all_reduce", s.allreduce_algo), "ring");
    assert_non_null(strstr(notes, "script_constructs.sh:6:8: $SLURM_NNODES is not set in the script: its default "
                                  "'2' is used"));
    free(notes);
    mb_scenario_free(&s);
}

/* What a script needs run to be known is named at its position, never guessed. */
static void test_script_refused(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b"};
    put("mbsim_test_sh.txt", "TP=$(nvidia-smi -L | wc -l)\ntorchrun pretrain_gpt.py --num-layers 32 \\\n"
                             "  --tensor-model-parallel-size $TP\n");
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:1:4: $(nvidia-smi -L | wc -l): a command substitution; mbsim import does "
                        "not run commands, write the value");
    put("mbsim_test_sh.txt", "for i in 1 2; do echo $i; done\ntorchrun pretrain_gpt.py --num-layers 32\n");
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:1:1: 'for': loops, case and functions are not read by mbsim import (it "
                        "reads assignments, arrays and if/else on [ ] tests); write the command without them");
    put("mbsim_test_sh.txt", "if [ -f /etc/big ]; then\n  TP=4\nfi\n"
                             "torchrun pretrain_gpt.py --num-layers 32 --tensor-model-parallel-size $TP\n");
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:2:3: TP is set under a condition mbsim import cannot decide (line 1: "
                        "'-f /etc/big': a file or shell test; mbsim import does not look at files); write its value");
    put("mbsim_test_sh.txt", "A=(--num-layers 32\ntorchrun pretrain_gpt.py ${A[@]}\n");
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:1:1: A=: the array's '(' has no ')' (or nests deeper than 64)");
    put("mbsim_test_sh.txt", "if [ 1 -eq 1 ]; then TP=2\ntorchrun pretrain_gpt.py --num-layers 32\n");
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o), "mbsim_test_sh.txt:1:1: if without fi");
    /* hostile text: an array doubled on every line stops at 100000 elements (line 18: 2 x 65536),
     * and nesting deeper than 64 is refused, not a stack overflow */
    char big[2048] = "A=(x)\n";
    for (int i = 0; i < 20; i++)
        strcat(big, "A=(${A[@]} ${A[@]})\n");
    strcat(big, "torchrun pretrain_gpt.py --num-layers 32 ${A[@]}\n");
    put("mbsim_test_sh.txt", big);
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:18:12: the array grows past 100000 elements; mbsim import does not read "
                        "it");
    char deep[512] = "torchrun pretrain_gpt.py --num-layers 32 X";
    for (int i = 0; i < 70; i++)
        strcat(deep, "${A:-");
    strcat(deep, "1");
    for (int i = 0; i < 70; i++)
        strcat(deep, "}");
    strcat(deep, "\n");
    put("mbsim_test_sh.txt", deep);
    assert_string_equal(import_err("mbsim_test_sh.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_sh.txt:1:42: expansions nested deeper than 64; mbsim import does not read them");
    remove("mbsim_test_sh.txt");
}

/* Every setting not imported is listed: unknown flags with file:line:col. */
static void test_unknown_listed(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/unknown_flags.sh", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.model.name, "qwen3_30b_a3b"); /* matched by its architecture */
    assert_non_null(strstr(notes, "tests/data/import/unknown_flags.sh:5:1: --frobnicate-experts: 3: not imported "
                                  "(mbsim has no equivalent)\n"));
    assert_non_null(strstr(notes, "unknown_flags.sh:6:1: --moe-router-load-balancing-type: aux_loss: not imported"));
    assert_non_null(strstr(notes, "2 settings without effect on a simulated step (training schedule, data, "
                                  "checkpoints, logging): --lr, --seed\n"));
    assert_non_null(strstr(notes, "no --moe-grouped-gemm: mbsim simulates grouped-GEMM experts"));
    /* accepted by Megatron and without effect on a model without shared experts: listed, left out */
    assert_non_null(strstr(notes, "unknown_flags.sh:8:1: --moe-shared-expert-overlap: not imported: model "
                                  "qwen3_30b_a3b has no shared experts, so the overlap does nothing"));
    assert_int_equal(s.shared_expert_overlap, 0);
    free(notes);
    mb_scenario_free(&s);
}

/* A flag that is no name the import understands but within two edits of one
 * (one for names under 10 characters) is a typo: an input error at it, naming
 * the flag meant, not a "not imported" note that would leave TP at 1. Real
 * Megatron-LM flags mbsim does not model keep their note. Positions by hand:
 * typo_flag.sh line 6 after "--seq-length 4096 " (18 characters), col 19;
 * typo_bridge.txt line 4 after "  model.num_moe_experts=128 " (28), col 29. */
static void test_typo(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    assert_string_equal(import_err("tests/data/import/typo_flag.sh", MB_MEGATRON_LM, &o),
                        "tests/data/import/typo_flag.sh:6:19: --tensor-model-paralel-size: unknown Megatron-LM "
                        "flag (did you mean --tensor-model-parallel-size?)");
    assert_string_equal(import_err("tests/data/import/typo_bridge.txt", MB_MEGATRON_BRIDGE, &o),
                        "tests/data/import/typo_bridge.txt:4:29: model.expert_model_paralel_size: unknown "
                        "Megatron-Bridge setting (did you mean model.expert_model_parallel_size?)");

    /* swapped letters count as one edit; a short name allows one */
    FILE *fp = fopen("test_megatron_typo.sh", "w");
    fputs("--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128 --seq-lenght 4096\n", fp);
    fclose(fp);
    assert_string_equal(import_err("test_megatron_typo.sh", MB_MEGATRON_LM, &o),
                        "test_megatron_typo.sh:1:79: --seq-lenght: unknown Megatron-LM flag (did you mean "
                        "--seq-length?)");

    /* real Megatron-LM flags (arguments.py) that mbsim does not model, and a made-up one far from
     * every flag imported: notes, exit 0 */
    fp = fopen("test_megatron_typo.sh", "w");
    fputs("--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128 --seq-length 4096\n"
          "--expert-model-parallel-size 8 --bf16 --global-batch-size 256 --micro-batch-size 1\n"
          "--moe-router-fusion --moe-router-dtype fp32 --moe-permute-fusion --moe-token-drop-policy probs\n"
          "--moe-router-padding-for-fp8 --decoder-seq-length 4096 --frobnicate-experts 3\n",
          fp);
    fclose(fp);
    if (import("test_megatron_typo.sh", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.router_fusion, 1); /* --moe-router-fusion and --moe-permute-fusion are read */
    assert_int_equal(s.permute_fusion, 1);
    static const char *const kept[] = {"--moe-router-dtype: fp32", "--moe-token-drop-policy: probs", "--moe-router-padding-for-fp8",
                                       "--decoder-seq-length: 4096", "--frobnicate-experts: 3"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        char want[128];
        snprintf(want, sizeof want, "%s: not imported (mbsim has no equivalent)\n", kept[i]);
        if (!strstr(notes, want))
            fail_msg("no '%s' in:\n%s", want, notes);
    }
    assert_null(strstr(notes, "unknown Megatron-LM flag"));
    free(notes);
    mb_scenario_free(&s);
    remove("test_megatron_typo.sh");
}

/* Bad input: exit-1 errors with file:line:col and what was expected. */
static void test_bad_input(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char msg[1024];
    assert_string_equal(import_err("tests/data/import/bad_value.sh", MB_MEGATRON_LM, &o),
                        "tests/data/import/bad_value.sh:2:1: --tensor-model-parallel-size: parallel.tp: "
                        "expected an integer, got 'two'");
    /* a flag with a value, given none (line 4 after 62 characters, col 63): it needs one, not "got 'true'" */
    assert_string_equal(import_err("tests/data/import/no_value.sh", MB_MEGATRON_LM, &o),
                        "tests/data/import/no_value.sh:4:63: --micro-batch-size: data.micro_batch_size: the flag "
                        "needs a value");

    FILE *fp = fopen("test_megatron_bad.sh", "w");
    fputs("--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128\n"
          "  --moe-token-dispatcher-type nccl\n--lr '1e-4\n", fp);
    fclose(fp);
    assert_string_equal(import_err("test_megatron_bad.sh", MB_MEGATRON_LM, &o),
                        "test_megatron_bad.sh:3:6: unterminated ' quote");

    fp = fopen("test_megatron_bad.sh", "w");
    fputs("--num-layers 48 --hidden-size 2048 --num-attention-heads 32 --num-experts 128\n"
          "  --moe-token-dispatcher-type nccl\n", fp);
    fclose(fp);
    assert_string_equal(import_err("test_megatron_bad.sh", MB_MEGATRON_LM, &o),
                        "test_megatron_bad.sh:2:3: --moe-token-dispatcher-type: unknown dispatcher 'nccl'; "
                        "expected alltoall, allgather or flex");

    fp = fopen("test_megatron_bad.sh", "w");
    fputs("--num-layers 7 --hidden-size 333\n", fp);
    fclose(fp);
    assert_int_equal(import("test_megatron_bad.sh", MB_MEGATRON_LM, &o, &s, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no shipped model has num_layers=7, hidden_size=333"));

    o.model = "llama3_8b"; /* the architecture contradicts the named model */
    fp = fopen("test_megatron_bad.sh", "w");
    fputs("--num-layers 48 --hidden-size 4096\n", fp);
    fclose(fp);
    assert_string_equal(import_err("test_megatron_bad.sh", MB_MEGATRON_LM, &o),
                        "test_megatron_bad.sh:1:1: --num-layers: 48, but model llama3_8b has 32; give the "
                        "model the run trained");

    o.model = NULL;
    o.gpus = 0; /* nothing gives the GPU count */
    assert_int_equal(import("tests/data/import/unknown_flags.sh", MB_MEGATRON_LM, &o, &s, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "do not give the GPU count; give --gpus N or --nodes N"));

    /* Megatron-LM requires --seq-length: its absence is said, not a range error on 0 (issue 17 QA) */
    o.gpus = 8;
    o.model = "llama3_8b";
    fp = fopen("test_megatron_bad.sh", "w");
    fputs("--num-layers 32 --hidden-size 4096 --global-batch-size 8 --micro-batch-size 1 --bf16\n", fp);
    fclose(fp);
    assert_int_equal(import("test_megatron_bad.sh", MB_MEGATRON_LM, &o, &s, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no sequence length: give --seq-length N"));
    o.model = NULL;

    /* an unknown --system is the option's error, said before the file's settings are judged
     * (it came last, as "the imported settings do not make a valid scenario: unknown system") */
    o.system = "dgx_h1000";
    const char *sys_msg = import_err(QWEN, MB_MEGATRON_LM, &o);
    assert_non_null(strstr(sys_msg, "--system dgx_h1000: unknown system 'dgx_h1000'; known: "));
    assert_null(strstr(sys_msg, "do not make a valid scenario"));
    o.system = "dgx_h100";

    fp = fopen("test_megatron_bad.sh", "w");
    fputs("python train.py model.tensor_model_parallel_size=1 stray\n", fp);
    fclose(fp);
    struct mb_megatron_args a;
    mb_err_clear(&err);
    assert_int_equal(mb_megatron_read("test_megatron_bad.sh", MB_MEGATRON_BRIDGE, &a, &err), -1);
    mb_err_format(&err, msg, sizeof msg);
    assert_non_null(strstr(msg, "test_megatron_bad.sh:1:52: 'stray' is not an override; expected section.key=value"));
    remove("test_megatron_bad.sh");
}

/* The key table's Megatron names: each with its Bridge path, none twice. */
static void test_key_names(void **state)
{
    (void)state;
    size_t n;
    const struct mb_key *k = mb_keys(&n);
    int named = 0;
    for (size_t i = 0; i < n; i++) {
        if (!k[i].megatron)
            continue;
        named++;
        assert_non_null(k[i].bridge);
        assert_non_null(strchr(k[i].bridge, '.'));
        for (size_t j = i + 1; j < n; j++)
            if (k[j].megatron && !strcmp(k[i].megatron, k[j].megatron))
                fail_msg("%s and %s share the Megatron name %s", k[i].key, k[j].key, k[i].megatron);
    }
    assert_true(named >= 20);
}

/* Uneven pipeline splits as Megatron-Core states them become the layout they
 * amount to (virtual stage v = chunk v / pp of rank v % pp): 14 first-rank and
 * 18 last-rank layers over pp 2 x vpp 2 are 7 and 9 per chunk, so the stages
 * read 7, 9, 7, 9; the embedding and the loss counted as layers over 34 virtual
 * stages give each one unit (E alone, 32 single layers, L alone). Counts that
 * do not split are errors at the setting. */
static void test_uneven_split(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_err e;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    char buf[1024];
    if (import("tests/data/import/llama3_8b_uneven.sh", MB_MEGATRON_LM, &o, &s, NULL, &e)) {
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    assert_string_equal(s.pipeline_layout, "Ettttttt|ttttttttt|ttttttt|tttttttttL");
    mb_scenario_free(&s);
    if (import("tests/data/import/llama3_8b_account_bridge.txt", MB_MEGATRON_BRIDGE, &o, &s, NULL, &e)) {
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
    char want[128] = "E";
    for (int i = 0; i < 32; i++)
        strcat(want, "|t");
    strcat(want, "|L");
    assert_string_equal(s.pipeline_layout, want);
    mb_scenario_free(&s);
    /* 13 first-rank layers do not divide over vpp 2 */
    FILE *fp = fopen("mbsim_test_uneven.sh", "w");
    assert_non_null(fp);
    fputs("--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2\n"
          "--decoder-first-pipeline-num-layers 13 --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336\n"
          "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --seq-length 8192\n"
          "--micro-batch-size 1 --global-batch-size 128 --bf16\n", fp);
    fclose(fp);
    mb_err_clear(&e);
    assert_int_equal(import("mbsim_test_uneven.sh", MB_MEGATRON_LM, &o, &s, NULL, &e), -1);
    mb_err_format(&e, buf, sizeof buf);
    remove("mbsim_test_uneven.sh");
    if (!strstr(buf, "mbsim_test_uneven.sh:2:1: --decoder-first-pipeline-num-layers: first stage 13, last stage "
                     "not given: the 32 layers of model llama3_8b do not split over pp = 2, vpp = 2"))
        fail_msg("%s", buf);
}

/* Write text to path (a fixture built in the test, so that each line is where the expectation says). */
static void put(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* The formatted error of importing text (a Megatron-LM command line, or Bridge overrides) as llama3_8b. */
static const char *refused(const char *text, enum mb_megatron_dialect d)
{
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    put("mbsim_test_refused.txt", text);
    const char *msg = import_err("mbsim_test_refused.txt", d, &o);
    remove("mbsim_test_refused.txt");
    return msg;
}

#define LM_BASE "--num-layers 32 --hidden-size 4096 --seq-length 4096 --global-batch-size 64 --bf16\n"
#define BR_BASE "model.seq_length=4096 train.global_batch_size=64 train.micro_batch_size=1\n"

/* What argparse and Megatron refuse (issue 37): each an error at the word, with the reason. Columns
 * by hand: line 2 of each text, after the words written before it. */
static void test_refused(void **state)
{
    (void)state;
    /* argparse: a bare `--` makes every later word positional; a word no flag takes; the string None */
    assert_string_equal(refused(LM_BASE "python pretrain_gpt.py -- --tensor-model-parallel-size 2\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:24: '--': argparse takes every word after it as a positional "
                        "argument, and Megatron-LM has none (its parser exits with \"unrecognized arguments\"); "
                        "remove it");
    assert_string_equal(refused(LM_BASE "--tensor-model-parallel-size=2 4\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:32: '4' follows no flag that takes a value (Megatron-LM's "
                        "argparse exits with \"unrecognized arguments\")");
    assert_string_equal(refused(LM_BASE "--tensor-model-parallel-size None\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:1: --tensor-model-parallel-size: parallel.tp: expected an "
                        "integer, got 'None'");
    /* validate_args and TransformerConfig */
    assert_string_equal(refused(LM_BASE "--fp8-format hybrid --fp4-format e2m1\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:21: --fp4-format: refused beside --fp8-format (2:1): validate_args: "
                        "\"--fp4-format and --fp8-format cannot be used simultaneously\"");
    assert_string_equal(refused(LM_BASE "--enable-cuda-graph --cuda-graph-impl local\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:21: --cuda-graph-impl: refused beside --enable-cuda-graph (2:1): "
                        "validate_args: \"Do not use --enable-cuda-graph or --external-cuda-graph with "
                        "--cuda-graph-impl\"");
    assert_string_equal(refused(LM_BASE "--cuda-graph-impl transformer_engine --cuda-graph-scope attn "
                                "--cuda-graph-modules attn\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:62: --cuda-graph-modules: refused beside --cuda-graph-scope (2:38): "
                        "validate_args: \"--cuda-graph-scope and --cuda-graph-modules cannot be used together\"");
    /* Megatron-LM's default dispatcher is allgather: --moe-enable-deepep alone is refused by Megatron-Core */
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "qwen3_30b_a3b", .gpus = 8};
    put("mbsim_test_refused.txt", "--num-layers 48 --seq-length 4096 --global-batch-size 64 --bf16 --num-experts 128\n"
                                  "--moe-enable-deepep\n");
    assert_string_equal(import_err("mbsim_test_refused.txt", MB_MEGATRON_LM, &o),
                        "mbsim_test_refused.txt:2:1: --moe-enable-deepep: the DeepEP backend needs "
                        "--moe-token-dispatcher-type flex (Megatron-Core refuses it with the default allgather)");
    remove("mbsim_test_refused.txt");
    /* Bridge: bf16 and fp16 (a preset's and an override's), fp8 over an FP4 preset, FSDP twice */
    assert_string_equal(refused(BR_BASE "mixed_precision=bf16_mixed mixed_precision.fp16=true\n", MB_MEGATRON_BRIDGE),
                        "mbsim_test_refused.txt:2:28: mixed_precision.fp16: bf16 and fp16 both on (bf16_mixed): "
                        "Megatron-Bridge refuses a model config with both");
    assert_string_equal(refused(BR_BASE "mixed_precision=bf16_with_nvfp4_mixed mixed_precision.fp8=hybrid\n",
                                MB_MEGATRON_BRIDGE),
                        "mbsim_test_refused.txt:2:39: mixed_precision.fp8: fp8 (hybrid) and fp4 (e2m1) together: "
                        "Megatron-Bridge refuses them (\"fp4 and fp8 cannot be used simultaneously\")");
    assert_string_equal(refused(BR_BASE "dist.use_torch_fsdp2=true ddp.use_megatron_fsdp=true\n", MB_MEGATRON_BRIDGE),
                        "mbsim_test_refused.txt:2:27: ddp.use_megatron_fsdp: refused beside dist.use_torch_fsdp2 "
                        "(2:1): ConfigContainer.validate: \"use_megatron_fsdp and use_torch_fsdp2 are mutually "
                        "exclusive\"");
    /* a rule of the scenario check is reported at the flag that gave the value: TP 16 x PP 1 does not
     * divide 8 GPUs (the parallel section's first setting) */
    assert_string_equal(refused(LM_BASE "--micro-batch-size 1 --tensor-model-parallel-size 16\n", MB_MEGATRON_LM),
                        "mbsim_test_refused.txt:2:22: --tensor-model-parallel-size: the imported settings do not "
                        "make a valid scenario: tp*pp*cp = 16 does not divide gpus = 8");
}

/* What Megatron accepts and means otherwise than a last-wins reading (issue 37): Bridge applies a
 * preset, then the mixed_precision fields given over it; turns the distributed optimizer on when
 * either section asks; a log prints fp8_param_gather False beside fp4_param_gather True; a pipe ends
 * the command and a redirection is skipped. */
static void test_read_as_framework(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    /* the preset's FP8 format (hybrid) with the override's recipe: tensorwise = fp8_cs, not the
     * preset's delayed; the preset's fp32 gradient reduction stands */
    put("mbsim_test_fw.txt", BR_BASE "mixed_precision=bf16_with_fp8_delayed_scaling_mixed "
                                     "mixed_precision.fp8_recipe=tensorwise\n"
                                     "ddp.use_distributed_optimizer=false optimizer.use_distributed_optimizer=true\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_int_equal(s.grad_bytes, 4);
    assert_int_equal(s.dist_opt, 1);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:3:37: optimizer.use_distributed_optimizer: true beside "
                                  "ddp.use_distributed_optimizer=false (3:1): Megatron-Bridge turns the distributed "
                                  "optimizer on for both"));
    free(notes);
    mb_scenario_free(&s);
    /* fp16_mixed reduces gradients in 16 bits (its grad_reduce_in_fp32=False) */
    put("mbsim_test_fw.txt", BR_BASE "mixed_precision=fp16_mixed\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_BRIDGE, &o, &s, NULL, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.prec.label, "fp16");
    assert_int_equal(s.grad_bytes, 2);
    mb_scenario_free(&s);
    /* a log of an NVFP4 run (on GB200: NVFP4 needs Blackwell): the set fp4_param_gather, not the unset
     * fp8_param_gather printed after it */
    o.system = "gb200_nvl72";
    put("mbsim_test_fw.txt", "  bf16 ......... True\n  fp4 .......... e2m1\n  fp4_param_gather ..... True\n"
                             "  fp8_param_gather ..... False\n  num_layers ..... 32\n  seq_length ..... 4096\n"
                             "  global_batch_size ..... 64\n  use_distributed_optimizer ..... True\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, NULL, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(s.prec.label, "nvfp4");
    assert_int_equal(s.fp8_param_gather, 1);
    mb_scenario_free(&s);
    o.system = "dgx_h100";
    /* the pipe ends the command (a note says where); the redirection is not a value of --bf16 */
    put("mbsim_test_fw.txt", "torchrun pretrain_gpt.py " LM_BASE "  --tensor-model-parallel-size 2 2>&1 | tee log.txt\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.tp, 2);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:39: the command ends at '|': the words after it (tee ...) "
                                  "are not read"));
    free(notes);
    mb_scenario_free(&s);
    /* one flag given twice with two values: argparse keeps the last, and so does the import, with a
     * note naming the value replaced (LM_BASE's --seq-length 4096 is at 1:36; the second is at 2:1) */
    put("mbsim_test_fw.txt", LM_BASE "--seq-length 8192\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.seq_length, 8192);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:1: --seq-length: given again: the value 4096 of 1:36 is "
                                  "replaced by 8192 (the last one wins, as argparse takes it)"));
    free(notes);
    mb_scenario_free(&s);
    /* Adam moment dtypes are the precision-aware optimizer's: without it they change nothing (a note), and
     * with it an absent one is Megatron's fp32, so bf16 + (fp32) is not one mbsim setting (a note) */
    put("mbsim_test_fw.txt", LM_BASE "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.state_bytes, 8);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:1: --exp-avg-dtype: ignored: without "
                                  "--use-precision-aware-optimizer the Adam moments stay fp32"));
    free(notes);
    mb_scenario_free(&s);
    /* a setting without effect on the scenario is read and noted (--emit leaves it out): the HybridEP
     * permute fusion under the deepep backend (flex's default) */
    o.model = "qwen3_30b_a3b";
    put("mbsim_test_fw.txt", "--num-layers 48 --seq-length 4096 --global-batch-size 64 --bf16 --num-experts 128\n"
                             "--moe-token-dispatcher-type flex --moe-permute-fusion-into-hybridep\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.dispatcher, MB_DISP_DEEPEP);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:34: --moe-permute-fusion-into-hybridep: ignored: "
                                  "moe.hybridep_permute_fusion has no effect on this scenario"));
    free(notes);
    mb_scenario_free(&s);
    o.model = "llama3_8b";
    /* bias_activation_fusion: --no-bias-swiglu-fusion under SwiGLU (llama3_8b) turns it off, the GELU
     * switch does nothing there (Megatron-LM's argument_utils.py); Bridge's field; both emitted back */
    put("mbsim_test_fw.txt", LM_BASE "--no-bias-swiglu-fusion --no-bias-gelu-fusion\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.bias_act_fusion, 0);
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:25: --no-bias-gelu-fusion: ignored: model llama3_8b's "
                                  "activation is SwiGLU"));
    assert_null(strstr(notes, "--no-bias-swiglu-fusion: not imported")); /* read, so not listed */
    /* it changes nothing on a dense model (mbsim prices the unfused activation of MoE experts only): said
     * at the flag, and kept, so that --emit gives it back */
    assert_non_null(strstr(notes, "mbsim_test_fw.txt:2:1: --no-bias-swiglu-fusion: ignored in the simulation (kept "
                                  "for --emit): training.bias_activation_fusion: false changes nothing"));
    char *out = emit(&s, MB_MEGATRON_LM);
    assert_non_null(strstr(out, "--no-bias-swiglu-fusion"));
    free(out);
    free(notes);
    mb_scenario_free(&s);
    put("mbsim_test_fw.txt", BR_BASE "model.bias_activation_fusion=false\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_BRIDGE, &o, &s, NULL, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.bias_act_fusion, 0);
    out = emit(&s, MB_MEGATRON_BRIDGE);
    assert_non_null(strstr(out, "model.bias_activation_fusion=false"));
    free(out);
    mb_scenario_free(&s);
    put("mbsim_test_fw.txt", LM_BASE "--use-precision-aware-optimizer --exp-avg-dtype bf16\n");
    if (import("mbsim_test_fw.txt", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.state_bytes, 8);
    assert_non_null(strstr(notes, "--exp-avg-dtype: not simulated: mbsim keeps both Adam moments in fp32 or both in "
                                  "bf16 (optimizer.states); exp_avg bf16, exp_avg_sq fp32"));
    free(notes);
    mb_scenario_free(&s);
    remove("mbsim_test_fw.txt");
}

/* --emit bridge writes what Bridge applies (issue 37): the gradient dtype under mixed_precision (its
 * setup writes over ddp's), FSDP2 under dist; importing it back gives the same scenario. */
static void test_emit_bridge_paths(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    struct mb_scenario s, s2;
    struct mb_err err;
    put("mbsim_test_emit.txt", BR_BASE "mixed_precision=bf16_mixed mixed_precision.grad_reduce_in_fp32=false\n"
                                       "dist.use_torch_fsdp2=true\n");
    if (import("mbsim_test_emit.txt", MB_MEGATRON_BRIDGE, &o, &s, NULL, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s.grad_bytes, 2);
    assert_int_equal(s.strategy, MB_STRAT_FSDP);
    assert_int_equal(s.fsdp_impl, MB_FSDP_TORCH2);
    char *out = emit(&s, MB_MEGATRON_BRIDGE);
    assert_non_null(strstr(out, "mixed_precision.grad_reduce_in_fp32=false"));
    assert_non_null(strstr(out, "dist.use_torch_fsdp2=true"));
    assert_null(strstr(out, "ddp.grad_reduce_in_fp32"));
    put("mbsim_test_emit.txt", out);
    free(out);
    if (import("mbsim_test_emit.txt", MB_MEGATRON_BRIDGE, &o, &s2, NULL, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(s2.grad_bytes, 2);
    assert_int_equal(s2.fsdp_impl, MB_FSDP_TORCH2);
    mb_scenario_free(&s2);
    mb_scenario_free(&s);
    remove("mbsim_test_emit.txt");
}

/* Property (issue 36): every emitted configuration passes the mirrored Megatron rules and imports back
 * to the same prediction. Random layouts of Qwen3-30B-A3B on 16 H100 (seeded LCG, so a failure
 * reproduces): TP, PP, VPP, EP, MBS, recompute (granularity, modules, method, num_layers), CUDA graphs,
 * dispatcher, EP overlap; those mb_scenario_check refuses are skipped, each kept one is emitted in both
 * dialects, imported, checked and simulated. The reference is the scenario's own simulation. */
static unsigned prop_next(unsigned long long *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL; /* Knuth's MMIX LCG */
    return (unsigned)(*x >> 33);
}

static int prop_pick(unsigned long long *x, const int *v, int n) { return v[prop_next(x) % (unsigned)n]; }

static void prop_random(struct mb_scenario *c, unsigned long long *x)
{
    static const int tps[] = {1, 2, 4}, pps[] = {1, 2, 4}, vpps[] = {1, 1, 2}, eps[] = {1, 2, 4, 8, 16},
                     mbss[] = {1, 2}, nls[] = {0, 0, 1, 2}, grans[] = {MB_RC_NONE, MB_RC_SELECTIVE, MB_RC_FULL},
                     methods[] = {MB_RC_UNIFORM, MB_RC_BLOCK}, disps[] = {MB_DISP_ALLTOALL, MB_DISP_DEEPEP,
                                                                            MB_DISP_HYBRIDEP};
    static const int cgs[] = {0, MB_CG_ATTN | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS, MB_CG_LAYER,
                              MB_CG_FULL_ITERATION};
    static const int mods[] = {0, MB_RCM_CORE_ATTN, MB_RCM_LAYERNORM, MB_RCM_MOE_ACT, MB_RCM_MOE_ACT | MB_RCM_LAYERNORM,
                               MB_RCM_MOE};
    c->tp = prop_pick(x, tps, 3);
    c->pp = prop_pick(x, pps, 3);
    c->vpp = c->pp > 1 ? prop_pick(x, vpps, 3) : 1;
    c->ep = prop_pick(x, eps, 5);
    c->micro_batch_size = prop_pick(x, mbss, 2);
    c->sequence_parallel = -1;
    c->recompute = (enum mb_rc_gran)prop_pick(x, grans, 3);
    c->recompute_modules = c->recompute == MB_RC_SELECTIVE ? (unsigned)prop_pick(x, mods, 6) : 0;
    c->recompute_method = c->recompute == MB_RC_FULL ? (enum mb_rc_method)prop_pick(x, methods, 2) : MB_RC_UNIFORM;
    c->recompute_num_layers = c->recompute == MB_RC_FULL ? prop_pick(x, nls, 4) : 0;
    c->cuda_graph = (unsigned)prop_pick(x, cgs, 4);
    c->dispatcher = (enum mb_dispatcher)prop_pick(x, disps, 3);
    c->overlap_ep_comm = (int)(prop_next(x) % 3 == 0);
}

static void prop_roundtrip(const struct mb_scenario *c, const struct mb_result *r, enum mb_megatron_dialect d)
{
    struct mb_megatron_opts o = {.system = "dgx_h100", .gpus = 16, .model = "qwen3_30b_a3b"};
    struct mb_scenario b;
    struct mb_err err;
    struct mb_result rb;
    char *out = emit(c, d);
    put("mbsim_test_prop.txt", out);
    if (import("mbsim_test_prop.txt", d, &o, &b, NULL, &err))
        fail_msg("TP%d PP%d VPP%d EP%d rc %d/%u/%d/%d cg %u: the emitted %s does not import: %s\n%s", c->tp, c->pp,
                 c->vpp, c->ep, c->recompute, c->recompute_modules, c->recompute_method, c->recompute_num_layers,
                 c->cuda_graph, d == MB_MEGATRON_LM ? "flags" : "overrides", err.msg, out);
    mb_err_clear(&err);
    if (mb_scenario_check(&b, &err))
        fail_msg("the imported configuration breaks a rule: %s\n%s", err.msg, out);
    assert_int_equal(mb_step_simulate(&b, &rb, &err), 0);
    if (fabs(rb.step_time_s / r->step_time_s - 1) > 1e-12 || rb.mem.peak_allocated != r->mem.peak_allocated)
        fail_msg("TP%d PP%d VPP%d EP%d rc %d/%u/%d/%d cg %u: %.9g s %.6g B before, %.9g s %.6g B after (%s)\n%s",
                 c->tp, c->pp, c->vpp, c->ep, c->recompute, c->recompute_modules, c->recompute_method,
                 c->recompute_num_layers, c->cuda_graph, r->step_time_s, r->mem.peak_allocated, rb.step_time_s,
                 rb.mem.peak_allocated, d == MB_MEGATRON_LM ? "megatron" : "bridge", out);
    mb_result_free(&rb);
    mb_scenario_free(&b);
    free(out);
}

static void test_emit_property(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100"};
    struct mb_scenario s;
    struct mb_err err;
    if (import(QWEN, MB_MEGATRON_LM, &o, &s, NULL, &err))
        fail_msg("%s", err.msg);
    s.global_batch_size = 64; /* few microbatches: a short test */
    unsigned long long x = 36;
    int kept = 0;
#ifdef MBSIM_SANITIZED
    const int draws = 40; /* each case simulates 5 steps: 300 take minutes under ASan and the invariant checks */
#else
    const int draws = 300;
#endif
    for (int i = 0; i < draws; i++) {
        struct mb_scenario c = s; /* shares the model: not freed */
        prop_random(&c, &x);
        mb_err_clear(&err);
        if (mb_scenario_check(&c, &err))
            continue;
        struct mb_result r;
        assert_int_equal(mb_step_simulate(&c, &r, &err), 0);
        prop_roundtrip(&c, &r, MB_MEGATRON_LM);
        prop_roundtrip(&c, &r, MB_MEGATRON_BRIDGE);
        mb_result_free(&r);
        kept++;
    }
    remove("mbsim_test_prop.txt");
    assert_true(kept >= draws / 5); /* the property was tested on many layouts, not vacuously */
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_roundtrip), cmocka_unit_test(test_emit_vlm_note), cmocka_unit_test(test_bridge_lora), cmocka_unit_test(test_bridge_fp8_weights_and_deferral),
        cmocka_unit_test(test_log_and_bridge), cmocka_unit_test(test_log_measured),
        cmocka_unit_test(test_example_scripts), cmocka_unit_test(test_script_constructs),
        cmocka_unit_test(test_script_refused), cmocka_unit_test(test_log_values), cmocka_unit_test(test_log_steady), cmocka_unit_test(test_log_bad_iteration), cmocka_unit_test(test_attention_dropout_default), cmocka_unit_test(test_uneven_split),
        cmocka_unit_test(test_unknown_listed),
        cmocka_unit_test(test_bad_input), cmocka_unit_test(test_typo),
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_refused), cmocka_unit_test(test_read_as_framework),
        cmocka_unit_test(test_emit_bridge_paths), cmocka_unit_test(test_emit_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
