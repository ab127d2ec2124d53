/*
 * test_megatron_yaml.c -- `mbsim import megatron|bridge` of YAML files:
 * Megatron-LM's --yaml-cfg (megatron/training/yaml_arguments.py) and
 * Megatron-Bridge's --config-file (omegaconf_utils.py), read into the settings
 * the flag and override readers fill (workloads/import/mb_megatron_yaml.c).
 *
 * Where the expectations come from: the real configs under
 * tests/data/import/megatron_yaml/ and bridge_yaml/ (verbatim upstream copies,
 * README.md there); each asserted value is the one the file states at the
 * line named beside it, or the framework's documented meaning of its
 * absence. The hostile fixtures beside them are written for these tests; each
 * error's file:line:col is the offending token's position in that file,
 * counted by hand. No predicted number is asserted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mb_megatron.h"
#include "test_megatron_util.h"

#define LM "tests/data/import/megatron_yaml/"
#define BR "tests/data/import/bridge_yaml/"

/* The import of `file` fails with a message that starts with `want` (file:line:col: ...) and holds `also`. */
static void refused(const char *file, enum mb_megatron_dialect d, const struct mb_megatron_opts *o,
                    const char *want, const char *also)
{
    struct mb_scenario s;
    struct mb_err err;
    char msg[1024];
    assert_int_equal(import(file, d, o, &s, NULL, &err), -1);
    mb_err_format(&err, msg, sizeof msg);
    if (strncmp(msg, want, strlen(want)) || (also && !strstr(msg, also)))
        fail_msg("%s: got \"%s\", expected \"%s...%s\"", file, msg, want, also ? also : "");
}

/* examples/gpt3/gpt_config.yaml: model_parallel: TP 1 (line 76), CP 1, PP 1, EP 1, sequence_parallel
 * True (80), bf16 True / fp16 False (88-89); micro_batch_size 2 (137), global_batch_size 128 (138),
 * seq_length 4096 (264), use_distributed_optimizer False (225), overlap_grad_reduce False (218),
 * recompute_granularity null (45: no recompute). world_size comes from the environment: --gpus 8. */
static void test_lm_example(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = LM "gpt_config_model.yaml", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import(LM "gpt_config.yaml", MB_MEGATRON_LM, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.gpus, 8);
    assert_int_equal(s.tp, 1);
    assert_int_equal(s.pp, 1);
    assert_int_equal(s.cp, 1);
    assert_int_equal(s.micro_batch_size, 2);
    assert_int_equal(s.global_batch_size, 128);
    assert_int_equal(s.seq_length, 4096);
    assert_string_equal(s.prec.label, "bf16");
    assert_int_equal(s.recompute, MB_RC_NONE);
    assert_int_equal(s.dist_opt, 0);
    assert_int_equal(s.overlap_grad_reduce, 0);
    assert_non_null(strstr(notes, "gpt_config.yaml: read as a Megatron-LM YAML config (--yaml-cfg"));
    /* a key mbsim does not read, at its line; the file's None/False entries are not listed */
    assert_non_null(strstr(notes, "gpt_config.yaml:139:1: rampup_batch_size: 32 32 65324160: not imported"));
    assert_null(strstr(notes, "num_moe_experts"));
    free(notes);
    mb_scenario_free(&s);
}

/* The last upstream version gives global_batch_size (138) and step_batch_size_schedule (139), which
 * validate_yaml refuses together: the error is at the second, naming the first. */
static void test_lm_step_schedule(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = LM "gpt_config_model.yaml", .gpus = 8};
    refused(LM "gpt_config_step_schedule.yaml", MB_MEGATRON_LM, &o,
            LM "gpt_config_step_schedule.yaml:139:1: step_batch_size_schedule: refused beside global_batch_size "
               "(138:1)", "Cannot specify both");
}

