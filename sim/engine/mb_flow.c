/*
 * mb_flow.c -- max-min fair bandwidth sharing by progressive filling
 * (the SimGrid LMM "lmm_solve" idea, rewritten around a lazy heap).
 *
 * MODEL
 *   Links l with capacity C_l > 0; flows f with rate x_f >= 0, route R(f) and
 *   optional bound b_f. a_fl = number of times f crosses l (normally 1).
 *
 *     feasibility:  for every link l:   sum_{f : l in R(f)} a_fl * x_f <= C_l
 *                   for every flow f:   x_f <= b_f          (if bounded)
 *
 *   x is max-min fair when no x_f can grow without shrinking some x_g <= x_f.
 *   Equivalently (the bottleneck characterisation, which the tests check):
 *   every flow f either sits at its bound (x_f = b_f) or crosses a link l that
 *   is saturated (sum a_gl x_g = C_l) and on which f is among the largest:
 *   x_f >= x_g for all g crossing l.
 *
 * ALGORITHM (progressive filling / water-filling)
 *   Raise all unfrozen rates together from 0. With R_l = C_l minus the rates
 *   of the flows already frozen on l, and N_l = sum of a_fl over unfrozen
 *   flows on l, link l saturates when the common level reaches
 *   share_l = R_l / N_l. The next event is
 *
 *       s* = min( min_l share_l , min_{f unfrozen, bounded} b_f ).
 *
 *   If a link attains s*, all its unfrozen flows freeze at s*; if a bound does,
 *   that flow freezes at b_f. Freezing f at s subtracts a_fl * s from R_l and
 *   a_fl from N_l on every link of its route. Repeat until all are frozen.
 *
 *   Key fact: freezing at s <= share_l never lowers share_l, since
 *   (R_l - a s)/(N_l - a) >= R_l/N_l  <=>  s <= R_l/N_l. So candidate shares
 *   sit in a binary heap and only ever increase; an outdated entry is
 *   recognised by a per-link version and skipped (lazy deletion). Ties pop in
 *   (share, link id / flow id) order, so results are deterministic. Each link
 *   is processed once; each freeze pushes at most one entry per route link.
 *
 * COST
 *   O(I log I) per solve, I = sum of route lengths over active flows, using
 *   per-link incidence lists (no O(F^2 L) scan). Links without active flows
 *   are never touched (a per-solve stamp marks the ones in use).
 *
 * TOLERANCE
 *   Residual capacities are updated with mb_dbl_sub_clamp (MB_EPS), so a link
 *   saturated up to rounding reads exactly 0.
 *
 * SELECTIVE UPDATE
 *   When every active flow crosses a single link (the step model's flows do),
 *   links are independent systems and a solve re-solves only the links whose
 *   flow set changed since the last one (SimGrid's selective update, for the
 *   simplest components). Any multi-link or link-less flow makes it solve
 *   everything, as before.
 *
 * KNOWN LIMITS / BETTER ALTERNATIVES
 *   With multi-link flows every solve recomputes all active flows; tracking
 *   connected components would extend the selective update to them. No latency model here: the engine
 *   pays latency (task duration) before a flow enters the solver. No TCP
 *   "weight ~ 1/RTT" factor: all flows have equal weight.
 */
#include "mb_flow.h"

#include <assert.h>
#include <string.h>

#include "mb_util.h"

/* One crossing of a link by a flow: route index k of flow `flow`. */
struct mb_finc {
    int flow;
    int k;
};

struct mb_flink {
    double cap;             /* capacity, bytes/s */
    struct mb_finc *inc;    /* flows crossing this link */
    int n_inc, cap_inc;
    /* solve scratch */
    double rem;             /* R_l: capacity left for unfrozen flows */
    int nun;                /* N_l: unfrozen incidences */
    unsigned ver;           /* bumped whenever rem/nun change */
    unsigned long long stamp; /* solve number that initialised rem/nun */
    int dirty;              /* its flow set changed since the last solve */
};

struct mb_fvar {
    int n_links;
    int links[MB_FLOW_ROUTE_MAX];
    int pos[MB_FLOW_ROUTE_MAX]; /* index of incidence k in links[k]'s list */
    double bound;           /* 0 = none */
    double rate;            /* result of the last solve */
    int active_pos;         /* index in active[], -1 when the id is free */
    unsigned long long frozen; /* solve number in which it was frozen */
};

