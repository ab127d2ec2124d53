/*
 * mb_megatron_check.c -- what an import of Megatron settings refuses or lists
 * (private/megatron_int.h), for mb_import_megatron.c: typos of understood
 * names; Bridge overrides in a section Bridge does not read them from (noted,
 * never read); pairs Megatron refuses together and one setting given two
 * values (errors at file:line:col, not a last-wins choice); Bridge `null`
 * where Megatron-Core has no None; and the settings left over (notes).
 */
#include "megatron_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    *exact = 1;
    size_t na = 0;
    while (mb_mgi__aliases[na][0])
        na++;
    /* Most names are understood ones: find them by comparison before any distance (the same
     * first match the distance pass would return, as it returns at the first distance 0). */
    for (size_t i = 0; i < nk + 2 * na; i++) {
        const char *c = i < nk ? k[i].megatron : mb_mgi__aliases[(i - nk) / 2][(i - nk) % 2];
        if (c && !strcmp(name, c))
            return c;
    }
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
        for (int i = 0; lists[l][i]; i++)
            if (!strcmp(name, lists[l][i]))
                return lists[l][i];
    *exact = 0;
    for (size_t i = 0; i < nk + 2 * na; i++) {
        const char *c = i < nk ? k[i].megatron : mb_mgi__aliases[(i - nk) / 2][(i - nk) % 2];
        if (!c)
            continue;
        size_t n = strlen(c);
        int lim = n >= 10 ? 2 : n >= 5 ? 1 : 0, dist = mb_edit_distance(name, c, lim);
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
            int lim = n >= 10 ? 2 : n >= 5 ? 1 : 0, dist = mb_edit_distance(name, lists[l][i], lim);
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

int mb_mgi__is_no_effect(const struct mb_megatron_arg *g);

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
int mb_mgi__typos(struct mb_mgi *m)
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

/* ------------------------------------------------ what the framework refuses */

/* Megatron-Bridge paths besides the key table's `bridge` ones (ConfigContainer,
 * megatron/bridge/training/config.py): settings read from a section other than
 * model., and the second home of some. A setting mbsim understands written in
 * any other section is one Bridge does not apply there (Hydra refuses the key
 * in struct mode; `+section.key` adds one that _apply_overrides skips with a
 * warning): set aside with a note, never read. */
static const char *const mb_mgi__bridge_paths[] = {
    "dataset.seq_length", "dataset.sequence_length", "optimizer.use_distributed_optimizer", "mixed_precision",
    "mixed_precision.fp8", "mixed_precision.fp8_recipe", "mixed_precision.fp4", "mixed_precision.fp4_recipe",
    "mixed_precision.bf16", "mixed_precision.fp16", "mixed_precision.fp4_param_gather",
    "mixed_precision.grad_reduce_in_fp32", "dist.use_megatron_fsdp", "dist.use_torch_fsdp2", "ddp.use_megatron_fsdp",
    "ddp.data_parallel_sharding_strategy", "optimizer.use_precision_aware_optimizer", "optimizer.exp_avg_dtype",
    "optimizer.exp_avg_sq_dtype", "comm_overlap.defer_embedding_wgrad_compute", "comm_overlap.wgrad_deferral_limit",
    "peft.dim", "peft.alpha", "peft.dropout", "peft.target_modules", NULL};

/* MixedPrecisionConfig fields that its setup() writes over the model's, the optimizer's and DDP's
 * fields of the same name (update_config_with_precision_overrides; every Bridge recipe sets a
 * mixed_precision): given under model., optimizer. or ddp., the override is lost. */
static const char *const mb_mgi__mp_fields[] = {
    "bf16", "fp16", "fp8", "fp8_recipe", "fp4", "fp4_recipe", "fp8_param_gather", "fp4_param_gather",
    "grad_reduce_in_fp32", NULL};

static int mb_mgi__in(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return 1;
    return 0;
}

/* 1 when Bridge reads setting g (canonical name, path as written) where it is written. */
static int mb_mgi__bridge_path_ok(const struct mb_megatron_arg *g)
{
    const char *dot = strchr(g->written, '.');
    const char *leaf = dot ? dot + 1 : g->written;
    size_t nk;
    const struct mb_key *k = mb_keys(&nk);
    int has_key = 0;
    for (size_t i = 0; i < nk; i++) {
        if (k[i].bridge && !strcmp(k[i].bridge, g->written))
            return 1;
        has_key |= k[i].megatron && !strcmp(k[i].megatron, g->name);
    }
    if (mb_mgi__in(mb_mgi__bridge_paths, g->written))
        return 1;
    for (int i = 0; !has_key && mb_mgi__bridge_paths[i]; i++) { /* a name with its own section(s) */
        const char *d = strchr(mb_mgi__bridge_paths[i], '.');
        if (d && !strcmp(d + 1, leaf))
            return 0;
    }
    return !has_key && dot && !strncmp(g->written, "model.", 6) && !mb_mgi__in(mb_mgi__mp_fields, leaf);
}

/* Megatron-Bridge: overrides of understood settings in a section Bridge does not read them from. */
void mb_mgi__bridge_sections(struct mb_mgi *m)
{
    if (m->a->dialect != MB_MEGATRON_BRIDGE)
        return;
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        int exact;
        if (g->env || mb_mgi__is_no_effect(g) || !mb_mgi__nearest(g->name, &exact) || !exact ||
            mb_mgi__bridge_path_ok(g))
            continue;
        const char *dot = strchr(g->written, '.');
        const char *leaf = dot ? dot + 1 : g->written;
        g->ignored = g->used = 1;
        if (dot && mb_mgi__in(mb_mgi__mp_fields, leaf))
            mb_mgi__note(m, g, "not imported: Megatron-Bridge's mixed-precision setup (MixedPrecisionConfig.setup) "
                         "writes mixed_precision.%s over it (the recipe's when not given); give "
                         "mixed_precision.%s", leaf, leaf);
        else
            mb_mgi__note(m, g, "not imported: Megatron-Bridge does not read %s from %.*s (its config has no such "
                         "field there: Hydra refuses the override, or with + adds a key nothing reads)", leaf,
                         dot ? (int)(dot - g->written) + 1 : 9, dot ? g->written : "top level");
    }
}

