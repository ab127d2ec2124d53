/*
 * mb_keys.c -- the scenario key table (mb_keys.h) and everything driven by
 * it: defaults, value parsing from YAML nodes (the loader) and from text
 * (sweeps), formatting (the writer, reports) and the docs' key reference.
 *
 * The enum and flag name tables below are the only spelling of those values
 * in mbsim: the loader, `sweep --set`, the writer, tune's log and the reports
 * all go through them. Precision labels live here too (mb_precision_parse).
 */
#include "mb_keys.h"
#include "mb_coll.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ name tables */

static const struct mb_key_name mb_key__strategies[] = {{"3d", MB_STRAT_3D}, {"fsdp", MB_STRAT_FSDP}, {NULL, 0}};
static const struct mb_key_name mb_key__dispatchers[] = {
    {"alltoall", MB_DISP_ALLTOALL}, {"allgather", MB_DISP_ALLGATHER},
    {"hybridep", MB_DISP_HYBRIDEP}, {"deepep", MB_DISP_DEEPEP}, {NULL, 0}};
static const struct mb_key_name mb_key__routings[] = {
    {"balanced", MB_ROUTE_BALANCED}, {"skewed", MB_ROUTE_SKEWED}, {NULL, 0}};
static const struct mb_key_name mb_key__grans[] = {
    {"none", MB_RC_NONE}, {"selective", MB_RC_SELECTIVE}, {"full", MB_RC_FULL}, {NULL, 0}};
static const struct mb_key_name mb_key__methods[] = {{"uniform", MB_RC_UNIFORM}, {"block", MB_RC_BLOCK}, {NULL, 0}};
static const struct mb_key_name mb_key__rc_policies[] = {
    {"none", MB_RCP_NONE}, {"torchtitan_op", MB_RCP_TORCHTITAN_OP}, {"torchtitan_layer", MB_RCP_TORCHTITAN_LAYER},
    {NULL, 0}};
static const struct mb_key_name mb_key__rc_modules[] = {
    {"core_attn", MB_RCM_CORE_ATTN}, {"moe_act", MB_RCM_MOE_ACT},
    {"layernorm", MB_RCM_LAYERNORM}, {"mla_up_proj", MB_RCM_MLA_UP_PROJ},
    {"mlp", MB_RCM_MLP}, {"moe", MB_RCM_MOE}, {"shared_experts", MB_RCM_SHARED_EXPERTS},
    {"gdn_norm_out", MB_RCM_GDN_NORM_OUT}, {NULL, 0}};
/* `layer` and `full` are the legacy --cuda-graph-scope spellings of the whole
 * layer (= Megatron's empty --cuda-graph-modules list); `layer` is written. */
static const struct mb_key_name mb_key__cg_modules[] = {
    {"attn", MB_CG_ATTN}, {"mlp", MB_CG_MLP}, {"moe", MB_CG_MOE},
    {"moe_router", MB_CG_MOE_ROUTER}, {"moe_preprocess", MB_CG_MOE_PREPROCESS},
    {"mamba", MB_CG_MAMBA}, {"layer", MB_CG_LAYER}, {"full", MB_CG_LAYER},
    {"full_iteration", MB_CG_FULL_ITERATION}, {NULL, 0}};
static const struct mb_key_name mb_key__freezes[] = {
    {"vision", MB_FREEZE_VISION}, {"vision_projection", MB_FREEZE_VISION_PROJ},
    {"language", MB_FREEZE_LANGUAGE}, {NULL, 0}};
static const struct mb_key_name mb_key__lora_targets[] = {
    {"linear_qkv", MB_LORA_QKV}, {"linear_proj", MB_LORA_PROJ}, {"linear_fc1", MB_LORA_FC1},
    {"linear_fc2", MB_LORA_FC2}, {"linear_q_proj", MB_LORA_Q_PROJ}, {"linear_q_down_proj", MB_LORA_Q_DOWN},
    {"linear_q_up_proj", MB_LORA_Q_UP}, {"linear_kv_down_proj", MB_LORA_KV_DOWN},
    {"linear_kv_up_proj", MB_LORA_KV_UP}, {NULL, 0}};

unsigned mb_lora_target_bit(const char *op)
{
    for (const struct mb_key_name *n = mb_key__lora_targets; n->name; n++)
        if (!strcmp(op, n->name))
            return n->val;
    return 0;
}
static const struct mb_key_name mb_key__packings[] = {{"padded", 0}, {"packed", 1}, {NULL, 0}};
/* Megatron --cp-comm-type: p2p (ring attention) or a2a (DeepSpeed-Ulysses style) */
static const struct mb_key_name mb_key__cp_comm[] = {{"p2p", 0}, {"a2a", 1}, {NULL, 0}};
/* bytes per parameter: main gradients, and Adam's two moments together */
static const struct mb_key_name mb_key__grad_dtypes[] = {{"fp32", 4}, {"bf16", 2}, {NULL, 0}};
static const struct mb_key_name mb_key__state_dtypes[] = {{"fp32", 8}, {"bf16", 4}, {NULL, 0}};
static const struct mb_key_name mb_key__fsdp_impls[] = {
    {"megatron_fsdp", MB_FSDP_MEGATRON}, {"torch_fsdp2", MB_FSDP_TORCH2}, {NULL, 0}};
static const struct mb_key_name mb_key__attn_backends[] = {
    {"auto", MB_ATTN_AUTO},       {"flash", MB_ATTN_FLASH},   {"fused", MB_ATTN_FUSED},
    {"flash2", MB_ATTN_FLASH2},   {"flash3", MB_ATTN_FLASH3}, {"triton", MB_ATTN_TRITON},
    {"unfused", MB_ATTN_UNFUSED}, {"local", MB_ATTN_LOCAL},   {NULL, 0}};
static const struct mb_key_name mb_key__ce_impls[] = {{"native", MB_CE_NATIVE}, {"te", MB_CE_TE}, {NULL, 0}};
/* NCCL_ALGO names for all_reduce (sim/engine/mb_coll.h) */
static const struct mb_key_name mb_key__ar_algos[] = {
    {"auto", MB_COLL_ALGO_AUTO}, {"ring", MB_COLL_ALGO_RING},
    {"tree", MB_COLL_ALGO_TREE}, {"nvls", MB_COLL_ALGO_NVLS}, {NULL, 0}};

static unsigned mb_key__lookup(const struct mb_key_name *t, const char *s, int *found)
{
    for (; t && t->name; t++)
        if (strcasecmp(t->name, s) == 0) {
            *found = 1;
            return t->val;
        }
    *found = 0;
    return 0;
}

static void mb_key__names_list(const struct mb_key_name *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; t && t[i].name && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", t[i].name);
}

unsigned mb_recompute_module(const char *name)
{
    int found;
    return name ? mb_key__lookup(mb_key__rc_modules, name, &found) : 0;
}

unsigned mb_cuda_graph_module(const char *name)
{
    int found;
    return name ? mb_key__lookup(mb_key__cg_modules, name, &found) : 0;
}

/* -------------------------------------------------------------- precision */

struct mb_key__prec {
    const char *label;      /* canonical label stored in mb_precision.label */
    enum mb_prec gemm, attn;
    int quantize;
    int preset_pg;          /* the publishers' preset sets fp8_param_gather (mb_precision_preset_param_gather) */
    int fp8_tensor;         /* TE's Float8Tensor / Float8BlockwiseTensor recipe (mb_precision_fp8_tensor) */
    double gather_bytes;    /* bytes per element TE all-gathers a GEMM input in (mb_precision_gather_bytes):
                               the data and its block scales */
};

/* Canonical recipes. Core attention stays BF16 in every FP8/FP4 recipe
 * (Transformer Engine runs the fused attention in BF16 unless fp8 DPA is
 * requested, which published recipes do not). */
static const struct mb_key__prec mb_key__precs[] = {
    {"bf16", MB_PREC_BF16, MB_PREC_BF16, 0, 0, 0, 2},
    {"fp16", MB_PREC_FP16, MB_PREC_FP16, 0, 0, 0, 2},
    {"fp8", MB_PREC_FP8, MB_PREC_BF16, 1, 1, 1, 1},                      /* delayed / per-tensor scaling */
    {"fp8_cs", MB_PREC_FP8, MB_PREC_BF16, 1, 1, 1, 1},                   /* per-tensor current scaling */
    {"fp8_blockwise", MB_PREC_FP8, MB_PREC_BF16, 1, 0, 1, 1 + 4.0 / 128}, /* 1x128 / 128x128 blocks, FP32 scales */
    {"mxfp8", MB_PREC_FP8, MB_PREC_BF16, 1, 1, 0, 1 + 1.0 / 32},         /* MX 1x32 E8M0 scales (Blackwell) */
    {"nvfp4", MB_PREC_FP4, MB_PREC_BF16, 1, 0, 0, 0.5 + 1.0 / 16},       /* 16-element blocks, E4M3 scales */
    {NULL, MB_PREC_BF16, MB_PREC_BF16, 0, 0, 0, 2}};

/* The table's row of p's label (the terminator's for an unknown one or NULL). */
static const struct mb_key__prec *mb_key__prec_row(const struct mb_precision *p)
{
    const struct mb_key__prec *r = mb_key__precs;
    while (r->label && (!p || strcmp(p->label, r->label)))
        r++;
    return r;
}

int mb_precision_preset_param_gather(const struct mb_precision *p)
{
    return mb_key__prec_row(p)->preset_pg;
}

int mb_precision_fp8_tensor(const struct mb_precision *p)
{
    return mb_key__prec_row(p)->fp8_tensor;
}

double mb_precision_gather_bytes(const struct mb_precision *p)
{
    return p && p->quantize ? mb_key__prec_row(p)->gather_bytes : 2.0;
}

/* Other spellings (after normalization: lower case, '-' and ' ' -> '_'),
 * from the measured-runs CSV and Megatron/NeMo recipe names. */
