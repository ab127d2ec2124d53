/*
 * cmd_collective.c -- `mbsim collective`: predict an nccl-tests run.
 *
 * For each size of the sweep one engine is built with the system's fabric
 * (topology/mb_fabric.h), one collective is added (sim/engine/mb_coll.h) and run;
 * the table printed has the columns and busBW conventions of nccl-tests
 * (hardware.md B.3, C.1) so it can be diffed against a real log. The model
 * does not distinguish in-place from out-of-place: both blocks show the same
 * prediction.
 *
 * Exit codes: 0 ok, 1 bad input (system or calibration file), 2 usage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "mb_calib.h"
#include "mb_coll.h"
#include "mb_engine.h"
#include "mb_fabric.h"
#include "mb_topo.h"

static void mb_cli__usage(FILE *fp)
{
    fprintf(fp,
            "usage: mbsim collective --system NAME|FILE.yaml --gpus N --op OP [--sizes MIN:MAX]\n"
            "                        [--factor F] [--dtype T] [--algo ring|tree|nvls|pairwise|auto]\n"
            "                        [--calib TABLE.yaml]\n"
            "\n"
            "Predicts an nccl-tests sweep (all_reduce_perf -b MIN -e MAX -f F) on N GPUs and prints\n"
            "the same table (size, count, type, redop, root, time us, algbw, busbw GB/s).\n"
            "  OP     all_reduce | all_gather | reduce_scatter | broadcast | alltoall | sendrecv\n"
            "  sizes  bytes with optional K/M/G suffix (powers of 1024, as nccl-tests); default 8:8G\n"
            "  F      multiplication factor between sizes, > 1 (default 2)\n"
            "  T      float (default) | half | bfloat16 (bf16) | double | int8 | int32 | int64 | fp8\n"
            "  algo   default auto: NCCL-like choice by size and group shape (docs/collectives.md)\n"
            "  calib  a calibration table for the system's GPU (e.g. from `mbsim calibrate nccl-tests`):\n"
            "         its measured times of this op and group size answer the sizes they cover\n"
            "exit codes: 0 ok, 1 bad system, 2 usage error\n");
}

/* The size after s: s * factor rounded down, at least one byte more (8 * 1.1
 * rounds back to 8, which looped for ever). */
static double mb_cli__next_size(double s, double factor)
{
    double n = floor(s * factor);
    return n > s ? n : s + 1;
}

#define MB_COLL_MAX_BYTES (1024.0 * 1024 * 1024 * 1024 * 1024)

static int mb_cli__parse_size(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    double m = 1;
    if (*end) {
        switch (*end) {
        case 'K': case 'k': m = 1024.0; break;
        case 'M': case 'm': m = 1024.0 * 1024; break;
        case 'G': case 'g': m = 1024.0 * 1024 * 1024; break;
        case 'T': case 't': m = 1024.0 * 1024 * 1024 * 1024; break;
        default: return -1;
        }
        end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return -1;
    }
    *out = floor(v * m);
    /* at most 1 PiB per rank: above any GPU's memory, and exact in a double */
    return *out >= 1 && *out <= MB_COLL_MAX_BYTES ? 0 : -1;
}

static const struct { const char *name, *nccl; int size; } dtypes[] = {
    {"float", "float", 4},    {"fp32", "float", 4},       {"half", "half", 2},     {"fp16", "half", 2},
    {"bfloat16", "bfloat16", 2}, {"bf16", "bfloat16", 2}, {"double", "double", 8}, {"fp64", "double", 8},
    {"int8", "int8", 1},      {"uint8", "uint8", 1},      {"int32", "int32", 4},   {"uint32", "uint32", 4},
    {"int64", "int64", 8},    {"uint64", "uint64", 8},    {"fp8", "f8e4m3", 1},    {"f8e4m3", "f8e4m3", 1},
    {"f8e5m2", "f8e5m2", 1}};

