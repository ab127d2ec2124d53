/*
 * mb_queue.c -- binary min-heap of 16-byte events keyed by (time, key). See
 * mb_queue.h for the contract.
 */
#include "mb_queue.h"

#include <assert.h>

#include "mb_util.h"

_Static_assert(sizeof(struct mb_event) == 16, "heap entries stay 16 bytes");

struct mb_queue {
    struct mb_event *heap; /* heap[0] is the minimum */
    size_t n, cap;         /* entries in heap, allocated entries */
};

/* (time, key) order, without branches: which of two pending events is
 * earlier is unpredictable, and a mispredicted jump per heap level cost more
 * than evaluating both halves. */
static inline int mb_queue__less(const struct mb_event *x, const struct mb_event *y)
{
    return (x->time < y->time) | ((x->time == y->time) & (x->key < y->key));
}

struct mb_queue *mb_queue_new(void)
{
    return mb_calloc(1, sizeof(struct mb_queue));
}

void mb_queue_free(struct mb_queue *q)
{
    if (!q)
        return;
    mb_free(q->heap);
    mb_free(q);
}

void mb_queue_push(struct mb_queue *q, double time, unsigned long long key)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 64;
        q->heap = mb_realloc(q->heap, q->cap * sizeof *q->heap);
    }
    struct mb_event x = {time, key};
    size_t i = q->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!mb_queue__less(&x, &q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = x;
}

/* Put x at the root of a heap of n entries and sift it down. */
static void mb_queue__sift_down(struct mb_event *h, size_t n, struct mb_event x)
{
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n)
            c += (size_t)mb_queue__less(&h[c + 1], &h[c]);
        if (!mb_queue__less(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

int mb_queue_pop(struct mb_queue *q, struct mb_event *ev_p)
{
    if (q->n == 0)
        return 0;
    if (ev_p)
        *ev_p = q->heap[0];
    q->n--;
    if (q->n > 0)
        mb_queue__sift_down(q->heap, q->n, q->heap[q->n]);
    return 1;
}

void mb_queue_replace_top(struct mb_queue *q, double time, unsigned long long key)
{
    assert(q->n > 0);
    mb_queue__sift_down(q->heap, q->n, (struct mb_event){time, key});
}

const struct mb_event *mb_queue_peek(const struct mb_queue *q)
{
    return q->n ? &q->heap[0] : NULL;
}

size_t mb_queue_size(const struct mb_queue *q)
{
    return q->n;
}

void mb_queue_clear(struct mb_queue *q)
{
    q->n = 0;
}
