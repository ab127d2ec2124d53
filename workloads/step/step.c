/*
 * step.c -- one training step, phase by phase (step_int.h lists the phases),
 * and the linear extensions that keep large microbatch and layer counts
 * cheap.
 *
 * Approximations (each refined by later issues):
 *  - One representative rank per pipeline stage; DP/TP/CP/EP peers behave
 *    identically (balanced routing) and are not simulated separately.
 *  - Each simulated rank has one NVLink transmit link and one NIC transmit
 *    link (capacities = line rate x calibrated achieved fraction); concurrent
 *    collectives on a rank share them max-min fairly in the engine.
 *  - Collectives are costed by the bytes a rank sends: ring all-gather /
 *    reduce-scatter hierarchically (NVLink domain first, then (n-1)/n of the
 *    1/local share over the NIC); all-to-all as direct pairwise traffic split
 *    by destination domain; HybridEP/DeepEP send a token over the scale-out
 *    fabric once per destination domain.
 *  - Kernel time = calibrated GPU time. Each pipeline stage's rank has a host
 *    thread (a serial stream) that launches every kernel in program order:
 *    launch_s of host time per kernel, one launch per captured CUDA-graph
 *    region; a GPU op cannot start before its launch, and the host waits for
 *    the GPU at a device-to-host sync (the token counts before an EP
 *    dispatch). Kernels per op are counted from the Megatron-Core /
 *    Transformer Engine code paths (see the op builders' comments).
 *  - Schedules: 1F1B and Megatron's interleaved 1F1B (VPP), executed on the
 *    timeline; p2p activations on the real links.
 */
#include "step_int.h"
#include "mb_calib.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* One run's steady state (mb__window): `mbs` microbatches of the breakdown's
 * stage took `step` seconds, by category `bd`; `floor` is each stage's
 * compute floor at the step's full microbatch count; ok = 0 when the run is
 * too short to have a steady state to measure. */
struct mb__win {
    int ok;
    double mbs, step, bd[MB_CAT_COUNT], floor[MB_MAX_STAGES];
};

/* What one simulation is asked for besides the result (win: measure the
 * steady state for a step of win_m microbatches). */
struct mb__ask {
    int critical;
    const char *trace;
    int ops;
    const struct mb_calib *cal;
    int window;
    struct mb__win *win;
    int win_m;
};

void mb_result_free(struct mb_result *r)
{
    if (!r)
        return;
    mb_free(r->ops);
    r->ops = NULL;
    r->n_ops = 0;
}

/* Size hint of the task graph: every layer op runs forward, backward and
 * maybe again in recompute, each with a host launch task and a couple of
 * edges. */
static size_t mb_step__tasks_estimate(const struct mb_build *b, int mbs_n)
{
    size_t per_mb = 64;
    for (int i = 0; i < b->m->n_layers; i++)
        per_mb += (size_t)mb_plan_layer(b, i)->n;
    return per_mb * 3 * 2 * (size_t)(mbs_n > 0 ? mbs_n : 1) + 1024;
}

/* The most tasks (by mb__tasks_estimate) one simulation may build: with their
 * entries and edges about 5 GB. A longer step is refused with an error rather
 * than allocated until the allocator aborts the process (QA: --exact on
 * 156,250 microbatches per rank asked for 50 GB). mbsim run's caps (64, or
 * 512 microbatches with drawn data) stay far below it. */
#define MB_STEP_MAX_TASKS ((size_t)1 << 26)

/* Engine (reserved for `est` tasks), and per stage: compute stream, one stream
 * per communication kind, the NVLink and NIC transmit links and the host
 * launch thread. */
static void mb_step__engine(struct mb_build *b, size_t est, int critical)
{
    b->e = mb_engine_new();
    mb_engine_track_critical(b->e, critical);
    mb_engine_fold_chains(b->e, 1); /* one event per chain of compute ops; results unchanged */
    mb_engine_reserve(b->e, est, 2 * est);
    for (int st = 0; st < b->lay.p; st++) {
        b->comp[st] = mb_engine_add_stream(b->e);
        for (int c = 0; c < MB_CK_COUNT; c++)
            b->cstream[st][c] = mb_engine_add_stream(b->e);
        b->l_nv[st] = mb_engine_add_link(b->e, b->nv_cap > 0 ? b->nv_cap : 1e9);
        b->l_nic[st] = mb_engine_add_link(b->e, b->nic_cap > 0 ? b->nic_cap : 1e9);
        b->host[st] = mb_engine_add_stream(b->e);
    }
}

/* Build the step's task graph: op lists, data, schedule, reduction; -1 (err
 * set) when the graph would exceed MB_STEP_MAX_TASKS. */
