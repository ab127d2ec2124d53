/*
 * test_validate.c -- `mbsim validate` library part: exact statistics, the
 * recompute / system / precision mappings for every spelling in the public
 * measured CSV, the skip rules on a small fixture CSV, scenario files with
 * and without a measured: block, exact "file:line:col: message" errors for
 * broken CSV fixtures, the text and JSON reports, and an end-to-end run over
 * shared/data/measured/public_measured.csv; the recipe columns (one parser per
 * column, a fixture CSV row with them, the FLOP conventions of TFLOP/s-only rows);
 * memory (measured peaks from the column, the notes and a scenario, reported-OOM
 * notes, the verdict counts and the memory MAPE on memory.csv and on hand-made rows).
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

#define FIX "tests/data/validate/"

static char msgbuf[1024];

static const struct mb_val_row *find_row(const struct mb_val_summary *s, const char *id)
{
    for (size_t i = 0; i < s->n_rows; i++)
        if (!strcmp(s->rows[i].id, id))
            return &s->rows[i];
    fail_msg("row '%s' not found", id);
    return s->rows; /* not reached */
}

/* The summary as mb_validate_print_json writes it, parsed (json_decref it). */
static json_t *summary_json(const struct mb_val_summary *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(mb_validate_print_json(s, fp), 0);
    fclose(fp);
    json_error_t jerr;
    json_t *root = json_loads(buf, 0, &jerr);
    if (!root)
        fail_msg("JSON does not parse: %s (line %d)", jerr.text, jerr.line);
    free(buf);
    return root;
}

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

/* Step 6: text and JSON reports of small.csv. */
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
    mb_validate_free(&s);
}

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

/* Scenario files with no measured time: a reported OOM (measured.oom) and a peak alone are
 * predicted for memory only. They stay out of the time MAPE, which is tiny_measured's own error;
 * the OOM run counts as reported OOM (predicted to fit: the tiny model needs a few MiB), the peak
 * in the memory MAPE beside tiny_measured's (the same run, so the same predicted peak). In --json
 * they are memory_only, without predicted, and a baseline of that JSON shows no drift. */
static void test_memory_only_scenarios(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    const char *paths[] = {FIX "tiny_measured.yaml", FIX "tiny_oom.yaml", FIX "tiny_peak_only.yaml"};
    mb_err_clear(&e);
    if (mb_validate_scenario_files(paths, 3, &s, &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    assert_int_equal(s.n_rows, 3);
    assert_int_equal(s.n_predicted, 3);
    assert_false(s.rows[0].mem_only);
    assert_true(s.rows[1].mem_only && s.rows[1].reported_oom && !s.rows[1].skipped);
    assert_true(s.rows[2].mem_only && !s.rows[2].reported_oom && s.rows[2].mem_compared);
    assert_true(mb_dbl_eq(s.mape_pct, fabs(s.rows[0].err_pct)));
    assert_int_equal(s.n_by_metric, 1);
    assert_int_equal(s.by_metric[0].n, 1);
    assert_int_equal(s.n_reported_oom, 1);
    assert_int_equal(s.n_reported_oom_pred_fits, 1);
    assert_int_equal(s.n_ran, 2);
    assert_int_equal(s.n_mem, 2);
    assert_true(mb_dbl_eq(s.rows[2].pred_mem_gib, s.rows[0].pred_mem_gib));
    assert_true(mb_dbl_eq(s.mape_mem_pct, fabs(s.rows[0].mem_err_pct)));

    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(mb_validate_print_json(&s, fp), 0);
    fclose(fp);
    assert_non_null(strstr(buf, "\"memory_only\": true"));
    char tmp[] = "/tmp/mbsim_memory_only_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    fp = fdopen(fd, "w");
    assert_non_null(fp);
    fputs(buf, fp);
    fclose(fp);
    free(buf);
    struct mb_val_drift d;
    assert_int_equal(mb_validate_drift(&s, tmp, 5, &d, &e), 0);
    assert_int_equal(d.n_kind[MB_DRIFT_SAME], 3);
    mb_validate_drift_free(&d);
    remove(tmp);

    buf = NULL;
    fp = open_memstream(&buf, &len);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "reported OOM"));
    assert_null(strstr(buf, "tiny_peak_only                           tiny")); /* not in the time table */
    free(buf);
    mb_validate_free(&s);

    /* memory-only rows alone: no time MAPE (n/a, not NaN), the memory summary still printed */
    assert_int_equal(mb_validate_scenario_files(paths + 1, 2, &s, &e), 0);
    buf = NULL;
    fp = open_memstream(&buf, &len);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "MAPE: n/a (no row with a measured time)"));
    assert_non_null(strstr(buf, "1 reported OOM: 1 predicted to fit"));
    assert_null(strstr(buf, "nan"));
    free(buf);
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

