/* proto.h - Paddock's wire protocol: every message, one type table, encode and decode.
 *
 * proto/ is the only place that packs or unpacks (docs/architecture.md, "Messages"). Every message
 * is one msgpack value:
 *
 *     [version, type, req_id, body]
 *
 * version  unsigned int, PROTO_VERSION (a decoder accepts PROTO_VERSION_MIN..PROTO_VERSION)
 * type     unsigned int, a proto_type_t value from PROTO_TYPES below
 * req_id   unsigned int, chosen by the sender of a request and echoed in its reply (also in an
 *          ERROR), so a DEALER can match replies to requests; 0 for unsolicited messages
 * body     a map from field name (string) to value. Unknown fields are ignored, known fields
 *          appear at most once, missing optional fields decode as 0 / NULL / empty.
 *
 * Sizes are bounded by proto/limits.h. Integers go on the wire in msgpack's smallest form, cpu
 * quantities and weights as float64, strings as str (never containing NUL), time as
 * milliseconds (timestamps: wall clock, ms since the Unix epoch; durations: ms).
 *
 * ## Conversations (C: the side that starts it, S: the side that answers)
 *
 * Any request may instead be answered by ERROR (code + text). ERROR with ERR_NOTLEADER carries
 * the leader's API endpoint when the replica knows it (absent during an election): the client
 * retries there, with the same idempotency key.
 *
 * PN -> RM (RM API ROUTER; registration is committed through Raft):
 *     C:NODE_REGISTER S:NODE_REGISTER_ACK
 * PN -> every RM replica (heartbeat socket; soft state, not through the log):
 *     C:HEARTBEAT*            (no reply; an RM that has no registration for this name and
 *                              boot id answers ERROR(ERR_NOTFOUND), and the PN registers again)
 * RM -> JM (view PUB/SUB, one stream per replica):
 *     S:(VIEW_SNAPSHOT+ VIEW_DELTA*)*
 *                             (a snapshot is parts 0..parts-1 sharing one view_seq; a delta
 *                              applies to the view at base_seq and yields view_seq; a JM that
 *                              missed a delta waits for the next snapshot)
 * JM (or the CLI submitting) -> RM (RM API ROUTER; each write carries an idempotency key,
 * because RAFT_LEADERSHIPLOST does not mean "not committed": a retry with the same key returns
 * the first outcome):
 *     C:JOB_REGISTER   S:JOB_REGISTER_REPLY
 *     C:TOKEN_REQUEST  S:TOKEN_GRANT        (tokens is the absolute target count)
 *     C:TOKEN_RELEASE  S:TOKEN_GRANT        (the grant that remains)
 *     C:LEASE_RENEW    S:LEASE_ACK          (carries job progress; the ack carries cancel
 *                                            requests and deadline changes made by admins)
 * JM -> PN (PN ROUTER; the PN answers to the sender, or to reply_endpoint when set):
 *     C:TASK_CREATE  S:TASK_STATUS*         (queued, staging, running, ..., ending with one
 *                                            terminal state: succeeded, failed, preempted,
 *                                            cancelled or lost)
 *     C:TASK_CANCEL  S:TASK_STATUS          (cancelled, or the terminal state it already had)
 *     C:TASK_UPGRADE S:TASK_STATUS          (the class asked for, in place, no restart:
 *                                            regular, or opportunistic for a downgrade)
 *     C:TASK_ESTIMATE                       (no reply: the JM's refined R for a live task,
 *                                            sent when it moved past a threshold)
 * CLI -> RM (RM API ROUTER):
 *     C:ADMIN_QUERY  S:ADMIN_REPLY          (the reply carries one JSON document as a string:
 *                                            the RM builds it, the CLI prints or reads it)
 * CLI -> PN (PN ROUTER, the same CURVE keys as a JM's; `paddock logs`):
 *     C:TASK_OUTPUT_READ S:TASK_OUTPUT      (a part of a task attempt's stdout or stderr, for as
 *                                            long as the PN keeps the task's directory; ERROR
 *                                            with ERR_NOTFOUND when it does not)
 *
 * ## Ownership
 * A proto_msg_t owns every pointer in it once decoded (allocated through mem_*), and
 * proto_msg_close() frees them. A caller that builds a message to encode may point its fields
 * at anything: proto_encode() only borrows them for the call; such a message must not be
 * passed to proto_msg_close() unless its pointers came from mem_*.
 */
#ifndef PADDOCK_PROTO_PROTO_H
#define PADDOCK_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/limits.h"

#define PROTO_VERSION     1u
#define PROTO_VERSION_MIN 1u

/* ---------------------------------------------------------------------------------------- */
/* Enumerations carried in messages (4 bytes each, range-checked by the decoder). */

#define PROTO_TASK_STATES(X)                                                                       \
    X(PROTO_TASK_QUEUED, 0, "queued")                                                              \
    X(PROTO_TASK_STAGING, 1, "staging")                                                            \
    X(PROTO_TASK_RUNNING, 2, "running")                                                            \
    X(PROTO_TASK_SUCCEEDED, 3, "succeeded")                                                        \
    X(PROTO_TASK_FAILED, 4, "failed")                                                              \
    X(PROTO_TASK_PREEMPTED, 5, "preempted")                                                        \
    X(PROTO_TASK_CANCELLED, 6, "cancelled")                                                        \
    X(PROTO_TASK_LOST, 7, "lost")

#define PROTO_TASK_CLASSES(X)                                                                      \
    X(PROTO_CLASS_REGULAR, 0, "regular")                                                           \
    X(PROTO_CLASS_OPPORTUNISTIC, 1, "opportunistic")

/* Node state in the RM's view: up (heartbeats fresh), suspect (heartbeats late), down (past the
 * timeout: its tasks are re-placed), draining (admin: no new tasks). */
#define PROTO_NODE_STATES(X)                                                                       \
    X(PROTO_NODE_UP, 0, "up")                                                                      \
    X(PROTO_NODE_SUSPECT, 1, "suspect")                                                            \
    X(PROTO_NODE_DOWN, 2, "down")                                                                  \
    X(PROTO_NODE_DRAINING, 3, "draining")

