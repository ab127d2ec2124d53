/*
 * mb_keys.h -- the scenario schema, written once: one table of every key a
 * scenario file may hold (after Redis's `standardConfig` table in config.c).
 *
 * Each entry names a dotted key ("parallel.tp", "moe.dispatcher",
 * "overlap.fsdp_prefetch"; a key without a dot sits at the top level), its
 * type (integer with bounds, bool, number, enum or flag list with a name
 * table, string, ...), the offsetof of its field in struct mb_scenario, its
 * default and a doc string. The table drives:
 *  - the YAML loader (mb_scenario_load): unknown keys, required keys, value
 *    types, ranges and enum names, with "file:line:col: message" errors;
 *  - `sweep --set` and sweep blocks (mb_scenario_set, mb_sweep_keys): the key
 *    list, aliases (tp -> parallel.tp) and value parsing from text;
 *  - the scenario writer (mb_scenario_write_yaml), so every key loaded is
 *    written and loads back;
 *  - the names reports print (mb_key_value_name) and the key reference in
 *    docs/scenario-format.md (mb_keys_write_markdown, checked by a test);
 *  - `mbsim import megatron|bridge` and `--emit` (mb_megatron.h): the
 *    Megatron-LM argument and Megatron-Bridge override of each key that has one.
 *
 * A few keys are read by the loader itself (MB_KEY_SPECIAL: schema_version,
 * model, data.images); they are in the table so that the key lists, the docs
 * and the writer know them.
 */
#ifndef MB_KEYS_H
#define MB_KEYS_H

#include <stddef.h>
#include <stdio.h>

#include "mb_scenario.h"
#include "mb_yaml.h"

/** Upper bound on the number of keys (size of a per-key node array). */
#define MB_KEYS_MAX 96

/** One name of an enum or flag-list key; tables end with {NULL, 0}. */
struct mb_key_name {
    const char *name;
    unsigned val;
};

enum mb_key_type {
    MB_KEY_INT,       /* int in [min, max] */
    MB_KEY_U64,       /* unsigned long long in [min, max] */
    MB_KEY_BOOL,      /* int 0/1 (a default of -1 means "decided later") */
    MB_KEY_DOUBLE,    /* double in [min, max] */
    MB_KEY_ENUM,      /* int-sized enum through `names` */
    MB_KEY_FLAGS,     /* unsigned OR of `names`: YAML list, text names joined with '+' */
    MB_KEY_PRECISION, /* struct mb_precision from its label (mb_precision_parse) */
    MB_KEY_RANGE,     /* int min, int max (adjacent fields): YAML N or [min, max], text N or MIN+MAX */
    MB_KEY_LAYOUT,    /* char[size]: Megatron pipeline layout, stored expanded */
    MB_KEY_STRING,    /* char[size] */
    MB_KEY_QUANTITY,  /* double in the key's unit; YAML may give another unit of the same kind */
    MB_KEY_SPECIAL    /* read and written by the scenario loader and writer themselves */
};

/* Entry flags. */
#define MB_KEYF_REQUIRED 0x01u   /* must be present in its section */
#define MB_KEYF_SECTION_REQ 0x02u /* its section must be present in the scenario */
#define MB_KEYF_SWEEP 0x04u      /* a sweep axis / mb_scenario_set key */
#define MB_KEYF_SHOW 0x08u       /* written even when at its default */
#define MB_KEYF_SCALAR_OK 0x10u  /* FLAGS: one name may stand without a list */
#define MB_KEYF_REF 0x20u        /* model or system reference: a shipped name or a file path */
#define MB_KEYF_PATH 0x40u       /* a file path: the writer makes it absolute */

struct mb_key {
    const char *key;                  /* dotted name, e.g. "parallel.tp" */
    const char *alias;                /* short sweep spelling ("tp") or NULL */
    enum mb_key_type type;
    unsigned flags;                   /* MB_KEYF_* */
    size_t offset, size;              /* of the field in struct mb_scenario */
    double min, max;                  /* INT/U64/DOUBLE/RANGE: inclusive bounds */
    double def;                       /* default of numeric, bool, enum and flag keys */
    const char *def_text;             /* default as the docs say it (NULL: derived from def) */
    const struct mb_key_name *names;  /* ENUM/FLAGS */
    unsigned empty;                   /* FLAGS: value of an empty YAML list */
    enum mb_unit unit;                /* QUANTITY: kind of unit accepted */
    double scale;                     /* QUANTITY: base units per key unit (1e12 for TFLOP/s) */
    /* value rule shared by the loader and mb_scenario_set: 0, or -1 with msg */
    int (*check)(const struct mb_scenario *s, char *msg, size_t len);
    /* writer: 0 when the key means nothing for s (e.g. recompute.method unless full); NULL = always */
    int (*applies)(const struct mb_scenario *s);
    const char *doc;                  /* one line for docs/scenario-format.md */
    /* Megatron vocabulary of keys whose value carries over one to one (same
     * number, bool or value names; NULL = none, or read and written by
     * mb_megatron.h itself): the Megatron-LM argument as its `args` attribute
     * (tensor_model_parallel_size; `--tensor-model-parallel-size` on a command
     * line) and the Megatron-Bridge override path (model.tensor_model_parallel_size). */
    const char *megatron, *bridge;
};

