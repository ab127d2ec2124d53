/*
 * calib_target.h -- which calibration table an imported overlay is for (CLI only;
 * shared by `mbsim calibrate nccl-tests` and `mbsim calibrate nsys|kineto`).
 */
#ifndef MB_CALIB_TARGET_H
#define MB_CALIB_TARGET_H

#include <stddef.h>

/**
 * @brief Shipped GPU table named by a device product string: the first word of
 * `product` (split at spaces, '-' and '_') that is a shipped table's name, e.g.
 * "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA GB200" -> "GB200".
 * @return 0 with `out` set, or -1 when no word names a shipped table.
 */
int mb_calib_target_gpu(const char *product, char *out, size_t n);

/**
 * @brief Check that `base` (a shipped GPU name or a table path, checked from the
 * current folder) loads and is a table for `gpu` (its spec name, case-insensitive).
 * @return 0, or -1 with a one-line reason in `msg`.
 */
int mb_calib_target_check(const char *gpu, const char *base, char *msg, size_t n);

#endif