static void mb_cli__fmt_time(char *buf, size_t n, double us)
{
    if (us >= 10000)
        snprintf(buf, n, "%7.0f", us);
    else if (us >= 100)
        snprintf(buf, n, "%7.1f", us);
    else
        snprintf(buf, n, "%7.2f", us);
}

enum { O_SYSTEM = 256, O_GPUS, O_OP, O_SIZES, O_FACTOR, O_DTYPE, O_CALIB, O_ALGO };

/* What `mbsim collective` was asked for. */
struct coll_opts {
    const char *system, *sizes, *calib;
    int gpus, have_op, dt;
    double factor, smin, smax;
    enum mb_coll_op op;
    enum mb_coll_algo algo;
};

/* --sizes MIN:MAX read into o->smin, o->smax and checked with --factor: -1, or 2 after the message. */
static int mb_cli__coll_sizes(struct coll_opts *o)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", o->sizes);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
    if (mb_cli__parse_size(buf, &o->smin) || mb_cli__parse_size(colon ? colon + 1 : buf, &o->smax) || o->smax < o->smin) {
        fprintf(stderr,
                "mbsim collective: --sizes '%s': expected MIN:MAX bytes (suffix K, M, G, T; at most 1 PiB), "
                "MIN <= MAX\n",
                o->sizes);
        return 2;
    }
    int n_sizes = 0;
    for (double s = o->smin; s <= o->smax * (1 + 1e-12) && n_sizes <= MB_COLL_MAX_SIZES; s = mb_cli__next_size(s, o->factor))
        n_sizes++;
    if (n_sizes > MB_COLL_MAX_SIZES) {
        fprintf(stderr, "mbsim collective: --sizes %s with --factor %g gives more than %d sizes\n", o->sizes,
                o->factor, MB_COLL_MAX_SIZES);
        return 2;
    }
    return -1;
}

/* One option's value into o: -1 when it is good, else the exit code (2, or 0 for --help). */
static int mb_cli__coll_option(struct coll_opts *o, int c, const char *v)
{
    char *end;
    if (c == 'h') {
        mb_cli__usage(stdout);
        return 0;
    } else if (c == CLI_OPERAND) {
        fprintf(stderr, "mbsim collective: unexpected argument '%s'\n", v);
        mb_cli__usage(stderr);
    } else if (c == CLI_USAGE) {
        mb_cli__usage(stderr);
    } else if (c == O_SYSTEM) {
        o->system = v;
        return -1;
    } else if (c == O_GPUS) {
        long n = 0;
        if (cli_parse_long(v, 1, 1000000, &n))
            fprintf(stderr, "mbsim collective: --gpus '%s': expected an integer from 1 to 1000000\n", v);
        else
            return o->gpus = (int)n, -1;
    } else if (c == O_OP) {
        if (mb_coll_op_parse(v, &o->op))
            fprintf(stderr, "mbsim collective: --op '%s': expected all_reduce, all_gather, reduce_scatter, "
                            "broadcast, alltoall or sendrecv\n", v);
        else
            return o->have_op = 1, -1;
    } else if (c == O_SIZES) {
        o->sizes = v;
        return -1;
    } else if (c == O_FACTOR) {
        o->factor = strtod(v, &end);
        if (*end || end == v || !(o->factor > 1) || !isfinite(o->factor))
            fprintf(stderr, "mbsim collective: --factor '%s': expected a finite number > 1\n", v);
        else
            return -1;
    } else if (c == O_DTYPE) {
        size_t k, nd = sizeof dtypes / sizeof dtypes[0];
        for (k = 0; k < nd && strcmp(dtypes[k].name, v); k++)
            ;
        if (k == nd)
            fprintf(stderr, "mbsim collective: --dtype '%s': expected float, half, bfloat16, bf16, double, "
                            "int8, uint8, int32, uint32, int64, uint64, fp8\n", v);
        else
            return o->dt = (int)k, -1;
    } else if (c == O_CALIB) {
        o->calib = v;
        return -1;
    } else if (c == O_ALGO) {
        if (mb_coll_algo_parse(v, &o->algo))
            fprintf(stderr, "mbsim collective: --algo '%s': expected auto, ring, tree, nvls or pairwise\n", v);
        else
            return -1;
    }
    return 2;
}

