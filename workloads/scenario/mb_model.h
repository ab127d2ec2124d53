/*
 * mb_model.h -- model architecture descriptions (workloads/models/KEY.yaml),
 * parameter counts and Megatron model-FLOPs.
 *
 * A model is expanded into a per-layer list: each layer has a token mixer
 * (attention variants, Mamba-2, Gated DeltaNet, or none) and an FFN (dense
 * MLP, MoE, or none). Hybrid patterns such as Nemotron-H's
 * "MEMEM*E..." become one mixer-only or FFN-only layer per character.
 *
 * FLOPs follow Megatron-LM training.py num_floating_point_operations and the
 * Megatron-Bridge ViT term (shared/docs/reference/hardware.md section D.1).
 */
#ifndef MB_MODEL_H
#define MB_MODEL_H

#include <stddef.h>
#include "mb_util.h"

struct mb_node; /* mb_yaml.h */

enum mb_mixer {
    MB_MIX_NONE,
    MB_MIX_ATTN,      /* MHA/GQA softmax attention, full causal */
    MB_MIX_ATTN_SWA,  /* sliding-window attention (window = swa_window) */
    MB_MIX_MLA,       /* DeepSeek multi-head latent attention */
    MB_MIX_GDN,       /* Gated DeltaNet linear attention */
    MB_MIX_MAMBA      /* Mamba-2 mixer */
};

enum mb_ffn { MB_FFN_NONE, MB_FFN_DENSE, MB_FFN_MOE };

enum mb_act { MB_ACT_SWIGLU, MB_ACT_GELU, MB_ACT_SQRELU, MB_ACT_GEGLU };

/* Megatron-Core's position_embedding_type (TransformerConfig / GPTModel):
 * rope (also yarn and mrope: the same fused rotary kernel on q and k in every
 * attention layer), learned_absolute (GPT-2/3-style table added to the word
 * embedding, no rotary kernel) or none. */
enum mb_pos { MB_POS_ROPE, MB_POS_LEARNED, MB_POS_NONE };

struct mb_layer {
    enum mb_mixer mixer;
    enum mb_ffn ffn;
};

struct mb_vision {
    int depth;            /* ViT layers; 0 = no vision encoder */
    int hidden;           /* h_v */
    int heads;
    int mlp;              /* f_v, intermediate size */
    int patch;            /* spatial patch size, pixels */
    int temporal_patch;   /* frames per temporal patch (images are repeated to this) */
    int spatial_merge;    /* S: merge S x S patches into one LLM token */
    int deepstack;        /* number of DeepStack taps (n_ds) */
    int out_hidden;       /* projector output = LLM hidden */
    int in_channels;      /* 3 */
};

struct mb_model {
    char name[64];
    int num_layers;           /* decoder layers as in the model card (pattern chars for hybrids) */
    int hidden;               /* h */
    int ffn_hidden;           /* dense FFN per-branch intermediate size f */
    int num_heads;            /* n */
    int num_kv_heads;         /* g (query groups) */
    int head_dim;             /* d (kv_channels) */
    long vocab;               /* V (padded as trained) */
    int tied_embeddings;
    enum mb_act act;          /* gated if SWIGLU/GEGLU: gamma = 3, else 2 */
    int rmsnorm;              /* 1 RMSNorm, 0 LayerNorm */
    int qk_norm;
    int qkv_bias;
    enum mb_pos pos;          /* position_embedding_type (default rope) */
    int attn_output_gate;     /* gated attention (Qwen3-Next/3.5) */
    /* MoE */
    int num_experts;          /* E, 0 = dense model */
    int topk;                 /* k */
    int moe_ffn_hidden;       /* f_e */
    int shared_ffn_hidden;    /* f_sh, total over shared experts, 0 = none */
    int first_dense;          /* leading dense layers (DeepSeek: 3) */
    int moe_latent;           /* latent MoE size l, 0 = none */
    int router_groups;        /* group-limited routing: expert groups (Megatron --moe-router-num-groups), 1 = none */
    int router_group_topk;    /* groups a token may route to (--moe-router-group-topk) */
    int mtp_layers;           /* m */
    /* MLA */
    int q_lora_rank;          /* 0 = no q LoRA */
    int kv_lora_rank;
    int qk_head_dim;          /* d_qk (nope part) */
    int qk_rope_head_dim;     /* d_r */
    int v_head_dim;           /* d_v */
    /* sliding window */
    int swa_window;           /* tokens, 0 = none */
    int swa_full_every;       /* every Nth layer is full attention (gpt-oss: 2) */
    /* Gated DeltaNet */
    int full_attn_every;      /* hybrid GDN models: every Nth layer is full attention */
    int gdn_k_heads, gdn_v_heads, gdn_k_dim, gdn_v_dim, gdn_conv;
    /* Mamba-2 */
    int mamba_heads, mamba_head_dim, mamba_state, mamba_groups;
    char pattern[256];        /* hybrid pattern (M, E, *, -) or "" */
    /* vision */
    struct mb_vision vision;
    char source[MB_SOURCE_LEN];

    /* expanded */
    int n_layers;             /* entries in layer[] */
    struct mb_layer *layer;   /* owned */
};

/**
 * @brief Load a model by name (workloads/models/NAME.yaml under the data dir) or path.
 * @param[out] err  "unknown model 'x'; known: ..." or file:line:col schema errors
 * @return 0 or -1. Free with mb_model_free.
 */
int mb_model_load(const char *name_or_path, struct mb_model *out, struct mb_err *err);

/** @brief Build a model from a MAP node with the same keys as a model file. */
int mb_model_from_node(const struct mb_node *map, struct mb_model *out, struct mb_err *err);

void mb_model_free(struct mb_model *m);

/** @brief Comma-separated list of shipped model names. */
void mb_model_list(char *buf, size_t len);

/** Parameter counts (elements, not bytes). */
struct mb_params {
    double embedding;      /* input embedding V*h */
    double output;         /* output layer V*h (0 if tied) */
    double attn;           /* all mixers, all layers */
    double dense_mlp;      /* dense FFN layers */
    double experts;        /* routed experts, all layers */
    double shared;         /* shared experts */
    double router;         /* h*E per MoE layer */
    double norms;
    double mtp;            /* MTP block(s) */
    double vision;         /* ViT + merger/projector */
    double total;
    double active;         /* per token: total - experts + experts*k/E */
};

void mb_model_params(const struct mb_model *m, struct mb_params *out);

/**
 * @brief Megatron model FLOPs of the language model for one global batch.
 * @param tokens      T = sum of real sequence lengths in the batch
 * @param seq_sq_sum  Q = sum of squared sequence lengths (B*s^2 for fixed s)
 * @return FLOP (forward + backward, recompute not counted).
 */
double mb_model_flops(const struct mb_model *m, double tokens, double seq_sq_sum);

/**
 * @brief Megatron-Bridge ViT model FLOPs for a batch of images.
 * @param patches_sum     sum over attention sequences of p (patches)
 * @param patches_sq_sum  sum over attention sequences of p^2
 * @return FLOP (0 if the model has no vision encoder).
 */
double mb_model_vit_flops(const struct mb_model *m, double patches_sum, double patches_sq_sum);

/**
 * @brief Patches of one image of height x width pixels (one frame repeated to
 * temporal_patch): ceil to whole patches, rounded up to a multiple of the
 * spatial merge; merged LLM tokens = patches / merge^2.
 * @param[out] merged  LLM tokens the image occupies (may be NULL)
 * @return patches p.
 */
double mb_model_image_patches(const struct mb_model *m, int height, int width, double *merged);

#endif /* MB_MODEL_H */
