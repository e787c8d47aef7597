/* queue.h - the PN's local task queues (Apollo §3.2, §3.5). Pure: no clock, no randomness, no
 * processes; `now` (seconds, any monotonic origin) and random draws come from the caller.
 *
 * Two queues and a running set:
 * - the regular queue is FIFO with conservative backfill: tasks are simulated forward in queue
 *   order against the running regular tasks' remaining estimates (pn/loadprof.h), each getting
 *   the earliest reservation that does not move any reservation ahead of it; a later, smaller
 *   task starts early only when its reservation is "now", so it never delays the expected start
 *   of any task ahead of it;
 * - within one job the JM's priority decides (issue 22, "critical paths that do not wait"): when
 *   a regular task of job J is to start, a queued regular task of J with a higher priority (its
 *   bottom level, TASK_CREATE `priority`) that fits the free resources starts instead, and the
 *   two trade places in the queue, when that moves no other job's reservation later (checked
 *   by simulating the queue both ways, or a trade of two tasks of the same size and estimate);
 * - a job never preempts itself (Apollo §3.5's upgrade): when a regular task of J waits only
 *   for running opportunistic work and J has some of that, queue_swap makes J's running
 *   opportunistic tasks regular and moves J's lowest-priority queued regular task to the
 *   opportunistic queue instead of killing anything; queue_preempt never names a task of the
 *   waiting task's own job;
 * - the opportunistic queue is served only when the regular queue is empty (Apollo §3.5: "When
 *   a PN has spare capacity and the regular queue is empty, the PN picks a random task to
 *   execute from the opportunistic-task queue, regardless of when it was dispatched"), by
 *   oppweight_pick (pn/oppweight.h) among the tasks that fit the free resources: a job first,
 *   in proportion to the mean weight of its tasks there, then one of its tasks by weight, so a
 *   job with few opportunistic tasks is not starved by one with many; within the job drawn, its
 *   highest-priority task that fits starts (the draw among its tasks decides only among equals);
 * - running opportunistic tasks are preemptible: they do not count against the reservations
 *   of regular tasks, and queue_preempt names those to kill when a regular task could start
 *   but for them.
 *
 * A task's life here: queue_push -> queued; queue_pick -> running; queue_finish -> gone.
 * queue_cancel removes a queued task; a running task is killed by the caller, then finished.
 * queue_upgrade and queue_downgrade change a task's class in place, queued or running.
 */
#ifndef PADDOCK_PN_QUEUE_H
#define PADDOCK_PN_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "pn/loadprof.h"

typedef struct queue queue_t;

typedef struct queue_config {
    double cpus;              /* node capacity in cores, > 0 */
    double mem_mb;            /* node capacity in MiB, > 0 */
    size_t max_regular;       /* bound on queued regular tasks (0: 1024) */
    size_t max_opportunistic; /* bound on queued opportunistic tasks (0: 1024) */
    size_t max_running;       /* bound on running tasks of both kinds (0: 4096) */
    double default_est_s;     /* runtime estimate of a task that has none (<= 0: 10 s) */
    double overrun_s;         /* remaining time assumed for a task past its estimate: a quarter
                                 of the estimate, at most this (<= 0: 1 s) */
    size_t backfill_depth;    /* queued tasks past the head considered for backfill (0: 64) */
    size_t sim_depth;         /* queued tasks simulated exactly by queue_simulate (0: 256) */
} queue_config_t;

typedef enum queue_class {
    QUEUE_REGULAR = 0,
    QUEUE_OPPORTUNISTIC = 1,
} queue_class_t;

/* A task as the queue sees it; copied in and out. */
typedef struct queue_task {
    uint64_t id;         /* caller's key, unique among tasks in the queue */
    double cpu;          /* cores, > 0 */
    double mem_mb;       /* MiB, > 0 */
    double est_s;        /* runtime estimate in seconds (<= 0: the configured default) */
    double weight;       /* opportunistic pick weight (<= 0: 1) */
    uint64_t job;        /* the job's key (a hash of its id): opportunistic picks are fair
                            across jobs (pn/oppweight.h); 0 for tasks of no particular job */
    double prio;         /* the JM's priority of the task within its job (its bottom level in
                            seconds): higher starts first among the job's queued tasks; equal
                            priorities keep queue order. Ignored for job 0. */
    queue_class_t klass; /* regular or opportunistic */
    int held;            /* private to the queue: set through queue_hold */
} queue_task_t;

typedef enum queue_state {
    QUEUE_ABSENT = 0,
    QUEUE_QUEUED = 1,
    QUEUE_RUNNING = 2,
    QUEUE_PREEMPTING = 3, /* running, named by queue_preempt, not yet finished */
} queue_state_t;