/* The options, then the checks that need several of them: -1 to go on, else the exit code. */
static int mb_cli__coll_parse(int argc, char **argv, struct coll_opts *o)
{
    static const struct option lo[] = {
        {"help", no_argument, NULL, 'h'},            {"system", required_argument, NULL, O_SYSTEM},
        {"gpus", required_argument, NULL, O_GPUS},   {"op", required_argument, NULL, O_OP},
        {"sizes", required_argument, NULL, O_SIZES}, {"factor", required_argument, NULL, O_FACTOR},
        {"dtype", required_argument, NULL, O_DTYPE}, {"calib", required_argument, NULL, O_CALIB},
        {"algo", required_argument, NULL, O_ALGO},   {0}};
    int i0 = (argc > 0 && !strcmp(argv[0], "collective")) ? 1 : 0;
    struct cli_opts g;
    const char *v;
    int c, rc = -1;
    cli_opts_init(&g, "mbsim collective", "h", lo, argc - i0, argv + i0);
    while (rc < 0 && (c = cli_opts_next(&g, &v)) != CLI_END)
        rc = mb_cli__coll_option(o, c, v);
    cli_opts_free(&g);
    if (rc >= 0)
        return rc;
    if (!o->system || !o->gpus || !o->have_op) {
        fprintf(stderr, "mbsim collective: --system, --gpus and --op are required\n");
        mb_cli__usage(stderr);
        return 2;
    }
    int max_ranks = o->op == MB_COLL_ALLTOALL ? MB_COLL_MAX_ALLTOALL_RANKS : MB_COLL_MAX_RANKS;
    if (o->gpus > max_ranks) {
        fprintf(stderr, "mbsim collective: --gpus %d: at most %d ranks for %s (each size is simulated flow by flow; "
                        "larger groups take minutes and GiBs)\n", o->gpus, max_ranks, mb_coll_op_name(o->op));
        return 2;
    }
    return mb_cli__coll_sizes(o);
}

/* The system, its calibration table (--calib or the GPU's own) and the fabric's link
 * parameters from it: 0, or -1 after the message (nothing left to free). */
static int mb_cli__coll_load(const struct coll_opts *o, struct mb_system *sys, struct mb_calib **cal,
                     struct mb_fabric_params *fp)
{
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    *cal = NULL;
    if (mb_topo_load_system(o->system, sys, &err) ||
        (!o->calib && mb_topo_check_calibrated(sys, "--calib FILE", &err)) ||
        mb_calib_load(o->calib ? NULL : sys->gpu, o->calib, cal, &err)) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim collective: %s\n", msg);
        return -1;
    }
    if (strcasecmp(mb_calib_spec(*cal)->name, sys->gpu)) {
        fprintf(stderr, "mbsim collective: --calib %s is a table for %s, but system '%s' has %s GPUs\n", o->calib,
                mb_calib_spec(*cal)->name, sys->name, sys->gpu);
        mb_calib_free(*cal);
        *cal = NULL;
        return -1;
    }
    memset(fp, 0, sizeof *fp);
    fp->nvlink_eff = mb_calib_link_eff(*cal, MB_LINK_NVLINK);
    fp->nic_eff = mb_calib_link_eff(*cal, MB_LINK_NIC);
    fp->pcie_eff = mb_calib_link_eff(*cal, MB_LINK_PCIE);
    fp->nvlink_lat = mb_calib_link_latency(*cal, MB_LINK_NVLINK);
    fp->nic_lat = mb_calib_link_latency(*cal, MB_LINK_NIC);
    fp->nvls_eff = mb_calib_link_eff(*cal, MB_LINK_NVLS); /* 0 when the table has none: MB_FABRIC_NVLS_EFF */
    fp->nvls_lat = mb_calib_link_latency(*cal, MB_LINK_NVLS);
    return 0;
}

