/*
 * mb_megatron_shell.c -- the training command of a bash launch script, as
 * bash would run it, without running anything (private/megatron_shell.h).
 *
 * Megatron-LM's example scripts (examples/llama/train_llama3_8b_h100_fp8.sh,
 * examples/mixtral/train_mixtral_8x7b_distributed.sh at NVIDIA/Megatron-LM
 * d98e8a64) build the command from variables and arrays:
 *
 *     NUM_LAYERS=32
 *     MODEL_ARGS=( --num-layers $NUM_LAYERS ... )    # arrays, comments inside
 *     TRAINING_ARGS+=("${DDP_ARGS[@]}")              # appended
 *     if [[ "$DTYPE" == "fp8" ]]; then DTYPE_ARGS+=( "--fp8-format hybrid" ); fi
 *     torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_ARGS[@]} ...
 *
 * Read, with bash's meaning (the bash manual, "Shell Expansions"):
 *  - statements end at a newline (not after a backslash); `;` inside an
 *    if/then/else/fi line separates its parts, elsewhere it stays a word
 *    (mb_megatron_read.c ends the command there, with a note);
 *  - assignments NAME=word, NAME+=word, NAME=( words ), NAME+=( words ), after
 *    `export`, `declare`, `local`, `readonly` (options -x -a -r -g); an
 *    assignment before a command word stays a word of that command (its
 *    environment);
 *  - $NAME, ${NAME}, ${NAME[@]}, ${NAME[*]}, ${NAME[i]}, ${NAME:-w}, ${NAME-w},
 *    ${NAME:=w}, ${NAME:+w}, $1..$9 (unset: the script is taken as run with no
 *    arguments), $#, $((arithmetic: + - * / % and parentheses)); unquoted results
 *    are split at blanks, "${A[@]}" gives one word per element;
 *  - if/elif/else/fi on `[ ]`, `[[ ]]` and `test`: = == != -z -n -eq -ne -lt
 *    -le -gt -ge, !, && and || between tests.
 * Not read, and named with file:line:col where the command depends on them:
 * $(...) and backquotes (a command would have to run), file tests (-f, -d,
 * ...), and conditions on them (what they set is unknown); for, while,
 * until, case, functions and subshells are errors wherever they are.
 * A variable the script never sets expands to nothing, as in bash, with a
 * note naming it; a default taken for one (${SLURM_NNODES:-1}) is noted too.
 */
#include "megatron_shell.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Nesting allowed of quotes, ${ } and $( ) in one another, and of arithmetic parentheses. */
#define MB_SH__DEPTH 64
/* The most a word or a variable expands to (a script that doubles an array on every line would
 * otherwise fill memory): a word's bytes, an expansion's words. */
#define MB_SH__MAX_WORD (1 << 20)
#define MB_SH__MAX_WORDS 100000

/* ------------------------------------------------------------ variables */

struct mb_sh__val {
    char *s;
    int line, col;
};

struct mb_sh__var {
    char name[64];
    struct mb_sh__val *v; /* a scalar is one element */
    int n;
    int exported;
    char *bad;            /* why its value is unknown (owned), NULL when known */
    int line, col;        /* its (last) assignment */
};

/* The state of a reading. */
struct mb_sh {
    const char *file;
    struct mb_err *err;
    FILE *notes;
    struct mb_sh__var *var;
    int nvar, capvar;
    int depth;     /* expansions in progress (a default word inside ${...}); MB_SH__DEPTH at most */
};

static void mb_sh__vals_free(struct mb_sh__val *v, int n)
{
    for (int i = 0; i < n; i++)
        mb_free(v[i].s);
    mb_free(v);
}

static struct mb_sh__var *mb_sh__find(struct mb_sh *sh, const char *name, size_t len)
{
    for (int i = 0; i < sh->nvar; i++)
        if (strlen(sh->var[i].name) == len && !strncmp(sh->var[i].name, name, len))
            return &sh->var[i];
    return NULL;
}

static struct mb_sh__var *mb_sh__get(struct mb_sh *sh, const char *name, size_t len)
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

/* One word being expanded, or a finished one. */
struct mb_sh__field {
    char *s;
    size_t n, cap;
    int line, col;
    int quoted;    /* quoted, escaped or from an expansion: never a shell operator */
    int started;   /* a word exists even if empty ("" or '') */
};

struct mb_sh__fields {
    struct mb_sh__field *f;
    int n, cap;
    int open;      /* the last field is still being written */
    int overflow;  /* past MB_SH__MAX_WORD bytes in a word or MB_SH__MAX_WORDS words: nothing more added */
    char *bad;     /* why the word cannot be known (owned); its fields are then meaningless */
    int bad_line, bad_col;
};

static void mb_sh__fields_free(struct mb_sh__fields *fs)
{
    for (int i = 0; i < fs->n; i++)
        mb_free(fs->f[i].s);
    mb_free(fs->f);
    mb_free(fs->bad);
    memset(fs, 0, sizeof *fs);
}

/* The field being written (a new one when none is open). */
static struct mb_sh__field *mb_sh__cur(struct mb_sh__fields *fs, int line, int col)
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

static void mb_sh__addc(struct mb_sh__fields *fs, char c, int line, int col)
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
static void mb_sh__cut(struct mb_sh__fields *fs)
{
    if (!fs->open)
        return;
    fs->open = 0;
    if (!fs->f[fs->n - 1].started)
        mb_free(fs->f[--fs->n].s);
}