static const struct {
    const char *alias, *label;
} mb_key__prec_alias[] = {
    {"fp8_delayed", "fp8"}, {"fp8_tensorwise", "fp8"}, {"fp8_ds", "fp8"},
    {"fp8_current_scaling", "fp8_cs"}, {"fp8_mx", "mxfp8"}, {"mx_fp8", "mxfp8"},
    {"fp8_block", "fp8_blockwise"}, {"fp8_block_scaling", "fp8_blockwise"},
    {"bfloat16", "bf16"}, {"float16", "fp16"}, {NULL, NULL}};

int mb_precision_parse(const char *label, struct mb_precision *out)
{
    if (!label || !out)
        return -1;
    /* normalize: drop parenthesized parts, trim, lower-case, '-'/' ' -> '_' */
    char buf[128];
    size_t n = 0;
    int depth = 0;
    for (const char *p = label; *p && n + 1 < sizeof buf; p++) {
        if (*p == '(') {
            depth++;
            continue;
        }
        if (*p == ')') {
            if (depth > 0)
                depth--;
            continue;
        }
        if (depth)
            continue;
        char c = (char)tolower((unsigned char)*p);
        buf[n++] = (c == '-' || c == ' ' || c == '\t') ? '_' : c;
    }
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '_')
        buf[--n] = 0;
    const char *s = buf;
    while (*s == '_')
        s++;
    for (size_t i = 0; mb_key__prec_alias[i].alias; i++)
        if (strcmp(s, mb_key__prec_alias[i].alias) == 0) {
            s = mb_key__prec_alias[i].label;
            break;
        }
    for (const struct mb_key__prec *r = mb_key__precs; r->label; r++)
        if (strcmp(s, r->label) == 0) {
            memset(out, 0, sizeof *out);
            snprintf(out->label, sizeof out->label, "%s", r->label);
            out->gemm = r->gemm;
            out->attn = r->attn;
            out->quantize = r->quantize;
            return 0;
        }
    return -1;
}

static void mb_key__prec_list(char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; mb_key__precs[i].label && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", mb_key__precs[i].label);
}

/* ------------------------------------------------------------ value rules */

static int mb_key__check_capacity(const struct mb_scenario *s, char *msg, size_t len)
{
    if (s->capacity_factor > 0 && s->capacity_factor < 1) {
        snprintf(msg, len, "moe.capacity_factor = %g: below 1 even balanced routing would drop tokens; "
                 "use >= 1, or 0 for dropless", s->capacity_factor);
        return -1;
    }
    return 0;
}

static int mb_key__check_cuda_graph(const struct mb_scenario *s, char *msg, size_t len)
{
    unsigned u = s->cuda_graph;
    if ((u & MB_CG_FULL_ITERATION) && u != MB_CG_FULL_ITERATION) {
        snprintf(msg, len, "cuda_graph.modules: full_iteration cannot be combined with other modules");
        return -1;
    }
    if ((u & MB_CG_LAYER) && u != MB_CG_LAYER) {
        snprintf(msg, len, "cuda_graph.modules: layer (whole layer) cannot be combined with other modules");
        return -1;
    }
    return 0;
}

static int mb_key__check_text(const struct mb_scenario *s, char *msg, size_t len)
{
    if (s->mock && s->text_max > 0) {
        snprintf(msg, len, "data.text_tokens describes real samples; mock data fills whole sequences");
        return -1;
    }
    return 0;
}

static int mb_key__if_tp(const struct mb_scenario *s) { return s->tp > 1; }
static int mb_key__if_selective(const struct mb_scenario *s) { return s->recompute == MB_RC_SELECTIVE; }
static int mb_key__if_full(const struct mb_scenario *s) { return s->recompute == MB_RC_FULL; }
static int mb_key__if_layer_sac(const struct mb_scenario *s) { return s->rc_policy == MB_RCP_TORCHTITAN_LAYER; }
static int mb_key__if_real(const struct mb_scenario *s) { return !s->mock; }
static int mb_key__if_fsdp(const struct mb_scenario *s) { return s->strategy == MB_STRAT_FSDP; }
static int mb_key__if_fsdp2(const struct mb_scenario *s)
{
    return s->strategy == MB_STRAT_FSDP && s->fsdp_impl == MB_FSDP_TORCH2;
}
static int mb_key__if_mfsdp(const struct mb_scenario *s)
{
    return s->strategy == MB_STRAT_FSDP && s->fsdp_impl == MB_FSDP_MEGATRON;
}
/* dispatcher_sms: only the dispatchers whose kernels occupy SMs */
static int mb_key__if_sm_dispatcher(const struct mb_scenario *s)
{
    return s->dispatcher == MB_DISP_HYBRIDEP || s->dispatcher == MB_DISP_DEEPEP;
}
static int mb_key__if_ce_fusion(const struct mb_scenario *s) { return s->ce_fusion; }
static int mb_key__if_quantized(const struct mb_scenario *s) { return s->prec.quantize; }
static int mb_key__if_defer_wgrad(const struct mb_scenario *s) { return s->defer_wgrad; }
static int mb_key__if_attn_scores(const struct mb_scenario *s)
{
    return s->attn_backend == MB_ATTN_UNFUSED || s->attn_backend == MB_ATTN_LOCAL;
}

/* ------------------------------------------------------------------ table */

#define F_(m) .offset = offsetof(struct mb_scenario, m), .size = sizeof(((struct mb_scenario *)0)->m)
#define SW MB_KEYF_SWEEP
#define SH MB_KEYF_SHOW

_Static_assert(sizeof(enum mb_strategy) == sizeof(int) && sizeof(enum mb_dispatcher) == sizeof(int) &&
                   sizeof(enum mb_routing) == sizeof(int) && sizeof(enum mb_rc_gran) == sizeof(int) &&
                   sizeof(enum mb_rc_method) == sizeof(int) && sizeof(enum mb_fsdp_impl) == sizeof(int) &&
                   sizeof(enum mb_ce_impl) == sizeof(int) && sizeof(enum mb_attn_backend) == sizeof(int),
               "enum keys are stored as int");
_Static_assert(offsetof(struct mb_scenario, text_max) == offsetof(struct mb_scenario, text_min) + sizeof(int),
               "range keys: max follows min");