#define PROTO_JOB_STATES(X)                                                                        \
    X(PROTO_JOB_PENDING, 0, "pending")                                                             \
    X(PROTO_JOB_RUNNING, 1, "running")                                                             \
    X(PROTO_JOB_SUCCEEDED, 2, "succeeded")                                                         \
    X(PROTO_JOB_FAILED, 3, "failed")                                                               \
    X(PROTO_JOB_CANCELLED, 4, "cancelled")

#define PROTO_VERDICTS(X)                                                                          \
    X(PROTO_VERDICT_ACCEPTED, 0, "accepted")                                                       \
    X(PROTO_VERDICT_REJECTED, 1, "rejected")

#define PROTO__ENUM(name, value, text) name = value,
typedef enum { PROTO_TASK_STATES(PROTO__ENUM) PROTO_TASK_STATE_COUNT } proto_task_state_t;
typedef enum { PROTO_TASK_CLASSES(PROTO__ENUM) PROTO_TASK_CLASS_COUNT } proto_task_class_t;
typedef enum { PROTO_NODE_STATES(PROTO__ENUM) PROTO_NODE_STATE_COUNT } proto_node_state_t;
typedef enum { PROTO_JOB_STATES(PROTO__ENUM) PROTO_JOB_STATE_COUNT } proto_job_state_t;
typedef enum { PROTO_VERDICTS(PROTO__ENUM) PROTO_VERDICT_COUNT } proto_verdict_t;

/* Lower-case names ("running"); "?" for a value outside the table. */
const char *proto_task_state_name(proto_task_state_t s);
const char *proto_task_class_name(proto_task_class_t c);
const char *proto_node_state_name(proto_node_state_t s);
const char *proto_job_state_name(proto_job_state_t s);
const char *proto_verdict_name(proto_verdict_t v);
/* True for succeeded, failed, preempted, cancelled and lost: no further status follows. */
bool proto_task_state_terminal(proto_task_state_t s);

/* ---------------------------------------------------------------------------------------- */
/* Building blocks. */

/* Wait-time matrix (Apollo 3.2): rows are cpu bins, columns memory bins. Cell (r, m) is the
 * expected wait in ms before a new task needing at most cpu_bounds[r] cores and
 * mem_bounds_mb[m] MiB could start on the node. ncpu == nmem == 0 means "no matrix".
 * Otherwise both are 1..PROTO_MAX_MATRIX_DIM and the bounds are positive and strictly
 * increasing. PROTO_WAIT_NEVER marks a request the node can never hold. */
#define PROTO_WAIT_NEVER UINT32_MAX
typedef struct proto_matrix {
    uint32_t ncpu;
    uint32_t nmem;
    double cpu_bounds[PROTO_MAX_MATRIX_DIM];      /* cores, upper bound of each row */
    uint64_t mem_bounds_mb[PROTO_MAX_MATRIX_DIM]; /* MiB, upper bound of each column */
    uint32_t cells_ms[PROTO_MAX_MATRIX_CELLS];    /* row-major: cells_ms[r * nmem + m] */
    int64_t timestamp_ms;                         /* when the PN computed it */
} proto_matrix_t;
/* Wire: {"cpu": [f64...], "mem": [uint...], "cells": [uint... ncpu*nmem], "ts": int} */

static inline uint32_t proto_matrix_cell(const proto_matrix_t *m, uint32_t r, uint32_t c)
{
    return m->cells_ms[r * m->nmem + c];
}

typedef struct proto_kv { /* one environment entry: key non-empty, without '=' */
    char *key;
    char *value;
} proto_kv_t;

typedef struct proto_file { /* a file to stage into the PN's cache before the task starts */
    char *path;             /* absolute path, required */
    uint64_t bytes;         /* size if known, else 0 */
} proto_file_t;

typedef struct proto_outcome { /* task outcomes on one node since the JM's last report */
    char *node;                /* the PN's name, required */
    uint32_t ok;               /* attempts that succeeded there */
    uint32_t failed;           /* attempts that failed there */
} proto_outcome_t;

/* ---------------------------------------------------------------------------------------- */
/* Message bodies. "req" marks a field the decoder requires; all others are optional. */

typedef struct proto_node_register { /* PN -> RM */
    char *key;                       /* idempotency key, req */
    char *name;                      /* node name, req, non-empty */
    char *rack;                      /* rack name, req (may be empty) */
    char *endpoint;                  /* the PN's ROUTER endpoint for JMs, req */
    uint64_t boot_id;                /* random per PN start, req */
    double cpu;                      /* capacity in cores, req, > 0 */
    uint64_t mem_mb;                 /* capacity in MiB, req, > 0 */
    char *version;                   /* software version text */
    int64_t timestamp_ms;
} proto_node_register_t;

typedef struct proto_node_register_ack { /* RM -> PN */
    char *key;                           /* echoed, req */
    char *name;                          /* req */
    uint64_t boot_id;                    /* req */
    uint32_t verdict;                    /* proto_verdict_t, req */
    int32_t code;                        /* 0 when accepted, else an ERR_* code */
    char *reason;                        /* why rejected */
    uint32_t heartbeat_ms;               /* interval the RM wants, 0 = PN's default */
    uint64_t rm_id;                      /* Raft id of the replica that answered */
} proto_node_register_ack_t;

