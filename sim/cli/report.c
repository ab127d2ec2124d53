/*
 * report.c -- the text report of one simulated step (`mbsim run`); the JSON
 * report is report_json.c.
 */
#include "report.h"
#include "report_ops.h"
#include "mb_coll.h"
#include "mb_keys.h"
#include "mb_publish.h"

#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Names as scenario files spell them (the key table, mb_keys.h). */
static const char *mb_cli__strategy(const struct mb_scenario *s) { return mb_key_value_name("parallel.strategy", s->strategy); }

static const char *mb_cli__disp(enum mb_dispatcher d) { return mb_key_value_name("moe.dispatcher", d); }

static const char *const mb__cc_names[MB_CC_COUNT] = {"tp", "cp", "ep", "pp", "dp", "fsdp"};

/* The costliest NCCL call of each collective class: NCCL's algorithm and
 * protocol, and whether its latency outweighs its bandwidth time. */
static void mb_cli__coll_line(const char *cls, const struct mb_coll_use *u, FILE *fp)
{
    fprintf(fp, "    %-4s %-14s %7d ranks in %6d domain%s %10.1f MiB  %s/%s  latency %.3g ms, bandwidth %.3g ms%s\n", cls,
            mb_coll_op_name((enum mb_coll_op)u->op), u->ranks, u->domains, u->domains == 1 ? " " : "s",
            u->bytes / (1024.0 * 1024.0), mb_coll_algo_label((enum mb_coll_algo)u->algo, u->domains),
            mb_coll_proto_name((enum mb_coll_proto)u->proto), u->lat_s * 1e3, u->bw_s * 1e3,
            u->lat_s >= u->bw_s ? "  LATENCY-BOUND" : "");
}

static int mb_cli__same_call(const struct mb_coll_use *a, const struct mb_coll_use *b)
{
    return a->op == b->op && a->ranks == b->ranks && a->bytes == b->bytes && a->algo == b->algo;
}

/* The costliest NCCL call of each collective class (and the one with the
 * longest latency when that is another): NCCL's algorithm and protocol, and
 * whether its latency outweighs its bandwidth time. */
static void mb_cli__coll_text(const struct mb_result *r, FILE *fp)
{
    int any = 0;
    for (int c = 0; c < MB_CC_COUNT; c++) {
        const struct mb_coll_use *u = &r->coll[c], *l = &r->coll_lat[c];
        if (!u->used)
            continue;
        if (!any++)
            fprintf(fp, "\n  collectives (costliest call per class, and its longest-latency call; NCCL's "
                        "algorithm/protocol, alone on its links):\n");
        mb_cli__coll_line(mb__cc_names[c], u, fp);
        if (l->used && !mb_cli__same_call(u, l))
            mb_cli__coll_line("", l, fp);
    }
    const struct mb_coll_use *dp = &r->coll_lat[MB_CC_DP];
    if (dp->used && dp->lat_s >= dp->bw_s)
        fprintf(fp, "    DP communication is latency-bound on its %d-rank group (%.3g ms of latency per call, NCCL's "
                    "cheapest choice): it grows with the DP size while the bytes per rank do not; hidden only while "
                    "the overlap with compute lasts (exposed_dp_comm above)\n", dp->ranks, dp->lat_s * 1e3);
}

