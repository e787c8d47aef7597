/* dag.h - run-time state of a job's task graph: ready list, dependency release, stage barriers,
 * counts per state (Apollo §2.2: "ready list", "task completion", "job completion").
 *
 * Pure and deterministic: no clock, no I/O. A dag_t borrows a validated struct spec (jm/spec.h)
 * for its whole lifetime; the spec must outlive it and must not change.
 *
 * Task states (changed only by the dag_* transitions below):
 *
 *   WAITING --(all deps succeeded)--> READY --dag_start--> RUNNING --dag_succeed--> SUCCEEDED
 *                                       ^                     |
 *                                       +----dag_requeue------+  (retry, node lost)
 *                                                             +--dag_fail--> FAILED
 *
 * A task's dependencies are its explicit "after" tasks plus, for each stage its stage waits for
 * (stages[].after), that stage's completion. A stage is complete when all its tasks have
 * succeeded and all stages it waits for are complete (so barriers are transitive and a stage
 * without tasks is a pass-through). "RUNNING" means "handed to the placement/dispatch layer":
 * queued at a PN or executing; the JM tracks finer attempt states itself.
 *
 * The ready list holds the READY tasks. New READY tasks are appended in the order they become
 * ready (initially spec order); removal keeps the others' relative order. Callers that need an
 * order sort a copy (jm/priority.h).
 */
#ifndef PADDOCK_JM_DAG_H
#define PADDOCK_JM_DAG_H

#include <stddef.h>

#include "jm/spec.h"

enum dag_state {
    DAG_WAITING = 0, /* some dependency not yet succeeded */
    DAG_READY,       /* all dependencies succeeded, not handed out */
    DAG_RUNNING,     /* handed out (queued at a PN or executing) */
    DAG_SUCCEEDED,   /* terminal */
    DAG_FAILED,      /* terminal: out of attempts; the job has failed */
    DAG_NSTATES
};

typedef struct dag dag_t;

/* Builds the graph for `spec` (borrowed; must outlive the dag). Tasks without dependencies start
 * READY. Returns 0 and stores a new dag in *out (caller owns; dag_destroy), or ERR_NOMEM, or
 * ERR_INVAL when spec is NULL. */
int dag_new(const struct spec *spec, dag_t **out);

/* Frees the dag and nullifies the caller's reference. NULL-safe. */
void dag_destroy(dag_t **p);

/* Puts every task back to its initial state (as just after dag_new), without allocating. Lets a
 * simulator (Jockey's job simulator) replay the same graph many times. */
void dag_reset(dag_t *dag);

const struct spec *dag_spec(const dag_t *dag);
size_t dag_ntasks(const dag_t *dag);
enum dag_state dag_state(const dag_t *dag, size_t task); /* DAG_NSTATES for a bad index */
const char *dag_state_name(enum dag_state st);           /* "waiting", "ready", ... */

/* Number of tasks in state `st` (job-wide / within one stage). O(1). */
size_t dag_count(const dag_t *dag, enum dag_state st);
size_t dag_stage_count(const dag_t *dag, size_t stage, enum dag_state st);

/* 1 when every task of the stage succeeded and every stage it waits for is complete. */
int dag_stage_complete(const dag_t *dag, size_t stage);

/* The ready list: *n tasks, borrowed until the next mutating call. */
const size_t *dag_ready(const dag_t *dag, size_t *n);
/* The RUNNING tasks (*n of them), in no particular order: the order changes as tasks start and
 * end, and the pointer is valid until the next call that changes a state. O(1); lets a caller
 * that looks at tasks in flight skip the rest of a large job (issue 24). */
const size_t *dag_running(const dag_t *dag, size_t *n);

/* READY -> RUNNING (removes it from the ready list). ERR_STATE if not READY, ERR_RANGE for a bad
 * index. */
int dag_start(dag_t *dag, size_t task);

/* RUNNING -> READY (a failed attempt to be retried, or its node was lost): appended to the ready
 * list. ERR_STATE if not RUNNING. */
int dag_requeue(dag_t *dag, size_t task);

/* RUNNING -> SUCCEEDED. Releases dependents whose last dependency this was (explicit edges and
 * stage barriers that complete now) to READY, appending them to the ready list; stores how many
 * were released in *released (may be NULL). ERR_STATE if not RUNNING. */
int dag_succeed(dag_t *dag, size_t task, size_t *released);

/* SUCCEEDED -> READY: the task must run again (its node-local outputs were lost with their
 * node). Its explicit dependents that have not succeeded go back to waiting for it (a READY one
 * leaves the ready list); those that succeeded keep their state. ERR_STATE when it did not
 * succeed, when a dependent is RUNNING or FAILED (the caller requeues in-flight dependents
 * first), or when its stage completed a barrier that other stages wait on (not undone). */
int dag_redo(dag_t *dag, size_t task);

/* RUNNING -> FAILED (terminal). Dependents stay WAITING forever; the job has failed. */
int dag_fail(dag_t *dag, size_t task);

/* 1 when every task SUCCEEDED. */
int dag_done(const dag_t *dag);

/* 1 when some task FAILED. */
int dag_failed(const dag_t *dag);

/* Tasks in a topological order (stage barriers respected): spec->topo. Borrowed. */
const size_t *dag_topo(const dag_t *dag, size_t *n);

/* Direct successors of a task through explicit edges (tasks listing it in "after"). Borrowed. */
const size_t *dag_dependents(const dag_t *dag, size_t task, size_t *n);

/* Stages whose barrier waits for `stage` (stages listing it in "after"). Borrowed. */
const size_t *dag_stage_dependents(const dag_t *dag, size_t stage, size_t *n);

/* Number of dependencies of `task` not yet satisfied (explicit tasks plus barrier stages, plus
 * one while it is held). */
size_t dag_pending(const dag_t *dag, size_t task);

/* Holds: an open job's tasks wait for a client to bind them (jm/daemon/jmd_grow.h,
 * docs/snakemake.md).
 *
 *   dag_hold:    WAITING or READY -> WAITING with one more unmet dependency (a READY task leaves
 *                the ready list). ERR_STATE when it is in another state or held already,
 *                ERR_NOMEM (the first hold allocates one byte per task; nothing changed).
 *   dag_release: the hold goes; a task with nothing else unmet becomes READY (appended to the
 *                ready list). ERR_STATE when it is not held.
 *   dag_skip:    a held task whose only unmet dependency is its hold -> SUCCEEDED without
 *                running (the client did its work elsewhere), releasing its dependents as
 *                dag_succeed does (*released as there; may be NULL). ERR_STATE otherwise.
 *
 * dag_reset drops every hold. */
int dag_hold(dag_t *dag, size_t task);
int dag_release(dag_t *dag, size_t task);
int dag_skip(dag_t *dag, size_t task, size_t *released);
int dag_held(const dag_t *dag, size_t task); /* 1 while held */
size_t dag_nheld(const dag_t *dag);          /* tasks held now */

#endif