/* Heap entry: a candidate share. idx < n_links: link; else flow idx-n_links. */
struct mb_fent {
    double key;
    int idx;
    unsigned ver;
};

struct mb_flow_sys {
    struct mb_flink *links;
    int n_links, cap_links;
    struct mb_fvar *flows;
    int n_flows, cap_flows;  /* ids handed out so far, allocated */
    int *free_ids;           /* stack of recycled ids */
    int n_free;
    int *active;             /* dense list of active flow ids */
    int n_active;
    struct mb_fent *heap;    /* solve scratch */
    int n_heap, cap_heap;
    unsigned long long n_solves;
    int *dirty;              /* links whose flow set changed since the last solve */
    int n_dirty, cap_dirty;
    int n_multi;             /* active flows that do not cross exactly one link */
};

struct mb_flow_sys *mb_flow_new(void)
{
    return mb_calloc(1, sizeof(struct mb_flow_sys));
}

void mb_flow_free(struct mb_flow_sys *s)
{
    if (!s)
        return;
    for (int l = 0; l < s->n_links; l++)
        mb_free(s->links[l].inc);
    mb_free(s->links);
    mb_free(s->flows);
    mb_free(s->free_ids);
    mb_free(s->active);
    mb_free(s->heap);
    mb_free(s->dirty);
    mb_free(s);
}

int mb_flow_add_link(struct mb_flow_sys *s, double capacity)
{
    assert(capacity > 0);
    if (s->n_links == s->cap_links) {
        s->cap_links = s->cap_links ? 2 * s->cap_links : 16;
        s->links = mb_realloc(s->links, (size_t)s->cap_links * sizeof *s->links);
    }
    struct mb_flink *l = &s->links[s->n_links];
    memset(l, 0, sizeof *l);
    l->cap = capacity;
    return s->n_links++;
}

int mb_flow_n_links(const struct mb_flow_sys *s) { return s->n_links; }

/* Link li's flow set changed: the next solve re-solves it. */
static void mb_flow__mark(struct mb_flow_sys *s, int li)
{
    struct mb_flink *l = &s->links[li];
    if (l->dirty)
        return;
    l->dirty = 1;
    if (s->n_dirty == s->cap_dirty) {
        s->cap_dirty = s->cap_dirty ? 2 * s->cap_dirty : 16;
        s->dirty = mb_realloc(s->dirty, (size_t)s->cap_dirty * sizeof *s->dirty);
    }
    s->dirty[s->n_dirty++] = li;
}

double mb_flow_link_capacity(const struct mb_flow_sys *s, int link)
{
    assert(link >= 0 && link < s->n_links);
    return s->links[link].cap;
}

int mb_flow_add(struct mb_flow_sys *s, int n_links, const int *links, double bound)
{
    if (n_links < 0 || n_links > MB_FLOW_ROUTE_MAX || !(bound >= 0))
        return -1;
    if (n_links == 0 && !(bound > 0))
        return -1;
    for (int k = 0; k < n_links; k++)
        if (links[k] < 0 || links[k] >= s->n_links)
            return -1;

    int id;
    if (s->n_free > 0) {
        id = s->free_ids[--s->n_free];
    } else {
        if (s->n_flows == s->cap_flows) {
            s->cap_flows = s->cap_flows ? 2 * s->cap_flows : 64;
            s->flows = mb_realloc(s->flows, (size_t)s->cap_flows * sizeof *s->flows);
            s->free_ids = mb_realloc(s->free_ids, (size_t)s->cap_flows * sizeof *s->free_ids);
            s->active = mb_realloc(s->active, (size_t)s->cap_flows * sizeof *s->active);
        }
        id = s->n_flows++;
    }
    struct mb_fvar *f = &s->flows[id];
    f->n_links = n_links;
    f->bound = bound;
    f->rate = 0;
    f->frozen = 0;
    for (int k = 0; k < n_links; k++) {
        struct mb_flink *l = &s->links[links[k]];
        if (l->n_inc == l->cap_inc) {
            l->cap_inc = l->cap_inc ? 2 * l->cap_inc : 8;
            l->inc = mb_realloc(l->inc, (size_t)l->cap_inc * sizeof *l->inc);
        }
        f->links[k] = links[k];
        f->pos[k] = l->n_inc;
        l->inc[l->n_inc].flow = id;
        l->inc[l->n_inc].k = k;
        l->n_inc++;
        mb_flow__mark(s, links[k]);
    }
    s->n_multi += n_links != 1;
    f->active_pos = s->n_active;
    s->active[s->n_active++] = id;
    return id;
}