typedef struct queue_stats {
    size_t regular_queued, opportunistic_queued;
    size_t regular_running, opportunistic_running;
    double cpu_used, mem_used; /* all running tasks */
} queue_stats_t;

/* New empty queue; the config is copied. NULL on ERR_INVAL (non-positive capacity) or
 * ERR_NOMEM. Caller owns; queue_destroy nullifies the caller's reference. */
queue_t *queue_new(const queue_config_t *cfg);
void queue_destroy(queue_t **qp);

/* Queues a task (copied) at the tail of its class's queue. Errors: ERR_INVAL (non-positive or
 * NaN resources), ERR_CAPACITY (larger than the whole node: it could never start), ERR_EXISTS
 * (id already present), ERR_FULL (that queue is at its bound), ERR_NOMEM. On error the queue
 * is unchanged. */
int queue_push(queue_t *q, const queue_task_t *t);

/* Removes a queued task. ERR_NOTFOUND if absent, ERR_STATE if running (kill it, then
 * queue_finish). */
int queue_cancel(queue_t *q, uint64_t id);

/* Upgrades an opportunistic task to regular in place (Apollo §3.5): a queued one moves to the
 * tail of the regular queue keeping its resources and estimate; a running one keeps running
 * and is no longer preemptible (a pending preemption is withdrawn). ERR_NOTFOUND, ERR_STATE if
 * already regular. */
int queue_upgrade(queue_t *q, uint64_t id);

/* Downgrades a regular task to opportunistic in place: the job's spare tokens were reclaimed
 * (Verma et al. MinEDF-WC §III kills such tasks; Paddock keeps them running unless the node
 * needs the room). A queued one moves to the tail of the opportunistic queue keeping its
 * resources, estimate and hold; a running one keeps running and becomes preemptible, but
 * queue_preempt does not name it before `grace_until` (seconds on the caller's clock, as
 * `now`; 0 or a past time: no grace), so a task near its end can finish rather than lose its
 * work. Until then it counts in the simulated regular work (queue_simulate) as holding its
 * resources up to the earlier of its expected end and the grace's end. An opportunistic task
 * (queued or running) is left as it is: 0. ERR_NOTFOUND, ERR_FULL (the opportunistic queue
 * is at its bound; the task stays regular), ERR_NOMEM. On error the queue is unchanged. */
int queue_downgrade(queue_t *q, uint64_t id, double grace_until);

/* Ends every running task's grace at once (an urgent regular task arrived: its job cannot wait
 * for them, TASK_CREATE `urgent`); returns how many had one. */
size_t queue_end_graces(queue_t *q);

/* The earliest end of a grace (queue_downgrade) later than `now` among running tasks, or 0
 * when none: the caller wakes then to preempt if regular work waits. */
double queue_next_grace(const queue_t *q, double now);

/* A new runtime estimate (seconds; <= 0: the configured default) for a queued or running task
 * (the JM refined it: TASK_ESTIMATE). The simulation (queue_simulate, queue_expected_start)
 * and backfill use it from now on; a running task's remaining time is the new estimate less
 * the time it has run. ERR_NOTFOUND, ERR_INVAL (NaN). */
int queue_set_estimate(queue_t *q, uint64_t id, double est_s);

/* Holds (held != 0) or releases a queued task: a held task keeps its place and its reservation
 * but does not start (its files are still being staged). A task pushed is not held.
 * ERR_NOTFOUND when `id` is not queued. */
int queue_hold(queue_t *q, uint64_t id, int held);

/* Chooses the next task to start at `now` and moves it to the running set (copied to *out).
 * `draw` is a uniform random number in [0, 1), used only for an opportunistic pick.
 * ERR_NOTFOUND when nothing can start now (the caller may then ask queue_preempt);
 * ERR_FULL when max_running tasks run; ERR_NOMEM. */
int queue_pick(queue_t *q, double now, double draw, queue_task_t *out);

/* As queue_pick, and says in *reordered (NULL: not told) whether a higher-priority task of the
 * same job started in the place of the one the queue order gave. */
int queue_pick_ex(queue_t *q, double now, double draw, queue_task_t *out, int *reordered);

/* What queue_pick_trade did besides starting *out. */
typedef struct queue_pick_info {
    int reordered;      /* a higher-priority regular task of the same job started in the place
                           of the one the queue order gave (queue_pick_ex) */
    int traded;         /* a class trade inside one job: *out was a queued opportunistic task
                           and starts as regular in the place of regular task `traded_id`,
                           which moved to the tail of the opportunistic queue */
    uint64_t traded_id; /* the regular task that gave up its place (when traded) */
} queue_pick_info_t;

