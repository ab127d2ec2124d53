/*
 * mb_queue.c -- binary min-heap of events keyed by (time, seq), with ids and
 * lazy cancellation. See mb_queue.h for the contract.
 *
 * Layout: the heap stores compact entries (time, seq, slot, type, a, b).
 * `slot` indexes a side table holding the slot's generation and state
 * (free / live / cancelled); the public id is (gen << 32 | slot). Slots are
 * recycled through a LIFO free list, so the side table stays as small as the
 * largest pending set and stays hot in cache.
 */
#include "mb_queue.h"

#include <assert.h>
#include <string.h>

#include "mb_util.h"

enum { SLOT_FREE = 0, SLOT_LIVE = 1, SLOT_DEAD = 2 };

struct mb_qent {
    double time;
    unsigned long long seq;
    unsigned slot;
    int type;
    int a, b;
};

struct mb_queue {
    struct mb_qent *heap;   /* heap[0] is the minimum */
    size_t n, cap;          /* entries in heap, allocated entries */
    unsigned *gen;          /* per slot: generation of the current occupant */
    unsigned char *state;   /* per slot: SLOT_* */
    unsigned *free_slots;   /* stack of free slot indices */
    size_t n_free;
    size_t n_slots, slot_cap;
    size_t n_dead;          /* cancelled entries still in the heap */
    unsigned long long seq; /* next seq to hand out */
};

static inline int mb_queue__less(const struct mb_qent *x, const struct mb_qent *y)
{
    if (x->time < y->time)
        return 1;
    if (x->time > y->time)
        return 0;
    return x->seq < y->seq;
}

struct mb_queue *mb_queue_new(void)
{
    struct mb_queue *q = mb_calloc(1, sizeof *q);
    q->seq = 1;
    return q;
}

void mb_queue_free(struct mb_queue *q)
{
    if (!q)
        return;
    mb_free(q->heap);
    mb_free(q->gen);
    mb_free(q->state);
    mb_free(q->free_slots);
    mb_free(q);
}

static unsigned mb_queue__slot_alloc(struct mb_queue *q)
{
    if (q->n_free > 0)
        return q->free_slots[--q->n_free];
    if (q->n_slots == q->slot_cap) {
        q->slot_cap = q->slot_cap ? 2 * q->slot_cap : 64;
        q->gen = mb_realloc(q->gen, q->slot_cap * sizeof *q->gen);
        q->state = mb_realloc(q->state, q->slot_cap * sizeof *q->state);
        q->free_slots = mb_realloc(q->free_slots, q->slot_cap * sizeof *q->free_slots);
    }
    assert(q->n_slots < 0xffffffffu);
    unsigned s = (unsigned)q->n_slots++;
    q->gen[s] = 0;
    q->state[s] = SLOT_FREE;
    return s;
}

static void mb_queue__slot_release(struct mb_queue *q, unsigned s)
{
    q->state[s] = SLOT_FREE;
    q->free_slots[q->n_free++] = s;
}

static void mb_queue__sift_up(struct mb_queue *q, size_t i)
{
    struct mb_qent x = q->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!mb_queue__less(&x, &q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = x;
}

static void mb_queue__sift_down(struct mb_queue *q, size_t i)
{
    size_t n = q->n;
    struct mb_qent x = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && mb_queue__less(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!mb_queue__less(&q->heap[c], &x))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    q->heap[i] = x;
}

/* Remove heap[0] (whatever its state). */
static void mb_queue__remove_top(struct mb_queue *q)
{
    assert(q->n > 0);
    q->n--;
    if (q->n > 0) {
        q->heap[0] = q->heap[q->n];
        mb_queue__sift_down(q, 0);
    }
}

/* Discard cancelled entries sitting at the top. */
static void mb_queue__skip_dead(struct mb_queue *q)
{
    while (q->n_dead > 0 && q->n > 0 && q->state[q->heap[0].slot] == SLOT_DEAD) {
        unsigned s = q->heap[0].slot;
        q->n_dead--;
        mb_queue__slot_release(q, s);
        mb_queue__remove_top(q);
    }
}

unsigned long long mb_queue_push(struct mb_queue *q, double time, int type, int a, int b)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 64;
        q->heap = mb_realloc(q->heap, q->cap * sizeof *q->heap);
    }
    unsigned s = mb_queue__slot_alloc(q);
    q->gen[s]++; /* a new occupant: ids of earlier ones no longer match */
    if (q->gen[s] == 0)
        q->gen[s] = 1; /* wrapped: keep ids non-zero */
    q->state[s] = SLOT_LIVE;
    struct mb_qent *e = &q->heap[q->n];
    e->time = time;
    e->seq = q->seq++;
    e->slot = s;
    e->type = type;
    e->a = a;
    e->b = b;
    mb_queue__sift_up(q, q->n++);
    return ((unsigned long long)q->gen[s] << 32) | s;
}

static void mb_queue__fill(const struct mb_queue *q, const struct mb_qent *e, struct mb_event *ev)
{
    ev->time = e->time;
    ev->seq = e->seq;
    ev->id = ((unsigned long long)q->gen[e->slot] << 32) | e->slot;
    ev->type = e->type;
    ev->a = e->a;
    ev->b = e->b;
}

int mb_queue_pop(struct mb_queue *q, struct mb_event *ev_p)
{
    mb_queue__skip_dead(q);
    if (q->n == 0)
        return 0;
    unsigned s = q->heap[0].slot;
    assert(q->state[s] == SLOT_LIVE);
    if (ev_p)
        mb_queue__fill(q, &q->heap[0], ev_p);
    mb_queue__slot_release(q, s);
    mb_queue__remove_top(q);
    return 1;
}

int mb_queue_peek(struct mb_queue *q, struct mb_event *ev_p)
{
    mb_queue__skip_dead(q);
    if (q->n == 0)
        return 0;
    if (ev_p)
        mb_queue__fill(q, &q->heap[0], ev_p);
    return 1;
}

int mb_queue_cancel(struct mb_queue *q, unsigned long long id)
{
    unsigned long long s = id & 0xffffffffULL;
    unsigned g = (unsigned)(id >> 32);
    if (g == 0 || s >= q->n_slots || q->gen[s] != g || q->state[s] != SLOT_LIVE)
        return -1;
    q->state[s] = SLOT_DEAD;
    q->n_dead++;
    return 0;
}

size_t mb_queue_size(const struct mb_queue *q)
{
    return q->n - q->n_dead;
}

void mb_queue_clear(struct mb_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        mb_queue__slot_release(q, q->heap[i].slot);
    q->n = 0;
    q->n_dead = 0;
}
