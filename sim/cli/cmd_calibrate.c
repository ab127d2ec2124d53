/*
 * cmd_calibrate.c -- `mbsim calibrate nccl-tests LOG... [--gpu NAME] [--base TABLE]
 * [--ranks N] [-o table.yaml]`: turn real nccl-tests logs into a calibration
 * overlay table that scenarios and `mbsim collective --calib` name
 * (docs/calibration.md, "Measured collectives"). Exit codes: 0 ok, 1 bad log
 * (file:line: message), 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "calib_target.h"
#include "cli.h"
#include "mb_import.h"

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp, "usage: mbsim calibrate nccl-tests LOG... [--gpu NAME] [--base TABLE] [--ranks N] [-o table.yaml]\n"
                "       mbsim calibrate nsys KERN_SUM.csv [--shapes S.yaml] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
                "       mbsim calibrate kineto TRACE.json[.gz] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
                "\n"
                "nccl-tests: parses nccl-tests output (out-of-place/in-place blocks, several runs per\n"
                "file, MPI-prefixed lines, #wrong or error column, truncated files) and writes a\n"
                "calibration overlay (stdout without -o) whose measured collectives answer the\n"
                "simulated ones of that op and group size: `calibration: {table: OUT.yaml}` in a\n"
                "scenario, or `mbsim collective --calib OUT.yaml`. The GPU comes from the log's\n"
                "device names (--gpu names it when they name no known GPU, and may not contradict\n"
                "them); --base defaults to that GPU's shipped table;\n"
                "--ranks gives the group size when the log lists no '#  Rank' lines.\n"
                "nsys / kineto: import a profile into a calibration overlay table (measured GEMM,\n"
                "attention and grouped-GEMM points, collectives, host time per launch) that a\n"
                "scenario names as calibration: {table: OUT.yaml}; see `mbsim calibrate nsys --help`.\n"
                "exit codes: 0 ok, 1 bad input (file:line: message), 2 usage error\n");
}

/* What mb_nccl_log_write_table takes, for mb_cli_write_table. */
struct mb_cli__nccl_table {
    const struct mb_nccl_log *log;
    const char *gpu, *base;
    int ranks;
};

static int mb_cli__make_nccl_table(FILE *fp, void *ctx, struct mb_err *err)
{
    const struct mb_cli__nccl_table *t = ctx;
    return mb_nccl_log_write_table(t->log, t->gpu, t->base, t->ranks, fp, err);
}

