/*
 * mb_outfile.c -- outputs written to a temporary file and renamed, output
 * locks, and the check of standard output at exit. See mb_outfile.h.
 */
#define _GNU_SOURCE /* __fpending (<stdio_ext.h>), realpath */
#include "mb_outfile.h"
#include "mb_text.h"
#include "mb_input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Outputs open at once (a command writes one or two). */
#define MB_OUTFILE__MAX 16

/* The open outputs, for the check that no target is given twice (the CLI
 * opens its outputs from one thread). */
static struct mb_outfile *mb_outfile__open[MB_OUTFILE__MAX];

/* The temporary files not yet renamed, for mb_outfile_signal_cleanup: a path
 * is written first, then `live` set, so a handler never reads a half-written one. */
static struct {
    volatile sig_atomic_t live;
    char tmp[PATH_MAX];
} mb_outfile__tmp[MB_OUTFILE__MAX];

static unsigned mb_outfile__seq; /* N of .NAME.PID.N.tmp */

/* ------------------------------------------------------------ streams
 * Each output (and standard output, once watched) is a stdio stream over a
 * cookie that writes to a descriptor and keeps the first write's errno:
 * glibc drops a buffer it could not write and clears nothing but the error
 * flag, so by the time the stream is closed the reason would be gone. */

struct mb_outfile__cookie {
    int fd;
    int err; /* errno of the first failed write, 0 if none */
};

static ssize_t mb_outfile__write(void *c, const char *buf, size_t n)
{
    struct mb_outfile__cookie *k = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(k->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!k->err)
                k->err = w < 0 ? errno : EIO;
            errno = k->err;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)done;
}

static int mb_outfile__close_fd(void *c)
{
    struct mb_outfile__cookie *k = c;
    int rc = close(k->fd), e = errno;
    mb_free(k);
    errno = e;
    return rc;
}

/* A stream writing to fd (which it closes), its cookie in *k. */
static FILE *mb_outfile__stream(int fd, struct mb_outfile__cookie **k)
{
    *k = mb_calloc(1, sizeof **k);
    (*k)->fd = fd;
    cookie_io_functions_t io = {.write = mb_outfile__write, .close = mb_outfile__close_fd};
    FILE *fp = fopencookie(*k, "w", io);
    if (!fp) {
        mb_free(*k);
        *k = NULL;
    }
    return fp;
}

/* Standard output's cookie, once mb_outfile_watch_stdout replaced the stream; on a terminal, the
 * checked stream that the escaping one (stdout then) writes into. */
static struct mb_outfile__cookie *mb_outfile__stdout;
static FILE *mb_outfile__tty_inner;

int mb_outfile_watch_stdout(void)
{
    struct mb_outfile__cookie *k;
    if (mb_outfile__stdout)
        return 0;
    int tty = isatty(STDOUT_FILENO);
    FILE *fp = mb_outfile__stream(STDOUT_FILENO, &k);
    if (!fp)
        return -1;
    setvbuf(fp, NULL, tty ? _IOLBF : _IOFBF, BUFSIZ);
    fflush(stdout);
    stdout = fp;
    mb_outfile__stdout = k;
    if (tty) { /* a terminal runs the escape sequences a name or id may hold: written as \xNN (mb_text.h) */
        mb_outfile__tty_inner = fp;
        stdout = mb_text_escape_stream(fp, "\n\t");
    }
    return 0;
}

/* The reason a stream failed: its cookie's first write error, else errno, else EIO. */
static int mb_outfile__reason(const struct mb_outfile__cookie *k, int e)
{
    return k && k->err ? k->err : e ? e : EIO;
}

void mb_outfile_signal_cleanup(void)
{
    for (int i = 0; i < MB_OUTFILE__MAX; i++)
        if (mb_outfile__tmp[i].live)
            unlink(mb_outfile__tmp[i].tmp);
}

/* The folder part of path ("." when none) and its last component. */
static void mb_outfile__split(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
    } else {
        snprintf(dir, dlen, "%.*s", slash == path ? 1 : (int)(slash - path), path);
        *base = slash + 1;
    }
}

/* A path that must be written in place: standard output's stand-ins and
 * anything that is not a regular file (devices, FIFOs, sockets). */
static int mb_outfile__in_place(const char *path, const struct stat *st, int exists)
{
    return !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6) || (exists && !S_ISREG(st->st_mode));
}

