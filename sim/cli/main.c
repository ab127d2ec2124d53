/*
 * main.c -- the mbsim command line: the command table, and the only place
 * that prints errors and chooses exit codes (0 ok, 1 bad input, 2 usage;
 * 3 validate --baseline drift). Each command is a file cmd_<name>.c (cli.h).
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_input.h"
#include "mb_model.h"
#include "mb_outfile.h"
#include "mb_text.h"
#include "mb_topo.h"

static void mb_cli__usage_main(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim <command> [options]\n"
            "\n"
            "Discrete-event simulator of large-model training on GPU clusters: predicts\n"
            "step time, tokens/s/GPU, model TFLOP/s/GPU, MFU and per-rank memory.\n"
            "\n"
            "commands:\n"
            "  run FILE.yaml|- [--set key=value]... [--json] [--memory] [--ops] [--roofline]\n"
            "      [--trace OUT.json[.gz]]         simulate one steady-state training step\n"
            "  run FILE.yaml --emit megatron|bridge\n"
            "                                      the scenario as Megatron-LM flags / Bridge overrides\n"
            "  compare A.yaml B.yaml [--roofline]  two scenarios side by side: where the difference comes from\n"
            "  validate FILE.csv|FILE.yaml... [--json] [--cv family] [-j N] [--baseline OLD.json]\n"
            "           [--pairs [FILE]]           predict published/measured runs and report errors;\n"
            "                                      --pairs: measured against predicted A/B effects\n"
            "  sweep FILE.yaml [--set key=v1,v2]... [-j N] [--tsv F] [--json F] [--shard i/N]\n"
            "                                      many configurations at once: ranked, Pareto front\n"
            "  merge FILE.yaml SHARD.tsv... [--tsv F] [--json F]\n"
            "                                      join a sweep's shard outputs, checking the grid is whole\n"
            "  tune FILE.yaml [-o OUT.yaml] [--emit megatron|bridge]\n"
            "                                      fit-first tuning: recommended scenario + runners-up\n"
            "  import megatron|bridge FILE --system NAME [--gpus N] [--model NAME] [-o OUT.yaml]\n"
            "                                      a scenario from Megatron-LM arguments / Bridge overrides\n"
            "  import hf CONFIG.json [--name NAME] [-o OUT.yaml]\n"
            "                                      a model file from a Hugging Face config.json\n"
            "  plot validate|sweep|breakdown|gantt|memory INPUT [-o OUT.png|.svg]\n"
            "                                      gnuplot charts (needs gnuplot)\n"
            "  collective --system NAME --gpus N --op OP --sizes 8:8G\n"
            "                                      nccl-tests style table for one collective\n"
            "  calibrate nccl-tests LOG... [--gpu GPU] [--base TABLE] [--ranks N] [-o OUT.yaml]\n"
            "  calibrate nsys KERN_SUM.csv --gpu GPU [--shapes S.yaml] [--base TABLE] [-o OUT.yaml]\n"
            "  calibrate kineto TRACE.json[.gz] [--gpu GPU] [--base TABLE] [-o OUT.yaml]\n"
            "  calibrate runs MEASURED.csv [--gpu GPU] [--base TABLE] [--params LIST] [-o TABLE.yaml]\n"
            "  calibrate transfer TABLE... --base TABLE [-o TABLE.yaml]\n"
            "                                      turn measured logs/profiles into calibration tables\n"
            "  topo FILE.xml|SYSTEM [--json]       what mbsim read from a node's hwloc XML or a system\n"
            "  systems [--json]                    list system presets\n"
            "  models [--json]                     list shipped model files\n"
            "\n"
            "  mbsim COMMAND --help   shows the command's options\n"
            "  mbsim --version\n"
            "\n"
            "exit codes: 0 ok, 1 bad input (message names file:line:col), 2 usage error,\n"
            "            3 validate --baseline: predictions or memory drifted past the threshold\n"
            "documentation: README.md, docs/scenario-format.md, docs/validation.md\n");
}

/* A ", "-separated name list as a JSON array of strings (names are file stems: no quotes). */
static void mb_cli__print_json_list(const char *list)
{
    printf("[");
    const char *p = list;
    for (int first = 1; *p; first = 0) {
        size_t n = strcspn(p, ",");
        printf("%s\"%.*s\"", first ? "" : ", ", (int)n, p);
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    printf("]\n");
}

/* `mbsim systems|models [--json]`. */
static int mb_cli__cmd_list(const char *cmd, int argc, char **argv)
{
    char buf[16384], name[32];
    const char *v;
    int json = 0, c, rc = -1;
    enum { O_JSON = 256 };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'}, {"json", no_argument, NULL, O_JSON}, {0}};
    struct cli_opts g;
    snprintf(name, sizeof name, "mbsim %s", cmd);
    cli_opts_init(&g, name, "h", lo, argc, argv);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            printf("usage: mbsim %s [--json]\n\nLists the shipped %s, comma separated (--json: a JSON array "
                   "of names).\n", cmd,
                   !strcmp(cmd, "systems") ? "system presets (topology/systems/)" : "model files (workloads/models/)");
            rc = 0;
        } else if (c == O_JSON) {
            json = 1;
        } else {
            if (c == CLI_OPERAND)
                fprintf(stderr, "mbsim %s: takes only --json, got '%s'\n", cmd, v);
            rc = EXIT_USAGE;
        }
    }
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (mb_cli_check_data_dir())
        return EXIT_BAD_INPUT;
    if (!strcmp(cmd, "systems"))
        mb_topo_list_presets(buf, sizeof buf);
    else
        mb_model_list(buf, sizeof buf);
    if (json)
        mb_cli__print_json_list(buf);
    else
        printf("%s\n", buf);
    return 0;
}