/* `mbsim calibrate nccl-tests LOG...` (argv[0] is "nccl-tests"), and the usage of every kind. */
static int mb_cli__calibrate_nccl_tests(int argc, char **argv)
{
    int i = (argc > 0 && !strcmp(argv[0], "calibrate")) ? 1 : 0;
    if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
        mb_cli__usage(stdout);
        return 0;
    }
    if (i >= argc || strcmp(argv[i], "nccl-tests")) {
        fprintf(stderr, "mbsim calibrate: expected the source kind 'nccl-tests', 'nsys', 'kineto', 'runs' or 'transfer'%s%s%s\n",
                i < argc ? ", got '" : "", i < argc ? argv[i] : "", i < argc ? "'" : "");
        mb_cli__usage(stderr);
        return 2;
    }
    const char *out = NULL, *gpu = NULL, *base = NULL;
    const char *logs[256];
    int n = 0, ranks = 0;
    enum { O_GPU = 256, O_BASE, O_RANKS };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},      {"output", required_argument, NULL, 'o'},
                                       {"gpu", required_argument, NULL, O_GPU}, {"base", required_argument, NULL, O_BASE},
                                       {"ranks", required_argument, NULL, O_RANKS}, {0}};
    struct cli_opts opts;
    const char *v;
    int c, prc = -1;
    cli_opts_init(&opts, "mbsim calibrate", "ho:", lo, argc - i - 1, argv + i + 1);
    while (prc < 0 && (c = cli_opts_next(&opts, &v)) != CLI_END) {
        if (c == 'o') {
            out = v;
        } else if (c == O_GPU) {
            gpu = v;
        } else if (c == O_BASE) {
            base = v;
        } else if (c == O_RANKS) {
            long r = 0;
            if (cli_parse_long(v, 2, 1 << 24, &r)) {
                fprintf(stderr, "mbsim calibrate: --ranks '%s': expected a group size from 2 to %d\n", v, 1 << 24);
                prc = 2;
            }
            ranks = (int)r;
        } else if (c == 'h') {
            mb_cli__usage(stdout);
            prc = 0;
        } else if (c != CLI_OPERAND) {
            prc = 2;
        } else if (n < 256) {
            logs[n++] = v;
        } else {
            fprintf(stderr, "mbsim calibrate: at most 256 logs\n");
            prc = 2;
        }
    }
    cli_opts_free(&opts);
    if (prc >= 0)
        return prc;
    if (!n) {
        fprintf(stderr, "mbsim calibrate nccl-tests: no LOG given\n");
        mb_cli__usage(stderr);
        return 2;
    }
    struct mb_nccl_log log = {0};
    struct mb_err err;
    mb_err_clear(&err);
    char msg[MB_ERR_TEXT_LEN];
    for (int k = 0; k < n; k++)
        if (mb_import_nccl_tests(logs[k], &log, &err)) {
            mb_err_format(&err, msg, sizeof msg);
            fprintf(stderr, "mbsim calibrate: %s\n", msg);
            mb_nccl_log_free(&log);
            return 1;
        }
    /* the GPU: the device name the logs print (all runs must agree); --gpu names it
     * when they print none, and may not contradict them */
    char found[64] = "";
    for (int k = 0; k < log.n_runs; k++) {
        const struct mb_nccl_run *r = &log.runs[k];
        char g[64];
        if (!r->gpu_name[0] || mb_calib_target_gpu(r->gpu_name, g, sizeof g))
            continue;
        if (found[0] && strcmp(found, g)) {
            fprintf(stderr, "mbsim calibrate: %s:%d:1: the logs were measured on %s and %s; calibrate each GPU "
                            "separately\n", r->file, r->line, found, g);
            mb_nccl_log_free(&log);
            return 1;
        }
        snprintf(found, sizeof found, "%s", g);
    }
    if (gpu && found[0] && strcasecmp(gpu, found)) {
        fprintf(stderr, "mbsim calibrate: the logs were measured on %s; --gpu %s disagrees (--gpu is for logs "
                        "whose device lines name no known GPU)\n", found, gpu);
        mb_nccl_log_free(&log);
        return 2;
    }
    if (!gpu && !found[0]) {
        fprintf(stderr, "mbsim calibrate: no device line of the logs names a known GPU (%s); give --gpu NAME\n",
                log.runs[0].gpu_name[0] ? log.runs[0].gpu_name : "none printed");
        mb_nccl_log_free(&log);
        return 2;
    }
    if (found[0])
        gpu = found; /* the shipped table's spelling */
    if (mb_calib_target_check(gpu, base ? base : gpu, msg, sizeof msg)) {
        fprintf(stderr, "mbsim calibrate: %s\n", msg);
        mb_nccl_log_free(&log);
        return 2;
    }
    if (mb_nccl_log_write_table(&log, gpu, base ? base : gpu, ranks, NULL, &err)) { /* check before writing */
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim calibrate: %s\n", msg);
        mb_nccl_log_free(&log);
        return 1;
    }
    struct mb_cli__nccl_table t = {&log, gpu, base ? base : gpu, ranks};
    int rc = mb_cli_write_table("mbsim calibrate", out, NULL, mb_cli__make_nccl_table, &t);
    mb_nccl_log_free(&log);
    return rc;
}

/* The kinds of `mbsim calibrate KIND ...` with a command of their own; any other
 * word (nccl-tests, --help, a typo) goes to calibrate_nccl_tests, which names the kinds. */
int mb_cmd_calibrate(int argc, char **argv)
{
    if (argc > 0 && !strcmp(argv[0], "runs"))
        return mb_cmd_calibrate_runs(argc - 1, argv + 1);
    if (argc > 0 && !strcmp(argv[0], "transfer"))
        return mb_cmd_calibrate_transfer(argc - 1, argv + 1);
    if (argc > 0 && (!strcmp(argv[0], "nsys") || !strcmp(argv[0], "kineto")))
        return mb_cmd_calibrate_profile(argv[0], argc - 1, argv + 1);
    return mb_cli__calibrate_nccl_tests(argc, argv);
}
