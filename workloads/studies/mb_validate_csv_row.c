/*
 * mb_validate_csv_row.c -- one CSV record mapped onto a scenario (docs/validation.md has the column mapping
 * and the skip rules), its recipe applied, and mb_validate_add_csv.
 */
#include "validate_int.h"
#include "mb_text.h"

#include <csv.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Rows published before FlashAttention reached Megatron-LM (NVIDIA/Megatron-LM
 * PR #267, merged January 2023; the FlashAttention paper is arXiv:2205.14135,
 * May 2022) ran Megatron's own CoreAttention: the scores in memory, with
 * Megatron's default --attention-dropout 0.1 (megatron/arguments.py), and its
 * default --hidden-dropout 0.1 (the residual dropouts keep their masks). A row's
 * other_recipe attention_backend, applied after this, overrides it. */
#define MB_VAL__FLASH_ERA "2023-01-01"
/* The record's source_date is before FlashAttention reached Megatron-LM. */
static int mb_validate__csv_before_flash(struct mb_val__csv *c)
{
    const char *d = c->date_idx >= 0 ? mb_validate__trim(c->f[c->date_idx].text) : "";
    return strlen(d) >= 10 && isdigit((unsigned char)d[0]) && strncmp(d, MB_VAL__FLASH_ERA, 10) < 0;
}

static void mb_validate__csv_attention_era(struct mb_val__csv *c, struct mb_scenario *s, char *head, size_t hn)
{
    if (!mb_validate__csv_before_flash(c))
        return;
    s->attn_backend = MB_ATTN_LOCAL;
    s->attn_dropout = 0.1;
    s->hidden_dropout = 0.1;
    size_t l = strlen(head);
    snprintf(head + l, hn - l, "%sattention local, dropout 0.1 (published before FlashAttention reached Megatron-LM)",
             l ? "; " : "");
}

/* --fp8-param-gather: as fp8_recipe states it (with the distributed optimizer or FSDP Megatron requires;
 * mbsim models the quantized weights of 3D layouts only), else, on a Megatron-Bridge or NeMo row, the
 * publisher's preset (mb_precision_preset_param_gather: NeMo 2.0's bf16_with_fp8_mixed sets fp8_params
 * as Bridge's FP8 presets do, NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py).
 * Other sources keep Megatron's default (off). Not for FSDP, where mbsim does not model the quantized
 * weights, nor without the distributed optimizer Megatron requires for it. */
static void mb_validate__csv_fp8pg(struct mb_val__csv *c, struct mb_scenario *s, struct mb_val_recipe *rec)
{
    const char *src = c->source_idx >= 0 ? c->f[c->source_idx].text : "";
    const char *l = s->prec.label;
    int preset = mb_precision_preset_param_gather(&s->prec);
    if (!s->prec.quantize) {
        if (rec->fp8pg_stated && rec->fp8pg)
            mb_validate__rl_add(rec->not_applied, sizeof rec->not_applied, "fp8_param_gather (%s: no quantized weights)", l);
        return;
    }
    if (rec->fp8pg_stated && rec->fp8pg && s->strategy == MB_STRAT_FSDP) {
        mb_validate__rl_add(rec->unmodelled, sizeof rec->unmodelled, "fp8_param_gather under FSDP");
        return;
    }
    if (rec->fp8pg_stated && rec->fp8pg && !s->dist_opt) {
        mb_validate__rl_add(rec->not_applied, sizeof rec->not_applied, "fp8_param_gather (Megatron needs the distributed optimizer)");
        return;
    }
    if (rec->fp8pg_stated) {
        s->fp8_param_gather = rec->fp8pg;
        if (rec->fp8pg)
            mb_validate__rl_add(rec->applied, sizeof rec->applied, "quantized weights (fp8_param_gather)");
        return;
    }
    if (s->strategy == MB_STRAT_FSDP || !s->dist_opt)
        return;
    if (!strstr(src, "NVIDIA-NeMo/Megatron-Bridge") && !strstr(src, "NVIDIA/NeMo") &&
        !strstr(src, "docs.nvidia.com/nemo-framework"))
        return;
    s->fp8_param_gather = preset;
    mb_validate__rl_add(rec->defaulted, sizeof rec->defaulted, "fp8_param_gather (publisher's %s recipe: %s)", l,
           preset ? "on" : "off");
}

/* A dispatcher SM count a recipe cell or the notes state (field f) against the GPU's SMs
 * (mb_scenario_check_sms): more SMs than the GPU has is an error at the cell, not a cell taken
 * back as not applicable. 0, or -1 (c->err). */
static int mb_validate__csv_sms(struct mb_val__csv *c, const struct mb_scenario *s, const struct mb_val__field *f,
                                const char *column)
{
    char msg[300];
    if (!mb_scenario_check_sms(s, msg, sizeof msg))
        return 0;
    return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': %s", column, msg);
}

