/*
 * mb_validate_recipe_cols.c -- the recipe columns (dispatcher ... other_recipe), one parser per column.
 */
#include "validate_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* recipe columns                                                     */
/* ------------------------------------------------------------------ */

/*
 * One function per column, each reading the vocabulary of
 * shared/data/measured/README.md. The cell is lower-cased first; "(...)" and
 * "[...]" hold remarks and flags. A column handler sets scenario fields only
 * when the cell parses and applies; it lists in r what it set (only values
 * that differ from what the scenario held), what it cannot model, and why a
 * cell was refused. Nothing is guessed: an empty cell is "not determinable".
 */

const char *mb_validate_recipe_column(enum mb_val_rcol col)
{
    return (int)col >= 0 && col < MB_VAL_RC_COUNT ? mb_val__rcolname[col] : NULL;
}

void mb_validate_recipe_init(struct mb_val_recipe *r)
{
    memset(r, 0, sizeof *r);
}

/* Append a formatted item to a comma-separated list. */
void MB_VAL__FMT(3, 4) mb_validate__rl_add(char *buf, size_t n, const char *fmt, ...)
{
    char item[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    mb_validate__note_add(buf, n, item);
}

/* A cell as shown in messages: at most 60 characters, "..." when cut. */
const char *mb_validate__rc_shown(const char *cell, char *buf, size_t n)
{
    size_t l = strlen(cell);
    if (l < 61 || n < 64)
        mb_validate__copy_str(buf, n, cell);
    else
        snprintf(buf, n, "%.57s...", cell);
    return buf;
}

/* Record an unparseable cell: "column 'cell': why". Returns -1. */
static int MB_VAL__FMT(4, 5) mb_validate__rc_bad(struct mb_val_recipe *r, enum mb_val_rcol col, const char *cell,
                                    const char *fmt, ...)
{
    char why[200], sh[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    mb_validate__rl_add(r->bad, sizeof r->bad, "%s '%s': %s", mb_val__rcolname[col], mb_validate__rc_shown(cell, sh, sizeof sh), why);
    r->n_bad++;
    return -1;
}

/* Lower-cased, trimmed copy. */
static char *mb_validate__rc_lower(char *dst, size_t n, const char *src)
{
    mb_validate__copy_str(dst, n, src);
    mb_validate__lower(dst);
    return mb_validate__trim(dst);
}

/* The text before the first '(' or '[' (trimmed), into dst. */
static char *mb_validate__rc_head(char *dst, size_t n, const char *t)
{
    mb_validate__copy_str(dst, n, t);
    dst[strcspn(dst, "([")] = '\0';
    return mb_validate__trim(dst);
}

/* Characters of an item shown in a list: its length, at most 60. */
static int mb_validate__rc_len60(const char *item)
{
    size_t n = strlen(item);
    return n < 60 ? (int)n : 60;
}

static int mb_validate__rc_is_na(const char *t)
{
    return !strncmp(t, "n/a", 3);
}

/* "true" / "false" at the start of v (up to a space, ',' or '('): 1 / 0, else -1. */
static int mb_validate__rc_bool(const char *v)
{
    size_t n = strcspn(v, " ,(");
    if (n == 4 && !strncmp(v, "true", 4))
        return 1;
    if (n == 5 && !strncmp(v, "false", 5))
        return 0;
    return -1;
}

/* A non-negative integer at *p (leading blanks skipped); -1 if none. */
static long mb_validate__rc_int(const char **p)
{
    const char *s = *p + strspn(*p, " ");
    char *end;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE || v > 1000000)
        return -1;
    *p = end;
    return v;
}

/* dispatcher: alltoall, allgather, flex:deepep, flex:hybridep (moe_hybridep_num_sms=N);
 * "(card)" and other remarks ignored; an SM count also as "[--moe-deepep-num-sms N]". */
static int mb_validate__rc_dispatcher(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    char head[64];
    const char *name = mb_validate__rc_head(head, sizeof head, t), *p;
    enum mb_dispatcher d;
    long sms = 0;
    if (!strncmp(name, "flex:", 5))
        name += 5;
    if (!strcmp(name, "alltoall"))
        d = MB_DISP_ALLTOALL;
    else if (!strcmp(name, "allgather"))
        d = MB_DISP_ALLGATHER;
    else if (!strcmp(name, "deepep"))
        d = MB_DISP_DEEPEP;
    else if (!strcmp(name, "hybridep"))
        d = MB_DISP_HYBRIDEP;
    else
        return mb_validate__rc_bad(r, MB_VAL_RC_DISPATCHER, cell, "expected alltoall, allgather, flex:deepep or flex:hybridep");
    if ((p = strstr(t, "num_sms=")) != NULL || (p = strstr(t, "num-sms")) != NULL) {
        p += p[7] == '=' ? 8 : 7;
        sms = mb_validate__rc_int(&p);
        if (sms < 1 || sms > 1024)
            return mb_validate__rc_bad(r, MB_VAL_RC_DISPATCHER, cell, "SM count is not an integer in 1..1024");
    }
    if (s->model.num_experts <= 0 || s->ep <= 1) {
        if (d != MB_DISP_ALLTOALL)
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "dispatcher %s (%s)", mb_key_value_name("moe.dispatcher", d),
                   s->model.num_experts <= 0 ? "dense model" : "ep = 1");
        return 0;
    }
    int changed = d != s->dispatcher || (sms && sms != s->dispatcher_sms);
    s->dispatcher = d;
    if (sms)
        s->dispatcher_sms = (int)sms;
    if (changed) {
        if (d == MB_DISP_HYBRIDEP || d == MB_DISP_DEEPEP)
            mb_validate__rl_add(r->applied, sizeof r->applied, "dispatcher %s (%d SMs%s)", mb_key_value_name("moe.dispatcher", d), s->dispatcher_sms,
                   sms ? "" : ", SM count not stated: default");
        else
            mb_validate__rl_add(r->applied, sizeof r->applied, "dispatcher %s", mb_key_value_name("moe.dispatcher", d));
    }
    return 0;
}

