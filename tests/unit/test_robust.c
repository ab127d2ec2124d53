/*
 * test_robust.c -- hostile inputs (issue 18): each class of input that once
 * crashed, hung, leaked or printed a misleading number gives exit 1 (bad
 * input; 2 for a command-line option) and a message that names the file (and
 * line:col where the input has positions) and what was expected.
 *
 * The regression inputs are under tests/data/robust/, one per class; each file
 * says in a comment what it once did. The binary comes from $MBSIM_BIN (set by
 * CTest); under the ASan/UBSan build a leak or overflow exits non-zero with a
 * sanitizer report, so the exit-code checks also catch those.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "mb_input.h"
#include "mb_step.h"
#include "mb_util.h"

#define R "tests/data/robust/"

/* Run "$MBSIM_BIN args" with stderr captured, return the exit code. */
static int run(const char *args, char **out)
{
    const char *bin = getenv("MBSIM_BIN");
    assert_non_null(bin);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 </dev/null", bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *buf;
    size_t n;
    struct mb_err e;
    mb_err_clear(&e);
    assert_int_equal(mb_input_slurp(p, "pipe", &buf, &n, &e), 0);
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct rcase {
    const char *args; /* command line after the binary */
    int rc;           /* expected exit code */
    const char *msg;  /* expected in the output: file:line:col and what was expected */
};

static void check_cases(const struct rcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *o;
        int rc = run(c[i].args, &o);
        if (rc != c[i].rc || !strstr(o, c[i].msg))
            fail_msg("mbsim %s: exit %d (expected %d), output:\n%s\nexpected to contain: %s", c[i].args, rc, c[i].rc,
                     o, c[i].msg);
        mb_free(o);
    }
}

