/*
 * report_json.c -- `mbsim run --json`: the report as one JSON object, written with jansson so escaping
 * and number formatting are a library's business. Every key is in report_keys.c, whose table is the
 * documented contract (docs/cli.md) and is checked against what this file emits (test_report_keys).
 */
#include "report.h"
#include "report_ops.h"
#include "mb_coll.h"
#include "mb_keys.h"
#include "mb_publish.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char *const mb_cli__cc_names[MB_CC_COUNT] = {"tp", "cp", "ep", "pp", "dp", "fsdp"};

/* One collective call: NCCL's algorithm and protocol, and whether its latency outweighs its bandwidth time. */
static json_t *mb_cli__coll_call_json(const struct mb_coll_use *u)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f, s:f, s:b}", "op", mb_coll_op_name((enum mb_coll_op)u->op),
                     "algorithm", mb_coll_algo_label((enum mb_coll_algo)u->algo, u->domains), "protocol",
                     mb_coll_proto_name((enum mb_coll_proto)u->proto), "ranks", u->ranks, "domains", u->domains,
                     "bytes", u->bytes, "latency_s", u->lat_s, "bandwidth_s", u->bw_s, "latency_bound",
                     u->lat_s >= u->bw_s);
}

/* `collectives`: per class its costliest call, and `longest_latency` per class. */
static json_t *mb_cli__coll_json(const struct mb_result *r)
{
    json_t *o = json_object(), *lat = json_object();
    for (int c = 0; c < MB_CC_COUNT; c++)
        if (r->coll[c].used)
            json_object_set_new(o, mb_cli__cc_names[c], mb_cli__coll_call_json(&r->coll[c]));
    for (int c = 0; c < MB_CC_COUNT; c++)
        if (r->coll_lat[c].used)
            json_object_set_new(lat, mb_cli__cc_names[c], mb_cli__coll_call_json(&r->coll_lat[c]));
    json_object_set_new(o, "longest_latency", lat);
    return o;
}

/* `layout`. */
static json_t *mb_cli__layout_json(const struct mb_scenario *s, const struct mb_result *r)
{
    json_t *lay = json_object();
    json_object_set_new(lay, "strategy", json_string(mb_key_value_name("parallel.strategy", s->strategy)));
    json_object_set_new(lay, "tp", json_integer(s->tp));
    json_object_set_new(lay, "pp", json_integer(s->pp));
    json_object_set_new(lay, "vpp", json_integer(s->vpp));
    json_object_set_new(lay, "cp", json_integer(s->cp));
    json_object_set_new(lay, "dp", json_integer(s->dp));
    json_object_set_new(lay, "ep", json_integer(s->ep));
    json_object_set_new(lay, "etp", json_integer(s->etp));
    json_object_set_new(lay, "microbatches", json_integer(r->microbatches));
    json_object_set_new(lay, "distributed_optimizer", json_boolean(s->dist_opt));
    json_object_set_new(lay, "all_reduce_algorithm", json_string(mb_coll_algo_name((enum mb_coll_algo)s->allreduce_algo)));
        return lay;
}

/* `publication_check`. */
static json_t *mb_cli__publication_json(const struct mb_scenario *s, const struct mb_result *r)
{
    struct mb_publish_check pc;
    mb_publish_check(s, r->model_tflops_per_gpu, &pc);
    json_t *pub = json_object();
    json_object_set_new(pub, "verdict", json_string(mb_publish_verdict_name(pc.verdict)));
    json_object_set_new(pub, "target_model_tflops_per_gpu", pc.target_tflops > 0 ? json_real(pc.target_tflops) : json_null());
    json_object_set_new(pub, "fraction_of_target", pc.target_tflops > 0 ? json_real(pc.fraction) : json_null());
    json_object_set_new(pub, "text", json_string(pc.text));
        return pub;
}