/* Apply every recipe column of the record to s, one column at a time; a
 * column whose result does not pass mb_scenario_check is taken back and
 * listed as not applied, with the check's message. fp8_recipe goes first: it
 * refines the precision column (fp8 -> fp8_cs, ...), and the checks of the
 * other columns (Megatron's FP8 rules on recompute modules) are of the
 * refined precision. -1 (c->err) for an SM count beyond the GPU's. */
static int mb_validate__csv_apply_recipe(struct mb_val__csv *c, struct mb_scenario *s, struct mb_val_recipe *rec)
{
    mb_validate_recipe_init(rec);
    for (int i = 0; i < MB_VAL_RC_COUNT; i++) {
        int k = i == 0 ? MB_VAL_RC_FP8_RECIPE : i <= MB_VAL_RC_FP8_RECIPE ? i - 1 : i;
        if (c->ridx[k] < 0)
            continue;
        const char *cellv = c->f[c->ridx[k]].text;
        struct mb_scenario before = *s;
        struct mb_val_recipe rb = *rec;
        if (mb_validate_recipe_cell(s, (enum mb_val_rcol)k, cellv, rec) == 1)
            continue;
        if (mb_validate__csv_sms(c, s, &c->f[c->ridx[k]], mb_val__rcolname[k]))
            return -1;
        struct mb_scenario t = *s;
        struct mb_err e;
        mb_err_clear(&e);
        if (mb_scenario_check(&t, &e) != 0) {
            char sh[64];
            *s = before;
            *rec = rb;
            mb_validate__rl_add(rec->not_applied, sizeof rec->not_applied, "%s '%s' (%.200s)", mb_val__rcolname[k],
                   mb_validate__rc_shown(mb_validate__trim(c->f[c->ridx[k]].text), sh, sizeof sh), e.msg);
        }
    }
    mb_validate__csv_fp8pg(c, s, rec);
    return 0;
}

/* The row's note from what the recipe did: head (applied, not applied,
 * unparseable, LAYOUT-MISMATCH, not determinable), tail (not modelled). */
static void mb_validate__csv_recipe_note(struct mb_val__csv *c, struct mb_val_row *r, const struct mb_val_recipe *rec, char *head,
                            size_t hn, char *tail, size_t tn)
{
    size_t l = strlen(head);
#define NOTE_PART(fmt, ...)                                                                                      \
    do {                                                                                                         \
        if (l < hn)                                                                                              \
            l += (size_t)snprintf(head + l, hn - l, "%s" fmt, l ? "; " : "", __VA_ARGS__);                       \
    } while (0)
    if (rec->applied[0])
        NOTE_PART("recipe: %s", rec->applied);
    if (rec->not_applied[0])
        NOTE_PART("recipe not applied: %s", rec->not_applied);
    if (rec->bad[0])
        NOTE_PART("unparseable recipe cell%s: %s", rec->n_bad > 1 ? "s" : "", rec->bad);
    if (c->match_idx >= 0) {
        const char *m = mb_validate__trim(c->f[c->match_idx].text);
        if (mb_validate__starts_with_ci(m, "LAYOUT-MISMATCH") || mb_validate__starts_with_ci(m, "CONTRADICTION")) {
            char cut[200];
            mb_validate__copy_str(cut, sizeof cut, m);
            char *close = strchr(cut, ')');
            if (close)
                close[1] = '\0';
            r->layout_mismatch = mb_validate__starts_with_ci(m, "LAYOUT-MISMATCH");
            NOTE_PART("%s", cut);
        }
    }
    if (rec->defaulted[0])
        NOTE_PART("not determinable (simulator default): %s", rec->defaulted);
#undef NOTE_PART
    if (rec->unmodelled[0])
        snprintf(tail, tn, "not modelled: %s", rec->unmodelled);
}

/* A TFLOP/s-only row: convert the published TFLOP/s/GPU to tokens/s/GPU with
 * the source's FLOP convention and compare that; with no known convention the
 * row stays compared in mbsim's own FLOP count, and the note says so. */
static void mb_validate__csv_tflops_in_time(struct mb_val__csv *c, struct mb_val_row *r, const struct mb_scenario *s, char *head,
                               size_t hn)
{
    enum mb_val_flops conv =
        c->source_idx >= 0 ? mb_validate_flop_convention(c->f[c->source_idx].text) : MB_VAL_FLOPS_UNKNOWN;
    char why[160];
    double gbs = s->global_batch_size, seq = s->seq_length;
    double F = mb_validate_publisher_flops(conv, &s->model, gbs, seq, s->recompute == MB_RC_FULL, why, sizeof why);
    size_t at = strlen(head);
    if (at >= hn)
        return;
    if (F > 0) {
        double tok = mb_validate_tflops_to_tokens(r->measured, F, gbs, seq);
        double t_step = F / (r->measured * 1e12 * s->gpus);
        snprintf(head + at, hn - at,
                 "%smeasured %g TFLOP/s/GPU in %s FLOPs (%.4g PFLOP per step) = %.4g s per step = %.6g tokens/s/GPU",
                 at ? "; " : "", r->measured, mb_validate_flop_convention_name(conv), F / 1e15, t_step, tok);
        r->measured_tflops = r->measured;
        mb_validate__copy_str(r->flops_conv, sizeof r->flops_conv, mb_validate_flop_convention_name(conv));
        mb_validate__copy_str(r->metric, sizeof r->metric, MB_VAL_TOKENS);
        r->measured = tok;
    } else {
        snprintf(head + at, hn - at, "%sTFLOP/s compared in mbsim's FLOP count (%s)", at ? "; " : "", why);
    }
}

