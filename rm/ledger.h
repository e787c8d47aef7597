/* ledger.h - the resource monitor's durable cluster state: the Raft state machine (pure).
 *
 * Apollo §3.1: the RM holds what must survive a replica failure: the node registry, virtual
 * clusters and their token capacity, the token ledger (which job holds how many guaranteed
 * tokens), the job registry with leases, and the node failure history behind Psucc (§3.3).
 * Heartbeat load data is soft state and lives in rm/rmview.h, not here.
 *
 * The ledger is a step function: ledger_apply(cmd, now) changes state and yields a result. It
 * has no clock, no I/O and no randomness: the Raft leader stamps `now` into every log entry
 * (rm/ledger_cmd.h), so every replica computes exactly the same state from the same log.
 * Time moves forward only: an entry stamped earlier than the ledger's time is applied at the
 * ledger's time.
 *
 * Invariants (ledger_check): for every virtual cluster, the sum of its jobs' tokens equals its
 * `granted` and never exceeds its `capacity`; only active jobs hold tokens.
 *
 * Tokens (Apollo §2.1, §3.5): a request names the job's target count. The grant is the target
 * capped by what the virtual cluster has free (the job keeps what it holds), so a request never
 * takes tokens from another job. The wanted count is kept for a later global arbiter (EDF,
 * MinEDF-WC redistribution, admission control: DESIGN.md §4 "Later").
 *
 * Idempotency: a command with a non-zero key is applied at most once; repeating it (a client
 * retrying after RAFT_LEADERSHIPLOST or a timeout) returns the first result. The last
 * LEDGER_IDEM_CAP keys are remembered (and travel in snapshots).
 */
#ifndef PADDOCK_RM_LEDGER_H
#define PADDOCK_RM_LEDGER_H

#include "rm/enc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEDGER_NAME_MAX      64 /* node, job and virtual cluster names, with the NUL */
#define LEDGER_RACK_MAX      32
#define LEDGER_ADDR_MAX      128
#define LEDGER_MAX_NODES     100000
#define LEDGER_MAX_VCS       256
#define LEDGER_MAX_JOBS      100000 /* active plus retained finished jobs */
#define LEDGER_JOBS_KEEP     1000   /* finished jobs kept for `paddock jobs` */
#define LEDGER_IDEM_CAP      4096
#define LEDGER_MAX_TOKENS    1000000
#define LEDGER_LEASE_MIN_MS  100
#define LEDGER_LEASE_MAX_MS  86400000
#define LEDGER_LEASE_DEFAULT 10000

/* Liveness of a node as decided by the leader from heartbeats (rm/liveness.h). */
enum ledger_liveness { LEDGER_NODE_UP = 1, LEDGER_NODE_SUSPECT = 2, LEDGER_NODE_DOWN = 3 };

enum ledger_job_state {
    LEDGER_JOB_ACTIVE = 1,
    LEDGER_JOB_DONE = 2,
    LEDGER_JOB_FAILED = 3,
    LEDGER_JOB_CANCELLED = 4,
    LEDGER_JOB_EXPIRED = 5, /* its lease ran out; its tokens were reclaimed */
};

/* Read-only views returned by the lookup functions; valid until the next ledger_apply,
 * ledger_restore or ledger_destroy. */
struct ledger_node {
    char name[LEDGER_NAME_MAX];
    char rack[LEDGER_RACK_MAX];
    char address[LEDGER_ADDR_MAX]; /* the PN's endpoint for JMs */
    uint32_t cpus_milli;           /* capacity, thousandths of a core */
    uint32_t mem_mb;
    uint64_t boot_id;      /* from the latest registration */
    uint8_t liveness;      /* enum ledger_liveness */
    bool draining;         /* admin: no new work */
    int64_t registered_ms; /* first registration */
    int64_t since_ms;      /* last liveness change */
    uint32_t down_count;   /* transitions into DOWN */
    uint64_t tasks_ok;     /* task outcomes reported by JMs */
    uint64_t tasks_failed;
};

struct ledger_vc {
    char name[LEDGER_NAME_MAX];
    uint32_t capacity; /* tokens */
    uint32_t granted;  /* sum of its active jobs' tokens */
};

struct ledger_job {
    uint64_t id; /* assigned by the ledger, 1, 2, ... */
    char name[LEDGER_NAME_MAX];
    uint32_t vc; /* index into the virtual clusters */
    uint8_t state;
    int64_t submitted_ms;
    int64_t deadline_ms; /* absolute; 0: none */
    int64_t lease_ms;
    int64_t lease_expiry_ms;
    int64_t finished_ms; /* 0 while active */
    uint32_t tokens;     /* granted guaranteed tokens */
    uint32_t wanted;     /* the job's latest target */
};