static void mb_sh__set_bad(struct mb_sh__fields *fs, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mb_sh__set_bad(struct mb_sh__fields *fs, int line, int col, const char *fmt, ...)
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

/* A place in the file: pointer and its 1-based line and column. */
struct mb_sh__pos {
    const char *p;
    int line, col;
};

static void mb_sh__adv(struct mb_sh__pos *x)
{
    if (*x->p == '\n')
        x->line++, x->col = 1;
    else
        x->col++;
    x->p++;
}

/* Past the end of a quoted string, ${...}, $(...) or $((...)) that starts at
 * x (its opening character(s) included); 0, or -1 when it never ends before
 * `end`. Nesting and quotes inside are followed. */
static int mb_sh__skip_nested(struct mb_sh__pos *x, const char *end, int depth);

static int mb_sh__skip_group(struct mb_sh__pos *x, const char *end)
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

struct mb_sh__raw {
    const char *s, *e; /* the word's text in the file */
    int line, col;
};

struct mb_sh__stmt {
    struct mb_sh__raw *w;
    int n, cap;
};

static void mb_sh__push_raw(struct mb_sh__stmt *st, struct mb_sh__raw r)
{
    if (st->n == st->cap)
        st->w = mb_realloc(st->w, (size_t)(st->cap = st->cap ? 2 * st->cap : 16) * sizeof *st->w);
    st->w[st->n++] = r;
}

/* Length of NAME at p (letters, digits, _; not starting with a digit), 0 if none. */
static size_t mb_sh__name_len(const char *p, const char *end)
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

/* The statements of [p, end): lists of raw words, split at newlines. */
static int mb_sh__statements(struct mb_sh *sh, struct mb_sh__pos x, const char *end, struct mb_sh__stmt **out,
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
        if (mb_sh__raw_word(sh, &x, end, &r)) {
            mb_free(cur.w);
            return -1;
        }
        mb_sh__push_raw(&cur, r);
    }
}

static int mb_sh__word_is(const struct mb_sh__raw *r, const char *w);
static int mb_sh__is_control(const struct mb_sh__raw *w);

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
static void mb_sh__join_lines(struct mb_sh__stmt *st, int *n)
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

static void mb_sh__stmts_free(struct mb_sh__stmt *st, int n)
{
    for (int i = 0; i < n; i++)
        mb_free(st[i].w);
    mb_free(st);
}

/* ------------------------------------------------------------ expansion */

static int mb_sh__expand(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs);

/* Append text (a variable's value) to the fields: split at blanks when unquoted and `split`. */
static void mb_sh__add_text(struct mb_sh__fields *fs, const char *s, int unquoted_split, int line, int col)
{
    for (; *s; s++) {
        if (unquoted_split && (*s == ' ' || *s == '\t' || *s == '\n')) {
            mb_sh__cut(fs);
            continue;
        }
        mb_sh__addc(fs, *s, line, col);
        fs->f[fs->n - 1].quoted = 1;
    }
}

/* $((...)) : integer arithmetic over + - * / % and parentheses, names read as variables. */
struct mb_sh__arith {
    struct mb_sh *sh;
    const char *p, *end;
    int fail;
    int depth;     /* parentheses and signs open (MB_SH__DEPTH at most) */
};

static long long mb_sh__ar_sum(struct mb_sh__arith *a);
static long long mb_sh__ar_atom(struct mb_sh__arith *a);
static long long mb_sh__ar_atom_in(struct mb_sh__arith *a);

static void mb_sh__ar_blank(struct mb_sh__arith *a)
{
    while (a->p < a->end && isspace((unsigned char)*a->p))
        a->p++;
}

static long long mb_sh__ar_atom(struct mb_sh__arith *a)
{
    if (++a->depth > MB_SH__DEPTH)
        return a->fail = 1, 0;
    long long v = mb_sh__ar_atom_in(a);
    a->depth--;
    return v;
}

static long long mb_sh__ar_atom_in(struct mb_sh__arith *a)
{
    mb_sh__ar_blank(a);
    if (a->p >= a->end)
        return a->fail = 1, 0;
    if (*a->p == '(') {
        a->p++;
        long long v = mb_sh__ar_sum(a);
        mb_sh__ar_blank(a);
        if (a->p >= a->end || *a->p != ')')
            return a->fail = 1, 0;
        a->p++;
        return v;
    }
    if (*a->p == '-' || *a->p == '+') {
        int neg = *a->p++ == '-';
        long long v = mb_sh__ar_atom(a);
        if (neg && v == LLONG_MIN)
            return a->fail = 1, 0;
        return neg ? -v : v;
    }
    if (*a->p == '$')
        a->p += a->p + 1 < a->end && a->p[1] == '{' ? 2 : 1;
    size_t n = mb_sh__name_len(a->p, a->end);
    if (n) { /* a variable: its value, as a number */
        struct mb_sh__var *v = mb_sh__find(a->sh, a->p, n);
        a->p += n;
        if (a->p < a->end && *a->p == '}')
            a->p++;
        if (!v || v->n == 0)
            return 0; /* bash: an unset name is 0 */
        char *endp;
        long long x = v->bad ? 0 : strtoll(v->v[0].s, &endp, 10);
        if (v->bad || endp == v->v[0].s || *endp)
            a->fail = 1;
        return x;
    }
    char *endp;
    long long x = strtoll(a->p, &endp, 10);
    if (endp == a->p)
        return a->fail = 1, 0;
    a->p = endp;
    return x;
}

static long long mb_sh__ar_prod(struct mb_sh__arith *a)
{
    long long v = mb_sh__ar_atom(a);
    for (;;) {
        mb_sh__ar_blank(a);
        if (a->p >= a->end || !strchr("*/%", *a->p))
            return v;
        char op = *a->p++;
        long long w = mb_sh__ar_atom(a);
        if (op == '*') {
            if (__builtin_mul_overflow(v, w, &v))
                return a->fail = 1, 0;
        } else if (w == 0 || (v == LLONG_MIN && w == -1)) {
            return a->fail = 1, 0;
        } else {
            v = op == '/' ? v / w : v % w;
        }
    }
}

static long long mb_sh__ar_sum(struct mb_sh__arith *a)
{
    long long v = mb_sh__ar_prod(a);
    for (;;) {
        mb_sh__ar_blank(a);
        if (a->p >= a->end || (*a->p != '+' && *a->p != '-'))
            return v;
        char op = *a->p++;
        long long w = mb_sh__ar_prod(a);
        if (op == '+' ? __builtin_add_overflow(v, w, &v) : __builtin_sub_overflow(v, w, &v))
            return a->fail = 1, 0;
    }
}

/* A variable's value appended to the fields (${NAME[@]} in quotes: one field per element). */
static void mb_sh__add_var(struct mb_sh *sh, struct mb_sh__fields *fs, const struct mb_sh__var *v, int all,
                           int idx, int inq, int split, int whole, const struct mb_sh__raw *r)
{
    if (v->bad) {
        mb_sh__set_bad(fs, v->line, v->col, "%s", v->bad);
        return;
    }
    (void)sh;
    for (int i = 0; i < v->n; i++) {
        if (!all && i != idx)
            continue;
        if (all && i > 0) {
            if (inq)
                mb_sh__cut(fs); /* "${A[@]}": a field per element */
            else if (split)
                mb_sh__cut(fs);
            else
                mb_sh__addc(fs, ' ', r->line, r->col);
        }
        int line = whole ? v->v[i].line : r->line, col = whole ? v->v[i].col : r->col;
        if (inq && v->v[i].s[0] == '\0')
            mb_sh__cur(fs, line, col)->started = 1; /* "" keeps an empty word */
        mb_sh__add_text(fs, v->v[i].s, !inq && split, line, col);
    }
}