/* The GPU count and the algorithm checked once, on a throwaway fabric: 0, or 2 after the message. */
static int mb_cli__coll_check(const struct coll_opts *o, const struct mb_system *sys, const struct mb_fabric_params *fp)
{
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    struct mb_engine *e = mb_engine_new();
    struct mb_fabric *f = mb_fabric_build(e, sys, o->gpus, fp, &err);
    if (!f) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim collective: %s\n", msg);
        mb_engine_free(e);
        return 2;
    }
    struct mb_coll_req r = {o->op, o->algo, o->gpus, NULL, 0, 1 << 20, 0, 0, 0};
    int bad = o->algo != MB_COLL_ALGO_AUTO && !mb_coll_algo_ok(mb_fabric_net(f), &r, o->algo);
    mb_fabric_free(f);
    mb_engine_free(e);
    if (bad) {
        fprintf(stderr, "mbsim collective: --algo %s does not apply to %s on %d GPUs of '%s'\n",
                mb_coll_algo_name(o->algo), mb_coll_op_name(o->op), o->gpus, sys->name);
        return 2;
    }
    return 0;
}

/* nccl-tests' heading, with what was simulated. */
static void mb_cli__coll_header(const struct coll_opts *o, const struct mb_system *sys)
{
    int nodes = (o->gpus + sys->gpus_per_node - 1) / sys->gpus_per_node;
    printf("# mbsim collective: %s on %d GPUs of system '%s' (%d node%s x %d), dtype %s, algo %s\n",
           mb_coll_op_name(o->op), o->gpus, sys->name, nodes, nodes > 1 ? "s" : "",
           o->gpus < sys->gpus_per_node ? o->gpus : sys->gpus_per_node, dtypes[o->dt].nccl, mb_coll_algo_name(o->algo));
    printf("# predicted (flow-level model, docs/collectives.md); columns and busbw as nccl-tests; "
           "in-place = out-of-place\n");
    if (o->calib)
        printf("# calibration %s: its measured %s times on %d ranks, if any, answer the sizes they cover "
               "(count below)\n", o->calib, mb_coll_op_name(o->op), o->gpus);
    printf("#\n");
    printf("#                                                              out-of-place                       in-place          \n");
    printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
}

/* What the table's rows add up to, for its footer. */
struct coll_sums {
    double sum_bus;
    int n_rows, n_meas, last;
    char algos[1024]; /* NCCL's (algorithm, protocol) choices, as NCCL_DEBUG=INFO would name them */
};

