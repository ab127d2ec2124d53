/*
 * mb_model.c -- model architecture files, parameter counts and Megatron
 * model FLOPs.
 *
 * SUMMARY: a model file (workloads/models/<key>.yaml) describes one decoder
 * (plus an optional ViT) by its Megatron hyper-parameters. The loader reads it
 * through field tables (mb_yaml_read_fields), so every schema error carries
 * file:line:col, and expands it into a per-layer list of (mixer, ffn).
 *
 * FLOPs are *model* FLOPs exactly as Megatron-LM reports them
 * (training.py num_floating_point_operations, see
 * shared/docs/reference/hardware.md D.1): only GEMMs and the attention core,
 * factor 6 = 3 (fwd, dgrad, wgrad) x 2 (FMA), causal attention halved. With
 * T = tokens and Q = sum of squared sequence lengths in the batch:
 *
 *   F = T * [ 6h (g f L_dense + g f_e k L_moe + g f_sh L_moe) + A_lin N_attn
 *             + G_lin N_lin + 6m (3h + 2h^2) + 6hV(m+1) ] + Q A_core N_attn
 *
 * Sliding-window layers replace the causal average context s/2 by
 * w - w(w-1)/(2s) (Megatron-Bridge flop_utils). Models with a hybrid pattern
 * string (Nemotron-H "M E * -") use Megatron's separate hybrid_flops sum.
 *
 * Parameter counts follow theoretical_memory_usage.py (D.2), generalized to
 * the projection sizes of each mixer. Known omissions (all < 0.5% of any
 * shipped model): linear biases other than QKV, attention sinks, learned
 * absolute position embeddings (GPT-style) and the ViT position table.
 */
#include "mb_model.h"
#include "mb_input.h"
#include "mb_yaml.h"

#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Schema. mb_yaml_read_fields stores MB_F_INT as long, so each section is
 * read into a staging struct of longs and range-checked there.
 * ------------------------------------------------------------------------- */

#define BIG 1e12 /* upper bound for sizes: catches typos, never real models */

struct raw_top {
    char name[64];
    char source[1024];
    long num_layers, hidden, ffn_hidden, num_heads, num_kv_heads, head_dim, vocab;
    int tied, qk_norm, qkv_bias, gate;
    char act[32], norm[32], pos[32];
    long mtp;
    char pattern[256];
    const struct mb_node *moe, *mla, *swa, *gdn, *mamba, *vision;
};

#define T_(k, ty, mem, req, lo, hi) { k, ty, offsetof(struct raw_top, mem), 0, req, lo, hi, MB_UNIT_NONE }
#define TS(k, mem, req) { k, MB_F_STRBUF, offsetof(struct raw_top, mem), \
                          sizeof(((struct raw_top *)0)->mem), req, 1, 0, MB_UNIT_NONE }
