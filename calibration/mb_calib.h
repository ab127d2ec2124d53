/*
 * mb_calib.h -- GPU specifications and kernel-efficiency tables.
 *
 * Op time = max(FLOP / (peak(prec) * eff(shape)), bytes / (HBM_bw * eff_mem))
 * where eff comes from measured tables (calibration/tables/<GPU>.yaml) and is
 * interpolated in log space between measured points. Outside a table's range
 * the lookup falls back to a roofline (peak * the table's asymptotic
 * efficiency) and counts the fallback, so a report can say where it happened.
 *
 * Units: seconds, bytes, FLOP, FLOP/s, bytes/s.
 */
#ifndef MB_CALIB_H
#define MB_CALIB_H

#include <stddef.h>
#include "mb_util.h"

enum mb_prec { MB_PREC_FP32, MB_PREC_BF16, MB_PREC_FP16, MB_PREC_FP8, MB_PREC_FP4, MB_PREC_COUNT };

/** @brief "fp32", "bf16", "fp16", "fp8", "fp4". */
const char *mb_prec_name(enum mb_prec p);

struct mb_gpu_spec {
    char name[32];                 /* H100, H200, B200, B300, GB200, GB300, A100 */
    double peak[MB_PREC_COUNT];    /* dense tensor-core FLOP/s; 0 = unsupported */
    double hbm_bytes;              /* usable HBM capacity, bytes */
    double hbm_bw;                 /* HBM bandwidth, bytes/s (datasheet) */
    int sms;                       /* streaming multiprocessors */
    double launch_s;               /* host launch overhead per kernel, s */
    char source[MB_SOURCE_LEN];
};

/** Link classes whose achieved fraction of line rate is calibrated. */
/* MB_LINK_NVLS: NVLink SHARP all-reduce (optional in tables; eff 0 and
 * latency 0 when absent) -- its eff is algbw / NVLink line rate, its latency a
 * fixed cost per all-reduce */
enum mb_link_kind { MB_LINK_NVLINK, MB_LINK_NIC, MB_LINK_PCIE, MB_LINK_NVLS, MB_LINK_COUNT };

struct mb_calib;

/**
 * @brief A view of a loaded table: shares its (read-only) curves and has its
 * own lookup counters, last source and roofline switch, so threads may each
 * hold a view of one table. The base must outlive the view; mb_calib_free()
 * frees only the view. Never fails (allocation failure aborts).
 */
struct mb_calib *mb_calib_view(const struct mb_calib *base);

/**
 * @brief A view (mb_calib_view) of the table mb_calib_load(gpu, path) gives,
 * loaded once per process and file version (reloaded when the file's size or
 * modification time changes); thread-safe. Free the view with mb_calib_free().
 * @return 0, or -1 with the loader's error (failures are not cached).
 */
int mb_calib_shared(const char *gpu, const char *path, struct mb_calib **view, struct mb_err *err);

/** @brief Free every table mb_calib_shared() loaded (no view may be in use). */
void mb_calib_shared_clear(void);

/**
 * @brief Load the shipped table for a GPU type (calibration/tables/<gpu>.yaml,
 * case-insensitive name) or, when `path` is not NULL, that file instead.
 * @param[out] out  new calibration object (free with mb_calib_free)
 * @param[out] err  "unknown GPU 'x'; known: ..." or file:line:col errors
 * @return 0 or -1.
 */
int mb_calib_load(const char *gpu, const char *path, struct mb_calib **out, struct mb_err *err);
void mb_calib_free(struct mb_calib *c);

const struct mb_gpu_spec *mb_calib_spec(const struct mb_calib *c);

/** @brief Dense GEMM C[m,n] = A[m,k] B[k,n]: seconds. */
double mb_calib_gemm(struct mb_calib *c, enum mb_prec p, double m, double n, double k);

/**
 * @brief Grouped GEMM (MoE experts): `groups` GEMMs of tokens_per_group x n x k.
 * Efficiency depends on tokens per group (collapses at small M). Seconds.
 */
double mb_calib_grouped_gemm(struct mb_calib *c, enum mb_prec p, double groups,
                             double tokens_per_group, double n, double k);

