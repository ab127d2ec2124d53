/*
 * test_validate_util.h -- helpers shared by the `mbsim validate` tests (test_validate.c,
 * test_validate_recipe.c, test_validate_memory.c): the fixture folder, a buffer for formatted
 * errors (every file uses it), a row of a summary by id, and the summary's JSON report parsed.
 * Run from the source tree (ctest sets WORKING_DIRECTORY), so FIX paths are relative.
 */
#ifndef MBSIM_TEST_VALIDATE_UTIL_H
#define MBSIM_TEST_VALIDATE_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "mb_validate.h"

#define FIX "tests/data/validate/"

static char msgbuf[1024];

static inline const struct mb_val_row *find_row(const struct mb_val_summary *s, const char *id)
{
    for (size_t i = 0; i < s->n_rows; i++)
        if (!strcmp(s->rows[i].id, id))
            return &s->rows[i];
    fail_msg("row '%s' not found", id);
    return s->rows; /* not reached */
}

/* The summary as mb_validate_print_json writes it, parsed (json_decref it). */
static inline json_t *summary_json(const struct mb_val_summary *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_int_equal(mb_validate_print_json(s, fp), 0);
    fclose(fp);
    json_error_t jerr;
    json_t *root = json_loads(buf, 0, &jerr);
    if (!root)
        fail_msg("JSON does not parse: %s (line %d)", jerr.text, jerr.line);
    free(buf);
    return root;
}

#endif