typedef struct proto_heartbeat { /* PN -> every RM replica */
    char *name;                  /* req */
    char *rack;                  /* req */
    char *endpoint;              /* req */
    uint64_t boot_id;            /* req */
    uint64_t seq;                /* req; increases by one per heartbeat within a boot */
    double cpu;                  /* capacity, cores, req */
    uint64_t mem_mb;             /* capacity, MiB, req */
    double used_cpu;             /* cores in use */
    uint64_t used_mem_mb;
    uint32_t running_regular;
    uint32_t running_opportunistic;
    uint32_t queued_regular;
    uint32_t queued_opportunistic;
    bool draining; /* the PN takes no new tasks (it was told to drain) */
    proto_matrix_t matrix;
    int64_t timestamp_ms; /* req */
    char **jobs;    /* jobs with live tasks here (the leader answers their states: HEARTBEAT_ACK) */
    uint32_t njobs; /* 0..PROTO_MAX_NODE_JOBS */
    /* the PN's Prometheus endpoint, "http://HOST:PORT/metrics" (docs/metrics.md), bounded like
     * an endpoint; NULL or empty: none */
    char *metrics_url;
    /* The PN's cache advertisement (issue 15): a Bloom filter (common/bloom.h wire form) of the
     * source paths of the files its cache holds, so every JM can take I = 0 there. At most
     * PROTO_MAX_CACHE_FILTER bytes; the decoder refuses one that bloom_decode refuses. Empty:
     * nothing advertised. A false positive costs the task its staging (the PN stages anyway). */
    uint8_t *cache_filter;
    uint32_t cache_filter_len;
} proto_heartbeat_t;

typedef struct proto_job_info { /* one job as the RM's ledger has it */
    char *job_id;               /* req */
    uint32_t state;             /* 0 unknown to the RM, 1 active, 2 done, 3 failed, 4 cancelled,
                                   5 expired (its lease lapsed; a resume may revive it) */
    uint32_t epoch;
} proto_job_info_t;

typedef struct proto_heartbeat_ack { /* RM leader -> PN: the states of the jobs it named */
    proto_job_info_t *jobs;          /* 0..PROTO_MAX_NODE_JOBS */
    uint32_t njobs;
    uint64_t rm_id; /* the leader that answered */
} proto_heartbeat_ack_t;

typedef struct proto_view_node { /* one node in the RM's cluster view */
    char *name;                  /* req */
    char *rack;                  /* req */
    char *endpoint;              /* req */
    uint32_t state;              /* proto_node_state_t, req */
    double cpu;
    uint64_t mem_mb;
    double used_cpu;
    uint64_t used_mem_mb;
    uint32_t running_regular;
    uint32_t running_opportunistic;
    uint32_t queued_regular;
    uint32_t queued_opportunistic;
    proto_matrix_t matrix;
    uint64_t boot_id;      /* req; with seq, the freshness order a JM keeps per node */
    uint64_t seq;          /* req */
    uint64_t age_ms;       /* time since the replica received this node's last heartbeat */
    uint64_t failures;     /* task attempts failed on this node (for Psucc) */
    uint64_t successes;    /* task attempts succeeded on this node */
    uint8_t *cache_filter; /* the node's last HEARTBEAT cache_filter, as it sent it */
    uint32_t cache_filter_len;
} proto_view_node_t;

typedef struct proto_view_snapshot { /* RM -> JM */
    uint64_t rm_id;                  /* Raft id of the publishing replica, req */
    uint64_t view_seq;               /* req */
    uint32_t part;                   /* 0..parts-1, req */
    uint32_t parts;                  /* 1..PROTO_MAX_VIEW_PARTS, req */
    int64_t timestamp_ms;
    proto_view_node_t *nodes; /* nnodes entries, 0..PROTO_MAX_VIEW_NODES */
    uint32_t nnodes;
} proto_view_snapshot_t;

typedef struct proto_view_delta { /* RM -> JM */
    uint64_t rm_id;               /* req */
    uint64_t view_seq;            /* req */
    uint64_t base_seq;            /* req: the view this delta applies to */
    int64_t timestamp_ms;
    proto_view_node_t *changed; /* nchanged entries, 0..PROTO_MAX_VIEW_NODES */
    uint32_t nchanged;
    char **removed; /* nremoved node names, 0..PROTO_MAX_VIEW_REMOVED */
    uint32_t nremoved;
} proto_view_delta_t;

typedef struct proto_job_register { /* JM or CLI -> RM */
    char *key;                      /* idempotency key, req */
    char *name;                     /* job name (profiles are kept per name), req */
    char *virtual_cluster;          /* req */
    uint64_t deadline_ms;           /* relative to submission, 0 = none */
    uint32_t tasks_total;
    char *jm_endpoint; /* where the JM can be reached, if it already runs */
    char *submitter;
    int64_t submit_ms;
    /* The job's shape for the arbiter (rm/arbiter.h), in sized tokens (Apollo §2.1): mean and
     * standard deviation of its total work (token-ms) and of its critical path (ms), the most
     * tokens it can use at once, and whether the estimates come from a profile of earlier runs
     * (Jockey) or from the spec alone. All 0 when unknown: the RM then admits without a check. */
    uint64_t work_ms;
    uint64_t work_sd_ms;
    uint64_t path_ms;
    uint64_t path_sd_ms;
    uint32_t width;
    bool has_profile;
    /* Where its list schedule falls between ARIA's bounds (rm/arbiter.h), x 1000; only with
     * has_alpha (without: Verma's mean of the bounds). */
    bool has_alpha;
    uint32_t alpha_milli;
    bool best_effort; /* run without admission control (deadline kept for ordering only) */
    double weight;    /* share of spare among jobs without a deadline; 0 = 1 */
    /* A run of a recurring job (Morpheus): its name and period instance (rm/period.h). The RM
     * registers at most one job per (recurring, period): a second JM started for the same run
     * is refused with ERR_EXISTS. Empty: an ad-hoc job. */
    char *recurring;
    uint64_t period;
    /* Files the job declares it reads and writes (its spec's "inputs" and "outputs"): a job
     * reading a recurring job's output tells the RM when that output was first consumed
     * (Morpheus §4, SLO inference). */
    char **inputs;
    uint32_t ninputs; /* 0..PROTO_MAX_JOB_FILES */
    char **outputs;
    uint32_t noutputs;
    /* Where the JM keeps the job directory, and on which host: the RM starts a JM there again
     * (--resume) when the job's lease lapses, where it is configured to (docs/rm.md). */
    char *job_dir;
    char *host;
    uint32_t jm_pid;   /* the JM's pid on that host, when the JM registers itself */
    char *metrics_url; /* the JM's Prometheus endpoint (docs/metrics.md); NULL or empty: none */
    /* The job's own spread (issue 22; jm/shape.h): its simulated finish's q95 over its median,
     * x 1000 (1000..20000); 0: none, the RM bounds it by the cluster's factor alone. */
    uint32_t spread_milli;
} proto_job_register_t;

