/*
 * cmd_calibrate.c -- `mbsim calibrate nccl-tests LOG... [-o table.yaml]`:
 * turn real nccl-tests logs into a calibration table (docs/calibration.md,
 * "nccl-tests tables"). Exit codes: 0 ok, 1 bad log (file:line: message), 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "mb_import.h"

int mb_cmd_calibrate(int argc, char **argv);

static void usage(FILE *fp)
{
    fprintf(fp, "usage: mbsim calibrate nccl-tests LOG... [-o table.yaml]\n"
                "       mbsim calibrate nsys KERN_SUM.csv [--shapes S.yaml] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
                "       mbsim calibrate kineto TRACE.json[.gz] [--gpu NAME] [--base TABLE] [-o OUT.yaml]\n"
                "\n"
                "nccl-tests: parses nccl-tests output (out-of-place/in-place blocks, several runs per\n"
                "file, MPI-prefixed lines, #wrong or error column, truncated files) and writes a YAML\n"
                "table of size, time, algbw and busbw per run (stdout without -o).\n"
                "nsys / kineto: import a profile into a calibration overlay table (measured GEMM,\n"
                "attention and grouped-GEMM points, collectives, host time per launch) that a\n"
                "scenario names as calibration: {table: OUT.yaml}; see `mbsim calibrate nsys --help`.\n"
                "exit codes: 0 ok, 1 bad input (file:line: message), 2 usage error\n");
}

int mb_cmd_calibrate(int argc, char **argv)
{
    int i = (argc > 0 && !strcmp(argv[0], "calibrate")) ? 1 : 0;
    if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (i >= argc || strcmp(argv[i], "nccl-tests")) {
        fprintf(stderr, "mbsim calibrate: expected the source kind 'nccl-tests', 'nsys' or 'kineto'%s%s\n", i < argc ? ", got " : "",
                i < argc ? argv[i] : "");
        usage(stderr);
        return 2;
    }
    const char *out = NULL;
    const char *logs[256];
    int n = 0;
    for (i++; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "mbsim calibrate: -o needs a file name\n");
                return 2;
            }
            out = argv[++i];
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "mbsim calibrate: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (n < 256) {
            logs[n++] = argv[i];
        } else {
            fprintf(stderr, "mbsim calibrate: at most 256 logs\n");
            return 2;
        }
    }
    if (!n) {
        fprintf(stderr, "mbsim calibrate nccl-tests: no LOG given\n");
        usage(stderr);
        return 2;
    }
    struct mb_nccl_log log = {0};
    struct mb_err err;
    mb_err_clear(&err);
    for (int k = 0; k < n; k++)
        if (mb_import_nccl_tests(logs[k], &log, &err)) {
            char msg[1024];
            mb_err_format(&err, msg, sizeof msg);
            fprintf(stderr, "mbsim calibrate: %s\n", msg);
            mb_nccl_log_free(&log);
            return 1;
        }
    FILE *o = out ? fopen(out, "w") : stdout;
    if (!o) {
        fprintf(stderr, "mbsim calibrate: cannot write '%s'\n", out);
        mb_nccl_log_free(&log);
        return 1;
    }
    int rc = mb_nccl_log_write_yaml(&log, o);
    if (out && fclose(o))
        rc = -1;
    mb_nccl_log_free(&log);
    if (rc) {
        fprintf(stderr, "mbsim calibrate: write error on '%s'\n", out ? out : "stdout");
        return 1;
    }
    return 0;
}