/**
 * @brief Fused (flash) attention core: seconds for `flop` model FLOPs.
 *
 * t = flop / (peak * eff * wave), peak = BF16 (FP16 for p = fp16) for every
 * precision. eff comes from the table's attention curves (FA3 paper Fig. 5/6,
 * hardware.md B.2, measured at batch*seq = 16384 tokens, heads*head_dim = 2048):
 * interpolated in ln(seq) and, between curves of other head dims, in
 * ln(head_dim); head dims a (causal, bwd) kind lacks use the ratio measured on
 * another kind; seq or head dim outside every curve is clamped and counted as
 * a fallback (docs/calibration.md, "Attention"). wave = occ(bh * ceil(seq/128))
 * / occ(benchmark tiles), occ(t) = t / (ceil(t/sms) * sms): FlashAttention runs
 * one CTA per (batch*head, 128-row block) in waves over the SMs.
 * @param[in] p            precision of the surrounding layer (fp16 selects the fp16 peak)
 * @param[in] flop         FLOPs of QK^T and PV over all problems (4*bh*seq*ctx*hd; causal
 *                         already halved by the caller; backward: 2.5x the forward)
 * @param[in] seq          query length of one problem, tokens (selects the curve point)
 * @param[in] head_dim     Q.K head dim (MLA: qk_head_dim, e.g. 192); <= 0 returns 0
 * @param[in] batch_heads  number of independent (batch x query head) problems in one kernel
 *                         call (micro-batch sequences x heads on this rank); <= 0: unknown,
 *                         no wave correction (the benchmark shape's occupancy is assumed)
 * @param[in] causal       causal mask (the non-causal curves answer when a kind has none)
 * @param[in] bwd          backward kernel
 * @return seconds; 0 when flop, seq or head_dim is not positive.
 */
double mb_calib_attn_bh(struct mb_calib *c, enum mb_prec p, double flop, double seq, int head_dim,
                        double batch_heads, int causal, int bwd);

/** @brief NULL-terminated canonical recipe labels a `recipes:` entry may name
 *  (the labels mb_precision_parse produces: bf16, fp16, fp8, fp8_cs,
 *  fp8_blockwise, mxfp8, nvfp4). */
const char *const *mb_calib_recipe_names(void);

/** Most `recipes:` entries one table holds. */
#define MB_CALIB_MAX_RECIPES 16

/**
 * @brief GEMM-time multiplier of a precision recipe (the scenario's canonical
 * precision label, e.g. "fp8_blockwise"): the table's `recipes:` entry
 * `gemm_time_scale`, applied by the step model to the GEMM and grouped-GEMM
 * time of that recipe (not to its quantization passes). Each entry cites the
 * measurement it is derived from (docs/calibration.md, "Recipes").
 * @return the scale, or 1 when the table has none for the recipe, c is NULL
 *         or roofline mode is on.
 */
double mb_calib_recipe_gemm_scale(const struct mb_calib *c, const char *recipe);

/**
 * @brief Time of the quantization work (casts, amax, scaling, transposed
 * copies) of precision recipe `recipe` whose cast kernels move `bytes` (the
 * step model's count: each GEMM's activation input read in BF16 and written in
 * 1 byte, each output gradient read and written twice): bytes / (hbm_bw x the
 * recipe's `quant_eff`), floored at membound.floor, when the table's `recipes:`
 * entry has one (derived from Transformer Engine's autocast minus
 * pre-quantized GEMM times, docs/calibration.md "Recipes"); else
 * mb_calib_membound(c, bytes). Counted as a membound lookup.
 * @return seconds; 0 when bytes is not positive.
 */
double mb_calib_quant(struct mb_calib *c, const char *recipe, double bytes);

/**
 * @brief The table's `gemm.triton_frac`: the fraction of the BF16 GEMM rate
 * (mb_calib_gemm at the kernel's shape) that matmul-shaped Triton kernels
 * reach, e.g. mamba_ssm's SSD chunked scan (docs/calibration.md, gemm).
 * @return the fraction, or 1 when the table has none, c is NULL or roofline
 *         mode is on.
 */
double mb_calib_triton_frac(const struct mb_calib *c);

/** @brief mb_calib_attn_bh with batch_heads unknown (0: no wave correction). Seconds. */
double mb_calib_attn(struct mb_calib *c, enum mb_prec p, double flop, double seq,
                     int head_dim, int causal, int bwd);

