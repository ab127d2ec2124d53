/*
 * fuzz_util.h -- shared by the libFuzzer harnesses (docs/robustness.md).
 *
 * mbsim's loaders read paths (positions in messages name the file), so each
 * input is written to a per-process temporary file with the loader's
 * extension and loaded from there.
 */
#ifndef MB_FUZZ_UTIL_H
#define MB_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Write data to /tmp/mbsim-fuzz-PID.EXT (the same file every call) and return its path. */
static inline const char *fuzz_tmp(const uint8_t *data, size_t size, const char *ext)
{
    static char path[128];
    snprintf(path, sizeof path, "/tmp/mbsim-fuzz-%d.%s", (int)getpid(), ext);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* MB_FUZZ_UTIL_H */
