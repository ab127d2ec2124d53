/*
 * mb_import_megatron.c -- Megatron-LM / Megatron-Bridge settings -> scenario
 * (mb_megatron_import, mb_megatron.h).
 *
 * Order: names made canonical (aliases such as the log's
 * virtual_pipeline_model_parallel_size or Bridge's num_moe_experts); the
 * model chosen (--model, or the one shipped model whose architecture matches
 * num_layers, hidden_size, heads, query groups, experts, top-k, expert FFN,
 * ...) or checked; Megatron-LM's defaults where they differ from mbsim's
 * (Megatron-LM dialect only: an absent flag is Megatron's default); keys that
 * carry over one to one through the key table's `megatron` names; the rules
 * for settings that span keys (dispatcher + backend + SMs, precision recipe,
 * CUDA-graph implementation + modules, virtual stages from layers per stage,
 * FSDP, gradient and Adam dtypes, expert TP = TP when unset, environment);
 * the GPU count; then the scenario is written and loaded back, so every rule
 * of mb_scenario_load applies. Settings left over are listed on `notes`.
 */
#include "mb_keys.h"
#include "mb_megatron.h"
#include "mb_yaml.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mb_mgi {
    struct mb_megatron_args *a;
    const struct mb_megatron_opts *o;
    struct mb_scenario *s; /* being built: table keys, model_ref, system_ref */
    struct mb_model model; /* the chosen model (owned) */
    FILE *notes;
    struct mb_err *err;
};

/* ------------------------------------------------------------ settings */

/* Other spellings of the same Megatron setting -> the canonical name. */
static const char *const mb_mgi__aliases[][2] = {
    {"virtual_pipeline_model_parallel_size", "num_virtual_stages_per_pipeline_rank"},
    {"fp8_format", "fp8"},
    {"fp4_format", "fp4"},
    {"fp4_param_gather", "fp8_param_gather"}, /* NVFP4 weights: one mbsim key, training.fp8_param_gather */
    {"num_moe_experts", "num_experts"},
    {"sequence_length", "seq_length"},
    {"cuda_graph_scope", "cuda_graph_modules"},
    {"nproc-per-node", "nproc_per_node"},
    {"decoder_first_pipeline_num_layers", "num_layers_in_first_pipeline_stage"},
    {"decoder_last_pipeline_num_layers", "num_layers_in_last_pipeline_stage"},
    {NULL, NULL}};

static void mb_mgi__canonical(struct mb_megatron_args *a)
{
    for (int i = 0; i < a->n; i++)
        for (int k = 0; mb_mgi__aliases[k][0]; k++)
            if (!a->a[i].env && !strcmp(a->a[i].name, mb_mgi__aliases[k][0]))
                snprintf(a->a[i].name, sizeof a->a[i].name, "%s", mb_mgi__aliases[k][1]);
}

/* None / null / ~: the setting left unset (as a log prints Megatron's defaults). */
static int mb_mgi__is_none(const struct mb_megatron_arg *g)
{
    if (g->nval != 1 || g->is_list)
        return 0;
    const char *v = g->val[0];
    return !strcasecmp(v, "none") || !strcasecmp(v, "null") || !strcmp(v, "~") || !*v;
}

/* The last setting of that name (the one argparse keeps), all of them marked used; NULL if absent. */
static struct mb_megatron_arg *mb_mgi__find(struct mb_megatron_args *a, const char *name)
{
    struct mb_megatron_arg *last = NULL;
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->a[i].name, name)) {
            a->a[i].used = 1;
            last = &a->a[i];
        }
    return last;
}

/* As mb_mgi__find, NULL also when it is None. */
static struct mb_megatron_arg *mb_mgi__get(struct mb_megatron_args *a, const char *name)
{
    struct mb_megatron_arg *g = mb_mgi__find(a, name);
    return g && !mb_mgi__is_none(g) ? g : NULL;
}

/* Text of a setting as mb_key_set reads it: a switch is "true", lists joined by '+'. */
static void mb_mgi__text(const struct mb_megatron_arg *g, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    if (g->nval == 0 && !g->is_list) {
        snprintf(buf, len, "true");
        return;
    }
    if (g->is_list && g->nval == 0) {
        snprintf(buf, len, "none");
        return;
    }
    for (int i = 0; i < g->nval && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "+" : "", g->val[i]);
}

static int mb_mgi__err(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int mb_mgi__err(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g)
        return mb_err_set(m->err, m->a->file, g->line, g->col, "%s: %s", g->written, msg);
    return mb_err_set(m->err, m->a->file, 0, 0, "%s", msg);
}