void mb_flow_remove(struct mb_flow_sys *s, int flow)
{
    assert(flow >= 0 && flow < s->n_flows);
    struct mb_fvar *f = &s->flows[flow];
    assert(f->active_pos >= 0);
    for (int k = 0; k < f->n_links; k++) {
        struct mb_flink *l = &s->links[f->links[k]];
        int p = f->pos[k];
        struct mb_finc last = l->inc[--l->n_inc];
        if (p != l->n_inc) {
            l->inc[p] = last;
            s->flows[last.flow].pos[last.k] = p;
        }
        mb_flow__mark(s, f->links[k]);
    }
    s->n_multi -= f->n_links != 1;
    int ap = f->active_pos;
    int last_id = s->active[--s->n_active];
    if (ap != s->n_active) {
        s->active[ap] = last_id;
        s->flows[last_id].active_pos = ap;
    }
    f->active_pos = -1;
    f->rate = 0;
    s->free_ids[s->n_free++] = flow;
}

/* ---- solve-time heap of candidate shares -------------------------------- */

static inline int mb_flow__less(const struct mb_fent *x, const struct mb_fent *y)
{
    if (x->key < y->key)
        return 1;
    if (x->key > y->key)
        return 0;
    return x->idx < y->idx;
}

static void mb_flow__heap_push(struct mb_flow_sys *s, double key, int idx, unsigned ver)
{
    if (s->n_heap == s->cap_heap) {
        s->cap_heap = s->cap_heap ? 2 * s->cap_heap : 64;
        s->heap = mb_realloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
    }
    struct mb_fent x = {key, idx, ver};
    int i = s->n_heap++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!mb_flow__less(&x, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = x;
}

static void mb_flow__sift_down(struct mb_flow_sys *s, int i)
{
    int n = s->n_heap;
    struct mb_fent x = s->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && mb_flow__less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!mb_flow__less(&s->heap[c], &x))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = x;
}

static struct mb_fent mb_flow__heap_pop(struct mb_flow_sys *s)
{
    struct mb_fent top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    if (s->n_heap > 0)
        mb_flow__sift_down(s, 0);
    return top;
}

/* Freeze flow `fid` at `rate`; update every link of its route except `skip`
 * (the link being processed, whose flows all freeze anyway). */
static void mb_flow__freeze(struct mb_flow_sys *s, int fid, double rate, int skip)
{
    struct mb_fvar *f = &s->flows[fid];
    f->rate = rate;
    f->frozen = s->n_solves;
    for (int k = 0; k < f->n_links; k++) {
        int li = f->links[k];
        struct mb_flink *l = &s->links[li];
        l->rem = mb_dbl_sub_clamp(l->rem, rate);
        l->nun--;
        l->ver++;
        assert(l->nun >= 0);
        if (li != skip && l->nun > 0)
            mb_flow__heap_push(s, l->rem / l->nun, li, l->ver);
    }
}

/* Solve scratch: flow fid's links (the first time this solve meets each) and
 * its bound as candidates. */
static void mb_flow__candidates(struct mb_flow_sys *s, unsigned long long stamp, int fid)
{
    struct mb_fvar *f = &s->flows[fid];
    for (int k = 0; k < f->n_links; k++) {
        struct mb_flink *l = &s->links[f->links[k]];
        if (l->stamp != stamp) {
            l->stamp = stamp;
            l->rem = l->cap;
            l->nun = l->n_inc;
            l->ver++;
            if (s->n_heap == s->cap_heap) {
                s->cap_heap = s->cap_heap ? 2 * s->cap_heap : 64;
                s->heap = mb_realloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
            }
            struct mb_fent e = {l->cap / l->n_inc, f->links[k], l->ver};
            s->heap[s->n_heap++] = e;
        }
    }
    if (f->bound > 0) {
        if (s->n_heap == s->cap_heap) {
            s->cap_heap = s->cap_heap ? 2 * s->cap_heap : 64;
            s->heap = mb_realloc(s->heap, (size_t)s->cap_heap * sizeof *s->heap);
        }
        struct mb_fent e = {f->bound, s->n_links + fid, 0};
        s->heap[s->n_heap++] = e;
    }
}