/* The scenario's name, model, layout and data. */
static void mb_cli__text_head(const struct mb_scenario *s, const struct mb_result *r, FILE *fp)
{
    fprintf(fp, "mbsim: %s\n", s->name);
    fprintf(fp, "  model %s on %d x %s (%s), %s, seq %d, GBS %d, MBS %d, %d %s/rank\n", s->model.name,
            s->gpus, s->system.gpu, s->system.name, s->prec.label, s->seq_length, s->global_batch_size,
            s->micro_batch_size, r->microbatches, mb_plural(r->microbatches, "microbatch", "microbatches"));
    fprintf(fp, "  layout %s: TP %d PP %d VPP %d CP %d DP %d EP %d ETP %d", mb_cli__strategy(s), s->tp, s->pp,
            s->vpp, s->cp, s->dp, s->ep, s->etp);
    if (s->model.num_experts > 0)
        fprintf(fp, ", dispatcher %s", mb_cli__disp(s->dispatcher));
    if (!s->dist_opt)
        fprintf(fp, ", DDP (gradients all-reduced, %s; optimizer state not sharded)",
                s->allreduce_algo == MB_COLL_ALGO_AUTO ? "NCCL algorithm auto"
                                                       : mb_coll_algo_name((enum mb_coll_algo)s->allreduce_algo));
    fprintf(fp, "\n");
    if (s->model.vision.depth > 0)
        fprintf(fp, "  data: %s, %.0f vision tokens per sample on average%s\n", s->mock ? "mock (no images)" : "real images",
                r->vision_tokens_per_sample, s->packed ? ", packed sequences" : "");
    fprintf(fp, "\n");
}

/* The headline metrics, the publication check and the memory verdict. */
static void mb_cli__text_metrics(const struct mb_scenario *s, const struct mb_result *r, FILE *fp)
{
    fprintf(fp, "  step time            %10.4f s\n", r->step_time_s);
    fprintf(fp, "  tokens/s/GPU         %10.1f\n", r->tokens_per_s_per_gpu);
    if (r->useful_tokens_per_s_per_gpu < 0.999 * r->tokens_per_s_per_gpu)
        fprintf(fp, "  useful tokens/s/GPU  %10.1f  (padding excluded: %.0f %% of positions carry data)\n",
                r->useful_tokens_per_s_per_gpu, 100 * r->useful_tokens_per_s_per_gpu / r->tokens_per_s_per_gpu);
    fprintf(fp, "  model TFLOP/s/GPU    %10.1f\n", r->model_tflops_per_gpu);
    fprintf(fp, "  MFU                  %10.1f %%  (of %s dense peak)\n", 100 * r->mfu, mb_prec_name(s->prec.gemm));
    struct mb_publish_check pc;
    mb_publish_check(s, r->model_tflops_per_gpu, &pc);
    fprintf(fp, "  publication check    %s\n", pc.text);
    const struct mb_memory *M = &r->mem;
    fprintf(fp, "  peak memory          %10.1f GiB allocated, ~%.1f GiB reserved, ~%.1f GiB on the device of %.1f GiB "
            "(%.0f %%) -> %s; largest term: %s\n",
            M->peak_allocated / GIB, M->reserved / GIB, M->device / GIB, M->capacity / GIB,
            M->capacity > 0 ? 100 * M->device / M->capacity : 0, mb_memory_verdict_name(M->verdict), M->dominant);
}

