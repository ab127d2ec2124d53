/* `mbsim sweep --set` lists: each input line is one --set argument applied to
 * the sweep of a small fixture scenario (every value is tried on the base, a
 * model or system value is loaded); then the grid is expanded: up to
 * FUZZ_CONFIGS configurations spread over it (the first and the last
 * included) are each built and checked (mb_sweep_scenario) and simulated
 * (mb_sweep_eval, the work behind one TSV row), or, with MBSIM_FUZZ_PARSE_ONLY
 * set, built and checked only. The fixture is loaded once, in
 * LLVMFuzzerInitialize; each input works on a copy of it without axes
 * (mb_sweep_drop_axes). MBSIM_FUZZ_NO_CACHE set: every input loads the
 * fixture again (the earlier harness). Seeds: tests/fuzz/seeds/sweep_set/. */
#include <string.h>

#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_sweep.h"

#define FUZZ_FIXTURE MBSIM_SOURCE_DIR "/tests/data/keys/base.yaml"
#define FUZZ_CONFIGS 16
#define FUZZ_SIMULATED 4 /* of them simulated without MBSIM_FUZZ_PARSE_ONLY */

static struct mb_sweep fixture;
static int have_fixture;

static void load_fixture(struct mb_sweep *sw)
{
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_sweep_load(FUZZ_FIXTURE, sw, &e) || sw->n_axes || sw->n_models || sw->n_sys)
        abort(); /* the fixture must load, without a sweep block */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *e = getenv("MBSIM_FUZZ_NO_CACHE");
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin(); /* system.preset values run hwloc */
    if (e && e[0] && !(e[0] == '0' && !e[1]))
        return 0;
    load_fixture(&fixture);
    have_fixture = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_sweep sw;
    struct mb_err e;
    mb_err_clear(&e);
    if (have_fixture)
        sw = fixture; /* shares the base, read-only; the axes are this input's */
    else
        load_fixture(&sw);
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    for (char *line = text, *nl; line && !e.count; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        mb_sweep_set(&sw, line, &e);
    }
    size_t n = mb_sweep_size(&sw);
    size_t k = n < FUZZ_CONFIGS ? n : FUZZ_CONFIGS;
    for (size_t i = 0; i < k; i++) {
        size_t idx = k > 1 ? i * (n - 1) / (k - 1) : 0;
        if (!fuzz_parse_only() && i % (FUZZ_CONFIGS / FUZZ_SIMULATED) == 0) {
            struct mb_sweep_row row;
            mb_sweep_eval(&sw, idx, &row);
        } else {
            struct mb_scenario s;
            mb_err_clear(&e);
            (void)mb_sweep_scenario(&sw, idx, &s, &e);
        }
    }
    free(text);
    if (have_fixture)
        mb_sweep_drop_axes(&sw);
    else
        mb_sweep_free(&sw);
    return 0;
}
