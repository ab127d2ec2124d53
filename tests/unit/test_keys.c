/*
 * test_keys.c -- the scenario key table (mb_keys.h) and what it drives:
 * every key survives write + load, every sweep key sets the field it names,
 * custom model/system paths and names that need quoting load back, the docs
 * carry the generated key reference, and bad text values are refused with
 * their messages.
 *
 * Fixtures: tests/data/keys/ (a tiny MoE VLM model file, an H100 system file,
 * a base scenario naming both by relative path, an inline-model scenario).
 * Expected values are the ones each case sets, written out below, with the
 * test's own offsetof -- never read back from the table under test.
 *
 * `test_keys --regen-doc` rewrites the key reference in
 * docs/scenario-format.md from the table.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, realpath */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mb_coll.h"
#include "mb_keys.h"
#include "test_doc_util.h"
#include "mb_scenario.h"
#include "mb_step.h"
#include "mb_sweep.h"

#define FIX "tests/data/keys/"
#define DOC MBSIM_SOURCE_DIR "/docs/scenario-format.md"

static void load_ok(const char *path, struct mb_scenario *s)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load(path, s, &e)) {
        char buf[1024];
        mb_err_format(&e, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

static void set_ok(struct mb_scenario *s, const char *key, const char *v)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_set(s, key, v, &e))
        fail_msg("set %s=%s: %s", key, v, e.msg);
}

/* Write s to a fresh folder under /tmp (so relative references would break)
 * and load it back into out. */
static void round_trip(const struct mb_scenario *s, struct mb_scenario *out)
{
    char dir[] = "/tmp/mbsim_keys_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(mb_scenario_write_yaml(s, fp), 0);
    fclose(fp);
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load(path, out, &e)) {
        char buf[1024], cmd[160];
        mb_err_format(&e, buf, sizeof buf);
        snprintf(cmd, sizeof cmd, "cat %s >&2", path);
        if (system(cmd) != 0)
            fprintf(stderr, "(cannot show %s)\n", path);
        fail_msg("written scenario does not load: %s", buf);
    }
    remove(path);
    rmdir(dir);
}

/* ---------------------------------------------------------------- cases */

enum vt { V_INT, V_U64, V_DBL, V_UNS, V_STR, V_RANGE, V_PREC };

/* One key: prerequisites ("k=v;k=v"), the value set, the field (own offsetof)
 * and what it must hold. */
struct kcase {
    const char *key, *pre, *value;
    size_t off;
    enum vt t;
    long long i;      /* V_INT (int field), V_U64, V_UNS, V_RANGE min */
    long long i2;     /* V_RANGE max */
    double d;         /* V_DBL */
    const char *s;    /* V_STR, V_PREC label */
    void (*fix)(struct mb_scenario *);
};

#define O(m) offsetof(struct mb_scenario, m)

static void no_images(struct mb_scenario *s) { s->images.dist = MB_IMG_NONE; }
/* recompute.policy torchtitan_op is modelled for dense layers: the base's MoE layers made dense, and the
 * file written names a shipped dense model (llama3_8b) without images */
static void dense_ffn(struct mb_scenario *s)
{
    for (int i = 0; i < s->model.n_layers; i++)
        s->model.layer[i].ffn = MB_FFN_DENSE;
    snprintf(s->model_ref, sizeof s->model_ref, "llama3_8b");
    s->images.dist = MB_IMG_NONE;
    s->mock = 1;
}

