/*
 * mb_input.c -- safe opening and reading of input files. See mb_input.h.
 *
 * open(O_NONBLOCK) so that a FIFO without a writer does not block, then
 * fstat on the descriptor (no window between the check and the read).
 */
#include "mb_input.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The files read while tracking is on (mb_input_track): device and inode. */
static pthread_mutex_t mb_input__lock = PTHREAD_MUTEX_INITIALIZER;
static int mb_input__tracking;
static struct mb_input__id {
    unsigned long long dev, ino;
} *mb_input__read;
static size_t mb_input__n_read, mb_input__cap_read;

void mb_input_track(int on)
{
    pthread_mutex_lock(&mb_input__lock);
    mb_input__tracking = on != 0;
    if (!on) {
        mb_free(mb_input__read);
        mb_input__read = NULL;
        mb_input__n_read = mb_input__cap_read = 0;
    }
    pthread_mutex_unlock(&mb_input__lock);
}

static void mb_input__record(const struct stat *st)
{
    pthread_mutex_lock(&mb_input__lock);
    size_t i = 0;
    while (mb_input__tracking && i < mb_input__n_read &&
           !(mb_input__read[i].dev == (unsigned long long)st->st_dev &&
             mb_input__read[i].ino == (unsigned long long)st->st_ino))
        i++;
    if (mb_input__tracking && i == mb_input__n_read) {
        if (mb_input__n_read == mb_input__cap_read) {
            mb_input__cap_read = mb_input__cap_read ? 2 * mb_input__cap_read : 64;
            mb_input__read = mb_realloc(mb_input__read, mb_input__cap_read * sizeof *mb_input__read);
        }
        mb_input__read[mb_input__n_read++] =
            (struct mb_input__id){(unsigned long long)st->st_dev, (unsigned long long)st->st_ino};
    }
    pthread_mutex_unlock(&mb_input__lock);
}

int mb_input_was_read(unsigned long long dev, unsigned long long ino)
{
    int found = 0;
    pthread_mutex_lock(&mb_input__lock);
    for (size_t i = 0; i < mb_input__n_read && !found; i++)
        found = mb_input__read[i].dev == dev && mb_input__read[i].ino == ino;
    pthread_mutex_unlock(&mb_input__lock);
    return found;
}

/* Open and check; returns a descriptor (blocking again) or -1 with err set. */
static int mb_input__fd(const char *path, const char *what, struct mb_err *err)
{
    struct stat st;
    if (!path || !*path)
        return mb_err_set(err, NULL, 0, 0, "empty file name, expected %s", what);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return mb_err_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
    const char *bad = NULL;
    if (fstat(fd, &st))
        bad = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        bad = "is a directory";
    else if (!S_ISREG(st.st_mode))
        bad = "is not a regular file (a FIFO, socket or device?)";
    if (bad) {
        close(fd);
        return mb_err_set(err, path, 0, 0, "%s, expected %s", bad, what);
    }
    if ((unsigned long long)st.st_size > MB_INPUT_MAX_BYTES) {
        close(fd);
        return mb_err_set(err, path, 0, 0, "%lld bytes, larger than the %zu bytes mbsim reads as %s",
                          (long long)st.st_size, MB_INPUT_MAX_BYTES, what);
    }
    mb_input__record(&st);
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

FILE *mb_input_open(const char *path, const char *what, int allow_stdin, struct mb_err *err)
{
    if (allow_stdin && path && !strcmp(path, "-"))
        return stdin;
    int fd = mb_input__fd(path, what, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        mb_err_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
        close(fd);
    }
    return f;
}

size_t mb_input_unify_line_ends(char *buf, size_t n)
{
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        buf[w++] = buf[r] == '\r' ? '\n' : buf[r];
        if (buf[r] == '\r' && r + 1 < n && buf[r + 1] == '\n')
            r++;
    }
    buf[w] = '\0';
    return w;
}

int mb_input_check(const char *path, const char *what, struct mb_err *err)
{
    int fd = mb_input__fd(path, what, err);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

int mb_input_slurp(FILE *f, const char *name, char **buf_p, size_t *len_p, struct mb_err *err)
{
    size_t cap = 1 << 16, n = 0, got;
    char *buf = mb_malloc(cap);
    *buf_p = NULL;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n > MB_INPUT_MAX_BYTES) {
            mb_free(buf);
            return mb_err_set(err, name, 0, 0, "more than the %zu bytes mbsim reads as one input",
                              MB_INPUT_MAX_BYTES);
        }
        if (cap - n < 4096) {
            cap *= 2;
            buf = mb_realloc(buf, cap);
        }
    }
    if (ferror(f)) {
        mb_free(buf);
        return mb_err_set(err, name, 0, 0, "read error: %s", strerror(errno));
    }
    buf[n] = '\0';
    *buf_p = buf;
    if (len_p)
        *len_p = n;
    return 0;
}

int mb_input_read(const char *path, const char *what, int allow_stdin, char **buf_p, size_t *len_p,
                  struct mb_err *err)
{
    *buf_p = NULL;
    FILE *f = mb_input_open(path, what, allow_stdin, err);
    if (!f)
        return -1;
    int rc = mb_input_slurp(f, path, buf_p, len_p, err);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* zlib's message without the stream name it prefixes. */
static int mb_input__gz_err(gzFile gz, const char *path, struct mb_err *err)
{
    int code = 0;
    const char *msg = gzerror(gz, &code);
    const char *colon = msg && msg[0] == '<' ? strstr(msg, ">: ") : NULL;
    if (colon) /* gzdopen names the stream "<fd:N>" */
        msg = colon + 3;
    return mb_err_set(err, path, 0, 0, "gzip error: %s (truncated file?)", msg && *msg ? msg : "read failed");
}

static int mb_input__gz_all(gzFile gz, const char *path, char **buf_p, size_t *len_p, struct mb_err *err)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = mb_malloc(cap);
    for (;;) {
        if (cap - n < (1 << 15)) {
            cap *= 2;
            buf = mb_realloc(buf, cap);
        }
        int r = gzread(gz, buf + n, (unsigned)(cap - n - 1));
        if (r < 0 || (r == 0 && !gzeof(gz))) {
            mb_free(buf);
            return mb_input__gz_err(gz, path, err);
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > MB_INPUT_MAX_BYTES) {
            mb_free(buf);
            return mb_err_set(err, path, 0, 0, "decompresses to more than the %zu bytes mbsim reads as one input",
                              MB_INPUT_MAX_BYTES);
        }
    }
    int code = Z_OK;
    gzerror(gz, &code);
    if (code != Z_OK) { /* a truncated gzip stream ends with Z_BUF_ERROR */
        mb_free(buf);
        return mb_input__gz_err(gz, path, err);
    }
    buf[n] = '\0';
    *buf_p = buf;
    if (len_p)
        *len_p = n;
    return 0;
}

int mb_input_read_gz(const char *path, const char *what, int allow_stdin, char **buf_p, size_t *len_p,
                     struct mb_err *err)
{
    *buf_p = NULL;
    FILE *f = mb_input_open(path, what, allow_stdin, err);
    if (!f)
        return -1;
    int fd = dup(fileno(f));
    if (f != stdin)
        fclose(f);
    gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!gz) {
        if (fd >= 0)
            close(fd);
        return mb_err_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
    }
    int rc = mb_input__gz_all(gz, path, buf_p, len_p, err);
    gzclose(gz);
    return rc;
}
