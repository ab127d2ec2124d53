/*
 * report_keys.c -- every key of `mbsim run --json` (report.c, report_ops.c) with its type and meaning:
 * the contract of the report. docs/cli.md's key list is generated from this table (test_report_keys
 * --regen-doc), and test_report_keys checks that the keys a report emits are the table's, so a key
 * renamed or added in the report and not here fails a test.
 *
 * Paths: `a.b` is key b of object a; `a[]` an array's elements; `a.*` the keys of an object that is a
 * map (categories, collective classes). Units are in the names: `_s` seconds, `_gib` GiB (2^30 bytes),
 * `tflops` TFLOP/s (10^12 FLOP/s), `gbps` GB/s (10^9 B/s).
 */
#include "report_keys.h"

#include <string.h>

#define MEM_TERMS_NOTE " (the rank with the most device memory, at the moment of its peak)"

const struct mb_report_key mb_report_keys[] = {
    {"scenario", "string", "scenario name"},
    {"model", "string", "model name"},
    {"system", "string", "system preset (or a system file's stem)"},
    {"gpu", "string", "GPU kind"},
    {"gpus", "int", "GPUs in the job"},
    {"precision", "string", "the scenario's precision label (`bf16`, `fp8_cs`, `mxfp8`, ...)"},
    {"layout", "object", "the parallel layout"},
    {"layout.strategy", "string", "`3d` or `fsdp`"},
    {"layout.tp", "int", "tensor parallel size"},
    {"layout.pp", "int", "pipeline parallel size"},
    {"layout.vpp", "int", "virtual pipeline stages per rank"},
    {"layout.cp", "int", "context parallel size"},
    {"layout.dp", "int", "data parallel size"},
    {"layout.ep", "int", "expert parallel size"},
    {"layout.etp", "int", "expert tensor parallel size"},
    {"layout.microbatches", "int", "microbatches per rank per step"},
    {"layout.distributed_optimizer", "bool", "false = DDP"},
    {"layout.all_reduce_algorithm", "string",
     "`auto`, `ring`, `tree`, `nvls` (the scenario's `collectives.all_reduce`)"},
    {"step_time_s", "number", "simulated steady-state step"},
    {"tokens_per_s_per_gpu", "number", "GBS × seq / step / GPUs (padding included)"},
    {"useful_tokens_per_s_per_gpu", "number", "the same without padded positions (packing, real VLM data)"},
    {"model_tflops_per_gpu", "number", "model FLOPs (Megatron's formulas, hardware.md D.1) / step / GPUs"},
    {"mfu", "number", "model TFLOP/s over the GPU's dense peak at the GEMM precision (0..1)"},
    {"publication_check", "object",
     "the practitioner guide's publication check (shared/docs/seed-moe-vlm-training-guide.md, \"Check "
     "performance before publishing\": \"For BF16, aim for roughly 200 model TFLOP/s/GPU on H100 or 400 on GB200 "
     "[...]\"). The 90 % (\"roughly\") and 50 % (\"severely below\") are mbsim's reading: the guide gives no number "
     "(`workloads/studies/mb_publish.h`). It checks a prediction; the guide asks for a measured steady state and "
     "excludes SFT/PEFT: `n/a` when the scenario freezes the language model (`freeze: [language]`, LoRA). "
     "`mbsim tune` prints the same check of its recommendation"},
    {"publication_check.verdict", "string",
     "`meets` (≥ 90 % of the target), `below` (50–90 %), `early, unoptimized` (< 50 %), `n/a` (another precision, "
     "another GPU — the guide gives no other target —, a VLM on mock data, or a frozen language model)"},
    {"publication_check.target_model_tflops_per_gpu", "number or null", "the guide's target (null when n/a)"},
    {"publication_check.fraction_of_target", "number or null", "model TFLOP/s/GPU over the target (null when n/a)"},
    {"publication_check.text", "string", "the report's sentence"},
    {"peak_memory_gib", "number", "the most loaded rank's peak allocated bytes (PyTorch allocator)"},
    {"reserved_memory_gib", "number", "the allocator's estimated reservation (allocated + fragmentation)"},
    {"memory_capacity_gib", "number", "the GPU's usable memory"},
    {"device_memory_gib", "number",
     "reserved + what lives outside PyTorch (NCCL, DeepEP/HybridEP buffers, CUDA context): what the verdict "
     "compares with the capacity"},
    {"memory_verdict", "string",
     "`fits`, `at risk` (device memory above `memory.at_risk_fraction` of capacity) or `OOM` (above capacity)"},
    {"oom", "bool", "the verdict is `OOM`"},
    {"memory", "object", "every term of the rank with the most device memory at the moment of its peak "
                         "(docs/modeling.md, Memory)"},
    {"memory.stage", "int", "its pipeline stage"},
    {"memory.peak_time_s", "number", "when it peaks (the step's end when the peak is in the optimizer step)"},
    {"memory.weights_gib", "number", "weights" MEM_TERMS_NOTE},
    {"memory.gradients_gib", "number", "main gradients"},
    {"memory.optimizer_gib", "number", "optimizer state (master weights, Adam's moments)"},
    {"memory.activations_gib", "number", "activations saved for backward"},
    {"memory.recompute_gib", "number", "re-forwarded activations of the layer in backward"},
    {"memory.backward_gradients_gib", "number", "gradients of the op running backward"},
    {"memory.buffers_gib", "number", "`loss_gib` + `dispatch_gib` + `workspace_gib`"},
    {"memory.loss_gib", "number", "the loss working set"},
    {"memory.dispatch_gib", "number",
     "the MoE forward working set (dispatcher token tensors, expert output, combine chain; 0 when the peak is in "
     "a backward, whose recompute and gradient working sets are larger)"},
    {"memory.workspace_gib", "number", "GEMM workspaces"},
    {"memory.cuda_graphs_gib", "number", "CUDA-graph pools"},
    {"memory.peak_in_optimizer_step", "bool", "the peak is the optimizer step's (the activation terms 0)"},
    {"memory.optimizer_step_gradients_gib", "number",
     "then the step's fp32 copy of BF16 main grads, else 0"},
    {"memory.deferred_wgrad_gib", "number", "of the activations, the deferred output-layer wgrad buffers"},
    {"memory.allocated_gib", "number", "the sum of the terms above = `peak_memory_gib`"},
    {"memory.first_iteration_allocated_gib", "number",
     "the most allocated through iteration 1, before the optimizer creates Adam's moments"},
    {"memory.fragmentation_gib", "number", "the allocator's fragmentation"},
    {"memory.reserved_gib", "number", "allocated + fragmentation"},
    {"memory.comm_buffers_gib", "number", "NCCL, DeepEP/HybridEP buffers"},
    {"memory.cuda_context_gib", "number", "the CUDA context"},
    {"memory.device_gib", "number", "reserved + comm buffers + context"},
    {"memory.capacity_gib", "number", "the GPU's usable memory"},
    {"memory.at_risk_fraction", "number", "0.9, the memory model's constant for `at risk`"},
    {"memory.verdict", "string", "as `memory_verdict`"},
    {"memory.dominant", "string", "the largest term"},
    {"memory.per_stage", "array", "one object per pipeline stage, the same terms at that stage's rank's peak"},
    {"memory.per_stage[].stage", "int", "pipeline stage"},
    {"memory.per_stage[].weights_gib", "number", "as in `memory`"},
    {"memory.per_stage[].gradients_gib", "number", "as in `memory`"},
    {"memory.per_stage[].optimizer_gib", "number", "as in `memory`"},
    {"memory.per_stage[].activations_gib", "number", "as in `memory`"},
    {"memory.per_stage[].buffers_gib", "number", "as in `memory`"},
    {"memory.per_stage[].cuda_graphs_gib", "number", "as in `memory`"},
    {"memory.per_stage[].peak_gib", "number", "allocated at its peak"},
    {"memory.per_stage[].reserved_gib", "number", "as in `memory`"},
    {"memory.per_stage[].deferred_wgrad_gib", "number", "as in `memory`"},
    {"memory.per_stage[].peak_in_optimizer_step", "bool", "as in `memory`"},
    {"memory.per_stage[].first_iteration_allocated_gib", "number", "as in `memory`"},
    {"memory.per_stage[].optimizer_step_gradients_gib", "number", "as in `memory`"},
    {"memory.per_stage[].recompute_gib", "number", "as in `memory`"},
    {"memory.per_stage[].loss_gib", "number", "as in `memory`"},
    {"memory.per_stage[].backward_gradients_gib", "number", "as in `memory`"},
    {"memory.per_stage[].dispatch_gib", "number", "as in `memory`"},
    {"memory.per_stage[].workspace_gib", "number", "as in `memory`"},
    {"memory.per_stage[].fragmentation_gib", "number", "as in `memory`"},
    {"memory.per_stage[].comm_buffers_gib", "number", "as in `memory`"},
    {"memory.per_stage[].cuda_context_gib", "number", "as in `memory`"},
    {"memory.per_stage[].device_gib", "number", "as in `memory`"},
    {"memory.per_stage[].peak_time_s", "number", "as in `memory`"},
    {"memory.per_stage[].verdict", "string", "that rank's verdict"},
    {"memory.timeline", "object",
     "the rank of `memory.stage` over the simulated microbatches (at most 64 per rank, 512 with drawn images or "
     "packing; the steady state repeats), each point the highest of its interval, at most 160, the last one the "
     "optimizer step's at the end of the simulated microbatches; absent when a sweep's layer extension ran"},
    {"memory.timeline.stage", "int", "its pipeline stage"},
    {"memory.timeline.t_s", "array", "each point's time"},
    {"memory.timeline.allocated_gib", "array", "allocated at each point"},
    {"memory.timeline.activations_gib", "array", "activations at each point"},
    {"memory.timeline.loss_gib", "array", "the loss working set at each point"},
    {"memory.timeline.recompute_gib", "array", "re-forwarded activations at each point"},
    {"memory.timeline.backward_gradients_gib", "array", "backward gradients at each point"},
    {"breakdown_s", "object",
     "seconds of the reported stage's step by category; they add up to the step"},
    {"breakdown_s.*", "number",
     "one category: `vision_encoder`, `projector`, `decoder_attention`, `moe_experts`, `dispatch_combine_compute`, "
     "`dense_other`, `recompute`, `optimizer`, `exposed_tp_comm`, `exposed_cp_comm`, `exposed_ep_comm`, "
     "`exposed_pp_comm`, `exposed_dp_comm`, `exposed_fsdp_comm`, `exposed_cpu_offload` (the compute stream "
     "waiting for CPU activation-offload copies), `exposed_host_launch`, `pipeline_bubble`"},
    {"collectives", "object",
     "per collective class (`tp`, `cp`, `ep`, `pp`, `dp`, `fsdp`; only classes that made an NCCL-tuned call) its "
     "costliest call alone on its links (docs/collectives.md)"},
    {"collectives.*", "object", "one class's costliest call"},
    {"collectives.*.op", "string", "the collective"},
    {"collectives.*.algorithm", "string", "`ring`, `tree`, `nvls`, `nvls_tree`, `pat`, `pairwise`"},
    {"collectives.*.protocol", "string", "`LL`, `LL128`, `Simple`"},
    {"collectives.*.ranks", "int", "ranks in the group"},
    {"collectives.*.domains", "int", "NVLink domains the group spans"},
    {"collectives.*.bytes", "number", "the nccl-tests size"},
    {"collectives.*.latency_s", "number", "its latency term"},
    {"collectives.*.bandwidth_s", "number", "its bandwidth term"},
    {"collectives.*.latency_bound", "bool", "latency ≥ bandwidth time"},
    {"collectives.longest_latency", "object", "per class, its call with the longest latency"},
    {"collectives.longest_latency.*", "object", "one class's longest-latency call"},
    {"collectives.longest_latency.*.op", "string", "as in `collectives.*`"},
    {"collectives.longest_latency.*.algorithm", "string", "as in `collectives.*`"},
    {"collectives.longest_latency.*.protocol", "string", "as in `collectives.*`"},
    {"collectives.longest_latency.*.ranks", "int", "as in `collectives.*`"},
    {"collectives.longest_latency.*.domains", "int", "as in `collectives.*`"},
    {"collectives.longest_latency.*.bytes", "number", "as in `collectives.*`"},
    {"collectives.longest_latency.*.latency_s", "number", "as in `collectives.*`"},
    {"collectives.longest_latency.*.bandwidth_s", "number", "as in `collectives.*`"},
    {"collectives.longest_latency.*.latency_bound", "bool", "as in `collectives.*`"},
    {"critical_path_s", "object", "the same categories along the step's critical path"},
    {"critical_path_s.*", "number", "one category, as in `breakdown_s`"},
    {"critical_stage", "int", "the stage the critical path ends on"},
    {"vision_tokens_per_sample", "number", "mean vision tokens per sample (0 without a vision encoder)"},
    {"calibration", "object", "the kernel tables the step used"},
    {"calibration.table", "string", "path of the table"},
    {"calibration.roofline_only", "bool", "`--roofline`: the measured tables ignored"},
    {"calibration.lookups", "int", "kernel lookups"},
    {"calibration.roofline_fallbacks", "int", "lookups answered outside the measured ranges"},
    {"framework", "object",
     "the framework-time model the step used (calibration `framework:`, docs/calibration.md \"Framework-time "
     "model\"); the text report prints the same on its `framework:` line (and a `power cap:` line under a cap)"},
    {"framework.applied", "bool", "false in roofline-only mode, where none of it applies"},
    {"framework.tensor_fraction", "number", "sustained tensor-core rate over the rate the kernel tables hold"},
    {"framework.membound_eff", "number", "achieved fraction of the HBM bandwidth in memory-bound kernels"},
    {"framework.kernel_eager_s", "number", "GPU-timeline seconds per eagerly launched kernel beyond its table time"},
    {"framework.kernel_graph_s", "number", "the same for kernels inside a captured CUDA graph"},
    {"framework.overlap_slowdown", "number", "compute slowdown while communication overlaps it"},
    {"framework.step_overhead_s", "number", "framework seconds per iteration outside the microbatch loop"},
    {"framework.host_kernel_s", "number", "host seconds per eager kernel beyond the launch call"},
    {"framework.kernel_moe_s", "number",
     "GPU seconds added to each eager kernel of an MoE block's compute ops (the ops tagged `moe`), on top of `kernel_eager_s`"},
    {"framework.host_time_scale", "number",
     "the system's host_time_scale: multiplies the table's launch call and `host_kernel_s` in the step, 1 unless "
     "the system file sets it (docs/topology.md \"Host CPU\")"},
    {"framework.power_cap_w", "number or null", "the system's power cap (null without one)"},
    {"framework.power_clock_scale", "number",
     "the (cap/TDP)^(1/3) factor already in `tensor_fraction`, 1 without a cap (docs/topology.md \"Power cap\")"},
    {"measured", "object",
     "only when the scenario has a `measured:` block, with the values it gives; the text report's `measured:` "
     "line gives each with the prediction's error, (predicted − measured) / measured"},
    {"measured.tokens_per_s_per_gpu", "number", "measured throughput"},
    {"measured.model_tflops_per_gpu", "number", "measured model TFLOP/s/GPU"},
    {"measured.step_time_s", "number", "measured step time"},
    {"measured.peak_memory_gib", "number", "measured peak memory"},
    {"measured.peak_memory_after_iteration", "int",
     "1 when the peak was logged after iteration 1 (the text report then compares it with the first iteration's)"},
    {"measured.oom", "bool", "true when the run was reported out of memory"},
    {"measured.source", "string", "where the measurement was published"},
    {"ops", "array", "the per-op table of the critical stage's rank (below), longest first"},
    {"ops[].op", "string", "op name"},
    {"ops[].direction", "string", "`fwd`, `bwd`, `recompute`, or `-` (optimizer, collectives outside a pass)"},
    {"ops[].comm", "bool",
     "a communication op: its time is the transfer's (it may overlap compute), `bytes` what this rank sends"},
    {"ops[].count", "number", "executions per step on that rank"},
    {"ops[].time_s", "number", "seconds per step"},
    {"ops[].share", "number", "that over the step time"},
    {"ops[].flop", "number", "FLOP per step"},
    {"ops[].bytes", "number", "HBM bytes (memory-bound ops) or bytes sent (communication) per step"},
    {"ops[].achieved_tflops", "number", "flop / time (ops with FLOPs)"},
    {"ops[].achieved_gbps", "number", "bytes / time (the others)"},
    {"ops[].fraction_of_peak", "number",
     "achieved over the op's peak: the dense tensor-core peak of its precision (attention: BF16), the HBM "
     "bandwidth, or the link's line rate; 0 when unknown"},
    {"simulation", "object", "the discrete-event run"},
    {"simulation.tasks", "int", "tasks simulated"},
    {"simulation.events", "int", "events processed"},
    {NULL, NULL, NULL},
};

const struct mb_report_key *mb_report_key_find(const char *path)
{
    for (const struct mb_report_key *k = mb_report_keys; k->path; k++)
        if (!strcmp(k->path, path))
            return k;
    return NULL;
}

void mb_report_keys_doc(FILE *fp)
{
    fprintf(fp, "| key | type | meaning |\n|---|---|---|\n");
    for (const struct mb_report_key *k = mb_report_keys; k->path; k++)
        fprintf(fp, "| `%s` | %s | %s |\n", k->path, k->type, k->meaning);
}