static const struct kcase cases[] = {
    {"system.gpus", "", "8", O(gpus), V_INT, 8, 0, 0, NULL, NULL},
    {"precision", "", "FP8-CS", O(prec), V_PREC, 0, 0, 0, "fp8_cs", NULL},
    {"data.seq_length", "", "2048", O(seq_length), V_INT, 2048, 0, 0, NULL, NULL},
    {"data.global_batch_size", "", "128", O(global_batch_size), V_INT, 128, 0, 0, NULL, NULL},
    {"data.micro_batch_size", "", "2", O(micro_batch_size), V_INT, 2, 0, 0, NULL, NULL},
    {"data.mock", "", "true", O(mock), V_INT, 1, 0, 0, NULL, no_images},
    {"data.packing", "", "packed", O(packed), V_INT, 1, 0, 0, NULL, NULL},
    {"data.text_tokens", "", "100+200", O(text_min), V_RANGE, 100, 200, 0, NULL, NULL},
    {"parallel.strategy", "", "fsdp", O(strategy), V_INT, MB_STRAT_FSDP, 0, 0, NULL, NULL},
    {"parallel.tp", "", "2", O(tp), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.pp", "", "2", O(pp), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.vpp", "parallel.pp=2", "2", O(vpp), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.cp", "", "2", O(cp), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.ep", "", "2", O(ep), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.etp", "", "2", O(etp), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.pipeline_layout", "parallel.pp=2", "Et*2|t*2L", O(pipeline_layout), V_STR, 0, 0, 0, "Ett|ttL", NULL},
    {"parallel.cp_comm_type", "", "a2a", O(cp_a2a), V_INT, 1, 0, 0, NULL, NULL},
    {"parallel.fsdp_impl", "parallel.strategy=fsdp", "torch_fsdp2", O(fsdp_impl), V_INT, MB_FSDP_TORCH2, 0, 0, NULL,
     NULL},
    {"parallel.fsdp_reshard_after_forward", "parallel.strategy=fsdp;parallel.fsdp_impl=torch_fsdp2", "false",
     O(fsdp_reshard_after_forward), V_INT, 0, 0, 0, NULL, NULL},
    {"parallel.fsdp_sharded_dtype", "parallel.strategy=fsdp;parallel.fsdp_impl=torch_fsdp2", "bf16",
     O(fsdp_sharded_bytes), V_INT, 2, 0, 0, NULL, NULL},
    {"parallel.fsdp_requires_gradient_sync", "parallel.strategy=fsdp;parallel.fsdp_impl=torch_fsdp2", "false",
     O(fsdp_grad_sync), V_INT, 0, 0, 0, NULL, NULL},
    {"parallel.fsdp_reshard_after_backward", "parallel.strategy=fsdp;parallel.fsdp_impl=torch_fsdp2", "false",
     O(fsdp_reshard_after_backward), V_INT, 0, 0, 0, NULL, NULL},
    {"parallel.fsdp_double_buffer", "parallel.strategy=fsdp", "true", O(fsdp_double_buffer), V_INT, 1, 0, 0, NULL,
     NULL},
    {"parallel.fsdp_keep_fp8_transpose_cache", "parallel.strategy=fsdp", "true", O(fsdp_keep_fp8_transpose), V_INT,
     1, 0, 0, NULL, NULL},
    {"parallel.fsdp_communication_unit_size", "parallel.strategy=fsdp", "50000000", O(fsdp_unit_size), V_INT,
     50000000, 0, 0, NULL, NULL},
    {"training.loss_chunks", "", "8", O(loss_chunks), V_INT, 8, 0, 0, NULL, NULL},
    {"recompute.every", "recompute.policy=torchtitan_layer", "3", O(rc_every), V_INT, 3, 0, 0, NULL, NULL},
    {"recompute.policy", "", "torchtitan_op", O(rc_policy), V_INT, MB_RCP_TORCHTITAN_OP, 0, 0, NULL, dense_ffn},
    {"parallel.sequence_parallel", "parallel.tp=2", "false", O(sequence_parallel), V_INT, 0, 0, 0, NULL, NULL},
    {"moe.dispatcher", "", "deepep", O(dispatcher), V_INT, MB_DISP_DEEPEP, 0, 0, NULL, NULL},
    {"moe.routing", "", "skewed", O(routing), V_INT, MB_ROUTE_SKEWED, 0, 0, NULL, NULL},
    {"moe.skew", "", "2.5", O(routing_skew), V_DBL, 0, 0, 2.5, NULL, NULL},
    {"moe.seed", "", "12345678901", O(routing_seed), V_U64, 12345678901LL, 0, 0, NULL, NULL},
    {"moe.dispatcher_sms", "moe.dispatcher=hybridep", "16", O(dispatcher_sms), V_INT, 16, 0, 0, NULL, NULL},
    {"moe.capacity_factor", "", "1.25", O(capacity_factor), V_DBL, 0, 0, 1.25, NULL, NULL},
    {"moe.shared_expert_overlap", "", "true", O(shared_expert_overlap), V_INT, 1, 0, 0, NULL, NULL},
    {"moe.hybridep_permute_fusion", "", "false", O(hybridep_permute_fusion), V_INT, 0, 0, 0, NULL, NULL},
    {"moe.permute_fusion", "", "false", O(permute_fusion), V_INT, 0, 0, 0, NULL, NULL},
    {"moe.router_fusion", "", "true", O(router_fusion), V_INT, 1, 0, 0, NULL, NULL},
    {"moe.pad_expert_input_to_capacity", "moe.capacity_factor=1.25", "true", O(pad_to_capacity), V_INT, 1, 0, 0, NULL, NULL},
    {"recompute.granularity", "", "full", O(recompute), V_INT, MB_RC_FULL, 0, 0, NULL, NULL},
    {"recompute.modules", "recompute.granularity=selective", "layernorm+mlp", O(recompute_modules), V_UNS,
     MB_RCM_LAYERNORM | MB_RCM_MLP, 0, 0, NULL, NULL},
    {"recompute.method", "recompute.granularity=full", "block", O(recompute_method), V_INT, MB_RC_BLOCK, 0, 0,
     NULL, NULL},
    {"recompute.num_layers", "recompute.granularity=full", "2", O(recompute_num_layers), V_INT, 2, 0, 0, NULL,
     NULL},
    {"cuda_graph.modules", "", "attn+moe_router", O(cuda_graph), V_UNS, MB_CG_ATTN | MB_CG_MOE_ROUTER, 0, 0, NULL,
     NULL},
    {"cuda_graph.reuse_buffers", "cuda_graph.modules=attn", "false", O(cg_reuse_buffers), V_INT, 0, 0, 0, NULL,
     NULL},
    {"freeze", "", "language", O(freeze), V_UNS, MB_FREEZE_LANGUAGE, 0, 0, NULL, NULL},
    {"peft.lora_rank", "freeze=language", "16", O(lora_rank), V_INT, 16, 0, 0, NULL, NULL},
    {"peft.lora_targets", "freeze=language;peft.lora_rank=8", "linear_qkv+linear_fc2", O(lora_targets), V_UNS,
     MB_LORA_QKV | MB_LORA_FC2, 0, 0, NULL, NULL},
    {"overlap.grad_reduce", "", "false", O(overlap_grad_reduce), V_INT, 0, 0, 0, NULL, NULL},
    {"overlap.param_gather", "", "false", O(overlap_param_gather), V_INT, 0, 0, 0, NULL, NULL},
    {"overlap.tp_comm", "", "true", O(overlap_tp_comm), V_INT, 1, 0, 0, NULL, NULL},
    {"overlap.ep_comm", "parallel.ep=2", "true", O(overlap_ep_comm), V_INT, 1, 0, 0, NULL, NULL},
    {"overlap.fsdp_prefetch", "parallel.strategy=fsdp", "3", O(fsdp_prefetch), V_INT, 3, 0, 0, NULL, NULL},
    {"optimizer.main_grads", "", "bf16", O(grad_bytes), V_INT, 2, 0, 0, NULL, NULL},
    {"optimizer.states", "", "bf16", O(state_bytes), V_INT, 4, 0, 0, NULL, NULL},
    {"optimizer.distributed", "", "false", O(dist_opt), V_INT, 0, 0, 0, NULL, NULL},
    {"training.cross_entropy_fusion", "", "false", O(ce_fusion), V_INT, 0, 0, 0, NULL, NULL},
    {"training.cross_entropy_fusion_impl", "", "native", O(ce_impl), V_INT, MB_CE_NATIVE, 0, 0, NULL, NULL},
    {"training.attention_backend", "", "local", O(attn_backend), V_INT, MB_ATTN_LOCAL, 0, 0, NULL, NULL},
    {"training.attention_dropout", "training.attention_backend=unfused", "0.1", O(attn_dropout), V_DBL, 0, 0, 0.1,
     NULL, NULL},
    {"training.hidden_dropout", "", "0.1", O(hidden_dropout), V_DBL, 0, 0, 0.1, NULL, NULL},
    {"memory.expandable_segments", "", "true", O(expandable_segments), V_INT, 1, 0, 0, NULL, NULL},
    {"training.bias_activation_fusion", "", "false", O(bias_act_fusion), V_INT, 0, 0, 0, NULL, NULL},
    {"training.fp8_param_gather", "precision=fp8_cs", "true", O(fp8_param_gather), V_INT, 1, 0, 0, NULL, NULL},
    {"overlap.defer_embedding_wgrad_compute", "parallel.pp=2", "true", O(defer_wgrad), V_INT, 1, 0, 0, NULL, NULL},
    {"overlap.wgrad_deferral_limit", "parallel.pp=2;overlap.defer_embedding_wgrad_compute=true", "22",
     O(wgrad_deferral_limit), V_INT, 22, 0, 0, NULL, NULL},
    {"memory.cpu_offloading_num_layers", "", "3", O(cpu_offload_layers), V_INT, 3, 0, 0, NULL, NULL},
    {"collectives.all_reduce", "", "ring", O(allreduce_algo), V_INT, MB_COLL_ALGO_RING, 0, 0, NULL, NULL},
    {"calibration.roofline", "", "true", O(roofline), V_INT, 1, 0, 0, NULL, NULL},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Keys not set from text: checked by test_roundtrip_special_keys. */
static const char *const special_keys[] = {
    "schema_version", "name", "model", "system.preset", "data.images", "calibration.table",
    "measured.tokens_per_s_per_gpu", "measured.model_tflops_per_gpu", "measured.step_time_s",
    "measured.peak_memory_gib", "measured.peak_memory_after_iteration", "measured.oom", "measured.source",
    "measured.csv_row", NULL};

/* The field of case c in s holds the case's value. */
static void expect_field(const struct mb_scenario *s, const struct kcase *c, const char *when)
{
    const char *at = (const char *)s + c->off;
    int iv;
    unsigned uv;
    unsigned long long u64;
    double dv;
    int r[2];
    switch (c->t) {
    case V_INT:
        memcpy(&iv, at, sizeof iv);
        if (iv != c->i)
            fail_msg("%s %s: got %d, want %lld", when, c->key, iv, c->i);
        break;
    case V_UNS:
        memcpy(&uv, at, sizeof uv);
        if (uv != (unsigned)c->i)
            fail_msg("%s %s: got %#x, want %#llx", when, c->key, uv, c->i);
        break;
    case V_U64:
        memcpy(&u64, at, sizeof u64);
        if (u64 != (unsigned long long)c->i)
            fail_msg("%s %s: got %llu, want %lld", when, c->key, u64, c->i);
        break;
    case V_DBL:
        memcpy(&dv, at, sizeof dv);
        if (dv != c->d)
            fail_msg("%s %s: got %.17g, want %.17g", when, c->key, dv, c->d);
        break;
    case V_RANGE:
        memcpy(r, at, sizeof r);
        if (r[0] != c->i || r[1] != c->i2)
            fail_msg("%s %s: got [%d, %d], want [%lld, %lld]", when, c->key, r[0], r[1], c->i, c->i2);
        break;
    case V_STR:
        if (strcmp(at, c->s))
            fail_msg("%s %s: got '%s', want '%s'", when, c->key, at, c->s);
        break;
    case V_PREC:
        if (strcmp(s->prec.label, c->s))
            fail_msg("%s %s: got '%s', want '%s'", when, c->key, s->prec.label, c->s);
        break;
    }
}

static void apply_pre(struct mb_scenario *s, const char *pre)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", pre);
    for (char *p = strtok(buf, ";"); p; p = strtok(NULL, ";")) {
        char *eq = strchr(p, '=');
        assert_non_null(eq);
        *eq = 0;
        set_ok(s, p, eq + 1);
    }
}

