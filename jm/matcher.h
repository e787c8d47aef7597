/* matcher.h - candidate sets and task-to-node matching for one scheduling batch (Apollo §3.3
 * "Stable Matching", §5.5; docs/jm-placement.md).
 *
 * A batch is a set of tasks (in descending priority), each with a candidate list of nodes and the
 * estimated completion time C (jm/estimator.h) and wait W on each. At most one task is matched
 * to a node per batch ("Apollo assigns only one task to each server in a single batch"), except
 * by matcher_stable_room: there a node with room for several tasks now takes several.
 *
 * Stable matcher (from §3.3): "For each task in a batch, Apollo finds the server with the
 * earliest estimated completion time as a proposal for that task. A server accepts a proposal
 * from a task if that is the only proposal assigned. A conflict arises when more than one task
 * proposes to the same server. In this case, the server picks the task whose completion time
 * saving is the greatest if it is assigned to the server. The tasks not picked withdraw their
 * proposals and enter the next iteration that tries to match the remaining tasks and servers.
 * The algorithm iterates until all tasks have been assigned, or until it reaches the maximum
 * number of iterations." The saving is C at the task's next-best remaining node minus C here
 * (infinite when it has no other). Savings within MATCHER_SAVING_TIE_S of each other are a tie
 * (the estimator's random term is of that order), and ties go to the task earlier in the batch
 * (higher priority): a job's critical task takes the node with room before its siblings.
 *
 * Greedy matcher: tasks in batch order, each takes its cheapest remaining candidate.
 * Optimal matcher: the exact per-batch assignment minimising the sum of C (Hungarian algorithm,
 * O(r^2 c) for r = min(tasks, nodes), c = max) among assignments that match as many tasks as
 * possible; for reference and benchmarks.
 *
 * Every matcher returns the matches "sorted by quality": "a match is considered with a higher
 * quality if its task has a lower server wait time" (ties: lower C, then batch order). Tasks left
 * unmatched stay for the next batch.
 *
 * Pure and deterministic: random choices (candidate sets) take draws from the caller.
 */
#ifndef PADDOCK_JM_MATCHER_H
#define PADDOCK_JM_MATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "jm/estimator.h"
#include "jm/view.h"

#define MATCHER_SAVING_TIE_S 0.05 /* savings closer than this are a tie (seconds) */

/* One candidate of a task (public value). */
struct matcher_cand {
    uint32_t node;
    double cost; /* C, seconds; >= ESTIMATOR_INF means "cannot" */
    double wait; /* W, seconds (for the quality order) */
};

/* Resources: a node's room now, or a task's request. */
struct matcher_room {
    double cpu;    /* cores */
    double mem_mb; /* MiB */
};

/* A batch: task i's candidates are cand[off[i] .. off[i+1]). Caller-owned, borrowed by the
 * matchers for the call. Candidate nodes must be < nnodes of the matcher. */
struct matcher_batch {
    size_t ntasks;
    const size_t *off; /* ntasks + 1 offsets */
    const struct matcher_cand *cand;
};

struct matcher_match {
    size_t task; /* index into the batch */
    uint32_t node;
    double cost;
    double wait;
};

/* Candidate-set policy (public value; matcher_cand_config_default). */
struct matcher_cand_config {
    double significant_frac; /* an input is significant at >= this share of the task's bytes
                                (default 0.1) */
    size_t max_rack_nodes;   /* rack-mates taken per significant rack (default 16) */
    size_t nrandom;          /* random picks from the lightly-loaded list (default 2) */
    size_t all_nodes_max;    /* a view of at most this many nodes offers every up node (default
                                0: off; the daemon sets PLACE_ALL_NODES_MAX) */
};

void matcher_cand_config_default(struct matcher_cand_config *cfg);

typedef struct matcher matcher_t;

/* New matcher for views of up to `nnodes` nodes (scratch per node; matcher_reserve grows it).
 * Returns 0, ERR_NOMEM. Caller owns *out; matcher_destroy. */