static void mb_mgi__note(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mb_mgi__note(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
{
    if (!m->notes)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (g)
        fprintf(m->notes, "%s:%d:%d: %s: ", m->a->file, g->line, g->col, g->written);
    else
        fprintf(m->notes, "%s: ", m->a->file);
    vfprintf(m->notes, fmt, ap);
    fputc('\n', m->notes);
    va_end(ap);
}

/* Set scenario key `key` from text; errors name the setting g. */
static int mb_mgi__set(struct mb_mgi *m, const char *key, const char *text, const struct mb_megatron_arg *g)
{
    const struct mb_key *k = mb_key_find(key);
    assert(k); /* keys named here exist in the table (test_keys checks the Megatron names) */
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_key_set(m->s, k, text, &e) == 0)
        return 0;
    return mb_mgi__err(m, g, "%s", e.msg);
}

/* Boolean value of a setting: a switch, True/False, true/false, 1/0. -1 when it is not one. */
static int mb_mgi__bool(const struct mb_megatron_arg *g)
{
    if (!g)
        return 0;
    if (g->nval == 0)
        return 1;
    const char *v = g->val[0];
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no") || mb_mgi__is_none(g))
        return 0;
    return -1;
}

static int mb_mgi__flag(struct mb_mgi *m, const char *name, int *out)
{
    *out = 0;
    struct mb_megatron_arg *g = mb_mgi__find(m->a, name);
    int b = mb_mgi__bool(g);
    if (b < 0)
        return mb_mgi__err(m, g, "expected true or false, got '%s'", g->val[0]);
    *out = b;
    return 0;
}

static int mb_mgi__long(struct mb_mgi *m, const struct mb_megatron_arg *g, long *out)
{
    char *end;
    errno = 0;
    long v = g->nval == 1 ? strtol(g->val[0], &end, 10) : 0;
    if (g->nval == 0 && !g->is_list)
        return mb_mgi__err(m, g, "the %s needs a value", m->a->dialect == MB_MEGATRON_BRIDGE ? "setting" : "flag");
    if (g->nval != 1 || end == g->val[0] || *end || errno || v < 0)
        return mb_mgi__err(m, g, "expected a non-negative integer, got '%s'", g->nval ? g->val[0] : "");
    *out = v;
    return 0;
}

/* --------------------------------------------------------------- model */

/* Architecture settings compared with a model file, and the model's value. */
static int mb_mgi__arch(const struct mb_model *md, const char *name, int gqa, long *v)
{
    int dense_ffn = md->num_experts == 0 || md->first_dense > 0;
    if (!strcmp(name, "num_layers"))
        *v = md->num_layers;
    else if (!strcmp(name, "hidden_size"))
        *v = md->hidden;
    else if (!strcmp(name, "ffn_hidden_size") && dense_ffn)
        *v = md->ffn_hidden;
    else if (!strcmp(name, "num_attention_heads"))
        *v = md->num_heads;
    else if (!strcmp(name, "num_query_groups") && gqa && md->kv_lora_rank == 0)
        *v = md->num_kv_heads;
    else if (!strcmp(name, "kv_channels") && md->kv_lora_rank == 0)
        *v = md->head_dim;
    else if (!strcmp(name, "num_experts"))
        *v = md->num_experts;
    else if (!strcmp(name, "moe_router_topk") && md->num_experts)
        *v = md->topk;
    else if (!strcmp(name, "moe_ffn_hidden_size") && md->num_experts)
        *v = md->moe_ffn_hidden;
    else if (!strcmp(name, "moe_shared_expert_intermediate_size") && md->num_experts)
        *v = md->shared_ffn_hidden;
    else if (!strcmp(name, "mtp_num_layers"))
        *v = md->mtp_layers;
    else if (!strcmp(name, "q_lora_rank") && md->kv_lora_rank)
        *v = md->q_lora_rank;
    else if (!strcmp(name, "kv_lora_rank"))
        *v = md->kv_lora_rank;
    else
        return 0;
    return 1;
}

static const char *const mb_mgi__arch_names[] = {
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups", "kv_channels",
    "num_experts", "moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
    "mtp_num_layers", "q_lora_rank", "kv_lora_rank", NULL};

/* Architecture settings the model file describes and the import does not compare. */
static const char *const mb_mgi__arch_other[] = {
    "normalization", "swiglu", "gated_linear_unit", "position_embedding_type", "rotary_base", "rotary_percent",
    "rotary_interleaved", "rope_scaling_factor", "use_rope_scaling", "qk_layernorm", "untie_embeddings_and_output_weights",
    "share_embeddings_and_output_weights", "add_bias_linear", "disable_bias_linear", "add_qkv_bias",
    "max_position_embeddings", "make_vocab_size_divisible_by", "padded_vocab_size", "vocab_size", "norm_epsilon",
    "layernorm_epsilon", "moe_layer_freq", "multi_latent_attention", "qk_head_dim", "qk_pos_emb_head_dim",
    "v_head_dim", "group_query_attention", "kv_channels", "ffn_hidden_size", "num_query_groups",
    "moe_router_num_groups", "moe_router_group_topk", "moe_router_pre_softmax", "moe_router_score_function",
    "moe_router_enable_expert_bias", "moe_router_topk_scaling_factor", "moe_shared_expert_intermediate_size",
    "mtp_num_layers", "q_lora_rank", "kv_lora_rank", "moe_router_topk", "moe_ffn_hidden_size", "num_experts",
    "use_rotary_position_embeddings", "apply_layernorm_1p", "attention_softmax_in_fp32", "hybrid_override_pattern",
    NULL};

/* A value given for an architecture setting; 0 when absent or None. Num_experts
 * absent from a Megatron-LM list means a dense model. */
static int mb_mgi__arch_given(struct mb_mgi *m, const char *name, long *v, struct mb_megatron_arg **gp, int *bad)
{
    struct mb_megatron_arg *g = mb_mgi__find(m->a, name);
    *gp = g;
    *bad = 0;
    if ((!g || mb_mgi__is_none(g)) && !strcmp(name, "num_experts") && m->a->dialect == MB_MEGATRON_LM &&
        mb_mgi__get(m->a, "num_layers")) {
        *v = 0;
        return 1;
    }
    if (!g || mb_mgi__is_none(g))
        return 0;
    struct mb_err keep = *m->err;
    if (mb_mgi__long(m, g, v)) {
        *m->err = keep;
        *bad = 1;
        return 0;
    }
    return 1;
}

/* 0 when every given architecture setting equals the model's; else -1 and
 * (when report) the first difference in err. */
static int mb_mgi__arch_check(struct mb_mgi *m, const struct mb_model *md, int report)
{
    int gqa = m->a->dialect == MB_MEGATRON_BRIDGE || mb_mgi__bool(mb_mgi__find(m->a, "group_query_attention")) == 1;
    for (int i = 0; mb_mgi__arch_names[i]; i++) {
        long given, mine;
        struct mb_megatron_arg *g;
        int bad;
        if (!mb_mgi__arch_given(m, mb_mgi__arch_names[i], &given, &g, &bad)) {
            if (bad && report)
                return mb_mgi__long(m, g, &given);
            continue;
        }
        if (!mb_mgi__arch(md, mb_mgi__arch_names[i], gqa, &mine) || mine == given)
            continue;
        if (report) {
            if (g)
                mb_mgi__err(m, g, "%ld, but model %s has %ld; give the model the run trained", given, md->name, mine);
            else
                mb_mgi__err(m, NULL, "no --num-experts (a dense model), but model %s has %ld experts", md->name, mine);
        }
        return -1;
    }
    return 0;
}

static int mb_mgi__has_arch(struct mb_mgi *m)
{
    return mb_mgi__get(m->a, "num_layers") && mb_mgi__get(m->a, "hidden_size");
}

/* Pick the shipped model whose architecture matches: vision models only when no text model does. */
static int mb_mgi__match(struct mb_mgi *m)
{
    char list[16384], found[1024] = "";
    mb_model_list(list, sizeof list);
    int n = 0, n_text = 0;
    char pick[64] = "", pick_text[64] = "";
    char *save = NULL;
    for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        struct mb_model md;
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_model_load(tok, &md, &e))
            continue;
        if (mb_mgi__arch_check(m, &md, 0) == 0) {
            size_t at = strlen(found);
            snprintf(found + at, sizeof found - at, "%s%s", n ? ", " : "", md.name);
            snprintf(pick, sizeof pick, "%s", md.name);
            n++;
            if (md.vision.depth == 0) {
                snprintf(pick_text, sizeof pick_text, "%s", md.name);
                n_text++;
            }
        }
        mb_model_free(&md);
    }
    if (n_text == 1 || (n == 1 && n_text == 0)) {
        snprintf(m->s->model_ref, sizeof m->s->model_ref, "%s", n_text ? pick_text : pick);
        return 0;
    }
    char given[512] = "";
    for (int i = 0, at = 0; mb_mgi__arch_names[i] && at < (int)sizeof given; i++) {
        struct mb_megatron_arg *g = mb_mgi__get(m->a, mb_mgi__arch_names[i]);
        if (g && g->nval == 1)
            at += snprintf(given + at, sizeof given - (size_t)at, "%s%s=%s", at ? ", " : "", mb_mgi__arch_names[i],
                           g->val[0]);
    }
    if (n == 0)
        return mb_mgi__err(m, NULL, "no shipped model has %s (`mbsim models` lists them); give --model NAME or a "
                           "model file", given);
    return mb_mgi__err(m, NULL, "several shipped models match %s: %s; choose one with --model", given, found);
}