enum ledger_cmd_type {
    LEDGER_CMD_NODE_REGISTER = 1,  /* name rack address cpus_milli mem_mb boot_id -> 0 */
    LEDGER_CMD_NODE_LIVENESS = 2,  /* name state(liveness) -> 0 */
    LEDGER_CMD_NODE_DRAIN = 3,     /* name count(1 drain, 0 undrain) -> 0 */
    LEDGER_CMD_NODE_OUTCOME = 4,   /* name ok failed -> 0 */
    LEDGER_CMD_VC_SET = 5,         /* vc count(capacity) -> capacity */
    LEDGER_CMD_JOB_REGISTER = 6,   /* name vc deadline_ms lease_ms -> job id */
    LEDGER_CMD_JOB_END = 7,        /* job state(done/failed/cancelled) -> 0 */
    LEDGER_CMD_JOB_DEADLINE = 8,   /* job deadline_ms -> 0 */
    LEDGER_CMD_TOKEN_REQUEST = 9,  /* job count(target) -> tokens now held; renews the lease */
    LEDGER_CMD_TOKEN_RELEASE = 10, /* job count(to give back) -> tokens now held */
    LEDGER_CMD_LEASE_RENEW = 11,   /* job lease_ms (0: keep the job's) -> tokens now held */
    LEDGER_CMD_TICK = 12,          /* -> number of jobs whose lease expired */
    LEDGER_CMD__MAX = 12,
};

/* One command. Public struct: fill the fields the type uses (ledger.h enum comments), zero
 * the rest (ledger_cmd_init). */
struct ledger_cmd {
    uint8_t type;
    uint64_t key; /* idempotency key; 0: none */
    char name[LEDGER_NAME_MAX];
    char vc[LEDGER_NAME_MAX];
    char rack[LEDGER_RACK_MAX];
    char address[LEDGER_ADDR_MAX];
    uint64_t job;
    uint64_t boot_id;
    uint32_t cpus_milli;
    uint32_t mem_mb;
    uint32_t count;
    uint8_t state;
    int64_t deadline_ms;
    int64_t lease_ms;
    uint64_t ok;
    uint64_t failed;
};

/* Outcome of one command: code 0 or a negative ERR_*, and a type-specific value. */
struct ledger_result {
    int code;
    uint64_t value;
};

typedef struct ledger ledger_t;

/* A new empty ledger at time 0. Caller owns; NULL on ERR_NOMEM. */
ledger_t *ledger_new(void);
/* Frees the ledger and nullifies the caller's reference. NULL-safe. */
void ledger_destroy(ledger_t **lp);

void ledger_cmd_init(struct ledger_cmd *c, enum ledger_cmd_type type);

/* Applies one command at time `now` (ms, stamped by the leader). Fills *res (may be NULL).
 * Returns res->code. A refused command (ERR_NOTFOUND, ERR_INVAL, ERR_STATE, ERR_FULL, ...)
 * leaves the state unchanged except for remembering its idempotency key with the refusal;
 * ERR_NOMEM also leaves the state unchanged and is not remembered. */
int ledger_apply(ledger_t *l, const struct ledger_cmd *c, int64_t now, struct ledger_result *res);

/* The result remembered for an idempotency key; false when unknown (not applied yet, or
 * forgotten). */
bool ledger_idem_lookup(const ledger_t *l, uint64_t key, struct ledger_result *res);

/* Current ledger time (the latest entry's `now`). */
int64_t ledger_now(const ledger_t *l);
/* Index of the last applied log entry, set by the FSM (0 in tests without Raft). */
uint64_t ledger_applied_index(const ledger_t *l);
void ledger_set_applied_index(ledger_t *l, uint64_t index);

size_t ledger_node_count(const ledger_t *l);
const struct ledger_node *ledger_node_at(const ledger_t *l, size_t i);
const struct ledger_node *ledger_node_find(const ledger_t *l, const char *name);
/* Psucc for Apollo's C = Psucc·E + Kfail·(1−Psucc)·E: Laplace estimate over the task outcomes
 * reported for the node, counting each DOWN transition as a failed task:
 * (ok + 1) / (ok + failed + downs + 2). */
double ledger_node_psucc(const struct ledger_node *n);
/* "up", "suspect", "down" or "draining" (draining wins over up and suspect). */
const char *ledger_node_state_name(const struct ledger_node *n);

size_t ledger_vc_count(const ledger_t *l);
const struct ledger_vc *ledger_vc_at(const ledger_t *l, size_t i);
const struct ledger_vc *ledger_vc_find(const ledger_t *l, const char *name);

/* Jobs in ascending id order. */
size_t ledger_job_count(const ledger_t *l);
const struct ledger_job *ledger_job_at(const ledger_t *l, size_t i);
const struct ledger_job *ledger_job_find(const ledger_t *l, uint64_t id);
const char *ledger_job_state_name(uint8_t state);
/* Earliest lease expiry among active jobs, or INT64_MAX when none: the leader appends a TICK
 * once `now` passes it. */
int64_t ledger_next_expiry(const ledger_t *l);

/* Checks the invariants; returns 0, or ERR_STATE with the broken one in msg. */
int ledger_check(const ledger_t *l, char *msg, size_t cap);

/* Appends a canonical encoding of the whole state (same state, same bytes) to *b, zero-padded
 * to a multiple of 8 bytes. */
void ledger_snapshot(const ledger_t *l, struct enc_buf *b);
/* Decodes a snapshot into a new ledger (caller owns *out). On error returns ERR_PARSE (bad or
 * truncated bytes, or a decoded state that fails ledger_check) or ERR_NOMEM with a reason in
 * msg, and *out stays NULL. */
int ledger_restore(const void *data, size_t len, ledger_t **out, char *msg, size_t cap);

#endif