static const struct kcase *find_case(const char *key)
{
    for (size_t i = 0; i < NCASES; i++)
        if (!strcmp(cases[i].key, key))
            return &cases[i];
    return NULL;
}

static int is_special(const char *key)
{
    for (int i = 0; special_keys[i]; i++)
        if (!strcmp(special_keys[i], key))
            return 1;
    return 0;
}

/* Step 1: every table key has a case here (a new key without one fails). */
static void test_every_key_has_a_case(void **state)
{
    (void)state;
    size_t n;
    const struct mb_key *t = mb_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (!find_case(t[i].key) && !is_special(t[i].key))
            fail_msg("key %s has no round-trip case in test_keys.c", t[i].key);
    for (size_t i = 0; i < NCASES; i++)
        if (!mb_key_find(cases[i].key))
            fail_msg("case %s is not a key of the table", cases[i].key);
}

/* Step 2: for each key, a non-default value set on the base scenario is
 * written, loaded back and equal. */
static void test_roundtrip_every_key(void **state)
{
    (void)state;
    struct mb_scenario base;
    load_ok(FIX "base.yaml", &base);
    for (size_t i = 0; i < NCASES; i++) {
        const struct kcase *c = &cases[i];
        struct mb_scenario s = base, back;
        struct mb_err e;
        apply_pre(&s, c->pre);
        if (c->fix)
            c->fix(&s);
        set_ok(&s, c->key, c->value);
        expect_field(&s, c, "set");
        mb_err_clear(&e);
        if (mb_scenario_check(&s, &e))
            fail_msg("case %s: the base with %s=%s is not valid: %s", c->key, c->key, c->value, e.msg);
        round_trip(&s, &back);
        expect_field(&back, c, "loaded back");
        mb_scenario_free(&back);
    }
    mb_scenario_free(&base);
}

