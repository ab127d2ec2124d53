/* System (fabric) YAML; node_xml is resolved beside the temporary file, so
 * absolute node_xml paths in the seeds reach the hwloc loader (its plugins
 * stay loaded between executions: fuzz_hwloc_pin.h). Seeds:
 * topology/systems/, tests/data/topology/. */
#include "fuzz_hwloc_pin.h"
#include "fuzz_util.h"
#include "mb_topo.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mb_system s;
    struct mb_err e;
    mb_err_clear(&e);
    mb_topo_load_system(fuzz_tmp(data, size, "yaml"), &s, &e);
    return 0;
}