/* The target: path with its links resolved (its folder's, when it does not exist yet). */
static char *mb_outfile__target(const char *path, int exists, struct mb_err *err)
{
    char buf[PATH_MAX], dir[PATH_MAX];
    if (exists) {
        if (!realpath(path, buf))
            return mb_err_set(err, path, 0, 0, "cannot write: %s", strerror(errno)), NULL;
        return mb_strdup(buf);
    }
    const char *base;
    mb_outfile__split(path, dir, sizeof dir, &base);
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return mb_err_set(err, path, 0, 0, "is a directory, expected a file name"), NULL;
    if (!realpath(dir, buf))
        return mb_err_set(err, path, 0, 0, "cannot write: %s (the folder %s)", strerror(errno), dir), NULL;
    size_t n = strlen(buf);
    if (n + 1 + strlen(base) + 1 > sizeof buf)
        return mb_err_set(err, path, 0, 0, "cannot write: the path is too long"), NULL;
    snprintf(buf + n, sizeof buf - n, "%s%s", n > 1 ? "/" : "", base);
    return mb_strdup(buf);
}

static int mb_outfile__same(const char *a, const char *b)
{
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A new temporary file beside target, mode 0666 less the umask (the target's
 * bits when it exists); its descriptor, or -1 with errno set. */
static int mb_outfile__create_tmp(const char *target, const struct stat *st, int exists, char **tmp)
{
    char dir[PATH_MAX], name[PATH_MAX];
    const char *base;
    mb_outfile__split(target, dir, sizeof dir, &base);
    for (int tries = 0; tries < 100; tries++) {
        int w = snprintf(name, sizeof name, "%s/.%.200s.%ld.%u.tmp", strcmp(dir, "/") ? dir : "", base,
                         (long)getpid(), mb_outfile__seq++);
        if (w < 0 || (size_t)w >= sizeof name) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return -1;
        if (exists)
            (void)fchmod(fd, st->st_mode & 07777);
        *tmp = mb_strdup(name);
        return fd;
    }
    errno = EEXIST;
    return -1;
}

static void mb_outfile__forget(struct mb_outfile *o)
{
    for (int i = 0; i < MB_OUTFILE__MAX; i++)
        if (mb_outfile__open[i] == o)
            mb_outfile__open[i] = NULL;
    if (o->slot >= 0)
        mb_outfile__tmp[o->slot].live = 0;
    o->slot = -1;
}

static void mb_outfile__free(struct mb_outfile *o)
{
    mb_outfile__forget(o);
    mb_free(o->path);
    mb_free(o->target);
    mb_free(o->tmp);
    memset(o, 0, sizeof *o);
    o->slot = -1;
}

/* Refuse a target that is an input of this command or another open output. */
static int mb_outfile__check(const char *path, const char *target, const struct stat *st, int exists,
                             const char *may_replace, struct mb_err *err)
{
    if (exists && mb_input_was_read((unsigned long long)st->st_dev, (unsigned long long)st->st_ino) &&
        !(may_replace && mb_outfile__same(target, may_replace)))
        return mb_err_set(err, path, 0, 0,
                          "is also an input of this command: writing it would destroy what was read; give the "
                          "output another path");
    for (int i = 0; i < MB_OUTFILE__MAX; i++)
        if (mb_outfile__open[i] && mb_outfile__open[i]->target && !strcmp(mb_outfile__open[i]->target, target))
            return mb_err_set(err, path, 0, 0, "given as two outputs (also as %s): give each output its own path",
                              mb_outfile__open[i]->path);
    return 0;
}

int mb_outfile_open(struct mb_outfile *o, const char *path, const char *may_replace, struct mb_err *err)
{
    memset(o, 0, sizeof *o);
    o->slot = -1;
    if (!path || !*path)
        return mb_err_set(err, NULL, 0, 0, "empty output file name");
    if (!strcmp(path, "-")) {
        o->fp = stdout;
        o->fd = STDOUT_FILENO;
        o->in_place = 1;
        o->path = mb_strdup("standard output");
        return 0;
    }
    int free_slot = -1;
    for (int i = MB_OUTFILE__MAX - 1; i >= 0; i--)
        if (!mb_outfile__open[i])
            free_slot = i;
    if (free_slot < 0)
        return mb_err_set(err, path, 0, 0, "cannot write: more than %d outputs open", MB_OUTFILE__MAX);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return mb_err_set(err, path, 0, 0, "is a directory, expected a file name");
    /* a device or FIFO is its own target (/dev/stdout may resolve to no path at all) */
    int in_place = mb_outfile__in_place(path, &st, exists);
    char *target = in_place ? mb_strdup(path) : mb_outfile__target(path, exists, err);
    if (!target)
        return -1;
    if (mb_outfile__check(path, target, &st, exists && !in_place, may_replace, err)) {
        mb_free(target);
        return -1;
    }
    o->path = mb_strdup(path);
    o->target = target;
    o->in_place = in_place;
    /* in place: no O_CREAT, so a mistyped /dev/ name is an error, not a new file there */
    int fd = in_place ? open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
                      : mb_outfile__create_tmp(target, &st, exists, &o->tmp);
    if (fd < 0 || !(o->fp = mb_outfile__stream(fd, &o->cookie))) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (o->tmp)
            unlink(o->tmp);
        mb_err_set(err, path, 0, 0, "cannot write: %s%s", strerror(e),
                   in_place ? "" : " (creating a temporary file in its folder)");
        mb_outfile__free(o);
        return -1;
    }
    o->fd = fd;
    mb_outfile__open[free_slot] = o;
    if (o->tmp && strlen(o->tmp) < sizeof mb_outfile__tmp[free_slot].tmp) {
        memcpy(mb_outfile__tmp[free_slot].tmp, o->tmp, strlen(o->tmp) + 1);
        mb_outfile__tmp[free_slot].live = 1;
        o->slot = free_slot;
    }
    return 0;
}

