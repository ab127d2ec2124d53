/*
 * mb_emit_megatron.c -- a scenario as Megatron-LM flags or Megatron-Bridge
 * overrides (mb_megatron_emit, mb_megatron.h), one per line with a shell
 * continuation, ready to paste after `pretrain_gpt.py` or a Bridge recipe script.
 *
 * Keys with a one-to-one Megatron name come from the key table (mb_keys.h
 * `megatron`/`bridge`): in Megatron-LM form a switch is written when true
 * (every such switch defaults to off there), values that are Megatron's
 * "unset" (recompute none) are left out; Bridge overrides spell every
 * applicable boolean out, since the recipe's default is not known here. The
 * model's architecture, the precision recipe, the dispatcher with its
 * backend, CUDA graphs, FSDP and optimizer dtypes are written by the rules
 * below. mb_megatron_import reads all of it back to the same scenario.
 */
#include "mb_keys.h"
#include "mb_megatron.h"

#include <string.h>

struct mb_mge {
    enum mb_megatron_dialect d;
    char **line;
    int n;
};

static void mb_mge__push(struct mb_mge *e, const char *text)
{
    e->line = mb_realloc(e->line, (size_t)(e->n + 1) * sizeof *e->line);
    e->line[e->n++] = mb_strdup(text);
}

/* A value the shell would split or interpret goes in single quotes. */
static void mb_mge__quote(const char *v, char *buf, size_t len)
{
    if (!v[strcspn(v, " \t|&;<>()$`\\\"'*?[]#~!{}")])
        snprintf(buf, len, "%s", v);
    else
        snprintf(buf, len, "'%s'", v);
}

/* One setting by its Megatron attribute name (flag) and Bridge path; v NULL = a switch. */
static void mb_mge__set(struct mb_mge *e, const char *name, const char *bridge, const char *v)
{
    char line[1200], q[1100];
    mb_mge__quote(v ? v : "true", q, sizeof q);
    if (e->d == MB_MEGATRON_BRIDGE) {
        snprintf(line, sizeof line, "%s=%s", bridge, q);
    } else {
        size_t k = (size_t)snprintf(line, sizeof line, "--");
        for (const char *p = name; *p && k + 1 < sizeof line; p++)
            line[k++] = *p == '_' ? '-' : *p;
        line[k] = '\0';
        if (v)
            snprintf(line + k, sizeof line - k, " %s", q);
    }
    mb_mge__push(e, line);
}

static void mb_mge__int(struct mb_mge *e, const char *name, const char *bridge, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    mb_mge__set(e, name, bridge, buf);
}

/* A switch: Megatron-LM writes it only when on; Bridge always, as true/false. */
static void mb_mge__switch(struct mb_mge *e, const char *name, const char *bridge, int on)
{
    if (e->d == MB_MEGATRON_BRIDGE)
        mb_mge__set(e, name, bridge, on ? "true" : "false");
    else if (on)
        mb_mge__set(e, name, bridge, NULL);
}

/* ------------------------------------------------------------- model */

static void mb_mge__model(struct mb_mge *e, const struct mb_model *m)
{
    mb_mge__int(e, "num_layers", "model.num_layers", m->num_layers);
    mb_mge__int(e, "hidden_size", "model.hidden_size", m->hidden);
    if (m->ffn_hidden)
        mb_mge__int(e, "ffn_hidden_size", "model.ffn_hidden_size", m->ffn_hidden);
    mb_mge__int(e, "num_attention_heads", "model.num_attention_heads", m->num_heads);
    if (m->kv_lora_rank == 0) {
        if (m->num_kv_heads && m->num_kv_heads < m->num_heads) {
            if (e->d == MB_MEGATRON_LM)
                mb_mge__switch(e, "group_query_attention", "", 1);
            mb_mge__int(e, "num_query_groups", "model.num_query_groups", m->num_kv_heads);
        }
        if (m->head_dim)
            mb_mge__int(e, "kv_channels", "model.kv_channels", m->head_dim);
    } else {
        mb_mge__switch(e, "multi_latent_attention", "model.multi_latent_attention", 1);
        if (m->q_lora_rank)
            mb_mge__int(e, "q_lora_rank", "model.q_lora_rank", m->q_lora_rank);
        mb_mge__int(e, "kv_lora_rank", "model.kv_lora_rank", m->kv_lora_rank);
    }
    if (m->num_experts) {
        mb_mge__int(e, "num_experts", "model.num_moe_experts", m->num_experts);
        mb_mge__int(e, "moe_router_topk", "model.moe_router_topk", m->topk);
        mb_mge__int(e, "moe_ffn_hidden_size", "model.moe_ffn_hidden_size", m->moe_ffn_hidden);
        if (m->shared_ffn_hidden)
            mb_mge__int(e, "moe_shared_expert_intermediate_size", "model.moe_shared_expert_intermediate_size",
                        m->shared_ffn_hidden);
        mb_mge__switch(e, "moe_grouped_gemm", "model.moe_grouped_gemm", 1);
    }
    if (m->mtp_layers)
        mb_mge__int(e, "mtp_num_layers", "model.mtp_num_layers", m->mtp_layers);
}

