/*
 * test_validate.c -- `mbsim validate` library part: exact statistics, the
 * recompute / system / precision mappings for every spelling in the public
 * measured CSV, the skip rules on a small fixture CSV (and parse-only mode),
 * scenario files with and without a measured: block, exact "file:line:col:
 * message" errors for broken CSV fixtures, the text and JSON reports, an
 * end-to-end run over shared/data/measured/public_measured.csv, drift against
 * a baseline, rows on several threads (jobs) and system/model paths in a CSV.
 * The recipe columns, notes and FLOP conventions: test_validate_recipe.c;
 * memory: test_validate_memory.c; the shared helpers: test_validate_util.h.
 *
 * Run from the source tree (ctest sets WORKING_DIRECTORY, MBSIM_DATA_DIR and
 * MBSIM_SHARED_DIR), so fixture paths and the paths in messages are relative.
 *
 * Calibration: the scenario files (tiny_*.yaml) name the H100 test fixture
 * table. CSV rows have no calibration column, so small.csv and the public CSV
 * are predicted on the SHIPPED tables, as `mbsim validate` predicts published
 * runs; those tests assert only skip rules, consistency of the statistics and
 * that predictions are positive and finite, never a predicted value.
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

/* Step 1: statistics on hand-computed inputs.
 * errors +10, -20, +30 -> |e| = 10, 20, 30: mean 20, median 20, max 30.
 * errors +1, -2, +3, -4 -> |e| = 1..4: mean 2.5, median (2+3)/2 = 2.5, max 4.
 * errors -7 -> everything 7. No errors -> -1 and NaN. */
static void test_stats(void **state)
{
    (void)state;
    double mape, med, mx;
    const double a[] = {10, -20, 30};
    assert_int_equal(mb_validate_stats(a, 3, &mape, &med, &mx), 0);
    assert_true(mb_dbl_eq(mape, 20.0));
    assert_true(mb_dbl_eq(med, 20.0));
    assert_true(mb_dbl_eq(mx, 30.0));

    const double b[] = {1, -2, 3, -4};
    assert_int_equal(mb_validate_stats(b, 4, &mape, &med, &mx), 0);
    assert_true(mb_dbl_eq(mape, 2.5));
    assert_true(mb_dbl_eq(med, 2.5));
    assert_true(mb_dbl_eq(mx, 4.0));

    /* unsorted input, odd n: |e| = 50, 5, 0.5, 12, 3 -> sorted 0.5 3 5 12 50 */
    const double c[] = {-50, 5, 0.5, -12, 3};
    assert_int_equal(mb_validate_stats(c, 5, &mape, &med, &mx), 0);
    assert_true(mb_dbl_eq(mape, 70.5 / 5));
    assert_true(mb_dbl_eq(med, 5.0));
    assert_true(mb_dbl_eq(mx, 50.0));

    const double d[] = {-7};
    assert_int_equal(mb_validate_stats(d, 1, &mape, &med, &mx), 0);
    assert_true(mb_dbl_eq(mape, 7.0) && mb_dbl_eq(med, 7.0) && mb_dbl_eq(mx, 7.0));

    assert_int_equal(mb_validate_stats(NULL, 0, &mape, &med, &mx), -1);
    assert_true(isnan(mape) && isnan(med) && isnan(mx));
}

/* Step 2: every distinct recompute cell of the public CSV, plus aliases and
 * the unknown-module skip. */