/* `memory.per_stage`: one object per pipeline stage. */
static json_t *mb_cli__stages_json(const struct mb_result *r)
{
    json_t *stages = json_array();
    for (int st = 0; st < r->mem.n_stages; st++) {
        const struct mb_memory_stage *m = &r->mem.per_stage[st];
        json_t *e = json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "stage", st, "weights_gib", m->weights / GIB,
                              "gradients_gib", m->grads / GIB, "optimizer_gib", m->optimizer / GIB,
                              "activations_gib", m->activations / GIB, "buffers_gib", m->buffers / GIB,
                              "cuda_graphs_gib", m->graphs / GIB, "peak_gib", m->peak_allocated / GIB,
                              "reserved_gib", m->reserved / GIB);
        json_object_set_new(e, "deferred_wgrad_gib", json_real(m->deferred_wgrad / GIB));
        json_object_set_new(e, "peak_in_optimizer_step", json_boolean(m->at_step));
        json_object_set_new(e, "first_iteration_allocated_gib", json_real(m->first_iter_allocated / GIB));
        json_object_set_new(e, "optimizer_step_gradients_gib", json_real(m->at_step ? m->step_grads / GIB : 0));
        json_object_set_new(e, "recompute_gib", json_real(m->recompute / GIB));
        json_object_set_new(e, "loss_gib", json_real(m->logits / GIB));
        json_object_set_new(e, "backward_gradients_gib", json_real(m->bwd_grads / GIB));
        json_object_set_new(e, "dispatch_gib", json_real(m->dispatch / GIB));
        json_object_set_new(e, "workspace_gib", json_real(m->workspace / GIB));
        json_object_set_new(e, "fragmentation_gib", json_real(m->fragmentation / GIB));
        json_object_set_new(e, "comm_buffers_gib", json_real(m->comm_buffers / GIB));
        json_object_set_new(e, "cuda_context_gib", json_real(m->context / GIB));
        json_object_set_new(e, "device_gib", json_real(m->device / GIB));
        json_object_set_new(e, "peak_time_s", json_real(m->peak_time_s));
        json_object_set_new(e, "verdict",
                            json_string(mb_memory_verdict_name(mb_memory_verdict_of(m->device, r->mem.capacity))));
        json_array_append_new(stages, e);
}
    return stages;
}

/* `memory.timeline`: the reported rank over the simulated microbatches. */
static json_t *mb_cli__timeline_json(const struct mb_result *r)
{
    const struct mb_memtl *tl = &r->mem.tl;
    json_t *t = json_object(), *a[6];
    const double *src[6] = {tl->t, tl->allocated, tl->activations, tl->logits, tl->recompute, tl->bwd_grads};
    static const char *const key[6] = {"t_s",      "allocated_gib", "activations_gib",
                                       "loss_gib", "recompute_gib", "backward_gradients_gib"};
    json_object_set_new(t, "stage", json_integer(tl->stage));
    for (int k = 0; k < 6; k++) {
        a[k] = json_array();
        for (int i = 0; i < tl->n; i++)
            json_array_append_new(a[k], json_real(k ? src[k][i] / GIB : src[k][i]));
        json_object_set_new(t, key[k], a[k]);
    }
    return t;
}