static const struct mb_field top_fields[] = {
    TS("name", name, 1),
    TS("source", source, 1),
    T_("num_layers", MB_F_INT, num_layers, 1, 1, 100000),
    T_("hidden", MB_F_INT, hidden, 1, 1, 1e7),
    T_("ffn_hidden", MB_F_INT, ffn_hidden, 0, 0, 1e8),
    T_("num_heads", MB_F_INT, num_heads, 1, 1, 1e5),
    T_("num_kv_heads", MB_F_INT, num_kv_heads, 0, 1, 1e5),
    T_("head_dim", MB_F_INT, head_dim, 0, 1, 1e5),
    T_("vocab", MB_F_INT, vocab, 1, 1, BIG),
    T_("tied_embeddings", MB_F_BOOL, tied, 0, 1, 0),
    TS("activation", act, 0),
    TS("norm", norm, 0),
    TS("position_embedding_type", pos, 0),
    T_("qk_norm", MB_F_BOOL, qk_norm, 0, 1, 0),
    T_("qkv_bias", MB_F_BOOL, qkv_bias, 0, 1, 0),
    T_("attention_output_gate", MB_F_BOOL, gate, 0, 1, 0),
    T_("mtp_layers", MB_F_INT, mtp, 0, 0, 1000),
    TS("pattern", pattern, 0),
    T_("moe", MB_F_NODE, moe, 0, 1, 0),
    T_("mla", MB_F_NODE, mla, 0, 1, 0),
    T_("sliding_window", MB_F_NODE, swa, 0, 1, 0),
    T_("gdn", MB_F_NODE, gdn, 0, 1, 0),
    T_("mamba", MB_F_NODE, mamba, 0, 1, 0),
    T_("vision", MB_F_NODE, vision, 0, 1, 0),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

/* Section tables: all fields are longs in a small array-like struct. */
#define S_(st, k, mem, req, lo, hi) { k, MB_F_INT, offsetof(struct st, mem), 0, req, lo, hi, MB_UNIT_NONE }

struct raw_moe { long num_experts, topk, ffn_hidden, shared, first_dense, latent, groups, group_topk; };
static const struct mb_field moe_fields[] = {
    S_(raw_moe, "num_experts", num_experts, 1, 1, 1e6),
    S_(raw_moe, "topk", topk, 1, 1, 1e6),
    S_(raw_moe, "ffn_hidden", ffn_hidden, 1, 1, 1e8),
    S_(raw_moe, "shared_ffn_hidden", shared, 0, 0, 1e8),
    S_(raw_moe, "first_dense_layers", first_dense, 0, 0, 100000),
    S_(raw_moe, "latent_size", latent, 0, 0, 1e7),
    S_(raw_moe, "router_groups", groups, 0, 1, 1e6),
    S_(raw_moe, "router_group_topk", group_topk, 0, 1, 1e6),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

struct raw_mla { long q_lora, kv_lora, qk, rope, v; };
static const struct mb_field mla_fields[] = {
    S_(raw_mla, "q_lora_rank", q_lora, 0, 0, 1e7),
    S_(raw_mla, "kv_lora_rank", kv_lora, 1, 1, 1e7),
    S_(raw_mla, "qk_head_dim", qk, 1, 1, 1e5),
    S_(raw_mla, "qk_rope_head_dim", rope, 1, 0, 1e5),
    S_(raw_mla, "v_head_dim", v, 1, 1, 1e5),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

struct raw_swa { long window, full_every; };
static const struct mb_field swa_fields[] = {
    S_(raw_swa, "window", window, 1, 1, BIG),
    S_(raw_swa, "full_every", full_every, 0, 0, 100000),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

struct raw_gdn { long full_every, k_heads, v_heads, k_dim, v_dim, conv; };
static const struct mb_field gdn_fields[] = {
    S_(raw_gdn, "full_attention_every", full_every, 1, 1, 100000),
    S_(raw_gdn, "k_heads", k_heads, 1, 1, 1e5),
    S_(raw_gdn, "v_heads", v_heads, 1, 1, 1e5),
    S_(raw_gdn, "k_head_dim", k_dim, 1, 1, 1e5),
    S_(raw_gdn, "v_head_dim", v_dim, 1, 1, 1e5),
    S_(raw_gdn, "conv_kernel", conv, 0, 1, 1024),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

struct raw_mamba { long heads, head_dim, state, groups; };
static const struct mb_field mamba_fields[] = {
    S_(raw_mamba, "heads", heads, 1, 1, 1e5),
    S_(raw_mamba, "head_dim", head_dim, 1, 1, 1e5),
    S_(raw_mamba, "state", state, 1, 1, 1e5),
    S_(raw_mamba, "groups", groups, 0, 1, 1e5),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

struct raw_vision { long depth, hidden, heads, mlp, patch, tpatch, merge, deepstack, out_hidden, in_ch; };
static const struct mb_field vision_fields[] = {
    S_(raw_vision, "depth", depth, 1, 1, 100000),
    S_(raw_vision, "hidden", hidden, 1, 1, 1e7),
    S_(raw_vision, "heads", heads, 1, 1, 1e5),
    S_(raw_vision, "mlp", mlp, 1, 1, 1e8),
    S_(raw_vision, "patch", patch, 1, 1, 4096),
    S_(raw_vision, "temporal_patch", tpatch, 0, 1, 1024),
    S_(raw_vision, "spatial_merge", merge, 0, 1, 64),
    S_(raw_vision, "deepstack", deepstack, 0, 0, 1000),
    S_(raw_vision, "out_hidden", out_hidden, 0, 1, 1e7),
    S_(raw_vision, "in_channels", in_ch, 0, 1, 64),
    { NULL, 0, 0, 0, 0, 0, 0, 0 }
};

/* A section node that is YAML null counts as absent. */
static const struct mb_node *mb_model__section(const struct mb_node *n)
{
    return (n && mb_yaml_is_null(n)) ? NULL : n;
}

/* ---------------------------------------------------------------------------
 * Expansion into layer[]
 * ------------------------------------------------------------------------- */

/*
 * Uniform models: layer i (0-based) gets
 *   mixer: GDN, except every full_attn_every-th layer ((i+1) % N == 0) is ATTN
 *          (Qwen3-Next layer_types: linear, linear, linear, full);
 *          SWA, except every swa_full_every-th layer is full ATTN
 *          (Megatron window_attn_skip_freq on 1-based layer numbers);
 *          MLA for DeepSeek-style models, else ATTN;
 *   ffn:   DENSE for i < first_dense, else MOE when num_experts > 0.
 * Pattern models: one layer per character.
 */
static void mb_model__expand(struct mb_model *m)
{
    int n = m->pattern[0] ? (int)strlen(m->pattern) : m->num_layers;
    m->n_layers = n;
    m->layer = mb_calloc((size_t)n, sizeof *m->layer);
    for (int i = 0; i < n; i++) {
        struct mb_layer *l = &m->layer[i];
        if (m->pattern[0]) {
            switch (m->pattern[i]) {
            case 'M': l->mixer = MB_MIX_MAMBA; l->ffn = MB_FFN_NONE; break;
            case 'E': l->mixer = MB_MIX_NONE; l->ffn = MB_FFN_MOE; break;
            case '*': l->mixer = MB_MIX_ATTN; l->ffn = MB_FFN_NONE; break;
            default: l->mixer = MB_MIX_NONE; l->ffn = MB_FFN_DENSE; break; /* '-' */
            }
            continue;
        }
        if (m->full_attn_every > 0)
            l->mixer = ((i + 1) % m->full_attn_every == 0) ? MB_MIX_ATTN : MB_MIX_GDN;
        else if (m->swa_window > 0)
            l->mixer = (m->swa_full_every > 0 && (i + 1) % m->swa_full_every == 0) ? MB_MIX_ATTN
                                                                                  : MB_MIX_ATTN_SWA;
        else
            l->mixer = m->kv_lora_rank > 0 ? MB_MIX_MLA : MB_MIX_ATTN;
        l->ffn = (m->num_experts > 0 && i >= m->first_dense) ? MB_FFN_MOE : MB_FFN_DENSE;
    }
}

/* ---------------------------------------------------------------------------
 * Loading
 * ------------------------------------------------------------------------- */

static int mb_model__err_at_key(struct mb_err *err, const struct mb_node *map, const char *key, const char *fmt,
                      const char *arg)
{
    const struct mb_node *v = mb_yaml_get(map, key);
    return mb_yaml_err(err, v ? v : map, fmt, arg);
}

static int mb_model__read_sections(const struct mb_node *map, const struct raw_top *t, struct mb_model *m,
                         struct mb_err *err)
{
    const struct mb_node *s;
    if ((s = mb_model__section(t->moe))) {
        struct raw_moe r = { 0, 0, 0, 0, 0, 0, 1, 0 };
        if (mb_yaml_read_fields(s, moe_fields, &r, "model.moe", NULL, err))
            return -1;
        if (r.group_topk == 0)
            r.group_topk = r.groups;
        if (r.topk > r.num_experts)
            return mb_yaml_err(err, mb_yaml_get(s, "topk"), "model.moe.topk = %ld exceeds num_experts = %ld",
                               r.topk, r.num_experts);
        if (r.num_experts % r.groups)
            return mb_yaml_err(err, mb_yaml_get(s, "router_groups"),
                               "model.moe.router_groups = %ld does not divide num_experts = %ld", r.groups,
                               r.num_experts);
        if (r.group_topk > r.groups)
            return mb_yaml_err(err, mb_yaml_get(s, "router_group_topk"),
                               "model.moe.router_group_topk = %ld exceeds router_groups = %ld", r.group_topk,
                               r.groups);
        if (r.topk > r.group_topk * (r.num_experts / r.groups)) {
            const struct mb_node *at = mb_yaml_get(s, "router_group_topk");
            return mb_yaml_err(err, at ? at : mb_yaml_get(s, "topk"),
                               "model.moe.topk = %ld exceeds the %ld experts of router_group_topk = %ld groups",
                               r.topk, r.group_topk * (r.num_experts / r.groups), r.group_topk);
        }
        if (r.first_dense > t->num_layers)
            return mb_yaml_err(err, mb_yaml_get(s, "first_dense_layers"),
                               "model.moe.first_dense_layers = %ld exceeds num_layers = %ld", r.first_dense,
                               t->num_layers);
        m->num_experts = (int)r.num_experts;
        m->topk = (int)r.topk;
        m->moe_ffn_hidden = (int)r.ffn_hidden;
        m->shared_ffn_hidden = (int)r.shared;
        m->first_dense = (int)r.first_dense;
        m->moe_latent = (int)r.latent;
        m->router_groups = (int)r.groups;
        m->router_group_topk = (int)r.group_topk;
    }
    if ((s = mb_model__section(t->mla))) {
        struct raw_mla r = { 0, 0, 0, 0, 0 };
        if (mb_yaml_read_fields(s, mla_fields, &r, "model.mla", NULL, err))
            return -1;
        m->q_lora_rank = (int)r.q_lora;
        m->kv_lora_rank = (int)r.kv_lora;
        m->qk_head_dim = (int)r.qk;
        m->qk_rope_head_dim = (int)r.rope;
        m->v_head_dim = (int)r.v;
    }
    if ((s = mb_model__section(t->swa))) {
        struct raw_swa r = { 0, 0 };
        if (mb_yaml_read_fields(s, swa_fields, &r, "model.sliding_window", NULL, err))
            return -1;
        m->swa_window = (int)r.window;
        m->swa_full_every = (int)r.full_every;
    }
    if ((s = mb_model__section(t->gdn))) {
        struct raw_gdn r = { 0, 0, 0, 0, 0, 4 };
        if (mb_yaml_read_fields(s, gdn_fields, &r, "model.gdn", NULL, err))
            return -1;
        m->full_attn_every = (int)r.full_every;
        m->gdn_k_heads = (int)r.k_heads;
        m->gdn_v_heads = (int)r.v_heads;
        m->gdn_k_dim = (int)r.k_dim;
        m->gdn_v_dim = (int)r.v_dim;
        m->gdn_conv = (int)r.conv;
    }
    if ((s = mb_model__section(t->mamba))) {
        struct raw_mamba r = { 0, 0, 0, 1 };
        if (mb_yaml_read_fields(s, mamba_fields, &r, "model.mamba", NULL, err))
            return -1;
        m->mamba_heads = (int)r.heads;
        m->mamba_head_dim = (int)r.head_dim;
        m->mamba_state = (int)r.state;
        m->mamba_groups = (int)r.groups;
    }
    if ((s = mb_model__section(t->vision))) {
        struct raw_vision r = { 0, 0, 0, 0, 0, 2, 2, 0, t->hidden, 3 };
        if (mb_yaml_read_fields(s, vision_fields, &r, "model.vision", NULL, err))
            return -1;
        m->vision.depth = (int)r.depth;
        m->vision.hidden = (int)r.hidden;
        m->vision.heads = (int)r.heads;
        m->vision.mlp = (int)r.mlp;
        m->vision.patch = (int)r.patch;
        m->vision.temporal_patch = (int)r.tpatch;
        m->vision.spatial_merge = (int)r.merge;
        m->vision.deepstack = (int)r.deepstack;
        m->vision.out_hidden = (int)r.out_hidden;
        m->vision.in_channels = (int)r.in_ch;
        if (r.hidden % r.heads != 0)
            return mb_yaml_err(err, mb_yaml_get(s, "heads"),
                               "model.vision.hidden = %ld is not a multiple of heads = %ld", r.hidden, r.heads);
    }
    (void)map;
    return 0;
}

/* Cross-field checks that the field tables cannot express. */
static int mb_model__validate(const struct mb_node *map, const struct raw_top *t, struct mb_model *m, struct mb_err *err)
{
    const struct mb_node *pn = mb_yaml_get(map, "pattern");
    if (m->num_heads % m->num_kv_heads != 0)
        return mb_yaml_err(err, mb_yaml_get(map, "num_kv_heads"),
                           "num_heads = %d is not a multiple of num_kv_heads = %d", m->num_heads,
                           m->num_kv_heads);
    if (m->pattern[0]) {
        size_t len = strlen(m->pattern);
        int need_moe = 0, need_mamba = 0, need_dense = 0;
        for (size_t i = 0; i < len; i++) {
            char c = m->pattern[i];
            if (c != 'M' && c != 'E' && c != '*' && c != '-')
                return mb_yaml_err(err, pn,
                                   "bad character '%c' at position %zu of pattern; expected M (Mamba), "
                                   "E (MoE), * (attention) or - (MLP)",
                                   c, i + 1);
            need_moe |= c == 'E';
            need_mamba |= c == 'M';
            need_dense |= c == '-';
        }
        if ((long)len != t->num_layers)
            return mb_yaml_err(err, mb_yaml_get(map, "num_layers"),
                               "num_layers = %ld does not match the pattern length %zu", t->num_layers, len);
        if (mb_model__section(t->mla) || mb_model__section(t->gdn) || mb_model__section(t->swa))
            return mb_yaml_err(err, pn, "pattern cannot be combined with mla, gdn or sliding_window");
        if (need_moe && !m->num_experts)
            return mb_yaml_err(err, pn, "pattern has MoE layers (E) but there is no 'moe' section");
        if (need_mamba && !m->mamba_heads)
            return mb_yaml_err(err, pn, "pattern has Mamba layers (M) but there is no 'mamba' section");
        if (need_dense && !m->ffn_hidden)
            return mb_yaml_err(err, pn, "pattern has MLP layers (-) but ffn_hidden is not set");
    } else {
        if (mb_model__section(t->mamba))
            return mb_model__err_at_key(err, map, "mamba", "%s", "a 'mamba' section needs a hybrid 'pattern'");
        if ((mb_model__section(t->gdn) != NULL) + (mb_model__section(t->swa) != NULL) + (mb_model__section(t->mla) != NULL) > 1)
            return mb_yaml_err(err, map, "at most one of mla, gdn and sliding_window may be given");
        if (!m->ffn_hidden && (!m->num_experts || m->first_dense > 0 || m->mtp_layers > 0))
            return mb_yaml_err(err, map, "missing required key 'ffn_hidden' in model (the model has dense layers)");
    }
    if (m->mtp_layers > 0 && m->pattern[0])
        return mb_yaml_err(err, mb_yaml_get(map, "mtp_layers"), "mtp_layers is not supported with a pattern");
    return 0;
}

int mb_model_from_node(const struct mb_node *map, struct mb_model *out, struct mb_err *err)
{
    struct raw_top t;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);
    t.num_kv_heads = -1;
    t.head_dim = -1;
    strcpy(t.act, "swiglu");
    strcpy(t.norm, "rmsnorm");
    strcpy(t.pos, "rope");
    if (mb_yaml_read_fields(map, top_fields, &t, "model", NULL, err))
        return -1;

    struct mb_model *m = out;
    memcpy(m->name, t.name, sizeof m->name);
    memcpy(m->source, t.source, sizeof m->source);
    m->num_layers = (int)t.num_layers;
    m->hidden = (int)t.hidden;
    m->ffn_hidden = (int)t.ffn_hidden;
    m->num_heads = (int)t.num_heads;
    m->num_kv_heads = t.num_kv_heads > 0 ? (int)t.num_kv_heads : m->num_heads;
    if (t.head_dim > 0) {
        m->head_dim = (int)t.head_dim;
    } else {
        if (t.hidden % t.num_heads != 0)
            return mb_yaml_err(err, mb_yaml_get(map, "num_heads"),
                               "hidden = %ld is not a multiple of num_heads = %ld; give head_dim", t.hidden,
                               t.num_heads);
        m->head_dim = (int)(t.hidden / t.num_heads);
    }
    m->vocab = t.vocab;
    m->tied_embeddings = t.tied;
    m->qk_norm = t.qk_norm;
    m->qkv_bias = t.qkv_bias;
    m->attn_output_gate = t.gate;
    m->mtp_layers = (int)t.mtp;
    memcpy(m->pattern, t.pattern, sizeof m->pattern);

    if (strcmp(t.act, "swiglu") == 0)
        m->act = MB_ACT_SWIGLU;
    else if (strcmp(t.act, "gelu") == 0)
        m->act = MB_ACT_GELU;
    else if (strcmp(t.act, "squared_relu") == 0)
        m->act = MB_ACT_SQRELU;
    else if (strcmp(t.act, "geglu") == 0)
        m->act = MB_ACT_GEGLU;
    else
        return mb_model__err_at_key(err, map, "activation",
                          "unknown activation '%s'; expected one of: swiglu, gelu, squared_relu, geglu", t.act);
    if (strcmp(t.norm, "rmsnorm") == 0)
        m->rmsnorm = 1;
    else if (strcmp(t.norm, "layernorm") == 0)
        m->rmsnorm = 0;
    else
        return mb_model__err_at_key(err, map, "norm", "unknown norm '%s'; expected one of: rmsnorm, layernorm", t.norm);
    if (strcmp(t.pos, "rope") == 0 || strcmp(t.pos, "yarn") == 0 || strcmp(t.pos, "mrope") == 0)
        m->pos = MB_POS_ROPE;
    else if (strcmp(t.pos, "learned_absolute") == 0)
        m->pos = MB_POS_LEARNED;
    else if (strcmp(t.pos, "none") == 0)
        m->pos = MB_POS_NONE;
    else
        return mb_model__err_at_key(err, map, "position_embedding_type",
                                    "unknown position_embedding_type '%s'; expected one of: rope, yarn, mrope, "
                                    "learned_absolute, none", t.pos);

    if (mb_model__read_sections(map, &t, m, err) || mb_model__validate(map, &t, m, err)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    mb_model__expand(m);
    return 0;
}

static const char *mb_model__models_dir(void)
{
    static char buf[1024];
    char *p = mb_path_join(mb_data_dir(), "workloads/models");
    strncpy(buf, p, sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    mb_free(p);
    return buf;
}

/* A shipped-model name: letters, digits, '_', '.', '-' and no "..". */
static int mb_model__is_model_name(const char *s)
{
    if (!*s || strstr(s, ".."))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return 0;
    return 1;
}

static int mb_model__ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Models loaded in this process, by the name or path asked for and the file's bytes: an import
 * matches its settings against every shipped model, a sweep over models or an import's round
 * trip loads the same files again. Keyed on the content (not a modification time), so an edited
 * file is read anew; only successes are kept (an error names the file's position). */
#define MB_MODEL__MEMO 64
static struct mb_model__memo {
    char *ref, *buf;
    size_t len;
    struct mb_model m;
} mb_model__memo[MB_MODEL__MEMO];
static unsigned mb_model__memo_next;
static pthread_mutex_t mb_model__memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* A copy of m into out (its own layer array). */
static void mb_model__copy(const struct mb_model *m, struct mb_model *out)
{
    *out = *m;
    out->layer = NULL;
    if (m->n_layers > 0) {
        out->layer = mb_malloc((size_t)m->n_layers * sizeof *out->layer);
        memcpy(out->layer, m->layer, (size_t)m->n_layers * sizeof *out->layer);
    }
}

/* 1 with *out a copy of the model loaded before from ref with these bytes, else 0. */
static int mb_model__memo_get(const char *ref, const char *buf, size_t len, struct mb_model *out)
{
    int hit = 0;
    pthread_mutex_lock(&mb_model__memo_lock);
    for (int i = 0; i < MB_MODEL__MEMO && !hit; i++) {
        const struct mb_model__memo *e = &mb_model__memo[i];
        if (e->buf && e->len == len && !strcmp(e->ref, ref) && !memcmp(e->buf, buf, len)) {
            mb_model__copy(&e->m, out);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&mb_model__memo_lock);
    return hit;
}

/* Keep a copy of m as loaded from ref with the bytes buf (taken), in place of the oldest entry. */
static void mb_model__memo_put(const char *ref, char *buf, size_t len, const struct mb_model *m)
{
    pthread_mutex_lock(&mb_model__memo_lock);
    struct mb_model__memo *e = &mb_model__memo[mb_model__memo_next++ % MB_MODEL__MEMO];
    mb_free(e->ref);
    mb_free(e->buf);
    mb_model_free(&e->m);
    e->ref = mb_strdup(ref);
    e->buf = buf;
    e->len = len;
    mb_model__copy(m, &e->m);
    pthread_mutex_unlock(&mb_model__memo_lock);
}

int mb_model_load(const char *name_or_path, struct mb_model *out, struct mb_err *err)
{
    char *path = NULL;
    int by_name = 0;
    memset(out, 0, sizeof *out);
    if (!name_or_path)
        return mb_err_set(err, NULL, 0, 0, "no model given");
    if (strchr(name_or_path, '/') || mb_model__ends_with(name_or_path, ".yaml") || mb_model__ends_with(name_or_path, ".yml")) {
        path = mb_strdup(name_or_path); /* a path: the YAML loader reports a missing file */
    } else if (mb_model__is_model_name(name_or_path)) {
        char file[300];
        snprintf(file, sizeof file, "%s.yaml", name_or_path);
        path = mb_path_join(mb_model__models_dir(), file);
        if (!mb_file_exists(path)) {
            mb_free(path);
            path = NULL;
        }
        by_name = 1;
    }
    if (!path) {
        char list[2048];
        mb_model_list(list, sizeof list);
        return mb_err_set(err, NULL, 0, 0, "unknown model '%s'; known: %s", name_or_path, list);
    }
    char *buf;
    size_t len;
    if (mb_input_read(path, "a YAML file", 0, &buf, &len, err)) {
        mb_free(path);
        return -1;
    }
    if (mb_model__memo_get(name_or_path, buf, len, out)) {
        mb_free(buf);
        mb_free(path);
        return 0;
    }
    struct mb_node *root = mb_yaml_load_string(buf, len, path, err);
    mb_free(path);
    if (!root) {
        mb_free(buf);
        return -1;
    }
    int rc = mb_model_from_node(root, out, err);
    if (rc == 0 && by_name && strcmp(out->name, name_or_path) != 0) {
        rc = mb_yaml_err(err, mb_yaml_get(root, "name"), "model name '%s' does not match its file name '%s.yaml'",
                         out->name, name_or_path);
        mb_model_free(out);
    }
    mb_yaml_free(root);
    if (rc == 0)
        mb_model__memo_put(name_or_path, buf, len, out);
    else
        mb_free(buf);
    return rc;
}

void mb_model_free(struct mb_model *m)
{
    if (!m)
        return;
    mb_free(m->layer);
    m->layer = NULL;
    m->n_layers = 0;
}

static int mb_model__cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void mb_model_list(char *buf, size_t len)
{
    if (!buf || !len)
        return;
    buf[0] = '\0';
    DIR *d = opendir(mb_model__models_dir());
    if (!d)
        return;
    size_t n = 0, cap = 64;
    char **names = mb_malloc(cap * sizeof *names);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !mb_model__ends_with(e->d_name, ".yaml"))
            continue;
        if (n == cap)
            names = mb_realloc(names, (cap *= 2) * sizeof *names);
        names[n] = mb_strdup(e->d_name);
        names[n][strlen(names[n]) - 5] = '\0';
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, mb_model__cmp_str);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t need = strlen(names[i]) + (i ? 2 : 0);
        if (used + need + 4 >= len) { /* room for ", ..." */
            if (used + 5 < len)
                strcat(buf, i ? ", ..." : "...");
            break;
        }
        if (i)
            strcat(buf, ", ");
        strcat(buf, names[i]);
        used += need;
    }
    for (size_t i = 0; i < n; i++)
        mb_free(names[i]);
    mb_free(names);
}

/* ---------------------------------------------------------------------------
 * Parameter counts (D.2, generalized)
 * ------------------------------------------------------------------------- */

static double mb_model__gamma_of(const struct mb_model *m)
{
    return (m->act == MB_ACT_SWIGLU || m->act == MB_ACT_GEGLU) ? 3.0 : 2.0;
}

/* Parameters of one norm of width w: RMSNorm has a scale, LayerNorm scale + bias. */
static double mb_model__norm_p(const struct mb_model *m, double w)
{
    return w * (m->rmsnorm ? 1.0 : 2.0);
}

/* Mixer parameters of one layer. */
static double mb_model__mixer_params(const struct mb_model *m, enum mb_mixer mix)
{
    double h = m->hidden, n = m->num_heads, g = m->num_kv_heads, d = m->head_dim;
    switch (mix) {
    case MB_MIX_ATTN:
    case MB_MIX_ATTN_SWA: {
        /* q: h x nd, k,v: h x gd each, o: nd x h; D.2's 2h^2(1 + g/n)(nd/h) */
        double p = h * n * d + 2.0 * h * g * d + n * d * h;
        if (m->attn_output_gate)
            p += h * n * d;            /* gate projection, same size as q */
        if (m->qkv_bias)
            p += n * d + 2.0 * g * d;
        if (m->qk_norm)
            p += 2.0 * d;
        return p;
    }
    case MB_MIX_MLA: {
        double rq = m->q_lora_rank, rkv = m->kv_lora_rank, dqk = m->qk_head_dim;
        double dr = m->qk_rope_head_dim, dv = m->v_head_dim;
        double q = rq > 0 ? h * rq + rq + rq * n * (dqk + dr) /* q_a, q_a norm, q_b */
                          : h * n * (dqk + dr);
        double kv = h * (rkv + dr) + rkv + rkv * n * (dqk + dv); /* kv_a (+rope k), norm, kv_b */
        return q + kv + n * dv * h;
    }
    case MB_MIX_GDN: {
        /* in_proj h x (2q_dim + 2v_dim + 2n_v) (q, k, v, z, beta, alpha), depthwise conv over
         * q, k, v, dt_bias and A_log per v head, gated RMSNorm over d_v, out_proj v_dim x h. */
        double qd = (double)m->gdn_k_heads * m->gdn_k_dim, vd = (double)m->gdn_v_heads * m->gdn_v_dim;
        double nv = m->gdn_v_heads;
        return h * (2 * qd + 2 * vd + 2 * nv) + m->gdn_conv * (2 * qd + vd) + 2 * nv + m->gdn_v_dim + vd * h;
    }
    case MB_MIX_MAMBA: {
        /* Mamba-2: in_proj h x (2 d_in + 2 G N + H), conv1d (kernel 4, with bias) over
         * x, B, C, dt_bias / A_log / D per head, gated RMSNorm over d_in, out_proj d_in x h. */
        double din = (double)m->mamba_heads * m->mamba_head_dim;
        double gn = 2.0 * m->mamba_groups * m->mamba_state, nh = m->mamba_heads;
        return h * (2 * din + gn + nh) + 5.0 * (din + gn) + 3 * nh + din + din * h;
    }
    case MB_MIX_NONE:
        break;
    }
    return 0;
}

/* Accumulate one decoder layer into p; routed experts also into *routed. */
static void mb_model__add_layer(const struct mb_model *m, const struct mb_layer *l, struct mb_params *p,
                      double *attn, double *dense, double *experts, double *shared, double *router)
{
    double h = m->hidden, gam = mb_model__gamma_of(m);
    *attn += mb_model__mixer_params(m, l->mixer);
    if (l->ffn == MB_FFN_DENSE)
        *dense += gam * h * m->ffn_hidden;
    else if (l->ffn == MB_FFN_MOE) {
        double E = m->num_experts;
        if (m->moe_latent > 0) {
            *experts += E * gam * m->moe_latent * m->moe_ffn_hidden;
            *shared += 2.0 * h * m->moe_latent; /* latent down/up projections: always active */
        } else {
            *experts += E * gam * h * m->moe_ffn_hidden;
        }
        *shared += gam * h * m->shared_ffn_hidden;
        *router += h * E;
    }
    /* pre-norms: one per sub-block present */
    p->norms += mb_model__norm_p(m, h) * ((l->mixer != MB_MIX_NONE) + (l->ffn != MB_FFN_NONE));
}

static double mb_model__vision_params(const struct mb_model *m)
{
    const struct mb_vision *v = &m->vision;
    if (v->depth <= 0)
        return 0;
    double hv = v->hidden, f = v->mlp, S2 = (double)v->spatial_merge * v->spatial_merge;
    double hm = hv * S2;
    /* Conv3d patch embedding (+bias) */
    double p = (double)v->in_channels * v->temporal_patch * v->patch * v->patch * hv + hv;
    /* per block: qkv (+bias), proj (+bias), fc1/fc2 (+bias), two LayerNorms */
    p += v->depth * (3 * hv * hv + 3 * hv + hv * hv + hv + 2 * hv * f + f + hv + 4 * hv);
    /* merger and one per DeepStack tap: LayerNorm, fc1 hm x hm, fc2 hm x out (+biases) */
    p += (1.0 + v->deepstack) * (2 * hm + hm * hm + hm + hm * v->out_hidden + v->out_hidden);
    return p;
}

void mb_model_params(const struct mb_model *m, struct mb_params *out)
{
    memset(out, 0, sizeof *out);
    double h = m->hidden, V = (double)m->vocab;
    out->embedding = V * h;
    out->output = m->tied_embeddings ? 0 : V * h;
    for (int i = 0; i < m->n_layers; i++)
        mb_model__add_layer(m, &m->layer[i], out, &out->attn, &out->dense_mlp, &out->experts, &out->shared,
                  &out->router);
    out->norms += mb_model__norm_p(m, h); /* final norm */

    /* MTP block(s): eh_proj 2h x h, enorm + hnorm, one decoder layer (mixer of the model,
     * FFN of the last layer's kind), final norm; embedding and output head are shared. */
    double mtp_routed = 0;
    if (m->mtp_layers > 0 && m->n_layers > 0) {
        struct mb_layer l = { m->kv_lora_rank > 0 ? MB_MIX_MLA : MB_MIX_ATTN,
                              m->layer[m->n_layers - 1].ffn == MB_FFN_MOE ? MB_FFN_MOE : MB_FFN_DENSE };
        struct mb_params tmp;
        double a = 0, dn = 0, ex = 0, sh = 0, rt = 0;
        memset(&tmp, 0, sizeof tmp);
        mb_model__add_layer(m, &l, &tmp, &a, &dn, &ex, &sh, &rt);
        double one = a + dn + ex + sh + rt + tmp.norms + 2 * h * h + 3 * mb_model__norm_p(m, h);
        out->mtp = m->mtp_layers * one;
        mtp_routed = m->mtp_layers * ex;
    }
    out->vision = mb_model__vision_params(m);
    out->total = out->embedding + out->output + out->attn + out->dense_mlp + out->experts + out->shared +
                 out->router + out->norms + out->mtp + out->vision;
    double routed = out->experts + mtp_routed;
    double frac = m->num_experts > 0 ? (double)m->topk / m->num_experts : 1.0;
    out->active = out->total - routed + routed * frac;
}

/* ---------------------------------------------------------------------------
 * FLOPs (D.1)
 * ------------------------------------------------------------------------- */

/* Megatron mb_model__hybrid_flops (Nemotron-H style pattern models), fwd x 3. */
static double mb_model__hybrid_flops(const struct mb_model *m, double T, double Q)
{
    double h = m->hidden, n = m->num_heads, g = m->num_kv_heads, d = m->head_dim;
    double gam = mb_model__gamma_of(m), V = (double)m->vocab;
    double na = 0, nm = 0, ne = 0, nd = 0;
    for (int i = 0; i < m->n_layers; i++) {
        na += m->layer[i].mixer == MB_MIX_ATTN;
        nm += m->layer[i].mixer == MB_MIX_MAMBA;
        ne += m->layer[i].ffn == MB_FFN_MOE;
        nd += m->layer[i].ffn == MB_FFN_DENSE;
    }
    double p = n * d / h;
    double attn = 4 * T * h * p * (h + h * g / n) + 2 * Q * h * p;
    double mlp = 4 * ((double)m->ffn_hidden / h) * (gam / 2) * T * h * h;
    double moe;
    if (m->moe_latent > 0)
        moe = 4 * T * m->moe_latent * (double)m->moe_ffn_hidden * m->topk * (gam / 2) +
              4 * T * h * m->moe_latent + 4 * T * h * m->shared_ffn_hidden * (gam / 2);
    else
        moe = 4 * T * h * ((double)m->moe_ffn_hidden * m->topk + m->shared_ffn_hidden) * (gam / 2);
    double din = 2 * h; /* Megatron: d_in = 2h, independent of heads x head_dim */
    double mamba = 2 * T * h * (2 * din + 2.0 * m->mamba_groups * m->mamba_state + m->mamba_heads) +
                   7 * T * din * m->mamba_state + 2 * T * din * h;
    double logits = 2 * T * h * V * (1.0 + m->mtp_layers);
    return 3 * (na * attn + nm * mamba + ne * moe + nd * mlp + logits);
}

double mb_model_flops(const struct mb_model *m, double tokens, double seq_sq_sum)
{
    double T = tokens, Q = seq_sq_sum;
    if (T <= 0)
        return 0;
    if (m->pattern[0])
        return mb_model__hybrid_flops(m, T, Q);

    double h = m->hidden, n = m->num_heads, g = m->num_kv_heads, d = m->head_dim;
    double V = (double)m->vocab, gam = mb_model__gamma_of(m), mtp = m->mtp_layers;
    double L_dense = 0, L_moe = 0, N_lin = 0, N_swa = 0;
    for (int i = 0; i < m->n_layers; i++) {
        L_dense += m->layer[i].ffn == MB_FFN_DENSE;
        L_moe += m->layer[i].ffn == MB_FFN_MOE;
        N_lin += m->layer[i].mixer == MB_MIX_GDN;
        N_swa += m->layer[i].mixer == MB_MIX_ATTN_SWA;
    }
    /* MTP layers join whichever FFN type the last layer has */
    if (m->n_layers > 0 && m->layer[m->n_layers - 1].ffn == MB_FFN_MOE)
        L_moe += mtp;
    else
        L_dense += mtp;
    double N_attn = m->num_layers + mtp - N_lin; /* includes SWA layers */
    double N_full = N_attn - N_swa;

    double A_lin, A_core;
    if (m->kv_lora_rank > 0) {
        double rq = m->q_lora_rank, rkv = m->kv_lora_rank, dqk = m->qk_head_dim;
        double dr = m->qk_rope_head_dim, dv = m->v_head_dim;
        double q_term = rq > 0 ? rq * (h + n * (dqk + dr) + 1) : h * n * (dqk + dr);
        A_lin = 6 * (q_term + rkv * (h + n * (dqk + dv) + 1) + h * dr + n * dv * h);
        A_core = 6 * (n * (dqk + dr) / 2 + n * dv / 2);
    } else {
        A_lin = 6 * (h * (n * d + 2 * g * d + n * d * (m->attn_output_gate ? 1 : 0)) + n * d * h);
        A_core = 6 * n * d;
    }
    double G_lin = 0;
    if (N_lin > 0) {
        double qd = (double)m->gdn_k_heads * m->gdn_k_dim, vd = (double)m->gdn_v_heads * m->gdn_v_dim;
        double nv = m->gdn_v_heads, dv = m->gdn_v_dim;
        double P = 2 * qd + 2 * vd + 2 * nv;
        G_lin = 6 * (h * P + m->gdn_conv * (2 * qd + vd) + 4 * nv * dv * dv + h * vd);
    }
    double routed = gam * m->moe_ffn_hidden * m->topk;
    if (m->moe_latent > 0)
        routed = routed * m->moe_latent / h + 2.0 * m->moe_latent;
    double per_token = 6 * h * (gam * m->ffn_hidden * L_dense + routed * L_moe + gam * m->shared_ffn_hidden * L_moe) +
                       A_lin * N_attn + G_lin * N_lin + 6 * mtp * (3 * h + 2 * h * h) + 6 * h * V * (mtp + 1);
    double F = T * per_token + Q * A_core * N_full;
    if (N_swa > 0) {
        /* A_core already holds the causal 1/2, i.e. Q*A_core = T * A_core * 2 * (s/2).
         * SWA: average context w - w(w-1)/(2s) replaces s/2, with s = Q/T (exact for
         * fixed-length batches); a sequence shorter than the window stays causal s/2. */
        double s = Q / T, w = m->swa_window;
        double ctx = s > w ? w - w * (w - 1) / (2 * s) : s / 2;
        F += T * A_core * 2 * ctx * N_swa;
    }
    return F;
}

double mb_model_vit_flops(const struct mb_model *m, double patches_sum, double patches_sq_sum)
{
    const struct mb_vision *v = &m->vision;
    if (v->depth <= 0)
        return 0;
    double hv = v->hidden, f = v->mlp, S = v->spatial_merge, hm = hv * S * S;
    double merged = patches_sum / (S * S);
    double blocks = v->depth * ((8 * hv * hv + 4 * hv * f) * patches_sum + 4 * hv * patches_sq_sum);
    double mergers = (1.0 + v->deepstack) * merged * (2 * hm * hm + 2 * hm * v->out_hidden);
    return 3 * (blocks + mergers);
}

static long mb_model__round_up(long x, long mult)
{
    return mult > 1 ? (x + mult - 1) / mult * mult : x;
}

double mb_model_image_patches(const struct mb_model *m, int height, int width, double *merged)
{
    const struct mb_vision *v = &m->vision;
    if (merged)
        *merged = 0;
    if (v->depth <= 0 || v->patch <= 0 || height <= 0 || width <= 0)
        return 0;
    long S = v->spatial_merge > 0 ? v->spatial_merge : 1;
    long gh = mb_model__round_up((height + v->patch - 1) / v->patch, S);
    long gw = mb_model__round_up((width + v->patch - 1) / v->patch, S);
    double p = (double)gh * (double)gw;
    if (merged)
        *merged = p / (double)(S * S);
    return p;
}