static const struct mb_key mb_key__table[] = {
    {.key = "schema_version", .type = MB_KEY_SPECIAL, .flags = MB_KEYF_REQUIRED, .def_text = "—",
     .doc = "the schema the file was written for: `1` or `2` (the current one); checked before anything else. "
            "A key whose default changed since the file's schema, left out, gets its old default with a "
            "warning (Schema versions, below)"},
    {.key = "name", .type = MB_KEY_STRING, F_(name), .flags = MB_KEYF_REQUIRED, .def_text = "—",
     .doc = "scenario name (not empty)"},
    {.key = "model", .type = MB_KEY_SPECIAL, F_(model_ref), .flags = MB_KEYF_REQUIRED | MB_KEYF_REF | SW,
     .def_text = "—",
     .doc = "a shipped model name (`workloads/models/NAME.yaml`), a path (contains `/` or ends in `.yaml`/`.yml`; "
            "relative to the scenario file's folder, or absolute), or an inline mapping with the keys of a "
            "model file"},
    {.key = "system.preset", .alias = "system", .type = MB_KEY_STRING, F_(system_ref),
     .flags = MB_KEYF_REQUIRED | MB_KEYF_SECTION_REQ | MB_KEYF_REF | SW, .def_text = "—",
     .doc = "preset name (`topology/systems/NAME.yaml`: `dgx_h100`, `gb200_nvl72`, ...) or a path (same rule "
            "as `model`)"},
    {.key = "system.gpus", .alias = "gpus", .type = MB_KEY_INT, F_(gpus),
     .flags = MB_KEYF_REQUIRED | MB_KEYF_SECTION_REQ | SW | SH, .min = 1, .max = 1e6, .def_text = "—",
     .doc = "GPUs used; at most the preset's `max_gpus` when it sets one"},
    {.key = "precision", .type = MB_KEY_PRECISION, F_(prec), .flags = SW | SH, .def_text = "bf16",
     .doc = "precision recipe (see Precision)"},
    {.key = "data.seq_length", .alias = "seq_length", .type = MB_KEY_INT, F_(seq_length),
     .flags = MB_KEYF_REQUIRED | MB_KEYF_SECTION_REQ | SW | SH, .min = 1, .max = 1e8, .def_text = "—",
     .doc = "tokens per sequence (LLM positions, image tokens included)",
     .megatron = "seq_length", .bridge = "model.seq_length"},
    {.key = "data.global_batch_size", .alias = "gbs", .type = MB_KEY_INT, F_(global_batch_size),
     .flags = MB_KEYF_REQUIRED | MB_KEYF_SECTION_REQ | SW | SH, .min = 1, .max = 1e9, .def_text = "—",
     .doc = "sequences per optimizer step",
     .megatron = "global_batch_size", .bridge = "train.global_batch_size"},
    {.key = "data.micro_batch_size", .alias = "mbs", .type = MB_KEY_INT, F_(micro_batch_size), .flags = SW | SH,
     .min = 1, .max = 1e6, .def = 1, .doc = "sequences per microbatch per DP rank",
     .megatron = "micro_batch_size", .bridge = "train.micro_batch_size"},
    {.key = "data.mock", .type = MB_KEY_BOOL, F_(mock), .flags = SW | SH, .def = 0,
     .doc = "image-free mock data (for a VLM: no vision work at all)"},
    {.key = "data.images", .type = MB_KEY_SPECIAL, F_(images), .applies = mb_key__if_real, .def_text = "none",
     .doc = "image payload of real VLM data (see `images` below)"},
    {.key = "data.packing", .type = MB_KEY_ENUM, F_(packed), .flags = SW, .names = mb_key__packings, .def = 0,
     .doc = "padded: one sample per sequence, padded to `seq_length`; packed: samples concatenated greedily, "
            "attention within each sample (THD)"},
    {.key = "data.text_tokens", .type = MB_KEY_RANGE, .offset = offsetof(struct mb_scenario, text_min),
     .size = 2 * sizeof(int), .flags = SW, .min = 1, .max = 1e8, .def = 0, .def_text = "none",
     .check = mb_key__check_text, .applies = mb_key__if_real,
     .doc = "text tokens per real sample, uniform in [min, max], at most `seq_length`; without it each sample "
            "fills its sequence. Not with `mock: true`"},
    {.key = "parallel.strategy", .alias = "strategy", .type = MB_KEY_ENUM, F_(strategy), .flags = SW | SH,
     .names = mb_key__strategies, .def = MB_STRAT_3D,
     .doc = "distributed-optimizer 3D layout, or FSDP (parameters, grads, optimizer state sharded over DP)"},
    {.key = "parallel.tp", .alias = "tp", .type = MB_KEY_INT, F_(tp), .flags = SW | SH, .min = 1, .max = 65536,
     .def = 1, .doc = "tensor-parallel size",
     .megatron = "tensor_model_parallel_size", .bridge = "model.tensor_model_parallel_size"},
    {.key = "parallel.pp", .alias = "pp", .type = MB_KEY_INT, F_(pp), .flags = SW | SH, .min = 1, .max = 65536,
     .def = 1, .doc = "pipeline-parallel size",
     .megatron = "pipeline_model_parallel_size", .bridge = "model.pipeline_model_parallel_size"},
    {.key = "parallel.vpp", .alias = "vpp", .type = MB_KEY_INT, F_(vpp), .flags = SW | SH, .min = 1,
     .max = 65536, .def = 1, .doc = "virtual-pipeline size (interleaved chunks per stage)",
     .megatron = "num_virtual_stages_per_pipeline_rank", .bridge = "model.virtual_pipeline_model_parallel_size"},
    {.key = "parallel.cp", .alias = "cp", .type = MB_KEY_INT, F_(cp), .flags = SW | SH, .min = 1, .max = 65536,
     .def = 1, .doc = "context-parallel size",
     .megatron = "context_parallel_size", .bridge = "model.context_parallel_size"},
    {.key = "parallel.ep", .alias = "ep", .type = MB_KEY_INT, F_(ep), .flags = SW | SH, .min = 1, .max = 65536,
     .def = 1, .doc = "expert-parallel size",
     .megatron = "expert_model_parallel_size", .bridge = "model.expert_model_parallel_size"},
    {.key = "parallel.etp", .alias = "etp", .type = MB_KEY_INT, F_(etp), .flags = SW | SH, .min = 1,
     .max = 65536, .def = 1, .doc = "expert-tensor-parallel size",
     .megatron = "expert_tensor_parallel_size", .bridge = "model.expert_tensor_parallel_size"},
    {.key = "parallel.pipeline_layout", .type = MB_KEY_LAYOUT, F_(pipeline_layout), .flags = SW,
     .def_text = "none (even split)",
     .doc = "Megatron `--pipeline-model-parallel-layout`: `E` embedding, `t` decoder layer, `m` MTP layer, "
            "`L` loss, `|` stage boundary, `X*N` and `(...)*N` repeats",
     .megatron = "pipeline_model_parallel_layout", .bridge = "model.pipeline_model_parallel_layout"},
    {.key = "parallel.cp_comm_type", .type = MB_KEY_ENUM, F_(cp_a2a), .flags = SW, .names = mb_key__cp_comm,
     .def = 0, .doc = "context-parallel attention: ring attention (p2p) or Ulysses all-to-alls (a2a)",
     .megatron = "cp_comm_type", .bridge = "model.cp_comm_type"},
    {.key = "parallel.fsdp_impl", .type = MB_KEY_ENUM, F_(fsdp_impl), .flags = SW, .names = mb_key__fsdp_impls,
     .def = MB_FSDP_MEGATRON, .applies = mb_key__if_fsdp,
     .doc = "strategy fsdp: Megatron-FSDP (`--use-megatron-fsdp`: bf16 + fp32 main weights sharded, the "
            "gathered parameters and unreduced gradients its pipelines hold) or PyTorch FSDP2 (`fully_shard` with "
            "MixedPrecisionPolicy(bf16, reduce fp32): fp32 sharded parameters, bf16 gathers)"},
    {.key = "parallel.fsdp_reshard_after_forward", .type = MB_KEY_BOOL, F_(fsdp_reshard_after_forward),
     .flags = SW, .def = 1, .applies = mb_key__if_fsdp2,
     .doc = "FSDP2 `reshard_after_forward`; `false` keeps every layer's gathered bf16 parameters from its "
            "forward to its backward (memory only: the backward gathers are still simulated)"},
    {.key = "parallel.fsdp_sharded_dtype", .type = MB_KEY_ENUM, F_(fsdp_sharded_bytes), .flags = SW,
     .names = mb_key__grad_dtypes, .def = 4, .applies = mb_key__if_fsdp2,
     .doc = "FSDP2: dtype of the sharded parameters, the dtype the model was built in (`MixedPrecisionPolicy` "
            "keeps the sharded parameter in its original dtype); the sharded gradients (cast back after the "
            "reduce-scatter) and torch.optim.Adam's moments (`zeros_like` the parameter) follow it. `fp32`: "
            "fp32 master weights; `bf16`: a model built in bf16, as NeMo AutoModel builds it"},
    {.key = "parallel.fsdp_requires_gradient_sync", .type = MB_KEY_BOOL, F_(fsdp_grad_sync), .flags = SW,
     .def = 1, .applies = mb_key__if_fsdp2,
     .doc = "FSDP2 `set_requires_gradient_sync`; `false`: only the step's last microbatch reduce-scatters (as NeMo "
            "AutoModel runs gradient accumulation), the others keep every FSDP-managed parameter's unsharded "
            "gradient, accumulated in the fp32 reduce dtype"},
    {.key = "parallel.fsdp_reshard_after_backward", .type = MB_KEY_BOOL, F_(fsdp_reshard_after_backward),
     .flags = SW, .def = 1, .applies = mb_key__if_fsdp2,
     .doc = "FSDP2 `set_reshard_after_backward`; `false` keeps every layer's gathered bf16 parameters from its "
            "backward to the step's end (memory only: the gathers are still simulated)"},
    {.key = "parallel.fsdp_double_buffer", .type = MB_KEY_BOOL, F_(fsdp_double_buffer), .flags = SW, .def = 0,
     .applies = mb_key__if_mfsdp, .megatron = "fsdp_double_buffer", .bridge = "ddp.fsdp_double_buffer",
     .doc = "Megatron-FSDP `--fsdp-double-buffer` (set by `--use-nccl-ub`): two persistent buffers each for the "
            "gathered parameters and the unreduced gradients; `false`: the all-gather prefetch and "
            "reduce-scatter queue sized by `fsdp_communication_unit_size`"},
    {.key = "parallel.fsdp_keep_fp8_transpose_cache", .type = MB_KEY_BOOL, F_(fsdp_keep_fp8_transpose), .flags = SW,
     .def = 0, .applies = mb_key__if_mfsdp, .megatron = "keep_fp8_transpose_cache",
     .bridge = "ddp.keep_fp8_transpose_cache",
     .doc = "Megatron-FSDP `--keep-fp8-transpose-cache`: every FP8 parameter (`training.fp8_param_gather` under "
            "a per-tensor or blockwise FP8 precision) keeps its transposed FP8 copy, unsharded, for the step: "
            "1 byte per decoder linear weight on the rank (none on Blackwell, whose FP8 GEMMs need no "
            "transpose, nor under MXFP8/NVFP4). Memory only"},
    {.key = "parallel.fsdp_communication_unit_size", .type = MB_KEY_INT, F_(fsdp_unit_size), .flags = SW,
     .min = 0, .max = 2000000000, .def = 0, .def_text = "0 (max(1e9, 2 x mean layer size))",
     .applies = mb_key__if_mfsdp, .megatron = "suggested_communication_unit_size",
     .bridge = "ddp.suggested_communication_unit_size",
     .doc = "Megatron-FSDP `--suggested-communication-unit-size` (parameters): the reduce-scatter queue holds "
            "unreduced gradients up to it, the all-gather prefetches half of it"},
    {.key = "parallel.sequence_parallel", .type = MB_KEY_BOOL, F_(sequence_parallel), .flags = SW, .def = -1,
     .def_text = "on when tp > 1", .applies = mb_key__if_tp,
     .doc = "Megatron sequence parallel; forced off at tp = 1",
     .megatron = "sequence_parallel", .bridge = "model.sequence_parallel"},
    {.key = "moe.dispatcher", .alias = "dispatcher", .type = MB_KEY_ENUM, F_(dispatcher), .flags = SW,
     .names = mb_key__dispatchers, .def = MB_DISP_ALLTOALL, .doc = "token dispatcher"},
    {.key = "moe.routing", .type = MB_KEY_ENUM, F_(routing), .flags = SW, .names = mb_key__routings,
     .def = MB_ROUTE_BALANCED, .doc = "forced-balanced (as in published benchmarks) or seeded skew"},
    {.key = "moe.skew", .type = MB_KEY_DOUBLE, F_(routing_skew), .flags = SW, .min = 0, .max = 100, .def = 1.0,
     .doc = "skewed routing: Zipf exponent over experts"},
    {.key = "moe.seed", .type = MB_KEY_U64, F_(routing_seed), .flags = SW, .min = 0, .max = 1e18, .def = 1,
     .doc = "routing seed"},
    /* HybridEP README (shared/docs/reference/hardware.md B.4): GB200 MNNVL runs
     * use 32 SMs, B200/H100 runs 8-16; DeepEP V2 min-SM mode 24. */
    {.key = "moe.dispatcher_sms", .type = MB_KEY_INT, F_(dispatcher_sms), .flags = SW, .min = 1, .max = 1024,
     .def = 24, .applies = mb_key__if_sm_dispatcher,
     .doc = "SMs a HybridEP/DeepEP kernel occupies; at most the GPU's SM count (its calibration table's `sms`)"},
    {.key = "moe.capacity_factor", .type = MB_KEY_DOUBLE, F_(capacity_factor), .flags = SW, .min = 0,
     .max = 1000, .def = 0, .def_text = "0 (dropless)", .check = mb_key__check_capacity,
     .doc = "Megatron `--moe-expert-capacity-factor`: no expert takes more than cf x its balanced share; "
            "0 or >= 1",
     .megatron = "moe_expert_capacity_factor", .bridge = "model.moe_expert_capacity_factor"},
    {.key = "moe.shared_expert_overlap", .type = MB_KEY_BOOL, F_(shared_expert_overlap), .flags = SW, .def = 0,
     .doc = "Megatron `--moe-shared-expert-overlap`: shared experts run beside the dispatch",
     .megatron = "moe_shared_expert_overlap", .bridge = "model.moe_shared_expert_overlap"},
    /* --moe-permute-fusion-into-hybridep: published HybridEP runs enable it
     * (e.g. public_measured.csv mbcard_qwen3_30b_a3b_h100_bf16_16 "HybridEP 32
     * SMs, ..., permute fusion") */
    {.key = "moe.hybridep_permute_fusion", .type = MB_KEY_BOOL, F_(hybridep_permute_fusion), .flags = SW,
     .def = 1, .doc = "Megatron `--moe-permute-fusion-into-hybridep`: no separate permute/unpermute pass",
     .megatron = "moe_permute_fusion_into_hybridep", .bridge = "model.moe_permute_fusion_into_hybridep"},
    /* --moe-permute-fusion / --moe-router-fusion (Megatron-LM's defaults: both off). mbsim's
     * permute default is on, as it priced the permute before the key existed and as Megatron-Bridge's
     * MoE performance recipes run (public_measured.csv: every Bridge MoE row that states it says
     * permute_fusion=True); import megatron reads an absent flag as off (mb_megatron_lm_default) */
    {.key = "moe.permute_fusion", .type = MB_KEY_BOOL, F_(permute_fusion), .flags = SW, .def = 1,
     .doc = "Megatron `--moe-permute-fusion`: TE's fused permute and unpermute (off: Megatron-Core's PyTorch "
            "ops, more kernels and a gather per routed copy)",
     .megatron = "moe_permute_fusion", .bridge = "model.moe_permute_fusion"},
    {.key = "moe.router_fusion", .type = MB_KEY_BOOL, F_(router_fusion), .flags = SW, .def = 0,
     .doc = "Megatron `--moe-router-fusion`: TE's fused top-k/score and aux-loss kernels (3 forward, 3 "
            "backward) instead of the PyTorch op sequence (about 12 and 8)",
     .megatron = "moe_router_fusion", .bridge = "model.moe_router_fusion"},
    {.key = "moe.pad_expert_input_to_capacity", .type = MB_KEY_BOOL, F_(pad_to_capacity), .flags = SW, .def = 0,
     .doc = "Megatron `--moe-pad-expert-input-to-capacity` (drop-and-pad, needs `capacity_factor`): "
            "all-to-all buffers padded to the capacity (memory only)",
     .megatron = "moe_pad_expert_input_to_capacity", .bridge = "model.moe_pad_expert_input_to_capacity"},
    {.key = "recompute.granularity", .alias = "recompute", .type = MB_KEY_ENUM, F_(recompute), .flags = SW | SH,
     .names = mb_key__grans, .def = MB_RC_NONE, .def_text = "none (selective if only `modules` is given)",
     .doc = "Megatron `--recompute-granularity`",
     .megatron = "recompute_granularity", .bridge = "model.recompute_granularity"},
    {.key = "recompute.modules", .type = MB_KEY_FLAGS, F_(recompute_modules), .flags = SW,
     .names = mb_key__rc_modules, .def = 0, .def_text = "[core_attn] when selective",
     .applies = mb_key__if_selective, .doc = "Megatron `--recompute-modules`; selective only",
     .megatron = "recompute_modules", .bridge = "model.recompute_modules"},
    {.key = "recompute.method", .type = MB_KEY_ENUM, F_(recompute_method), .flags = SW, .names = mb_key__methods,
     .def = MB_RC_UNIFORM, .applies = mb_key__if_full, .doc = "Megatron `--recompute-method`; full only",
     .megatron = "recompute_method", .bridge = "model.recompute_method"},
    {.key = "recompute.num_layers", .type = MB_KEY_INT, F_(recompute_num_layers), .flags = SW, .min = 0,
     .max = 100000, .def = 0, .def_text = "0 (all layers of the stage)", .applies = mb_key__if_full,
     .doc = "full only; at most the layers per pipeline stage",
     .megatron = "recompute_num_layers", .bridge = "model.recompute_num_layers"},
    {.key = "recompute.policy", .type = MB_KEY_ENUM, F_(rc_policy), .flags = SW, .names = mb_key__rc_policies,
     .def = MB_RCP_NONE, .def_text = "none",
     .doc = "op-level selective activation checkpointing of every decoder layer as a named preset: "
            "`torchtitan_op` is torchtitan's `selective_ac_option = \"op\"` (each layer keeps its input and the "
            "outputs of the ops on the save list -- odd-numbered `aten.mm`s, SDPA, TP reduce-scatters -- and "
            "re-runs every other op before its backward); `torchtitan_layer` is its integer option: every "
            "`every`-th layer of a rank is checkpointed whole (keeps its input, re-runs its forward). Not with "
            "`granularity` selective/full; `torchtitan_op` on dense softmax-attention models with a fused "
            "attention backend"},
    {.key = "recompute.every", .type = MB_KEY_INT, F_(rc_every), .flags = SW, .min = 1, .max = 100000, .def = 1,
     .applies = mb_key__if_layer_sac,
     .doc = "`policy: torchtitan_layer` only: torchtitan's integer `selective_ac_option` N, the layers a rank "
            "builds counted from 1 and those at a multiple of N checkpointed (1 = every layer)"},
    {.key = "cuda_graph.modules", .alias = "cuda_graph", .type = MB_KEY_FLAGS, F_(cuda_graph),
     .flags = MB_KEYF_REQUIRED | MB_KEYF_SCALAR_OK | SW, .names = mb_key__cg_modules, .def = 0,
     .empty = MB_CG_LAYER, .def_text = "none (no CUDA graphs)", .check = mb_key__check_cuda_graph,
     .doc = "Megatron `--cuda-graph-modules`; `[]`, `layer` or legacy `full` = whole layer, `full_iteration` "
            "alone; in a sweep `none` = no CUDA graphs"},
    {.key = "cuda_graph.reuse_buffers", .type = MB_KEY_BOOL, F_(cg_reuse_buffers), .flags = SW, .def = 1,
     .doc = "scoped graphs: Megatron-Core passes TE >= 2.7 `_reuse_graph_input_output_buffers=True`; false = "
            "TE < 2.7, each captured layer keeps its static output, grad output and grad input per microbatch"},
    {.key = "freeze", .type = MB_KEY_FLAGS, F_(freeze), .flags = SW, .names = mb_key__freezes, .def = 0,
     .def_text = "none", .doc = "frozen parts: no weight gradients, no optimizer state"},
    {.key = "peft.lora_rank", .type = MB_KEY_INT, F_(lora_rank), .flags = SW, .min = 0, .max = 65536, .def = 0,
     .doc = "LoRA adapters of rank r on the frozen language model (needs `freeze: [language]`; Megatron-Bridge "
            "`peft=LoRA(dim=r)`): each target linear gains x A B scaled and added to its output, in BF16; "
            "0 = none",
     .bridge = "peft.dim"},
    {.key = "peft.lora_targets", .type = MB_KEY_FLAGS, F_(lora_targets), .flags = SW, .names = mb_key__lora_targets,
     .def = MB_LORA_QKV | MB_LORA_PROJ | MB_LORA_FC1 | MB_LORA_FC2, .def_text = "[linear_qkv, linear_proj, linear_fc1, linear_fc2]",
     .doc = "the linear layers with an adapter (Megatron-Bridge LoRA `target_modules`)",
     .bridge = "peft.target_modules"},
    {.key = "overlap.grad_reduce", .type = MB_KEY_BOOL, F_(overlap_grad_reduce), .flags = SW | SH, .def = 1,
     .doc = "overlap DP gradient reduce(-scatter) with backward",
     .megatron = "overlap_grad_reduce", .bridge = "ddp.overlap_grad_reduce"},
    {.key = "overlap.param_gather", .type = MB_KEY_BOOL, F_(overlap_param_gather), .flags = SW | SH, .def = 1,
     .doc = "overlap distributed-optimizer / FSDP parameter all-gather",
     .megatron = "overlap_param_gather", .bridge = "ddp.overlap_param_gather"},
    {.key = "overlap.tp_comm", .type = MB_KEY_BOOL, F_(overlap_tp_comm), .flags = SW | SH, .def = 0,
     .doc = "TP communication overlap (userbuffers)",
     .megatron = "tp_comm_overlap", .bridge = "comm_overlap.tp_comm_overlap"},
    {.key = "overlap.ep_comm", .type = MB_KEY_BOOL, F_(overlap_ep_comm), .flags = SW | SH, .def = 0,
     .doc = "EP dispatch/combine beside another microbatch's compute (combined 1F1B)",
     .megatron = "overlap_moe_expert_parallel_comm", .bridge = "comm_overlap.overlap_moe_expert_parallel_comm"},
    {.key = "overlap.fsdp_prefetch", .type = MB_KEY_INT, F_(fsdp_prefetch), .flags = SW, .min = 0,
     .max = MB_MAX_FSDP_PREFETCH, .def = 1, .doc = "FSDP: layers all-gathered ahead of the one computing"},
    {.key = "overlap.defer_embedding_wgrad_compute", .type = MB_KEY_BOOL, F_(defer_wgrad), .flags = SW, .def = 0,
     .doc = "Megatron-Core `defer_embedding_wgrad_compute` (no Megatron-LM flag): the last stage keeps the output "
            "layer's input and output gradient of each microbatch for its weight-gradient GEMMs in the pipeline "
            "flush (memory; the GEMMs stay priced in each backward); pp > 1, not with FSDP",
     .bridge = "comm_overlap.defer_embedding_wgrad_compute"},
    {.key = "overlap.wgrad_deferral_limit", .type = MB_KEY_INT, F_(wgrad_deferral_limit), .flags = SW, .min = 0,
     .max = 1000000, .def = 0, .def_text = "0 (every microbatch)", .applies = mb_key__if_defer_wgrad,
     .doc = "Megatron-Core `wgrad_deferral_limit`: output-layer calls whose wgrad is deferred (later ones run "
            "theirs in the backward)",
     .bridge = "comm_overlap.wgrad_deferral_limit"},
    {.key = "optimizer.main_grads", .type = MB_KEY_ENUM, F_(grad_bytes), .flags = SW, .names = mb_key__grad_dtypes,
     .def = 4, .doc = "main-gradient buffer and DP reduction dtype (Megatron `--grad-reduce-in-bf16`)"},
    {.key = "optimizer.states", .type = MB_KEY_ENUM, F_(state_bytes), .flags = SW, .names = mb_key__state_dtypes,
     .def = 8, .doc = "Adam moments dtype (precision-aware optimizer); not with FSDP2, whose torch.optim.Adam "
     "keeps them in parallel.fsdp_sharded_dtype (an error)"},
    {.key = "optimizer.distributed", .type = MB_KEY_BOOL, F_(dist_opt), .flags = SW, .def = 1,
     .doc = "Megatron's distributed optimizer; `false` = DDP (needs strategy 3d)",
     .megatron = "use_distributed_optimizer", .bridge = "ddp.use_distributed_optimizer"},
    {.key = "training.cross_entropy_fusion", .type = MB_KEY_BOOL, F_(ce_fusion), .flags = SW, .def = 1,
     .doc = "Megatron `--cross-entropy-loss-fusion` (on in Megatron-Bridge's recipes); off: the fp32 "
            "vocab-parallel cross-entropy keeps an fp32 softmax per head (memory only)",
     .megatron = "cross_entropy_loss_fusion", .bridge = "model.cross_entropy_loss_fusion"},
    {.key = "training.cross_entropy_fusion_impl", .type = MB_KEY_ENUM, F_(ce_impl), .flags = SW,
     .names = mb_key__ce_impls, .def = MB_CE_TE, .applies = mb_key__if_ce_fusion,
     .doc = "Megatron `--cross-entropy-fusion-impl`: te (gradient written into the bf16 logits) or native "
            "(fp32 softmax kept, as unfused)",
     .megatron = "cross_entropy_fusion_impl", .bridge = "model.cross_entropy_fusion_impl"},
    {.key = "training.loss_chunks", .type = MB_KEY_INT, F_(loss_chunks), .flags = SW, .min = 0, .max = 1048576,
     .def = 0, .def_text = "0 (off)",
     .doc = "a fused linear cross-entropy over N token chunks (Liger-Kernel's LigerFusedLinearCrossEntropy, as "
            "torchtitan- and AutoModel-style trainers use it): the output projection, the loss and both their "
            "gradients run chunk by chunk in the forward, so one chunk's logits exist at a time; replaces the "
            "cross_entropy_fusion flavour; tp 1 only (not vocab-parallel). Memory only"},
    {.key = "training.attention_backend", .type = MB_KEY_ENUM, F_(attn_backend), .flags = SW | SH,
     .names = mb_key__attn_backends, .def = MB_ATTN_AUTO,
     .doc = "Megatron-Core `--attention-backend`: auto, flash, fused (one fused kernel, the table's "
            "attention curves) or unfused, local (the [b, heads, s, s] scores in memory: baddbmm, "
            "softmax, dropout, bmm); also flash2, flash3 (FlashAttention-2 / -3) and triton (a Triton "
            "flash kernel): the table's time over their published H100 rate relative to cuDNN (Hopper GPUs only)",
     .megatron = "attention_backend", .bridge = "model.attention_backend"},
    {.key = "training.attention_dropout", .type = MB_KEY_DOUBLE, F_(attn_dropout), .flags = SW, .min = 0,
     .max = 0.99, .def = 0, .applies = mb_key__if_attn_scores,
     .doc = "Megatron `--attention-dropout` probability; with unfused/local attention a dropout kernel "
            "over the scores and its 1-byte mask (fused kernels drop in-kernel: not priced)",
     .megatron = "attention_dropout", .bridge = "model.attention_dropout"},
    {.key = "training.hidden_dropout", .type = MB_KEY_DOUBLE, F_(hidden_dropout), .flags = SW, .min = 0,
     .max = 0.99, .def = 0,
     .doc = "Megatron `--hidden-dropout` probability of the two residual dropouts per layer; above 0 each keeps "
            "a 1-byte mask for backward (at 0 PyTorch's dropout returns its input: no mask; Megatron-Bridge's "
            "model providers set 0, Megatron-LM's default is 0.1). Memory only",
     .megatron = "hidden_dropout", .bridge = "model.hidden_dropout"},
    {.key = "training.bias_activation_fusion", .type = MB_KEY_BOOL, F_(bias_act_fusion), .flags = SW, .def = 1,
     .doc = "Megatron's fused activation kernels (TransformerConfig `bias_activation_fusion`, on in Megatron-LM "
            "unless `--no-bias-swiglu-fusion` / `--no-bias-gelu-fusion`; off in a bare TransformerConfig); off: "
            "the MoE experts run the activation and the routing-probability product eagerly: one kernel per "
            "PyTorch op (16 B per element forward, 40 backward for GELU; 26 / 60 gated) and the activation "
            "output and an fp32 backward working set kept (dense layers: no change)"},
    {.key = "training.fp8_param_gather", .type = MB_KEY_BOOL, F_(fp8_param_gather), .flags = SW, .def = 0,
     .applies = mb_key__if_quantized,
     .doc = "Megatron `--fp8-param-gather` (Megatron-Bridge's and NeMo 2.0's FP8-CS, delayed-scaling and MXFP8 "
            "recipes set it): the decoder layers' linear weights are held quantized instead of BF16 beside "
            "TE's cached quantized copy, and the distributed optimizer gathers per-tensor FP8 weights at 1 B "
            "(docs/modeling.md, Memory: the quantized weights); FP8/FP4 precisions only",
     .megatron = "fp8_param_gather", .bridge = "mixed_precision.fp8_param_gather"},
    {.key = "memory.expandable_segments", .type = MB_KEY_BOOL, F_(expandable_segments), .flags = SW, .def = 0,
     .doc = "PyTorch `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: no fragmentation reserve (not for "
            "CUDA-graph private pools)"},
    {.key = "memory.cpu_offloading_num_layers", .type = MB_KEY_INT, F_(cpu_offload_layers), .flags = SW, .min = 0,
     .max = 100000, .def = 0,
     .doc = "Megatron `--cpu-offloading-num-layers` (Bridge: `model.cpu_offloading=true` and this count): the "
            "activations of that many layers go to host memory in forward and come back in backward "
            "(pp 1, no recompute, fewer than the model's layers, as Megatron requires); 0 = off",
     .megatron = "cpu_offloading_num_layers", .bridge = "model.cpu_offloading_num_layers"},
    {.key = "collectives.all_reduce", .type = MB_KEY_ENUM, F_(allreduce_algo), .flags = SW,
     .names = mb_key__ar_algos, .def = MB_COLL_ALGO_AUTO, .doc = "NCCL algorithm of the step's all-reduces"},
    {.key = "calibration.table", .type = MB_KEY_STRING, F_(calib_path), .flags = MB_KEYF_PATH,
     .def_text = "shipped table for the system's GPU",
     .doc = "calibration table file, relative to the scenario file's folder"},
    {.key = "calibration.roofline", .type = MB_KEY_BOOL, F_(roofline), .flags = SW, .def = 0,
     .doc = "ignore tables, use the roofline only"},
    {.key = "measured.tokens_per_s_per_gpu", .type = MB_KEY_DOUBLE, F_(meas_tokens_per_s_per_gpu), .min = 0,
     .max = 1e12, .def = 0, .def_text = "none", .doc = "measured throughput"},
    {.key = "measured.model_tflops_per_gpu", .type = MB_KEY_QUANTITY, F_(meas_model_tflops_per_gpu),
     .unit = MB_UNIT_FLOPS, .scale = 1e12, .def = 0, .def_text = "none",
     .doc = "measured model TFLOP/s/GPU (bare = TFLOP/s)"},
    {.key = "measured.step_time_s", .type = MB_KEY_QUANTITY, F_(meas_step_time_s), .unit = MB_UNIT_TIME,
     .scale = 1, .def = 0, .def_text = "none", .doc = "measured step time (bare = s)"},
    {.key = "measured.peak_memory_gib", .type = MB_KEY_QUANTITY, F_(meas_peak_memory_gib), .unit = MB_UNIT_BYTES,
     .scale = 1073741824.0, .def = 0, .def_text = "none", .doc = "measured peak memory per GPU (bare = GiB)"},
    {.key = "measured.peak_memory_after_iteration", .type = MB_KEY_INT, F_(meas_peak_iteration), .min = 0,
     .max = 1000000000, .def = 0, .def_text = "0 (the steady state)",
     .doc = "the iteration after which the peak was logged (Megatron-Bridge: \"(after N iterations) memory (GB)\"): "
            "1 compares it with the first iteration's peak, whose passes run before the first optimizer step "
            "creates Adam's moments; 0 or 2 and later: the steady state"},
    {.key = "measured.oom", .type = MB_KEY_BOOL, F_(meas_oom), .def = 0,
     .doc = "the run was reported out of memory (a peak beside it is where it failed)"},
    {.key = "measured.source", .type = MB_KEY_STRING, F_(meas_source), .def_text = "none",
     .doc = "where the numbers come from"},
    {.key = "measured.csv_row", .type = MB_KEY_STRING, F_(meas_csv_row), .def_text = "none",
     .doc = "id of the measured-runs CSV row this file states the recipe of: `mbsim validate CSV --recipes "
            "FILE|DIR` simulates that row from this file (its layout must be the row's)"},
};

