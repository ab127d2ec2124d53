/*
 * mb_scenario.c -- scenario loader (schema_version 1) and layout checks.
 *
 * A scenario file is loaded as a node tree by mb_yaml (the only libyaml
 * walker) and read section by section through field tables, so unknown keys,
 * wrong types, bad units and out-of-range values are all reported the same way
 * ("file:line:col: message", STYLE.md points 17-18). Enumerations are checked
 * here with "expected one of: ..." lists. The format is documented in
 * docs/scenario-format.md.
 *
 * Order of work in mb_scenario_load: schema_version first (a file written for
 * another schema is rejected before anything else is read), then every section
 * is parsed (syntax, types, enums, units), then the model is resolved, the
 * layout is checked against the model, and last the system preset is loaded
 * (hwloc XML included) and the GPU count checked against it. Layout checks keep
 * the YAML nodes they are about (struct mb_scn__marks), so an impossible layout
 * is reported at the key that makes it impossible; mb_scenario_check on a
 * hand-built scenario gives the same messages without a position.
 *
 * Layout rules follow Megatron-Core (see mb_scn__check_layout for each rule and
 * where it comes from).
 */
#include "mb_scenario.h"
#include "mb_coll.h"
#include "mb_yaml.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

/* ------------------------------------------------------------------ names */

struct mb_scn__name {
    const char *name;
    unsigned val;
};

static const struct mb_scn__name mb_scn__strategies[] = {
    {"3d", MB_STRAT_3D}, {"fsdp", MB_STRAT_FSDP}, {NULL, 0}};
static const struct mb_scn__name mb_scn__dispatchers[] = {
    {"alltoall", MB_DISP_ALLTOALL}, {"allgather", MB_DISP_ALLGATHER},
    {"hybridep", MB_DISP_HYBRIDEP}, {"deepep", MB_DISP_DEEPEP}, {NULL, 0}};
static const struct mb_scn__name mb_scn__routings[] = {
    {"balanced", MB_ROUTE_BALANCED}, {"skewed", MB_ROUTE_SKEWED}, {NULL, 0}};
static const struct mb_scn__name mb_scn__granularities[] = {
    {"none", MB_RC_NONE}, {"selective", MB_RC_SELECTIVE}, {"full", MB_RC_FULL}, {NULL, 0}};
static const struct mb_scn__name mb_scn__rc_methods[] = {
    {"uniform", MB_RC_UNIFORM}, {"block", MB_RC_BLOCK}, {NULL, 0}};
static const struct mb_scn__name mb_scn__rc_modules[] = {
    {"core_attn", MB_RCM_CORE_ATTN}, {"moe_act", MB_RCM_MOE_ACT},
    {"layernorm", MB_RCM_LAYERNORM}, {"mla_up_proj", MB_RCM_MLA_UP_PROJ},
    {"mlp", MB_RCM_MLP}, {"moe", MB_RCM_MOE}, {"shared_experts", MB_RCM_SHARED_EXPERTS},
    {"gdn_norm_out", MB_RCM_GDN_NORM_OUT}, {NULL, 0}};
/* `layer` and `full` are the legacy --cuda-graph-scope spellings of the whole
 * layer (= Megatron's empty --cuda-graph-modules list). */
static const struct mb_scn__name mb_scn__cg_modules[] = {
    {"attn", MB_CG_ATTN}, {"mlp", MB_CG_MLP}, {"moe", MB_CG_MOE},
    {"moe_router", MB_CG_MOE_ROUTER}, {"moe_preprocess", MB_CG_MOE_PREPROCESS},
    {"mamba", MB_CG_MAMBA}, {"layer", MB_CG_LAYER}, {"full", MB_CG_LAYER},
    {"full_iteration", MB_CG_FULL_ITERATION}, {NULL, 0}};
static const struct mb_scn__name mb_scn__freezes[] = {
    {"vision", MB_FREEZE_VISION}, {"vision_projection", MB_FREEZE_VISION_PROJ},
    {"language", MB_FREEZE_LANGUAGE}, {NULL, 0}};

static void mb_scn__list(const struct mb_scn__name *t, char *buf, size_t len)
{
    buf[0] = 0;
    for (; t->name; t++) {
        strncat(buf, t->name, len - strlen(buf) - 1);
        if (t[1].name)
            strncat(buf, ", ", len - strlen(buf) - 1);
    }
}

static unsigned mb_scn__lookup(const struct mb_scn__name *t, const char *s, int *found)
{
    for (; t->name; t++)
        if (strcasecmp(t->name, s) == 0) {
            *found = 1;
            return t->val;
        }
    *found = 0;
    return 0;
}

/* Read an enum scalar; error "what: unknown value 'x'; expected one of: ...". */
static int mb_scn__enum(const struct mb_node *n, const char *what, const struct mb_scn__name *t,
                        unsigned *out, struct mb_err *err)
{
    if (mb_yaml_expect(n, MB_NODE_SCALAR, what, err))
        return -1;
    int found;
    unsigned v = mb_scn__lookup(t, n->str, &found);
    if (!found) {
        char list[256];
        mb_scn__list(t, list, sizeof list);
        return mb_yaml_err(err, n, "%s: unknown value '%s'; expected one of: %s", what, n->str, list);
    }
    *out = v;
    return 0;
}

/* Read a list of names into OR-ed flags. A scalar counts as a one-item list
 * when scalar_ok is set. */
static int mb_scn__flags(const struct mb_node *n, const char *what, const struct mb_scn__name *t,
                         int scalar_ok, unsigned *out, struct mb_err *err)
{
    *out = 0;
    if (scalar_ok && n && n->kind == MB_NODE_SCALAR)
        return mb_scn__enum(n, what, t, out, err);
    if (mb_yaml_expect(n, MB_NODE_SEQ, what, err))
        return -1;
    for (size_t i = 0; i < n->n; i++) {
        unsigned v;
        if (mb_scn__enum(n->items[i], what, t, &v, err))
            return -1;
        *out |= v;
    }
    return 0;
}

unsigned mb_recompute_module(const char *name)
{
    int found;
    return name ? mb_scn__lookup(mb_scn__rc_modules, name, &found) : 0;
}

unsigned mb_cuda_graph_module(const char *name)
{
    int found;
    return name ? mb_scn__lookup(mb_scn__cg_modules, name, &found) : 0;
}

/* -------------------------------------------------------------- precision */

struct mb_scn__prec {
    const char *label;      /* canonical label stored in mb_precision.label */
    enum mb_prec gemm, attn;
    int quantize;
};

/* Canonical recipes. Core attention stays BF16 in every FP8/FP4 recipe
 * (Transformer Engine runs the fused attention in BF16 unless fp8 DPA is
 * requested, which published recipes do not). */
static const struct mb_scn__prec mb_scn__precs[] = {
    {"bf16", MB_PREC_BF16, MB_PREC_BF16, 0},
    {"fp16", MB_PREC_FP16, MB_PREC_FP16, 0},
    {"fp8", MB_PREC_FP8, MB_PREC_BF16, 1},           /* delayed / per-tensor scaling */
    {"fp8_cs", MB_PREC_FP8, MB_PREC_BF16, 1},        /* per-tensor current scaling */
    {"fp8_blockwise", MB_PREC_FP8, MB_PREC_BF16, 1}, /* 1x128 / 128x128 blocks (DeepSeek-V3) */
    {"mxfp8", MB_PREC_FP8, MB_PREC_BF16, 1},         /* MX 1x32 E8M0 scales (Blackwell) */
    {"nvfp4", MB_PREC_FP4, MB_PREC_BF16, 1},         /* NVFP4 16-element blocks (Blackwell) */
    {NULL, MB_PREC_BF16, MB_PREC_BF16, 0}};

/* Other spellings (after normalization: lower case, '-' and ' ' -> '_'),
 * from the measured-runs CSV and Megatron/NeMo recipe names. */