static int mb_mgi__model(struct mb_mgi *m)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (!m->o->model && !mb_mgi__has_arch(m))
        return mb_mgi__err(m, NULL, "the settings do not describe a model (no num_layers and hidden_size); "
                           "give --model NAME (`mbsim models` lists them)");
    if (!m->o->model && mb_mgi__match(m))
        return -1;
    if (m->o->model) {
        const char *ref = m->o->model;
        char *abs = strchr(ref, '/') || strstr(ref, ".yaml") || strstr(ref, ".yml") ? mb_path_absolute(ref) : NULL;
        snprintf(m->s->model_ref, sizeof m->s->model_ref, "%s", abs ? abs : ref);
        mb_free(abs);
    }
    if (mb_model_load(m->s->model_ref, &m->model, &e)) {
        *m->err = e;
        return -1;
    }
    if (mb_mgi__arch_check(m, &m->model, 1))
        return -1;
    char seen[2048] = "";
    size_t at = 0;
    int gqa = m->a->dialect == MB_MEGATRON_BRIDGE || mb_mgi__bool(mb_mgi__find(m->a, "group_query_attention")) == 1;
    for (int i = 0; mb_mgi__arch_other[i]; i++) {
        long v;
        struct mb_megatron_arg *g = mb_mgi__find(m->a, mb_mgi__arch_other[i]);
        if (mb_mgi__arch(&m->model, mb_mgi__arch_other[i], gqa, &v) || !strcmp(mb_mgi__arch_other[i], "group_query_attention"))
            continue; /* compared */
        if (g && !g->env && !mb_mgi__is_none(g) && at < sizeof seen && !strstr(seen, g->written))
            at += (size_t)snprintf(seen + at, sizeof seen - at, "%s%s", at ? ", " : "", g->written);
    }
    if (at)
        mb_mgi__note(m, NULL, "taken from model %s, not compared: %s", m->model.name, seen);
    return 0;
}

/* ------------------------------------------------------- one-to-one keys */

/* Megatron-LM's defaults where mbsim's differ (megatron/training/arguments.py:
 * store_true switches; --moe-token-dispatcher-type allgather; --cross-entropy-fusion-impl native;
 * --attention-dropout 0.1, --hidden-dropout 0.1). */
static const char *const mb_mgi__lm_defaults[][2] = {
    {"optimizer.distributed", "false"},       {"overlap.grad_reduce", "false"},
    {"overlap.param_gather", "false"},        {"training.cross_entropy_fusion", "false"},
    {"training.cross_entropy_fusion_impl", "native"}, {"parallel.sequence_parallel", "false"},
    {"moe.dispatcher", "allgather"},          {"moe.hybridep_permute_fusion", "false"},
    {"moe.permute_fusion", "false"},
    {"training.attention_dropout", "0.1"},    {"training.hidden_dropout", "0.1"},
    {NULL, NULL}};

const char *mb_megatron_lm_default(const char *key)
{
    for (int i = 0; mb_mgi__lm_defaults[i][0]; i++)
        if (!strcmp(mb_mgi__lm_defaults[i][0], key))
            return mb_mgi__lm_defaults[i][1];
    return NULL;
}

static int mb_mgi__defaults(struct mb_mgi *m)
{
    if (m->a->dialect != MB_MEGATRON_LM)
        return 0;
    for (int i = 0; mb_mgi__lm_defaults[i][0]; i++)
        if (mb_mgi__set(m, mb_mgi__lm_defaults[i][0], mb_mgi__lm_defaults[i][1], NULL))
            return -1;
    return 0;
}

static const struct mb_key *mb_mgi__key_of(const char *name)
{
    size_t n;
    const struct mb_key *k = mb_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].megatron && !strcmp(k[i].megatron, name))
            return &k[i];
    return NULL;
}

static int mb_mgi__direct(struct mb_mgi *m)
{
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        const struct mb_key *k = g->env ? NULL : mb_mgi__key_of(g->name);
        if (!k)
            continue;
        g->used = 1;
        if (mb_mgi__is_none(g))
            continue;
        if (g->nval == 0 && !g->is_list && k->type != MB_KEY_BOOL) /* not a switch: "true" would be a bad value */
            return mb_mgi__err(m, g, "%s: the %s needs a value", k->key,
                               m->a->dialect == MB_MEGATRON_BRIDGE ? "setting" : "flag");
        char text[512];
        mb_mgi__text(g, text, sizeof text);
        if (mb_mgi__set(m, k->key, text, g))
            return -1;
    }
    return 0;
}

/* -------------------------------------------------------- compound rules */

/* --moe-token-dispatcher-type, --moe-flex-dispatcher-backend (or the older
 * --moe-enable-deepep) and the backend's SM count. */
static int mb_mgi__dispatcher(struct mb_mgi *m)
{
    struct mb_megatron_arg *t = mb_mgi__get(m->a, "moe_token_dispatcher_type");
    struct mb_megatron_arg *b = mb_mgi__get(m->a, "moe_flex_dispatcher_backend");
    struct mb_megatron_arg *sms[2] = {mb_mgi__get(m->a, "moe_deepep_num_sms"), mb_mgi__get(m->a, "moe_hybridep_num_sms")};
    int deepep_flag;
    if (mb_mgi__flag(m, "moe_enable_deepep", &deepep_flag))
        return -1;
    const char *type = t && t->nval == 1 ? t->val[0] : NULL;
    const char *disp = type;
    if (type && strcmp(type, "alltoall") && strcmp(type, "allgather") && strcmp(type, "flex"))
        return mb_mgi__err(m, t, "unknown dispatcher '%s'; expected alltoall, allgather or flex", type);
    if ((type && !strcmp(type, "flex")) || deepep_flag) {
        disp = b && b->nval == 1 ? b->val[0] : "deepep"; /* Megatron's default backend */
        if (strcmp(disp, "deepep") && strcmp(disp, "hybridep"))
            return mb_mgi__err(m, b, "backend '%s' is not simulated; mbsim has deepep and hybridep", disp);
    } else if (b) {
        mb_mgi__note(m, b, "ignored: only the flex dispatcher uses a backend");
    }
    if (disp && mb_mgi__set(m, "moe.dispatcher", disp, t ? t : b))
        return -1;
    int which = m->s->dispatcher == MB_DISP_DEEPEP ? 0 : m->s->dispatcher == MB_DISP_HYBRIDEP ? 1 : -1;
    for (int i = 0; i < 2; i++) {
        if (!sms[i])
            continue;
        if (i != which) {
            if (!m->a->log_block) /* a log prints every backend's setting */
                mb_mgi__note(m, sms[i], "ignored: the %s backend is not in use", i ? "hybridep" : "deepep");
            continue;
        }
        char text[64];
        mb_mgi__text(sms[i], text, sizeof text);
        if (mb_mgi__set(m, "moe.dispatcher_sms", text, sms[i]))
            return -1;
    }
    return 0;
}

