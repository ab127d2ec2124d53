/*
 * megatron_yaml.h -- Megatron-LM (--yaml-cfg) and Megatron-Bridge
 * (--config-file) YAML files as settings, for mb_megatron_read.c (private:
 * only this folder's sources see it). The public contract is mb_megatron.h
 * (mb_megatron_read); what is read and refused is in mb_megatron_yaml.c's
 * file comment and docs/import.md.
 */
#ifndef MB_MEGATRON_YAML_H
#define MB_MEGATRON_YAML_H

#include <stdio.h>

#include "mb_megatron.h"
#include "megatron_list.h"

/* ---- mb_megatron_yaml.c */

/**
 * @brief 1 when the file is to be read as YAML: its name ends in .yaml or
 * .yml, or its first line that is neither blank nor a comment is `key:`
 * (a lower-case identifier at column 1, then ':' and a blank or the line's
 * end), which no launch script, override list or flag file has.
 */
int mb_myaml__is_yaml(const char *path, const char *buf);

/**
 * @brief Read the YAML text buf (len bytes, LF line ends) into a->a as the
 * framework of a->dialect reads it (mb_megatron_yaml.c); a->file names it in
 * messages. Notes (the form read; settings set aside) go to notes (may be NULL).
 * @return 0, or -1 with file:line:col in err: a YAML error (syntax, a duplicate
 *         key, an alias expanding past the node limit), a root that is not a
 *         mapping, a section that must be a mapping and is not, Megatron-LM's
 *         model_parallel: or language_model: missing, or one name given both
 *         at the top level and in a section.
 */
int mb_myaml__read(const char *buf, size_t len, struct mb_megatron_args *a, FILE *notes, struct mb_err *err);

/**
 * @brief Read the Bridge YAML a command's `--config-file` names (path as given, else beside
 * a->file) into a->a, its settings marked in_config; a->config keeps its path.
 * @param[in] word the word's position (for an error when the file cannot be read)
 * @return 0, or -1 with err set (the file cannot be opened: both paths tried; its own errors at
 *         its file:line:col).
 */
int mb_myaml__config_file(const char *path, int line, int col, struct mb_megatron_args *a, FILE *notes,
                          struct mb_err *err);

#endif /* MB_MEGATRON_YAML_H */