/* --memory: every term of the reported rank at its peak. */
static void mb_cli__text_memory_terms(const struct mb_scenario *s, const struct mb_memory *M, FILE *fp)
{
    if (M->at_step)
        fprintf(fp, "    rank of pipeline stage %d, at its peak (in the optimizer step, no activation alive):\n",
                M->stage);
    else
        fprintf(fp, "    rank of pipeline stage %d, at its peak (%.4f s into the step):\n", M->stage,
                M->peak_time_s);
    fprintf(fp, "      weights        %8.2f GiB\n", M->weights / GIB);
    fprintf(fp, "      gradients      %8.2f GiB\n", M->grads / GIB);
    fprintf(fp, "      optimizer      %8.2f GiB\n", M->optimizer / GIB);
    if (M->deferred_wgrad > 0)
        fprintf(fp, "      activations    %8.2f GiB  (%.2f of them deferred output-layer wgrad buffers)\n",
                M->activations / GIB, M->deferred_wgrad / GIB);
    else
        fprintf(fp, "      activations    %8.2f GiB\n", M->activations / GIB);
    fprintf(fp, "      recompute      %8.2f GiB  (re-forwarded activations of the layer in backward)\n",
            M->recompute / GIB);
    fprintf(fp, "      bwd gradients  %8.2f GiB  (output and input gradients of the op in backward)\n",
            M->bwd_grads / GIB);
    fprintf(fp, "      buffers        %8.2f GiB  (loss %.2f, dispatch %.2f, GEMM workspaces %.2f)\n",
            M->buffers / GIB, M->logits / GIB, M->dispatch / GIB, M->workspace / GIB);
    fprintf(fp, "      cuda graphs    %8.2f GiB\n", M->graphs / GIB);
    if (M->at_step)
        fprintf(fp, "      step grads     %8.2f GiB  (the optimizer step's fp32 copy of the BF16 main grads)\n",
                M->step_grads / GIB);
    fprintf(fp, "      = allocated    %8.2f GiB\n", M->peak_allocated / GIB);
    fprintf(fp, "      (first iteration %.2f GiB: its passes run before the optimizer creates Adam's moments)\n",
            M->first_iter_allocated / GIB);
    fprintf(fp, "      fragmentation  %8.2f GiB  (%s)\n", M->fragmentation / GIB,
            s->expandable_segments ? "expandable segments" : "no expandable segments");
    fprintf(fp, "      = reserved     %8.2f GiB\n", M->reserved / GIB);
    fprintf(fp, "      comm buffers   %8.2f GiB  (NCCL%s, outside PyTorch)\n", M->comm_buffers / GIB,
            s->model.num_experts > 0 && s->ep > 1 &&
                    (s->dispatcher == MB_DISP_DEEPEP || s->dispatcher == MB_DISP_HYBRIDEP)
                ? ", dispatcher buffers"
                : "");
    fprintf(fp, "      CUDA context   %8.2f GiB\n", M->context / GIB);
    fprintf(fp, "      = device       %8.2f GiB of %.2f GiB -> %s (at risk above %.0f %%)\n", M->device / GIB,
            M->capacity / GIB, mb_memory_verdict_name(M->verdict), 100 * MB_MEM_AT_RISK_FRACTION);
}

/* --memory: every stage's terms. */
static void mb_cli__text_memory_stages(const struct mb_memory *M, FILE *fp)
{
    fprintf(fp, "    every stage (GiB): stage  weights  grads  optim  activ  recomp  buffers  graphs  alloc  "
                "reserved  device\n");
    for (int st = 0; st < M->n_stages; st++) {
        const struct mb_memory_stage *m = &M->per_stage[st];
        fprintf(fp, "                       %5d %8.2f %6.2f %6.2f %6.2f %7.2f %8.2f %7.2f %6.1f %9.1f %7.1f  %s%s\n",
                st, m->weights / GIB, m->grads / GIB, m->optimizer / GIB, m->activations / GIB,
                m->recompute / GIB, m->buffers / GIB, m->graphs / GIB, m->peak_allocated / GIB,
                m->reserved / GIB, m->device / GIB,
                mb_memory_verdict_name(mb_memory_verdict_of(m->device, M->capacity)),
                m->at_step ? "  (peak in the optimizer step)" : "");
    }
    const struct mb_memory_stage *ls = &M->per_stage[M->n_stages > 0 ? M->n_stages - 1 : 0];
    if (M->n_stages > 0 && ls->deferred_wgrad > 0)
        fprintf(fp, "      (stage %d's activ holds %.2f GiB of deferred output-layer wgrad buffers)\n",
                M->n_stages - 1, ls->deferred_wgrad / GIB);
}