/* ep_overlap: on (overlap_moe_expert_parallel_comm[, delay_wgrad_compute | , no delay_wgrad]) / off (...) */
static int mb_validate__rc_ep_overlap(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    int on;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))
        on = 1;
    else if (!strncmp(t, "off", 3) && !isalnum((unsigned char)t[3]))
        on = 0;
    else
        return mb_validate__rc_bad(r, MB_VAL_RC_EP_OVERLAP, cell, "expected on (...) or off");
    int delay = on && strstr(t, "delay_wgrad") && !strstr(t, "no delay_wgrad") &&
                !strstr(t, "delay_wgrad_compute=false");
    int moe_ep = s->model.num_experts > 0 && s->ep > 1;
    if (on && (!moe_ep || (s->pp > 1 && s->vpp < 2))) {
        mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "EP overlap (%s)",
               moe_ep ? "pp > 1 without vpp" : "no expert parallelism");
        return 0;
    }
    if (s->overlap_ep_comm != on)
        mb_validate__rl_add(r->applied, sizeof r->applied, "EP overlap %s", on ? "on" : "off");
    s->overlap_ep_comm = on;
    if (delay)
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "delay_wgrad_compute");
    return 0;
}

/* cuda_graph: none, full_iteration, te:<scopes>, local:<scopes>, local:full_layer (...);
 * "enabled (scope not stated)" is not determinable. */
static int mb_validate__rc_cuda_graph(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    unsigned cg = 0;
    char scopes[128] = "";
    if (!strncmp(t, "none", 4)) {
        cg = 0;
    } else if (!strncmp(t, "full_iteration", 14)) {
        cg = MB_CG_FULL_ITERATION;
        mb_validate__copy_str(scopes, sizeof scopes, "full_iteration");
    } else if (!strncmp(t, "te:", 3) || !strncmp(t, "local:", 6)) {
        char list[128], *save = NULL;
        mb_validate__copy_str(list, sizeof list, strchr(t, ':') + 1);
        list[strcspn(list, " ([")] = '\0';
        mb_validate__copy_str(scopes, sizeof scopes, t);
        scopes[strcspn(scopes, " ([")] = '\0';
        if (!list[0])
            return mb_validate__rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "no scope after '%.8s'", t);
        for (char *it = strtok_r(list, "+", &save); it; it = strtok_r(NULL, "+", &save)) {
            unsigned f = !strcmp(it, "full_layer") ? MB_CG_LAYER : mb_cuda_graph_module(it);
            if (!f)
                return mb_validate__rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "unknown scope '%.40s'", it);
            cg |= f;
        }
        if ((cg & MB_CG_FULL_ITERATION) && cg != MB_CG_FULL_ITERATION)
            return mb_validate__rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "full_iteration goes alone");
    } else if (!strncmp(t, "enabled", 7) || (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))) {
        mb_validate__rl_add(r->defaulted, sizeof r->defaulted, "cuda_graph (scope not stated)");
        return 0;
    } else {
        return mb_validate__rc_bad(r, MB_VAL_RC_CUDA_GRAPH, cell, "expected none, full_iteration, te:<scopes> or local:<scopes>");
    }
    if (cg != s->cuda_graph)
        mb_validate__rl_add(r->applied, sizeof r->applied, "CUDA graphs %s", cg ? scopes : "none");
    s->cuda_graph = cg;
    return 0;
}

static void mb_validate__rc_describe(char *buf, size_t n, enum mb_rc_gran g, unsigned mods, enum mb_rc_method meth, int layers)
{
    if (g == MB_RC_NONE) {
        snprintf(buf, n, "none");
    } else if (g == MB_RC_FULL) {
        if (layers > 0)
            snprintf(buf, n, "full %s %d layer%s", meth == MB_RC_BLOCK ? "block" : "uniform", layers,
                     layers == 1 ? "" : "s");
        else
            snprintf(buf, n, "full");
    } else {
        size_t l = (size_t)snprintf(buf, n, "selective ");
        if (l < n)
            mb_key_flag_names("recompute.modules", mods, "+", buf + l, n - l);
    }
}

/* recompute_detail: none; selective:<a+b> (also "[] (nothing)", "core_attn (MCore default modules)");
 * full:<uniform|block>:<N> layer[s]; full (...) = all layers. Overrides the recompute column. */
static int mb_validate__rc_recompute(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    enum mb_rc_gran g;
    unsigned mods = 0;
    enum mb_rc_method meth = MB_RC_UNIFORM;
    long layers = 0;
    if (!strncmp(t, "none", 4)) {
        g = MB_RC_NONE;
    } else if (!strncmp(t, "selective", 9)) {
        char list[160], *save = NULL, *l = list;
        mb_validate__copy_str(list, sizeof list, t + 9);
        l = mb_validate__trim(list);
        if (*l != ':' && *l && *l != '(')
            return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected 'selective:<modules>'");
        g = MB_RC_SELECTIVE;
        if (*l == ':') {
            l = mb_validate__trim(l + 1);
            if (*l == '[') {
                char *e = strchr(l, ']');
                if (!e)
                    return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "unclosed '['");
                *e = '\0';
                l++;
            } else {
                l[strcspn(l, " ([")] = '\0';
            }
            for (char *it = strtok_r(l, "+,", &save); it; it = strtok_r(NULL, "+,", &save)) {
                char *name = mb_validate__trim(it);
                unsigned f;
                if (!*name)
                    continue;
                f = mb_validate__rc_module(name);
                if (!f)
                    return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "recompute module '%.40s' not known", name);
                mods |= f;
            }
            if (!mods)
                g = MB_RC_NONE; /* an empty module list recomputes nothing */
        } else {
            mods = MB_RCM_CORE_ATTN; /* Megatron's default --recompute-modules */
        }
    } else if (!strncmp(t, "full", 4) && (!t[4] || t[4] == ' ' || t[4] == '(' || t[4] == ':')) {
        g = MB_RC_FULL;
        if (t[4] == ':') {
            const char *p = t + 5;
            if (!strncmp(p, "uniform:", 8)) {
                p += 8;
            } else if (!strncmp(p, "block:", 6)) {
                meth = MB_RC_BLOCK;
                p += 6;
            } else {
                return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected full:<uniform|block>:<N> layers");
            }
            layers = mb_validate__rc_int(&p);
            p += strspn(p, " ");
            if (layers < 0 || (strncmp(p, "layer", 5) != 0))
                return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected full:<uniform|block>:<N> layers");
        }
    } else {
        return mb_validate__rc_bad(r, MB_VAL_RC_RECOMPUTE_DETAIL, cell, "expected none, selective:<modules> or full[:<method>:<N> layers]");
    }
    if (g != s->recompute || (g == MB_RC_SELECTIVE && mods != s->recompute_modules) ||
        (g == MB_RC_FULL && (layers != s->recompute_num_layers || meth != s->recompute_method))) {
        char now[160], was[160];
        mb_validate__rc_describe(now, sizeof now, g, mods, meth, (int)layers);
        mb_validate__rc_describe(was, sizeof was, s->recompute, s->recompute_modules, s->recompute_method, s->recompute_num_layers);
        mb_validate__rl_add(r->applied, sizeof r->applied, "recompute %s (recompute column: %s)", now, was);
    }
    s->recompute = g;
    s->recompute_modules = g == MB_RC_SELECTIVE ? mods : 0;
    s->recompute_method = meth;
    s->recompute_num_layers = g == MB_RC_FULL ? (int)layers : 0;
    return 0;
}