/* ------------------------------------------------------ key-table keys */

static int mb_mge__skip(const struct mb_scenario *s, const struct mb_key *k)
{
    if (!strcmp(k->key, "parallel.vpp") && s->vpp <= 1)
        return 1;
    if (!strncmp(k->key, "recompute.", 10)) /* mb_mge__recompute */
        return 1;
    return !mb_megatron_key_applies(s, k);
}

static void mb_mge__key(struct mb_mge *e, const struct mb_scenario *s, const struct mb_key *k)
{
    char v[1100];
    mb_key_format(s, k, v, sizeof v);
    if (k->type == MB_KEY_BOOL) {
        /* NVFP4 weights: Megatron's FP4 twin of the switch (arguments.py --fp4-param-gather) */
        int fp4 = !strcmp(k->key, "training.fp8_param_gather") && s->prec.gemm == MB_PREC_FP4;
        mb_mge__switch(e, fp4 ? "fp4_param_gather" : k->megatron, fp4 ? "mixed_precision.fp4_param_gather" : k->bridge,
                       strcmp(v, "true") == 0);
        return;
    }
    const char *lm = e->d == MB_MEGATRON_LM ? mb_megatron_lm_default(k->key) : NULL;
    int at_default = lm ? !strcmp(lm, v) : mb_key_is_default(s, k);
    if (!strcmp(v, "none") || !*v || (k->type == MB_KEY_DOUBLE && at_default) ||
        (!(k->flags & MB_KEYF_SHOW) && at_default && e->d == MB_MEGATRON_LM))
        return; /* Megatron's unset value */
    if (k->type == MB_KEY_FLAGS) { /* names: words on a command line, [a,b] for Bridge */
        for (char *p = v; *p; p++)
            if (*p == '+')
                *p = e->d == MB_MEGATRON_BRIDGE ? ',' : ' ';
        char list[1120];
        snprintf(list, sizeof list, e->d == MB_MEGATRON_BRIDGE ? "[%s]" : "%s", v);
        if (e->d == MB_MEGATRON_LM) { /* several words: not quoted as one */
            char line[1200];
            snprintf(line, sizeof line, "--%s %s", k->megatron, list);
            for (char *p = line; *p && *p != ' '; p++)
                if (*p == '_')
                    *p = '-';
            mb_mge__push(e, line);
            return;
        }
        mb_mge__set(e, k->megatron, k->bridge, list);
        return;
    }
    mb_mge__set(e, k->megatron, k->bridge, v);
}

static void mb_mge__keys(struct mb_mge *e, const struct mb_scenario *s)
{
    size_t n;
    const struct mb_key *k = mb_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].megatron && !mb_mge__skip(s, &k[i]))
            mb_mge__key(e, s, &k[i]);
    if (e->d == MB_MEGATRON_BRIDGE) {
        mb_mge__int(e, "", "dataset.sequence_length", s->seq_length);
        mb_mge__switch(e, "", "optimizer.use_distributed_optimizer", s->dist_opt);
        if (s->defer_wgrad) { /* TransformerConfig fields without a Megatron-LM flag */
            mb_mge__switch(e, "", "comm_overlap.defer_embedding_wgrad_compute", 1);
            mb_mge__int(e, "", "comm_overlap.wgrad_deferral_limit", s->wgrad_deferral_limit);
        }
    }
}

/* ---------------------------------------------------------- compound */

