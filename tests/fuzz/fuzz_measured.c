/* Measured-runs CSV (`mbsim validate FILE.csv`): parse and check every row
 * (layout, recipe columns, notes, the scenario check) and predict them, or,
 * with MBSIM_FUZZ_PARSE_ONLY set, stop before the simulation (fuzz_scenario
 * covers it). The models and systems the seed CSVs name are loaded once, in
 * LLVMFuzzerInitialize, into a cache every input shares (mb_val_summary.
 * shared_cache); a model or system an input names beyond those is loaded for
 * that input and dropped after it, as `mbsim validate` does for each CSV.
 * MBSIM_FUZZ_NO_CACHE set: every input loads its own (the earlier harness).
 * Seeds: tests/data/validate/, tests/data/fit/. */
#include <string.h>

#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_validate.h"

static struct mb_val__cache *cache;

/* One seed CSV read into the shared cache (its models and systems stay loaded). */
static void warm_file(const char *path)
{
    struct mb_val_summary v;
    struct mb_err e;
    mb_validate_init(&v);
    v.parse_only = 1;
    v.shared_cache = cache;
    mb_err_clear(&e);
    mb_validate_add_csv(&v, path, &e);
    mb_validate_cache_keep(cache); /* before the summary's release drops what it loaded */
    mb_validate_free(&v);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *e = getenv("MBSIM_FUZZ_NO_CACHE");
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin(); /* the inputs' own system files still run hwloc */
    if (e && e[0] && !(e[0] == '0' && !e[1]))
        return 0;
    cache = mb_validate_cache_new();
    fuzz_each_file(MBSIM_SOURCE_DIR "/tests/data/validate", ".csv", warm_file);
    fuzz_each_file(MBSIM_SOURCE_DIR "/tests/data/fit", ".csv", warm_file);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_val_summary v;
    struct mb_err e;
    memset(&v, 0, sizeof v);
    v.parse_only = fuzz_parse_only();
    v.shared_cache = cache;
    mb_err_clear(&e);
    mb_validate_add_csv(&v, fuzz_tmp(data, size, "csv"), &e);
    mb_validate_free(&v);
    return 0;
}