/* `memory`: every term of the rank with the most device memory at its peak. */
static json_t *mb_cli__memory_json(const struct mb_result *r)
{
    json_t *mem = json_object();
    json_object_set_new(mem, "stage", json_integer(r->mem.stage));
    json_object_set_new(mem, "weights_gib", json_real(r->mem.weights / GIB));
    json_object_set_new(mem, "gradients_gib", json_real(r->mem.grads / GIB));
    json_object_set_new(mem, "optimizer_gib", json_real(r->mem.optimizer / GIB));
    json_object_set_new(mem, "activations_gib", json_real(r->mem.activations / GIB));
    json_object_set_new(mem, "buffers_gib", json_real(r->mem.buffers / GIB));
    json_object_set_new(mem, "cuda_graphs_gib", json_real(r->mem.graphs / GIB));
    json_object_set_new(mem, "dominant", json_string(r->mem.dominant));
    json_object_set_new(mem, "peak_time_s", json_real(r->mem.peak_time_s));
    json_object_set_new(mem, "peak_in_optimizer_step", json_boolean(r->mem.at_step));
    json_object_set_new(mem, "first_iteration_allocated_gib", json_real(r->mem.first_iter_allocated / GIB));
    json_object_set_new(mem, "optimizer_step_gradients_gib", json_real(r->mem.at_step ? r->mem.step_grads / GIB : 0));
    json_object_set_new(mem, "deferred_wgrad_gib", json_real(r->mem.deferred_wgrad / GIB));
    json_object_set_new(mem, "recompute_gib", json_real(r->mem.recompute / GIB));
    json_object_set_new(mem, "loss_gib", json_real(r->mem.logits / GIB));
    json_object_set_new(mem, "backward_gradients_gib", json_real(r->mem.bwd_grads / GIB));
    json_object_set_new(mem, "dispatch_gib", json_real(r->mem.dispatch / GIB));
    json_object_set_new(mem, "workspace_gib", json_real(r->mem.workspace / GIB));
    json_object_set_new(mem, "allocated_gib", json_real(r->mem.peak_allocated / GIB));
    json_object_set_new(mem, "fragmentation_gib", json_real(r->mem.fragmentation / GIB));
    json_object_set_new(mem, "reserved_gib", json_real(r->mem.reserved / GIB));
    json_object_set_new(mem, "comm_buffers_gib", json_real(r->mem.comm_buffers / GIB));
    json_object_set_new(mem, "cuda_context_gib", json_real(r->mem.context / GIB));
    json_object_set_new(mem, "device_gib", json_real(r->mem.device / GIB));
    json_object_set_new(mem, "capacity_gib", json_real(r->mem.capacity / GIB));
    json_object_set_new(mem, "at_risk_fraction", json_real(MB_MEM_AT_RISK_FRACTION));
    json_object_set_new(mem, "verdict", json_string(mb_memory_verdict_name(r->mem.verdict)));
        if (r->mem.tl.n > 0)
            json_object_set_new(mem, "timeline", mb_cli__timeline_json(r));
        json_object_set_new(mem, "per_stage", mb_cli__stages_json(r));
        return mem;
}

/* A map of the categories (`breakdown_s`, `critical_path_s`). */
static json_t *mb_cli__categories_json(const double *v)
{
    json_t *o = json_object();
    for (int c = 0; c < MB_CAT_COUNT; c++)
        json_object_set_new(o, mb_cat_name((enum mb_cat)c), json_real(v[c]));
    return o;
}

/* `calibration` and `framework`: the tables and the framework-time model the step used. */
static void mb_cli__calib_json(json_t *o, const struct mb_scenario *s, const struct mb_result *r)
{
    json_t *cal = json_object();
    json_object_set_new(cal, "table", json_string(r->calib_path));
    json_object_set_new(cal, "roofline_only", json_boolean(s->roofline));
    json_object_set_new(cal, "lookups", json_integer(r->calib_lookups));
    json_object_set_new(cal, "roofline_fallbacks", json_integer(r->calib_fallbacks));
    json_object_set_new(o, "calibration", cal);
    json_t *fw = json_object();
    json_object_set_new(fw, "applied", json_boolean(r->fw_on));
    json_object_set_new(fw, "tensor_fraction", json_real(r->fw_tensor_fraction));
    json_object_set_new(fw, "membound_eff", json_real(r->fw_membound_eff));
    json_object_set_new(fw, "kernel_eager_s", json_real(r->fw_kernel_eager_s));
    json_object_set_new(fw, "kernel_graph_s", json_real(r->fw_kernel_graph_s));
    json_object_set_new(fw, "overlap_slowdown", json_real(r->fw_overlap_slowdown));
    json_object_set_new(fw, "step_overhead_s", json_real(r->fw_step_overhead_s));
    json_object_set_new(fw, "host_kernel_s", json_real(r->fw_host_kernel_s));
    json_object_set_new(fw, "kernel_moe_s", json_real(r->fw_kernel_moe_s));
    json_object_set_new(fw, "host_time_scale", json_real(r->host_time_scale));
    json_object_set_new(fw, "power_cap_w", s->system.power_cap > 0 ? json_real(s->system.power_cap) : json_null());
    json_object_set_new(fw, "power_clock_scale", json_real(r->fw_on ? s->system.power_clock_scale : 1));
    json_object_set_new(o, "framework", fw);
}

