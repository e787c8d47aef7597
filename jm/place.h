/* place.h - one scheduling round of the JM: from ready tasks (in priority order) to matches
 * (in quality order), gluing spec, view, estimator and matcher (Apollo §3.3; docs/architecture.md,
 * "How a task flows", step 4).
 *
 * For each task of the batch: its candidate set (matcher_candidates), an estimate C for every
 * candidate (estimator_estimate, with one random draw per estimate), then the stable matcher.
 * The JM dispatches the returned matches in order (jm/dispatch.h) until it runs out of tokens
 * and allowance; unmatched or undispatched tasks stay ready for the next round.
 *
 * Also kept here, per job: the spec's input node names resolved to view indices (re-resolved
 * with place_resolve when the view learns nodes), the nodes known to hold each stage's files
 * (I = 0 there, as on a node whose cache advertisement names all the task's files:
 * place_files_advertised), and per task the node of its last failed attempt (a retry prefers
 * another node: that node's C is doubled).
 *
 * Pure: time and random draws come from the caller. A place_t borrows the spec for its lifetime.
 *
 * How a JM drives the policy modules (the daemon and the simulator alike):
 *   spec_load -> dag_new, estimator_new(nstages), dispatch_new(ntasks), place_new
 *   view: view_update_from_proto per RM view node (jm/view_proto.h), view_refresh_light and
 *         place_resolve when the view changes
 *   ready tasks: kept in priority order as they come and go (jm/readyq.h: pushed when they
 *         become ready or are requeued, keyed by jm/priority.h's stage priority and input bytes)
 *   each round: readyq_pop of a batch (as many as the free token units allow, and 4 more);
 *         place_round on it; for each match in order, dispatch_place: REGULAR or
 *         OPPORTUNISTIC -> dag_start + place_claim + TASK_CREATE to the node; NONE -> stop the
 *         round; the batch's unplaced tasks go back into the queue
 *   tokens granted or freed: dispatch_set_tokens, dispatch_upgrades -> TASK_UPGRADE
 *   TASK_STATUS running: dispatch_started; the status matrix: view_update_matrix_from_proto
 *   success: dispatch_finished, dag_succeed, estimator_observe(stage, input, exec, est.io_s),
 *            place_note_cached(stage, node)
 *   failure with attempts left: dispatch_finished, place_note_failed, dag_requeue; otherwise
 *            dag_fail (the job fails naming the task)
 */
#ifndef PADDOCK_JM_PLACE_H
#define PADDOCK_JM_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "jm/attempt.h"
#include "jm/estimator.h"
#include "jm/matcher.h"
#include "jm/spec.h"
#include "jm/view.h"

struct place_config {
    struct matcher_cand_config cand;
    int max_iter;       /* stable matcher iterations (default 3) */
    size_t max_cands;   /* candidates per task (default 64) */
    int fill;           /* 1: a node takes more than one task per round while its room holds them
                           (matcher_stable_room); 0: Apollo's one task per node per round
                           (default 0; the daemon sets 1) */
    double hold_max_s;  /* late binding (place_hold): the longest a ready task waits in the JM
                           for a node with room rather than queue behind work (default 0: off;
                           the daemon sets PLACE_HOLD_MAX_S) */
    int age_waits;      /* 1: a node's waits count down from when its matrix was taken (the
                           view's info_ms): a wait of 0.1 s told a second ago is no wait now
                           (default 0; the daemon sets 1) */
    int yield;          /* 1: a match on a node that can start it now takes its units from the
                           job's waiting regular tasks when none are free (place_yield; default
                           0; the daemon sets 1) */
    int priority_first; /* 1: after the stable matcher, a node that can start a task now goes to
                           the highest-priority task of the batch that can start there now: a
                           task matched where it would wait (and be held, place_hold) trades
                           nodes with a lower-priority one matched to such a node (greedy list
                           scheduling's rule; default 0; the daemon sets 1) */
};