#define MB_KEY__N (sizeof mb_key__table / sizeof mb_key__table[0])
_Static_assert(MB_KEY__N <= MB_KEYS_MAX, "raise MB_KEYS_MAX");

const struct mb_key *mb_keys(size_t *n)
{
    if (n)
        *n = MB_KEY__N;
    return mb_key__table;
}

const struct mb_key *mb_key_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < MB_KEY__N; i++)
        if (!strcmp(mb_key__table[i].key, name))
            return &mb_key__table[i];
    for (size_t i = 0; i < MB_KEY__N; i++)
        if (mb_key__table[i].alias && !strcmp(mb_key__table[i].alias, name))
            return &mb_key__table[i];
    return NULL;
}

size_t mb_key_index(const struct mb_key *k) { return (size_t)(k - mb_key__table); }

/* --------------------------------------------------------- field access */

static void *mb_key__at(struct mb_scenario *s, const struct mb_key *k) { return (char *)s + k->offset; }
static const void *mb_key__cat(const struct mb_scenario *s, const struct mb_key *k)
{
    return (const char *)s + k->offset;
}

static void mb_key__set_int(struct mb_scenario *s, const struct mb_key *k, int v) { memcpy(mb_key__at(s, k), &v, sizeof v); }
static int mb_key__get_int(const struct mb_scenario *s, const struct mb_key *k)
{
    int v;
    memcpy(&v, mb_key__cat(s, k), sizeof v);
    return v;
}