/* Recompute. Full needs --recompute-method and --recompute-num-layers (between 1 and the layers
 * per stage): TransformerConfig raises without them (NVIDIA/Megatron-LM@d98e8a64dd
 * megatron/core/transformer/transformer_config.py:1913-1925). mbsim's num_layers 0 -- every layer
 * of the stage recomputed from its own input, whatever the method -- is Megatron's uniform 1
 * (each group of one layer checkpointed; memory.c and schedule.c price both the same). Selective
 * with no module recomputes nothing, while Megatron reads a bare selective as [core_attn]
 * (transformer_config.py:1940-1941): nothing is written, as for no recompute. */
static void mb_mge__recompute(struct mb_mge *e, const struct mb_scenario *s)
{
    if (s->recompute == MB_RC_NONE || (s->recompute == MB_RC_SELECTIVE && !s->recompute_modules))
        return;
    mb_mge__key(e, s, mb_key_find("recompute.granularity"));
    if (s->recompute == MB_RC_SELECTIVE) {
        mb_mge__key(e, s, mb_key_find("recompute.modules"));
        return;
    }
    int n = s->recompute_num_layers;
    mb_mge__set(e, "recompute_method", "model.recompute_method",
                n > 0 ? mb_key_value_name("recompute.method", s->recompute_method) : "uniform");
    mb_mge__int(e, "recompute_num_layers", "model.recompute_num_layers", n > 0 ? n : 1);
}


static void mb_mge__precision(struct mb_mge *e, const struct mb_scenario *s)
{
    static const char *const rec[][4] = {/* label, fp8 format, recipe, Bridge preset */
                                         {"bf16", NULL, NULL, "bf16_mixed"},
                                         {"fp16", NULL, NULL, "fp16_mixed"},
                                         {"fp8", "hybrid", "delayed", "bf16_with_fp8_delayed_scaling_mixed"},
                                         {"fp8_cs", "hybrid", "tensorwise", "bf16_with_fp8_current_scaling_mixed"},
                                         {"mxfp8", "e4m3", "mxfp8", "bf16_with_mxfp8_mixed"},
                                         {"fp8_blockwise", "e4m3", "blockwise", "bf16_with_fp8_subchannel_scaling_mixed"},
                                         {"nvfp4", NULL, NULL, "bf16_with_nvfp4_mixed"},
                                         {NULL, NULL, NULL, NULL}};
    int i = 0;
    while (rec[i][0] && strcmp(rec[i][0], s->prec.label))
        i++;
    if (!rec[i][0])
        i = 0;
    if (e->d == MB_MEGATRON_BRIDGE) {
        mb_mge__set(e, "", "mixed_precision", rec[i][3]);
        return;
    }
    mb_mge__switch(e, strcmp(rec[i][0], "fp16") ? "bf16" : "fp16", "", 1);
    if (rec[i][1]) {
        mb_mge__set(e, "fp8_format", "", rec[i][1]);
        mb_mge__set(e, "fp8_recipe", "", rec[i][2]);
    } else if (!strcmp(rec[i][0], "nvfp4")) {
        mb_mge__set(e, "fp4_format", "", "e2m1");
        mb_mge__set(e, "fp4_recipe", "", "nvfp4");
    }
}

static void mb_mge__dispatcher(struct mb_mge *e, const struct mb_scenario *s)
{
    if (!s->model.num_experts)
        return;
    const char *name = mb_key_value_name("moe.dispatcher", s->dispatcher);
    int flex = s->dispatcher == MB_DISP_DEEPEP || s->dispatcher == MB_DISP_HYBRIDEP;
    mb_mge__set(e, "moe_token_dispatcher_type", "model.moe_token_dispatcher_type", flex ? "flex" : name);
    if (!flex)
        return;
    mb_mge__set(e, "moe_flex_dispatcher_backend", "model.moe_flex_dispatcher_backend", name);
    int hyb = s->dispatcher == MB_DISP_HYBRIDEP;
    mb_mge__int(e, hyb ? "moe_hybridep_num_sms" : "moe_deepep_num_sms",
                hyb ? "model.moe_hybridep_num_sms" : "model.moe_deepep_num_sms", s->dispatcher_sms);
}

/* CUDA graphs: Megatron-LM main's --cuda-graph-impl + --cuda-graph-modules;
 * Bridge's model.cuda_graph_impl + model.cuda_graph_scope. */
