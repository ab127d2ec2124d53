/*
 * data.c -- the data phase: samples and microbatches (images per sample and
 * their sizes, text lengths, padding or packing), seeded so the same scenario
 * draws the same data, and the vision encoder's op list per microbatch.
 */
#include "step_int.h"

#include <math.h>
#include <string.h>

/* Real samples: images (count and sizes from the scenario's distribution)
 * plus text tokens. */
struct mb_sample {
    double len;     /* LLM positions: text + merged image tokens, at most seq_length */
    double P, Q;    /* ViT patches and sum of squared patches (attention within each image) */
    double merged;  /* LLM tokens taken by images */
};

/* One image's height and width (pixels). */
static void mb_step__image_size(const struct mb_images *im, struct mb_rng *rng, int *hh, int *ww)
{
    if (im->dist == MB_IMG_UNIFORM) {
        int span = im->side_max - im->side_min + 1;
        *hh = im->side_min + (int)(mb_rng_uniform(rng) * span);
        *ww = im->side_min + (int)(mb_rng_uniform(rng) * span);
        return;
    }
    int j = im->n_sizes > 1 ? (int)(mb_rng_uniform(rng) * im->n_sizes) : 0;
    if (j >= im->n_sizes)
        j = im->n_sizes - 1;
    *hh = im->height[j];
    *ww = im->width[j];
}

static void mb_step__draw_sample(const struct mb_scenario *s, const struct mb_model *m, struct mb_rng *rng,
                            struct mb_sample *x)
{
    const struct mb_images *im = &s->images;
    memset(x, 0, sizeof *x);
    if (!(s->mock || im->dist == MB_IMG_NONE || m->vision.depth == 0)) {
        int lo = im->per_sample_min, hi = im->per_sample_max > lo ? im->per_sample_max : lo;
        int cnt = lo + (int)(mb_rng_uniform(rng) * (hi - lo + 1));
        if (cnt > hi)
            cnt = hi;
        for (int i = 0; i < cnt; i++) {
            int hh, ww;
            mb_step__image_size(im, rng, &hh, &ww);
            double mg;
            double p = mb_model_image_patches(m, hh, ww, &mg);
            x->P += p;
            x->Q += p * p;
            x->merged += mg;
        }
    }
    double text;
    if (s->mock || s->text_max <= 0) {
        text = s->seq_length - x->merged; /* the sample fills its sequence */
    } else {
        int span = s->text_max - s->text_min + 1;
        text = s->text_min + (int)(mb_rng_uniform(rng) * span);
        if (text > s->text_max)
            text = s->text_max;
    }
    x->len = fmin(s->seq_length, fmax(0, text) + x->merged);
}

/* One microbatch (micro_batch_size sequences) of one rank: vision work, the
 * LLM positions that carry data (`useful`), the sum of squared attention
 * lengths (`lsq`) and the number of samples. Padded: one sample per sequence,
 * padded to seq_length, attention over the whole padded sequence. Packed:
 * samples are concatenated greedily until the next does not fit (it opens the
 * next sequence); attention runs within each sample (THD), so the attention
 * work is sum(L_i^2) instead of seq^2. */
struct mb_mbdraw {
    double P, Q, merged, useful, lsq, samples;
};

struct mb_sampler {
    struct mb_rng rng;
    int pending;
    struct mb_sample next;
};

static void mb_step__draw_microbatch(const struct mb_scenario *s, const struct mb_model *m, struct mb_sampler *sm,
                                struct mb_mbdraw *d)
{
    double seq = s->seq_length;
    memset(d, 0, sizeof *d);
    for (int q = 0; q < s->micro_batch_size; q++) {
        double fill = 0;
        do {
            if (!sm->pending) {
                mb_step__draw_sample(s, m, &sm->rng, &sm->next);
                sm->pending = 1;
            }
            if (fill > 0 && fill + sm->next.len > seq)
                break;
            struct mb_sample *x = &sm->next;
            d->P += x->P;
            d->Q += x->Q;
            d->merged += x->merged;
            d->samples += 1;
            d->lsq += s->packed ? x->len * x->len : seq * seq;
            fill += x->len;
            sm->pending = 0;
        } while (s->packed && s->text_max > 0 && !s->mock && fill < seq);
        d->useful += fill;
    }
}

/* Totals over every drawn microbatch of every drawn rank. */
struct mb_drawn {
    double P, Q, merged, useful, lsq, samples;
};

/* Draw G ranks' microbatches of one EP group: gP/gQ[i] get the group maximum
 * of microbatch i (the rank that paces the group); returns the group's total. */
