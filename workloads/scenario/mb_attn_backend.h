/*
 * mb_attn_backend.h -- attention implementations other than the one the
 * calibration tables measure (cuDNN fused attention, which Transformer Engine
 * runs): FlashAttention-2, FlashAttention-3 and a Triton flash kernel, at their
 * published rates relative to cuDNN (training.attention_backend flash2,
 * flash3, triton; docs/modeling.md "Attention implementations").
 */
#ifndef MB_ATTN_BACKEND_H
#define MB_ATTN_BACKEND_H

#include "mb_scenario.h"

/**
 * @brief Whether `gpu` (a calibration GPU key: H100, H100_96GB, H200, ...) is a
 * Hopper (sm90) part, where FlashAttention-3 runs (its README: H100/H800) and
 * where the published rates below were measured.
 * @return 1 or 0 (0 for NULL).
 */
int mb_attn_backend_hopper(const char *gpu);

/**
 * @brief Time multiplier of implementation `b` over the table's cuDNN fused
 * attention for one kernel: cuDNN's rate / the implementation's rate at
 * sequence `seq`, from the FA3 paper's H100 benchmark (Shah et al., arXiv
 * 2407.08608, Fig. 5/6: BF16, head dim 128, batch x seq 16k, hidden 2048;
 * FA2, cuDNN and FA3 columns at seq 512 ... 16k, as transcribed in
 * shared/docs/reference/hardware.md B.2). Forward: the causal or the no-mask
 * panel; backward: the backward panel (one for both masks). Triton: the
 * Triton-tutorial kernel's rate over FA3's in pytorch/benchmark@ff65cb67 (H100,
 * forward; 329/430 at seq 512, 477/621 at 16k, interpolated between) times
 * FA3's ratio; its backward takes the same ratio (ASSUMPTION: no published
 * Triton backward rate). Interpolated in ln(seq), clamped to 512 ... 16k.
 * @return the multiplier (> 0); 1 for auto, flash, fused, unfused and local.
 */
double mb_attn_backend_slowdown(enum mb_attn_backend b, int causal, int bwd, double seq);

#endif /* MB_ATTN_BACKEND_H */