static void test_lm_hostile(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = LM "gpt_config_model.yaml", .gpus = 8};
    /* Alias copies (mb_yaml.c MB_YAML_MAX_ALIAS_NODES = 100,000): a copy of a, b, c, d, e holds
     * 10, 91, 820, 7,381, 66,430 nodes (the list and nine copies of the level below), so lines 3-6
     * copy 9 x (10 + 91 + 820 + 7,381) = 74,718 nodes and the first *e on line 7 crosses the budget. */
    refused(LM "bad_alias_bomb.yaml", MB_MEGATRON_LM, &o, LM "bad_alias_bomb.yaml:7:", "aliases expand to more than 100000 nodes");
    refused(LM "bad_root_list.yaml", MB_MEGATRON_LM, &o,
            LM "bad_root_list.yaml:2:1: expected a mapping at the top of the file", "got a sequence");
    refused(LM "bad_duplicate.yaml", MB_MEGATRON_LM, &o,
            LM "bad_duplicate.yaml:4:3: duplicate key 'tensor_model_parallel_size' (first defined at line 2)", NULL);
    refused(LM "bad_type.yaml", MB_MEGATRON_LM, &o,
            LM "bad_type.yaml:2:3: model_parallel.tensor_model_parallel_size: ", "two");
    refused(LM "bad_mapping_value.yaml", MB_MEGATRON_LM, &o,
            LM "bad_mapping_value.yaml:3:3: model_parallel.pipeline_model_parallel_size: expected a value, got a "
               "mapping", NULL);
    refused(LM "bad_twice.yaml", MB_MEGATRON_LM, &o,
            LM "bad_twice.yaml:4:3: model_parallel.micro_batch_size: also given as micro_batch_size (1:1)", NULL);
    refused(LM "bad_no_section.yaml", MB_MEGATRON_LM, &o, LM "bad_no_section.yaml:2:1: no language_model: mapping",
            NULL);
    refused(LM "bad_null_tp.yaml", MB_MEGATRON_LM, &o,
            LM "bad_null_tp.yaml:2:3: model_parallel.tensor_model_parallel_size: null: Megatron-LM's validate_yaml",
            NULL);
    refused(LM "bad_env.yaml", MB_MEGATRON_LM, &o,
            LM "bad_env.yaml:8:1: seq_length: expected a value, got a value with ${VAR}", NULL);
}

/* examples/models/qwen/qwen_vl/conf/qwen3_vl_pretrain_override_example.yaml: model: seq_length 4096
 * (17; dataset: 4096 at 87 agrees), TP 1, PP 1, CP 1 (19-21), cp_comm_type p2p (22),
 * cross_entropy_loss_fusion false (23), recompute full / uniform / 1 (24-26); train: GBS 8, MBS 4
 * (36-37); ddp.grad_reduce_in_fp32 (86) is one that Bridge's mixed-precision setup writes over.
 * The file gives no architecture and no image counts (mbsim's VL models need data.images), so the
 * layout is read onto the Qwen3-VL text tower's twin, qwen3_30b_a3b, with --model. */
static void test_bridge_examples(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "qwen3_30b_a3b", .gpus = 2}; /* GBS 8 = MBS 4 x DP 2 */
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import(BR "qwen3_vl_pretrain_override_example.yaml", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.tp, 1);
    assert_int_equal(s.pp, 1);
    assert_int_equal(s.cp, 1);
    assert_int_equal(s.cp_a2a, 0);
    assert_int_equal(s.seq_length, 4096);
    assert_int_equal(s.global_batch_size, 8);
    assert_int_equal(s.micro_batch_size, 4);
    assert_int_equal(s.ce_fusion, 0);
    assert_int_equal(s.recompute, MB_RC_FULL);
    assert_int_equal(s.recompute_method, MB_RC_UNIFORM);
    assert_int_equal(s.recompute_num_layers, 1);
    assert_non_null(strstr(notes, "read as a Megatron-Bridge YAML config (--config-file"));
    assert_non_null(strstr(notes, "qwen3_vl_pretrain_override_example.yaml:86:3: ddp.grad_reduce_in_fp32: not "
                                  "imported: Megatron-Bridge's mixed-precision setup"));
    free(notes);
    mb_scenario_free(&s);

    /* tutorials/recipes/llama/conf/llama32_1b_pretrain.yaml: TP 1, PP 1, CP 1 (54-56), GBS 8, MBS 1
     * (28-29), sequence 4096 (22 and 53). No architecture: the model is --model's. */
    o.model = "llama3_8b";
    o.gpus = 8;
    if (import(BR "llama32_1b_pretrain.yaml", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.tp, 1);
    assert_int_equal(s.pp, 1);
    assert_int_equal(s.global_batch_size, 8);
    assert_int_equal(s.micro_batch_size, 1);
    assert_int_equal(s.seq_length, 4096);
    free(notes);
    mb_scenario_free(&s);
}

