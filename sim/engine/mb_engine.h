/*
 * mb_engine.h -- discrete-event executor of a task graph on streams and links.
 *
 * Resources:
 *   - streams: serial executors (a CUDA stream, a comm channel). Tasks on a
 *     stream start in the order they were added (program order), each once
 *     all its dependencies have completed and the previous task on the stream
 *     has completed.
 *   - links: bandwidth constraints (bytes/s). A task's flows cross links;
 *     concurrent flows share each link max-min fairly (SimGrid LMM idea,
 *     see mb_flow.h), re-solved whenever a flow starts or ends.
 *
 * A task first occupies its stream for `duration` seconds (compute time, or the
 * latency of a communication step), then its flows transfer their bytes; it
 * completes when the last flow finishes. Events are ordered by (time, seq),
 * so runs are deterministic.
 *
 * Symmetric ranks are simulated once: the caller builds the graph of one
 * representative rank per distinct role (e.g. one per pipeline stage), and a
 * link stands for the resource of that rank (its NVLink port, its NIC).
 */
#ifndef MB_ENGINE_H
#define MB_ENGINE_H

#include <stddef.h>
#include "mb_util.h"

#define MB_FLOW_MAX_LINKS 4

struct mb_flow_desc {
    double bytes;                 /* bytes to move, > 0 */
    int n_links;                  /* links crossed, 1..MB_FLOW_MAX_LINKS */
    int links[MB_FLOW_MAX_LINKS]; /* link ids */
    double bound;                 /* max rate of this flow, bytes/s; 0 = unbounded */
};

struct mb_task_desc {
    int stream;                   /* stream id */
    double duration;              /* seconds on the stream before flows start, >= 0 */
    int n_flows;                  /* 0 = pure compute/delay task */
    const struct mb_flow_desc *flows; /* copied by mb_engine_add_task */
    int kind;                     /* caller's accounting tag (e.g. breakdown category) */
    int tag;                      /* caller's free tag (layer, microbatch, ...) */
};

struct mb_engine;

struct mb_engine *mb_engine_new(void);
void mb_engine_free(struct mb_engine *e);   /* accepts NULL */

/**
 * @brief Whether runs keep what the critical path needs (each task's releaser;
 * on by default). Off, mb_engine_critical_path returns 0 and completions skip
 * that bookkeeping; nothing else changes.
 */
void mb_engine_track_critical(struct mb_engine *e, int on);

/**
 * @brief Whether runs without a critical path (mb_engine_track_critical off)
 * fold chains into one event (off by default): a task without flows and of
 * nonzero length whose only predecessor is the task before it on its stream,
 * itself without flows, of nonzero length and with no other successor, starts
 * exactly when that task ends and nothing else sees that end, so the chain's
 * end is computed when it starts (the durations added one by one, as events
 * would add them) and one event completes it. Every task's start and end, the
 * streams' busy sums and the makespan are those of an unfolded run, to the
 * bit where no two events tie in time; where they do, their order of handling
 * may differ, which moves nothing but the order of equal-time work.
 * mb_engine_n_events counts the folded chain as one event.
 */
void mb_engine_fold_chains(struct mb_engine *e, int on);

/** @brief Add a link of `capacity` bytes/s (> 0). @return link id (0, 1, ...). */
int mb_engine_add_link(struct mb_engine *e, double capacity);

/** @brief Add a stream. @return stream id (0, 1, ...). */
int mb_engine_add_stream(struct mb_engine *e);

/**
 * @brief Pre-size the task and dependency arrays (a hint: they still grow past
 * it). Saves the copies and page faults of repeated doubling on large graphs.
 */
void mb_engine_reserve(struct mb_engine *e, size_t tasks, size_t deps);

/** @brief Append a task to its stream. @return task id (0, 1, ...). */
int mb_engine_add_task(struct mb_engine *e, const struct mb_task_desc *d);

/** @brief Task `after` may not start before task `before` has completed. */
void mb_engine_add_dep(struct mb_engine *e, int before, int after);

/**
 * @brief Run to completion.
 * @return 0, or -1 with err "deadlock: N tasks never became ready (first: task T
 * on stream S)" when dependencies cannot be satisfied.
 */
int mb_engine_run(struct mb_engine *e, struct mb_err *err);

size_t mb_engine_n_tasks(const struct mb_engine *e);
double mb_engine_task_start(const struct mb_engine *e, int task);  /* s */
double mb_engine_task_end(const struct mb_engine *e, int task);    /* s */
int mb_engine_task_kind(const struct mb_engine *e, int task);
int mb_engine_task_tag(const struct mb_engine *e, int task);
int mb_engine_task_stream(const struct mb_engine *e, int task);
/**
 * @brief Walk a stream's tasks in program order (which is id order):
 *        mb_engine_stream_first(e, s), then mb_engine_task_next(e, t).
 * @return the stream's first task / the task after `task` on its stream, or -1
 *         when there is none (an unknown stream has none).
 */
int mb_engine_stream_first(const struct mb_engine *e, int stream);
int mb_engine_task_next(const struct mb_engine *e, int task);
/**
 * @brief Seconds a stream was busy in the last run: the sum of end - start of
 * its tasks, added in program order as they completed (what a walk of the
 * stream would add up); 0 for an unknown stream.
 */
double mb_engine_stream_busy(const struct mb_engine *e, int stream);
double mb_engine_makespan(const struct mb_engine *e);              /* s */
unsigned long long mb_engine_n_events(const struct mb_engine *e);  /* events processed */

/* ---- additions (statistics for benchmarks and reports) ------------------ */

/** @brief Number of max-min re-solves performed by the last run. */
unsigned long long mb_engine_n_solves(const struct mb_engine *e);
/** @brief Largest number of simultaneously active flows in the last run. */
int mb_engine_max_active_flows(const struct mb_engine *e);

/**
 * @brief Critical path of the last run, latest task first: from the task that
 * ends last, each step goes to the predecessor (dependency or previous task on
 * the same stream) that ended last -- the one that released it.
 * @param[out] out  task ids, at most max
 * @return number of tasks written.
 */
size_t mb_engine_critical_path(const struct mb_engine *e, int *out, size_t max);

/** @brief Number of dependencies added (mb_engine_add_dep calls). */
size_t mb_engine_n_deps(const struct mb_engine *e);
/** @brief Dependency i < mb_engine_n_deps(e): task `after` waited for task `before`. */
void mb_engine_dep(const struct mb_engine *e, size_t i, int *before, int *after);

/* ---- invariants (mb_engine_check.c) ------------------------------------ */

/**
 * @brief The task graph before a run: every dependency names two distinct tasks that exist, and the
 * dependencies with each stream's program order form no cycle (a cycle deadlocks the run). O(tasks +
 * dependencies) time and memory. The step model runs it after each phase that adds tasks in debug and
 * sanitizer builds (MBSIM_CHECK_INVARIANTS; SimGrid's check_concurrency() pattern).
 * @param[out] why  the first violation, for a message
 * @return 0, or -1 with why set.
 */
int mb_engine_check_graph(const struct mb_engine *e, char *why, size_t len);

/**
 * @brief The last run: every task started and ended with 0 <= start <= end <= makespan, each stream's
 * tasks one after the other in program order, and every dependency resolved (a task starts no earlier
 * than the tasks it waits for end); times compared within 1e-9 of the makespan (at least 1 ns).
 * @return 0, or -1 with why set.
 */
int mb_engine_check_run(const struct mb_engine *e, char *why, size_t len);

#endif /* MB_ENGINE_H */
