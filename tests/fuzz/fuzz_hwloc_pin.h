/*
 * fuzz_hwloc_pin.h -- keep libhwloc's plugins loaded between executions.
 *
 * libhwloc loads its components (the libxml2 XML reader is a plugin on Debian)
 * when the first topology of the process is created and unloads them when the
 * last one is destroyed, so each mb_topo_load_xml() of a harness dlopen()s and
 * dlclose()s them again: most of an execution's time. One topology created in
 * LLVMFuzzerInitialize and never destroyed keeps them loaded; every input
 * still goes through hwloc_topology_init, the XML import and
 * hwloc_topology_destroy as in mbsim (docs/robustness.md, harness speed).
 */
#ifndef MB_FUZZ_HWLOC_PIN_H
#define MB_FUZZ_HWLOC_PIN_H

#include <hwloc.h>
#include <stdlib.h>

static inline void fuzz_hwloc_pin(void)
{
    static hwloc_topology_t keep; /* reachable until exit: not a leak */
    const char *e = getenv("MBSIM_FUZZ_NO_PIN");
    if (keep || (e && e[0] && !(e[0] == '0' && !e[1])))
        return;
    if (hwloc_topology_init(&keep) < 0)
        abort();
}

#endif /* MB_FUZZ_HWLOC_PIN_H */