int mb_outfile_publish(struct mb_outfile *o, struct mb_err *err)
{
    if (!o->fp || !o->tmp)
        return 0;
    errno = 0;
    if (fflush(o->fp) || ferror(o->fp))
        return mb_err_set(err, o->path, 0, 0, "write error: %s", strerror(mb_outfile__reason(o->cookie, errno)));
    if (rename(o->tmp, o->target))
        return mb_err_set(err, o->path, 0, 0, "cannot replace it: %s (the new file is %s)", strerror(errno), o->tmp);
    if (o->slot >= 0)
        mb_outfile__tmp[o->slot].live = 0;
    mb_free(o->tmp);
    o->tmp = NULL;
    return 0;
}

int mb_outfile_commit(struct mb_outfile *o, struct mb_err *err)
{
    if (!o->fp)
        return 0;
    int e = 0;
    if (o->fp == stdout) {
        errno = 0;
        if (fflush(stdout) || ferror(stdout)) {
            e = mb_outfile__reason(mb_outfile__stdout, errno);
            clearerr(stdout); /* reported here, not again at exit */
        }
        mb_outfile__free(o);
        return e ? mb_err_set(err, "standard output", 0, 0, "write error: %s", strerror(e)) : 0;
    }
    errno = 0;
    if (fflush(o->fp) || ferror(o->fp))
        e = mb_outfile__reason(o->cookie, errno);
    /* devices and FIFOs cannot be synced; a file that cannot be is not known to be on disk */
    if (!e && fsync(o->fd) && !(o->in_place && (errno == EINVAL || errno == EROFS || errno == ENOTSUP)))
        e = errno;
    errno = 0;
    if (fclose(o->fp) && !e) /* frees the cookie */
        e = errno ? errno : EIO;
    o->fp = NULL;
    o->cookie = NULL;
    if (!e && o->tmp && rename(o->tmp, o->target))
        e = errno;
    if (e) {
        if (o->tmp)
            unlink(o->tmp);
        mb_err_set(err, o->path, 0, 0, "write error: %s%s", strerror(e),
                   o->tmp ? " (nothing was replaced)" : "");
    }
    mb_outfile__free(o);
    return e ? -1 : 0;
}

void mb_outfile_abort(struct mb_outfile *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    if (o->fp && o->tmp)
        unlink(o->tmp);
    mb_outfile__free(o);
}

int mb_outfile_probe(const char *path, const char *may_replace, struct mb_err *err)
{
    struct mb_outfile o;
    if (mb_outfile_open(&o, path, may_replace, err))
        return -1;
    mb_outfile_abort(&o);
    return 0;
}

