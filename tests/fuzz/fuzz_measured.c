/* Measured-runs CSV (`mbsim validate FILE.csv`): parse and check every row
 * (layout, recipe columns, notes, the scenario check) and predict them, or,
 * with MBSIM_FUZZ_PARSE_ONLY set, stop before the simulation (fuzz_scenario
 * covers it): ~100x more executions per second for the CSV reader.
 * Seeds: tests/data/validate/, tests/data/fit/. */
#include <string.h>

#include "fuzz_util.h"
#include "mb_validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_val_summary v;
    struct mb_err e;
    memset(&v, 0, sizeof v);
    v.parse_only = fuzz_parse_only();
    mb_err_clear(&e);
    mb_validate_add_csv(&v, fuzz_tmp(data, size, "csv"), &e);
    mb_validate_free(&v);
    return 0;
}