void mb_keys_defaults(struct mb_scenario *s)
{
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const struct mb_key *k = &mb_key__table[i];
        void *at = mb_key__at(s, k);
        switch (k->type) {
        case MB_KEY_INT:
        case MB_KEY_BOOL:
        case MB_KEY_ENUM:
            mb_key__set_int(s, k, (int)k->def);
            break;
        case MB_KEY_FLAGS: {
            unsigned u = (unsigned)k->def;
            memcpy(at, &u, sizeof u);
            break;
        }
        case MB_KEY_U64: {
            unsigned long long u = (unsigned long long)k->def;
            memcpy(at, &u, sizeof u);
            break;
        }
        case MB_KEY_DOUBLE:
        case MB_KEY_QUANTITY:
            memcpy(at, &k->def, sizeof k->def);
            break;
        case MB_KEY_RANGE: {
            int r[2] = {(int)k->def, (int)k->def};
            memcpy(at, r, sizeof r);
            break;
        }
        case MB_KEY_PRECISION:
            mb_precision_parse(k->def_text, (struct mb_precision *)at);
            break;
        case MB_KEY_LAYOUT:
        case MB_KEY_STRING:
            memset(at, 0, k->size);
            break;
        case MB_KEY_SPECIAL:
            break;
        }
    }
}