static int mb_step__build(struct mb_build *b, int mbs_n, int critical, struct mb_err *err)
{
    const struct mb_scenario *s = b->s;
    mb_layout_build(b, mbs_n);
    mb_plan_build(b);
    size_t est = mb_step__tasks_estimate(b, mbs_n);
    if (est > MB_STEP_MAX_TASKS)
        return mb_err_set(err, s->file, 0, 0,
                          "a step of %d microbatches per rank would take about %.0f million tasks to simulate one by one, "
                          "above the limit of %.0f million: check the model's layers and the batch (a sweep or tune lets "
                          "the microbatch extension run without --exact, or with a smaller --mb-cap)",
                          mbs_n, est / 1e6, MB_STEP_MAX_TASKS / 1e6);
    mb_step__engine(b, est, critical);
    mb_layout_graphs(b);
    mb_data_draw(b, mbs_n);
    /* packed sequences: attention runs within each sample (THD) */
    double attn_scale = b->data.lsq_per_seq / ((double)s->seq_length * s->seq_length);
    mb_plan_scale_attention(b, attn_scale);
    mb_plan_offload(b);
    int pg_done[MB_MAX_STAGES];
    mb_reduce_param_gather(b, pg_done);
    mb_data_vision_ops(b);
    mb_sched_build(b, pg_done);
    mb_step_check_graph(b, "schedule");
    mb_reduce_grads_and_step(b);
    mb_step_check_graph(b, "reduce");
    return 0;
}

/* A rank peaking in the optimizer step peaks at the step's end (the optimizer runs last). */
static void mb_step__step_peak_times(struct mb_result *r)
{
    for (int st = 0; st < r->mem.n_stages; st++)
        if (r->mem.per_stage[st].at_step)
            r->mem.per_stage[st].peak_time_s = r->step_time_s;
    if (r->mem.at_step)
        r->mem.peak_time_s = r->step_time_s;
}

/* Run the engine and reduce the timeline to r. */
static int mb_step__run(struct mb_build *b, const struct mb__ask *a, struct mb_result *r, struct mb_err *err)
{
    if (mb_engine_run(b->e, err))
        return -1;
    mb_step_check_run(b);
    double step = mb_engine_makespan(b->e);
    struct mb_memdyn dyn[MB_MAX_STAGES];
    r->step_time_s = step;
    r->events = mb_engine_n_events(b->e);
    r->tasks = mb_engine_n_tasks(b->e);
    mb_results_breakdown(b, step, r);
    if (a->critical)
        mb_results_critical(b, r);
    mb_memtl_build(b, dyn);
    int rc = a->trace ? mb_trace_write(b, a->trace, err) : 0;
    mb_results_metrics(b, step, r);
    r->fw_on = b->fw_on;
    r->fw_tensor_fraction = b->fw_tensor;
    r->fw_membound_eff = b->fw_mem_eff;
    r->fw_kernel_eager_s = b->fw_kernel_eager;
    r->fw_kernel_graph_s = b->fw_kernel_graph;
    r->fw_overlap_slowdown = b->fw_overlap;
    r->fw_step_overhead_s = b->fw_step;
    r->fw_host_kernel_s = b->fw_host_ref;
    r->host_time_scale = mb_step_host_scale(b->s);
    r->fw_kernel_moe_s = b->fw_kernel_moe;
    mb_memory_estimate(b->s, &b->lay, &b->plan, b->data.act_vision, mb_step_capacity(b), dyn, &r->mem);
    mb_step__step_peak_times(r);
    {
        const struct mb_memory_stage *ps = &r->mem.per_stage[r->mem.stage];
        double dynb = ps->activations + ps->logits + ps->recompute + ps->bwd_grads;
        /* the timeline covers the forward and backward passes: without the optimizer step's gradient copy */
        double step_copy = ps->at_step ? ps->step_grads : 0;
        mb_memtl_record(b, r->mem.stage, ps->peak_allocated - dynb - step_copy, &r->mem.tl);
        mb_memtl_add_step(&r->mem.tl, r->step_time_s, mb_memory_step_allocated(ps));
    }
    r->oom = r->mem.verdict == MB_MEM_OOM;
    mb_step_check_memory(b->s, &r->mem, "memory");
    if (a->ops)
        mb_opstats_collect(b, r);
    return rc;
}

static void mb_step__free(struct mb_build *b)
{
    mb_plan_free(&b->plan);
    mb_data_free(&b->data);
    mb_sched_free(&b->sched);
    mb_layout_free(&b->lay);
    mb_memtl_free(b);
    mb_free(b->hostdep);
    mb_free(b->trec);
    mb_free(b->tdesc);
    mb_free(b->tdesc_hash);
    mb_engine_free(b->e);
    mb_calib_free(b->cal);
}