static void test_recipe_cells(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_val_recipe r;
    load_q16(&s);

    /* dispatcher: flex:hybridep with its SM count; "(card)" gives no count (default kept, said);
     * deepep's count in the card's CLI spelling; n/a and empty */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:hybridep (moe_hybridep_num_sms=32)", &r), 0);
    assert_int_equal(s.dispatcher, MB_DISP_HYBRIDEP);
    assert_int_equal(s.dispatcher_sms, 32);
    assert_string_equal(r.applied, "dispatcher hybridep (32 SMs)");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:deepep (card) [--moe-deepep-num-sms 20]", &r), 0);
    assert_int_equal(s.dispatcher, MB_DISP_DEEPEP);
    assert_int_equal(s.dispatcher_sms, 20);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "alltoall (README table 'All-to-All', dropless)", &r), 0);
    assert_int_equal(s.dispatcher, MB_DISP_ALLTOALL);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:hybridep (card)", &r), 0);
    assert_string_equal(r.applied, "dispatcher hybridep (20 SMs, SM count not stated: default)");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "n/a (dense)", &r), 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "  ", &r), 1);
    assert_string_equal(r.defaulted, "dispatcher");
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:nccl", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:hybridep (moe_hybridep_num_sms=0)", &r), -1);
    assert_int_equal(r.n_bad, 2);
    assert_string_equal(r.bad, "dispatcher 'flex:nccl': expected alltoall, allgather, flex:deepep or flex:hybridep, "
                               "dispatcher 'flex:hybridep (moe_hybridep_num_sms=0)': SM count is not an integer in 1..1024");
    assert_int_equal(s.dispatcher, MB_DISP_HYBRIDEP); /* a refused cell changes nothing */
    s.ep = 1; /* no expert parallelism: said, not applied */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_DISPATCHER, "flex:deepep", &r), 0);
    assert_int_equal(s.dispatcher, MB_DISP_HYBRIDEP);
    assert_string_equal(r.not_applied, "dispatcher deepep (ep = 1)");
    s.ep = 16;

    /* ep_overlap: on with delayed wgrad (not modelled, said), without; off; pp > 1 without vpp */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm, delay_wgrad_compute)", &r), 0);
    assert_int_equal(s.overlap_ep_comm, 1);
    assert_string_equal(r.unmodelled, "delay_wgrad_compute");
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm), delay_wgrad_compute=False", &r), 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "on (overlap_moe_expert_parallel_comm, no delay_wgrad)", &r), 0);
    assert_string_equal(r.unmodelled, "");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "off (no CommOverlapConfig)", &r), 0);
    assert_int_equal(s.overlap_ep_comm, 0);
    s.pp = 2;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "on (card: overlap_1f1b)", &r), 0);
    assert_int_equal(s.overlap_ep_comm, 0);
    assert_string_equal(r.not_applied, "EP overlap (pp > 1 without vpp)");
    s.pp = 1;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_EP_OVERLAP, "online", &r), -1);

    /* cuda_graph: te scopes, local full layer, full_iteration, none; unknown scope; scope not stated */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "te:attn+moe_router+moe_preprocess (impl=transformer_engine)", &r), 0);
    assert_int_equal(s.cuda_graph, MB_CG_ATTN | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS);
    assert_string_equal(r.applied, "CUDA graphs te:attn+moe_router+moe_preprocess");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "local:full_layer (enable_cuda_graph=True)", &r), 0);
    assert_int_equal(s.cuda_graph, MB_CG_LAYER);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "full_iteration (impl=local, scope=full_iteration)", &r), 0);
    assert_int_equal(s.cuda_graph, MB_CG_FULL_ITERATION);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "none (eager baseline)", &r), 0);
    assert_int_equal(s.cuda_graph, 0);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "enabled (scope not stated)", &r), 0);
    assert_string_equal(r.defaulted, "cuda_graph (scope not stated)");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "te:attn+warp_drive", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "te:", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CUDA_GRAPH, "always", &r), -1);
    assert_non_null(strstr(r.bad, "cuda_graph 'te:attn+warp_drive': unknown scope 'warp_drive'"));
    assert_int_equal(s.cuda_graph, 0);

    /* recompute_detail: every spelling of the README, the empty list, full with method and count */
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
        mb_validate_recipe_init(&r);
        if (mb_validate_recipe_cell(&s, MB_VAL_RC_RECOMPUTE_DETAIL, rc[i].cell, &r) != 0)
            fail_msg("'%s': %s", rc[i].cell, r.bad);
        assert_int_equal(s.recompute, rc[i].g);
        assert_int_equal(s.recompute_modules, rc[i].mods);
        if (rc[i].g == MB_RC_FULL) {
            assert_int_equal(s.recompute_method, rc[i].meth);
            assert_int_equal(s.recompute_num_layers, rc[i].layers);
        }
    }
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_RECOMPUTE_DETAIL, "selective:flux_capacitor", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_RECOMPUTE_DETAIL, "full:sideways:2 layers", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_RECOMPUTE_DETAIL, "full:block:many layers", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_RECOMPUTE_DETAIL, "partial", &r), -1);
    assert_int_equal(r.n_bad, 4);
    assert_non_null(strstr(r.bad, "recompute_detail 'selective:flux_capacitor': recompute module 'flux_capacitor' not known"));
    assert_int_equal(s.recompute, MB_RC_FULL); /* unchanged by the refused cells */

    /* tp_overlap: needs tp > 1; async TP read as TP comm overlap */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_TP_OVERLAP, "on (TE default ub cfg)", &r), 0);
    assert_int_equal(s.overlap_tp_comm, 0);
    assert_string_equal(r.not_applied, "TP overlap (tp = 1)");
    s.tp = 2;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_TP_OVERLAP, "on (userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192)", &r), 0);
    assert_int_equal(s.overlap_tp_comm, 1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_TP_OVERLAP, "none (no TP comm overlap in Megatron-LM 2021)", &r), 0);
    assert_int_equal(s.overlap_tp_comm, 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_TP_OVERLAP, "async TP (enable_async_tensor_parallel=True)", &r), 0);
    assert_int_equal(s.overlap_tp_comm, 1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_TP_OVERLAP, "sometimes", &r), -1);
    s.tp = 1;
    s.overlap_tp_comm = 0;

    /* fsdp_impl: the distributed optimizer or DDP under 3D; an FSDP flavour against a 3D layout */
    mb_validate_recipe_init(&r);
    s.overlap_grad_reduce = 1;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "none (--DDP-impl local; no distributed optimizer in 2021 Megatron-LM)", &r), 0);
    assert_int_equal(s.dist_opt, 0);
    assert_int_equal(s.overlap_grad_reduce, 0); /* LocalDDP all-reduces after the backward */
    assert_non_null(strstr(r.applied, "grad-reduce overlap off (LocalDDP)"));
    s.overlap_grad_reduce = 1;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "none (DDP + distributed optimizer)", &r), 0);
    assert_int_equal(s.dist_opt, 1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "none (DDP)", &r), 0);
    assert_int_equal(s.dist_opt, 0);
    s.dist_opt = 1;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "megatron_fsdp:optim_grads_params (fsdp_double_buffer)", &r), 0);
    assert_string_equal(r.not_applied, "fsdp_impl megatron_fsdp (the fsdp column says 3D: kept)");
    s.strategy = MB_STRAT_FSDP;
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "megatron_fsdp:optim (fsdp_double_buffer, nccl_ub, keep_fp8_transpose_cache=False)", &r), 0);
    assert_string_equal(r.unmodelled, "data_parallel_sharding_strategy optim (simulated as optim_grads_params), nccl_ub, "
                                      "keep_fp8_transpose_cache");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FSDP_IMPL, "zero3", &r), -1);
    s.strategy = MB_STRAT_3D;

    /* cpu_offload: activation offloading of N layers is memory.cpu_offloading_num_layers N; weight
     * and optimizer offloading are not modelled, and said */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CPU_OFFLOAD, "none", &r), 0);
    assert_int_equal(s.cpu_offload_layers, 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CPU_OFFLOAD, "activations: 20 layers (weights=False)", &r), 0);
    assert_int_equal(s.cpu_offload_layers, 20);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CPU_OFFLOAD, "optimizer CPU offload (card: 'long-context configs')", &r), 0);
    assert_string_equal(r.unmodelled, "optimizer CPU offload");
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CPU_OFFLOAD, "activations: 2 layers (weights=True)", &r), 0);
    assert_int_equal(s.cpu_offload_layers, 2);
    assert_string_equal(r.unmodelled, "CPU weight offload");
    s.cpu_offload_layers = 0;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CPU_OFFLOAD, "activations: some layers", &r), -1);

    /* fp8_recipe: refines a bare FP8; agrees with BF16; contradicts a specific label (kept, said);
     * fp8_dot_product_attention switches attention to FP8; other flags are not modelled */
    mb_precision_parse("fp8", &s.prec);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "tensorwise (FP8 current scaling) (fp8=hybrid) [fp8_param_gather=True]", &r), 0);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_string_equal(r.applied, "precision fp8_cs (fp8_recipe refines fp8)");
    assert_string_equal(r.unmodelled, "");
    /* read, not yet applied: the CSV reader applies it after other_recipe (dist_opt) */
    assert_true(r.fp8pg_stated && r.fp8pg == 1);
    assert_int_equal(s.fp8_param_gather, 0);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp4_param_gather=False]", &r), 0);
    assert_true(r.fp8pg_stated && r.fp8pg == 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp8_param_gather=yes]", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "tensorwise [fp8_param_gather=Maybe]", &r), -1);
    mb_precision_parse("fp8", &s.prec);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "blockwise (FP8-Block)", &r), 0);
    assert_string_equal(s.prec.label, "fp8_blockwise");
    mb_precision_parse("mxfp8", &s.prec);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "mxfp8 (fp8=e4m3) [fp8_param_gather=True; reuse_grad_buf_for_mxfp8_param_ag; fp8_dot_product_attention]", &r), 0);
    assert_string_equal(s.prec.label, "mxfp8");
    assert_int_equal(s.prec.attn, MB_PREC_FP8);
    assert_string_equal(r.applied, "FP8 attention");
    mb_precision_parse("fp8_cs", &s.prec);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "mxfp8", &r), 0);
    assert_string_equal(s.prec.label, "fp8_cs");
    assert_string_equal(r.not_applied, "fp8_recipe mxfp8 (the precision column says fp8_cs: kept)");
    mb_precision_parse("fp8", &s.prec);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "per-tensor FP8 (page footnote); cs vs ds not determinable: both give the published layout", &r), 0);
    assert_string_equal(s.prec.label, "fp8");
    assert_string_equal(r.defaulted, "fp8_recipe (not determinable: the precision column is used)");
    mb_precision_parse("bf16", &s.prec);
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "none (bf16)", &r), 0);
    assert_string_equal(r.applied, "");
    assert_string_equal(r.not_applied, "");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "quantum (q4)", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_FP8_RECIPE, "mxfp8 [fp8_param_gather=True", &r), -1);

    /* ce_fusion: on is not modelled (mbsim runs the unfused cross-entropy); "impl=te" alone says no on/off */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CE_FUSION, "on (impl=te)", &r), 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CE_FUSION, "off (impl=te)", &r), 0);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CE_FUSION, "impl=te", &r), 0);
    assert_string_equal(r.unmodelled, "cross-entropy fusion (impl=te)");
    assert_string_equal(r.defaulted, "ce_fusion (on/off not stated)");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_CE_FUSION, "maybe", &r), -1);

    /* mtp_layers: replaces the model file's depth; not a number is refused */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_MTP_LAYERS, "0", &r), 0);
    assert_string_equal(r.applied, "");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_MTP_LAYERS, "1", &r), 0);
    assert_int_equal(s.model.mtp_layers, 1);
    assert_string_equal(r.applied, "MTP layers 1 (model file: 0)");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_MTP_LAYERS, "one", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_MTP_LAYERS, "2 layers", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_MTP_LAYERS, "-1", &r), -1);
    s.model.mtp_layers = 0;

    /* pp_layout: an explicit layout, expanded; embedding and loss counted as layers (48 + 2 over
     * pp 2: 25 each, so E + 24 t | 24 t + L); an even split is the default; malformed layouts */
    s.pp = 2;
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "Et*23|(t*5)*5L", &r), 0);
    assert_int_equal((int)strlen(s.pipeline_layout), 1 + 23 + 1 + 25 + 1);
    assert_int_equal(strncmp(s.pipeline_layout, "Ettt", 4), 0);
    assert_int_equal(s.pipeline_layout[24], '|');
    assert_string_equal(r.applied, "pipeline layout Et*23|(t*5)*5L");
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=True, account_for_loss=True)", &r), 0);
    {
        char want[64] = "E";
        memset(want + 1, 't', 24);
        want[25] = '|';
        memset(want + 26, 't', 24);
        want[50] = 'L';
        want[51] = '\0';
        assert_string_equal(s.pipeline_layout, want);
    }
    s.pipeline_layout[0] = '\0';
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=False, account_for_loss=False)", &r), 0);
    assert_string_equal(s.pipeline_layout, "");
    s.vpp = 2; /* 50 over 4 virtual stages is not whole: said, not applied */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "uniform split (account_for_embedding=True, account_for_loss=True)", &r), 0);
    assert_string_equal(s.pipeline_layout, "");
    assert_non_null(strstr(r.not_applied, "num_layers + 2 = 50 not divisible by pp*vpp = 4"));
    s.vpp = 1;
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "Et*4|(t*4|", &r), -1);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_PP_LAYOUT, "two stages", &r), -1);
    assert_string_equal(s.pipeline_layout, "");
    s.pp = 1;

    /* other_recipe: the modelled settings, provenance skipped, the rest listed in the cell's spelling */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER,
                                             "grouped_gemm=True; permute_fusion=True; overlap_grad_reduce=False; "
                                             "co.overlap_param_gather=False; grad_reduce_in_fp32=False; "
                                             "precision_aware_opt=True (grads float32, exp_avg bfloat16, params float32); "
                                             "TOKEN-DROP capacity_factor=1.0; force_balance=True; dist_opt=True; "
                                             "shared_expert_overlap=True; DP1; "
                                             "provider-class default used for: cross_entropy_loss_fusion; "
                                             "env: CUDA_DEVICE_MAX_CONNECTIONS=32",
                                             &r),
                     0);
    assert_int_equal(s.overlap_grad_reduce, 0);
    assert_int_equal(s.overlap_param_gather, 0);
    assert_int_equal(s.grad_bytes, 2); /* grad_reduce_in_fp32=False wins over the optimizer's grads dtype */
    assert_int_equal(s.state_bytes, 4);
    assert_true(mb_dbl_eq(s.capacity_factor, 1.0));
    assert_string_equal(r.unmodelled, "permute_fusion=True, env: CUDA_DEVICE_MAX_CONNECTIONS=32");
    assert_string_equal(r.not_applied, "shared_expert_overlap (no shared experts)");
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "overlap_grad_reduce=maybe; seq_parallel=yes; "
                                                                  "TOKEN-DROP capacity_factor=0.5",
                                             &r),
                     -1);
    assert_int_equal(r.n_bad, 3);
    assert_int_equal(s.overlap_grad_reduce, 0);
    /* attention_backend (Megatron-Core --attention-backend names) */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "attention_backend=local", &r), 0);
    assert_int_equal(s.attn_backend, MB_ATTN_LOCAL);
    assert_non_null(strstr(r.applied, "attention backend local"));
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "attention_backend=fused", &r), 0);
    assert_int_equal(s.attn_backend, MB_ATTN_FUSED);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "attention_backend=paged", &r), -1);
    assert_int_equal(s.attn_backend, MB_ATTN_FUSED);
    s.attn_backend = MB_ATTN_AUTO;
    /* defer_embedding_wgrad: needs pp > 1 (said at pp 1); the limit with it, else Megatron's 0 (said) */
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=True", &r), 0);
    assert_int_equal(s.defer_wgrad, 0);
    assert_non_null(strstr(r.not_applied, "defer_embedding_wgrad (needs pp > 1, 3d)"));
    s.pp = 2;
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "wgrad_deferral_limit=22; defer_embedding_wgrad=True", &r), 0);
    assert_int_equal(s.defer_wgrad, 1);
    assert_int_equal(s.wgrad_deferral_limit, 22);
    s.wgrad_deferral_limit = 0;
    mb_validate_recipe_init(&r);
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=True", &r), 0);
    assert_int_equal(s.wgrad_deferral_limit, 0);
    assert_non_null(strstr(r.defaulted, "wgrad_deferral_limit (Megatron's 0: every microbatch)"));
    assert_int_equal(mb_validate_recipe_cell(&s, MB_VAL_RC_OTHER, "defer_embedding_wgrad=False; wgrad_deferral_limit=-3", &r), -1);
    assert_int_equal(s.defer_wgrad, 0);
    s.pp = 1;

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
        {FIX "recipes/rec_row.yaml", FIX "recipes_bad/duplicate.yaml", "measured.csv_row 'rec_row' is also the row of"},
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

