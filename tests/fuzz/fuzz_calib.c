/* Calibration tables and overlays (base: a shipped GPU). Seeds: calibration/,
 * tests/data/calib/. */
#include "fuzz_util.h"
#include "mb_calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_calib_load(NULL, fuzz_tmp(data, size, "yaml"), &c, &e) == 0)
        mb_calib_free(c);
    return 0;
}