/* $(...) (not run: the word is unknown) or $((arithmetic)) at x (x->p at '('; `at` the '$'). */
static int mb_sh__dollar_paren(struct mb_sh *sh, struct mb_sh__pos *x, const char *end, const struct mb_sh__pos *at0,
                               const struct mb_sh__raw *r, struct mb_sh__fields *fs)
{
    struct mb_sh__pos at = *at0;
    int arith = x->p + 1 < end && x->p[1] == '(';
    struct mb_sh__pos g = *x;
    if (mb_sh__skip_group(x, end))
        return mb_err_set(sh->err, sh->file, at.line, at.col, "unterminated $(");
    if (arith && x->p - g.p >= 4 && x->p[-2] == ')') {
        struct mb_sh__arith a = {sh, g.p + 2, x->p - 2, 0, 0};
        long long v = mb_sh__ar_sum(&a);
        mb_sh__ar_blank(&a);
        if (!a.fail && a.p == a.end) {
            char num[32];
            snprintf(num, sizeof num, "%lld", v);
            mb_sh__add_text(fs, num, 0, r->line, r->col);
            return 0;
        }
        mb_sh__set_bad(fs, at.line, at.col, "%.*s: arithmetic mbsim import does not read (it reads integers, "
                       "variables, + - * / %% and parentheses)", (int)(x->p - at.p), at.p);
        return 0;
    }
    mb_sh__set_bad(fs, at.line, at.col, "%.*s: a command substitution; mbsim import does not run commands, "
                   "write the value", (int)(x->p - at.p > 60 ? 60 : x->p - at.p), at.p);
    return 0;
}

/* ${NAME<op>word} where the word is used (unset :-, :=, set :+ ...): the word
 * expanded into the fields; := assigns it. */
static int mb_sh__default_word(struct mb_sh *sh, const char *nm, const char *op, const char *word,
                               const char *word_end, int inq, int split, const struct mb_sh__pos *at,
                               const struct mb_sh__raw *r, struct mb_sh__fields *fs)
{
    struct mb_sh__var *v = mb_sh__find(sh, nm, strlen(nm));
    struct mb_sh__raw wr = {word, word_end, r->line, r->col};
    struct mb_sh__fields wf = {0};
    if (mb_sh__expand(sh, &wr, 0, &wf))
        return -1;
    if (wf.bad) {
        mb_sh__set_bad(fs, wf.bad_line, wf.bad_col, "%s", wf.bad);
        mb_sh__fields_free(&wf);
        return 0;
    }
    if ((!v || !v->n) && sh->notes && strcmp(op, ":+") && strcmp(op, "+") && wf.n)
        fprintf(sh->notes, "%s:%d:%d: $%s is not set in the script: its default '%s' is used\n", sh->file,
                at->line, at->col, nm, wf.f[0].s);
    for (int i = 0; i < wf.n; i++) {
        if (i)
            mb_sh__addc(fs, ' ', r->line, r->col);
        mb_sh__add_text(fs, wf.f[i].s, !inq && split, r->line, r->col);
    }
    if (wf.n == 0 && inq)
        mb_sh__cur(fs, r->line, r->col)->started = 1;
    if (op[1] == '=' || op[0] == '=') { /* ${X:=w} assigns */
        struct mb_sh__var *nv = mb_sh__get(sh, nm, strlen(nm));
        mb_sh__vals_free(nv->v, nv->n);
        nv->v = mb_malloc(sizeof *nv->v);
        nv->v[0] = (struct mb_sh__val){mb_strdup(wf.n ? wf.f[0].s : ""), at->line, at->col};
        nv->n = 1;
    }
    mb_sh__fields_free(&wf);
    return 0;
}