int matcher_new(size_t nnodes, matcher_t **out);
void matcher_destroy(matcher_t **p);
int matcher_reserve(matcher_t *m, size_t nnodes);

/* Candidate set of one task (§3.3): "(i) a set of servers on which inputs of significant sizes
 * are located (ii) a set of servers in the same rack as those from the first group (iii) two
 * servers randomly picked from a set of lightly-loaded servers". Rack-mates are taken from a
 * window starting at a random offset (draws[0]); the random picks use draws[1..] (each in
 * [0,1)); ndraws should be at least 1 + cfg->nrandom; a pick landing on a node already in the
 * set (or down) takes the next node of the list, so the picks are distinct when the list has
 * enough up nodes. Nodes known to cache the task's files (t->cached_nodes, up to max_rack_nodes
 * of them) join the set too. Writes up to `cap` distinct up nodes into out and returns how many.
 * Uses the view's light list (view_refresh_light). */
size_t matcher_candidates(matcher_t *m, const view_t *view, const struct estimator_task *t,
                          const struct matcher_cand_config *cfg, const double *draws, size_t ndraws,
                          uint32_t *out, size_t cap);

/* Stable matching with at most max_iter iterations (>= 1; Apollo: "usually converges in less
 * than 3 iterations"). Writes up to batch->ntasks matches into out (caller-provided, ntasks
 * entries) and stores their number in *nout. Returns 0, ERR_INVAL (bad node index), ERR_NOMEM. */
int matcher_stable(matcher_t *m, const struct matcher_batch *batch, int max_iter,
                   struct matcher_match *out, size_t *nout);

/* Stable matching with room (beyond Apollo's one task per server per batch): a node still
 * accepts its first task of the batch whatever its room (the task queues there, as in Apollo),
 * and further tasks while the tasks it accepted fit its room together, in cores and MiB.
 * room[node] (node < nnodes of the matcher; read for candidate nodes only) is what the node can
 * start now (its zero-wait cells, jm/place.h), need[i] the request of batch task i. In each
 * iteration every unmatched task proposes to its cheapest node still open to it; a node takes
 * its proposals in order of saving (as matcher_stable picks its one) while they fit; the others
 * withdraw and propose again in the next iteration. So one big idle node fills in one batch,
 * and with no room anywhere this is matcher_stable. Same contract as matcher_stable; ERR_INVAL
 * also when room or need is NULL. */
int matcher_stable_room(matcher_t *m, const struct matcher_batch *batch,
                        const struct matcher_room *room, const struct matcher_room *need,
                        int max_iter, struct matcher_match *out, size_t *nout);

/* Greedy matching in batch order. Same contract as matcher_stable. */
int matcher_greedy(matcher_t *m, const struct matcher_batch *batch, struct matcher_match *out,
                   size_t *nout);

/* Exact per-batch optimum (Hungarian). Same contract; allocates O(r*c) for the dense matrix, so
 * ERR_TOOBIG when tasks x distinct nodes exceeds 1e7. */
int matcher_optimal(matcher_t *m, const struct matcher_batch *batch, struct matcher_match *out,
                    size_t *nout);

/* Exact per-batch optimum for the batch's latest completion: among assignments matching the most
 * tasks, the one minimising the largest C (bottleneck assignment, by binary search over the costs
 * with augmenting-path matchings), ties broken by the smallest sum of C (Hungarian over the pairs
 * within the bottleneck). The reference for completion-time comparisons (paddock-sim match).
 * Same contract as matcher_optimal. */
int matcher_optimal_bottleneck(matcher_t *m, const struct matcher_batch *batch,
                               struct matcher_match *out, size_t *nout);

/* Sorts matches by quality (lower wait first, then lower cost, then lower task index). */
void matcher_sort(struct matcher_match *v, size_t n);

#endif