typedef struct proto_job_register_reply { /* RM -> JM or CLI */
    char *key;                            /* echoed, req */
    char *job_id;                         /* the id the RM assigned, req (empty if refused) */
    int32_t code;                         /* 0 accepted, else ERR_* (e.g. admission refused) */
    char *reason;
    /* With ERR_ADMISSION: the earliest feasible finish (MRM §3), ms from submission: the
     * median estimate and the conservative bound the admission check uses. Also set when
     * accepted: the finish the RM expects at the deadline given. */
    uint64_t eff_p50_ms;
    uint64_t eff_ms;
    uint32_t epoch; /* the JM incarnation's fencing epoch: 1 at registration, bumped by every
                       JOB_RESUME; TASK_CREATE, TASK_CANCEL and TASK_UPGRADE carry it */
} proto_job_register_reply_t;

typedef struct proto_job_resume { /* JM -> RM: a JM started again for a registered job */
    char *key;                    /* idempotency key, req */
    char *job_id;                 /* req */
    char *jm_endpoint;
    char *job_dir; /* where its job directory is (the RM may restart a JM there) */
    char *host;    /* the host the JM runs on */
    uint32_t jm_pid;
} proto_job_resume_t;
/* Answered with JOB_REGISTER_REPLY: the same job id and a new epoch, or a refusal: ERR_NOTFOUND,
 * ERR_STATE (the job ended: done, failed or cancelled), ERR_FULL (restarted too often: the RM
 * fails the job with that reason). */

typedef struct proto_token_request { /* JM -> RM */
    char *key;                       /* idempotency key, req */
    char *job_id;                    /* req */
    uint32_t tokens;                 /* absolute number of guaranteed tokens wanted, req */
    uint32_t raw; /* of them, what the job needs now: its Jockey controller's raw allocation A^r
                     (the rest is its hysteresis); the RM takes it as the job's minimum. 0:
                     unknown (a job without a controller, older JMs): `tokens` */
} proto_token_request_t;

typedef struct proto_token_grant { /* RM -> JM */
    char *key;                     /* echoed, req */
    char *job_id;                  /* req */
    uint32_t granted;              /* tokens the job holds now, req */
    uint32_t requested;            /* what the job asked for last */
    uint32_t capacity;             /* token capacity of the job's virtual cluster */
    uint32_t lease_ms;             /* the grant is reclaimed unless renewed within this */
    uint64_t ledger_index;         /* Raft index of the entry that set it (orders grants) */
    uint32_t minimum;              /* of the grant, the job's guaranteed minimum; the rest is
                                      spare the arbiter may reclaim (MinEDF-WC) */
    double token_cpu;              /* a token's size in the virtual cluster (0: 1 core) */
    uint64_t token_mem_mb;         /* (0: 4096 MiB) */
    uint32_t epoch; /* the job's current epoch: a JM holding an older one is stale and stops */
} proto_token_grant_t;

typedef struct proto_token_release { /* JM -> RM */
    char *key;                       /* idempotency key, req */
    char *job_id;                    /* req */
    uint32_t tokens;                 /* how many to give back */
    bool all;                        /* give back every token (job finished) */
} proto_token_release_t;

typedef struct proto_sky { /* one step of a skyline */
    uint32_t milli;        /* tokens in use, averaged over the step, x 1000 */
} proto_sky_t;

typedef struct proto_lease_renew { /* JM -> RM */
    char *key;                     /* idempotency key, req */
    char *job_id;                  /* req */
    char *jm_endpoint;
    uint32_t lease_ms; /* lease asked for, 0 = the RM's default */
    uint32_t state;    /* proto_job_state_t */
    uint32_t tasks_total;
    uint32_t tasks_succeeded;
    uint32_t tasks_failed;
    uint32_t running_regular;
    uint32_t running_opportunistic;
    uint64_t deadline_ms; /* the deadline the JM works to, 0 = none */
    int64_t timestamp_ms;
    uint64_t eta_ms;     /* the JM's expected finish, ms from submission (0: unknown) */
    uint64_t eta_p95_ms; /* its conservative bound */
    uint32_t demand;     /* token units the job could use now (in flight plus ready) + 1, so that 0
                            means unknown (older JMs): the arbiter hands a deadline job no spare
                            beyond it */
    proto_outcome_t *outcomes; /* per node, since the last acknowledged renewal (Psucc, Apollo
                                  §3.3); the RM counts them once per key */
    uint32_t noutcomes;        /* 0..PROTO_MAX_OUTCOMES */
    /* Usage (Morpheus §5), at least in the renewal that ends the job (state done, failed or
     * cancelled): when its first task started, the token-ms its regular and opportunistic
     * tasks used in all, and its skyline: token units in use per step of skyline_step_ms from
     * started_ms (the JM doubles the step when the job outgrows PROTO_MAX_SKYLINE steps). */
    int64_t started_ms;
    uint64_t token_ms;
    uint32_t skyline_step_ms;
    proto_sky_t *skyline;
    uint32_t nskyline; /* 0..PROTO_MAX_SKYLINE */
    /* Where the JM runs (a JM started by `paddock submit` did not register itself): the RM
     * starts a JM there again (--resume) when this one dies, where configured to. */
    char *job_dir;
    char *host;
    uint32_t jm_pid;
    uint32_t epoch;    /* the renewing JM's epoch: an older one than the job's is refused
                          (ERR_FENCED) and changes nothing; 0: none (older JMs) */
    char *metrics_url; /* the JM's Prometheus endpoint (docs/metrics.md); NULL or empty: none */
} proto_lease_renew_t;