/** @brief Memory-bound op moving `bytes` through HBM (read + write). Seconds. */
double mb_calib_membound(struct mb_calib *c, double bytes);

/** Where a lookup's answer came from. */
enum mb_calib_src {
    MB_CALIB_SRC_TABLE,    /* the measured table: interpolated, a point, or the curve's plateau / end point */
    MB_CALIB_SRC_FALLBACK  /* roofline or extrapolation (counted in the table's `fallbacks`) */
};

/**
 * @brief Source of the last mb_calib_gemm / _grouped_gemm / _attn_bh /
 * _membound answer on c (a lookup of a non-positive size leaves it as it was).
 */
enum mb_calib_src mb_calib_last_source(const struct mb_calib *c);

/** @brief Achieved fraction of line rate for bulk transfers on a link class. */
double mb_calib_link_eff(const struct mb_calib *c, enum mb_link_kind k);

/** @brief Fixed per-collective-step latency on a link class, seconds. */
double mb_calib_link_latency(const struct mb_calib *c, enum mb_link_kind k);

/** HybridEP transfers with a measured scale-out rate (`links.hybridep_nic`). */
enum mb_calib_flex_kind {
    MB_CALIB_FLEX_DISPATCH,     /* BF16 token dispatch */
    MB_CALIB_FLEX_DISPATCH_FP8, /* FP8 token dispatch (1 byte per element) */
    MB_CALIB_FLEX_COMBINE,      /* BF16 combine */
    MB_CALIB_FLEX_COUNT
};

/** Most `links.hybridep_nic` points a table may hold. */
#define MB_CALIB_MAX_FLEX_POINTS 16

/**
 * @brief Fraction of the NIC line rate that a HybridEP dispatch or combine
 * reaches on its scale-out bytes when its EP group spans `domains` NVLink
 * domains (`links.hybridep_nic`, docs/calibration.md "links"): piecewise
 * linear in ln(domains) between the measured domain counts, the nearest end
 * point outside them. Not affected by roofline mode (as the link values).
 * @return the fraction (0, 1], or 0 when the table has no such entry,
 *         c is NULL or domains < 2 (nothing crosses the scale-out fabric).
 */
double mb_calib_flex_nic_eff(const struct mb_calib *c, enum mb_calib_flex_kind k, double domains);

/** Per-table usage, for the report's `calibration` section. */
struct mb_calib_table_info {
    const char *name;     /* "gemm", "grouped_gemm", "attention", "membound", "links", "spec" */
    const char *source;   /* citation of the table */
    long lookups;         /* lookups since load / last reset */
    long fallbacks;       /* lookups answered by the roofline fallback */
};

size_t mb_calib_n_tables(const struct mb_calib *c);
/** @brief Info for table i < mb_calib_n_tables(c). */
struct mb_calib_table_info mb_calib_table(const struct mb_calib *c, size_t i);
/** @brief Path of the table file that was loaded. */
const char *mb_calib_path(const struct mb_calib *c);
/**
 * @brief A content hash (mb_hash64) of every file the table was read from:
 * its own bytes, then its `base:` chain's. Two loads give the same hash when
 * no file changed; a sweep's TSV records it (docs/sweep.md, provenance).
 */
unsigned long long mb_calib_files_hash(const struct mb_calib *c);
void mb_calib_reset_usage(struct mb_calib *c);
/**
 * @brief Count `lookups` more lookups of table i < mb_calib_n_tables(c), `fallbacks`
 *        of them answered by the fallback: what repeating lookups already made
 *        would have counted (a caller that copies priced ops instead of pricing
 *        them again keeps the report's usage as it was).
 */
void mb_calib_add_usage(struct mb_calib *c, size_t i, long lookups, long fallbacks);

/** @brief Roofline-only mode: ignore tables, use peak * eff_default (for A/B reports). */
void mb_calib_set_roofline(struct mb_calib *c, int on);

/*
 * Imported measurements (docs/calibration.md, "Importing profiles"). A table
 * file may be an overlay -- `base: <GPU or table path>` plus `measured:` -- or
 * a full table with a `measured:` section; measured GEMM, grouped-GEMM and
 * attention points take precedence over the base table's points in their
 * size range, and measured membound/launch values replace the base's.
 */

