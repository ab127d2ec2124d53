/*
 * mb_calib_cache.c -- calibration tables loaded once per process
 * (mb_calib_shared): every simulation of a sweep, a validation or a tune run
 * gets its own view of one parsed table instead of re-reading the YAML.
 */
#include "mb_calib.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct mb_calib__entry {
    char *gpu, *path;             /* the mb_calib_load arguments ("" for NULL) */
    long long size, mtime_ns;     /* the file version it was loaded from (-1: no path given) */
    struct mb_calib *cal;
    struct mb_calib__entry *next;
};

static pthread_mutex_t mb_calib__lock = PTHREAD_MUTEX_INITIALIZER;
static struct mb_calib__entry *mb_calib__entries;

/* Size and modification time of path, or -1 / -1 (no path, or unreadable:
 * the loader reports it). */
static void mb_calib__version(const char *path, long long *size, long long *mtime_ns)
{
    struct stat st;
    *size = *mtime_ns = -1;
    if (path && stat(path, &st) == 0) {
        *size = (long long)st.st_size;
        *mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
}

int mb_calib_shared(const char *gpu, const char *path, struct mb_calib **view, struct mb_err *err)
{
    long long size, mtime;
    mb_calib__version(path, &size, &mtime);
    const char *g = gpu ? gpu : "", *p = path ? path : "";
    pthread_mutex_lock(&mb_calib__lock);
    struct mb_calib__entry *e = mb_calib__entries;
    while (e && !(strcmp(e->gpu, g) == 0 && strcmp(e->path, p) == 0 && e->size == size && e->mtime_ns == mtime))
        e = e->next;
    if (!e) {
        struct mb_calib *c;
        if (mb_calib_load(gpu, path, &c, err)) {
            pthread_mutex_unlock(&mb_calib__lock);
            *view = NULL;
            return -1;
        }
        e = mb_calloc(1, sizeof *e);
        e->gpu = mb_strdup(g);
        e->path = mb_strdup(p);
        e->size = size;
        e->mtime_ns = mtime;
        e->cal = c;
        e->next = mb_calib__entries;
        mb_calib__entries = e;
    }
    *view = mb_calib_view(e->cal);
    pthread_mutex_unlock(&mb_calib__lock);
    return 0;
}

void mb_calib_shared_clear(void)
{
    pthread_mutex_lock(&mb_calib__lock);
    while (mb_calib__entries) {
        struct mb_calib__entry *e = mb_calib__entries;
        mb_calib__entries = e->next;
        mb_calib_free(e->cal);
        mb_free(e->gpu);
        mb_free(e->path);
        mb_free(e);
    }
    pthread_mutex_unlock(&mb_calib__lock);
}
