/*
 * mb_outfile.h -- the one way mbsim writes an output file, the lock that keeps
 * two processes from writing one path, and the check of standard output at
 * exit (docs/robustness.md, "Outputs").
 *
 * An output is written to a temporary file beside its target
 * (`.NAME.PID.N.tmp` in the target's folder, so the rename stays on one file
 * system) and renamed over the target only once every byte was written,
 * flushed, synced to disk and closed without error: a full disk, a quota, a
 * killed command or a write error leaves the target as it was, never cut
 * short. What is written in place instead: standard output ("-"), and a path
 * that is not a regular file or may stand for a descriptor (a device such as
 * /dev/full or /dev/null, a FIFO, anything under /dev/ or /proc/): renaming
 * over those would replace the device node or the link, not write to it.
 * The target is the path with its symbolic links resolved (a link to a file
 * keeps pointing at the new file); a file replaced keeps its permission bits.
 *
 * An output whose target is a file the command read as input (recorded by
 * mb_input_track, by device and inode, so also through another name, a hard
 * link or a symbolic link) is refused before anything is written, as is one
 * target given as two outputs. `may_replace` names the one input an output may
 * replace (a sweep resumed into its own TSV).
 *
 * Errors go into struct mb_err (nothing is printed here); the CLI prints them
 * and exits 1.
 */
#ifndef MB_OUTFILE_H
#define MB_OUTFILE_H

#include <stdio.h>

#include "mb_util.h"

struct mb_outfile__cookie;

/** An output being written (mb_outfile_open .. mb_outfile_commit or _abort). */
struct mb_outfile {
    FILE *fp;       /* write here (stdout for "-") */
    int fd;         /* fp's descriptor (the stream is not a plain FILE: fileno(fp) is -1) */
    struct mb_outfile__cookie *cookie; /* keeps the first write error's errno (NULL for "-") */
    char *path;     /* as given, for messages (owned) */
    char *target;   /* the file that is replaced: path with its links resolved (owned; NULL for "-") */
    char *tmp;      /* the temporary file, until renamed (owned; NULL when written in place) */
    int in_place;   /* 1: standard output or a device/FIFO, written directly */
    int slot;       /* the entry that lets mb_outfile_signal_cleanup remove tmp (-1: none) */
};

/**
 * @brief Open an output: stdout for "-", the target itself for a device or
 * FIFO, else a new temporary file beside the target. o must not move until it
 * is committed or aborted (the module keeps its address, to refuse a second
 * output to the same target).
 * @param[out] o            the output; o->fp is where to write
 * @param[in]  path         the output path as the user gave it
 * @param[in]  may_replace  NULL, or the one input this output may replace
 * @param[out] err          "PATH: is also an input of this command ...",
 *                          "PATH: given as two outputs", "PATH: is a directory",
 *                          "PATH: cannot write: ..." (the folder's reason)
 * @return 0, or -1 with err set (nothing created).
 */
int mb_outfile_open(struct mb_outfile *o, const char *path, const char *may_replace, struct mb_err *err);

/**
 * @brief Rename the temporary file over the target now and go on writing to
 * it (the open stream follows the file): for an output that must show its
 * rows while it runs (a sweep's TSV) once it holds everything the file it
 * replaces held. No-op when written in place or already renamed.
 * @return 0, or -1 with err set (the temporary file stays; commit or abort it).
 */
int mb_outfile_publish(struct mb_outfile *o, struct mb_err *err);

/**
 * @brief Finish an output: flush, check the stream's error flag, fsync, close
 * and rename over the target (stdout: flush and check only, it stays open).
 * On any failure the temporary file is removed and the target is untouched.
 * @return 0, or -1 with "PATH: write error: REASON" in err. o is closed either way.
 */
int mb_outfile_commit(struct mb_outfile *o, struct mb_err *err);

/** @brief Give an output up: close it and remove the temporary file (the target is untouched). Accepts a closed o. */
void mb_outfile_abort(struct mb_outfile *o);

/**
 * @brief Check, before long work, that path could be written as an output:
 * open it as mb_outfile_open does and give it up at once (the target untouched).
 * The write at the end still checks every step.
 * @param[in] may_replace  as for mb_outfile_open
 * @return 0, or -1 with mb_outfile_open's error in err.
 */
int mb_outfile_probe(const char *path, const char *may_replace, struct mb_err *err);

/**
 * @brief Remove every temporary file not yet renamed. Async-signal-safe (only
 * unlink): for a handler of SIGINT/SIGTERM that then ends the process.
 */
void mb_outfile_signal_cleanup(void);

/** An exclusive lock on an output path (mb_outlock_take). */
struct mb_outlock {
    int fd;         /* the lock file's descriptor, -1 when none is held */
    char *path;     /* the lock file (owned) */
};

/**
 * @brief Take the lock of output `path`: an fcntl() write lock on the file
 * `.NAME.lock` beside the target (created if needed, removed on release). The
 * kernel drops the lock when the process ends, however it ends, so a killed
 * run never leaves a stale lock; the temporary files a killed writer of the
 * path left (.NAME.PID.N.tmp) are removed once the lock is held. A second
 * process asking for the same path
 * (two shards given one --tsv) is refused, with the holder's pid when the
 * kernel tells it. "-" and paths written in place take no lock.
 * @return 0 (l->fd >= 0, or -1 when no lock applies), or -1 with "PATH: is
 * being written by another mbsim (process N) ...", or, where the file system
 * has no POSIX locks, "PATH: cannot lock ...: ..." in err.
 */
int mb_outlock_take(struct mb_outlock *l, const char *path, struct mb_err *err);

/** @brief Release the lock and remove the lock file; accepts an unlocked l. */
void mb_outlock_release(struct mb_outlock *l);

/**
 * @brief Replace `stdout` by a stream over descriptor 1 that keeps the errno
 * of its first failed write (glibc keeps only an error flag; the reason is
 * gone by the time the program ends). Line-buffered on a terminal, else fully
 * buffered, as before. On a terminal, `stdout` is then an escaping stream
 * over it (mb_text_escape_stream: a scenario name or CSV id holding an escape
 * sequence or bytes that are not UTF-8 prints as \xNN; newline and tab kept);
 * into a file or pipe the bytes go as they are (data). Call it first thing in
 * main(), before any output; mb_outfile_close_stdout closes both.
 * @return 0, or -1 (stdout left as it was).
 */
int mb_outfile_watch_stdout(void);

/**
 * @brief Flush and close standard output at the end of the program, as
 * gnulib's close_stdout does: a write that failed earlier, or one that fails
 * now, is an error (a closed stdout that was never written to is not).
 * @param[out] msg  "error writing standard output: REASON" on failure
 * @return 0, or -1 with msg set.
 */
int mb_outfile_close_stdout(char *msg, size_t len);

#endif /* MB_OUTFILE_H */