/* tp_overlap: on (<ub cfg>), off, none (...), async TP (enable_async_tensor_parallel=True). */
static int mb_validate__rc_tp_overlap(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    int on, async = 0;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2]))
        on = 1;
    else if (!strncmp(t, "async tp", 8))
        on = async = 1;
    else if (!strncmp(t, "off", 3) || !strncmp(t, "none", 4))
        on = 0;
    else
        return mb_validate__rc_bad(r, MB_VAL_RC_TP_OVERLAP, cell, "expected on (...), off, none or async TP");
    if (s->tp <= 1) {
        if (on)
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "TP overlap (tp = 1)");
        return 0;
    }
    if (on != s->overlap_tp_comm)
        mb_validate__rl_add(r->applied, sizeof r->applied, "TP comm overlap %s%s", on ? "on" : "off",
               async ? " (async TP read as overlap.tp_comm)" : "");
    s->overlap_tp_comm = on;
    return 0;
}

/* NeMo AutoModel's FSDP2 (FSDP2Manager) on its MoE models: AutoModel's own MoE model classes are built in
 * bf16 (`initialize_weights(dtype=torch.bfloat16)` then `self.to(dtype)`, NVIDIA-NeMo/Automodel@8d9bfb90
 * nemo_automodel/components/models/qwen3_moe/model.py), so FSDP2's sharded parameters, their gradients and
 * torch.optim.Adam's moments are bf16; and its MoE parallelizer calls `fully_shard` with
 * `reshard_after_forward=False` unless told otherwise (nemo_automodel/components/moe/parallelizer.py,
 * `parallelize_model`, which the LLM recipe calls without it: recipes/llm/train_ft.py). Dense models go
 * through nemo_automodel/components/distributed/parallelizer.py, which reshards every block but the last
 * (`apply_fsdp2_sharding_recursively`), in the dtype they are loaded in (not stated by the rows: the
 * defaults stay). */
static void mb_validate__rc_automodel_fsdp2(struct mb_scenario *s, struct mb_val_recipe *r)
{
    if (s->model.num_experts <= 0)
        return;
    s->fsdp_sharded_bytes = 2;
    s->fsdp_reshard_after_forward = 0;
    mb_validate__rl_add(r->applied, sizeof r->applied, "FSDP2 sharded parameters bf16 and "
                        "reshard_after_forward off (AutoModel's MoE models)");
}

/* fsdp_impl: none (DDP + distributed optimizer), none (DDP), none (... no distributed optimizer ...),
 * megatron_fsdp[:<sharding>] (...), torch_fsdp2 (...). The fsdp column decides the strategy. */
static int mb_validate__rc_fsdp_impl(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    if (!strncmp(t, "none", 4)) {
        int dist = strstr(t, "distributed optimizer") && !strstr(t, "no distributed optimizer");
        if (s->strategy == MB_STRAT_FSDP) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "fsdp_impl none (the fsdp column says FSDP: kept)");
            return 0;
        }
        if (dist != s->dist_opt)
            mb_validate__rl_add(r->applied, sizeof r->applied, "%s", dist ? "distributed optimizer" : "DDP, no distributed optimizer");
        s->dist_opt = dist;
        /* Megatron-LM's LocalDDP (--DDP-impl local, before 2023) all-reduces the
         * gradient buffer in train_step after the last microbatch's backward
         * (model_module.allreduce_gradients()): nothing overlaps it */
        if (strstr(t, "ddp-impl local") && s->overlap_grad_reduce) {
            mb_validate__rl_add(r->applied, sizeof r->applied, "grad-reduce overlap off (LocalDDP)");
            s->overlap_grad_reduce = 0;
        }
        return 0;
    }
    int mfsdp = !strncmp(t, "megatron_fsdp", 13);
    if (!mfsdp && strncmp(t, "torch_fsdp2", 11) != 0)
        return mb_validate__rc_bad(r, MB_VAL_RC_FSDP_IMPL, cell, "expected none (...), megatron_fsdp[:<sharding>] or torch_fsdp2");
    if (s->strategy != MB_STRAT_FSDP) {
        mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "fsdp_impl %s (the fsdp column says 3D: kept)",
               mfsdp ? "megatron_fsdp" : "torch_fsdp2");
        return 0;
    }
    /* the flavour: its memory (docs/modeling.md, FSDP); before 2026-12-07 every FSDP row ran as
     * Megatron-FSDP, the key's default, whatever this cell said */
    s->fsdp_impl = mfsdp ? MB_FSDP_MEGATRON : MB_FSDP_TORCH2;
    if (!mfsdp)
        mb_validate__rl_add(r->applied, sizeof r->applied, "PyTorch FSDP2");
    if (mfsdp && t[13] == ':') {
        char shard[64];
        mb_validate__copy_str(shard, sizeof shard, t + 14);
        shard[strcspn(shard, " ([;")] = '\0';
        if (strcmp(shard, "optim_grads_params") != 0)
            mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled,
                   "data_parallel_sharding_strategy %s (simulated as optim_grads_params)", shard);
    }
    if (!mfsdp && strstr(t, "automodel"))
        mb_validate__rc_automodel_fsdp2(s, r);
    if (strstr(t, "nccl_ub"))
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "nccl_ub");
    /* Megatron-FSDP's double buffer (--fsdp-double-buffer, which --use-nccl-ub turns on:
     * ParamAndGradBuffer sets ddp_config.fsdp_double_buffer under nccl_ub) holds two units each */
    if (mfsdp && (strstr(t, "fsdp_double_buffer") || strstr(t, "nccl_ub"))) {
        s->fsdp_double_buffer = 1;
        mb_validate__rl_add(r->applied, sizeof r->applied, "Megatron-FSDP double buffer");
    }
    if (strstr(t, "keep_fp8_transpose_cache") && !strstr(t, "keep_fp8_transpose_cache=false"))
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "keep_fp8_transpose_cache");
    /* fsdp2_prefetch: one layer gathered ahead = overlap.fsdp_prefetch 1, the default */
    return 0;
}