/* Step 3: every sweep key (and alias) changes exactly the field the table
 * names, which is the field the case names. */
static void test_sweep_keys_set_their_field(void **state)
{
    (void)state;
    static const struct {
        const char *alias, *key;
    } aliases[] = {{"tp", "parallel.tp"},           {"pp", "parallel.pp"},        {"vpp", "parallel.vpp"},
                   {"cp", "parallel.cp"},           {"ep", "parallel.ep"},        {"etp", "parallel.etp"},
                   {"strategy", "parallel.strategy"}, {"mbs", "data.micro_batch_size"},
                   {"gbs", "data.global_batch_size"}, {"seq_length", "data.seq_length"},
                   {"dispatcher", "moe.dispatcher"}, {"recompute", "recompute.granularity"},
                   {"cuda_graph", "cuda_graph.modules"}, {"gpus", "system.gpus"}};
    struct mb_scenario *base = calloc(1, sizeof *base), *s = calloc(1, sizeof *s);
    load_ok(FIX "base.yaml", base);
    size_t n;
    const struct mb_key *t = mb_keys(&n);
    const char *list = mb_sweep_keys();
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].flags & MB_KEYF_SWEEP))
            continue;
        if (!strstr(list, t[i].key))
            fail_msg("mb_sweep_keys() lacks %s", t[i].key);
        if (t[i].flags & MB_KEYF_REF)
            continue; /* model, system.preset: test_sweep_ref_axes */
        const struct kcase *c = find_case(t[i].key);
        assert_non_null(c);
        if (t[i].offset != c->off)
            fail_msg("%s: the table's field is at %zu, the scenario's at %zu", c->key, t[i].offset, c->off);
        memcpy(s, base, sizeof *s);
        set_ok(s, c->key, c->value);
        expect_field(s, c, "set");
        /* nothing outside the field moved */
        size_t end = c->off + t[i].size;
        if (memcmp(s, base, c->off) || memcmp((char *)s + end, (char *)base + end, sizeof *s - end))
            fail_msg("%s changed more than its field", c->key);
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        const struct kcase *c = find_case(aliases[i].key);
        memcpy(s, base, sizeof *s);
        set_ok(s, aliases[i].alias, c->value);
        expect_field(s, c, aliases[i].alias);
    }
    /* keys that are not sweep axes are refused */
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_scenario_set(s, "name", "x", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key 'name'"));
    mb_scenario_free(base);
    free(base);
    free(s);
}