/* A build of scenario s, empty; -1 when s has more stages than the simulator holds. */
static int mb_step__begin(struct mb_build *b, const struct mb_scenario *s, struct mb_err *err)
{
    memset(b, 0, sizeof *b);
    if (s->pp > MB_MAX_STAGES)
        return mb_err_set(err, s->file, 0, 0, "pp = %d exceeds the simulator's limit of %d stages", s->pp,
                          MB_MAX_STAGES);
    b->s = s;
    b->m = &s->model;
    return 0;
}

/* The steady state of the run just made: on the breakdown's stage, from the
 * end of its first chunk-forward after the warm-up (the first one issued
 * after a backward) over the largest whole number of schedule periods of pp
 * microbatches x vpp chunks that still ends in a forward, the time and its
 * breakdown per category. The period is pp microbatches for plain 1F1B too:
 * on test_window_extension's pipeline the forwards' spacing repeats every pp
 * (windows of 8 and 12 chunk-forwards give the full step, 10, 11 and 14 miss
 * it by up to 1e-4). */
static void mb_step__window(struct mb_build *b, const struct mb_result *r, int m, struct mb__win *w)
{
    int p = b->lay.p, v = b->lay.v, cs = r->critical_stage;
    int total = b->lay.m * v, per = p * v;
    int ka = mb_sched_warmup(cs, p, v, b->lay.m) + 1;
    int len = ka < total ? (total - 1 - ka) / per * per : 0;
    memset(w, 0, sizeof *w);
    int ta = mb_sched_forward_done(b, cs, ka), tb = mb_sched_forward_done(b, cs, ka + len);
    if (len <= 0 || ta < 0 || tb < 0)
        return;
    double t0 = mb_engine_task_end(b->e, ta), t1 = mb_engine_task_end(b->e, tb);
    w->ok = t1 > t0;
    w->mbs = (double)len / v;
    w->step = t1 - t0;
    mb_results_breakdown_in(b, cs, t0, t1, w->bd);
    mb_bound_stages_m(b, m, w->floor);
}

/* Simulate the step with `mbs_n` microbatches per DP rank. */
static int mb_step__simulate(const struct mb_scenario *s, int mbs_n, const struct mb__ask *a, struct mb_result *r,
                        struct mb_err *err)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(r, 0, sizeof *r);
    r->microbatches = mbs_n;
    struct mb_build b;
    if (mb_step__begin(&b, s, err))
        return -1;
    b.record = a->trace || a->ops;
    /* the op table shows every launch; a trace draws a folded launch inside the next one's slice (emit.c:
     * the fold moves no GPU op), which keeps its task graph, and memory, that of a run without it */
    b.host_fold = !a->ops;
    if (a->cal)
        b.cal = mb_calib_view(a->cal);
    else if (!s->calib_path[0] && mb_topo_check_calibrated(&s->system, "calibration: {table: FILE}", err))
        return -1;
    else if (mb_calib_shared(s->system.gpu, s->calib_path[0] ? s->calib_path : NULL, &b.cal, err))
        return -1;
    mb_calib_set_roofline(b.cal, s->roofline);
    int rc = mb_step_place(&b, err);
    if (rc == 0) {
        rc = mb_step__build(&b, mbs_n, a->critical, err);
        if (rc == 0)
            rc = mb_step__run(&b, a, r, err);
        if (rc == 0)
            mb_bound_stages(&b, r->floor_s);
        if (rc == 0 && a->win)
            mb_step__window(&b, r, a->win_m, a->win);
    }
    mb_step__free(&b);
    if (rc)
        mb_result_free(r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r->sim_wall_s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return rc;
}

static double mb_step__lin(double a2, double a1, double k) { return a2 + k * (a2 - a1); }

/* Relative rounding allowed between a step and its compute floor (sums of the
 * same durations in another order, a linear extension of them). */
#define MB_FLOOR_TOL 1e-9

/* Whether an extended step fell below the compute floor of the whole step
 * (r->floor_s, extended with it): impossible for a simulated step, so the
 * extension is wrong there (the idle time of the shortened runs did not grow
 * linearly) and the caller simulates without it. */
static int mb_step__below_floor(const struct mb_scenario *s, const struct mb_result *r)
{
    double f = 0;
    for (int st = 0; st < s->pp && st < MB_MAX_STAGES; st++)
        f = fmax(f, r->floor_s[st]);
    return r->step_time_s < f * (1 - MB_FLOOR_TOL);
}

