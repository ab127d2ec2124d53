/*
 * mb_schema.c -- the defaults that changed between scenario schema versions
 * (mb_schema.h). The loader (mb_scenario.c) applies them to older files.
 */
#include "mb_schema.h"

/* Schema 2 (2026-12-07): the defaults the memory model of 2026-12-01 set without a version step.
 * - training.cross_entropy_fusion: mbsim 58594dc made TE's fused cross-entropy the default (as
 *   Megatron-Bridge's recipes set `cross_entropy_loss_fusion=True`); before it a run paid the fp32 logits
 *   of an unfused loss. Megatron-LM's own default is off (`--cross-entropy-loss-fusion` is a store_true).
 * - training.hidden_dropout: mbsim a1e0fdc counts the residual dropouts' masks only above 0 and defaults
 *   to 0 (Megatron-Bridge's model providers); before it every layer kept them, as at Megatron-LM's
 *   default of 0.1. */
static const struct mb_schema_change mb_schema__changes[] = {
    {"training.cross_entropy_fusion", 2, "false", "true",
     "schema 2 defaults to TE's fused cross-entropy (Megatron-Bridge's recipes); schema 1 meant the unfused one"},
    {"training.hidden_dropout", 2, "0.1", "0",
     "schema 2 defaults to 0 (Megatron-Bridge's model providers); schema 1 kept the residual dropout masks, "
     "as at Megatron-LM's 0.1"},
};

const struct mb_schema_change *mb_schema_changes(size_t *n)
{
    if (n)
        *n = sizeof mb_schema__changes / sizeof mb_schema__changes[0];
    return mb_schema__changes;
}
