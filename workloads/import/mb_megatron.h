/*
 * mb_megatron.h -- Megatron-LM and Megatron-Bridge settings in and out.
 *
 * In: mb_megatron_read reads what users already have -- a Megatron-LM
 * command line (`--tensor-model-parallel-size 2 ...`, shell quoting and
 * backslash continuations, launcher words and VAR=value prefixes) or a bash
 * launch script that builds one (variables, arrays, `${VAR:-default}`,
 * `$((...))`, if blocks on [ ] tests; mb_megatron_shell.c), the
 * `arguments` block a Megatron-LM training log prints (`  tensor_model_parallel_size
 * ....... 2`), or Megatron-Bridge overrides (`model.tensor_model_parallel_size=2`)
 * -- into a list of settings with their positions. mb_megatron_import turns
 * them into a scenario: keys that carry over one to one through the key
 * table's `megatron` names (mb_keys.h), the rest (dispatcher and backend,
 * precision recipe, CUDA-graph implementation and modules, virtual stages,
 * FSDP, gradient and Adam dtypes, GPU count) by rules here, and the model
 * chosen or checked from the architecture arguments. Every setting it does
 * not use is reported, none is dropped silently.
 *
 * Out: mb_megatron_emit writes a scenario as Megatron-LM flags or
 * Megatron-Bridge overrides, one per line, ready to paste.
 *
 * Absent Megatron-LM flags mean Megatron-LM's defaults (no distributed
 * optimizer, no overlap, allgather dispatcher, ...); absent Bridge overrides
 * mean the recipe's, which mbsim's defaults follow. docs/import.md.
 */
#ifndef MB_MEGATRON_H
#define MB_MEGATRON_H

#include <stdio.h>

#include "mb_keys.h"
#include "mb_scenario.h"

enum mb_megatron_dialect { MB_MEGATRON_LM, MB_MEGATRON_BRIDGE };

/** One setting as read: canonical name (Megatron's `args` attribute). */
struct mb_megatron_arg {
    char name[96];     /* e.g. "tensor_model_parallel_size"; Bridge: without its section */
    char written[160]; /* as the file spells it: "--tensor-model-parallel-size", "model.tensor_..." */
    char **val;        /* values (owned); a command-line switch without a value has none */
    int nval;
    int is_list;       /* written as a list ([a, b] or several words) */
    int env;           /* an environment assignment (NAME=value before the command) */
    int none;          /* the dialect's None: Bridge's (Hydra's) `null`, a log's `None`; a
                          Megatron-LM command line has none (argparse hands the word to the flag) */
    int line, col;     /* 1-based position of the setting in the file */
    int in_config;     /* read from the --config-file a Bridge command names (mb_megatron_args.config), not `file` */
    int used;          /* set by the importer */
    int ignored;       /* set by the importer: a setting the framework does not apply (a note says why) */
    const char *bad;   /* a YAML value that is no setting's value ("a mapping", ...): an error if the
                          import reads this setting, else listed as not imported; NULL otherwise */
};

/** One iteration line of a Megatron-LM training log (megatron/training/training.py
 * training_log): the averages over the log interval that ends at `iteration`. */
struct mb_megatron_iter {
    long iteration;  /* N of `iteration N/ M` */
    double ms;       /* elapsed time per iteration (ms), > 0 */
    double tflops;   /* throughput per GPU (TFLOP/s/GPU); -1 when not logged (no --log-throughput) */
    double gbs;      /* global batch size; -1 when not logged */
    double skipped;  /* number of skipped iterations (loss-scale overflow: no optimizer step) */
    double nan;      /* number of nan iterations */
    int line;        /* 1-based line in the log */
};

struct mb_megatron_args {
    enum mb_megatron_dialect dialect;
    int log_block;     /* 1: read from a training log's arguments block */
    int yaml;          /* 1: read from a YAML file (Megatron-LM --yaml-cfg, Megatron-Bridge --config-file) */
    char file[MB_PATH_LEN];
    char config[MB_PATH_LEN]; /* the YAML a Bridge command's --config-file names, read before its overrides; "" none */
    struct mb_megatron_arg *a;
    int n, cap;
    char *notes;       /* the reader's notes (words not read), lines for mb_megatron_import to list; may be NULL */
    struct mb_megatron_iter *iters; /* a log's iteration lines, in file order (owned; NULL: none) */
    int n_iters;
};

/**
 * @brief Read settings from a file (see the file comment for the forms). A
 * UTF-8 byte order mark is skipped; LF, CRLF and a lone CR all end a line.
 * A YAML file is recognised by its extension (.yaml, .yml) or, failing
 * that and not being a training log, by a first line `key:` at column 1; it
 * is read as Megatron-LM's yaml_arguments.py or Bridge's --config-file reads
 * it (docs/import.md). A Megatron-Bridge command's `--config-file FILE` (as
 * given, else beside the command's file) is read first, its overrides after
 * it: Bridge merges the recipe, then the file, then the overrides.
 * @return 0, or -1 with file:line:col in err (unreadable file, unterminated
 *         quote, a launch script's construct mbsim does not read or a value it
 *         would have to run a command for: $(...), a file test, a loop; two
 *         commands that run a script; a Bridge word that is not key=value after the overrides began,
 *         a Megatron-LM argument argparse would refuse: a single-dash option,
 *         a bare `--`, a word that follows no flag taking a value; a YAML file
 *         that does not parse, has duplicate keys or too many aliases, or is
 *         not a mapping of the form the framework reads).
 */
int mb_megatron_read(const char *path, enum mb_megatron_dialect d, struct mb_megatron_args *out,
                     struct mb_err *err);