/* --memory: the reported rank's timeline, at most 40 rows, each the highest point of its interval. */
static void mb_cli__text_memory_timeline(const struct mb_memory *M, FILE *fp)
{
    fprintf(fp, "    timeline of stage %d (allocated; each row the highest point of its interval, GiB):\n",
            M->tl.stage);
    fprintf(fp, "         time_s  allocated  activations  loss  recompute  bwd_grads\n");
    int passes = M->tl.n - 1; /* the last point is the optimizer step's */
    int step = passes > 40 ? (passes + 39) / 40 : 1;
    for (int i = 0; i < M->tl.n; i = i < passes && i + step > passes ? passes : i + step) {
        int k = i; /* the highest of the rows this one stands for */
        for (int j = i; j < i + step && j < passes; j++)
            if (M->tl.allocated[j] > M->tl.allocated[k])
                k = j;
        fprintf(fp, "      %9.4f %10.2f %12.2f %5.2f %10.2f %10.2f%s\n", M->tl.t[k], M->tl.allocated[k] / GIB,
                M->tl.activations[k] / GIB, M->tl.logits[k] / GIB, M->tl.recompute[k] / GIB,
                M->tl.bwd_grads[k] / GIB, k == passes ? "  optimizer step" : "");
    }
}

/* The time breakdown of the reported stage. */
static void mb_cli__text_breakdown(const struct mb_result *r, FILE *fp)
{
    fprintf(fp, "\n  time breakdown (pipeline stage %d, seconds per step):\n", r->critical_stage);
    double total = 0;
    for (int c = 0; c < MB_CAT_COUNT; c++)
        total += r->breakdown[c];
    for (int c = 0; c < MB_CAT_COUNT; c++) {
        if (r->breakdown[c] <= 0)
            continue;
        fprintf(fp, "    %-26s %9.4f  %5.1f %%\n", mb_cat_name((enum mb_cat)c), r->breakdown[c],
                total > 0 ? 100 * r->breakdown[c] / total : 0);
    }
}

/* The three largest categories of the critical path. */
static void mb_cli__text_critical(const struct mb_result *r, FILE *fp)
{
    /* top contributors of the critical path */
    double ctot = 0;
    int top[3] = {-1, -1, -1};
    for (int c = 0; c < MB_CAT_COUNT; c++) {
        ctot += r->critical[c];
        for (int k = 0; k < 3; k++) {
            if (top[k] < 0 || r->critical[c] > r->critical[top[k]]) {
                for (int j = 2; j > k; j--)
                    top[j] = top[j - 1];
                top[k] = c;
                break;
            }
        }
    }
    if (ctot > 0) {
        fprintf(fp, "  critical path:");
        for (int k = 0; k < 3; k++)
            if (top[k] >= 0 && r->critical[top[k]] > 0)
                fprintf(fp, "%s %s %.0f %%", k ? "," : "", mb_cat_name((enum mb_cat)top[k]),
                        100 * r->critical[top[k]] / ctot);
        fprintf(fp, "\n");
    }
}

/* The calibration table and the framework-time model the step used. */
static void mb_cli__text_calib(const struct mb_scenario *s, const struct mb_result *r, FILE *fp)
{
    fprintf(fp, "\n  calibration: %s (%ld lookups, %ld roofline fallbacks)%s\n", r->calib_path, r->calib_lookups,
            r->calib_fallbacks, s->roofline ? " [roofline-only mode]" : "");
    if (r->fw_on)
        fprintf(fp, "  framework: tensor_fraction %.3f, membound_eff %.3f, kernel_eager %.2f us, kernel_graph %.2f us, "
                    "overlap_slowdown %.3f, step_overhead %.1f ms, host_kernel %.2f us, kernel_moe %.2f us\n",
                r->fw_tensor_fraction, r->fw_membound_eff, 1e6 * r->fw_kernel_eager_s, 1e6 * r->fw_kernel_graph_s,
                r->fw_overlap_slowdown, 1e3 * r->fw_step_overhead_s, 1e6 * r->fw_host_kernel_s,
                1e6 * r->fw_kernel_moe_s);
    if (r->fw_on && r->host_time_scale != 1)
        fprintf(fp, "  host: system host_time_scale %.2f: the table's launch and host_kernel x %.2f per kernel "
                    "(docs/topology.md \"Host CPU\")\n",
                r->host_time_scale, r->host_time_scale);
    if (r->fw_on && s->system.power_cap > 0)
        fprintf(fp, "  power cap: %.0f W of the %.0f W TDP: the table's tensor_fraction x %.4f ((cap/TDP)^(1/3), "
                    "floored at 0.6, docs/topology.md)\n",
                s->system.power_cap, s->system.power_tdp, s->system.power_clock_scale);
    if (!r->fw_on)
        fprintf(fp, "  framework: off (roofline-only mode)\n");
}