/* cpu_offload: none; activations: N layers (weights=...) -> memory.cpu_offloading_num_layers N
 * (weight offloading, weights=True, is listed as not modelled); fine_grained_activation_offloading ...
 * and optimizer(_)cpu offload ... are not modelled. */
static int mb_validate__rc_cpu_offload(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    if (!strncmp(t, "none", 4))
        return 0;
    if (!strncmp(t, "activations:", 12)) {
        const char *p = t + 12;
        long n = mb_validate__rc_int(&p);
        if (n < 0 || n > 100000)
            return mb_validate__rc_bad(r, MB_VAL_RC_CPU_OFFLOAD, cell, "expected 'activations: N layers'");
        s->cpu_offload_layers = (int)n;
        if (n > 0)
            mb_validate__rl_add(r->applied, sizeof r->applied, "CPU activation offload %ld layers", n);
        if (strstr(t, "weights=true"))
            mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "CPU weight offload");
        return 0;
    }
    if (!strncmp(t, "fine_grained_activation_offloading", 34)) {
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "fine-grained activation offload");
        return 0;
    }
    if (!strncmp(t, "optimizer cpu offload", 21) || !strncmp(t, "optimizer_cpu_offload", 21)) {
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "optimizer CPU offload");
        return 0;
    }
    return mb_validate__rc_bad(r, MB_VAL_RC_CPU_OFFLOAD, cell, "expected none, activations: N layers, "
                                                  "fine_grained_activation_offloading or optimizer_cpu_offload");
}

/* fp8_recipe: tensorwise ... -> fp8_cs, delayed scaling -> fp8, mxfp8, blockwise -> fp8_blockwise,
 * nvfp4, none (bf16) / none (fp16 ...); "[flags; ...]": fp8_dot_product_attention switches
 * attention to FP8, the rest are listed as not modelled. "... not determinable ..." keeps the
 * precision column. */
static int mb_validate__rc_kv_bool(const char *x, const char *key, int *b);

static int mb_validate__rc_fp8_recipe(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    const char *label;
    if (strstr(t, "not determinable")) {
        mb_validate__rl_add(r->defaulted, sizeof r->defaulted, "fp8_recipe (not determinable: the precision column is used)");
        return 0;
    }
    if (!strncmp(t, "tensorwise", 10))
        label = "fp8_cs";
    else if (!strncmp(t, "delayed", 7))
        label = "fp8";
    else if (!strncmp(t, "mxfp8", 5))
        label = "mxfp8";
    else if (!strncmp(t, "blockwise", 9))
        label = "fp8_blockwise";
    else if (!strncmp(t, "nvfp4", 5))
        label = "nvfp4";
    else if (!strncmp(t, "none", 4) && strstr(t, "fp16"))
        label = "fp16";
    else if (!strncmp(t, "none", 4) && strstr(t, "bf16"))
        label = "bf16";
    else
        return mb_validate__rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell,
                      "expected tensorwise, delayed scaling, mxfp8, blockwise, nvfp4 or none (bf16|fp16)");
    struct mb_precision rp;
    if (mb_precision_parse(label, &rp) != 0)
        return mb_validate__rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "precision '%s' not known to mbsim", label);
    /* bracketed flags */
    int dpa = 0, fp8pg = -2; /* -2 not said, -1 neither True nor False */
    const char *br = strchr(t, '[');
    if (br) {
        char flags[400], *save = NULL;
        mb_validate__copy_str(flags, sizeof flags, br + 1);
        char *e = strchr(flags, ']');
        if (!e)
            return mb_validate__rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "unclosed '['");
        *e = '\0';
        if (!strncmp(mb_validate__trim(flags), "inferred", 8))
            flags[0] = '\0'; /* "[inferred: why]" is a remark, not flags */
        for (char *it = strtok_r(flags, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
            char *f = mb_validate__trim(it);
            if (!*f)
                continue;
            int pg = -1;
            if (!strncmp(f, "fp8_dot_product_attention", 25))
                dpa = 1;
            else if (mb_validate__rc_kv_bool(f, "fp8_param_gather", &pg) || mb_validate__rc_kv_bool(f, "fp4_param_gather", &pg) ||
                     mb_validate__rc_kv_bool(f, "fp8_param_gather/params", &pg)) /* MLPerf: NeMo's fp8_params too */
                fp8pg = pg;
            else if (!strcmp(f, "reuse_grad_buf_for_mxfp8_param_ag"))
                ; /* the BF16 gather through the gradient buffer: mb_memory_qweight_gather_bytes */
            else /* in the cell's own spelling */
                mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "%.*s%s", mb_validate__rc_len60(f), cell + (br + 1 - t) + (f - flags),
                       strlen(f) > 60 ? "..." : "");
        }
    }
    if (fp8pg == -1)
        return mb_validate__rc_bad(r, MB_VAL_RC_FP8_RECIPE, cell, "fp8_param_gather: expected =True or =False");
    if (fp8pg >= 0) {
        r->fp8pg_stated = 1;
        r->fp8pg = fp8pg;
    }
    const char *was = s->prec.label;
    int refine = strcmp(was, label) != 0 && !strcmp(was, "fp8") && rp.gemm == MB_PREC_FP8 && rp.quantize;
    if (strcmp(was, label) != 0 && !refine) {
        mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "fp8_recipe %s (the precision column says %s: kept)", label,
               was);
        return 0;
    }
    if (refine) {
        enum mb_prec attn = s->prec.attn;
        mb_validate__rl_add(r->applied, sizeof r->applied, "precision %s (fp8_recipe refines fp8%s)", label,
               strstr(t, "inferred") ? "; the cell says inferred" : "");
        s->prec = rp;
        if (attn == MB_PREC_FP8)
            s->prec.attn = MB_PREC_FP8;
    }
    if (dpa && s->prec.quantize && s->prec.attn != MB_PREC_FP8) {
        s->prec.attn = MB_PREC_FP8;
        mb_validate__rl_add(r->applied, sizeof r->applied, "FP8 attention");
    }
    return 0;
}