/* ${...} or $NAME at x (x->p at '$'); `inq`: inside double quotes. */
static int mb_sh__dollar(struct mb_sh *sh, struct mb_sh__pos *x, const char *end, int inq, int split, int whole,
                         const struct mb_sh__raw *r, struct mb_sh__fields *fs)
{
    struct mb_sh__pos at = *x;
    mb_sh__adv(x); /* $ */
    if (x->p >= end) {
        mb_sh__addc(fs, '$', r->line, r->col);
        return 0;
    }
    if (*x->p == '(') /* $( or $(( */
        return mb_sh__dollar_paren(sh, x, end, &at, r, fs);
    const char *name;
    size_t nlen;
    int all = 0, idx = 0, braced = *x->p == '{', count = 0;
    char op[3] = "";
    const char *word = NULL, *word_end = NULL;
    if (braced) {
        struct mb_sh__pos g = *x;
        if (mb_sh__skip_group(x, end))
            return mb_err_set(sh->err, sh->file, at.line, at.col, "unterminated ${");
        const char *p = g.p + 1, *e = x->p - 1;
        if (p < e && *p == '#')
            count = 1, p++;
        name = p;
        nlen = mb_sh__name_len(p, e);
        if (!nlen && p < e && (isdigit((unsigned char)*p) || *p == '@' || *p == '*' || *p == '#'))
            nlen = 1;
        p += nlen;
        if (p < e && *p == '[') {
            const char *cb = memchr(p, ']', (size_t)(e - p));
            if (!cb)
                goto unread;
            if (cb - p == 2 && (p[1] == '@' || p[1] == '*'))
                all = 1;
            else {
                char *endp;
                long ix = strtol(p + 1, &endp, 10);
                if (endp != cb || ix < 0 || ix > 1000000)
                    goto unread;
                idx = (int)ix;
            }
            p = cb + 1;
        }
        if (p < e) {
            size_t ol = (p + 1 < e && p[0] == ':' && strchr("-=+", p[1])) ? 2 : strchr("-=+", *p) ? 1 : 0;
            if (!ol || count)
                goto unread;
            memcpy(op, p, ol);
            word = p + ol;
            word_end = e;
        }
        if (!nlen)
            goto unread;
    } else {
        name = x->p;
        nlen = mb_sh__name_len(x->p, end);
        if (!nlen && (isdigit((unsigned char)*x->p) || *x->p == '@' || *x->p == '*' || *x->p == '#'))
            nlen = 1;
        if (!nlen) {
            mb_sh__addc(fs, '$', r->line, r->col); /* a lone $ is itself */
            return 0;
        }
        for (size_t i = 0; i < nlen; i++)
            mb_sh__adv(x);
    }
    {
        char nm[64];
        snprintf(nm, sizeof nm, "%.*s", (int)nlen, name);
        if (!strcmp(nm, "@") || !strcmp(nm, "*"))
            return 0; /* no arguments */
        if (!strcmp(nm, "#")) {
            mb_sh__add_text(fs, "0", 0, r->line, r->col);
            return 0;
        }
        struct mb_sh__var *v = mb_sh__find(sh, name, nlen);
        int set = v && v->n > 0 && (v->bad || all || (idx < v->n && v->v[idx].s[0])) ? 1 : 0;
        int set_plain = v && (v->n > 0 || v->bad); /* set, maybe empty (for ${X-w}) */
        if (count) {
            char num[16];
            snprintf(num, sizeof num, "%d", v && !v->bad ? (all ? v->n : (v->n ? (int)strlen(v->v[0].s) : 0)) : 0);
            mb_sh__add_text(fs, num, 0, r->line, r->col);
            return 0;
        }
        int use_word = 0;
        if (!strcmp(op, ":-") || !strcmp(op, ":="))
            use_word = !set;
        else if (!strcmp(op, "-") || !strcmp(op, "="))
            use_word = !set_plain;
        else if (!strcmp(op, ":+"))
            use_word = set;
        else if (!strcmp(op, "+"))
            use_word = set_plain;
        if (op[0] && use_word)
            return mb_sh__default_word(sh, nm, op, word, word_end, inq, split, &at, r, fs);
        if (op[0] == ':' && op[1] == '+')
            return 0;
        if (op[0] == '+')
            return 0;
        if (!v || (!v->n && !v->bad)) {
            if (sh->notes)
                fprintf(sh->notes, "%s:%d:%d: $%s is not set in the script (an argument or the caller's "
                        "environment): it expands to nothing, as in bash\n", sh->file, at.line, at.col, nm);
            if (inq)
                mb_sh__cur(fs, r->line, r->col)->started = 1;
            return 0;
        }
        mb_sh__add_var(sh, fs, v, all, idx, inq, split, whole, r);
        return 0;
    }
unread:
    mb_sh__set_bad(fs, at.line, at.col, "%.*s: an expansion mbsim import does not read (it reads $NAME, ${NAME}, "
                   "${NAME[@]}, ${NAME:-default}, ${NAME-default}, ${NAME:=default}, ${NAME:+word})",
                   (int)(x->p - at.p > 60 ? 60 : x->p - at.p), at.p);
    return 0;
}

/* Expand raw word r into fields: quotes removed, variables and arrays
 * substituted, unquoted results split at blanks when `split` (a command's
 * words and array elements; not an assignment's value). */
static int mb_sh__expand_in(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs);

static int mb_sh__expand(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs)
{
    if (sh->depth >= MB_SH__DEPTH) { /* ${A:-${A:-...}}: no stack runs out on hostile text */
        mb_sh__set_bad(fs, r->line, r->col, "expansions nested deeper than %d; mbsim import does not read them",
                       MB_SH__DEPTH);
        return 0;
    }
    sh->depth++;
    int rc = mb_sh__expand_in(sh, r, split, fs);
    sh->depth--;
    return rc;
}

static int mb_sh__expand_in(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs)
{
    struct mb_sh__pos x = {r->s, r->line, r->col};
    const char *end = r->e;
    int inq = 0, quoted = 0;
    /* the word is one expansion alone: its fields keep the positions of the values */
    int whole = (end - r->s > 1 && r->s[0] == '$') || (end - r->s > 3 && r->s[0] == '"' && r->s[1] == '$' &&
                                                       end[-1] == '"');
    while (x.p < end) {
        char c = *x.p;
        if (!inq && c == '\'') {
            quoted = 1;
            mb_sh__cur(fs, r->line, r->col)->started = 1;
            mb_sh__adv(&x);
            while (x.p < end && *x.p != '\'') {
                mb_sh__addc(fs, *x.p, r->line, r->col);
                mb_sh__adv(&x);
            }
            if (x.p < end)
                mb_sh__adv(&x);
            continue;
        }
        if (c == '"') {
            quoted = 1;
            inq = !inq;
            mb_sh__cur(fs, r->line, r->col)->started = 1;
            mb_sh__adv(&x);
            continue;
        }
        if (c == '\\' && x.p + 1 < end) {
            mb_sh__adv(&x);
            if (inq && !strchr("$`\"\\\n", *x.p))
                mb_sh__addc(fs, '\\', r->line, r->col);
            quoted = 1;
            mb_sh__addc(fs, *x.p, r->line, r->col);
            mb_sh__adv(&x);
            continue;
        }
        if (c == '`') {
            struct mb_sh__pos at = x;
            if (mb_sh__skip_group(&x, end))
                return mb_err_set(sh->err, sh->file, at.line, at.col, "unterminated `");
            mb_sh__set_bad(fs, at.line, at.col, "%.*s: a command substitution; mbsim import does not run commands, "
                           "write the value", (int)(x.p - at.p > 60 ? 60 : x.p - at.p), at.p);
            continue;
        }
        if (c == '$') {
            if (mb_sh__dollar(sh, &x, end, inq, split, whole, r, fs))
                return -1;
            continue;
        }
        mb_sh__addc(fs, c, r->line, r->col);
        mb_sh__adv(&x);
    }
    mb_sh__cut(fs);
    if (fs->overflow)
        mb_sh__set_bad(fs, r->line, r->col, "expands to more than %d bytes or %d words; mbsim import does not "
                       "read it", MB_SH__MAX_WORD, MB_SH__MAX_WORDS);
    for (int i = 0; i < fs->n; i++)
        fs->f[i].quoted |= quoted;
    return 0;
}

/* ------------------------------------------------------------ assignments */

