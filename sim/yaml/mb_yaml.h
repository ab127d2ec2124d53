/*
 * mb_yaml.h -- the only module that walks libyaml documents.
 *
 * A YAML file is loaded into an mbsim-owned tree of nodes, each carrying its
 * 1-based file:line:col, then the libyaml document is deleted (no borrowed
 * library pointers survive). Duplicate mapping keys are rejected at load time
 * (libyaml 0.2.5 accepts them). Everything else -- types, ranges, units,
 * unknown keys -- is checked by the table-driven reader mb_yaml_read_fields(),
 * so every loader in mbsim (scenarios, models, systems, calibration tables)
 * reports errors the same way: "file:line:col: message".
 */
#ifndef MB_YAML_H
#define MB_YAML_H

#include <stdio.h>

#include <stddef.h>
#include "mb_util.h"

enum mb_node_kind { MB_NODE_SCALAR, MB_NODE_SEQ, MB_NODE_MAP };

struct mb_node;

struct mb_pair {
    char *key;
    int line, col;          /* position of the key */
    struct mb_node *val;
};

struct mb_node {
    enum mb_node_kind kind;
    const char *file;       /* shared, owned by the root document */
    int line, col;          /* 1-based start of the node */
    char *str;              /* MB_NODE_SCALAR: the text ("" for empty) */
    int quoted;             /* scalar was quoted: never treated as null */
    size_t n;               /* SEQ: items; MAP: pairs */
    struct mb_node **items; /* MB_NODE_SEQ */
    struct mb_pair *pairs;  /* MB_NODE_MAP, in file order */
};

/**
 * @brief Load a YAML file (first document) into a node tree.
 * @param[in]  path  file to read
 * @param[out] err   filled on failure (syntax error at line:col, duplicate key,
 *                   unreadable file, empty document)
 * @return the root node (free with mb_yaml_free) or NULL on error.
 */
struct mb_node *mb_yaml_load_file(const char *path, struct mb_err *err);

/** @brief As mb_yaml_load_file, from a buffer; `name` is used in messages. */
struct mb_node *mb_yaml_load_string(const char *buf, size_t len,
                                    const char *name, struct mb_err *err);

/** @brief Free a tree returned by a loader; accepts NULL. */
void mb_yaml_free(struct mb_node *root);

/** @brief Value of `key` in a MAP node, or NULL if absent / not a map. */
const struct mb_node *mb_yaml_get(const struct mb_node *map, const char *key);

/** @brief Record an error located at node n ("file:line:col: ..."); returns -1. */
int mb_yaml_err(struct mb_err *err, const struct mb_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** @brief Require node kind; error "expected a mapping/sequence/scalar for 'what'". */
int mb_yaml_expect(const struct mb_node *n, enum mb_node_kind kind,
                   const char *what, struct mb_err *err);

/* Scalar converters. Each returns 0 or -1 with an error at the node: "expected an
 * integer, got 'x'" for what is no number; for a well-formed number that does not fit
 * (99999999999999999999, 1e999, 1e-999) "'S' is out of range for an integer (from
 * LONG_MIN to LONG_MAX)" or "... for a number (magnitude from 2.2e-308 to 1.8e308, or 0)". */
int mb_yaml_int(const struct mb_node *n, long *out, struct mb_err *err);
int mb_yaml_double(const struct mb_node *n, double *out, struct mb_err *err);

/**
 * @brief An integer in [lo, hi]: as mb_yaml_int, but any well-formed integer
 * outside the range, including one too large for a long, is
 * "WHAT = S is out of range [lo, hi]" (S as written).
 */
int mb_yaml_int_in(const struct mb_node *n, const char *what, double lo, double hi, long *out, struct mb_err *err);

/** @brief A number in [lo, hi]: as mb_yaml_int_in for mb_yaml_double (1e999: out of range). */
int mb_yaml_double_in(const struct mb_node *n, const char *what, double lo, double hi, double *out,
                      struct mb_err *err);
/** @brief A boolean: true/yes/on or false/no/off (any case), unquoted; what, if not NULL, names the
 * setting in the error. @return 0, or -1 with err set (a quoted "true" is a string, an error). */
int mb_yaml_bool_in(const struct mb_node *n, const char *what, int *out, struct mb_err *err);
/** @brief mb_yaml_bool_in without a name. */
int mb_yaml_bool(const struct mb_node *n, int *out, struct mb_err *err);

/** Physical quantities accepted with units (value + optional space + unit). */
enum mb_unit {
    MB_UNIT_NONE,     /* plain number */
    MB_UNIT_BYTES,    /* B, KB, MB, GB, TB (10^3), KiB, MiB, GiB, TiB (2^10) -> bytes */
    MB_UNIT_BW,       /* B/s, KB/s, MB/s, GB/s, TB/s, Gb/s, Gbit/s, Tb/s -> bytes/s */
    MB_UNIT_TIME,     /* ns, us, ms, s -> seconds */
    MB_UNIT_FLOPS,    /* FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s -> FLOP/s */
    MB_UNIT_POWER     /* mW, W, kW -> watts */
};

/**
 * @brief Parse a quantity such as "450 GB/s", "80 GiB", "1.5 us", "989 TFLOP/s".
 * A bare number is accepted only when `unit` is MB_UNIT_NONE or `bare_ok` is set
 * (then it is taken in base units: bytes, bytes/s, s, FLOP/s, W).
 * @return 0 or -1 with "bad unit 'x' for ..., expected one of ..." at the node.
 */
int mb_yaml_quantity(const struct mb_node *n, enum mb_unit unit, int bare_ok,
                     double *out, struct mb_err *err);

/** Field types for the table-driven reader. */
enum mb_ftype {
    MB_F_INT,     /* long */
    MB_F_DOUBLE,  /* double, unit from .unit (MB_UNIT_NONE = plain) */
    MB_F_BOOL,    /* int 0/1 */
    MB_F_STR,     /* char * (mb_strdup'd; caller frees) */
    MB_F_STRBUF,  /* char[.size] copied in place; error if too long */
    MB_F_NODE,    /* const struct mb_node * (borrowed from the tree) */
    MB_F_SKIP     /* key accepted, value not read (handled by the caller) */
};

struct mb_field {
    const char *key;
    enum mb_ftype type;
    size_t offset;        /* offsetof(struct, member) */
    size_t size;          /* MB_F_STRBUF: buffer size */
    int required;         /* missing key is an error */
    double min, max;      /* inclusive range for INT/DOUBLE; ignored if min > max */
    enum mb_unit unit;    /* MB_F_DOUBLE only */
};

/**
 * @brief Read a MAP node through a field table (terminated by {NULL}).
 * Unknown keys are errors at the key's position ("unknown key 'x' in what;
 * expected one of: a, b, c"); missing required keys are errors at the map.
 * Absent optional keys leave the destination untouched (so callers set
 * defaults first). A `null`/`~` value is treated as absent.
 * @param[out] seen  optional bitmask: bit i set when field i was present.
 * @return 0 or -1 (first error in err).
 */
int mb_yaml_read_fields(const struct mb_node *map, const struct mb_field *fields,
                        void *dst, const char *what, unsigned long long *seen,
                        struct mb_err *err);

/** @brief 1 if the scalar is YAML null ("", "~", "null") and not quoted. */
int mb_yaml_is_null(const struct mb_node *n);

/**
 * @brief Write s as a YAML double-quoted scalar: '"' and '\\' escaped, control
 * characters as \xNN. For the tables mbsim writes (calibration overlays).
 */
void mb_yaml_write_quoted(FILE *f, const char *s);

#endif /* MB_YAML_H */
