/* node.h - the process node's core: tasks, their states, and what happens to them.
 *
 * The shell (pn/server.c) hands it decoded-or-not requests from job managers, SIGCHLD
 * wake-ups and timer ticks; the node keeps every task's state in one place (node__set_state),
 * feeds the pure queue and matrix (pn/queue.h, pn/matrix.h), starts and stops processes
 * (pn/exec.h), stages files on libuv's thread pool (pn/stage.h), and sends TASK_STATUS
 * through the shell's send callback. Conversation (proto/proto.h):
 *     C:TASK_CREATE  S:TASK_STATUS*   (queued or staging, running, then one terminal state)
 *     C:TASK_CANCEL  S:TASK_STATUS
 *     C:TASK_UPGRADE S:TASK_STATUS   (to regular; or to opportunistic, a downgrade: the task
 *                                     runs on, preemptible once its grace_ms has passed)
 *     C:TASK_QUERY   S:TASK_STATUS* S:TASK_QUERY_REPLY   (one status per task of the job the
 *                                     node remembers, live or finished within retention)
 *     C:TASK_ESTIMATE                (no reply: the JM's new R for a live task; the queue
 *                                     simulates with it from now on)
 *     any of them    S:ERROR          (ERR_FENCED: an epoch older than the job's, below)
 * Fencing (pn/fence.h): the node keeps per job the highest epoch its commands and queries
 * carried (and the RM's HEARTBEAT_ACK named) for as long as it remembers the job, and refuses
 * a command or query with an older one, counted in refused_fenced; epoch 0 is never refused.
 * Orphans (pn/orphan.h): HEARTBEAT_ACK says which jobs ended, expired or are unknown to the RM;
 * after the grace (pn.ended_grace, pn.orphan_grace) their live tasks are killed and reported
 * (cancelled for an ended job, lost otherwise), counted in reaped.
 * Statuses go to the ROUTER peer that last spoke for the task's job (or to the reply_endpoint
 * its last TASK_CREATE named); a JM that reconnects (new routing id) gets the current state
 * of every task of that job it is remembered for.
 * A request the node cannot decode is refused (ERROR when it has a usable envelope) and
 * counted; it never touches running tasks.
 */
#ifndef PADDOCK_PN_NODE_H
#define PADDOCK_PN_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "pn/pnconf.h"
#include "proto/proto.h"

typedef struct node node_t;

/* Sends `len` bytes to the ROUTER peer `peer` (routing id, plen bytes), or, when `endpoint` is
 * not NULL, to that endpoint (a JM's reply_endpoint) over a socket the shell connects to it.
 * All borrowed. */
typedef void node_send_fn(void *arg, const void *peer, size_t plen, const char *endpoint,
                          const void *data, size_t len);

/* Why a TASK_CREATE was refused (paddock_pn_creates_refused_total{reason}). */
typedef enum node_refusal {
    NODE_REFUSED_FENCED = 0, /* an older epoch than the job's */
    NODE_REFUSED_CAPACITY,   /* larger than the whole node */
    NODE_REFUSED_QUEUE_FULL, /* its queue at [queue] max_regular / max_opportunistic */
    NODE_REFUSED_SPEC_BYTES, /* live tasks' argv, env and paths over [queue] max_spec_bytes */
    NODE_REFUSED_DRAINING,   /* the node is draining (the shell refuses, node_count_draining) */
    NODE_REFUSED_INVALID,    /* resources the queue does not take (NaN, negative) */
    NODE_REFUSED_NO_MEMORY,
    NODE_REFUSED_USER, /* issue 27: its user has no account here, is root, or was revoked */
    NODE_REFUSED_COUNT
} node_refusal_t;

typedef struct node_counters {
    uint64_t requests, rejected, created, refused_full, refused_other;
    uint64_t succeeded, failed, cancelled, preempted, lost, memory_kills;
    uint64_t cache_hits, cache_misses, statuses_sent, spawn_failures;
    /* messages that carried statuses (TASK_STATUS or TASK_STATUS_BATCH), and of them the
       batches (several statuses of one job from one loop pass) */
    uint64_t status_messages, status_batches;
    uint64_t
        queued_unsent; /* QUEUED statuses not sent: the task started as soon as it was set up */
    uint64_t running_unsent; /* RUNNING statuses not sent: the task ended in the same loop pass */
    uint64_t upgrades, downgrades; /* TASK_UPGRADE that changed a live task's class */
    uint64_t graces_ended;         /* urgent regular tasks that ended downgraded tasks' graces */
    uint64_t refused_fenced;       /* commands and queries from an older epoch than the job's */
    uint64_t queries;              /* TASK_QUERY answered */
    uint64_t reaped;               /* live tasks killed because the RM said their job was over */
    uint64_t acks_ignored;         /* HEARTBEAT_ACK job entries with a state the node ignores */
    uint64_t estimates;            /* TASK_ESTIMATE applied to a live task */
    uint64_t estimates_ignored;    /* TASK_ESTIMATE for a task not live here */
    uint64_t dirs_early;  /* directories given back when their task succeeded leaving nothing */
    uint64_t dirs_handed; /* of those, given the directory a task ended with in the same pass */
    uint64_t dirs_lazy;   /* tasks whose directory was taken or made at their start (no spare
                             at their create) */
    /* a job's queued regular task and its own running opportunistic work traded classes
       instead of a preemption (queue_swap); and the running tasks those swaps made regular */
    uint64_t swaps, swapped;
    /* starts of a higher-priority task of the same job in the place of the one the queue
       order gave (queue_pick_ex) */
    uint64_t reorders;
    /* a job's queued opportunistic task started regular in the place of its lower-priority
       regular task, which waits opportunistic (queue_pick_trade) */
    uint64_t trades;
    /* wait-time matrices computed (a simulation of the queue each), and of the terminal
       statuses, those that went with a matrix up to [queue] matrix_min_interval old because
       regular work was queued to take the room the task freed */
    uint64_t matrix_computes, matrix_kept;
    uint64_t creates_refused[NODE_REFUSED_COUNT];
    uint64_t starts[2];                        /* processes started, by class */
    uint64_t ended[PROTO_TASK_STATE_COUNT][2]; /* terminal states reached, by class */
} node_counters_t;

