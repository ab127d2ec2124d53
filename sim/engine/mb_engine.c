/*
 * mb_engine.c -- discrete-event executor of a task graph on streams (serial
 * FIFO executors) and links (max-min shared bandwidth). See mb_engine.h for
 * the contract and docs/engine.md for the semantics in prose.
 *
 * SUMMARY
 *   Task life cycle:  waiting -> started (stream held, `duration` elapses)
 *                     -> transferring (its flows are in the solver)
 *                     -> completed (stream released, successors notified).
 *   A task starts the instant it is the next task of its stream, the previous
 *   task of the stream has completed and its last dependency has completed.
 *   Starting is not an event; it schedules one.
 *
 *   Two kinds of event:
 *     task delay      (heap, key low bits = task) the task's duration has
 *                     elapsed: complete it if it has no flows, else add its flows.
 *     flow completion (beside the heap)  the earliest flow completion under the
 *                     current rates: retire every flow done by now.
 *   The network has at most one pending completion. Whenever flows are added
 *   or retired the system is marked dirty; once every event of the current
 *   instant has been handled (the next event lies strictly later) the engine
 *   re-solves the rates once and moves the pending completion to
 *   now + min_f(remaining_f / rate_f), with a fresh push counter. Keeping it
 *   out of the heap means nothing is ever cancelled. Batching per instant means
 *   a collective that starts 1000 flows at once costs one solve, not 1000.
 *
 *   The heap's top is not popped when it is taken: it stays, held, while its
 *   event is handled, and the first event scheduled meanwhile replaces it
 *   (one sift-down, mb_queue_replace_top, instead of a pop's sift-down and a
 *   push's sift-up); it is popped only when nothing was scheduled. (time,
 *   key) is a total order, so the events come out in the same order.
 *
 *   Flow progress is integrated lazily: remaining bytes are advanced
 *   (remaining -= rate * dt) only when the set of flows is about to change,
 *   i.e. when rates may change, never per event.
 *
 *   Flows finishing within MB_EPS (relative, see mb_dbl_eq) of the same instant
 *   complete together; this is also what guarantees progress in the presence
 *   of rounding.
 *
 * DATA LAYOUT (tuned for 10^6 tasks, compute-only graphs > 2 M events/s)
 *   A task is a 32-byte record (duration, start, end, stream, next: two to a
 *   cache line) and a 16-byte entry of counts and offsets (first flow, first
 *   successor, pending count, rides), four to a line; a task's flows and
 *   successors run to the next task's offsets, so the entries have one more
 *   element than there are tasks. A task's pending count is its in-degree
 *   plus one for the task before it on its stream, both counted as the graph
 *   is built: a completion decrements its stream successor's count as it
 *   decrements its dependents', and a task starts when its count reaches
 *   zero. The caller's tags, and the releasers the critical path follows
 *   (allocated only when one is tracked), live apart. Streams are intrusive
 *   singly linked lists through task.next. Dependencies are appended to an
 *   edge list and turned into a CSR successor array at run time. Flow
 *   descriptions live in one pool.
 */
#include "mb_engine.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_flow.h"
#include "mb_queue.h"

_Static_assert(MB_FLOW_MAX_LINKS <= MB_FLOW_ROUTE_MAX, "engine routes must fit the solver");

/* Event keys: push counter in the high 32 bits (ties pop in push order), the
 * task in the low 32. The network's next flow completion is not in the heap:
 * it is the one event that gets revoked (each re-solve moves it), so it is
 * kept beside the heap and compared with its top, and nothing ever needs
 * cancelling (mb_queue.h). */
#define MB_EV_TASK(key) ((int)((key) & 0x7fffffffu))

/* The times of one task and its place on its stream: 32 bytes, two to a cache
 * line (the array is line-aligned). */
struct mb_task {
    double duration;    /* seconds on the stream before flows start */
    double start, end;  /* results, seconds; -1 when never started */
    int stream;
    int next;           /* next task on the same stream, -1 */
};
_Static_assert(sizeof(struct mb_task) == 32, "two task records to a cache line");
#define MB_TASK_ALIGN 64

/* A task's counts and offsets (16 bytes). Its flows are fdesc[flow ..
 * next entry's flow), its successors succ[succ .. next entry's succ). */
struct mb_tidx {
    int flow;           /* first flow in e->fdesc */
    int succ;           /* built: out-degree; run: first successor in e->succ */
    int pend;           /* unfinished dependencies + unfinished stream predecessor; once started, flows not yet done */
    int rides;          /* 1 = may run in its stream predecessor's event (a chain), kept as the graph grows */
};

/* The predecessor that released a task (critical path), and when it ended. */
struct mb_rel {
    double end;
    int task;           /* -1: none yet */
};

struct mb_tags {
    int kind, tag;      /* the caller's, untouched */
};

struct mb_stream {
    int head, tail;     /* first / last task in program order, -1 if none */
    int cur;            /* run time: running or next task to run, -1 = done */
    double busy;        /* run time: sum of end - start of its completed tasks, in program order */
};

