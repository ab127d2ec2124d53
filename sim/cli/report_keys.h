/*
 * report_keys.h -- the keys of `mbsim run --json` (report_keys.c): the report's contract, the source of
 * docs/cli.md's key list, and what test_report_keys holds the emitted report to.
 */
#ifndef MB_REPORT_KEYS_H
#define MB_REPORT_KEYS_H

#include <stdio.h>

/** One key: its path (`a.b`, `a[]` for an array's elements, `a.*` for a map's keys), JSON type, meaning. */
struct mb_report_key {
    const char *path, *type, *meaning;
};

/** Every key, in the report's order; ends with a NULL path. */
extern const struct mb_report_key mb_report_keys[];

/** @brief The key of that path, or NULL. */
const struct mb_report_key *mb_report_key_find(const char *path);

/** @brief The table as docs/cli.md lists it (a Markdown table, one row per key). */
void mb_report_keys_doc(FILE *fp);

#endif