typedef struct proto_lease_ack { /* RM -> JM */
    char *key;                   /* echoed, req */
    char *job_id;                /* req */
    uint32_t lease_ms;           /* granted lease, req */
    uint32_t granted;            /* tokens held */
    bool cancel;                 /* an admin asked to cancel the job */
    uint64_t deadline_ms;        /* current deadline in the registry (admins may change it) */
    uint32_t minimum;            /* as in TOKEN_GRANT */
    double token_cpu;
    uint64_t token_mem_mb;
    uint32_t epoch;            /* as in TOKEN_GRANT */
    uint32_t spread_milli;     /* for the ETA (issue 22): the job's own spread x 1000 (0: none) */
    uint32_t own_factor_milli; /* and rm/calib.h's learned hi_own x 1000 (0: an older RM) */
} proto_lease_ack_t;

typedef struct proto_task_create { /* JM -> PN */
    char *job_id;                  /* req */
    char *task_id;                 /* req */
    uint32_t attempt;              /* req, 0..PROTO_MAX_ATTEMPT */
    uint32_t task_class;           /* proto_task_class_t, req */
    double weight;                 /* opportunistic pick weight, >= 0 */
    char *stage;                   /* stage name (for reports) */
    char **argv;                   /* req, 1..PROTO_MAX_ARGV entries, argv[0] non-empty */
    uint32_t argc;
    proto_kv_t *env; /* 0..PROTO_MAX_ENV; wire: a map name -> value */
    uint32_t nenv;
    char *cwd;
    double cpu;          /* cores, req, > 0 */
    uint64_t mem_mb;     /* req, > 0 */
    uint64_t runtime_ms; /* runtime estimate */
    proto_file_t *files; /* 0..PROTO_MAX_FILES */
    uint32_t nfiles;
    char *reply_endpoint; /* send TASK_STATUS there instead of to the sender, if set */
    bool urgent;     /* regular, of a job with little slack left: it may preempt downgraded tasks
                        still in their grace (TASK_UPGRADE grace_ms) */
    uint32_t epoch;  /* the sending JM's epoch (JOB_REGISTER_REPLY); the PN refuses a command
                        from an older epoch than it has seen for the job (ERR_FENCED); 0: none */
    double priority; /* the task's priority within its job: its bottom level in seconds (the
                        longest estimated path from it to the job's end, jm/priority.h), 0..
                        PROTO_MAX_PRIORITY; the PN starts the job's queued tasks highest first
                        (pn/queue.h); 0: none */
    bool batch_statuses; /* the JM takes TASK_STATUS_BATCH: the PN may send the job's statuses
                            of one loop pass as one message (an older JM sends none: singles) */
} proto_task_create_t;

typedef struct proto_task_cancel { /* JM -> PN */
    char *job_id;                  /* req */
    char *task_id;                 /* req */
    uint32_t attempt;              /* req */
    char *reason;
    uint32_t epoch; /* as in TASK_CREATE */
} proto_task_cancel_t;

typedef struct proto_task_upgrade { /* JM -> PN: a change of class, in place, no restart */
    char *job_id;                   /* req */
    char *task_id;                  /* req */
    uint32_t attempt;               /* req */
    uint32_t task_class; /* the class wanted: regular (an upgrade, the default) or opportunistic
                            (a downgrade: the job's spare tokens were reclaimed, MinEDF-WC) */
    uint64_t grace_ms;   /* downgrade: the task is not preempted for this long (lets a nearly
                            done task finish rather than lose its work); 0: none */
    uint32_t epoch;      /* as in TASK_CREATE */
} proto_task_upgrade_t;

typedef struct proto_task_estimate { /* JM -> PN: a new runtime estimate for a live task */
    char *job_id;                    /* req */
    char *task_id;                   /* req */
    uint32_t attempt;                /* req */
    uint64_t runtime_ms;             /* req: the JM's refined R (as TASK_CREATE runtime_ms) */
    uint32_t epoch;                  /* as in TASK_CREATE */
} proto_task_estimate_t;
/* No reply: the PN forward-simulates its queue (and its matrix) with the new R from now on; an
 * unknown or finished task is ignored (counted), an older epoch is answered ERROR(ERR_FENCED). */

typedef struct proto_task_query { /* JM -> PN: every task of the job the PN remembers */
    char *job_id;                 /* req */
    uint32_t epoch;               /* as in TASK_CREATE: a newer epoch fences older JMs from now */
    char *reply_endpoint;
} proto_task_query_t;
/* Answered with one TASK_STATUS per task of the job the node remembers (live, or finished within
 * its retention), then TASK_QUERY_REPLY; or ERROR (ERR_FENCED for an older epoch). */
typedef struct proto_task_query_reply { /* PN -> JM */
    char *job_id;                       /* req */
    char *node;                         /* req */
    uint32_t tasks;                     /* statuses sent before this reply */
} proto_task_query_reply_t;

/* A FAILED status whose reason starts with this was killed by its PN for going over its memory
 * request: the same request would fail the same way, so its JM does not retry it unchanged. */
#define PROTO_REASON_MEMORY "memory limit"
/* A QUEUED status whose reason starts with this: the PN traded classes between two queued tasks
 * of the job (pn/queue.h queue_pick_trade), one made regular in the place of the other; its JM
 * takes the status's class at once (jm/attempt.h). */
#define PROTO_REASON_TRADED "class trade"

typedef struct proto_task_status { /* PN -> JM */
    char *job_id;                  /* req */
    char *task_id;                 /* req */
    uint32_t attempt;              /* req */
    char *node;                    /* the PN's name, req */
    uint32_t state;                /* proto_task_state_t, req */
    uint32_t task_class;           /* proto_task_class_t (after any upgrade) */
    int32_t exit_code;             /* -1..255; -1 when it did not exit normally */
    int32_t signal;                /* 0..127, the terminating signal or 0 */
    char *reason;                  /* why failed / preempted / lost, human text */
    uint64_t cpu_time_ms;          /* user + system */
    uint64_t peak_rss_kb;
    uint64_t wall_ms;
    int64_t queued_at_ms; /* timestamps, 0 = not reached */
    int64_t started_at_ms;
    int64_t ended_at_ms;
    uint32_t cache_hits; /* staged files found in the cache */
    uint32_t cache_misses;
    uint64_t expected_wait_ms; /* queued regular task: its wait from now, as the PN simulates
                                  its queue forward (0 otherwise) */
    proto_matrix_t matrix;     /* the PN's current matrix, so the JM corrects its view */
    uint64_t bytes_read;       /* input bytes the task has read so far (0: unknown); with
                                  cpu_time_ms in a RUNNING status, the task's progress for the
                                  JM's straggler detection (jm/speculate.h) */
} proto_task_status_t;

