/*
 * mb_queue.h -- the engine's pending-event set.
 *
 * A binary min-heap keyed by (time, seq). `seq` is a 64-bit counter assigned
 * at push time and never reused, so events scheduled for the same instant pop
 * in the order they were pushed: a run is reproducible bit for bit (ROSS
 * `event_id = ++seq_num` idea).
 *
 * Every push returns an event id. An id names one scheduled event and never a
 * later one: internally it is (generation << 32 | slot), and a slot's
 * generation is bumped each time the slot is recycled. Cancelling is lazy
 * (Redis ae.c style): the event stays in the heap marked dead and is dropped
 * when it reaches the top. Callers therefore never hold pointers into the
 * queue, only ids.
 *
 * Costs: push O(log n), pop O(log n) (plus the dead events it skips),
 * cancel O(1), size/peek O(1) amortised. Memory: 32 bytes per heap entry plus
 * 5 bytes per slot (slots = maximum number of simultaneously pending events).
 *
 * Known limit: for millions of simultaneously pending events with a smooth
 * time distribution a calendar queue would pop in O(1); the engine keeps the
 * pending set small (one event per busy stream plus one for the network), so
 * the heap is the right choice there.
 */
#ifndef MB_QUEUE_H
#define MB_QUEUE_H

#include <stddef.h>

/** One scheduled event, as returned by mb_queue_pop(). */
struct mb_event {
    double time;             /* simulated time, seconds */
    unsigned long long seq;  /* push order; tie-breaker for equal times */
    unsigned long long id;   /* id returned by mb_queue_push() (never 0) */
    int type;                /* caller's event type */
    int a, b;                /* caller's payload (e.g. task id, version) */
};

struct mb_queue;

/** @brief Create an empty queue. @return the queue (never NULL). */
struct mb_queue *mb_queue_new(void);

/** @brief Free a queue and every pending event. @param[in] q queue, or NULL. */
void mb_queue_free(struct mb_queue *q);

/**
 * @brief Schedule an event.
 * @param[in] q     queue
 * @param[in] time  event time; any finite value (the engine never goes back)
 * @param[in] type  caller's event type
 * @param[in] a,b   caller's payload
 * @return event id (> 0), valid for mb_queue_cancel() until the event pops.
 */
unsigned long long mb_queue_push(struct mb_queue *q, double time, int type,
                                 int a, int b);

/**
 * @brief Remove the earliest live event (smallest time, then smallest seq).
 * @param[in]  q     queue
 * @param[out] ev_p  receives the event; may be NULL to just discard it
 * @return 1 if an event was popped, 0 if the queue holds no live event.
 */
int mb_queue_pop(struct mb_queue *q, struct mb_event *ev_p);

/**
 * @brief Look at the earliest live event without removing it (dead events
 * at the top are discarded on the way, hence the non-const queue).
 * @param[out] ev_p  receives a copy; may be NULL
 * @return 1 if there is a live event, 0 if the queue is empty.
 */
int mb_queue_peek(struct mb_queue *q, struct mb_event *ev_p);

/**
 * @brief Cancel a pending event by id (lazy: dropped when it reaches the top).
 * @return 0 if the event was pending and is now cancelled; -1 if the id is
 * unknown, already popped or already cancelled (the queue is unchanged).
 */
int mb_queue_cancel(struct mb_queue *q, unsigned long long id);

/** @brief Number of live (pending, not cancelled) events. */
size_t mb_queue_size(const struct mb_queue *q);

/** @brief Drop every pending event; seq keeps counting (ids stay unique). */
void mb_queue_clear(struct mb_queue *q);

#endif /* MB_QUEUE_H */