/* Map one data record onto a scenario, simulate it, append the row. */
/* A published run whose layers do not split evenly over pp*vpp (nor with the
 * embedding and the loss as a layer each) ran with a layout its source does
 * not state (Megatron-Core refuses such a split without one): the row keeps
 * mbsim's spread of num_layers + 2 units (step/layout.c) instead of being
 * refused, and says so. 1 when that applies. */
static int mb_validate__csv_split_unstated(struct mb_scenario *x)
{
    int nv = x->pp * x->vpp, L = x->model.num_layers;
    x->pipeline_split_unstated = !x->pipeline_layout[0] && nv > 1 && L % nv && (L + 2) % nv;
    return x->pipeline_split_unstated;
}

/* The LoRA adapters of a published LoRA run, from its publisher's recipes (the CSV has no
 * column for them; the adapters' time is bandwidth-bound, so the rank hardly matters):
 *  - NeMo AutoModel's LoRA benchmarks adapt every projection (`target_modules: '*_proj'`,
 *    dim 16: NVIDIA-NeMo/Automodel examples/llm_benchmark/llama3_3/
 *    custom_llama3_3_70b_instruct_peft_benchmark.yaml);
 *  - Megatron-Bridge's performance LoRA configs adapt linear_qkv only
 *    (NVIDIA-NeMo/Megatron-Bridge@fcbb6031103d scripts/performance/configs/llama/
 *    llama3_llm_finetune.py: "Override target_modules to only apply LoRA to QKV"), as NeMo
 *    1.0's default does (NVIDIA/NeMo megatron_gpt_finetuning_config.yaml lora_tuning
 *    target_modules ['attention_qkv'], adapter_dim 32), at LoRA's default dim 32. */
static void mb_validate__csv_lora(const char *source, struct mb_scenario *s)
{
    if (strstr(source, "NVIDIA-NeMo/Automodel")) {
        s->lora_rank = 16;
        s->lora_targets = MB_LORA_QKV | MB_LORA_PROJ | MB_LORA_FC1 | MB_LORA_FC2;
    } else {
        s->lora_rank = 32;
        s->lora_targets = MB_LORA_QKV;
    }
}

/* Take a model's layer array as its own copy (the source keeps its own). */
static void mb_validate__own_layers(struct mb_model *m)
{
    const struct mb_layer *src = m->layer;
    m->layer = NULL;
    if (m->n_layers > 0) {
        m->layer = mb_malloc((size_t)m->n_layers * sizeof *m->layer);
        memcpy(m->layer, src, (size_t)m->n_layers * sizeof *m->layer);
    }
}

/* Simulate the row from its recipe file `f` (mb_validate_add_recipes): check it describes the row's
 * layout (an error naming the CSV line if not), keep the row's measured values, and say so in head. */
static int mb_validate__csv_file_recipe(struct mb_val__csv *c, struct mb_val_row *r, struct mb_scenario *s,
                           const struct mb_scenario *f, const char *path, char *head, size_t hn)
{
    char why[300];
    if (mb_validate__is_absent(mb_validate__cell(c, C_RECOMPUTE))) { /* not stated: the file's is the recipe's */
        s->recompute = f->recompute;
        s->recompute_modules = f->recompute_modules;
    }
    if (mb_validate_recipe_layout(s, f, why, sizeof why) != 0)
        return mb_err_set(c->err, c->path, c->rec_line, 1, "row '%s': recipe file %s (measured.csv_row) states "
                          "%s: a recipe file must describe the row's run", r->id, path, why);
    struct mb_scenario t = *f;
    mb_validate__own_layers(&t.model);
    mb_validate__copy_str(t.name, sizeof t.name, s->name);
    t.meas_tokens_per_s_per_gpu = s->meas_tokens_per_s_per_gpu;
    t.meas_model_tflops_per_gpu = s->meas_model_tflops_per_gpu;
    t.meas_step_time_s = s->meas_step_time_s;
    t.meas_peak_memory_gib = 0; /* the row's own peak (column or notes) is compared */
    t.meas_oom = 0;
    t.roofline |= s->roofline;
    mb_scenario_free(s);
    *s = t;
    mb_validate__copy_str(r->recipe_file, sizeof r->recipe_file, path);
    snprintf(head, hn, "recipe from %s", path);
    /* the CSV reader's pre-FlashAttention rule is not the file's choice: said, not applied */
    if (s->cp == 1 && s->attn_backend != MB_ATTN_LOCAL && s->attn_backend != MB_ATTN_UNFUSED && mb_validate__csv_before_flash(c))
        snprintf(head + strlen(head), hn - strlen(head), "; published before FlashAttention reached Megatron-LM, "
                 "but the recipe file's attention backend is used (training.attention_backend: local and "
                 "attention_dropout 0.1 would be Megatron's own CoreAttention of then)");
    return 0;
}