/**
 * @brief The key table.
 * @param[out] n  number of entries (may be NULL)
 * @return the first entry; entries are in documentation order, sections contiguous.
 */
const struct mb_key *mb_keys(size_t *n);

/**
 * @brief Find a key by its dotted name or its alias (case-sensitive).
 * @return the entry, or NULL if unknown.
 */
const struct mb_key *mb_key_find(const char *name);

/** @brief Position of entry k in mb_keys() (index into a node array of MB_KEYS_MAX). */
size_t mb_key_index(const struct mb_key *k);

/** @brief Set every table key of s to its default (other fields untouched). */
void mb_keys_defaults(struct mb_scenario *s);

/**
 * @brief Set key k of s from text as written on the command line or in a
 * sweep block: integers, numbers, true/false (yes/no/on/off/1/0), enum names
 * (case-insensitive), flag names joined with '+' (`none` = no flags), N or
 * MIN+MAX for ranges. No position in messages; no layout check.
 * @return 0, or -1 with e.g. "parallel.tp: expected an integer, got 'x'",
 *         "parallel.tp = 0 is out of range [1, 65536]",
 *         "moe.dispatcher: unknown value 'x'; expected one of: ..." in err.
 *         MB_KEY_SPECIAL keys are refused (-1).
 */
int mb_key_set(struct mb_scenario *s, const struct mb_key *k, const char *text, struct mb_err *err);

/**
 * @brief Value of key k in s as text (the form mb_key_set reads back).
 * @return 0, or -1 for MB_KEY_SPECIAL keys (buf set to "").
 */
int mb_key_format(const struct mb_scenario *s, const struct mb_key *k, char *buf, size_t len);

/** @brief 1 when key k of s holds its default value, else 0. */
int mb_key_is_default(const struct mb_scenario *s, const struct mb_key *k);

/**
 * @brief Name of value v of an enum key ("parallel.strategy", MB_STRAT_FSDP -> "fsdp").
 * @return the first name with that value, or "?" if the key or value is unknown.
 */
const char *mb_key_value_name(const char *key, unsigned v);

/**
 * @brief Names of the flags set in `flags` for a flag-list key, joined by sep
 * ("core_attn, layernorm"); "" when none.
 */
void mb_key_flag_names(const char *key, unsigned flags, const char *sep, char *buf, size_t len);

/**
 * @brief Comma-separated keys (and, when with_aliases, the alias list in
 * parentheses), for messages and --help.
 * @param sweep_only  1: only keys with MB_KEYF_SWEEP
 */
void mb_keys_list(int sweep_only, int with_aliases, char *buf, size_t len);

/**
 * @brief Read the table keys of one section from a YAML mapping into s.
 * @param[in]  map      the section's mapping (the document root for section "")
 * @param[in]  section  "" for the top level, else the part before the dot ("parallel")
 * @param[out] nodes    node of each key present, by mb_key_index (room for MB_KEYS_MAX);
 *                      at the top level, sections are not entered
 * @return 0, or -1 with file:line:col in err: unknown keys ("unknown key 'x' in
 *         parallel; expected one of: ..."), keys without a value, missing
 *         required keys, and the value errors of each type.
 */
int mb_keys_read(const struct mb_node *map, const char *section, struct mb_scenario *s,
                 const struct mb_node **nodes, struct mb_err *err);

/**
 * @brief The node of each key a scenario tree writes, found as mb_keys_read
 * finds them (aliases, sections), without reading a value: for a tree that
 * loaded, the same nodes[] the loader's warnings saw.
 * @param[out] nodes  by mb_key_index (room for MB_KEYS_MAX); keys not written stay NULL
 * @return 0, or -1 with file:line:col in err (an unknown key, a section that is no map)
 */
int mb_keys_nodes(const struct mb_node *root, const struct mb_node **nodes, struct mb_err *err);

/**
 * @brief Write the key reference (a Markdown table of every key: type,
 * default, sweepable, meaning) that docs/scenario-format.md carries between
 * its `<!-- keys:begin -->` and `<!-- keys:end -->` markers.
 */
void mb_keys_write_markdown(FILE *fp);

#endif /* MB_KEYS_H */
