/* Scenario YAML: load, and when it loads, simulate one step (the whole model
 * behind `mbsim run`); with MBSIM_FUZZ_PARSE_ONLY set, load and check only
 * (the loader at loader speed). A system preset runs hwloc on its node XML;
 * hwloc's plugins stay loaded between executions (fuzz_hwloc_pin.h). Seeds:
 * scenarios/, tests/data/scenario/. */
#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_scenario.h"
#include "mb_step.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_scenario s;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_scenario_load(fuzz_tmp(data, size, "yaml"), &s, &e) == 0) {
        struct mb_result r;
        if (!fuzz_parse_only() && mb_step_simulate(&s, &r, &e) == 0)
            mb_result_free(&r);
        mb_scenario_free(&s);
    }
    return 0;
}