static void test_recompute_cells(void **state)
{
    (void)state;
    static const struct {
        const char *cell;
        enum mb_rc_gran gran;
        unsigned mods;
    } t[] = {
        {"", MB_RC_NONE, 0},
        {"none", MB_RC_NONE, 0},
        {"none [v0.6.0 qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config]", MB_RC_NONE, 0},
        {"none [v0.6.0 qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config]", MB_RC_NONE, 0},
        {"full", MB_RC_FULL, 0},
        {"full (--checkpoint-activations)", MB_RC_FULL, 0},
        {"selective: []", MB_RC_NONE, 0},
        {"selective: [] (none)", MB_RC_NONE, 0},
        {"selective: [] (no modules) [v0.6.0 deepseek_v3_pretrain_256gpu_gb300_fp8mx_config]", MB_RC_NONE, 0},
        {"selective: core_attn", MB_RC_SELECTIVE, MB_RCM_CORE_ATTN},
        {"selective: core_attn, gdn_norm_out, moe_act", MB_RC_SELECTIVE,
         MB_RCM_CORE_ATTN | MB_RCM_GDN_NORM_OUT | MB_RCM_MOE_ACT},
        {"selective: core_attn, layernorm", MB_RC_SELECTIVE, MB_RCM_CORE_ATTN | MB_RCM_LAYERNORM},
        {"selective: layernorm, moe_act", MB_RC_SELECTIVE, MB_RCM_LAYERNORM | MB_RCM_MOE_ACT},
        {"selective: mla_up_proj", MB_RC_SELECTIVE, MB_RCM_MLA_UP_PROJ},
        {"selective: mla_up_proj [v0.6.0 deepseek_v3_pretrain_256gpu_gb200_fp8mx_config]", MB_RC_SELECTIVE,
         MB_RCM_MLA_UP_PROJ},
        {"selective: mla_up_proj, mlp", MB_RC_SELECTIVE, MB_RCM_MLA_UP_PROJ | MB_RCM_MLP},
        {"selective: mlp", MB_RC_SELECTIVE, MB_RCM_MLP},
        {"selective: mlp, core_attn", MB_RC_SELECTIVE, MB_RCM_MLP | MB_RCM_CORE_ATTN},
        {"selective: moe", MB_RC_SELECTIVE, MB_RCM_MOE},
        {"selective: moe, layernorm", MB_RC_SELECTIVE, MB_RCM_MOE | MB_RCM_LAYERNORM},
        {"selective: moe_act", MB_RC_SELECTIVE, MB_RCM_MOE_ACT},
        {"mla_up_proj, mlp, moe_act, layernorm", MB_RC_SELECTIVE,
         MB_RCM_MLA_UP_PROJ | MB_RCM_MLP | MB_RCM_MOE_ACT | MB_RCM_LAYERNORM},
        {"up_proj, mlp", MB_RC_SELECTIVE, MB_RCM_MLA_UP_PROJ | MB_RCM_MLP}, /* alias */
        /* not in the CSV, but documented */
        {"(none)", MB_RC_NONE, 0},
        {"  Selective: [core_attn, 'moe_act']  ", MB_RC_SELECTIVE, MB_RCM_CORE_ATTN | MB_RCM_MOE_ACT},
        {"selective", MB_RC_SELECTIVE, MB_RCM_CORE_ATTN}, /* Megatron's default module list */
        {"FULL", MB_RC_FULL, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        enum mb_rc_gran g = MB_RC_FULL;
        unsigned m = 12345;
        char why[200] = "";
        if (mb_validate_recompute(t[i].cell, &g, &m, why, sizeof why) != 0)
            fail_msg("'%s': %s", t[i].cell, why);
        if (g != t[i].gran || m != t[i].mods)
            fail_msg("'%s': got gran %d modules 0x%x, want %d 0x%x", t[i].cell, (int)g, m, (int)t[i].gran,
                     t[i].mods);
    }

    /* unknown module: skip reason names it */
    enum mb_rc_gran g;
    unsigned m;
    char why[200];
    assert_int_equal(mb_validate_recompute("selective: core_attn, warp_drive [v1]", &g, &m, why, sizeof why), -1);
    assert_string_equal(why, "recompute module 'warp_drive' not known");
    assert_int_equal(mb_validate_recompute("flux", &g, &m, why, sizeof why), -1);
    assert_string_equal(why, "recompute module 'flux' not known");
}

/* Step 3: CSV system names -> presets. */
static void test_system_map(void **state)
{
    (void)state;
    assert_string_equal(mb_validate_system_key("DGX-H100"), "dgx_h100");
    /* mbsim's own preset names are accepted as they are (topology/systems/<name>.yaml) */
    assert_string_equal(mb_validate_system_key("gb200_nvl72"), "gb200_nvl72");
    assert_string_equal(mb_validate_system_key("dgx_h100"), "dgx_h100");
    assert_null(mb_validate_system_key("dgx_h1"));
    assert_null(mb_validate_system_key("gb200"));
    assert_string_equal(mb_validate_system_key("H100-SXM-80GB"), "h100_sxm");
    assert_string_equal(mb_validate_system_key("DGX-B200"), "dgx_b200");
    assert_string_equal(mb_validate_system_key("DGX-B300"), "dgx_b300");
    assert_string_equal(mb_validate_system_key("DGX-GB200"), "gb200_nvl72");
    assert_string_equal(mb_validate_system_key("DGX-GB300"), "gb300_nvl72");
    assert_string_equal(mb_validate_system_key("DGX-A100-80GB"), "dgx_a100");
    assert_string_equal(mb_validate_system_key(" dgx-h100 "), "dgx_h100"); /* case, spaces */
    assert_null(mb_validate_system_key("DGX-H"));
    assert_null(mb_validate_system_key("DGX-H1000"));
    assert_null(mb_validate_system_key(""));
    assert_null(mb_validate_system_key(NULL));
}

/* Step 4: every precision label of the public CSV. */
static void test_precision_map(void **state)
{
    (void)state;
    static const struct {
        const char *label, *system, *want;
        enum mb_prec gemm, attn;
    } t[] = {
        {"BF16", "dgx_h100", "bf16", MB_PREC_BF16, MB_PREC_BF16},
        {"FP16 (mixed)", "dgx_a100", "fp16", MB_PREC_FP16, MB_PREC_FP16},
        {"FP8", "dgx_h100", "fp8", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8 (tensorwise current scaling)", "dgx_h100", "fp8_cs", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8 (unlabeled; table has no precision column)", "gb200_nvl72", "fp8", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-CS", "dgx_h100", "fp8_cs", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-CS (per-tensor current scaling)", "dgx_h100", "fp8_cs", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-blockwise", "dgx_h100", "fp8_blockwise", MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-finer-granularity (MXFP8 on GB200/B200; 128x128 blockwise on H100)", "gb200_nvl72", "mxfp8",
         MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-finer-granularity (MXFP8 on GB200/B200; 128x128 blockwise on H100)", "dgx_b200", "mxfp8",
         MB_PREC_FP8, MB_PREC_BF16},
        {"FP8-finer-granularity (MXFP8 on GB200/B200; 128x128 blockwise on H100)", "dgx_h100", "fp8_blockwise",
         MB_PREC_FP8, MB_PREC_BF16},
        {"MXFP8", "dgx_b300", "mxfp8", MB_PREC_FP8, MB_PREC_BF16},
        {"NVFP4", "gb300_nvl72", "nvfp4", MB_PREC_FP4, MB_PREC_BF16},
        {"NVFP4 (FP4_RECIPE=nvfp4; FP8 attention (FP8_DPA=True))", "gb300_nvl72", "nvfp4", MB_PREC_FP4,
         MB_PREC_FP8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct mb_precision p;
        char why[200] = "";
        if (mb_validate_precision(t[i].label, t[i].system, &p, why, sizeof why) != 0)
            fail_msg("'%s': %s", t[i].label, why);
        if (strcmp(p.label, t[i].want) || p.gemm != t[i].gemm || p.attn != t[i].attn)
            fail_msg("'%s' on %s: got %s gemm %d attn %d, want %s %d %d", t[i].label, t[i].system, p.label,
                     (int)p.gemm, (int)p.attn, t[i].want, (int)t[i].gemm, (int)t[i].attn);
    }
    struct mb_precision p;
    char why[200];
    assert_int_equal(mb_validate_precision("", "dgx_h100", &p, why, sizeof why), -1);
    assert_string_equal(why, "precision not stated");
    assert_int_equal(mb_validate_precision("  ", NULL, &p, why, sizeof why), -1);
    assert_string_equal(why, "precision not stated");
    assert_int_equal(mb_validate_precision("FP7 (imaginary)", "dgx_h100", &p, why, sizeof why), -1);
    assert_string_equal(why, "precision 'FP7 (imaginary)' not recognised");
}

/* Step 5: the skip rules and the mapping, on tests/data/validate/small.csv
 * (columns in another order than the public CSV, a multi-line quoted note,
 * an empty line and a trailing blank-only line, so line numbers and record
 * boundaries are checked too). */
static void test_small_csv(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    const struct mb_val_row *r;
    mb_err_clear(&e);
    if (mb_validate_csv(FIX "small.csv", &s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    assert_int_equal(e.count, 0);
    assert_int_equal(s.n_rows, 11);
    assert_int_equal(s.n_predicted, 3);
    assert_int_equal(s.n_skipped, 8);

    r = find_row(&s, "ok_tokens");
    assert_int_equal(r->line, 2);
    assert_false(r->skipped);
    assert_string_equal(r->system, "dgx_h100");
    assert_string_equal(r->metric, MB_VAL_TOKENS);
    assert_true(mb_dbl_eq(r->measured, 10000));
    assert_true(r->predicted > 0);
    assert_true(mb_dbl_eq(r->err_pct, (r->predicted - 10000) / 10000 * 100));

    /* fsdp 4 on 8 GPUs: strategy fsdp, group differs from DP 8 -> noted */
    r = find_row(&s, "ok_step_fsdp");
    assert_int_equal(r->line, 3);
    assert_false(r->skipped);
    assert_string_equal(r->metric, MB_VAL_STEP);
    assert_true(mb_dbl_eq(r->measured, 5.0));
    assert_non_null(strstr(r->note, "FSDP sharding group 4 differs from DP 8"));

    r = find_row(&s, "ok_tflops"); /* only model TFLOP/s measured; A100 FP16 */
    assert_int_equal(r->line, 14);
    assert_false(r->skipped);
    assert_string_equal(r->system, "dgx_a100");
    assert_string_equal(r->metric, MB_VAL_TFLOPS);

    static const struct {
        const char *id, *reason;
        int line;
    } skips[] = {
        {"no_gpus", "gpus not stated", 6},
        {"no_prec", "precision not stated", 7},
        {"vlm", "VLM row without image data", 8},
        {"no_seq", "seq_len not stated", 9},
        {"no_metric", "no measured throughput", 10},
        {"bad_rc", "recompute module 'flux_capacitor' not known", 11},
        {"no_batch", "gbs, mbs not stated", 13},
    };
    for (size_t i = 0; i < sizeof skips / sizeof skips[0]; i++) {
        r = find_row(&s, skips[i].id);
        assert_true(r->skipped);
        assert_string_equal(r->reason, skips[i].reason);
        assert_int_equal(r->line, skips[i].line);
    }
    /* layout error: the reason is mb_scenario_check's message */
    r = find_row(&s, "bad_layout");
    assert_true(r->skipped);
    assert_non_null(strstr(r->reason, "does not divide"));

    /* summary: reasons grouped (8 distinct, one each), groups sum to n_predicted */
    assert_int_equal(s.n_reasons, 8);
    size_t n = 0;
    for (size_t i = 0; i < s.n_reasons; i++)
        n += s.reasons[i].count;
    assert_int_equal(n, s.n_skipped);
    assert_int_equal(s.n_by_system, 2); /* dgx_a100, dgx_h100 (sorted) */
    assert_string_equal(s.by_system[0].name, "dgx_a100");
    assert_string_equal(s.by_system[1].name, "dgx_h100");
    assert_int_equal(s.by_system[1].n, 2);
    assert_int_equal(s.n_by_metric, 3);

    /* statistics agree with mb_validate_stats over the predicted rows */
    double errs[3], mape, med, mx;
    size_t k = 0;
    for (size_t i = 0; i < s.n_rows; i++)
        if (!s.rows[i].skipped)
            errs[k++] = s.rows[i].err_pct;
    mb_validate_stats(errs, k, &mape, &med, &mx);
    assert_true(mb_dbl_eq(s.mape_pct, mape));
    assert_true(mb_dbl_eq(s.median_ape_pct, med));
    assert_true(mb_dbl_eq(s.max_ape_pct, mx));
    assert_true(mb_dbl_eq(fabs(s.rows[s.max_ape_row].err_pct), mx));
    mb_validate_free(&s);
}

/* parse_only (the fuzz harness's mode): small.csv's 3 predictable rows are read
 * and checked but skipped as "parse only"; the 8 rows skipped for their own
 * reasons keep them (counts from test_small_csv). */
static void test_parse_only(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    mb_err_clear(&e);
    mb_validate_init(&s);
    s.parse_only = 1;
    assert_int_equal(mb_validate_add_csv(&s, FIX "small.csv", &e), 0);
    mb_validate_finish(&s);
    assert_int_equal(s.n_rows, 11);
    assert_int_equal(s.n_predicted, 0);
    assert_int_equal(s.n_skipped, 11);
    const struct mb_val_row *r = find_row(&s, "ok_tokens");
    assert_true(r->skipped);
    assert_string_equal(r->reason, "parse only");
    size_t parse = 0;
    for (size_t i = 0; i < s.n_rows; i++)
        parse += !strcmp(s.rows[i].reason, "parse only");
    assert_int_equal(parse, 3);
    /* an id of small.csv again in a second CSV: ids name runs over every CSV of one validation (issue 37),
     * so the error is at the second file's cell (line 3, column 1), naming the first file and line */
    int line = find_row(&s, "ok_tokens")->line;
    char want[512];
    snprintf(want, sizeof want, FIX "dup_id_other.csv:3:1: column 'id': 'ok_tokens' is also the id of " FIX
             "small.csv line %d: each row needs an id of its own (the report, --baseline and --recipes pair rows "
             "by id)", line);
    assert_int_equal(mb_validate_add_csv(&s, FIX "dup_id_other.csv", &e), -1);
    mb_err_format(&e, msgbuf, sizeof msgbuf);
    assert_string_equal(msgbuf, want);
    assert_int_equal(s.n_rows, 12); /* other_run kept; the repeated row not made */
    /* the first CSV again: its first row's id (line 2, where the id is the second cell, column 9 after
     * `"plain",`) was read from this very file */
    mb_err_clear(&e);
    assert_int_equal(mb_validate_add_csv(&s, FIX "small.csv", &e), -1);
    mb_err_format(&e, msgbuf, sizeof msgbuf);
    assert_string_equal(msgbuf, FIX "small.csv:2:9: column 'id': 'ok_tokens' was read from this file before (line "
                                "2): a CSV given twice");
    mb_validate_free(&s);
}

/* Step 6: text and JSON reports of small.csv. */
static void test_reports(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_csv(FIX "small.csv", &s, &e), 0);

    fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "predicted rows: 3 of 11"));
    assert_non_null(strstr(buf, "skipped rows: 8"));
    assert_non_null(strstr(buf, "     1  VLM row without image data\n"));
    assert_non_null(strstr(buf, "MAPE by system:"));
    assert_non_null(strstr(buf, "MAPE by model:"));
    assert_non_null(strstr(buf, "ok_step_fsdp"));
    assert_null(strstr(buf, "no_metric")); /* skipped rows are only counted */
    free(buf);

    json_t *root = summary_json(&s);
    assert_int_equal(json_integer_value(json_object_get(root, "n_predicted")), 3);
    assert_int_equal(json_integer_value(json_object_get(root, "n_skipped")), 8);
    assert_true(mb_dbl_eq(json_real_value(json_object_get(root, "mape_pct")), s.mape_pct));
    assert_true(mb_dbl_eq(json_real_value(json_object_get(root, "median_ape_pct")), s.median_ape_pct));
    assert_true(mb_dbl_eq(json_real_value(json_object_get(root, "max_ape_pct")), s.max_ape_pct));
    assert_true(json_is_object(json_object_get(root, "mape_by_system")));
    assert_true(json_is_real(json_object_get(json_object_get(root, "mape_by_model"), "llama3_8b")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(root, "skipped_by_reason"), "precision not stated")), 1);
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 11);
    json_t *r0 = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r0, "id")), "ok_tokens");
    assert_true(json_is_real(json_object_get(r0, "predicted")));
    assert_true(json_is_real(json_object_get(r0, "err_pct")));
    json_t *r2 = json_array_get(rows, 2);
    assert_string_equal(json_string_value(json_object_get(r2, "id")), "no_gpus");
    assert_true(json_is_true(json_object_get(r2, "skipped")));
    assert_string_equal(json_string_value(json_object_get(r2, "reason")), "gpus not stated");
    assert_null(json_object_get(r2, "predicted"));
    json_decref(root);
    mb_validate_free(&s);

    /* nothing predicted: statistics are null in JSON, n/a in text */
    mb_validate_init(&s);
    mb_validate_finish(&s);
    buf = NULL;
    fp = open_memstream(&buf, &len);
    assert_int_equal(mb_validate_print_json(&s, fp), 0);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "\"mape_pct\": null"));
    assert_non_null(strstr(buf, "MAPE: n/a"));
    free(buf);
    mb_validate_free(&s);
    mb_validate_free(NULL);
}

