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

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "megatron_int.h"

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

/* A Megatron-LM switch that turns an architecture feature on (group_query_attention,
 * multi_latent_attention): on when set True; Bridge's overrides name the feature's sizes only
 * when the model has it, so there it always counts as on. */
static int mb_mgi__feature_on(struct mb_mgi *m, const char *flag)
{
    return m->a->dialect != MB_MEGATRON_LM || mb_mgi__bool(mb_mgi__find(m->a, flag)) == 1;
}

/* A value given for an architecture setting; 0 when absent or None. Num_experts
 * absent from a Megatron-LM list means a dense model, and without
 * multi_latent_attention its kv_lora_rank is 0 and q_lora_rank not given: a
 * training log's arguments block prints every default, MLA's ranks (32, None)
 * and the router's top-k (2) included, where arguments.py leaves them unused
 * (megatron/training/arguments.py at NVIDIA/Megatron-LM d98e8a64dd). */
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
    if (!strcmp(name, "kv_lora_rank") && mb_mgi__get(m->a, "num_layers") &&
        !mb_mgi__feature_on(m, "multi_latent_attention")) {
        *v = 0; /* no MLA: a log's arguments block prints the unused default (32) all the same */
        return 1;
    }
    if (!strcmp(name, "q_lora_rank") && !mb_mgi__feature_on(m, "multi_latent_attention"))
        return 0;
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

/* Whether an architecture setting given in the input describes the run's model: the router's and
 * the experts' sizes only with experts, MLA's ranks and head sizes only with MLA, the query groups only with
 * group_query_attention (Megatron-LM prints them all). */
static int mb_mgi__arch_applies(struct mb_mgi *m, const char *name)
{
    long n = 0;
    struct mb_megatron_arg *g;
    int bad;
    if (!strncmp(name, "moe_", 4))
        return mb_mgi__arch_given(m, "num_experts", &n, &g, &bad) && n > 0;
    if (!strcmp(name, "kv_lora_rank") || !strcmp(name, "q_lora_rank") || !strcmp(name, "qk_head_dim") ||
        !strcmp(name, "qk_pos_emb_head_dim") || !strcmp(name, "v_head_dim"))
        return mb_mgi__feature_on(m, "multi_latent_attention");
    if (!strcmp(name, "num_query_groups"))
        return mb_mgi__feature_on(m, "group_query_attention");
    return 1;
}

/* 0 when every given architecture setting equals the model's; else -1 and
 * (when report) the first difference in err. */
