/*
 * mb_hf.h -- a model file (docs/models.md) from a Hugging Face `config.json`
 * (`mbsim import hf`, docs/import.md).
 *
 * Reads the transformers configuration of dense Llama / Mistral / Qwen2 /
 * Qwen3 models (GQA, sliding window), MoE Qwen2-MoE / Qwen3-MoE / Mixtral /
 * DeepSeek-V3 (MLA, shared experts, leading dense layers, group-limited
 * routing, MTP) and Qwen3-VL (`text_config` + `vision_config`), and writes
 * the model YAML. Every key of the config is accounted for: used, known and
 * not modelled (RoPE, token ids, numerics: listed with the reason), or unknown
 * (listed); nothing is dropped silently. An architecture mbsim cannot express
 * (a sliding window on only some layers, MoE on every other layer, ...) is an
 * error, not an approximation.
 */
#ifndef MB_HF_H
#define MB_HF_H

#include <stdio.h>

#include "mb_util.h"

/**
 * @brief Import a Hugging Face config.json as a model file.
 * @param[in]  path   the config.json
 * @param[in]  name   the model's `name:` (< 64 characters)
 * @param[out] out    the model YAML is written here (only when the import
 *                    succeeds; it is checked to load with mb_model_from_node)
 * @param[out] notes  one line per key not used: "FILE:LINE: key = value: why",
 *                    and one per key given twice in one object (the last value
 *                    is read, as Python's json.load does): "FILE:LINE:COL: key:
 *                    given again: the value V of L:C is replaced by W (...)"
 *                    (NULL: not reported)
 * @return 0, or -1 with "file:line:col: what was expected" in err (invalid
 *         JSON, a missing or mistyped key, an unsupported model_type or
 *         architecture).
 */
int mb_hf_import(const char *path, const char *name, FILE *out, FILE *notes, struct mb_err *err);

#endif /* MB_HF_H */
