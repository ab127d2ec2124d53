/* hwloc XML node descriptions: mbsim's structure check, then libhwloc.
 * Seeds: topology/systems/, tests/data/robust/, shared/data/formats/. */
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
    struct mb_node_topo n;
    struct mb_err e;
    mb_err_clear(&e);
    mb_topo_load_xml(fuzz_tmp(data, size, "xml"), &n, &e);
    return 0;
}