/* A setting given and on: a switch or true for booleans, any value but None otherwise
 * (`none` for the CUDA-graph implementation). */
static int mb_mgi__on(const struct mb_megatron_arg *g)
{
    if (!g || mb_mgi__is_none(g))
        return 0;
    if (g->nval == 0 || !strcasecmp(g->val[0], "true") || !strcasecmp(g->val[0], "false"))
        return mb_mgi__bool(g) == 1;
    return !(g->nval == 1 && !strcmp(g->name, "cuda_graph_impl") && !strcmp(g->val[0], "none"));
}

/* Pairs Megatron refuses together (megatron/training/arguments.py validate_args,
 * Megatron-Core's TransformerConfig, Bridge's ConfigContainer.validate). */
static const struct {
    const char *a, *b;
    int dialect; /* -1 both, else the one it applies to */
    const char *why;
} mb_mgi__refused[] = {
    {"num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", MB_MEGATRON_LM,
     "validate_args: no more than one of --num-layers-per-virtual-pipeline-stage, "
     "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout"},
    {"num_layers_per_virtual_pipeline_stage", "pipeline_model_parallel_layout", MB_MEGATRON_LM,
     "validate_args: no more than one of --num-layers-per-virtual-pipeline-stage, "
     "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout"},
    {"num_virtual_stages_per_pipeline_rank", "pipeline_model_parallel_layout", MB_MEGATRON_LM,
     "validate_args: no more than one of --num-layers-per-virtual-pipeline-stage, "
     "--num-virtual-stages-per-pipeline-rank and --pipeline-model-parallel-layout"},
    {"num_layers_per_virtual_pipeline_stage", "num_layers_in_first_pipeline_stage", MB_MEGATRON_LM,
     "validate_args: an uneven split takes --num-virtual-stages-per-pipeline-rank"},
    {"num_layers_per_virtual_pipeline_stage", "num_layers_in_last_pipeline_stage", MB_MEGATRON_LM,
     "validate_args: an uneven split takes --num-virtual-stages-per-pipeline-rank"},
    {"bf16", "fp16", MB_MEGATRON_LM, "validate_args asserts that not both are on"},
    {"fp8", "fp4", MB_MEGATRON_LM, "validate_args: \"--fp4-format and --fp8-format cannot be used simultaneously\""},
    {"enable_cuda_graph", "cuda_graph_impl", MB_MEGATRON_LM,
     "validate_args: \"Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl\""},
    {"external_cuda_graph", "cuda_graph_impl", MB_MEGATRON_LM,
     "validate_args: \"Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl\""},
    {"enable_cuda_graph", "external_cuda_graph", MB_MEGATRON_LM, "validate_args: not both at the same time"},
    {"step_batch_size_schedule", "global_batch_size", MB_MEGATRON_LM,
     "validate_args and validate_yaml: \"Cannot specify both --step-batch-size-schedule and --global-batch-size\""},
    {"use_megatron_fsdp", "use_torch_fsdp2", MB_MEGATRON_BRIDGE,
     "ConfigContainer.validate: \"use_megatron_fsdp and use_torch_fsdp2 are mutually exclusive\""},
    {NULL, NULL, 0, NULL}};

