/*
 * mb_import.h -- importers of measured profiles into calibration data.
 *
 * Each importer has its own clearly delimited section below.
 */
#ifndef MB_IMPORT_H
#define MB_IMPORT_H

#include <stdio.h>
#include "mb_util.h"

/* ===== nccl-tests logs (calibration/import/import_nccl_tests.c) =================== */

/** One row of an nccl-tests table. Block 0 = out-of-place, 1 = in-place. */
struct mb_nccl_point {
    double size;        /**< bytes, nccl-tests convention (total for all_gather/reduce_scatter) */
    double count;       /**< elements */
    int n_blocks;       /**< 1 or 2 (time/algbw/busbw blocks present on the row) */
    double time_us[2];  /**< average time per op, microseconds */
    double algbw[2];    /**< GB/s (1e9 B/s) */
    double busbw[2];    /**< GB/s (1e9 B/s) */
    long wrong[2];      /**< #wrong (or older `error` column rounded up); -1 = N/A */
    int line;           /**< 1-based line in the file */
};

/** One run: the rows after one column header (a file may hold several). */
struct mb_nccl_run {
    char file[MB_PATH_LEN]; /**< path of the log */
    int line;           /**< line of the column header */
    char op[32];        /**< all_reduce, all_gather, ... or "unknown" */
    char op_from[16];   /**< how op was found: "header", "file name", "columns" */
    char dtype[16];     /**< nccl-tests type name of the first row (float, bfloat16, ...) */
    char redop[8];      /**< sum, prod, min, max, avg, none */
    int root;           /**< root column of the first row; -1 rootless or column absent */
    int n_ranks;        /**< "# Rank" lines in the preamble (0 = not printed) */
    int n_hosts;        /**< distinct host names among those lines */
    char gpu_name[64];  /**< device name of rank 0, "" unknown */
    char gpu_other[64]; /**< the first other rank's device name that differs from rank 0's, "" if none */
    double avg_busbw;   /**< footer "# Avg bus bandwidth", -1 if absent */
    int truncated;      /**< the file ended inside this run (no footer, or a cut last row) */
    int n_points;
    struct mb_nccl_point *points;
};

/** A set of runs from one or more files. Zero-initialize before the first import. */
struct mb_nccl_log {
    int n_runs;
    struct mb_nccl_run *runs;
};

/**
 * @brief Parse one nccl-tests output file and append its runs to `log`.
 *
 * Accepts: `#` comment/preamble lines, the two-row column header keyed by its
 * text (`root` optional; `#wrong` or older `error`; one or two
 * time/algbw/busbw blocks), several runs in one file (each column header
 * starts a run), MPI prefixes such as `[1,0]<stdout>:` or `[1,0]:`, NCCL
 * `INFO`/`WARN` lines and blank lines (skipped), and a truncated last row at
 * end of file (dropped, run marked truncated).
 * @param[in]     path  log file
 * @param[in,out] log   runs appended; left unchanged on error
 * @param[out]    err   "path:line: message" (file and line set), e.g.
 *                      "expected 13 fields like the column header, got 7"
 * @return 0, or -1 (unreadable file, no result row, malformed row, row before a header).
 */
int mb_import_nccl_tests(const char *path, struct mb_nccl_log *log, struct mb_err *err);

/** @brief Free the runs of a log (accepts NULL) and zero it. */
void mb_nccl_log_free(struct mb_nccl_log *log);

/**
 * @brief Write the log as a calibration overlay table (YAML): `gpu`, `base`
 * and a `measured:` section whose `collectives` hold one point per valid row
 * and block (op, group, bytes, time, busbw, dtype, source file:line), which
 * mb_calib_coll_line() answers from; `measured.summary` lists the runs
 * (informative). Rows of size 0, without a time or with #wrong > 0 are left out.
 * Format: docs/calibration.md "Measured collectives".
 * @param[in] gpu    shipped GPU name the table is for (e.g. "H100")
 * @param[in] base   base table: a GPU name or a table path
 * @param[in] ranks  group size of the runs that list no "# Rank" lines (> 0), or 0
 * @param[in] out    stream, or NULL to check the runs only
 * @param[out] err   "file:line:1: ..." for a run whose op is unknown or not an
 *                   nccl-tests collective, whose ranks print different GPUs, whose
 *                   "# Rank" count disagrees with a given `ranks`, or whose group
 *                   is under 2 ranks; nothing is written then. "write error" when
 *                   the stream fails.
 * @return 0, or -1.
 */
int mb_nccl_log_write_table(const struct mb_nccl_log *log, const char *gpu, const char *base, int ranks, FILE *out,
                            struct mb_err *err);

/* ===== end of nccl-tests section ========================================== */

/* ---- nsys / kineto ---- (calibration/import/import_nsys.c, calibration/import/import_kineto.c) */

#include <stddef.h>
#include "mb_calib.h"