static void mb_sh__var_set_bad(struct mb_sh__var *v, const char *why, int line, int col)
{
    mb_free(v->bad);
    v->bad = mb_strdup(why);
    v->line = line;
    v->col = col;
}

/* Assignment word r (NAME=..., NAME+=..., NAME=(...), NAME+=(...)); `uncertain`: under a
 * condition that could not be decided (the variable's value is then unknown). */
static int mb_sh__assign(struct mb_sh *sh, const struct mb_sh__raw *r, int exported, const char *uncertain)
{
    size_t nlen = mb_sh__name_len(r->s, r->e);
    int append = r->s[nlen] == '+';
    const char *val = r->s + nlen + (append ? 2 : 1);
    struct mb_sh__var *v = mb_sh__get(sh, r->s, nlen);
    v->exported |= exported;
    if (uncertain) {
        char why[400];
        snprintf(why, sizeof why, "%s is set under a condition mbsim import cannot decide (%s); write its value",
                 v->name, uncertain);
        mb_sh__var_set_bad(v, why, r->line, r->col);
        return 0;
    }
    struct mb_sh__val *nv = NULL;
    int nn = 0;
    char *bad = NULL;
    int bl = r->line, bc = r->col;
    if (val < r->e && *val == '(') { /* an array: its elements are words of their own */
        struct mb_sh__pos x = {val + 1, r->line, r->col + (int)(val + 1 - r->s)};
        struct mb_sh__stmt *st;
        int n;
        if (mb_sh__statements(sh, x, r->e - 1, &st, &n))
            return -1;
        for (int i = 0; i < n && !bad; i++)
            for (int k = 0; k < st[i].n && !bad; k++) {
                struct mb_sh__fields fs = {0};
                if (mb_sh__expand(sh, &st[i].w[k], 1, &fs)) {
                    mb_sh__stmts_free(st, n);
                    return -1;
                }
                if (!fs.bad && (append && !v->bad ? v->n : 0) + nn + fs.n > MB_SH__MAX_WORDS)
                    mb_sh__set_bad(&fs, st[i].w[k].line, st[i].w[k].col, "the array grows past %d elements; "
                                   "mbsim import does not read it", MB_SH__MAX_WORDS);
                if (fs.bad) {
                    bad = mb_strdup(fs.bad);
                    bl = fs.bad_line, bc = fs.bad_col;
                }
                for (int f = 0; f < fs.n && !bad; f++) {
                    nv = mb_realloc(nv, (size_t)(nn + 1) * sizeof *nv);
                    nv[nn++] = (struct mb_sh__val){mb_strdup(fs.f[f].s), fs.f[f].line, fs.f[f].col};
                }
                mb_sh__fields_free(&fs);
            }
        mb_sh__stmts_free(st, n);
    } else { /* a scalar: no splitting; "${A[@]}" joined by blanks */
        struct mb_sh__raw vr = {val, r->e, r->line, r->col + (int)(val - r->s)};
        struct mb_sh__fields fs = {0};
        if (mb_sh__expand(sh, &vr, 0, &fs))
            return -1;
        if (fs.bad) {
            bad = mb_strdup(fs.bad);
            bl = fs.bad_line, bc = fs.bad_col;
        }
        size_t len = 0;
        for (int f = 0; f < fs.n; f++)
            len += strlen(fs.f[f].s) + 1;
        char *s = mb_malloc(len + 1);
        s[0] = '\0';
        for (int f = 0; f < fs.n; f++) {
            if (f)
                strcat(s, " ");
            strcat(s, fs.f[f].s);
        }
        mb_sh__fields_free(&fs);
        if (append && v->n > 0 && !v->bad) { /* NAME+=word: the string grows */
            char *t = mb_malloc(strlen(v->v[0].s) + strlen(s) + 1);
            strcpy(t, v->v[0].s);
            strcat(t, s);
            mb_free(s);
            s = t;
            append = 0;
            mb_sh__vals_free(v->v, v->n);
            v->v = NULL;
            v->n = 0;
        }
        nv = mb_malloc(sizeof *nv);
        nv[0] = (struct mb_sh__val){s, r->line, r->col};
        nn = 1;
    }
    if (bad) {
        mb_sh__vals_free(nv, nn);
        mb_sh__var_set_bad(v, bad, bl, bc);
        mb_free(bad);
        return 0;
    }
    if (!append || v->bad) {
        mb_sh__vals_free(v->v, v->n);
        v->v = NULL;
        v->n = 0;
        mb_free(v->bad);
        v->bad = NULL;
    }
    v->v = mb_realloc(v->v, (size_t)(v->n + nn + 1) * sizeof *v->v);
    if (nn > 0) /* an empty array "()": nv may be NULL, and memcpy's pointers must not be */
        memcpy(v->v + v->n, nv, (size_t)nn * sizeof *nv);
    v->n += nn;
    mb_free(nv);
    v->line = r->line;
    v->col = r->col;
    return 0;
}

static int mb_sh__is_assign(const struct mb_sh__raw *r)
{
    size_t n = mb_sh__name_len(r->s, r->e);
    return n && r->s + n < r->e && (r->s[n] == '=' || (r->s[n] == '+' && r->s + n + 1 < r->e && r->s[n + 1] == '='));
}

static int mb_sh__word_is(const struct mb_sh__raw *r, const char *w)
{
    return (size_t)(r->e - r->s) == strlen(w) && !strncmp(r->s, w, strlen(w));
}

/* A statement of assignments only (after export/declare/local/readonly and
 * their options): 1 when it was one (and is done), 0 when it is a command. */
static int mb_sh__assignments(struct mb_sh *sh, const struct mb_sh__stmt *st, const char *uncertain, int *rc)
{
    int i = 0, exported = 0, decl = 0;
    if (mb_sh__word_is(&st->w[0], "export") || mb_sh__word_is(&st->w[0], "declare") ||
        mb_sh__word_is(&st->w[0], "local") || mb_sh__word_is(&st->w[0], "readonly") ||
        mb_sh__word_is(&st->w[0], "typeset")) {
        exported = mb_sh__word_is(&st->w[0], "export");
        decl = 1;
        for (i = 1; i < st->n && st->w[i].s[0] == '-'; i++)
            exported |= memchr(st->w[i].s, 'x', (size_t)(st->w[i].e - st->w[i].s)) != NULL;
    }
    for (int k = i; k < st->n; k++)
        if (!mb_sh__is_assign(&st->w[k]) && !(decl && mb_sh__name_len(st->w[k].s, st->w[k].e) ==
                                               (size_t)(st->w[k].e - st->w[k].s)))
            return 0;
    if (i == st->n && !decl)
        return 0;
    for (int k = i; k < st->n && !*rc; k++) {
        if (mb_sh__is_assign(&st->w[k])) {
            *rc = mb_sh__assign(sh, &st->w[k], exported, uncertain);
        } else { /* export NAME: an existing variable goes to the environment */
            struct mb_sh__var *v = mb_sh__get(sh, st->w[k].s, (size_t)(st->w[k].e - st->w[k].s));
            v->exported |= exported;
        }
    }
    return 1;
}