static void mb_step__extend_memory(const struct mb_scenario *s, struct mb_result *r, const struct mb_result *r1, double k)
{
    struct mb_memory *M = &r->mem;
    for (int i = 0; i < M->n_stages && i < r1->mem.n_stages; i++) {
        struct mb_memory_stage *a = &M->per_stage[i];
        const struct mb_memory_stage *b1 = &r1->mem.per_stage[i];
        a->weights = mb_step__lin(a->weights, b1->weights, k);
        a->grads = mb_step__lin(a->grads, b1->grads, k);
        a->optimizer = mb_step__lin(a->optimizer, b1->optimizer, k);
        a->activations = mb_step__lin(a->activations, b1->activations, k);
        a->deferred_wgrad = mb_step__lin(a->deferred_wgrad, b1->deferred_wgrad, k);
        a->buffers = mb_step__lin(a->buffers, b1->buffers, k);
        a->graphs = mb_step__lin(a->graphs, b1->graphs, k);
        a->peak_allocated = mb_step__lin(a->peak_allocated, b1->peak_allocated, k);
        a->reserved = mb_step__lin(a->reserved, b1->reserved, k);
        a->logits = mb_step__lin(a->logits, b1->logits, k);
        a->dispatch = mb_step__lin(a->dispatch, b1->dispatch, k);
        a->workspace = mb_step__lin(a->workspace, b1->workspace, k);
        a->recompute = mb_step__lin(a->recompute, b1->recompute, k);
        a->bwd_grads = mb_step__lin(a->bwd_grads, b1->bwd_grads, k);
        a->fragmentation = mb_step__lin(a->fragmentation, b1->fragmentation, k);
        a->comm_buffers = mb_step__lin(a->comm_buffers, b1->comm_buffers, k);
        a->context = mb_step__lin(a->context, b1->context, k);
        a->device = mb_step__lin(a->device, b1->device, k);
        mb_memory_settle_step(s, a); /* the passes' terms extended: does the step overtake them? */
    }
    mb_memory_summarize(M);
    mb_step__step_peak_times(r);
    M->tl.n = 0; /* the timeline of the shortened model does not extend */
    r->oom = M->verdict == MB_MEM_OOM;
}

/* The deferred output-layer wgrad (overlap.defer_embedding_wgrad_compute) holds a buffer per
 * microbatch up to its limit until the flush, so a step extended from m2 to m microbatches holds
 * the calls the m2 run did not reach as well: they are added to the last stage's activations and
 * peak, with the input of the m2 run's last call, which its peak (in that call's backward) may not
 * hold yet. Exact when the limit stops the deferral before the last microbatch, at most one call's
 * input high otherwise (test_deferred_wgrad); the timeline is dropped. */
static int mb_step__extend_deferred(const struct mb_scenario *s, int m2, int m, struct mb_result *r)
{
    double din, call = mb_memory_deferred_call_bytes(s, &din);
    int more = mb_memory_deferred_calls(s, m) - mb_memory_deferred_calls(s, m2);
    struct mb_memory *M = &r->mem;
    if (more <= 0 || M->n_stages < s->pp)
        return 0;
    /* the m2 run's peak, in its last backward, may not yet hold that call's input */
    double extra = more * call + din;
    struct mb_memory_stage *a = &M->per_stage[s->pp - 1];
    if (a->at_step) /* the passes' terms the buffers would add to are gone: not extendable */
        return -1;
    a->activations += extra;
    a->deferred_wgrad += extra;
    a->peak_allocated += extra;
    a->reserved += extra;
    a->device += extra;
    mb_memory_settle_step(s, a); /* the step may no longer be the larger: at_step stays 0 */
    mb_memory_summarize(M);
    M->tl.n = 0;
    r->oom = M->verdict == MB_MEM_OOM;
    return 0;
}

/* Rates of r from its (extended) step and model FLOPs, keeping the useful
 * share of the tokens and the MFU per TFLOP/s of the simulated run. */
static void mb_step__rates(const struct mb_scenario *s, struct mb_result *r, double mfu_per_tflops, double useful_ratio)
{
    r->tokens_per_s_per_gpu = (double)s->global_batch_size * s->seq_length / (r->step_time_s * s->gpus);
    r->useful_tokens_per_s_per_gpu = r->tokens_per_s_per_gpu * useful_ratio;
    r->model_tflops_per_gpu = r->model_flops / (r->step_time_s * 1e12 * s->gpus);
    r->mfu = r->model_tflops_per_gpu * mfu_per_tflops;
}

static double mb_step__mfu_per_tflops(const struct mb_result *r)
{
    return r->model_tflops_per_gpu > 0 ? r->mfu / r->model_tflops_per_gpu : 0;
}

static double mb_step__useful_ratio(const struct mb_result *r)
{
    return r->tokens_per_s_per_gpu > 0 ? r->useful_tokens_per_s_per_gpu / r->tokens_per_s_per_gpu : 1;
}

/* Extend r (simulated at count n2) linearly to count n2 + k (n2 - n1), given r1
 * simulated at n1: step, breakdown, critical path, op table and model FLOPs
 * (exact when each extra unit adds the same), and with `mem` the per-stage
 * memory too (the layer extension; with microbatches memory is already
 * steady). `flops` > 0 replaces the extended model FLOPs (microbatches: the
 * m2 run's per-microbatch mean, which averages more image draws). Rates are
 * recomputed from the step. */
