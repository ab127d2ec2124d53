/*
 * mb_megatron_shell_words.c -- the launch-script reader's variables, the
 * fields a word expands to, positions in the text, raw words and their
 * statements (private/megatron_shell_int.h; what is read: mb_megatron_shell.c).
 */
#include "megatron_shell_int.h"
#include "mb_text.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------ variables */

void mb_sh__vals_free(struct mb_sh__val *v, int n)
{
    for (int i = 0; i < n; i++)
        mb_free(v[i].s);
    mb_free(v);
}

struct mb_sh__var *mb_sh__find(struct mb_sh *sh, const char *name, size_t len)
{
    for (int i = 0; i < sh->nvar; i++)
        if (strlen(sh->var[i].name) == len && !strncmp(sh->var[i].name, name, len))
            return &sh->var[i];
    return NULL;
}

struct mb_sh__var *mb_sh__get(struct mb_sh *sh, const char *name, size_t len)
{
    struct mb_sh__var *v = mb_sh__find(sh, name, len);
    if (v)
        return v;
    if (sh->nvar == sh->capvar)
        sh->var = mb_realloc(sh->var, (size_t)(sh->capvar = sh->capvar ? 2 * sh->capvar : 32) * sizeof *sh->var);
    v = &sh->var[sh->nvar++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%.*s", (int)len, name);
    return v;
}

/* ------------------------------------------------------------ fields */

void mb_sh__fields_free(struct mb_sh__fields *fs)
{
    for (int i = 0; i < fs->n; i++)
        mb_free(fs->f[i].s);
    mb_free(fs->f);
    mb_free(fs->bad);
    memset(fs, 0, sizeof *fs);
}

/* The field being written (a new one when none is open). */
struct mb_sh__field *mb_sh__cur(struct mb_sh__fields *fs, int line, int col)
{
    if (!fs->open) {
        if (fs->n >= MB_SH__MAX_WORDS) {
            fs->overflow = 1;
            fs->n--; /* write into the last field; the word is refused anyway */
            fs->open = 1;
            return &fs->f[fs->n++];
        }
        if (fs->n == fs->cap)
            fs->f = mb_realloc(fs->f, (size_t)(fs->cap = fs->cap ? 2 * fs->cap : 8) * sizeof *fs->f);
        struct mb_sh__field *f = &fs->f[fs->n++];
        memset(f, 0, sizeof *f);
        f->cap = 32;
        f->s = mb_malloc(f->cap);
        f->s[0] = '\0';
        f->line = line;
        f->col = col;
        fs->open = 1;
    }
    return &fs->f[fs->n - 1];
}

void mb_sh__addc(struct mb_sh__fields *fs, char c, int line, int col)
{
    struct mb_sh__field *f = mb_sh__cur(fs, line, col);
    if (f->n >= MB_SH__MAX_WORD || fs->overflow) {
        fs->overflow = 1;
        return;
    }
    if (f->n + 2 > f->cap)
        f->s = mb_realloc(f->s, f->cap *= 2);
    f->s[f->n++] = c;
    f->s[f->n] = '\0';
    f->started = 1;
}

/* End the field being written (a blank in an unquoted expansion); one never
 * started (no character, no quotes) is no word and is dropped. */
void mb_sh__cut(struct mb_sh__fields *fs)
{
    if (!fs->open)
        return;
    fs->open = 0;
    if (!fs->f[fs->n - 1].started)
        mb_free(fs->f[--fs->n].s);
}

void mb_sh__set_bad(struct mb_sh__fields *fs, int line, int col, const char *fmt, ...)
{
    if (fs->bad)
        return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fs->bad = mb_strdup(msg);
    fs->bad_line = line;
    fs->bad_col = col;
}

/* ------------------------------------------------------------ text positions */

void mb_sh__adv(struct mb_sh__pos *x)
{
    mb_text_pos_step((unsigned char)*x->p, &x->line, &x->col, &x->pend); /* columns count characters */
    x->p++;
}

/* Past the end of a quoted string, ${...}, $(...) or $((...)) that starts at
 * x (its opening character(s) included); 0, or -1 when it never ends before
 * `end`. Nesting and quotes inside are followed. */
static int mb_sh__skip_nested(struct mb_sh__pos *x, const char *end, int depth);

int mb_sh__skip_group(struct mb_sh__pos *x, const char *end)
{
    return mb_sh__skip_nested(x, end, 0);
}

/* mb_sh__skip_group at nesting `depth`: -1 unterminated, -2 deeper than MB_SH__DEPTH (no stack runs
 * out on hostile text). */
static int mb_sh__skip_nested(struct mb_sh__pos *x, const char *end, int depth)
{
    char open = *x->p;
    if (depth > MB_SH__DEPTH)
        return -2;
    if (open == '\'') {
        mb_sh__adv(x);
        while (x->p < end && *x->p != '\'')
            mb_sh__adv(x);
        if (x->p >= end)
            return -1;
        mb_sh__adv(x);
        return 0;
    }
    if (open == '"') {
        mb_sh__adv(x);
        while (x->p < end && *x->p != '"') {
            if (*x->p == '\\' && x->p + 1 < end)
                mb_sh__adv(x);
            else if (*x->p == '$' && x->p + 1 < end && (x->p[1] == '(' || x->p[1] == '{')) {
                mb_sh__adv(x);
                int rc = mb_sh__skip_nested(x, end, depth + 1);
                if (rc)
                    return rc;
                continue;
            } else if (*x->p == '`') {
                int rc = mb_sh__skip_nested(x, end, depth + 1);
                if (rc)
                    return rc;
                continue;
            }
            mb_sh__adv(x);
        }
        if (x->p >= end)
            return -1;
        mb_sh__adv(x);
        return 0;
    }
    if (open == '`') {
        mb_sh__adv(x);
        while (x->p < end && *x->p != '`') {
            if (*x->p == '\\' && x->p + 1 < end)
                mb_sh__adv(x);
            mb_sh__adv(x);
        }
        if (x->p >= end)
            return -1;
        mb_sh__adv(x);
        return 0;
    }
    /* ( or { : to the matching close */
    char close = open == '(' ? ')' : '}';
    int level = 0;
    while (x->p < end) {
        char c = *x->p;
        if (c == '\'' || c == '"' || c == '`') {
            int rc = mb_sh__skip_nested(x, end, depth + 1);
            if (rc)
                return rc;
            continue;
        }
        if (c == '\\' && x->p + 1 < end) {
            mb_sh__adv(x);
        } else if (c == open) {
            level++;
        } else if (c == close && --level == 0) {
            mb_sh__adv(x);
            return 0;
        }
        mb_sh__adv(x);
    }
    return -1;
}

/* ------------------------------------------------------------ raw words */

void mb_sh__push_raw(struct mb_sh__stmt *st, struct mb_sh__raw r)
{
    if (st->n == st->cap)
        st->w = mb_realloc(st->w, (size_t)(st->cap = st->cap ? 2 * st->cap : 16) * sizeof *st->w);
    st->w[st->n++] = r;
}

/* Length of NAME at p (letters, digits, _; not starting with a digit), 0 if none. */
size_t mb_sh__name_len(const char *p, const char *end)
{
    size_t n = 0;
    if (p >= end || !(isalpha((unsigned char)*p) || *p == '_'))
        return 0;
    while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_'))
        n++;
    return n;
}

/* The offset of "=(" or "+=(" after a leading NAME in a word at p, or 0. */
static size_t mb_sh__array_open(const char *p, const char *end)
{
    size_t n = mb_sh__name_len(p, end);
    if (!n)
        return 0;
    if (p + n + 1 < end && p[n] == '=' && p[n + 1] == '(')
        return n + 1;
    if (p + n + 2 < end && p[n] == '+' && p[n + 1] == '=' && p[n + 2] == '(')
        return n + 2;
    return 0;
}

/* Skip blanks, backslash-newlines and comments (not newlines when keep_nl). */
static void mb_sh__blanks(struct mb_sh__pos *x, const char *end, int keep_nl)
{
    while (x->p < end) {
        if (*x->p == ' ' || *x->p == '\t' || (!keep_nl && *x->p == '\n'))
            mb_sh__adv(x);
        else if (*x->p == '\\' && x->p + 1 < end && x->p[1] == '\n')
            mb_sh__adv(x), mb_sh__adv(x);
        else if (*x->p == '#')
            while (x->p < end && *x->p != '\n')
                mb_sh__adv(x);
        else
            return;
    }
}

/* One raw word at x (not blank): to an unquoted blank, newline, `;` or the
 * end; an array assignment to its closing parenthesis. */
static int mb_sh__raw_word(struct mb_sh *sh, struct mb_sh__pos *x, const char *end, struct mb_sh__raw *out)
{
    struct mb_sh__pos start = *x;
    size_t arr = mb_sh__array_open(x->p, end);
    if (*x->p == ';') {
        mb_sh__adv(x);
    } else if (arr) {
        for (size_t i = 0; i < arr; i++)
            mb_sh__adv(x);
        if (mb_sh__skip_group(x, end))
            return mb_err_set(sh->err, sh->file, start.line, start.col, "%.*s: the array's '(' has no ')' (or nests deeper than 64)",
                              (int)arr, start.p);
    } else {
        while (x->p < end && !strchr(" \t\n;", *x->p)) {
            char c = *x->p;
            if (c == '\\' && x->p + 1 < end && x->p[1] == '\n')
                break; /* a continuation ends the word */
            if (c == '\\' && x->p + 1 < end) {
                mb_sh__adv(x), mb_sh__adv(x);
                continue;
            }
            if (c == '\'' || c == '"' || c == '`' || (c == '$' && x->p + 1 < end && strchr("({", x->p[1]))) {
                struct mb_sh__pos q = *x;
                if (c == '$')
                    mb_sh__adv(x);
                int rc = mb_sh__skip_group(x, end);
                if (rc)
                    return mb_err_set(sh->err, sh->file, q.line, q.col, "%s %s", rc == -2 ? "nested deeper than 64:"
                                      : "unterminated", c == '\'' || c == '"' ? (c == '"' ? "\" quote" : "' quote")
                                      : c == '`' ? "` command substitution" : "$ expansion");
                continue;
            }
            if (c == '(' || c == ')' || c == '{' || c == '}')
                if (x->p == start.p || c == '(' || c == ')')
                    return mb_err_set(sh->err, sh->file, x->line, x->col, "'%c': subshells, groups and "
                                      "functions are not read by mbsim import (it reads assignments, arrays and "
                                      "if/else); write the command without them", c);
            mb_sh__adv(x);
        }
    }
    *out = (struct mb_sh__raw){start.p, x->p, start.line, start.col};
    return 0;
}

/* The statements of [p, end): lists of raw words, split at newlines; on -1 nothing is left allocated. */
int mb_sh__statements(struct mb_sh *sh, struct mb_sh__pos x, const char *end, struct mb_sh__stmt **out,
                             int *n)
{
    int cap = 0;
    *out = NULL;
    *n = 0;
    struct mb_sh__stmt cur = {0};
    for (;;) {
        mb_sh__blanks(&x, end, 1);
        if (x.p >= end || *x.p == '\n') {
            if (cur.n) {
                if (*n == cap)
                    *out = mb_realloc(*out, (size_t)(cap = cap ? 2 * cap : 32) * sizeof **out);
                (*out)[(*n)++] = cur;
                cur = (struct mb_sh__stmt){0};
            }
            if (x.p >= end)
                return 0;
            mb_sh__adv(&x);
            continue;
        }
        struct mb_sh__raw r;
        if (mb_sh__raw_word(sh, &x, end, &r)) { /* nothing is left allocated on an error */
            mb_free(cur.w);
            mb_sh__stmts_free(*out, *n);
            *out = NULL;
            *n = 0;
            return -1;
        }
        mb_sh__push_raw(&cur, r);
    }
}

int mb_sh__word_is(const struct mb_sh__raw *r, const char *w)
{
    return (size_t)(r->e - r->s) == strlen(w) && !strncmp(r->s, w, strlen(w));
}

int mb_sh__is_control(const struct mb_sh__raw *w)
{
    static const char *const kw[] = {"if", "then", "elif", "else", "fi", NULL};
    for (int i = 0; kw[i]; i++)
        if (mb_sh__word_is(w, kw[i]))
            return 1;
    return 0;
}

/* A word a command line continues with: a flag (--name) or a Bridge override (+a.b=v). */
static int mb_sh__continues(const struct mb_sh__raw *r)
{
    const char *p = r->s;
    if (r->e - p > 2 && p[0] == '-' && p[1] == '-')
        return 1;
    while (p < r->e && *p == '+')
        p++;
    size_t n = mb_sh__name_len(p, r->e);
    if (!n || p + n >= r->e || p[n] != '.')
        return 0;
    const char *eq = memchr(p, '=', (size_t)(r->e - p));
    return eq && eq > p + n + 1;
}

/* A line that starts with a flag or an override continues the command before
 * it, as if that line ended in a backslash: text copied from documentation
 * often loses them (bash would run the line as a command of its own). */
void mb_sh__join_lines(struct mb_sh__stmt *st, int *n)
{
    int k = 0;
    for (int i = 0; i < *n; i++) {
        if (k > 0 && mb_sh__continues(&st[i].w[0]) && !mb_sh__is_control(&st[k - 1].w[0])) {
            for (int j = 0; j < st[i].n; j++)
                mb_sh__push_raw(&st[k - 1], st[i].w[j]);
            mb_free(st[i].w);
            continue;
        }
        st[k++] = st[i];
    }
    *n = k;
}

void mb_sh__stmts_free(struct mb_sh__stmt *st, int n)
{
    for (int i = 0; i < n; i++)
        mb_free(st[i].w);
    mb_free(st);
}

