/*
 * mb_scenario.c -- scenario loader (schema_version 1) and layout checks.
 *
 * A scenario file is loaded as a node tree by mb_yaml (the only libyaml
 * walker) and read through the key table of mb_keys.h, the one description of
 * the schema, so unknown keys, wrong types, bad units, out-of-range values and
 * unknown enum names are all reported the same way ("file:line:col: message",
 * STYLE.md points 17-18). What the table leaves to this file: schema_version,
 * the model (name, path or inline mapping) and system resolution, data.images,
 * the recompute rules between keys and the calibration table file. The format
 * is documented in docs/scenario-format.md.
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
#include "mb_attn_backend.h"
#include "mb_coll.h"
#include "mb_keys.h"
#include "mb_megatron_rules.h"
#include "mb_schema.h"
#include "mb_yaml.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

/* --------------------------------------------------------------- defaults */

/* Table keys from mb_keys.h; the rest are not scenario keys (images are
 * data.images' own defaults, dp is derived by mb_scenario_check). */
void mb_scenario_defaults(struct mb_scenario *s)
{
    memset(s, 0, sizeof *s);
    mb_keys_defaults(s); /* sequence_parallel -1 = "on when tp > 1", resolved by mb_scenario_check */
    s->images.dist = MB_IMG_NONE;
    s->images.per_sample_min = s->images.per_sample_max = 1;
    s->images.seed = 1;
    s->dp = 1;
}

int mb_scenario_measured(const struct mb_scenario *s)
{
    return s->meas_tokens_per_s_per_gpu > 0 || s->meas_step_time_s > 0 || s->meas_model_tflops_per_gpu > 0 ||
           s->meas_oom || s->meas_peak_memory_gib > 0;
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
    const struct mb_node *disp_sms, *disp, *seo; /* moe.dispatcher_sms, moe.dispatcher, moe.shared_expert_overlap */
    const struct mb_node *text;                 /* data.text_tokens */
    const struct mb_node *parallel, *strategy, *tp, *pp, *vpp, *cp, *ep, *etp, *sp;
    const struct mb_node *rc, *rc_modules, *rc_layers, *cuda_graph, *freeze, *overlap, *layout;
    const struct mb_node *dist_opt, *allreduce, *pad, *attn, *fsdp_impl, *reshard, *sharded, *offload, *prec, *chunks, *states;
    const struct mb_node *dbuf, *unit_size; /* parallel.fsdp_double_buffer, parallel.fsdp_communication_unit_size */
    const struct mb_node *keep_t;           /* parallel.fsdp_keep_fp8_transpose_cache */
    const struct mb_node *gsync, *rab;      /* parallel.fsdp_requires_gradient_sync, fsdp_reshard_after_backward */
    const struct mb_node *lora, *lora_targets, *fp8pg, *defer, *defer_limit, *ep_comm, *rc_gran;
    const struct mb_node *rc_policy, *rc_every; /* recompute.policy, recompute.every */
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

/* The published FlashAttention-2/3 and Triton rates are H100 measurements, and
 * FA3 runs on sm90 only (mb_attn_backend.h): other GPUs are refused. */
static int mb_scn__check_attn_backend(const struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    enum mb_attn_backend b = s->attn_backend;
    if ((b != MB_ATTN_FLASH2 && b != MB_ATTN_FLASH3 && b != MB_ATTN_TRITON) || mb_attn_backend_hopper(s->system.gpu))
        return 0;
    return mb_scn__err(err, s, mk ? mk->attn : NULL,
                       "training.attention_backend %s: its rates are published for Hopper GPUs (H100, H200) only and "
                       "the system's GPU is %s; use fused or flash (the table's curves)",
                       b == MB_ATTN_FLASH2 ? "flash2" : b == MB_ATTN_FLASH3 ? "flash3" : "triton", s->system.gpu);
}

static int mb_scn__check_options(struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err);

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
 *  - without parallel.pipeline_layout, num_layers or num_layers + 2 divisible by pp*vpp
 *    (Megatron-Core's TransformerConfig: an even split, or with
 *    account_for_embedding/loss_in_pipeline_split the embedding and the loss counted as a
 *    layer each, unless a layout or first/last-stage counts say otherwise).
 *  - vpp > 1 (interleaved 1F1B): pp > 1, pp*vpp <= num_layers + 2 (a layout may give the
 *    embedding and the loss a stage each), and microbatches = gbs / (mbs*dp) % pp == 0
 *    (schedules.py interleaved requirement).
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
    /* Megatron-LM's arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
     * sequence parallelism is enabled" */
    if (s->overlap_tp_comm && s->tp > 1 && !s->sequence_parallel)
        return mb_scn__err(err, s, mb_scn__at(mk->sp, mk->overlap, mk->parallel),
                           "overlap.tp_comm needs sequence_parallel: true (Megatron overlaps TP communication "
                           "with GEMMs only under sequence parallelism)");

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

    if ((long)s->pp * s->vpp > (long)m->num_layers + 2)
        return mb_scn__err(err, s, mb_scn__at(s->vpp > 1 ? mk->vpp : mk->pp, mk->parallel, NULL),
                           "pp*vpp = %ld exceeds num_layers + 2 = %d of model %s (embedding and loss "
                           "may each take one pipeline slot, no more)",
                           (long)s->pp * s->vpp, m->num_layers + 2, mn);
    /* Megatron-Core splits the decoder layers evenly over the pp*vpp virtual
     * stages (TransformerConfig refuses num_layers % pp != 0 and
     * (num_layers / pp) % vpp != 0) unless told otherwise: an explicit
     * --pipeline-model-parallel-layout or first/last-stage layer counts (in
     * mbsim: parallel.pipeline_layout), or account_for_embedding_in_pipeline_split
     * and account_for_loss_in_pipeline_split, which count the embedding and the
     * loss as a layer each: num_layers + 2 split evenly, which is how mbsim
     * splits an uneven count without a layout (step/layout.c). Any other split
     * needs the layout. */
    if (s->vpp > 1 && s->pp < 2) /* before the split: a vpp without pp splits nothing */
        return mb_scn__err(err, s, mb_scn__at(mk->vpp, mk->parallel, NULL), "vpp = %d requires pp > 1", s->vpp);
    if (!s->pipeline_layout[0] && !s->pipeline_split_unstated && s->pp * s->vpp > 1) {
        int nv = s->pp * s->vpp, L = m->num_layers;
        if (L % nv && (L + 2) % nv)
            return mb_scn__err(err, s, mb_scn__at(s->vpp > 1 ? mk->vpp : mk->pp, mk->parallel, NULL),
                               "num_layers = %d of model %s does not split over pp*vpp = %d virtual stages "
                               "(pp = %d, vpp = %d): Megatron-Core splits num_layers evenly, or num_layers + 2 "
                               "with the embedding and the loss counted as a layer each "
                               "(account_for_embedding/loss_in_pipeline_split); set parallel.pipeline_layout "
                               "for another split",
                               L, mn, nv, s->pp, s->vpp);
    }
    if (s->vpp > 1) {
        const struct mb_node *at = mb_scn__at(mk->vpp, mk->parallel, NULL);
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

    return mb_scn__check_options(s, mk, err);
}

/* CPU activation offloading as Megatron-Core's TransformerConfig.__post_init__ allows it
 * (NVIDIA/Megatron-LM@d98e8a64 megatron/core/transformer/transformer_config.py): fewer layers
 * than the model has, no pipeline parallelism, no activation recompute. */
static int mb_scn__check_offload(const struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    const struct mb_node *at = mk->offload ? mk->offload : mk->parallel;
    int L = s->model.num_layers;
    if (L > 0 && s->cpu_offload_layers >= L)
        return mb_scn__err(err, s, at, "memory.cpu_offloading_num_layers = %d: Megatron offloads fewer layers "
                           "than the model has (%d)", s->cpu_offload_layers, L);
    if (s->pp > 1)
        return mb_scn__err(err, s, at, "memory.cpu_offloading_num_layers needs pp = 1 (Megatron-Core: no "
                           "pipeline parallelism with CPU offloading); pp = %d", s->pp);
    if (s->recompute != MB_RC_NONE || s->rc_policy != MB_RCP_NONE)
        return mb_scn__err(err, s, at, "memory.cpu_offloading_num_layers excludes activation recompute "
                           "(Megatron-Core: CPU offloading does not work when recompute is enabled)");
    return 0;
}

static int mb_scn__has_ffn(const struct mb_model *m, enum mb_ffn f)
{
    for (int i = 0; i < m->n_layers; i++)
        if (m->layer && m->layer[i].ffn == f)
            return 1;
    return 0;
}

/* cuda_graph.modules against the model and the MoE settings: Megatron-Core's
 * TransformerConfig.__post_init__ assertions for the per-layer graph scopes
 * (NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py @d98e8a64dd). */
static int mb_scn__check_graphs(const struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    const struct mb_model *m = &s->model;
    const char *mn = m->name[0] ? m->name : "(unnamed)";
    unsigned cg = s->cuda_graph;
    if (cg & (MB_CG_MOE | MB_CG_MOE_ROUTER | MB_CG_MOE_PREPROCESS) && m->num_experts <= 0)
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph modules moe/moe_router/moe_preprocess need an "
                           "MoE model; %s has no experts", mn);
    if ((cg & MB_CG_MOE_PREPROCESS) && !(cg & MB_CG_MOE_ROUTER))
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module moe_preprocess requires moe_router");
    if ((cg & MB_CG_MAMBA) && !mb_scn__has_mixer(m, MB_MIX_MAMBA) && m->mamba_heads <= 0)
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module mamba needs a Mamba model; %s has none", mn);
    if ((cg & MB_CG_MOE) && (cg & MB_CG_MOE_ROUTER))
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph modules moe and moe_router exclude each other "
                           "(moe captures the router inside the whole MoE block)");
    if ((cg & MB_CG_MOE) && !(s->capacity_factor > 0 && s->pad_to_capacity))
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module moe needs drop-and-pad MoE "
                           "(moe.capacity_factor and moe.pad_expert_input_to_capacity: true): dropless expert "
                           "inputs change shape every step; graph moe_router instead");
    if ((cg & MB_CG_MOE_PREPROCESS) && s->dispatcher == MB_DISP_ALLTOALL && s->capacity_factor > 0 &&
        !s->pad_to_capacity)
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module moe_preprocess cannot capture the alltoall "
                           "dispatcher's preprocess with moe.capacity_factor = %g and no padding to capacity (it "
                           "copies token counts to the host and synchronizes)", s->capacity_factor);
    if ((cg & MB_CG_MLP) && m->num_experts > 0 && m->first_dense == 0 && !mb_scn__has_ffn(m, MB_FFN_DENSE))
        return mb_scn__err(err, s, mk->cuda_graph, "cuda_graph module mlp graphs dense MLP layers; every FFN "
                           "of %s is MoE (graph moe_router, or moe with drop-and-pad)", mn);
    return 0;
}

