/* System (fabric) YAML; node_xml is resolved beside the temporary file, so
 * absolute node_xml paths in the seeds reach the hwloc loader. Seeds:
 * topology/systems/, tests/data/topology/. */
#include "fuzz_util.h"
#include "mb_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_system s;
    struct mb_err e;
    mb_err_clear(&e);
    mb_topo_load_system(fuzz_tmp(data, size, "yaml"), &s, &e);
    return 0;
}