/* Progressive filling of the `left` flows whose candidates are in the heap. */
static void mb_flow__fill(struct mb_flow_sys *s, unsigned long long stamp, int left)
{
    for (int i = s->n_heap / 2 - 1; i >= 0; i--)
        mb_flow__sift_down(s, i);
    while (left > 0) {
        assert(s->n_heap > 0);
        struct mb_fent e = mb_flow__heap_pop(s);
        if (e.idx < s->n_links) {
            struct mb_flink *l = &s->links[e.idx];
            if (e.ver != l->ver || l->nun == 0)
                continue; /* outdated candidate */
            double share = l->rem / l->nun;
            /* Freezing may swap nothing in l->inc (lists change only on
             * add/remove), so iterating by index is safe. */
            for (int j = 0; j < l->n_inc; j++) {
                int fid = l->inc[j].flow;
                if (s->flows[fid].frozen == stamp)
                    continue;
                mb_flow__freeze(s, fid, share, e.idx);
                left--;
            }
            assert(l->nun == 0);
        } else {
            int fid = e.idx - s->n_links;
            if (s->flows[fid].frozen == stamp)
                continue;
            mb_flow__freeze(s, fid, s->flows[fid].bound, -1);
            left--;
        }
    }
    s->n_heap = 0;
}

/* A link crossed by one flow only (and by nothing else): progressive filling
 * has two candidates, the link's share cap / 1 and the flow's bound, and
 * freezes the flow at the smaller (the link on a tie: links order first), so
 * the rate is that, bit for bit, without the heap. */
static void mb_flow__solve_alone(struct mb_flow_sys *s, unsigned long long stamp, struct mb_flink *l)
{
    struct mb_fvar *f = &s->flows[l->inc[0].flow];
    f->rate = f->bound > 0 && f->bound < l->cap ? f->bound : l->cap;
    f->frozen = stamp;
}

/*
 * Selective update: when every active flow crosses exactly one link, each
 * link is a system of its own (its flows' rates depend on its capacity and
 * flows alone), so only the links whose flow set changed are re-solved; the
 * others keep their rates, which a full solve would compute again to the
 * bit (the same candidates pop in the same (share, id) order, a total order,
 * and touch only that link). Otherwise every active flow is re-solved.
 */
void mb_flow_solve(struct mb_flow_sys *s)
{
    unsigned long long stamp = ++s->n_solves;
    s->n_heap = 0;
    if (s->n_active > 0 && s->n_multi == 0) {
        for (int i = 0; i < s->n_dirty; i++) {
            struct mb_flink *l = &s->links[s->dirty[i]];
            if (l->n_inc == 1) {
                mb_flow__solve_alone(s, stamp, l);
                continue;
            }
            for (int j = 0; j < l->n_inc; j++)
                mb_flow__candidates(s, stamp, l->inc[j].flow);
            mb_flow__fill(s, stamp, l->n_inc);
        }
    } else if (s->n_active > 0) {
        for (int i = 0; i < s->n_active; i++)
            mb_flow__candidates(s, stamp, s->active[i]);
        mb_flow__fill(s, stamp, s->n_active);
    }
    for (int i = 0; i < s->n_dirty; i++)
        s->links[s->dirty[i]].dirty = 0;
    s->n_dirty = 0;
}

double mb_flow_rate(const struct mb_flow_sys *s, int flow)
{
    assert(flow >= 0 && flow < s->n_flows);
    return s->flows[flow].rate;
}

int mb_flow_n_active(const struct mb_flow_sys *s) { return s->n_active; }

int mb_flow_active(const struct mb_flow_sys *s, int i)
{
    assert(i >= 0 && i < s->n_active);
    return s->active[i];
}

int mb_flow_id_bound(const struct mb_flow_sys *s) { return s->n_flows; }

double mb_flow_link_load(const struct mb_flow_sys *s, int link)
{
    assert(link >= 0 && link < s->n_links);
    const struct mb_flink *l = &s->links[link];
    double sum = 0;
    for (int j = 0; j < l->n_inc; j++)
        sum += s->flows[l->inc[j].flow].rate;
    return sum;
}

unsigned long long mb_flow_n_solves(const struct mb_flow_sys *s) { return s->n_solves; }
