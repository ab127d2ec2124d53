/*
 * test_hf.c -- mb_hf_import: Hugging Face config.json fixtures (public Hub
 * configs, sources in tests/data/hf/README.md) become model files that load
 * and equal the shipped model of the same name field by field and in
 * parameter count (the shipped files come from the Megatron-Bridge providers,
 * an independent source); keys not used are listed with a reason or as
 * unknown; bad configs fail with file:line:col and what was expected.
 * Run from the source tree (ctest sets WORKING_DIRECTORY and MBSIM_DATA_DIR).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mb_hf.h"
#include "mb_model.h"

/* Import fixture into a temporary model file; notes into *notes_p. */
static int import(const char *fixture, char *path, size_t len, char **notes_p, struct mb_err *err)
{
    snprintf(path, len, "/tmp/mbsim_test_hf_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    size_t nlen = 0;
    char *notes = NULL;
    FILE *nf = open_memstream(&notes, &nlen);
    mb_err_clear(err);
    char file[256];
    snprintf(file, sizeof file, "tests/data/hf/%s", fixture);
    int rc = mb_hf_import(file, "imported", out, nf, err);
    fclose(out);
    fclose(nf);
    *notes_p = notes;
    return rc;
}

/* The imported model equals the shipped one in every architecture field. */
static void same_model(const char *fixture, const char *shipped)
{
    char path[64], *notes;
    struct mb_err err;
    int rc = import(fixture, path, sizeof path, &notes, &err);
    if (rc)
        fail_msg("%s: %s", fixture, err.msg);
    struct mb_model a, b;
    assert_int_equal(mb_model_load(path, &a, &err), 0);
    assert_int_equal(mb_model_load(shipped, &b, &err), 0);
    const int fa[] = {a.num_layers, a.hidden, a.ffn_hidden, a.num_heads, a.num_kv_heads, a.head_dim, (int)a.vocab,
                      a.tied_embeddings, (int)a.act, a.rmsnorm, a.qk_norm, a.qkv_bias, a.num_experts, a.topk,
                      a.moe_ffn_hidden, a.shared_ffn_hidden, a.first_dense, a.router_groups, a.router_group_topk,
                      a.mtp_layers, a.q_lora_rank, a.kv_lora_rank, a.qk_head_dim, a.qk_rope_head_dim, a.v_head_dim,
                      a.swa_window, a.swa_full_every, a.vision.depth, a.vision.hidden, a.vision.heads, a.vision.mlp,
                      a.vision.patch, a.vision.temporal_patch, a.vision.spatial_merge, a.vision.deepstack,
                      a.vision.out_hidden, a.vision.in_channels};
    const int fb[] = {b.num_layers, b.hidden, b.ffn_hidden, b.num_heads, b.num_kv_heads, b.head_dim, (int)b.vocab,
                      b.tied_embeddings, (int)b.act, b.rmsnorm, b.qk_norm, b.qkv_bias, b.num_experts, b.topk,
                      b.moe_ffn_hidden, b.shared_ffn_hidden, b.first_dense, b.router_groups, b.router_group_topk,
                      b.mtp_layers, b.q_lora_rank, b.kv_lora_rank, b.qk_head_dim, b.qk_rope_head_dim, b.v_head_dim,
                      b.swa_window, b.swa_full_every, b.vision.depth, b.vision.hidden, b.vision.heads, b.vision.mlp,
                      b.vision.patch, b.vision.temporal_patch, b.vision.spatial_merge, b.vision.deepstack,
                      b.vision.out_hidden, b.vision.in_channels};
    for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
        if (fa[i] != fb[i])
            fail_msg("%s vs %s: field %zu: imported %d, shipped %d", fixture, shipped, i, fa[i], fb[i]);
    struct mb_params pa, pb;
    mb_model_params(&a, &pa);
    mb_model_params(&b, &pb);
    assert_true(pa.total == pb.total && pa.active == pb.active);
    /* RoPE is listed as not modelled, never dropped silently */
    assert_non_null(strstr(notes, "rope_theta = "));
    assert_non_null(strstr(notes, ": RoPE: no parameters"));
    mb_model_free(&a);
    mb_model_free(&b);
    free(notes);
    unlink(path);
}

static void test_shipped_equal(void **state)
{
    (void)state;
    same_model("llama3_8b.json", "llama3_8b");
    same_model("qwen2.5_7b.json", "qwen2.5_7b");
    same_model("mixtral_8x7b.json", "mixtral_8x7b");
    same_model("qwen3_30b_a3b.json", "qwen3_30b_a3b");
    same_model("deepseek_v3.json", "deepseek_v3");
    same_model("qwen3_vl_30b_a3b.json", "qwen3_vl_30b_a3b");
}

static void test_windows_and_notes(void **state)
{
    (void)state;
    char path[64], *notes;
    struct mb_err err;
    struct mb_model m;
    /* Mistral 7B: a 4096-token window on every layer */
    assert_int_equal(import("mistral_7b.json", path, sizeof path, &notes, &err), 0);
    assert_int_equal(mb_model_load(path, &m, &err), 0);
    assert_int_equal(m.swa_window, 4096);
    assert_int_equal(m.swa_full_every, 0);
    mb_model_free(&m);
    free(notes);
    unlink(path);
    /* layer_types sliding, full: every 2nd layer full; the unknown key is listed with its line */
    assert_int_equal(import("tiny_unknown_key.json", path, sizeof path, &notes, &err), 0);
    assert_int_equal(mb_model_load(path, &m, &err), 0);
    assert_int_equal(m.swa_window, 128);
    assert_int_equal(m.swa_full_every, 2);
    assert_int_equal(m.head_dim, 64); /* hidden / heads */
    assert_non_null(strstr(notes, "tiny_unknown_key.json:8: foo_bar = [1,2]: unknown to mbsim, not imported"));
    mb_model_free(&m);
    free(notes);
    unlink(path);
    /* Qwen2.5: the sliding_window it sets but no layer uses is reported */
    assert_int_equal(import("qwen2.5_7b.json", path, sizeof path, &notes, &err), 0);
    assert_non_null(strstr(notes, "qwen2.5_7b.json:20: sliding_window = 131072: unused"));
    free(notes);
    unlink(path);
}

static void bad(const char *fixture, const char *want)
{
    char path[64], *notes, msg[1024];
    struct mb_err err;
    assert_int_equal(import(fixture, path, sizeof path, &notes, &err), -1);
    mb_err_format(&err, msg, sizeof msg);
    if (!strstr(msg, want))
        fail_msg("%s: got '%s', expected '%s'", fixture, msg, want);
    /* nothing written on failure */
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_int_equal(fgetc(fp), EOF);
    fclose(fp);
    free(notes);
    unlink(path);
}

static void test_bad_input(void **state)
{
    (void)state;
    bad("bad_json.json", "tests/data/hf/bad_json.json:5:1: invalid JSON: string or '}' expected");
    bad("bad_type.json", "tests/data/hf/bad_type.json:4:3: \"num_hidden_layers\": expected an integer >= 1");
    bad("bad_model_type.json", "bad_model_type.json:2:3: model_type 'gpt2': expected one of llama, mistral");
    bad("bad_partial_window.json", "bad_partial_window.json:10:3: \"max_window_layers\" = 12: a window on layers "
                                   "12.. only is not supported");
    bad("no_such.json", "tests/data/hf/no_such.json: cannot open");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_equal),
        cmocka_unit_test(test_windows_and_notes),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
