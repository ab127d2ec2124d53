/* `mbsim import hf`: a Hugging Face config.json to a model file, which the
 * importer loads back before writing it (mb_hf_import checks it with the model
 * loader). No emitter exists to round-trip through. Seeds: tests/data/hf/,
 * tests/fuzz/seeds/import_hf/. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "mb_hf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (!null && !(null = fopen("/dev/null", "w")))
        abort();
    struct mb_err e;
    mb_err_clear(&e);
    mb_hf_import(fuzz_tmp(data, size, "json"), "fuzz", null, null, &e);
    return 0;
}