/* The scenario's measured block, each value with the prediction's error. */
static void mb_cli__text_measured(const struct mb_scenario *s, const struct mb_result *r, FILE *fp)
{
    fprintf(fp, "  measured:");
    if (s->meas_peak_memory_gib > 0 && s->meas_peak_iteration == 1) {
        double first = 0; /* the largest over the stages' ranks, as validate compares */
        for (int st = 0; st < r->mem.n_stages; st++)
            first = fmax(first, r->mem.per_stage[st].first_iter_allocated);
        fprintf(fp, " peak after iteration 1 %.2f GiB (predicted %.2f GiB allocated through iteration 1, "
                    "the largest over the stages' ranks)",
                s->meas_peak_memory_gib, first / (1024.0 * 1024 * 1024));
    } else if (s->meas_peak_memory_gib > 0) {
        fprintf(fp, " peak %.2f GiB (predicted %.2f GiB allocated)", s->meas_peak_memory_gib,
                r->mem.peak_allocated / (1024.0 * 1024 * 1024));
    }
    if (s->meas_oom)
        fprintf(fp, " out of memory (predicted: %s)", mb_memory_verdict_name(r->mem.verdict));
    if (s->meas_tokens_per_s_per_gpu > 0)
        fprintf(fp, " %.1f tokens/s/GPU (%+.1f %%)", s->meas_tokens_per_s_per_gpu,
                100 * (r->tokens_per_s_per_gpu - s->meas_tokens_per_s_per_gpu) / s->meas_tokens_per_s_per_gpu);
    if (s->meas_model_tflops_per_gpu > 0)
        fprintf(fp, " %.1f TFLOP/s/GPU (%+.1f %%)", s->meas_model_tflops_per_gpu,
                100 * (r->model_tflops_per_gpu - s->meas_model_tflops_per_gpu) / s->meas_model_tflops_per_gpu);
    if (s->meas_step_time_s > 0)
        fprintf(fp, " %.3f s/step (%+.1f %%)", s->meas_step_time_s,
                100 * (r->step_time_s - s->meas_step_time_s) / s->meas_step_time_s);
    if (s->meas_source[0])
        fprintf(fp, " [%s]", s->meas_source);
    fprintf(fp, "\n");
}

void mb_report_text(const struct mb_scenario *s, const struct mb_result *r, int memory_detail, FILE *fp)
{
    mb_cli__text_head(s, r, fp);
    mb_cli__text_metrics(s, r, fp);
    if (memory_detail) {
        mb_cli__text_memory_terms(s, &r->mem, fp);
        mb_cli__text_memory_stages(&r->mem, fp);
        if (r->mem.tl.n > 0)
            mb_cli__text_memory_timeline(&r->mem, fp);
    }
    mb_cli__text_breakdown(r, fp);
    mb_cli__coll_text(r, fp);
    mb_cli__text_critical(r, fp);
    mb_report_ops_text(r, fp);
    mb_cli__text_calib(s, r, fp);
    if (mb_scenario_measured(s))
        mb_cli__text_measured(s, r, fp);
    fprintf(fp, "  simulated %zu tasks, %llu events in %.3f s\n", r->tasks, r->events, r->sim_wall_s);
}
