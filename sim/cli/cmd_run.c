/*
 * cmd_run.c -- `mbsim run FILE.yaml`: simulate one steady-state training step
 * and print the report (text or JSON), the op table, a trace, or the scenario
 * as Megatron flags (--emit).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_scenario.h"
#include "mb_step.h"
#include "report.h"

static void mb_cli__usage_run(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim run FILE.yaml [--json] [--memory] [--ops] [--roofline] [--trace OUT.json[.gz]]\n"
            "       mbsim run FILE.yaml --emit megatron|bridge\n"
            "\n"
            "Simulates one steady-state training step of the scenario in FILE.yaml\n"
            "(format: docs/scenario-format.md) and prints step time, tokens/s/GPU,\n"
            "model TFLOP/s/GPU, MFU, per-rank peak memory with an OOM verdict and a\n"
            "time breakdown.\n"
            "\n"
            "  --json       print one JSON object instead of the text report (with the op table, `ops`)\n"
            "  --memory     add the per-rank memory breakdown to the text report\n"
            "  --ops        add the per-op table of the critical stage: count, time, share of the\n"
            "               step, achieved TFLOP/s or GB/s and fraction of peak\n"
            "  --roofline   ignore measured kernel tables (roofline-only prediction)\n"
            "  --trace F    write a Chrome/Perfetto trace of the simulated ranks to F from the same\n"
            "               simulation: slices per op, layer, direction and microbatch; F.gz is\n"
            "               gzip; - writes the trace alone to stdout (the report goes to stderr)\n"
            "               (open in ui.perfetto.dev or chrome://tracing)\n"
            "  --emit D     print the scenario as Megatron-LM flags (D = megatron) or Megatron-Bridge\n"
            "               overrides (D = bridge) instead of simulating; what has no Megatron\n"
            "               setting goes to stderr as # lines (docs/import.md)\n");
}

int mb_cmd_run(int argc, char **argv)
{
    const char *file = NULL, *trace = NULL, *v;
    int json = 0, memory = 0, roofline = 0, ops = 0, emit = -1, c;
    enum { O_JSON = 256, O_OPS, O_MEMORY, O_ROOFLINE, O_TRACE, O_EMIT };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},         {"json", no_argument, NULL, O_JSON},
                                       {"ops", no_argument, NULL, O_OPS},           {"memory", no_argument, NULL, O_MEMORY},
                                       {"roofline", no_argument, NULL, O_ROOFLINE}, {"trace", required_argument, NULL, O_TRACE},
                                       {"emit", required_argument, NULL, O_EMIT},   {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim run", "h", lo, argc, argv);
    int rc = -1;
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        switch (c) {
        case 'h':
            mb_cli__usage_run(stdout);
            rc = 0;
            break;
        case O_JSON:
            json = 1;
            break;
        case O_OPS:
            ops = 1;
            break;
        case O_MEMORY:
            memory = 1;
            break;
        case O_ROOFLINE:
            roofline = 1;
            break;
        case O_TRACE:
            trace = v;
            break;
        case O_EMIT:
            if (mb_cmd_emit_parse("run", v, &emit))
                rc = EXIT_USAGE;
            break;
        case CLI_OPERAND:
            if (!file) {
                file = v;
                break;
            }
            fprintf(stderr, "mbsim run: one scenario file expected, got '%s' too\n", v);
            rc = EXIT_USAGE;
            break;
        default: /* CLI_USAGE: printed */
            mb_cli__usage_run(stderr);
            rc = EXIT_USAGE;
        }
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!file) {
        mb_cli__usage_run(stderr);
        return EXIT_USAGE;
    }
    if (emit >= 0 && (json || memory || ops || roofline || trace)) {
        fprintf(stderr, "mbsim run: --emit prints the scenario as flags and simulates nothing; it takes no "
                        "--json, --memory, --ops, --roofline or --trace\n");
        return EXIT_USAGE;
    }
    struct mb_scenario s;
    struct mb_result r;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_cli_check_data_dir())
        return EXIT_BAD_INPUT;
    if (mb_scenario_load(file, &s, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    cli_print_warnings(s.warnings);
    if (emit >= 0) {
        rc = mb_cmd_emit(&s, emit);
        mb_scenario_free(&s);
        return rc;
    }
    if (roofline)
        s.roofline = 1;
    /* one simulation gives the report, the op table and the trace */
    struct mb_step_opts o = {.critical_path = 1, .trace = trace, .ops = ops || json};
    if (mb_step_simulate_opts(&s, &o, &r, &err)) {
        mb_cli_print_err(&err);
        mb_scenario_free(&s);
        return EXIT_BAD_INPUT;
    }
    FILE *out = trace && !strcmp(trace, "-") ? stderr : stdout; /* the trace owns stdout */
    if (json)
        mb_report_json(&s, &r, out);
    else
        mb_report_text(&s, &r, memory, out);
    mb_result_free(&r);
    mb_scenario_free(&s);
    return 0;
}