int mb_key_is_default(const struct mb_scenario *s, const struct mb_key *k)
{
    struct mb_scenario *d = mb_calloc(1, sizeof *d);
    mb_keys_defaults(d);
    int same;
    if (k->type == MB_KEY_PRECISION)
        same = !strcmp(s->prec.label, d->prec.label);
    else if (k->type == MB_KEY_STRING || k->type == MB_KEY_LAYOUT)
        same = strcmp((const char *)mb_key__cat(s, k), (const char *)mb_key__cat(d, k)) == 0;
    else if (k->type == MB_KEY_SPECIAL)
        same = 0;
    else
        same = memcmp(mb_key__cat(s, k), mb_key__cat(d, k), k->size) == 0;
    mb_free(d);
    return same;
}

/* ------------------------------------------------------------ names out */

const char *mb_key_value_name(const char *key, unsigned v)
{
    const struct mb_key *k = mb_key_find(key);
    if (!k || !k->names)
        return "?";
    for (const struct mb_key_name *t = k->names; t->name; t++)
        if (t->val == v)
            return t->name;
    return "?";
}

static void mb_key__flags_text(const struct mb_key_name *t, unsigned flags, const char *sep, char *buf, size_t len)
{
    size_t at = 0;
    unsigned done = 0;
    buf[0] = '\0';
    for (; t && t->name && at < len; t++)
        if ((flags & t->val) && !(done & t->val)) {
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? sep : "", t->name);
            done |= t->val;
        }
}

void mb_key_flag_names(const char *key, unsigned flags, const char *sep, char *buf, size_t len)
{
    const struct mb_key *k = mb_key_find(key);
    mb_key__flags_text(k ? k->names : NULL, flags, sep, buf, len);
}

/* Shortest "%.*g" text that reads back as exactly v. */
static void mb_key__dbl(double v, char *buf, size_t len)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int mb_key_format(const struct mb_scenario *s, const struct mb_key *k, char *buf, size_t len)
{
    const void *at = mb_key__cat(s, k);
    buf[0] = 0;
    switch (k->type) {
    case MB_KEY_INT:
        snprintf(buf, len, "%d", mb_key__get_int(s, k));
        return 0;
    case MB_KEY_BOOL:
        snprintf(buf, len, "%s", mb_key__get_int(s, k) ? "true" : "false");
        return 0;
    case MB_KEY_ENUM:
        snprintf(buf, len, "%s", mb_key_value_name(k->key, (unsigned)mb_key__get_int(s, k)));
        return 0;
    case MB_KEY_FLAGS: {
        unsigned u;
        memcpy(&u, at, sizeof u);
        mb_key__flags_text(k->names, u, "+", buf, len);
        if (!buf[0])
            snprintf(buf, len, "none");
        return 0;
    }
    case MB_KEY_U64: {
        unsigned long long u;
        memcpy(&u, at, sizeof u);
        snprintf(buf, len, "%llu", u);
        return 0;
    }
    case MB_KEY_DOUBLE:
    case MB_KEY_QUANTITY: {
        double d;
        memcpy(&d, at, sizeof d);
        mb_key__dbl(d, buf, len);
        return 0;
    }
    case MB_KEY_RANGE: {
        int r[2];
        memcpy(r, at, sizeof r);
        if (r[0] == r[1])
            snprintf(buf, len, "%d", r[0]);
        else
            snprintf(buf, len, "%d+%d", r[0], r[1]);
        return 0;
    }
    case MB_KEY_PRECISION:
        snprintf(buf, len, "%s", s->prec.label[0] ? s->prec.label : "bf16");
        return 0;
    case MB_KEY_LAYOUT:
    case MB_KEY_STRING:
        snprintf(buf, len, "%s", (const char *)at);
        return 0;
    case MB_KEY_SPECIAL:
        break;
    }
    return -1;
}

/* ------------------------------------------------------------- from text */

/* Messages are built without a position; the caller places them. */
static int mb_key__int_text(const struct mb_key *k, const char *v, long long *out, char *msg, size_t len)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || (errno && errno != ERANGE)) {
        snprintf(msg, len, "%s: expected an integer, got '%s'", k->key, v);
        return -1;
    }
    if (errno == ERANGE || (double)x < k->min || (double)x > k->max) { /* ERANGE: too large for any integer */
        snprintf(msg, len, "%s = %s is out of range [%.15g, %.15g]", k->key, v, k->min, k->max);
        return -1;
    }
    *out = x;
    return 0;
}

static int mb_key__bool_text(const struct mb_key *k, const char *v, int *out, char *msg, size_t len)
{
    static const char *const yes[] = {"true", "yes", "on", "1", NULL}, *const no[] = {"false", "no", "off", "0", NULL};
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(v, yes[i])) {
            *out = 1;
            return 0;
        }
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return 0;
        }
    snprintf(msg, len, "%s: expected true or false, got '%s'", k->key, v);
    return -1;
}

static int mb_key__enum_text(const struct mb_key *k, const char *v, unsigned *out, char *msg, size_t len)
{
    int found;
    unsigned u = mb_key__lookup(k->names, v, &found);
    if (!found) {
        char list[256];
        mb_key__names_list(k->names, list, sizeof list);
        snprintf(msg, len, "%s: unknown value '%s'; expected one of: %s", k->key, v, list);
        return -1;
    }
    *out = u;
    return 0;
}

static int mb_key__flags_from_text(const struct mb_key *k, const char *v, unsigned *out, char *msg, size_t len)
{
    *out = 0;
    if (!*v || !strcasecmp(v, "none") || !strcmp(v, "[]"))
        return 0;
    char *buf = mb_strdup(v);
    int rc = 0;
    for (char *p = buf; p && !rc;) {
        char *plus = strchr(p, '+');
        if (plus)
            *plus = 0;
        unsigned f;
        rc = mb_key__enum_text(k, p, &f, msg, len);
        if (!rc && (f & *out)) {
            snprintf(msg, len, "%s: '%s' is listed twice (or with a name of the same meaning)", k->key, p);
            rc = -1;
        }
        *out |= rc ? 0 : f;
        p = plus ? plus + 1 : NULL;
    }
    mb_free(buf);
    return rc;
}

static int mb_key__range_text(const struct mb_key *k, const char *v, int r[2], char *msg, size_t len)
{
    const char *plus = strchr(v, '+');
    long long a, b;
    if (!plus) {
        if (mb_key__int_text(k, v, &a, msg, len))
            return -1;
        r[0] = r[1] = (int)a;
        return 0;
    }
    char lo[64];
    snprintf(lo, sizeof lo, "%.*s", (int)(plus - v), v);
    if (mb_key__int_text(k, lo, &a, msg, len) || mb_key__int_text(k, plus + 1, &b, msg, len))
        return -1;
    if (a > b) {
        snprintf(msg, len, "%s: min %lld > max %lld", k->key, a, b);
        return -1;
    }
    r[0] = (int)a;
    r[1] = (int)b;
    return 0;
}

