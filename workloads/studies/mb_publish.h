/*
 * mb_publish.h -- the practitioner guide's publication check of a recipe
 * (shared/docs/seed-moe-vlm-training-guide.md, "Check performance before
 * publishing"):
 *
 *   "For BF16, aim for roughly 200 model TFLOP/s/GPU on H100 or 400 on GB200.
 *    [...] If performance is severely below the target, withhold the recipe or
 *    clearly mark it early, unoptimized in the recipe, public documentation/
 *    card, and PR. Follow the recipe publication guidance for other hardware/
 *    precisions [...]"
 *
 * The guide gives targets for BF16 on H100 and GB200 only, and gives no number
 * for "roughly" or "severely". mbsim reads them as:
 *   meets    >= MB_PUBLISH_MEETS_FRACTION (0.9) of the target ("roughly");
 *   below    between that and MB_PUBLISH_EARLY_FRACTION (0.5) of it;
 *   early    < 0.5 of the target: "severely below", to be marked "early, unoptimized";
 *   n/a      another precision or GPU (the guide points to other guidance).
 * The check applies to pretraining recipes (the guide excludes SFT/PEFT and
 * long-context SFT, which a scenario does not state) and, for VLMs, to
 * realistic multimodal input (a mock-data VLM scenario is n/a). It compares a
 * prediction; the guide asks for a measured steady state.
 */
#ifndef MB_PUBLISH_H
#define MB_PUBLISH_H

#include "mb_scenario.h"

#define MB_PUBLISH_MEETS_FRACTION 0.9 /* "roughly" the target */
#define MB_PUBLISH_EARLY_FRACTION 0.5 /* below this: "severely below" */

enum mb_publish_verdict {
    MB_PUBLISH_NA,    /* no target applies: reason says why */
    MB_PUBLISH_MEETS, /* >= 0.9 of the target */
    MB_PUBLISH_BELOW, /* 0.5 .. 0.9 of the target */
    MB_PUBLISH_EARLY  /* < 0.5: mark the recipe "early, unoptimized" (or withhold it) */
};

struct mb_publish_check {
    enum mb_publish_verdict verdict;
    double target_tflops;  /* model TFLOP/s/GPU the guide aims for (0 when n/a) */
    double fraction;       /* model TFLOP/s/GPU / target (0 when n/a) */
    char text[320];        /* one sentence for the report, e.g. "meets the guide's BF16 target ..." */
};

/**
 * @brief The guide's BF16 target for a GPU key (the system's `gpu`).
 * @return 200 for "H100", 400 for "GB200" (model TFLOP/s/GPU), 0 for any other.
 */
double mb_publish_target(const char *gpu);

/**
 * @brief Check a recipe's model TFLOP/s/GPU against the guide's target.
 * @param[in]  s       the scenario (precision, GPU, vision model and data are read)
 * @param[in]  model_tflops_per_gpu  its (predicted) model TFLOP/s/GPU
 * @param[out] out     verdict, target, fraction and the sentence
 * @return out->verdict.
 */
enum mb_publish_verdict mb_publish_check(const struct mb_scenario *s, double model_tflops_per_gpu,
                                         struct mb_publish_check *out);

/** @brief "n/a", "meets", "below", "early, unoptimized". */
const char *mb_publish_verdict_name(enum mb_publish_verdict v);

#endif /* MB_PUBLISH_H */