/* ce_fusion: on (impl=te|native) / off; mbsim runs the unfused vocab-parallel cross-entropy. */
static int mb_validate__rc_ce_fusion(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    (void)s;
    if (!strncmp(t, "on", 2) && !isalnum((unsigned char)t[2])) {
        char impl[32] = "";
        const char *p = strstr(t, "impl=");
        if (p) {
            mb_validate__copy_str(impl, sizeof impl, p + 5);
            impl[strcspn(impl, " ,;)")] = '\0';
        }
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "cross-entropy fusion%s%s%s", impl[0] ? " (impl=" : "", impl,
               impl[0] ? ")" : "");
        return 0;
    }
    if (!strncmp(t, "off", 3) && !isalnum((unsigned char)t[3]))
        return 0;
    if (!strncmp(t, "impl=", 5)) {
        mb_validate__rl_add(r->defaulted, sizeof r->defaulted, "ce_fusion (on/off not stated)");
        return 0;
    }
    return mb_validate__rc_bad(r, MB_VAL_RC_CE_FUSION, cell, "expected on (impl=...) or off");
}

/* mtp_layers: an integer; replaces the model file's MTP depth. */
static int mb_validate__rc_mtp(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    const char *p = t;
    long n = mb_validate__rc_int(&p);
    p += strspn(p, " ");
    if (n < 0 || *p || n > 1000)
        return mb_validate__rc_bad(r, MB_VAL_RC_MTP_LAYERS, cell, "expected an integer 0..1000");
    if (n == s->model.mtp_layers)
        return 0;
    if (n > 0 && (s->model.pattern[0] || s->model.n_layers <= 0)) {
        mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "mtp_layers %ld (model %s has a hybrid layer pattern)", n,
               s->model.name);
        return 0;
    }
    mb_validate__rl_add(r->applied, sizeof r->applied, "MTP layers %ld (model file: %d)", n, s->model.mtp_layers);
    s->model.mtp_layers = (int)n;
    return 0;
}

/* Megatron's uniform split with embedding / loss counted as one layer each
 * (account_for_embedding/loss_in_pipeline_split): (L + e + l) / (pp*vpp) per
 * virtual stage, the first one e fewer decoder layers, the last one l fewer
 * (MTP layers sit with the loss). Written as an expanded layout. 0, or -1
 * when the split is not whole (why in msg). */
static int mb_validate__rc_account_layout(const struct mb_scenario *s, int e, int l, char *out, size_t n, char *msg, size_t mlen)
{
    int nv = s->pp * s->vpp, L = s->model.num_layers, tot = L + e + l;
    if (nv < 2) {
        snprintf(msg, mlen, "one pipeline stage");
        return -1;
    }
    if (tot % nv) {
        snprintf(msg, mlen, "num_layers + %d = %d not divisible by pp*vpp = %d", e + l, tot, nv);
        return -1;
    }
    int k = tot / nv;
    size_t w = 0;
    for (int v = 0; v < nv; v++) {
        int nt = k - (v == 0 ? e : 0) - (v == nv - 1 ? l : 0);
        size_t need = (size_t)nt + (size_t)s->model.mtp_layers + 4;
        if (w + need >= n) {
            snprintf(msg, mlen, "layout longer than %zu characters", n - 1);
            return -1;
        }
        if (v > 0)
            out[w++] = '|';
        if (v == 0)
            out[w++] = 'E';
        for (int i = 0; i < nt; i++)
            out[w++] = 't';
        if (v == nv - 1) {
            for (int i = 0; i < s->model.mtp_layers; i++)
                out[w++] = 'm';
            out[w++] = 'L';
        }
    }
    out[w] = '\0';
    return 0;
}

/* pp_layout: n/a (PP=1); an explicit MCore layout ("Et*4|(t*4|)*14tmL"); uniform split
 * (account_for_embedding=X, account_for_loss=Y); uniform split (non-interleaved 1F1B);
 * interleaved 1F1B via --num-layers-per-virtual-pipeline-stage (an even split). */
static int mb_validate__rc_pp_layout(struct mb_scenario *s, const char *cell, const char *t, struct mb_val_recipe *r)
{
    char buf[sizeof s->pipeline_layout], msg[160];
    if (!strncmp(t, "uniform split", 13) || !strncmp(t, "interleaved 1f1b", 16)) {
        int e = strstr(t, "account_for_embedding=true") != NULL, l = strstr(t, "account_for_loss=true") != NULL;
        if (!e && !l)
            return 0; /* an even split: mbsim's default */
        if (mb_validate__rc_account_layout(s, e, l, buf, sizeof buf, msg, sizeof msg) != 0) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "pp_layout uniform split with embedding/loss as layers (%s)",
                   msg);
            return 0;
        }
        mb_validate__copy_str(s->pipeline_layout, sizeof s->pipeline_layout, buf);
        mb_validate__rl_add(r->applied, sizeof r->applied, "pipeline layout: uniform split with %s as a layer",
               e && l ? "embedding and loss each" : e ? "embedding" : "loss");
        return 0;
    }
    /* an explicit layout, as written (case matters: E, t, m, L) */
    char raw[256];
    size_t bad = 0;
    mb_validate__copy_str(raw, sizeof raw, cell);
    char *lay = mb_validate__trim(raw);
    if (strspn(lay, "EtmL|()*0123456789") != strlen(lay))
        return mb_validate__rc_bad(r, MB_VAL_RC_PP_LAYOUT, cell,
                      "expected n/a, uniform split (...) or a layout of E, t, m, L, |, (...)*N");
    if (mb_pipeline_layout_expand(lay, buf, sizeof buf, &bad, msg, sizeof msg) != 0)
        return mb_validate__rc_bad(r, MB_VAL_RC_PP_LAYOUT, cell, "%s (at character %zu)", msg, bad + 1);
    if (strcmp(buf, s->pipeline_layout) != 0)
        mb_validate__rl_add(r->applied, sizeof r->applied, "pipeline layout %s", lay);
    mb_validate__copy_str(s->pipeline_layout, sizeof s->pipeline_layout, buf);
    return 0;
}