/* Megatron-Bridge mixed_precision presets -> precision labels. */
static const char *const mb_mgi__bridge_prec[][2] = {
    {"bf16_mixed", "bf16"},
    {"fp16_mixed", "fp16"},
    {"bf16_with_fp8_delayed_scaling_mixed", "fp8"},
    {"bf16_with_fp8_current_scaling_mixed", "fp8_cs"},
    {"bf16_with_mxfp8_mixed", "mxfp8"},
    {"bf16_with_fp8_subchannel_scaling_mixed", "fp8_blockwise"},
    {"bf16_with_nvfp4_mixed", "nvfp4"},
    {NULL, NULL}};

static const char *const mb_mgi__fp8_recipes[][2] = {
    {"delayed", "fp8"}, {"tensorwise", "fp8_cs"}, {"mxfp8", "mxfp8"}, {"blockwise", "fp8_blockwise"}, {NULL, NULL}};

static int mb_mgi__fp8(struct mb_mgi *m, struct mb_megatron_arg *fmt, const char **label)
{
    struct mb_megatron_arg *r = mb_mgi__get(m->a, "fp8_recipe");
    const char *rec = r && r->nval == 1 ? r->val[0] : "delayed"; /* Megatron's default recipe */
    if (fmt->nval == 1 && strcmp(fmt->val[0], "e4m3") && strcmp(fmt->val[0], "hybrid"))
        return mb_mgi__err(m, fmt, "unknown FP8 format '%s'; expected e4m3 or hybrid", fmt->val[0]);
    for (int i = 0; mb_mgi__fp8_recipes[i][0]; i++)
        if (!strcmp(rec, mb_mgi__fp8_recipes[i][0])) {
            *label = mb_mgi__fp8_recipes[i][1];
            return 0;
        }
    return mb_mgi__err(m, r, "unknown FP8 recipe '%s'; expected delayed, tensorwise, mxfp8 or blockwise", rec);
}

static int mb_mgi__precision(struct mb_mgi *m)
{
    struct mb_megatron_arg *preset = mb_mgi__get(m->a, "mixed_precision");
    struct mb_megatron_arg *fp8 = mb_mgi__get(m->a, "fp8"), *fp4 = mb_mgi__get(m->a, "fp4");
    struct mb_megatron_arg *fp4r = mb_mgi__get(m->a, "fp4_recipe"), *at = NULL;
    int bf16, fp16;
    if (mb_mgi__flag(m, "bf16", &bf16) || mb_mgi__flag(m, "fp16", &fp16))
        return -1;
    const char *label = NULL;
    if (fp8 && mb_mgi__bool(fp8) == 0) /* Bridge: mixed_precision.fp8=null/false */
        fp8 = NULL;
    if (fp4) {
        if (fp4r && fp4r->nval == 1 && strcmp(fp4r->val[0], "nvfp4"))
            return mb_mgi__err(m, fp4r, "FP4 recipe '%s' is not simulated; mbsim has nvfp4", fp4r->val[0]);
        label = "nvfp4", at = fp4;
    } else if (fp8) {
        if (mb_mgi__fp8(m, fp8, &label))
            return -1;
        at = fp8;
    } else if (preset) {
        for (int i = 0; mb_mgi__bridge_prec[i][0] && !label; i++)
            if (preset->nval == 1 && !strcmp(preset->val[0], mb_mgi__bridge_prec[i][0]))
                label = mb_mgi__bridge_prec[i][1];
        if (!label)
            return mb_mgi__err(m, preset, "unknown preset '%s'; expected bf16_mixed, fp16_mixed, "
                               "bf16_with_fp8_delayed_scaling_mixed, bf16_with_fp8_current_scaling_mixed, "
                               "bf16_with_mxfp8_mixed, bf16_with_fp8_subchannel_scaling_mixed or "
                               "bf16_with_nvfp4_mixed", preset->nval ? preset->val[0] : "");
        at = preset;
        /* Bridge's FP8 presets hold the weights quantized (mb_precision_preset_param_gather);
         * an explicit mixed_precision.fp8_param_gather, read with the key table, wins */
        struct mb_precision pp;
        int pg = mb_precision_parse(label, &pp) == 0 && mb_precision_preset_param_gather(&pp);
        if (pg && !mb_mgi__find(m->a, "fp8_param_gather") &&
            mb_mgi__set(m, "training.fp8_param_gather", "true", preset))
            return -1;
    } else if (fp16) {
        label = "fp16";
    } else if (!bf16 && m->a->dialect == MB_MEGATRON_LM) {
        mb_mgi__note(m, NULL, "no --bf16 or --fp16: Megatron-LM would train in fp32, which mbsim does not "
                     "simulate; the scenario uses bf16");
    }
    return label ? mb_mgi__set(m, "precision", label, at) : 0;
}

/* --cuda-graph-impl and --cuda-graph-modules (= the deprecated --cuda-graph-scope;
 * legacy `full` = whole layer), the older --enable-cuda-graph / --external-cuda-graph. */
static int mb_mgi__cuda_graph(struct mb_mgi *m)
{
    struct mb_megatron_arg *impl = mb_mgi__get(m->a, "cuda_graph_impl");
    struct mb_megatron_arg *mods = mb_mgi__find(m->a, "cuda_graph_modules");
    int local, te;
    if (mb_mgi__flag(m, "enable_cuda_graph", &local) || mb_mgi__flag(m, "external_cuda_graph", &te))
        return -1;
    const char *im = impl && impl->nval == 1 ? impl->val[0] : local ? "local" : te ? "transformer_engine" : "none";
    char text[512] = "layer";
    if (mods && !mb_mgi__is_none(mods) && mods->nval > 0)
        mb_mgi__text(mods, text, sizeof text);
    if (!strcmp(im, "none")) {
        if (mods && !mb_mgi__is_none(mods) && mods->nval > 0 && !m->a->log_block)
            mb_mgi__note(m, mods, "ignored: no --cuda-graph-impl, so no CUDA graphs");
        return 0;
    } else if (!strcmp(im, "full_iteration")) {
        snprintf(text, sizeof text, "full_iteration");
    } else if (strcmp(im, "local") && strcmp(im, "transformer_engine")) {
        return mb_mgi__err(m, impl, "unknown implementation '%s'; expected none, local, transformer_engine or "
                           "full_iteration", im);
    }
    if (!strcmp(text, "full"))
        snprintf(text, sizeof text, "layer");
    return mb_mgi__set(m, "cuda_graph.modules", text, mods && mods->nval ? mods : impl);
}

/* --num-layers-per-virtual-pipeline-stage N: vpp = layers / (pp * N). */
static int mb_mgi__vpp(struct mb_mgi *m)
{
    struct mb_megatron_arg *g = mb_mgi__get(m->a, "num_layers_per_virtual_pipeline_stage");
    if (!g || mb_mgi__get(m->a, "num_virtual_stages_per_pipeline_rank"))
        return 0;
    long per;
    if (mb_mgi__long(m, g, &per))
        return -1;
    long stages = (long)m->s->pp * per;
    if (per == 0 || m->model.num_layers % stages)
        return mb_mgi__err(m, g, "%ld layers per virtual stage x pp = %d do not divide the %d layers of model %s",
                           per, m->s->pp, m->model.num_layers, m->model.name);
    char text[32];
    snprintf(text, sizeof text, "%ld", m->model.num_layers / stages);
    return mb_mgi__set(m, "parallel.vpp", text, g);
}