static void mb_step__extend(const struct mb_scenario *s, struct mb_result *r, const struct mb_result *r1, double k,
                       int mem, double flops)
{
    double mfu_per_tflops = mb_step__mfu_per_tflops(r), useful_ratio = mb_step__useful_ratio(r);
    r->step_time_s = mb_step__lin(r->step_time_s, r1->step_time_s, k);
    r->model_flops = flops > 0 ? flops : mb_step__lin(r->model_flops, r1->model_flops, k);
    for (int c = 0; c < MB_CAT_COUNT; c++) {
        r->breakdown[c] = fmax(0, mb_step__lin(r->breakdown[c], r1->breakdown[c], k));
        r->critical[c] = fmax(0, mb_step__lin(r->critical[c], r1->critical[c], k));
    }
    for (int st = 0; st < s->pp && st < MB_MAX_STAGES; st++)
        r->floor_s[st] = mb_step__lin(r->floor_s[st], r1->floor_s[st], k);
    if (mem)
        mb_step__extend_memory(s, r, r1, k);
    mb_opstats_extend(r, r1, k);
    mb_step__rates(s, r, mfu_per_tflops, useful_ratio);
    r->sim_wall_s += r1->sim_wall_s;
    r->events += r1->events;
}

/* Extend r, simulated at m2 microbatches, to m from its own steady state w
 * (mb__window): each further microbatch adds w's time and breakdown per
 * microbatch; the floors are w's, at m. */
static void mb_step__extend_window(const struct mb_scenario *s, struct mb_result *r, const struct mb__win *w, int m,
                              int m2)
{
    double mfu_per_tflops = mb_step__mfu_per_tflops(r), useful_ratio = mb_step__useful_ratio(r);
    double k = (m - m2) / w->mbs;
    r->step_time_s += k * w->step;
    r->model_flops = r->model_flops * m / m2;
    for (int c = 0; c < MB_CAT_COUNT; c++)
        r->breakdown[c] += k * w->bd[c];
    memcpy(r->floor_s, w->floor, sizeof r->floor_s);
    mb_step__rates(s, r, mfu_per_tflops, useful_ratio);
}

/* Steady-state 1F1B is periodic: past the warm-up, every extra microbatch adds
 * the same time to the step. Large microbatch counts are therefore simulated at
 * two counts m1 < m2 <= cap (multiples of pp, as interleaving needs) and the
 * step extended linearly: T(m) = T(m2) + (m - m2) (T(m2) - T(m1)) / (m2 - m1).
 * This keeps time and memory bounded for any global batch size; the tests
 * check it against a full simulation. The per-step terms must have stopped
 * changing for the step to be linear in m: when the exposed DP/FSDP
 * communication (hidden behind more backward work as m grows) still differs
 * between m1 and m2, the full simulation runs instead. Sweeps
 * (mb_step_opts.mb_window) take the slope from the m2 run's own steady state
 * instead (mb__window), and the m1 run only where that has none. */
#define MB_STEP_MB_CAP 64
/* With drawn data (images, packed lengths) the steady state is not periodic:
 * a rank's microbatches differ, and the memory peak is the heaviest window of
 * draws in flight, which runs of part of the microbatches miss (a Qwen3-VL PP 4
 * / VPP 2 rank of 128 microbatches: 34.3 GiB from runs of 32 and 64, 35.7 with
 * all 128, docs/sweep.md). A single prediction therefore simulates up to this
 * many of them (a 128-microbatch VLM step: under 0.1 s); sweeps keep their own
 * --mb-cap. */
#define MB_STEP_MB_CAP_DRAWN 512

/* Fewest microbatches per stage the extension's longer run needs, in units of
 * pp: 4, or 2 (runs of pp and 2 pp microbatches) for plain 1F1B over
 * identical microbatches -- no images and no packed lengths drawn -- whose
 * steady state starts right after the pp - 1 warm-up forwards. That keeps a
 * capped sweep's cost linear in pp up to pp = cap / 2; on the 2,304
 * configurations of tests/data/sweep/moe256.yaml (all 1F1B) it moved 15
 * steps, by at most 4.5e-5. Interleaving (a deeper warm-up) and drawn data
 * (microbatches differ, so short runs sample them poorly: up to 27 % on the
 * VLM grid) keep 4. */
static int mb_step__drawn(const struct mb_scenario *s)
{
    return s->packed || (!s->mock && s->images.dist != MB_IMG_NONE && s->model.vision.depth > 0);
}

static int mb_step__mb_floor(const struct mb_scenario *s)
{
    return (s->vpp > 1 || mb_step__drawn(s)) ? 4 : 2;
}

/* After r, simulated at m2 microbatches, was extended to m: the deferred
 * wgrad buffers, and the full simulation where the extension fell below the
 * compute floor. */