/* The recipe of a row without a recipe file: the pre-FlashAttention rule, then the recipe columns
 * (csv_apply_recipe) or, in a CSV without them, what the notes state (mb_validate_apply_notes).
 * 0, or -1 (c->err) for an SM count beyond the GPU's. */
static int mb_validate__csv_row_recipe(struct mb_val__csv *c, struct mb_val_row *r, struct mb_scenario *s, char *head, size_t hn,
                           char *tail, size_t tn)
{
    if (s->cp == 1)
        mb_validate__csv_attention_era(c, s, head, hn);
    if (c->have_recipe) {
        struct mb_val_recipe *rec = mb_malloc(sizeof *rec);
        if (mb_validate__csv_apply_recipe(c, s, rec)) {
            mb_free(rec);
            return -1;
        }
        r->recipe_bad = rec->n_bad;
        if (!strcmp(r->metric, MB_VAL_TFLOPS)) /* after the recipe: SC21 counts its recompute */
            mb_validate__csv_tflops_in_time(c, r, s, head, hn);
        mb_validate__csv_recipe_note(c, r, rec, head, hn, tail, tn);
        mb_free(rec);
    } else {
        char applied[200] = "";
        if (c->notes_idx >= 0) {
            mb_validate_apply_notes(s, c->f[c->notes_idx].text, applied, sizeof applied);
            if (mb_validate__csv_sms(c, s, &c->f[c->notes_idx], "notes"))
                return -1;
        }
        if (!strcmp(r->metric, MB_VAL_TFLOPS))
            mb_validate__csv_tflops_in_time(c, r, s, head, hn);
        if (applied[0]) {
            size_t l = strlen(head);
            snprintf(head + l, hn - l, "%sfrom notes: %s", l ? "; " : "", applied);
        }
    }
    return 0;
}

/* The numeric cells of a record: the layout's integers and the measured values. */
enum { I_GPUS, I_GBS, I_MBS, I_SEQ, I_TP, I_PP, I_CP, I_VP, I_EP, I_ETP, I_FSDP, I_N };
static const int mb_validate__icol[I_N] = {C_GPUS, C_GBS, C_MBS, C_SEQ, C_TP, C_PP, C_CP, C_VP, C_EP, C_ETP, C_FSDP};

struct mb_val__cells {
    int iv[I_N], ip[I_N]; /* value, and whether the cell states one */
    double tokens, tflops, step, mem_gib;
    const char *mem_kind;
};

/* Numbers first: a malformed cell is an error even in a row that would be skipped. 0, or -1 (c->err). */
static int mb_validate__csv_numbers(struct mb_val__csv *c, struct mb_val__cells *v)
{
    if (c->nf != c->n_header)
        return mb_err_set(c->err, c->path, c->rec_line, 1, "record has %zu fields, the header has %zu", c->nf,
                          c->n_header);
    for (int i = 0; i < I_N; i++)
        if (mb_validate__cell_int(c, mb_validate__icol[i], &v->iv[i], &v->ip[i]) != 0)
            return -1;
    if (mb_validate__cell_num(c, C_TOKENS, &v->tokens) || mb_validate__cell_num(c, C_TFLOPS, &v->tflops) ||
        mb_validate__cell_num(c, C_STEP, &v->step) || mb_validate__measured_positive(c, C_TOKENS, v->tokens) ||
        mb_validate__measured_positive(c, C_TFLOPS, v->tflops) || mb_validate__measured_positive(c, C_STEP, v->step) ||
        mb_validate__cell_memory(c, &v->mem_gib, &v->mem_kind))
        return -1;
    size_t id_len = strlen(mb_validate__cell(c, C_ID));
    if (id_len >= sizeof ((struct mb_val_row *)0)->id) { /* cut, two runs could pair as one in --baseline */
        const struct mb_val__field *f = &c->f[c->idx[C_ID]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'id': %zu characters, expected at most %zu",
                          id_len, sizeof ((struct mb_val_row *)0)->id - 1);
    }
    return 0;
}

/* A row's id from its cell: a quoted id may hold a newline or tab, made a blank (one table row per run). */
static void mb_validate__csv_id(char *id, size_t len, const char *cell)
{
    mb_validate__copy_str(id, len, cell);
    for (char *q = id; *q; q++)
        if ((unsigned char)*q < ' ')
            *q = ' ';
}

