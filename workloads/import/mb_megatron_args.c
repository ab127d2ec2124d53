/*
 * mb_megatron_args.c -- the settings an import reads, for mb_import_megatron.c
 * and mb_megatron_check.c (private/megatron_int.h): canonical names (aliases),
 * lookups that mark what was used, values as text, booleans and integers,
 * 64-bit products with overflow checks, errors and notes at file:line:col,
 * keys set from the key table; and the lists of names the import understands
 * (architecture, rules), which the typo check and the model match share.
 */
#include "megatron_int.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ settings */

/* Other spellings of the same Megatron setting -> the canonical name. */
const char *const mb_mgi__aliases[][2] = {
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

void mb_mgi__canonical(struct mb_megatron_args *a)
{
    for (int i = 0; i < a->n; i++)
        for (int k = 0; mb_mgi__aliases[k][0]; k++)
            if (!a->a[i].env && !strcmp(a->a[i].name, mb_mgi__aliases[k][0]))
                snprintf(a->a[i].name, sizeof a->a[i].name, "%s", mb_mgi__aliases[k][1]);
}

/* The dialect's None (a log's `None`, Bridge's `null`; mb_megatron_arg.none): the
 * setting left unset. A Megatron-LM command line has no None: argparse hands
 * the word "None" to the flag's type, which refuses it where it wants a number. */
int mb_mgi__is_none(const struct mb_megatron_arg *g)
{
    return g->none;
}

/* In a log, unset settings (None, False, []) are Megatron's defaults, not choices; so in a
 * Megatron-LM YAML config, which lists every argument (yaml_arguments.py has no defaults). */
int mb_mgi__unset(const struct mb_megatron_args *a, const struct mb_megatron_arg *g)
{
    return (a->log_block || (a->yaml && a->dialect == MB_MEGATRON_LM)) && (mb_mgi__is_none(g) || (g->is_list && g->nval == 0) ||
                            (g->nval == 1 && !strcasecmp(g->val[0], "false")));
}

/* A log's unset entry beside a set one of the same canonical name (fp8_param_gather False
 * and fp4_param_gather True; virtual_pipeline_model_parallel_size 2 beside
 * num_virtual_stages_per_pipeline_rank None): the set one is the run's. */
int mb_mgi__shadowed(const struct mb_megatron_args *a, int i)
{
    if (!mb_mgi__unset(a, &a->a[i]))
        return 0;
    for (int j = 0; j < a->n; j++)
        if (j != i && !a->a[j].ignored && !strcmp(a->a[j].name, a->a[i].name) && !mb_mgi__unset(a, &a->a[j]))
            return 1;
    return 0;
}

/* The last setting of that name (the one argparse keeps), all of them marked used; NULL if absent.
 * Settings the framework does not apply (mb_megatron_arg.ignored) are not found. */
struct mb_megatron_arg *mb_mgi__find(struct mb_megatron_args *a, const char *name)
{
    struct mb_megatron_arg *last = NULL;
    for (int i = 0; i < a->n; i++)
        if (!a->a[i].ignored && !strcmp(a->a[i].name, name)) {
            a->a[i].used = 1;
            if (!mb_mgi__shadowed(a, i))
                last = &a->a[i];
        }
    return last;
}

/* As mb_mgi__find, NULL also when it is None. */
struct mb_megatron_arg *mb_mgi__get(struct mb_megatron_args *a, const char *name)
{
    struct mb_megatron_arg *g = mb_mgi__find(a, name);
    return g && !mb_mgi__is_none(g) ? g : NULL;
}

/* Text of a setting as mb_key_set reads it: a switch is "true", lists joined by '+'. */
void mb_mgi__text(const struct mb_megatron_arg *g, char *buf, size_t len)
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

int mb_mgi__err(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g)
        return mb_err_set(m->err, g->in_config ? m->a->config : m->a->file, g->line, g->col, "%s: %s", g->written,
                          msg);
    return mb_err_set(m->err, m->a->file, 0, 0, "%s", msg);
}