static int mb_step__finish_mb(const struct mb_scenario *s, int m2, int m, const struct mb__ask *a, struct mb_result *r,
                         struct mb_err *err)
{
    int whole = mb_step__extend_deferred(s, m2, m, r);
    r->microbatches = m;
    if (whole || mb_step__below_floor(s, r)) {
        mb_result_free(r);
        return mb_step__simulate(s, m, a, r, err);
    }
    mb_step__step_peak_times(r); /* the extended step's end */
    return 0;
}

/* The two-run extension from r1 (m1 microbatches, freed here) and r (m2):
 * the full simulation instead when the exposed DP/FSDP communication still
 * differs between them. */
static int mb_step__finish_two(const struct mb_scenario *s, int m2, int m, const struct mb__ask *a, struct mb_result *r1,
                          struct mb_result *r, struct mb_err *err)
{
    double fixed1 = r1->breakdown[MB_CAT_COMM_DP] + r1->breakdown[MB_CAT_COMM_FSDP];
    double fixed2 = r->breakdown[MB_CAT_COMM_DP] + r->breakdown[MB_CAT_COMM_FSDP];
    if (fabs(fixed2 - fixed1) > 1e-3 * r->step_time_s) {
        mb_result_free(r1);
        mb_result_free(r);
        return mb_step__simulate(s, m, a, r, err);
    }
    mb_step__extend(s, r, r1, (double)(m - m2) / (m2 - r1->microbatches), 0, r->model_flops * m / m2);
    mb_result_free(r1);
    return mb_step__finish_mb(s, m2, m, a, r, err);
}

static int mb_step__simulate_mb(const struct mb_scenario *s, int cap, const struct mb__ask *a, struct mb_result *r,
                           struct mb_err *err)
{
    int m = s->global_batch_size / (s->micro_batch_size * s->dp);
    int p = s->pp > 0 ? s->pp : 1;
    if (cap < 0)
        return mb_step__simulate(s, m, a, r, err);
    if (cap == 0)
        cap = mb_step__drawn(s) ? MB_STEP_MB_CAP_DRAWN : MB_STEP_MB_CAP;
    if (cap < mb_step__mb_floor(s) * p)
        cap = mb_step__mb_floor(s) * p;
    cap -= cap % p;
    if (m <= cap)
        return mb_step__simulate(s, m, a, r, err);
    int m2 = cap, m1 = cap / 2 - (cap / 2) % p;
    struct mb_result r1;
    struct mb__ask a1 = *a;
    a1.trace = NULL;
    if (a->window && !a->critical && !a->ops && s->strategy != MB_STRAT_FSDP && s->cpu_offload_layers <= 0) {
        struct mb__win w;
        struct mb__ask aw = *a;
        aw.win = &w;
        aw.win_m = m;
        if (mb_step__simulate(s, m2, &aw, r, err))
            return -1;
        if (w.ok) {
            mb_step__extend_window(s, r, &w, m, m2);
            return mb_step__finish_mb(s, m2, m, a, r, err);
        }
        /* too short for a whole period after the warm-up: the second run */
        if (mb_step__simulate(s, m1, &a1, &r1, err)) {
            mb_result_free(r);
            return -1;
        }
    } else {
        if (mb_step__simulate(s, m1, &a1, &r1, err))
            return -1;
        if (mb_step__simulate(s, m2, a, r, err)) {
            mb_result_free(&r1);
            return -1;
        }
    }
    return mb_step__finish_two(s, m2, m, a, &r1, r, err);
}

/* Linear extension in the number of decoder layers (`layer_cap`, used by
 * sweeps): when every decoder layer is of one kind and the layers divide evenly
 * when the same number of layers is added to every virtual pipeline stage,
 * every term of the step -- time, breakdown, static memory, activations, model
 * FLOPs -- changes by the same amount each time, so the step is simulated with
 * about 2 and 4 layers per virtual stage (mb__layers_kept) and extended to the
 * real count, as the microbatch extension does for microbatches. */
static int mb_step__uniform_layers(const struct mb_model *m)
{
    for (int i = 1; i < m->n_layers; i++)
        if (m->layer[i].mixer != m->layer[0].mixer || m->layer[i].ffn != m->layer[0].ffn)
            return 0;
    return m->n_layers > 0 && !m->pattern[0];
}

/* Layers per virtual stage the layer extension's shorter run keeps (the
 * longer keeps twice as many): more than the FSDP prefetch depth, so its
 * ramp and the unsharded layers it holds fit inside the shortened stages; 1
 * for plain 1F1B (no interleaving) over identical microbatches at pp >= 4,
 * where the pipeline's p2p and bubbles, not a stage's own layers, set what
 * repeats (on tests/data/sweep/moe256.yaml's PP 4 and PP 8 rows the steps
 * stay within 0.2 % of --exact, against 0.15 % with 2); else 2 (shallower
 * pipelines, interleaving and drawn data: at 1 up to 1.2 % and 29 % off). */