/* Statuses of one job from one loop pass of a PN, in order, to a JM whose TASK_CREATE set
 * batch_statuses; req_id 0; built by proto/batch.h (proto/README.md). */
typedef struct proto_task_status_batch { /* PN -> JM */
    proto_task_status_t *statuses;       /* req, 1..PROTO_MAX_BATCH */
    uint32_t nstatuses;
} proto_task_status_batch_t;

typedef struct proto_task_output_read { /* CLI -> PN: part of a task's output */
    char *job_id;                       /* req */
    char *task_id;                      /* req */
    uint32_t attempt;                   /* req; 0: the newest attempt the PN knows of the task */
    uint32_t stream;                    /* 0 stdout, 1 stderr */
    uint64_t offset;                    /* first byte wanted */
    uint64_t tail;      /* with offset 0: start this many bytes before the end instead (0: none) */
    uint32_t max_bytes; /* at most this many bytes back, 0..PROTO_MAX_OUTPUT_CHUNK (0: the most) */
} proto_task_output_read_t;

typedef struct proto_task_output { /* PN -> CLI: the bytes asked for, as far as they exist */
    char *job_id;                  /* req */
    char *task_id;                 /* req */
    uint32_t attempt;              /* req: the attempt read (the newest when 0 was asked) */
    char *node;                    /* the PN's name, req */
    uint32_t stream;               /* as asked */
    uint32_t state;                /* proto_task_state_t of the attempt; req */
    bool done;       /* the attempt ended: its output grows no more (read to size, then stop) */
    uint64_t offset; /* where data starts in the file */
    uint64_t size;   /* the file's size when it was read */
    uint8_t *data;   /* 0..PROTO_MAX_OUTPUT_CHUNK bytes, as the task wrote them */
    uint32_t data_len;
} proto_task_output_t;

/* Admin query kinds (the RM answers with a JSON document; the names below are the contract
 * between the CLI and the RM, arguments in order). */
#define PROTO_ADMIN_NODES        "nodes"        /* no args, or FROM COUNT (a page) */
#define PROTO_ADMIN_NODE         "node"         /* name */
#define PROTO_ADMIN_TOKENS       "tokens"       /* no args, or PROTO_ADMIN_TOKENS_BRIEF */
#define PROTO_ADMIN_TOKENS_BRIEF "brief"        /* tokens without each virtual cluster's jobs */
#define PROTO_ADMIN_JOBS         "jobs"         /* no args, or FROM COUNT (a page) */
#define PROTO_ADMIN_JOB          "job"          /* job id */
#define PROTO_ADMIN_JOB_CANCEL   "job_cancel"   /* job id */
#define PROTO_ADMIN_JOB_DEADLINE "job_deadline" /* job id, deadline in ms (decimal) */
#define PROTO_ADMIN_RM_STATUS    "rm_status"    /* no args */
/* The admission check without registering (MRM §3-4): vc, deadline ms (0: none), work_ms,
 * work_sd_ms, path_ms, path_sd_ms, width, has_profile (0/1), all decimal. The reply holds the
 * verdict, the earliest feasible finish and the price-deadline curve (rm/arbiter.h). */
#define PROTO_ADMIN_QUOTE "quote"
/* Recurring jobs (Morpheus; rm/ledger.h). Writes go through the log; names are recurring-job
 * names, durations ms (decimal).
 * recurring_add: name, vc, period_ms, offset_ms, deadline_ms (0: infer it), with the spec JSON
 * as the query's data. recurring_pause: name, "1" to pause or "0" to resume. */
#define PROTO_ADMIN_RECURRING_ADD    "recurring_add"
#define PROTO_ADMIN_RECURRING_LIST   "recurring_list"   /* no args */
#define PROTO_ADMIN_RECURRING_SHOW   "recurring_show"   /* name */
#define PROTO_ADMIN_RECURRING_PAUSE  "recurring_pause"  /* name, 1 or 0 */
#define PROTO_ADMIN_RECURRING_REMOVE "recurring_remove" /* name */
#define PROTO_ADMIN_RECURRING_ACCEPT "recurring_accept" /* name: adopt the inferred deadline */
/* Jobs whose ad-hoc submissions recur at a regular period (Morpheus §4; rm/period.h), with the
 * period, offset, inferred deadline and the evidence: [name] (only that name, with the verdict
 * when it is not periodic). */
#define PROTO_ADMIN_RECURRING_SUGGEST "recurring_suggest"
#define PROTO_ADMIN_HISTORY           "history" /* [name] */
#define PROTO_ADMIN_PLAN              "plan"    /* no args */

typedef struct proto_admin_query { /* CLI -> RM */
    char *kind;                    /* req, non-empty */
    char **args;                   /* 0..PROTO_MAX_ADMIN_ARGS */
    uint32_t nargs;
    char *data; /* a document for the query (recurring_add: the spec), 0..PROTO_MAX_ADMIN_DATA */
} proto_admin_query_t;

typedef struct proto_admin_reply { /* RM -> CLI */
    int32_t code;                  /* 0 or ERR_* */
    char *json;                    /* one JSON document (object), up to PROTO_MAX_JSON bytes */
} proto_admin_reply_t;

typedef struct proto_error { /* any direction, in reply to a request */
    int32_t code;            /* an ERR_* code (negative), req */
    char *text;              /* human-readable, req */
    uint32_t in_reply_to;    /* proto_type_t of the request, 0 if unknown */
    char *leader_endpoint;   /* with ERR_NOTLEADER: the leader's API endpoint, if known */
    uint64_t leader_id;      /* with ERR_NOTLEADER: the leader's Raft id, 0 if unknown */
} proto_error_t;