/* Step 4: model and system.preset axes load their files and set model/system. */
static void test_sweep_ref_axes(void **state)
{
    (void)state;
    struct mb_sweep sw;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_sweep_load(FIX "inline.yaml", &sw, &e), 0);
    const char *m[] = {"tiny_vlm.yaml"}, *p[] = {"h100_node.yaml"}, *mock[] = {"true"};
    assert_int_equal(mb_sweep_add_axis(&sw, "model", 1, m, &e), 0);
    assert_int_equal(mb_sweep_add_axis(&sw, "system", 1, p, &e), 0);
    assert_int_equal(mb_sweep_add_axis(&sw, "data.mock", 1, mock, &e), 0);
    struct mb_scenario s, back;
    if (mb_sweep_scenario(&sw, 0, &s, &e))
        fail_msg("%s", e.msg);
    assert_string_equal(s.model.name, "keys_tiny_vlm");
    assert_string_equal(s.system.name, "keys_h100");
    /* the configuration writes back with its own model and system */
    round_trip(&s, &back);
    assert_string_equal(back.model.name, "keys_tiny_vlm");
    assert_string_equal(back.system.name, "keys_h100");
    assert_int_equal(back.mock, 1);
    mb_scenario_free(&back);
    mb_sweep_free(&sw);
}