struct mb_engine {
    struct mb_task *tasks;        /* MB_TASK_ALIGN-aligned */
    struct mb_tidx *ix;           /* cap_tasks + 1 entries */
    struct mb_tags *tags;
    size_t n_tasks, cap_tasks;
    struct mb_stream *streams;
    int n_streams, cap_streams;
    struct mb_flow_desc *fdesc;   /* pool of copied flow descriptions */
    size_t n_fdesc, cap_fdesc;
    int *dep_before, *dep_after;  /* edge list */
    size_t n_deps, cap_deps;
    char bad[256];                /* first misuse found while building */
    int no_critical;              /* the caller does not want the critical path: no releasers kept */
    int fold;                     /* fold chains (mb_engine_fold_chains), when no_critical */
    int chains;                   /* run: this run folds chains (fold && no_critical) */

    struct mb_flow_sys *net;      /* links live here (same ids) */
    struct mb_queue *q;

    /* run state */
    int ran;                      /* a run happened: counts and results must be rebuilt before the next */
    int *succ;                    /* CSR successor lists (ix.succ), cap_succ entries */
    size_t cap_succ;
    struct mb_rel *rel;           /* per task, when the critical path is tracked; else NULL */
    int last_end;                 /* task that ended last (lowest id among ties), -1 */
    double last_end_t;            /* when it ended */
    double *frem;                 /* per flow id: bytes remaining */
    int *ftask;                   /* per flow id: owning task */
    int fcap;                     /* allocated length of frem/ftask */
    int *scratch;                 /* flows retired at one instant */
    double now;
    double t_adv;                 /* flows' remaining bytes are valid at this time */
    int dirty;                    /* flow set changed since the last solve */
    unsigned long long seq;       /* events pushed in this run */
    int held;                     /* the heap's top is the event being handled: the next push replaces it */
    int flow_pending;             /* the network's next completion is scheduled: */
    struct mb_event flow_ev;      /* at this time, with this key */
    size_t n_done;
    double makespan;
    unsigned long long n_events, n_solves;
    int max_active;
    int *now_stack;               /* zero-length tasks started at `now`, not yet completed */
    int n_now, cap_now;
};

/* Calls that report misuse or grow arrays are rare: out of line, they keep
 * the build calls (one task and about one edge per op) short. */
#if defined(__GNUC__)
#define MB_ENGINE_COLD __attribute__((noinline, cold))
#else
#define MB_ENGINE_COLD
#endif

