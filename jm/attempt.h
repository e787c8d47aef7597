/* attempt.h - a task's attempts: the one lifecycle the JM daemon (jm/daemon/jmd_sched.c,
 * jm/daemon/jmd_spec.c) and the simulators (tools/sim/) both drive (issue 23; Apollo §3.3-3.5;
 * docs/jm-daemon.md).
 *
 * A task is idle (not in flight) or has one tracked attempt in flight on a node, waiting there
 * or running; extra attempts (speculative copies, duplicates: jm/speculate.h) are the caller's,
 * and one may take the tracked attempt's place (attempt_takeover). Every dispatch gets a new
 * wire attempt number above every number seen, so a status of an earlier attempt is recognised
 * and ignored.
 *
 * Events in (attempt_step): PLACED (a round chose a node and a class), STATUS (the node says
 * queued, running, or an end: succeeded, failed, preempted, cancelled, lost), REFUSED (the node
 * answered the create with an error), NODE (its node went down or silent), MOVED (a queued
 * attempt is moved elsewhere: jm/correct.h), UNSENDABLE (the protocol cannot carry the task),
 * CANCEL (the JM cancels it: placed again, uncharged), JOB_END (the job ended: whatever is in
 * flight is cancelled). Grant changes come through
 * attempt_downgrades and attempt_upgrades, time through attempt_due.
 *
 * Actions out (struct attempt_action), in the order the caller carries them out: CREATE (send
 * TASK_CREATE), CANCEL (send TASK_CANCEL: the JM decided the end), NODE_OFF (no new tasks to
 * the node until the view says it is up), RECLASS (send TASK_UPGRADE to the class; a running
 * task turned opportunistic keeps grace_ms), STARTED, RECORD (journal and report the ended
 * attempt), DONE (the task succeeded; `released` tasks became ready), AVOID (place_note_failed:
 * its next placement prefers another node), RETRY (ready again at at_ms), TAKEOVER (an extra
 * attempt takes the task's place: the caller swaps it in with attempt_takeover and ends the old
 * one), FAIL_JOB (the job fails: `why` says which cap), ROUND (capacity freed: place again).
 *
 * The rules, written once here:
 *   - a failed attempt is charged; at max_attempts failures the job fails, and at once when the
 *     failure is fatal (killed over its memory request: the same request fails the same way,
 *     and a spec's request is the user's to raise). Otherwise the task is
 *     retried after a back-off (backoff_s, doubling per failure, at most backoff_max_s) and its
 *     next placement avoids the node it failed on;
 *   - a preempted, lost, moved or cancelled attempt is not charged but counted: after
 *     replace_factor x max_attempts of them the job fails (a task never bounces forever); a lost
 *     attempt's node is avoided by its next placement;
 *   - a node is down when the view says so and the RM's state says down (or the RM does not know
 *     it): draining keeps its tasks; it is silent when nothing was heard from it for
 *     node_timeout_s while an attempt waited on it that long (attempt_node_check);
 *   - a node that refuses with ERR_UNAVAILABLE (draining) is not the task's fault: re-placed
 *     uncharged, the node gets nothing until the view says otherwise; any other refusal fails;
 *   - downgrades (grant below the regular units in flight): queued tasks first, then running
 *     ones with the most time left (jm/dispatch.h); a running one keeps a grace of its time left
 *     only when that is at most grace_max_s and a grace_frac of its estimate; upgrades: highest
 *     priority (bottom level) first, repeated while units are free;
 *   - a status in another class than recorded is the PN's word (units follow it), except within
 *     class_settle_s of a change of ours (a status sent before our TASK_UPGRADE arrived), but
 *     not a class trade's (the node made one of the job's waiting tasks regular in the place
 *     of another, which turned opportunistic: both statuses are its word at once);
 *   - free capacity for new work (attempt_free) is the units the grant leaves over the regular
 *     ones in flight, and the allowance over the opportunistic ones; a speculative copy needs a
 *     free unit of either and a task that allows copies (attempt_copy_class);
 *   - node-local outputs lost with their node are re-run when a dependent still needs them
 *     (attempt_outputs_lost).
 *
 * Storage: the per-task records (struct attempt_task) live in the caller's array (base, stride)
 * or, with base NULL, in the machine. dag and dispatch are borrowed: the machine keeps their
 * states in step with the attempts (dag_start/succeed/requeue/fail, dispatch_finished/started/
 * reclass), checking every return. Beside the records the machine keeps an index of the tasks in
 * flight and of those queued at their node (attempt_inflight, attempt_queued), 16 bytes per
 * task. Pure: no clock, no I/O; `now` in ms from the caller.
 */
