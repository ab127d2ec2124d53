/*
 * mb_publish.c -- the guide's publication check (mb_publish.h).
 */
#include "mb_publish.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double mb_publish_target(const char *gpu)
{
    if (!gpu)
        return 0;
    if (!strcmp(gpu, "H100"))
        return 200;
    if (!strcmp(gpu, "GB200"))
        return 400;
    return 0;
}

const char *mb_publish_verdict_name(enum mb_publish_verdict v)
{
    static const char *const n[] = {"n/a", "meets", "below", "early, unoptimized"};
    return (unsigned)v < sizeof n / sizeof n[0] ? n[v] : "n/a";
}

enum mb_publish_verdict mb_publish_check(const struct mb_scenario *s, double model_tflops_per_gpu,
                                         struct mb_publish_check *out)
{
    memset(out, 0, sizeof *out);
    const char *gpu = s->system.gpu;
    int bf16 = s->prec.gemm == MB_PREC_BF16 && !s->prec.quantize;
    double target = mb_publish_target(gpu);
    if (!bf16) {
        snprintf(out->text, sizeof out->text,
                 "n/a: the guide's targets are for BF16 recipes (this one is %s); other precisions follow the "
                 "recipe publication guidance", s->prec.label[0] ? s->prec.label : "not BF16");
        return out->verdict = MB_PUBLISH_NA;
    }
    if (target <= 0) {
        snprintf(out->text, sizeof out->text,
                 "n/a: the guide gives BF16 targets for H100 (about 200 model TFLOP/s/GPU) and GB200 (400) only; "
                 "%s follows the recipe publication guidance", gpu[0] ? gpu : "this GPU");
        return out->verdict = MB_PUBLISH_NA;
    }
    if (s->freeze & MB_FREEZE_LANGUAGE) {
        snprintf(out->text, sizeof out->text,
                 "n/a: the guide's targets are for pretraining recipes and exclude SFT/PEFT; this scenario "
                 "freezes the language model%s", s->lora_rank > 0 ? " (LoRA)" : "");
        return out->verdict = MB_PUBLISH_NA;
    }
    if (s->model.vision.depth > 0 && s->mock) {
        snprintf(out->text, sizeof out->text,
                 "n/a: the guide checks VLM recipes on realistic multimodal input; this scenario uses mock data");
        return out->verdict = MB_PUBLISH_NA;
    }
    out->target_tflops = target;
    out->fraction = model_tflops_per_gpu / target;
    const char *how;
    if (out->fraction >= MB_PUBLISH_MEETS_FRACTION) {
        out->verdict = MB_PUBLISH_MEETS;
        how = "meets";
    } else if (out->fraction >= MB_PUBLISH_EARLY_FRACTION) {
        out->verdict = MB_PUBLISH_BELOW;
        how = "is below";
    } else {
        out->verdict = MB_PUBLISH_EARLY;
        how = "is severely below";
    }
    snprintf(out->text, sizeof out->text, "%.1f model TFLOP/s/GPU %s the guide's BF16 target for %s (about %.0f): "
             "%.0f %%%s", model_tflops_per_gpu, how, gpu, target, floor(100 * out->fraction + 1e-9), /* 49.95 %: 49 */
             out->verdict == MB_PUBLISH_EARLY ? "; mark the recipe \"early, unoptimized\" or withhold it" : "");
    return out->verdict;
}