/* A new row with what the record says of itself: id, model, system (*key: mbsim's system key, NULL if
 * unknown) and the measured peak memory (the column, else a "peak N GB" the notes state: allocated, the
 * last pipeline stage's rank; docs/validation.md). */
static struct mb_val_row *mb_validate__csv_new_row(struct mb_val__csv *c, const struct mb_val__cells *v,
                                                   const char **key)
{
    struct mb_val_row *r = mb_validate__new_row(c->out);
    r->line = c->rec_line;
    mb_validate__copy_str(r->source, sizeof r->source, c->path);
    mb_validate__csv_id(r->id, sizeof r->id, mb_validate__cell(c, C_ID));
    if (!r->id[0])
        snprintf(r->id, sizeof r->id, "line %d", c->rec_line);
    mb_validate__copy_str(r->model, sizeof r->model, mb_validate__cell(c, C_MODEL));
    *key = mb_validate_system_key(mb_validate__cell(c, C_SYSTEM));
    mb_validate__copy_str(r->system, sizeof r->system, *key ? *key : mb_validate__cell(c, C_SYSTEM));
    if (*key && strchr(*key, '/')) { /* a system file: its stem names the row's system */
        const char *base = strrchr(*key, '/') + 1, *dot = strrchr(base, '.');
        snprintf(r->system, sizeof r->system, "%.*s", (int)(dot ? dot - base : (long)strlen(base)), base);
    }
    const char *notes = c->notes_idx >= 0 ? c->f[c->notes_idx].text : NULL;
    r->reported_oom = mb_validate_notes_oom(notes);
    mb_validate__copy_str(r->mem_kind, sizeof r->mem_kind, v->mem_kind);
    if (v->mem_gib > 0) {
        r->meas_mem_gib = v->mem_gib;
        mb_validate__copy_str(r->mem_from, sizeof r->mem_from, "column");
    } else if (mb_validate_notes_peak_memory(notes, &r->meas_mem_gib)) {
        mb_validate__copy_str(r->mem_kind, sizeof r->mem_kind, "allocated");
        mb_validate__copy_str(r->mem_from, sizeof r->mem_from, "notes");
        r->mem_first_iter = 1;
    }
    return r;
}

/* What the row's system cell names: an error for a name mbsim does not know (a typo in the CSV, not a row
 * to skip) or a system file not found. Always -1 (c->err). */
static int mb_validate__csv_unknown_system(struct mb_val__csv *c)
{
    const struct mb_val__field *f = &c->f[c->idx[C_SYSTEM]];
    const char *v = mb_validate__cell(c, C_SYSTEM);
    if (strchr(v, '/'))
        return mb_err_set(c->err, c->path, f->line, f->col,
                          "column 'system': system file '%.200s' not found (a path is read relative to the "
                          "working directory and must end in .yaml)", v);
    return mb_err_set(c->err, c->path, f->line, f->col,
                      "column 'system': '%.60s' is no known system (a DGX/HGX/NVL name of the public CSV, an "
                      "mbsim preset from `mbsim systems`, or a path to a system file DIR/NAME.yaml)", v);
}

/* The row's model and system from the cache: 0 with *me and *se loaded, 1 when the row is skipped (the
 * reason set), -1 on an error the user must fix (an unknown model, a model or system file that does not
 * load). */
static int mb_validate__csv_model_system(struct mb_val__csv *c, struct mb_val_row *r, const char *key,
                                         const struct mb_val__model_ent **me, const struct mb_val__sys_ent **se)
{
    struct mb_val__cache *cache = mb_validate__get_cache(c->out);
    const char *model_key = mb_validate__cell(c, C_MODEL);
    *me = mb_validate__cache_model(cache, model_key);
    if (!(*me)->ok && (*me)->unknown) {
        const struct mb_val__field *f = &c->f[c->idx[C_MODEL]];
        return mb_err_set(c->err, c->path, f->line, f->col,
                          "column 'model': %s (`mbsim models` lists the shipped ones; a path names a model file)",
                          (*me)->why);
    }
    if (!(*me)->ok && mb_validate__is_file_ref(model_key)) { /* the user's own model file is broken: CI must not pass over it */
        const struct mb_val__field *f = &c->f[c->idx[C_MODEL]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'model': model file does not load: %s",
                          mb_validate__load_error((*me)->why));
    }
    if (!(*me)->ok) {
        mb_validate__skip_row(r, (*me)->why);
        return 1;
    }
    if ((*me)->m.vision.depth > 0) {
        mb_validate__skip_row(r, "VLM row without image data");
        return 1;
    }
    *se = mb_validate__cache_system(cache, key);
    if (!(*se)->ok && mb_validate__is_file_ref(key)) {
        const struct mb_val__field *f = &c->f[c->idx[C_SYSTEM]];
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'system': system file does not load: %s",
                          mb_validate__load_error((*se)->why));
    }
    if (!(*se)->ok) {
        mb_validate__skip_row(r, (*se)->why);
        return 1;
    }
    return 0;
}

