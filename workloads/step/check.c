/*
 * check.c -- the invariant pass after each phase of a step simulation (SimGrid's check_concurrency()
 * pattern), compiled in with MBSIM_CHECK_INVARIANTS (debug and sanitizer builds; CMake option
 * MBSIM_INVARIANTS): the task graph acyclic with every dependency on a task that exists, after each
 * phase that adds tasks; every dependency resolved and every stream's times monotone after the run;
 * no memory term negative after the memory estimate. A violation is a bug of mbsim, not of the
 * scenario: it aborts with the phase, the scenario and what broke (assert semantics).
 */
#include "step_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef MBSIM_CHECK_INVARIANTS

static void mb_step__violated(const struct mb_scenario *s, const char *phase, const char *why)
{
    fprintf(stderr, "mbsim: internal error: invariant violated after the %s phase of scenario '%s' (%s): %s\n",
            phase, s->name, s->file, why);
    abort();
}

void mb_step_check_graph(const struct mb_build *b, const char *phase)
{
    char why[512];
    if (mb_engine_check_graph(b->e, why, sizeof why))
        mb_step__violated(b->s, phase, why);
}

void mb_step_check_run(const struct mb_build *b)
{
    char why[512];
    if (mb_engine_check_run(b->e, why, sizeof why))
        mb_step__violated(b->s, "run", why);
}

/* The terms of one rank's memory: none negative, none NaN (a rounding may leave -1e-6 B). */
static const char *mb_step__negative_term(const struct mb_memory_stage *m, double *v)
{
    const struct {
        const char *name;
        double v;
    } t[] = {{"weights", m->weights},         {"gradients", m->grads},         {"optimizer", m->optimizer},
             {"activations", m->activations}, {"recompute", m->recompute},     {"backward gradients", m->bwd_grads},
             {"buffers", m->buffers},         {"loss", m->logits},             {"dispatch", m->dispatch},
             {"workspace", m->workspace},     {"cuda graphs", m->graphs},      {"peak allocated", m->peak_allocated},
             {"fragmentation", m->fragmentation}, {"reserved", m->reserved}, {"comm buffers", m->comm_buffers},
             {"context", m->context},         {"device", m->device}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!(t[i].v >= -1.0)) {
            *v = t[i].v;
            return t[i].name;
        }
    return NULL;
}

void mb_step_check_memory(const struct mb_scenario *s, const struct mb_memory *m, const char *phase)
{
    char why[512];
    double v = 0;
    for (int st = 0; st < m->n_stages; st++) {
        const char *term = mb_step__negative_term(&m->per_stage[st], &v);
        if (term) {
            snprintf(why, sizeof why, "stage %d's %s memory is %.6g B", st, term, v);
            mb_step__violated(s, phase, why);
        }
    }
    const struct mb_memtl *tl = &m->tl;
    for (int i = 0; i < tl->n; i++) {
        const double x[5] = {tl->allocated[i], tl->activations[i], tl->logits[i], tl->recompute[i], tl->bwd_grads[i]};
        for (int k = 0; k < 5; k++)
            if (!(x[k] >= -1.0)) {
                snprintf(why, sizeof why, "timeline point %d (t = %.6g s): a term is %.6g B", i, tl->t[i], x[k]);
                mb_step__violated(s, phase, why);
            }
        if (i > 0 && tl->t[i] < tl->t[i - 1]) {
            snprintf(why, sizeof why, "timeline point %d at %.9g s comes before point %d at %.9g s", i, tl->t[i],
                     i - 1, tl->t[i - 1]);
            mb_step__violated(s, phase, why);
        }
    }
}

#endif