static double mb_step__draw_group(const struct mb_scenario *s, const struct mb_model *m, struct mb_sampler *sm, int n,
                             int G, double *gP, double *gQ, struct mb_drawn *t)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        gP[i] = gQ[i] = 0;
        for (int rk = 0; rk < G; rk++) {
            struct mb_mbdraw d;
            mb_step__draw_microbatch(s, m, sm, &d);
            t->P += d.P;
            t->Q += d.Q;
            t->merged += d.merged;
            t->useful += d.useful;
            t->lsq += d.lsq;
            t->samples += d.samples;
            if (d.P > gP[i]) {
                gP[i] = d.P;
                gQ[i] = d.Q;
            }
        }
        total += gP[i];
    }
    return total;
}

/* Vision work per microbatch. Every data-parallel rank draws its own images
 * (seeded). MoE layers synchronise the EP group at every all-to-all, so in
 * each microbatch the rank with the most vision work in its EP group sets
 * the pace; gradient synchronisation at the end of the step then waits for
 * the slowest group. The simulated rank therefore carries, per microbatch,
 * the group maximum of the slowest group. Up to MB_VISION_RANKS ranks are
 * drawn (the expected maximum saturates long before that). */
void mb_data_draw(struct mb_build *b, int n)
{
    const struct mb_scenario *s = b->s;
    const struct mb_model *m = b->m;
    struct mb_data *d = &b->data;
    d->n = n;
    d->vP = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *d->vP);
    d->vQ = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *d->vQ);
    int R = s->dp < MB_VISION_RANKS ? s->dp : MB_VISION_RANKS;
    int G = (m->num_experts > 0 && s->ep > 1) ? (s->ep < R ? s->ep : R) : 1;
    R -= R % G;
    if (R < 1)
        R = G = 1;
    int vis_on = !(s->mock || s->images.dist == MB_IMG_NONE || m->vision.depth == 0);
    if (!vis_on && (s->text_max <= 0 || s->mock))
        R = G = 1; /* every rank's data is the same: full text sequences */
    double *gP = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *gP), *gQ = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *gQ);
    double best_total = -1;
    struct mb_drawn t = {0};
    struct mb_sampler sm;
    memset(&sm, 0, sizeof sm);
    mb_rng_seed(&sm.rng, s->images.seed);
    for (int g0 = 0; g0 < R; g0 += G) {
        double total = mb_step__draw_group(s, m, &sm, n, G, gP, gQ, &t);
        if (total > best_total) {
            best_total = total;
            memcpy(d->vP, gP, (size_t)n * sizeof *d->vP);
            memcpy(d->vQ, gQ, (size_t)n * sizeof *d->vQ);
        }
    }
    mb_free(gP);
    mb_free(gQ);
    /* model FLOPs count the mean rank's data, not the slowest */
    d->sumP = t.P / R;
    d->sumQ = t.Q / R;
    d->sum_merged = t.merged / R;
    double draws = (double)R * n;
    d->vision_tokens_per_sample = t.samples > 0 ? d->sum_merged * R / t.samples : 0;
    /* per sequence: positions carrying data and the attention work */
    d->useful_per_seq = draws > 0 ? t.useful / (draws * s->micro_batch_size) : s->seq_length;
    d->lsq_per_seq = draws > 0 ? t.lsq / (draws * s->micro_batch_size) : (double)s->seq_length * s->seq_length;
    d->vis_max = 0;
    for (int i = 1; i < n; i++)
        if (d->vP[i] > d->vP[d->vis_max])
            d->vis_max = i;
}

/* The ViT op list of each microbatch (fused), its projector-only copy (for a
 * frozen encoder's backward), and the activations the largest one saves. */
void mb_data_vision_ops(struct mb_build *b)
{
    struct mb_data *d = &b->data;
    int n = d->n;
    if (n > 0 && d->vP[d->vis_max] > 0) {
        struct mb_oplist vis = {0};
        d->act_vision += mb_ops_vision_fused(b, &vis, d->vP[d->vis_max], d->vQ[d->vis_max]);
        mb_ops_free(&vis);
    }
    d->visl = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *d->visl);
    d->visp = mb_calloc((size_t)(n > 0 ? n : 1), sizeof *d->visp);
    for (int i = 0; i < n; i++) {
        if (d->vP[i] <= 0)
            continue;
        if (b->record) { /* the parts only split a trace's slices */
            mb_ops_vision(b, &d->visl[i], d->vP[i], d->vQ[i]);
            mb_ops_fuse_parts(&d->visl[i], 0, 1);
        } else {
            mb_ops_vision_fused(b, &d->visl[i], d->vP[i], d->vQ[i]);
        }
        for (int q = 0; q < d->visl[i].n; q++)
            if (d->visl[i].op[q].cat == MB_CAT_PROJECTOR)
                mb_ops_push(&d->visp[i], &d->visl[i].op[q]);
    }
}

void mb_data_free(struct mb_data *d)
{
    for (int i = 0; d->visl && i < d->n; i++) {
        mb_ops_free(&d->visl[i]);
        mb_ops_free(&d->visp[i]);
    }
    mb_free(d->visl);
    mb_free(d->visp);
    mb_free(d->vP);
    mb_free(d->vQ);
    memset(d, 0, sizeof *d);
}