/* Step 5: custom model and system paths, a quoted name, an inline model, the
 * images block, a calibration table path and the measured block round trip. */
static void test_roundtrip_special_keys(void **state)
{
    (void)state;
    struct mb_scenario s, back;
    char want_model[4096], want_sys[4096], want_cal[4096];
    assert_non_null(realpath(FIX "tiny_vlm.yaml", want_model));
    assert_non_null(realpath(FIX "h100_node.yaml", want_sys));
    assert_non_null(realpath("tests/data/calib/coll_single.yaml", want_cal));

    load_ok(FIX "base.yaml", &s);
    s.images.dist = MB_IMG_LIST;
    s.images.n_sizes = 2;
    s.images.height[0] = 448, s.images.width[0] = 448;
    s.images.height[1] = 224, s.images.width[1] = 336;
    s.images.per_sample_min = 1, s.images.per_sample_max = 2;
    s.images.seed = 7;
    snprintf(s.calib_path, sizeof s.calib_path, "tests/data/calib/coll_single.yaml");
    s.meas_tokens_per_s_per_gpu = 1234.5;
    s.meas_model_tflops_per_gpu = 456.25;
    s.meas_step_time_s = 12.5;
    s.meas_peak_memory_gib = 70.125;
    s.meas_oom = 1;
    s.meas_peak_iteration = 1;
    snprintf(s.meas_source, sizeof s.meas_source, "row 7: \"quoted\", #hash");
    snprintf(s.meas_csv_row, sizeof s.meas_csv_row, "mbskill_mem_x");
    round_trip(&s, &back);
    assert_string_equal(back.name, "keys: round-trip #1");
    assert_string_equal(back.model.name, "keys_tiny_vlm");
    assert_string_equal(back.model_ref, want_model);
    assert_string_equal(back.system.name, "keys_h100");
    assert_string_equal(back.system_ref, want_sys);
    assert_string_equal(back.calib_path, want_cal);
    assert_int_equal(back.images.dist, MB_IMG_LIST);
    assert_int_equal(back.images.n_sizes, 2);
    assert_int_equal(back.images.height[1], 224);
    assert_int_equal(back.images.width[1], 336);
    assert_int_equal(back.images.per_sample_max, 2);
    assert_int_equal(back.images.seed, 7);
    assert_true(back.meas_tokens_per_s_per_gpu == 1234.5);
    assert_true(back.meas_model_tflops_per_gpu == 456.25);
    assert_true(back.meas_step_time_s == 12.5);
    assert_true(back.meas_peak_memory_gib == 70.125);
    assert_int_equal(back.meas_oom, 1);
    assert_int_equal(back.meas_peak_iteration, 1);
    assert_string_equal(back.meas_source, "row 7: \"quoted\", #hash");
    assert_string_equal(back.meas_csv_row, "mbskill_mem_x");
    mb_scenario_free(&back);

    /* uniform image sizes, and the same prediction after the round trip */
    s.images.dist = MB_IMG_UNIFORM;
    s.images.side_min = 200, s.images.side_max = 300;
    s.calib_path[0] = 0;
    round_trip(&s, &back);
    assert_int_equal(back.images.dist, MB_IMG_UNIFORM);
    assert_int_equal(back.images.side_min, 200);
    assert_int_equal(back.images.side_max, 300);
    struct mb_result r1, r2;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_step_simulate(&s, &r1, &e), 0);
    assert_int_equal(mb_step_simulate(&back, &r2, &e), 0);
    assert_true(r1.step_time_s == r2.step_time_s);
    mb_scenario_free(&back);
    mb_scenario_free(&s);

    /* an inline model is copied; a name that reads as a bool stays a string */
    load_ok(FIX "inline.yaml", &s);
    round_trip(&s, &back);
    assert_string_equal(back.name, "yes");
    assert_int_equal(back.model_inline, 1);
    assert_string_equal(back.model.name, "inline_keys");
    assert_string_equal(back.model.source, "inline: not a file");
    assert_int_equal(back.model.num_layers, 2);
    assert_int_equal(back.model.hidden, 128);
    mb_scenario_free(&back);
    mb_scenario_free(&s);
}