/* ------------------------------------------------------------------ locks */

/* Holding the lock of dir/base, remove the temporary files (.BASE.PID.N.tmp)
 * that earlier writers of it left when they were killed: no one else writes it. */
static void mb_outfile__remove_stale(const char *dir, const char *base)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, ".%.200s.", base);
    size_t np = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name, *t = n + np;
        size_t len = strlen(n);
        if (strncmp(n, prefix, np) || len < np + 7 || strcmp(n + len - 4, ".tmp"))
            continue;
        size_t pid = strspn(t, "0123456789"), seq = pid && t[pid] == '.' ? strspn(t + pid + 1, "0123456789") : 0;
        if (!seq || t + pid + 1 + seq != n + len - 4)
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, n) < (int)sizeof p)
            unlink(p);
    }
    closedir(d);
}

int mb_outlock_take(struct mb_outlock *l, const char *path, struct mb_err *err)
{
    l->fd = -1;
    l->path = NULL;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (!strcmp(path, "-") || mb_outfile__in_place(path, &st, exists))
        return 0;
    char *target = mb_outfile__target(path, exists, err);
    if (!target)
        return -1;
    char dir[PATH_MAX], name[PATH_MAX];
    const char *base;
    mb_outfile__split(target, dir, sizeof dir, &base);
    char stem[256]; /* base lives in target */
    snprintf(stem, sizeof stem, "%.200s", base);
    mb_free(target);
    int w = snprintf(name, sizeof name, "%s/.%s.lock", strcmp(dir, "/") ? dir : "", stem);
    if (w < 0 || (size_t)w >= sizeof name)
        return mb_err_set(err, path, 0, 0, "cannot lock it: the path is too long");
    /* the file may be removed by its holder between our open and our lock:
     * after locking, the path must still name the file we locked */
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return mb_err_set(err, path, 0, 0, "cannot lock it: %s (the lock file %s)", strerror(errno), name);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_SETLK, &fl) != 0) {
            int e = errno;
            struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
            long pid = fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK ? (long)who.l_pid : 0;
            close(fd);
            if (e == EACCES || e == EAGAIN) {
                char holder[64] = "";
                if (pid > 0)
                    snprintf(holder, sizeof holder, " (process %ld)", pid);
                return mb_err_set(err, path, 0, 0,
                                  "is being written by another mbsim%s: two runs given one output (two shards "
                                  "with one --tsv?) would mix their rows; give each its own file (lock: %s)",
                                  holder, name);
            }
            return mb_err_set(err, path, 0, 0, "cannot lock it: %s (the lock file %s; a file system without POSIX "
                              "locks?)", strerror(e), name);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(name, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            l->fd = fd;
            l->path = mb_strdup(name);
            mb_outfile__remove_stale(dir, stem);
            return 0;
        }
        close(fd); /* removed by the holder that just finished: take the new one */
    }
    return mb_err_set(err, path, 0, 0, "cannot lock it: the lock file %s keeps changing", name);
}

void mb_outlock_release(struct mb_outlock *l)
{
    if (l->fd >= 0) {
        unlink(l->path); /* while still holding it: a waiting process then sees another file */
        close(l->fd);
    }
    mb_free(l->path);
    l->fd = -1;
    l->path = NULL;
}

/* ------------------------------------------------------------------ stdout */

int mb_outfile_close_stdout(char *msg, size_t len)
{
    if (mb_outfile__tty_inner) { /* the escaping stream first: it flushes into the checked one */
        FILE *w = stdout;
        stdout = mb_outfile__tty_inner;
        mb_outfile__tty_inner = NULL;
        fclose(w);
    }
    int prev = ferror(stdout) != 0;
    int pending = __fpending(stdout) != 0;
    errno = 0;
    int fail = fflush(stdout) != 0;
    int first = mb_outfile__stdout ? mb_outfile__stdout->err : 0; /* before fclose frees the cookie */
    fail |= fclose(stdout) != 0;
    int e = errno;
    mb_outfile__stdout = NULL;
    /* a closed descriptor never written to (`mbsim ... >&-` printing nothing) is no error */
    if (prev || (fail && (pending || e != EBADF))) {
        e = first ? first : fail ? e : 0;
        snprintf(msg, len, "error writing standard output: %s", e ? strerror(e) : "a write failed");
        return -1;
    }
    return 0;
}
