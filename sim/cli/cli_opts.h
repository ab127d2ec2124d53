/*
 * cli_opts.h -- every mbsim subcommand parses its options with getopt_long
 * through this wrapper, so they all behave alike:
 *
 *  - options and operands mix in any order; operands come back one at a time
 *    in the order given (argv is never permuted: sweep reprints it to resume);
 *  - "--name VALUE", "--name=VALUE", "-x VALUE" and "-xVALUE" are the same;
 *  - "--" ends the options (what follows is operands, "-" is an operand);
 *  - a long option must be spelled out: getopt_long's unique-prefix
 *    abbreviations are refused like unknown options (a script that says
 *    --js would break the day a --jsonl is added), with the near names;
 *  - the two usage errors are printed here, one line on stderr:
 *      mbsim CMD: unknown option 'X' [(did you mean --Y?)]
 *      mbsim CMD: X needs a value
 *      mbsim CMD: --X takes no value        (--json=1)
 *      mbsim CMD: --X given twice (A, then B); give it once
 *    and the caller returns exit code 2 (it may print its usage too);
 *  - an option that takes a value may be given once: a second one is the
 *    usage error above, not a silent last-wins (issue 37), whatever the
 *    spellings ("-j 2 --jobs 4"); options the command marks with
 *    cli_opts_repeatable (--set, --recipes) collect every value instead.
 *    Options without a value (--json) may be repeated: they mean the same.
 */
#ifndef MB_CLI_OPTS_H
#define MB_CLI_OPTS_H

#include <getopt.h>

/* Exit codes of every subcommand (docs/cli.md): 1 bad input, 2 usage error. */
#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

enum {
    CLI_END = -1,     /* no argument left */
    CLI_OPERAND = -2, /* *arg is the next operand */
    CLI_USAGE = -3    /* unknown option or missing value: the message is printed */
};

struct cli_opts {
    const char *cmd;               /* "mbsim run": the messages' prefix */
    char optstring[64];            /* "-:" + the short options */
    const struct option *longopts; /* ends with {0}; may be NULL */
    int argc;
    char **argv;                   /* owned copy: argv[0] = cmd, then the arguments, NULL */
    int rest;                      /* after getopt's end: the next operand after "--" */
    char name[64];                 /* spelling of the option just returned: "--json", "-j" */
    int repeatable[8], n_repeatable; /* vals that may be given again (cli_opts_repeatable) */
    struct {
        int val;
        char name[64];     /* as spelled the first time */
        const char *value; /* its value, NULL for an optional one left out */
    } seen[32];            /* the options with a value given so far */
    int n_seen;
};

/**
 * @brief Start parsing argv[0..argc-1] (the arguments after the subcommand).
 * @param cmd        message prefix, e.g. "mbsim sweep"; must outlive g
 * @param shortopts  getopt short options ("j:o:"), "" for none
 * @param longopts   getopt_long table (flag must be NULL: val is returned), or NULL
 */
void cli_opts_init(struct cli_opts *g, const char *cmd, const char *shortopts, const struct option *longopts,
                   int argc, char **argv);

/**
 * @brief Let the option val (a short option's character or a long option's
 * val) be given more than once: each value is returned in turn. By default an
 * option that takes a value may be given once.
 */
void cli_opts_repeatable(struct cli_opts *g, int val);

/**
 * @brief The next option or operand.
 * @param[out] arg  the option's value (NULL when it takes none), or the operand
 * @return the option's val (short option character or long option val),
 *         CLI_OPERAND, CLI_END, or CLI_USAGE after printing the error (also
 *         for a second value of an option not marked repeatable).
 */
int cli_opts_next(struct cli_opts *g, const char **arg);

/** @brief The option just returned as the user spelled it ("--output" or "-o"). */
const char *cli_opts_name(const struct cli_opts *g);

void cli_opts_free(struct cli_opts *g);

/**
 * @brief The CPUs this process may run on: its affinity mask (taskset,
 * cgroups, a Slurm allocation), not the machine's; the online CPUs if the mask
 * cannot be read. The default of sweep -j and validate -j. Always >= 1.
 */
long cli_usable_cpus(void);

/** @brief Most threads a -j / --jobs option accepts (CLI_JOBS_MAX). */
#define CLI_JOBS_MAX 1024

/**
 * @brief Parse the value of a -j / --jobs option: a whole number of threads
 * from 1 to CLI_JOBS_MAX. On a bad value prints "CMD: OPT 'V': expected a
 * number of threads from 1 to 1024" on stderr.
 * @param[in]  cmd   the command as the message names it ("mbsim sweep")
 * @param[in]  opt   the option as the user spelled it ("-j", "--jobs")
 * @param[in]  v     the value
 * @param[out] jobs  the number, untouched on error
 * @return 0, or -1 after printing the error
 */
int cli_parse_jobs(const char *cmd, const char *opt, const char *v, int *jobs);

/**
 * @brief A count option's value: decimal digits only (no sign, no blank before
 * or after: " 0/2" and "2 " are refused alike), within [lo, hi].
 * @return 0 with *out set, or -1 (the caller prints its message).
 */
int cli_parse_long(const char *v, long lo, long hi, long *out);

/** @brief The default of -j / --jobs: cli_usable_cpus(), at most CLI_JOBS_MAX. */
int cli_default_jobs(void);

/**
 * @brief Print a loaded scenario's warnings (mb_scenario.warnings: settings
 * that change nothing) on stderr, each line as "mbsim: file:line:col: warning: ...".
 * @param[in] warnings  newline-terminated lines, "" or NULL for none
 */
void cli_print_warnings(const char *warnings);

#endif
