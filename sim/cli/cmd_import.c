/*
 * cmd_import.c -- `mbsim import megatron|bridge FILE`: Megatron-LM arguments
 * (a command line, a training log's arguments block, a --yaml-cfg file) or
 * Megatron-Bridge overrides (or a --config-file YAML) -> a scenario YAML (workloads/import/mb_megatron.h); `mbsim import hf
 * config.json`: a Hugging Face config -> a model file (workloads/import/mb_hf.h).
 * Settings not imported are listed on stderr. Also the `--emit
 * megatron|bridge` option shared by `run` and `tune` (mb_cmd_emit_parse,
 * mb_cmd_emit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mb_text.h"
#include "mb_hf.h"
#include "mb_megatron.h"
#include "mb_outfile.h"

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim import megatron|bridge FILE --system NAME [--gpus N | --nodes N] [--model NAME]\n"
            "                    [--name NAME] [-o OUT.yaml]\n"
            "       mbsim import hf CONFIG.json [--name NAME] [-o OUT.yaml]\n"
            "\n"
            "Writes a scenario (docs/scenario-format.md) from the settings of a Megatron run:\n"
            "  megatron  Megatron-LM arguments: a command line (--tensor-model-parallel-size 2 ...),\n"
            "            the arguments block a Megatron-LM training log prints, or a --yaml-cfg file\n"
            "  bridge    Megatron-Bridge overrides (model.tensor_model_parallel_size=2 ...) or a\n"
            "            YAML given to a run script's --config-file (model:, train:, ...)\n"
            "A YAML file is told by its extension (.yaml, .yml) or a first line `key:`.\n"
            "and a model file (docs/models.md) from a Hugging Face config.json:\n"
            "  hf        dense Llama/Mistral/Qwen2/Qwen3, MoE Qwen2-MoE/Qwen3-MoE/Mixtral/DeepSeek-V3\n"
            "            (MLA), Qwen3-VL (text_config + vision_config); --name: the model's name\n"
            "            (default: OUT's file stem, else the config's folder name)\n"
            "Every setting not imported is listed on stderr (docs/import.md).\n"
            "\n"
            "  --system NAME  system preset or file (`mbsim systems`); required\n"
            "  --gpus N       GPUs (default: the log's world_size, torchrun's --nnodes x --nproc-per-node,\n"
            "                 or data_parallel_size x the parallel sizes)\n"
            "  --nodes N      GPUs = N x the system's GPUs per node\n"
            "  --model NAME   model name or file (default: the shipped model whose architecture\n"
            "                 matches --num-layers, --hidden-size, ...); the settings are checked against it\n"
            "  --name NAME    scenario name (default: FILE's base name)\n"
            "  -o OUT.yaml    write there (default: stdout)\n");
}

int mb_cmd_emit_parse(const char *cmd, const char *v, int *dialect)
{
    if (v && !strcmp(v, "megatron")) {
        *dialect = MB_MEGATRON_LM;
        return 0;
    }
    if (v && !strcmp(v, "bridge")) {
        *dialect = MB_MEGATRON_BRIDGE;
        return 0;
    }
    fprintf(stderr, "mbsim %s: --emit %s: expected megatron or bridge\n", cmd, v ? v : "needs a value");
    return -1;
}

int mb_cmd_emit(const struct mb_scenario *s, int dialect)
{
    FILE *notes = mb_text_escape_stream(stderr, "\n"); /* notes quote the scenario's text (mb_text.h) */
    int rc = mb_megatron_emit(s, (enum mb_megatron_dialect)dialect, stdout, notes) ? 1 : 0;
    fclose(notes);
    return rc;
}

