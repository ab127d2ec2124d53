/* nsys cuda_gpu_kern_sum CSV and shapes files: an input whose first byte is
 * even is a CSV, odd a shapes YAML (then the shared sample CSV is matched
 * against it). Seeds: tests/data/nsys/. */
#include "fuzz_util.h"
#include "mb_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_err e;
    struct mb_prof *p = NULL;
    mb_err_clear(&e);
    if (size && (data[0] & 1)) {
        struct mb_prof_shapes *s = NULL;
        if (mb_prof_shapes_load(fuzz_tmp(data + 1, size - 1, "yaml"), &s, &e) == 0) {
            if (mb_prof_nsys(MBSIM_SOURCE_DIR "/../shared/data/formats/nsys_cuda_gpu_kern_sum.csv", s, &p, &e) == 0)
                mb_prof_free(p);
            mb_prof_shapes_free(s);
        }
        return 0;
    }
    if (mb_prof_nsys(fuzz_tmp(data + (size > 0), size - (size > 0), "csv"), NULL, &p, &e) == 0)
        mb_prof_free(p);
    return 0;
}