/* Uneven pipeline splits as Megatron-Core states them, written as the layout
 * they amount to (virtual stage v is chunk v / pp of pipeline rank v % pp):
 *  - --decoder-first/last-pipeline-num-layers F, L (Bridge
 *    num_layers_in_first/last_pipeline_stage): the first / last rank holds F / L
 *    decoder layers, F / vpp per virtual chunk; the other ranks split the rest
 *    evenly;
 *  - --account-for-embedding/loss-in-pipeline-split: the embedding / the loss
 *    count as a layer of the first / last virtual stage, num_layers + 1 or + 2
 *    split evenly. */
static int mb_mgi__uneven(struct mb_mgi *m)
{
    struct mb_megatron_arg *gf = mb_mgi__get(m->a, "num_layers_in_first_pipeline_stage");
    struct mb_megatron_arg *gl = mb_mgi__get(m->a, "num_layers_in_last_pipeline_stage");
    int e, l;
    if (mb_mgi__flag(m, "account_for_embedding_in_pipeline_split", &e) ||
        mb_mgi__flag(m, "account_for_loss_in_pipeline_split", &l))
        return -1;
    if (!gf && !gl && !e && !l)
        return 0;
    struct mb_megatron_arg *at = gf ? gf : gl ? gl : mb_mgi__find(m->a, e ? "account_for_embedding_in_pipeline_split"
                                                                           : "account_for_loss_in_pipeline_split");
    int pp = m->s->pp, vpp = m->s->vpp, nv = pp * vpp, n = m->model.num_layers, mtp = m->model.mtp_layers;
    if (m->s->pipeline_layout[0])
        return mb_mgi__err(m, at, "an uneven split and --pipeline-model-parallel-layout together: give one");
    if ((gf || gl) && (e || l))
        return mb_mgi__err(m, at, "first/last-stage layer counts and account_for_embedding/loss_in_pipeline_split "
                           "together: mbsim reads one of them");
    if (pp < 2)
        return mb_mgi__err(m, at, "an uneven pipeline split needs pipeline_model_parallel_size > 1");
    int cnt[1024];
    if (nv > (int)(sizeof cnt / sizeof cnt[0]))
        return mb_mgi__err(m, at, "pp*vpp = %d virtual stages: at most %zu", nv, sizeof cnt / sizeof cnt[0]);
    if (gf || gl) {
        long f = -1, la = -1;
        if ((gf && mb_mgi__long(m, gf, &f)) || (gl && mb_mgi__long(m, gl, &la)))
            return -1;
        long rest = n - (f > 0 ? f : 0) - (la > 0 ? la : 0);
        int ranks = pp - (f >= 0) - (la >= 0);
        if ((f >= 0 && f % vpp) || (la >= 0 && la % vpp) || rest < 0 || (ranks > 0 && rest % ((long)ranks * vpp)) ||
            (ranks == 0 && rest))
        {
            char fs[24] = "not given", ls[24] = "not given";
            if (f >= 0)
                snprintf(fs, sizeof fs, "%ld", f);
            if (la >= 0)
                snprintf(ls, sizeof ls, "%ld", la);
            return mb_mgi__err(m, at, "first stage %s, last stage %s: the %d layers of model %s do not split over "
                               "pp = %d, vpp = %d (each stage's layers divide by vpp, the other stages share the "
                               "rest evenly)", fs, ls, n, m->model.name, pp, vpp);
        }
        for (int v = 0; v < nv; v++) {
            int rank = v % pp;
            cnt[v] = rank == 0 && f >= 0          ? (int)(f / vpp)
                     : rank == pp - 1 && la >= 0 ? (int)(la / vpp)
                                                 : (int)(rest / ((long)ranks * vpp));
        }
    } else {
        int units = n + e + l;
        if (units % nv)
            return mb_mgi__err(m, at, "num_layers + %d = %d (the embedding / loss as layers) does not divide over "
                               "pp*vpp = %d", e + l, units, nv);
        for (int v = 0; v < nv; v++)
            cnt[v] = units / nv - (v == 0 ? e : 0) - (v == nv - 1 ? l : 0);
    }
    char text[sizeof m->s->pipeline_layout];
    size_t w = 0;
    for (int v = 0; v < nv; v++) {
        if (w + (size_t)(cnt[v] > 0 ? cnt[v] : 0) + (size_t)mtp + 4 >= sizeof text)
            return mb_mgi__err(m, at, "the layout is longer than %zu characters", sizeof text - 1);
        if (v)
            text[w++] = '|';
        if (!v)
            text[w++] = 'E';
        for (int k = 0; k < cnt[v]; k++)
            text[w++] = 't';
        if (v == nv - 1) {
            for (int k = 0; k < mtp; k++)
                text[w++] = 'm';
            text[w++] = 'L';
        }
    }
    text[w] = '\0';
    return mb_mgi__set(m, "parallel.pipeline_layout", text, at);
}

static int mb_mgi__fsdp(struct mb_mgi *m)
{
    int mfsdp, fsdp2;
    if (mb_mgi__flag(m, "use_megatron_fsdp", &mfsdp) || mb_mgi__flag(m, "use_torch_fsdp2", &fsdp2))
        return -1;
    struct mb_megatron_arg *shard = mb_mgi__get(m->a, "data_parallel_sharding_strategy");
    if (shard && (mfsdp || fsdp2) && shard->nval == 1 && strcmp(shard->val[0], "optim_grads_params"))
        mb_mgi__note(m, shard, "not simulated: mbsim's FSDP shards parameters, gradients and optimizer state "
                     "(optim_grads_params)");
    if (!mfsdp && !fsdp2)
        return 0;
    if (mb_mgi__set(m, "parallel.strategy", "fsdp", NULL))
        return -1;
    return mb_mgi__set(m, "parallel.fsdp_impl", fsdp2 ? "torch_fsdp2" : "megatron_fsdp", NULL);
}

/* Main-gradient dtype (--grad-reduce-in-bf16; Bridge ddp.grad_reduce_in_fp32) and
 * Adam moments (--use-precision-aware-optimizer --exp-avg-dtype --exp-avg-sq-dtype). */
