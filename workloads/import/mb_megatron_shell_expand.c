/*
 * mb_megatron_shell_expand.c -- the launch-script reader's word expansion:
 * $NAME, ${...} with its defaults, arrays, $((arithmetic)), quoting and
 * splitting at blanks (private/megatron_shell_int.h; what is read:
 * mb_megatron_shell.c).
 */
#include "megatron_shell_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ expansion */


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

int mb_sh__expand(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs)
{
    if (sh->depth >= MB_SH__DEPTH) { /* ${A:-${A:-...}}: no stack runs out on hostile text */
        mb_sh__set_bad(fs, r->line, r->col, "expansions nested deeper than %d; mbsim import does not read them",
                       MB_SH__DEPTH);
        return 0;
    }
    sh->depth++;
    int rc = mb_sh__expand_in(sh, r, split, fs);
    sh->depth--;
    if (rc) /* the fields of a failed expansion are freed here, for every caller */
        mb_sh__fields_free(fs);
    return rc;
}

static int mb_sh__expand_in(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs)
{
    struct mb_sh__pos x = {r->s, r->line, r->col, 0};
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