/* As queue_pick_ex, with a class trade inside one job (issue 22: a yielded critical task does
 * not wait behind its own job's lower regular work): when a regular task R of job J (job != 0)
 * is about to start and J has a queued opportunistic task O, not held, with a higher priority
 * that fits the free resources, O starts in R's place as regular and R moves to the tail of the
 * opportunistic queue keeping its resources, estimate, priority and hold. J's regular work here
 * is unchanged in count and no other job's reservation in the backfill window moves later
 * (checked by simulating the queue with O in R's place when O is larger or longer than R): the
 * trade is the class change the JM's own upgrade of O and downgrade of R would make, done where
 * both are seen at once. Among J's candidates the highest priority wins, the earliest queued
 * among equals. The caller tells J of both class changes (the PN: statuses whose reason starts
 * with PROTO_REASON_TRADED). info may be NULL. */
int queue_pick_trade(queue_t *q, double now, double draw, queue_task_t *out,
                     queue_pick_info_t *info);

/* No self-preemption (Apollo §3.5: a job's opportunistic task "can be upgraded to regular"):
 * when the first regular task R whose reservation is "now" is held back by running
 * opportunistic work and R's job J (job != 0) has running opportunistic tasks not being
 * preempted, J's regular work here trades classes with them instead of killing any: J's
 * lowest-priority queued regular task D that their CPU and memory together cover (R itself
 * when none is lower; the latest queued among equals) moves to the tail of the opportunistic
 * queue keeping its resources, estimate, priority and hold, and J's running opportunistic tasks
 * become regular, latest started first, until they cover D's CPU and memory. J keeps the same
 * regular work here, a critical R keeps its regular place, and nothing is lost. Writes the
 * upgraded ids into up (at most cap) and D's id into *down; returns how many were upgraded (0:
 * no swap; then queue_preempt). No swap when the opportunistic queue is full (R then waits for
 * the room its own job holds). */
size_t queue_swap(queue_t *q, double now, uint64_t *up, size_t cap, uint64_t *down);

/* Names running opportunistic tasks to kill so that the first regular task whose reservation
 * is "now" can start: latest started first (least work lost), only as many as the deficit
 * needs, counting tasks already being preempted as freed, never a downgraded task within its
 * grace, never a task of the waiting task's own job (job != 0; queue_swap handles those).
 * Writes at most `cap` ids and marks them QUEUE_PREEMPTING; returns how many (0 when no
 * preemption helps). */
size_t queue_preempt(queue_t *q, double now, uint64_t *ids, size_t cap);

/* A running task ended (any reason). ERR_NOTFOUND if it is not running. */
int queue_finish(queue_t *q, uint64_t id);

queue_state_t queue_state(const queue_t *q, uint64_t id, queue_class_t *klass);
void queue_stats(const queue_t *q, queue_stats_t *st);
/* Regular tasks queued (not running): queue_stats' regular_queued, without its pass over the
 * running tasks. */
size_t queue_regular_queued(const queue_t *q);
const queue_config_t *queue_config(const queue_t *q);

/* Fills `p` (initialised by the caller at the node's capacity) with the simulated future of
 * the regular work: running regular tasks until their expected end, then every queued regular
 * task at its backfilled reservation, in queue order. Opportunistic work is left out: it yields
 * to regular tasks. Past the first sim_depth queued tasks the rest is counted as a fluid (its
 * node-seconds, max of its CPU and memory shares times its estimate, occupy the whole node
 * after everything simulated exactly): a pessimistic bound that keeps the cost
 * O(sim_depth^2) however long the queue. Returns 0 or ERR_NOMEM. Used by pn/matrix.h. */
int queue_simulate(const queue_t *q, double now, loadprof_t *p);

/* The expected start of a queued regular task in that same simulation (*at, seconds on the
 * caller's clock). ERR_NOTFOUND when `id` is not in the regular queue; ERR_NOMEM. */
int queue_expected_start(const queue_t *q, double now, uint64_t id, loadprof_t *p, double *at);

/* queue_expected_start, cheaper for the task last pushed at the tail of the regular queue
 * (the QUEUED status of every new task): the simulation of the tasks ahead of it is kept from
 * the previous call when the queue changed only by pushes at the tail since (conservative
 * backfill: such a push moves no reservation ahead of it) and was made at most `max_age`
 * seconds before `now`; the answer is then up to max_age off. Other tasks: as
 * queue_expected_start, with `p` as scratch. */
int queue_expected_start_tail(queue_t *q, double now, double max_age, uint64_t id, loadprof_t *p,
                              double *at);

#endif