/* Step 6 (bad input): text values are refused with their messages. */
static void test_bad_text_values(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value, *msg;
    } bad[] = {
        {"parallel.tp", "x", "parallel.tp: expected an integer, got 'x'"},
        {"tp", "0", "parallel.tp = 0 is out of range [1, 65536]"},
        {"moe.dispatcher", "nccl", "moe.dispatcher: unknown value 'nccl'; expected one of: alltoall, allgather, "
                                   "hybridep, deepep"},
        {"recompute.modules", "core_attn+attn", "recompute.modules: unknown value 'attn'; expected one of: "
                                                "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                                                "shared_experts, gdn_norm_out"},
        {"moe.skew", "1e999", "moe.skew = 1e999 is out of range [0, 100]"},
        {"moe.skew", "fast", "moe.skew: expected a number, got 'fast'"},
        {"parallel.tp", "99999999999999999999", "parallel.tp = 99999999999999999999 is out of range [1, 65536]"},
        {"moe.capacity_factor", "0.5", "moe.capacity_factor = 0.5: below 1 even balanced routing would drop "
                                       "tokens; use >= 1, or 0 for dropless"},
        {"cuda_graph.modules", "layer+attn", "cuda_graph.modules: layer (whole layer) cannot be combined with "
                                             "other modules"},
        {"data.text_tokens", "300+200", "data.text_tokens: min 300 > max 200"},
        {"overlap.tp_comm", "maybe", "overlap.tp_comm: expected true or false, got 'maybe'"},
        {"precision", "int8", "precision: unknown value 'int8'; expected one of: bf16, fp16, fp8, fp8_cs, "
                              "fp8_blockwise, mxfp8, nvfp4"},
        {"model", "llama3_8b", "model: set it through a sweep (mb_sweep_add_axis), not mb_scenario_set"},
    };
    struct mb_scenario s;
    mb_scenario_defaults(&s);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct mb_err e;
        mb_err_clear(&e);
        assert_int_equal(mb_scenario_set(&s, bad[i].key, bad[i].value, &e), -1);
        assert_string_equal(e.msg, bad[i].msg);
    }
}

/* ---------------------------------------------------------------- docs */

static const char BEGIN[] = "<!-- keys:begin (generated from workloads/scenario/mb_keys.c; test_keys --regen-doc) -->\n";
static const char END[] = "<!-- keys:end -->";

/* Step 7: docs/scenario-format.md carries the reference generated from the
 * table, so every key is documented and no documented key is stale. */
static void test_docs_key_reference(void **state)
{
    (void)state;
    char *doc = doc_read_all(DOC);
    const char *why;
    const char *b = doc_section_current(doc, BEGIN, END, mb_keys_write_markdown, &why);
    if (!b)
        fail_msg("the key reference in %s %s; run: build/tests/test_keys --regen-doc", DOC, why);
    size_t nk;
    const struct mb_key *t = mb_keys(&nk);
    for (size_t i = 0; i < nk; i++) {
        char cell[96];
        snprintf(cell, sizeof cell, "| `%s` |", t[i].key);
        if (!strstr(b, cell))
            fail_msg("key %s is not documented in %s", t[i].key, DOC);
    }
    free(doc);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--regen-doc"))
        return doc_regen(DOC, BEGIN, END, mb_keys_write_markdown);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_has_a_case),   cmocka_unit_test(test_roundtrip_every_key),
        cmocka_unit_test(test_sweep_keys_set_their_field), cmocka_unit_test(test_sweep_ref_axes),
        cmocka_unit_test(test_roundtrip_special_keys), cmocka_unit_test(test_bad_text_values),
        cmocka_unit_test(test_docs_key_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