/** @brief Free what mb_megatron_read allocated; accepts NULL. */
void mb_megatron_args_free(struct mb_megatron_args *a);

/**
 * @brief The name the import reads for a value Python printed in a log's
 * arguments block (arguments.py `_print_args` prints str(value)): a torch
 * dtype `torch.bfloat16` -> "bf16" (arguments.py dtype_map backwards:
 * float32 fp32, bfloat16 bf16, float16 fp16, uint8 fp8), an enum member
 * `AttnBackend.auto` or its repr `<CudaGraphModule.attn: 1>` -> the member
 * ("auto", "attn"). Sources: NVIDIA/Megatron-LM d98e8a64,
 * megatron/training/arguments.py and megatron/core/transformer/enums.py.
 * @param[out] out the name (NUL-terminated, cut to n)
 * @return 1 when v is such a value (out set), else 0 (out untouched).
 */
int mb_megatron_log_value(const char *v, char *out, size_t n);

/**
 * @brief The iteration lines of a Megatron-LM training log (`iteration
 * N/ M | ... elapsed time per iteration (ms): X | throughput per GPU
 * (TFLOP/s/GPU): Y | ... global batch size: G | ... number of skipped
 * iterations: S | number of nan iterations: K |`, megatron/training/training.py
 * training_log at NVIDIA/Megatron-LM d98e8a64); other lines are ignored.
 * @param[in]  file for messages
 * @param[in]  buf  the log, line ends LF
 * @param[out] out  the lines found (owned, mb_free; NULL when none), *n of them
 * @return 0, or -1 with file:line:col in err: an iteration line without an
 *         elapsed time, or a field that is not followed by a number.
 */
int mb_megatron_log_iterations(const char *file, const char *buf, struct mb_megatron_iter **out, int *n,
                               struct mb_err *err);

/** The steady state of a log's iteration lines (mb_megatron_steady). */
struct mb_megatron_measured {
    int lines;       /* iteration lines in the log */
    long warmup_to;  /* lines up to this iteration are warm-up, not used */
    int dropped;     /* later lines not used: skipped or nan iterations in them, or a global batch
                        size other than the last line's (batch-size ramp-up) */
    int used;        /* lines the medians are over */
    long from, to;   /* the iterations of the first and last line used */
    double step_ms;  /* median elapsed time per iteration, ms */
    double tflops;   /* median throughput per GPU, TFLOP/s/GPU; -1 when a line used does not log it */
};

/**
 * @brief Median step time and throughput over a log's steady-state iteration
 * lines. Warm-up, not used: the first line (iteration 1 carries start-up:
 * allocation, NCCL communicators, CUDA-graph capture, the first FP8 amax
 * history) and every line up to a tenth of the last iteration logged (rounded
 * up). Also not used: lines with skipped or nan iterations (a step without an
 * optimizer update) and lines whose global batch size differs from the last
 * line's (rampup_batch_size). The median, not the mean: a checkpoint save or
 * an evaluation in one interval does not move it.
 * @return 0, or -1 when no line is left (out says how many were read).
 */
int mb_megatron_steady(const struct mb_megatron_iter *it, int n, struct mb_megatron_measured *out);

/** Choices the settings cannot make (command-line options of `mbsim import`). */
struct mb_megatron_opts {
    const char *model;   /* shipped model name or path; NULL = match the architecture arguments */
    const char *system;  /* system preset or path (required) */
    const char *name;    /* scenario name; NULL = the file's base name */
    int gpus;            /* 0 = from world_size, torchrun's --nnodes x --nproc-per-node, or nodes */
    int nodes;           /* 0 = not given; else gpus = nodes x the system's GPUs per node */
};

/**
 * @brief Turn settings into a loaded, checked scenario (as mb_scenario_load
 * gives). Settings not imported are listed on `notes` (one line each, with
 * file:line:col; settings that do not change a simulated step grouped on one
 * line). Marks what it used in a->a[i].used.
 * @return 0, or -1 with a message in err: a value mbsim cannot read
 *         (file:line:col of the setting), no or several matching models,
 *         architecture arguments that contradict --model, no GPU count, and
 *         the layout rules of mb_scenario_check.
 */
int mb_megatron_import(struct mb_megatron_args *a, const struct mb_megatron_opts *o, struct mb_scenario *s,
                       FILE *notes, struct mb_err *err);

/**
 * @brief Megatron-LM's default for scenario key `key` where it differs from
 * mbsim's ("optimizer.distributed" -> "false"), as mb_key_set text; NULL when
 * they agree. An absent Megatron-LM flag means this value.
 */
const char *mb_megatron_lm_default(const char *key);

/**
 * @brief 1 when key k means something for scenario s (its `applies` rule; no
 * MoE keys on a dense model; the HybridEP permute fusion with HybridEP only),
 * so --emit writes it and an imported value of it changes the prediction; 0
 * otherwise (import notes a setting of such a key as without effect).
 */
int mb_megatron_key_applies(const struct mb_scenario *s, const struct mb_key *k);

/**
 * @brief Write scenario s as Megatron-LM flags (`--flag value \` lines) or
 * Megatron-Bridge overrides (`section.key=value \` lines) on out: model
 * architecture, batch and sequence, parallel layout, MoE dispatcher,
 * precision, recompute, CUDA graphs, overlap and optimizer. What has no
 * Megatron equivalent (GPU count, routing skew, ...) goes to notes as
 * `# ...` lines (notes may be NULL).
 * @return 0, or -1 on a write error.
 */
int mb_megatron_emit(const struct mb_scenario *s, enum mb_megatron_dialect d, FILE *out, FILE *notes);

#endif /* MB_MEGATRON_H */
