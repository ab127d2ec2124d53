/*
 * cmd_tune.c -- `mbsim tune FILE.yaml [-o OUT.yaml]`: the fit-first tuning
 * order (workloads/studies/mb_tune.h), logged step by step, ending with the
 * recommended scenario written as YAML and the runners-up.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include "mb_keys.h"
#include "mb_outfile.h"
#include "mb_publish.h"
#include "mb_tune.h"

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp, "usage: mbsim tune FILE.yaml [-o OUT.yaml] [--emit megatron|bridge] [-j N] [--set KEY=V1,V2,...]\n"
                "\n"
                "Finds the fastest configuration that fits: a screened exact search (sweep --screen)\n"
                "over strategy (FSDP, 3D), EP, TP, PP, recompute, MBS, dispatcher and CUDA graphs,\n"
                "keeping workload, GBS, precision and sequence shape fixed and refusing what\n"
                "Megatron-Core refuses; then communication overlap on the winner. Explains the\n"
                "winner in the guide's fit-first order and term by term against the runner-up and\n"
                "the starting scenario, and writes the recommendation to OUT.yaml (default:\n"
                "NAME_tuned.yaml in the current directory).\n"
                "\n"
                "  -j N       worker threads for the search (the answer does not depend on N)\n"
                "  --set K=V  search these values of sweep key K instead of tune's own (repeatable)\n"
                "  --emit D   print the recommendation as Megatron-LM flags (D = megatron) or\n"
                "             Megatron-Bridge overrides (D = bridge) on stdout; the log goes to stderr\n"
                "             and the YAML is written only with -o\n");
}

/* Write the recommendation to outp (NULL: NAME_tuned.yaml here); 0 or 1. */
static int mb_cli__write_best(const struct mb_scenario *best, const char *outp, FILE *log)
{
    char def[256];
    if (!outp) { /* NAME_tuned.yaml here: a name's '/', spaces, a leading '-' or '.' become '_' */
        snprintf(def, sizeof def, "%.200s.yaml", best->name); /* best->name is NAME_tuned */
        for (char *c = def; *c; c++)
            if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.') ||
                (c == def && (*c == '-' || *c == '.')))
                *c = '_';
        outp = def;
    }
    struct mb_outfile o;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_outfile_open(&o, outp, NULL, &err)) {
        mb_cli_print_err(&err);
        return 1;
    }
    if (mb_scenario_write_yaml(best, o.fp)) {
        mb_outfile_abort(&o);
        fprintf(stderr, "mbsim: %s: cannot write the recommended scenario\n", outp);
        return 1;
    }
    if (mb_outfile_commit(&o, &err)) { /* "wrote" only once the file is whole */
        mb_cli_print_err(&err);
        return 1;
    }
    fprintf(log, "wrote %s\n", outp);
    return 0;
}

static void mb_cli__print_runners(const struct mb_tune_result *t, FILE *log)
{
    fprintf(log, "runners-up (the next best of the grid, before the overlap step):\n");
    for (int i = 0; i < t->n_runners; i++) {
        const struct mb_scenario *r = &t->runner[i];
        char cg[128], rm[128];
        mb_key_flag_names("cuda_graph.modules", r->cuda_graph, "+", cg, sizeof cg);
        mb_key_flag_names("recompute.modules", r->recompute_modules, "+", rm, sizeof rm);
        /* the controls tune searches, so two runners-up never read the same */
        fprintf(log, "  %d. %s TP%d PP%d EP%d MBS %d, recompute %s%s%s%s, dispatcher %s, CUDA graphs %s: %.1f "
                     "tok/s/GPU, %.1f GiB\n", i + 1,
                mb_key_value_name("parallel.strategy", r->strategy), r->tp, r->pp, r->ep, r->micro_batch_size,
                mb_key_value_name("recompute.granularity", r->recompute), rm[0] ? " [" : "", rm, rm[0] ? "]" : "",
                mb_key_value_name("moe.dispatcher", r->dispatcher), cg[0] ? cg : "none",
                t->runner_r[i].tokens_per_s_per_gpu, t->runner_r[i].mem.peak_allocated / (1024.0 * 1024 * 1024));
    }
    fprintf(log, "%zu configurations, %zu invalid, %d simulations\n", t->configurations, t->invalid, t->evaluations);
}

int mb_cmd_tune(int argc, char **argv)
{
    const char *file = NULL, *outp = NULL, *v;
    int emit = -1, c, rc = -1;
    struct mb_tune_opts to = {.jobs = 1};
    enum { O_EMIT = 256, O_SET };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},
                                       {"emit", required_argument, NULL, O_EMIT},
                                       {"set", required_argument, NULL, O_SET},
                                       {"jobs", required_argument, NULL, 'j'},
                                       {0}};
    struct cli_opts g;
    cli_opts_init(&g, "mbsim tune", "ho:j:", lo, argc, argv);
    cli_opts_repeatable(&g, O_SET);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END) {
        if (c == 'h') {
            mb_cli__usage(stdout);
            rc = 0;
        } else if (c == 'o') {
            outp = v;
        } else if (c == 'j') {
            long j = 0;
            if (cli_parse_long(v, 1, 1024, &j)) {
                fprintf(stderr, "mbsim tune: -j '%s': expected a number of threads from 1 to 1024\n", v);
                rc = 2;
            } else {
                to.jobs = (int)j;
            }
        } else if (c == O_SET) {
            if (to.n_set == MB_TUNE_MAX_SET) {
                fprintf(stderr, "mbsim tune: at most %d --set options\n", MB_TUNE_MAX_SET);
                rc = 2;
            } else {
                to.set[to.n_set++] = v;
            }
        } else if (c == O_EMIT) {
            if (mb_cmd_emit_parse("tune", v, &emit))
                rc = 2;
        } else if (c == CLI_OPERAND && !file) {
            file = v;
        } else if (c == CLI_OPERAND) {
            fprintf(stderr, "mbsim tune: one scenario file expected, got '%s' too\n", v);
            rc = 2;
        } else {
            mb_cli__usage(stderr);
            rc = 2;
        }
    }
    cli_opts_free(&g);
    if (rc < 0 && cli_sets_once("mbsim tune", to.set, to.n_set))
        rc = 2;
    if (rc >= 0)
        return rc;
    if (!file) {
        mb_cli__usage(stderr);
        return 2;
    }
    struct mb_scenario s;
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    if (mb_scenario_load(file, &s, &err)) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim: %s\n", msg);
        return 1;
    }
    cli_print_warnings(s.warnings);
    struct mb_tune_result t;
    FILE *log = emit >= 0 ? stderr : stdout; /* --emit: stdout holds the flags alone */
    if (mb_tune_opts(&s, &to, log, &t, &err)) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim: %s\n", msg);
        mb_scenario_free(&s);
        return 1;
    }
    rc = emit >= 0 && !outp ? 0 : mb_cli__write_best(&t.best, outp, log);
    struct mb_publish_check pc; /* the guide's publication check of the recommendation */
    mb_publish_check(&t.best, t.best_r.model_tflops_per_gpu, &pc);
    fprintf(log, "publication check: %s\n", pc.text);
    mb_cli__print_runners(&t, log);
    if (!rc && emit >= 0)
        rc = mb_cmd_emit(&t.best, emit);
    mb_tune_free(&t);
    mb_scenario_free(&s);
    return rc;
}
