/*
 * cmd_run.c -- `mbsim run FILE.yaml`: simulate one steady-state training step
 * and print the report (text or JSON), the op table, a trace, or the scenario
 * as Megatron flags (--emit).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_input.h"
#include "mb_keys.h"
#include "mb_scenario.h"
#include "mb_step.h"
#include "mb_sweep.h"
#include "mb_yaml.h"
#include "report.h"

#define MB_RUN_MAX_SETS 64

static void mb_cli__usage_run(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim run FILE.yaml|- [--set key=value]... [--json] [--memory] [--ops] [--roofline]\n"
            "                 [--trace OUT.json[.gz]]\n"
            "       mbsim run FILE.yaml|- [--set key=value]... --emit megatron|bridge\n"
            "\n"
            "Simulates one steady-state training step of the scenario in FILE.yaml\n"
            "(format: docs/scenario-format.md) and prints step time, tokens/s/GPU,\n"
            "model TFLOP/s/GPU, MFU, per-rank peak memory with an OOM verdict and a\n"
            "time breakdown. - reads the scenario from standard input (messages name\n"
            "<stdin>:line:col; relative model, system and table paths are taken from\n"
            "the current directory).\n"
            "\n"
            "  --set k=v    set a dotted scenario key before simulating, e.g. parallel.tp=4 (repeatable;\n"
            "               the keys and values of sweep --set, one value each; lists join names\n"
            "               with '+': recompute.modules=core_attn+mlp)\n"
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

/* The scenario text as given (FILE, or standard input for "-"), loaded as it is. */
static int mb_cli__run_load_plain(const char *text, size_t len, const char *name, struct mb_scenario *s,
                                  struct mb_err *err)
{
    struct mb_node *root = mb_yaml_load_string(text, len, name, err);
    if (!root)
        return -1;
    int rc = mb_scenario_load_node(root, name, s, err);
    mb_yaml_free(root);
    return rc;
}

/* The first scenario key whose value differs between a and b (mb_key_format), or NULL. */
static const struct mb_key *mb_cli__run_changed(const struct mb_scenario *a, const struct mb_scenario *b)
{
    size_t nk;
    const struct mb_key *k = mb_keys(&nk);
    for (size_t i = 0; i < nk; i++) {
        char va[1100], vb[1100];
        if (k[i].type == MB_KEY_SPECIAL || !strncmp(k[i].key, "measured.", 9))
            continue;
        mb_key_format(a, &k[i], va, sizeof va);
        mb_key_format(b, &k[i], vb, sizeof vb);
        if (strcmp(va, vb))
            return &k[i];
    }
    return NULL;
}

/* A measured: block describes the file's configuration: once --set changed one of its keys the
 * prediction is of another run, so the comparison is dropped (text and JSON) with a note. */
static void mb_cli__run_unmeasure(const struct mb_scenario *file, struct mb_scenario *s, const char *name)
{
    const struct mb_key *k = mb_scenario_measured(s) ? mb_cli__run_changed(file, s) : NULL;
    if (!k)
        return;
    fprintf(stderr, "mbsim run: %s: the measured: block is not compared: --set changed %s, so this is not the "
                    "run it measured\n", name, k->key);
    s->meas_tokens_per_s_per_gpu = s->meas_step_time_s = s->meas_model_tflops_per_gpu = 0;
    s->meas_peak_memory_gib = 0;
    s->meas_oom = 0;
}

/* The scenario with the --set values applied by the sweep machinery (the keys, aliases and
 * value checks of `sweep --set`, and its rules for a switched recompute granularity), as a
 * sweep of one configuration. s shares sw's model: free sw, not s. Returns 0, EXIT_BAD_INPUT
 * or EXIT_USAGE (a bad --set, named), after printing the error. */
