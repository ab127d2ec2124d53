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
#include "megatron_shell_int.h"
#include "mb_text.h"

#include <stdlib.h>
#include <string.h>

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
        struct mb_sh__pos x = {val + 1, r->line, r->col + mb_text_cols(r->s, (size_t)(val + 1 - r->s)), 0};
        struct mb_sh__stmt *st;
        int n;
        if (mb_sh__statements(sh, x, r->e - 1, &st, &n))
            return -1;
        for (int i = 0; i < n && !bad; i++)
            for (int k = 0; k < st[i].n && !bad; k++) {
                struct mb_sh__fields fs = {0};
                if (mb_sh__expand(sh, &st[i].w[k], 1, &fs)) {
                    mb_sh__stmts_free(st, n);
                    mb_sh__vals_free(nv, nn);
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
        struct mb_sh__raw vr = {val, r->e, r->line, r->col + mb_text_cols(r->s, (size_t)(val - r->s))};
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
        if (mb_sh__expand(sh, &w[i], 0, &fs)) { /* inside [[ ]] no splitting; [ ] quoted in practice */
            for (int j = 0; j < na; j++)
                mb_free(arg[j]);
            return -1;
        }
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
    struct mb_sh__pos x = {buf, 1, 1, 0};
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