/* Skip the row when gpus, gbs, mbs or seq_len is not stated ("gbs, mbs not stated"); returns 1 then, else 0. */
static int mb_validate__csv_unstated(struct mb_val_row *r, const struct mb_val__cells *v)
{
    static const int need[] = {I_GPUS, I_GBS, I_MBS, I_SEQ};
    char why[200];
    size_t k, l;
    int n = 0;
    if (v->ip[I_GPUS] && v->ip[I_GBS] && v->ip[I_MBS] && v->ip[I_SEQ])
        return 0;
    why[0] = '\0';
    for (k = 0; k < sizeof need / sizeof need[0]; k++) {
        if (v->ip[need[k]])
            continue;
        l = strlen(why);
        snprintf(why + l, sizeof why - l, "%s%s", n++ ? ", " : "", mb_val__colname[mb_validate__icol[need[k]]]);
    }
    l = strlen(why);
    snprintf(why + l, sizeof why - l, " not stated");
    mb_validate__skip_row(r, why);
    return 1;
}

/* The row's scenario from its layout columns (the recipe refines it later). */
static void mb_validate__csv_scenario(struct mb_val__csv *c, const struct mb_val_row *r, const struct mb_val__cells *v,
                                      const struct mb_model *m, const struct mb_system *sys,
                                      const struct mb_precision *prec, enum mb_rc_gran gran, unsigned mods,
                                      struct mb_scenario *s)
{
    const int *iv = v->iv, *ip = v->ip;
    mb_scenario_defaults(s);
    mb_validate__copy_str(s->name, sizeof s->name, r->id);
    s->file[0] = '\0';
    s->model = *m;
    mb_validate__own_layers(&s->model);
    s->system = *sys;
    s->gpus = iv[I_GPUS];
    s->prec = *prec;
    s->seq_length = iv[I_SEQ];
    s->global_batch_size = iv[I_GBS];
    s->micro_batch_size = iv[I_MBS];
    s->tp = ip[I_TP] ? iv[I_TP] : 1;
    s->pp = ip[I_PP] ? iv[I_PP] : 1;
    s->cp = ip[I_CP] ? iv[I_CP] : 1;
    s->vpp = ip[I_VP] ? iv[I_VP] : 1;
    s->ep = ip[I_EP] ? iv[I_EP] : 1;
    s->etp = ip[I_ETP] ? iv[I_ETP] : 1;
    s->strategy = (ip[I_FSDP] && iv[I_FSDP] > 0) ? MB_STRAT_FSDP : MB_STRAT_3D;
    s->recompute = gran;
    s->recompute_modules = mods;
    s->recompute_num_layers = 0;
    /* LoRA fine-tuning (notes "task=lora"): the base model is frozen and carries adapters
     * (ops.c mb__lora) as the publisher's recipe sets them (no column states them) */
    if (c->notes_idx >= 0 && strstr(c->f[c->notes_idx].text, "task=lora")) {
        s->freeze = MB_FREEZE_LANGUAGE | (s->model.vision.depth > 0 ? MB_FREEZE_VISION | MB_FREEZE_VISION_PROJ : 0);
        mb_validate__csv_lora(c->source_idx >= 0 ? c->f[c->source_idx].text : "", s);
    }
    s->meas_tokens_per_s_per_gpu = v->tokens;
    s->meas_model_tflops_per_gpu = v->tflops;
    s->meas_step_time_s = v->step;
    s->roofline = c->out->roofline;
}

/* The row's measured values against what its GPUs can compute (mb_scenario_measured_check): a
 * tokens/s per GPU or TFLOP/s per GPU above the dense peak, or a step faster than its FLOPs allow,
 * is an error at its cell (`calibrate runs` fitted a row holding a cluster's total in the per-GPU
 * column; issue 37). 0, or -1 (c->err). */
static int mb_validate__csv_plausible(struct mb_val__csv *c, const struct mb_scenario *s)
{
    static const int col[] = {C_TOKENS, C_TFLOPS, C_STEP}; /* enum mb_meas_kind order */
    enum mb_meas_kind which;
    char msg[MB_ERR_MSG_LEN];
    if (!mb_scenario_measured_check(s, s->meas_tokens_per_s_per_gpu, s->meas_model_tflops_per_gpu,
                                    s->meas_step_time_s, &which, msg, sizeof msg))
        return 0;
    const struct mb_val__field *f = &c->f[c->idx[col[which]]];
    return mb_err_set(c->err, c->path, f->line, f->col, "column '%s': %s", mb_val__colname[col[which]], msg);
}