/*
 * Kernel-name classification (table in docs/calibration.md "Importing
 * profiles", first rule wins) and the profile object both importers fill.
 * Times are seconds.
 */
enum mb_kclass {
    MB_KC_GEMM,         /* cuBLAS nvjet / sm90_xmma / cutlass GEMMs, splitK reduce */
    MB_KC_GROUPED_GEMM, /* GroupProblemShape, MoeFCGemm, fused_moe, grouped_gemm */
    MB_KC_ATTN_FWD,     /* FlashAttnFwd*, flash_fwd*, fmha fwd */
    MB_KC_ATTN_BWD,     /* FlashAttnBwd*, flash_bwd*, fmha bwd */
    MB_KC_NCCL,         /* ncclDevKernel_* / ncclKernel_* */
    MB_KC_NORM,         /* rms_norm, layer_norm, ... */
    MB_KC_PERMUTE,      /* MoE permute/unpermute: expandInputRows, finalizeMoeRouting, ... */
    MB_KC_ROUTER,       /* topkGating, moe router / top-k */
    MB_KC_ELEMENTWISE,  /* elementwise, rotary, fill, copy, reductions, KV-cache writes */
    MB_KC_MEMORY,       /* memcpy / memset (Kineto gpu_memcpy, gpu_memset) */
    MB_KC_OTHER,        /* recognized, not modeled (delay kernels, convolution, cuDNN) */
    MB_KC_UNKNOWN,      /* no rule matched: counted and reported */
    MB_KC_COUNT
};

/** @brief "gemm", "grouped_gemm", "attn_fwd", "attn_bwd", "nccl", "norm", "permute", "router",
 *  "elementwise", "memory", "other", "unknown". */
const char *mb_prof_kclass_name(enum mb_kclass k);

/** @brief Class of a (demangled) kernel name by the documented rule table. */
enum mb_kclass mb_prof_classify(const char *kernel);

/**
 * @brief The GPU architecture a kernel name says it was built for, as compute
 * capability x 10: the highest "smNN" / "sm_NN" / "SmNN" (not inside a word)
 * in the name, e.g. "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT" -> 90,
 * "flash::enable_sm90_or_later<...cutlass::arch::Sm90>" -> 90,
 * "Fused_Moe_Kernel_sm80<...>" -> 80 (an sm80 kernel also runs on later GPUs:
 * the value is a lower bound of the GPU's capability). Values from 30 to 199.
 * @return the value, or 0 when the name states none.
 */
int mb_prof_name_sm(const char *kernel);

/** Operation a shape describes. */
enum mb_prof_op { MB_PROF_GEMM, MB_PROF_GROUPED, MB_PROF_ATTN };

/** A shape: what one kernel instance computes (from a side-file or a CPU op's input shapes). */
struct mb_prof_shape {
    enum mb_prof_op op;
    enum mb_prec prec;
    double m, n, k, batch;                /* GEMM: batch x (m x k) . (k x n) */
    double groups, tokens;                /* grouped GEMM: groups x (tokens x k) . (k x n) */
    double batch_heads, seq, seq_kv;      /* attention: batch*heads, query / key length */
    int head_dim, causal, bwd;
};

/** @brief Model FLOPs of one instance (GEMM 2bmnk; attention 4*bh*s*s_kv*d, /2 causal, x2.5 bwd). */
double mb_prof_shape_flop(const struct mb_prof_shape *s);

/** Side-file of shapes for an nsys summary: kernel-name patterns -> shape. */
struct mb_prof_shapes;

/**
 * @brief Load a shapes side-file (YAML, docs/calibration.md "Shapes side-file").
 * @param[out] out  new object (free with mb_prof_shapes_free)
 * @return 0 or -1 with "file:line:col: message".
 */
int mb_prof_shapes_load(const char *path, struct mb_prof_shapes **out, struct mb_err *err);
void mb_prof_shapes_free(struct mb_prof_shapes *s);
/** @brief GPU named by the side-file ("" when absent). */
const char *mb_prof_shapes_gpu(const struct mb_prof_shapes *s);

/** One kernel (nsys: one summary row; Kineto: one kernel name aggregated over its events). */
struct mb_prof_kernel {
    char *name;
    enum mb_kclass cls;
    long instances;
    double total_s, avg_s, med_s; /* med_s = avg_s when the source has no median */
    int line;                     /* nsys: CSV line; Kineto: index of the first event */
    int noshape;                  /* nsys: of a shaped class (GEMM, grouped GEMM, attention) and
                                     matched by no shape rule: not a point (counted in n_noshape) */
};

/** One measured point (becomes a `measured:` entry of the written table). */
struct mb_prof_point {
    struct mb_prof_shape shape;
    double time_s;   /* time of one instance */
    long instances;
    double achieved; /* FLOP/s */
    char *source;    /* kernel name or op, for the entry's `source:` */
};