static void mb_mge__cuda_graph(struct mb_mge *e, const struct mb_scenario *s)
{
    int br = e->d == MB_MEGATRON_BRIDGE;
    if (!s->cuda_graph) {
        if (br)
            mb_mge__set(e, "", "model.cuda_graph_impl", "none");
        return;
    }
    if (s->cuda_graph == MB_CG_FULL_ITERATION) {
        mb_mge__set(e, "cuda_graph_impl", "model.cuda_graph_impl", br ? "local" : "full_iteration");
        if (br)
            mb_mge__set(e, "", "model.cuda_graph_scope", "full_iteration");
        return;
    }
    mb_mge__set(e, "cuda_graph_impl", "model.cuda_graph_impl", "transformer_engine");
    if (s->cuda_graph == MB_CG_LAYER) {
        if (br)
            mb_mge__set(e, "", "model.cuda_graph_scope", "[]");
        return;
    }
    char names[512], line[600];
    mb_key_flag_names("cuda_graph.modules", s->cuda_graph, br ? "," : " ", names, sizeof names);
    if (br) {
        snprintf(line, sizeof line, "[%s]", names);
        mb_mge__set(e, "", "model.cuda_graph_scope", line);
    } else {
        snprintf(line, sizeof line, "--cuda-graph-modules %s", names);
        mb_mge__push(e, line);
    }
}

static void mb_mge__optimizer(struct mb_mge *e, const struct mb_scenario *s)
{
    int br = e->d == MB_MEGATRON_BRIDGE;
    if (s->strategy == MB_STRAT_FSDP) {
        if (s->fsdp_impl == MB_FSDP_TORCH2) {
            mb_mge__switch(e, "use_torch_fsdp2", "dist.use_torch_fsdp2", 1); /* Bridge: DistributedInitConfig */
        } else {
            mb_mge__switch(e, "use_megatron_fsdp", "ddp.use_megatron_fsdp", 1);
            mb_mge__set(e, "data_parallel_sharding_strategy", "ddp.data_parallel_sharding_strategy",
                        "optim_grads_params");
        }
    }
    if (!s->bias_act_fusion) { /* Megatron-LM: --no-bias-swiglu-fusion under --swiglu, else the GELU one
                                  (argument_utils.py); Bridge: the config field */
        int swiglu = s->model.act == MB_ACT_SWIGLU;
        mb_mge__switch(e, swiglu ? "no_bias_swiglu_fusion" : "no_bias_gelu_fusion", "model.bias_activation_fusion", !br);
    }
    if (br && s->cpu_offload_layers > 0) /* Megatron-LM's arguments.py sets it from the count; Bridge does not */
        mb_mge__switch(e, "", "model.cpu_offloading", 1);
    if (br) /* not ddp.: MixedPrecisionConfig.setup writes the mixed_precision field over DDP's */
        mb_mge__switch(e, "", "mixed_precision.grad_reduce_in_fp32", s->grad_bytes == 4);
    else
        mb_mge__switch(e, "grad_reduce_in_bf16", "", s->grad_bytes == 2);
    if (s->state_bytes == 4) {
        mb_mge__switch(e, "use_precision_aware_optimizer", "optimizer.use_precision_aware_optimizer", 1);
        mb_mge__set(e, "exp_avg_dtype", "optimizer.exp_avg_dtype", "bf16");
        mb_mge__set(e, "exp_avg_sq_dtype", "optimizer.exp_avg_sq_dtype", "bf16");
    }
}

/* -------------------------------------------------------------- notes */

/* Keys the rules above (or the notes) cover, besides those with a Megatron name. */
static const char *const mb_mge__covered[] = {
    "schema_version", "name", "model", "system.preset", "system.gpus", "precision", "moe.dispatcher",
    "moe.dispatcher_sms", "cuda_graph.modules", "parallel.strategy", "parallel.fsdp_impl", "optimizer.main_grads",
    "optimizer.states", "training.bias_activation_fusion", "peft.lora_rank", "peft.lora_targets", "overlap.defer_embedding_wgrad_compute", "overlap.wgrad_deferral_limit", "memory.expandable_segments", "collectives.all_reduce", "calibration.table", NULL};

static int mb_mge__is_covered(const struct mb_key *k)
{
    if (k->megatron || !strncmp(k->key, "measured.", 9))
        return 1;
    for (int i = 0; mb_mge__covered[i]; i++)
        if (!strcmp(k->key, mb_mge__covered[i]))
            return 1;
    return 0;
}

