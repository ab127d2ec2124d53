/*
 * mb_util.c -- allocation wrappers, error context, float helpers, data dir,
 * seeded PRNG. See mb_util.h.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "mb_util.h"
#include "mb_text.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void mb_util__oom(size_t n)
{
    fprintf(stderr, "mbsim: out of memory allocating %zu bytes\n", n);
    abort();
}

void *mb_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        mb_util__oom(n);
    return p;
}

void *mb_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        mb_util__oom(count * size);
    return p;
}

void *mb_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        mb_util__oom(n);
    return q;
}

char *mb_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = mb_malloc(n);
    memcpy(d, s, n);
    return d;
}

void mb_free(void *p) { free(p); }

void mb_err_clear(struct mb_err *e)
{
    if (e)
        memset(e, 0, sizeof *e);
}

int mb_err_set(struct mb_err *e, const char *file, int line, int col, const char *fmt, ...)
{
    if (!e)
        return -1;
    if (e->count++ > 0)
        return -1; /* first error wins */
    va_list ap;
    char raw[MB_ERR_MSG_LEN];
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* bytes of the input the message quotes: invalid UTF-8 and control characters as \xNN (mb_text.h) */
    mb_text_escape(e->msg, sizeof e->msg, raw, NULL);
    mb_text_escape(e->file, sizeof e->file, file ? file : "", NULL);
    e->line = line;
    e->col = col;
    return -1;
}

void mb_err_format(const struct mb_err *e, char *buf, size_t len)
{
    if (!e || !e->count) {
        snprintf(buf, len, "no error");
    } else if (e->file[0] && e->line > 0) {
        snprintf(buf, len, "%s:%d:%d: %s", e->file, e->line, e->col, e->msg);
    } else if (e->file[0]) {
        snprintf(buf, len, "%s: %s", e->file, e->msg);
    } else {
        snprintf(buf, len, "%s", e->msg);
    }
}

int mb_dbl_eq(double a, double b)
{
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    if (m < 1.0)
        m = 1.0;
    return fabs(a - b) <= MB_EPS * m;
}

double mb_dbl_sub_clamp(double a, double b)
{
    double r = a - b;
    if (r < 0 || mb_dbl_eq(a, b))
        return 0.0;
    return r;
}

int mb_dbl_is_whole(double v, double lo, double hi)
{
    return isfinite(v) && v >= lo && v <= hi && v == floor(v);
}

char *mb_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = mb_malloc(a + b + 2);
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

char *mb_path_absolute(const char *path)
{
    char buf[PATH_MAX], cwd[PATH_MAX];
    if (!path)
        return NULL;
    if (path[0] == '/')
        return mb_strdup(path);
    if (realpath(path, buf))
        return mb_strdup(buf);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    if (!getcwd(cwd, sizeof cwd))
        return mb_strdup(path);
    return mb_path_join(cwd, path);
}

int mb_file_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int mb_dir_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A data directory holds the shipped model cards; that is what the CLI checks too. */
static int mb_util__has_data(const char *dir)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/workloads/models", dir);
    return n > 0 && (size_t)n < sizeof path && mb_dir_exists(path);
}

/* <directory of the running binary>/MBSIM_BIN_TO_DATA, e.g. <prefix>/bin/../share/mbsim:
 * an installed tree found wherever `cmake --install --prefix` put it. */
static char mb__exe_data[PATH_MAX];
static pthread_once_t mb__exe_once = PTHREAD_ONCE_INIT;

static void mb_util__exe_data_init(void)
{
#ifdef MBSIM_BIN_TO_DATA
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    int m = snprintf(mb__exe_data, sizeof mb__exe_data, "%s/%s", exe, MBSIM_BIN_TO_DATA);
    if (m < 0 || (size_t)m >= sizeof mb__exe_data)
        mb__exe_data[0] = '\0';
#endif
}

const char *mb_data_dir_origin(void)
{
    const char *d = getenv("MBSIM_DATA_DIR");
    if (d && *d)
        return "$MBSIM_DATA_DIR";
#ifdef MBSIM_SOURCE_DIR
    const char *no_src = getenv("MBSIM_NO_SOURCE_TREE");
    if (!(no_src && *no_src && strcmp(no_src, "0")) && mb_util__has_data(MBSIM_SOURCE_DIR))
        return "the source tree mbsim was built from";
#endif
    pthread_once(&mb__exe_once, mb_util__exe_data_init);
    if (mb__exe_data[0] && mb_util__has_data(mb__exe_data))
        return "the install tree next to the binary";
#ifdef MBSIM_INSTALL_DATADIR
    return "the install prefix mbsim was configured with";
#else
    return "the current directory";
#endif
}

const char *mb_data_dir(void)
{
    const char *d = getenv("MBSIM_DATA_DIR");
    if (d && *d)
        return d;
#ifdef MBSIM_SOURCE_DIR
    /* MBSIM_NO_SOURCE_TREE=1: behave as if the source tree were gone (a test
     * hook for the installed binary; see tests/cli/install.sh). */
    const char *no_src = getenv("MBSIM_NO_SOURCE_TREE");
    if (!(no_src && *no_src && strcmp(no_src, "0")) && mb_util__has_data(MBSIM_SOURCE_DIR))
        return MBSIM_SOURCE_DIR;
#endif
    pthread_once(&mb__exe_once, mb_util__exe_data_init);
    if (mb__exe_data[0] && mb_util__has_data(mb__exe_data))
        return mb__exe_data;
#ifdef MBSIM_INSTALL_DATADIR
    return MBSIM_INSTALL_DATADIR;
#else
    return ".";
#endif
}

void mb_rng_seed(struct mb_rng *r, unsigned long long seed) { r->s = seed; }

double mb_rng_uniform(struct mb_rng *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014) */
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

const char *mb_plural(long long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

unsigned long long mb_hash64(const void *p, size_t n, unsigned long long h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Optimal string alignment distance of a and b (edits: insert, delete,
 * substitute, swap two neighbours), or max + 1 once it exceeds max. */
int mb_edit_distance(const char *a, const char *b, int max)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (abs(la - lb) > max || la >= 96 || lb >= 96)
        return max + 1;
    int d[3][97]; /* rows i-2, i-1, i (mod 3) */
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        int *r = d[i % 3], *p = d[(i - 1) % 3], *pp = d[(i + 1) % 3], low = i;
        r[0] = i;
        for (int j = 1; j <= lb; j++) {
            int v = p[j - 1] + (a[i - 1] != b[j - 1]);
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (r[j - 1] + 1 < v)
                v = r[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            r[j] = v;
            if (v < low)
                low = v;
        }
        if (low > max)
            return max + 1;
    }
    return d[la % 3][lb];
}
