/*
 * model_ops.c -- the ops phase: one op list per decoder layer kind (mixer x
 * FFN), the embedding, the output layer and loss, and the vision encoder's
 * op list for a microbatch's patches.
 */
#include "step_int.h"
#include "mb_calib.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* Calibration tables whose usage a copied vision block replays (mb_calib_n_tables). */
#define MB__VIS_TABLES 8

/* Lookups and fallbacks so far of each calibration table. */
static void mb_step__vis_usage(const struct mb_build *b, long use[MB__VIS_TABLES][2])
{
    memset(use, 0, sizeof(long[MB__VIS_TABLES][2]));
    for (size_t t = 0; t < mb_calib_n_tables(b->cal) && t < MB__VIS_TABLES; t++) {
        struct mb_calib_table_info ti = mb_calib_table(b->cal, t);
        use[t][0] = ti.lookups;
        use[t][1] = ti.fallbacks;
    }
}

/* The patch merger(s) of P patches: main + one per DeepStack tap; S^2 patches -> one token. */
static void mb_step__vision_mergers(struct mb_build *b, struct mb_oplist *l, double P)
{
    const struct mb_vision *v = &b->m->vision;
    int fproj = (b->s->freeze & MB_FREEZE_VISION_PROJ) != 0;
    double hv = v->hidden, S2 = (double)v->spatial_merge * v->spatial_merge, Mtok = P / S2;
    for (int i = 0; i < 1 + v->deepstack; i++) {
        mb_ops_gemm(b, l, "merger_fc1", MB_CAT_PROJECTOR, 0, 0, Mtok, S2 * hv, S2 * hv, Mtok * S2 * hv * BF16, fproj);
        mb_ops_gemm(b, l, "merger_fc2", MB_CAT_PROJECTOR, 0, 0, Mtok, v->out_hidden, S2 * hv, Mtok * S2 * hv * BF16,
                    fproj);
    }
}

/* ViT ops for P patches (sum of squares Q) into l: the patch embedding and
 * block 0 priced, then (unless `blocks0`) the other blocks as copies of block 0
 * and the patch mergers. Returns the index of block 0's first op in l and its
 * op count in *nb; with `blocks0` the caller places the copies and builds the
 * mergers (mb__vision_mergers). */