static int mb_mgi__dtypes(struct mb_mgi *m)
{
    struct mb_megatron_arg *bf = mb_mgi__get(m->a, "grad_reduce_in_bf16"), *f32 = mb_mgi__get(m->a, "grad_reduce_in_fp32");
    if (bf || f32) {
        int b = bf ? mb_mgi__bool(bf) : mb_mgi__bool(f32) == 0;
        if (b < 0 || (f32 && mb_mgi__bool(f32) < 0))
            return mb_mgi__err(m, bf ? bf : f32, "expected true or false");
        if (mb_mgi__set(m, "optimizer.main_grads", b ? "bf16" : "fp32", bf ? bf : f32))
            return -1;
        mb_mgi__find(m->a, "accumulate_allreduce_grads_in_fp32");
    }
    int pao;
    if (mb_mgi__flag(m, "use_precision_aware_optimizer", &pao))
        return -1;
    struct mb_megatron_arg *e1 = mb_mgi__get(m->a, "exp_avg_dtype"), *e2 = mb_mgi__get(m->a, "exp_avg_sq_dtype");
    if (!pao || !e1 || !e2 || e1->nval != 1 || e2->nval != 1)
        return 0;
    const char *v1 = strstr(e1->val[0], "bf") ? "bf16" : strstr(e1->val[0], "32") ? "fp32" : NULL;
    const char *v2 = strstr(e2->val[0], "bf") ? "bf16" : strstr(e2->val[0], "32") ? "fp32" : NULL;
    if (!v1 || !v2 || strcmp(v1, v2)) {
        mb_mgi__note(m, e1, "not simulated: mbsim keeps both Adam moments in fp32 or both in bf16 (optimizer.states)");
        return 0;
    }
    return mb_mgi__set(m, "optimizer.states", v1, e1);
}

/* Megatron-Core: expert_tensor_parallel_size unset = tensor_model_parallel_size. */
static int mb_mgi__etp(struct mb_mgi *m)
{
    if (m->model.num_experts == 0 || mb_mgi__get(m->a, "expert_tensor_parallel_size"))
        return 0;
    m->s->etp = m->s->tp;
    return 0;
}

/* Megatron-Bridge's LoRA: peft.dim (the rank) and peft.target_modules; the base is frozen, as
 * LoRA freezes it (mbsim freeze: [language]); alpha and dropout change no cost. */
static int mb_mgi__peft(struct mb_mgi *m)
{
    struct mb_megatron_arg *dim = NULL, *tm = NULL;
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        if (g->env || strncmp(g->written, "peft.", 5))
            continue;
        if (!strcmp(g->name, "dim"))
            dim = g;
        else if (!strcmp(g->name, "target_modules"))
            tm = g;
        else if (!strcmp(g->name, "alpha") || !strcmp(g->name, "dropout")) {
            g->used = 1;
            mb_mgi__note(m, g, "not simulated: the adapters' cost does not depend on it");
        }
    }
    if (!dim)
        return 0;
    char text[512];
    dim->used = 1;
    mb_mgi__text(dim, text, sizeof text);
    if (mb_mgi__set(m, "peft.lora_rank", text, dim) || mb_mgi__set(m, "freeze", "language", NULL))
        return -1;
    if (!tm)
        return 0;
    tm->used = 1;
    mb_mgi__text(tm, text, sizeof text);
    return mb_mgi__set(m, "peft.lora_targets", text, tm);
}

/* Megatron-Core's deferred output-layer wgrad: TransformerConfig fields that Bridge sets through
 * comm_overlap.defer_embedding_wgrad_compute / comm_overlap.wgrad_deferral_limit (no Megatron-LM flag). */
static int mb_mgi__defer_wgrad(struct mb_mgi *m)
{
    static const char *const names[][2] = {{"defer_embedding_wgrad_compute", "overlap.defer_embedding_wgrad_compute"},
                                           {"wgrad_deferral_limit", "overlap.wgrad_deferral_limit"}};
    for (int k = 0; k < 2; k++) {
        struct mb_megatron_arg *g = mb_mgi__get(m->a, names[k][0]);
        if (!g)
            continue;
        char text[512];
        g->used = 1;
        mb_mgi__text(g, text, sizeof text);
        if (mb_mgi__set(m, names[k][1], text, g))
            return -1;
    }
    return 0;
}

static int mb_mgi__env(struct mb_mgi *m)
{
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        if (!g->env || g->nval != 1)
            continue;
        if (!strcmp(g->name, "PYTORCH_CUDA_ALLOC_CONF") && strstr(g->val[0], "expandable_segments:True")) {
            g->used = 1;
            if (mb_mgi__set(m, "memory.expandable_segments", "true", g))
                return -1;
        } else if (!strcmp(g->name, "NCCL_ALGO") &&
                   (!strcasecmp(g->val[0], "ring") || !strcasecmp(g->val[0], "tree") || !strcasecmp(g->val[0], "nvls"))) {
            g->used = 1;
            if (mb_mgi__set(m, "collectives.all_reduce", g->val[0], g))
                return -1;
        }
    }
    return 0;
}

/* Settings mbsim takes as given: grouped-GEMM experts, forced-balanced routing (moe.routing). */
static void mb_mgi__assumed(struct mb_mgi *m)
{
    struct mb_megatron_arg *gg = mb_mgi__find(m->a, "moe_grouped_gemm");
    if (m->model.num_experts && mb_mgi__bool(gg) != 1)
        mb_mgi__note(m, gg, "%s: mbsim simulates grouped-GEMM experts as if it were on",
                     gg ? "off" : "no --moe-grouped-gemm");
    mb_mgi__find(m->a, "moe_router_force_load_balancing");
}

/* GPUs: --gpus; else world_size (a log); torchrun --nnodes x --nproc-per-node;
 * the parallel sizes x data_parallel_size; --nodes x the system's GPUs per node. */
static int mb_mgi__gpus(struct mb_mgi *m)
{
    struct mb_megatron_arg *ws = mb_mgi__get(m->a, "world_size"), *nn = mb_mgi__get(m->a, "nnodes");
    struct mb_megatron_arg *np = mb_mgi__get(m->a, "nproc_per_node"), *dp = mb_mgi__get(m->a, "data_parallel_size");
    long v = m->o->gpus, a, b;
    if (!v && ws && mb_mgi__long(m, ws, &v))
        return -1;
    if (!v && nn && np) {
        if (mb_mgi__long(m, nn, &a) || mb_mgi__long(m, np, &b))
            return -1;
        v = a * b;
    }
    if (!v && dp) {
        if (mb_mgi__long(m, dp, &a))
            return -1;
        v = a * m->s->tp * m->s->pp * m->s->cp;
    }
    if (!v && m->o->nodes) {
        struct mb_system sys;
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_topo_load_system(m->s->system_ref, &sys, &e)) {
            *m->err = e;
            return -1;
        }
        v = (long)m->o->nodes * sys.gpus_per_node;
    }
    if (!v)
        return mb_mgi__err(m, NULL, "the settings do not give the GPU count; give --gpus N or --nodes N");
    char text[32];
    snprintf(text, sizeof text, "%ld", v);
    return mb_mgi__set(m, "system.gpus", text, ws);
}

/* --------------------------------------------------------- left-overs */

/* Names the compound rules below read (mb_mgi__dispatcher ... mb_mgi__gpus); with
 * the key table's `megatron` names, the architecture lists and the aliases they
 * are every name the import understands, the candidates of mb_mgi__typos. */
