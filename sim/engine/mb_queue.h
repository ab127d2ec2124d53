/*
 * mb_queue.h -- the engine's pending-event set.
 *
 * A binary min-heap of 16-byte entries keyed by (time, key). The key is the
 * caller's: the engine puts a push counter in the high 32 bits and the event's
 * payload (a task index) in the low 32, so events scheduled for the same
 * instant pop in the order they were pushed and a run is reproducible bit for
 * bit (ROSS `event_id = ++seq_num` idea). Keys should be unique; equal
 * (time, key) pairs pop in an unspecified order.
 *
 * There is no cancellation: the only event the engine ever revokes (the
 * network's next flow completion) lives outside the heap (mb_engine.c), so
 * every heap entry is live and pop never skips anything.
 *
 * Costs: push O(log n), pop O(log n), peek/size O(1). Memory: 16 bytes per
 * pending event.
 *
 * Known limit: for millions of simultaneously pending events with a smooth
 * time distribution a calendar queue would pop in O(1); the engine keeps the
 * pending set small (one event per busy stream), so the heap is the right
 * choice there.
 */
#ifndef MB_QUEUE_H
#define MB_QUEUE_H

#include <stddef.h>

/** One scheduled event. */
struct mb_event {
    double time;            /* simulated time, seconds */
    unsigned long long key; /* caller's tie-breaker and payload */
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
 * @param[in] key   orders events of equal time (smaller first) and comes back with the event
 */
void mb_queue_push(struct mb_queue *q, double time, unsigned long long key);

/**
 * @brief Remove the earliest event (smallest time, then smallest key).
 * @param[out] ev_p  receives the event; may be NULL to just discard it
 * @return 1 if an event was popped, 0 if the queue is empty.
 */
int mb_queue_pop(struct mb_queue *q, struct mb_event *ev_p);

/**
 * @brief Remove the earliest event and schedule (time, key): the queue then
 * holds what mb_queue_pop followed by mb_queue_push would leave, in one
 * sift-down from the root instead of a sift-down and a sift-up. Events pop in
 * the same order either way when no two share (time, key) (the order is
 * total, so the earliest event is one and the same whatever the heap's shape).
 * @param[in] q  a queue with at least one event (asserted)
 */
void mb_queue_replace_top(struct mb_queue *q, double time, unsigned long long key);

/**
 * @brief The earliest event without removing it.
 * @return a pointer valid until the next push/pop/clear, or NULL when empty.
 */
const struct mb_event *mb_queue_peek(const struct mb_queue *q);

/** @brief Number of pending events. */
size_t mb_queue_size(const struct mb_queue *q);

/** @brief Drop every pending event. */
void mb_queue_clear(struct mb_queue *q);

#endif /* MB_QUEUE_H */