/* Settings the framework refuses together: the pairs above (a log is what
 * Megatron accepted, so it is not checked), and one setting written two ways
 * (an alias, or a second section) with two values -- Bridge's model.seq_length
 * and dataset.seq_length must match (ConfigContainer.validate), Megatron-LM
 * refuses --cuda-graph-scope beside --cuda-graph-modules. Not a last-wins
 * choice: an error at the second, naming the first. Bridge turns the
 * distributed optimizer on when either ddp. or optimizer. asks for it
 * (_sync_distributed_optimizer): a note, not an error. */
int mb_mgi__conflicts(struct mb_mgi *m)
{
    struct mb_megatron_args *a = m->a;
    if (a->log_block)
        return 0;
    for (int r = 0; mb_mgi__refused[r].a; r++) {
        if (mb_mgi__refused[r].dialect >= 0 && mb_mgi__refused[r].dialect != (int)a->dialect)
            continue;
        struct mb_megatron_arg *x = NULL, *y = NULL;
        for (int i = 0; i < a->n; i++) {
            struct mb_megatron_arg *g = &a->a[i];
            if (g->env || g->ignored)
                continue;
            if (!strcmp(g->name, mb_mgi__refused[r].a))
                x = g;
            else if (!strcmp(g->name, mb_mgi__refused[r].b))
                y = g;
        }
        if (mb_mgi__on(x) && mb_mgi__on(y)) {
            struct mb_megatron_arg *later = x->line > y->line || (x->line == y->line && x->col > y->col) ? x : y;
            struct mb_megatron_arg *first = later == x ? y : x;
            return mb_mgi__err(m, later, "refused beside %s (%d:%d): %s", first->written, first->line, first->col,
                               mb_mgi__refused[r].why);
        }
    }
    for (int i = 0; i < a->n; i++) {
        struct mb_megatron_arg *g = &a->a[i];
        if (g->env || g->ignored || mb_mgi__is_none(g))
            continue;
        for (int j = 0; j < i; j++) {
            struct mb_megatron_arg *f = &a->a[j];
            if (f->env || f->ignored || mb_mgi__is_none(f) || strcmp(f->name, g->name))
                continue;
            if (!strcmp(f->written, g->written)) { /* one spelling given twice: the last one wins, as in argparse
                                                       and Hydra; a different value is noted, not dropped silently */
                char vf[256], vg[256];
                mb_mgi__text(f, vf, sizeof vf);
                mb_mgi__text(g, vg, sizeof vg);
                if (strcmp(vf, vg))
                    mb_mgi__note(m, g, "given again: the value %s of %d:%d is replaced by %s (the last one wins, "
                                 "as %s takes it)", vf, f->line, f->col, vg,
                                 a->dialect == MB_MEGATRON_BRIDGE ? "Hydra" : "argparse");
                continue;
            }
            if (strstr(f->written, "fp4") || strstr(g->written, "fp4"))
                continue; /* --fp4-param-gather: fp8_param_gather's NVFP4 twin, one mbsim key */
            char vf[256], vg[256];
            mb_mgi__text(f, vf, sizeof vf);
            mb_mgi__text(g, vg, sizeof vg);
            if (!strcmp(g->name, "use_distributed_optimizer") && a->dialect == MB_MEGATRON_BRIDGE) {
                if (strcmp(vf, vg))
                    mb_mgi__note(m, g, "%s beside %s=%s (%d:%d): Megatron-Bridge turns the distributed optimizer on "
                                 "for both when either asks for it", vg, f->written, vf, f->line, f->col);
                continue;
            }
            if (!strcmp(g->name, "cuda_graph_modules") && a->dialect == MB_MEGATRON_LM)
                return mb_mgi__err(m, g, "refused beside %s (%d:%d): validate_args: \"--cuda-graph-scope and "
                                   "--cuda-graph-modules cannot be used together\"", f->written, f->line, f->col);
            if (strcmp(vf, vg))
                return mb_mgi__err(m, g, "%s, but %s (%d:%d) is %s: one setting given two values%s", vg, f->written,
                                   f->line, f->col, vf, !strcmp(g->name, "seq_length") && a->dialect ==
                                   MB_MEGATRON_BRIDGE ? " (Megatron-Bridge requires the model's and the dataset's "
                                   "sequence lengths to match)" : "; give one");
        }
    }
    return 0;
}

