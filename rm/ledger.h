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
 * Tokens (Apollo §2.1, §3.5) are sized: each virtual cluster sets a token's CPU and memory, and a
 * task takes as many tokens as its largest dimension needs (rm/arbiter.h). A request names the
 * job's target count (`wanted`). Grants are the deadline arbiter's (rm/arbiter.h, MinEDF-WC):
 * after every command that changes a virtual cluster's demand the ledger recomputes all of its
 * grants, so the decisions are in the log and a new leader continues them unchanged. A deadline
 * job's minimum is what its Jockey controller asks for when it has a profile, else ARIA's MinEDF
 * minimum from its registered shape, recomputed from its progress and the time left.
 *
 * Admission (MRM §3, §5): JOB_REGISTER of a job with a deadline and a shape, not best-effort,
 * is refused with ERR_ADMISSION when the arbiter's conservative finish says the job or an
 * admitted one would miss; the result's value is then the earliest feasible finish (ms from
 * now, conservative) and aux its median. The sd multiplier k travels in the command, so every
 * replica decides with the leader's configuration.
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
    uint32_t capacity;        /* tokens */
    uint32_t granted;         /* sum of its active jobs' tokens */
    uint32_t token_cpu_milli; /* a token's size: thousandths of a core (default 1000) */
    uint32_t token_mem_mb;    /* (default 4096) */
    uint32_t spare;           /* of granted, the tokens above the jobs' minimums */
    uint64_t spare_grants;    /* tokens handed out as spare, ever */
    uint64_t spare_reclaims;  /* spare tokens taken back from a job for another, ever */
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
    /* The arbiter's view (rm/arbiter.h). */
    uint32_t minimum;      /* of tokens, the guaranteed minimum; the rest is spare */
    bool asked;            /* the job has sent a token request */
    bool best_effort;      /* registered without admission */
    bool has_profile;      /* its shape comes from a profile of earlier runs */
    uint32_t weight_milli; /* share of spare without a deadline (1000 = 1) */
    uint64_t work_ms;      /* registered shape: work in token-ms, mean and sd */
    uint64_t work_sd_ms;
    uint64_t path_ms; /* critical path, ms, mean and sd */
    uint64_t path_sd_ms;
    uint32_t width;         /* most tokens it can use; 0: unknown */
    uint32_t done_permille; /* progress from its renewals (tasks succeeded / total) */
    int64_t eta_ms;         /* its JM's expected finish, ms from submission; 0: unknown */
    int64_t eta_p95_ms;
    uint32_t demand; /* token units it could use now + 1, from its renewals; 0: unknown */
};

#define LEDGER_JOB_BEST_EFFORT 1u /* JOB_REGISTER flags */
#define LEDGER_JOB_HAS_PROFILE 2u

enum ledger_cmd_type {
    LEDGER_CMD_NODE_REGISTER = 1,  /* name rack address cpus_milli mem_mb boot_id -> 0 */
    LEDGER_CMD_NODE_LIVENESS = 2,  /* name state(liveness) -> 0 */
    LEDGER_CMD_NODE_DRAIN = 3,     /* name count(1 drain, 0 undrain) -> 0 */
    LEDGER_CMD_NODE_OUTCOME = 4,   /* name ok failed -> 0 */
    LEDGER_CMD_VC_SET = 5,         /* vc count(capacity) cpus_milli mem_mb (token size; 0:
                                      default) -> capacity */
    LEDGER_CMD_JOB_REGISTER = 6,   /* name vc deadline_ms lease_ms flags weight_milli work_ms
                                      work_sd_ms path_ms path_sd_ms width k_milli -> job id */
    LEDGER_CMD_JOB_END = 7,        /* job state(done/failed/cancelled) -> 0 */
    LEDGER_CMD_JOB_DEADLINE = 8,   /* job deadline_ms -> 0 */
    LEDGER_CMD_TOKEN_REQUEST = 9,  /* job count(target) -> tokens now held; renews the lease */
    LEDGER_CMD_TOKEN_RELEASE = 10, /* job count(to give back) -> tokens now held */
    LEDGER_CMD_LEASE_RENEW = 11,   /* job lease_ms (0: keep the job's) done_permille eta_ms
                                      eta_p95_ms count(demand + 1; 0: unknown) -> tokens now
                                      held */
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
    uint8_t flags; /* LEDGER_JOB_* */
    uint32_t weight_milli;
    uint64_t work_ms;
    uint64_t work_sd_ms;
    uint64_t path_ms;
    uint64_t path_sd_ms;
    uint32_t width;
    uint32_t k_milli; /* admission's sd multiplier x 1000 (0: ARBITER_K_DEFAULT) */
    uint32_t done_permille;
    int64_t eta_ms;
    int64_t eta_p95_ms;
};

/* Outcome of one command: code 0 or a negative ERR_*, and a type-specific value (kept with
 * ERR_ADMISSION: the earliest feasible finish, and its median in aux). */
struct ledger_result {
    int code;
    uint64_t value;
    uint64_t aux;
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

/* The admission check without registering (MRM §3-4): the verdict for c->deadline_ms (absolute;
 * 0: none asked), the earliest feasible finish and the price-deadline curve (at most *ncurve
 * points; *ncurve receives how many) of a job of c's shape (work_ms ... width, k_milli) in
 * virtual cluster c->vc at time `now`. 0, ERR_NOTFOUND (no such cluster), ERR_INVAL (no shape
 * or no capacity), ERR_NOMEM. Changes nothing. */
struct arbiter_quote;
struct arbiter_price;
int ledger_quote(const ledger_t *l, const struct ledger_cmd *c, int64_t now,
                 struct arbiter_quote *q, struct arbiter_price *curve, size_t *ncurve);

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
