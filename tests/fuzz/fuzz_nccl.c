/* nccl-tests logs. Seeds: tests/data/nccl/, shared/data/formats/nccl_tests_*.txt. */
#include "fuzz_util.h"
#include "mb_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_nccl_log log = {0};
    struct mb_err e;
    mb_err_clear(&e);
    mb_import_nccl_tests(fuzz_tmp(data, size, "txt"), &log, &e);
    mb_nccl_log_free(&log);
    return 0;
}