/* Issue 14's bar on the public set: the two Llama-3-70B SFT memory rows of
 * ../shared/data/measured/public_measured.csv (copied verbatim, header and rows, into
 * tests/data/validate/public_llama_memory_rows.csv: NVIDIA-NeMo/Megatron-Bridge@067f987df03b
 * skills/nemo-mbridge-perf-memory-tuning/card.yaml, peaks 53.2 and 50.2 GB in the notes, logged after
 * iteration 1) within 10 % once the run's recipe applies -- through the shipped recipe files
 * scenarios/measured/llama3_70b_sft_h100_32_more_{pp,tp}.yaml (measured.csv_row) -- and more than 10 %
 * low without it: the recipe's bf16 main gradients (and their fp32 copy at the step) are the
 * difference, not a constant. */
static void test_public_llama_memory_rows(void **state)
{
    (void)state;
    static const char *const ids[] = {"mbskill_mem_llama3_70b_sft_h100_32_more_pp",
                                      "mbskill_mem_llama3_70b_sft_h100_32_more_tp"};
    for (int with = 0; with < 2; with++) {
        struct mb_val_summary s;
        struct mb_err e;
        mb_validate_init(&s);
        mb_err_clear(&e);
        if (with)
            assert_int_equal(mb_validate_add_recipes(&s, "scenarios/measured", &e), 0);
        assert_int_equal(mb_validate_add_csv(&s, FIX "public_llama_memory_rows.csv", &e), 0);
        mb_validate_finish(&s);
        for (int i = 0; i < 2; i++) {
            const struct mb_val_row *r = find_row(&s, ids[i]);
            assert_true(r->mem_compared);
            assert_int_equal(r->mem_first_iter, 1);
            assert_int_equal(r->recipe_file[0] != '\0', with);
            if (with ? fabs(r->mem_err_pct) > 10 : r->mem_err_pct > -10)
                fail_msg("%s %s recipe files: memory %+.1f %%", ids[i], with ? "with" : "without", r->mem_err_pct);
        }
        mb_validate_free(&s);
    }
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
                                    "router_fusion=True, env: CUDA_DEVICE_MAX_CONNECTIONS=32, NVLINK_DOMAIN_SIZE=8"));
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

