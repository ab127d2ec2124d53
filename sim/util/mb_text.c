/*
 * mb_text.c -- user text made safe to print (mb_text.h).
 */
#define _GNU_SOURCE /* fopencookie */
#include "mb_text.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Length of the well-formed UTF-8 sequence of a printable character at s (n bytes available), 0 when
 * s[0] starts none (RFC 3629, table 3-7 of the Unicode standard), -1 when s holds the start of one that
 * n bytes cut short. */
static int mb_text__utf8(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    int len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -1;
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
            return 0;
    }
    if (c == 0xC2 && s[1] <= 0x9F) /* a C1 control */
        return 0;
    return len;
}

/* Bytes of src[0..n) that make one output unit at src: 1 for a byte kept or escaped, the sequence's
 * length for UTF-8; *esc set when the byte is escaped. -1 when n cuts a sequence short. */
static int mb_text__unit(const unsigned char *s, size_t n, const char *keep, int *esc)
{
    *esc = 0;
    if (s[0] >= 0x20 && s[0] < 0x7F)
        return 1;
    if (s[0] < 0x80 && s[0] && keep && strchr(keep, s[0]))
        return 1;
    int u = s[0] >= 0x80 ? mb_text__utf8(s, n) : 0;
    if (u != 0)
        return u;
    *esc = 1;
    return 1;
}

/* Escape s[0..n) into dst (cap bytes, NUL-terminated): stops where the output is full or, unless final,
 * at a UTF-8 sequence that n cuts short (final: its bytes escaped one by one). Returns the length
 * written; *used = the input bytes consumed. */
static size_t mb_text__escape_n(char *dst, size_t cap, const unsigned char *s, size_t n, const char *keep, int final,
                                size_t *used)
{
    size_t o = 0, i = 0;
    while (i < n) {
        int esc, u = mb_text__unit(s + i, n - i, keep, &esc);
        if (u < 0 && !final)
            break;
        if (u < 0)
            u = 1, esc = 1;
        size_t w = esc ? 4 : (size_t)u;
        if (o + w >= cap)
            break;
        if (esc)
            snprintf(dst + o, 5, "\\x%02X", s[i]);
        else
            memcpy(dst + o, s + i, (size_t)u);
        o += w, i += (size_t)u;
    }
    dst[o] = 0;
    *used = i;
    return o;
}

size_t mb_text_escape(char *dst, size_t len, const char *src, const char *keep)
{
    size_t used;
    if (!len)
        return 0;
    return mb_text__escape_n(dst, len, (const unsigned char *)src, strlen(src), keep, 1, &used);
}

struct mb_text__stream {
    FILE *to;
    char keep[8];          /* control characters written as they are */
    unsigned char pend[4]; /* the start of a UTF-8 sequence the last write cut */
    size_t n_pend;
};

/* Escape and write buf[0..n) (n <= 260; after the pending bytes) with one fwrite; a sequence cut at the
 * end is kept pending unless final. */
static void mb_text__put(struct mb_text__stream *k, const unsigned char *buf, size_t n, int final)
{
    char out[4 * 260 + 1];
    size_t used, o = mb_text__escape_n(out, sizeof out, buf, n, k->keep, final, &used);
    assert(n - used < sizeof k->pend); /* out holds 4 per byte: only a cut sequence is left */
    memcpy(k->pend, buf + used, n - used);
    k->n_pend = n - used;
    fwrite(out, 1, o, k->to);
}

static ssize_t mb_text__write(void *cookie, const char *buf, size_t n)
{
    struct mb_text__stream *k = cookie;
    unsigned char tmp[4 + 256];
    size_t done = 0;
    while (done < n) { /* the pending bytes joined with the next ones, 256 at a time */
        size_t take = n - done < 256 ? n - done : 256;
        memcpy(tmp, k->pend, k->n_pend);
        memcpy(tmp + k->n_pend, buf + done, take);
        size_t all = k->n_pend + take;
        k->n_pend = 0;
        mb_text__put(k, tmp, all, 0);
        done += take;
    }
    return (ssize_t)n;
}

static int mb_text__close(void *cookie)
{
    struct mb_text__stream *k = cookie;
    mb_text__put(k, k->pend, k->n_pend, 1);
    int rc = fflush(k->to);
    free(k);
    return rc ? -1 : 0;
}

FILE *mb_text_escape_stream(FILE *to, const char *keep)
{
    /* calloc, not mb_calloc: mb_util.c includes this module (no circle between files) */
    struct mb_text__stream *k = calloc(1, sizeof *k);
    FILE *fp = NULL;
    if (k) {
        k->to = to;
        snprintf(k->keep, sizeof k->keep, "%s", keep ? keep : "");
        cookie_io_functions_t io = {NULL, mb_text__write, NULL, mb_text__close};
        fp = fopencookie(k, "w", io);
    }
    if (!fp) {
        fprintf(stderr, "mbsim: out of memory (escaping stream)\n");
        abort();
    }
    setvbuf(fp, NULL, _IOLBF, 0); /* line by line: notes stay in order with what is printed between them */
    return fp;
}
