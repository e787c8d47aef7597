/* straggler_sim_internal.h - the slice engine's state (straggler_sim.h), shared by
 * straggler_sim.c (the job's run and its events), straggler_sim_node.c (the slots, FIFO queues,
 * foreign work and attempts at the nodes) and straggler_sim_jm.c (the JM: ready order, dispatch,
 * the corrections of queued tasks and the speculation on running ones). Not a public API. */
#ifndef PADDOCK_TOOLS_SIM_STRAGGLER_SIM_INTERNAL_H
#define PADDOCK_TOOLS_SIM_STRAGGLER_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/readyq.h"
#include "jm/speculate.h"
#include "tools/sim/engine.h"
#include "tools/sim/straggler_sim.h"

enum { SS_QUEUED = 1, SS_RUNNING, SS_DONE, SS_DEAD };
enum { SS_ORIG = 0, SS_DUP = 1, SS_SPEC = 2 };
enum { SS_EV_FINISH = 1, SS_EV_ARRIVE, SS_EV_BURST, SS_EV_TICK };
#define SS_VIEW_EVERY 4

struct ss_att {
    size_t task;
    uint32_t node;
    int kind;  /* SS_ORIG, SS_DUP, SS_SPEC */
    int state; /* SS_QUEUED ... */
    double enq, start, dur, placed_wait, pn_start;
    uint32_t slot;
    int cls; /* an extra attempt's class (jm/attempt.h attempt_copy_class) */
};

struct ss_item {
    long att;   /* -1: foreign */
    double dur; /* foreign: its run time */
    double est;
};

struct ss_slot {
    int busy;
    long att; /* -1: foreign */
    double start, est;
    uint32_t gen;
};

struct ss_node {
    double speed; /* run-time multiplier */
    struct ss_slot *slot;
    struct ss_item *q;
    size_t qh, qn, qcap; /* live items are q[qh .. qn) */
    double view_wait;
    struct rng fg; /* foreign arrivals */
};

struct ss_task {
    size_t pending;            /* dependencies not finished */
    int done, placed, waiting; /* waiting: in the JM's ready list for a unit */
    struct speculate_task st;
    uint32_t natt, moves, dups, copies;
    double est;
};

struct ss_stage {
    size_t left; /* tasks not finished */
    struct speculate_dist dist;
    double wait_sum;
    size_t wait_n;
    uint32_t inflight; /* speculative copies live */
};

struct ss {
    const struct spec *sp;
    enum straggler_mode mode;
    const struct straggler_cond *c;
    uint64_t seed;
    engine_t *e;
    struct ss_node *nodes;
    struct ss_task *tasks;
    struct ss_stage *stages;
    size_t **children; /* per task: tasks waiting on it (explicit edges) */
    size_t *nchildren;
    struct ss_att *att;
    size_t natt, attcap;
    double mean_est, typ_est, tick_s, t0, last_end;
    size_t left, running, ticks;
    long spec_started;
    uint32_t spec_inflight;
    struct rng prog;    /* progress readings */
    dispatch_t *disp;   /* the job's tokens and allowance: what is in flight (jm/dispatch.h) */
    uint64_t extra_opp; /* units the extra attempts hold as opportunistic (the daemon's gate) */
    dag_t *dag;         /* the job's graph, for the daemon's ready order (jm/priority.h) */
    double *bl;         /* per task: its bottom level */
    readyq_t *rq;       /* ready tasks waiting for a unit, in the daemon's order */
    struct straggler_run *out;
    int rc;
};

/* straggler_sim.c */
uint64_t ss__arg(int ev, uint64_t a, uint64_t b); /* an event's argument */
void ss__event(engine_t *e, void *ctx, uint64_t arg);

/* straggler_sim_node.c */
/* Expected wait at node ni for a new task (into its view_wait when `view`), and each queued
 * attempt's expected start. */
void ss__simulate(struct ss *s, uint32_t ni, double now, int view);
/* Queues a new attempt of task t of the given kind at the best node other than `exclude`. */
int ss__place(struct ss *s, size_t t, int kind, int cls, long exclude);
void ss__finish(struct ss *s, uint32_t ni, size_t slot, uint32_t gen);
void ss__arrive(struct ss *s, uint32_t ni, int burst); /* foreign work (burst: a burst of it) */

/* straggler_sim_jm.c */
void ss__ready(struct ss *s, size_t t);                 /* t may be ready: queued for a unit */
void ss__task_done(struct ss *s, size_t t, double now); /* its dependents, the next round */
void ss__tick(struct ss *s);                            /* the JM's tick: corrections */

#endif