void mb_mgi__note(struct mb_mgi *m, const struct mb_megatron_arg *g, const char *fmt, ...)
{
    if (!m->notes)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (g)
        fprintf(m->notes, "%s:%d:%d: %s: ", g->in_config ? m->a->config : m->a->file, g->line, g->col, g->written);
    else
        fprintf(m->notes, "%s: ", m->a->file);
    vfprintf(m->notes, fmt, ap);
    fputc('\n', m->notes);
    va_end(ap);
}

/* Set scenario key `key` from text; errors name the setting g. */
int mb_mgi__set(struct mb_mgi *m, const char *key, const char *text, const struct mb_megatron_arg *g)
{
    const struct mb_key *k = mb_key_find(key);
    assert(k); /* keys named here exist in the table (test_keys checks the Megatron names) */
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_key_set(m->s, k, text, &e) == 0) {
        if (g)
            m->by_key[mb_key_index(k)] = g;
        return 0;
    }
    return mb_mgi__err(m, g, "%s", e.msg);
}

/* Boolean value of a setting: a switch, True/False, true/false, 1/0. -1 when it is not one. */
int mb_mgi__bool(const struct mb_megatron_arg *g)
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

int mb_mgi__flag(struct mb_mgi *m, const char *name, int *out)
{
    *out = 0;
    struct mb_megatron_arg *g = mb_mgi__find(m->a, name);
    int b = mb_mgi__bool(g);
    if (b < 0)
        return mb_mgi__err(m, g, "expected true or false, got '%s'", g->val[0]);
    *out = b;
    return 0;
}

int mb_mgi__long(struct mb_mgi *m, const struct mb_megatron_arg *g, long *out)
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

/* *out = a x b in 64 bits: -1 with an error at g (file:line:col) when the
 * product overflows or exceeds max, so that no size wraps around (pp x vpp,
 * nnodes x nproc-per-node, data_parallel_size x TP x PP x CP). */
int mb_mgi__mul(struct mb_mgi *m, const struct mb_megatron_arg *g, int64_t a, int64_t b, int64_t max,
                       const char *what, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > max || r < 0)
        return mb_mgi__err(m, g, "%s = %lld x %lld is more than %lld", what, (long long)a, (long long)b,
                           (long long)max);
    *out = r;
    return 0;
}

const struct mb_key *mb_mgi__key_of(const char *name)
{
    size_t n;
    const struct mb_key *k = mb_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].megatron && !strcmp(k[i].megatron, name))
            return &k[i];
    return NULL;
}

/* Whether key k means something for s (mb_megatron.h): here, below both the import (which notes a
 * setting of a key that does not) and --emit (which leaves such keys out). */
int mb_megatron_key_applies(const struct mb_scenario *s, const struct mb_key *k)
{
    int moe = s->model.num_experts > 0;
    if (!moe && (!strncmp(k->key, "moe.", 4) || !strcmp(k->key, "parallel.ep") || !strcmp(k->key, "parallel.etp") ||
                 !strcmp(k->key, "overlap.ep_comm")))
        return 0;
    if (!strcmp(k->key, "moe.hybridep_permute_fusion") && s->dispatcher != MB_DISP_HYBRIDEP)
        return 0;
    return !k->applies || k->applies(s);
}

/* ------------------------------------------------------------ names */

/* Architecture settings compared with a model file (mb_import_megatron.c). */
const char *const mb_mgi__arch_names[] = {
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups", "kv_channels",
    "num_experts", "moe_router_topk", "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size",
    "mtp_num_layers", "q_lora_rank", "kv_lora_rank", NULL};

/* Architecture settings the model file describes and the import does not compare. */
const char *const mb_mgi__arch_other[] = {
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

/* Names the compound rules below read (mb_mgi__dispatcher ... mb_mgi__gpus); with
 * the key table's `megatron` names, the architecture lists and the aliases they
 * are every name the import understands, the candidates of mb_mgi__typos. */
const char *const mb_mgi__rule_names[] = {
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
    "use_precision_aware_optimizer", "use_torch_fsdp2", "wgrad_deferral_limit", "world_size", "bias_activation_fusion",
    "no_bias_swiglu_fusion", "no_bias_gelu_fusion", "bias_swiglu_fusion", "bias_gelu_fusion", NULL};
