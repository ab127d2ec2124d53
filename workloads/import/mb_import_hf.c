/*
 * mb_import_hf.c -- a model file from a Hugging Face config.json (mb_hf.h).
 *
 * The config is parsed with jansson; positions for messages come from the
 * raw text (the first occurrence of "key" after the start of the object the
 * key belongs to), since jansson keeps none for values. Each object (the
 * root, and for vision-language configs `text_config` and `vision_config`)
 * has a set of the keys this importer used; whatever is left is reported as
 * "not modelled" (with the reason, from one table) or as unknown. A key given
 * twice in one object keeps its last value (jansson and Python's json.load
 * alike) and is noted with both positions (mb_hf__dups_in).
 *
 * Field names follow transformers' configuration classes: LlamaConfig,
 * MistralConfig, Qwen2Config, Qwen3Config, Qwen2MoeConfig, Qwen3MoeConfig,
 * MixtralConfig, DeepseekV3Config, Qwen3VLConfig / Qwen3VLMoeConfig.
 */
#include "mb_hf.h"
#include "mb_input.h"
#include "mb_text.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mb_model.h"
#include "mb_yaml.h"

enum mb_hf__family { MB_HF_LLAMA, MB_HF_MISTRAL, MB_HF_QWEN2, MB_HF_QWEN3, MB_HF_QWEN2_MOE, MB_HF_QWEN3_MOE,
                     MB_HF_MIXTRAL, MB_HF_DEEPSEEK_V3 };

/* How a model type's transformers implementation windows attention. */
enum mb_hf__swa {
    MB_HF_SWA_NONE,      /* no sliding window: a sliding_window key is unused (LlamaConfig has none) */
    MB_HF_SWA_ALL,       /* sliding_window on every layer (MistralAttention, MixtralAttention) */
    MB_HF_SWA_QWEN,      /* use_sliding_window: layers from max_window_layers on, or layer_types (Qwen2Config) */
    MB_HF_SWA_QWEN_ALL,  /* use_sliding_window: every layer (Qwen3MoeAttention reads sliding_window alone) */
    MB_HF_SWA_QWEN2_MOE, /* use_sliding_window: transformers releases disagree on the layers; layer_types only */
};

/* Defaults of each model type's configuration class where a config.json leaves the key out
 * (transformers src/transformers/models/<type>/configuration_<type>.py, read at commit 008e574 of
 * huggingface/transformers, and modeling_qwen3_moe.py for its attention): kv = num_key_value_heads
 * (0: num_attention_heads, LlamaConfig's None), head_dim (0: hidden_size // num_attention_heads, as
 * LlamaConfig, MistralConfig and MixtralConfig compute it and Qwen2's / Qwen3-MoE's attention take
 * it with getattr), window = sliding_window (MistralConfig 4096, MixtralConfig None). */
static const struct mb_hf__type {
    const char *type;
    enum mb_hf__family fam;
    long kv, head_dim;
    enum mb_hf__swa swa;
    long window;
} mb_hf__types[] = {
    {"llama", MB_HF_LLAMA, 0, 0, MB_HF_SWA_NONE, 0},
    {"mistral", MB_HF_MISTRAL, 8, 0, MB_HF_SWA_ALL, 4096},
    {"qwen2", MB_HF_QWEN2, 32, 0, MB_HF_SWA_QWEN, 4096},
    {"qwen3", MB_HF_QWEN3, 32, 128, MB_HF_SWA_QWEN, 4096},
    {"qwen2_moe", MB_HF_QWEN2_MOE, 16, 0, MB_HF_SWA_QWEN2_MOE, 4096},
    {"qwen3_moe", MB_HF_QWEN3_MOE, 4, 0, MB_HF_SWA_QWEN_ALL, 4096},
    {"mixtral", MB_HF_MIXTRAL, 8, 0, MB_HF_SWA_ALL, 0},
    {"deepseek_v3", MB_HF_DEEPSEEK_V3, 0, 0, MB_HF_SWA_NONE, 0}, /* MLA: heads and head sizes of its own */
    /* Qwen3-VL's text models, built from the root's class (Qwen3VLConfig.sub_configs): no window
     * (Qwen3VLMoeTextConfig sets sliding_window = None) */
    {"qwen3_vl_text", MB_HF_QWEN3, 32, 128, MB_HF_SWA_NONE, 0},
    {"qwen3_vl_moe_text", MB_HF_QWEN3_MOE, 16, 0, MB_HF_SWA_NONE, 0},
};

/* Keys that are understood and have no effect on a training-step simulation. */
static const struct {
    const char *key, *why;
} mb_hf__unmodelled[] = {
    {"architectures", "metadata"},
    {"transformers_version", "metadata"},
    {"_name_or_path", "metadata"},
    {"auto_map", "metadata (remote code)"},
    {"torch_dtype", "checkpoint dtype (the scenario's precision sets training's)"},
    {"dtype", "checkpoint dtype (the scenario's precision sets training's)"},
    {"bos_token_id", "token id"},
    {"eos_token_id", "token id"},
    {"pad_token_id", "token id"},
    {"image_token_id", "token id"},
    {"video_token_id", "token id"},
    {"vision_start_token_id", "token id"},
    {"vision_end_token_id", "token id"},
    {"initializer_range", "initialisation"},
    {"use_cache", "inference"},
    {"output_router_logits", "inference"},
    {"max_position_embeddings", "context length (the scenario's data.seq_length sets it)"},
    {"rope_theta", "RoPE: no parameters, FLOPs not counted"},
    {"rope_scaling", "RoPE: no parameters, FLOPs not counted"},
    {"rope_parameters", "RoPE: no parameters, FLOPs not counted"},
    {"use_mrope", "RoPE: no parameters, FLOPs not counted"},
    {"attention_dropout", "dropout probability"},
    {"pretraining_tp", "numerics"},
    {"norm_topk_prob", "routing numerics"},
    {"router_jitter_noise", "routing numerics"},
    {"scoring_func", "routing numerics"},
    {"topk_method", "routing numerics (n_group and topk_group are imported)"},
    {"routed_scaling_factor", "routing numerics"},
    {"router_aux_loss_coef", "loss weight"},
    {"aux_loss_alpha", "loss weight"},
    {"seq_aux", "loss"},
    {"ep_size", "inference layout (the scenario's parallel.ep sets training's)"},
    {"quantization_config", "checkpoint format"},
    {"num_position_embeddings", "learned ViT position embedding: parameters not counted"},
};