/* Step 10: what the notes say about memory. A run is reported OOM when its
 * notes use the word OOM (also OOM_on_rank0) or "out of memory", not negated by
 * the word before; a measured peak is only an item "peak N GB|GiB" with a plain
 * number, GB decimal: 53.2 GB = 53.2e9 / 2^30 = 49.546 GiB. */
static void test_notes_memory(void **state)
{
    (void)state;
    static const struct {
        const char *notes;
        int oom;
    } o[] = {
        {"task=sft; DP2; status OOM_on_rank0 (fragmentation)", 1},
        {"OOM", 1},
        {"baseline needed expandable_segments (fragmentation OOM)", 1},
        {"CUDA out of memory at step 2", 1},
        {"no OOM", 0},
        {"ran without OOM; fine", 0},
        {"no OOM at 4k; OOM at 8k", 1}, /* the second is not negated */
        {"zoom 2x; BOOM; oomph", 0},
        {"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++)
        if (mb_validate_notes_oom(o[i].notes) != o[i].oom)
            fail_msg("'%s': expected %d", o[i].notes ? o[i].notes : "(null)", o[i].oom);

    static const struct {
        const char *notes;
        double gib; /* 0: none */
    } m[] = {
        {"task=sft; DP1; peak 53.2 GB; severe regression", 53.2e9 / 1073741824.0},
        {"peak 40 GiB", 40.0},
        {"peak 12 GB (rank 0)", 12e9 / 1073741824.0},
        {"peak ~59 GB", 0},       /* approximate: not a measurement to score */
        {"memory ~150 GB", 0},    /* not said to be the peak */
        {"peak memory 5 GB", 0},  /* no number after "peak" */
        {"peak 53.2", 0},         /* no unit */
        {"peak 7 TB", 0},         /* a unit not read */
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        double g = -1;
        int found = mb_validate_notes_peak_memory(m[i].notes, &g);
        if (found != (m[i].gib > 0) || !mb_dbl_eq(g, m[i].gib))
            fail_msg("'%s': got %d, %g GiB; expected %g", m[i].notes ? m[i].notes : "(null)", found, g, m[i].gib);
    }
}

/* The predicted peaks of one CSV row, computed again through the public API
 * from the scenario the row was simulated with (on_row): the largest
 * allocated, reserved and device bytes over the pipeline stages' ranks. */
struct mem_pred {
    size_t n;
    struct {
        char id[160];
        double alloc, reserved, device; /* GiB */
        struct mb_memory mem;
    } row[16];
};

static void mem_hook(void *ctx, const struct mb_val_row *r, const struct mb_scenario *sc)
{
    struct mem_pred *p = ctx;
    struct mb_result res;
    struct mb_err e;
    struct mb_step_opts opts = {.critical_path = 0};
    assert_true(p->n < 16);
    memset(&res, 0, sizeof res);
    mb_err_clear(&e);
    assert_int_equal(mb_step_simulate_opts(sc, &opts, &res, &e), 0);
    snprintf(p->row[p->n].id, sizeof p->row[p->n].id, "%s", r->id);
    p->row[p->n].alloc = p->row[p->n].reserved = p->row[p->n].device = 0;
    for (int st = 0; st < res.mem.n_stages; st++) {
        p->row[p->n].alloc = fmax(p->row[p->n].alloc, res.mem.per_stage[st].peak_allocated / 1073741824.0);
        p->row[p->n].reserved = fmax(p->row[p->n].reserved, res.mem.per_stage[st].reserved / 1073741824.0);
        p->row[p->n].device = fmax(p->row[p->n].device, res.mem.per_stage[st].device / 1073741824.0);
    }
    p->row[p->n].mem = res.mem;
    p->n++;
    mb_result_free(&res);
}

static const double *mem_of(const struct mem_pred *p, const char *id, const char *kind)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->row[i].id, id))
            return !strcmp(kind, "reserved") ? &p->row[i].reserved
                   : !strcmp(kind, "device") ? &p->row[i].device
                                             : &p->row[i].alloc;
    fail_msg("row '%s' was not simulated", id);
    return NULL;
}