/* A YAML value that is no value (a mapping, ${VAR}: mb_megatron_arg.bad) on a setting the import reads:
 * an error at it. A setting that takes one value given several (`--moe-flex-dispatcher-backend hybridep \\ ` makes a
 * second word of a blank; Bridge `[a,b]` for a number): argparse takes one word for such a flag and exits
 * on the rest ("unrecognized arguments"); the rules read one value and took the flag for absent (the
 * deepep default). An error at the setting. Lists are settings whose type is one (recompute_modules,
 * cuda_graph_modules) and settings the import does not read (listed whole in their note). */
int mb_mgi__single_values(struct mb_mgi *m)
{
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        if (g->bad && !g->ignored && (mb_mgi__key_of(g->name) || mb_mgi__in(mb_mgi__rule_names, g->name) ||
                                      mb_mgi__in(mb_mgi__arch_names, g->name)))
            return mb_mgi__err(m, g, "expected %s, got %s", g->is_list ? "a list of values" : "a value", g->bad);
        if (g->env || g->ignored || m->a->log_block || !(g->nval > 1 || (g->is_list && g->nval > 0)))
            continue;
        const struct mb_key *k = mb_mgi__key_of(g->name);
        int one = k ? k->type != MB_KEY_FLAGS
                    : (mb_mgi__in(mb_mgi__rule_names, g->name) && strcmp(g->name, "cuda_graph_modules")) ||
                          mb_mgi__in(mb_mgi__arch_names, g->name);
        if (one)
            return mb_mgi__err(m, g, "%d values ('%s', '%s'%s): it takes one%s", g->nval, g->val[0],
                               g->nval > 1 ? g->val[1] : "", g->nval > 2 ? ", ..." : "",
                               m->a->dialect == MB_MEGATRON_LM ? " (argparse exits on the others: \"unrecognized "
                               "arguments\")" : ", not a list");
    }
    return 0;
}

/* Bridge `null` on a setting a rule reads: None where Megatron-Core has an
 * unset meaning for it (the rule takes it as absent, a boolean as off), else an
 * error, as for the keys read one to one (mb_mgi__direct_null). */
static const char *const mb_mgi__null_rule_ok[] = {
    "expert_tensor_parallel_size", "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
    "fp8", "fp4", "mixed_precision", "cuda_graph_modules", "exp_avg_dtype", "exp_avg_sq_dtype",
    "num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank", NULL};

int mb_mgi__rule_nulls(struct mb_mgi *m)
{
    if (m->a->dialect != MB_MEGATRON_BRIDGE)
        return 0;
    for (int i = 0; i < m->a->n; i++) {
        struct mb_megatron_arg *g = &m->a->a[i];
        if (g->env || g->ignored || !mb_mgi__is_none(g) || mb_mgi__key_of(g->name) ||
            !mb_mgi__in(mb_mgi__rule_names, g->name) || mb_mgi__in(mb_mgi__null_rule_ok, g->name))
            continue;
        static const char *const bools[] = {
            "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split", "bf16", "fp16",
            "defer_embedding_wgrad_compute", "enable_cuda_graph", "external_cuda_graph", "moe_enable_deepep",
            "moe_grouped_gemm", "moe_router_force_load_balancing", "use_megatron_fsdp", "use_precision_aware_optimizer",
            "use_torch_fsdp2", NULL};
        if (mb_mgi__in(bools, g->name))
            continue; /* None is falsy: read as off (mb_mgi__bool) */
        return mb_mgi__err(m, g, "null: Megatron-Core has no None for it (it computes with the value); give a "
                           "value, or leave the override out to keep the recipe's");
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
    "num_dataset_builder_threads", "use_mcore_models", "transformer_impl",
    "masked_softmax_fusion", "bias_dropout_fusion", "apply_query_key_layer_scaling", "iteration", "consumed_*",
    "node_rank", "master_addr", "master_port", "rdzv_*", "rdzv-*", "max_restarts", "record_memory_history",
    "memory_snapshot_path", "no_create_attention_mask_in_dataloader", "reset_position_ids", "reset_attention_mask",
    "eod_mask_loss", "moe_aux_loss_coeff", "moe_z_loss_coeff", "moe_router_bias_update_rate", "adam_eps", NULL};

/* Bridge config groups with nothing a step depends on. */
static const char *const mb_mgi__no_effect_sections[] = {
    "checkpoint.", "logger.", "rng.", "scheduler.", "tokenizer.", "profiling.", "inprocess_restart.", "straggler.",
    "rerun_state_machine.", NULL};

int mb_mgi__is_no_effect(const struct mb_megatron_arg *g)
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

static void mb_mgi__value_text(const struct mb_megatron_arg *g, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->nval && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", g->val[i]);
}

void mb_mgi__leftovers(struct mb_mgi *m)
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