struct mb_hf__obj {
    json_t *o;
    json_t *used;                   /* keys used (a JSON object as a set) */
    size_t off;                     /* where the object starts in the text */
};

struct mb_hf {
    const char *path;
    char *text;
    struct mb_hf__obj root, tc, vc; /* tc = root for text-only configs; vc.o NULL without vision */
    enum mb_hf__family fam;
    const char *type;
    const struct mb_hf__type *t; /* the model type's defaults */
    char why_window[200];         /* the note of the sliding-window keys no layer uses */
    struct mb_err *err;
    size_t *lines, n_lines;       /* offsets where each line starts (mb_hf__index_lines) */
};

/* The model as it will be written; 0 = not written. */
struct mb_hf__out {
    long layers, hidden, ffn, heads, kv, head_dim, vocab;
    int tied, qk_norm, qkv_bias;
    const char *act;
    long mtp;
    long experts, topk, moe_ffn, shared, first_dense, groups, group_topk;
    long q_lora, kv_lora, qk_head, qk_rope, v_head;
    int mla;
    long window, full_every;
    long v_depth, v_hidden, v_heads, v_mlp, v_patch, v_tpatch, v_merge, v_deepstack, v_out, v_in;
};

/* ------------------------------------------------------------ positions */

/* JSON text scanning for positions (jansson keeps none): the end of the value
 * at text[i] (a string, an object or array with their nesting, or a scalar). */
static size_t mb_hf__skip_value(const char *t, size_t i)
{
    int depth = 0;
    for (; t[i]; i++) {
        char c = t[i];
        if (c == '"') {
            for (i++; t[i] && t[i] != '"'; i++)
                if (t[i] == '\\' && t[i + 1])
                    i++;
            if (!t[i])
                return i;
            if (!depth)
                return i + 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (!depth)
                return i;
            if (!--depth)
                return i + 1;
        } else if (!depth && (c == ',' || c == ' ' || c == '\t' || c == '\n')) {
            return i;
        }
    }
    return i;
}

static size_t mb_hf__ws(const char *t, size_t i)
{
    while (t[i] == ' ' || t[i] == '\t' || t[i] == '\n')
        i++;
    return i;
}

/* In the object whose '{' is at text[obj]: the offset of member `key`'s name
 * (*val: of its value); obj itself when there is no such member. The last of
 * a repeated key, as jansson keeps. */
static size_t mb_hf__member(const char *t, size_t obj, const char *key, size_t *val)
{
    size_t found = obj, klen = strlen(key);
    *val = obj;
    if (t[obj] != '{')
        return obj;
    size_t i = mb_hf__ws(t, obj + 1);
    while (t[i] == '"') {
        size_t k = i, e = mb_hf__skip_value(t, i);
        int match = e >= k + 2 && e - k - 2 == klen && !memcmp(t + k + 1, key, klen);
        i = mb_hf__ws(t, e);
        if (t[i] != ':')
            break;
        i = mb_hf__ws(t, i + 1);
        if (match)
            found = k, *val = i;
        i = mb_hf__ws(t, mb_hf__skip_value(t, i));
        if (t[i] != ',')
            break;
        i = mb_hf__ws(t, i + 1);
    }
    return found;
}

/* In the array whose '[' is at text[arr]: the offset of element idx, or arr. */
static size_t mb_hf__element(const char *t, size_t arr, size_t idx)
{
    if (t[arr] != '[')
        return arr;
    size_t i = mb_hf__ws(t, arr + 1);
    for (size_t n = 0; t[i] && t[i] != ']'; n++) {
        if (n == idx)
            return i;
        i = mb_hf__ws(t, mb_hf__skip_value(t, i));
        if (t[i] != ',')
            break;
        i = mb_hf__ws(t, i + 1);
    }
    return arr;
}

/* The offsets where the text's lines start, for positions in log n (the repeated-key notes may be many). */
static void mb_hf__index_lines(struct mb_hf *h)
{
    size_t cap = 64;
    h->lines = mb_malloc(cap * sizeof *h->lines);
    h->lines[0] = 0;
    h->n_lines = 1;
    for (size_t i = 0; h->text[i]; i++)
        if (h->text[i] == '\n') {
            if (h->n_lines == cap)
                h->lines = mb_realloc(h->lines, (cap *= 2) * sizeof *h->lines);
            h->lines[h->n_lines++] = i + 1;
        }
}

/* Line and column of text[off], the column in characters (mb_text_col_step), as jansson's errors
 * count them: the last line starting at or before off. */