/* Step 11: memory.csv, nine rows on DGX-H100 (capacity 79.6 GiB):
 *  - alloc_col, reserved_col, device_pp, column_wins: peak_memory_gib 40, 30.5,
 *    25, 45 with kind (empty = allocated), "Reserved", "device", empty;
 *    column_wins also says "peak 99 GB" in its notes: the column wins;
 *  - from_notes: no column value, notes "peak 53.2 GB; no OOM" -> 49.546 GiB
 *    allocated, not reported OOM;
 *  - oom_ran: Llama-3-70B on 8 GPUs, TP1 PP1: the bf16 weights alone (131 GiB)
 *    exceed the GPU -> predicted OOM, and it ran;
 *  - reported_oom: notes "status OOM_on_rank0", peak 70 GiB: compared per row,
 *    not in the memory MAPE (its peak is where it failed); an 8B model with TP2
 *    and full recompute holds ~36 GiB -> predicted to fit;
 *  - reported_oom_skipped: "out of memory", but gbs missing: skipped, not counted;
 *  - no_memory: nothing stated.
 * Error per row = (predicted - measured) / measured * 100 with predicted the
 * row's peak of the stated kind, recomputed here from the scenario.
 * Counts: predicted 8; reported OOM 1 (fits: 1); ran 7 (predicted OOM 1, at risk 0);
 * compared in memory and ran: 5. */
/* A "peak N GB" of the notes is a training log's figure, which Megatron-Bridge took on its writer
 * rank (the last pipeline stage) until it reduced the memory report over the PP group
 * (NVIDIA-NeMo/Megatron-Bridge@55c4e667, train_utils.py reduce_max_memory_across_pp_group), and
 * printed once, after the first iteration, until NVIDIA-NeMo/Megatron-Bridge@4d82ed17 (PR #3169): with
 * pp 2 it is compared with stage 1's first-iteration peak, not the larger stage 0's. That peak, by
 * hand from stage 1's terms: the passes without Adam's two fp32 moments (8 of the optimizer's 12 B per
 * element, Transformer Engine's FusedAdam creates them in its first step), or the step itself (weights,
 * fp32 grads, the whole optimizer state, workspaces; no gradient copy with fp32 grads), the larger. */
static void test_memory_notes_last_stage(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    struct mem_pred p = {0};
    mb_validate_init(&s);
    s.on_row = mem_hook;
    s.on_row_ctx = &p;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_add_csv(&s, FIX "memory_notes_pp.csv", &e), 0);
    mb_validate_finish(&s);
    const struct mb_val_row *r = find_row(&s, "notes_pp");
    assert_true(r->mem_compared);
    assert_string_equal(r->mem_from, "notes");
    assert_int_equal(p.n, 1);
    const struct mb_memory *m = &p.row[0].mem;
    assert_int_equal(m->n_stages, 2);
    double last = m->per_stage[1].peak_allocated / 1073741824.0, first = m->per_stage[0].peak_allocated / 1073741824.0;
    assert_true(first > last); /* stage 0 holds more microbatches' activations */
    const struct mb_memory_stage *l = &m->per_stage[1];
    double passes = l->peak_allocated - l->optimizer * 8 / 12;
    double step = l->weights + l->grads + l->optimizer + l->workspace + l->graphs;
    assert_true(l->peak_allocated > step); /* at steady state the passes are the peak */
    assert_true(mb_dbl_eq(r->pred_mem_gib, fmax(passes, step) / 1073741824.0));
    assert_int_equal(r->mem_first_iter, 1);
    assert_true(mb_dbl_eq(r->meas_mem_gib, 30e9 / 1073741824.0));
    mb_validate_free(&s);
}

/* A reported-OOM scenario's peak: where it failed (tiny_oom_peak.yaml), so out of the memory MAPE; or
 * logged after iteration 1, which completed (tiny_oom_iter1.yaml, measured.peak_memory_after_iteration:
 * 1), so compared with the first iteration's peak and in the MAPE. That peak by hand from the terms:
 * max(the steady peak - Adam's two fp32 moments, 8 of the optimizer's 12 B per element; the optimizer
 * step: weights, fp32 grads, the whole optimizer state, workspaces). */