static void mb_mge__notes(const struct mb_scenario *s, enum mb_megatron_dialect d, FILE *fp)
{
    int per = s->system.gpus_per_node > 0 ? s->system.gpus_per_node : 8;
    int nodes = (s->gpus + per - 1) / per;
    fprintf(fp, "# %d GPUs of %s (model %s): torchrun --nnodes %d --nproc-per-node %d%s\n", s->gpus,
            s->system_ref[0] ? s->system_ref : s->system.name, s->model.name, nodes, s->gpus < per ? s->gpus : per,
            d == MB_MEGATRON_BRIDGE ? " (or your launcher's GPU count)" : "");
    if (s->expandable_segments)
        fprintf(fp, "# environment: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n");
    if (s->allreduce_algo)
        fprintf(fp, "# environment: NCCL_ALGO=%s\n", mb_key_value_name("collectives.all_reduce", (unsigned)s->allreduce_algo));
    size_t n;
    const struct mb_key *k = mb_keys(&n);
    for (size_t i = 0; i < n; i++) {
        if (mb_mge__is_covered(&k[i]) || mb_key_is_default(s, &k[i]) || (k[i].applies && !k[i].applies(s)))
            continue;
        char v[256];
        if (mb_key_format(s, &k[i], v, sizeof v) == 0)
            fprintf(fp, "# no Megatron setting for %s = %s (mbsim only)\n", k[i].key, v);
    }
    if (s->defer_wgrad && d == MB_MEGATRON_LM)
        fprintf(fp, "# overlap.defer_embedding_wgrad_compute (limit %d) has no Megatron-LM flag: set "
                "TransformerConfig defer_embedding_wgrad_compute / wgrad_deferral_limit (or --emit bridge)\n",
                s->wgrad_deferral_limit);
    if (s->lora_rank > 0)
        fprintf(fp, d == MB_MEGATRON_BRIDGE
                        ? "# LoRA (peft.lora_rank = %d): the peft.* overrides need a recipe built with peft_scheme "
                          "'lora' (its frozen base is the LoRA's)\n"
                        : "# LoRA (peft.lora_rank = %d) has no Megatron-LM flag: it is Megatron-Bridge's peft "
                          "(--emit bridge)\n",
                s->lora_rank);
    if (s->model.vision.depth > 0)
        fprintf(fp, "# the vision encoder (%d blocks, hidden %d) and data.images have no Megatron-LM flags: the "
                    "flags above train the language model alone, and importing them gives its text twin (a "
                    "VLM runs from Megatron-Bridge's VLM recipes or Megatron-LM's examples/multimodal)\n",
                s->model.vision.depth, s->model.vision.hidden);
    if (s->model.num_experts)
        fprintf(fp, "# mbsim simulates forced-balanced routing unless moe.routing: skewed (Megatron: "
                    "--moe-router-force-load-balancing in benchmarks)\n");
}

/* LoRA adapters: Megatron-Bridge's peft section (a recipe built with peft_scheme "lora" holds
 * its LoRA(dim, target_modules); NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/peft/lora.py);
 * Megatron-LM has no flag for them (a note says so). */
static void mb_mge__peft(struct mb_mge *e, const struct mb_scenario *s)
{
    if (s->lora_rank <= 0 || e->d != MB_MEGATRON_BRIDGE)
        return;
    mb_mge__key(e, s, mb_key_find("peft.lora_rank"));    /* Bridge-only keys: their .bridge paths */
    mb_mge__key(e, s, mb_key_find("peft.lora_targets"));
}

int mb_megatron_emit(const struct mb_scenario *s, enum mb_megatron_dialect d, FILE *out, FILE *notes)
{
    struct mb_mge e = {d, NULL, 0};
    mb_mge__model(&e, &s->model);
    mb_mge__precision(&e, s); /* before the keys: a Bridge preset first, then the fields it sets */
    mb_mge__keys(&e, s);
    mb_mge__recompute(&e, s);
    mb_mge__dispatcher(&e, s);
    mb_mge__cuda_graph(&e, s);
    mb_mge__optimizer(&e, s);
    mb_mge__peft(&e, s);
    for (int i = 0; i < e.n; i++) {
        fprintf(out, "%s%s\n", e.line[i], i + 1 < e.n ? " \\" : "");
        mb_free(e.line[i]);
    }
    mb_free(e.line);
    if (notes)
        mb_mge__notes(s, d, notes);
    return ferror(out) ? -1 : 0;
}