/* ---------------------------------------------------------------------------------------- */
/* The type table: X(enum, wire value, name, union member, body type). Wire values are
 * fixed forever; new types take new values. */
#define PROTO_TYPES(X)                                                                             \
    X(PROTO_NODE_REGISTER, 1, "NODE_REGISTER", node_register, proto_node_register_t)               \
    X(PROTO_NODE_REGISTER_ACK, 2, "NODE_REGISTER_ACK", node_register_ack,                          \
      proto_node_register_ack_t)                                                                   \
    X(PROTO_HEARTBEAT, 3, "HEARTBEAT", heartbeat, proto_heartbeat_t)                               \
    X(PROTO_VIEW_SNAPSHOT, 4, "VIEW_SNAPSHOT", view_snapshot, proto_view_snapshot_t)               \
    X(PROTO_VIEW_DELTA, 5, "VIEW_DELTA", view_delta, proto_view_delta_t)                           \
    X(PROTO_JOB_REGISTER, 6, "JOB_REGISTER", job_register, proto_job_register_t)                   \
    X(PROTO_JOB_REGISTER_REPLY, 7, "JOB_REGISTER_REPLY", job_register_reply,                       \
      proto_job_register_reply_t)                                                                  \
    X(PROTO_TOKEN_REQUEST, 8, "TOKEN_REQUEST", token_request, proto_token_request_t)               \
    X(PROTO_TOKEN_GRANT, 9, "TOKEN_GRANT", token_grant, proto_token_grant_t)                       \
    X(PROTO_TOKEN_RELEASE, 10, "TOKEN_RELEASE", token_release, proto_token_release_t)              \
    X(PROTO_LEASE_RENEW, 11, "LEASE_RENEW", lease_renew, proto_lease_renew_t)                      \
    X(PROTO_LEASE_ACK, 12, "LEASE_ACK", lease_ack, proto_lease_ack_t)                              \
    X(PROTO_TASK_CREATE, 13, "TASK_CREATE", task_create, proto_task_create_t)                      \
    X(PROTO_TASK_CANCEL, 14, "TASK_CANCEL", task_cancel, proto_task_cancel_t)                      \
    X(PROTO_TASK_UPGRADE, 15, "TASK_UPGRADE", task_upgrade, proto_task_upgrade_t)                  \
    X(PROTO_TASK_STATUS, 16, "TASK_STATUS", task_status, proto_task_status_t)                      \
    X(PROTO_ADMIN_QUERY, 17, "ADMIN_QUERY", admin_query, proto_admin_query_t)                      \
    X(PROTO_ADMIN_REPLY, 18, "ADMIN_REPLY", admin_reply, proto_admin_reply_t)                      \
    X(PROTO_ERROR, 19, "ERROR", error, proto_error_t)                                              \
    X(PROTO_JOB_RESUME, 20, "JOB_RESUME", job_resume, proto_job_resume_t)                          \
    X(PROTO_TASK_QUERY, 21, "TASK_QUERY", task_query, proto_task_query_t)                          \
    X(PROTO_TASK_QUERY_REPLY, 22, "TASK_QUERY_REPLY", task_query_reply, proto_task_query_reply_t)  \
    X(PROTO_HEARTBEAT_ACK, 23, "HEARTBEAT_ACK", heartbeat_ack, proto_heartbeat_ack_t)              \
    X(PROTO_TASK_ESTIMATE, 24, "TASK_ESTIMATE", task_estimate, proto_task_estimate_t)              \
    X(PROTO_TASK_OUTPUT_READ, 25, "TASK_OUTPUT_READ", task_output_read, proto_task_output_read_t)  \
    X(PROTO_TASK_OUTPUT, 26, "TASK_OUTPUT", task_output, proto_task_output_t)                      \
    X(PROTO_TASK_STATUS_BATCH, 27, "TASK_STATUS_BATCH", task_status_batch,                         \
      proto_task_status_batch_t)

#define PROTO__TYPE_ENUM(e, value, name, member, type) e = value,
typedef enum {
    PROTO_TYPE_NONE = 0,
    PROTO_TYPES(PROTO__TYPE_ENUM) PROTO_TYPE_LIMIT /* one past the largest type value */
} proto_type_t;
#undef PROTO__TYPE_ENUM

typedef struct proto_msg {
    uint32_t version; /* set by the decoder; the encoder always writes PROTO_VERSION */
    proto_type_t type;
    uint64_t req_id;
    union {
#define PROTO__TYPE_MEMBER(e, value, name, member, type) type member;
        PROTO_TYPES(PROTO__TYPE_MEMBER)
#undef PROTO__TYPE_MEMBER
    };
} proto_msg_t;

/* "HEARTBEAT"; NULL for a value outside the table. */
const char *proto_type_name(proto_type_t type);
/* True if `type` is in the table. */
bool proto_type_valid(uint32_t type);
/* The type an encoded message says it is, read from its envelope without decoding it (for a
 * server that hands one type to another handler): PROTO_TYPE_NONE when the envelope does not
 * start as proto_encode writes it ([version, type, ...] with both as small integers). A hint
 * only: the message may still fail to decode. */
proto_type_t proto_peek_type(const void *buf, size_t len);

/* Zeroes *msg and sets its type and version. */
void proto_msg_init(proto_msg_t *msg, proto_type_t type);
/* Frees every pointer in *msg through mem_free and zeroes it (type kept). Safe on a zeroed
 * message and on a message proto_decode() rejected. */
void proto_msg_close(proto_msg_t *msg);

/* Makes *msg an ERROR answering `request` (its req_id and type; request may be NULL):
 * code (a negative ERR_* code) and text are borrowed, leader_endpoint may be NULL. The result
 * is for proto_encode(); do not proto_msg_close() it. */
void proto_msg_error(proto_msg_t *msg, const proto_msg_t *request, int code, const char *text,
                     const char *leader_endpoint);