/* The node a mirrored Megatron rule (mb_megatron_rules.h) points at: its key's, else its section's. */
static const struct mb_node *mb_scn__rule_at(const struct mb_scn__marks *mk, const char *key)
{
    const struct mb_node *n = NULL;
    if (!strcmp(key, "recompute.granularity"))
        n = mb_scn__at(mk->rc_gran, mk->rc, NULL);
    else if (!strcmp(key, "recompute.modules"))
        n = mb_scn__at(mk->rc_modules, mk->rc, NULL);
    else if (!strcmp(key, "memory.cpu_offloading_num_layers"))
        n = mk->offload;
    else if (!strcmp(key, "moe.dispatcher"))
        n = mb_scn__at(mk->disp, mk->model, NULL);
    else if (!strcmp(key, "moe.shared_expert_overlap"))
        n = mb_scn__at(mk->seo, mk->model, NULL);
    else if (!strcmp(key, "overlap.ep_comm"))
        n = mb_scn__at(mk->ep_comm, mk->overlap, NULL);
    else if (!strcmp(key, "cuda_graph.modules"))
        n = mk->cuda_graph;
    else if (!strcmp(key, "precision"))
        n = mk->prec;
    return n ? n : mk->parallel;
}

/* Megatron-Core's and Transformer Engine's own checks, mirrored (mb_megatron_rules.h). */
static int mb_scn__check_megatron(const struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    const struct mb_megatron_rule *r;
    char msg[700];
    if (!mb_megatron_rules_check(s, &r, msg, sizeof msg))
        return 0;
    return mb_scn__err(err, s, mb_scn__rule_at(mk, r->key), "%s", msg);
}

