/*
 * cli.h -- the mbsim executable's own header (sim/cli/): one entry point per
 * command, each in its file cmd_<name>.c and listed in main.c's command table,
 * and what the command files share. Nothing outside sim/cli/ includes it.
 *
 * Every command takes the arguments after its name (argv[0] is the first of
 * them) and returns the process's exit code: 0 ok, 1 bad input (the message
 * names file:line:col), 2 usage error; `validate --baseline` also 3 (drift).
 */
#ifndef MB_CLI_H
#define MB_CLI_H

#include <stdio.h>

#include "cli_opts.h"
#include "mb_util.h"

struct mb_scenario;

/* ---- the commands (docs/cli.md, `mbsim COMMAND --help`) ---- */

/** @brief `mbsim run FILE.yaml`: one training step's report, op table, trace or --emit (cmd_run.c). */
int mb_cmd_run(int argc, char **argv);
/** @brief `mbsim compare A.yaml B.yaml`: two scenarios side by side, term by term (cmd_compare.c). */
int mb_cmd_compare(int argc, char **argv);
/** @brief `mbsim validate FILE...`: predicted against measured runs, --cv, --baseline (cmd_validate.c). */
int mb_cmd_validate(int argc, char **argv);
/** @brief `mbsim sweep FILE.yaml --set ...`: many configurations, ranked (cmd_sweep.c). */
int mb_cmd_sweep(int argc, char **argv);
/** @brief `mbsim merge FILE.yaml SHARD.tsv...`: a sweep's shards joined and checked whole (cmd_merge.c). */
int mb_cmd_merge(int argc, char **argv);
/** @brief `mbsim tune FILE.yaml`: the fit-first tuning order, logged (cmd_tune.c). */
int mb_cmd_tune(int argc, char **argv);
/** @brief `mbsim import megatron|bridge|hf FILE`: other tools' inputs as scenarios or model files (cmd_import.c). */
int mb_cmd_import(int argc, char **argv);
/** @brief `mbsim plot KIND INPUT`: gnuplot charts (cmd_plot.c). */
int mb_cmd_plot(int argc, char **argv);
/** @brief `mbsim collective --system S --gpus N --op OP`: an nccl-tests style table (cmd_collective.c). */
int mb_cmd_collective(int argc, char **argv);
/** @brief `mbsim calibrate KIND ...`: runs, transfer, nsys, kineto, else nccl-tests (cmd_calibrate.c). */
int mb_cmd_calibrate(int argc, char **argv);
/** @brief `mbsim topo FILE.xml|SYSTEM`: what mbsim reads from a node or a system (cmd_topo.c). */
int mb_cmd_topo(int argc, char **argv);

/* ---- the kinds of `mbsim calibrate` with a file of their own ---- */

/**
 * @brief `mbsim calibrate <kind> ARGS...` for a profile (cmd_calibrate_profile.c).
 * @param[in] kind  "nsys" or "kineto"
 * @param[in] argc, argv  the arguments after the kind word (argv[0] is the first of them)
 * @return exit code: 0 ok, 1 bad input, 2 usage error.
 */
int mb_cmd_calibrate_profile(const char *kind, int argc, char **argv);
/** @brief `mbsim calibrate runs MEASURED.csv`: the framework-time fit (cmd_calibrate_runs.c). */
int mb_cmd_calibrate_runs(int argc, char **argv);
/** @brief `mbsim calibrate transfer TABLE... --base TABLE`: a GPU without runs (cmd_calibrate_runs.c). */
int mb_cmd_calibrate_transfer(int argc, char **argv);

/* ---- shared by the commands ---- */

/**
 * @brief Parse `--emit D` of `mbsim CMD` (cmd_import.c).
 * @param[out] dialect  enum mb_megatron_dialect of "megatron" or "bridge"
 * @return 0, or -1 after printing the usage error.
 */
int mb_cmd_emit_parse(const char *cmd, const char *v, int *dialect);
/** @brief Print scenario s as Megatron-LM flags or Bridge overrides on stdout (notes on stderr); exit code. */
int mb_cmd_emit(const struct mb_scenario *s, int dialect);
/**
 * @brief Write a calibration table to out (NULL: stdout) only if it loads
 * (cli_table.c): make() writes the table's text into a memory stream; it goes
 * to the output's temporary file (mb_outfile.h), is loaded back from there
 * with mb_calib_load and renamed over out only when it loads (stdout and
 * devices: a temporary copy is loaded first).
 * @param[in] who   the command, for messages ("mbsim calibrate transfer")
 * @param[in] base  NULL, or the file of the base table that make() copies whole: out may be
 *                  that file (a refit in place; the new text replaces it atomically), though it
 *                  was read; any other input is refused as an output
 * @param[in] make  writes the table to fp; 0, or -1 with err set (or already printed, err empty)
 * @return exit code: 0, or 1 after printing why (nothing was written).
 */
int mb_cli_write_table(const char *who, const char *out, const char *base,
                       int (*make)(FILE *fp, void *ctx, struct mb_err *err), void *ctx);
/** @brief Print "mbsim: file:line:col: message" on stderr (cli_opts.c). */
void mb_cli_print_err(const struct mb_err *e);
/**
 * @brief Whether the shipped data (models, systems, calibration) is where
 * mb_data_dir() says (cli_opts.c).
 * @return 0, or -1 after printing where it looked and how to set MBSIM_DATA_DIR.
 */
int mb_cli_check_data_dir(void);

/**
 * @brief Check that no two --set options name one scenario key (by its dotted name or an alias,
 * mb_key_find; cli_sets.c): a second value would silently replace the first. Keys the table does not know
 * are left to the command's own --set parser, which names them.
 * @param[in] cmd   the command as the message names it ("mbsim sweep")
 * @param[in] sets  the --set arguments, KEY=VALUES each
 * @param[in] n     their number
 * @return 0, or -1 after printing "CMD: --set B: --set A gave KEY a value already; give each
 *         key once" on stderr (the caller exits with the usage status)
 */
int cli_sets_once(const char *cmd, const char *const *sets, int n);

#endif /* MB_CLI_H */
