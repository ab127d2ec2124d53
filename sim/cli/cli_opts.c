/*
 * cli_opts.c -- getopt_long for the subcommands (cli_opts.h).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cli.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_text.h"
#include "mb_util.h"

void cli_opts_init(struct cli_opts *g, const char *cmd, const char *shortopts, const struct option *longopts,
                   int argc, char **argv)
{
    memset(g, 0, sizeof *g);
    g->cmd = cmd;
    /* '-': operands are returned in order (no permutation); ':': no getopt messages, ':' for a missing value */
    snprintf(g->optstring, sizeof g->optstring, "-:%s", shortopts ? shortopts : "");
    g->longopts = longopts;
    g->argc = argc + 1;
    g->argv = mb_malloc(sizeof *g->argv * (size_t)(argc + 2));
    g->argv[0] = (char *)cmd;
    for (int i = 0; i < argc; i++)
        g->argv[i + 1] = argv[i];
    g->argv[argc + 1] = NULL;
    g->rest = -1;
    optind = 0; /* glibc: start afresh */
    opterr = 0;
}

void cli_opts_free(struct cli_opts *g)
{
    mb_free(g->argv);
    g->argv = NULL;
}

const char *cli_opts_name(const struct cli_opts *g)
{
    return g->name;
}

/* Length of the option name in "--name[=value]" (s past the dashes). */
static size_t mb_cli__name_len(const char *s)
{
    return strcspn(s, "=");
}

/* The long option spelled exactly s (past "--"), or NULL. */
static const struct option *mb_cli__exact(const struct cli_opts *g, const char *s)
{
    size_t n = mb_cli__name_len(s);
    for (const struct option *o = g->longopts; o && o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, s, n))
            return o;
    return NULL;
}

/* s as printable text (mb_text.h): an argument quoted in a message. */
static const char *mb_cli__safe(const char *s, char *buf, size_t n)
{
    mb_text_escape(buf, n, s, NULL);
    return buf;
}

/* "unknown option '--X'" with the long options X abbreviates, if any. */
static void mb_cli__unknown_long(const struct cli_opts *g, const char *s)
{
    char safe[256];
    size_t n = mb_cli__name_len(s);
    char near[256] = "";
    int k = 0;
    for (const struct option *o = g->longopts; o && o->name && n; o++)
        if (!strncmp(o->name, s, n)) {
            size_t l = strlen(near);
            snprintf(near + l, sizeof near - l, "%s--%s", k ? " or " : "", o->name);
            k++;
        }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)n, s);
    fprintf(stderr, "%s: unknown option '--%s'%s%s%s\n", g->cmd, mb_cli__safe(name, safe, sizeof safe),
            k ? " (did you mean " : "", near, k ? "?)" : "");
}

void cli_opts_repeatable(struct cli_opts *g, int val)
{
    if (g->n_repeatable < (int)(sizeof g->repeatable / sizeof g->repeatable[0]))
        g->repeatable[g->n_repeatable++] = val;
}

/* Does option c (long option li, or -1 for a short one) take a value? */
static int mb_cli__takes_value(const struct cli_opts *g, int c, int li)
{
    if (li >= 0)
        return g->longopts[li].has_arg != no_argument;
    const char *p = strchr(g->optstring + 2, c);
    return p && p[1] == ':';
}

/* The option's name for messages: its long name when it has one ("--jobs" for -j). */
static void mb_cli__display_name(const struct cli_opts *g, int c, char *buf, size_t n)
{
    for (const struct option *o = g->longopts; o && o->name; o++)
        if (o->val == c) {
            snprintf(buf, n, "--%s", o->name);
            return;
        }
    snprintf(buf, n, "-%c", c);
}

/* Record option c with value v; a usage error (printed, -1) when an option that
 * takes one value was given before. The values are named as the user spelled
 * them when the spellings differ ("-j 2, then --jobs 4"). */
static int mb_cli__once(struct cli_opts *g, int c, const char *v)
{
    for (int i = 0; i < g->n_repeatable; i++)
        if (g->repeatable[i] == c)
            return 0;
    for (int i = 0; i < g->n_seen; i++) {
        if (g->seen[i].val != c)
            continue;
        char disp[64], a[160], b[160];
        const char *va = g->seen[i].value, *vb = v;
        int same = !strcmp(g->seen[i].name, g->name);
        mb_cli__display_name(g, c, disp, sizeof disp);
        char sa[4 * sizeof a], sb[4 * sizeof b];
        snprintf(a, sizeof a, "%s%s%s", same ? "" : g->seen[i].name, same || !va ? "" : " ", va ? va : "");
        snprintf(b, sizeof b, "%s%s%s", same ? "" : g->name, same || !vb ? "" : " ", vb ? vb : "");
        fprintf(stderr, "%s: %s given twice (%s, then %s); give it once\n", g->cmd, disp,
                *a ? mb_cli__safe(a, sa, sizeof sa) : "no value", *b ? mb_cli__safe(b, sb, sizeof sb) : "no value");
        return -1;
    }
    if (g->n_seen < (int)(sizeof g->seen / sizeof g->seen[0])) {
        g->seen[g->n_seen].val = c;
        snprintf(g->seen[g->n_seen].name, sizeof g->seen[g->n_seen].name, "%s", g->name);
        g->seen[g->n_seen++].value = v;
    }
    return 0;
}