/* Step 7: scenario files: one with a measured block is predicted, one
 * without is skipped, a file that does not load is an error. */
static void test_scenario_files(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    const char *paths[] = {FIX "tiny_measured.yaml", FIX "tiny_unmeasured.yaml"};
    mb_err_clear(&e);
    if (mb_validate_scenario_files(paths, 2, &s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    assert_int_equal(s.n_rows, 2);
    assert_int_equal(s.n_predicted, 1);
    assert_false(s.rows[0].skipped);
    assert_string_equal(s.rows[0].id, "tiny_measured");
    assert_string_equal(s.rows[0].model, "tiny");
    assert_string_equal(s.rows[0].system, "dgx_h100");
    assert_string_equal(s.rows[0].metric, MB_VAL_STEP);
    assert_true(mb_dbl_eq(s.rows[0].measured, 0.05));
    assert_true(s.rows[0].predicted > 0);
    assert_true(s.rows[1].skipped);
    assert_string_equal(s.rows[1].reason, "no measured block");
    /* measured.peak_memory_gib 2.5, read as allocated: compared with the largest
     * allocated peak over the ranks, recomputed here from the loaded scenario */
    {
        struct mb_scenario sc;
        struct mb_result res;
        struct mb_step_opts opts = {.critical_path = 0};
        double pred = 0;
        memset(&sc, 0, sizeof sc);
        memset(&res, 0, sizeof res);
        assert_int_equal(mb_scenario_load(FIX "tiny_measured.yaml", &sc, &e), 0);
        assert_int_equal(mb_step_simulate_opts(&sc, &opts, &res, &e), 0);
        for (int st = 0; st < res.mem.n_stages; st++)
            pred = fmax(pred, res.mem.per_stage[st].peak_allocated / 1073741824.0);
        mb_result_free(&res);
        mb_scenario_free(&sc);
        assert_true(s.rows[0].mem_compared);
        assert_string_equal(s.rows[0].mem_from, "scenario");
        assert_string_equal(s.rows[0].mem_kind, "allocated");
        assert_true(mb_dbl_eq(s.rows[0].meas_mem_gib, 2.5));
        assert_true(mb_dbl_eq(s.rows[0].pred_mem_gib, pred));
        assert_true(mb_dbl_eq(s.rows[0].mem_err_pct, (pred - 2.5) / 2.5 * 100.0));
        assert_int_equal(s.n_mem, 1);
    }
    mb_validate_free(&s);

    /* a CSV and a scenario in one summary */
    mb_validate_init(&s);
    assert_int_equal(mb_validate_add_scenario(&s, FIX "tiny_measured.yaml", &e), 0);
    assert_int_equal(mb_validate_add_csv(&s, FIX "bad_gbs.csv", &e), -1); /* keeps rows read so far */
    mb_validate_finish(&s);
    assert_int_equal(s.n_rows, 2);
    assert_int_equal(s.n_predicted, 1);
    mb_validate_free(&s);

    const char *bad[] = {FIX "tiny_measured.yaml", FIX "no_such_file.yaml"};
    mb_err_clear(&e);
    assert_int_equal(mb_validate_scenario_files(bad, 2, &s, &e), -1);
    assert_true(e.count > 0);
    assert_int_equal(s.n_rows, 1);
    mb_validate_free(&s);
}

/* Step 8 (bad input): broken CSV fixtures fail with exact messages. */
static void test_bad_csv(void **state)
{
    (void)state;
    static const struct {
        const char *file, *msg;
    } t[] = {
        {FIX "missing_column.csv", FIX "missing_column.csv:1:1: missing column 'gbs'"},
        /* line 3: '"notes, with ""quotes""",r2,llama3_8b,DGX-H100,8,BF16,x' -> x is at column 55 */
        {FIX "bad_gbs.csv", FIX "bad_gbs.csv:3:55: column 'gbs': expected an integer, got 'x'"},
        /* columns count characters (issue 37: they counted bytes): the é, ✓ and ï of the notes cell are 2, 3
         * and 2 bytes, so the 'x' is character 45 of its line, byte 49 */
        {FIX "bad_gbs_utf8.csv", FIX "bad_gbs_utf8.csv:3:45: column 'gbs': expected an integer, got 'x'"},
        /* a byte that is not UTF-8 (two stray continuation bytes 0x80) is one column each, as the message
         * shows it as one \xNN; the é after them is one: the 'x' is character 52, byte 53 */
        {FIX "bad_gbs_stray.csv", FIX "bad_gbs_stray.csv:3:52: column 'gbs': expected an integer, got 'x'"},
        /* the quoted note opened at 3:1 runs to the end of the file */
        {FIX "truncated_quote.csv", FIX "truncated_quote.csv:3:1: unterminated quoted field at end of file"},
        {FIX "bad_quote.csv", FIX "bad_quote.csv:2:7: malformed quoted field (a quote inside an unquoted "
                                  "field, or text after a closing quote)"},
        {FIX "bad_metric.csv", FIX "bad_metric.csv:2:69: column 'step_time_s': expected a number, got 'fast'"},
        /* a measured -5 tokens/s is a typo, not "not stated": column 75 of line 2 */
        {FIX "bad_negative.csv",
         FIX "bad_negative.csv:2:75: column 'tokens_per_s_per_gpu': expected a positive number, got '-5'"},
        {FIX "short_record.csv", FIX "short_record.csv:2:1: record has 3 fields, the header has 20"},
        /* the optional memory columns, the 21st and 22nd fields (columns 65 and 67/68 of line 2) */
        {FIX "bad_memory.csv", FIX "bad_memory.csv:2:65: column 'peak_memory_gib': expected a number, got 'lots'"},
        {FIX "bad_memory_zero.csv",
         FIX "bad_memory_zero.csv:2:65: column 'peak_memory_gib': expected a positive number, got '0'"},
        {FIX "bad_memory_kind.csv", FIX "bad_memory_kind.csv:2:68: column 'peak_memory_kind': expected allocated, "
                                        "reserved or device, got 'max'"},
        {FIX "empty.csv", FIX "empty.csv: empty file (no header row)"},
        /* a measured 1e308 tokens/s (line 2, column 143) is a typo, not a run */
        {FIX "bad_huge.csv", FIX "bad_huge.csv:2:143: column 'tokens_per_s_per_gpu': 1e308 is beyond any training "
                             "run (at most 1e+08); expected the measured value"},
        /* a NUL byte in a cell (line 4, column 88: "task=s\0ft") is binary, not text */
        {FIX "bad_nul.csv", FIX "bad_nul.csv:4:88: NUL byte: expected CSV text (is this a binary file?)"},
        /* a name or path mbsim does not know is a typo, an error (issue 17 QA: it was a skipped row, rc 0) */
        {FIX "bad_model_name.csv", FIX "bad_model_name.csv:2:13: column 'model': model 'llama3_7b' has no model file "
                                   "(`mbsim models` lists the shipped ones; a path names a model file)"},
        {FIX "bad_system_name.csv",
         FIX "bad_system_name.csv:2:24: column 'system': 'DGX-Z9' is no known system (a DGX/HGX/NVL name of the public "
             "CSV, an mbsim preset from `mbsim systems`, or a path to a system file DIR/NAME.yaml)"},
        {FIX "bad_system_file.csv",
         FIX "bad_system_file.csv:2:25: column 'system': system file 'topology/systems/no_such.yaml' not found (a path "
             "is read relative to the working directory and must end in .yaml)"},
        /* a model or system file of the user's own that exists but does not load is an error at the
         * cell, with the file's own position (it was a skipped row, which a MAPE gate passes over) */
        {FIX "bad_system_broken.csv",
         FIX "bad_system_broken.csv:2:22: column 'system': system file does not load: " FIX
             "broken_system.yaml:5:16: system.gpus_per_node: expected an integer, got 'eight'"},
        {FIX "bad_model_broken.csv",
         FIX "bad_model_broken.csv:2:14: column 'model': model file does not load: " FIX
             "broken_model.yaml:3:13: model.num_layers: expected an integer, got 'many'"},
        {FIX "no_such_file.csv", FIX "no_such_file.csv: cannot open: No such file or directory"},
        /* an id longer than a row keeps would be cut, and two runs could pair as one in --baseline */
        {FIX "bad_long_id.csv", FIX "bad_long_id.csv:2:1: column 'id': 170 characters, expected at most 159"},
        /* two rows with one id (issue 37: both were taken, and --baseline and --recipes pair rows by id): at
         * the second's id cell (line 6; the cell " run_a" starts at column 1 and is read trimmed), naming the
         * first's line; the two rows without an id (lines 4 and 5) are "line N", not compared */
        {FIX "bad_dup_id.csv", FIX "bad_dup_id.csv:6:1: column 'id': 'run_a' is also the id of line 2: each row "
                               "needs an id of its own (the report, --baseline and --recipes pair rows by id)"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct mb_val_summary s;
        struct mb_err e;
        mb_err_clear(&e);
        assert_int_equal(mb_validate_csv(t[i].file, &s, &e), -1);
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        assert_string_equal(msgbuf, t[i].msg);
        assert_int_equal(e.count, 1);
        /* rows before the error are kept and consistent */
        assert_int_equal(s.n_predicted + s.n_skipped, s.n_rows);
        mb_validate_free(&s);
    }
}

/* Step 9: end to end on the public measured CSV. */
static void test_public_csv(void **state)
{
    (void)state;
    const char *shared = getenv("MBSIM_SHARED_DIR");
    char path[1024];
    struct mb_val_summary s;
    struct mb_err e;
    snprintf(path, sizeof path, "%s/data/measured/public_measured.csv", shared ? shared : "../shared");
    if (!mb_file_exists(path))
        skip();
    mb_err_clear(&e);
    if (mb_validate_csv(path, &s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    assert_true(s.n_rows > 200);
    assert_int_equal(s.n_predicted + s.n_skipped, s.n_rows);
    assert_true(s.n_predicted > 0);
    size_t n_reason = 0, n_sys = 0, n_model = 0;
    for (size_t i = 0; i < s.n_rows; i++) {
        const struct mb_val_row *r = &s.rows[i];
        assert_true(r->id[0] && r->line >= 2);
        if (r->skipped) {
            if (!r->reason[0])
                fail_msg("row %s skipped without a reason", r->id);
        } else {
            assert_true(r->metric[0] && r->measured > 0 && r->predicted > 0 && isfinite(r->err_pct));
            assert_string_equal(r->reason, "");
        }
    }
    for (size_t i = 0; i < s.n_reasons; i++)
        n_reason += s.reasons[i].count;
    for (size_t i = 0; i < s.n_by_system; i++)
        n_sys += s.by_system[i].n;
    for (size_t i = 0; i < s.n_by_model; i++)
        n_model += s.by_model[i].n;
    assert_int_equal(n_reason, s.n_skipped);
    assert_int_equal(n_sys, s.n_predicted);
    assert_int_equal(n_model, s.n_predicted);
    assert_true(isfinite(s.mape_pct) && s.median_ape_pct <= s.max_ape_pct && s.mape_pct <= s.max_ape_pct);
    /* every recipe cell of the shipped CSV is in the README's vocabulary */
    for (size_t i = 0; i < s.n_rows; i++)
        if (s.rows[i].recipe_bad)
            fail_msg("row %s: %s", s.rows[i].id, s.rows[i].note);
    mb_validate_free(&s);
}

/* Drift against a baseline (mb_validate_drift) on a summary built by hand, so
 * no prediction is involved: each fixture row (tests/data/validate/baseline.json)
 * meets one case. a: 1000 -> 1100 is +10 % (past 5 %); b: 2.0 -> 2.02 is +1 %;
 * c: predicted -> skipped (past the threshold whatever its size); d: skipped ->
 * predicted; e: tokens -> step time (metric changed); f: only in the baseline;
 * the two rows "dup" pair in order: 10 -> 10 same, 20 -> 19 is -5 %, not past
 * 5 % (strictly greater fails); h: skipped in both; x: 1000 -> 1000.0000001
 * agrees to the 10 digits the JSON keeps: same; "new": only now. */
static void test_drift(void **state)
{
    (void)state;
    static struct mb_val_row rows[10];
    static const struct {
        const char *id, *metric;
        int skipped;
        double pred, err;
    } now[] = {
        {"a", MB_VAL_TOKENS, 0, 1100, 10},     {"b", MB_VAL_STEP, 0, 2.02, 1},
        {"c", MB_VAL_TOKENS, 1, 0, 0},         {"d", MB_VAL_TOKENS, 0, 330, 10},
        {"e", MB_VAL_STEP, 0, 1.5, 2},         {"dup", MB_VAL_TOKENS, 0, 10, 0},
        {"dup", MB_VAL_TOKENS, 0, 19, -5},     {"h", "", 1, 0, 0},
        {"x", MB_VAL_TOKENS, 0, 1000.0000001, 0}, {"new", MB_VAL_STEP, 0, 3, 0},
    };
    struct mb_val_summary s;
    mb_validate_init(&s);
    for (size_t i = 0; i < 10; i++) {
        snprintf(rows[i].id, sizeof rows[i].id, "%s", now[i].id);
        snprintf(rows[i].metric, sizeof rows[i].metric, "%s", now[i].metric);
        rows[i].skipped = now[i].skipped;
        rows[i].predicted = now[i].pred;
        rows[i].err_pct = now[i].err;
        snprintf(rows[i].reason, sizeof rows[i].reason, "%s", now[i].skipped ? "precision not stated" : "");
    }
    s.rows = rows;
    s.n_rows = 10;
    s.n_predicted = 8;
    s.mape_pct = 3.5;
    struct mb_val_drift d;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_drift(&s, FIX "baseline.json", 5.0, &d, &e), 0);
    assert_int_equal(d.n_old, 10);
    assert_int_equal(d.n_new, 10);
    assert_int_equal(d.n_kind[MB_DRIFT_SAME], 3); /* dup #1, h, x */
    assert_int_equal(d.n_kind[MB_DRIFT_CHANGED], 3); /* a, b, dup #2 */
    assert_int_equal(d.n_kind[MB_DRIFT_METRIC], 1);
    assert_int_equal(d.n_kind[MB_DRIFT_NOW_SKIPPED], 1);
    assert_int_equal(d.n_kind[MB_DRIFT_NOW_PREDICTED], 1);
    assert_int_equal(d.n_kind[MB_DRIFT_ADDED], 1);
    assert_int_equal(d.n_kind[MB_DRIFT_REMOVED], 1);
    assert_int_equal(d.n_over, 2);
    assert_int_equal(d.n_mem_compared, 0); /* the baseline has no memory fields */
    assert_true(fabs(d.max_abs_drift_pct - 10) < 1e-9);
    assert_true(fabs(d.old_mape_pct - 12.5) < 1e-12);
    assert_true(fabs(d.new_mape_pct - 3.5) < 1e-12);
    /* past the threshold first (a by its drift, then c), then |drift| descending, then kind */
    static const struct {
        const char *id;
        int occ;
        enum mb_val_drift_kind kind;
        double drift;
        int over;
    } want[] = {
        {"a", 1, MB_DRIFT_CHANGED, 10, 1},       {"c", 1, MB_DRIFT_NOW_SKIPPED, 0, 1},
        {"dup", 2, MB_DRIFT_CHANGED, -5, 0},     {"b", 1, MB_DRIFT_CHANGED, 1, 0},
        {"e", 1, MB_DRIFT_METRIC, 0, 0},         {"d", 1, MB_DRIFT_NOW_PREDICTED, 0, 0},
        {"new", 1, MB_DRIFT_ADDED, 0, 0},        {"f", 1, MB_DRIFT_REMOVED, 0, 0},
    };
    assert_int_equal(d.n, 8);
    for (size_t i = 0; i < 8; i++) {
        assert_string_equal(d.rows[i].id, want[i].id);
        assert_int_equal(d.rows[i].occurrence, want[i].occ);
        assert_int_equal(d.rows[i].kind, want[i].kind);
        assert_true(fabs(d.rows[i].drift_pct - want[i].drift) < 1e-9);
        assert_int_equal(d.rows[i].over, want[i].over);
    }
    assert_true(fabs(d.rows[0].old_pred - 1000) < 1e-12 && fabs(d.rows[0].new_pred - 1100) < 1e-12);
    assert_true(fabs(d.rows[0].old_err_pct - 0) < 1e-12 && fabs(d.rows[0].new_err_pct - 10) < 1e-12);
    assert_string_equal(d.rows[1].reason, "precision not stated");
    assert_string_equal(d.rows[7].metric, MB_VAL_STEP); /* the baseline's metric for a removed row */

    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mb_validate_drift_print(&d, "base.json", 10, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "drift against base.json (10 rows then, 10 now): 3 unchanged, 3 changed, 1 metric "
                                "changed, 1 now skipped, 1 now predicted, 1 added, 1 removed"));
    assert_non_null(strstr(buf, "MAPE 12.50 % then, 3.50 % now"));
    assert_non_null(strstr(buf, "dup (#2)"));
    assert_non_null(strstr(buf, "+10.00"));
    assert_non_null(strstr(buf, "PAST THRESHOLD"));
    assert_non_null(strstr(buf, "now skipped: precision not stated"));
    assert_non_null(strstr(buf, "drift: 2 rows past 5.00 % (1 prediction moved more, 1 row now skipped)"));
    assert_null(strstr(buf, "memory")); /* nothing compared on memory, nothing said */
    free(buf);
    mb_validate_drift_free(&d);

    /* at 10 % nothing moved more (10 is not > 10), but c is still now skipped */
    assert_int_equal(mb_validate_drift(&s, FIX "baseline.json", 10.0, &d, &e), 0);
    assert_int_equal(d.n_over, 1);
    mb_validate_drift_free(&d);

    static const struct {
        const char *file, *msg;
    } bad[] = {
        {FIX "baseline_bad_syntax.json", FIX "baseline_bad_syntax.json:3:16: invalid JSON: "},
        {FIX "baseline_bad_value.json", FIX "baseline_bad_value.json: rows[0] (id 'a'): 'predicted' is not a number"},
        {FIX "baseline_no_rows.json", "not an mbsim validate --json output (no 'rows' array)"},
        {FIX "baseline_bad_verdict.json", "bad_verdict.json: rows[0] (id 'a'): 'memory_verdict' is not one of "
                                          "\"fits\", \"at risk\", \"OOM\""},
        {FIX "baseline_bad_memory.json", "bad_memory.json: rows[0] (id 'a'): 'device_memory_gib' is not a positive number"},
        {FIX "baseline_half_memory.json", "half_memory.json: rows[0] (id 'a'): 'memory_verdict' without 'device_memory_gib'"},
        {FIX "baseline_zero_predicted.json", "zero_predicted.json: rows[0] (id 'a'): 'predicted' must be positive, got 0"},
        {FIX "no_such_baseline.json", FIX "no_such_baseline.json: cannot open"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mb_err_clear(&e);
        assert_int_equal(mb_validate_drift(&s, bad[i].file, 5.0, &d, &e), -1);
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        if (!strstr(msgbuf, bad[i].msg))
            fail_msg("%s: expected '%s', got '%s'", bad[i].file, bad[i].msg, msgbuf);
        assert_int_equal(d.n, 0);
    }
}

/* mb_val_summary.jobs: small.csv on 3 threads gives the rows, statistics and
 * on_row order of one thread (each row is its own simulation), and progress
 * counts rise to every row. */
struct jobs_log {
    char ids[16][160];
    int n_rows_seen;
    size_t last_done, calls;
    int monotonic;
};

static void jobs_on_row(void *ctx, const struct mb_val_row *r, const struct mb_scenario *sc)
{
    struct jobs_log *l = ctx;
    (void)sc;
    if (l->n_rows_seen < 16)
        snprintf(l->ids[l->n_rows_seen], sizeof l->ids[0], "%s", r->id);
    l->n_rows_seen++;
}

static void jobs_on_progress(void *ctx, size_t done)
{
    struct jobs_log *l = ctx;
    l->monotonic &= done >= l->last_done;
    l->last_done = done;
    l->calls++;
}

/* Two summaries for the same input: a with one thread, b with three; both report to their log. */
static void jobs_pair(struct mb_val_summary *a, struct mb_val_summary *b, struct jobs_log *la, struct jobs_log *lb)
{
    mb_validate_init(a);
    mb_validate_init(b);
    a->on_row = b->on_row = jobs_on_row;
    a->on_progress = b->on_progress = jobs_on_progress;
    a->on_row_ctx = a->on_progress_ctx = la;
    b->on_row_ctx = b->on_progress_ctx = lb;
    b->jobs = 3;
}

/* b's rows and statistics are a's, bit for bit. */
static void assert_same_rows(const struct mb_val_summary *a, const struct mb_val_summary *b)
{
    assert_int_equal(b->n_rows, a->n_rows);
    assert_int_equal(b->n_predicted, a->n_predicted);
    for (size_t i = 0; i < a->n_rows; i++) {
        assert_string_equal(b->rows[i].id, a->rows[i].id);
        assert_int_equal(b->rows[i].skipped, a->rows[i].skipped);
        assert_true(b->rows[i].predicted == a->rows[i].predicted);
        assert_true(b->rows[i].err_pct == a->rows[i].err_pct || (isnan(b->rows[i].err_pct) && isnan(a->rows[i].err_pct)));
        assert_string_equal(b->rows[i].reason, a->rows[i].reason);
        assert_string_equal(b->rows[i].note, a->rows[i].note);
    }
    assert_true(b->mape_pct == a->mape_pct);
}

static void test_jobs(void **state)
{
    (void)state;
    struct mb_val_summary a, b;
    struct jobs_log la = {.monotonic = 1}, lb = {.monotonic = 1};
    struct mb_err e;
    mb_err_clear(&e);
    jobs_pair(&a, &b, &la, &lb);
    assert_int_equal(mb_validate_add_csv(&a, FIX "small.csv", &e), 0);
    assert_int_equal(mb_validate_add_csv(&b, FIX "small.csv", &e), 0);
    mb_validate_finish(&a);
    mb_validate_finish(&b);
    assert_int_equal(a.n_rows, 11);
    assert_same_rows(&a, &b);
    assert_int_equal(lb.n_rows_seen, la.n_rows_seen);
    assert_int_equal(la.n_rows_seen, 3);
    for (int i = 0; i < la.n_rows_seen; i++)
        assert_string_equal(lb.ids[i], la.ids[i]);
    assert_true(la.monotonic && lb.monotonic);
    assert_int_equal(la.last_done, 11);
    assert_int_equal(lb.last_done, 11);
    assert_true(la.calls >= 11); /* every row reports once at least */
    mb_validate_free(&a);
    mb_validate_free(&b);
}

/* Scenario files given one after the other run side by side too (issue 17: `validate -j`
 * parallelized CSV rows only): with jobs = 3 a scenario row waits for its batch (n_pending
 * counts it), a CSV added next takes the waiting rows into its own batch, and the rows,
 * statistics and on_row order are those of one thread. An error after a waiting row leaves
 * nothing to leak (mb_validate_free; ASan checks). */
static void test_jobs_scenarios(void **state)
{
    (void)state;
    static const char *const files[] = {"scenarios/h100_llama3_70b_3d.yaml", "scenarios/h100_qwen3_30b_a3b_ep8.yaml",
                                        "scenarios/gb200_ep32.yaml", FIX "small.csv",
                                        "scenarios/h100_qwen3_30b_a3b_ep8.yaml"};
    const size_t nf = sizeof files / sizeof files[0];
    struct mb_val_summary a, b;
    struct jobs_log la = {.monotonic = 1}, lb = {.monotonic = 1};
    struct mb_err e;
    mb_err_clear(&e);
    jobs_pair(&a, &b, &la, &lb);
    for (size_t i = 0; i < nf; i++) {
        int csv = strstr(files[i], ".csv") != NULL;
        assert_int_equal(csv ? mb_validate_add_csv(&a, files[i], &e) : mb_validate_add_scenario(&a, files[i], &e), 0);
        assert_int_equal(csv ? mb_validate_add_csv(&b, files[i], &e) : mb_validate_add_scenario(&b, files[i], &e), 0);
        assert_int_equal(mb_validate_pending(&a), 0);
        /* b: the two scenarios with a measured block wait (gb200_ep32 has none: skipped at once),
         * the CSV's batch takes them, the last scenario waits for finish */
        assert_int_equal(mb_validate_pending(&b), i < 1 ? 1 : i < 3 ? 2 : i == 3 ? 0 : 1);
    }
    mb_validate_finish(&a);
    mb_validate_finish(&b);
    assert_int_equal(mb_validate_pending(&b), 0);
    assert_int_equal(a.n_rows, 3 + 11 + 1);
    assert_same_rows(&a, &b);
    assert_int_equal(lb.n_rows_seen, la.n_rows_seen);
    for (int i = 0; i < la.n_rows_seen && i < 16; i++)
        assert_string_equal(lb.ids[i], la.ids[i]);
    assert_true(la.monotonic && lb.monotonic);
    assert_int_equal(lb.last_done, a.n_rows);
    mb_validate_free(&a);
    mb_validate_free(&b);

    mb_validate_init(&b);
    b.jobs = 3;
    assert_int_equal(mb_validate_add_scenario(&b, files[0], &e), 0);
    assert_int_equal(mb_validate_pending(&b), 1);
    assert_int_equal(mb_validate_add_scenario(&b, "tests/data/scenario/bad_enum.yaml", &e), -1);
    mb_validate_free(&b);
}

/* A CSV names its system and model by file path as well as by name
 * (tests/data/validate/paths.csv): the shipped files the names stand for give
 * the same prediction; a path that does not exist is skipped with its name. */
static void test_csv_paths(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_csv(FIX "paths.csv", &s, &e), 0);
    assert_int_equal(s.n_rows, 2);
    const struct mb_val_row *a = find_row(&s, "by_path"), *b = find_row(&s, "by_name");
    assert_false(a->skipped);
    assert_false(b->skipped);
    assert_true(a->predicted == b->predicted);
    assert_string_equal(a->system, "dgx_h100"); /* the file's stem */
    /* a missing system file: test_bad_csv (bad_system_file.csv) */
    assert_string_equal(mb_validate_system_key("topology/systems/dgx_h100.yaml"), "topology/systems/dgx_h100.yaml");
    assert_null(mb_validate_system_key("topology/systems/dgx_h100.xml")); /* the XML is no system file */
    mb_validate_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_recompute_cells),
        cmocka_unit_test(test_system_map),
        cmocka_unit_test(test_precision_map),
        cmocka_unit_test(test_small_csv),
        cmocka_unit_test(test_parse_only),
        cmocka_unit_test(test_reports),
        cmocka_unit_test(test_scenario_files),
        cmocka_unit_test(test_bad_csv),
        cmocka_unit_test(test_public_csv),
        cmocka_unit_test(test_drift),
        cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_jobs_scenarios),
        cmocka_unit_test(test_csv_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
