/*
 * megatron_list.h -- the settings list of mb_megatron_read and the file as
 * text (mb_megatron_list.c), for mb_megatron_read.c and mb_megatron_yaml.c
 * (private: only this folder's sources see it). The public contract is
 * mb_megatron.h (mb_megatron_read).
 */
#ifndef MB_MEGATRON_LIST_H
#define MB_MEGATRON_LIST_H

#include <stddef.h>

#include "mb_megatron.h"

/** @brief Append a setting named `name` ('-' -> '_', lower case), spelt `written`, at line:col. */
struct mb_megatron_arg *mb_mgr__add(struct mb_megatron_args *a, const char *name, const char *written, int line,
                                    int col);

/** @brief Append the value v[0..len) (blanks and one pair of enclosing quotes trimmed) to g. */
void mb_mgr__val(struct mb_megatron_arg *g, const char *v, size_t len);

/**
 * @brief The file as text: a regular file within the input limit (mb_input.h), no NUL byte, a UTF-8
 * byte order mark removed, every line end (LF, CRLF, a lone CR) one LF.
 * @return the text (mb_free), or NULL with err set.
 */
char *mb_mgr__read_file(const char *path, struct mb_err *err);

#endif /* MB_MEGATRON_LIST_H */