#ifndef PADDOCK_JM_ATTEMPT_H
#define PADDOCK_JM_ATTEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "jm/dag.h"
#include "jm/dispatch.h"

/* Public value struct: attempt_config_default() then adjust. */
struct attempt_config {
    int max_attempts;      /* failed attempts a task may have (default 3) */
    int replace_factor;    /* uncharged re-placements per allowed attempt (default 10) */
    double backoff_s;      /* delay before the first retry of a failed task (default 1) */
    double backoff_max_s;  /* the delay doubles per failure up to this (default 30) */
    double grace_max_s;    /* a downgraded running task's grace at most (default 5) */
    double grace_frac;     /* ... and at most this share of its estimate (default 0.25) */
    double node_timeout_s; /* silence from a node before its attempts are lost (default 15) */
    double class_settle_s; /* a class change of ours is in transit this long (default 2) */
};
void attempt_config_default(struct attempt_config *c);

/* One task's attempt record (public value, read-only outside attempt.c):
 *   attempt   last wire attempt number (0: never dispatched)
 *   seen      highest attempt number seen anywhere: the next one is above it
 *   failures  failed attempts (charged)
 *   replaced  attempts lost, preempted, moved or cancelled (not charged)
 *   moves     attempts moved off a long queue (jm/correct.h)
 *   inflight  the tracked attempt is out; running: its node said running
 *   node      its node (view index), -1; cls: its enum dispatch_class
 *   avoid     the node of the last failure or loss (-1)
 *   retry_ms  backing off: not ready before this (0: not held)
 *   placed_ms, run_ms, cls_ms  when placed, said running, its class last changed
 * ATTEMPT_TASK_FIELDS lets a caller's per-task struct hold the record as an anonymous member
 * (union { struct attempt_task at; struct { ATTEMPT_TASK_FIELDS }; }) and read it by name. */
#define ATTEMPT_TASK_FIELDS                                                                        \
    uint32_t attempt, seen, failures, replaced, moves;                                             \
    int inflight, running, node, cls, avoid;                                                       \
    int64_t retry_ms, placed_ms, run_ms, cls_ms;
struct attempt_task {
    ATTEMPT_TASK_FIELDS
};

enum attempt_ev_kind {
    ATTEMPT_EV_PLACED = 1, /* node, cls: a round placed the idle task */
    ATTEMPT_EV_STATUS,     /* attempt, state (proto_task_state_t), cls (the node's) */
    ATTEMPT_EV_REFUSED,    /* attempt, code (ERR_*) */
    ATTEMPT_EV_NODE,       /* state: ATTEMPT_NODE_DOWN or ATTEMPT_NODE_SILENT */
    ATTEMPT_EV_MOVED,      /* the queued attempt goes elsewhere */
    ATTEMPT_EV_UNSENDABLE, /* the create cannot be sent at all: a failed attempt */
    ATTEMPT_EV_CANCEL,     /* the JM cancels the attempt (its input was lost): placed again */
    ATTEMPT_EV_JOB_END,    /* the job ended: cancel and record whatever is in flight */
};

struct attempt_event {
    int kind; /* enum attempt_ev_kind */
    size_t task;
    uint32_t attempt; /* STATUS, REFUSED: the attempt it is about */
    int state;        /* STATUS: proto_task_state_t; NODE: enum attempt_node */
    int node;         /* PLACED */
    int cls;          /* PLACED; STATUS: the class the node runs it in (DISPATCH_NONE: unsaid) */
    int code;         /* REFUSED */
    int extra;        /* an extra attempt of the task is live and may take over an end */
    int fatal;        /* STATUS FAILED: a retry as it is cannot succeed (over its memory request) */
    int traded;       /* STATUS: the node traded classes between two of the job's tasks there
                         (pn/queue.h queue_pick_trade): its class is taken even within
                         class_settle_s of a change of ours */
};

enum attempt_act_kind {
    ATTEMPT_ACT_CREATE = 1,
    ATTEMPT_ACT_CANCEL,
    ATTEMPT_ACT_NODE_OFF,
    ATTEMPT_ACT_RECLASS,
    ATTEMPT_ACT_STARTED,
    ATTEMPT_ACT_RECORD,
    ATTEMPT_ACT_DONE,
    ATTEMPT_ACT_AVOID,
    ATTEMPT_ACT_RETRY,
    ATTEMPT_ACT_TAKEOVER,
    ATTEMPT_ACT_FAIL_JOB,
    ATTEMPT_ACT_ROUND,
};