/* ------------------------------------------------------------ conditions */

/* The value of a test word list [a, b) of a statement: 1 true, 0 false, -1 unknown (why in *why). */
static int mb_sh__test(struct mb_sh *sh, const struct mb_sh__raw *w, int n, char *why, size_t wl)
{
    char *arg[8];
    int na = 0, unknown = 0, r = -1;
    for (int i = 0; i < n; i++) {
        struct mb_sh__fields fs = {0};
        if (mb_sh__expand(sh, &w[i], 0, &fs)) /* inside [[ ]] no splitting; [ ] quoted in practice */
            return -1;
        if (fs.bad) {
            snprintf(why, wl, "%s", fs.bad);
            unknown = 1;
        }
        if (na < 8)
            arg[na++] = mb_strdup(fs.n ? fs.f[0].s : "");
        mb_sh__fields_free(&fs);
    }
    if (unknown || n > 8)
        goto out;
    int neg = 0, k = 0;
    while (k < na && !strcmp(arg[k], "!"))
        neg = !neg, k++;
    int m = na - k;
    if (m == 1) {
        r = arg[k][0] != '\0';
    } else if (m == 2 && (!strcmp(arg[k], "-z") || !strcmp(arg[k], "-n"))) {
        r = (arg[k + 1][0] == '\0') == (arg[k][1] == 'z');
    } else if (m == 3) {
        const char *a = arg[k], *op = arg[k + 1], *b = arg[k + 2];
        if (!strcmp(op, "=") || !strcmp(op, "==") || !strcmp(op, "!=")) {
            if (strpbrk(b, "*?[") && !(w[k + 2].s[0] == '"' || w[k + 2].s[0] == '\''))
                snprintf(why, wl, "'%s %s %s': a pattern match mbsim import does not read", a, op, b);
            else
                r = (strcmp(a, b) == 0) == (op[0] != '!');
        } else if (strlen(op) == 3 && op[0] == '-') {
            char *e1, *e2;
            long long x = strtoll(a, &e1, 10), y = strtoll(b, &e2, 10);
            if (*e1 || *e2 || !*a || !*b)
                snprintf(why, wl, "'%s %s %s': not integers", a, op, b);
            else if (!strcmp(op, "-eq"))
                r = x == y;
            else if (!strcmp(op, "-ne"))
                r = x != y;
            else if (!strcmp(op, "-lt"))
                r = x < y;
            else if (!strcmp(op, "-le"))
                r = x <= y;
            else if (!strcmp(op, "-gt"))
                r = x > y;
            else if (!strcmp(op, "-ge"))
                r = x >= y;
            else
                snprintf(why, wl, "'%s': a test mbsim import does not read", op);
        } else {
            snprintf(why, wl, "'%s': a test mbsim import does not read", op);
        }
    } else if (m == 2) {
        snprintf(why, wl, "'%s %s': a file or shell test; mbsim import does not look at files", arg[k], arg[k + 1]);
    } else {
        snprintf(why, wl, "a test of %d words mbsim import does not read", m);
    }
    if (r >= 0 && neg)
        r = !r;
out:
    for (int i = 0; i < na; i++)
        mb_free(arg[i]);
    return r;
}

/* An `if`/`elif` condition, words [from, to) of st: tests joined by && and ||; 1, 0 or -1 (unknown). */
static int mb_sh__cond(struct mb_sh *sh, const struct mb_sh__stmt *st, int from, int to, char *why, size_t wl)
{
    int val = -2; /* none yet */
    char join = 0;
    for (int i = from; i < to;) {
        int neg = 0;
        while (i < to && mb_sh__word_is(&st->w[i], "!"))
            neg = !neg, i++;
        if (i >= to)
            break;
        const char *close = mb_sh__word_is(&st->w[i], "[[") ? "]]" : mb_sh__word_is(&st->w[i], "[") ? "]" : NULL;
        int t;
        if (close || mb_sh__word_is(&st->w[i], "test")) {
            int j = i + 1;
            while (j < to && !(close ? mb_sh__word_is(&st->w[j], close)
                                     : mb_sh__word_is(&st->w[j], "&&") || mb_sh__word_is(&st->w[j], "||")))
                j++;
            if (close && j >= to) {
                snprintf(why, wl, "'%s' without '%s'", close[1] ? "[[" : "[", close);
                return -1;
            }
            t = mb_sh__test(sh, &st->w[i + 1], j - i - 1, why, wl);
            i = j + (close ? 1 : 0);
        } else { /* a command as condition */
            snprintf(why, wl, "'%.*s ...': a command; mbsim import does not run commands",
                     (int)(st->w[i].e - st->w[i].s), st->w[i].s);
            return -1;
        }
        if (t >= 0 && neg)
            t = !t;
        if (val == -2)
            val = t;
        else if (join == '&')
            val = val == 0 || t == 0 ? 0 : val < 0 || t < 0 ? -1 : 1;
        else
            val = val == 1 || t == 1 ? 1 : val < 0 || t < 0 ? -1 : 0;
        if (i < to && (mb_sh__word_is(&st->w[i], "&&") || mb_sh__word_is(&st->w[i], "||"))) {
            join = st->w[i].s[0];
            i++;
        } else if (i < to) {
            snprintf(why, wl, "'%.*s' after a test", (int)(st->w[i].e - st->w[i].s), st->w[i].s);
            return -1;
        }
    }
    return val == -2 ? -1 : val;
}

/* ------------------------------------------------------------ statements */

/* One if/elif/else level: `taken` a branch already ran; `on` this branch runs;
 * `why` (non-empty) the branches could not be decided. */
struct mb_sh__if {
    int taken, on, outer_on;
    char why[240];
    int line, col;
};

