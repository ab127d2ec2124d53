/* `mbsim import megatron`: a Megatron-LM command line or a training log's
 * arguments block, imported, and the emit -> import round trip checked
 * (fuzz_import.h). Seeds: tests/data/import/, tests/fuzz/seeds/import_megatron/. */
#include "fuzz_hwloc_pin.h"
#include "fuzz_import.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_hwloc_pin(); /* the system's node XML is read by hwloc for every import */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_import_roundtrip(data, size, MB_MEGATRON_LM, "sh");
}
