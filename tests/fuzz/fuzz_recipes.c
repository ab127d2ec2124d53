/* Recipe files (`mbsim validate CSV --recipes FILE`, `mbsim calibrate runs
 * --recipes FILE`; mb_validate_add_recipes, workloads/studies/mb_validate_recipes.c):
 * each input is a scenario file whose measured.csv_row names the CSV row whose
 * recipe it states. The input is registered as `--recipes FILE` registers it
 * (scenario load and check, the csv_row rules); when it is taken, a one-row CSV
 * is written from the loaded scenario itself (its id, model and system as the
 * file names them, its layout, its precision, a plausible measured 100 tokens/s/GPU)
 * and read with the file as its recipe, so that the row meets the recipe
 * through mb_validate_recipe_layout (which finds it equal, or names what differs:
 * an inline model, a LoRA recipe the row's notes cannot state) and through the
 * row's simulation from the file. With MBSIM_FUZZ_PARSE_ONLY set the row stops
 * before its simulation (fuzz_scenario covers it).
 *
 * The models and systems of the seed recipe files are loaded once, in
 * LLVMFuzzerInitialize, into a cache every input's CSV shares (as fuzz_measured
 * does); the input's own scenario load still loads its model and system.
 * Seeds: scenarios/measured/, tests/data/validate/recipes*. */
#include <string.h>

#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_validate.h"

static struct mb_val__cache *cache;

/* A CSV cell: quoted, with its quotes doubled. */
static void csv_cell(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The one-row CSV of recipe file `s` (registered for row `id`) at `path`. */
static void write_row(const char *path, const char *id, const struct mb_scenario *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs("id,model,system,gpus,precision,gbs,mbs,seq_len,tp,pp,cp,vp,ep,etp,fsdp,recompute,"
          "tokens_per_s_per_gpu,model_tflops_per_gpu,step_time_s,notes\n", f);
    csv_cell(f, id);
    fputc(',', f);
    csv_cell(f, s->model_ref[0] ? s->model_ref : s->model.name);
    fputc(',', f);
    csv_cell(f, s->system_ref[0] ? s->system_ref : s->system.name);
    fprintf(f, ",%d,", s->gpus);
    csv_cell(f, s->prec.label);
    fprintf(f, ",%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,,100,,,%s\n", s->global_batch_size, s->micro_batch_size,
            s->seq_length, s->tp, s->pp, s->cp, s->vpp, s->ep, s->etp,
            s->strategy == MB_STRAT_FSDP ? s->dp : 0, s->lora_rank > 0 ? "task=lora" : "");
    if (fclose(f))
        abort();
}

/* Register the recipe file at `path` and read its one-row CSV; with `keep`, keep the
 * models and systems the CSV loaded in the shared cache (the seeds, at start). */
static void one(const char *path, int parse_only, int keep)
{
    struct mb_val_summary v;
    struct mb_err e;
    mb_validate_init(&v);
    v.parse_only = parse_only;
    v.shared_cache = cache;
    mb_err_clear(&e);
    if (mb_validate_add_recipes(&v, path, &e) == 0) {
        const char *paths[1], *ids[1];
        const char *rpath;
        if (mb_validate_recipes_unused(&v, paths, ids, 1) == 1) {
            char id[MB_MEASURED_ID_LEN];
            snprintf(id, sizeof id, "%s", ids[0]);
            const struct mb_scenario *s = mb_validate_recipe_file(&v, id, &rpath);
            if (s) {
                char csv[160];
                snprintf(csv, sizeof csv, "%s.row.csv", path);
                write_row(csv, id, s);
                mb_err_clear(&e);
                mb_validate_add_csv(&v, csv, &e);
                if (keep && cache)
                    mb_validate_cache_keep(cache);
            }
        }
    }
    mb_validate_finish(&v);
    mb_validate_free(&v);
}

/* One seed recipe file, loaded from a copy in the temporary folder (the one-row CSV is written beside it). */
static void warm_file(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return;
    uint8_t buf[65536];
    size_t got = fread(buf, 1, sizeof buf, in);
    fclose(in);
    one(fuzz_tmp(buf, got, "yaml"), 1, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *e = getenv("MBSIM_FUZZ_NO_CACHE");
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin();
    if (e && e[0] && !(e[0] == '0' && !e[1]))
        return 0;
    cache = mb_validate_cache_new();
    fuzz_each_file(MBSIM_SOURCE_DIR "/scenarios/measured", ".yaml", warm_file);
    fuzz_each_file(MBSIM_SOURCE_DIR "/tests/data/validate/recipes", ".yaml", warm_file);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(fuzz_tmp(data, size, "yaml"), fuzz_parse_only(), 0);
    return 0;
}
