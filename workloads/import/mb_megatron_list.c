/*
 * mb_megatron_list.c -- the settings list the readers of mb_megatron_read
 * fill, and the file as text (private/megatron_list.h): shared by the flag,
 * override and log readers (mb_megatron_read.c) and the YAML reader
 * (mb_megatron_yaml.c), which the command reader calls for a --config-file.
 */
#include "megatron_list.h"
#include "mb_input.h"

#include <ctype.h>
#include <string.h>

/* The file as text: a regular file within the input limit (mb_input), no NUL
 * byte; a UTF-8 byte order mark (an editor's, not part of the first flag)
 * removed, and every line end -- LF, CRLF, or a lone CR (classic Mac OS, or a
 * last line ending in a bare CR) -- made one LF, so that positions, comments,
 * continuations and the log reader see one kind. */
char *mb_mgr__read_file(const char *path, struct mb_err *err)
{
    char *buf;
    size_t n;
    if (mb_input_read(path, "Megatron arguments as text", 0, &buf, &n, err))
        return NULL;
    if (strlen(buf) != n) {
        mb_free(buf);
        mb_err_set(err, path, 0, 0, "binary file (a NUL byte); expected Megatron arguments as text");
        return NULL;
    }
    size_t bom = n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0; /* a UTF-8 byte order mark is skipped */
    memmove(buf, buf + bom, n - bom + 1);
    mb_input_unify_line_ends(buf, n - bom);
    return buf;
}

struct mb_megatron_arg *mb_mgr__add(struct mb_megatron_args *a, const char *name, const char *written, int line,
                                    int col)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->a = mb_realloc(a->a, (size_t)a->cap * sizeof *a->a);
    }
    struct mb_megatron_arg *g = &a->a[a->n++];
    memset(g, 0, sizeof *g);
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < sizeof g->name; p++)
        g->name[k++] = *p == '-' ? '_' : (char)tolower((unsigned char)*p);
    g->name[k] = '\0';
    snprintf(g->written, sizeof g->written, "%s", written);
    g->line = line;
    g->col = col;
    return g;
}

void mb_mgr__val(struct mb_megatron_arg *g, const char *v, size_t len)
{
    while (len && isspace((unsigned char)*v))
        v++, len--;
    while (len && isspace((unsigned char)v[len - 1]))
        len--;
    if (len >= 2 && (v[0] == '\'' || v[0] == '"') && v[len - 1] == v[0])
        v++, len -= 2;
    g->val = mb_realloc(g->val, (size_t)(g->nval + 1) * sizeof *g->val);
    char *s = mb_malloc(len + 1);
    memcpy(s, v, len);
    s[len] = '\0';
    g->val[g->nval++] = s;
}

