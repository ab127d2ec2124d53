/* Model files. Seeds: workloads/models/, tests/data/model/. */
#include "fuzz_util.h"
#include "mb_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_model m;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_model_load(fuzz_tmp(data, size, "yaml"), &m, &e) == 0)
        mb_model_free(&m);
    return 0;
}
