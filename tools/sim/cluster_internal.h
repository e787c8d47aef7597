/* cluster_internal.h - the simulated cluster's state, shared by cluster_node.c (the PNs and the
 * RM's view), cluster_job.c (the JMs) and cluster_run.c (setup, metrics). Not a public API. */
#ifndef PADDOCK_TOOLS_SIM_CLUSTER_INTERNAL_H
#define PADDOCK_TOOLS_SIM_CLUSTER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/place.h"
#include "jm/readyq.h"
#include "jm/round.h"
#include "jm/view.h"
#include "pn/matrix.h"
#include "pn/queue.h"
#include "tools/sim/cluster.h"
#include "tools/sim/engine.h"

#define CL_BG_BIT (1ull << 63) /* queue ids of background tasks */

struct cl_node {
    queue_t *q;
    matrix_t m;
    int dirty;        /* queue changed since the matrix was computed */
    double matrix_at; /* when the matrix was computed */
    uint64_t changes; /* queue changes so far; the heartbeat re-reads the queue only on news */
    uint64_t hb_changes;
    int up;
    uint32_t boot;
    uint64_t seq;
    uint32_t rack;
    char name[24], rack_name[24]; /* "pn-<i>", "r-<rack>" */
    struct rng rng;               /* picks, background arrivals */
    double bg_mult, phase_end;
    uint32_t next_bg;
    double cpu_used, cpu_jobs; /* running now: all work, job tasks only */
    /* what the last heartbeat carried (the RM's copy, on its way to the JMs) */
    double hb_at;
    uint32_t hb_running, hb_queued;
    int hb_up;
    double *hb_wait; /* ncpu * nmem cells */
};

struct cl_task {
    uint32_t node;
    uint32_t attempt; /* the attempt sent to the node (jm/attempt.h's number); events carry it */
    int klass;        /* queue class of the attempt in flight; | 0x100: the attempt will fail */
    int running;
    double ready_at;  /* entered the ready queue (late binding's hold counts from here) */
    double placed_at; /* the JM's decision */
    double pushed_at; /* arrival at the PN */
    double started_at;
    double io_s;        /* estimator's I/O part for the placement */
    double est_s;       /* the runtime estimate the PN queue gets */
    double placed_wait; /* the wait W the JM placed it on (jm/correct.h's condition i) */
    double planned_io;  /* true I/O time at the chosen node */
    double pn_wait;     /* the PN's expected wait for it in its QUEUED status (node__expected_wait)
                           ... */
    double pn_wait_at;  /* ... and when the JM heard it (0: no such status, a wait of 0 or an
                           opportunistic attempt: the daemon's pn_wait_s = -1) */
};

struct cl_job {
    size_t idx;
    const struct spec *spec;
    struct round_job core; /* as the daemon's (jm/round.h): the same modules, driven alike */
    struct cl_task *tasks;
    size_t *ready; /* scratch: a round's batch */
    struct rng rng;
    struct cl_jockey *jk; /* Jockey's loop (cluster_jockey.c) or NULL: cfg.tokens throughout */
    const double *run_s;  /* cluster_job.run_s (borrowed) or NULL */
    struct cl_strag *sg;  /* extra attempts (cluster_straggler.c) or NULL: cfg.speculate off */
    int arrived, done, failed, round_pending, tick_pending;
    double arrival, finish;
};

struct cl_sample {
    double t; /* start time */
    double q; /* queueing time */
    uint32_t node;
};

struct cl_world {
    struct cluster_config cfg;
    engine_t *eng;
    view_t *view;
    struct cl_node *nodes;
    size_t nnodes;
    struct cl_job *jobs;
    size_t njobs;
    size_t jobs_active, jobs_finished;
    loadprof_t scratch;
    double bg_rate; /* background arrivals per second per node at multiplier 1 */
    /* metrics */
    struct cl_sample *samples;
    size_t nsamples, csamples;
    size_t ctrace; /* capacity of res->trace */
    double used_cpu, used_jobs, last_t, cpu_int, jobs_int;
    double first_arrival, last_finish;
    double age_sum;
    uint64_t age_n;
    struct cluster_result *res;
    int err; /* first module error inside an event (stops the run) */
};

/* cluster_node.c */
int cl_nodes_init(struct cl_world *w);
void cl_nodes_close(struct cl_world *w);
void cl_node_try_start(struct cl_world *w, uint32_t n);
void cl_heartbeat_ev(engine_t *e, void *ctx, uint64_t group);
void cl_bg_arrival_ev(engine_t *e, void *ctx, uint64_t node);
void cl_node_loss_ev(engine_t *e, void *ctx, uint64_t node);
void cl_account(struct cl_world *w, double dcpu, double djobs);
/* cfg.trace: records the attempt of (job, task) in flight as ended now with `outcome`. */
void cl_trace(struct cl_world *w, size_t job, size_t task, int outcome);
/* A job task's creation reaches its PN. */
void cl_task_create_ev(engine_t *e, void *ctx, uint64_t key);
/* A lost or refused attempt reported to its JM. */
void cl_lost_ev(engine_t *e, void *ctx, uint64_t key);
/* Registers every node in the view and starts the heartbeat groups. */
int cl_view_init(struct cl_world *w);
/* key packing for job task events: job (24 bits), task (24 bits), attempt (16 bits) */
uint64_t cl_key(size_t job, size_t task, uint32_t attempt);
void cl_key_split(uint64_t key, size_t *job, size_t *task, uint32_t *attempt);
uint64_t cl_qid(size_t job, size_t task);