static void mb_hf__linecol(const struct mb_hf *h, size_t off, int *line, int *col)
{
    size_t lo = 0, hi = h->n_lines;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->lines[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    *line = (int)(lo + 1);
    *col = 1 + mb_text_cols(h->text + h->lines[lo], off - h->lines[lo]);
}

/* ------------------------------------------------------------ repeated keys */

/* The key of the member whose name string is text[k..e) as jansson decodes it
 * (escapes resolved: "\u0061" and "a" are one key); NULL when it does not decode. */
static char *mb_hf__key_at(const char *t, size_t k, size_t e)
{
    if (!memchr(t + k, '\\', e - k)) {
        char *s = mb_malloc(e - k - 1);
        memcpy(s, t + k + 1, e - k - 2);
        s[e - k - 2] = 0;
        return s;
    }
    json_error_t je;
    json_t *j = json_loadb(t + k, e - k, JSON_DECODE_ANY, &je);
    char *s = json_is_string(j) ? mb_strdup(json_string_value(j)) : NULL;
    json_decref(j);
    return s;
}

static size_t mb_hf__dups_in(const struct mb_hf *h, size_t at, const char *prefix, FILE *notes, int depth);

/* A member of an object, for the repeated-key notes. */
struct mb_hf__mem {
    char *key;          /* decoded, NULL when it does not decode */
    size_t k, v, ve;    /* offsets of the name, the value and the value's end */
    size_t prev;        /* index + 1 of the same key's previous member, 0 for none */
};

static int mb_hf__mem_cmp(const void *a, const void *b)
{
    const struct mb_hf__mem *x = *(const struct mb_hf__mem *const *)a, *y = *(const struct mb_hf__mem *const *)b;
    int c = strcmp(x->key ? x->key : "", y->key ? y->key : "");
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* The note for member m given again after member p (Python's json.load, which transformers'
 * PretrainedConfig reads config.json with, keeps the last value, as jansson does). */
static void mb_hf__dup_note(const struct mb_hf *h, const struct mb_hf__mem *p, const struct mb_hf__mem *m,
                            const char *prefix, FILE *notes)
{
    int l1, c1, l2, c2;
    mb_hf__linecol(h, p->k, &l1, &c1);
    mb_hf__linecol(h, m->k, &l2, &c2);
    int w1 = (int)(p->ve - p->v), w2 = (int)(m->ve - m->v);
    fprintf(notes, "%s:%d:%d: %s%s: given again: the value %.*s%s of %d:%d is replaced by %.*s%s (the last one "
            "wins, as Python's json.load takes it)\n", h->path, l2, c2, prefix, m->key, w1 > 60 ? 60 : w1,
            h->text + p->v, w1 > 60 ? "..." : "", l1, c1, w2 > 60 ? 60 : w2, h->text + m->v, w2 > 60 ? "..." : "");
}

/* The members of the object at text[obj] (*end: past its '}'), the objects inside walked first. */
static struct mb_hf__mem *mb_hf__members(const struct mb_hf *h, size_t obj, const char *prefix, FILE *notes,
                                         int depth, size_t *n_p, size_t *end)
{
    const char *t = h->text;
    struct mb_hf__mem *mem = NULL;
    size_t n = 0, cap = 0, i = mb_hf__ws(t, obj + 1);
    while (t[i] == '"') {
        size_t k = i, e = mb_hf__skip_value(t, i);
        i = mb_hf__ws(t, e);
        if (t[i] != ':')
            break;
        size_t v = mb_hf__ws(t, i + 1);
        if (n == cap)
            mem = mb_realloc(mem, (cap = cap ? 2 * cap : 16) * sizeof *mem);
        mem[n] = (struct mb_hf__mem){mb_hf__key_at(t, k, e), k, v, v, 0};
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s.", prefix, mem[n].key ? mem[n].key : "?");
        mem[n].ve = mb_hf__dups_in(h, v, sub, notes, depth + 1);
        i = mb_hf__ws(t, mem[n++].ve);
        if (t[i] != ',')
            break;
        i = mb_hf__ws(t, i + 1);
    }
    *end = t[i] == '}' ? i + 1 : i;
    *n_p = n;
    return mem;
}

/* One note per key given again in the object at text[obj], in file order: the members sorted by key
 * (then position) find each one's previous occurrence in n log n (a hostile object of 10^6 keys). */
static size_t mb_hf__dups_obj(const struct mb_hf *h, size_t obj, const char *prefix, FILE *notes, int depth)
{
    size_t n, end;
    struct mb_hf__mem *mem = mb_hf__members(h, obj, prefix, notes, depth, &n, &end);
    struct mb_hf__mem **by = mb_malloc((n ? n : 1) * sizeof *by);
    for (size_t j = 0; j < n; j++)
        by[j] = &mem[j];
    qsort(by, n, sizeof *by, mb_hf__mem_cmp);
    for (size_t j = 1; j < n; j++)
        if (by[j]->key && by[j - 1]->key && !strcmp(by[j]->key, by[j - 1]->key))
            by[j]->prev = (size_t)(by[j - 1] - mem) + 1;
    for (size_t j = 0; j < n; j++)
        if (mem[j].prev)
            mb_hf__dup_note(h, &mem[mem[j].prev - 1], &mem[j], prefix, notes);
    for (size_t j = 0; j < n; j++)
        mb_free(mem[j].key);
    mb_free(by);
    mb_free(mem);
    return end;
}

/* Repeated keys in the value at text[at] and everything inside it (objects, and objects in arrays);
 * returns the offset past the value. Each byte is read once (no rescan per nesting level). */
static size_t mb_hf__dups_in(const struct mb_hf *h, size_t at, const char *prefix, FILE *notes, int depth)
{
    const char *t = h->text;
    if (depth > JSON_PARSER_MAX_DEPTH) /* the text parsed: jansson nests at most this deep */
        return mb_hf__skip_value(t, at);
    if (t[at] == '{')
        return mb_hf__dups_obj(h, at, prefix, notes, depth);
    if (t[at] != '[')
        return mb_hf__skip_value(t, at);
    size_t i = mb_hf__ws(t, at + 1);
    while (t[i] && t[i] != ']') {
        i = mb_hf__ws(t, mb_hf__dups_in(h, i, prefix, notes, depth + 1));
        if (t[i] != ',')
            break;
        i = mb_hf__ws(t, i + 1);
    }
    return t[i] == ']' ? i + 1 : i;
}

/* Position of member `key` of object ob ("{": the object itself). */
static void mb_hf__pos(const struct mb_hf *h, size_t off, const char *key, int *line, int *col)
{
    size_t val;
    mb_hf__linecol(h, strcmp(key, "{") ? mb_hf__member(h->text, off, key, &val) : off, line, col);
}

static int mb_hf__err(const struct mb_hf *h, const struct mb_hf__obj *ob, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int mb_hf__err(const struct mb_hf *h, const struct mb_hf__obj *ob, const char *key, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    mb_hf__pos(h, ob->off, key, &line, &col);
    return mb_err_set(h->err, h->path, line, col, "%s", msg);
}

/* ------------------------------------------------------------ getters */

static void mb_hf__use(struct mb_hf__obj *ob, const char *key) { json_object_set_new(ob->used, key, json_true()); }

/* The value of key, marked used; NULL when absent or null. */
static json_t *mb_hf__get(struct mb_hf__obj *ob, const char *key)
{
    json_t *v = json_object_get(ob->o, key);
    if (v)
        mb_hf__use(ob, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* 1 when key is given as null (None: the class's own fallback, which may differ from its default). */
static int mb_hf__null(const struct mb_hf__obj *ob, const char *key)
{
    json_t *v = json_object_get(ob->o, key);
    return v && json_is_null(v);
}

/* Integer key >= lo; def when absent (required: def < 0 makes absence an error). */
static int mb_hf__int(struct mb_hf *h, struct mb_hf__obj *ob, const char *key, long lo, long def, long *out)
{
    json_t *v = mb_hf__get(ob, key);
    if (!v) {
        if (def < 0)
            return mb_hf__err(h, ob, "{", "missing \"%s\": expected an integer (transformers' %s config)", key,
                              h->type);
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > INT_MAX)
        return mb_hf__err(h, ob, key, "\"%s\": expected an integer >= %ld", key, lo);
    *out = (long)json_integer_value(v);
    return 0;
}

static int mb_hf__bool(struct mb_hf *h, struct mb_hf__obj *ob, const char *key, int def, int *out)
{
    json_t *v = mb_hf__get(ob, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return mb_hf__err(h, ob, key, "\"%s\": expected true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* ------------------------------------------------------------ sections */

static int mb_hf__activation(struct mb_hf *h, struct mb_hf__out *m)
{
    json_t *v = mb_hf__get(&h->tc, "hidden_act");
    const char *a = v && json_is_string(v) ? json_string_value(v) : v ? NULL : "silu";
    if (!a)
        return mb_hf__err(h, &h->tc, "hidden_act", "\"hidden_act\": expected a string");
    /* every supported architecture has a gated MLP: act(gate) * up */
    if (!strcmp(a, "silu") || !strcmp(a, "swish"))
        m->act = "swiglu";
    else if (!strcmp(a, "gelu") || !strcmp(a, "gelu_pytorch_tanh") || !strcmp(a, "gelu_new"))
        m->act = "geglu";
    else
        return mb_hf__err(h, &h->tc, "hidden_act", "\"hidden_act\": '%s': expected silu or gelu (a gated MLP)", a);
    return 0;
}

static int mb_hf__attention(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    int bias = 0, mlp_bias = 0;
    if (mb_hf__int(h, t, "num_attention_heads", 1, -1, &m->heads))
        return -1;
    /* absent: the class's default (mb_hf__types); null: the heads, as every class's None does */
    long kv = h->t->kv && !mb_hf__null(t, "num_key_value_heads") ? h->t->kv : m->heads;
    if (mb_hf__int(h, t, "num_key_value_heads", 1, kv, &m->kv) ||
        mb_hf__bool(h, t, "attention_bias", 0, &bias) || mb_hf__bool(h, t, "mlp_bias", 0, &mlp_bias))
        return -1;
    if (mlp_bias)
        return mb_hf__err(h, t, "mlp_bias", "\"mlp_bias\": true is not modelled (MLP biases); expected false");
    m->qkv_bias = bias || h->fam == MB_HF_QWEN2 || h->fam == MB_HF_QWEN2_MOE; /* Qwen2: q/k/v biases always */
    m->qk_norm = h->fam == MB_HF_QWEN3 || h->fam == MB_HF_QWEN3_MOE;
    if (m->heads % m->kv)
        return mb_hf__err(h, t, json_object_get(t->o, "num_key_value_heads") ? "num_key_value_heads" : "num_attention_heads",
                          "\"num_key_value_heads\" = %ld%s does not divide num_attention_heads = %ld", m->kv,
                          json_object_get(t->o, "num_key_value_heads") ? "" : " (absent: the default of transformers' "
                          "class for this model_type)", m->heads);
    if (h->fam == MB_HF_DEEPSEEK_V3) {
        m->mla = 1;
        mb_hf__use(t, "head_dim"); /* newer configs: = qk_rope_head_dim */
        return mb_hf__int(h, t, "q_lora_rank", 0, 0, &m->q_lora) || mb_hf__int(h, t, "kv_lora_rank", 1, -1, &m->kv_lora) ||
               mb_hf__int(h, t, "qk_nope_head_dim", 1, -1, &m->qk_head) ||
               mb_hf__int(h, t, "qk_rope_head_dim", 1, -1, &m->qk_rope) || mb_hf__int(h, t, "v_head_dim", 1, -1, &m->v_head)
                   ? -1 : 0;
    }
    /* LlamaConfig.validate_architecture refuses a hidden size the heads do not divide; the other
     * classes floor-divide (hidden_size // num_attention_heads) when head_dim is absent or null */
    if (h->fam == MB_HF_LLAMA && m->hidden % m->heads)
        return mb_hf__err(h, t, "num_attention_heads", "\"num_attention_heads\" = %ld does not divide hidden_size = "
                          "%ld (transformers' LlamaConfig refuses it)", m->heads, m->hidden);
    long dflt = h->t->head_dim && !mb_hf__null(t, "head_dim") ? h->t->head_dim : m->hidden / m->heads;
    if (dflt < 1)
        return mb_hf__err(h, t, "num_attention_heads", "\"num_attention_heads\" = %ld is more than hidden_size = %ld: "
                          "the default head_dim (hidden_size // num_attention_heads) is 0", m->heads, m->hidden);
    return mb_hf__int(h, t, "head_dim", 1, dflt, &m->head_dim);
}

/* Sliding window from layer_types: all sliding -> every layer, else every
 * N-th layer (1-based) full attention. */
static int mb_hf__layer_types(struct mb_hf *h, json_t *lt, long window, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    if (!json_is_array(lt) || (long)json_array_size(lt) != m->layers)
        return mb_hf__err(h, t, "layer_types", "\"layer_types\": expected a list of %ld layer kinds", m->layers);
    long first_full = -1, n_full = 0;
    for (size_t i = 0; i < json_array_size(lt); i++) {
        const char *k = json_string_value(json_array_get(lt, i));
        int full = k && !strcmp(k, "full_attention");
        if (!full && (!k || strcmp(k, "sliding_attention")))
            return mb_hf__err(h, t, "layer_types", "\"layer_types\"[%zu]: expected full_attention or sliding_attention",
                              i);
        if (full && first_full < 0)
            first_full = (long)i;
        n_full += full;
    }
    if (n_full == m->layers)
        return 0;
    long every = first_full < 0 ? 0 : first_full + 1;
    for (long i = 0; every && i < m->layers; i++) {
        const char *k = json_string_value(json_array_get(lt, (size_t)i));
        if (!strcmp(k, "full_attention") != ((i + 1) % every == 0))
            return mb_hf__err(h, t, "layer_types", "\"layer_types\": full attention on layers other than every "
                              "%ld-th one is not supported (mbsim: sliding_window.full_every)", every);
    }
    if (window < 1)
        return mb_hf__err(h, t, "sliding_window", "\"sliding_window\": expected the window (tokens) for the "
                          "sliding_attention layers");
    m->window = window;
    m->full_every = every;
    return 0;
}

/* Keys of the sliding window, reported with h->why_window when no layer uses them. */
static const char *const mb_hf__window_keys[] = {"sliding_window", "max_window_layers", "layer_types",
                                                 "use_sliding_window", NULL};

static void mb_hf__window_unused(struct mb_hf *h, const char *why)
{
    for (int i = 0; mb_hf__window_keys[i]; i++)
        json_object_del(h->tc.used, mb_hf__window_keys[i]);
    snprintf(h->why_window, sizeof h->why_window, "%s", why);
}

/* The sliding window as the model type's transformers attention applies it
 * (enum mb_hf__swa): a key the implementation does not read is reported as
 * unused, never applied (a Llama config's sliding_window windowed every layer). */
static int mb_hf__sliding(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    enum mb_hf__swa swa = h->t->swa;
    long window = 0, max_window = 0;
    int use = 0;
    char why[200];
    if (swa == MB_HF_SWA_NONE) {
        snprintf(why, sizeof why, "unused: model_type %s has no sliding window in transformers (its attention "
                 "applies none)", h->t->type);
        mb_hf__window_unused(h, why);
        return 0;
    }
    /* absent: the class's default (MistralConfig 4096); null: none */
    if (mb_hf__int(h, t, "sliding_window", 1, mb_hf__null(t, "sliding_window") ? 0 : h->t->window, &window))
        return -1;
    if (swa == MB_HF_SWA_ALL) { /* every layer; layer_types is ignored (MistralConfig warns) */
        m->window = window;
        snprintf(why, sizeof why, window ? "unused: transformers' %s attention windows every layer and reads no "
                 "layer_types" : "unused: sliding_window is null (no window)", h->t->type);
        mb_hf__window_unused(h, why);
        if (window)
            mb_hf__use(t, "sliding_window");
        return 0;
    }
    if (mb_hf__bool(h, t, "use_sliding_window", 0, &use))
        return -1;
    if (!use || !window) { /* Qwen configs: sliding_window = sliding_window if use_sliding_window else None */
        mb_hf__window_unused(h, !use ? "unused: use_sliding_window is false (no layer has a window)"
                                     : "unused: sliding_window is null (no layer has a window)");
        if (json_object_get(t->o, "use_sliding_window"))
            mb_hf__use(t, "use_sliding_window"); /* read, and what decides */
        return 0;
    }
    json_t *lt = swa == MB_HF_SWA_QWEN_ALL ? NULL : mb_hf__get(t, "layer_types");
    if (lt)
        return mb_hf__layer_types(h, lt, window, m);
    if (swa == MB_HF_SWA_QWEN_ALL) { /* Qwen3MoeAttention: sliding_window on every layer */
        mb_hf__window_unused(h, "unused: transformers' Qwen3-MoE windows every layer (max_window_layers and "
                                "layer_types are not read)");
        mb_hf__use(t, "sliding_window");
        mb_hf__use(t, "use_sliding_window");
        m->window = window;
        return 0;
    }
    if (swa == MB_HF_SWA_QWEN2_MOE)
        return mb_hf__err(h, t, "use_sliding_window", "\"use_sliding_window\": true without layer_types: transformers "
                          "releases disagree on Qwen2-MoE's windowed layers (older: from max_window_layers on; "
                          "current: every other layer below it); give layer_types");
    /* Qwen2Config / Qwen3Config: layer i is windowed when i >= max_window_layers (default 28) */
    if (mb_hf__int(h, t, "max_window_layers", 0, 28, &max_window))
        return -1;
    if (max_window >= m->layers) {
        mb_hf__window_unused(h, "unused: no layer has a sliding window (max_window_layers >= layers)");
        return 0;
    }
    if (max_window > 0)
        return mb_hf__err(h, t, "max_window_layers", "\"max_window_layers\" = %ld: a window on layers %ld.. only "
                          "is not supported (mbsim: every layer, or all but every N-th)", max_window, max_window);
    m->window = window;
    return 0;
}

static int mb_hf__moe_qwen(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    long step = 1;
    if (mb_hf__int(h, t, "num_experts", 1, -1, &m->experts) || mb_hf__int(h, t, "num_experts_per_tok", 1, -1, &m->topk) ||
        mb_hf__int(h, t, "moe_intermediate_size", 1, -1, &m->moe_ffn) ||
        mb_hf__int(h, t, "shared_expert_intermediate_size", 0, 0, &m->shared) ||
        mb_hf__int(h, t, "decoder_sparse_step", 1, 1, &step))
        return -1;
    if (step != 1)
        return mb_hf__err(h, t, "decoder_sparse_step", "\"decoder_sparse_step\" = %ld: MoE on every %ld-th layer is "
                          "not supported; expected 1", step, step);
    json_t *dense = mb_hf__get(t, "mlp_only_layers");
    size_t n = dense ? json_array_size(dense) : 0;
    for (size_t i = 0; i < n; i++)
        if (json_integer_value(json_array_get(dense, i)) != (json_int_t)i)
            return mb_hf__err(h, t, "mlp_only_layers", "\"mlp_only_layers\": dense layers other than the first ones "
                              "are not supported; expected [0, 1, ..., k-1]");
    if (dense && !json_is_array(dense))
        return mb_hf__err(h, t, "mlp_only_layers", "\"mlp_only_layers\": expected a list of layer indices");
    m->first_dense = (long)n;
    return 0;
}

static int mb_hf__moe_deepseek(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    long n_shared = 0, freq = 1;
    if (mb_hf__int(h, t, "n_routed_experts", 1, -1, &m->experts) || mb_hf__int(h, t, "num_experts_per_tok", 1, -1, &m->topk) ||
        mb_hf__int(h, t, "moe_intermediate_size", 1, -1, &m->moe_ffn) || mb_hf__int(h, t, "n_shared_experts", 0, 0, &n_shared) ||
        mb_hf__int(h, t, "first_k_dense_replace", 0, 0, &m->first_dense) || mb_hf__int(h, t, "moe_layer_freq", 1, 1, &freq) ||
        mb_hf__int(h, t, "n_group", 1, 1, &m->groups) || mb_hf__int(h, t, "topk_group", 1, m->groups, &m->group_topk) ||
        mb_hf__int(h, t, "num_nextn_predict_layers", 0, 0, &m->mtp))
        return -1;
    if (freq != 1)
        return mb_hf__err(h, t, "moe_layer_freq", "\"moe_layer_freq\" = %ld: MoE on every %ld-th layer is not "
                          "supported; expected 1", freq, freq);
    m->shared = n_shared * m->moe_ffn;
    return 0;
}

static int mb_hf__moe(struct mb_hf *h, struct mb_hf__out *m)
{
    if (h->fam == MB_HF_QWEN2_MOE || h->fam == MB_HF_QWEN3_MOE)
        return mb_hf__moe_qwen(h, m);
    if (h->fam == MB_HF_DEEPSEEK_V3)
        return mb_hf__moe_deepseek(h, m);
    if (h->fam == MB_HF_MIXTRAL) {
        m->moe_ffn = m->ffn; /* Mixtral's experts are intermediate_size wide */
        return mb_hf__int(h, &h->tc, "num_local_experts", 1, -1, &m->experts) ||
               mb_hf__int(h, &h->tc, "num_experts_per_tok", 1, -1, &m->topk) ? -1 : 0;
    }
    return 0;
}

/* Qwen3-VL's vision_config (Qwen3VLVisionConfig / Qwen3VLMoeVisionConfig). */
/* Error at element i of array member `key` of object ob. */
static int mb_hf__err_elem(const struct mb_hf *h, const struct mb_hf__obj *ob, const char *key, size_t i,
                           const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static int mb_hf__err_elem(const struct mb_hf *h, const struct mb_hf__obj *ob, const char *key, size_t i,
                           const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t val;
    mb_hf__member(h->text, ob->off, key, &val);
    int line, col;
    mb_hf__linecol(h, mb_hf__element(h->text, val, i), &line, &col);
    return mb_err_set(h->err, h->path, line, col, "%s", msg);
}

/* Deepstack: the encoder blocks whose features Qwen3-VL adds to the first
 * len(indexes) decoder layers (Qwen3VLVisionModel keeps one merger per index;
 * the text model adds feature j at layer j). An index that is no block of the
 * encoder, a repeated one, or more of them than decoder layers cannot be
 * built as written: an error at the element. Absent: the class's (8, 16, 24). */
static int mb_hf__deepstack(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *v = &h->vc;
    static const long dflt[] = {8, 16, 24};
    json_t *ds = mb_hf__get(v, "deepstack_visual_indexes");
    if (!ds && json_object_get(v->o, "deepstack_visual_indexes"))
        return mb_hf__err(h, v, "deepstack_visual_indexes", "\"deepstack_visual_indexes\": null; expected a list of "
                          "encoder block indexes ([] for none)");
    if (ds && !json_is_array(ds))
        return mb_hf__err(h, v, "deepstack_visual_indexes", "\"deepstack_visual_indexes\": expected a list");
    size_t n = ds ? json_array_size(ds) : 3;
    for (size_t i = 0; i < n; i++) {
        json_t *e = ds ? json_array_get(ds, i) : NULL;
        if (ds && !json_is_integer(e))
            return mb_hf__err_elem(h, v, "deepstack_visual_indexes", i, "\"deepstack_visual_indexes\"[%zu]: expected "
                                   "an encoder block index (an integer)", i);
        long x = ds ? (long)json_integer_value(e) : dflt[i];
        if (x < 0 || x >= m->v_depth)
            return ds ? mb_hf__err_elem(h, v, "deepstack_visual_indexes", i, "\"deepstack_visual_indexes\"[%zu] = %ld: "
                                        "the encoder has blocks 0 to %ld (depth %ld)", i, x, m->v_depth - 1, m->v_depth)
                      : mb_hf__err(h, v, "depth", "\"depth\" = %ld: transformers' default deepstack_visual_indexes "
                                   "(8, 16, 24) need 25 blocks; give the indexes", m->v_depth);
        for (size_t j = 0; ds && j < i; j++)
            if (json_integer_value(json_array_get(ds, j)) == (json_int_t)x)
                return mb_hf__err_elem(h, v, "deepstack_visual_indexes", i, "\"deepstack_visual_indexes\"[%zu] = %ld "
                                       "repeats [%zu]: each block feeds one decoder layer", i, x, j);
    }
    if ((long)n > m->layers)
        return mb_hf__err(h, v, "deepstack_visual_indexes", "\"deepstack_visual_indexes\": %zu indexes, but the text "
                          "model has %ld layers to add them to", n, m->layers);
    m->v_deepstack = (long)n;
    return 0;
}

/* Qwen3-VL's vision_config (Qwen3VLVisionConfig / Qwen3VLMoeVisionConfig): its
 * model_type, when given, must be the root's vision class (qwen3_vl, or
 * qwen3_vl_moe / qwen3_vl_moe_vision under a qwen3_vl_moe root). */
static int mb_hf__vision(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *v = &h->vc;
    const char *rt = json_string_value(json_object_get(h->root.o, "model_type"));
    json_t *vt = mb_hf__get(v, "model_type");
    const char *type = vt ? json_string_value(vt) : rt;
    char vis[64];
    snprintf(vis, sizeof vis, "%s_vision", rt);
    if (!type || (strcmp(type, rt) && strcmp(type, vis)))
        return mb_hf__err(h, v, "model_type", "vision_config model_type '%s' under a %s config: expected %s or %s "
                          "(the root's vision class; other vision encoders are not supported)",
                          type ? type : "(not a string)", rt, rt, vis);
    if (mb_hf__int(h, v, "depth", 1, -1, &m->v_depth) || mb_hf__int(h, v, "hidden_size", 1, -1, &m->v_hidden) ||
        mb_hf__int(h, v, "num_heads", 1, -1, &m->v_heads) || mb_hf__int(h, v, "intermediate_size", 1, -1, &m->v_mlp) ||
        mb_hf__int(h, v, "patch_size", 1, -1, &m->v_patch) || mb_hf__int(h, v, "temporal_patch_size", 1, 2, &m->v_tpatch) ||
        mb_hf__int(h, v, "spatial_merge_size", 1, 2, &m->v_merge) || mb_hf__int(h, v, "out_hidden_size", 1, m->hidden, &m->v_out) ||
        mb_hf__int(h, v, "in_channels", 1, 3, &m->v_in) || mb_hf__deepstack(h, m))
        return -1;
    json_t *act = mb_hf__get(v, "hidden_act");
    const char *a = act ? json_string_value(act) : "gelu_pytorch_tanh";
    if (!a || strncmp(a, "gelu", 4))
        return mb_hf__err(h, v, "hidden_act", "vision_config \"hidden_act\": expected a GELU (the ViT MLP mbsim counts)");
    return 0;
}

static int mb_hf__read(struct mb_hf *h, struct mb_hf__out *m)
{
    struct mb_hf__obj *t = &h->tc;
    if (mb_hf__int(h, t, "num_hidden_layers", 1, -1, &m->layers) || mb_hf__int(h, t, "hidden_size", 1, -1, &m->hidden) ||
        mb_hf__int(h, t, "vocab_size", 1, -1, &m->vocab))
        return -1;
    int dense_layers = h->fam != MB_HF_QWEN2_MOE && h->fam != MB_HF_QWEN3_MOE && h->fam != MB_HF_DEEPSEEK_V3;
    if (mb_hf__int(h, t, "intermediate_size", 1, dense_layers ? -1 : 0, &m->ffn))
        return -1;
    /* Qwen3-VL keeps tie_word_embeddings at the top level */
    struct mb_hf__obj *tie = json_object_get(t->o, "tie_word_embeddings") ? t : &h->root;
    if (mb_hf__bool(h, tie, "tie_word_embeddings", 0, &m->tied) || mb_hf__activation(h, m) || mb_hf__attention(h, m) || mb_hf__moe(h, m) || mb_hf__sliding(h, m))
        return -1;
    mb_hf__use(t, "rms_norm_eps"); /* RMSNorm: every supported architecture */
    if (m->first_dense && !m->ffn)
        return mb_hf__err(h, t, "intermediate_size", "missing \"intermediate_size\": the leading dense layers need it");
    return h->vc.o ? mb_hf__vision(h, m) : 0;
}

/* ------------------------------------------------------------ output */

static void mb_hf__kv(FILE *y, const char *indent, const char *key, long v, int always)
{
    if (v || always)
        fprintf(y, "%s%s: %ld\n", indent, key, v);
}

static void mb_hf__write(const struct mb_hf *h, const char *name, const struct mb_hf__out *m, FILE *y)
{
    const char *base = strrchr(h->path, '/') ? strrchr(h->path, '/') + 1 : h->path;
    json_t *arch = json_array_get(json_object_get(h->root.o, "architectures"), 0);
    char src[600];
    snprintf(src, sizeof src, "Hugging Face %s (model_type %s%s%s), imported by mbsim import hf", base,
             json_string_value(json_object_get(h->root.o, "model_type")), arch ? ", " : "",
             arch && json_string_value(arch) ? json_string_value(arch) : "");
    fprintf(y, "# %s: imported from a Hugging Face config (`mbsim import hf`, docs/import.md).\n", name);
    fprintf(y, "name: %s\nsource: ", name);
    mb_yaml_write_quoted(y, src);
    fputc('\n', y);
    mb_hf__kv(y, "", "num_layers", m->layers, 1);
    mb_hf__kv(y, "", "hidden", m->hidden, 1);
    mb_hf__kv(y, "", "ffn_hidden", m->ffn, 0);
    mb_hf__kv(y, "", "num_heads", m->heads, 1);
    if (!m->mla) {
        mb_hf__kv(y, "", "num_kv_heads", m->kv, 1);
        mb_hf__kv(y, "", "head_dim", m->head_dim, 1);
    }
    mb_hf__kv(y, "", "vocab", m->vocab, 1);
    fprintf(y, "tied_embeddings: %s\nactivation: %s\nnorm: rmsnorm\n", m->tied ? "true" : "false", m->act);
    if (m->qk_norm)
        fprintf(y, "qk_norm: true\n");
    if (m->qkv_bias)
        fprintf(y, "qkv_bias: true\n");
    mb_hf__kv(y, "", "mtp_layers", m->mtp, 0);
    if (m->experts) {
        fprintf(y, "moe:\n");
        mb_hf__kv(y, "  ", "num_experts", m->experts, 1);
        mb_hf__kv(y, "  ", "topk", m->topk, 1);
        mb_hf__kv(y, "  ", "ffn_hidden", m->moe_ffn, 1);
        mb_hf__kv(y, "  ", "shared_ffn_hidden", m->shared, 0);
        mb_hf__kv(y, "  ", "first_dense_layers", m->first_dense, 0);
        if (m->groups > 1) {
            mb_hf__kv(y, "  ", "router_groups", m->groups, 1);
            mb_hf__kv(y, "  ", "router_group_topk", m->group_topk, 1);
        }
    }
    if (m->mla) {
        fprintf(y, "mla:\n");
        mb_hf__kv(y, "  ", "q_lora_rank", m->q_lora, 1);
        mb_hf__kv(y, "  ", "kv_lora_rank", m->kv_lora, 1);
        mb_hf__kv(y, "  ", "qk_head_dim", m->qk_head, 1);
        mb_hf__kv(y, "  ", "qk_rope_head_dim", m->qk_rope, 1);
        mb_hf__kv(y, "  ", "v_head_dim", m->v_head, 1);
    }
    if (m->window) {
        fprintf(y, "sliding_window:\n");
        mb_hf__kv(y, "  ", "window", m->window, 1);
        mb_hf__kv(y, "  ", "full_every", m->full_every, 1);
    }
    if (m->v_depth) {
        fprintf(y, "vision:\n");
        static const char *const k[] = {"depth", "hidden", "heads", "mlp", "patch", "temporal_patch",
                                        "spatial_merge", "deepstack", "out_hidden", "in_channels"};
        const long v[] = {m->v_depth, m->v_hidden, m->v_heads, m->v_mlp, m->v_patch, m->v_tpatch, m->v_merge,
                          m->v_deepstack, m->v_out, m->v_in};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            mb_hf__kv(y, "  ", k[i], v[i], 1);
    }
}

/* The keys of one object nobody used, one line each. */
static void mb_hf__report(const struct mb_hf *h, const struct mb_hf__obj *ob, const char *prefix, FILE *notes)
{
    const char *key;
    json_t *v;
    json_object_foreach(ob->o, key, v) {
        if (json_object_get(ob->used, key) || (ob == &h->root && h->tc.o != h->root.o &&
                                               (!strcmp(key, "text_config") || !strcmp(key, "vision_config"))))
            continue;
        const char *why = NULL;
        for (size_t i = 0; i < sizeof mb_hf__unmodelled / sizeof mb_hf__unmodelled[0]; i++)
            if (!strcmp(key, mb_hf__unmodelled[i].key))
                why = mb_hf__unmodelled[i].why;
        for (int i = 0; mb_hf__window_keys[i] && ob->o == h->tc.o && h->why_window[0]; i++)
            if (!strcmp(key, mb_hf__window_keys[i]))
                why = h->why_window;
        char *val = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        int line, col;
        mb_hf__pos(h, ob->off, key, &line, &col);
        fprintf(notes, "%s:%d: %s%s = %.60s%s: %s\n", h->path, line, prefix, key, val ? val : "?",
                val && strlen(val) > 60 ? "..." : "", why ? why : "unknown to mbsim, not imported");
        free(val);
    }
}

/* ------------------------------------------------------------ entry */

/* The model type, and with it the defaults (mb_hf__types). A vision-language
 * config's text model is built from the root's class (Qwen3VLConfig.sub_configs:
 * Qwen3VLTextConfig under qwen3_vl, Qwen3VLMoeTextConfig under qwen3_vl_moe),
 * whatever text_config's own model_type says: one that names the other class
 * (a dense text config under a MoE root) contradicts it and is an error. */
static int mb_hf__family(struct mb_hf *h)
{
    json_t *t = mb_hf__get(&h->tc, "model_type");
    h->type = t ? json_string_value(t) : NULL;
    if (h->tc.o != h->root.o) {
        const char *rt = json_string_value(json_object_get(h->root.o, "model_type"));
        const char *want = !strcmp(rt, "qwen3_vl") ? "qwen3_vl_text" : "qwen3_vl_moe_text";
        if (t && (!h->type || strcmp(h->type, want)))
            return mb_hf__err(h, &h->tc, "model_type", "text_config model_type '%s' under a %s config: transformers "
                              "builds the text model as %s (the root's class), so this text config contradicts it; "
                              "expected '%s' or none", h->type ? h->type : "(not a string)", rt, want, want);
        h->type = want;
    }
    for (size_t i = 0; h->type && i < sizeof mb_hf__types / sizeof mb_hf__types[0]; i++)
        if (!strcmp(h->type, mb_hf__types[i].type)) {
            h->fam = mb_hf__types[i].fam;
            h->t = &mb_hf__types[i];
            return 0;
        }
    return mb_hf__err(h, &h->tc, t ? "model_type" : "{", "model_type '%s': expected one of llama, mistral, qwen2, "
                      "qwen3, qwen2_moe, qwen3_moe, mixtral, deepseek_v3, qwen3_vl, qwen3_vl_moe",
                      h->type ? h->type : "(none)");
}

/* text_config / vision_config of a vision-language config. */
static int mb_hf__split(struct mb_hf *h)
{
    h->root.used = json_object();
    h->root.off = mb_hf__ws(h->text, 0);
    h->tc = h->root;
    json_t *tc = json_object_get(h->root.o, "text_config"), *vc = json_object_get(h->root.o, "vision_config");
    if (!tc && !vc)
        return 0;
    const char *rt = json_string_value(json_object_get(h->root.o, "model_type"));
    mb_hf__use(&h->root, "model_type");
    if (!rt || (strcmp(rt, "qwen3_vl") && strcmp(rt, "qwen3_vl_moe")))
        return mb_hf__err(h, &h->root, json_object_get(h->root.o, "model_type") ? "model_type" : "{",
                          "model_type '%s' with text_config/vision_config: expected qwen3_vl or qwen3_vl_moe",
                          rt ? rt : "(none)");
    if (!json_is_object(tc) || !json_is_object(vc))
        return mb_hf__err(h, &h->root, tc ? "vision_config" : "text_config",
                          "expected both text_config and vision_config objects");
    size_t tv, vv;
    mb_hf__member(h->text, h->root.off, "text_config", &tv);
    mb_hf__member(h->text, h->root.off, "vision_config", &vv);
    h->tc = (struct mb_hf__obj){tc, json_object(), tv};
    h->vc = (struct mb_hf__obj){vc, json_object(), vv};
    return 0;
}

/* The config as text: CRLF and lone CRs made LF (JSON takes both as blanks; positions count them as
 * line ends). A UTF-8 byte order mark is refused as transformers refuses it: it reads the file as
 * text and json.loads raises "Unexpected UTF-8 BOM (decode using utf-8-sig)". */
static char *mb_hf__slurp(const char *path, size_t *len_p, struct mb_err *err)
{
    char *buf;
    size_t n;
    if (mb_input_read(path, "a Hugging Face config.json", 0, &buf, &n, err))
        return NULL;
    if (n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
        mb_free(buf);
        mb_err_set(err, path, 1, 1, "a UTF-8 byte order mark: transformers refuses it (json.loads: \"Unexpected "
                   "UTF-8 BOM\"); save the file without it");
        return NULL;
    }
    *len_p = mb_input_unify_line_ends(buf, n);
    return buf;
}

/* The written model must load; the loader's message otherwise. */
static int mb_hf__check(const struct mb_hf *h, const char *yaml, size_t len)
{
    struct mb_err sub;
    mb_err_clear(&sub);
    struct mb_node *root = mb_yaml_load_string(yaml, len, "imported model", &sub);
    struct mb_model m;
    int rc = root ? mb_model_from_node(root, &m, &sub) : -1;
    if (!rc)
        mb_model_free(&m);
    mb_yaml_free(root);
    if (rc)
        return mb_err_set(h->err, h->path, 0, 0, "the imported model does not load: %s", sub.msg);
    return 0;
}

int mb_hf_import(const char *path, const char *name, FILE *out, FILE *notes, struct mb_err *err)
{
    struct mb_hf h = {.path = path, .err = err};
    if (!name || !*name || strlen(name) >= 64)
        return mb_err_set(err, NULL, 0, 0, "model name '%s': expected 1 to 63 characters", name ? name : "");
    size_t tlen;
    if (!(h.text = mb_hf__slurp(path, &tlen, err)))
        return -1;
    mb_hf__index_lines(&h);
    json_error_t je;
    h.root.o = json_loadb(h.text, tlen, 0, &je); /* the whole text: a NUL byte is an error, not the end */
    int rc = 0;
    if (!h.root.o)
        rc = mb_err_set(err, path, je.line, je.column, "invalid JSON: %s", je.text);
    else if (!json_is_object(h.root.o))
        rc = mb_err_set(err, path, 1, 1, "expected a JSON object (a transformers config.json)");
    if (!rc && notes)
        mb_hf__dups_in(&h, mb_hf__ws(h.text, 0), "", notes, 0);
    struct mb_hf__out m = {0};
    if (!rc)
        rc = mb_hf__split(&h) || mb_hf__family(&h) || mb_hf__read(&h, &m) ? -1 : 0;
    char *yaml = NULL;
    size_t len = 0;
    if (!rc) {
        FILE *y = open_memstream(&yaml, &len);
        mb_hf__write(&h, name, &m, y);
        fclose(y);
        rc = mb_hf__check(&h, yaml, len);
    }
    if (!rc && notes) {
        mb_hf__report(&h, &h.root, "", notes);
        if (h.tc.o != h.root.o) {
            mb_hf__report(&h, &h.tc, "text_config.", notes);
            mb_hf__report(&h, &h.vc, "vision_config.", notes);
        }
    }
    if (!rc)
        fwrite(yaml, 1, len, out);
    free(yaml);
    json_decref(h.root.used);
    if (h.tc.o != h.root.o) {
        json_decref(h.tc.used);
        json_decref(h.vc.used);
    }
    json_decref(h.root.o);
    mb_free(h.lines);
    mb_free(h.text);
    return rc;
}
