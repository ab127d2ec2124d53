/*
 * mb_scenario_bound.c -- what the GPU of a scenario can physically do, held
 * against the values a user states about it: measured throughput (a measured:
 * block, a row of a measured-runs CSV) and SM counts (moe.dispatcher_sms).
 *
 * The bound on throughput: a training step computes at least the model FLOPs
 * of its tokens, and no GPU computes faster than its dense tensor-core peak at
 * the fastest precision the recipe runs its GEMMs in. The FLOPs per token are
 * taken at their least, so that the bound is an upper bound with a margin
 * and never refuses a real run: mb_model_flops of one token with no attention
 * score work (the causal attention core grows with the sequence and is left
 * out), times 2/3 when the language model is frozen (LoRA, a frozen LLM: no
 * weight gradients, forward 2N + backward 2N instead of 6N FLOPs per token).
 * Recompute, the vision encoder, padding copies and communication come on top
 * and are left out too. The peaks are the calibration table's (dense, no
 * sparsity: what datasheets list as the dense figure); a precision the GPU
 * lacks runs at the next wider one, as the kernel lookups do (mb_calib.c).
 */
#include "mb_scenario.h"
#include "mb_topo.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mb_scenario_gpu_spec(const struct mb_scenario *s, struct mb_gpu_spec *out)
{
    struct mb_calib *cal = NULL;
    struct mb_err e;
    memset(out, 0, sizeof *out);
    if (!s->calib_path[0] && !mb_topo_gpu_calibrated(s->system.gpu))
        return -1; /* no table: nothing known of the GPU (its simulations need one anyway) */
    mb_err_clear(&e);
    if (mb_calib_shared(s->calib_path[0] ? NULL : s->system.gpu, s->calib_path[0] ? s->calib_path : NULL, &cal,
                        &e))
        return -1;
    *out = *mb_calib_spec(cal);
    mb_calib_free(cal);
    return 0;
}

int mb_scenario_bound(const struct mb_scenario *s, struct mb_scn_bound *b)
{
    struct mb_gpu_spec g;
    memset(b, 0, sizeof *b);
    if (mb_scenario_gpu_spec(s, &g))
        return -1;
    enum mb_prec p = s->prec.gemm;
    while (p != MB_PREC_BF16 && p != MB_PREC_FP32 && !(g.peak[p] > 0))
        p = p == MB_PREC_FP4 ? MB_PREC_FP8 : MB_PREC_BF16;
    double f = mb_model_flops(&s->model, 1, 0);
    if (s->freeze & MB_FREEZE_LANGUAGE)
        f *= 2.0 / 3.0;
    if (!(g.peak[p] > 0) || !(f > 0))
        return -1;
    snprintf(b->gpu, sizeof b->gpu, "%s", g.name);
    b->prec = p;
    b->peak = g.peak[p];
    b->flops_per_token = f;
    b->frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    return 0;
}

/* "BF16", "FP8", ... */
static void mb_scn__prec_upper(enum mb_prec p, char *out, size_t n)
{
    snprintf(out, n, "%s", mb_prec_name(p));
    for (char *c = out; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
}

int mb_scenario_measured_check(const struct mb_scenario *s, double tokens, double tflops, double step,
                               enum mb_meas_kind *which, char *msg, size_t len)
{
    struct mb_scn_bound b;
    char pn[8], what[256];
    if (mb_scenario_bound(s, &b))
        return 0;
    mb_scn__prec_upper(b.prec, pn, sizeof pn);
    snprintf(what, sizeof what, "at least %.4g GFLOP (the model FLOPs of %s without attention scores%s)",
             b.flops_per_token / 1e9, s->model.name[0] ? s->model.name : "the model",
             b.frozen ? ", x 2/3 for the frozen language model" : "");
    if (tokens > 0 && tokens * b.flops_per_token > b.peak) {
        *which = MB_MEAS_TOKENS;
        snprintf(msg, len, "%.6g tokens/s per GPU is more than one %s can compute: a token takes %s, so %.4g "
                 "TFLOP/s, %.3gx the dense %s peak of %.4g TFLOP/s (calibration table); expected the figure of "
                 "one GPU, not of a node or the cluster", tokens, b.gpu, what, tokens * b.flops_per_token / 1e12,
                 tokens * b.flops_per_token / b.peak, pn, b.peak / 1e12);
        return -1;
    }
    if (tflops > 0 && tflops * 1e12 > b.peak) {
        *which = MB_MEAS_TFLOPS;
        snprintf(msg, len, "%.6g TFLOP/s per GPU is %.3gx the dense %s peak of one %s, %.4g TFLOP/s (calibration "
                 "table); expected the figure of one GPU, not of a node or the cluster", tflops,
                 tflops * 1e12 / b.peak, pn, b.gpu, b.peak / 1e12);
        return -1;
    }
    double tok_step = (double)s->global_batch_size * s->seq_length;
    if (step > 0 && s->gpus > 0 && tok_step > 0) {
        double t_min = tok_step * b.flops_per_token / (s->gpus * b.peak);
        if (step < t_min) {
            *which = MB_MEAS_STEP;
            snprintf(msg, len, "a step of %.6g s is faster than its FLOPs allow: %d x %d tokens, each taking %s, "
                     "need at least %.4g s on %d %s GPUs at the dense %s peak of %.4g TFLOP/s", step,
                     s->global_batch_size, s->seq_length, what, t_min, s->gpus, b.gpu, pn, b.peak / 1e12);
            return -1;
        }
    }
    return 0;
}

int mb_scenario_check_sms(const struct mb_scenario *s, char *msg, size_t len)
{
    struct mb_gpu_spec g;
    if (s->dispatcher != MB_DISP_HYBRIDEP && s->dispatcher != MB_DISP_DEEPEP)
        return 0;
    if (mb_scenario_gpu_spec(s, &g) || g.sms <= 0 || s->dispatcher_sms <= g.sms)
        return 0;
    snprintf(msg, len, "moe.dispatcher_sms = %d is more than the %d SMs of one %s (calibration table): a %s kernel "
             "runs on at most all of them", s->dispatcher_sms, g.sms, g.name,
             s->dispatcher == MB_DISP_HYBRIDEP ? "HybridEP" : "DeepEP");
    return -1;
}
