/*
 * fuzz_util.h -- shared by the libFuzzer harnesses (docs/robustness.md).
 *
 * mbsim's loaders read paths (positions in messages name the file), so each
 * input is written to a per-process temporary file with the loader's
 * extension and loaded from there.
 */
#ifndef MB_FUZZ_UTIL_H
#define MB_FUZZ_UTIL_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Call fn with the path of each file of dir whose name ends in suffix (".csv"), as the harnesses'
 * initialisers warm their caches on the seed folders; a folder that cannot be opened is skipped. */
static inline void fuzz_each_file(const char *dir, const char *suffix, void (*fn)(const char *path))
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t ls = strlen(suffix);
    if (!d)
        return;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n <= ls || strcmp(de->d_name + n - ls, suffix))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        fn(path);
    }
    closedir(d);
}

/* Write data to DIR/mbsim-fuzz-PID.EXT (the same file every call) and return its path.
 * DIR is /dev/shm where it exists (a disk-backed /tmp costs most of an
 * execution's time), else /tmp. */
static inline const char *fuzz_tmp(const uint8_t *data, size_t size, const char *ext)
{
    static char path[128];
    static const char *dir;
    if (!dir)
        dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof path, "%s/mbsim-fuzz-%d.%s", dir, (int)getpid(), ext);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

/* MBSIM_FUZZ_PARSE_ONLY set (to anything but "" or "0"): harnesses that load
 * and then simulate stop after loading (docs/robustness.md, long runs). */
static inline int fuzz_parse_only(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("MBSIM_FUZZ_PARSE_ONLY");
        v = e && e[0] && !(e[0] == '0' && !e[1]);
    }
    return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* MB_FUZZ_UTIL_H */