/* FSDP settings: those of one flavour are errors elsewhere, not silently ignored. */
static int mb_scn__check_fsdp(struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    if ((mk->fsdp_impl || s->fsdp_impl != MB_FSDP_MEGATRON) && s->strategy != MB_STRAT_FSDP)
        return mb_scn__err(err, s, mk->fsdp_impl ? mk->fsdp_impl : mk->strategy,
                           "parallel.fsdp_impl applies to strategy fsdp only (this scenario is 3d)");
    int fsdp2 = s->strategy == MB_STRAT_FSDP && s->fsdp_impl == MB_FSDP_TORCH2;
    int mfsdp = s->strategy == MB_STRAT_FSDP && s->fsdp_impl == MB_FSDP_MEGATRON;
    /* the settings of one flavour: written, or away from the default; the flavour's own name for each */
    const struct {
        const struct mb_node *at;
        int set, fits;
        const char *what;
    } one[] = {
        {mk->reshard, !s->fsdp_reshard_after_forward, fsdp2,
         "parallel.fsdp_reshard_after_forward applies to strategy fsdp with fsdp_impl torch_fsdp2 only (PyTorch "
         "FSDP2's reshard_after_forward)"},
        {mk->sharded, s->fsdp_sharded_bytes != 4, fsdp2,
         "parallel.fsdp_sharded_dtype applies to strategy fsdp with fsdp_impl torch_fsdp2 only (Megatron keeps fp32 "
         "main weights in its optimizer)"},
        {mk->gsync, !s->fsdp_grad_sync, fsdp2,
         "parallel.fsdp_requires_gradient_sync applies to strategy fsdp with fsdp_impl torch_fsdp2 only (PyTorch "
         "FSDP2's set_requires_gradient_sync)"},
        {mk->rab, !s->fsdp_reshard_after_backward, fsdp2,
         "parallel.fsdp_reshard_after_backward applies to strategy fsdp with fsdp_impl torch_fsdp2 only (PyTorch "
         "FSDP2's set_reshard_after_backward)"},
        {mk->dbuf, s->fsdp_double_buffer, mfsdp,
         "parallel.fsdp_double_buffer applies to strategy fsdp with fsdp_impl megatron_fsdp only (Megatron-FSDP's "
         "--fsdp-double-buffer)"},
        {mk->keep_t, s->fsdp_keep_fp8_transpose, mfsdp,
         "parallel.fsdp_keep_fp8_transpose_cache applies to strategy fsdp with fsdp_impl megatron_fsdp only "
         "(Megatron-FSDP's --keep-fp8-transpose-cache)"},
        {mk->unit_size, s->fsdp_unit_size != 0, mfsdp,
         "parallel.fsdp_communication_unit_size applies to strategy fsdp with fsdp_impl megatron_fsdp only "
         "(Megatron-FSDP's --suggested-communication-unit-size)"},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if ((one[i].at || one[i].set) && !one[i].fits)
            return mb_scn__err(err, s, one[i].at ? one[i].at : mk->strategy, "%s", one[i].what);
    /* torch.optim.Adam makes its moments zeros_like the parameter: their dtype is the sharded one */
    if ((mk->states || s->state_bytes != 8) && fsdp2)
        return mb_scn__err(err, s, mk->states ? mk->states : mk->fsdp_impl,
                           "optimizer.states applies to Megatron's optimizers; under FSDP2 torch.optim.Adam keeps "
                           "its moments in the sharded parameters' dtype (parallel.fsdp_sharded_dtype)");
    return 0;
}

/* recompute.policy (op-level selective checkpointing, torchtitan's "op" option): not beside Megatron's
 * recompute (two frameworks' mechanisms), and only where the preset's save list is modelled: softmax
 * attention (torchtitan's SDPA / FlexAttention kernels, not the score-materializing backends) and dense
 * FFN layers (torchtitan's MoE models carry save lists of their own). */
static int mb_scn__check_policy(const struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    const struct mb_model *m = &s->model;
    const struct mb_node *at = mb_scn__at(mk->rc_policy, mk->rc, NULL);
    static const char *const gran[] = {"none", "selective", "full"};
    const char *pol = s->rc_policy == MB_RCP_TORCHTITAN_LAYER ? "torchtitan_layer" : "torchtitan_op";
    if (s->rc_every != 1 && s->rc_policy != MB_RCP_TORCHTITAN_LAYER)
        return mb_scn__err(err, s, mb_scn__at(mk->rc_every, at, NULL),
                           "recompute.every applies to policy torchtitan_layer only (torchtitan's integer "
                           "selective_ac_option)");
    if (s->rc_policy == MB_RCP_NONE)
        return 0;
    if (s->recompute != MB_RC_NONE)
        return mb_scn__err(err, s, at, "recompute.policy %s excludes recompute.granularity %s "
                           "(torchtitan's selective checkpointing and Megatron-Core's recompute are two "
                           "frameworks' mechanisms)", pol, gran[s->recompute]);
    /* torchtitan counts the layers of all the model chunks a rank builds; mbsim's count is per chunk */
    if (s->rc_policy == MB_RCP_TORCHTITAN_LAYER && s->vpp > 1)
        return mb_scn__err(err, s, at, "recompute.policy torchtitan_layer is modelled without virtual pipeline "
                           "stages (vpp = %d)", s->vpp);
    if (s->rc_policy == MB_RCP_TORCHTITAN_LAYER)
        return 0;
    if (mb_scn__has_ffn(m, MB_FFN_MOE) || mb_scn__has_mixer(m, MB_MIX_GDN) || mb_scn__has_mixer(m, MB_MIX_MAMBA))
        return mb_scn__err(err, s, at, "recompute.policy torchtitan_op is modelled for dense softmax-attention "
                           "layers only; %s has %s layers", m->name[0] ? m->name : "(unnamed)",
                           mb_scn__has_ffn(m, MB_FFN_MOE) ? "MoE" : "linear-attention or Mamba");
    if (s->attn_backend == MB_ATTN_UNFUSED || s->attn_backend == MB_ATTN_LOCAL)
        return mb_scn__err(err, s, mb_scn__at(mk->attn, at, NULL),
                           "recompute.policy torchtitan_op needs a fused attention backend (torchtitan saves "
                           "the SDPA kernel's output); training.attention_backend is %s",
                           s->attn_backend == MB_ATTN_LOCAL ? "local" : "unfused");
    return 0;
}

/* The training options against the model and each other (second half of the
 * rules listed above mb_scn__check_layout). mk is not NULL. */
static int mb_scn__check_options(struct mb_scenario *s, const struct mb_scn__marks *mk, struct mb_err *err)
{
    const struct mb_model *m = &s->model;
    const char *mn = m->name[0] ? m->name : "(unnamed)";

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

    if (mb_scn__check_graphs(s, mk, err))
        return -1;

    /* 1F1B all-to-all overlap pairs each backward with the next forward on one
     * stage; with pp > 1 Megatron runs it only inside interleaved schedules
     * (combined 1F1B needs a virtual pipeline) */
    if (!s->dist_opt && s->strategy == MB_STRAT_FSDP)
        return mb_scn__err(err, s, mk->dist_opt ? mk->dist_opt : mk->strategy,
                           "optimizer.distributed: false needs strategy 3d (FSDP shards the optimizer state "
                           "by construction)");
    if (s->pad_to_capacity && !(s->capacity_factor > 0))
        return mb_scn__err(err, s, mk->pad,
                           "moe.pad_expert_input_to_capacity needs moe.capacity_factor (Megatron "
                           "--moe-pad-expert-input-to-capacity pads to the expert capacity)");
    /* MoE settings that were accepted and did nothing (issue 17, first-hour bugs); dispatcher_sms
     * only when the file writes it (a sweep may switch a hybridep base to alltoall) */
    if (s->shared_expert_overlap && m->shared_ffn_hidden <= 0)
        return mb_scn__err(err, s, mb_scn__at(mk->seo, mk->model, NULL),
                           "moe.shared_expert_overlap: model %s has no shared experts to overlap", mn);
    if (mk->disp_sms && (s->dispatcher == MB_DISP_ALLTOALL || s->dispatcher == MB_DISP_ALLGATHER))
        return mb_scn__err(err, s, mk->disp_sms,
                           "moe.dispatcher_sms applies to the hybridep and deepep dispatchers (their kernels "
                           "occupy SMs); moe.dispatcher is %s, whose NCCL collectives use none",
                           s->dispatcher == MB_DISP_ALLTOALL ? "alltoall" : "allgather");
    /* Megatron-Core's DotProductAttention asserts context_parallel_size == 1
     * ("only supported by TEDotProductAttention"); TE's CP runs flash or fused */
    if (s->cp > 1 && (s->attn_backend == MB_ATTN_UNFUSED || s->attn_backend == MB_ATTN_LOCAL))
        return mb_scn__err(err, s, mb_scn__at(mk->attn, mk->cp, NULL),
                           "training.attention_backend %s does not support context parallelism (cp = %d): "
                           "Megatron-Core runs CP only with TE flash or fused attention",
                           s->attn_backend == MB_ATTN_LOCAL ? "local" : "unfused", s->cp);
    if (mb_scn__check_fsdp(s, mk, err) || mb_scn__check_policy(s, mk, err))
        return -1;
    /* Liger's fused linear cross-entropy multiplies the hidden states by the whole output weight: it has
     * no vocab-parallel form */
    if (s->loss_chunks > 0 && s->tp > 1)
        return mb_scn__err(err, s, mk->chunks ? mk->chunks : mk->tp,
                           "training.loss_chunks needs tp = 1 (tp is %d): the fused linear cross-entropy "
                           "(Liger-Kernel) is not vocab-parallel", s->tp);
    if (s->fsdp_prefetch != 1 && s->strategy != MB_STRAT_FSDP)
        return mb_scn__err(err, s, mk->overlap,
                           "overlap.fsdp_prefetch = %d applies to strategy fsdp only (this scenario is 3d)",
                           s->fsdp_prefetch);
    /* Megatron asserts --fp8-param-gather has an --fp8-format (or --fp4-format) to gather in */
    if (s->fp8_param_gather && !s->prec.quantize)
        return mb_scn__err(err, s, mb_scn__at(mk->fp8pg, mk->prec, NULL),
                           "training.fp8_param_gather needs an FP8 or FP4 precision (this scenario is %s): "
                           "Megatron holds and gathers the weights in the recipe's format",
                           s->prec.label[0] ? s->prec.label : "bf16");
    if (s->fp8_param_gather && s->strategy != MB_STRAT_FSDP && !s->dist_opt)
        return mb_scn__err(err, s, mb_scn__at(mk->fp8pg, mk->dist_opt, NULL),
                           "training.fp8_param_gather needs the distributed optimizer (optimizer.distributed: "
                           "true) or FSDP: Megatron gathers the quantized weights after the sharded update");
    /* Megatron-Core's ModelParallelConfig raises without pipeline parallelism; Megatron-Bridge turns it
     * off under Megatron-FSDP ("cannot work with FSDP together") */
    if (s->defer_wgrad && (s->pp <= 1 || s->strategy == MB_STRAT_FSDP))
        return mb_scn__err(err, s, mb_scn__at(mk->defer, mk->pp, mk->strategy),
                           "overlap.defer_embedding_wgrad_compute needs pipeline parallelism (pp > 1) and the 3d "
                           "strategy: it defers the last stage's output-layer wgrad to the pipeline flush");
    if (s->wgrad_deferral_limit > 0 && !s->defer_wgrad)
        return mb_scn__err(err, s, mb_scn__at(mk->defer_limit, mk->defer, mk->overlap),
                           "overlap.wgrad_deferral_limit = %d applies with overlap.defer_embedding_wgrad_compute: "
                           "true only", s->wgrad_deferral_limit);
    if (s->cpu_offload_layers > 0 && mb_scn__check_offload(s, mk, err))
        return -1;
    if (s->lora_rank > 0 && !(s->freeze & MB_FREEZE_LANGUAGE))
        return mb_scn__err(err, s, mk->lora,
                           "peft.lora_rank = %d: LoRA trains adapters on a frozen base model; add `freeze: "
                           "[language]`", s->lora_rank);
    if (mk->lora_targets && s->lora_rank <= 0)
        return mb_scn__err(err, s, mk->lora_targets, "peft.lora_targets needs peft.lora_rank > 0");
    if (s->overlap_ep_comm && s->pp > 1 && s->vpp < 2)
        return mb_scn__err(err, s, mk->overlap,
                           "overlap.ep_comm with pp = %d needs an interleaved schedule (parallel.vpp >= 2), as "
                           "Megatron-Core's combined 1F1B does; set vpp or turn the overlap off", s->pp);

    /* a sample's text beyond its sequence was cut to seq_length without a word (step/data.c) */
    if (!s->mock && s->text_max > s->seq_length)
        return mb_scn__err(err, s, mb_scn__at(mk->text, mk->seq, mk->data),
                           "data.text_tokens: a sample of up to %d text tokens does not fit in seq_length = %d "
                           "(expected at most seq_length; samples are not cut)", s->text_max, s->seq_length);

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
    return mb_scn__check_megatron(s, mk, err);
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
    /* MX and NVFP4 block scaling are Blackwell tensor-core formats (Transformer
     * Engine MXFP8BlockScaling / NVFP4BlockScaling need compute capability 10.0+) */
    if ((!strcmp(s->prec.label, "mxfp8") || !strcmp(s->prec.label, "nvfp4")) && !mb_topo_gpu_blackwell(s->system.gpu))
        return mb_scn__err(err, s, mk ? mk->prec : NULL,
                           "precision %s needs Blackwell tensor cores (MX/NVFP4 block scaling, compute capability "
                           "10.0+); system %s has %s GPUs: use fp8_blockwise, fp8_cs or fp8",
                           s->prec.label, s->system.name, s->system.gpu);
    if (mb_scn__check_attn_backend(s, mk, err)) /* here: the system's GPU is known */
        return -1;
    if (s->system.max_gpus > 0 && s->gpus > s->system.max_gpus)
        return mb_scn__err(err, s, mk ? mk->gpus : NULL, "gpus = %d exceeds max_gpus = %d of system %s",
                           s->gpus, s->system.max_gpus, s->system.name);
    /* more SMs than the GPU has: the dispatcher's share of the GPU was clamped to 1 (schedule.c) while
     * DeepEP's buffers grew with the number (memory.c) */
    char msg[300];
    if (mb_scenario_check_sms(s, msg, sizeof msg))
        return mb_scn__err(err, s, mk ? mb_scn__at(mk->disp_sms, mk->disp, NULL) : NULL, "%s", msg);
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

/* data.images: its own small tables (not scenario keys of the sweep kind). */
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
    if (mb_yaml_int_in(n, what, (double)lo, (double)hi, &v, err))
        return -1;
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
    if (mb_yaml_expect(d.distribution, MB_NODE_SCALAR, "data.images.sizes.distribution", err))
        return -1;
    if (strcasecmp(d.distribution->str, "uniform"))
        return mb_yaml_err(err, d.distribution, "data.images.sizes.distribution: unknown value '%s'; expected "
                           "one of: uniform", d.distribution->str);
    if (d.min > d.max)
        return mb_yaml_err(err, sz, "data.images.sizes: min %ld > max %ld", d.min, d.max);
    im->dist = MB_IMG_UNIFORM;
    im->side_min = (int)d.min;
    im->side_max = (int)d.max;
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

/* A reference is a path when it contains '/' or ends in .yaml/.yml. */
static int mb_scn__is_path(const char *ref)
{
    size_t n = strlen(ref);
    return strchr(ref, '/') != NULL || (n > 5 && strcmp(ref + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(ref + n - 4, ".yml") == 0);
}

char *mb_scenario_ref(const char *dir, const char *ref)
{
    if (!mb_scn__is_path(ref) || ref[0] == '/')
        return mb_strdup(ref);
    while (ref[0] == '.' && ref[1] == '/') /* "./m.yaml" in folder d is d/m.yaml, not d/./m.yaml */
        ref += 2;
    if (!dir || !strcmp(dir, "."))
        return mb_strdup(ref);
    return mb_path_join(dir, ref);
}

/* What the writer records for a resolved reference: a shipped name as is, a
 * path made absolute (the written file may live in another folder). */
static void mb_scn__keep_ref(const char *resolved, char *out, size_t len)
{
    char *abs = mb_scn__is_path(resolved) ? mb_path_absolute(resolved) : mb_strdup(resolved);
    snprintf(out, len, "%s", strlen(abs) < len ? abs : resolved);
    mb_free(abs);
}

/* Node of a table key in the loader's node array (NULL when absent). */
static const struct mb_node *mb_scn__node(const struct mb_node *const *nodes, const char *key)
{
    const struct mb_key *k = mb_key_find(key);
    assert(k);
    return nodes[mb_key_index(k)];
}

static void mb_scn__marks_from(struct mb_scn__marks *mk, const struct mb_node *root,
                               const struct mb_node *const *nodes)
{
    mk->model = mb_scn__node(nodes, "model");
    mk->disp_sms = mb_scn__node(nodes, "moe.dispatcher_sms");
    mk->disp = mb_scn__node(nodes, "moe.dispatcher");
    mk->text = mb_scn__node(nodes, "data.text_tokens");
    mk->seo = mb_scn__node(nodes, "moe.shared_expert_overlap");
    mk->gpus = mb_scn__node(nodes, "system.gpus");
    mk->prec = mb_scn__node(nodes, "precision");
    mk->data = mb_yaml_get(root, "data");
    mk->seq = mb_scn__node(nodes, "data.seq_length");
    mk->gbs = mb_scn__node(nodes, "data.global_batch_size");
    mk->mbs = mb_scn__node(nodes, "data.micro_batch_size");
    mk->mock = mb_scn__node(nodes, "data.mock");
    mk->images = mb_scn__node(nodes, "data.images");
    mk->parallel = mb_yaml_get(root, "parallel");
    mk->strategy = mb_scn__node(nodes, "parallel.strategy");
    mk->tp = mb_scn__node(nodes, "parallel.tp");
    mk->pp = mb_scn__node(nodes, "parallel.pp");
    mk->vpp = mb_scn__node(nodes, "parallel.vpp");
    mk->cp = mb_scn__node(nodes, "parallel.cp");
    mk->ep = mb_scn__node(nodes, "parallel.ep");
    mk->etp = mb_scn__node(nodes, "parallel.etp");
    mk->sp = mb_scn__node(nodes, "parallel.sequence_parallel");
    mk->layout = mb_scn__node(nodes, "parallel.pipeline_layout");
    mk->rc = mb_yaml_get(root, "recompute");
    mk->rc_modules = mb_scn__node(nodes, "recompute.modules");
    mk->rc_layers = mb_scn__node(nodes, "recompute.num_layers");
    mk->cuda_graph = mb_scn__node(nodes, "cuda_graph.modules");
    mk->freeze = mb_scn__node(nodes, "freeze");
    mk->overlap = mb_yaml_get(root, "overlap");
    mk->dist_opt = mb_scn__node(nodes, "optimizer.distributed");
    mk->allreduce = mb_scn__node(nodes, "collectives.all_reduce");
    mk->pad = mb_scn__node(nodes, "moe.pad_expert_input_to_capacity");
    mk->attn = mb_scn__node(nodes, "training.attention_backend");
    mk->fsdp_impl = mb_scn__node(nodes, "parallel.fsdp_impl");
    mk->reshard = mb_scn__node(nodes, "parallel.fsdp_reshard_after_forward");
    mk->sharded = mb_scn__node(nodes, "parallel.fsdp_sharded_dtype");
    mk->dbuf = mb_scn__node(nodes, "parallel.fsdp_double_buffer");
    mk->keep_t = mb_scn__node(nodes, "parallel.fsdp_keep_fp8_transpose_cache");
    mk->gsync = mb_scn__node(nodes, "parallel.fsdp_requires_gradient_sync");
    mk->rab = mb_scn__node(nodes, "parallel.fsdp_reshard_after_backward");
    mk->unit_size = mb_scn__node(nodes, "parallel.fsdp_communication_unit_size");
    mk->chunks = mb_scn__node(nodes, "training.loss_chunks");
    mk->rc_policy = mb_scn__node(nodes, "recompute.policy");
    mk->rc_every = mb_scn__node(nodes, "recompute.every");
    mk->states = mb_scn__node(nodes, "optimizer.states");
    mk->offload = mb_scn__node(nodes, "memory.cpu_offloading_num_layers");
    mk->lora = mb_scn__node(nodes, "peft.lora_rank");
    mk->lora_targets = mb_scn__node(nodes, "peft.lora_targets");
    mk->fp8pg = mb_scn__node(nodes, "training.fp8_param_gather");
    mk->defer = mb_scn__node(nodes, "overlap.defer_embedding_wgrad_compute");
    mk->defer_limit = mb_scn__node(nodes, "overlap.wgrad_deferral_limit");
    mk->ep_comm = mb_scn__node(nodes, "overlap.ep_comm");
    mk->rc_gran = mb_scn__node(nodes, "recompute.granularity");
}

/* recompute: modules only with selective (and imply it when no granularity is
 * given; selective alone recomputes core_attn, Megatron-Core's default),
 * method and num_layers only with full. */
static int mb_scn__recompute(struct mb_scenario *s, const struct mb_node *const *nodes, struct mb_err *err)
{
    const struct mb_node *gran = mb_scn__node(nodes, "recompute.granularity");
    const struct mb_node *mods = mb_scn__node(nodes, "recompute.modules");
    const struct mb_node *method = mb_scn__node(nodes, "recompute.method");
    const struct mb_node *layers = mb_scn__node(nodes, "recompute.num_layers");
    if (mods) {
        if (!gran)
            s->recompute = MB_RC_SELECTIVE;
        else if (s->recompute != MB_RC_SELECTIVE)
            return mb_yaml_err(err, mods, "recompute.modules applies only to granularity: selective");
    } else if (s->recompute == MB_RC_SELECTIVE) {
        s->recompute_modules = MB_RCM_CORE_ATTN;
    }
    if (method && s->recompute != MB_RC_FULL)
        return mb_yaml_err(err, method, "recompute.method applies only to granularity: full");
    if (layers && s->recompute != MB_RC_FULL)
        return mb_yaml_err(err, layers, "recompute.num_layers applies only to granularity: full");
    return 0;
}

/* calibration.table: a file relative to the scenario file's folder. */
static int mb_scn__calib_table(struct mb_scenario *s, const char *dir, const struct mb_node *n, struct mb_err *err)
{
    if (!n)
        return 0;
    if (!s->calib_path[0])
        return mb_yaml_err(err, n, "calibration.table is empty; give a table file or leave the key out");
    char *p = s->calib_path[0] == '/' ? mb_strdup(s->calib_path) : mb_path_join(dir, s->calib_path);
    int ok = strlen(p) < sizeof s->calib_path && mb_file_exists(p);
    int dir_given = !ok && mb_dir_exists(p);
    mb_free(p);
    if (dir_given)
        return mb_yaml_err(err, n, "calibration.table '%s' is a directory; expected a calibration table file",
                           n->str);
    if (!ok)
        return mb_yaml_err(err, n, "calibration.table '%s' not found (relative paths are taken from the "
                           "scenario file's folder)", n->str);
    p = s->calib_path[0] == '/' ? mb_strdup(s->calib_path) : mb_path_join(dir, s->calib_path);
    snprintf(s->calib_path, sizeof s->calib_path, "%s", p);
    mb_free(p);
    return 0;
}

/* Every table key (mb_keys_read), then what the table leaves to the loader:
 * images, the recompute rules and the calibration table. */
static int mb_scn__parse(const struct mb_node *root, const char *dir, struct mb_scenario *s,
                         struct mb_scn__marks *mk, const struct mb_node **nodes, struct mb_err *err)
{
    if (mb_keys_read(root, "", s, nodes, err))
        return -1;
    if (!s->name[0])
        return mb_yaml_err(err, mb_scn__node(nodes, "name"), "name is empty; give the scenario a name");
    mb_scn__marks_from(mk, root, nodes);
    const struct mb_node *im = mb_scn__node(nodes, "data.images");
    if (im && mb_scn__images(im, &s->images, err))
        return -1;
    if (mb_scn__recompute(s, nodes, err))
        return -1;
    return mb_scn__calib_table(s, dir, mb_scn__node(nodes, "calibration.table"), err);
}

/* schema_version first: a file for a schema this mbsim does not read is not read further.
 * *ver_p: the file's version. */
static int mb_scn__schema(const struct mb_node *root, int *ver_p, struct mb_err *err)
{
    if (mb_yaml_expect(root, MB_NODE_MAP, "scenario", err))
        return -1;
    const struct mb_node *ver = mb_yaml_get(root, "schema_version");
    if (!ver)
        return mb_yaml_err(err, root, "missing required key 'schema_version' in scenario (this mbsim reads "
                           "schema_version %d to %d)", MB_SCHEMA_OLDEST, MB_SCHEMA_VERSION);
    if (mb_yaml_is_null(ver))
        return mb_yaml_err(err, ver, "key 'schema_version' has no value (this mbsim reads schema_version %d to %d)",
                           MB_SCHEMA_OLDEST, MB_SCHEMA_VERSION);
    long vn;
    if (ver->kind != MB_NODE_SCALAR || mb_yaml_int(ver, &vn, NULL) || vn < MB_SCHEMA_OLDEST ||
        vn > MB_SCHEMA_VERSION)
        return mb_yaml_err(err, ver, "unsupported schema_version '%s'; this mbsim reads schema_version %d to %d",
                           ver->kind == MB_NODE_SCALAR ? ver->str : "(not a scalar)", MB_SCHEMA_OLDEST,
                           MB_SCHEMA_VERSION);
    *ver_p = (int)vn;
    return 0;
}

static void mb_scn__warn(struct mb_scenario *s, const struct mb_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A file of an older schema that leaves out a key whose default changed since gets the default it was
 * written under (mb_schema.h): applied after the keys are read; with `warn`, one warning per key, at
 * schema_version, so the author can state the value (or move the file to the current schema). */
static int mb_scn__old_defaults(struct mb_scenario *s, const struct mb_node *root, int version,
                                const struct mb_node *const *nodes, int warn, struct mb_err *err)
{
    size_t n;
    const struct mb_schema_change *c = mb_schema_changes(&n);
    for (size_t i = 0; i < n; i++) {
        const struct mb_key *k = mb_key_find(c[i].key);
        assert(k);
        if (version >= c[i].since || nodes[mb_key_index(k)])
            continue;
        if (!warn) {
            if (mb_key_set(s, k, c[i].old_default, err))
                return -1;
            continue;
        }
        mb_scn__warn(s, mb_yaml_get(root, "schema_version"),
                     "%s not set: schema_version %d defaults it to %s (%s since schema_version %d: %s); state "
                     "it to keep this meaning, or move the file to schema_version %d",
                     c[i].key, version, c[i].old_default, c[i].new_default, c[i].since, c[i].why,
                     MB_SCHEMA_VERSION);
    }
    return 0;
}

/* model: a name, a path, or an inline mapping. */
static int mb_scn__model(struct mb_scenario *s, const char *dir, const struct mb_node *n, struct mb_err *err)
{
    if (n->kind == MB_NODE_MAP) {
        s->model_inline = 1;
        return mb_model_from_node(n, &s->model, err);
    }
    if (n->kind != MB_NODE_SCALAR || mb_yaml_is_null(n))
        return mb_yaml_err(err, n, "model: expected a model name, a path or a mapping");
    struct mb_err sub;
    mb_err_clear(&sub);
    char *ref = mb_scenario_ref(dir, n->str);
    int r = mb_model_load(ref, &s->model, &sub);
    if (!r)
        mb_scn__keep_ref(ref, s->model_ref, sizeof s->model_ref);
    mb_free(ref);
    return r ? mb_scn__relay(err, n, &sub) : 0;
}

/* system last: it loads the node's hwloc XML; then a named calibration table,
 * which must be for the system's GPU (a table for another GPU would mix its
 * kernel rates and capacity with this system's fabric). */
static int mb_scn__system(struct mb_scenario *s, const char *dir, const struct mb_node *const *nodes,
                          const struct mb_scn__marks *mk, struct mb_err *err)
{
    struct mb_err sub;
    mb_err_clear(&sub);
    char *ref = mb_scenario_ref(dir, s->system_ref);
    int r = mb_topo_load_system(ref, &s->system, &sub);
    if (!r)
        mb_scn__keep_ref(ref, s->system_ref, sizeof s->system_ref);
    mb_free(ref);
    if (r)
        return mb_scn__relay(err, mb_scn__node(nodes, "system.preset"), &sub);
    if (mb_scn__check_system(s, mk, err))
        return -1;
    if (!s->calib_path[0]) { /* the shipped table of the system's GPU; an uncalibrated part has none */
        mb_err_clear(&sub);
        if (mb_topo_check_calibrated(&s->system, "calibration: {table: FILE}", &sub))
            return mb_scn__relay(err, mb_scn__node(nodes, "system.preset"), &sub);
        return 0;
    }
    const struct mb_node *tn = mb_scn__node(nodes, "calibration.table");
    struct mb_calib *cal = NULL;
    mb_err_clear(&sub);
    if (mb_calib_load(NULL, s->calib_path, &cal, &sub))
        return mb_scn__relay(err, tn, &sub);
    const char *tg = mb_calib_spec(cal)->name;
    int same = strcasecmp(tg, s->system.gpu) == 0;
    if (!same)
        mb_yaml_err(err, tn, "calibration.table is a table for %s, but the system's GPUs are %s", tg,
                    s->system.gpu);
    mb_calib_free(cal);
    return same ? 0 : -1;
}

/* The measured: block against what the GPU can compute (mb_scenario_measured_check), at the key
 * of the value refused. */
static int mb_scn__check_measured(const struct mb_scenario *s, const struct mb_node *const *nodes,
                                  struct mb_err *err)
{
    static const char *const key[] = {"measured.tokens_per_s_per_gpu", "measured.model_tflops_per_gpu",
                                      "measured.step_time_s"};
    enum mb_meas_kind which;
    char msg[MB_ERR_MSG_LEN];
    if (!mb_scenario_measured_check(s, s->meas_tokens_per_s_per_gpu, s->meas_model_tflops_per_gpu,
                                    s->meas_step_time_s, &which, msg, sizeof msg))
        return 0;
    return mb_scn__err(err, s, mb_scn__node(nodes, key[which]), "%s: %s", key[which], msg);
}

/* One warning line at node n ("file:line:col: warning: ...") appended to
 * s->warnings; a line that does not fit is left out. */
static void mb_scn__warn(struct mb_scenario *s, const struct mb_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void mb_scn__warn(struct mb_scenario *s, const struct mb_node *n, const char *fmt, ...)
{
    char msg[512], line[768];
    struct mb_err e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mb_err_clear(&e);
    mb_err_set(&e, n ? n->file : s->file, n ? n->line : 0, n ? n->col : 0, "warning: %s", msg);
    mb_err_format(&e, line, sizeof line);
    size_t used = strlen(s->warnings), add = strlen(line);
    if (used + add + 2 <= sizeof s->warnings)
        snprintf(s->warnings + used, sizeof s->warnings - used, "%s\n", line);
}

/* The MoE settings of mb_scn__warn_inert on a model with experts that depend
 * on the routing and the dispatcher. Routing that is not skewed makes every EP
 * rank's load its balanced share (placement.c, mb__imbalance): the Zipf
 * exponent and the seed are not read, and a capacity factor (>= 1) caps an
 * imbalance of 1 at nothing, so it counts only through the padding of
 * moe.pad_expert_input_to_capacity (moe.c). The permute fusion is read for
 * the HybridEP dispatcher only (moe.c). */
static void mb_scn__warn_moe(struct mb_scenario *s, const struct mb_node *const *nodes)
{
    const struct mb_node *skew = mb_scn__node(nodes, "moe.skew");
    const struct mb_node *seed = mb_scn__node(nodes, "moe.seed");
    const struct mb_node *cf = mb_scn__node(nodes, "moe.capacity_factor");
    const struct mb_node *pf = mb_scn__node(nodes, "moe.hybridep_permute_fusion");
    const char *route = mb_key_value_name("moe.routing", (unsigned)s->routing);
    if (s->routing != MB_ROUTE_SKEWED) {
        if (skew)
            mb_scn__warn(s, skew, "moe.skew changes nothing with moe.routing %s: it shapes skewed routing only",
                         route);
        if (seed)
            mb_scn__warn(s, seed, "moe.seed changes nothing with moe.routing %s: it seeds skewed routing only",
                         route);
        if (cf && s->capacity_factor > 0 && !s->pad_to_capacity)
            mb_scn__warn(s, cf, "moe.capacity_factor = %g changes nothing with moe.routing %s and without "
                         "moe.pad_expert_input_to_capacity: no expert gets more than its balanced share, so "
                         "no token is dropped, and no buffer is padded", s->capacity_factor, route);
    }
    if (pf && s->dispatcher != MB_DISP_HYBRIDEP)
        mb_scn__warn(s, pf, "moe.hybridep_permute_fusion changes nothing with moe.dispatcher %s: it fuses the "
                     "permute into HybridEP's dispatch and combine only",
                     mb_key_value_name("moe.dispatcher", (unsigned)s->dispatcher));
}

/* The LoRA targets no layer of the model has (the ops mixer.c and moe.c build), MB_LORA_*. */
static unsigned mb_scn__lora_absent(const struct mb_model *m)
{
    unsigned have = 0;
    for (int i = 0; i < m->n_layers; i++) {
        enum mb_mixer x = m->layer[i].mixer;
        if (x == MB_MIX_ATTN || x == MB_MIX_ATTN_SWA)
            have |= MB_LORA_QKV | MB_LORA_PROJ;
        if (x == MB_MIX_MLA)
            have |= MB_LORA_PROJ | MB_LORA_KV_DOWN | MB_LORA_KV_UP |
                    (m->q_lora_rank > 0 ? MB_LORA_Q_DOWN | MB_LORA_Q_UP : MB_LORA_Q_PROJ);
        if (m->layer[i].ffn == MB_FFN_DENSE)
            have |= MB_LORA_FC1 | MB_LORA_FC2;
    }
    return ~have;
}

/* peft and training settings that leave this model's step unchanged (mb_scn__warn_inert). */
static void mb_scn__warn_peft(struct mb_scenario *s, const struct mb_node *const *nodes)
{
    const struct mb_model *m = &s->model;
    const char *mn = m->name[0] ? m->name : "(unnamed)";
    const struct mb_node *tg = mb_scn__node(nodes, "peft.lora_targets");
    const struct mb_node *baf = mb_scn__node(nodes, "training.bias_activation_fusion");
    if (s->lora_rank > 0 && !s->lora_targets)
        mb_scn__warn(s, tg, "peft.lora_targets is empty: peft.lora_rank = %d adds no adapter", s->lora_rank);
    unsigned absent = s->lora_rank > 0 ? s->lora_targets & mb_scn__lora_absent(m) : 0;
    if (absent) {
        char names[256];
        mb_key_flag_names("peft.lora_targets", absent, ", ", names, sizeof names);
        mb_scn__warn(s, tg, "peft.lora_targets: model %s has no %s layer: no adapter there (adapters sit on the "
                     "dense layers' linears; MoE experts, the router and the vision tower carry none)", mn, names);
    }
    if (baf && !s->bias_act_fusion && m->num_experts <= 0)
        mb_scn__warn(s, baf, "training.bias_activation_fusion: false changes nothing: model %s has no experts "
                     "(mbsim prices the unfused activation of MoE experts only)", mn);
}

/* Settings the file writes that are valid but change nothing in this
 * simulation (issue 17: accepted and silently inert is a first-hour trap).
 * Errors, where a setting contradicts the model or Megatron-Core, are
 * mb_scn__check_options'; these are warnings because the same settings are
 * right in another layout (a sweep may vary ep) and Megatron accepts them. */
/* Settings of the torchtitan and Megatron-FSDP keys that are valid but change nothing: recompute.every
 * past the layers of a pipeline stage (torchtitan checkpoints a rank's N-th, 2N-th, ... layer: none),
 * and the FP8 transpose cache without FP8 parameters to transpose (mb_memory_fp8_transpose_cache_bytes:
 * fp8_param_gather under a per-tensor or blockwise FP8 recipe). */
static void mb_scn__warn_policy_inert(struct mb_scenario *s, const struct mb_node *const *nodes)
{
    const struct mb_node *ev = mb_scn__node(nodes, "recompute.every");
    int per_stage = (s->model.num_layers + s->pp - 1) / (s->pp > 0 ? s->pp : 1);
    if (ev && s->rc_policy == MB_RCP_TORCHTITAN_LAYER && s->rc_every > per_stage)
        mb_scn__warn(s, ev, "recompute.every = %d changes nothing: a pipeline stage holds at most %d layers, so "
                     "no layer is the %d-th of its rank and none is checkpointed (as with no recompute)",
                     s->rc_every, per_stage, s->rc_every);
    const struct mb_node *kt = mb_scn__node(nodes, "parallel.fsdp_keep_fp8_transpose_cache");
    int fp8_weights = s->prec.quantize && s->fp8_param_gather && mb_precision_fp8_tensor(&s->prec);
    if (kt && s->fsdp_keep_fp8_transpose && !fp8_weights)
        mb_scn__warn(s, kt, "parallel.fsdp_keep_fp8_transpose_cache changes nothing here: the cache holds the "
                     "transposes of FP8 parameters, which need training.fp8_param_gather under precision fp8, "
                     "fp8_cs or fp8_blockwise (precision %s, fp8_param_gather %s)", s->prec.label,
                     s->fp8_param_gather ? "true" : "false");
}

/* cuda_graph.reuse_buffers where no scoped graph is captured (mb_scn__warn_inert; issue 37: accepted
 * silently). Megatron-Core passes _reuse_graph_input_output_buffers=True (TE >= 2.7) only to Transformer
 * Engine's make_graphed_callables of the scoped graphs (TECudaGraphHelper,
 * megatron/core/transformer/cuda_graphs.py); full_iteration captures the whole step with torch.cuda.graph
 * (FullCudaGraphWrapper, megatron/core/full_cuda_graph.py), which has no such buffers, and without graphs
 * (`run --set cuda_graph=none`; `modules: []` is the whole layer, as Megatron's empty scope) there is
 * nothing to reuse. memory_graph.c reads the key for
 * scoped graphs only. A warning, not an error: Megatron has no such flag to refuse (TE's version sets
 * it), and a sweep may vary cuda_graph.modules. */
static void mb_scn__warn_graph_inert(struct mb_scenario *s, const struct mb_node *const *nodes)
{
    const struct mb_node *rb = mb_scn__node(nodes, "cuda_graph.reuse_buffers");
    if (rb && (s->cuda_graph & MB_CG_FULL_ITERATION))
        mb_scn__warn(s, rb, "cuda_graph.reuse_buffers changes nothing with cuda_graph.modules: full_iteration: "
                     "Megatron-Core captures the whole step with torch.cuda.graph (FullCudaGraphWrapper) and "
                     "passes _reuse_graph_input_output_buffers only to Transformer Engine's per-layer graphs");
    else if (rb && !s->cuda_graph)
        mb_scn__warn(s, rb, "cuda_graph.reuse_buffers changes nothing without CUDA graphs (cuda_graph.modules "
                     "none): the buffers it shares are those of Transformer Engine's per-layer graphs");
}

static void mb_scn__warn_inert(struct mb_scenario *s, const struct mb_node *const *nodes)
{
    const struct mb_model *m = &s->model;
    const char *mn = m->name[0] ? m->name : "(unnamed)";
    const struct mb_node *sms = mb_scn__node(nodes, "moe.dispatcher_sms");
    const struct mb_node *seo = mb_scn__node(nodes, "moe.shared_expert_overlap");
    const struct mb_node *tpo = mb_scn__node(nodes, "overlap.tp_comm");
    s->warnings[0] = 0;
    if (m->num_experts <= 0) {
        size_t nk, i;
        const struct mb_key *k = mb_keys(&nk);
        for (i = 0; i < nk; i++)
            if (!strncmp(k[i].key, "moe.", 4) && nodes[i])
                mb_scn__warn(s, nodes[i], "%s changes nothing: model %s has no experts (dense)", k[i].key, mn);
    } else if (s->ep == 1) {
        if (sms && (s->dispatcher == MB_DISP_HYBRIDEP || s->dispatcher == MB_DISP_DEEPEP))
            mb_scn__warn(s, sms, "moe.dispatcher_sms changes nothing with ep = 1: no %s kernel runs without "
                         "expert parallelism", s->dispatcher == MB_DISP_HYBRIDEP ? "HybridEP" : "DeepEP");
        if (seo && s->shared_expert_overlap)
            mb_scn__warn(s, seo, "moe.shared_expert_overlap changes nothing with ep = 1: mbsim overlaps the "
                         "shared experts with the EP dispatch, and there is none");
    } else if (sms && s->dispatcher == MB_DISP_HYBRIDEP && !s->overlap_ep_comm) {
        /* the SMs count in two places only: the compute beside a dispatch under EP
         * overlap (schedule.c) and DeepEP's buffer size (memory.c) */
        mb_scn__warn(s, sms, "moe.dispatcher_sms = %d changes nothing here: mbsim charges the dispatcher's "
                     "SMs to the compute running beside it, which needs overlap.ep_comm: true (off), and "
                     "HybridEP's buffers do not depend on it; the SM count's effect on the dispatch's own "
                     "speed is not modelled", s->dispatcher_sms);
    }
    const struct mb_node *pg = mb_scn__node(nodes, "training.fp8_param_gather");
    if (pg && s->fp8_param_gather && s->strategy == MB_STRAT_FSDP && !s->fsdp_keep_fp8_transpose)
        mb_scn__warn(s, pg, "training.fp8_param_gather changes nothing under FSDP here: mbsim models the "
                     "quantized weights of 3d layouts only (docs/modeling.md, Quantized weights), and "
                     "under Megatron-FSDP the kept FP8 transpose cache it enables");
    mb_scn__warn_policy_inert(s, nodes);
    mb_scn__warn_graph_inert(s, nodes);
    if (tpo && s->overlap_tp_comm && s->tp == 1)
        mb_scn__warn(s, tpo, "overlap.tp_comm changes nothing with tp = 1: there is no TP communication");
    if (m->num_experts > 0)
        mb_scn__warn_moe(s, nodes);
    const struct mb_node *cpt = mb_scn__node(nodes, "parallel.cp_comm_type");
    const struct mb_node *mock = mb_scn__node(nodes, "data.mock");
    if (cpt && s->cp == 1) /* mixer.c prices ring or all-to-all attention only at cp > 1 */
        mb_scn__warn(s, cpt, "parallel.cp_comm_type changes nothing with cp = 1: there is no context-parallel "
                     "communication");
    if (mock && s->mock && m->vision.depth == 0) /* mock data only takes the images away (data.c) */
        mb_scn__warn(s, mock, "data.mock: true changes nothing: model %s has no vision encoder, and mock data "
                     "differs from real data only in having no images", mn);
    const struct mb_node *sp = mb_scn__node(nodes, "parallel.sequence_parallel");
    const struct mb_node *cei = mb_scn__node(nodes, "training.cross_entropy_fusion_impl");
    const struct mb_node *drop = mb_scn__node(nodes, "training.attention_dropout");
    int sp_on = 0;
    if (sp && s->tp == 1 && !mb_yaml_bool(sp, &sp_on, NULL) && sp_on)
        mb_scn__warn(s, sp, "parallel.sequence_parallel: true changes nothing with tp = 1 (Megatron-LM turns it "
                     "off too)");
    if (cei && !s->ce_fusion)
        mb_scn__warn(s, cei, "training.cross_entropy_fusion_impl changes nothing: it selects the fused "
                     "cross-entropy, and training.cross_entropy_fusion is false");
    const struct mb_node *pit = mb_scn__node(nodes, "measured.peak_memory_after_iteration");
    if (pit && !(s->meas_peak_memory_gib > 0))
        mb_scn__warn(s, pit, "measured.peak_memory_after_iteration changes nothing: it says when "
                     "measured.peak_memory_gib was logged, and there is none");
    if (drop && s->attn_dropout > 0 && s->attn_backend != MB_ATTN_UNFUSED && s->attn_backend != MB_ATTN_LOCAL)
        mb_scn__warn(s, drop, "training.attention_dropout changes nothing with a fused attention backend: the "
                     "kernel drops in-kernel, which mbsim does not price (it is a kernel of its own with "
                     "attention_backend unfused or local)");
    mb_scn__warn_peft(s, nodes);
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
    const struct mb_node *nodes[MB_KEYS_MAX] = {NULL};
    int rc = -1, model_loaded = 0, version = 0;

    if (mb_scn__schema(root, &version, err) || mb_scn__parse(root, dir, s, &mk, nodes, err) ||
        mb_scn__old_defaults(s, root, version, nodes, 0, err))
        goto out;
    const struct mb_node *row = mb_scn__node(nodes, "measured.csv_row");
    if (row) {
        s->meas_csv_row_line = row->line;
        s->meas_csv_row_col = row->col;
    }
    if (row && (!s->meas_csv_row[0] || isspace((unsigned char)s->meas_csv_row[0]) ||
                isspace((unsigned char)s->meas_csv_row[strlen(s->meas_csv_row) - 1]))) {
        mb_scn__err(err, s, row, "measured.csv_row: expected the id of a CSV row, got '%s' (empty, or blanks "
                    "around it: a CSV id is read trimmed)", s->meas_csv_row);
        goto out;
    }
    if (mb_scn__model(s, dir, mb_scn__node(nodes, "model"), err))
        goto out;
    model_loaded = 1;
    if (mb_scn__check_layout(s, &mk, err) || mb_scn__system(s, dir, nodes, &mk, err) ||
        mb_scn__check_measured(s, nodes, err))
        goto out;
    mb_scn__warn_inert(s, nodes);
    mb_scn__old_defaults(s, root, version, nodes, 1, err);
    rc = 0;
out:
    if (rc && model_loaded)
        mb_scenario_free(s);
    mb_free(dir);
    return rc;
}

void mb_scenario_rewarn(struct mb_scenario *s, const struct mb_node *root, const char *const *sets, int n_sets)
{
    const struct mb_node *nodes[MB_KEYS_MAX] = {NULL};
    struct mb_err e;
    mb_err_clear(&e);
    if (root && mb_keys_nodes(root, nodes, &e)) /* the file loaded, so it cannot fail; none then */
        memset(nodes, 0, sizeof nodes);
    struct mb_node *given = mb_calloc((size_t)n_sets + 1, sizeof *given);
    char **text = mb_calloc((size_t)n_sets + 1, sizeof *text);
    for (int j = 0; j < n_sets; j++) {
        const char *eq = strchr(sets[j], '=');
        char key[128];
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - sets[j]) : 0, sets[j]);
        const struct mb_key *kj = eq ? mb_key_find(key) : NULL;
        if (!kj)
            continue;
        size_t n = strlen(sets[j]) + 8;
        text[j] = mb_malloc(n);
        snprintf(text[j], n, "--set %s", sets[j]);
        given[j] = (struct mb_node){.kind = MB_NODE_SCALAR, .file = text[j], .str = strchr(text[j], '=') + 1};
        nodes[mb_key_index(kj)] = &given[j];
    }
    mb_scn__warn_inert(s, nodes);
    int version = 0;
    if (root && !mb_scn__schema(root, &version, &e))
        mb_scn__old_defaults(s, root, version, nodes, 1, &e);
    for (int j = 0; j < n_sets; j++)
        mb_free(text[j]);
    mb_free(text);
    mb_free(given);
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
