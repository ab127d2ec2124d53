/*
 * test_publish.c -- the guide's publication check (mb_publish.h) on scenarios
 * built by hand: only the GPU, the precision and the vision/data fields are
 * read. The guide (shared/docs/seed-moe-vlm-training-guide.md, "Check
 * performance before publishing") aims BF16 recipes at about 200 model
 * TFLOP/s/GPU on H100 and 400 on GB200; mbsim reads "roughly" as >= 90 % and
 * "severely below" as < 50 %, so on H100 180 meets, 179.9 and 100 are below,
 * 99.9 is early, unoptimized; on GB200 360 meets, 199.9 is early.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mb_publish.h"

static struct mb_scenario sc; /* large: static */

static void set(const char *gpu, enum mb_prec gemm, int quantize, const char *label)
{
    memset(&sc, 0, sizeof sc);
    snprintf(sc.system.gpu, sizeof sc.system.gpu, "%s", gpu);
    sc.prec.gemm = gemm;
    sc.prec.attn = MB_PREC_BF16;
    sc.prec.quantize = quantize;
    snprintf(sc.prec.label, sizeof sc.prec.label, "%s", label);
}

static void test_targets(void **state)
{
    (void)state;
    assert_true(mb_publish_target("H100") == 200);
    assert_true(mb_publish_target("GB200") == 400);
    assert_true(mb_publish_target("H200") == 0); /* the guide names H100 and GB200 only */
    assert_true(mb_publish_target("B200") == 0);
    assert_true(mb_publish_target(NULL) == 0);
}

static void test_bf16_verdicts(void **state)
{
    (void)state;
    static const struct {
        const char *gpu;
        double tflops;
        enum mb_publish_verdict v;
        double target;
    } cases[] = {
        {"H100", 250, MB_PUBLISH_MEETS, 200},  {"H100", 180, MB_PUBLISH_MEETS, 200},
        {"H100", 179.9, MB_PUBLISH_BELOW, 200}, {"H100", 100, MB_PUBLISH_BELOW, 200},
        {"H100", 99.9, MB_PUBLISH_EARLY, 200},  {"GB200", 360, MB_PUBLISH_MEETS, 400},
        {"GB200", 300, MB_PUBLISH_BELOW, 400},  {"GB200", 199.9, MB_PUBLISH_EARLY, 400},
    };
    struct mb_publish_check pc;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set(cases[i].gpu, MB_PREC_BF16, 0, "bf16");
        assert_int_equal(mb_publish_check(&sc, cases[i].tflops, &pc), cases[i].v);
        assert_int_equal(pc.verdict, cases[i].v);
        assert_true(pc.target_tflops == cases[i].target);
        assert_true(fabs(pc.fraction - cases[i].tflops / cases[i].target) < 1e-12);
        assert_int_equal(strstr(pc.text, "early, unoptimized") != NULL, cases[i].v == MB_PUBLISH_EARLY);
    }
    set("H100", MB_PREC_BF16, 0, "bf16");
    mb_publish_check(&sc, 99.9, &pc);
    assert_string_equal(pc.text, "99.9 model TFLOP/s/GPU is severely below the guide's BF16 target for H100 (about "
                                 "200): 49 %; mark the recipe \"early, unoptimized\" or withhold it");
    mb_publish_check(&sc, 212, &pc);
    assert_string_equal(pc.text, "212.0 model TFLOP/s/GPU meets the guide's BF16 target for H100 (about 200): 106 %");
    assert_string_equal(mb_publish_verdict_name(MB_PUBLISH_EARLY), "early, unoptimized");
}

static void test_not_applicable(void **state)
{
    (void)state;
    struct mb_publish_check pc;
    set("H100", MB_PREC_FP8, 1, "fp8_cs"); /* another precision */
    assert_int_equal(mb_publish_check(&sc, 50, &pc), MB_PUBLISH_NA);
    assert_true(pc.target_tflops == 0 && pc.fraction == 0);
    assert_non_null(strstr(pc.text, "targets are for BF16 recipes (this one is fp8_cs)"));
    set("B200", MB_PREC_BF16, 0, "bf16"); /* another GPU */
    assert_int_equal(mb_publish_check(&sc, 50, &pc), MB_PUBLISH_NA);
    assert_non_null(strstr(pc.text, "B200 follows the recipe publication guidance"));
    set("GB200", MB_PREC_BF16, 0, "bf16"); /* a VLM on mock data: the guide asks for real input */
    sc.model.vision.depth = 27;
    sc.mock = 1;
    assert_int_equal(mb_publish_check(&sc, 50, &pc), MB_PUBLISH_NA);
    assert_non_null(strstr(pc.text, "realistic multimodal input"));
    sc.mock = 0; /* with real images it applies */
    assert_int_equal(mb_publish_check(&sc, 50, &pc), MB_PUBLISH_EARLY);
    sc.freeze = MB_FREEZE_LANGUAGE; /* PEFT: the guide excludes SFT/PEFT */
    sc.lora_rank = 16;
    assert_int_equal(mb_publish_check(&sc, 50, &pc), MB_PUBLISH_NA);
    assert_non_null(strstr(pc.text, "exclude SFT/PEFT; this scenario freezes the language model (LoRA)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_targets), cmocka_unit_test(test_bf16_verdicts),
                                       cmocka_unit_test(test_not_applicable)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
