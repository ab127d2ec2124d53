/* Kineto / Chrome JSON traces (plain; gzip is zlib's). Seeds: tests/data/kineto/. */
#include "fuzz_util.h"
#include "mb_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_prof *p = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_prof_kineto(fuzz_tmp(data, size, "json"), &p, &e) == 0)
        mb_prof_free(p);
    return 0;
}