/* A statement whose first word is a control keyword, split at its `;` words
 * into parts (`if [[ a ]]; then X=1; fi` -> `if [[ a ]]`, `then X=1`, `fi`). */
static int mb_sh__split_control(const struct mb_sh__stmt *st, struct mb_sh__stmt *parts, int max)
{
    int n = 0;
    struct mb_sh__stmt cur = {0};
    for (int i = 0; i <= st->n; i++) {
        if (i == st->n || mb_sh__word_is(&st->w[i], ";")) {
            if (cur.n && n < max)
                parts[n++] = cur;
            else
                mb_free(cur.w);
            cur = (struct mb_sh__stmt){0};
            continue;
        }
        mb_sh__push_raw(&cur, st->w[i]);
    }
    return n;
}

static int mb_sh__is_control(const struct mb_sh__raw *w)
{
    static const char *const kw[] = {"if", "then", "elif", "else", "fi", NULL};
    for (int i = 0; kw[i]; i++)
        if (mb_sh__word_is(w, kw[i]))
            return 1;
    return 0;
}

static int mb_sh__is_unread(const struct mb_sh__raw *w)
{
    static const char *const kw[] = {"for", "while", "until", "case", "select", "function", "do", "done", "esac",
                                     NULL};
    for (int i = 0; kw[i]; i++)
        if (mb_sh__word_is(w, kw[i]))
            return 1;
    return 0;
}

/* The commands of the script, collected. */
struct mb_sh__cmds {
    struct mb_shell_words *all;   /* every command's words, for a file of flags alone */
    struct mb_shell_words script; /* the command running a script */
    int script_line, script_col, n_script;
};

static void mb_sh__push_word(struct mb_shell_words *ws, const char *s, int line, int col, int quoted)
{
    if (ws->n == ws->cap)
        ws->w = mb_realloc(ws->w, (size_t)(ws->cap = ws->cap ? 2 * ws->cap : 64) * sizeof *ws->w);
    ws->w[ws->n++] = (struct mb_shell_word){mb_strdup(s), line, col, quoted};
}

static int mb_sh__ends_py(const char *w)
{
    size_t n = strlen(w);
    return n > 3 && !strcmp(w + n - 3, ".py");
}

/* A word that makes its command one running a Python script: a path ending
 * in .py (no blank in it), in a command that is no echo or printf (a message
 * that names the script). */
static int mb_sh__runs(const struct mb_shell_words *ws, const char *w)
{
    return mb_sh__ends_py(w) && !strpbrk(w, " \t") && !(ws->n && (!strcmp(ws->w[0].s, "echo") ||
                                                              !strcmp(ws->w[0].s, "printf")));
}

/* A command statement: expanded; kept as the script command when it runs one.
 * Every statement's words (assignments too: a file of Bridge overrides or of
 * environment settings, one per line) are kept for a file with no script
 * command, which is read as one list of words, as before scripts were read. */
static int mb_sh__command(struct mb_sh *sh, const struct mb_sh__stmt *st, const char *uncertain,
                          struct mb_sh__cmds *c, int assignments)
{
    struct mb_shell_words ws = {0};
    int runs_script = 0, rc = 0;
    const char *bad = NULL;
    int bl = 0, bcol = 0;
    struct mb_sh__fields keep = {0};
    FILE *notes = sh->notes;
    if (assignments)
        sh->notes = NULL;
    for (int i = 0; i < st->n && !rc; i++) {
        struct mb_sh__fields fs = {0};
        rc = mb_sh__expand(sh, &st->w[i], 1, &fs);
        if (!rc && fs.bad && !bad) {
            keep.bad = mb_strdup(fs.bad);
            bad = keep.bad;
            bl = fs.bad_line, bcol = fs.bad_col;
        }
        for (int f = 0; f < fs.n; f++) {
            mb_sh__push_word(&ws, fs.f[f].s, fs.f[f].line, fs.f[f].col, fs.f[f].quoted);
            runs_script |= mb_sh__runs(&ws, fs.f[f].s) || (!strcmp(fs.f[f].s, "-m") && f + 1 < fs.n);
        }
        mb_sh__fields_free(&fs);
    }
    if (assignments) /* assignments alone: words only of a file of settings alone (`NAME=value` per line) */
        runs_script = 0;
    sh->notes = notes; /* (expanded a second time: its notes were given) */
    if (!rc && runs_script) {
        if (uncertain)
            rc = mb_err_set(sh->err, sh->file, st->w[0].line, st->w[0].col, "the training command runs under a "
                            "condition mbsim import cannot decide (%s); write the command without it", uncertain);
        else if (bad)
            rc = mb_err_set(sh->err, sh->file, bl, bcol, "%s", bad);
        else if (c->n_script++)
            rc = mb_err_set(sh->err, sh->file, st->w[0].line, st->w[0].col, "a second command that runs a Python "
                            "script (the first at line %d); mbsim import reads one: keep the training command",
                            c->script_line);
        if (!rc) {
            c->script = ws;
            c->script_line = st->w[0].line;
            c->script_col = st->w[0].col;
            ws = (struct mb_shell_words){0};
        }
    } else if (!rc && !uncertain) { /* maybe a file of flags alone; an unknown word fails only if it is read */
        for (int i = 0; i < ws.n; i++)
            mb_sh__push_word(c->all, ws.w[i].s, ws.w[i].line, ws.w[i].col, ws.w[i].quoted);
        if (bad && ws.n && !strncmp(ws.w[0].s, "--", 2))
            rc = mb_err_set(sh->err, sh->file, bl, bcol, "%s", bad);
    }
    mb_sh__fields_free(&keep);
    mb_shell_words_free(&ws);
    return rc;
}