/* Record the first misuse found while building; mb_engine_run reports it. */
static void mb_engine__misuse(struct mb_engine *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void mb_engine__misuse(struct mb_engine *e, const char *fmt, ...)
{
    if (e->bad[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->bad, sizeof e->bad, fmt, ap);
    va_end(ap);
}

/* The build arrays of the last engine a thread freed (capacities kept, nothing
 * in them), handed to the next engine it creates: a sweep worker simulates
 * thousands of graphs of similar size, and reusing the arrays saves their
 * allocation, growth and first-touch page faults. Freed at thread exit. */
struct mb_engine_spare {
    struct mb_task *tasks;
    struct mb_tidx *ix;
    struct mb_tags *tags;
    size_t cap_tasks;
    int *dep_before, *dep_after;
    size_t cap_deps;
    struct mb_flow_desc *fdesc;
    size_t cap_fdesc;
    int *succ;
    size_t cap_succ;
};

static pthread_key_t mb_engine__spare_key;
static pthread_once_t mb_engine__spare_once = PTHREAD_ONCE_INIT;

static void mb_engine__spare_arrays_free(struct mb_engine_spare *sp)
{
    free(sp->tasks); /* posix_memalign'd */
    mb_free(sp->ix);
    mb_free(sp->tags);
    mb_free(sp->dep_before);
    mb_free(sp->dep_after);
    mb_free(sp->fdesc);
    mb_free(sp->succ);
}

static void mb_engine__spare_free(void *p)
{
    if (!p)
        return;
    mb_engine__spare_arrays_free(p);
    mb_free(p);
}

static void mb_engine__spare_init(void)
{
    if (pthread_key_create(&mb_engine__spare_key, mb_engine__spare_free))
        abort();
}

/* Take this thread's spare arrays into e (none: e keeps its empty ones). */
static void mb_engine__spare_take(struct mb_engine *e)
{
    pthread_once(&mb_engine__spare_once, mb_engine__spare_init);
    struct mb_engine_spare *sp = pthread_getspecific(mb_engine__spare_key);
    if (!sp)
        return;
    pthread_setspecific(mb_engine__spare_key, NULL);
    e->tasks = sp->tasks;
    e->ix = sp->ix;
    e->tags = sp->tags;
    e->cap_tasks = sp->cap_tasks;
    e->dep_before = sp->dep_before;
    e->dep_after = sp->dep_after;
    e->cap_deps = sp->cap_deps;
    e->fdesc = sp->fdesc;
    e->cap_fdesc = sp->cap_fdesc;
    e->succ = sp->succ;
    e->cap_succ = sp->cap_succ;
    mb_free(sp);
}

/* Keep e's build arrays as this thread's spare when it has none; else free them. */
static void mb_engine__spare_give(struct mb_engine *e)
{
    pthread_once(&mb_engine__spare_once, mb_engine__spare_init);
    struct mb_engine_spare mine = {e->tasks,      e->ix,       e->tags,  e->cap_tasks, e->dep_before, e->dep_after,
                                   e->cap_deps,   e->fdesc,    e->cap_fdesc, e->succ,  e->cap_succ};
    if (pthread_getspecific(mb_engine__spare_key)) {
        mb_engine__spare_arrays_free(&mine);
        return;
    }
    struct mb_engine_spare *sp = mb_malloc(sizeof *sp);
    *sp = mine;
    if (pthread_setspecific(mb_engine__spare_key, sp))
        mb_engine__spare_free(sp);
}

/* Array p grown to `bytes`, keeping its first `used` bytes: realloc when
 * there is something to keep, else a fresh block (a spare array taken from
 * the last engine holds nothing, and realloc would copy all of it). */
static void *mb_engine__regrow(void *p, size_t used, size_t bytes)
{
    if (used)
        return mb_realloc(p, bytes);
    mb_free(p);
    return mb_malloc(bytes);
}

/* Grow the per-task arrays to `cap` tasks (the records stay line-aligned). */
static void mb_engine__task_cap(struct mb_engine *e, size_t cap)
{
    void *p = NULL;
    if (posix_memalign(&p, MB_TASK_ALIGN, cap * sizeof *e->tasks)) {
        fprintf(stderr, "mbsim: out of memory allocating %zu bytes\n", cap * sizeof *e->tasks);
        abort();
    }
    if (e->n_tasks)
        memcpy(p, e->tasks, e->n_tasks * sizeof *e->tasks);
    free(e->tasks);
    e->tasks = p;
    e->cap_tasks = cap;
    struct mb_tidx ix0 = e->ix && !e->n_tasks ? e->ix[0] : (struct mb_tidx){0};
    e->ix = mb_engine__regrow(e->ix, e->n_tasks * sizeof *e->ix, (cap + 1) * sizeof *e->ix);
    if (!e->n_tasks)
        e->ix[0] = ix0; /* the first task's flow offset */
    e->tags = mb_engine__regrow(e->tags, e->n_tasks * sizeof *e->tags, cap * sizeof *e->tags);
}

struct mb_engine *mb_engine_new(void)
{
    struct mb_engine *e = mb_calloc(1, sizeof *e);
    e->net = mb_flow_new();
    e->q = mb_queue_new();
    mb_engine__spare_take(e);
    if (!e->ix)
        mb_engine__task_cap(e, 1024);
    e->ix[0] = (struct mb_tidx){0};
    return e;
}

static void mb_engine__free_run(struct mb_engine *e)
{
    mb_free(e->rel);
    mb_free(e->frem);
    mb_free(e->ftask);
    mb_free(e->scratch);
    e->rel = NULL;
    e->ftask = e->scratch = NULL;
    e->frem = NULL;
    e->fcap = 0;
}

void mb_engine_free(struct mb_engine *e)
{
    if (!e)
        return;
    mb_free(e->now_stack);
    mb_engine__free_run(e);
    mb_engine__spare_give(e);
    mb_free(e->streams);
    mb_flow_free(e->net);
    mb_queue_free(e->q);
    mb_free(e);
}

void mb_engine_track_critical(struct mb_engine *e, int on)
{
    e->no_critical = !on;
}

void mb_engine_fold_chains(struct mb_engine *e, int on)
{
    e->fold = on;
}

int mb_engine_add_link(struct mb_engine *e, double capacity)
{
    if (!(capacity > 0) || isinf(capacity)) {
        mb_engine__misuse(e, "link %d: capacity must be > 0 and finite",
                          mb_flow_n_links(e->net));
        capacity = 1; /* keep ids consistent; run() will fail */
    }
    return mb_flow_add_link(e->net, capacity);
}

int mb_engine_add_stream(struct mb_engine *e)
{
    if (e->n_streams == e->cap_streams) {
        e->cap_streams = e->cap_streams ? 2 * e->cap_streams : 16;
        e->streams = mb_realloc(e->streams, (size_t)e->cap_streams * sizeof *e->streams);
    }
    struct mb_stream *s = &e->streams[e->n_streams];
    s->head = s->tail = s->cur = -1;
    s->busy = 0;
    return e->n_streams++;
}

/* Check one flow description; record the first problem. */
static void mb_engine__check_flow(struct mb_engine *e, int task, int i,
                                  const struct mb_flow_desc *f)
{
    if (!(f->bytes > 0) || isinf(f->bytes))
        mb_engine__misuse(e, "task %d flow %d: bytes must be > 0 and finite", task, i);
    else if (f->n_links < 1 || f->n_links > MB_FLOW_MAX_LINKS)
        mb_engine__misuse(e, "task %d flow %d: must cross 1..%d links", task, i,
                          MB_FLOW_MAX_LINKS);
    else if (!(f->bound >= 0) || isinf(f->bound))
        mb_engine__misuse(e, "task %d flow %d: bound must be >= 0 and finite", task, i);
    else
        for (int k = 0; k < f->n_links; k++)
            if (f->links[k] < 0 || f->links[k] >= mb_flow_n_links(e->net)) {
                mb_engine__misuse(e, "task %d flow %d: unknown link %d", task, i, f->links[k]);
                break;
            }
}

void mb_engine_reserve(struct mb_engine *e, size_t tasks, size_t deps)
{
    if (tasks > e->cap_tasks)
        mb_engine__task_cap(e, tasks);
    if (deps > e->cap_deps) {
        e->cap_deps = deps;
        e->dep_before = mb_engine__regrow(e->dep_before, e->n_deps * sizeof *e->dep_before,
                                          e->cap_deps * sizeof *e->dep_before);
        e->dep_after = mb_engine__regrow(e->dep_after, e->n_deps * sizeof *e->dep_after,
                                         e->cap_deps * sizeof *e->dep_after);
    }
}

/* Copy task id's n flows into the pool (the entry after id's marks their end). */
static void mb_engine__add_flows_desc(struct mb_engine *e, int id, const struct mb_flow_desc *f, int n)
{
    if (e->n_fdesc + (size_t)n > e->cap_fdesc) {
        while (e->n_fdesc + (size_t)n > e->cap_fdesc)
            e->cap_fdesc = e->cap_fdesc ? 2 * e->cap_fdesc : 256;
        e->fdesc = mb_realloc(e->fdesc, e->cap_fdesc * sizeof *e->fdesc);
    }
    for (int i = 0; i < n; i++) {
        e->fdesc[e->n_fdesc + (size_t)i] = f[i]; /* a struct copy: two or three of them are no call to memcpy */
        mb_engine__check_flow(e, id, i, &f[i]);
    }
    e->n_fdesc += (size_t)n;
}

/* Whether task t, just added behind p on its stream, may ride in p's event:
 * neither has flows or zero length, and p has no successor yet (any it has
 * is an older task than t). Later edges into t from any other task, or out
 * of p to any other task, take it back (mb_engine_add_dep). */
static int mb_engine__can_ride_new(const struct mb_engine *e, int p, int t)
{
    return e->ix[p].succ == 0 && e->ix[p + 1].flow == e->ix[p].flow && e->ix[t + 1].flow == e->ix[t].flow &&
           e->tasks[p].duration > 0 && e->tasks[t].duration > 0;
}

/* Task id (its stream s, valid duration dur, flows already in the pool) into
 * its record, entry and stream. */
static inline void mb_engine__task_put(struct mb_engine *e, int id, double dur, const struct mb_task_desc *d)
{
    struct mb_stream *s = &e->streams[d->stream];
    e->tasks[id] = (struct mb_task){dur, -1, -1, d->stream, -1};
    e->tags[id] = (struct mb_tags){d->kind, d->tag};
    /* ix[id].flow was set when the task before it was added (or at creation) */
    e->ix[id].succ = 0;
    e->ix[id].pend = s->tail >= 0; /* the task before it on its stream */
    e->ix[id + 1].flow = (int)e->n_fdesc;
    e->ix[id].rides = s->tail >= 0 && mb_engine__can_ride_new(e, s->tail, id);
    if (s->tail >= 0)
        e->tasks[s->tail].next = id;
    else
        s->head = id;
    s->tail = id;
}

/* mb_engine_add_task with every check, array growth and flows (out of line:
 * the plain compute task, the common one, needs none of it). */
static MB_ENGINE_COLD int mb_engine__add_task_checked(struct mb_engine *e, const struct mb_task_desc *d)
{
    if (d->stream < 0 || d->stream >= e->n_streams) {
        mb_engine__misuse(e, "task %zu: unknown stream %d", e->n_tasks, d->stream);
        return -1;
    }
    if (e->n_tasks >= 0x7fffffff) {
        mb_engine__misuse(e, "too many tasks (%zu)", e->n_tasks);
        return -1;
    }
    if (e->n_fdesc + (size_t)(d->n_flows > 0 ? d->n_flows : 0) >= 0x7fffffff) {
        mb_engine__misuse(e, "too many flows (%zu)", e->n_fdesc);
        return -1;
    }
    if (e->n_tasks == e->cap_tasks)
        mb_engine__task_cap(e, 2 * e->cap_tasks);
    int id = (int)e->n_tasks++;
    double dur = d->duration;
    if (!(dur >= 0) || isinf(dur)) {
        mb_engine__misuse(e, "task %d: duration must be >= 0 and finite", id);
        dur = 0;
    }
    if (d->n_flows < 0 || (d->n_flows > 0 && !d->flows))
        mb_engine__misuse(e, "task %d: bad flow list (n_flows %d)", id, d->n_flows);
    else if (d->n_flows > 0)
        mb_engine__add_flows_desc(e, id, d->flows, d->n_flows);
    mb_engine__task_put(e, id, dur, d);
    return id;
}

int mb_engine_add_task(struct mb_engine *e, const struct mb_task_desc *d)
{
    double dur = d->duration;
    if ((size_t)(unsigned)d->stream >= (size_t)e->n_streams || e->n_tasks >= e->cap_tasks || e->n_tasks >= 0x7fffffff ||
        d->n_flows != 0 || !(dur >= 0 && dur <= DBL_MAX))
        return mb_engine__add_task_checked(e, d);
    int id = (int)e->n_tasks++;
    mb_engine__task_put(e, id, dur, d);
    return id;
}

/* Edge before -> after into the edge list and the counts. */
static inline void mb_engine__dep_put(struct mb_engine *e, int before, int after)
{
    e->dep_before[e->n_deps] = before;
    e->dep_after[e->n_deps] = after;
    e->n_deps++;
    e->ix[before].succ++;
    e->ix[after].pend++;
    /* a chain runs only from a task to its stream successor, with no other edge in or out */
    int nx = e->tasks[before].next;
    if (nx != after) {
        e->ix[after].rides = 0;
        if (nx >= 0)
            e->ix[nx].rides = 0;
    }
}

/* mb_engine_add_dep with every check and the edge list's growth. */
static MB_ENGINE_COLD void mb_engine__add_dep_checked(struct mb_engine *e, int before, int after)
{
    if (before < 0 || (size_t)before >= e->n_tasks || after < 0 || (size_t)after >= e->n_tasks) {
        mb_engine__misuse(e, "dependency %d -> %d names an unknown task", before, after);
        return;
    }
    if (e->n_deps >= 0x7fffffff) {
        mb_engine__misuse(e, "too many dependencies (%zu)", e->n_deps);
        return;
    }
    if (e->n_deps == e->cap_deps) {
        e->cap_deps = e->cap_deps ? 2 * e->cap_deps : 1024;
        e->dep_before = mb_realloc(e->dep_before, e->cap_deps * sizeof *e->dep_before);
        e->dep_after = mb_realloc(e->dep_after, e->cap_deps * sizeof *e->dep_after);
    }
    mb_engine__dep_put(e, before, after);
}

void mb_engine_add_dep(struct mb_engine *e, int before, int after)
{
    if ((size_t)(unsigned)before >= e->n_tasks || (size_t)(unsigned)after >= e->n_tasks || e->n_deps >= e->cap_deps ||
        e->n_deps >= 0x7fffffff) {
        mb_engine__add_dep_checked(e, before, after);
        return;
    }
    mb_engine__dep_put(e, before, after);
}

/* ---- run ----------------------------------------------------------------- */

static inline int mb_engine__n_flows(const struct mb_engine *e, int t)
{
    return e->ix[t + 1].flow - e->ix[t].flow;
}

static inline void mb_engine__push(struct mb_engine *e, double time, int task)
{
    assert(e->seq < 0xffffffffULL);
    unsigned long long key = (e->seq++ << 32) | (unsigned)task;
    if (e->held) { /* pop the handled event and push this one in one sift */
        e->held = 0;
        mb_queue_replace_top(e->q, time, key);
    } else
        mb_queue_push(e->q, time, key);
}

/* When the chain starting at task t ends: its tasks' durations added one by
 * one to its start, the sums the event loop would form event by event. */
static inline double mb_engine__chain_end(const struct mb_engine *e, const struct mb_task *tk)
{
    double end = e->now + tk->duration;
    for (int nx = tk->next; e->chains && nx >= 0 && e->ix[nx].rides; nx = e->tasks[nx].next)
        end += e->tasks[nx].duration;
    return end;
}

static inline void mb_engine__start(struct mb_engine *e, int t)
{
    struct mb_task *tk = &e->tasks[t];
    tk->start = e->now;
    if (tk->duration == 0 && mb_engine__n_flows(e, t) == 0) {
        /* zero-length (join) task: completes at this instant without a trip
         * through the event queue; drained by mb_engine_run before the next pop */
        if (e->n_now == e->cap_now) {
            e->cap_now = e->cap_now ? 2 * e->cap_now : 64;
            e->now_stack = mb_realloc(e->now_stack, (size_t)e->cap_now * sizeof *e->now_stack);
        }
        e->now_stack[e->n_now++] = t;
        return;
    }
    mb_engine__push(e, mb_engine__chain_end(e, tk), t);
}

/* Predecessor t of task u has just completed: it released u if it ended last
 * (ties: the lower id), which is what the critical path follows. Completions
 * come in time order, so t ended no earlier than the current candidate. */
static inline void mb_engine__note_release(struct mb_engine *e, int t, int u)
{
    struct mb_rel *x = &e->rel[u];
    if (x->task < 0 || e->now > x->end || t < x->task) {
        x->task = t;
        x->end = e->now;
    }
}

/* Predecessor t of task u (its stream predecessor or a dependency) has
 * completed: u starts when that was the last thing it waited for. */
static inline void mb_engine__release(struct mb_engine *e, int t, int u)
{
    if (e->rel)
        mb_engine__note_release(e, t, u);
    assert(e->ix[u].pend > 0);
    if (--e->ix[u].pend == 0)
        mb_engine__start(e, u);
}

/* The chain that task t heads has ended (its event): every task of it but the
 * last ends, releasing the next, which starts there (the last one completes
 * as any task). Returns the last task. Only where no critical path is kept:
 * `last_end` and the releasers are not updated for the tasks passed over. */
static int mb_engine__chain_pass(struct mb_engine *e, int t)
{
    struct mb_task *tk = &e->tasks[t];
    struct mb_stream *s = &e->streams[tk->stream];
    while (tk->next >= 0 && e->ix[tk->next].rides) {
        tk->end = tk->start + tk->duration;
        s->busy += tk->end - tk->start;
        e->n_done++;
        int nx = tk->next;
        struct mb_task *x = &e->tasks[nx];
        assert(e->ix[nx].pend == e->ix[t + 1].succ - e->ix[t].succ + 1);
        e->ix[nx].pend = 0;
        x->start = tk->end;
        s->cur = nx;
        t = nx;
        tk = x;
    }
    return t;
}

static void mb_engine__complete(struct mb_engine *e, int t)
{
    if (e->chains && e->tasks[t].next >= 0 && e->ix[e->tasks[t].next].rides)
        t = mb_engine__chain_pass(e, t);
    struct mb_task *tk = &e->tasks[t];
    tk->end = e->now;
    e->n_done++;
    if (e->last_end < 0 || e->now > e->last_end_t || t < e->last_end) {
        e->last_end = t;
        e->last_end_t = e->now;
    }
    /* release the stream */
    struct mb_stream *s = &e->streams[tk->stream];
    assert(s->cur == t);
    int nx = tk->next;
    s->cur = nx;
    s->busy += e->now - tk->start;
    if (nx >= 0)
        mb_engine__release(e, t, nx);
    /* notify successors */
    for (const int *u = &e->succ[e->ix[t].succ], *end = &e->succ[e->ix[t + 1].succ]; u < end; u++)
        mb_engine__release(e, t, *u);
}

/* Bring every active flow's remaining bytes up to `now` under current rates. */
static void mb_engine__advance(struct mb_engine *e)
{
    double dt = e->now - e->t_adv;
    if (dt > 0) {
        int n = mb_flow_n_active(e->net);
        for (int i = 0; i < n; i++) {
            int f = mb_flow_active(e->net, i);
            double r = e->frem[f] - mb_flow_rate(e->net, f) * dt;
            e->frem[f] = r > 0 ? r : 0;
        }
    }
    e->t_adv = e->now;
}

static void mb_engine__add_flows(struct mb_engine *e, int t)
{
    mb_engine__advance(e);
    for (int i = e->ix[t].flow; i < e->ix[t + 1].flow; i++) {
        const struct mb_flow_desc *d = &e->fdesc[i];
        int f = mb_flow_add(e->net, d->n_links, d->links, d->bound);
        assert(f >= 0); /* validated at add_task */
        if (f >= e->fcap) {
            e->fcap = e->fcap ? 2 * e->fcap : 256;
            while (f >= e->fcap)
                e->fcap *= 2;
            e->frem = mb_realloc(e->frem, (size_t)e->fcap * sizeof *e->frem);
            e->ftask = mb_realloc(e->ftask, (size_t)e->fcap * sizeof *e->ftask);
            e->scratch = mb_realloc(e->scratch, (size_t)e->fcap * sizeof *e->scratch);
        }
        e->frem[f] = d->bytes;
        e->ftask[f] = t;
    }
    e->ix[t].pend = mb_engine__n_flows(e, t);
    int na = mb_flow_n_active(e->net);
    if (na > e->max_active)
        e->max_active = na;
    e->dirty = 1;
}

/* Re-solve rates and move the network's next completion (it takes a fresh
 * key, as a push would, so ties with task events keep push order). */
static void mb_engine__resolve(struct mb_engine *e)
{
    mb_engine__advance(e);
    mb_flow_solve(e->net);
    e->n_solves++;
    e->dirty = 0;
    e->flow_pending = 0;
    int n = mb_flow_n_active(e->net);
    if (n == 0)
        return;
    double tmin = INFINITY;
    for (int i = 0; i < n; i++) {
        int f = mb_flow_active(e->net, i);
        double r = mb_flow_rate(e->net, f);
        assert(r > 0);
        double tf = e->now + e->frem[f] / r;
        if (tf < tmin)
            tmin = tf;
    }
    assert(e->seq < 0xffffffffULL);
    e->flow_ev = (struct mb_event){tmin, (e->seq++ << 32) | 0xffffffffULL};
    e->flow_pending = 1;
}

/* The network's next completion: retire every flow that is done at `now`. */
static void mb_engine__flows_done(struct mb_engine *e)
{
    e->flow_pending = 0;
    mb_engine__advance(e);
    int n = mb_flow_n_active(e->net), k = 0;
    for (int i = 0; i < n; i++) {
        int f = mb_flow_active(e->net, i);
        double r = mb_flow_rate(e->net, f);
        if (r > 0 && (e->frem[f] <= 0 || mb_dbl_eq(e->now, e->now + e->frem[f] / r)))
            e->scratch[k++] = f;
    }
    assert(k > 0);
    for (int i = 0; i < k; i++) {
        int f = e->scratch[i];
        int t = e->ftask[f];
        mb_flow_remove(e->net, f);
        if (--e->ix[t].pend == 0)
            mb_engine__complete(e, t);
    }
    e->dirty = 1;
}

/* The counts a run consumes, again from the streams and the edge list (a
 * second run; add_task and add_dep keep them as the graph is built). */
static void mb_engine__recount(struct mb_engine *e)
{
    for (size_t t = 0; t < e->n_tasks; t++) {
        e->ix[t].succ = 0;
        e->ix[t].pend = 0;
    }
    for (int s = 0; s < e->n_streams; s++)
        for (int t = e->streams[s].head; t >= 0 && e->tasks[t].next >= 0; t = e->tasks[t].next)
            e->ix[e->tasks[t].next].pend++;
    for (size_t i = 0; i < e->n_deps; i++) {
        e->ix[e->dep_before[i]].succ++;
        e->ix[e->dep_after[i]].pend++;
    }
}

/* The CSR successor lists from the out-degrees and the edge list: each
 * task's count becomes the end of its range, and a backward pass over the
 * edges fills the ranges from their ends, leaving each entry at the start of
 * its range with the successors in the order the dependencies were added. */
static void mb_engine__build_csr(struct mb_engine *e)
{
    size_t n = e->n_tasks;
    int sum = 0;
    for (size_t t = 0; t < n; t++) {
        sum += e->ix[t].succ;
        e->ix[t].succ = sum;
    }
    e->ix[n].succ = sum;
    if (e->n_deps > e->cap_succ) {
        e->cap_succ = e->n_deps > 2 * e->cap_succ ? e->n_deps : 2 * e->cap_succ;
        mb_free(e->succ);
        e->succ = mb_malloc(e->cap_succ * sizeof *e->succ);
    }
    for (size_t i = e->n_deps; i-- > 0;)
        e->succ[--e->ix[e->dep_before[i]].succ] = e->dep_after[i];
}

/* Reset the run state; results and counts are reset only when a run already
 * used them (add_task starts every task at -1 and counts as it goes). */
static void mb_engine__setup(struct mb_engine *e)
{
    mb_engine__free_run(e);
    mb_queue_clear(e->q);
    if (e->ran) {
        for (size_t t = 0; t < e->n_tasks; t++)
            e->tasks[t].start = e->tasks[t].end = -1;
        mb_engine__recount(e);
    }
    mb_engine__build_csr(e);
    e->chains = e->fold && e->no_critical;
    if (!e->no_critical) {
        e->rel = mb_malloc((e->n_tasks ? e->n_tasks : 1) * sizeof *e->rel);
        for (size_t t = 0; t < e->n_tasks; t++)
            e->rel[t] = (struct mb_rel){0, -1};
    }
    e->now = e->t_adv = 0;
    e->dirty = 0;
    e->flow_pending = 0;
    e->held = 0;
    e->seq = 0;
    e->n_done = 0;
    e->makespan = 0;
    e->n_events = e->n_solves = 0;
    e->n_now = 0;
    e->max_active = 0;
    e->last_end = -1;
    e->ran = 1;
}

/* Time of the next event, +inf when none is pending. */
static double mb_engine__next_time(const struct mb_engine *e)
{
    const struct mb_event *top = mb_queue_peek(e->q);
    double t = top ? top->time : INFINITY;
    return e->flow_pending && e->flow_ev.time < t ? e->flow_ev.time : t;
}

/* Take the next event: the heap's top or the network's completion, whichever
 * comes first by (time, key). Returns 0 when nothing is pending. The heap's
 * top stays in the heap, held: the first push while it is handled replaces
 * it (mb_engine__push), and mb_engine__drop_held pops it when none did. */
static int mb_engine__next(struct mb_engine *e, struct mb_event *ev)
{
    const struct mb_event *top = mb_queue_peek(e->q);
    if (e->flow_pending && (!top || e->flow_ev.time < top->time ||
                            (e->flow_ev.time == top->time && e->flow_ev.key < top->key))) {
        *ev = e->flow_ev;
        return 1;
    }
    if (!top)
        return 0;
    *ev = *top;
    e->held = 1;
    return 1;
}

/* The held event was handled without a push replacing it: pop it. */
static inline void mb_engine__drop_held(struct mb_engine *e)
{
    if (e->held) {
        e->held = 0;
        mb_queue_pop(e->q, NULL);
    }
}

static int mb_engine__deadlock(const struct mb_engine *e, struct mb_err *err)
{
    size_t never = 0;
    int first = -1;
    for (size_t t = 0; t < e->n_tasks; t++)
        if (e->tasks[t].start < 0) {
            if (first < 0)
                first = (int)t;
            never++;
        }
    assert(first >= 0);
    return mb_err_set(err, NULL, 0, 0, "deadlock: %zu tasks never became ready (first: task %d on stream %d)",
                      never, first, e->tasks[first].stream);
}

int mb_engine_run(struct mb_engine *e, struct mb_err *err)
{
    if (e->bad[0])
        return mb_err_set(err, NULL, 0, 0, "%s", e->bad);
    if (e->n_deps > 0x7fffffff)
        return mb_err_set(err, NULL, 0, 0, "too many dependencies (%zu)", e->n_deps);
    mb_engine__setup(e);
    for (int s = 0; s < e->n_streams; s++) {
        struct mb_stream *st = &e->streams[s];
        st->cur = st->head;
        st->busy = 0;
        if (st->cur >= 0 && e->ix[st->cur].pend == 0)
            mb_engine__start(e, st->cur);
    }
    struct mb_event ev;
    for (;;) {
        while (e->n_now > 0) {
            int t = e->now_stack[--e->n_now];
            e->n_events++;
            mb_engine__complete(e, t);
        }
        mb_engine__drop_held(e); /* before anything looks at the heap again */
        /* solve once per instant, after all of its events */
        if (e->dirty && mb_engine__next_time(e) > e->now)
            mb_engine__resolve(e);
        if (!mb_engine__next(e, &ev))
            break;
        assert(ev.time >= e->now);
        e->now = ev.time;
        e->n_events++;
        if (e->flow_pending && ev.key == e->flow_ev.key) {
            mb_engine__flows_done(e);
            continue;
        }
        int t = MB_EV_TASK(ev.key);
        if (mb_engine__n_flows(e, t) == 0)
            mb_engine__complete(e, t);
        else
            mb_engine__add_flows(e, t);
    }
    assert(mb_flow_n_active(e->net) == 0);
    e->makespan = e->now;
    return e->n_done < e->n_tasks ? mb_engine__deadlock(e, err) : 0;
}

/* ---- results --------------------------------------------------------------- */

size_t mb_engine_n_tasks(const struct mb_engine *e) { return e->n_tasks; }

double mb_engine_task_start(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tasks[task].start;
}

double mb_engine_task_end(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tasks[task].end;
}

int mb_engine_task_kind(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tags[task].kind;
}

int mb_engine_task_tag(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tags[task].tag;
}

int mb_engine_task_stream(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tasks[task].stream;
}

int mb_engine_stream_first(const struct mb_engine *e, int stream)
{
    return stream >= 0 && stream < e->n_streams ? e->streams[stream].head : -1;
}

double mb_engine_stream_busy(const struct mb_engine *e, int stream)
{
    return stream >= 0 && stream < e->n_streams ? e->streams[stream].busy : 0;
}

int mb_engine_task_next(const struct mb_engine *e, int task)
{
    assert(task >= 0 && (size_t)task < e->n_tasks);
    return e->tasks[task].next;
}

double mb_engine_makespan(const struct mb_engine *e) { return e->makespan; }

unsigned long long mb_engine_n_events(const struct mb_engine *e) { return e->n_events; }

unsigned long long mb_engine_n_solves(const struct mb_engine *e) { return e->n_solves; }

int mb_engine_max_active_flows(const struct mb_engine *e) { return e->max_active; }

/*
 * Critical path: from the task that ends last, repeatedly step to the
 * predecessor (a dependency, or the previous task on the same stream) that
 * ended last, i.e. the one that released the task; ties go to the lower id.
 * The run records both (last_end, rel), so this is O(path length).
 */
size_t mb_engine_critical_path(const struct mb_engine *e, int *out, size_t max)
{
    if (!e->n_tasks || !max || !e->ran || !e->rel)
        return 0;
    size_t k = 0;
    for (int cur = e->last_end; cur >= 0 && k < max && e->tasks[cur].start >= 0; cur = e->rel[cur].task)
        out[k++] = cur;
    return k;
}

size_t mb_engine_n_deps(const struct mb_engine *e) { return e->n_deps; }

void mb_engine_dep(const struct mb_engine *e, size_t i, int *before, int *after)
{
    assert(i < e->n_deps);
    *before = e->dep_before[i];
    *after = e->dep_after[i];
}