static const char *const mb_mgi__rule_names[] = {
    "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
    "accumulate_allreduce_grads_in_fp32", "bf16", "cuda_graph_impl", "cuda_graph_modules",
    "data_parallel_sharding_strategy", "data_parallel_size", "defer_embedding_wgrad_compute", "enable_cuda_graph",
    "exp_avg_dtype",
    "exp_avg_sq_dtype", "expert_tensor_parallel_size", "external_cuda_graph", "fp16", "fp4", "fp4_recipe", "fp8",
    "fp8_recipe", "grad_reduce_in_bf16", "grad_reduce_in_fp32", "mixed_precision", "moe_deepep_num_sms",
    "moe_enable_deepep", "moe_flex_dispatcher_backend", "moe_grouped_gemm", "moe_hybridep_num_sms",
    "moe_router_force_load_balancing", "moe_shared_expert_overlap", "moe_token_dispatcher_type", "nnodes",
    "nproc_per_node", "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
    "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", "use_megatron_fsdp",
    "use_precision_aware_optimizer", "use_torch_fsdp2", "wgrad_deferral_limit", "world_size", NULL};

/* Optimal string alignment distance of a and b (edits: insert, delete,
 * substitute, swap two neighbours), or max + 1 once it exceeds max. */
static int mb_mgi__distance(const char *a, const char *b, int max)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (abs(la - lb) > max || la >= 96 || lb >= 96)
        return max + 1;
    int d[3][97]; /* rows i-2, i-1, i (mod 3) */
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        int *r = d[i % 3], *p = d[(i - 1) % 3], *pp = d[(i + 1) % 3], low = i;
        r[0] = i;
        for (int j = 1; j <= lb; j++) {
            int v = p[j - 1] + (a[i - 1] != b[j - 1]);
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (r[j - 1] + 1 < v)
                v = r[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            r[j] = v;
            if (v < low)
                low = v;
        }
        if (low > max)
            return max + 1;
    }
    return d[la % 3][lb];
}

/* The understood name nearest to `name` within the distance allowed for it (2
 * for names of 10 characters or more, 1 from 5, none below: a short name is
 * too near too many real ones), or NULL; *exact when `name` is one of them. */
static const char *mb_mgi__nearest(const char *name, int *exact)
{
    const char *best = NULL;
    int bd = 3;
    size_t nk;
    const struct mb_key *k = mb_keys(&nk);
    const char *const *lists[] = {mb_mgi__rule_names, mb_mgi__arch_names, mb_mgi__arch_other};
    *exact = 0;
    for (size_t i = 0; i < nk + 2 * (sizeof mb_mgi__aliases / sizeof mb_mgi__aliases[0]); i++) {
        const char *c = i < nk ? k[i].megatron : mb_mgi__aliases[(i - nk) / 2][(i - nk) % 2];
        if (!c)
            continue;
        size_t n = strlen(c);
        int lim = n >= 10 ? 2 : n >= 5 ? 1 : 0, dist = mb_mgi__distance(name, c, lim);
        if (dist == 0) {
            *exact = 1;
            return c;
        }
        if (dist <= lim && dist < bd) {
            best = c;
            bd = dist;
        }
    }
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (int i = 0; lists[l][i]; i++) {
            size_t n = strlen(lists[l][i]);
            int lim = n >= 10 ? 2 : n >= 5 ? 1 : 0, dist = mb_mgi__distance(name, lists[l][i], lim);
            if (dist == 0) {
                *exact = 1;
                return lists[l][i];
            }
            if (dist <= lim && dist < bd) {
                best = lists[l][i];
                bd = dist;
            }
        }
    return best;
}

static int mb_mgi__is_no_effect(const struct mb_megatron_arg *g);

/* A setting that is no name the import understands but lies within a small
 * edit distance of one (--tensor-model-paralel-size) is a typo, not a Megatron
 * setting mbsim leaves out: listed as "not imported" it would silently give
 * that setting its default (TP 1). An input error at the setting, naming the
 * setting meant. Megatron-LM's own argument names (arguments.py and the
 * config dataclasses it builds flags from, core v0.14 to v0.16) are not that
 * near any understood name, except vocab_file, which has no effect (so is
 * not checked); a real setting mbsim does not model keeps its note
 * (mb_mgi__leftovers). A training log's arguments block is Megatron's own
 * spelling and is not checked. */
static int mb_mgi__typos(struct mb_mgi *m)
{
    if (m->a->log_block)
        return 0;
    for (int i = 0; i < m->a->n; i++) {
        const struct mb_megatron_arg *g = &m->a->a[i];
        int exact;
        if (g->env || mb_mgi__is_no_effect(g))
            continue;
        const char *near = mb_mgi__nearest(g->name, &exact);
        if (!near || exact)
            continue;
        char meant[160];
        if (m->a->dialect == MB_MEGATRON_BRIDGE) { /* the section as written */
            const char *dot = strrchr(g->written, '.');
            int sec = dot ? (int)(dot + 1 - g->written) : 0;
            snprintf(meant, sizeof meant, "%.*s%s", sec, g->written, near);
            return mb_mgi__err(m, g, "unknown Megatron-Bridge setting (did you mean %s?)", meant);
        }
        snprintf(meant, sizeof meant, "--%s", near);
        for (char *c = meant; *c; c++)
            if (*c == '_')
                *c = '-';
        return mb_mgi__err(m, g, "unknown Megatron-LM flag (did you mean %s?)", meant);
    }
    return 0;
}

/* Settings that change nothing in a simulated step (names; a trailing '*' is a prefix). */
static const char *const mb_mgi__no_effect[] = {
    "lr*", "min_lr", "adam_*", "weight_decay*", "start_weight_decay", "end_weight_decay", "clip_grad", "seed",
    "train_iters", "train_samples", "eval_*", "save*", "load*", "log_*", "logging_level", "tensorboard_*",
    "wandb_*", "data_path", "data_cache_path", "split", "train_data_path", "valid_data_path", "test_data_path",
    "mock_data", "tokenizer_*", "vocab_file", "merge_file", "init_method_std", "ckpt_*", "dist_ckpt_*", "exit_*",
    "timing_log_*", "distributed_backend", "distributed_timeout_minutes", "num_workers", "dataloader_type",
    "use_checkpoint_args", "finetune", "no_load_*", "no_save_*", "pretrained_checkpoint",
    "override_opt_param_scheduler", "use_checkpoint_opt_param_scheduler", "rank", "local_rank", "manual_gc*",
    "hidden_dropout", "profile*", "use_pytorch_profiler", "async_save", "rerun_mode",
    "num_dataset_builder_threads", "use_mcore_models", "transformer_impl", "bias_swiglu_fusion",
    "masked_softmax_fusion", "bias_dropout_fusion", "apply_query_key_layer_scaling", "iteration", "consumed_*",
    "node_rank", "master_addr", "master_port", "rdzv_*", "rdzv-*", "max_restarts", "record_memory_history",
    "memory_snapshot_path", "no_create_attention_mask_in_dataloader", "reset_position_ids", "reset_attention_mask",
    "eod_mask_loss", "moe_aux_loss_coeff", "moe_z_loss_coeff", "moe_router_bias_update_rate", "adam_eps", NULL};