/* One size simulated on a fresh engine and printed as a table row: 0, or 1 after the message. */
static int mb_cli__coll_row(const struct coll_opts *o, const struct mb_system *sys, const struct mb_fabric_params *fp,
                    const struct mb_calib *cal, double bytes, double count, struct coll_sums *sum)
{
    struct mb_err err;
    char msg[MB_ERR_TEXT_LEN];
    mb_err_clear(&err);
    int dom = sys->nvlink_domain > 0 ? sys->nvlink_domain : sys->gpus_per_node;
    int domains = (o->gpus + dom - 1) / dom;
    struct mb_engine *e = mb_engine_new();
    struct mb_fabric *f = mb_fabric_build(e, sys, o->gpus, fp, &err);
    int st = mb_engine_add_stream(e);
    struct mb_coll_req r = {o->op, o->algo, o->gpus, NULL, 0, bytes, 0, 0, 0};
    if (o->calib && mb_calib_coll_pace(cal, mb_coll_op_name(o->op), o->gpus, bytes, &r.meas_lat, &r.meas_paced))
        sum->n_meas++;
    struct mb_coll_choice used;
    int prc = f ? mb_coll_add_plan(e, mb_fabric_net(f), &r, st, &used, &err) : -1;
    if (prc >= 0)
        prc = mb_engine_run(e, &err);
    double t = mb_engine_makespan(e);
    mb_fabric_free(f);
    mb_engine_free(e);
    if (prc < 0) {
        mb_err_format(&err, msg, sizeof msg);
        fprintf(stderr, "mbsim collective: %s\n", msg);
        return 1;
    }
    double algbw = t > 0 ? bytes / t / 1e9 : 0;
    double busbw = algbw * mb_coll_bus_factor(o->op, o->gpus);
    const char *redop = (o->op == MB_COLL_ALL_REDUCE || o->op == MB_COLL_REDUCE_SCATTER) ? "sum" : "none";
    int root = o->op == MB_COLL_BROADCAST ? 0 : -1;
    char ts[32];
    mb_cli__fmt_time(ts, sizeof ts, t * 1e6);
    printf("%12.0f  %12.0f  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6.2f  %6.2f  %5s\n", bytes, count,
           dtypes[o->dt].nccl, redop, root, ts, algbw, busbw, "N/A", ts, algbw, busbw, "N/A");
    sum->sum_bus += busbw;
    sum->n_rows++;
    int key = (int)used.algo * MB_COLL_PROTO_COUNT + (int)used.proto;
    if (key != sum->last) {
        size_t l = strlen(sum->algos);
        snprintf(sum->algos + l, sizeof sum->algos - l, "%s%s/%s from %.0f B", l ? ", " : "",
                 mb_coll_algo_label(used.algo, domains), mb_coll_proto_name(used.proto), bytes);
        sum->last = key;
    }
    return 0;
}

/* Every size of --sizes as a row, then nccl-tests' footer: 0, or the exit code after the message. */
static int mb_cli__coll_table(const struct coll_opts *o, const struct mb_system *sys, const struct mb_fabric_params *fp,
                      const struct mb_calib *cal)
{
    int ws = dtypes[o->dt].size;
    int per_rank_count = o->op == MB_COLL_ALL_GATHER || o->op == MB_COLL_REDUCE_SCATTER || o->op == MB_COLL_ALLTOALL;
    double unit = per_rank_count ? (double)ws * o->gpus : ws;
    struct coll_sums sum = {.last = -1};
    mb_cli__coll_header(o, sys);
    for (double s = o->smin; s <= o->smax * (1 + 1e-12); s = mb_cli__next_size(s, o->factor)) {
        double count = floor(s / unit);
        if (count < 1)
            continue;
        if (mb_cli__coll_row(o, sys, fp, cal, count * unit, count, &sum))
            return 1;
        if (floor(s * o->factor) <= s)
            break;
    }
    if (!sum.n_rows) {
        /* nccl-tests skips sizes below one element per rank; say so rather than print an empty table */
        fprintf(stderr, "mbsim collective: no size in --sizes %s holds one %s element%s (at least %.0f B)\n",
                o->sizes, dtypes[o->dt].nccl, per_rank_count ? " per rank" : "", unit);
        return 2;
    }
    printf("# Out of bounds values : 0 OK\n");
    printf("# Avg bus bandwidth    : %g \n", sum.sum_bus / sum.n_rows);
    printf("# Algorithm            : %s\n", sum.algos);
    if (o->calib)
        printf("# Measured             : %d of %d sizes from %s (the rest: link model)\n", sum.n_meas, sum.n_rows,
               o->calib);
    printf("#\n");
    return 0;
}

int mb_cmd_collective(int argc, char **argv)
{
    struct coll_opts o = {.sizes = "8:8G", .factor = 2, .op = MB_COLL_ALL_REDUCE, .algo = MB_COLL_ALGO_AUTO};
    int rc = mb_cli__coll_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct mb_system sys;
    struct mb_calib *cal;
    struct mb_fabric_params fp;
    if (mb_cli__coll_load(&o, &sys, &cal, &fp))
        return 1;
    rc = mb_cli__coll_check(&o, &sys, &fp);
    if (!rc)
        rc = mb_cli__coll_table(&o, &sys, &fp, cal);
    mb_calib_free(cal);
    return rc;
}