/* cluster_job.c */
int cl_job_init(struct cl_world *w, struct cl_job *j, const struct cluster_job *src, size_t idx);
void cl_job_close(struct cl_job *j);
void cl_job_arrive_ev(engine_t *e, void *ctx, uint64_t job);
void cl_job_kick(struct cl_world *w, struct cl_job *j);
/* Outcomes reported to a JM (jm/attempt.h rules them). */
#define CL_SUCCEEDED 1
#define CL_FAILED    0
#define CL_PREEMPTED (-1) /* killed at its node for other work */
#define CL_NODE_LOST (-2) /* its node went down: the JM noticed after node_timeout_s */
#define CL_REFUSED   (-3) /* the node could not take the create (down, or refused) */
void cl_job_report(struct cl_world *w, size_t job, size_t task, uint32_t attempt, int outcome,
                   double exec_s);
void cl_job_started(struct cl_world *w, size_t job, size_t task, uint32_t attempt);
/* Units freed: waiting opportunistic tasks turn regular (jm/attempt.h's order); how many. */
size_t cl_job_upgrade(struct cl_world *w, struct cl_job *j);
/* Feeds one event into job j's attempt machine and carries out its actions (cluster_straggler.c
 * moves a queued task with ATTEMPT_EV_MOVED). 0 or the machine's error. */
int cl_job_event(struct cl_world *w, struct cl_job *j, struct attempt_event *ev);
/* The grant fell below the regular units in flight: downgrades in place at the tasks' nodes with
 * jm/attempt.h's grace; remaining and estimate are scratch of ntasks. Returns how many tasks were
 * downgraded. */
size_t cl_job_downgrade(struct cl_world *w, struct cl_job *j, double *remaining, double *estimate);
/* A grant reaches job j's JM (its allowance already set): the dispatcher's tokens become `units`,
 * then downgrades and upgrades as grant_take says (jm/grant.h), then a round. Returns how many
 * tasks were downgraded (*upgraded, unless NULL: how many upgraded); remaining and estimate are
 * scratch of ntasks. */
size_t cl_job_grant(struct cl_world *w, struct cl_job *j, uint32_t units, double *remaining,
                    double *estimate, size_t *upgraded);

/* cluster_straggler.c: a second attempt in flight per task (speculative copies). */
int cl_sg_init(struct cl_world *w, struct cl_job *j, const struct cluster_job *src);
void cl_sg_close(struct cl_job *j);
int cl_sg_arrive(struct cl_world *w, struct cl_job *j);  /* starts the job's straggler tick */
size_t cl_sg_extra(const struct cl_job *j, size_t task); /* extra attempts in flight */
/* The record of the task's attempt at `node` / numbered `attempt` (a copy's, else the tracked
 * one's: the caller checks its number), and whether a record is an attempt still in flight. */
struct cl_task *cl_attempt_at(struct cl_job *j, size_t task, uint32_t node);
struct cl_task *cl_attempt_of(struct cl_job *j, size_t task, uint32_t attempt);
int cl_attempt_live(const struct cl_job *j, size_t task, const struct cl_task *tk);
/* An attempt's end reaches the JM: 1 when it was a copy's and is dealt with; 0: the attempt
 * machine takes it (a copy that won has become the tracked attempt). */
int cl_sg_report(struct cl_world *w, struct cl_job *j, size_t task, uint32_t attempt, int outcome);
/* An extra attempt's or the tracked attempt's start: 1 when it is a copy's (followed there);
 * 0: the caller takes it as the task's (a duplicate that started first has become the tracked
 * attempt; the tracked attempt's start discards its duplicates). */
int cl_sg_started(struct cl_world *w, struct cl_job *j, size_t task, uint32_t attempt);
void cl_sg_takeover(struct cl_world *w, struct cl_job *j, size_t task); /* ATTEMPT_ACT_TAKEOVER */
/* A freed token re-places the queued opportunistic task on a better node: 1, else 0. */
int cl_sg_upgrade(struct cl_world *w, struct cl_job *j, size_t task);
void cl_sg_done(struct cl_world *w, struct cl_job *j, size_t task, double exec_s); /* DONE */
void cl_sg_job_end(struct cl_world *w, struct cl_job *j);                          /* copies go */
void cl_sg_node_down(struct cl_world *w, uint32_t n); /* copies there lost (noticed later) */

/* cluster_jockey.c: Jockey's control loop in a JM (jm/controller.h, jm/grant.h) */
int cl_jockey_init(struct cl_world *w, struct cl_job *j, const struct cluster_jockey *cfg);
int cl_jockey_arrive(struct cl_world *w, struct cl_job *j);
void cl_jockey_done(struct cl_world *w, struct cl_job *j, size_t task, double exec_s);
void cl_jockey_stat(const struct cl_world *w, const struct cl_job *j, struct cluster_job_stat *st);
void cl_jockey_close(struct cl_job *j);

#endif