/* Writes a one-line summary of *msg into out (cap bytes, truncated, NUL-terminated when
 * cap > 0) for logs: type, req_id, scalar fields that are set, strings quoted (first 48
 * bytes, control characters escaped), array counts and matrix shapes:
 *   TASK_STATUS req=7 job_id="j-1" task_id="t-1" attempt=0 node="pn-3" state=2 ...
 * Returns the length the full text has (like snprintf). */
size_t proto_describe(const proto_msg_t *msg, char *out, size_t cap);

/* ---------------------------------------------------------------------------------------- */
/* Encoding. */

typedef struct proto_buf { /* public, read-only: data[0..len) is the encoded message */
    uint8_t *data;
    size_t len;
    size_t cap; /* private */
} proto_buf_t;

void proto_buf_init(proto_buf_t *buf);
void proto_buf_close(proto_buf_t *buf); /* frees data; the buffer can be reused after init */

/* Encodes *msg into buf (replacing its contents; the buffer's memory is reused). The message
 * is borrowed for the call. The encoder checks every limit and range the decoder checks, so
 * what it produces always decodes: ERR_TOOBIG (a count, a length or the total size past
 * proto/limits.h), ERR_RANGE (a value out of range, a missing required string, bad matrix),
 * ERR_UNKNOWN_TYPE, ERR_NOMEM; `err` (cap bytes, may be NULL) says which field and why. */
int proto_encode(const proto_msg_t *msg, proto_buf_t *buf, char *err, size_t errcap);

/* ---------------------------------------------------------------------------------------- */
/* Decoding and its counters. */

#define PROTO_REJECT_REASONS(X)                                                                    \
    X(PROTO_REJ_SIZE, "size")                 /* empty or over PROTO_MAX_MSG_BYTES */              \
    X(PROTO_REJ_MALFORMED, "malformed")       /* not valid msgpack, or truncated */                \
    X(PROTO_REJ_STRUCTURE, "structure")       /* depth, object count or container too big */       \
    X(PROTO_REJ_TRAILING, "trailing")         /* bytes after the message */                        \
    X(PROTO_REJ_ENVELOPE, "envelope")         /* not [version, type, req_id, body map] */          \
    X(PROTO_REJ_VERSION, "version")           /* unsupported protocol version */                   \
    X(PROTO_REJ_UNKNOWN_TYPE, "unknown_type") /* type not in PROTO_TYPES */                        \
    X(PROTO_REJ_FIELD_TYPE, "field_type")     /* a field of the wrong msgpack type */              \
    X(PROTO_REJ_RANGE, "range")               /* a value out of range, bad matrix, NUL in str */   \
    X(PROTO_REJ_LIMIT, "limit")               /* a string or array longer than its limit */        \
    X(PROTO_REJ_MISSING, "missing")           /* a required field absent */                        \
    X(PROTO_REJ_DUPLICATE, "duplicate")       /* a field given twice */                            \
    X(PROTO_REJ_NOMEM, "nomem")               /* allocation failed */

#define PROTO__REJ_ENUM(e, name) e,
typedef enum { PROTO_REJECT_REASONS(PROTO__REJ_ENUM) PROTO_REJ_COUNT } proto_reject_t;
#undef PROTO__REJ_ENUM

const char *proto_reject_name(proto_reject_t r); /* "malformed"; "?" outside the table */

/* Counters a daemon keeps per socket or per process and may expose (public, read-only for
 * everyone but proto_decode). Index 0 of the per-type arrays counts messages whose type was
 * not known when they were rejected. Invariant: decoded_total + rejected_total == calls, and
 * rejected_total == sum(rejected_by_reason) == sum(rejected_by_type). */
typedef struct proto_stats {
    uint64_t calls;
    uint64_t bytes;
    uint64_t decoded_total;
    uint64_t rejected_total;
    uint64_t decoded_by_type[PROTO_TYPE_LIMIT];
    uint64_t rejected_by_type[PROTO_TYPE_LIMIT];
    uint64_t rejected_by_reason[PROTO_REJ_COUNT];
} proto_stats_t;

void proto_stats_init(proto_stats_t *stats);

/* Writes the counters as one JSON object into out (cap bytes, truncated, NUL-terminated when
 * cap > 0), for a daemon's status output; only non-zero per-reason and per-type entries:
 *   {"calls":9,"bytes":4410,"decoded":7,"rejected":2,"rejected_by_reason":{"malformed":2},
 *    "by_type":{"HEARTBEAT":{"decoded":7,"rejected":0},"unknown":{"rejected":2}}}
 * Returns the length the full text has (like snprintf). */
size_t proto_stats_json(const proto_stats_t *stats, char *out, size_t cap);

/* Decodes buf[0..len) into *out (caller-owned struct; its previous contents are ignored, not
 * freed). On success returns 0 and *out owns everything it points to: free it with
 * proto_msg_close(). On failure returns ERR_TOOBIG, ERR_PARSE, ERR_VERSION,
 * ERR_UNKNOWN_TYPE, ERR_RANGE or ERR_NOMEM, counts the rejection in *stats (may be NULL),
 * writes the reason into err (cap bytes, may be NULL) and leaves *out zeroed (nothing to
 * free) except for what the envelope said when it was valid: out->type, out->version and
 * out->req_id are set (type PROTO_TYPE_NONE otherwise), so a server can answer a bad request
 * with an ERROR carrying its req_id (see proto_msg_error). If `reason` is not NULL it receives
 * the proto_reject_t counted.
 * Never allocates more than a bounded multiple of PROTO_MAX_MSG_BYTES, whatever the bytes.
 * Reentrant; a proto_stats_t shared between threads needs the caller's lock. */
int proto_decode(const void *buf, size_t len, proto_msg_t *out, proto_stats_t *stats, char *err,
                 size_t errcap);
int proto_decode_ex(const void *buf, size_t len, proto_msg_t *out, proto_stats_t *stats,
                    proto_reject_t *reason, char *err, size_t errcap);

#endif