/* Run the statements: assignments, if blocks, commands. */
static int mb_sh__run(struct mb_sh *sh, struct mb_sh__stmt *st, int n, struct mb_sh__cmds *c)
{
    struct mb_sh__if stack[16];
    int depth = 0, rc = 0;
    for (int s = 0; s < n && !rc; s++) {
        struct mb_sh__stmt parts[16];
        int np = 1;
        if (mb_sh__is_control(&st[s].w[0]))
            np = mb_sh__split_control(&st[s], parts, 16);
        else
            parts[0] = st[s];
        struct mb_sh__raw *owned[16];
        for (int p = 0; p < np; p++)
            owned[p] = parts[p].w;
        for (int p = 0, shifted = 0; p < np && !rc; p++) {
            struct mb_sh__stmt *x = &parts[p];
            struct mb_sh__raw *w0 = &x->w[0];
            if (shifted && p >= 0) {
                /* the statement after a one-line then/else: not a keyword again */
                shifted = 0;
                int on1 = depth == 0 || stack[depth - 1].on;
                const char *unc = NULL;
                for (int d = 0; d < depth; d++)
                    if (stack[d].why[0])
                        unc = stack[d].why;
                int done = on1 && !mb_sh__is_control(w0) ? mb_sh__assignments(sh, x, unc, &rc) : -1;
                if (done >= 0 && !rc && (!done || !unc))
                    rc = mb_sh__command(sh, x, unc, c, done);
                continue;
            }
            int on = depth == 0 || stack[depth - 1].on;
            const char *uncertain = NULL;
            for (int d = 0; d < depth; d++)
                if (stack[d].why[0])
                    uncertain = stack[d].why;
            if (mb_sh__is_unread(w0) || (x->n > 1 && mb_sh__word_is(&x->w[1], "()"))) {
                rc = mb_err_set(sh->err, sh->file, w0->line, w0->col, "'%.*s': loops, case and functions are not "
                                "read by mbsim import (it reads assignments, arrays and if/else on [ ] tests); "
                                "write the command without them", (int)(w0->e - w0->s), w0->s);
            } else if (mb_sh__word_is(w0, "if") || mb_sh__word_is(w0, "elif")) {
                int is_if = w0->s[0] == 'i';
                if (is_if && depth == 16) {
                    rc = mb_err_set(sh->err, sh->file, w0->line, w0->col, "if blocks nested deeper than 16");
                    break;
                }
                if (!is_if && depth == 0) {
                    rc = mb_err_set(sh->err, sh->file, w0->line, w0->col, "elif without if");
                    break;
                }
                struct mb_sh__if *f = is_if ? &stack[depth++] : &stack[depth - 1];
                if (is_if)
                    *f = (struct mb_sh__if){0, 0, on, "", w0->line, w0->col};
                int end = x->n;
                if (end > 1 && mb_sh__word_is(&x->w[end - 1], "then"))
                    end--;
                char why[200] = "";
                int v = f->outer_on && !f->taken && !f->why[0] ? mb_sh__cond(sh, x, 1, end, why, sizeof why) : 0;
                if (v < 0 && f->outer_on && !f->taken && !f->why[0])
                    snprintf(f->why, sizeof f->why, "line %d: %s", w0->line, why);
                f->on = v == 1;
                f->taken |= v == 1;
                if (f->why[0])
                    f->on = f->outer_on; /* undecided: read both ways, assignments unknown */
            } else if (mb_sh__word_is(w0, "then") || mb_sh__word_is(w0, "else")) {
                if (w0->s[0] == 'e') {
                    if (depth == 0) {
                        rc = mb_err_set(sh->err, sh->file, w0->line, w0->col, "else without if");
                        break;
                    }
                    struct mb_sh__if *f = &stack[depth - 1];
                    f->on = f->why[0] ? f->outer_on : f->outer_on && !f->taken;
                    f->taken = 1;
                }
                if (x->n > 1) { /* `then X=1` on one line: X=1 is the next part */
                    x->w++;
                    x->n--;
                    p--;
                    shifted = 1;
                }
            } else if (mb_sh__word_is(w0, "fi")) {
                if (depth == 0) {
                    rc = mb_err_set(sh->err, sh->file, w0->line, w0->col, "fi without if");
                    break;
                }
                depth--;
            } else if (!on) {
                continue;
            } else {
                int done = mb_sh__assignments(sh, x, uncertain, &rc);
                if (!rc && (!done || !uncertain))
                    rc = mb_sh__command(sh, x, uncertain, c, done);
            }
        }
        if (owned[0] != st[s].w)
            for (int p = 0; p < np; p++)
                mb_free(owned[p]);
    }
    if (!rc && depth > 0)
        rc = mb_err_set(sh->err, sh->file, stack[depth - 1].line, stack[depth - 1].col, "if without fi");
    return rc;
}

int mb_shell_command(const char *buf, const char *file, struct mb_shell_words *out, FILE *notes,
                     struct mb_err *err)
{
    struct mb_sh sh = {file, err, notes, NULL, 0, 0, 0};
    struct mb_sh__stmt *st = NULL;
    int n = 0;
    memset(out, 0, sizeof *out);
    struct mb_shell_words all = {0};
    struct mb_sh__cmds c = {&all, {0}, 0, 0, 0};
    struct mb_sh__pos x = {buf, 1, 1};
    int rc = mb_sh__statements(&sh, x, buf + strlen(buf), &st, &n);
    if (!rc) {
        mb_sh__join_lines(st, &n);
        rc = mb_sh__run(&sh, st, n, &c);
    }
    if (!rc && c.n_script) { /* exported variables first, as NAME=value words */
        for (int i = 0; i < sh.nvar; i++) {
            const struct mb_sh__var *v = &sh.var[i];
            if (!v->exported || v->bad || v->n != 1)
                continue;
            char *w = mb_malloc(strlen(v->name) + strlen(v->v[0].s) + 2);
            sprintf(w, "%s=%s", v->name, v->v[0].s);
            mb_sh__push_word(out, w, v->line, v->col, 1);
            mb_free(w);
        }
        for (int i = 0; i < c.script.n; i++)
            mb_sh__push_word(out, c.script.w[i].s, c.script.w[i].line, c.script.w[i].col, c.script.w[i].quoted);
    } else if (!rc) {
        *out = all;
        all = (struct mb_shell_words){0};
    }
    mb_shell_words_free(&all);
    mb_shell_words_free(&c.script);
    mb_sh__stmts_free(st, n);
    for (int i = 0; i < sh.nvar; i++) {
        mb_sh__vals_free(sh.var[i].v, sh.var[i].n);
        mb_free(sh.var[i].bad);
    }
    mb_free(sh.var);
    if (rc)
        mb_shell_words_free(out);
    return rc;
}

void mb_shell_words_free(struct mb_shell_words *ws)
{
    for (int i = 0; i < ws->n; i++)
        mb_free(ws->w[i].s);
    mb_free(ws->w);
    memset(ws, 0, sizeof *ws);
}
