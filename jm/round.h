/* round.h - a JM's scheduling round around jm/place (Apollo §3.3): which ready tasks wait in the
 * ready queue, which go back after a round, and how many one round offers. One rule each, called
 * by the daemon (jm/daemon/jmd_sched.c) and by the simulator (tools/sim/cluster_job.c), so the
 * simulator keeps no copy (issue 23). Pure: no clock, socket or process.
 *
 * The ready queue (jm/readyq.h) holds the DAG's READY tasks that are not backing off after a
 * failure (jm/attempt.h holds those until attempt_due), keyed by prio[task] (the task's bottom
 * level, jm/priority.h) and its input bytes, except a round's batch while it is being placed. */
#ifndef PADDOCK_JM_ROUND_H
#define PADDOCK_JM_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/readyq.h"
#include "jm/spec.h"

/* The scheduling state one job's JM holds, embedded alike by the daemon (jm/daemon/jmd.h) and
 * the simulated JM (tools/sim/cluster_internal.h). */
struct round_job {
    dag_t *dag;
    estimator_t *est;
    dispatch_t *disp;
    place_t *place;
    readyq_t *rq;                 /* the DAG's ready tasks in priority order (round_ready_add) */
    attempt_t *att;               /* the attempts' lifecycle (jm/attempt.h) */
    double *task_bl, *stage_prio; /* bottom levels (jm/priority.h) */
    struct place_match *matches;  /* one round's matches */
};

/* Frees what `rj` holds, the attempt machine first (it refers to the DAG and the dispatcher),
 * and zeroes it. */
void round_job_close(struct round_job *rj);

/* A batch offers this many tasks beyond the free units: the matches are offered in quality
 * order, so a few more than fit let the better placed go first. */
#define ROUND_SLACK 4

/* `task` became ready: it enters the queue unless it is backing off. 1 when it entered (its
 * ready time starts), 0 when it is held or already there, else readyq_push's error. */
int round_ready_add(readyq_t *rq, const attempt_t *att, const struct spec *sp, const double *prio,
                    size_t task);

/* After a round, the batch's tasks still READY and not backing off go back into the queue with
 * their keys (their ready time unchanged). 0, or the first error (the others still go back). */
int round_ready_back(readyq_t *rq, const dag_t *dag, const attempt_t *att, const struct spec *sp,
                     const double *prio, const size_t *tasks, size_t n);

/* Whether a round may place anything: the dispatcher has a class for its next task, or waiting
 * regular tasks could yield `yieldable` units (attempt_yieldable; 0 when yields are off). */
int round_can_place(const dispatch_t *d, uint64_t yieldable);

/* How many ready tasks a round offers to place_round: the units free for new work
 * (attempt_free) and `yieldable`, plus ROUND_SLACK, at most max_batch; so a round costs
 * O(batch log n) whatever the job's size. */
size_t round_batch(const dispatch_t *d, uint64_t yieldable, size_t max_batch);

#endif