/** @brief Number of measured points merged from `measured:` sections (0 for shipped tables). */
size_t mb_calib_n_measured(const struct mb_calib *c);

/** A measured collective (nccl-tests log or imported profile); answers mb_calib_coll_line(). */
struct mb_calib_coll_point {
    const char *op;       /* "allreduce", "allgather", ... as named by the profiler */
    const char *dtype;    /* "" when unknown */
    const char *source;
    int group;            /* ranks in the communicator */
    double bytes;         /* message size (nccl-tests convention) */
    double time_s;        /* mean duration of one collective */
    double busbw;         /* bytes/s, nccl-tests bus bandwidth; 0 when not given */
    long instances;       /* collectives averaged */
};

/** @brief Number of measured collectives in the loaded table. */
size_t mb_calib_n_coll_points(const struct mb_calib *c);
/**
 * @brief Measured time of collective `op` ("allgather", "all_gather",
 * "AllGather" ... alike) on `group` ranks for a `bytes` message (nccl-tests
 * size convention), in NCCL's cost-model form t = *lat_s + bytes / *bw.
 *
 * The measured points of that op and group (equal sizes averaged) are read as
 * NCCL's own model, the minimum over algorithm/protocol of latency + bytes/bw:
 * a concave curve of straight pieces. Between two measured sizes the answer is
 * the lower of the two neighbouring segments' lines extended over the gap
 * (exact when each neighbour pair lies on one regime, e.g. across a protocol
 * switch), never below the gap's own chord, and the chord when those lines
 * overshoot the gap's larger end (noisy data); at a measured size it is that
 * size's time. Below the smallest size: the first segment's line (or the
 * smallest size's time when that line has no positive intercept). Above the
 * largest: the last segment's line, up to 2x the largest size only. A single
 * measured size answers within a factor of 2 of it: its time below it, its
 * bandwidth above it.
 * docs/calibration.md "Measured collectives"; held-out check in
 * tests/unit/test_nccl_tests.c against the real 2x8 H100 log.
 * @param[out] lat_s  fixed part, seconds (>= 0): the line's intercept, or 0
 *                    when the answer is not on a rising line with one
 * @param[out] bw     bytes (nccl-tests size) per second of the rest, > 0
 * @return 1 with both set, or 0 when nothing measured applies (outputs untouched).
 */
int mb_calib_coll_line(const struct mb_calib *c, const char *op, int group, double bytes, double *lat_s,
                       double *bw);

/**
 * @brief The measured pacing of a collective call, shared by `mbsim
 * collective --calib` and the training step: mb_calib_coll_line of `op` on
 * `group` ranks and `bytes` (nccl-tests convention), or, for all-gather and
 * reduce-scatter -- which move the same bytes on the same rings -- of the
 * other one when `op` itself has no curve. *meas_lat = the fixed part (s),
 * *meas_paced = the rest, bytes / bw (s): the call alone takes their sum
 * (struct mb_coll_req.meas_lat / meas_paced).
 * @return 1 with both set, 0 when nothing measured applies (outputs untouched).
 */
int mb_calib_coll_pace(const struct mb_calib *c, const char *op, int group, double bytes, double *meas_lat,
                       double *meas_paced);

/** @brief Measured collective i < mb_calib_n_coll_points(c); strings owned by c. */
struct mb_calib_coll_point mb_calib_coll_point(const struct mb_calib *c, size_t i);

/*
 * Framework-time model (the table's optional `framework:` section,
 * docs/calibration.md "Framework-time model"): what a training framework adds
 * to the kernel times of the tables above. Bounded, named parameters with
 * defaults from evidence; a table may set any of them, absent ones get the
 * defaults. `mbsim calibrate runs` fits them to measured runs.
 */
