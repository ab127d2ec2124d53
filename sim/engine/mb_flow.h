/*
 * mb_flow.h -- flow-level network model: max-min fair sharing of link
 * bandwidth between concurrent flows (SimGrid LMM resource/action design).
 *
 * A link is a constraint with a capacity C_l (bytes/s). A flow is a variable
 * with a rate x_f (bytes/s) that crosses a route of 1..MB_FLOW_ROUTE_MAX
 * links, each with coefficient 1 (SimGrid's expand(link, flow, 1.0)), and may
 * carry an upper bound b_f (a NIC injection limit, a protocol cap).
 * mb_flow_solve() assigns the max-min fair rates; the math and the algorithm
 * are written out at the top of mb_flow.c.
 *
 * The system is incremental: flows come and go between solves (the engine
 * adds a task's flows when its latency has elapsed and removes them when
 * their bytes are delivered). Flow ids are small integers recycled after
 * mb_flow_remove(), so callers can keep per-flow data in plain arrays sized
 * mb_flow_id_bound().
 *
 * The solver only computes rates; it knows nothing of bytes or time. The
 * caller advances `remaining -= rate * dt` and picks the next completion
 * min(remaining / rate) (SimGrid's share_resources / update_actions_state).
 */
#ifndef MB_FLOW_H
#define MB_FLOW_H

#include <stddef.h>

/** Maximum number of links on one route. */
#define MB_FLOW_ROUTE_MAX 8

struct mb_flow_sys;

/** @brief Create an empty system. @return the system (never NULL). */
struct mb_flow_sys *mb_flow_new(void);

/** @brief Free a system. @param[in] s system, or NULL. */
void mb_flow_free(struct mb_flow_sys *s);

/**
 * @brief Add a link (constraint).
 * @param[in] capacity  bytes/s, > 0 (asserted)
 * @return link id: 0, 1, 2, ... in call order.
 */
int mb_flow_add_link(struct mb_flow_sys *s, double capacity);

/** @brief Number of links added so far. */
int mb_flow_n_links(const struct mb_flow_sys *s);

/** @brief Capacity of a link (bytes/s). */
double mb_flow_link_capacity(const struct mb_flow_sys *s, int link);

/**
 * @brief Add a flow (variable) crossing `n_links` links.
 * @param[in] n_links  1..MB_FLOW_ROUTE_MAX (0 is allowed only with bound > 0)
 * @param[in] links    link ids; a link listed twice counts twice (coefficient 2)
 * @param[in] bound    rate cap in bytes/s, or 0 for none
 * @return flow id >= 0 (recycled after removal), or -1 for an invalid route
 * (bad count, unknown link, negative bound, no link and no bound).
 * The new flow's rate is 0 until the next mb_flow_solve().
 */
int mb_flow_add(struct mb_flow_sys *s, int n_links, const int *links, double bound);

/** @brief Remove an active flow; its id may be handed out again. */
void mb_flow_remove(struct mb_flow_sys *s, int flow);

/**
 * @brief Assign max-min fair rates to all active flows.
 * Cost O(I log I) with I = sum of route lengths of active flows; links
 * without active flows cost nothing.
 */
void mb_flow_solve(struct mb_flow_sys *s);

/** @brief Rate of a flow from the last solve (bytes/s; 0 if added since). */
double mb_flow_rate(const struct mb_flow_sys *s, int flow);

/** @brief Number of active flows. */
int mb_flow_n_active(const struct mb_flow_sys *s);

/**
 * @brief The i-th active flow, 0 <= i < mb_flow_n_active(). The order is
 * deterministic (it depends only on the sequence of add/remove calls) and
 * changes when flows are removed.
 */
int mb_flow_active(const struct mb_flow_sys *s, int i);

/** @brief One more than the largest flow id ever handed out (array sizing). */
int mb_flow_id_bound(const struct mb_flow_sys *s);

/** @brief Sum of the rates of the active flows crossing `link` (last solve). */
double mb_flow_link_load(const struct mb_flow_sys *s, int link);

/** @brief Number of mb_flow_solve() calls so far (for statistics). */
unsigned long long mb_flow_n_solves(const struct mb_flow_sys *s);

#endif /* MB_FLOW_H */