static int mb_mgi__arch_check(struct mb_mgi *m, const struct mb_model *md, int report)
{
    int gqa = mb_mgi__feature_on(m, "group_query_attention");
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
        struct mb_megatron_arg *g = mb_mgi__get(m->a, mb_mgi__arch_names[i]), *gg;
        long v;
        int bad;
        if (!mb_mgi__arch_given(m, mb_mgi__arch_names[i], &v, &gg, &bad) || !mb_mgi__arch_applies(m, mb_mgi__arch_names[i]))
            continue; /* unused by the run: not part of its architecture */
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
    int gqa = mb_mgi__feature_on(m, "group_query_attention");
    for (int i = 0; mb_mgi__arch_other[i]; i++) {
        long v;
        struct mb_megatron_arg *g = mb_mgi__find(m->a, mb_mgi__arch_other[i]);
        if (mb_mgi__arch(&m->model, mb_mgi__arch_other[i], gqa, &v) || !strcmp(mb_mgi__arch_other[i], "group_query_attention") ||
            !mb_mgi__arch_applies(m, mb_mgi__arch_other[i]))
            continue; /* compared, or unused by the run */
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

/* Bridge `null` (None) on a key read one to one, as Megatron-Core takes None
 * there: the keys below have an Optional field whose None means what mbsim's
 * default means (no virtual pipeline, expert TP = TP, the even split, p2p ring
 * attention, dropless experts, no recompute, recompute_modules' own default:
 * megatron/core/transformer/transformer_config.py, model_parallel_config.py),
 * so the key keeps its default; a boolean field is tested for truth, so None
 * is off. Any other key is a number or a name Megatron-Core computes with:
 * None there is an error, not a silent default. */
static const char *const mb_mgi__null_unset[] = {
    "parallel.vpp", "parallel.etp", "parallel.pipeline_layout", "parallel.cp_comm_type", "moe.capacity_factor",
    "recompute.granularity", "recompute.modules", NULL};

static int mb_mgi__direct_null(struct mb_mgi *m, struct mb_megatron_arg *g, const struct mb_key *k)
{
    if (k->type == MB_KEY_BOOL)
        return mb_mgi__set(m, k->key, "false", g);
    for (int i = 0; mb_mgi__null_unset[i]; i++)
        if (!strcmp(k->key, mb_mgi__null_unset[i]))
            return 0;
    /* validate_yaml (yaml_arguments.py) computes with these: min(tensor_model_parallel_size, world_size),
     * world_size % (... * context_parallel_size), expert_model_parallel_size > 1, micro_batch_size > 0 */
    static const char *const yaml_needs[] = {"parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep",
                                             "data.micro_batch_size", NULL};
    int lm_yaml = m->a->yaml && m->a->dialect == MB_MEGATRON_LM;
    for (int i = 0; lm_yaml && yaml_needs[i]; i++)
        if (!strcmp(k->key, yaml_needs[i]))
            return mb_mgi__err(m, g, "null: Megatron-LM's validate_yaml (yaml_arguments.py) computes with it; give "
                               "a value");
    if (m->a->log_block || lm_yaml) /* a log prints None for what Megatron left unset; a --yaml-cfg file
        writes it (yaml_arguments.py has no defaults; argparse's is None) */
        return 0;
    return mb_mgi__err(m, g, "null: Megatron-Core has no None for %s (it computes with the value); give a "
                       "value, or leave the override out to keep the recipe's", k->key);
}

static int mb_mgi__direct(struct mb_mgi *m)
{
    int dist_opt = -1; /* Bridge: ddp. or optimizer.use_distributed_optimizer on turns both on */
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        const struct mb_key *k = g->env || g->ignored ? NULL : mb_mgi__key_of(g->name);
        if (!k)
            continue;
        g->used = 1;
        if (mb_mgi__shadowed(m->a, i))
            continue;
        if (mb_mgi__is_none(g)) {
            if (mb_mgi__direct_null(m, g, k))
                return -1;
            continue;
        }
        if (g->nval == 0 && !g->is_list && k->type != MB_KEY_BOOL) /* not a switch: "true" would be a bad value */
            return mb_mgi__err(m, g, "%s: the %s needs a value", k->key,
                               m->a->dialect == MB_MEGATRON_BRIDGE ? "setting" : "flag");
        char text[512];
        mb_mgi__text(g, text, sizeof text);
        if (mb_mgi__set(m, k->key, text, g))
            return -1;
        if (m->a->dialect == MB_MEGATRON_BRIDGE && !strcmp(k->key, "optimizer.distributed"))
            dist_opt = dist_opt == 1 || m->s->dist_opt;
    }
    if (dist_opt == 1 && !m->s->dist_opt) /* ConfigContainer._sync_distributed_optimizer: either on = both on */
        return mb_mgi__set(m, "optimizer.distributed", "true", NULL);
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
    /* Megatron-Core TransformerConfig.__post_init__: --moe-enable-deepep needs the flex dispatcher (Megatron-LM's
     * default is allgather; a Bridge recipe's is not known here) and is the deepep backend */
    if (deepep_flag && (type ? strcmp(type, "flex") != 0 : m->a->dialect == MB_MEGATRON_LM))
        return mb_mgi__err(m, mb_mgi__find(m->a, "moe_enable_deepep"), "the DeepEP backend needs "
                           "--moe-token-dispatcher-type flex (Megatron-Core refuses it with %s)",
                           type ? type : "the default allgather");
    if (deepep_flag && b && b->nval == 1 && strcmp(b->val[0], "deepep"))
        return mb_mgi__err(m, b, "'%s' beside --moe-enable-deepep: Megatron-Core supports one backend for the flex "
                           "dispatcher", b->val[0]);
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

/* Megatron-Bridge's mixed_precision presets (src/megatron/bridge/training/mixed_precision.py): the
 * MixedPrecisionConfig fields mbsim reads. fp8: format and recipe (NULL: none), fp4: likewise; pg: the
 * quantized weights kept (fp8_param_gather / fp4_param_gather); g32: grad_reduce_in_fp32. */
static const struct mb_mgi__preset {
    const char *name, *fp8, *fp8_recipe, *fp4, *fp4_recipe;
    int fp16, pg, g32;
} mb_mgi__presets[] = {
    {"bf16_mixed", NULL, NULL, NULL, NULL, 0, 0, 1},
    {"fp16_mixed", NULL, NULL, NULL, NULL, 1, 0, 0},
    {"bf16_with_fp8_delayed_scaling_mixed", "hybrid", "delayed", NULL, NULL, 0, 1, 1},
    {"bf16_with_fp8_current_scaling_mixed", "hybrid", "tensorwise", NULL, NULL, 0, 1, 1},
    {"bf16_with_mxfp8_mixed", "e4m3", "mxfp8", NULL, NULL, 0, 1, 1},
    {"bf16_with_fp8_subchannel_scaling_mixed", "hybrid", "blockwise", NULL, NULL, 0, 0, 1},
    {"bf16_with_nvfp4_mixed", NULL, NULL, "e2m1", "nvfp4", 0, 1, 1},
    {NULL, NULL, NULL, NULL, NULL, 0, 0, 0}};

static const char *const mb_mgi__fp8_recipes[][2] = {
    {"delayed", "fp8"}, {"tensorwise", "fp8_cs"}, {"mxfp8", "mxfp8"}, {"blockwise", "fp8_blockwise"}, {NULL, NULL}};

/* The precision label of FP8 format `fmt` (at g) with recipe `rec` (at r; NULL: Megatron's default, delayed). */
static int mb_mgi__fp8(struct mb_mgi *m, const char *fmt, const struct mb_megatron_arg *g, const char *rec,
                       const struct mb_megatron_arg *r, const char **label)
{
    if (strcmp(fmt, "e4m3") && strcmp(fmt, "hybrid"))
        return mb_mgi__err(m, g, "unknown FP8 format '%s'; expected e4m3 or hybrid", fmt);
    rec = rec ? rec : "delayed";
    for (int i = 0; mb_mgi__fp8_recipes[i][0]; i++)
        if (!strcmp(rec, mb_mgi__fp8_recipes[i][0])) {
            *label = mb_mgi__fp8_recipes[i][1];
            return 0;
        }
    return mb_mgi__err(m, r, "unknown FP8 recipe '%s'; expected delayed, tensorwise, mxfp8 or blockwise", rec);
}

/* A one-word value, or NULL (absent, None, a list). */
static const char *mb_mgi__word(const struct mb_megatron_arg *g)
{
    return g && !mb_mgi__is_none(g) && g->nval == 1 && !g->is_list ? g->val[0] : NULL;
}

/* Megatron-Bridge: the `mixed_precision` preset, then each mixed_precision.FIELD
 * given over it, in the order Bridge applies them (the preset's fields, the
 * override's; `null` turns fp8 / fp4 off). The same fields under model.,
 * optimizer. or ddp. are written over by MixedPrecisionConfig.setup and were
 * set aside (mb_mgi__bridge_sections). */
static int mb_mgi__precision_bridge(struct mb_mgi *m)
{
    struct mb_megatron_arg *preset = mb_mgi__get(m->a, "mixed_precision");
    struct mb_megatron_arg *g8 = mb_mgi__find(m->a, "fp8"), *g4 = mb_mgi__find(m->a, "fp4");
    struct mb_megatron_arg *r8 = mb_mgi__get(m->a, "fp8_recipe"), *r4 = mb_mgi__get(m->a, "fp4_recipe");
    struct mb_megatron_arg *gb = mb_mgi__find(m->a, "bf16"), *gh = mb_mgi__find(m->a, "fp16"), *at = preset;
    const struct mb_mgi__preset *p = NULL;
    if (preset) {
        for (int i = 0; mb_mgi__presets[i].name && !p; i++)
            if (!strcmp(mb_mgi__word(preset) ? mb_mgi__word(preset) : "", mb_mgi__presets[i].name))
                p = &mb_mgi__presets[i];
        if (!p)
            return mb_mgi__err(m, preset, "unknown preset '%s'; expected bf16_mixed, fp16_mixed, "
                               "bf16_with_fp8_delayed_scaling_mixed, bf16_with_fp8_current_scaling_mixed, "
                               "bf16_with_mxfp8_mixed, bf16_with_fp8_subchannel_scaling_mixed or "
                               "bf16_with_nvfp4_mixed", preset->nval ? preset->val[0] : "");
    }
    const char *fp8 = p ? p->fp8 : NULL, *rec8 = p ? p->fp8_recipe : NULL, *fp4 = p ? p->fp4 : NULL;
    const char *rec4 = p ? p->fp4_recipe : NULL;
    int bf16 = p ? !p->fp16 : 1, fp16 = p ? p->fp16 : 0;
    if (g8) /* null or false: off */
        fp8 = mb_mgi__bool(g8) == 0 ? NULL : mb_mgi__word(g8), at = g8;
    if (g4)
        fp4 = mb_mgi__bool(g4) == 0 ? NULL : mb_mgi__word(g4), at = g4;
    if (r8)
        rec8 = mb_mgi__word(r8);
    if (r4)
        rec4 = mb_mgi__word(r4);
    if ((gb && (bf16 = mb_mgi__bool(gb)) < 0) || (gh && (fp16 = mb_mgi__bool(gh)) < 0))
        return mb_mgi__err(m, gb && mb_mgi__bool(gb) < 0 ? gb : gh, "expected true or false");
    if (bf16 && fp16) /* ConfigContainer._validate_mixed_precision_consistency */
        return mb_mgi__err(m, gh ? gh : gb, "bf16 and fp16 both on (%s): Megatron-Bridge refuses a model config "
                           "with both", p ? p->name : "the overrides");
    if (fp8 && fp4) /* MixedPrecisionConfig.finalize */
        return mb_mgi__err(m, g4 ? g4 : g8, "fp8 (%s) and fp4 (%s) together: Megatron-Bridge refuses them "
                           "(\"fp4 and fp8 cannot be used simultaneously\")", fp8, fp4);
    const char *label = fp16 ? "fp16" : "bf16";
    if (fp4) {
        if (rec4 && strcmp(rec4, "nvfp4"))
            return mb_mgi__err(m, r4, "FP4 recipe '%s' is not simulated; mbsim has nvfp4", rec4);
        label = "nvfp4";
    } else if (fp8 && mb_mgi__fp8(m, fp8, g8 ? g8 : preset, rec8, r8 ? r8 : preset, &label)) {
        return -1;
    }
    if (!bf16 && !fp16)
        mb_mgi__note(m, gb ? gb : gh, "neither bf16 nor fp16: Megatron-Bridge would keep fp32 parameters, which "
                     "mbsim does not simulate; the scenario uses bf16");
    if ((p || g8 || g4 || gb || gh) && mb_mgi__set(m, "precision", label, at))
        return -1;
    /* the preset's quantized weights and gradient dtype, unless given (read with the key table / mb_mgi__dtypes) */
    struct mb_precision pr;
    if (p && p->pg && (fp8 || fp4) && !mb_mgi__find(m->a, "fp8_param_gather") &&
        mb_precision_parse(label, &pr) == 0 && mb_precision_preset_param_gather(&pr) &&
        mb_mgi__set(m, "training.fp8_param_gather", "true", preset))
        return -1;
    if (p && !mb_mgi__find(m->a, "grad_reduce_in_fp32") &&
        mb_mgi__set(m, "optimizer.main_grads", p->g32 ? "fp32" : "bf16", preset))
        return -1;
    return 0;
}

static int mb_mgi__precision(struct mb_mgi *m)
{
    if (m->a->dialect == MB_MEGATRON_BRIDGE)
        return mb_mgi__precision_bridge(m);
    struct mb_megatron_arg *fp8 = mb_mgi__get(m->a, "fp8"), *fp4 = mb_mgi__get(m->a, "fp4");
    struct mb_megatron_arg *fp4r = mb_mgi__get(m->a, "fp4_recipe"), *r8 = mb_mgi__get(m->a, "fp8_recipe"), *at = NULL;
    int bf16, fp16;
    if (mb_mgi__flag(m, "bf16", &bf16) || mb_mgi__flag(m, "fp16", &fp16))
        return -1;
    const char *label = NULL;
    if (fp4) {
        if (fp4r && fp4r->nval == 1 && strcmp(fp4r->val[0], "nvfp4"))
            return mb_mgi__err(m, fp4r, "FP4 recipe '%s' is not simulated; mbsim has nvfp4", fp4r->val[0]);
        label = "nvfp4", at = fp4;
    } else if (fp8) {
        if (mb_mgi__fp8(m, mb_mgi__word(fp8) ? mb_mgi__word(fp8) : "", fp8, mb_mgi__word(r8), r8, &label))
            return -1;
        at = fp8;
    } else if (fp16) {
        label = "fp16";
    } else if (!bf16) {
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
    int64_t stages;
    if (mb_mgi__long(m, g, &per) ||
        mb_mgi__mul(m, g, per, m->s->pp, m->model.num_layers, "layers per virtual stage x pp (at most the model's layers)",
                    &stages))
        return -1;
    if (per == 0 || m->model.num_layers % stages)
        return mb_mgi__err(m, g, "%ld layers per virtual stage x pp = %d do not divide the %d layers of model %s",
                           per, m->s->pp, m->model.num_layers, m->model.name);
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)(m->model.num_layers / stages));
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
    int pp = m->s->pp, vpp = m->s->vpp, n = m->model.num_layers, mtp = m->model.mtp_layers;
    if (m->s->pipeline_layout[0])
        return mb_mgi__err(m, at, "an uneven split and --pipeline-model-parallel-layout together: give one");
    if ((gf || gl) && (e || l))
        return mb_mgi__err(m, at, "first/last-stage layer counts and account_for_embedding/loss_in_pipeline_split "
                           "together: mbsim reads one of them");
    if (pp < 2)
        return mb_mgi__err(m, at, "an uneven pipeline split needs pipeline_model_parallel_size > 1");
    int cnt[1024];
    int64_t nv64;
    if (mb_mgi__mul(m, at, pp, vpp, (int64_t)(sizeof cnt / sizeof cnt[0]), "virtual stages pp x vpp", &nv64))
        return -1;
    int nv = (int)nv64;
    if (gf || gl) {
        long f = -1, la = -1;
        if ((gf && mb_mgi__long(m, gf, &f)) || (gl && mb_mgi__long(m, gl, &la)))
            return -1;
        if (f > n || la > n) /* before the sums below, which a count near LONG_MAX would overflow */
            return mb_mgi__err(m, f > n ? gf : gl, "%ld layers on one stage: model %s has %d", f > n ? f : la,
                               m->model.name, n);
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
    if (!e1 && !e2)
        return 0;
    if (!pao) { /* the moments' dtypes are the precision-aware optimizer's (Megatron-Core OptimizerConfig) */
        if (!m->a->log_block)
            mb_mgi__note(m, e1 ? e1 : e2, "ignored: without --use-precision-aware-optimizer the Adam moments stay "
                         "fp32");
        return 0;
    }
    /* an absent one is Megatron's default, fp32 */
    const char *t1 = e1 && e1->nval == 1 ? e1->val[0] : "fp32", *t2 = e2 && e2->nval == 1 ? e2->val[0] : "fp32";
    const char *v1 = strstr(t1, "bf") ? "bf16" : strstr(t1, "32") ? "fp32" : NULL;
    const char *v2 = strstr(t2, "bf") ? "bf16" : strstr(t2, "32") ? "fp32" : NULL;
    if (!v1 || !v2 || strcmp(v1, v2)) {
        mb_mgi__note(m, e1 ? e1 : e2, "not simulated: mbsim keeps both Adam moments in fp32 or both in bf16 "
                     "(optimizer.states); exp_avg %s, exp_avg_sq %s", t1, t2);
        return 0;
    }
    return mb_mgi__set(m, "optimizer.states", v1, e1 ? e1 : e2);
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
        if (g->env || g->ignored || strncmp(g->written, "peft.", 5))
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
    if (mb_mgi__set(m, "peft.lora_rank", text, dim))
        return -1;
    /* LoRA(dim=0): the base is frozen and the adapters have rank 0, so nothing trains (Bridge builds it
     * without a word); mbsim's peft.lora_rank 0 would instead mean no LoRA and a trained base */
    if (m->s->lora_rank == 0)
        return mb_mgi__err(m, dim, "%s: a LoRA of rank 0 on the frozen base trains nothing; give the rank (>= 1), "
                           "or leave the peft overrides out for full training", text);
    if (mb_mgi__set(m, "freeze", "language", NULL))
        return -1;
    if (!tm)
        return 0;
    tm->used = 1;
    mb_mgi__text(tm, text, sizeof text);
    return mb_mgi__set(m, "peft.lora_targets", text, tm);
}

/* Megatron-Core's bias_activation_fusion (training.bias_activation_fusion): Megatron-LM sets it from
 * --no-bias-swiglu-fusion under --swiglu, else from --no-bias-gelu-fusion (argument_utils.py; a log
 * prints their dests, bias_swiglu_fusion / bias_gelu_fusion); Bridge's model.bias_activation_fusion.
 * The switch of the other activation does nothing: a note. */
static int mb_mgi__bias_act(struct mb_mgi *m)
{
    if (m->a->dialect == MB_MEGATRON_BRIDGE) {
        struct mb_megatron_arg *g = mb_mgi__find(m->a, "bias_activation_fusion");
        int b = mb_mgi__bool(g);
        if (b < 0)
            return mb_mgi__err(m, g, "expected true or false");
        return g ? mb_mgi__set(m, "training.bias_activation_fusion", b ? "true" : "false", g) : 0;
    }
    int swiglu = m->model.act == MB_ACT_SWIGLU;
    static const char *const names[2][2] = {{"no_bias_gelu_fusion", "bias_gelu_fusion"},
                                            {"no_bias_swiglu_fusion", "bias_swiglu_fusion"}};
    for (int w = 0; w < 2; w++) {
        struct mb_megatron_arg *no = mb_mgi__find(m->a, names[w][0]), *dest = mb_mgi__find(m->a, names[w][1]);
        int off = 0;
        if (no && (off = mb_mgi__bool(no)) < 0)
            return mb_mgi__err(m, no, "expected a switch");
        if (dest) { /* a log's dest: False = the fusion off */
            int b = mb_mgi__bool(dest);
            if (b < 0)
                return mb_mgi__err(m, dest, "expected True or False");
            off = !b;
        }
        if (w != swiglu) {
            if (off && !m->a->log_block)
                mb_mgi__note(m, no ? no : dest, "ignored: model %s's activation is %s, whose fusion switch is "
                             "--no-bias-%s-fusion", m->model.name, swiglu ? "SwiGLU" : "not SwiGLU",
                             swiglu ? "swiglu" : "gelu");
            continue;
        }
        if ((no || dest) && mb_mgi__set(m, "training.bias_activation_fusion", off ? "false" : "true", no ? no : dest))
            return -1;
    }
    return 0;
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

/* GPUs: --gpus; else --nodes x the system's GPUs per node; else world_size (a
 * log); torchrun --nnodes x --nproc-per-node; the parallel sizes x
 * data_parallel_size. */
static int mb_mgi__gpus(struct mb_mgi *m)
{
    struct mb_megatron_arg *ws = mb_mgi__get(m->a, "world_size"), *nn = mb_mgi__get(m->a, "nnodes");
    struct mb_megatron_arg *np = mb_mgi__get(m->a, "nproc_per_node"), *dp = mb_mgi__get(m->a, "data_parallel_size");
    struct mb_megatron_arg *at = NULL;
    const int64_t max = (int64_t)mb_key_find("system.gpus")->max; /* products beyond it are refused before they wrap */
    int64_t v = m->o->gpus;
    long a, b;
    int have = v > 0;
    if (!have && m->o->nodes) { /* the user's count wins over the file's; the system was loaded before */
        if (mb_mgi__mul(m, NULL, m->o->nodes, m->gpus_per_node, max, "GPUs: --nodes x the system's GPUs per node", &v))
            return -1;
        have = 1;
    }
    if (!have && ws) {
        if (mb_mgi__long(m, ws, &a))
            return -1;
        v = a, at = ws, have = 1;
    }
    if (!have && nn && np) {
        if (mb_mgi__long(m, nn, &a) || mb_mgi__long(m, np, &b) ||
            mb_mgi__mul(m, np, a, b, max, "GPUs: --nnodes x --nproc-per-node", &v))
            return -1;
        at = np, have = 1;
    }
    if (!have && dp) {
        int64_t t;
        if (mb_mgi__long(m, dp, &a) || mb_mgi__mul(m, dp, a, m->s->tp, max, "GPUs: data_parallel_size x TP", &t) ||
            mb_mgi__mul(m, dp, t, m->s->pp, max, "GPUs: data_parallel_size x TP x PP", &t) ||
            mb_mgi__mul(m, dp, t, m->s->cp, max, "GPUs: data_parallel_size x TP x PP x CP", &v))
            return -1;
        at = dp, have = 1;
    }
    if (!have)
        return mb_mgi__err(m, NULL, "the settings do not give the GPU count; give --gpus N or --nodes N");
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)v);
    return mb_mgi__set(m, "system.gpus", text, at);
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

/* The setting behind line `line` of the generated scenario YAML: the key on
 * that line, so that a rule of the scenario check (tp*pp*cp divides the GPUs,
 * ...) is reported at the flag that gave the value. A section's node starts
 * at its first key: on that line a key no setting gave stands for its
 * section, whose first setting (in the file's order) is named. NULL when no
 * setting gave it (defaults, --gpus). */
static const struct mb_megatron_arg *mb_mgi__setting_at(const struct mb_mgi *m, const char *yaml, size_t len, int line)
{
    char sec[64] = "", key[128] = "";
    int at = 1, first_in_sec = 0;
    for (const char *p = yaml; p < yaml + len && at <= line; at++) {
        const char *nl = memchr(p, '\n', (size_t)(yaml + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(yaml + len - p);
        size_t ind = strspn(p, " ");
        const char *colon = memchr(p, ':', n);
        if (colon && colon > p + ind && p[ind] != '#' && p[ind] != '-') {
            int w = (int)(colon - p - (ptrdiff_t)ind);
            if (ind == 0) {
                snprintf(sec, sizeof sec, "%.*s", w, p);
                snprintf(key, sizeof key, "%.*s", w, p);
                first_in_sec = 1;
            } else {
                snprintf(key, sizeof key, "%s.%.*s", sec, w, p + ind);
                first_in_sec = first_in_sec == 1 ? 2 : 0;
            }
        }
        if (at == line)
            break;
        p = nl ? nl + 1 : yaml + len;
    }
    if (line <= 0 || !key[0])
        return NULL;
    const struct mb_key *f = mb_key_find(key);
    if (f && m->by_key[mb_key_index(f)])
        return m->by_key[mb_key_index(f)];
    if (first_in_sec != 2)
        return NULL;
    size_t nk, sl = strlen(sec);
    const struct mb_key *k = mb_keys(&nk);
    const struct mb_megatron_arg *first = NULL;
    for (size_t i = 0; i < nk; i++) {
        const struct mb_megatron_arg *g = m->by_key[i];
        if (g && !strncmp(k[i].key, sec, sl) && k[i].key[sl] == '.' &&
            (!first || g->line < first->line || (g->line == first->line && g->col < first->col)))
            first = g;
    }
    return first;
}

/* Write the built scenario and load it back: the loader's rules and defaults apply. */
static int mb_mgi__load_back(struct mb_mgi *m, struct mb_scenario *out)
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
    if (rc) {
        const struct mb_megatron_arg *g = wr || strcmp(e.file, m->a->file) ? NULL : mb_mgi__setting_at(m, buf, len, e.line);
        rc = mb_mgi__err(m, g, "the imported settings do not make a valid scenario: %s", wr ? "cannot write it" : e.msg);
        free(buf);
        return rc;
    }
    free(buf);
    return 0;
}

/* The keys the loader warned about as changing nothing in the loaded scenario
 * (mb_scenario.c, the inert-setting warnings), one per warning line. With
 * `reset`, those no setting of the file gave (a Megatron-LM default the
 * import applied: the allgather dispatcher or the unfused permute on a dense
 * model, HybridEP's permute fusion under another dispatcher) and those that
 * mean nothing for the scenario (mb_megatron_key_applies: MoE keys on a dense
 * model, which a log or a YAML config prints as Megatron's defaults; --emit
 * leaves them out, and mb_megatron_import notes a set one) get mbsim's default
 * back, so that the written scenario does not carry them and `mbsim run` of it
 * does not warn about a key the importer wrote; returns how many. Without it,
 * the others -- a setting of the file that means something for the scenario but
 * changes nothing in this simulation (the HybridEP SM count without EP overlap) --
 * are noted at the setting: they stay, so that --emit gives them back to Megatron. */
static int mb_mgi__inert(struct mb_mgi *m, const struct mb_scenario *loaded, int reset)
{
    struct mb_scenario *def = reset ? mb_calloc(1, sizeof *def) : NULL;
    int n = 0;
    if (def)
        mb_scenario_defaults(def);
    for (const char *w = strstr(loaded->warnings, "warning: "); w; w = strstr(w, "warning: ")) {
        w += 9;
        const char *nl = strchr(w, '\n'), *end = nl ? nl : w + strlen(w);
        const char *inert = strstr(w, " changes nothing");
        char key[64];
        size_t kl = strspn(w, "abcdefghijklmnopqrstuvwxyz0123456789_.");
        const struct mb_key *k = NULL;
        if (inert && inert < end && kl && kl < sizeof key) {
            snprintf(key, sizeof key, "%.*s", (int)kl, w);
            k = mb_key_find(key);
        }
        if (!k)
            continue;
        const struct mb_megatron_arg *g = m->by_key[mb_key_index(k)];
        if (reset && (!g || !mb_megatron_key_applies(loaded, k))) {
            char text[1100];
            struct mb_err e;
            mb_err_clear(&e);
            if (mb_key_format(def, k, text, sizeof text) == 0 && mb_key_set(m->s, k, text, &e) == 0)
                n++;
        } else if (!reset) {
            mb_mgi__note(m, g, "ignored in the simulation (kept for --emit): %.*s", (int)(end - w), w);
        }
    }
    mb_free(def);
    return n;
}

static int mb_mgi__reload(struct mb_mgi *m, struct mb_scenario *out)
{
    for (int pass = 0;; pass++) {
        if (mb_mgi__load_back(m, out))
            return -1;
        if (pass == 3 || mb_mgi__inert(m, out, 1) == 0)
            break;
        mb_scenario_free(out);
    }
    mb_mgi__inert(m, out, 0);
    out->warnings[0] = 0; /* positions in the generated YAML, not in the file read: noted above */
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
                                             mb_mgi__defer_wgrad, mb_mgi__bias_act, mb_mgi__measured};
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
        m.gpus_per_node = sys->gpus_per_node;
        mb_free(sys);
        if (bad) { /* a system file's own error keeps its file:line:col */
            if (e.file[0])
                *err = e;
            else
                mb_err_set(err, NULL, 0, 0, "--system %s: %s", o->system, e.msg);
            goto out;
        }
    }
    mb_mgi__bridge_sections(&m);
    if (mb_mgi__typos(&m) || mb_mgi__single_values(&m) || mb_mgi__conflicts(&m) || mb_mgi__rule_nulls(&m) ||
        mb_mgi__model(&m))
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
    if (!a->log_block) { /* (a log prints every argument, applied or not) */
        size_t nk;
        const struct mb_key *k = mb_keys(&nk);
        for (size_t i = 0; i < nk; i++)
            if (m.by_key[i] && !m.by_key[i]->env && !mb_megatron_key_applies(s, &k[i]))
                mb_mgi__note(&m, m.by_key[i], "ignored: %s has no effect on this scenario (model %s, dispatcher "
                             "%s, precision %s; --emit leaves it out)", k[i].key, s->model.name,
                             mb_key_value_name("moe.dispatcher", s->dispatcher), s->prec.label);
    }
    if (notes && a->notes)
        fputs(a->notes, notes);
    mb_mgi__leftovers(&m);
    rc = 0;
out:
    mb_model_free(&m.model);
    mb_free(m.s);
    return rc;
}