/* One dtype word of precision_aware_opt: bytes per element (2 or 4), 0 if unknown. */
static int mb_validate__rc_dtype_bytes(const char *t, const char *key)
{
    const char *p = strstr(t, key);
    if (!p)
        return 0;
    p += strlen(key);
    p += strspn(p, " =:");
    if (!strncmp(p, "bfloat16", 8) || !strncmp(p, "bf16", 4))
        return 2;
    if (!strncmp(p, "float32", 7) || !strncmp(p, "fp32", 4))
        return 4;
    return 0;
}

/* other_recipe items that are provenance or layout restated, not knobs. */
static const char *const rc_info_items[] = {
    "provider-class default used for", "container ", "readme ", "nemo 2.x perf script", "card:",
    "table kernels", "seq ", "dp", "expert-data-parallel", "expert_data_parallel_size", "b300 26.06 numbers",
    "25.09 run_script", NULL};

/* An other_recipe item "key=True|False": 1 when the item has that key (*b = 1 / 0,
 * or -1 when the value is neither), 0 otherwise. */
static int mb_validate__rc_kv_bool(const char *x, const char *key, int *b)
{
    size_t n = strlen(key);
    if (strncmp(x, key, n) != 0 || x[n] != '=')
        return 0;
    *b = mb_validate__rc_bool(x + n + 1);
    return 1;
}

/* An overlap switch from other_recipe: b = 1 / 0 sets *field (said when it
 * changes), -1 (neither True nor False) is refused. */
static int mb_validate__rc_overlap(int *field, int b, const char *what, struct mb_val_recipe *r)
{
    if (b < 0)
        return -1;
    if (b != *field)
        mb_validate__rl_add(r->applied, sizeof r->applied, "%s overlap %s", what, b ? "on" : "off");
    *field = b;
    return 0;
}

/* other_recipe "attention_backend=NAME" (Megatron-Core --attention-backend). */
static int mb_validate__rc_attn_backend(struct mb_scenario *s, const char *name, struct mb_val_recipe *r)
{
    int was_scores = s->attn_backend >= MB_ATTN_UNFUSED;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_key_set(s, mb_key_find("training.attention_backend"), name, &e)) /* the key table's names */
        return -1;
    /* auto, flash and fused cost the same (one fused kernel) */
    if ((s->attn_backend >= MB_ATTN_UNFUSED) != was_scores)
        mb_validate__rl_add(r->applied, sizeof r->applied, "attention backend %s",
               mb_key_value_name("training.attention_backend", (unsigned)s->attn_backend));
    return 0;
}

/* What the items of other_recipe say that takes effect only after all are read. */
struct mb_val__other {
    int grf;                  /* grad_reduce_in_fp32: 1, 0, or -1 when not stated */
    int pao_grads, pao_states; /* precision_aware_opt dtypes: bytes per element, 0 when not stated */
    int dlim;                 /* wgrad_deferral_limit, -1 when not stated */
};

/* Whether x is a provenance item (rc_info_items): not a setting. */
static int mb_validate__rc_info_item(const char *x)
{
    for (int i = 0; rc_info_items[i]; i++) {
        size_t n = strlen(rc_info_items[i]);
        if (!strncmp(x, rc_info_items[i], n) && (rc_info_items[i][n - 1] == ' ' || !isalpha((unsigned char)x[n])))
            return 1;
    }
    return 0;
}

/* The optimizer's and the gradients' items. 1 when x is one of them (*rc: -1 when its value is bad), else 0. */
static int mb_validate__rc_other_optim(struct mb_scenario *s, const char *o, const char *x, struct mb_val_recipe *r,
                                       struct mb_val__other *st, int *rc)
{
    int b;
    if (mb_validate__rc_kv_bool(x, "precision_aware_opt", &b)) {
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "precision_aware_opt: expected =True or =False");
        } else if (!b) {
            st->pao_states = 4; /* fp32 moments, Megatron's default */
        } else if (!(st->pao_states = mb_validate__rc_dtype_bytes(x, "exp_avg"))) {
            mb_validate__rl_add(r->defaulted, sizeof r->defaulted, "precision_aware_opt dtypes (not stated)");
        } else {
            st->pao_grads = mb_validate__rc_dtype_bytes(x, "grads");
            if (mb_validate__rc_dtype_bytes(x, "params") == 2)
                mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "bf16 master params");
        }
    } else if (mb_validate__rc_kv_bool(x, "grad_reduce_in_fp32", &b)) {
        if (b < 0)
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "grad_reduce_in_fp32: expected =True or =False");
        else
            st->grf = b;
    } else if (mb_validate__rc_kv_bool(x, "overlap_grad_reduce", &b) || mb_validate__rc_kv_bool(x, "co.overlap_grad_reduce", &b)) {
        if (mb_validate__rc_overlap(&s->overlap_grad_reduce, b, "grad-reduce", r) < 0)
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "overlap_grad_reduce: expected =True or =False");
    } else if (mb_validate__rc_kv_bool(x, "overlap_param_gather", &b) || mb_validate__rc_kv_bool(x, "co.overlap_param_gather", &b)) {
        if (mb_validate__rc_overlap(&s->overlap_param_gather, b, "param-gather", r) < 0)
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "overlap_param_gather: expected =True or =False");
    } else if (mb_validate__rc_kv_bool(x, "dist_opt", &b)) {
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "dist_opt: expected =True or =False");
        } else if (!b && s->strategy == MB_STRAT_FSDP) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "dist_opt=False (FSDP)");
        } else {
            if (b != s->dist_opt)
                mb_validate__rl_add(r->applied, sizeof r->applied, "%s",
                       b ? "distributed optimizer" : "DDP, no distributed optimizer");
            s->dist_opt = b;
        }
    } else {
        return 0;
    }
    return 1;
}