static int mb_step__layers_kept(const struct mb_scenario *s)
{
    if (s->strategy == MB_STRAT_FSDP)
        return s->fsdp_prefetch > 0 ? s->fsdp_prefetch + 2 : 2;
    return s->pp >= 4 && s->vpp <= 1 && mb_step__mb_floor(s) == 2 ? 1 : 2;
}

/* The vision encoder's load on the first stage makes the step non-linear in
 * the decoder layers while the stages are short: on
 * tests/data/sweep/vlm9216.yaml a PP1 EP64 step grows 0.047 s per layer from 2
 * to 4 layers and 0.0327 s from 4 on, a PP2 one 0.020, 0.027 and then 0.036 s
 * per layer from 2, 4 and 6 layers per stage, so runs of 2 and 4 layers
 * extended to 48 came out up to 27 % off the full simulation. A third run at 6
 * layers per stage, kept when both pairs agreed within 0.2 %, still left
 * steps 1.7 % off on that grid and cost as much CPU as simulating every layer
 * (each short run carries the whole encoder, and 405 of the 480 PP2 / VPP1
 * configurations failed the check and were simulated again), so with an
 * encoder every decoder layer is simulated. */
static int mb_step__layers_extend(const struct mb_scenario *s)
{
    return mb_step__uniform_layers(&s->model) && s->model.vision.depth <= 0 &&
           s->model.num_layers == s->model.n_layers && !s->pipeline_layout[0] &&
           !(s->recompute == MB_RC_FULL && s->recompute_num_layers > 0);
}

static int mb_step__simulate_opts(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_result *r,
                             struct mb_err *err)
{
    struct mb__ask a = {o ? o->critical_path : 1, o ? o->trace : NULL, o ? o->ops : 0, o ? o->cal : NULL,
                        o ? o->mb_window : 0, NULL, 0};
    int cap = o ? o->mb_cap : 0;
    int nv = s->pp * (s->vpp > 0 ? s->vpp : 1);
    int L = s->model.n_layers;
    /* remove the same number of layers from every virtual stage, so an uneven
     * split keeps its shape: about k and 2k layers per virtual stage remain
     * (worth it only while the two runs hold fewer layers than one full run) */
    int k = mb_step__layers_kept(s);
    int base = L / nv, q1 = base - k, q2 = base - 2 * k;
    int L1 = L - nv * q1, L2 = L - nv * q2;
    if (!o || o->layer_cap <= 0 || a.trace || a.ops || q2 < 1 || L1 + L2 >= L || !mb_step__layers_extend(s))
        return mb_step__simulate_mb(s, cap, &a, r, err);
    struct mb_scenario s1 = *s, s2 = *s;
    s1.model.n_layers = s1.model.num_layers = L1;
    s2.model.n_layers = s2.model.num_layers = L2;
    /* Megatron-FSDP's unsharded units are capped by the full stage's layers, not the shortened one's */
    s1.fsdp_units_layers_add = (L - L1) / s->pp;
    s2.fsdp_units_layers_add = (L - L2) / s->pp;
    struct mb_result r1;
    if (mb_step__simulate_mb(&s1, cap, &a, &r1, err))
        return -1;
    if (mb_step__simulate_mb(&s2, cap, &a, r, err)) {
        mb_result_free(&r1);
        return -1;
    }
    /* a stage of a short run peaking in the optimizer step has no passes' terms left to extend (the
     * full model's passes may still be the larger): simulated in full */
    int at_step = 0;
    for (int st = 0; st < r->mem.n_stages && st < r1.mem.n_stages; st++)
        at_step |= r->mem.per_stage[st].at_step || r1.mem.per_stage[st].at_step;
    if (at_step) {
        mb_result_free(&r1);
        mb_result_free(r);
        return mb_step__simulate_mb(s, cap, &a, r, err);
    }
    mb_step__extend(s, r, &r1, (double)(L - L2) / (L2 - L1), 1, 0);
    if (mb_step__below_floor(s, r)) {
        mb_result_free(r);
        return mb_step__simulate_mb(s, cap, &a, r, err);
    }
    return 0;
}

/* Every number a report prints must be finite and physically possible: a NaN,
 * an infinite or non-positive step or an MFU above 100 % is a bug in the model
 * (or a calibration table it trusted), reported as an internal error naming the
 * scenario rather than printed as a prediction. A step or a peak memory that is
 * finite but past its bound is a run too large to predict (an absurd model or
 * batch that every key's own range allows): the input's doing, said so. */
struct mb_step__bound {
    const char *name;
    double v, lo, hi;
    const char *size; /* the bound in words when a value past hi is the input's size, else NULL */
};

