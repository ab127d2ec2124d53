/*
 * mb_megatron_rules.h -- Megatron-Core's and Transformer Engine's configuration
 * checks that a layout mbsim can express is able to hit, mirrored as a table.
 *
 * Each rule is one assert / raise of Megatron-LM's TransformerConfig.__post_init__
 * (megatron/core/transformer/transformer_config.py), ModelParallelConfig
 * (megatron/core/model_parallel_config.py), validate_args
 * (megatron/training/arguments.py), or of Transformer Engine's device checks
 * (transformer_engine/pytorch/quantization.py), quoted by file and line at the
 * commits below. mb_scenario_check runs the table after its own layout checks
 * (mb_scenario.c, whose older rules cite their sources in place; docs/megatron-rules.md
 * lists both), so the loader (an error at the key's file:line:col), `sweep`
 * (an `invalid` row with the reason) and `tune` (a candidate never kept)
 * refuse what Megatron-LM would refuse at start-up.
 *
 * Scope: mbsim emits per-layer CUDA graphs as --cuda-graph-impl
 * transformer_engine and cuda_graph.modules: [full_iteration] as
 * --cuda-graph-impl full_iteration (mb_emit_megatron.c); the rules read the
 * scenario the same way.
 */
#ifndef MB_MEGATRON_RULES_H
#define MB_MEGATRON_RULES_H

#include <stddef.h>

#include "mb_scenario.h"

/* The pinned sources of every rule's line number. */
#define MB_MEGATRON_LM_COMMIT "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
#define MB_TE_COMMIT "d0067d0da6cb01811b8072a7d304f0e00344ce2b"

struct mb_megatron_rule {
    const char *id;      /* short stable name, e.g. "full_recompute_cuda_graph" */
    const char *key;     /* the scenario key an error points at, e.g. "recompute.granularity" */
    const char *source;  /* "megatron/core/transformer/transformer_config.py:2854-2858" (at the commit
                            above; Transformer Engine paths at MB_TE_COMMIT) */
    const char *text;    /* the rule in words, as Megatron states it */
    /* 1 when s breaks the rule, with what was found and expected in msg; 0 otherwise */
    int (*broken)(const struct mb_scenario *s, char *msg, size_t len);
};

/**
 * @brief The rule table.
 * @param[out] n  number of rules
 * @return a static array of *n rules.
 */
const struct mb_megatron_rule *mb_megatron_rules(size_t *n);

/**
 * @brief Check a scenario whose layout checks passed (dp resolved,
 * sequence_parallel resolved) against every rule, in table order.
 * @param[out] hit  NULL, or the first rule broken (NULL when none)
 * @param[out] msg  the first broken rule's message followed by
 *                  " (Megatron-LM SOURCE)" or " (Transformer Engine SOURCE)"
 * @return 0 when no rule is broken, 1 otherwise.
 */
int mb_megatron_rules_check(const struct mb_scenario *s, const struct mb_megatron_rule **hit, char *msg, size_t len);

/**
 * @brief Compute capability x 10 of a GPU key (system gpu:, e.g. "H100" -> 90,
 * "A100" -> 80, "L40S" -> 89, "B200" -> 100), from NVIDIA's CUDA GPU
 * compute-capability table (developer.nvidia.com/cuda-gpus).
 * @return the value, or 0 for NULL or an unknown key (no rule refuses then).
 */
int mb_megatron_gpu_cc(const char *gpu);

#endif /* MB_MEGATRON_RULES_H */