enum attempt_why {
    ATTEMPT_WHY_NONE = 0,
    ATTEMPT_WHY_FAILED,   /* FAIL_JOB: max_attempts failures */
    ATTEMPT_WHY_REPLACED, /* FAIL_JOB: too many uncharged re-placements */
    ATTEMPT_WHY_FATAL,    /* FAIL_JOB: a failure no retry of the same task can mend */
};

struct attempt_action {
    int kind; /* enum attempt_act_kind */
    size_t task;
    uint32_t attempt;
    int node;          /* of the attempt */
    int cls;           /* CREATE, RECLASS, RECORD: its class */
    int state;         /* RECORD, TAKEOVER: how the attempt ended */
    int64_t at_ms;     /* RETRY: ready at */
    uint64_t grace_ms; /* RECLASS to opportunistic of a running task */
    size_t released;   /* DONE: dependents made ready */
    int why;           /* FAIL_JOB: enum attempt_why */
};

/* Most actions one attempt_step writes. */
#define ATTEMPT_MAX_ACTIONS 8

enum attempt_node {
    ATTEMPT_NODE_OK = 0,
    ATTEMPT_NODE_DOWN,
    ATTEMPT_NODE_SILENT,
};

/* What the caller knows of an attempt's node (public value). */
struct attempt_node_obs {
    int known;         /* the view has the node */
    int view_up;       /* the view says up */
    int rm_known;      /* the RM's node state is known */
    int rm_down;       /* ... and it is down (draining is not down) */
    int64_t heard_ms;  /* last word from the node (a status, or the first dispatch) */
    int64_t placed_ms; /* when the attempt was placed there */
};

typedef struct attempt attempt_t;

/* New machine for ntasks tasks over `dag` and `dispatch` (borrowed for its life). base: the
 * caller's array whose elements, stride bytes apart, each hold a struct attempt_task at offset 0
 * (NULL: the machine allocates its own). Every record starts idle with node -1. cfg copied
 * (NULL: defaults). 0, ERR_INVAL (also ntasks of UINT32_MAX or more), ERR_NOMEM. Caller owns
 * *out; attempt_destroy. */
int attempt_new(const struct attempt_config *cfg, size_t ntasks, dag_t *dag, dispatch_t *dispatch,
                void *base, size_t stride, attempt_t **out);
void attempt_destroy(attempt_t **p);
const struct attempt_config *attempt_get_config(const attempt_t *a);

/* The dispatcher the machine was made with (borrowed). */
const dispatch_t *attempt_dispatch(const attempt_t *a);
/* The record of `task` (NULL for a bad index). */
const struct attempt_task *attempt_get(const attempt_t *a, size_t task);

/* Feeds one event: writes at most ATTEMPT_MAX_ACTIONS actions into out (cap >= that) and
 * returns how many (0: nothing to do, a stale status), or ERR_RANGE (bad task), ERR_INVAL (bad
 * event), ERR_STATE (the DAG or dispatcher refused: a caller's bug, nothing changed where it
 * could be avoided). */
int attempt_step(attempt_t *a, const struct attempt_event *ev, int64_t now_ms,
                 struct attempt_action *out, size_t cap);

/* 1 when `attempt` is the tracked attempt of `task` in flight. */
int attempt_tracks(const attempt_t *a, size_t task, uint32_t attempt);

/* The tasks queued at their node: tracked attempt in flight, regular, at a node (node >= 0), not
 * yet said running. Kept in step with the records by every call above and below that changes
 * them, O(1) each, so that place_queued_update, once per placement round, walks these and not
 * every task (issue 24: a million-task job). Sets *tasks to them, in no particular order
 * (borrowed until the next call that changes the machine), and returns how many. */
size_t attempt_queued(const attempt_t *a, const uint32_t **tasks);
/* The tasks whose tracked attempt is in flight, kept and returned the same way: for the
 * caller's periodic looks at what is in flight (lost nodes, new estimates) without a walk over
 * every task. */
size_t attempt_inflight(const attempt_t *a, const uint32_t **tasks);

/* Notes a wire attempt number seen for `task` (journal, nodes): new ones are numbered above. */
void attempt_note_seen(attempt_t *a, size_t task, uint32_t attempt);

/* A new wire number for an extra attempt of `task` (copies, duplicates). */
uint32_t attempt_reserve(attempt_t *a, size_t task);

/* An extra attempt of `task` ended with `state`: a failure is charged to the task (no cap
 * checked: the tracked attempt goes on). */