/* The parallel layout's items: shared-expert overlap, sequence parallelism, the deferred output-layer
 * wgrad. 1 when x is one of them (*rc: -1 when its value is bad), else 0. */
static int mb_validate__rc_other_layout(struct mb_scenario *s, const char *o, const char *x, struct mb_val_recipe *r,
                                        struct mb_val__other *st, int *rc)
{
    int b;
    if (mb_validate__rc_kv_bool(x, "shared_expert_overlap", &b)) {
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "shared_expert_overlap: expected =True or =False");
        } else if (s->model.shared_ffn_hidden <= 0) {
            if (b)
                mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "shared_expert_overlap (no shared experts)");
        } else {
            if (b != s->shared_expert_overlap)
                mb_validate__rl_add(r->applied, sizeof r->applied, "shared-expert overlap %s", b ? "on" : "off");
            s->shared_expert_overlap = b;
        }
    } else if (mb_validate__rc_kv_bool(x, "seq_parallel", &b) || (!strncmp(x, "no sequence parallel", 20) && (b = 0) == 0)) {
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "seq_parallel: expected =True or =False");
        } else if (s->tp > 1) {
            int was = s->sequence_parallel < 0 ? 1 : s->sequence_parallel;
            if (b != was)
                mb_validate__rl_add(r->applied, sizeof r->applied, "sequence parallel %s", b ? "on" : "off");
            s->sequence_parallel = b;
            if (!b && s->overlap_tp_comm) { /* Megatron overlaps TP comm only under SP */
                s->overlap_tp_comm = 0;
                mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "TP comm overlap (needs sequence parallelism)");
            }
        }
    } else if (mb_validate__rc_kv_bool(x, "defer_embedding_wgrad", &b)) {
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "defer_embedding_wgrad: expected =True or =False");
        } else if (b && (s->pp <= 1 || s->strategy == MB_STRAT_FSDP)) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "defer_embedding_wgrad (needs pp > 1, 3d)");
        } else {
            if (b != s->defer_wgrad)
                mb_validate__rl_add(r->applied, sizeof r->applied, "deferred output-layer wgrad%s", b ? "" : " off");
            s->defer_wgrad = b;
        }
    } else if (!strncmp(x, "wgrad_deferral_limit=", 21)) {
        const char *p = x + 21;
        long n = mb_validate__rc_int(&p);
        if (n < 0 || n > 1000000 || *p)
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "wgrad_deferral_limit: expected an integer >= 0");
        else
            st->dlim = (int)n;
    } else {
        return 0;
    }
    return 1;
}

/* The MoE items: token drop, balanced routing, grouped GEMM, HybridEP/DeepEP SM counts. 1 when x is one
 * of them (*rc: -1 when its value is bad), else 0. */
static int mb_validate__rc_other_moe(struct mb_scenario *s, const char *o, const char *x, struct mb_val_recipe *r,
                                     int *rc)
{
    int b;
    if (!strncmp(x, "token-drop capacity_factor=", 27)) {
        char *end;
        double cf = strtod(x + 27, &end);
        if (end == x + 27 || !isfinite(cf) || (cf != 0 && cf < 1) || cf > 1000) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "capacity_factor: expected 0 or a number >= 1");
        } else if (s->model.num_experts <= 0) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "capacity_factor (dense model)");
        } else {
            if (!mb_dbl_eq(cf, s->capacity_factor))
                mb_validate__rl_add(r->applied, sizeof r->applied, "capacity factor %g (token drop)", cf);
            s->capacity_factor = cf;
        }
    } else if (!strcmp(x, "force_balance=true") || !strcmp(x, "routing=force_balance") ||
               !strcmp(x, "force_balance routing") || !strcmp(x, "fake_balanced_gate")) {
        if (s->routing != MB_ROUTE_BALANCED)
            mb_validate__rl_add(r->applied, sizeof r->applied, "balanced routing");
        s->routing = MB_ROUTE_BALANCED;
    } else if (!strcmp(x, "force_balance=false")) {
        mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled,
               "force_balance=False (the routing imbalance is not stated: simulated balanced)");
    } else if (mb_validate__rc_kv_bool(x, "permute_fusion", &b) || mb_validate__rc_kv_bool(x, "router_fusion", &b)) {
        int router = x[0] == 'r';
        if (b < 0) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, router ? "router_fusion: expected =True or =False"
                                                                    : "permute_fusion: expected =True or =False");
        } else if (s->model.num_experts <= 0) {
            mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "%s (dense model)", router ? "router_fusion" : "permute_fusion");
        } else {
            int *f = router ? &s->router_fusion : &s->permute_fusion;
            if (b != *f)
                mb_validate__rl_add(r->applied, sizeof r->applied, "%s fusion %s", router ? "router" : "permute", b ? "on" : "off");
            *f = b;
        }
    } else if (!strcmp(x, "grouped_gemm=true") || !strcmp(x, "grouped gemm") || !strcmp(x, "experts=gmm")) {
        /* mbsim runs the routed experts as grouped GEMMs */
    } else if (!strncmp(x, "hybridep_num_sms=", 17) || !strncmp(x, "--moe-deepep-num-sms", 20)) {
        int hy = x[0] == 'h';
        const char *p = x + (hy ? 17 : 20);
        long n = mb_validate__rc_int(&p);
        if (n < 1 || n > 1024) {
            *rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "SM count is not an integer in 1..1024");
            return 1;
        }
        if (s->dispatcher == (hy ? MB_DISP_HYBRIDEP : MB_DISP_DEEPEP) && n != s->dispatcher_sms) {
            mb_validate__rl_add(r->applied, sizeof r->applied, "%s SMs %ld", hy ? "HybridEP" : "DeepEP", n);
            s->dispatcher_sms = (int)n;
        }
        if (hy && strstr(x, "combine chunk"))
            mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "HybridEP combine chunk size");
    } else {
        return 0;
    }
    return 1;
}

