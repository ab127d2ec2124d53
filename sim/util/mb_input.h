/*
 * mb_input.h -- the one place that opens files mbsim reads as input, and the
 * limits every loader shares.
 *
 * Users hand mbsim files from their own clusters (YAML, hwloc XML, logs,
 * profiler traces). A path may name a directory, a FIFO or a device such as
 * /dev/zero, or a file far larger than any real input; each of those would
 * otherwise hang, or read until memory runs out. mb_input_* open the path
 * without blocking, require a regular file (or "-": stdin, where the callers
 * allow it) and stop at MB_INPUT_MAX_BYTES, also for decompressed data.
 */
#ifndef MB_INPUT_H
#define MB_INPUT_H

#include <stddef.h>
#include <stdio.h>

#include "mb_util.h"

/* Largest input mbsim reads (bytes, after decompression): 1 GiB. The largest
 * real input seen, a Kineto trace of a full training step, is a few hundred MB. */
#define MB_INPUT_MAX_BYTES ((size_t)1 << 30)

/**
 * @brief Open path for reading: a regular file of at most MB_INPUT_MAX_BYTES.
 * @param[in]  path  file name; "-" is stdin only when allow_stdin is set
 * @param[in]  what  what the file should be, for messages ("a YAML file")
 * @param[out] err   "path: is a directory, expected a YAML file",
 *                   "path: is not a regular file (a FIFO or device?) ...",
 *                   "path: larger than ... bytes", "path: cannot open: ..."
 * @return a stream to fclose, or NULL with err set.
 */
FILE *mb_input_open(const char *path, const char *what, int allow_stdin, struct mb_err *err);

/**
 * @brief Read a whole input (as mb_input_open) into a NUL-terminated buffer.
 * @param[out] buf_p  malloc'd contents (mb_free); NULL on error
 * @param[out] len_p  bytes read, without the terminating NUL
 * @return 0, or -1 with err set.
 */
int mb_input_read(const char *path, const char *what, int allow_stdin, char **buf_p, size_t *len_p,
                  struct mb_err *err);

/**
 * @brief Read the rest of an open stream into a NUL-terminated buffer, at most
 * MB_INPUT_MAX_BYTES (a stream that gives more is an error naming `name`).
 * @return 0, or -1 with err set (buf_p NULL).
 */
int mb_input_slurp(FILE *f, const char *name, char **buf_p, size_t *len_p, struct mb_err *err);

/**
 * @brief As mb_input_read, for a file that may be gzip-compressed (zlib reads
 * plain files unchanged); at most MB_INPUT_MAX_BYTES after decompression.
 * A damaged or truncated stream: "path: gzip error: ... (truncated file?)".
 * @return 0, or -1 with err set (buf_p NULL).
 */
int mb_input_read_gz(const char *path, const char *what, int allow_stdin, char **buf_p, size_t *len_p,
                     struct mb_err *err);

/**
 * @brief Make LF the only line end of text buf[0..n): CRLF and a lone CR (classic Mac files, a
 * script's last line) become one '\n', in place; the result is NUL-terminated (buf must have room
 * for buf[n], as mb_input_read's buffers do).
 * @return the new length (<= n).
 */
size_t mb_input_unify_line_ends(char *buf, size_t n);

/**
 * @brief Check path as mb_input_open does, without keeping it open (for the
 * libraries that open files themselves: zlib).
 * @return 0, or -1 with err set.
 */
int mb_input_check(const char *path, const char *what, struct mb_err *err);

/**
 * @brief Start (on != 0) or stop recording the files mb_input_* open (their
 * device and inode), so that an output about to replace a file can ask whether
 * it was read (mb_input_was_read; mb_outfile.h refuses such an output). The
 * mbsim executable turns it on first thing; libraries, tests and fuzzers that
 * never write outputs leave it off (the record then stays empty). Thread-safe.
 */
void mb_input_track(int on);

/**
 * @brief 1 when a regular file with this device and inode was opened through
 * mb_input_* while tracking was on, else 0.
 */
int mb_input_was_read(unsigned long long dev, unsigned long long ino);

#endif /* MB_INPUT_H */