#define PLACE_HOLD_MAX_S    2.0  /* the daemon's hold_max_s */
#define PLACE_HOLD_WAIT_S   0.02 /* a wait at most this long is room now (the matrix's grain) */
#define PLACE_ALL_NODES_MAX 64   /* the daemon's cand.all_nodes_max: every node up to 64 */
#define PLACE_YIELD_MIN_WAIT_S                                                                     \
    0.01 /* place_yield: a task placed this long ago without starting is queued behind work, not   \
            on its way to a free core (the simulator: 5-50 ms all help; 10 ms did best)  */

void place_config_default(struct place_config *cfg);
/* The daemon's settings, which the simulator takes too so that it places as the daemon does:
 * the defaults with fill, late binding (PLACE_HOLD_MAX_S), every node of a cluster of up to
 * PLACE_ALL_NODES_MAX as a candidate, aged waits, yields and priority_first. */
void place_config_daemon(struct place_config *cfg);

/* One placement decision (public value). */
struct place_match {
    size_t task;         /* spec task index */
    uint32_t node;       /* view node index */
    struct estimate est; /* the estimate it was chosen on (est.io_s feeds estimator_observe) */
};

typedef struct place place_t;

/* A source of uniform draws in [0, 1) (the daemon's RNG, the simulator's seeded one). */
typedef double place_draw_fn(void *ctx);

/* New placer for `spec` (borrowed). cfg copied (NULL: defaults). ERR_INVAL, ERR_NOMEM. Caller
 * owns *out; place_destroy. */
int place_new(const struct spec *spec, const struct place_config *cfg, place_t **out);
void place_destroy(place_t **p);

/* Resolves every input's node names against the view (names it does not know count as "another
 * rack"). Call once the view is populated and again when it gains nodes. ERR_NOMEM. */
int place_resolve(place_t *p, const view_t *view);

/* The estimator's view of a task (borrowed; valid until place_destroy). */
const struct estimator_task *place_task(const place_t *p, size_t task);

/* Records that `node` holds the files of `stage` (a task of the stage ran there). ERR_NOMEM. */
int place_note_cached(place_t *p, size_t stage, uint32_t node);

/* 1 when `node`'s cache advertisement (view_cached: the PN's Bloom filter in its heartbeats,
 * through the RM's view) names every file `task` stages, so that its I is 0 there even when this
 * JM never ran a task there; 0 for a task without files or a node that does not advertise them.
 * A false positive (at most the rate the PN sized its filter for, about 1%) makes the estimate
 * leave out a staging that the PN then does anyway: the task starts that much later than
 * estimated, nothing else goes wrong. */
int place_files_advertised(const place_t *p, const view_t *view, size_t task, uint32_t node);

/* Records the node of a task's failed attempt, so the next placement prefers another node. */
void place_note_failed(place_t *p, size_t task, uint32_t node);

/* Places tasks[0..n) (spec indices, highest priority first) on the view at now_ms. Writes up to
 * n matches into out in quality order (lower wait first) and their number into *nout. 0,
 * ERR_RANGE (a bad task index), ERR_NOMEM.
 *
 * With cfg.fill, a node's room is what it can start now: the largest cores of its zero-wait
 * cells (at the smallest memory bin) and the largest MiB (at the smallest cpu bin), its whole
 * capacity when it has no matrix, less what place_claim recorded on it since (information from
 * after the last claim replaces the claims). A node with no room still takes one task per round
 * (it queues there, as in Apollo). */
int place_round(place_t *p, const view_t *view, const estimator_t *est, const size_t *tasks,
                size_t n, int64_t now_ms, place_draw_fn *draw, void *ctx, struct place_match *out,
                size_t *nout);

/* Records that `task` was dispatched to `node` at now_ms (a match of place_round that was sent):
 * its request counts against the node's room until the view has information about the node from
 * after now_ms. 0, ERR_RANGE, ERR_NOMEM. */
