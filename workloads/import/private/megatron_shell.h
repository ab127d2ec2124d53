/*
 * megatron_shell.h -- the training command of a launch script, for
 * mb_megatron_read.c (private: only this folder's sources see it). The
 * public contract is mb_megatron.h (mb_megatron_read); what is read is in
 * mb_megatron_shell.c's file comment and docs/import.md.
 */
#ifndef MB_MEGATRON_SHELL_H
#define MB_MEGATRON_SHELL_H

#include <stdio.h>

#include "mb_util.h"

/** One word of the command, after expansion. */
struct mb_shell_word {
    char *s;        /* owned */
    int line, col;  /* 1-based: the word in the file, or the array element / assignment it came from */
    int quoted;     /* quoted, escaped or expanded: never a shell operator */
};

struct mb_shell_words {
    struct mb_shell_word *w;
    int n, cap;
};

/**
 * @brief The words of the one command of `buf` that runs a Python script
 * (a word ending in .py, or -m MODULE), with the script's variables and
 * arrays expanded, `if` blocks on `[ ]` / `[[ ]]` tests decided, and its
 * exported variables before it as NAME=value words; without such a command,
 * the words of every command of the file (a file of flags alone).
 * @param[in]  buf   the file's text, line ends LF
 * @param[in]  file  for messages
 * @param[out] out   the words (free with mb_shell_words_free)
 * @param[in]  notes where to say which defaults of unset variables were taken; may be NULL
 * @return 0, or -1 with file:line:col in err: an unterminated quote, array or
 *         expansion, a construct not read (loops, case, functions, subshells),
 *         two script commands, and any word of the command that needs
 *         running a command ($(...), backquotes, a file test) to be known.
 */
int mb_shell_command(const char *buf, const char *file, struct mb_shell_words *out, FILE *notes,
                     struct mb_err *err);

/** @brief Free the words; accepts an empty list. */
void mb_shell_words_free(struct mb_shell_words *ws);

#endif /* MB_MEGATRON_SHELL_H */