static void test_memory_oom_after_first_iteration(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    struct mem_pred p = {0};
    const char *paths[] = {FIX "tiny_oom_peak.yaml", FIX "tiny_oom_iter1.yaml"};
    mb_validate_init(&s);
    s.on_row = mem_hook;
    s.on_row_ctx = &p;
    mb_err_clear(&e);
    for (int i = 0; i < 2; i++)
        assert_int_equal(mb_validate_add_scenario(&s, paths[i], &e), 0);
    mb_validate_finish(&s);
    const struct mb_val_row *a = find_row(&s, "tiny_oom_peak"), *b = find_row(&s, "tiny_oom_iter1");
    assert_true(a->reported_oom && a->mem_compared && !a->mem_first_iter);
    assert_true(b->reported_oom && b->mem_compared && b->mem_first_iter);
    const struct mb_memory_stage *m = &p.row[1].mem.per_stage[0];
    double first = fmax(m->peak_allocated - m->optimizer * 8 / 12,
                        m->weights + m->grads + m->optimizer + m->workspace + m->graphs);
    assert_true(mb_dbl_eq(a->pred_mem_gib, m->peak_allocated / 1073741824.0));
    assert_true(mb_dbl_eq(b->pred_mem_gib, first / 1073741824.0));
    assert_int_equal(s.n_mem, 1);
    assert_int_equal(s.n_mem_oom_later, 1);
    assert_true(mb_dbl_eq(s.mape_mem_pct, fabs(b->mem_err_pct)));
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "peak memory: 1 row compared (1 reported OOM after the first iteration"));
    assert_non_null(strstr(buf, "# reported OOM: not in the memory MAPE"));
    assert_non_null(strstr(buf, "; reported OOM later"));
    free(buf);
    mb_validate_free(&s);
}

static void test_memory_csv(void **state)
{
    (void)state;
    struct mb_val_summary s;
    struct mb_err e;
    struct mem_pred p = {0};
    const struct mb_val_row *r;
    mb_validate_init(&s);
    s.on_row = mem_hook;
    s.on_row_ctx = &p;
    mb_err_clear(&e);
    if (mb_validate_add_csv(&s, FIX "memory.csv", &e) != 0) {
        mb_err_format(&e, msgbuf, sizeof msgbuf);
        fail_msg("%s", msgbuf);
    }
    mb_validate_finish(&s);
    assert_int_equal(s.n_rows, 9);
    assert_int_equal(s.n_predicted, 8);

    static const struct {
        const char *id, *kind, *from;
        double measured;
    } c[] = {
        {"alloc_col", "allocated", "column", 40.0},
        {"reserved_col", "reserved", "column", 30.5},
        {"device_pp", "device", "column", 25.0},
        {"from_notes", "allocated", "notes", 53.2e9 / 1073741824.0},
        {"column_wins", "allocated", "column", 45.0},
        {"reported_oom", "allocated", "column", 70.0},
    };
    double err[6];
    for (size_t i = 0; i < 6; i++) {
        r = find_row(&s, c[i].id);
        double pred = *mem_of(&p, c[i].id, c[i].kind);
        if (!strcmp(c[i].from, "notes")) { /* after iteration 1 (test_memory_notes_last_stage) */
            const struct mb_memory *m = NULL;
            for (size_t k = 0; k < p.n; k++)
                if (!strcmp(p.row[k].id, c[i].id))
                    m = &p.row[k].mem;
            assert_non_null(m);
            pred = m->per_stage[m->n_stages - 1].first_iter_allocated / 1073741824.0;
            assert_true(pred < *mem_of(&p, c[i].id, c[i].kind));
        }
        assert_true(r->mem_compared);
        assert_string_equal(r->mem_kind, c[i].kind);
        assert_string_equal(r->mem_from, c[i].from);
        assert_true(mb_dbl_eq(r->meas_mem_gib, c[i].measured));
        assert_true(mb_dbl_eq(r->pred_mem_gib, pred));
        err[i] = (pred - c[i].measured) / c[i].measured * 100.0;
        assert_true(mb_dbl_eq(r->mem_err_pct, err[i]));
        assert_int_equal(r->verdict, MB_MEM_FITS);
    }
    /* device_pp has two stages: the largest rank's device memory is compared */
    assert_true(*mem_of(&p, "device_pp", "device") > 0);
    /* the stated kinds are different numbers of one rank: reserved >= allocated */
    assert_true(*mem_of(&p, "reserved_col", "reserved") >= *mem_of(&p, "alloc_col", "allocated"));

    r = find_row(&s, "from_notes");
    assert_false(r->reported_oom);
    r = find_row(&s, "reported_oom");
    assert_true(r->reported_oom);
    r = find_row(&s, "reported_oom_skipped");
    assert_true(r->skipped && r->reported_oom);
    r = find_row(&s, "no_memory");
    assert_false(r->mem_compared);
    assert_string_equal(r->mem_from, "");

    /* oom_ran: predicted OOM; the listed terms start with the largest one */
    r = find_row(&s, "oom_ran");
    assert_false(r->reported_oom);
    assert_int_equal(r->verdict, MB_MEM_OOM);
    assert_false(r->mem_compared);
    assert_non_null(strstr(r->note, "predicted OOM (")); /* the per-row note stays */
    for (size_t i = 0; i < p.n; i++)
        if (!strcmp(p.row[i].id, "oom_ran")) {
            const struct mb_memory *m = &p.row[i].mem;
            char first[64];
            assert_true(m->grads > m->weights && m->grads > m->optimizer && m->grads > m->activations);
            snprintf(first, sizeof first, "gradients %.1f GiB, ", m->grads / 1073741824.0);
            assert_true(!strncmp(r->mem_terms, first, strlen(first)));
            assert_true(mb_dbl_eq(r->device_gib, m->device / 1073741824.0));
        }

    assert_int_equal(s.n_reported_oom, 1);
    assert_int_equal(s.n_reported_oom_pred_fits, 1);
    assert_int_equal(s.n_reported_oom_pred_at_risk + s.n_reported_oom_pred_oom, 0);
    assert_int_equal(s.n_ran, 7);
    assert_int_equal(s.n_ran_pred_oom, 1);
    assert_int_equal(s.n_ran_pred_at_risk, 0);
    /* memory MAPE over the five that ran (reported_oom, err[5], is left out) */
    assert_int_equal(s.n_mem, 5);
    double mape = (fabs(err[0]) + fabs(err[1]) + fabs(err[2]) + fabs(err[3]) + fabs(err[4])) / 5;
    assert_true(mb_dbl_eq(s.mape_mem_pct, mape));
    double sorted[5];
    memcpy(sorted, err, sizeof sorted);
    for (int i = 0; i < 5; i++) /* insertion sort: the signed median is the third */
        for (int j = i; j > 0 && sorted[j] < sorted[j - 1]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    assert_true(mb_dbl_eq(s.median_mem_err_pct, sorted[2]));

    /* text: the memory table, the counts and the predicted-OOM row with its terms */
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "memory (peak per GPU, GiB)"));
    assert_non_null(strstr(buf, "memory verdicts: 7 rows ran: 1 predicted OOM, 0 at risk; 1 reported OOM: 1 "
                                "predicted to fit, 0 at risk, 0 OOM\n"));
    assert_non_null(strstr(buf, "peak memory: 5 rows that ran compared, MAPE "));
    assert_non_null(strstr(buf, "predicted OOM but ran"));
    const char *at = strstr(buf, "  oom_ran ");
    assert_non_null(at);
    assert_non_null(strstr(at, find_row(&s, "oom_ran")->mem_terms));
    assert_non_null(strstr(buf, "# reported OOM: not in the memory MAPE"));
    free(buf);

    /* JSON: the same numbers under the documented keys */
    json_t *root = summary_json(&s);
    assert_int_equal(json_integer_value(json_object_get(root, "n_ran")), 7);
    assert_int_equal(json_integer_value(json_object_get(root, "n_ran_predicted_oom")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "n_ran_predicted_at_risk")), 0);
    assert_int_equal(json_integer_value(json_object_get(root, "n_reported_oom")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "n_reported_oom_predicted_fits")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "n_reported_oom_predicted_at_risk")), 0);
    assert_int_equal(json_integer_value(json_object_get(root, "n_reported_oom_predicted_oom")), 0);
    assert_int_equal(json_integer_value(json_object_get(root, "n_memory")), 5);
    assert_true(mb_dbl_eq(json_real_value(json_object_get(root, "memory_mape_pct")), mape));
    assert_true(mb_dbl_eq(json_real_value(json_object_get(root, "memory_median_err_pct")), sorted[2]));
    json_t *list = json_object_get(root, "predicted_oom_ran");
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "id")), "oom_ran");
    json_t *rows = json_object_get(root, "rows");
    json_t *r0 = json_array_get(rows, 1); /* reserved_col */
    assert_string_equal(json_string_value(json_object_get(r0, "memory_kind")), "reserved");
    assert_true(mb_dbl_eq(json_real_value(json_object_get(r0, "memory_err_pct")), err[1]));
    assert_string_equal(json_string_value(json_object_get(r0, "memory_verdict")), "fits");
    json_t *r6 = json_array_get(rows, 6); /* reported_oom */
    assert_true(json_is_true(json_object_get(r6, "reported_oom")));
    json_decref(root);
    mb_validate_free(&s);
}