/* Memory safety: the use-after-free, the PP > layers overflow, the two leaks. */
static void test_memory_safety(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        /* the message is the one that read freed memory: the ratio must be right */
        {"run " R "scn_calib_grouped_over.yaml", 1,
         R "calib_grouped_over.yaml:9:71: measured grouped_gemm point is 6.386 times the dense efficiency"},
        /* llama3_8b has 32 layers: 34 slots with embedding and loss (mb_scenario.c) */
        {"run " R "pp_over_layers.yaml", 1, R "pp_over_layers.yaml:10:7: pp*vpp = 64 exceeds num_layers + 2 = 34"},
        {"run " R "dropout_underflow.yaml", 1,
         R "dropout_underflow.yaml:9:19: training.hidden_dropout = 1e-400 underflows (magnitude below 2.2e-308; write 0)"},
        {"run " R "dropout_sequence.yaml", 1,
         R "dropout_sequence.yaml:9:19: training.hidden_dropout: expected a number, got a sequence"},
        {"calibrate nsys ../shared/data/formats/nsys_cuda_gpu_kern_sum.csv --gpu H100 --shapes " R
         "nsys_shapes_bad_key.yaml -o /dev/null", 1,
         R "nsys_shapes_bad_key.yaml:6:77: unknown key 'bogus' in shape; expected one of: match"},
        {"plot sweep " R "empty.tsv -o robust_empty.png", 1, R "empty.tsv: empty: expected a header row"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* `mbsim plot` readers (found by fuzz_plot): gnuplot is /bin/true here, so a
 * conversion that runs to the end says "gnuplot wrote nothing". JSON values
 * carry no line:col (jansson keeps none): the message names the value's path. */
static void test_plot_inputs(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        /* two rows of equal error without an id: the sort once compared NULL ids */
        {"plot validate " R "plot_validate_no_id.json -o robust_plot.png", 1,
         "gnuplot wrote nothing to robust_plot.png"},
        {"plot validate " R "plot_validate_measured_zero.json -o robust_plot.png", 1,
         R "plot_validate_measured_zero.json: $.rows[1].measured: expected a positive number, got 0"},
        {"plot gantt " R "plot_gantt_pid_huge.json -o robust_plot.png", 1,
         R "plot_gantt_pid_huge.json: the trace has no slices"},
    };
    setenv("MBSIM_GNUPLOT", "/bin/true", 1);
    check_cases(c, sizeof c / sizeof c[0]);
    unsetenv("MBSIM_GNUPLOT");
}

/* hwloc XML is checked before libhwloc sees it (topo_xml.c). */
static void test_hwloc_xml(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        {"collective --system " R "sys_hwloc_object_no_type.yaml --gpus 1 --op all_reduce --sizes 1M:1M", 1,
         R "hwloc_object_no_type.xml:6:6: hwloc XML: <object> without a type= attribute"},
        {"collective --system " R "sys_hwloc_entity.yaml --gpus 1 --op all_reduce --sizes 1M:1M", 1,
         R "hwloc_entity.xml:2:20: hwloc XML: DOCTYPE with an internal subset refused"},
        {"collective --system " R "sys_hwloc_entity_ref.yaml --gpus 1 --op all_reduce --sizes 1M:1M", 1,
         R "hwloc_entity_ref.xml:4:17: hwloc XML: entity reference refused (expected &lt;"},
        {"collective --system " R "sys_hwloc_malformed.yaml --gpus 1 --op all_reduce --sizes 1M:1M", 1,
         R "hwloc_malformed.xml:9:5: hwloc XML: end tag does not match the open element"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* hwloc XML content (topo_xml_v2.c): what hwloc 2.9's XML import trusts, as
 * hwloc2.dtd and lstopo 2.x's export define it. The first four crashed or
 * leaked inside hwloc 2.9 (the comment in each file says how), as did the encoding one in
 * libxml2 (found by fuzz_hwloc once the content check was in); the others load
 * into a topology hwloc never builds itself. Positions are the object's name
 * or the offending attribute. */
static void test_hwloc_content(void **state)
{
    (void)state;
#define SYS(f) "collective --system " R "sys_" f ".yaml --gpus 1 --op all_reduce --sizes 1M:1M"
    static const struct rcase c[] = {
        {SYS("hwloc_no_complete_cpuset"), 1,
         R "hwloc_no_complete_cpuset.xml:12:6: hwloc XML: normal object \"Core\" without complete_cpuset= (lstopo 2 "
           "writes cpuset, complete_cpuset, nodeset and complete_nodeset on every normal and memory object)"},
        {SYS("hwloc_fuzz_segv_bitmap_compare"), 1,
         R "hwloc_fuzz_segv_bitmap_compare.xml:35:8: hwloc XML: normal object \"L3Cache\" without complete_cpuset="},
        {SYS("hwloc_info_bad_attr"), 1,
         R "hwloc_info_bad_attr.xml:10:13: hwloc XML: unknown attribute nawe= on <info> (hwloc2.dtd allows: name "
           "value)"},
        /* columns count characters (issue 37): nawe= is character 28 of the line, byte 31 ("café ✓" before it) */
        {SYS("hwloc_info_bad_attr_utf8"), 1,
         R "hwloc_info_bad_attr_utf8.xml:10:28: hwloc XML: unknown attribute nawe= on <info>"},
        {SYS("hwloc_fuzz_leak_alloc_setup_object"), 1,
         R "hwloc_fuzz_leak_alloc_setup_object.xml:49:21: hwloc XML: unknown attribute nawe= on <info>"},
        {SYS("hwloc_child_outside_parent"), 1,
         R "hwloc_child_outside_parent.xml:8:56: hwloc XML: complete_cpuset= of \"PU\" is not inside its parent "
           "\"Machine\"'s (expected a child's sets inside its parent's)"},
        {SYS("hwloc_sibling_overlap"), 1,
         R "hwloc_sibling_overlap.xml:8:56: hwloc XML: complete_cpuset= of \"PU\" overlaps a sibling's (expected "
           "the normal children of one object to have disjoint cpusets)"},
        {SYS("hwloc_dup_gp_index"), 1,
         R "hwloc_dup_gp_index.xml:8:136: hwloc XML: gp_index=\"3\" given to a second object (first at line 7;"},
        {SYS("hwloc_bad_encoding"), 1,
         R "hwloc_bad_encoding.xml:1:31: hwloc XML: XML declaration value refused (expected version=\"1.0\", "
           "encoding=\"UTF-8\" as lstopo writes"},
        {SYS("hwloc_v1"), 1,
         R "hwloc_v1.xml:4:2: hwloc XML: version 1.x file refused (expected <topology version=\"2.x\">"},
        {"topo " R "hwloc_bad_busid.xml", 1,
         R "hwloc_bad_busid.xml:17:57: hwloc XML: pci_busid=\"zz\" (expected domain:bus:device.function in hex"},
        {"topo " R "hwloc_version_200.xml", 1,
         R "hwloc_version_200.xml:4:2: hwloc cannot load XML (topology version 200; mbsim reads version 2.x XML"},
        /* values mbsim reads (QA of issue 15): hwloc refused the matrix ones with no position and
         * read the memory and PCIe ones as wrong numbers */
        {"topo " R "hwloc_u64_negative.xml", 1,
         R "hwloc_u64_negative.xml:237:44: hwloc XML: '-' in <u64values> (expected unsigned decimal integers)"},
        {"topo " R "hwloc_u64_huge.xml", 1,
         R "hwloc_u64_huge.xml:237:70: hwloc XML: a value of more than 19 digits in <u64values> (expected at most 19"},
        {"topo " R "hwloc_u64_short.xml", 1,
         R "hwloc_u64_short.xml:234:4: hwloc XML: <distances2hetero nbobjs=\"12\"> holds 143 values (expected "
           "nbobjs^2 = 144)"},
        {"topo " R "hwloc_gpu_mem_negative.xml", 1,
         R "hwloc_gpu_mem_negative.xml:26:58: hwloc XML: CUDAGlobalMemorySize \"-5\" (expected the GPU's memory in "
           "KiB, a decimal from 1 to 2^40)"},
        {"topo " R "hwloc_gpu_mixed_models.xml", 1,
         R "hwloc_gpu_mixed_models.xml: GPUs of two models in one node ('NVIDIA A100-SXM4-80GB' and 'NVIDIA H100 80GB "
           "HBM3'): mbsim simulates one GPU type per node"},
        /* hwloc sets bit os_index of a bitmap (a missing one is 2^32-1): 512 MiB from a tiny file
         * (found by fuzz_hwloc, fifth pass) */
        {"topo " R "hwloc_numa_no_os_index.xml", 1,
         R "hwloc_numa_no_os_index.xml:6:6: hwloc XML: NUMANode object without os_index= (lstopo writes it on every "
           "PU and NUMANode)"},
        {"topo " R "hwloc_pu_os_index_huge.xml", 1,
         R "hwloc_pu_os_index_huge.xml:7:23: hwloc XML: os_index=\"4000000000\" (expected a decimal below 16384"},
        {"topo " R "hwloc_pci_speed_nan.xml", 1,
         R "hwloc_pci_speed_nan.xml:16:182: hwloc XML: pci_link_speed=\"nan\" (expected GB/s from 0 to 1000"},
    };
#undef SYS
    check_cases(c, sizeof c / sizeof c[0]);
}

/* Numbers that wrap or overflow: range checks before every cast. */
static void test_numbers(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        {"calibrate nccl-tests " R "nccl_wrong_1e99.txt --gpu H100 -o /dev/null", 1,
         R "nccl_wrong_1e99.txt:26:44: #wrong (field 9): '1e99' is not a non-negative count or N/A"},
        {"calibrate nsys " R "nsys_instances_1e30.csv --gpu H100 -o /dev/null", 1,
         R "nsys_instances_1e30.csv:2:1: column 'Instances': '1e30' is not an integer in [0, 1e15]"},
        {"calibrate kineto " R "kineto_group_1e12.json --gpu H100 -o /dev/null", 1,
         R "kineto_group_1e12.json: $.traceEvents[17].args.Group size: 1000000000000 is not in [1, 16777216]"},
        {"calibrate kineto " R "kineto_negative_bytes.json --gpu H100 -o /dev/null", 1,
         R "kineto_negative_bytes.json: $.traceEvents[17].args: message element counts -4096"},
        /* 1001 x 1001 > MB_SWEEP_MAX_CONFIGS = 10^6 (mb_sweep.h) */
        {"sweep " R "sweep_grid_too_large.yaml", 1,
         R "sweep_grid_too_large.yaml:14:27: sweep key 'data.global_batch_size' with 1001 values makes the grid "
           "larger than 1000000 configurations"},
        {"sweep scenarios/gb200_ep32.yaml --set tp=1,2,3,4,5,6,7,8,9,10 --set pp=1,2,3,4,5,6,7,8,9,10 --set "
         "cp=1,2,3,4,5,6,7,8,9,10 --set ep=1,2,3,4,5,6,7,8,9,10 --set etp=1,2,3,4,5,6,7,8,9,10 --set "
         "mbs=1,2,3,4,5,6,7,8,9,10 --set vpp=1,2", 2,
         "sweep key 'parallel.vpp' with 2 values makes the grid larger than 1000000 configurations"},
        /* 1e308 PFLOP/s = 1e323 FLOP/s overflows a double */
        {"validate " R "measured_inf.yaml", 1,
         R "measured_inf.yaml:33:25: measured.model_tflops_per_gpu: '1e308 PFLOP/s' is out of range (not a finite "
           "number in base units)"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* Physically impossible values (issue 37, "Impossible values accepted"): measured throughput above what
 * the GPUs can compute, SM counts above the GPU's, text longer than its sequence. Errors at the value.
 *
 * The numbers, by hand: Llama3-8B (workloads/models/llama3_8b.yaml: h 4096, 32 layers, 32 heads of 128,
 * 8 KV heads, SwiGLU FFN 14336, vocab 128256) takes per token, forward + backward = 3 x 2 FLOPs per
 * weight (Megatron's count, attention scores left out):
 *   attention  6 x (4096 x (4096 + 2 x 1024) + 4096 x 4096) = 251.66 M per layer
 *   MLP        6 x 3 x 4096 x 14336                          = 1056.96 M per layer
 *   logits     6 x 4096 x 128256                             = 3.152 G
 * 32 x (251.66 + 1056.96) M + 3.152 G = 45.03 GFLOP per token. An H100's dense BF16 peak is 989 TFLOP/s
 * (the datasheet's; calibration/tables/H100.yaml) and it has 132 SMs. So at most
 * 989e12 / 45.03e9 = 21,963 tokens/s per GPU:
 *   92,000 tokens/s (8 GPUs' total)   = 4,143 TFLOP/s = 4.19x the peak;
 *   4,000 TFLOP/s per GPU              = 4.04x the peak;
 *   a step of 128 x 8192 tokens on 8 GPUs takes at least 128 x 8192 x 45.03e9 / (8 x 989e12) = 5.968 s. */
static void test_plausibility(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        /* the CSV: row 2, at the cell (tokens_per_s_per_gpu starts at column 62 of the row) */
        {"validate " R "measured_tokens_node_total.csv", 1,
         R "measured_tokens_node_total.csv:2:62: column 'tokens_per_s_per_gpu': 92000 tokens/s per GPU is more "
           "than one H100 can compute: a token takes at least 45.03 GFLOP"},
        {"validate " R "measured_tokens_node_total.csv", 1, "so 4143 TFLOP/s, 4.19x the dense BF16 peak of 989"},
        {"calibrate runs " R "measured_tokens_node_total.csv --gpu H100 -o /dev/null", 1,
         R "measured_tokens_node_total.csv:2:62: column 'tokens_per_s_per_gpu': 92000 tokens/s per GPU"},
        {"validate " R "measured_tflops_over_peak.csv", 1,
         R "measured_tflops_over_peak.csv:2:64: column 'model_tflops_per_gpu': 4000 TFLOP/s per GPU is 4.04x the "
           "dense BF16 peak of one H100, 989 TFLOP/s"},
        {"validate " R "measured_step_too_fast.csv", 1,
         R "measured_step_too_fast.csv:2:61: column 'step_time_s': a step of 0.05 s is faster than its FLOPs "
           "allow: 128 x 8192 tokens, each taking at least 45.03 GFLOP"},
        {"validate " R "measured_step_too_fast.csv", 1, "need at least 5.968 s on 8 H100 GPUs"},
        /* a measured: block: at the key's value (line 17, column 25) */
        {"validate " R "measured_tokens_over_peak.yaml", 1,
         R "measured_tokens_over_peak.yaml:17:25: measured.tokens_per_s_per_gpu: 92000 tokens/s per GPU is more "
           "than one H100 can compute"},
        /* SM counts: the scenario key, the CSV's dispatcher column, the notes */
        {"run " R "dispatcher_sms_over.yaml", 1,
         R "dispatcher_sms_over.yaml:19:19: moe.dispatcher_sms = 200 is more than the 132 SMs of one H100"},
        {"validate " R "csv_dispatcher_sms_over.csv", 1,
         R "csv_dispatcher_sms_over.csv:2:179: column 'dispatcher': moe.dispatcher_sms = 200 is more than the 132 "
           "SMs of one H100"},
        {"validate " R "csv_notes_sms_over.csv", 1,
         R "csv_notes_sms_over.csv:2:70: column 'notes': moe.dispatcher_sms = 160 is more than the 132 SMs"},
        /* text_tokens [64, 5000] with seq_length 4096: at the key's value */
        {"run " R "text_tokens_over_seq.yaml", 1,
         R "text_tokens_over_seq.yaml:14:16: data.text_tokens: a sample of up to 5000 text tokens does not fit in "
           "seq_length = 4096"},
        /* the same rules on a sweep's configurations: the sweep still runs, the configuration is invalid
         * (GB200: 148 SMs) */
        {"sweep scenarios/gb200_ep32.yaml --set moe.dispatcher_sms=100,200", 0,
         "moe.dispatcher_sms = 200 is more than the 148 SMs of one GB200"},
        {"sweep scenarios/gb200_ep32.yaml --set data.text_tokens=4000,5000", 0,
         "data.text_tokens: a sample of up to 5000 text tokens does not fit in seq_length = 4096"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* Results a report would print are checked (mb_result_check): a NaN or an MFU
 * above 100 % is an internal error naming the scenario. */
static void test_implausible_result(void **state)
{
    (void)state;
    struct mb_scenario s;
    struct mb_result r;
    struct mb_err e;
    memset(&s, 0, sizeof s);
    memset(&r, 0, sizeof r);
    snprintf(s.name, sizeof s.name, "fixture");
    snprintf(s.file, sizeof s.file, "fixture.yaml");
    r.step_time_s = 1.0, r.tokens_per_s_per_gpu = 1000, r.model_tflops_per_gpu = 500, r.mfu = 0.5;
    r.mem.peak_allocated = 1e9;
    mb_err_clear(&e);
    assert_int_equal(mb_result_check(&s, &r, &e), 0);
    r.mfu = 1.2;
    assert_int_equal(mb_result_check(&s, &r, &e), -1);
    assert_string_equal(e.file, "fixture.yaml");
    assert_non_null(strstr(e.msg, "internal error: scenario 'fixture'"));
    assert_non_null(strstr(e.msg, "gives MFU = 1.2, which is impossible"));
    r.mfu = 0.5;
    r.step_time_s = NAN;
    mb_err_clear(&e);
    assert_int_equal(mb_result_check(&s, &r, &e), -1);
    assert_non_null(strstr(e.msg, "gives step time (s) = nan"));
    /* finite but past the bound: the input's size, said so, not an internal error */
    r.step_time_s = 3e12;
    mb_err_clear(&e);
    assert_int_equal(mb_result_check(&s, &r, &e), -1);
    assert_null(strstr(e.msg, "internal error"));
    assert_non_null(strstr(e.msg, "gives step time (s) = 3e+12, past what mbsim predicts (1e12 s"));
    assert_non_null(strstr(e.msg, "check the model's sizes"));
}

/* Unbounded work: nesting depth while parsing, collective ranks and sizes. */
static void test_work_limits(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        /* MB_YAML_MAX_DEPTH = 64 (mb_yaml.c): the 65th '{' is at column 273 of line 3 */
        {"run " R "yaml_deep.yaml", 1, R "yaml_deep.yaml:3:273: document nested deeper than 64 levels"},
        {"collective --system gb200_nvl72 --gpus 131072 --op all_reduce", 2,
         "--gpus 131072: at most 4096 ranks for all_reduce"},
        {"collective --system gb200_nvl72 --gpus 4096 --op alltoall", 2, "--gpus 4096: at most 1024 ranks for alltoall"},
        {"collective --system dgx_h100 --gpus 8 --op all_reduce --sizes 1:1G --factor 1.001", 2,
         "--sizes 1:1G with --factor 1.001 gives more than 1000 sizes"},
        /* a sweep's earlier TSV (--resume, merge) is read as any input is: /dev/zero read until memory ran
         * out, a directory read as an empty file (every configuration re-run; QA of issue 17) */
        {"sweep tests/data/sweep/small.yaml --resume /dev/zero", 1,
         "/dev/zero: is not a regular file (a FIFO, socket or device?), expected a sweep TSV"},
        {"merge tests/data/sweep/small.yaml tests/data/sweep", 1,
         "tests/data/sweep: is a directory, expected a sweep TSV (mbsim sweep --tsv)"},
        /* a layout count of 0 (or below) in the measured CSV: an error at its cell, not a skipped row
         * (a CI gate over a CSV of skipped rows passed; QA of issue 17) */
        {"validate tests/data/validate/bad_seq_zero.csv", 1,
         "tests/data/validate/bad_seq_zero.csv:2:34: column 'seq_len': expected a positive integer, got '0'"},
        /* a device named as a system file: what it is, not "not found" */
        {"topo /dev/zero", 1,
         "/dev/zero: is not a regular file (a FIFO, socket or device?), expected a system YAML file"},
        /* 1e20 bytes is beyond uint64 and any GPU: refused, not printed as a 73 EB row */
        {"collective --system dgx_h100 --gpus 8 --op all_reduce --sizes 8:99999999999999999999", 2,
         "(suffix K, M, G, T; at most 1 PiB)"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
}

/* `mbsim import megatron|bridge` (issue 37): line ends that hung the reader, sizes whose products
 * wrapped, settings read silently wrong, and what Megatron refuses. Positions by hand from the files
 * (1-based; a CR-only file's lines are counted at each CR). */
static void test_import_megatron(void **state)
{
    (void)state;
#define IMP(f, gpus) "import megatron " R f " --system dgx_h100 --model llama3_8b" gpus
#define BRI(f) "import bridge " R f " --system dgx_h100 --model llama3_8b --gpus 8"
    static const struct rcase c[] = {
        /* hangs: CR-only lines (the bad value on the 4th line proves the CRs end lines), a last bare CR */
        {IMP("import_cr_only.sh", " --gpus 8"), 1,
         R "import_cr_only.sh:4:1: --tensor-model-parallel-size: parallel.tp: expected an integer, got 'two'"},
        {IMP("import_cr_last_line.sh", " --gpus 8"), 0, "  tp: 2\n  pp: 2\n"},
        /* silently wrong: a byte order mark kept TP at 1; one dash dropped the flag and its value */
        {IMP("import_bom.sh", " --gpus 8"), 0, "  tp: 4\n"},
        {IMP("import_single_dash.sh", " --gpus 8"), 1,
         R "import_single_dash.sh:5:5: -tensor-model-parallel-size: a single-dash option is no Megatron-LM argument "
           "(argparse with allow_abbrev=False exits with \"unrecognized arguments\"); expected "
           "--tensor-model-parallel-size"},
        /* found by fuzz_import_megatron: an escaped blank after the backend made it a list of two, read
         * as no backend (deepep); argparse refuses the second word */
        {"import megatron " R "import_escaped_blank.sh --system dgx_h100 --gpus 8", 1,
         R "import_escaped_blank.sh:6:5: --moe-flex-dispatcher-backend: 2 values ('hybridep', ''): it takes one "
           "(argparse exits on the others: \"unrecognized arguments\")"},
        /* refused together by Megatron-LM's validate_args: an error at the second, naming the first */
        {IMP("import_vpp_two_spellings.sh", " --gpus 8"), 1,
         R "import_vpp_two_spellings.sh:4:1: --num-layers-per-virtual-pipeline-stage: refused beside "
           "--num-virtual-stages-per-pipeline-rank (3:34)"},
        {IMP("import_bf16_fp16.sh", " --gpus 8"), 1,
         R "import_bf16_fp16.sh:2:84: --fp16: refused beside --bf16 (2:77): validate_args asserts that not both are on"},
        /* 64-bit products, refused beyond the limit before they wrap: 2^32 x 2^32 = 2^64, 2^62 x 4 */
        {IMP("import_overflow_nnodes.sh", ""), 1,
         R "import_overflow_nnodes.sh:3:30: --nproc-per-node: GPUs: --nnodes x --nproc-per-node = 4294967296 x "
           "4294967296 is more than 1000000"},
        {IMP("import_overflow_vpp.sh", " --gpus 8"), 1,
         R "import_overflow_vpp.sh:3:34: --num-layers-per-virtual-pipeline-stage: layers per virtual stage x pp (at "
           "most the model's layers) = 4611686018427387904 x 4 is more than 32"},
        {IMP("import_overflow_dp.sh", ""), 1,
         R "import_overflow_dp.sh:3:1: --data-parallel-size: GPUs: data_parallel_size x TP = 4611686018427387904 x 4 "
           "is more than 1000000"},
        /* Bridge: null kept (FP8 off, not the preset's), refused where Megatron-Core has no None */
        {BRI("bridge_null_fp8.txt"), 0, "precision: bf16\n"},
        {BRI("bridge_null_tp.txt"), 1,
         R "bridge_null_tp.txt:4:1: model.tensor_model_parallel_size: null: Megatron-Core has no None for parallel.tp"},
        {BRI("bridge_peft_dim0.txt"), 1,
         R "bridge_peft_dim0.txt:3:1: peft.dim: 0: a LoRA of rank 0 on the frozen base trains nothing"},
        {BRI("bridge_seq_conflict.txt"), 1,
         R "bridge_seq_conflict.txt:4:1: dataset.sequence_length: 4096, but model.seq_length (3:1) is 8192: one "
           "setting given two values (Megatron-Bridge requires the model's and the dataset's sequence lengths to "
           "match)"},
        /* sections Bridge does not apply: noted at the override (the + is col 1), and not read (TP stays 1) */
        {BRI("bridge_ignored_sections.txt"), 0,
         R "bridge_ignored_sections.txt:5:1: train.tensor_model_parallel_size: not imported: Megatron-Bridge does not "
           "read tensor_model_parallel_size from train."},
        {BRI("bridge_ignored_sections.txt"), 0,
         R "bridge_ignored_sections.txt:5:37: ddp.grad_reduce_in_fp32: not imported: Megatron-Bridge's mixed-precision "
           "setup (MixedPrecisionConfig.setup) writes mixed_precision.grad_reduce_in_fp32 over it"},
        {BRI("bridge_ignored_sections.txt"), 0, "  tp: 1\n"},
    };
#undef IMP
#undef BRI
    check_cases(c, sizeof c / sizeof c[0]);
}

/* `mbsim import hf` (issue 37): what transformers' class for the model_type does, not a guess shared by
 * all types; configs that cannot be built are errors at the offending value. Positions by hand. */
static void test_import_hf(void **state)
{
    (void)state;
#define HF(f) "import hf " R f " -o robust_hf.yaml"
    static const struct rcase c[] = {
        /* LlamaConfig has no sliding window: listed as unused, not a window on every layer */
        {HF("hf_llama_sliding_window.json"), 0,
         R "hf_llama_sliding_window.json:10: sliding_window = 4096: unused: model_type llama has no sliding window in "
           "transformers"},
        /* Qwen3Config: head_dim 128 when absent (not 2048 / 32 = 64); checked in the written file below */
        {HF("hf_qwen3_no_head_dim.json"), 0, "wrote robust_hf.yaml"},
        /* [8, 16, 27] on a 27-block encoder: the third element, line 12 col 41 */
        {HF("hf_vl_deepstack_beyond.json"), 1,
         R "hf_vl_deepstack_beyond.json:12:41: \"deepstack_visual_indexes\"[2] = 27: the encoder has blocks 0 to 26 "
           "(depth 27)"},
        {HF("hf_vl_moe_dense_text.json"), 1,
         R "hf_vl_moe_dense_text.json:5:5: text_config model_type 'qwen3_vl_text' under a qwen3_vl_moe config: "
           "transformers builds the text model as qwen3_vl_moe_text"},
        {HF("hf_bom.json"), 1, R "hf_bom.json:1:1: a UTF-8 byte order mark: transformers refuses it"},
        {HF("hf_cr_only.json"), 1, R "hf_cr_only.json:4:3: \"num_hidden_layers\": expected an integer >= 1"},
    };
#undef HF
    check_cases(c, sizeof c / sizeof c[0]);
    char *o;
    assert_int_equal(run("import hf " R "hf_qwen3_no_head_dim.json", &o), 0);
    assert_non_null(strstr(o, "head_dim: 128\n"));
    assert_non_null(strstr(o, "num_kv_heads: 32\n"));
    mb_free(o);
    remove("robust_hf.yaml");
}

/* Raw bytes of the input in messages (issue 37): control characters and bytes that are not UTF-8 were
 * pasted into stderr (ESC [2J clears a terminal). Errors (mb_err_set) and import notes now quote them as
 * \xNN (mb_text.h); valid UTF-8 ("café", C3 A9) stays. The whole output is checked: no byte below 0x20
 * but the newline, none of 0x7F, and no byte above 0x7F outside a "é". */
static void assert_printable(const char *o)
{
    for (const unsigned char *p = (const unsigned char *)o; *p; p++) {
        if (p[0] == 0xC3 && p[1] == 0xA9) {
            p++;
            continue;
        }
        if ((*p < 0x20 && *p != '\n') || *p >= 0x7F)
            fail_msg("byte 0x%02X at offset %ld of:\n%s", *p, (long)((const char *)p - o), o);
    }
}

static void test_raw_bytes(void **state)
{
    (void)state;
    static const struct rcase c[] = {
        /* model: "caf\u00e9\e[2J\x9b" (YAML escapes): ESC and the C1 CSI U+009B (C2 9B) */
        {"run " R "raw_bytes_value.yaml", 1,
         R "raw_bytes_value.yaml:6:8: unknown model 'caf\xC3\xA9\\x1B[2J\\xC2\\x9B'; known:"},
        /* a flag name with the byte 0x80 (not UTF-8), at line 5 column 60 (characters: the é before it is one) */
        {"import megatron " R "import_raw_bytes.sh --system dgx_h100 --model llama3_8b --gpus 8", 0,
         R "import_raw_bytes.sh:5:60: --no-such-fl\\x80g: not imported"},
        /* a command's own message echoing an argument (main.c escapes the whole of stderr) */
        {"sweep " R "raw_bytes_value.yaml --top \"$(printf 'a\\033[2J\\200b')\"", 2,
         "--top expects a count from 0 to 1000000, got 'a\\x1B[2J\\x80b'"},
        {"\"$(printf 'cmd\\033\\r')\"", 2, "mbsim: unknown command 'cmd\\x1B\\x0D'"},
    };
    check_cases(c, sizeof c / sizeof c[0]);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *o;
        run(c[i].args, &o);
        assert_printable(o);
        mb_free(o);
    }
}

/* Non-regular files and the size limit, for each kind of reader (mb_input.c). */
static void test_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/mbsim-robust-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[128], big[128], args[1024];
    snprintf(fifo, sizeof fifo, "%s/fifo.yaml", dir);
    snprintf(big, sizeof big, "%s/big.csv", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    FILE *f = fopen(big, "w"); /* sparse: no disk is used */
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)MB_INPUT_MAX_BYTES + 1), 0);
    fclose(f);
    static const char *const dev[] = {"run", "validate", "calibrate nccl-tests", "calibrate nsys", "calibrate kineto",
                                      "calibrate runs", "plot validate", "sweep", "tune"};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        snprintf(args, sizeof args, "%s /dev/zero --gpu H100 -o /dev/null", dev[i]);
        if (!strncmp(dev[i], "plot", 4) || !strcmp(dev[i], "run") || !strcmp(dev[i], "sweep") ||
            !strcmp(dev[i], "tune") || !strcmp(dev[i], "validate"))
            snprintf(args, sizeof args, "%s /dev/zero", dev[i]);
        struct rcase c = {args, 1, "/dev/zero: is not a regular file (a FIFO, socket or device?), expected"};
        check_cases(&c, 1);
    }
    snprintf(args, sizeof args, "run %s", fifo);
    struct rcase c1 = {args, 1, "fifo.yaml: is not a regular file (a FIFO, socket or device?), expected a YAML file"};
    check_cases(&c1, 1);
    snprintf(args, sizeof args, "validate %s", big);
    struct rcase c2 = {args, 1, "big.csv: 1073741825 bytes, larger than the 1073741824 bytes mbsim reads as a CSV"};
    check_cases(&c2, 1);
    struct rcase c3 = {"calibrate nccl-tests tests/data --gpu H100 -o /dev/null", 1,
                       "tests/data: is a directory, expected an nccl-tests log file"};
    check_cases(&c3, 1);
    unlink(fifo);
    unlink(big);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_safety), cmocka_unit_test(test_hwloc_xml),
        cmocka_unit_test(test_hwloc_content), cmocka_unit_test(test_plot_inputs),
        cmocka_unit_test(test_numbers),       cmocka_unit_test(test_implausible_result),
        cmocka_unit_test(test_work_limits),   cmocka_unit_test(test_files),
        cmocka_unit_test(test_plausibility),
        cmocka_unit_test(test_import_megatron), cmocka_unit_test(test_import_hf), cmocka_unit_test(test_raw_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
