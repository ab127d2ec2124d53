/*
 * megatron_shell_int.h -- what the three files of the launch-script reader
 * share (private to mb_megatron_shell*.c): the reading's state, the fields a
 * word expands to, raw words and statements. What is read, and how, is in
 * mb_megatron_shell.c's file comment; the contract is megatron_shell.h.
 */
#ifndef MB_MEGATRON_SHELL_INT_H
#define MB_MEGATRON_SHELL_INT_H

#include <stddef.h>
#include <stdio.h>

#include "megatron_shell.h"


/* Nesting allowed of quotes, ${ } and $( ) in one another, and of arithmetic parentheses. */
#define MB_SH__DEPTH 64
/* The most a word or a variable expands to (a script that doubles an array on every line would
 * otherwise fill memory): a word's bytes, an expansion's words. */
#define MB_SH__MAX_WORD (1 << 20)
#define MB_SH__MAX_WORDS 100000


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

/* A place in the file: pointer and its 1-based line and column. */
struct mb_sh__pos {
    const char *p;
    int line, col; /* col in characters (mb_text_col_step) */
    int pend;      /* UTF-8 continuation bytes still expected */
};

struct mb_sh__raw {
    const char *s, *e; /* the word's text in the file */
    int line, col;
};

struct mb_sh__stmt {
    struct mb_sh__raw *w;
    int n, cap;
};

/* ---- mb_megatron_shell_words.c: variables, fields, positions, raw words and statements */

/** Free n values and the array. */
void mb_sh__vals_free(struct mb_sh__val *v, int n);
/** The variable NAME (len bytes), or NULL when the script never set it. */
struct mb_sh__var *mb_sh__find(struct mb_sh *sh, const char *name, size_t len);
/** The variable NAME, created empty when it does not exist yet. */
struct mb_sh__var *mb_sh__get(struct mb_sh *sh, const char *name, size_t len);
/** Free the fields' words and reason; fs is left empty. */
void mb_sh__fields_free(struct mb_sh__fields *fs);
/** The field being written (a new one at line:col when none is open). */
struct mb_sh__field *mb_sh__cur(struct mb_sh__fields *fs, int line, int col);
/** Append one byte to the field being written (nothing past MB_SH__MAX_WORD / MB_SH__MAX_WORDS). */
void mb_sh__addc(struct mb_sh__fields *fs, char c, int line, int col);
/** End the field being written (an unstarted empty one is dropped). */
void mb_sh__cut(struct mb_sh__fields *fs);
/** Mark the word unknowable, with why at line:col (the first reason is kept). */
void mb_sh__set_bad(struct mb_sh__fields *fs, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** One character forward, counting lines and columns. */
void mb_sh__adv(struct mb_sh__pos *x);
/** Past a quoted string, ${...}, $(...) or $((...)) starting at x: 0, -1 unterminated before end,
 *  -2 nested deeper than MB_SH__DEPTH. */
int mb_sh__skip_group(struct mb_sh__pos *x, const char *end);
/** Append a raw word to a statement. */
void mb_sh__push_raw(struct mb_sh__stmt *st, struct mb_sh__raw r);
/** Length of a shell NAME at p (letters, digits, _; not starting with a digit), 0 if none. */
size_t mb_sh__name_len(const char *p, const char *end);
/** Split the text from x to end into statements of raw words (see the definition); 0 or -1 (err). */
int mb_sh__statements(struct mb_sh *sh, struct mb_sh__pos x, const char *end, struct mb_sh__stmt **out, int *n);
/** The raw word is exactly w. */
int mb_sh__word_is(const struct mb_sh__raw *r, const char *w);
/** The word is if, then, elif, else or fi. */
int mb_sh__is_control(const struct mb_sh__raw *w);
/** Join statements continued on the next line (a flag or override after a line that ends a command). */
void mb_sh__join_lines(struct mb_sh__stmt *st, int *n);
/** Free n statements and the array. */
void mb_sh__stmts_free(struct mb_sh__stmt *st, int n);

/* ---- mb_megatron_shell_expand.c: expansion and arithmetic */

/** Expand a raw word into fields (split at blanks when unquoted and `split`); 0, or -1 (sh->err)
 *  with fs freed (left empty). */
int mb_sh__expand(struct mb_sh *sh, const struct mb_sh__raw *r, int split, struct mb_sh__fields *fs);

#endif /* MB_MEGATRON_SHELL_INT_H */
