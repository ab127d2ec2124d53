/*
 * tsv.c -- tab-separated tables read with libcsv (tsv.h). Lines are fed to
 * the parser one at a time and each is finished as one record, so every row
 * knows its line for messages.
 */
#include "tsv.h"

#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_input.h"
#include "mb_util.h"

struct mb_tsv__rec {
    char **f;
    int n, cap;
};

static void mb_tsv__field(void *data, size_t len, void *ctx)
{
    struct mb_tsv__rec *r = ctx;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->f = mb_realloc(r->f, (size_t)r->cap * sizeof *r->f);
    }
    char *s = mb_malloc(len + 1);
    if (len)
        memcpy(s, data, len);
    s[len] = 0;
    r->f[r->n++] = s;
}

static void mb_tsv__free_rec(struct mb_tsv__rec *r)
{
    for (int i = 0; i < r->n; i++)
        mb_free(r->f[i]);
    mb_free(r->f);
    r->f = NULL;
    r->n = r->cap = 0;
}

/* One line as one record into r; -1 when libcsv rejects it. */
static int mb_tsv__line(struct csv_parser *p, char *line, size_t n, struct mb_tsv__rec *r)
{
    if (csv_parse(p, line, n, mb_tsv__field, NULL, r) != n)
        return -1;
    return csv_fini(p, mb_tsv__field, NULL, r);
}

static void mb_tsv__add(struct mb_tsv *t, struct mb_tsv__rec *r, int line, size_t *cap)
{
    if (t->nrow == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        t->cell = mb_realloc(t->cell, *cap * sizeof *t->cell);
        t->line = mb_realloc(t->line, *cap * sizeof *t->line);
    }
    t->line[t->nrow] = line;
    t->cell[t->nrow++] = r->f;
    r->f = NULL;
    r->n = r->cap = 0;
}

int mb_tsv_read(const char *path, struct mb_tsv *t, char *msg, size_t len)
{
    memset(t, 0, sizeof *t);
    struct mb_err err;
    mb_err_clear(&err);
    /* a regular file of bounded size, recorded as an input (mb_input.h) */
    FILE *fp = mb_input_open(path, "a tab-separated table", 1, &err);
    if (!fp) {
        mb_err_format(&err, msg, len);
        return -1;
    }
    struct csv_parser p;
    csv_init(&p, CSV_APPEND_NULL);
    csv_set_delim(&p, '\t');
    char *buf = NULL;
    size_t bcap = 0, rcap = 0;
    ssize_t got;
    int line = 0, rc = 0;
    struct mb_tsv__rec r = {0};
    while (!rc && (got = getline(&buf, &bcap, fp)) > 0) {
        line++;
        while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
            buf[--got] = 0;
        if (!got || buf[0] == '#') /* a sweep TSV's provenance line (mb_sweep.h) */
            continue;
        if (mb_tsv__line(&p, buf, (size_t)got, &r)) {
            snprintf(msg, len, "%s:%d: not a tab-separated row (%s)", path, line, csv_strerror(csv_error(&p)));
            rc = -1;
        } else if (!t->col) {
            t->col = r.f;
            t->ncol = r.n;
            r.f = NULL;
            r.n = r.cap = 0;
        } else if (r.n != t->ncol) {
            snprintf(msg, len, "%s:%d: expected %d tab-separated fields (as the header on line 1), got %d", path,
                     line, t->ncol, r.n);
            rc = -1;
        } else {
            mb_tsv__add(t, &r, line, &rcap);
        }
        mb_tsv__free_rec(&r);
    }
    if (!rc && !t->col) {
        snprintf(msg, len, "%s: empty: expected a header row", path);
        rc = -1;
    }
    free(buf);
    csv_free(&p);
    if (fp != stdin)
        fclose(fp);
    if (rc)
        mb_tsv_free(t);
    return rc;
}

int mb_tsv_col(const struct mb_tsv *t, const char *name)
{
    for (int c = 0; c < t->ncol; c++)
        if (!strcmp(t->col[c], name))
            return c;
    return -1;
}

void mb_tsv_free(struct mb_tsv *t)
{
    for (size_t r = 0; r < t->nrow; r++) {
        for (int c = 0; c < t->ncol; c++)
            mb_free(t->cell[r][c]);
        mb_free(t->cell[r]);
    }
    mb_free(t->cell);
    mb_free(t->line);
    for (int c = 0; t->col && c < t->ncol; c++)
        mb_free(t->col[c]);
    mb_free(t->col);
    memset(t, 0, sizeof *t);
}