/* Parse text into the field of key k; 0 or -1 with msg. */
static int mb_key__from_text(struct mb_scenario *s, const struct mb_key *k, const char *v, char *msg, size_t len)
{
    void *at = mb_key__at(s, k);
    long long ll;
    unsigned u;
    int b;
    switch (k->type) {
    case MB_KEY_INT:
        if (mb_key__int_text(k, v, &ll, msg, len))
            return -1;
        mb_key__set_int(s, k, (int)ll);
        return 0;
    case MB_KEY_U64: {
        if (mb_key__int_text(k, v, &ll, msg, len))
            return -1;
        unsigned long long x = (unsigned long long)ll;
        memcpy(at, &x, sizeof x);
        return 0;
    }
    case MB_KEY_BOOL:
        if (mb_key__bool_text(k, v, &b, msg, len))
            return -1;
        mb_key__set_int(s, k, b);
        return 0;
    case MB_KEY_DOUBLE:
    case MB_KEY_QUANTITY: {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (end == v || *end || isnan(x) || (errno != ERANGE && (errno || !isfinite(x)))) {
            snprintf(msg, len, "%s: expected a number, got '%s'", k->key, v);
            return -1;
        }
        if (errno == ERANGE && k->type != MB_KEY_DOUBLE) { /* 1e999, 1e-999 */
            snprintf(msg, len, "%s = %s is out of range for a number (magnitude from %.1e to %.1e, or 0)", k->key, v,
                     DBL_MIN, DBL_MAX);
            return -1;
        }
        if (k->type == MB_KEY_DOUBLE && (errno == ERANGE || x < k->min || x > k->max)) {
            snprintf(msg, len, "%s = %s is out of range [%.15g, %.15g]", k->key, v, k->min, k->max);
            return -1;
        }
        memcpy(at, &x, sizeof x);
        return 0;
    }
    case MB_KEY_ENUM:
        if (mb_key__enum_text(k, v, &u, msg, len))
            return -1;
        mb_key__set_int(s, k, (int)u);
        return 0;
    case MB_KEY_FLAGS:
        if (mb_key__flags_from_text(k, v, &u, msg, len))
            return -1;
        memcpy(at, &u, sizeof u);
        return 0;
    case MB_KEY_PRECISION: {
        char list[160];
        if (!mb_precision_parse(v, &s->prec))
            return 0;
        mb_key__prec_list(list, sizeof list);
        snprintf(msg, len, "precision: unknown value '%s'; expected one of: %s", v, list);
        return -1;
    }
    case MB_KEY_RANGE: {
        int r[2];
        if (mb_key__range_text(k, v, r, msg, len))
            return -1;
        memcpy(at, r, sizeof r);
        return 0;
    }
    case MB_KEY_LAYOUT: {
        char m[200];
        size_t bad = 0;
        if (!mb_pipeline_layout_expand(v, (char *)at, k->size, &bad, m, sizeof m))
            return 0;
        snprintf(msg, len, "%s: %s (at character %zu)", k->key, m, bad + 1);
        return -1;
    }
    case MB_KEY_STRING:
        if (strlen(v) >= k->size) {
            snprintf(msg, len, "%s is too long (at most %zu characters)", k->key, k->size - 1);
            return -1;
        }
        memcpy(at, v, strlen(v) + 1);
        return 0;
    case MB_KEY_SPECIAL:
        break;
    }
    snprintf(msg, len, "%s: not settable from text", k->key);
    return -1;
}

int mb_key_set(struct mb_scenario *s, const struct mb_key *k, const char *text, struct mb_err *err)
{
    char msg[512];
    if (!k || !text)
        return mb_err_set(err, NULL, 0, 0, "no key or value given");
    if (mb_key__from_text(s, k, text, msg, sizeof msg) || (k->check && k->check(s, msg, sizeof msg)))
        return mb_err_set(err, NULL, 0, 0, "%s", msg);
    return 0;
}

/* ------------------------------------------------------------- from YAML */

/* Length of the section part of a key ("parallel" of "parallel.tp"; 0 at the top level). */
static size_t mb_key__sec_len(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

/* The key's name inside its map: the part after the dot, or the top-level name. */
static const char *mb_key__tail(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? dot + 1 : key;
}

/* Top-level name of a key: its section, or the key itself. */
static size_t mb_key__top_len(const char *key)
{
    size_t n = mb_key__sec_len(key);
    return n ? n : strlen(key);
}

static int mb_key__in_section(const struct mb_key *k, const char *section)
{
    size_t n = strlen(section);
    return n && mb_key__sec_len(k->key) == n && !strncmp(k->key, section, n);
}

/* First entry of each top-level name, in table order. */
static int mb_key__first_top(size_t i)
{
    const char *a = mb_key__table[i].key;
    return i == 0 || mb_key__top_len(a) != mb_key__top_len(mb_key__table[i - 1].key) ||
           strncmp(a, mb_key__table[i - 1].key, mb_key__top_len(a));
}

/* Entry named `name` in the map of `section` ("" = top level: a top-level
 * key, or the first key of a section). */
static const struct mb_key *mb_key__member(const char *section, const char *name)
{
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const struct mb_key *k = &mb_key__table[i];
        if (!*section) {
            if (mb_key__first_top(i) && strlen(name) == mb_key__top_len(k->key) &&
                !strncmp(k->key, name, strlen(name)))
                return k;
        } else if (mb_key__in_section(k, section) && !strcmp(mb_key__tail(k->key), name)) {
            return k;
        }
    }
    return NULL;
}

static void mb_key__member_list(const char *section, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < MB_KEY__N && at < len; i++) {
        const struct mb_key *k = &mb_key__table[i];
        if (!*section && mb_key__first_top(i))
            at += (size_t)snprintf(buf + at, len - at, "%s%.*s", at ? ", " : "", (int)mb_key__top_len(k->key),
                                   k->key);
        else if (*section && mb_key__in_section(k, section))
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", mb_key__tail(k->key));
    }
}

/* A flag list node (or one name when the key allows it) into OR-ed flags. */
static int mb_key__flags_node(const struct mb_key *k, const struct mb_node *n, unsigned *out, struct mb_err *err)
{
    char msg[512];
    *out = 0;
    if ((k->flags & MB_KEYF_SCALAR_OK) && n->kind == MB_NODE_SCALAR) {
        if (mb_key__enum_text(k, n->str, out, msg, sizeof msg))
            return mb_yaml_err(err, n, "%s", msg);
        return 0;
    }
    if (mb_yaml_expect(n, MB_NODE_SEQ, k->key, err))
        return -1;
    if (n->n == 0) {
        *out = k->empty;
        return 0;
    }
    for (size_t i = 0; i < n->n; i++) {
        unsigned v;
        const struct mb_node *it = n->items[i];
        if (mb_yaml_expect(it, MB_NODE_SCALAR, k->key, err))
            return -1;
        if (mb_key__enum_text(k, it->str, &v, msg, sizeof msg))
            return mb_yaml_err(err, it, "%s", msg);
        if (v & *out)
            return mb_yaml_err(err, it, "%s: '%s' is listed twice (or with a name of the same meaning)", k->key,
                               it->str);
        *out |= v;
    }
    return 0;
}

/* An integer node in the key's bounds; `what` names it in messages. */
static int mb_key__int_node(const struct mb_key *k, const struct mb_node *n, const char *what, long *out,
                            struct mb_err *err)
{
    long v;
    if (mb_yaml_is_null(n))
        return mb_yaml_err(err, n, "%s has no value", what);
    if (mb_yaml_int_in(n, what, k->min, k->max, &v, err))
        return -1;
    *out = v;
    return 0;
}

/* N or [min, max]. */
static int mb_key__range_node(const struct mb_key *k, const struct mb_node *n, int r[2], struct mb_err *err)
{
    long a = 0, b = 0;
    char what[96];
    if (n->kind != MB_NODE_SEQ) {
        if (mb_key__int_node(k, n, k->key, &a, err))
            return -1;
        r[0] = r[1] = (int)a;
        return 0;
    }
    if (n->n != 2)
        return mb_yaml_err(err, n, "%s: expected N or [min, max], got %zu items", k->key, n->n);
    snprintf(what, sizeof what, "%s min", k->key);
    if (mb_key__int_node(k, n->items[0], what, &a, err))
        return -1;
    snprintf(what, sizeof what, "%s max", k->key);
    if (mb_key__int_node(k, n->items[1], what, &b, err))
        return -1;
    if (a > b)
        return mb_yaml_err(err, n, "%s: min %ld > max %ld", k->key, a, b);
    r[0] = (int)a;
    r[1] = (int)b;
    return 0;
}

/* Prefix the quantity key's name to the error mb_yaml_quantity just recorded (the first one, when
 * err held none before), and say what unit a bare number is in. */
static void mb_key__name_quantity_error(const struct mb_key *k, struct mb_err *err, int before)
{
    if (!err || before != 0 || err->count == 0)
        return;
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    const char *bare = k->unit == MB_UNIT_BYTES ? "GiB" : k->unit == MB_UNIT_TIME ? "s" : "TFLOP/s";
    snprintf(err->msg, sizeof err->msg, "%.40s: %.400s; a bare number is in %s", k->key, msg, bare);
}

/* A quantity: bare numbers are in the key's unit (scale = base units per key unit). */
static int mb_key__quantity_node(const struct mb_key *k, const struct mb_node *n, double *out, struct mb_err *err)
{
    double v;
    int before = err ? err->count : 0;
    if (mb_yaml_quantity(n, k->unit, 1, &v, err)) {
        mb_key__name_quantity_error(k, err, before);
        return -1;
    }
    char *end;
    strtod(n->str, &end);
    while (*end == ' ')
        end++;
    *out = *end ? v / k->scale : v;
    if (*out < 0)
        return mb_yaml_err(err, n, "%s: expected a value >= 0, got '%s'", k->key, n->str);
    return 0;
}

