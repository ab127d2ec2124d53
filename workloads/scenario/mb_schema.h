/*
 * mb_schema.h -- scenario schema versions and the defaults that changed
 * between them.
 *
 * A scenario states the schema it was written for (`schema_version: N`).
 * When a key's default changes meaning, the schema version goes up and the
 * change is listed here; a file of an older schema that leaves such a key
 * out gets the default it was written under (the loader applies it and
 * warns, naming the key), so an old file keeps its meaning.
 */
#ifndef MB_SCHEMA_H
#define MB_SCHEMA_H

#include <stddef.h>

/** The schema this mbsim writes and reads without changes. */
#define MB_SCHEMA_VERSION 2
/** The oldest schema this mbsim reads. */
#define MB_SCHEMA_OLDEST 1

/** One changed default: from schema `since` on, `key` defaults to what the key table says;
 *  files of an older schema get `old_default` (a value as the key's text parser reads it). */
struct mb_schema_change {
    const char *key;         /* scenario key, as in the key table (mb_keys.h) */
    int since;               /* first schema version with the new default */
    const char *old_default; /* the default before `since` */
    const char *new_default; /* the default from `since` on (as the key table has it) */
    const char *why;         /* what changed, with its source (commit of mbsim, upstream reference) */
};

/**
 * @brief The list of changed defaults, oldest first.
 * @param[out] n number of entries (may be NULL)
 * @return a static array of *n entries (never NULL)
 */
const struct mb_schema_change *mb_schema_changes(size_t *n);

#endif