/* Bridge config groups with nothing a step depends on. */
static const char *const mb_mgi__no_effect_sections[] = {
    "checkpoint.", "logger.", "rng.", "scheduler.", "tokenizer.", "profiling.", "inprocess_restart.", "straggler.",
    "rerun_state_machine.", NULL};

static int mb_mgi__is_no_effect(const struct mb_megatron_arg *g)
{
    for (int i = 0; mb_mgi__no_effect_sections[i]; i++)
        if (!strncmp(g->written, mb_mgi__no_effect_sections[i], strlen(mb_mgi__no_effect_sections[i])))
            return 1;
    for (int i = 0; mb_mgi__no_effect[i]; i++) {
        const char *p = mb_mgi__no_effect[i];
        size_t n = strlen(p);
        if (p[n - 1] == '*' ? !strncmp(g->name, p, n - 1) : !strcmp(g->name, p))
            return 1;
    }
    return 0;
}

/* In a log, unset settings (None, False, []) are Megatron's defaults, not choices. */
static int mb_mgi__unset(const struct mb_megatron_args *a, const struct mb_megatron_arg *g)
{
    return a->log_block && (mb_mgi__is_none(g) || (g->is_list && g->nval == 0) ||
                            (g->nval == 1 && !strcmp(g->val[0], "False")));
}

static void mb_mgi__value_text(const struct mb_megatron_arg *g, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->nval && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", g->val[i]);
}

static void mb_mgi__leftovers(struct mb_mgi *m)
{
    char grouped[4096] = "";
    size_t at = 0;
    int ng = 0;
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        if (g->used || mb_mgi__unset(m->a, g))
            continue;
        if (!g->env && mb_mgi__is_no_effect(g)) {
            if (at < sizeof grouped)
                at += (size_t)snprintf(grouped + at, sizeof grouped - at, "%s%s", ng ? ", " : "", g->written);
            ng++;
            continue;
        }
        char val[256];
        mb_mgi__value_text(g, val, sizeof val);
        mb_mgi__note(m, g, "%s%snot imported (%s)", val, *val ? ": " : "",
                     g->env ? "environment variable; not simulated" : "mbsim has no equivalent");
    }
    if (ng)
        mb_mgi__note(m, NULL, "%d setting%s without effect on a simulated step (training schedule, data, "
                     "checkpoints, logging): %s", ng, ng > 1 ? "s" : "", grouped);
}

/* --moe-shared-expert-overlap on a model without shared experts: Megatron
 * creates no shared-expert MLP and the flag does nothing; the scenario check
 * refuses it, so it is listed and left out. */
static int mb_mgi__shared_overlap(struct mb_mgi *m)
{
    if (!m->s->shared_expert_overlap || m->model.shared_ffn_hidden > 0)
        return 0;
    m->s->shared_expert_overlap = 0;
    mb_mgi__note(m, mb_mgi__find(m->a, "moe_shared_expert_overlap"),
                 "not imported: model %s has no shared experts, so the overlap does nothing", m->model.name);
    return 0;
}

/* ---------------------------------------------------------------- main */

/* Write the built scenario and load it back: the loader's rules and defaults apply. */
static int mb_mgi__reload(struct mb_mgi *m, struct mb_scenario *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp)
        return mb_mgi__err(m, NULL, "out of memory");
    int wr = mb_scenario_write_yaml(m->s, fp);
    fclose(fp);
    struct mb_err e;
    mb_err_clear(&e);
    struct mb_node *root = wr ? NULL : mb_yaml_load_string(buf, len, m->a->file, &e);
    int rc = root ? mb_scenario_load_node(root, m->a->file, out, &e) : -1;
    mb_yaml_free(root);
    free(buf);
    if (rc)
        return mb_mgi__err(m, NULL, "the imported settings do not make a valid scenario: %s",
                           wr ? "cannot write it" : e.msg);
    out->warnings[0] = 0; /* positions in the generated YAML, not in the file read; mbsim run of the
                             written scenario reports them */
    return 0;
}

static void mb_mgi__name(struct mb_mgi *m)
{
    if (m->o->name) {
        snprintf(m->s->name, sizeof m->s->name, "%s", m->o->name);
        return;
    }
    const char *b = strrchr(m->a->file, '/');
    b = b ? b + 1 : m->a->file;
    snprintf(m->s->name, sizeof m->s->name, "%.127s", *b ? b : "imported");
    char *dot = strrchr(m->s->name, '.');
    if (dot && dot != m->s->name)
        *dot = '\0';
}

int mb_megatron_import(struct mb_megatron_args *a, const struct mb_megatron_opts *o, struct mb_scenario *s,
                       FILE *notes, struct mb_err *err)
{
    struct mb_mgi m = {.a = a, .o = o, .s = mb_calloc(1, sizeof *m.s), .notes = notes, .err = err};
    int (*const rules[])(struct mb_mgi *) = {mb_mgi__defaults, mb_mgi__direct, mb_mgi__dispatcher,
                                             mb_mgi__precision, mb_mgi__cuda_graph, mb_mgi__vpp,
                                             mb_mgi__uneven, mb_mgi__fsdp, mb_mgi__dtypes, mb_mgi__etp, mb_mgi__env,
                                             mb_mgi__gpus, mb_mgi__shared_overlap, mb_mgi__peft,
                                             mb_mgi__defer_wgrad};
    int rc = -1;
    mb_scenario_defaults(m.s);
    mb_mgi__canonical(a);
    mb_mgi__name(&m);
    if (!o->system) {
        mb_mgi__err(&m, NULL, "give the system with --system NAME (`mbsim systems` lists them)");
        goto out;
    }
    snprintf(m.s->system_ref, sizeof m.s->system_ref, "%s", o->system);
    if (strchr(o->system, '/') || strstr(o->system, ".yaml")) {
        char *abs = mb_path_absolute(o->system);
        snprintf(m.s->system_ref, sizeof m.s->system_ref, "%s", abs);
        mb_free(abs);
    }
    { /* the system first: an unknown name is the option's fault, not the imported file's */
        struct mb_system *sys = mb_calloc(1, sizeof *sys);
        struct mb_err e;
        mb_err_clear(&e);
        int bad = mb_topo_load_system(m.s->system_ref, sys, &e);
        mb_free(sys);
        if (bad) { /* a system file's own error keeps its file:line:col */
            if (e.file[0])
                *err = e;
            else
                mb_err_set(err, NULL, 0, 0, "--system %s: %s", o->system, e.msg);
            goto out;
        }
    }
    if (mb_mgi__typos(&m) || mb_mgi__model(&m))
        goto out;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i](&m))
            goto out;
    mb_mgi__assumed(&m);
    if (m.s->seq_length <= 0) { /* Megatron-LM requires it; say so rather than a range error */
        mb_mgi__err(&m, NULL, "no sequence length: give %s",
                    m.a->dialect == MB_MEGATRON_BRIDGE ? "model.seq_length (or dataset.seq_length)" : "--seq-length N");
        goto out;
    }
    if (mb_mgi__reload(&m, s))
        goto out;
    mb_mgi__leftovers(&m);
    rc = 0;
out:
    mb_model_free(&m.model);
    mb_free(m.s);
    return rc;
}
