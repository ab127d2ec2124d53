/* `mbsim import bridge`: Megatron-Bridge overrides, imported, and the emit ->
 * import round trip checked (fuzz_import.h). Seeds: tests/data/import/,
 * tests/fuzz/seeds/import_bridge/. */
#include "fuzz_hwloc_pin.h"
#include "fuzz_import.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_import_roundtrip(data, size, MB_MEGATRON_BRIDGE, "txt");
}