int cli_opts_next(struct cli_opts *g, const char **arg)
{
    *arg = NULL;
    g->name[0] = 0;
    if (g->rest >= 0) { /* operands after "--" */
        if (g->rest >= g->argc)
            return CLI_END;
        *arg = g->argv[g->rest++];
        return CLI_OPERAND;
    }
    int before = optind ? optind : 1, li = -1;
    int c = getopt_long(g->argc, g->argv, g->optstring, g->longopts ? g->longopts : (const struct option[]){{0}}, &li);
    const char *el = before < g->argc ? g->argv[before] : "";
    int is_long = el[0] == '-' && el[1] == '-' && el[2];
    if (c == -1) {
        g->rest = optind;
        return cli_opts_next(g, arg);
    }
    if (c == 1) {
        *arg = optarg;
        return CLI_OPERAND;
    }
    if (c == '?' && is_long && mb_cli__exact(g, el + 2) && strchr(el, '=')) { /* --json=1 */
        fprintf(stderr, "%s: --%.*s takes no value\n", g->cmd, (int)mb_cli__name_len(el + 2), el + 2);
        return CLI_USAGE;
    }
    if (c == '?' || (c == ':' && is_long && !mb_cli__exact(g, el + 2))) {
        if (is_long)
            mb_cli__unknown_long(g, el + 2);
        else
            fprintf(stderr, "%s: unknown option '-%c'\n", g->cmd, optopt ? optopt : '?');
        return CLI_USAGE;
    }
    if (c == ':') {
        if (is_long)
            fprintf(stderr, "%s: --%.*s needs a value\n", g->cmd, (int)mb_cli__name_len(el + 2), el + 2);
        else
            fprintf(stderr, "%s: -%c needs a value\n", g->cmd, optopt);
        return CLI_USAGE;
    }
    if (li >= 0) {
        if (!is_long || !mb_cli__exact(g, el + 2)) { /* an abbreviation getopt_long completed */
            mb_cli__unknown_long(g, is_long ? el + 2 : g->longopts[li].name);
            return CLI_USAGE;
        }
        snprintf(g->name, sizeof g->name, "--%s", g->longopts[li].name);
    } else {
        snprintf(g->name, sizeof g->name, "-%c", c);
    }
    if (mb_cli__takes_value(g, c, li) && mb_cli__once(g, c, optarg))
        return CLI_USAGE;
    *arg = optarg;
    return c;
}

long cli_usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

int cli_default_jobs(void)
{
    long n = cli_usable_cpus();
    return (int)(n > CLI_JOBS_MAX ? CLI_JOBS_MAX : n);
}

int cli_parse_long(const char *v, long lo, long hi, long *out)
{
    if (!v || *v < '0' || *v > '9') /* strtol would take a sign and leading blanks */
        return -1;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*end || errno || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

int cli_parse_jobs(const char *cmd, const char *opt, const char *v, int *jobs)
{
    long n;
    if (cli_parse_long(v, 1, CLI_JOBS_MAX, &n)) {
        char safe[256];
        fprintf(stderr, "%s: %s '%s': expected a number of threads from 1 to %d\n", cmd, opt,
                mb_cli__safe(v, safe, sizeof safe), CLI_JOBS_MAX);
        return -1;
    }
    *jobs = (int)n;
    return 0;
}

void cli_print_warnings(const char *warnings)
{
    for (const char *p = warnings; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[2048], safe[4 * sizeof line];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        mb_text_escape(safe, sizeof safe, line, NULL); /* a warning quotes the file's values (mb_text.h) */
        fprintf(stderr, "mbsim: %s\n", safe);
        p += n + (nl != NULL);
    }
}

void mb_cli_print_err(const struct mb_err *e)
{
    char buf[MB_ERR_TEXT_LEN];
    mb_err_format(e, buf, sizeof buf);
    fprintf(stderr, "mbsim: %s\n", buf);
}

/* The shipped data (models, systems, calibration) must be where mb_data_dir() says. */
int mb_cli_check_data_dir(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/workloads/models/llama3_8b.yaml", mb_data_dir());
    if (mb_file_exists(path))
        return 0;
    fprintf(stderr,
            "mbsim: data directory '%s' (%s) has no workloads/models/; set MBSIM_DATA_DIR to an mbsim "
            "source tree or to the share/mbsim of an install (cmake --install build --prefix P)\n",
            mb_data_dir(), mb_data_dir_origin());
    return -1;
}