/* Step 12: the counts on hand-made rows (no simulation): a fits row with a
 * memory error of +10 %, an at-risk row with -20 %, a predicted OOM, three
 * rows reported OOM (one per verdict; one with a +50 % memory error, left out
 * of the MAPE), and two skipped rows (one reported OOM) that count nowhere.
 * Ran: 3, predicted OOM 1, at risk 1; reported OOM 3: fits 1, at risk 1, OOM 1;
 * memory: n 2, MAPE (10 + 20) / 2 = 15, signed median (-20 + 10) / 2 = -5. */
static void test_memory_counts(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        int skipped, reported, verdict, compared;
        double err;
    } t[] = {
        {"fits", 0, 0, MB_MEM_FITS, 1, 10},   {"risk", 0, 0, MB_MEM_AT_RISK, 1, -20},
        {"oom", 0, 0, MB_MEM_OOM, 0, 0},      {"rep_fits", 0, 1, MB_MEM_FITS, 1, 50},
        {"rep_risk", 0, 1, MB_MEM_AT_RISK, 0, 0}, {"rep_oom", 0, 1, MB_MEM_OOM, 0, 0},
        {"skip_rep", 1, 1, MB_MEM_FITS, 0, 0}, {"skip", 1, 0, MB_MEM_OOM, 0, 0},
    };
    const size_t n = sizeof t / sizeof t[0];
    struct mb_val_summary s;
    mb_validate_init(&s);
    s.rows = mb_calloc(n, sizeof *s.rows);
    s.n_rows = s.cap_rows = n;
    for (size_t i = 0; i < n; i++) {
        struct mb_val_row *r = &s.rows[i];
        snprintf(r->id, sizeof r->id, "%s", t[i].id);
        snprintf(r->metric, sizeof r->metric, "%s", MB_VAL_TOKENS);
        r->skipped = t[i].skipped;
        if (r->skipped)
            snprintf(r->reason, sizeof r->reason, "hand-made");
        r->reported_oom = t[i].reported;
        r->verdict = t[i].verdict;
        r->mem_compared = t[i].compared;
        r->mem_err_pct = t[i].err;
        snprintf(r->mem_terms, sizeof r->mem_terms, "weights 1.0 GiB");
    }
    mb_validate_finish(&s);
    assert_int_equal(s.n_ran, 3);
    assert_int_equal(s.n_ran_pred_oom, 1);
    assert_int_equal(s.n_ran_pred_at_risk, 1);
    assert_int_equal(s.n_reported_oom, 3);
    assert_int_equal(s.n_reported_oom_pred_fits, 1);
    assert_int_equal(s.n_reported_oom_pred_at_risk, 1);
    assert_int_equal(s.n_reported_oom_pred_oom, 1);
    assert_int_equal(s.n_mem, 2);
    assert_true(mb_dbl_eq(s.mape_mem_pct, 15.0));
    assert_true(mb_dbl_eq(s.median_mem_err_pct, -5.0));

    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mb_validate_print_text(&s, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "peak memory: 2 rows that ran compared, MAPE 15.00 %, signed median error -5.00 %\n"));
    assert_non_null(strstr(buf, "memory verdicts: 3 rows ran: 1 predicted OOM, 1 at risk; 3 reported OOM: 1 predicted "
                                "to fit, 1 at risk, 1 OOM\n"));
    /* only the predicted OOM that ran is listed, not rep_oom or skip */
    const char *list = strstr(buf, "predicted OOM but ran");
    assert_non_null(list);
    assert_non_null(strstr(list, "\n  oom "));
    assert_null(strstr(list, "rep_oom"));
    assert_null(strstr(list, "  skip"));
    free(buf);
    mb_validate_free(&s);

    /* no rows: the statistics are NaN (null in JSON) and every count 0 */
    mb_validate_init(&s);
    mb_validate_finish(&s);
    assert_true(isnan(s.mape_mem_pct) && isnan(s.median_mem_err_pct));
    assert_int_equal(s.n_ran + s.n_reported_oom + s.n_mem, 0);
    mb_validate_free(&s);
}

