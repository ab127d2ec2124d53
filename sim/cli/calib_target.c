/*
 * calib_target.c -- which calibration table an imported overlay is for.
 */
#include "calib_target.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mb_calib.h"

static int mb_ct__loads(const char *gpu)
{
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    if (mb_calib_load(gpu, NULL, &c, &e))
        return 0;
    mb_calib_free(c);
    return 1;
}

int mb_calib_target_gpu(const char *product, char *out, size_t n)
{
    char word[64];
    for (const char *p = product; *p;) {
        size_t k = strcspn(p, " -_");
        if (k > 0 && k < sizeof word) {
            memcpy(word, p, k);
            word[k] = '\0';
            /* shipped names carry a digit ("H100"): "NVIDIA", "HBM" are not tried */
            if (strpbrk(word, "0123456789") && mb_ct__loads(word)) {
                snprintf(out, n, "%s", word);
                return 0;
            }
        }
        p += k;
        p += strspn(p, " -_");
    }
    return -1;
}

int mb_calib_target_check(const char *gpu, const char *base, char *msg, size_t n)
{
    if (strlen(gpu) >= 64) {
        snprintf(msg, n, "--gpu '%.60s' is not a GPU name", gpu);
        return -1;
    }
    /* a relative base path is checked from the current folder; when the overlay
     * loads, it is taken from the overlay's folder */
    struct mb_calib *c = NULL;
    struct mb_err e;
    mb_err_clear(&e);
    int is_path = strchr(base, '/') || strstr(base, ".yaml") || strstr(base, ".yml");
    if (mb_calib_load(is_path ? NULL : base, is_path ? base : NULL, &c, &e)) {
        mb_err_format(&e, msg, n);
        return -1;
    }
    int same = strcasecmp(mb_calib_spec(c)->name, gpu) == 0;
    if (!same)
        snprintf(msg, n, "--base %.100s is a table for %s, not %s", base, mb_calib_spec(c)->name, gpu);
    mb_calib_free(c);
    return same ? 0 : -1;
}