/* Every simulation allocates and frees engine arrays of several MB. glibc
 * would mmap each such block afresh and unmap it on free, so each simulation
 * page-faults its arrays in again: keep large blocks in the heap and the freed
 * heap mapped (validate of the public CSV: 13.7 s -> 8.8 s). */
static void mb_cli__tune_malloc(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD) && defined(M_TOP_PAD)
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
#endif
}

static int mb_cli__cmd_systems(int argc, char **argv) { return mb_cli__cmd_list("systems", argc, argv); }
static int mb_cli__cmd_models(int argc, char **argv) { return mb_cli__cmd_list("models", argc, argv); }

/* The commands, in the order of the usage text. data: the shipped data must
 * be found before the command runs (unless its first argument asks for help). */
static const struct mb_cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0]: the first argument after the command's name */
    int data;
} mb_cli__cmds[] = {
    {"run", mb_cmd_run, 0},               /* checks the data itself, after its options */
    {"compare", mb_cmd_compare, 0},       /* likewise */
    {"validate", mb_cmd_validate, 0},     /* likewise */
    {"sweep", mb_cmd_sweep, 1},
    {"merge", mb_cmd_merge, 1},
    {"tune", mb_cmd_tune, 1},
    {"import", mb_cmd_import, 1},
    {"plot", mb_cmd_plot, 0},             /* reads only its input tables */
    {"collective", mb_cmd_collective, 1},
    {"calibrate", mb_cmd_calibrate, 1},
    {"topo", mb_cmd_topo, 1},
    {"systems", mb_cli__cmd_systems, 0},          /* checks after its options */
    {"models", mb_cli__cmd_models, 0},
};

static int mb_cli__is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* SIGINT, SIGTERM, SIGHUP, SIGPIPE: remove the temporary files of outputs
 * not yet renamed (mb_outfile.h), then end as the signal would have. */
static void mb_cli__on_fatal_signal(int sig)
{
    mb_outfile_signal_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void mb_cli__install_cleanup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mb_cli__on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup, a shell's background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

static int mb_cli__dispatch(int argc, char **argv)
{
    if (argc < 2) {
        mb_cli__usage_main(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (mb_cli__is_help(cmd) || !strcmp(cmd, "help")) {
        mb_cli__usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("mbsim %s (git %s)\n", MBSIM_VERSION, MBSIM_GIT_REV);
        return 0;
    }
    for (size_t i = 0; i < sizeof mb_cli__cmds / sizeof mb_cli__cmds[0]; i++) {
        const struct mb_cli_cmd *c = &mb_cli__cmds[i];
        if (strcmp(cmd, c->name))
            continue;
        if (c->data && argc > 2 && !mb_cli__is_help(argv[2]) && mb_cli_check_data_dir())
            return EXIT_BAD_INPUT;
        return c->run(argc - 2, argv + 2);
    }
    fprintf(stderr, "mbsim: unknown command '%s'\n", cmd);
    mb_cli__usage_main(stderr);
    return EXIT_USAGE;
}

static FILE *mb_cli__stderr; /* the process's own, while the escaping stream stands in */

static void mb_cli__close_stderr(void)
{
    FILE *fp = stderr;
    stderr = mb_cli__stderr;
    fclose(fp); /* frees the stream: at exit, whichever way the command ends */
}

/* Standard error through an escaping stream (mb_text.h): every message that
 * echoes a command-line argument or input text (`--top expects a count ...,
 * got 'X'`, an unknown command, a file name) writes its control characters and
 * bytes that are not UTF-8 as \xNN, whichever code printed it; newline and
 * tab are kept (sweep's progress bar writes its carriage returns to the
 * terminal itself).
 * Unbuffered, as stderr is: each fprintf is one write; closed at exit. */
static void mb_cli__escape_stderr(void)
{
    FILE *fp = mb_text_escape_stream(stderr, "\n\t");
    setvbuf(fp, NULL, _IONBF, 0);
    mb_cli__stderr = stderr;
    stderr = fp;
    atexit(mb_cli__close_stderr);
}

/* Every command's output is checked here once more: standard output flushed
 * and closed, a write that failed on the way (a full disk, a closed pipe
 * reader's EPIPE once SIGPIPE is ignored) turns exit 0 into exit 1. Outputs
 * never replace a file the command read (mb_input_track, mb_outfile.h). */
int main(int argc, char **argv)
{
    mb_cli__tune_malloc();
    mb_cli__escape_stderr();
    mb_outfile_watch_stdout();
    mb_input_track(1);
    mb_cli__install_cleanup();
    int rc = mb_cli__dispatch(argc, argv);
    char msg[256];
    if (mb_outfile_close_stdout(msg, sizeof msg)) {
        fprintf(stderr, "mbsim: %s\n", msg);
        if (!rc)
            rc = EXIT_BAD_INPUT;
    }
    return rc;
}