void attempt_extra_ended(attempt_t *a, size_t task, int state);

/* An ended attempt replayed from the journal (resume): counted as when it ended. */
void attempt_replayed(attempt_t *a, size_t task, uint32_t attempt, int state, int moved);

/* A resumed JM takes over an attempt found at a node for a READY task: in flight in class cls
 * (dag_start, dispatch_adopt). 0, ERR_STATE, ERR_RANGE. */
int attempt_adopt(attempt_t *a, size_t task, uint32_t attempt, int node, int cls, int64_t now_ms);

/* An extra attempt takes the place of the tracked one (TAKEOVER, or it finished or started
 * first): its number, node, class and running flag become the task's; units move with a class
 * change. 0, ERR_RANGE, ERR_STATE (not in flight). */
int attempt_takeover(attempt_t *a, size_t task, uint32_t attempt, int node, int cls, int running,
                     int64_t now_ms);

/* Tasks whose back-off ended by now_ms: written into out (at most cap), no longer held; the
 * caller makes them ready. Returns how many. */
size_t attempt_due(attempt_t *a, int64_t now_ms, size_t *out, size_t cap);
/* Tasks READY in the DAG but held back (backing off). */
size_t attempt_held(const attempt_t *a);
/* 1 when `task` is held back. */
int attempt_is_held(const attempt_t *a, size_t task);

/* The grant fell below the regular units in flight: downgrades (dispatch_downgrades' order),
 * each a RECLASS action to opportunistic with its grace (remaining[task]: seconds left,
 * estimate[task]: its run-time estimate, both per task). Writes at most cap; returns how many
 * (call again while it returns cap). */
size_t attempt_downgrades(attempt_t *a, const double *prio, const double *remaining,
                          const double *estimate, int64_t now_ms, struct attempt_action *out,
                          size_t cap);
/* Units free: upgrades of waiting opportunistic tasks, highest prio first, each a RECLASS to
 * regular. Writes at most cap; returns how many (call again while it returns cap). */
size_t attempt_upgrades(attempt_t *a, const double *prio, int64_t now_ms,
                        struct attempt_action *out, size_t cap);

/* A task with a node that can start it now finds no free units (issue 22): waiting regular
 * tasks placed at least min_wait_ms ago (queued behind work, not on their way to a free core)
 * yield theirs (dispatch_yield's rule and order), each a RECLASS to opportunistic without
 * grace, so that `task` can be placed regular. Writes at most cap (the yields needed are at
 * most cap or none happen); returns how many, 0 when nothing yields. */
size_t attempt_yield(attempt_t *a, size_t task, const double *prio, int64_t min_wait_ms,
                     int64_t now_ms, struct attempt_action *out, size_t cap);
/* The units attempt_yield could free now. */
uint64_t attempt_yieldable(attempt_t *a, int64_t min_wait_ms, int64_t now_ms);

/* The grace a downgraded attempt keeps: its time left when it runs, that is at most grace_max_s
 * and at most grace_frac of est_s; 0 otherwise. */
uint64_t attempt_grace_ms(const struct attempt_config *c, int running, double left_s, double est_s);

/* The back-off before the retry after the n-th failure (n >= 1), ms. */
int64_t attempt_backoff_ms(const struct attempt_config *c, uint32_t failures);

/* Free capacity for new work, in token units (public value). */
struct attempt_free {
    uint64_t regular;       /* tokens less the regular units in flight */
    uint64_t opportunistic; /* allowance less the opportunistic units in flight */
};
/* extra_reg/extra_opp: units extra attempts hold that the dispatcher does not count. */
struct attempt_free attempt_free(const dispatch_t *d, uint64_t extra_reg, uint64_t extra_opp);

/* The class a speculative copy of `task` may have now: DISPATCH_NONE when the task forbids
 * copies (`"speculate": false`) or no unit is free for its cost (jm/speculate.h's rule). */
enum dispatch_class attempt_copy_class(const dispatch_t *d, size_t task, int speculate,
                                       uint64_t extra_opp);

/* Whether an attempt's node is lost (the rule above); the caller turns DOWN/SILENT into an
 * ATTEMPT_EV_NODE. */
enum attempt_node attempt_node_check(const struct attempt_config *c,
                                     const struct attempt_node_obs *o, int64_t now_ms);

/* 1 when a task that succeeded on a node now down must run again: it has node-local outputs
 * and `pending` dependents that have not succeeded need them. */
int attempt_outputs_lost(int local_outputs, int node_down, size_t pending);

#endif