/* What the items said that takes effect only after all are read: the deferral limit, the main grads'
 * and Adam states' dtypes. */
static void mb_validate__rc_other_finish(struct mb_scenario *s, const struct mb_val__other *st,
                                         struct mb_val_recipe *r)
{
    /* the deferral limit with the deferral only; unstated: Megatron's 0 (every microbatch) */
    if (s->defer_wgrad && st->dlim >= 0)
        s->wgrad_deferral_limit = st->dlim;
    else if (s->defer_wgrad)
        mb_validate__rl_add(r->defaulted, sizeof r->defaulted, "wgrad_deferral_limit (Megatron's 0: every microbatch)");
    else if (st->dlim >= 0)
        mb_validate__rl_add(r->not_applied, sizeof r->not_applied, "wgrad_deferral_limit (no deferral)");
    /* main grads: grad_reduce_in_fp32 (the DDP buffer and its reduction) when stated, else
     * the precision-aware optimizer's grads dtype */
    int gb = st->grf >= 0 ? (st->grf ? 4 : 2) : st->pao_grads;
    if (gb && gb != s->grad_bytes) {
        mb_validate__rl_add(r->applied, sizeof r->applied, "main grads %s", gb == 2 ? "bf16" : "fp32");
        s->grad_bytes = gb;
    }
    int sb = 2 * st->pao_states;
    if (sb && sb != s->state_bytes) {
        mb_validate__rl_add(r->applied, sizeof r->applied, "Adam states %s", sb == 4 ? "bf16" : "fp32");
        s->state_bytes = sb;
    }
}

/* other_recipe: ';'-separated settings. Modelled: precision_aware_opt (dtypes), grad_reduce_in_fp32,
 * defer_embedding_wgrad (with wgrad_deferral_limit),
 * overlap_grad_reduce / overlap_param_gather (also co.*), shared_expert_overlap, seq_parallel,
 * dist_opt, TOKEN-DROP capacity_factor, force-balanced routing, grouped GEMM, permute and router
 * fusion, HybridEP/DeepEP SM counts. Provenance items (rc_info_items) are skipped; every other item is listed as not
 * modelled, in the cell's own spelling (o is the cell as written, aligned with t). */
static int mb_validate__rc_other(struct mb_scenario *s, const char *o, const char *t, struct mb_val_recipe *r)
{
    char all[2048], *save = NULL;
    struct mb_val__other st = {.grf = -1, .pao_grads = 0, .pao_states = 0, .dlim = -1};
    int rc = 0;
    mb_validate__copy_str(all, sizeof all, t);
    for (char *it = strtok_r(all, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
        char *x = mb_validate__trim(it);
        const char *xo = o + (x - all); /* the item as written */
        if (!*x || mb_validate__rc_info_item(x))
            continue;
        if (mb_validate__rc_other_optim(s, o, x, r, &st, &rc) || mb_validate__rc_other_layout(s, o, x, r, &st, &rc) ||
            mb_validate__rc_other_moe(s, o, x, r, &rc))
            continue;
        if (!strncmp(x, "attention_backend=", 18)) {
            if (mb_validate__rc_attn_backend(s, x + 18, r) < 0)
                rc = mb_validate__rc_bad(r, MB_VAL_RC_OTHER, o, "attention_backend: expected auto, flash, fused, unfused or local");
        } else {
            mb_validate__rl_add(r->unmodelled, sizeof r->unmodelled, "%.*s%s", mb_validate__rc_len60(x), xo, strlen(x) > 60 ? "..." : "");
        }
    }
    mb_validate__rc_other_finish(s, &st, r);
    return rc;
}

int mb_validate_recipe_cell(struct mb_scenario *s, enum mb_val_rcol col, const char *cell, struct mb_val_recipe *r)
{
    char orig[2048], low[2048];
    const char *t;
    if ((int)col < 0 || col >= MB_VAL_RC_COUNT)
        return -1;
    /* the cell as written (trimmed) and its lower-case twin, aligned character by character */
    mb_validate__copy_str(orig, sizeof orig, cell ? cell : "");
    cell = mb_validate__trim(orig);
    t = mb_validate__rc_lower(low, sizeof low, cell);
    if (!*t) {
        mb_validate__note_add(r->defaulted, sizeof r->defaulted, mb_val__rcolname[col]);
        return 1;
    }
    if (mb_validate__rc_is_na(t))
        return 0;
    switch (col) {
    case MB_VAL_RC_DISPATCHER:
        return mb_validate__rc_dispatcher(s, cell, t, r);
    case MB_VAL_RC_EP_OVERLAP:
        return mb_validate__rc_ep_overlap(s, cell, t, r);
    case MB_VAL_RC_CUDA_GRAPH:
        return mb_validate__rc_cuda_graph(s, cell, t, r);
    case MB_VAL_RC_RECOMPUTE_DETAIL:
        return mb_validate__rc_recompute(s, cell, t, r);
    case MB_VAL_RC_TP_OVERLAP:
        return mb_validate__rc_tp_overlap(s, cell, t, r);
    case MB_VAL_RC_FSDP_IMPL:
        return mb_validate__rc_fsdp_impl(s, cell, t, r);
    case MB_VAL_RC_CPU_OFFLOAD:
        return mb_validate__rc_cpu_offload(s, cell, t, r);
    case MB_VAL_RC_FP8_RECIPE:
        return mb_validate__rc_fp8_recipe(s, cell, t, r);
    case MB_VAL_RC_CE_FUSION:
        return mb_validate__rc_ce_fusion(s, cell, t, r);
    case MB_VAL_RC_MTP_LAYERS:
        return mb_validate__rc_mtp(s, cell, t, r);
    case MB_VAL_RC_PP_LAYOUT:
        return mb_validate__rc_pp_layout(s, cell, t, r);
    case MB_VAL_RC_OTHER:
        return mb_validate__rc_other(s, cell, t, r);
    default:
        return -1;
    }
}

/* ------------------------------------------------------------------ */
