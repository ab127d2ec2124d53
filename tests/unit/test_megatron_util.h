/*
 * test_megatron_util.h -- shared by the import tests (test_megatron.c,
 * test_megatron_yaml.c): read a file in a dialect and import it as `mbsim
 * import` does, with the notes it would print on stderr kept in memory.
 * Run from the source tree (ctest sets WORKING_DIRECTORY), so paths are relative.
 */
#ifndef MBSIM_TEST_MEGATRON_UTIL_H
#define MBSIM_TEST_MEGATRON_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "mb_megatron.h"

/* Import `path`; 0, or -1 with err. The notes (stderr of `mbsim import`) into *notes_p when given
 * (free() them), else dropped. */
static inline int import(const char *path, enum mb_megatron_dialect d, const struct mb_megatron_opts *o,
                         struct mb_scenario *s, char **notes_p, struct mb_err *err)
{
    struct mb_megatron_args a;
    char *notes = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&notes, &len);
    mb_err_clear(err);
    int rc = mb_megatron_read(path, d, &a, err);
    if (!rc)
        rc = mb_megatron_import(&a, o, s, fp, err);
    fclose(fp);
    mb_megatron_args_free(&a);
    if (notes_p)
        *notes_p = notes;
    else
        free(notes);
    return rc;
}

#endif /* MBSIM_TEST_MEGATRON_UTIL_H */