/* Memory drift against a baseline (tests/data/validate/baseline_memory.json),
 * on a summary built by hand (malformed memory fields: test_drift). The time predictions are equal, so only memory
 * moves. m1: 50 -> 55 GiB is +10 % (past 5 %); m2: 70 -> 72 GiB is
 * 2/70 = +2.857 % but fits -> at risk (another verdict: past the threshold);
 * m3: 40 -> 40.4 is +1 %; m4: the baseline row has no memory (written before
 * mbsim predicted it): not compared; m5: 30 -> 30 unchanged; m6: a memory-only
 * row, 60 -> 69 GiB is +15 %; m7: skipped now: not compared. */
static void test_drift_memory(void **state)
{
    (void)state;
    static struct mb_val_row rows[7];
    static const struct {
        const char *id;
        int skipped, mem_only, verdict;
        double gib;
    } now[] = {
        {"m1", 0, 0, MB_MEM_FITS, 55},    {"m2", 0, 0, MB_MEM_AT_RISK, 72}, {"m3", 0, 0, MB_MEM_FITS, 40.4},
        {"m4", 0, 0, MB_MEM_FITS, 30},    {"m5", 0, 0, MB_MEM_FITS, 30},    {"m6", 0, 1, MB_MEM_OOM, 69},
        {"m7", 1, 0, MB_MEM_FITS, 0},
    };
    struct mb_val_summary s;
    mb_validate_init(&s);
    for (size_t i = 0; i < 7; i++) {
        snprintf(rows[i].id, sizeof rows[i].id, "%s", now[i].id);
        snprintf(rows[i].metric, sizeof rows[i].metric, "%s", now[i].mem_only ? "" : MB_VAL_STEP);
        snprintf(rows[i].reason, sizeof rows[i].reason, "%s", now[i].skipped ? "precision not stated" : "");
        rows[i].skipped = now[i].skipped;
        rows[i].mem_only = now[i].mem_only;
        rows[i].predicted = now[i].skipped || now[i].mem_only ? 0 : 1.0;
        rows[i].verdict = now[i].verdict;
        rows[i].device_gib = now[i].gib;
    }
    s.rows = rows;
    s.n_rows = 7;
    s.n_predicted = 6;
    struct mb_val_drift d;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_validate_drift(&s, FIX "baseline_memory.json", 5.0, &d, &e), 0);
    assert_int_equal(d.n_kind[MB_DRIFT_SAME], 6); /* m1..m6: same time (m6: memory-only on both sides) */
    assert_int_equal(d.n_kind[MB_DRIFT_NOW_SKIPPED], 1);
    assert_int_equal(d.n_mem_compared, 5);        /* m1, m2, m3, m5, m6 */
    assert_int_equal(d.n_mem, 4);
    assert_int_equal(d.n_verdict_changed, 1);
    assert_int_equal(d.n_mem_over, 3);            /* m6, m1, m2 */
    assert_true(fabs(d.max_abs_mem_drift_pct - 15) < 1e-9);
    static const struct {
        const char *id;
        double old_gib, new_gib, drift;
        int flip, over;
    } want[] = {
        {"m6", 60, 69, 15, 0, 1},
        {"m1", 50, 55, 10, 0, 1},
        {"m2", 70, 72, 200.0 / 70, 1, 1},
        {"m3", 40, 40.4, 1, 0, 0},
    };
    assert_int_equal(d.n_mem, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(d.mem_rows[i].id, want[i].id);
        assert_true(fabs(d.mem_rows[i].old_gib - want[i].old_gib) < 1e-12);
        assert_true(fabs(d.mem_rows[i].new_gib - want[i].new_gib) < 1e-12);
        assert_true(fabs(d.mem_rows[i].drift_pct - want[i].drift) < 1e-9);
        assert_int_equal(d.mem_rows[i].verdict_changed, want[i].flip);
        assert_int_equal(d.mem_rows[i].over, want[i].over);
    }
    assert_string_equal(d.mem_rows[2].old_verdict, "fits");
    assert_string_equal(d.mem_rows[2].new_verdict, "at risk");

    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    mb_validate_drift_print(&d, "base.json", 10, fp);
    fclose(fp);
    assert_non_null(strstr(buf, "memory: 5 rows compared, 4 changed, 1 verdict changed"));
    assert_non_null(strstr(buf, "fits -> at risk  PAST THRESHOLD"));
    assert_non_null(strstr(buf, "+15.00  OOM -> OOM  PAST THRESHOLD"));
    assert_non_null(strstr(buf, "memory drift: 3 rows past 5.00 % or with another verdict (1 verdict changed)"));
    free(buf);
    mb_validate_drift_free(&d);

    /* at 20 % only the verdict change is past */
    assert_int_equal(mb_validate_drift(&s, FIX "baseline_memory.json", 20.0, &d, &e), 0);
    assert_int_equal(d.n_mem_over, 1);
    mb_validate_drift_free(&d);
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
        assert_int_equal(a.n_pending, 0);
        /* b: the two scenarios with a measured block wait (gb200_ep32 has none: skipped at once),
         * the CSV's batch takes them, the last scenario waits for finish */
        assert_int_equal(b.n_pending, i < 1 ? 1 : i < 3 ? 2 : i == 3 ? 0 : 1);
    }
    mb_validate_finish(&a);
    mb_validate_finish(&b);
    assert_int_equal(b.n_pending, 0);
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
    assert_int_equal(b.n_pending, 1);
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
        cmocka_unit_test(test_stats), cmocka_unit_test(test_recompute_cells), cmocka_unit_test(test_system_map),
        cmocka_unit_test(test_precision_map), cmocka_unit_test(test_small_csv), cmocka_unit_test(test_parse_only),
        cmocka_unit_test(test_reports), cmocka_unit_test(test_scenario_files),
        cmocka_unit_test(test_memory_only_scenarios), cmocka_unit_test(test_bad_csv),
        cmocka_unit_test(test_public_csv), cmocka_unit_test(test_apply_notes), cmocka_unit_test(test_recipe_cells),
        cmocka_unit_test(test_recipe_csv), cmocka_unit_test(test_lora_rows), cmocka_unit_test(test_attention_era),
        cmocka_unit_test(test_flop_conventions), cmocka_unit_test(test_notes_memory),
        cmocka_unit_test(test_memory_csv), cmocka_unit_test(test_memory_notes_last_stage),
        cmocka_unit_test(test_memory_counts), cmocka_unit_test(test_drift), cmocka_unit_test(test_drift_memory),
        cmocka_unit_test(test_memory_oom_after_first_iteration), cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_recipe_files), cmocka_unit_test(test_recipe_files_bad),
        cmocka_unit_test(test_public_llama_memory_rows),
        cmocka_unit_test(test_jobs_scenarios), cmocka_unit_test(test_csv_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