/* A node over `cfg` (borrowed for the node's life), running on `loop`. Creates the work
 * directory layout (WORK/tasks, WORK/cache). uid/gid: the user tasks run as ((uid_t)-1: the
 * PN's own). NULL with a reason in msg. Caller owns; node_destroy nullifies. */
node_t *node_new(const pnconf_t *cfg, uv_loop_t *loop, uint64_t boot_id, uid_t uid, gid_t gid,
                 node_send_fn *send, void *send_arg, char *msg, size_t cap);
/* Kills every task's process group (reported lost: "node shutting down") and frees. Staging
 * still in flight must have drained (node_busy() == 0) before the loop is closed. */
void node_destroy(node_t **np);

/* One message from a JM: routing id and payload. */
void node_handle(node_t *n, const void *peer, size_t plen, const void *data, size_t len);
/* A malformed frame sequence (not identity + one payload), counted. */
void node_count_rejected(node_t *n);

/* Issue 27: who sends the requests node_handle gets next (the shell derives it from the key of
 * the connection). Tasks created run as uid/gid ((uid_t)-1: as the node's run_as) with their
 * directories owned by that user; a caller that is not `admin` may cancel only tasks of its own
 * `user`; a non-NULL `refuse` refuses its TASK_CREATE with that reason (ERR_DENIED, counted as
 * NODE_REFUSED_USER). Strings copied. */
void node_set_caller(node_t *n, const char *user, uid_t uid, gid_t gid, int admin,
                     const char *refuse);
/* A TASK_CREATE the shell refused because the node is draining, counted. */
void node_count_draining(node_t *n);

struct metrics;
/* Appends the node's families to a Prometheus exposition (pn/node_metrics.c; docs/pn.md
 * "Metrics"): tasks by state and class, queue lengths, starts, the spawn latency and start
 * delay histograms, preemptions, upgrades, creates refused by reason, and the rest of the
 * counters. Errors are the builder's (metrics_error). */
void node_metrics(const node_t *n, struct metrics *m);

/* Reaps every exited child and reports its task. */
void node_reap(node_t *n);
/* Polls RSS of running tasks, kills those over their memory limit. */
void node_poll_memory(node_t *n);
/* Apollo §3.2: "the PN sends this matrix, along with a timestamp, to every JM that has
 * running or queued tasks in this PN". Sends every running task's status (its CPU time and
 * bytes read so far, from the last node_poll_memory: progress) and, for a job with no task
 * running, the status of one of its queued tasks (state unchanged, fresh matrix): JMs treat a
 * repeated state as a refresh. */
void node_refresh(node_t *n);
/* Forgets finished tasks past retention. */
void node_sweep(node_t *n);
/* Fills a heartbeat (strings borrowed from the node/config; valid until the next call), with
 * the ids of the jobs that have live tasks (queued, staging, running; at most
 * PROTO_MAX_NODE_JOBS). */
void node_heartbeat(node_t *n, proto_heartbeat_t *hb);
/* The RM leader's answer to a heartbeat, at `now_ms` (monotonic): notes the states of the jobs
 * with live tasks here (others are ignored), raises their epochs to the RM's, and reaps the
 * jobs whose grace has run out (pn/orphan.h). Borrowed. */
void node_jobs_ack(node_t *n, const proto_heartbeat_ack_t *ack, uint64_t now_ms);
/* Work on the thread pool in flight, plus one while the end of the loop pass has some to hand
 * it (one more loop turn hands it over). */
size_t node_busy(const node_t *n);
/* Starts handed to spawner threads whose results the loop has not taken yet. */
size_t node_spawning(const node_t *n);
void node_counters(const node_t *n, node_counters_t *out);
const proto_stats_t *node_proto_stats(const node_t *n);
/* Running and queued task counts (for the status file and tests). */
void node_load(const node_t *n, size_t *running, size_t *queued);
/* Tasks remembered (live and finished within retention) and the jobs they belong to. */
void node_remembered(const node_t *n, size_t *tasks, size_t *jobs);
/* For reading a task's output (pn/output.h): the directory and state of attempt `attempt` of
 * (job, task), or with attempt 0 of the newest attempt the node remembers. Returns 0 with *dir
 * (borrowed until the node next changes; NULL when the task left nothing and its directory
 * was given back), *state and *found (the attempt); ERR_NOTFOUND when not remembered;
 * ERR_DENIED when the caller (node_set_caller) is neither an admin nor the task's user. */
int node_task_dir(node_t *n, const char *job, const char *task, uint32_t attempt, const char **dir,
                  proto_task_state_t *state, uint32_t *found);
/* WORK/tasks, where the task directories are. Borrowed. */
const char *node_tasks_dir(const node_t *n);
/* Whether the caller node_set_caller named last is an admin (the cluster's own key). */
bool node_caller_admin(const node_t *n);

#endif