/** One measured collective (Kineto NCCL kernel with its collective arguments). */
struct mb_prof_coll {
    char op[32];     /* "allreduce", ... (Collective name) */
    char dtype[16];  /* "Float", "BFloat16", ... */
    int group;
    double bytes;    /* nccl-tests size convention */
    double time_s;   /* mean */
    double busbw;    /* bytes/s */
    long instances;
};

struct mb_prof {
    char *file;                        /* profile path */
    char gpu[32];                      /* from the trace (Kineto deviceProperties) or the side-file */
    char gpu_name[128];                /* Kineto: deviceProperties[0].name as written ("NVIDIA
                                          A100-PG509-200"), "" when the trace has none */
    size_t n_kernels;
    struct mb_prof_kernel *kernels;
    long cls_kernels[MB_KC_COUNT];     /* distinct kernel names per class */
    long cls_instances[MB_KC_COUNT];
    double cls_time_s[MB_KC_COUNT];
    double total_s;
    size_t n_points;
    struct mb_prof_point *points;
    size_t n_coll;
    struct mb_prof_coll *coll;
    /* Kineto: host time per kernel launch on the thread that launches most
     * kernels (mb_prof_kineto; 0 gaps when the trace has no launches) */
    long host_launches;                /* kernel/graph launches on that thread */
    long host_gaps;                    /* gaps between consecutive launches used */
    long host_pid, host_tid;           /* the launching thread */
    double host_launch_s;              /* mean gap (seconds): host time per launch */
    double host_launch_med_s;          /* median gap (seconds) */
    size_t n_unused_shapes;            /* nsys: side-file rules that matched no kernel */
    size_t n_noshape;                  /* shaped-class kernels / NCCL kernels without shape or args */
};

/**
 * @brief Import `nsys stats --report cuda_gpu_kern_sum --format csv` output
 * (also the older gpukernsum header; preamble lines before the header are skipped).
 * @param[in]  shapes  optional side-file: matching kernels become points
 * @param[out] out     new profile (free with mb_prof_free)
 * @param[out] err     "file:line:1: message" for missing header, wrong columns,
 *                     wrong field counts, non-numeric values, unterminated quotes
 * @return 0 or -1.
 */
int mb_prof_nsys(const char *path, const struct mb_prof_shapes *shapes, struct mb_prof **out, struct mb_err *err);

/** Fewest launch gaps from which a Kineto import writes `measured.launch`. */
#define MB_PROF_MIN_HOST_GAPS 20

/**
 * @brief Import a PyTorch profiler / Kineto Chrome trace (.json or .json.gz).
 * Kernels are joined to their launching CPU op (args["External id"], or
 * args.correlation -> runtime call -> "External id"); ops with "Input Dims"
 * (aten::mm, addmm, bmm, baddbmm, linear, _grouped_mm, scaled-dot-product /
 * flash attention fwd and bwd) give points; NCCL kernels with collective
 * arguments give collectives.
 * Host time per launch (host_* fields): on the CPU thread with the most
 * kernel launches (cudaLaunchKernel[ExC], cuLaunchKernel[Ex],
 * cudaLaunchCooperativeKernel, cudaGraphLaunch), the gaps between consecutive
 * launches, each less the part of the earlier launch call beyond the median
 * launch-call duration (a launch blocked on a full queue is waiting, not
 * working); gaps that contain a synchronizing call (name containing
 * "Synchronize", cudaMemcpy, cuMemcpy without Async) are the host waiting
 * for the GPU and are left out, as are gaps over 1 ms (data loading,
 * logging, step boundaries). Mean and median of the rest, in seconds. A
 * launch or synchronizing call with a missing, non-numeric, negative or
 * non-finite ts or dur is an error, as for kernels.
 * This is the quantity the step model charges per kernel (spec.launch): the
 * framework's whole host cost per kernel, Python and dispatch included.
 * @param[out] err  "file:line:col: JSON error ..." or "file: $.traceEvents[i].key: ..."
 * @return 0 or -1.
 */
int mb_prof_kineto(const char *path, struct mb_prof **out, struct mb_err *err);

/** @brief Free a profile; accepts NULL. */
void mb_prof_free(struct mb_prof *p);

/**
 * @brief Write the profile as a calibration overlay table (`base: <base>`,
 * `measured:` points, collectives and the per-class summary) that
 * mb_calib_load accepts.
 * @param[in] base    shipped GPU name or table path the overlay augments
 * @param[in] source  provenance text for `measured.source`
 * @return 0 or -1 (write error).
 */
int mb_prof_write_table(const struct mb_prof *p, const char *base, const char *source, FILE *f,
                        struct mb_err *err);

/** @brief Human-readable per-class summary and unknown kernels (the no-shapes output); the
 *  kernels of a shaped class left without a shape with their launches, share of the GPU time and
 *  the largest of them by time (those a shapes side-file should give first). */
void mb_prof_write_summary(const struct mb_prof *p, FILE *f);

/* ---- end nsys / kineto ---- */

#endif /* MB_IMPORT_H */