enum mb_fw_param {
    MB_FW_TENSOR_FRACTION,  /* sustained tensor-core rate / microbenchmark rate: GEMM, grouped GEMM and
                               attention FLOP time x 1/fraction */
    MB_FW_MEMBOUND_EFF,     /* memory-bound efficiency in the step (default: the table's membound.eff) */
    MB_FW_KERNEL_EAGER,     /* seconds of framework time on the GPU timeline per eagerly launched kernel */
    MB_FW_KERNEL_GRAPH,     /* the same per kernel inside a captured CUDA graph */
    MB_FW_OVERLAP_SLOWDOWN, /* compute slowdown while communication kernels share the GPU (fraction) */
    MB_FW_STEP_OVERHEAD,    /* seconds per iteration outside the microbatches (optimizer launches, grad-norm
                               clipping, zeroing, Python), on every stage after its optimizer step */
    MB_FW_HOST_KERNEL,      /* host seconds per eagerly launched kernel beyond the table's launch call
                               (Python / PyTorch / TE dispatch on the CPU): costs GPU time only where the
                               host is behind -- after a device-to-host sync, or kernels shorter than it */
    MB_FW_KERNEL_MOE,       /* seconds on the GPU timeline per eager kernel of an MoE block's compute op
                               (router, permutes, grouped expert GEMMs, expert activation, shared experts),
                               on top of kernel_eager */
    MB_FW_COUNT
};

/** Name, bounds, default and prior width of one framework parameter. */
struct mb_fw_param_info {
    const char *name;       /* key in the `framework:` section, e.g. "tensor_fraction" */
    const char *unit;       /* "" (plain number) or "us" (written and printed in microseconds) */
    double lo, hi;          /* physical bounds (inclusive), SI units */
    double def;             /* default (NAN for membound_eff: the table's membound.eff) */
    double sigma;           /* prior width for fitting (SI units) */
    const char *evidence;   /* one line: where the default and bounds come from */
};

/** @brief Info of parameter p (< MB_FW_COUNT). */
const struct mb_fw_param_info *mb_calib_fw_info(enum mb_fw_param p);

/** The framework parameters a table answers with. */
struct mb_calib_framework {
    double v[MB_FW_COUNT];  /* SI units (seconds for kernel times) */
    unsigned set;           /* bit p: the table (or mb_calib_framework_set) gave v[p]; else default */
    unsigned fitted;        /* bit p: the section's fit.params names p (mbsim calibrate runs moved it) */
    double def[MB_FW_COUNT]; /* this table's defaults (mb_calib_fw_info; membound_eff: its membound.eff) */
    const char *source;     /* the section's source ("" when the table has none); owned by the table */
};

/**
 * @brief The framework parameters of table c: its `framework:` values, the
 * defaults for absent ones (membound_eff: the table's membound.eff).
 */
void mb_calib_framework_get(const struct mb_calib *c, struct mb_calib_framework *out);

/**
 * @brief Replace the framework parameters of c (a table or a view: only c
 * changes) by fw->v, each clamped to its bounds; every parameter counts as set.
 * Used by the fitter to evaluate a parameter set without writing a file.
 */
void mb_calib_framework_set(struct mb_calib *c, const struct mb_calib_framework *fw);

/**
 * @brief The sibling group of a GPU type: GPUs of one die and software stack whose framework-time
 * parameters `mbsim calibrate runs` fits on their rows together, so a few rows with an unusual
 * recipe cannot move one sibling away from the other (docs/calibration.md "Sibling GPUs"): B200 and
 * GB200 (one Blackwell die; GB200 pairs it with a Grace CPU at 1200 W), B300 and GB300 (Blackwell
 * Ultra), H100, H200 and H100_96GB (GH100; H200 and H100_96GB change only the HBM). What differs
 * between siblings -- clocks and power, HBM, NVLink domain, network -- is in their kernel tables and
 * system files, not in fitted constants. Sources: ../shared/docs/reference/hardware.md (NVIDIA
 * datasheets). Case-insensitive.
 * @return the group's first member ("B200", "B300", "H100"), or gpu itself when it has no sibling.
 */
const char *mb_calib_sibling_group(const char *gpu);

/** @brief Whether GPU types a and b are one sibling group (a GPU is its own sibling). */
int mb_calib_siblings(const char *a, const char *b);

/**
 * @brief Apply tensor_fraction and membound_eff in the lookups of c
 * (mb_calib_gemm, _grouped_gemm, _attn_bh: FLOP term / tensor_fraction;
 * mb_calib_membound: membound_eff instead of membound.eff). Off by default
 * (the lookups answer kernel-benchmark times); the training step turns it on
 * for its view. Ignored in roofline mode.
 */
void mb_calib_use_framework(struct mb_calib *c, int on);

#endif /* MB_CALIB_H */