static int mb_step__implausible(const struct mb_result *r, struct mb_step__bound *out)
{
    const struct mb_step__bound q[] = {{"step time (s)", r->step_time_s, 1e-12, 1e12, "1e12 s, 31,700 years"},
                                       {"tokens/s/GPU", r->tokens_per_s_per_gpu, 0, 1e15, NULL},
                                       {"model TFLOP/s/GPU", r->model_tflops_per_gpu, 0, 1e9, NULL},
                                       {"MFU", r->mfu, 0, 1, NULL},
                                       {"peak memory (bytes)", r->mem.peak_allocated, 0, 1e18, "1e18 bytes"}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (!isfinite(q[i].v) || q[i].v < q[i].lo || q[i].v > q[i].hi) {
            *out = q[i];
            return 1;
        }
    return 0;
}

int mb_result_check(const struct mb_scenario *s, const struct mb_result *r, struct mb_err *err)
{
    struct mb_step__bound b;
    if (!mb_step__implausible(r, &b))
        return 0;
    if (b.size && isfinite(b.v) && b.v > b.hi)
        return mb_err_set(err, s->file[0] ? s->file : NULL, 0, 0,
                          "scenario '%s' (model %s: %d layers, hidden %d; %d GPUs, global batch %d, sequence %d) "
                          "gives %s = %g, past what mbsim predicts (%s): check the model's sizes and the batch",
                          s->name, s->model.name, s->model.n_layers, s->model.hidden, s->gpus,
                          s->global_batch_size, s->seq_length, b.name, b.v, b.size);
    return mb_err_set(err, s->file[0] ? s->file : NULL, 0, 0,
                      "internal error: scenario '%s' (model %s, system %s, %d GPUs, tp %d pp %d cp %d ep %d, "
                      "micro-batch %d, sequence %d) gives %s = %g, which is impossible; please report it "
                      "with this scenario",
                      s->name, s->model.name, s->system.name, s->gpus, s->tp, s->pp, s->cp, s->ep,
                      s->micro_batch_size, s->seq_length, b.name, b.v);
}

int mb_step_simulate_opts(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_result *r,
                          struct mb_err *err)
{
    if (mb_step__simulate_opts(s, o, r, err))
        return -1;
    mb_step_check_memory(s, &r->mem, "results"); /* also what the microbatch and layer extensions made */
    if (!mb_result_check(s, r, err))
        return 0;
    mb_result_free(r);
    return -1;
}

/* The bounds from one build of the whole step's op lists (no data drawn, no
 * task graph): every stage's compute floor, and the memory estimate with
 * every timeline term 0. */
static void mb_step__bound_build(struct mb_build *b, struct mb_step_bound *out)
{
    const struct mb_scenario *s = b->s;
    double floor_s[MB_MAX_STAGES];
    struct mb_memdyn dyn[MB_MAX_STAGES];
    struct mb_memory *mem = mb_malloc(sizeof *mem);
    memset(dyn, 0, sizeof dyn);
    mb_layout_build(b, s->global_batch_size / (s->micro_batch_size * s->dp));
    mb_plan_build(b);
    mb_plan_scale_attention(b, 1.0); /* fuses the lists as a simulation does */
    mb_layout_graphs(b);
    mb_bound_stages(b, floor_s);
    for (int st = 0; st < b->lay.p; st++)
        out->step_s = fmax(out->step_s, floor_s[st]);
    mb_memory_estimate(s, &b->lay, &b->plan, 0, mb_step_capacity(b), dyn, mem);
    out->device_bytes = mem->device;
    out->capacity = mem->capacity;
    mb_free(mem);
}

int mb_step_bound(const struct mb_scenario *s, const struct mb_step_opts *o, struct mb_step_bound *out,
                  struct mb_err *err)
{
    memset(out, 0, sizeof *out);
    struct mb_build b;
    if (mb_step__begin(&b, s, err))
        return -1;
    if (o && o->cal)
        b.cal = mb_calib_view(o->cal);
    else if (mb_calib_shared(s->system.gpu, s->calib_path[0] ? s->calib_path : NULL, &b.cal, err))
        return -1;
    mb_calib_set_roofline(b.cal, s->roofline);
    int rc = mb_step_place(&b, err);
    if (rc == 0)
        mb_step__bound_build(&b, out);
    mb_step__free(&b);
    return rc;
}

int mb_step_simulate(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err)
{
    return mb_step_simulate_opts(s, NULL, r, err);
}

int mb_step_simulate_exact(const struct mb_scenario *s, struct mb_result *r, struct mb_err *err)
{
    struct mb_step_opts o = {-1, 1, 0, NULL, 0, NULL, 0};
    return mb_step_simulate_opts(s, &o, r, err);
}

int mb_step_trace(const struct mb_scenario *s, const char *path, struct mb_result *r, struct mb_err *err)
{
    struct mb_step_opts o = {0, 1, 0, path, 0, NULL, 0};
    return mb_step_simulate_opts(s, &o, r, err);
}