/* Parse node n into the field of key k (messages as mb_yaml's converters word them). */
static int mb_key__from_node(struct mb_scenario *s, const struct mb_key *k, const struct mb_node *n,
                             const char *what, struct mb_err *err)
{
    void *at = mb_key__at(s, k);
    char msg[512];
    long l = 0;
    double d;
    unsigned u;
    int b;
    switch (k->type) {
    case MB_KEY_INT:
        if (mb_key__int_node(k, n, k->key, &l, err))
            return -1;
        mb_key__set_int(s, k, (int)l);
        return 0;
    case MB_KEY_U64: {
        if (mb_key__int_node(k, n, k->key, &l, err))
            return -1;
        unsigned long long x = (unsigned long long)l;
        memcpy(at, &x, sizeof x);
        return 0;
    }
    case MB_KEY_BOOL:
        if (mb_yaml_bool_in(n, k->key, &b, err))
            return -1;
        mb_key__set_int(s, k, b);
        return 0;
    case MB_KEY_DOUBLE:
        if (mb_yaml_double_in(n, k->key, k->min, k->max, &d, err))
            return -1;
        memcpy(at, &d, sizeof d);
        return 0;
    case MB_KEY_QUANTITY:
        if (mb_key__quantity_node(k, n, &d, err))
            return -1;
        memcpy(at, &d, sizeof d);
        return 0;
    case MB_KEY_ENUM:
        if (mb_yaml_expect(n, MB_NODE_SCALAR, k->key, err))
            return -1;
        if (mb_key__enum_text(k, n->str, &u, msg, sizeof msg))
            return mb_yaml_err(err, n, "%s", msg);
        mb_key__set_int(s, k, (int)u);
        return 0;
    case MB_KEY_FLAGS:
        if (mb_key__flags_node(k, n, &u, err))
            return -1;
        memcpy(at, &u, sizeof u);
        return 0;
    case MB_KEY_RANGE: {
        int r[2];
        if (mb_key__range_node(k, n, r, err))
            return -1;
        memcpy(at, r, sizeof r);
        return 0;
    }
    case MB_KEY_LAYOUT: {
        size_t bad = 0;
        if (mb_yaml_expect(n, MB_NODE_SCALAR, k->key, err))
            return -1;
        if (mb_pipeline_layout_expand(n->str, (char *)at, k->size, &bad, msg, sizeof msg))
            return mb_err_set(err, n->file, n->line, n->col + (n->quoted ? 1 : 0) + (int)bad, "%s: %s", k->key,
                              msg);
        return 0;
    }
    case MB_KEY_PRECISION:
        if (mb_yaml_expect(n, MB_NODE_SCALAR, k->key, err))
            return -1;
        if (mb_key__from_text(s, k, n->str, msg, sizeof msg))
            return mb_yaml_err(err, n, "%s", msg);
        return 0;
    case MB_KEY_STRING:
        if (mb_yaml_expect(n, MB_NODE_SCALAR, mb_key__tail(k->key), err))
            return -1;
        if (strlen(n->str) >= k->size)
            return mb_yaml_err(err, n, "%s.%s is too long (at most %zu characters)", what, mb_key__tail(k->key),
                               k->size - 1);
        memcpy(at, n->str, strlen(n->str) + 1);
        return 0;
    case MB_KEY_SPECIAL:
        return 0;
    }
    return 0;
}

/* Pass 1 over a map: every key known and given a value; records the nodes. */
static int mb_key__scan(const struct mb_node *map, const char *section, const char *what,
                        const struct mb_node **nodes, struct mb_err *err)
{
    for (size_t i = 0; i < map->n; i++) {
        const struct mb_pair *p = &map->pairs[i];
        const struct mb_key *k = mb_key__member(section, p->key);
        if (!k) {
            char list[1024];
            mb_key__member_list(section, list, sizeof list);
            return mb_err_set(err, map->file, p->line, p->col, "unknown key '%s' in %s; expected one of: %s",
                              p->key, what, list);
        }
        /* `key:` with nothing after it is a value left out, not "use the default" */
        if (mb_yaml_is_null(p->val))
            return mb_err_set(err, map->file, p->line, p->col,
                              "key '%s' in %s has no value; give one or leave the key out", p->key, what);
        if (*section || !mb_key__sec_len(k->key))
            nodes[mb_key_index(k)] = p->val;
    }
    return 0;
}

/* Required keys of the map present. */
static int mb_key__required(const struct mb_node *map, const char *section, const char *what,
                            struct mb_err *err)
{
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const struct mb_key *k = &mb_key__table[i];
        char name[64];
        if (*section && mb_key__in_section(k, section) && (k->flags & MB_KEYF_REQUIRED))
            snprintf(name, sizeof name, "%s", mb_key__tail(k->key));
        else if (!*section && !mb_key__sec_len(k->key) && (k->flags & MB_KEYF_REQUIRED))
            snprintf(name, sizeof name, "%s", k->key);
        else if (!*section && mb_key__first_top(i) && mb_key__sec_len(k->key) && (k->flags & MB_KEYF_SECTION_REQ))
            snprintf(name, sizeof name, "%.*s", (int)mb_key__sec_len(k->key), k->key);
        else
            continue;
        if (!mb_yaml_get(map, name))
            return mb_yaml_err(err, map, "missing required key '%s' in %s", name, what);
    }
    return 0;
}

int mb_keys_read(const struct mb_node *map, const char *section, struct mb_scenario *s,
                 const struct mb_node **nodes, struct mb_err *err)
{
    const char *what = *section ? section : "scenario";
    if (mb_yaml_expect(map, MB_NODE_MAP, what, err))
        return -1;
    if (mb_key__scan(map, section, what, nodes, err) || mb_key__required(map, section, what, err))
        return -1;
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const struct mb_key *k = &mb_key__table[i];
        if (!*section && mb_key__sec_len(k->key)) {
            /* a section: read when it starts, in table order */
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)mb_key__sec_len(k->key), k->key);
            const struct mb_node *sec = mb_key__first_top(i) ? mb_yaml_get(map, name) : NULL;
            if (sec && mb_keys_read(sec, name, s, nodes, err))
                return -1;
            continue;
        }
        if (*section && !mb_key__in_section(k, section))
            continue;
        const struct mb_node *n = nodes[i];
        char msg[512];
        if (!n || k->type == MB_KEY_SPECIAL)
            continue;
        if (mb_key__from_node(s, k, n, what, err))
            return -1;
        if (k->check && k->check(s, msg, sizeof msg))
            return mb_yaml_err(err, n, "%s", msg);
    }
    return 0;
}

int mb_keys_nodes(const struct mb_node *root, const struct mb_node **nodes, struct mb_err *err)
{
    if (mb_yaml_expect(root, MB_NODE_MAP, "scenario", err) || mb_key__scan(root, "", "scenario", nodes, err))
        return -1;
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const char *key = mb_key__table[i].key;
        if (!mb_key__sec_len(key) || !mb_key__first_top(i))
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)mb_key__sec_len(key), key);
        const struct mb_node *sec = mb_yaml_get(root, name);
        if (sec && (mb_yaml_expect(sec, MB_NODE_MAP, name, err) || mb_key__scan(sec, name, name, nodes, err)))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ key lists */

void mb_keys_list(int sweep_only, int with_aliases, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < MB_KEY__N && at < len; i++)
        if (!sweep_only || (mb_key__table[i].flags & MB_KEYF_SWEEP))
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", mb_key__table[i].key);
    if (!with_aliases)
        return;
    int first = 1;
    for (size_t i = 0; i < MB_KEY__N && at < len; i++)
        if (mb_key__table[i].alias && (!sweep_only || (mb_key__table[i].flags & MB_KEYF_SWEEP))) {
            at += (size_t)snprintf(buf + at, len - at, "%s%s", first ? " (aliases: " : ", ", mb_key__table[i].alias);
            first = 0;
        }
    if (!first && at < len)
        snprintf(buf + at, len - at, ")");
}

/* ------------------------------------------------------------ docs */

/* Markdown text with '|' escaped (table cells). */
static void mb_key__md(FILE *fp, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', fp);
        fputc(*s, fp);
    }
}

static void mb_key__md_type(FILE *fp, const struct mb_key *k)
{
    char list[512];
    switch (k->type) {
    case MB_KEY_INT:
    case MB_KEY_U64:
        fprintf(fp, "int %.15g..%.15g", k->min, k->max);
        break;
    case MB_KEY_RANGE:
        fprintf(fp, "int N or `[min, max]`, %.15g..%.15g", k->min, k->max);
        break;
    case MB_KEY_BOOL:
        fprintf(fp, "bool");
        break;
    case MB_KEY_DOUBLE:
        fprintf(fp, "number %.15g..%.15g", k->min, k->max);
        break;
    case MB_KEY_QUANTITY:
        fprintf(fp, "number or quantity");
        break;
    case MB_KEY_ENUM:
    case MB_KEY_FLAGS:
        fprintf(fp, "%s", k->type == MB_KEY_FLAGS ? "list of " : "");
        for (const struct mb_key_name *t = k->names; t->name; t++)
            fprintf(fp, "%s`%s`", t == k->names ? "" : k->type == MB_KEY_FLAGS ? ", " : " \\| ", t->name);
        break;
    case MB_KEY_PRECISION:
        mb_key__prec_list(list, sizeof list);
        fprintf(fp, "label: %s", list);
        break;
    case MB_KEY_LAYOUT:
        fprintf(fp, "layout string");
        break;
    case MB_KEY_STRING:
        fprintf(fp, "string (< %zu chars)", k->size);
        break;
    case MB_KEY_SPECIAL:
        fprintf(fp, "see text");
        break;
    }
    if (k->flags & MB_KEYF_REQUIRED)
        fprintf(fp, ", R");
}

void mb_keys_write_markdown(FILE *fp)
{
    fprintf(fp, "| key | type | default | sweep | meaning |\n|---|---|---|---|---|\n");
    struct mb_scenario *d = mb_calloc(1, sizeof *d);
    mb_keys_defaults(d);
    for (size_t i = 0; i < MB_KEY__N; i++) {
        const struct mb_key *k = &mb_key__table[i];
        char def[256];
        fprintf(fp, "| `%s` | ", k->key);
        mb_key__md_type(fp, k);
        if (k->def_text)
            snprintf(def, sizeof def, "%s", k->def_text);
        else
            mb_key_format(d, k, def, sizeof def);
        fprintf(fp, " | ");
        mb_key__md(fp, def);
        if (!(k->flags & MB_KEYF_SWEEP))
            fprintf(fp, " | — | ");
        else if (k->alias)
            fprintf(fp, " | yes (`%s`) | ", k->alias);
        else
            fprintf(fp, " | yes | ");
        mb_key__md(fp, k->doc);
        fprintf(fp, " |\n");
    }
    mb_free(d);
}