static int mb_cli__run_load_set(const char *text, size_t len, const char *name, const char *const *sets, int n_sets,
                                struct mb_sweep *sw, struct mb_scenario *s)
{
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_sweep_load_text(text, len, name, sw, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    if (sw->n_axes) {
        fprintf(stderr, "mbsim run: %s: has a sweep: block; run simulates one configuration (use mbsim sweep)\n",
                name);
        return EXIT_BAD_INPUT;
    }
    if (cli_sets_once("mbsim run", sets, n_sets)) /* a key given twice: not last-wins */
        return EXIT_USAGE;
    for (int k = 0; k < n_sets; k++) {
        const char *eq = strchr(sets[k], '=');
        if (!eq || eq == sets[k] || !eq[1]) {
            fprintf(stderr, "mbsim run: --set %s: expected key=value (e.g. parallel.tp=4)\n", sets[k]);
            return EXIT_USAGE;
        }
        if (strchr(eq, ',')) {
            fprintf(stderr, "mbsim run: --set %s: one value per key (several values are a sweep: mbsim sweep "
                            "--set; a list joins its names with '+')\n", sets[k]);
            return EXIT_USAGE;
        }
        if (mb_sweep_set(sw, sets[k], &err)) {
            char buf[MB_ERR_TEXT_LEN];
            mb_err_format(&err, buf, sizeof buf);
            fprintf(stderr, "mbsim run: --set %s: %s\n", sets[k], buf);
            return EXIT_USAGE;
        }
    }
    if (mb_sweep_scenario(sw, 0, s, &err)) {
        char buf[MB_ERR_TEXT_LEN];
        mb_err_format(&err, buf, sizeof buf);
        fprintf(stderr, "mbsim run: %s with the --set values: %s\n", name, buf);
        return EXIT_BAD_INPUT;
    }
    snprintf(s->file, sizeof s->file, "%s", name);
    /* the warnings of the configuration that runs: the file's keys at their positions, the --set ones
     * named; before the measured block is dropped, so its own keys are judged as the file states them */
    struct mb_node *root = mb_yaml_load_string(text, len, name, &err);
    mb_scenario_rewarn(s, root, sets, n_sets);
    mb_yaml_free(root);
    mb_cli__run_unmeasure(&sw->base, s, name);
    return 0;
}

/* Load FILE or "-" and apply the --set values; print the warnings that hold. s is freed by
 * mb_cli__run_free. Returns 0, EXIT_BAD_INPUT or EXIT_USAGE after printing the error. */
static int mb_cli__run_load(const char *file, const char *const *sets, int n_sets, struct mb_sweep *sw,
                            struct mb_scenario *s)
{
    int is_stdin = !strcmp(file, "-");
    const char *name = is_stdin ? "<stdin>" : file;
    char *text;
    size_t len;
    struct mb_err err;
    mb_err_clear(&err);
    memset(sw, 0, sizeof *sw);
    if (mb_input_read(file, "a YAML file", is_stdin, &text, &len, &err)) {
        mb_cli_print_err(&err);
        return EXIT_BAD_INPUT;
    }
    int rc = 0;
    if (!n_sets) {
        if (mb_cli__run_load_plain(text, len, name, s, &err)) {
            mb_cli_print_err(&err);
            rc = EXIT_BAD_INPUT;
        } else {
            cli_print_warnings(s->warnings);
        }
    } else {
        rc = mb_cli__run_load_set(text, len, name, sets, n_sets, sw, s);
        if (rc)
            mb_sweep_free(sw);
        else
            cli_print_warnings(s->warnings);
    }
    mb_free(text);
    return rc;
}

/* Free what mb_cli__run_load loaded: the sweep that owns s's model, or s. */
static void mb_cli__run_free(struct mb_sweep *sw, int n_sets, struct mb_scenario *s)
{
    if (n_sets)
        mb_sweep_free(sw);
    else
        mb_scenario_free(s);
}

int mb_cmd_run(int argc, char **argv)
{
    const char *file = NULL, *trace = NULL, *v, *sets[MB_RUN_MAX_SETS];
    int json = 0, memory = 0, roofline = 0, ops = 0, emit = -1, n_sets = 0, c;
    enum { O_JSON = 256, O_OPS, O_MEMORY, O_ROOFLINE, O_TRACE, O_EMIT, O_SET };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},         {"json", no_argument, NULL, O_JSON},
                                       {"ops", no_argument, NULL, O_OPS},           {"memory", no_argument, NULL, O_MEMORY},
                                       {"roofline", no_argument, NULL, O_ROOFLINE}, {"trace", required_argument, NULL, O_TRACE},
                                       {"emit", required_argument, NULL, O_EMIT},   {"set", required_argument, NULL, O_SET},
                                       {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim run", "h", lo, argc, argv);
    cli_opts_repeatable(&g, O_SET);
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
        case O_SET:
            if (n_sets == MB_RUN_MAX_SETS) {
                fprintf(stderr, "mbsim run: too many --set options (at most %d)\n", MB_RUN_MAX_SETS);
                rc = EXIT_USAGE;
                break;
            }
            sets[n_sets++] = v;
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
    struct mb_sweep sw;
    struct mb_result r;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_cli_check_data_dir())
        return EXIT_BAD_INPUT;
    rc = mb_cli__run_load(file, sets, n_sets, &sw, &s);
    if (rc)
        return rc;
    if (emit >= 0) {
        rc = mb_cmd_emit(&s, emit);
        mb_cli__run_free(&sw, n_sets, &s);
        return rc;
    }
    if (roofline)
        s.roofline = 1;
    /* one simulation gives the report, the op table and the trace */
    struct mb_step_opts o = {.critical_path = 1, .trace = trace, .ops = ops || json};
    if (mb_step_simulate_opts(&s, &o, &r, &err)) {
        mb_cli_print_err(&err);
        mb_cli__run_free(&sw, n_sets, &s);
        return EXIT_BAD_INPUT;
    }
    FILE *out = trace && !strcmp(trace, "-") ? stderr : stdout; /* the trace owns stdout */
    if (json)
        mb_report_json(&s, &r, out);
    else
        mb_report_text(&s, &r, memory, out);
    mb_result_free(&r);
    mb_cli__run_free(&sw, n_sets, &s);
    return 0;
}
