/*
 * test_doc_util.h -- a generated section of a doc between two marker lines: the tests whose tables
 * generate documentation (test_keys: docs/scenario-format.md; test_report_keys: docs/cli.md) check
 * that the section is what the table renders, and rewrite it with --regen-doc.
 */
#ifndef MB_TEST_DOC_UTIL_H
#define MB_TEST_DOC_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static inline char *doc_read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

/* What write(fp) renders, as a malloc'd string. */
static inline char *doc_render(void (*write)(FILE *))
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    write(m);
    fclose(m);
    return text;
}

/* The section of doc between the line begin (with its newline) and end: a pointer into doc, its
 * length in *n; NULL when a marker is missing. */
static inline const char *doc_section(const char *doc, const char *begin, const char *end, size_t *n)
{
    const char *b = doc ? strstr(doc, begin) : NULL, *e = b ? strstr(b, end) : NULL;
    if (!e)
        return NULL;
    b += strlen(begin);
    *n = (size_t)(e - b);
    return b;
}

/* Whether doc's section between the markers is exactly what write renders: the section, or NULL
 * (*why says "no markers" or "stale"). */
static inline const char *doc_section_current(const char *doc, const char *begin, const char *end,
                                              void (*write)(FILE *), const char **why)
{
    size_t n;
    const char *b = doc_section(doc, begin, end, &n);
    char *gen = doc_render(write);
    int same = b && n == strlen(gen) && !strncmp(b, gen, n);
    free(gen);
    *why = !b ? "lacks the markers" : "is stale";
    return same ? b : NULL;
}

/* Rewrite path's section between the markers with what write renders: 0, or 1 after a message. */
static inline int doc_regen(const char *path, const char *begin, const char *end, void (*write)(FILE *))
{
    char *doc = doc_read_all(path), *gen = doc_render(write);
    size_t n;
    const char *b = doc_section(doc, begin, end, &n);
    FILE *f = b ? fopen(path, "wb") : NULL;
    int rc = 1;
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, b ? "cannot write" : "no markers");
    } else {
        fwrite(doc, 1, (size_t)(b - doc), f);
        fputs(gen, f);
        fputs(b + n, f);
        fclose(f);
        printf("wrote the generated section of %s\n", path);
        rc = 0;
    }
    free(doc);
    free(gen);
    return rc;
}

#endif
