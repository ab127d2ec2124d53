/*
 * calib_int.h -- private to calibration/ (mbsim_calib): the table struct and
 * the functions its files share. Callers use mb_calib.h.
 *
 *   mb_calib_load.c      reads a table: its sections, overlays, recipes; view and free
 *   mb_calib_measured.c  merges a table's `measured:` points into its curves
 *   mb_calib.c           lookups, framework-time parameters, measured collectives
 */
#ifndef MB_CALIB_INT_H
#define MB_CALIB_INT_H

#include "mb_calib.h"
#include "mb_yaml.h"

#include <stddef.h>

/* The tables, in report order (mb_calib_table). */
enum { T_SPEC, T_GEMM, T_GROUPED, T_ATTN, T_MEM, T_LINKS, T_COUNT };
/* "fp32", "bf16", "fp16", "fp8", "fp4", by enum mb_prec (mb_calib.c). */
extern const char *const mb_calib__prec_names[MB_PREC_COUNT];

/* One interpolation point: x = size measure (> 0, strictly increasing), y = efficiency. */
struct mb_calib__pt {
    double x, y;
};

struct mb_calib__curve {
    int present;              /* curve given in the table */
    int from;                 /* -1: own points; else precision whose curve is scaled */
    double scale;             /* own points: multiplies achieved FLOP/s; from: multiplies eff */
    int assumed;              /* lookups count as fallbacks (no measurement behind it) */
    double plateau;           /* efficiency above the largest point (MAMF / peak) */
    size_t n;
    struct mb_calib__pt *pts; /* x = b*m*n*k, y = achieved * scale / peak */
};

/* One attention curve: efficiency over seq at one head dim. */
struct mb_calib__acurve {
    int head_dim;             /* Q.K head dim the curve was measured at */
    size_t n;
    struct mb_calib__pt *pts; /* x = seq, y = achieved * scale / peak.bf16, at the benchmark shape */
};

/* The attention curves of one (causal, bwd) kind, sorted by increasing head_dim (no duplicates). */
struct mb_calib__akind {
    size_t n;
    struct mb_calib__acurve *cv;
};

struct mb_calib {
    struct mb_gpu_spec spec;
    double roofline_eff;                  /* spec-level default efficiency (roofline mode) */
    double triton_frac;                   /* gemm.triton_frac: Triton kernels' share of the GEMM rate */
    char *path;
    unsigned long long files_hash;        /* mb_hash64 of the bytes of every file read: this one, then its base chain */
    char *source[T_COUNT];
    long lookups[T_COUNT], fallbacks[T_COUNT];
    int last_fb;                          /* the last lookup was a fallback (mb_calib_last_source) */
    const struct mb_calib *base;          /* a view (mb_calib_view): the tables belong to base */
    int roofline;
    struct mb_calib__curve gemm[MB_PREC_COUNT];
    double grouped_ref_m;                 /* dense reference M of the relative curve */
    size_t n_grouped;
    struct mb_calib__pt *grouped;         /* x = tokens per group, y = relative efficiency */
    double attn_margin;                   /* clamp factor outside the attention range */
    double attn_bench_bh;                 /* batch x heads the curves were measured at; 0: FA3's shape */
    struct mb_calib__akind attn[2][2];    /* [causal][bwd]: curves by head dim */
    double mem_eff, mem_floor;
    double link_eff[MB_LINK_COUNT], link_lat[MB_LINK_COUNT];
    size_t n_flex;                        /* links.hybridep_nic points (0: none) */
    struct mb_calib__pt flex[MB_CALIB_FLEX_COUNT][MB_CALIB_MAX_FLEX_POINTS]; /* x = domains, y = eff */
    size_t n_measured;                    /* measured points merged from `measured:` sections */
    size_t n_coll;
    struct mb_calib_coll_point *coll;     /* measured collectives (strings owned) */
    int n_recipe;                         /* `recipes:` GEMM-time scales per precision recipe */
    double fw[MB_FW_COUNT];               /* `framework:` parameters (SI units) */
    unsigned fw_set;                      /* bit p: fw[p] given (else the default) */
    unsigned fw_fitted;                   /* bit p: fw[p] fitted (the section's fit.params) */
    char *fw_source;                      /* the section's source, or NULL */
    int fw_on;                            /* lookups apply tensor_fraction / membound_eff */
    struct {
        char name[32];
        double gemm_time_scale;
        double quant_eff;                 /* 0: the recipe's casts run at membound.eff */
    } recipe[MB_CALIB_MAX_RECIPES];
};

/* membound: as read (measured.launch reads its time into eff). */
struct mb_calib__mem_in {
    double eff, floor;
};

/* Parses a precision name into *out (mb_calib.c). */
int mb_calib__prec_parse(const struct mb_node *n, int *out, struct mb_err *err);
/* The curve of kind k at exactly head dim d, or NULL (mb_calib.c). */
struct mb_calib__acurve *mb_calib__acurve_find(struct mb_calib__akind *k, int d);
/* Inserts an empty curve at head dim d (not yet present), keeping k sorted (mb_calib.c). */
struct mb_calib__acurve *mb_calib__acurve_insert(struct mb_calib__akind *k, int d);
/* Merges a `measured:` section into c (mb_calib_measured.c). */
int mb_calib__apply_measured(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err);
/* Reads an optional `framework:` section into c (mb_calib.c). */
int mb_calib__load_framework(struct mb_calib *c, const struct mb_node *sec, struct mb_err *err);
/* Dense GEMM efficiency at size x = b*m*n*k, a fraction of peak(p) (mb_calib.c). */
double mb_calib__gemm_eff(const struct mb_calib *c, enum mb_prec p, double x, int *fb);
/* Wave-quantization factor of an attention kernel over bh problems (mb_calib.c). */
double mb_calib__attn_wave(const struct mb_calib *c, double bh, double seq, double seq_b, double hd);

#endif /* MB_CALIB_INT_H */