/* `measured`: the scenario's measured block, or NULL when it has none. */
static json_t *mb_cli__measured_json(const struct mb_scenario *s)
{
    if (!mb_scenario_measured(s))
        return NULL;
    json_t *me = json_object();
    if (s->meas_peak_memory_gib > 0)
        json_object_set_new(me, "peak_memory_gib", json_real(s->meas_peak_memory_gib));
    if (s->meas_peak_memory_gib > 0 && s->meas_peak_iteration == 1)
        json_object_set_new(me, "peak_memory_after_iteration", json_integer(1));
    if (s->meas_oom)
        json_object_set_new(me, "oom", json_true());
    if (s->meas_tokens_per_s_per_gpu > 0)
        json_object_set_new(me, "tokens_per_s_per_gpu", json_real(s->meas_tokens_per_s_per_gpu));
    if (s->meas_model_tflops_per_gpu > 0)
        json_object_set_new(me, "model_tflops_per_gpu", json_real(s->meas_model_tflops_per_gpu));
    if (s->meas_step_time_s > 0)
        json_object_set_new(me, "step_time_s", json_real(s->meas_step_time_s));
    if (s->meas_source[0])
        json_object_set_new(me, "source", json_string(s->meas_source));
    return me;
}

int mb_report_json(const struct mb_scenario *s, const struct mb_result *r, FILE *fp)
{
    json_t *o = json_object();
    json_object_set_new(o, "scenario", json_string(s->name));
    json_object_set_new(o, "model", json_string(s->model.name));
    json_object_set_new(o, "system", json_string(s->system.name));
    json_object_set_new(o, "gpu", json_string(s->system.gpu));
    json_object_set_new(o, "gpus", json_integer(s->gpus));
    json_object_set_new(o, "precision", json_string(s->prec.label));
    json_object_set_new(o, "layout", mb_cli__layout_json(s, r));
    json_object_set_new(o, "step_time_s", json_real(r->step_time_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(r->tokens_per_s_per_gpu));
    json_object_set_new(o, "useful_tokens_per_s_per_gpu", json_real(r->useful_tokens_per_s_per_gpu));
    json_object_set_new(o, "model_tflops_per_gpu", json_real(r->model_tflops_per_gpu));
    json_object_set_new(o, "mfu", json_real(r->mfu));
    json_object_set_new(o, "publication_check", mb_cli__publication_json(s, r));
    json_object_set_new(o, "peak_memory_gib", json_real(r->mem.peak_allocated / GIB));
    json_object_set_new(o, "reserved_memory_gib", json_real(r->mem.reserved / GIB));
    json_object_set_new(o, "memory_capacity_gib", json_real(r->mem.capacity / GIB));
    json_object_set_new(o, "oom", json_boolean(r->oom));
    json_object_set_new(o, "device_memory_gib", json_real(r->mem.device / GIB));
    json_object_set_new(o, "memory_verdict", json_string(mb_memory_verdict_name(r->mem.verdict)));
    json_object_set_new(o, "memory", mb_cli__memory_json(r));
    json_object_set_new(o, "breakdown_s", mb_cli__categories_json(r->breakdown));
    json_object_set_new(o, "collectives", mb_cli__coll_json(r));
    json_object_set_new(o, "critical_path_s", mb_cli__categories_json(r->critical));
    json_object_set_new(o, "critical_stage", json_integer(r->critical_stage));
    json_object_set_new(o, "vision_tokens_per_sample", json_real(r->vision_tokens_per_sample));
    mb_cli__calib_json(o, s, r);
    json_t *me = mb_cli__measured_json(s);
    if (me)
        json_object_set_new(o, "measured", me);
    if (r->ops)
        json_object_set_new(o, "ops", mb_report_ops_json(r));
    json_t *sim = json_object();
    json_object_set_new(sim, "tasks", json_integer((json_int_t)r->tasks));
    json_object_set_new(sim, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "simulation", sim);
    int rc = json_dumpf(o, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    fputc('\n', fp);
    json_decref(o);
    return rc ? -1 : 0;
}