int place_claim(place_t *p, size_t task, uint32_t node, int64_t now_ms);

/* The job's regular tasks queued at each node (not yet running), re-read from the attempt
 * machine (every tracked attempt in flight, regular, not yet said running, at its node: its
 * task's cores and the highest priority among them, prio[] being the job's task priorities,
 * jm/priority.h's bottom levels). The daemon and the simulator call it before each place_round,
 * for place_overtakes. It reads the machine's index of those tasks (attempt_queued): O(q log q)
 * for q queued, not O(tasks). 0, ERR_NOMEM. */
int place_queued_update(place_t *p, const attempt_t *a, const double *prio);

/* Whether the match `m` only waits behind its own job's queued work at its node: the job's
 * regular tasks queued there (place_queued_update, with the same prio[]) are all of lower
 * priority than m's task and hold at least its cores. The PN starts m's task in their place when
 * the node's next core frees (pn/queue.h: within one job the JM's priority decides), so its
 * wait there is the first core to free, not the queue the matrix shows. The daemon and the
 * simulator do not hold such a match (place_hold): a critical task that became ready while its
 * job's lower-priority work filled every node's queue waited the whole hold while the cores went
 * to that work (cycles' join task: 0.4-2.0 s in the JM, on the critical path, every run).
 * 1: overtakes, 0: not. */
int place_overtakes(const place_t *p, const struct place_match *m, const double *prio);

/* Late binding (issue 22, "critical paths that do not wait"): whether the match `m` of a task
 * ready for `ready_s` seconds should stay in the JM rather than be sent. A task sent to a node
 * where it must wait is bound there: when a slot frees on another node, the task does not move,
 * and the slot idles or goes to a later task (a chain of short critical tasks then waits behind
 * its own job's longer ones, node by node). Greedy list scheduling gives every freed slot to
 * the highest-priority ready task; holding the task while its best node has no room, and
 * placing it when a node reports room (a finished task's status carries the node's matrix, a
 * heartbeat the view, and the JM's tick looks again while it holds any), does the same over the
 * network. Held when cfg.hold_max_s > 0, the estimated wait exceeds PLACE_HOLD_WAIT_S and the
 * task has been ready for less than hold_max_s: past that it queues at its best node as in
 * Apollo. Not min(wait,
 * hold_max_s): a regular task queued at a node holds one of its job's tokens while it waits, so on
 * a cluster the job fills, every task bound to a busy node is a slot idle elsewhere (a
 * chain-and-fan-out job ran at 6 of 8 cores). Nor only while the job has work in flight: a new
 * job's first round sees matrices up to a heartbeat old, busy with the job before it, and bound its
 * first tasks behind work that had already ended. 1: hold, 0: send. */
int place_hold(const struct place_config *cfg, const struct place_match *m, double ready_s);

/* Tokens that follow the free cores (issue 22): whether the match `m`, which found no free
 * token units, should have waiting regular tasks of its job yield theirs (attempt_yield) so
 * that it is sent regular now. Yes when cfg.yield and m's node can start it now (its estimated
 * wait at most PLACE_HOLD_WAIT_S). A regular task queued behind work at a busy node holds a
 * token; on a cluster the job fills, that token is a core idle elsewhere, and the job's next
 * task waits in the JM (late binding) or queues behind work too. Yielded, the queued task
 * stays where it is, opportunistic, starts there when a core frees, and is upgraded again when
 * a unit frees; the regular units in flight never exceed the grant. 1: yield, 0: not. */
int place_yield(const struct place_config *cfg, const struct place_match *m);

/* The placer's configuration (borrowed, valid until place_destroy). */
const struct place_config *place_get_config(const place_t *p);

/* The room place_round gives `node` now (cfg.fill), for tests and benchmarks. ERR_RANGE. */
int place_room(place_t *p, const view_t *view, uint32_t node, struct matcher_room *out);

#endif