static int mb_cli__positive(const char *opt, const char *v, int *out)
{
    long n = 0;
    if (cli_parse_long(v, 1, 1000000, &n)) {
        fprintf(stderr, "mbsim import: %s '%s': expected an integer from 1 to 1000000\n", opt, v ? v : "");
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Options after the dialect; 0, 1 (help shown) or 2 (usage error). */
static int mb_cli__parse(int argc, char **argv, const char **file, const char **out, struct mb_megatron_opts *o)
{
    enum { O_SYSTEM = 256, O_MODEL, O_NAME, O_GPUS, O_NODES };
    static const struct option lo[] = {{"help", no_argument, NULL, 'h'},          {"system", required_argument, NULL, O_SYSTEM},
                                       {"model", required_argument, NULL, O_MODEL}, {"name", required_argument, NULL, O_NAME},
                                       {"gpus", required_argument, NULL, O_GPUS},   {"nodes", required_argument, NULL, O_NODES},
                                       {0}};
    struct cli_opts g;
    const char *v;
    int c, rc = 0;
    cli_opts_init(&g, "mbsim import", "ho:", lo, argc - 1, argv + 1);
    while (!rc && (c = cli_opts_next(&g, &v)) != CLI_END) {
        switch (c) {
        case 'h':
            mb_cli__usage(stdout);
            rc = 1;
            break;
        case O_SYSTEM:
            o->system = v;
            break;
        case O_MODEL:
            o->model = v;
            break;
        case O_NAME:
            o->name = v;
            break;
        case 'o':
            *out = v;
            break;
        case O_GPUS:
        case O_NODES:
            if (mb_cli__positive(cli_opts_name(&g), v, c == O_GPUS ? &o->gpus : &o->nodes))
                rc = 2;
            break;
        case CLI_OPERAND:
            if (!*file) {
                *file = v;
                break;
            }
            fprintf(stderr, "mbsim import: one file expected, got '%s' too\n", v);
            rc = 2;
            break;
        default:
            rc = 2;
        }
    }
    cli_opts_free(&g);
    return rc;
}

/* Write len bytes of text to out (NULL: stdout) through a temporary file
 * renamed at the end (mb_outfile.h); "wrote" only once it is whole. 0 or 1. */
static int mb_cli__write_out(const char *text, size_t len, const char *out, const char *what)
{
    struct mb_outfile o;
    struct mb_err err;
    mb_err_clear(&err);
    if (mb_outfile_open(&o, out ? out : "-", NULL, &err)) {
        mb_cli_print_err(&err);
        return 1;
    }
    if (fwrite(text, 1, len, o.fp) != len) {
        fprintf(stderr, "mbsim import: %s: cannot write the %s\n", out ? out : "stdout", what);
        mb_outfile_abort(&o);
        return 1;
    }
    if (mb_outfile_commit(&o, &err)) {
        mb_cli_print_err(&err);
        return 1;
    }
    return 0;
}

static int mb_cli__write_scenario(const struct mb_scenario *s, const char *out)
{
    char *yaml = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&yaml, &len);
    int bad = !mem || mb_scenario_write_yaml(s, mem);
    if (mem)
        bad |= fclose(mem) != 0;
    if (bad)
        fprintf(stderr, "mbsim import: %s: cannot write the scenario\n", out ? out : "stdout");
    else
        bad = mb_cli__write_out(yaml, len, out, "scenario");
    free(yaml);
    if (!bad && out)
        fprintf(stderr, "mbsim import: wrote %s\n", out);
    return bad;
}

/* Default model name: OUT's stem, else the config file's stem unless it is
 * "config" (then its folder's name), else "hf_model"; lower case, [a-z0-9._-]. */
static void mb_cli__hf_name(const char *file, const char *out, char *name, size_t len)
{
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    const char *src = out ? out : strcmp(base, "config.json") ? file : NULL, *end;
    char dir[512];
    if (src) {
        src = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
        end = strrchr(src, '.') && strrchr(src, '.') != src ? strrchr(src, '.') : src + strlen(src);
    } else {
        snprintf(dir, sizeof dir, "%s", file);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        src = slash ? (strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir) : "hf_model";
        end = src + strlen(src);
    }
    size_t k = 0;
    for (const char *p = src; p < end && k + 1 < len; p++) {
        char c = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        name[k++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ? c : '_';
    }
    name[k] = 0;
    if (!k)
        snprintf(name, len, "hf_model");
}

static int mb_cli__import_hf(const char *file, const char *out, const char *name_opt)
{
    char name[64], msg[MB_ERR_TEXT_LEN];
    if (name_opt)
        snprintf(name, sizeof name, "%s", name_opt);
    else
        mb_cli__hf_name(file, out, name, sizeof name);
    if (name_opt && strlen(name_opt) >= sizeof name) {
        fprintf(stderr, "mbsim import: --name '%s': at most 63 characters\n", name_opt);
        return 2;
    }
    char *yaml = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&yaml, &len);
    struct mb_err err;
    mb_err_clear(&err);
    FILE *notes = mb_text_escape_stream(stderr, "\n"); /* notes quote the config's keys and values (mb_text.h) */
    int rc = mem ? mb_hf_import(file, name, mem, notes, &err) : -1;
    fclose(notes);
    if (mem)
        fclose(mem);
    if (rc) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim: %s\n", msg);
        free(yaml);
        return 1;
    }
    int bad = mb_cli__write_out(yaml, len, out, "model");
    free(yaml);
    if (!bad && out)
        fprintf(stderr, "mbsim import: wrote %s (model %s)\n", out, name);
    return bad;
}

int mb_cmd_import(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        mb_cli__usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    enum mb_megatron_dialect d;
    int hf = !strcmp(argv[0], "hf");
    if (hf) {
        d = MB_MEGATRON_LM; /* unused */
    } else if (!strcmp(argv[0], "megatron")) {
        d = MB_MEGATRON_LM;
    } else if (!strcmp(argv[0], "bridge")) {
        d = MB_MEGATRON_BRIDGE;
    } else {
        fprintf(stderr, "mbsim import: unknown format '%s'; expected megatron, bridge or hf\n", argv[0]);
        return 2;
    }
    const char *file = NULL, *out = NULL;
    struct mb_megatron_opts o = {0};
    int rc = mb_cli__parse(argc, argv, &file, &out, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (hf && (o.system || o.model || o.gpus || o.nodes)) {
        fprintf(stderr, "mbsim import hf: takes only --name and -o\n");
        return 2;
    }
    if (hf && file)
        return mb_cli__import_hf(file, out, o.name);
    if (!file || !o.system) {
        fprintf(stderr, "mbsim import: %s\n", !file ? "give the file to import" : "give the system with --system NAME");
        mb_cli__usage(stderr);
        return 2;
    }
    struct mb_megatron_args a;
    struct mb_scenario s;
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    FILE *notes = mb_text_escape_stream(stderr, "\n"); /* notes quote the script's words (mb_text.h) */
    int bad = mb_megatron_read(file, d, &a, &err) || mb_megatron_import(&a, &o, &s, notes, &err);
    fclose(notes);
    if (bad) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim: %s\n", msg);
        mb_megatron_args_free(&a);
        return 1;
    }
    mb_megatron_args_free(&a);
    rc = mb_cli__write_scenario(&s, out);
    mb_scenario_free(&s);
    return rc;
}