static int mb_step__vision_build(struct mb_build *b, struct mb_oplist *l, double P, double Q, int blocks0, int *nb_out)
{
    const struct mb_scenario *s = b->s;
    const struct mb_vision *v = &b->m->vision;
    int tp = s->tp;
    int frozen = (s->freeze & MB_FREEZE_VISION) != 0;
    double hv = v->hidden, fv = (double)v->mlp / tp, hl = (double)v->hidden / tp;
    int hd = v->hidden / v->heads;
    enum mb_cat c = MB_CAT_VISION;
    *nb_out = 0;
    if (P <= 0)
        return 0;
    /* patch embedding: conv as GEMM over C*tp*patch^2 inputs */
    double kin = (double)v->in_channels * v->temporal_patch * v->patch * v->patch;
    mb_ops_gemm(b, l, "vit_patch_embed", c, 0, 0, P, hv, kin, 0, frozen);
    /* Every block prices the same ops from the same P and Q: block 0 is priced
     * and the others are copies of it (with their block index), counted in the
     * calibration usage as if they had been looked up again. */
    long use0[MB__VIS_TABLES][2];
    assert(mb_calib_n_tables(b->cal) <= MB__VIS_TABLES);
    mb_step__vis_usage(b, use0);
    int nb0 = l->n;
    if (v->depth > 0) {
        mb_ops_mem(b, l, "vit_norm1", c, 0, 0, 2 * P * hv * BF16, P * hv * BF16);
        mb_net_ring(b, l, "vit tp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, P * hv * BF16, 0);
        mb_ops_gemm(b, l, "vit_qkv", c, 0, 0, P, 3 * hl, hv, P * hv * BF16, frozen);
        mb_net_wgrad_gather(b, l, b->g_tp, P * hv * BF16, frozen);
        /* bidirectional attention within each image: 4 p^2 h_v FLOP per image;
         * varlen kernel over images x heads per rank; P^2/Q images of the mean size */
        mb_ops_attn(b, l, "vit_core_attn", c, 0, 0, 4.0 * Q * hl, Q / P, hd, P * P / Q * hl / hd, 0,
                    P * hl * BF16 * 4);
        mb_ops_gemm(b, l, "vit_proj", c, 0, 0, P, hv, hl, P * hl * BF16, frozen);
        mb_net_ring(b, l, "vit tp reducescatter", MB_CK_TP, MB_COLL_REDUCE_SCATTER, b->g_tp, P * hv * BF16, 0);
        mb_ops_mem(b, l, "vit_norm2", c, 0, 0, 2 * P * hv * BF16, P * hv * BF16);
        mb_net_ring(b, l, "vit tp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, P * hv * BF16, 0);
        mb_ops_gemm(b, l, "vit_fc1", c, 0, 0, P, fv, hv, P * hv * BF16, frozen);
        mb_net_wgrad_gather(b, l, b->g_tp, P * hv * BF16, frozen);
        mb_ops_mem(b, l, "vit_act", c, 0, 0, 2 * P * fv * BF16, P * fv * BF16);
        mb_ops_gemm(b, l, "vit_fc2", c, 0, 0, P, hv, fv, P * fv * BF16, frozen);
        mb_net_ring(b, l, "vit tp reducescatter", MB_CK_TP, MB_COLL_REDUCE_SCATTER, b->g_tp, P * hv * BF16, 0);
        for (int q = nb0; q < l->n; q++)
            l->op[q].vblock = 1;
    }
    int nb = l->n - nb0;
    *nb_out = nb;
    if (v->depth > 1 && nb > 0) {
        long use1[MB__VIS_TABLES][2];
        mb_step__vis_usage(b, use1);
        for (size_t t = 0; t < mb_calib_n_tables(b->cal) && t < MB__VIS_TABLES; t++)
            mb_calib_add_usage(b->cal, t, (use1[t][0] - use0[t][0]) * (v->depth - 1),
                               (use1[t][1] - use0[t][1]) * (v->depth - 1));
    }
    if (blocks0)
        return nb0;
    if (v->depth > 1 && nb > 0) {
        mb_ops_reserve(l, nb * (v->depth - 1) + 2 * (1 + v->deepstack));
        for (int i = 1; i < v->depth; i++)
            for (int q = 0; q < nb; q++) {
                struct mb_op o = l->op[nb0 + q]; /* a copy: the push may move the list */
                o.vblock = i + 1;
                mb_ops_push(l, &o);
            }
    }
    mb_step__vision_mergers(b, l, P);
    return nb0;
}

void mb_ops_vision(struct mb_build *b, struct mb_oplist *l, double P, double Q)
{
    int nb;
    mb_step__vision_build(b, l, P, Q, 0, &nb);
}

/* Push op o (index k of the unfused list) into the fused list f, as a copy of
 * block vblock - 1's op when vblock > 0; add its saved bytes to *saved. */
static void mb_step__vision_stream(struct mb_oplist *f, const struct mb_op *o, int vblock, int k, double *saved)
{
    int n = f->n;
    mb_ops_fuse_push(f, o, 0, k); /* fusion reads no block index */
    if (vblock > 0 && f->n > n)
        f->op[f->n - 1].vblock = vblock;
    *saved += o->saved;
}

double mb_ops_vision_fused(struct mb_build *b, struct mb_oplist *f, double P, double Q)
{
    const struct mb_vision *v = &b->m->vision;
    struct mb_oplist l = {0};
    int nb, nb0 = mb_step__vision_build(b, &l, P, Q, 1, &nb), n0 = l.n, k = 0;
    double saved = 0;
    mb_ops_reserve(f, n0 + (v->depth > 1 ? nb * (v->depth - 1) : 0) + 2 * (1 + v->deepstack)); /* at most */
    for (int q = 0; q < n0; q++)
        mb_step__vision_stream(f, &l.op[q], 0, k++, &saved);
    for (int i = 1; i < v->depth && nb > 0; i++)
        for (int q = 0; q < nb; q++)
            mb_step__vision_stream(f, &l.op[nb0 + q], i + 1, k++, &saved);
    if (P > 0)
        mb_step__vision_mergers(b, &l, P);
    for (int q = n0; q < l.n; q++)
        mb_step__vision_stream(f, &l.op[q], 0, k++, &saved);
    mb_ops_free(&l);
    return saved;
}

/* Learned absolute positions (position_embedding_type learned_absolute):
 * Megatron-Core's LanguageModelEmbedding gathers the position rows of all T
 * tokens (read + write T x h), adds them to the word embeddings (two reads and
 * a write) -- before the sequence-parallel scatter, which it then does not fuse
 * into the embedding (reduce_scatter_embeddings needs no position embedding):
 * NVIDIA/Megatron-LM@d98e8a64 megatron/core/models/common/embeddings/
 * language_model_embedding.py. Forward 5 T h BF16 bytes in 2 kernels;
 * backward the table's gradient (embedding_dense_backward: reads the T x h
 * gradient, accumulates the rows), 2 T h bytes in 1 kernel. */
static void mb_step__position_embeddings(struct mb_build *b, double T)
{
    double th = T * b->m->hidden * BF16;
    mb_ops_mem(b, &b->plan.emb, "position_embeddings", MB_CAT_DENSE, 0, 0, 5 * th, 0);
    struct mb_op *o = &b->plan.emb.op[b->plan.emb.n - 1];
    o->bwd = o->bwd_dgrad_only = mb_calib_membound(b->cal, 2 * th);
    o->bytes_b = 2 * th;
    o->kf = 2;
}

/* Embedding (stage 0) and final norm, output layer and loss (last stage; MTP
 * heads add an output layer and loss each). */
static void mb_step__embedding_and_head(struct mb_build *b, int frozen)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    struct mb_oplist *head = &b->plan.head;
    double T = (double)s->micro_batch_size * s->seq_length / s->cp, V = (double)m->vocab / s->tp;
    mb_ops_mem(b, &b->plan.emb, "embedding", MB_CAT_DENSE, 0, 0, 2 * mb_ops_sp_tokens(s, T) * m->hidden * BF16, 0);
    if (m->pos == MB_POS_LEARNED)
        mb_step__position_embeddings(b, T);
    mb_ops_norm(b, head, "final_layernorm", MB_CAT_DENSE, 0, mb_ops_sp_tokens(s, T), m->hidden);
    mb_net_ring(b, head, "tp allgather", MB_CK_TP, MB_COLL_ALL_GATHER, b->g_tp, T * m->hidden * BF16, 0);
    for (int i = 0; i <= m->mtp_layers; i++) {
        /* Megatron's output layer is a tensor_parallel.ColumnParallelLinear, not
         * a TE module: fp8/fp4 autocast does not reach it, so it runs in BF16
         * without quantization under every recipe (fp8_output_proj concerns the
         * attention output projection, not this layer) */
        mb_ops_gemm_p(b, head, "output_layer", MB_CAT_DENSE, 0, 0, MB_PREC_BF16, 0, T, V, m->hidden,
                      T * m->hidden * BF16, frozen);
        mb_net_wgrad_gather(b, head, b->g_tp, T * m->hidden * BF16, frozen);
        /* fp32 logits: softmax cross-entropy reads/writes them (vocab-parallel CE) */
        mb_ops_mem(b, head, "cross_entropy", MB_CAT_DENSE, 0, 0, 3 * T * V * 4, T * V * 4);
        /* Megatron _VocabParallelCrossEntropy, unfused: max, subtract, exp, sum,
         * target masking/gather (~4), log, mean: ~10 kernels forward (its two
         * small TP all-reduces ignored), softmax-minus-one-hot ~4 backward */
        head->op[head->n - 1].kf = 10;
        head->op[head->n - 1].kb = 4;
    }
}

const struct mb_oplist *mb_plan_layer(const struct mb_build *b, int li)
{
    const struct mb_layer *L = &b->m->layer[li];
    return &b->plan.kind[L->mixer][L->ffn];
}

void mb_plan_build(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    struct mb_plan *pl = &b->plan;
    int frozen = (s->freeze & MB_FREEZE_LANGUAGE) != 0;
    int have[MB_MIX_MAMBA + 1][MB_FFN_MOE + 1] = {{0}};
    for (int i = 0; i < m->n_layers; i++) {
        const struct mb_layer *L = &m->layer[i];
        struct mb_oplist *l = &pl->kind[L->mixer][L->ffn];
        if (have[L->mixer][L->ffn])
            continue;
        have[L->mixer][L->ffn] = 1;
        b->layer_region = ++b->region_seq;
        mb_ops_mixer(b, l, L->mixer, frozen);
        int start = l->n;
        mb_ops_ffn(b, l, L->ffn, frozen);
        unsigned tag = L->ffn == MB_FFN_MOE ? MB_RCM_MOE : L->ffn == MB_FFN_DENSE ? MB_RCM_MLP : 0;
        for (int j = start + 1; j < l->n; j++) /* the block after its pre-norm */
            l->op[j].module |= tag;
        l->input_bytes = mb_ops_sp_tokens(s, (double)s->micro_batch_size * s->seq_length / s->cp) * m->hidden * BF16;
        if (s->rc_policy == MB_RCP_TORCHTITAN_OP)
            mb_sac_mark(b, l);
    }
    mb_step__embedding_and_head(b, frozen);
    pl->mtp = m->mtp_layers > 0 && m->n_layers > 0 ? mb_plan_layer(b, m->n_layers - 1) : NULL;
    pl->rc_mask = s->recompute == MB_RC_SELECTIVE ? s->recompute_modules : s->recompute == MB_RC_FULL ? ~0u : 0;
    if (s->rc_policy == MB_RCP_TORCHTITAN_OP)
        pl->rc_mask = MB_MOD_SAC;
    else if (s->rc_policy == MB_RCP_TORCHTITAN_LAYER)
        pl->rc_mask = ~0u; /* a checkpointed layer re-runs whole */
}

/* Packed sequences: attention runs within each sample (THD), so the decoder's
 * core attention does attn_scale (< 1) of the padded work; then every layer
 * list is fused. */
void mb_plan_scale_attention(struct mb_build *b, double attn_scale)
{
    struct mb_plan *pl = &b->plan;
    for (int x = 0; x <= MB_MIX_MAMBA; x++)
        for (int f = 0; f <= MB_FFN_MOE; f++) {
            struct mb_oplist *l = &pl->kind[x][f];
            for (int i = 0; attn_scale < 1.0 && i < l->n; i++) {
                struct mb_op *o = &l->op[i];
                if (o->type == MB_OP_COMP && o->cat == MB_CAT_ATTN && (o->module & MB_RCM_CORE_ATTN)) {
                    o->fwd *= attn_scale;
                    o->bwd *= attn_scale;
                    o->bwd_dgrad_only *= attn_scale;
                    o->flop_f *= attn_scale;
                    o->flop_b *= attn_scale;
                }
            }
            mb_ops_fuse(l, pl->rc_mask);
        }
}

/* One layer's compute seconds forward (*f) and backward (*bk), and the bytes it saves. */
static double mb_step__layer_cost(const struct mb_oplist *l, double *f, double *bk)
{
    double saved = 0;
    *f = *bk = 0;
    for (int i = 0; i < l->n; i++) {
        saved += l->op[i].saved;
        if (l->op[i].type == MB_OP_COMP) {
            *f += l->op[i].fwd;
            *bk += l->op[i].bwd;
        }
    }
    return saved;
}

/*
 * CPU activation offloading (memory.cpu_offloading_num_layers n): TE's
 * AsyncDoubleBufferGroupOffloadHandler (NVIDIA/TransformerEngine@7e6b21ef
 * transformer_engine/pytorch/cpu_offload.py) copies each of the first n layers'
 * saved tensors to host memory on a side stream while the next layer computes,
 * and the host waits for that copy at the next layer's commit
 * (synchronize_on_group_commit_forward); the backward prefetches a layer's
 * tensors while the layer after it runs its backward and waits for them
 * (h2d_finish_events). A copy is hidden when the layer's compute is longer;
 * the rest is exposed: per offloaded layer max(0, saved / host link - forward
 * compute) in forward and max(0, saved / host link - backward compute) in
 * backward, at the host link's line rate (system pcie_bw: PCIe, or NVLink-C2C on
 * Grace parts). The exposed time is one wait op of the first stage's embedding
 * list (category exposed_cpu_offload); pp is 1 with offloading, so it is on the
 * same stream as the layers.
 */
void mb_plan_offload(struct mb_build *b)
{
    const struct mb_scenario *s = b->s;
    double bw = s->system.pcie_bw, ef = 0, eb = 0;
    if (s->cpu_offload_layers <= 0 || !(bw > 0))
        return;
    for (int li = 0; li < s->cpu_offload_layers && li < b->m->n_layers; li++) {
        double f, bk, x = mb_step__layer_cost(mb_plan_layer(b, li), &f, &bk) / bw;
        ef += fmax(0, x - f);
        eb += fmax(0, x - bk);
    }
    if (ef > 0 || eb > 0)
        mb_ops_wait(&b->plan.emb, "cpu offload wait", MB_CAT_OFFLOAD, ef, eb);
}

void mb_plan_free(struct mb_plan *pl)
{
    for (int x = 0; x <= MB_MIX_MAMBA; x++)
        for (int f = 0; f <= MB_FFN_MOE; f++)
            mb_ops_free(&pl->kind[x][f]);
    mb_ops_free(&pl->emb);
    mb_ops_free(&pl->head);
}