/* Skip r with the message of a scenario check that fails; 1 then, else 0. */
static int mb_validate__csv_check(struct mb_val_row *r, struct mb_scenario *s)
{
    struct mb_err cerr;
    mb_err_clear(&cerr);
    if (mb_scenario_check(s, &cerr) == 0)
        return 0;
    char msg[600], why[200];
    mb_err_format(&cerr, msg, sizeof msg);
    mb_validate__copy_str(why, sizeof why, msg);
    mb_validate__skip_row(r, why);
    return 1;
}

/* The recipe (a recipe file, else the row's columns or notes) applied to s, checked, and the row
 * submitted (s taken) or skipped. 0, or -1 when the recipe file does not fit the row (c->err). */
static int mb_validate__csv_recipe_submit(struct mb_val__csv *c, struct mb_val_row *r, struct mb_scenario *s,
                                          int unstated, int fsdp_group)
{
    char *head = mb_malloc(2048), *tail = mb_malloc(1100);
    head[0] = tail[0] = '\0';
    const char *rpath = NULL;
    const struct mb_scenario *rfile = *mb_validate__cell(c, C_ID) ? mb_validate_recipe_file(c->out, r->id, &rpath) : NULL;
    if (rfile) { /* the file is the recipe: the columns and notes are not read for it (an id-less row, "line N",
                  * takes none) */
        if (mb_validate__csv_file_recipe(c, r, s, rfile, rpath, head, 2048) != 0) {
            mb_free(head);
            mb_free(tail);
            return -1;
        }
        unstated = 0; /* the file states the split, or takes mbsim's spread as its own */
        if (!strcmp(r->metric, MB_VAL_TFLOPS))
            mb_validate__csv_tflops_in_time(c, r, s, head, 2048);
    } else if (mb_validate__csv_row_recipe(c, r, s, head, 2048, tail, 1100)) {
        mb_free(head);
        mb_free(tail);
        return -1;
    }
    if (unstated && !s->pipeline_layout[0]) { /* the recipe stated no layout either */
        size_t l = strlen(head);
        snprintf(head + l, 2048 - l, "%spipeline split not stated: %d layers do not split evenly over pp*vpp = %d, "
                 "mbsim's spread assumed", l ? "; " : "", s->model.num_layers, s->pp * s->vpp);
    }
    if (mb_validate__csv_check(r, s)) { /* cannot happen: every recipe cell was checked */
    } else if (c->out->parse_only) {
        mb_validate__skip_row(r, "parse only");
    } else {
        mb_validate__submit_row(c->out, r, s, fsdp_group, head, tail);
        head = tail = NULL; /* taken */
    }
    mb_free(head);
    mb_free(tail);
    return 0;
}

/* A row's id names one run: the report, --baseline (mb_validate_drift.c) and --recipes pair rows by it, so
 * two rows with one id (in one CSV or two) are an error at the second's id cell naming the first (issue 37:
 * they were both taken, and a recipe file meant for one applied to both). Rows without an id ("line N")
 * are not compared. 0, or -1 (c->err). */
static int mb_validate__csv_unique_id(struct mb_val__csv *c)
{
    const char *cell = mb_validate__cell(c, C_ID);
    if (!*cell)
        return 0;
    char id[sizeof ((struct mb_val_row *)0)->id];
    mb_validate__csv_id(id, sizeof id, cell);
    const struct mb_val_row *first = mb_validate__same_id(c->out, id, c->out->n_rows); /* the row made next */
    if (!first)
        return 0;
    const struct mb_val__field *f = &c->f[c->idx[C_ID]];
    int same = !strncmp(first->source, c->path, sizeof first->source - 1);
    if (same && first->line >= c->rec_line) /* the file read before: given twice */
        return mb_err_set(c->err, c->path, f->line, f->col, "column 'id': '%s' was read from this file before "
                          "(line %d): a CSV given twice", id, first->line);
    return mb_err_set(c->err, c->path, f->line, f->col, "column 'id': '%s' is also the id of %s%sline %d: each row "
                      "needs an id of its own (the report, --baseline and --recipes pair rows by id)", id,
                      same ? "" : first->source, same ? "" : " ", first->line);
}

/* One CSV record: a row predicted, skipped with its reason, or an error (-1, c->err) for input the user
 * must fix. */