static const struct {
    const char *alias, *label;
} mb_scn__prec_alias[] = {
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
    for (size_t i = 0; mb_scn__prec_alias[i].alias; i++)
        if (strcmp(s, mb_scn__prec_alias[i].alias) == 0) {
            s = mb_scn__prec_alias[i].label;
            break;
        }
    for (const struct mb_scn__prec *r = mb_scn__precs; r->label; r++)
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

/* --------------------------------------------------------------- defaults */

void mb_scenario_defaults(struct mb_scenario *s)
{
    memset(s, 0, sizeof *s);
    mb_precision_parse("bf16", &s->prec);
    s->micro_batch_size = 1;
    s->mock = 0;
    s->images.dist = MB_IMG_NONE;
    s->images.per_sample_min = s->images.per_sample_max = 1;
    s->images.seed = 1;
    s->strategy = MB_STRAT_3D;
    s->tp = s->pp = s->vpp = s->cp = s->ep = s->etp = 1;
    s->dp = 1;
    s->sequence_parallel = -1; /* -1 = "on when tp > 1", resolved by mb_scenario_check */
    s->dispatcher = MB_DISP_ALLTOALL;
    s->routing = MB_ROUTE_BALANCED;
    s->routing_skew = 1.0;
    s->routing_seed = 1;
    /* HybridEP README (shared/docs/reference/hardware.md B.4): GB200 MNNVL runs
     * use 32 SMs, B200/H100 runs 8-16; DeepEP V2 min-SM mode 24. */
    s->dispatcher_sms = 24;
    /* --moe-permute-fusion-into-hybridep: published HybridEP runs enable it
     * (e.g. public_measured.csv mbcard_qwen3_30b_a3b_h100_bf16_16 "HybridEP 32
     * SMs, ..., permute fusion") */
    s->hybridep_permute_fusion = 1;
    s->recompute = MB_RC_NONE;
    s->recompute_method = MB_RC_UNIFORM;
    s->overlap_grad_reduce = 1;
    s->overlap_param_gather = 1;
    s->overlap_tp_comm = 0;
    s->overlap_ep_comm = 0;
    s->fsdp_prefetch = 1;
    s->grad_bytes = 4;
    s->state_bytes = 8;
    s->dist_opt = 1;
    s->allreduce_algo = MB_COLL_ALGO_AUTO;
}

void mb_scenario_free(struct mb_scenario *s)
{
    if (!s)
        return;
    mb_model_free(&s->model);
    memset(&s->model, 0, sizeof s->model);
}

/* ------------------------------------------------------------ layout checks */

/* Nodes that layout errors point at (NULL = no position: hand-built scenario). */
struct mb_scn__marks {
    const struct mb_node *model, *gpus, *data, *seq, *gbs, *mbs, *images, *mock;
    const struct mb_node *parallel, *strategy, *tp, *pp, *vpp, *cp, *ep, *etp, *sp;
    const struct mb_node *rc, *rc_modules, *rc_layers, *cuda_graph, *freeze, *overlap, *layout;
    const struct mb_node *dist_opt, *allreduce;
};

static const struct mb_node *mb_scn__at(const struct mb_node *a, const struct mb_node *b,
                                        const struct mb_node *c)
{
    return a ? a : b ? b : c;
}

/* Error at node n, or at s->file without a position when n is NULL. */
static int mb_scn__err(struct mb_err *err, const struct mb_scenario *s, const struct mb_node *n,
                       const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int mb_scn__err(struct mb_err *err, const struct mb_scenario *s, const struct mb_node *n,
                       const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return mb_yaml_err(err, n, "%s", msg);
    return mb_err_set(err, s->file[0] ? s->file : NULL, 0, 0, "%s", msg);
}

static int mb_scn__has_mixer(const struct mb_model *m, enum mb_mixer x)
{
    for (int i = 0; i < m->n_layers; i++)
        if (m->layer && m->layer[i].mixer == x)
            return 1;
    return 0;
}

/*
 * Rules (Megatron-Core names and sources):
 *  - dp = gpus / (tp*pp*cp) must be whole (parallel_state.initialize_model_parallel:
 *    world_size % (tp*pp*cp) == 0).
 *  - strategy fsdp has no pipeline (Megatron FSDP / torch FSDP2 shard over the
 *    data-parallel group only): pp == 1.
 *  - num_heads % tp == 0 (attention heads are split across TP ranks).
 *  - sequence_parallel needs tp > 1 (arguments.py turns it off at tp == 1); with
 *    ep > 1 and tp > 1 it must be on (TransformerConfig: "sequence parallelism must
 *    be used" with MoE + TP).
 *  - vpp > 1 (interleaved 1F1B): pp > 1, pp*vpp <= num_layers + 2 (uneven splits allowed), and
 *    microbatches = gbs / (mbs*dp) % pp == 0 (schedules.py interleaved requirement).
 *  - cp > 1: seq_length % (2*cp) == 0 (each sequence is cut into 2*cp chunks
 *    for causal load balancing, get_batch_on_this_cp_rank).
 *  - experts: ep > 1 needs an MoE model; ep | num_experts; and the expert grid
 *    EP x ETP x EDP x PP must tile the world (parallel_state.initialize_model_parallel:
 *    expert_data_parallel = world / (etp*ep*pp) must be whole), i.e.
 *    ep*etp | tp*cp*dp (= gpus/pp).
 *  - gbs % (mbs*dp) == 0 (num_microbatches_calculator).
 *  - recompute modules must exist in the model (mla_up_proj: MLA, gdn_norm_out:
 *    Gated DeltaNet, moe_act/moe/shared_experts: MoE); full recompute num_layers
 *    <= layers per pipeline stage.
 *  - images: a vision model needs data.images or data.mock: true; images need a
 *    vision encoder; mock and images are exclusive.
 */
static int mb_scn__check_layout(struct mb_scenario *s, const struct mb_scn__marks *mk,
                                struct mb_err *err)
{
    static const struct mb_scn__marks none;
    if (!mk)
        mk = &none;
    const struct mb_model *m = &s->model;
    const char *mn = m->name[0] ? m->name : "(unnamed)";

    if (s->gpus < 1)
        return mb_scn__err(err, s, mk->gpus, "gpus = %d must be at least 1", s->gpus);
    if (s->tp < 1 || s->pp < 1 || s->vpp < 1 || s->cp < 1 || s->ep < 1 || s->etp < 1)
        return mb_scn__err(err, s, mk->parallel, "tp, pp, vpp, cp, ep, etp must be at least 1");
    if (s->micro_batch_size < 1 || s->global_batch_size < 1 || s->seq_length < 1)
        return mb_scn__err(err, s, mk->data,
                           "seq_length, global_batch_size and micro_batch_size must be at least 1");

    long tpc = (long)s->tp * s->pp * s->cp;
    if (s->gpus % tpc)
        return mb_scn__err(err, s, mb_scn__at(mk->parallel, mk->gpus, NULL),
                           "tp*pp*cp = %ld does not divide gpus = %d", tpc, s->gpus);
    s->dp = (int)(s->gpus / tpc);


    if (m->num_heads > 0 && m->num_heads % s->tp)
        return mb_scn__err(err, s, mb_scn__at(mk->tp, mk->parallel, NULL),
                           "tp = %d does not divide num_heads = %d of model %s", s->tp, m->num_heads, mn);
    /* Megatron-Core splits the query groups across TP ranks (attention.py:
     * num_query_groups_per_partition = divide(num_query_groups, tp)) */
    if ((mb_scn__has_mixer(m, MB_MIX_ATTN) || mb_scn__has_mixer(m, MB_MIX_ATTN_SWA)) && m->num_kv_heads > 0 &&
        m->num_kv_heads % s->tp)
        return mb_scn__err(err, s, mb_scn__at(mk->tp, mk->parallel, NULL),
                           "tp = %d does not divide num_kv_heads = %d (query groups) of model %s", s->tp,
                           m->num_kv_heads, mn);

    if (s->sequence_parallel < 0 || s->tp == 1)
        s->sequence_parallel = s->tp > 1;
    if (s->ep > 1 && s->tp > 1 && !s->sequence_parallel)
        return mb_scn__err(err, s, mb_scn__at(mk->sp, mk->parallel, NULL),
                           "ep > 1 with tp > 1 requires sequence_parallel: true (Megatron-Core MoE)");

    if (s->cp > 1 && s->seq_length % (2 * s->cp))
        return mb_scn__err(err, s, mb_scn__at(mk->cp, mk->parallel, NULL),
                           "2*cp = %d does not divide seq_length = %d (context parallel cuts each "
                           "sequence into 2*cp chunks)", 2 * s->cp, s->seq_length);

    if (s->ep > 1 && m->num_experts <= 0)
        return mb_scn__err(err, s, mb_scn__at(mk->ep, mk->parallel, NULL),
                           "ep = %d needs an MoE model; %s has no experts", s->ep, mn);
    if (s->etp > 1 && m->num_experts <= 0)
        return mb_scn__err(err, s, mb_scn__at(mk->etp, mk->parallel, NULL),
                           "etp = %d needs an MoE model; %s has no experts", s->etp, mn);
    if (m->num_experts > 0 && m->num_experts % s->ep)
        return mb_scn__err(err, s, mb_scn__at(mk->ep, mk->parallel, NULL),
                           "ep = %d does not divide num_experts = %d of model %s", s->ep, m->num_experts, mn);
    long expert_grid = (long)s->ep * s->etp;
    long world_per_pp = (long)s->tp * s->cp * s->dp;
    if (world_per_pp % expert_grid)
        return mb_scn__err(err, s, mb_scn__at(mk->ep, mk->etp, mk->parallel),
                           "ep*etp = %ld does not divide tp*cp*dp = %ld (expert data parallel = "
                           "gpus / (ep*etp*pp) must be whole)", expert_grid, world_per_pp);

    long mbs_dp = (long)s->micro_batch_size * s->dp;
    if (s->global_batch_size % mbs_dp)
        return mb_scn__err(err, s, mb_scn__at(mk->gbs, mk->data, NULL),
                           "global_batch_size = %d is not divisible by micro_batch_size*dp = %ld "
                           "(micro_batch_size = %d, dp = %d)",
                           s->global_batch_size, mbs_dp, s->micro_batch_size, s->dp);
    long microbatches = s->global_batch_size / mbs_dp;

    if (s->vpp > 1) {
        const struct mb_node *at = mb_scn__at(mk->vpp, mk->parallel, NULL);
        if (s->pp < 2)
            return mb_scn__err(err, s, at, "vpp = %d requires pp > 1", s->vpp);
        /* An uneven split is allowed: Megatron places it with an explicit
         * --pipeline-model-parallel-layout (or account_for_embedding/loss);
         * mbsim gives the first num_layers % (pp*vpp) virtual stages one
         * extra layer. Every virtual stage needs at least one layer. */
        if (m->num_layers > 0 && m->num_layers + 2 < s->pp * s->vpp)
            return mb_scn__err(err, s, at,
                               "pp*vpp = %d exceeds num_layers + 2 = %d of model %s (embedding and loss "
                               "may each take one pipeline slot, no more)",
                               s->pp * s->vpp, m->num_layers + 2, mn);
        if (microbatches % s->pp)
            return mb_scn__err(err, s, at,
                               "interleaved pipeline (vpp = %d) needs microbatches %% pp == 0; "
                               "microbatches = global_batch_size/(micro_batch_size*dp) = %ld, pp = %d",
                               s->vpp, microbatches, s->pp);
    }

    if (s->pipeline_layout[0]) {
        /* Megatron: one segment per virtual stage, E first, L last, every decoder
         * (and MTP) layer placed exactly once */
        const struct mb_node *at = mk->layout;
        int segs = 1, nt = 0, nm = 0;
        for (const char *c = s->pipeline_layout; *c; c++) {
            segs += *c == '|';
            nt += *c == 't';
            nm += *c == 'm';
        }
        const char *lastseg = strrchr(s->pipeline_layout, '|');
        lastseg = lastseg ? lastseg + 1 : s->pipeline_layout;
        size_t firstlen = strcspn(s->pipeline_layout, "|");
        if (segs != s->pp * s->vpp)
            return mb_scn__err(err, s, at, "pipeline_layout has %d stages; pp*vpp = %d", segs, s->pp * s->vpp);
        if (nt != m->num_layers)
            return mb_scn__err(err, s, at, "pipeline_layout places %d decoder layers ('t'); model %s has %d", nt, mn,
                               m->num_layers);
        if (nm != m->mtp_layers)
            return mb_scn__err(err, s, at, "pipeline_layout places %d MTP layers ('m'); model %s has %d", nm, mn,
                               m->mtp_layers);
        if (memchr(s->pipeline_layout, 'E', firstlen) == NULL || strchr(s->pipeline_layout, 'E') !=
                                                                      memchr(s->pipeline_layout, 'E', firstlen))
            return mb_scn__err(err, s, at, "pipeline_layout: the embedding 'E' must be in the first stage, once");
        if (!strchr(lastseg, 'L') || strchr(s->pipeline_layout, 'L') != strchr(lastseg, 'L'))
            return mb_scn__err(err, s, at, "pipeline_layout: the loss 'L' must be in the last stage, once");
        if (nm > 0 && (int)(strchr(lastseg, 'm') ? 1 : 0) == 0)
            return mb_scn__err(err, s, at, "pipeline_layout: MTP layers 'm' must be in the last stage");
    }

    if (s->recompute == MB_RC_SELECTIVE) {
        const struct mb_node *at = mb_scn__at(mk->rc_modules, mk->rc, NULL);
        unsigned rm = s->recompute_modules;
        if ((rm & MB_RCM_MLA_UP_PROJ) && !mb_scn__has_mixer(m, MB_MIX_MLA) && m->kv_lora_rank <= 0)
            return mb_scn__err(err, s, at, "recompute module mla_up_proj needs an MLA model; %s has none", mn);
        if ((rm & MB_RCM_GDN_NORM_OUT) && !mb_scn__has_mixer(m, MB_MIX_GDN) && m->gdn_v_heads <= 0)
            return mb_scn__err(err, s, at,
                               "recompute module gdn_norm_out needs a Gated DeltaNet model; %s has none", mn);
        if ((rm & (MB_RCM_MOE_ACT | MB_RCM_MOE)) && m->num_experts <= 0)
            return mb_scn__err(err, s, at, "recompute module %s needs an MoE model; %s has no experts",
                               (rm & MB_RCM_MOE_ACT) ? "moe_act" : "moe", mn);
        if ((rm & MB_RCM_SHARED_EXPERTS) && m->shared_ffn_hidden <= 0)
            return mb_scn__err(err, s, at, "recompute module shared_experts needs shared experts; %s has none",
                               mn);
    }
    if (s->recompute == MB_RC_FULL && m->num_layers > 0 &&
        (s->recompute_num_layers < 0 || s->recompute_num_layers > m->num_layers / s->pp + (m->num_layers % s->pp != 0)))
        return mb_scn__err(err, s, mb_scn__at(mk->rc_layers, mk->rc, NULL),
                           "recompute num_layers = %d exceeds the layers per pipeline stage (%d)",
                           s->recompute_num_layers, (m->num_layers + s->pp - 1) / s->pp);

    if (s->cuda_graph & (MB_CG_MOE | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS) && m->num_experts <= 0)
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph modules moe/moe_router/moe_preprocess need an "
                           "MoE model; %s has no experts", mn);
    if ((s->cuda_graph & MB_CG_MOE_PREPROCESS) && !(s->cuda_graph & MB_CG_MOE_ROUTER))
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module moe_preprocess requires moe_router");
    if ((s->cuda_graph & MB_CG_MAMBA) && !mb_scn__has_mixer(m, MB_MIX_MAMBA) && m->mamba_heads <= 0)
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module mamba needs a Mamba model; %s has none", mn);

    /* 1F1B all-to-all overlap pairs each backward with the next forward on one
     * stage; with pp > 1 Megatron runs it only inside interleaved schedules
     * (combined 1F1B needs a virtual pipeline) */
    if (!s->dist_opt && s->strategy == MB_STRAT_FSDP)
        return mb_scn__err(err, s, mk->dist_opt ? mk->dist_opt : mk->strategy,
                           "optimizer.distributed: false needs strategy 3d (FSDP shards the optimizer state "
                           "by construction)");
    if (s->fsdp_prefetch != 1 && s->strategy != MB_STRAT_FSDP)
        return mb_scn__err(err, s, mk->overlap,
                           "overlap.fsdp_prefetch = %d applies to strategy fsdp only (this scenario is 3d)",
                           s->fsdp_prefetch);
    if (s->overlap_ep_comm && s->pp > 1 && s->vpp < 2)
        return mb_scn__err(err, s, mk->overlap,
                           "overlap.ep_comm with pp = %d needs an interleaved schedule (parallel.vpp >= 2), as "
                           "Megatron-Core's combined 1F1B does; set vpp or turn the overlap off", s->pp);

    int vision = m->vision.depth > 0;
    if ((s->freeze & (MB_FREEZE_VISION | MB_FREEZE_VISION_PROJ)) && !vision)
        return mb_scn__err(err, s, mk->freeze, "freeze: model %s has no vision encoder", mn);
    if (s->mock && s->images.dist != MB_IMG_NONE)
        return mb_scn__err(err, s, mb_scn__at(mk->images, mk->data, NULL),
                           "data.images and data.mock: true exclude each other (mock data has no images)");
    if (s->images.dist != MB_IMG_NONE && !vision)
        return mb_scn__err(err, s, mb_scn__at(mk->images, mk->data, NULL),
                           "data.images given but model %s has no vision encoder", mn);
    if (vision && !s->mock && s->images.dist == MB_IMG_NONE)
        return mb_scn__err(err, s, mb_scn__at(mk->data, mk->model, NULL),
                           "model %s has a vision encoder: give data.images or data.mock: true", mn);
    if (vision && !s->mock && s->images.dist != MB_IMG_NONE) {
        /* the largest sample the distribution can draw must fit in the sequence */
        double worst = 0, merged;
        if (s->images.dist == MB_IMG_UNIFORM) {
            mb_model_image_patches(m, s->images.side_max, s->images.side_max, &merged);
            worst = merged;
        } else {
            for (int i = 0; i < s->images.n_sizes; i++) {
                mb_model_image_patches(m, s->images.height[i], s->images.width[i], &merged);
                if (merged > worst)
                    worst = merged;
            }
        }
        int n = s->images.per_sample_max > s->images.per_sample_min ? s->images.per_sample_max
                                                                    : s->images.per_sample_min;
        if (worst * n > s->seq_length)
            return mb_scn__err(err, s, mb_scn__at(mk->images, mk->data, NULL),
                               "data.images: a sample can hold %d images of up to %.0f LLM tokens each "
                               "(%.0f tokens), more than seq_length = %d",
                               n, worst, worst * n, s->seq_length);
    }
    return 0;
}

int mb_scenario_group_local(int size, int stride, int dom)
{
    if ((long)size * stride <= dom)
        return size;
    int per = stride > 0 ? dom / stride : 1;
    return per < 1 ? 1 : per > size ? size : per;
}

static int mb_scn__check_system(struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    if (s->allreduce_algo == MB_COLL_ALGO_NVLS && !s->system.nvls)
        return mb_scn__err(err, s, mk ? mk->allreduce : NULL,
                           "collectives.all_reduce: nvls needs NVLink SHARP (NVSwitch gen3+); system %s has none",
                           s->system.name);
    if (s->allreduce_algo == MB_COLL_ALGO_NVLS && !s->dist_opt && s->strategy != MB_STRAT_FSDP) {
        /* NVLS reduces inside an NVLink domain: the all-reduced groups need 2+ members there */
        int dom = s->system.nvlink_domain > 0 ? s->system.nvlink_domain : s->system.gpus_per_node;
        int dp_local = mb_scenario_group_local(s->dp, s->tp * s->cp, dom);
        int edp = s->tp * s->cp * s->dp / (s->ep * s->etp);
        int edp_local = mb_scenario_group_local(edp, s->ep * s->etp, dom);
        if (s->dp > 1 && dp_local < 2)
            return mb_scn__err(err, s, mk ? mk->allreduce : NULL,
                               "collectives.all_reduce: nvls needs 2 or more GPUs of the DP group in one NVLink "
                               "domain; with tp*cp = %d on %d-GPU domains each has 1",
                               s->tp * s->cp, dom);
        if (s->model.num_experts > 0 && edp > 1 && edp_local < 2)
            return mb_scn__err(err, s, mk ? mk->allreduce : NULL,
                               "collectives.all_reduce: nvls needs 2 or more GPUs of the expert-DP group in one "
                               "NVLink domain; with ep*etp = %d on %d-GPU domains each has 1",
                               s->ep * s->etp, dom);
    }
    if (s->system.max_gpus > 0 && s->gpus > s->system.max_gpus)
        return mb_scn__err(err, s, mk ? mk->gpus : NULL, "gpus = %d exceeds max_gpus = %d of system %s",
                           s->gpus, s->system.max_gpus, s->system.name);
    return 0;
}

int mb_scenario_check(struct mb_scenario *s, struct mb_err *err)
{
    if (mb_scn__check_layout(s, NULL, err))
        return -1;
    return mb_scn__check_system(s, NULL, err);
}

/* ------------------------------------------------------------------ loader */

#define F_(st, key, type, member, req, mn, mx, unit) \
    { key, type, offsetof(struct st, member), sizeof(((struct st *)0)->member), req, mn, mx, unit }

/* Top level: every section is taken as a node and read by its own table. */
struct mb_scn__top {
    const struct mb_node *schema_version, *model, *system, *precision, *data, *parallel, *moe;
    const struct mb_node *recompute, *cuda_graph, *freeze, *overlap, *optimizer, *collectives, *calibration;
    const struct mb_node *measured;
    char name[128];
};
#define FT_(key, type, member, req) F_(mb_scn__top, key, type, member, req, 1, 0, MB_UNIT_NONE)
static const struct mb_field mb_scn__top_fields[] = {
    FT_("schema_version", MB_F_NODE, schema_version, 1),
    FT_("name", MB_F_STRBUF, name, 1),
    FT_("model", MB_F_NODE, model, 1),
    FT_("system", MB_F_NODE, system, 1),
    FT_("precision", MB_F_NODE, precision, 0),
    FT_("data", MB_F_NODE, data, 1),
    FT_("parallel", MB_F_NODE, parallel, 0),
    FT_("moe", MB_F_NODE, moe, 0),
    FT_("recompute", MB_F_NODE, recompute, 0),
    FT_("cuda_graph", MB_F_NODE, cuda_graph, 0),
    FT_("freeze", MB_F_NODE, freeze, 0),
    FT_("overlap", MB_F_NODE, overlap, 0),
    FT_("optimizer", MB_F_NODE, optimizer, 0),
    FT_("collectives", MB_F_NODE, collectives, 0),
    FT_("calibration", MB_F_NODE, calibration, 0),
    FT_("measured", MB_F_NODE, measured, 0),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__sys {
    char preset[512];
    long gpus;
};
static const struct mb_field mb_scn__sys_fields[] = {
    F_(mb_scn__sys, "preset", MB_F_STRBUF, preset, 1, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__sys, "gpus", MB_F_INT, gpus, 1, 1, 1e6, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__data {
    long seq_length, global_batch_size, micro_batch_size;
    int mock;
    const struct mb_node *images;
    const struct mb_node *packing, *text_tokens;
};
static const struct mb_field mb_scn__data_fields[] = {
    F_(mb_scn__data, "seq_length", MB_F_INT, seq_length, 1, 1, 1e8, MB_UNIT_NONE),
    F_(mb_scn__data, "global_batch_size", MB_F_INT, global_batch_size, 1, 1, 1e9, MB_UNIT_NONE),
    F_(mb_scn__data, "micro_batch_size", MB_F_INT, micro_batch_size, 0, 1, 1e6, MB_UNIT_NONE),
    F_(mb_scn__data, "mock", MB_F_BOOL, mock, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__data, "images", MB_F_NODE, images, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__data, "packing", MB_F_NODE, packing, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__data, "text_tokens", MB_F_NODE, text_tokens, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__img {
    const struct mb_node *per_sample, *sizes;
    long seed;
};
static const struct mb_field mb_scn__img_fields[] = {
    F_(mb_scn__img, "per_sample", MB_F_NODE, per_sample, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__img, "sizes", MB_F_NODE, sizes, 1, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__img, "seed", MB_F_INT, seed, 0, 0, 1e18, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__dist {
    const struct mb_node *distribution;
    long min, max;
};
static const struct mb_field mb_scn__dist_fields[] = {
    F_(mb_scn__dist, "distribution", MB_F_NODE, distribution, 1, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__dist, "min", MB_F_INT, min, 1, 1, 100000, MB_UNIT_NONE),
    F_(mb_scn__dist, "max", MB_F_INT, max, 1, 1, 100000, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__par {
    const struct mb_node *strategy, *tp, *pp, *vpp, *cp, *ep, *etp, *layout, *cp_comm;
    int sequence_parallel;
};
#define FP_(key, member) F_(mb_scn__par, key, MB_F_NODE, member, 0, 1, 0, MB_UNIT_NONE)
static const struct mb_field mb_scn__par_fields[] = {
    FP_("strategy", strategy), FP_("tp", tp), FP_("pp", pp), FP_("vpp", vpp), FP_("cp", cp),
    FP_("ep", ep), FP_("etp", etp), FP_("pipeline_layout", layout), FP_("cp_comm_type", cp_comm),
    F_(mb_scn__par, "sequence_parallel", MB_F_BOOL, sequence_parallel, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__opt {
    const struct mb_node *main_grads, *states;
    int distributed;
};
static const struct mb_field mb_scn__opt_fields[] = {
    F_(mb_scn__opt, "main_grads", MB_F_NODE, main_grads, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__opt, "states", MB_F_NODE, states, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__opt, "distributed", MB_F_BOOL, distributed, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__coll {
    const struct mb_node *all_reduce;
};
static const struct mb_field mb_scn__coll_fields[] = {
    F_(mb_scn__coll, "all_reduce", MB_F_NODE, all_reduce, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};
/* NCCL_ALGO names for all_reduce (sim/mb_coll.h) */
static const struct mb_scn__name mb_scn__ar_algos[] = {{"auto", MB_COLL_ALGO_AUTO},
                                                       {"ring", MB_COLL_ALGO_RING},
                                                       {"tree", MB_COLL_ALGO_TREE},
                                                       {"nvls", MB_COLL_ALGO_NVLS},
                                                       {NULL, 0}};
/* bytes per element of the optimizer dtypes */
static const struct mb_scn__name mb_scn__dtypes[] = {{"fp32", 4}, {"bf16", 2}, {NULL, 0}};

struct mb_scn__moe {
    const struct mb_node *dispatcher, *routing;
    double skew;
    long seed, dispatcher_sms;
    double capacity_factor;
    int shared_overlap, permute_fusion;
};
static const struct mb_field mb_scn__moe_fields[] = {
    F_(mb_scn__moe, "dispatcher", MB_F_NODE, dispatcher, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__moe, "routing", MB_F_NODE, routing, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__moe, "skew", MB_F_DOUBLE, skew, 0, 0, 100, MB_UNIT_NONE),
    F_(mb_scn__moe, "seed", MB_F_INT, seed, 0, 0, 1e18, MB_UNIT_NONE),
    F_(mb_scn__moe, "dispatcher_sms", MB_F_INT, dispatcher_sms, 0, 1, 1024, MB_UNIT_NONE),
    F_(mb_scn__moe, "capacity_factor", MB_F_DOUBLE, capacity_factor, 0, 0, 1000, MB_UNIT_NONE),
    F_(mb_scn__moe, "shared_expert_overlap", MB_F_BOOL, shared_overlap, 0, 0, 1, MB_UNIT_NONE),
    F_(mb_scn__moe, "hybridep_permute_fusion", MB_F_BOOL, permute_fusion, 0, 0, 1, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__rc {
    const struct mb_node *granularity, *modules, *method, *num_layers;
};
static const struct mb_field mb_scn__rc_fields[] = {
    F_(mb_scn__rc, "granularity", MB_F_NODE, granularity, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__rc, "modules", MB_F_NODE, modules, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__rc, "method", MB_F_NODE, method, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__rc, "num_layers", MB_F_NODE, num_layers, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__cg {
    const struct mb_node *modules;
};
static const struct mb_field mb_scn__cg_fields[] = {
    F_(mb_scn__cg, "modules", MB_F_NODE, modules, 1, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__ovl {
    int grad_reduce, param_gather, tp_comm, ep_comm;
    long fsdp_prefetch;
};
static const struct mb_field mb_scn__ovl_fields[] = {
    F_(mb_scn__ovl, "grad_reduce", MB_F_BOOL, grad_reduce, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__ovl, "param_gather", MB_F_BOOL, param_gather, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__ovl, "tp_comm", MB_F_BOOL, tp_comm, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__ovl, "ep_comm", MB_F_BOOL, ep_comm, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__ovl, "fsdp_prefetch", MB_F_INT, fsdp_prefetch, 0, 0, MB_MAX_FSDP_PREFETCH, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__cal {
    char table[512];
    int roofline;
};
static const struct mb_field mb_scn__cal_fields[] = {
    F_(mb_scn__cal, "table", MB_F_STRBUF, table, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__cal, "roofline", MB_F_BOOL, roofline, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

struct mb_scn__meas {
    double tokens_per_s_per_gpu;
    const struct mb_node *model_tflops_per_gpu, *step_time_s, *peak_memory_gib;
    char source[256];
};
static const struct mb_field mb_scn__meas_fields[] = {
    F_(mb_scn__meas, "tokens_per_s_per_gpu", MB_F_DOUBLE, tokens_per_s_per_gpu, 0, 0, 1e12, MB_UNIT_NONE),
    F_(mb_scn__meas, "model_tflops_per_gpu", MB_F_NODE, model_tflops_per_gpu, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__meas, "step_time_s", MB_F_NODE, step_time_s, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__meas, "peak_memory_gib", MB_F_NODE, peak_memory_gib, 0, 1, 0, MB_UNIT_NONE),
    F_(mb_scn__meas, "source", MB_F_STRBUF, source, 0, 1, 0, MB_UNIT_NONE),
    {NULL, MB_F_SKIP, 0, 0, 0, 1, 0, MB_UNIT_NONE}};

/* An integer node in [lo, hi]; absent (NULL) leaves *out untouched; a null
 * node (an empty list item such as [~, 100]) is an error. */
static int mb_scn__int(const struct mb_node *n, const char *what, long lo, long hi, int *out,
                       struct mb_err *err)
{
    long v;
    if (!n)
        return 0;
    if (mb_yaml_is_null(n))
        return mb_yaml_err(err, n, "%s has no value", what);
    if (mb_yaml_int(n, &v, err))
        return -1;
    if (v < lo || v > hi)
        return mb_yaml_err(err, n, "%s = %ld is out of range [%ld, %ld]", what, v, lo, hi);
    *out = (int)v;
    return 0;
}

static const struct mb_node *mb_scn__given(const struct mb_node *n)
{
    return n && !mb_yaml_is_null(n) ? n : NULL;
}

/* "HxW" in pixels. */
static int mb_scn__hxw(const struct mb_node *n, int *h, int *w, struct mb_err *err)
{
    if (mb_yaml_expect(n, MB_NODE_SCALAR, "data.images.sizes", err))
        return -1;
    char *end;
    long hv = strtol(n->str, &end, 10);
    long wv = 0;
    int ok = end != n->str && (*end == 'x' || *end == 'X');
    if (ok) {
        const char *p = end + 1;
        wv = strtol(p, &end, 10);
        ok = end != p && !*end && isdigit((unsigned char)*p) && isdigit((unsigned char)n->str[0]);
    }
    if (!ok || hv < 1 || wv < 1 || hv > 100000 || wv > 100000)
        return mb_yaml_err(err, n, "data.images.sizes: expected 'HxW' in pixels such as '448x448', got '%s'",
                           n->str);
    *h = (int)hv;
    *w = (int)wv;
    return 0;
}

static int mb_scn__images(const struct mb_node *map, struct mb_images *im, struct mb_err *err)
{
    struct mb_scn__img y = {NULL, NULL, (long)im->seed};
    if (mb_yaml_read_fields(map, mb_scn__img_fields, &y, "data.images", NULL, err))
        return -1;
    im->seed = (unsigned long long)y.seed;
    const struct mb_node *ps = mb_scn__given(y.per_sample);
    if (ps && ps->kind == MB_NODE_SEQ) {
        if (ps->n != 2)
            return mb_yaml_err(err, ps, "data.images.per_sample: expected N or [min, max], got %zu items", ps->n);
        if (mb_scn__int(ps->items[0], "data.images.per_sample min", 0, 1024, &im->per_sample_min, err) ||
            mb_scn__int(ps->items[1], "data.images.per_sample max", 1, 1024, &im->per_sample_max, err))
            return -1;
        if (im->per_sample_min > im->per_sample_max)
            return mb_yaml_err(err, ps, "data.images.per_sample: min %d > max %d", im->per_sample_min,
                               im->per_sample_max);
    } else if (ps) {
        if (mb_scn__int(ps, "data.images.per_sample", 1, 1024, &im->per_sample_min, err))
            return -1;
        im->per_sample_max = im->per_sample_min;
    }
    const struct mb_node *sz = y.sizes;
    if (sz->kind == MB_NODE_SCALAR) {
        im->dist = MB_IMG_FIXED;
        im->n_sizes = 1;
        return mb_scn__hxw(sz, &im->height[0], &im->width[0], err);
    }
    if (sz->kind == MB_NODE_SEQ) {
        if (sz->n < 1 || sz->n > MB_IMG_LIST_MAX)
            return mb_yaml_err(err, sz, "data.images.sizes: a list needs 1 to %d entries, got %zu",
                               MB_IMG_LIST_MAX, sz->n);
        im->dist = MB_IMG_LIST;
        im->n_sizes = (int)sz->n;
        for (size_t i = 0; i < sz->n; i++)
            if (mb_scn__hxw(sz->items[i], &im->height[i], &im->width[i], err))
                return -1;
        return 0;
    }
    struct mb_scn__dist d = {NULL, 0, 0};
    if (mb_yaml_read_fields(sz, mb_scn__dist_fields, &d, "data.images.sizes", NULL, err))
        return -1;
    static const struct mb_scn__name dists[] = {{"uniform", MB_IMG_UNIFORM}, {NULL, 0}};
    unsigned dv;
    if (mb_scn__enum(d.distribution, "data.images.sizes.distribution", dists, &dv, err))
        return -1;
    if (d.min > d.max)
        return mb_yaml_err(err, sz, "data.images.sizes: min %ld > max %ld", d.min, d.max);
    im->dist = MB_IMG_UNIFORM;
    im->side_min = (int)d.min;
    im->side_max = (int)d.max;
    return 0;
}

/* ------------------------------------------------------------ pipeline layout */

struct mb_scn__lay {
    const char *in;
    size_t at;
    char *out;
    size_t n, len;
    char msg[200];
};

static int mb_scn__lay_put(struct mb_scn__lay *p, char c)
{
    if (p->n + 1 >= p->len) {
        snprintf(p->msg, sizeof p->msg, "expands to more than %zu items", p->len - 1);
        return -1;
    }
    p->out[p->n++] = c;
    p->out[p->n] = '\0';
    return 0;
}

static int mb_scn__lay_seq(struct mb_scn__lay *p, int depth);

/* "*N" after an item or group: the repeat count, 1 when absent. */
static int mb_scn__lay_count(struct mb_scn__lay *p, long *n)
{
    *n = 1;
    if (p->in[p->at] != '*')
        return 0;
    p->at++;
    char *end;
    long v = strtol(p->in + p->at, &end, 10);
    if (end == p->in + p->at || v < 0 || v > 100000) {
        snprintf(p->msg, sizeof p->msg, "expected a repeat count after '*'");
        return -1;
    }
    p->at = (size_t)(end - p->in);
    *n = v;
    return 0;
}

static int mb_scn__lay_seq(struct mb_scn__lay *p, int depth)
{
    while (p->in[p->at] && p->in[p->at] != ')') {
        char c = p->in[p->at];
        if (c == ' ') {
            p->at++;
            continue;
        }
        if (c == '(') {
            size_t open = p->at++;
            size_t from = p->n;
            if (depth > 16) {
                snprintf(p->msg, sizeof p->msg, "groups nested too deep");
                return -1;
            }
            if (mb_scn__lay_seq(p, depth + 1))
                return -1;
            if (p->in[p->at] != ')') {
                p->at = open;
                snprintf(p->msg, sizeof p->msg, "unclosed '('");
                return -1;
            }
            p->at++;
            long k;
            if (mb_scn__lay_count(p, &k))
                return -1;
            size_t glen = p->n - from;
            char grp[1024];
            if (glen >= sizeof grp) {
                snprintf(p->msg, sizeof p->msg, "group too long");
                return -1;
            }
            memcpy(grp, p->out + from, glen);
            p->n = from;
            for (long r = 0; r < k; r++)
                for (size_t i = 0; i < glen; i++)
                    if (mb_scn__lay_put(p, grp[i]))
                        return -1;
            continue;
        }
        if (!strchr("EtmL|", c)) {
            snprintf(p->msg, sizeof p->msg, "unexpected '%c'; expected E, t, m, L, |, (...) or *N", c);
            return -1;
        }
        p->at++;
        long k;
        if (mb_scn__lay_count(p, &k))
            return -1;
        for (long r = 0; r < k; r++)
            if (mb_scn__lay_put(p, c))
                return -1;
    }
    return 0;
}

int mb_pipeline_layout_expand(const char *in, char *out, size_t len, size_t *bad, char *msg, size_t msglen)
{
    struct mb_scn__lay p = {in, 0, out, 0, len, ""};
    out[0] = '\0';
    if (mb_scn__lay_seq(&p, 0) == 0 && in[p.at] == ')')
        snprintf(p.msg, sizeof p.msg, "')' without '('");
    if (p.msg[0]) {
        *bad = p.at;
        snprintf(msg, msglen, "%s", p.msg);
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* Directory part of path ("." if none); caller frees. */
static char *mb_scn__dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return mb_strdup(".");
    if (slash == path)
        return mb_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = mb_malloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

/* A model/system reference is a path when it contains '/' or ends in .yaml/.yml;
 * relative paths are taken from the scenario file's folder. Caller frees. */
static char *mb_scn__ref(const char *dir, const char *ref)
{
    size_t n = strlen(ref);
    int is_path = strchr(ref, '/') != NULL || (n > 5 && strcmp(ref + n - 5, ".yaml") == 0) ||
                  (n > 4 && strcmp(ref + n - 4, ".yml") == 0);
    if (!is_path || ref[0] == '/')
        return mb_strdup(ref);
    return mb_path_join(dir, ref);
}

/* Move an error from a sub-loader into err: keep its own position when it has
 * one (an error inside the model file), otherwise place it at node n. */
/* An error from a file the scenario names (model, system, calibration table):
 * with a position inside that file it is reported there; without one (cannot
 * open, a directory) at the scenario's key, naming the file. */
static int mb_scn__relay(struct mb_err *err, const struct mb_node *n, const struct mb_err *sub)
{
    if (sub->file[0] && sub->line > 0)
        return mb_err_set(err, sub->file, sub->line, sub->col, "%s", sub->msg);
    if (sub->file[0])
        return mb_yaml_err(err, n, "%s: %s", sub->file, sub->msg);
    return mb_yaml_err(err, n, "%s", sub->msg);
}

static int mb_scn__quantity(const struct mb_node *n, enum mb_unit unit, double scale, double *out,
                            struct mb_err *err)
{
    /* bare numbers are in the key's unit (scale = base units per key unit) */
    double v;
    if (!n || mb_yaml_is_null(n))
        return 0;
    if (mb_yaml_quantity(n, unit, 1, &v, err))
        return -1;
    char *end;
    strtod(n->str, &end);
    while (*end == ' ')
        end++;
    *out = *end ? v / scale : v;
    if (*out < 0)
        return mb_yaml_err(err, n, "expected a value >= 0, got '%s'", n->str);
    return 0;
}

static int mb_scn__parse(const struct mb_node *root, const char *dir, struct mb_scenario *s,
                         struct mb_scn__marks *mk, struct mb_scn__top *top, struct mb_scn__sys *sys,
                         struct mb_err *err)
{
    unsigned v;
    /* system */
    if (mb_yaml_read_fields(top->system, mb_scn__sys_fields, sys, "system", NULL, err))
        return -1;
    s->gpus = (int)sys->gpus;
    mk->gpus = mb_yaml_get(top->system, "gpus");

    /* precision */
    if (mb_scn__given(top->precision)) {
        if (mb_yaml_expect(top->precision, MB_NODE_SCALAR, "precision", err))
            return -1;
        if (mb_precision_parse(top->precision->str, &s->prec))
            return mb_yaml_err(err, top->precision, "precision: unknown value '%s'; expected one of: bf16, "
                               "fp16, fp8, fp8_cs, fp8_blockwise, mxfp8, nvfp4", top->precision->str);
    }

    /* data */
    struct mb_scn__data d = {0, 0, s->micro_batch_size, s->mock, NULL, NULL, NULL};
    if (mb_yaml_read_fields(top->data, mb_scn__data_fields, &d, "data", NULL, err))
        return -1;
    s->seq_length = (int)d.seq_length;
    s->global_batch_size = (int)d.global_batch_size;
    s->micro_batch_size = (int)d.micro_batch_size;
    s->mock = d.mock;
    mk->data = top->data;
    mk->seq = mb_yaml_get(top->data, "seq_length");
    mk->gbs = mb_yaml_get(top->data, "global_batch_size");
    mk->mbs = mb_yaml_get(top->data, "micro_batch_size");
    mk->mock = mb_yaml_get(top->data, "mock");
    if (mb_scn__given(d.images)) {
        mk->images = d.images;
        if (mb_scn__images(d.images, &s->images, err))
            return -1;
    }
    if (mb_scn__given(d.packing)) {
        static const struct mb_scn__name packs[] = {{"padded", 0}, {"packed", 1}, {NULL, 0}};
        unsigned pv;
        if (mb_scn__enum(d.packing, "data.packing", packs, &pv, err))
            return -1;
        s->packed = (int)pv;
    }
    const struct mb_node *tt = mb_scn__given(d.text_tokens);
    if (tt) {
        if (s->mock)
            return mb_yaml_err(err, tt, "data.text_tokens describes real samples; mock data fills whole sequences");
        if (tt->kind == MB_NODE_SEQ) {
            if (tt->n != 2)
                return mb_yaml_err(err, tt, "data.text_tokens: expected N or [min, max], got %zu items", tt->n);
            if (mb_scn__int(tt->items[0], "data.text_tokens min", 1, 100000000, &s->text_min, err) ||
                mb_scn__int(tt->items[1], "data.text_tokens max", 1, 100000000, &s->text_max, err))
                return -1;
            if (s->text_min > s->text_max)
                return mb_yaml_err(err, tt, "data.text_tokens: min %d > max %d", s->text_min, s->text_max);
        } else {
            if (mb_scn__int(tt, "data.text_tokens", 1, 100000000, &s->text_min, err))
                return -1;
            s->text_max = s->text_min;
        }
    }

    /* parallel */
    if (mb_scn__given(top->parallel)) {
        struct mb_scn__par p;
        memset(&p, 0, sizeof p);
        p.sequence_parallel = -1;
        if (mb_yaml_read_fields(top->parallel, mb_scn__par_fields, &p, "parallel", NULL, err))
            return -1;
        mk->parallel = top->parallel;
        if (mb_scn__given(p.strategy)) {
            if (mb_scn__enum(p.strategy, "parallel.strategy", mb_scn__strategies, &v, err))
                return -1;
            s->strategy = (enum mb_strategy)v;
        }
        if (mb_scn__int(p.tp, "parallel.tp", 1, 65536, &s->tp, err) ||
            mb_scn__int(p.pp, "parallel.pp", 1, 65536, &s->pp, err) ||
            mb_scn__int(p.vpp, "parallel.vpp", 1, 65536, &s->vpp, err) ||
            mb_scn__int(p.cp, "parallel.cp", 1, 65536, &s->cp, err) ||
            mb_scn__int(p.ep, "parallel.ep", 1, 65536, &s->ep, err) ||
            mb_scn__int(p.etp, "parallel.etp", 1, 65536, &s->etp, err))
            return -1;
        s->sequence_parallel = p.sequence_parallel;
        if (mb_scn__given(p.cp_comm)) {
            /* Megatron --cp-comm-type: p2p (ring attention) or a2a (DeepSpeed-Ulysses style) */
            static const struct mb_scn__name cpt[] = {{"p2p", 0}, {"a2a", 1}, {NULL, 0}};
            unsigned cv;
            if (mb_scn__enum(p.cp_comm, "parallel.cp_comm_type", cpt, &cv, err))
                return -1;
            s->cp_a2a = (int)cv;
        }
        const struct mb_node *ly = mb_scn__given(p.layout);
        if (ly) {
            char msg[200];
            size_t bad = 0;
            if (mb_yaml_expect(ly, MB_NODE_SCALAR, "parallel.pipeline_layout", err))
                return -1;
            if (mb_pipeline_layout_expand(ly->str, s->pipeline_layout, sizeof s->pipeline_layout, &bad, msg,
                                          sizeof msg))
                return mb_err_set(err, ly->file, ly->line, ly->col + (ly->quoted ? 1 : 0) + (int)bad,
                                  "parallel.pipeline_layout: %s", msg);
            mk->layout = ly;
        }
        mk->strategy = mb_scn__given(p.strategy);
        mk->tp = mb_scn__given(p.tp);
        mk->pp = mb_scn__given(p.pp);
        mk->vpp = mb_scn__given(p.vpp);
        mk->cp = mb_scn__given(p.cp);
        mk->ep = mb_scn__given(p.ep);
        mk->etp = mb_scn__given(p.etp);
        mk->sp = mb_yaml_get(top->parallel, "sequence_parallel");
    }

    /* moe */
    if (mb_scn__given(top->moe)) {
        struct mb_scn__moe mo = {NULL, NULL, s->routing_skew, (long)s->routing_seed, s->dispatcher_sms,
                                 s->capacity_factor, s->shared_expert_overlap, s->hybridep_permute_fusion};
        if (mb_yaml_read_fields(top->moe, mb_scn__moe_fields, &mo, "moe", NULL, err))
            return -1;
        if (mb_scn__given(mo.dispatcher)) {
            if (mb_scn__enum(mo.dispatcher, "moe.dispatcher", mb_scn__dispatchers, &v, err))
                return -1;
            s->dispatcher = (enum mb_dispatcher)v;
        }
        if (mb_scn__given(mo.routing)) {
            if (mb_scn__enum(mo.routing, "moe.routing", mb_scn__routings, &v, err))
                return -1;
            s->routing = (enum mb_routing)v;
        }
        s->routing_skew = mo.skew;
        s->routing_seed = (unsigned long long)mo.seed;
        s->dispatcher_sms = (int)mo.dispatcher_sms;
        s->capacity_factor = mo.capacity_factor;
        s->shared_expert_overlap = mo.shared_overlap;
        s->hybridep_permute_fusion = mo.permute_fusion;
        if (s->capacity_factor > 0 && s->capacity_factor < 1)
            return mb_yaml_err(err, mb_yaml_get(top->moe, "capacity_factor"),
                               "moe.capacity_factor = %g: below 1 even balanced routing would drop tokens; "
                               "use >= 1, or 0 for dropless", s->capacity_factor);
    }

    /* recompute */
    if (mb_scn__given(top->recompute)) {
        struct mb_scn__rc r = {NULL, NULL, NULL, NULL};
        if (mb_yaml_read_fields(top->recompute, mb_scn__rc_fields, &r, "recompute", NULL, err))
            return -1;
        mk->rc = top->recompute;
        int gran_given = 0;
        if (mb_scn__given(r.granularity)) {
            if (mb_scn__enum(r.granularity, "recompute.granularity", mb_scn__granularities, &v, err))
                return -1;
            s->recompute = (enum mb_rc_gran)v;
            gran_given = 1;
        }
        if (mb_scn__given(r.modules)) {
            mk->rc_modules = r.modules;
            if (mb_scn__flags(r.modules, "recompute.modules", mb_scn__rc_modules, 0, &s->recompute_modules, err))
                return -1;
            if (!gran_given)
                s->recompute = MB_RC_SELECTIVE;
            else if (s->recompute != MB_RC_SELECTIVE)
                return mb_yaml_err(err, r.modules, "recompute.modules applies only to granularity: selective");
        } else if (s->recompute == MB_RC_SELECTIVE) {
            s->recompute_modules = MB_RCM_CORE_ATTN; /* Megatron-Core default ["core_attn"] */
        }
        if (mb_scn__given(r.method)) {
            if (mb_scn__enum(r.method, "recompute.method", mb_scn__rc_methods, &v, err))
                return -1;
            if (s->recompute != MB_RC_FULL)
                return mb_yaml_err(err, r.method, "recompute.method applies only to granularity: full");
            s->recompute_method = (enum mb_rc_method)v;
        }
        if (mb_scn__given(r.num_layers)) {
            mk->rc_layers = r.num_layers;
            if (mb_scn__int(r.num_layers, "recompute.num_layers", 0, 100000, &s->recompute_num_layers, err))
                return -1;
            if (s->recompute != MB_RC_FULL)
                return mb_yaml_err(err, r.num_layers, "recompute.num_layers applies only to granularity: full");
        }
    }

    /* cuda_graph */
    if (mb_scn__given(top->cuda_graph)) {
        struct mb_scn__cg c = {NULL};
        if (mb_yaml_read_fields(top->cuda_graph, mb_scn__cg_fields, &c, "cuda_graph", NULL, err))
            return -1;
        mk->cuda_graph = c.modules;
        if (mb_scn__flags(c.modules, "cuda_graph.modules", mb_scn__cg_modules, 1, &s->cuda_graph, err))
            return -1;
        if (c.modules->kind == MB_NODE_SEQ && c.modules->n == 0)
            s->cuda_graph = MB_CG_LAYER; /* empty list = whole layer (Megatron) */
        if ((s->cuda_graph & MB_CG_FULL_ITERATION) && s->cuda_graph != MB_CG_FULL_ITERATION)
            return mb_yaml_err(err, c.modules, "cuda_graph.modules: full_iteration cannot be combined with "
                               "other modules");
        if ((s->cuda_graph & MB_CG_LAYER) && s->cuda_graph != MB_CG_LAYER)
            return mb_yaml_err(err, c.modules, "cuda_graph.modules: layer (whole layer) cannot be combined "
                               "with other modules");
    }

    /* freeze */
    if (mb_scn__given(top->freeze)) {
        mk->freeze = top->freeze;
        if (mb_scn__flags(top->freeze, "freeze", mb_scn__freezes, 0, &s->freeze, err))
            return -1;
    }

    /* overlap */
    if (mb_scn__given(top->overlap)) {
        mk->overlap = top->overlap;
        struct mb_scn__ovl o = {s->overlap_grad_reduce, s->overlap_param_gather, s->overlap_tp_comm,
                                s->overlap_ep_comm, s->fsdp_prefetch};
        if (mb_yaml_read_fields(top->overlap, mb_scn__ovl_fields, &o, "overlap", NULL, err))
            return -1;
        s->overlap_grad_reduce = o.grad_reduce;
        s->overlap_param_gather = o.param_gather;
        s->overlap_tp_comm = o.tp_comm;
        s->overlap_ep_comm = o.ep_comm;
        s->fsdp_prefetch = (int)o.fsdp_prefetch;
    }

    /* optimizer: main-grad and Adam-state precision (Megatron --grad-reduce-in-bf16,
     * --use-precision-aware-optimizer with --exp-avg-dtype/--exp-avg-sq-dtype bf16) */
    if (mb_scn__given(top->optimizer)) {
        struct mb_scn__opt o = {NULL, NULL, s->dist_opt};
        if (mb_yaml_read_fields(top->optimizer, mb_scn__opt_fields, &o, "optimizer", NULL, err))
            return -1;
        s->dist_opt = o.distributed;
        mk->dist_opt = mb_yaml_get(top->optimizer, "distributed");
        if (mb_scn__given(o.main_grads)) {
            if (mb_scn__enum(o.main_grads, "optimizer.main_grads", mb_scn__dtypes, &v, err))
                return -1;
            s->grad_bytes = v;
        }
        if (mb_scn__given(o.states)) {
            if (mb_scn__enum(o.states, "optimizer.states", mb_scn__dtypes, &v, err))
                return -1;
            s->state_bytes = 2 * v;
        }
    }

    /* collectives: NCCL_ALGO for the all-reduces (DP gradients without the distributed optimizer) */
    if (mb_scn__given(top->collectives)) {
        struct mb_scn__coll c = {NULL};
        if (mb_yaml_read_fields(top->collectives, mb_scn__coll_fields, &c, "collectives", NULL, err))
            return -1;
        if (mb_scn__given(c.all_reduce)) {
            if (mb_scn__enum(c.all_reduce, "collectives.all_reduce", mb_scn__ar_algos, &v, err))
                return -1;
            s->allreduce_algo = v;
            mk->allreduce = c.all_reduce;
        }
    }

    /* calibration */
    if (mb_scn__given(top->calibration)) {
        struct mb_scn__cal c;
        memset(&c, 0, sizeof c);
        c.roofline = s->roofline;
        if (mb_yaml_read_fields(top->calibration, mb_scn__cal_fields, &c, "calibration", NULL, err))
            return -1;
        s->roofline = c.roofline;
        if (mb_yaml_get(top->calibration, "table") && !c.table[0])
            return mb_yaml_err(err, mb_yaml_get(top->calibration, "table"),
                               "calibration.table is empty; give a table file or leave the key out");
        if (c.table[0]) {
            char *p = c.table[0] == '/' ? mb_strdup(c.table) : mb_path_join(dir, c.table);
            int ok = strlen(p) < sizeof s->calib_path && mb_file_exists(p);
            int dir_given = !ok && mb_dir_exists(p);
            if (ok)
                snprintf(s->calib_path, sizeof s->calib_path, "%s", p);
            mb_free(p);
            if (dir_given)
                return mb_yaml_err(err, mb_yaml_get(top->calibration, "table"),
                                   "calibration.table '%s' is a directory; expected a calibration table file",
                                   c.table);
            if (!ok)
                return mb_yaml_err(err, mb_yaml_get(top->calibration, "table"),
                                   "calibration.table '%s' not found (relative paths are taken from the "
                                   "scenario file's folder)", c.table);
        }
    }

    /* measured */
    if (mb_scn__given(top->measured)) {
        struct mb_scn__meas me;
        memset(&me, 0, sizeof me);
        if (mb_yaml_read_fields(top->measured, mb_scn__meas_fields, &me, "measured", NULL, err))
            return -1;
        s->meas_tokens_per_s_per_gpu = me.tokens_per_s_per_gpu;
        if (mb_scn__quantity(me.model_tflops_per_gpu, MB_UNIT_FLOPS, 1e12, &s->meas_model_tflops_per_gpu, err) ||
            mb_scn__quantity(me.step_time_s, MB_UNIT_TIME, 1.0, &s->meas_step_time_s, err) ||
            mb_scn__quantity(me.peak_memory_gib, MB_UNIT_BYTES, 1073741824.0, &s->meas_peak_memory_gib, err))
            return -1;
        snprintf(s->meas_source, sizeof s->meas_source, "%s", me.source);
    }
    (void)root;
    return 0;
}

/* A scenario from an already loaded YAML tree (e.g. a sweep file whose `sweep:`
 * pair the caller removed); `path` names the file for messages and is the base
 * of relative model/system/calibration paths. The tree stays the caller's. */
int mb_scenario_load_node(const struct mb_node *root, const char *path, struct mb_scenario *s,
                          struct mb_err *err)
{
    mb_scenario_defaults(s);
    if (!path || !root)
        return mb_err_set(err, NULL, 0, 0, "no scenario file given");
    snprintf(s->file, sizeof s->file, "%s", path);
    char *dir = mb_scn__dirname(path);
    struct mb_scn__marks mk;
    memset(&mk, 0, sizeof mk);
    struct mb_scn__top top;
    memset(&top, 0, sizeof top);
    struct mb_scn__sys sys;
    memset(&sys, 0, sizeof sys);
    int rc = -1, model_loaded = 0;

    /* schema_version first: a file for another schema is not read further. */
    if (mb_yaml_expect(root, MB_NODE_MAP, "scenario", err))
        goto out;
    const struct mb_node *ver = mb_yaml_get(root, "schema_version");
    if (!ver) {
        mb_yaml_err(err, root, "missing required key 'schema_version' in scenario (this mbsim reads "
                    "schema_version: 1)");
        goto out;
    }
    if (mb_yaml_is_null(ver)) {
        mb_yaml_err(err, ver, "key 'schema_version' has no value (this mbsim reads schema_version: 1)");
        goto out;
    }
    long vn;
    if (ver->kind != MB_NODE_SCALAR || mb_yaml_int(ver, &vn, NULL) || vn != 1) {
        mb_yaml_err(err, ver, "unsupported schema_version '%s'; this mbsim reads schema_version: 1",
                    ver->kind == MB_NODE_SCALAR ? ver->str : "(not a scalar)");
        goto out;
    }
    if (mb_yaml_read_fields(root, mb_scn__top_fields, &top, "scenario", NULL, err))
        goto out;
    if (!top.name[0]) {
        mb_yaml_err(err, mb_yaml_get(root, "name"), "name is empty; give the scenario a name");
        goto out;
    }
    snprintf(s->name, sizeof s->name, "%s", top.name);
    mk.model = top.model;

    if (mb_scn__parse(root, dir, s, &mk, &top, &sys, err))
        goto out;

    /* model: name, path, or inline mapping */
    struct mb_err sub;
    mb_err_clear(&sub);
    if (top.model->kind == MB_NODE_MAP) {
        if (mb_model_from_node(top.model, &s->model, err))
            goto out;
    } else if (top.model->kind == MB_NODE_SCALAR && !mb_yaml_is_null(top.model)) {
        char *ref = mb_scn__ref(dir, top.model->str);
        int r = mb_model_load(ref, &s->model, &sub);
        mb_free(ref);
        if (r) {
            mb_scn__relay(err, top.model, &sub);
            goto out;
        }
    } else {
        mb_yaml_err(err, top.model, "model: expected a model name, a path or a mapping");
        goto out;
    }
    model_loaded = 1;

    if (mb_scn__check_layout(s, &mk, err))
        goto out;

    /* system last: it loads the node's hwloc XML */
    {
        char *ref = mb_scn__ref(dir, sys.preset);
        mb_err_clear(&sub);
        int r = mb_topo_load_system(ref, &s->system, &sub);
        mb_free(ref);
        if (r) {
            mb_scn__relay(err, mb_yaml_get(top.system, "preset"), &sub);
            goto out;
        }
    }
    if (mb_scn__check_system(s, &mk, err))
        goto out;
    /* a named calibration table loads here (its errors carry its own file:line:col)
     * and must be for the system's GPU: a table for another GPU would mix its
     * kernel rates and capacity with this system's fabric */
    if (s->calib_path[0]) {
        struct mb_calib *cal = NULL;
        mb_err_clear(&sub);
        if (mb_calib_load(NULL, s->calib_path, &cal, &sub)) {
            mb_scn__relay(err, mb_yaml_get(top.calibration, "table"), &sub);
            goto out;
        }
        const char *tg = mb_calib_spec(cal)->name;
        int same = strcasecmp(tg, s->system.gpu) == 0;
        if (!same) {
            mb_yaml_err(err, mb_yaml_get(top.calibration, "table"),
                        "calibration.table is a table for %s, but the system's GPUs are %s", tg, s->system.gpu);
            mb_calib_free(cal);
            goto out;
        }
        mb_calib_free(cal);
    }
    rc = 0;
out:
    if (rc && model_loaded)
        mb_scenario_free(s);
    mb_free(dir);
    return rc;
}

int mb_scenario_load(const char *path, struct mb_scenario *s, struct mb_err *err)
{
    mb_scenario_defaults(s);
    if (!path)
        return mb_err_set(err, NULL, 0, 0, "no scenario file given");
    snprintf(s->file, sizeof s->file, "%s", path);
    struct mb_node *root = mb_yaml_load_file(path, err);
    if (!root)
        return -1;
    int rc = mb_scenario_load_node(root, path, s, err);
    mb_yaml_free(root);
    return rc;
}