/* sections.yaml: null as None (virtual_pipeline_model_parallel_size: no VPP), YAML 1.1 booleans
 * (`yes` on, `Off` off), a list, the preset as a top-level scalar (FP8 current scaling), and a
 * section Bridge has no field for (training:) listed and not read: TP stays 2. */
static void test_bridge_sections(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 16};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import(BR "sections.yaml", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.tp, 2);
    assert_int_equal(s.pp, 2);
    assert_int_equal(s.vpp, 1);
    assert_int_equal(s.sequence_parallel, 1);
    assert_int_equal(s.recompute, MB_RC_SELECTIVE);
    assert_int_equal(s.recompute_modules, MB_RCM_CORE_ATTN | MB_RCM_MLP);
    assert_int_equal(s.global_batch_size, 64);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_int_equal(s.overlap_grad_reduce, 0);
    assert_non_null(strstr(notes, "sections.yaml:14:3: training.tensor_model_parallel_size: not imported: "
                                  "Megatron-Bridge does not read tensor_model_parallel_size from training."));
    free(notes);
    mb_scenario_free(&s);
}

static void test_bridge_hostile(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    refused(BR "bad_root_scalar.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_root_scalar.yaml:1:1: expected a mapping at the top of the file", "got a scalar");
    refused(BR "bad_duplicate.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_duplicate.yaml:5:1: duplicate key 'model' (first defined at line 1)", NULL);
    refused(BR "bad_section_scalar.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_section_scalar.yaml:1:8: model: expected a mapping of model settings", NULL);
    refused(BR "bad_type.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_type.yaml:4:3: train.global_batch_size: 2 values ('8', '16'): it takes one", NULL);
    refused(BR "bad_interpolation.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_interpolation.yaml:4:3: model.seq_length: expected a value, got an OmegaConf interpolation", NULL);
    refused(BR "bad_null.yaml", MB_MEGATRON_BRIDGE, &o,
            BR "bad_null.yaml:3:3: model.tensor_model_parallel_size: null: Megatron-Core has no None", NULL);
}

/* run_with_config.sh: `--config-file llama32_1b_pretrain.yaml` (TP 1, GBS 8, MBS 1, seq 4096) between
 * the overrides model.tensor_model_parallel_size=2 and train.global_batch_size=16. Bridge merges the
 * file before every override (omegaconf_utils.py process_config_with_overrides), so the overrides win
 * wherever the option stands: TP 2, GBS 16; MBS and the sequence are the file's. The file is found
 * beside the script. Errors inside the file are at its own file:line:col. */
static void test_bridge_config_file(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import(BR "run_with_config.sh", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.tp, 2);
    assert_int_equal(s.global_batch_size, 16);
    assert_int_equal(s.micro_batch_size, 1);
    assert_int_equal(s.seq_length, 4096);
    assert_non_null(strstr(notes, BR "llama32_1b_pretrain.yaml: read as a Megatron-Bridge YAML config"));
    free(notes);
    mb_scenario_free(&s);
    refused(BR "run_with_bad_config.sh", MB_MEGATRON_BRIDGE, &o,
            BR "bad_type.yaml:4:3: train.global_batch_size: 2 values ('8', '16'): it takes one", NULL);
    refused(BR "run_with_missing_config.sh", MB_MEGATRON_BRIDGE, &o,
            BR "run_with_missing_config.sh:1:22: --config-file no_such_config.yaml: cannot open it", NULL);
}

/* The form is told by the content when the name does not say: a YAML config saved as .txt. */
static void test_detection(void **state)
{
    (void)state;
    struct mb_megatron_opts o = {.system = "dgx_h100", .model = "llama3_8b", .gpus = 8};
    struct mb_scenario s;
    struct mb_err err;
    char *notes;
    if (import("tests/data/import/bridge_config_as_text.txt", MB_MEGATRON_BRIDGE, &o, &s, &notes, &err))
        fail_msg("%s:%d:%d: %s", err.file, err.line, err.col, err.msg);
    assert_int_equal(s.tp, 4);
    assert_non_null(strstr(notes, "read as a Megatron-Bridge YAML config"));
    free(notes);
    mb_scenario_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lm_example),      cmocka_unit_test(test_lm_step_schedule),
        cmocka_unit_test(test_lm_hostile),      cmocka_unit_test(test_bridge_examples),
        cmocka_unit_test(test_bridge_sections), cmocka_unit_test(test_bridge_hostile),
        cmocka_unit_test(test_bridge_config_file), cmocka_unit_test(test_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