static int mb_validate__csv_record(struct mb_val__csv *c)
{
    struct mb_val__cells v;
    const char *key;
    struct mb_precision prec;
    enum mb_rc_gran gran;
    unsigned mods;
    char why[200];
    const struct mb_val__model_ent *me;
    const struct mb_val__sys_ent *se;
    struct mb_scenario s;

    if (mb_validate__csv_numbers(c, &v) != 0)
        return -1;
    if (mb_validate__csv_unique_id(c))
        return -1;
    struct mb_val_row *r = mb_validate__csv_new_row(c, &v, &key);
    if (mb_validate__pick_metric(r, v.tokens, v.step, v.tflops) != 0)
        return 0;
    mb_validate__csv_ab_key(c, r);
    if (!*mb_validate__cell(c, C_MODEL)) {
        mb_validate__skip_row(r, "model not stated");
        return 0;
    }
    if (!key)
        return mb_validate__csv_unknown_system(c);
    if (mb_validate_precision(mb_validate__cell(c, C_PRECISION), key, &prec, why, sizeof why) != 0 ||
        mb_validate_recompute(mb_validate__cell(c, C_RECOMPUTE), &gran, &mods, why, sizeof why) != 0) {
        mb_validate__skip_row(r, why);
        return 0;
    }
    if (mb_validate__csv_unstated(r, &v))
        return 0;
    int rc = mb_validate__csv_model_system(c, r, key, &me, &se);
    if (rc)
        return rc < 0 ? -1 : 0;
    mb_validate__csv_scenario(c, r, &v, &me->m, &se->sys, &prec, gran, mods, &s);
    if (mb_validate__csv_plausible(c, &s)) {
        mb_scenario_free(&s);
        return -1;
    }
    /* the layout columns alone must make a valid scenario (else the row is
     * skipped with the layout's own message); the recipe then refines it */
    int unstated = mb_validate__csv_split_unstated(&s);
    struct mb_scenario t = s;
    if (mb_validate__csv_check(r, &t)) {
        mb_scenario_free(&s);
        return 0;
    }
    rc = mb_validate__csv_recipe_submit(c, r, &s, unstated, s.strategy == MB_STRAT_FSDP ? v.iv[I_FSDP] : 0);
    mb_scenario_free(&s);
    return rc;
}

static void mb_validate__csv_on_record(int term, void *vctx)
{
    struct mb_val__csv *c = vctx;
    size_t i;
    (void)term;
    /* a line holding only blanks is one empty field: not a record */
    int blank = c->nf == 1 && !*mb_validate__trim(c->f[0].text);
    if (!c->failed && !blank) {
        int rc = c->have_header ? mb_validate__csv_record(c) : mb_validate__csv_header(c);
        if (rc != 0)
            c->failed = 1;
        else if (c->have_header && c->out->n_rows > mb_validate_pending(c->out))
            mb_validate__report_progress(c->out, c->out->n_rows - mb_validate_pending(c->out));
    }
    for (i = 0; i < c->nf; i++)
        mb_free(c->f[i].text);
    c->nf = 0;
    c->rec_pending = 1;
}

static char *mb_validate__read_file(const char *path, size_t *len, struct mb_err *err)
{
    char *buf;
    if (mb_input_read(path, "a CSV file", 0, &buf, len, err))
        return NULL;
    return buf;
}

int mb_validate_add_csv(struct mb_val_summary *out, const char *path, struct mb_err *err)
{
    struct csv_parser p;
    struct mb_val__csv c;
    size_t len, i;
    char *buf;
    int rc = 0;

    buf = mb_validate__read_file(path, &len, err);
    if (!buf)
        return -1;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
        mb_free(buf);
        return mb_err_set(err, path, 0, 0, "cannot initialise the CSV parser");
    }
    memset(&c, 0, sizeof c);
    c.path = path;
    c.out = out;
    c.err = err;
    c.line = 1;
    c.col = 1;
    c.rec_pending = 1;

    /* a UTF-8 byte order mark (spreadsheet exports) is not part of the first column's name */
    i = len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0;
    for (; i < len && !c.failed; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (!ch) {
            rc = mb_err_set(err, path, c.line, c.col, "NUL byte: expected CSV text (is this a binary file?)");
            c.failed = 1;
            break;
        }
        if (c.rec_pending && ch != '\r' && ch != '\n') {
            c.rec_pending = 0;
            c.rec_line = c.fline = c.line;
            c.fcol = c.col;
        }
        if (csv_parse(&p, &buf[i], 1, mb_validate__csv_on_field, mb_validate__csv_on_record, &c) != 1) {
            if (csv_error(&p) == CSV_EPARSE)
                rc = mb_err_set(err, path, c.line, c.col,
                                "malformed quoted field (a quote inside an unquoted field, or text after a "
                                "closing quote)");
            else
                rc = mb_err_set(err, path, c.line, c.col, "CSV parser: %s", csv_strerror(csv_error(&p)));
            c.failed = 1;
            break;
        }
        mb_text_pos_step(ch, &c.line, &c.col, &c.pend); /* columns count characters */
    }
    if (!c.failed && csv_fini(&p, mb_validate__csv_on_field, mb_validate__csv_on_record, &c) != 0)
        rc = mb_err_set(err, path, c.fline, c.fcol, "unterminated quoted field at end of file");
    if (c.failed)
        rc = -1;
    if (!rc && !c.have_header)
        rc = mb_err_set(err, path, 0, 0, "empty file (no header row)");
    mb_validate__flush_jobs(out); /* the rows read so far are kept, also on error */
    for (i = 0; i < c.nf; i++)
        mb_free(c.f[i].text);
    mb_free(c.f);
    csv_free(&p);
    mb_free(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
