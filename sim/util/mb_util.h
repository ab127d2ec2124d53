/*
 * mb_util.h -- allocation, error context and floating-point helpers shared by
 * every mbsim module.
 *
 * Allocation never returns NULL: on exhaustion mbsim prints one line and
 * aborts (Redis zmalloc style), so call sites stay clean.
 *
 * Errors: library code never prints. It fills a caller-provided struct mb_err
 * (first error wins, later ones are only counted) and returns -1. Only the CLI
 * prints "file:line:col: message".
 */
#ifndef MB_UTIL_H
#define MB_UTIL_H

#include <stddef.h>
#include <stdarg.h>

/** @brief malloc that aborts on exhaustion; never returns NULL. */
void *mb_malloc(size_t n);
/** @brief calloc that aborts on exhaustion; never returns NULL. */
void *mb_calloc(size_t count, size_t size);
/** @brief realloc that aborts on exhaustion; never returns NULL. */
void *mb_realloc(void *p, size_t n);
/** @brief strdup through mb_malloc; NULL in gives NULL out. */
char *mb_strdup(const char *s);
/** @brief free; accepts NULL. */
void mb_free(void *p);

/* Named limits shared by every module's structs (bytes, with the terminating NUL). */
#define MB_PATH_LEN 512    /* a file path: scenario, table, log, node XML */
#define MB_SOURCE_LEN 1024 /* a "source:" citation of a model, system or calibration table */
#define MB_ERR_MSG_LEN 1536 /* an error message (lists of names: the 52 models of "unknown model") */
#define MB_ERR_FILE_LEN 256
/* A formatted error (mb_err_format): "file:line:col: " and the message. */
#define MB_ERR_TEXT_LEN (MB_ERR_FILE_LEN + MB_ERR_MSG_LEN + 48)

/** Error context filled by library code, printed only by the CLI. */
struct mb_err {
    char msg[MB_ERR_MSG_LEN];   /* first error message ("" when none) */
    char file[MB_ERR_FILE_LEN]; /* file the error refers to ("" when none) */
    int line, col;  /* 1-based position, 0 when unknown */
    int count;      /* number of errors reported (first one kept) */
};

/** @brief Reset an error context to "no error". */
void mb_err_clear(struct mb_err *e);

/**
 * @brief Record an error (printf-style) at file:line:col; the first one wins.
 * The message and the file name are kept with control characters and bytes
 * that are not UTF-8 written as \xNN (mb_text_escape): a message quoting
 * input never pastes raw bytes into a terminal, a log or a JSON report.
 * @param[out] e     error context; may be NULL (then nothing is recorded)
 * @param[in]  file  file the error is about, or NULL
 * @param[in]  line  1-based line, 0 if unknown
 * @param[in]  col   1-based column, 0 if unknown
 * @return always -1, so callers can `return mb_err_set(...)`.
 */
int mb_err_set(struct mb_err *e, const char *file, int line, int col,
               const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/**
 * @brief Format "file:line:col: msg" (or a shorter form when the position is
 * unknown) into buf. Used by the CLI and by tests that compare messages.
 */
void mb_err_format(const struct mb_err *e, char *buf, size_t len);

/* Floating-point tolerance kept in one place (SimGrid maxmin style).
 * MB_EPS is relative for magnitudes above 1 and absolute below. */
#define MB_EPS 1e-9

/** @brief |a-b| <= MB_EPS * max(1, |a|, |b|). */
int mb_dbl_eq(double a, double b);
/** @brief a - b, clamped to 0 when the result is within tolerance of 0 or negative. */
double mb_dbl_sub_clamp(double a, double b);

/**
 * @brief 1 if v is a whole number in [lo, hi] (finite, so casting it to long
 * is defined when lo and hi are within long's range), else 0. Every integer
 * an importer reads as a double passes through it before a cast.
 */
int mb_dbl_is_whole(double v, double lo, double hi);

/** @brief Concatenate dir + "/" + name into a freshly allocated string. */
char *mb_path_join(const char *dir, const char *name);
/**
 * @brief Absolute spelling of path: itself when it starts with '/', else
 * realpath() when it exists, else the current folder joined with it.
 * @return a malloc'd string (mb_free), or NULL for a NULL path.
 */
char *mb_path_absolute(const char *path);
/** @brief 1 if path names a readable regular file, else 0. */
int mb_file_exists(const char *path);

/** @brief 1 if path names an existing directory, else 0 (NULL: 0). */
int mb_dir_exists(const char *path);

/**
 * @brief Directory of mbsim's shipped data (topology/, workloads/, calibration/,
 * plots/, scenarios/). Resolution order, the first that applies:
 *   1. $MBSIM_DATA_DIR when set and not empty (used as given, even if wrong);
 *   2. the source tree recorded at build time (MBSIM_SOURCE_DIR) if it still
 *      holds workloads/models/ -- skipped when $MBSIM_NO_SOURCE_TREE is set to
 *      anything but "0" (a test hook: "the source tree is gone");
 *   3. the install tree next to the running binary, <bindir>/../share/mbsim,
 *      wherever `cmake --install --prefix` put it;
 *   4. the configured install data dir (MBSIM_INSTALL_DATADIR).
 * Never NULL; callers check that the directory has what they need.
 */
const char *mb_data_dir(void);

/** @brief Where mb_data_dir() came from, in words, for error messages. */
const char *mb_data_dir_origin(void);

/**
 * @brief The noun for a count in a message: `one` when n is 1, else `many`
 * ("1 row", "0 rows", "2 rows"): printf("%zu %s", n, mb_plural(n, "row", "rows")).
 */
const char *mb_plural(long long n, const char *one, const char *many);

/* FNV-1a, 64 bits: a content hash for provenance (which tables a sweep's rows
 * came from), not for security. Chain calls by passing the last result. */
#define MB_HASH64_INIT 0xcbf29ce484222325ULL
/** @brief FNV-1a of n bytes at p, continuing from h (MB_HASH64_INIT to start). */
unsigned long long mb_hash64(const void *p, size_t n, unsigned long long h);

/* A small deterministic PRNG (splitmix64) for seeded draws: image sizes,
 * routing skew. Same seed, same sequence on every platform. */
struct mb_rng { unsigned long long s; };
void mb_rng_seed(struct mb_rng *r, unsigned long long seed);
/** @brief Uniform double in [0, 1). */
double mb_rng_uniform(struct mb_rng *r);

/**
 * @brief Optimal string alignment distance of a and b: the fewest inserts, deletes, substitutions
 * and swaps of two neighbouring characters that turn a into b (Damerau 1964, without the
 * unrestricted transpositions), for "did you mean" suggestions.
 * @return the distance, or max + 1 once it exceeds max (also for strings of 96 bytes or more).
 */
int mb_edit_distance(const char *a, const char *b, int max);

#endif /* MB_UTIL_H */
