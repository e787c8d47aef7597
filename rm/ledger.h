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
#define LEDGER_JOB_DIR_MAX   256 /* a job directory kept for restarts (longer: not kept) */

/* Liveness of a node as decided by the leader from heartbeats (rmview_liveness, rm/rmview.h). */
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
    int64_t arbitrated_ms;    /* the latest arbitration (the plan's step may have moved since) */
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
    uint32_t raw;        /* of it, its controller's raw allocation (0: none said): the minimum */
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
    /* A run of a recurring job (Morpheus): index into the recurring jobs + 1 (0: ad-hoc) and
     * its period instance (rm/period.h). */
    uint32_t recur;
    int64_t period;
    bool reserved_run;      /* registered with a reservation in the plan: admitted by it */
    int64_t started_ms;     /* its first task's start, from the ending renewal; 0: unknown */
    uint32_t reprovisioned; /* most tokens guaranteed above its reservation (Morpheus §7) */
    /* Its job manager (issue 14): the incarnation's fencing epoch (1 at registration, bumped
     * by every resume), how often it was resumed, and where it runs, so that the leader can
     * start it again there (jm_pid 0, host or job_dir "": unknown). */
    uint32_t epoch;
    uint32_t restarts;
    uint32_t jm_pid;
    char host[LEDGER_NAME_MAX];
    char job_dir[LEDGER_JOB_DIR_MAX];
    /* Admission's model of it (rm/calib.h): its list schedule's place between ARIA's bounds
     * (alpha x 1000, when the registration carried it), and the arbiter's uncalibrated median
     * and conservative finish when it registered, ms from submission (0: no shape). A job that
     * succeeds teaches the cluster's error model actual / pred_p50. */
    bool has_alpha;
    uint32_t alpha_milli;
    uint32_t spread_milli; /* its own spread x 1000 (0: none): bound factor rm/calib.h's */
    int64_t pred_p50_ms;
    int64_t pred_bound_ms;
    /* Another job was active in its virtual cluster at some time while it was: a job without
     * an admitted deadline then shared what the fluid model does not hold (best-effort and
     * deadline-less jobs), so its outcome says nothing about the model's error. */
    bool shared;
    /* Tenants (issue 27): the user who registered it (from the key of the connection; "" for
     * a job of an older log), and the price of its admitted deadline in token-seconds x 1000
     * (MRM eq. 13's first term at that deadline; 0 without an admitted deadline). */
    char user[LEDGER_NAME_MAX];
    uint64_t price_milli;
    /* The guaranteed tokens it held over time, token-ms, up to held_since_ms (a running job's
     * share of its user's token-seconds-per-day quota). */
    uint64_t held_ms;
    int64_t held_since_ms;
};

/* Recurring jobs (Morpheus §3-7). Each period the leader fires exactly one run
 * (RECUR_FIRE, deduplicated by period index), launches its JM, and the run registers under
 * (recurring, period): a second registration of the same run is refused with ERR_EXISTS. */
#define LEDGER_MAX_RECURRING   64
#define LEDGER_SPEC_MAX        (512u * 1024u) /* a recurring job's spec text */
#define LEDGER_FILES_MAX       8192u          /* its outputs, newline-separated */
#define LEDGER_REASON_MAX      160
#define LEDGER_HISTORY_CAP     2048  /* runs kept in the history (oldest forgotten first) */
#define LEDGER_VALS_MAX        4096u /* values in one command array (a skyline, a reservation) */
#define LEDGER_CATCHUP_PERIODS 3     /* missed periods fired late after an outage; older: skipped */

enum ledger_deadline_source {
    LEDGER_DEADLINE_NONE = 0,
    LEDGER_DEADLINE_USER = 1,     /* given with `recurring add --deadline` */
    LEDGER_DEADLINE_INFERRED = 2, /* inferred (rm/slo.h) and accepted by the user */
};

struct ledger_recurring {
    uint32_t id; /* stable, 1, 2, ... (jobs name their recurring job by it) */
    char name[LEDGER_NAME_MAX];
    uint32_t vc;
    int64_t period_ms;
    int64_t offset_ms;
    int64_t deadline_ms;     /* from the period's start; 0: none (yet) */
    uint8_t deadline_source; /* enum ledger_deadline_source */
    bool paused;
    int64_t created_ms;
    int64_t last_fired; /* period index of the latest run fired; -1: none */
    char *spec;         /* owned: the job spec (JSON text), NUL-terminated */
    char *outputs;      /* owned: the files it writes, newline-separated ("" none) */
    /* the run fired and not yet ended (pend_period -1: none) */
    int64_t pend_period;
    uint64_t pend_job;      /* its job id once registered, 0 before */
    int64_t pend_fired_ms;  /* when the leader fired it */
    int64_t pend_launch_ms; /* the latest launch (the leader relaunches a run not registered) */
    uint32_t pend_launches;
    char pend_reason[LEDGER_REASON_MAX]; /* why the latest launch failed ("" none) */
    uint32_t runs, met, missed;
    /* SLO inference (rm/slo.h) over its history, recomputed when a run ends */
    uint8_t slo_source; /* enum slo_source */
    int64_t slo_deadline_ms;
    uint32_t slo_runs, slo_consumed;
    double slo_read_cv, slo_slack_ratio;
    int64_t slo_read_median_ms, slo_end_pct_ms;
    /* the resource model R* and the reservation, set by the leader (RECUR_MODEL) */
    uint32_t generation;  /* bumped by every change the model depends on */
    uint32_t model_gen;   /* the generation the model was computed for */
    uint32_t sky_step_ms; /* R*'s step */
    uint32_t nsky;
    uint32_t *sky_milli;   /* owned: R*, tokens x 1000 per step */
    uint32_t plan_step_ms; /* the reservation's step */
    uint32_t resv_first;   /* steps from the period's start to the first reserved one */
    uint32_t nresv;
    uint32_t *resv_milli; /* owned: reserved tokens x 1000 per step from resv_first */
    uint32_t rho_milli;   /* reprovisioning's cap: ρ x the recent reservation (Morpheus §7) */
    char model_note[LEDGER_REASON_MAX]; /* why there is no reservation ("" when there is) */
    char last_error[LEDGER_REASON_MAX];
};

#define LEDGER_RHO_DEFAULT   2000 /* ρ = 2 (Morpheus §7) */
#define LEDGER_REPROV_WINDOW 2    /* R_recent: the reservation's last 2 plan steps */

enum ledger_outcome {
    LEDGER_RUN_SUCCEEDED = 1,
    LEDGER_RUN_FAILED = 2,
    LEDGER_RUN_CANCELLED = 3,
    LEDGER_RUN_EXPIRED = 4,
    LEDGER_RUN_NOT_STARTED = 5, /* a recurring run whose JM never registered */
    LEDGER_RUN_SKIPPED = 6,     /* a period missed while the cluster was down */
};

/* One run in the history (`paddock history`, Slurm's sacct). */
struct ledger_run {
    uint64_t job; /* 0 for runs that never registered */
    char name[LEDGER_NAME_MAX];
    char recurring[LEDGER_NAME_MAX]; /* "" ad-hoc */
    int64_t period;                  /* -1 ad-hoc */
    uint8_t outcome;                 /* enum ledger_outcome */
    uint32_t vc;
    int64_t submit_ms, start_ms, end_ms; /* start 0: unknown */
    int64_t deadline_ms;                 /* absolute; 0 none */
    int64_t period_start_ms;             /* recurring: its period's start */
    uint64_t token_ms;
    int64_t out_read_ms;    /* when another job first read its outputs (absolute); 0 never */
    uint32_t reprovisioned; /* most tokens it got above its reservation (Morpheus §7) */
    uint32_t sky_step_ms;
    uint32_t nsky;
    uint32_t *sky_milli; /* owned */
    char reason[LEDGER_REASON_MAX];
};

#define LEDGER_JOB_BEST_EFFORT 1u /* JOB_REGISTER flags */
#define LEDGER_JOB_HAS_PROFILE 2u
#define LEDGER_SPREAD_MAX      20000u /* an own spread above 20x is refused as malformed */
#define LEDGER_JOB_HAS_ALPHA   4u     /* alpha_milli carries the shape's list-schedule place */

enum ledger_cmd_type {
    LEDGER_CMD_NODE_REGISTER = 1,  /* name rack address cpus_milli mem_mb boot_id -> 0 */
    LEDGER_CMD_NODE_LIVENESS = 2,  /* name state(liveness) -> 0 */
    LEDGER_CMD_NODE_DRAIN = 3,     /* name count(1 drain, 0 undrain) -> 0 */
    LEDGER_CMD_NODE_OUTCOME = 4,   /* name ok failed -> 0 */
    LEDGER_CMD_VC_SET = 5,         /* vc count(capacity) cpus_milli mem_mb (token size; 0:
                                      default) -> capacity */
    LEDGER_CMD_JOB_REGISTER = 6,   /* name vc deadline_ms lease_ms flags weight_milli work_ms
                                      work_sd_ms path_ms path_sd_ms width k_milli recurring
                                      period text(inputs) text2(job_dir) address(host)
                                      boot_id(jm pid) alpha_milli (entry version 4)
                                      spread_milli (version 7) -> job id */
    LEDGER_CMD_JOB_END = 7,        /* job state(done/failed/cancelled) text(reason) -> 0; an
                                      expired job can only be failed */
    LEDGER_CMD_JOB_DEADLINE = 8,   /* job deadline_ms k_milli (v5) -> 0; a tighter one (v5)
                                      through admission: ERR_ADMISSION, value the earliest
                                      feasible finish, ms from now */
    LEDGER_CMD_TOKEN_REQUEST = 9,  /* job count(target) -> tokens now held; renews the lease */
    LEDGER_CMD_TOKEN_RELEASE = 10, /* job count(to give back) -> tokens now held */
    LEDGER_CMD_LEASE_RENEW = 11,   /* job lease_ms (0: keep the job's) done_permille eta_ms
                                      eta_p95_ms count(demand + 1; 0: unknown) text2(job_dir)
                                      address(host) boot_id(jm pid) epoch -> tokens now held;
                                      ERR_FENCED: from an older JM */
    LEDGER_CMD_TICK = 12,          /* -> number of jobs whose lease expired */
    /* Recurring jobs (entry version 3). */
    LEDGER_CMD_RECUR_ADD = 13,    /* name vc period_ms offset_ms deadline_ms weight_milli(ρ)
                                     text(spec) text2(outputs) -> 0; ERR_EXISTS */
    LEDGER_CMD_RECUR_PAUSE = 14,  /* name count(1 pause, 0 resume) -> 0 */
    LEDGER_CMD_RECUR_REMOVE = 15, /* name -> 0 */
    LEDGER_CMD_RECUR_ACCEPT = 16, /* name -> deadline ms adopted; ERR_STATE: nothing inferred */
    LEDGER_CMD_RECUR_FIRE = 17,   /* name period -> 0; ERR_EXISTS: fired already */
    LEDGER_CMD_RECUR_NOTE = 18,   /* name period state(1 launched, 2 failed, 3 gave up)
                                     text(reason) -> 0 */
    LEDGER_CMD_RECUR_MODEL = 19,  /* name count(generation) width(R* step ms) cpus_milli(plan
                                     step ms) mem_mb(first reserved step) state(1: text is
                                     an error) vals(R*) vals2(reservation) text(note) -> 0;
                                     ERR_STATE: stale */
    LEDGER_CMD_JOB_RESUME = 20,   /* job text2(job_dir) address(host) boot_id(jm pid)
                                     count(restart limit) -> the new epoch; ERR_STATE: it
                                     ended; ERR_FULL: over the limit (the job is failed) */
    /* Tenants (issue 27, entry version 5: every command also carries `user`, who asked). */
    LEDGER_CMD_ROLE_SET = 21,  /* name(user) state(enum ledger_role; 0 forgets) -> 0 */
    LEDGER_CMD_GRANT_SET = 22, /* name(user) vc count(1 grant, 0 revoke) -> 0; a virtual
                                  cluster with a grant is open only to its grantees and admins */
    LEDGER_CMD_QUOTA_SET = 23, /* name(user; "*": each user without their own) vc count(tokens
                                  held at once; 0: none) token_ms(token-ms per day; 0: none)
                                  -> 0 */
    LEDGER_CMD_AUDIT = 24,     /* name(action) address(target) state(enum ledger_audit_state)
                                  text(detail) -> 0: a line of the audit trail, nothing else
                                  (replica changes, requests the RM refused) */
    LEDGER_CMD__MAX = 24,
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
    uint32_t k_milli;     /* admission's sd multiplier x 1000 (0: ARBITER_K_DEFAULT) */
    uint32_t alpha_milli; /* JOB_REGISTER with LEDGER_JOB_HAS_ALPHA: 0..1000 (rm/arbiter.h) */
    /* JOB_REGISTER: the job's own spread, its finish-time quantile over its median x 1000
     * (jm/shape.h, arbiter_shape.spread; 1000..LEDGER_SPREAD_MAX; 0: none, the cluster's
     * factor alone) */
    uint32_t spread_milli;
    uint32_t done_permille;
    int64_t eta_ms;
    int64_t eta_p95_ms;
    /* entry version 3: recurring jobs, history */
    char recurring[LEDGER_NAME_MAX]; /* JOB_REGISTER: the run's recurring job ("" ad-hoc) */
    int64_t period;                  /* JOB_REGISTER, RECUR_FIRE, RECUR_NOTE: instance */
    int64_t period_ms;               /* RECUR_ADD */
    int64_t offset_ms;               /* RECUR_ADD */
    int64_t started_ms;              /* JOB_END: first task start */
    uint32_t epoch;                  /* LEASE_RENEW, JOB_END: the JM's epoch (0: none) */
    uint64_t token_ms;               /* JOB_END; QUOTA_SET: token-ms per day */
    char user[LEDGER_NAME_MAX];      /* entry version 5: who asked ("" internal) */
    uint32_t step_ms;                /* JOB_END: skyline step */
    uint32_t raw; /* TOKEN_REQUEST (entry version 6): the raw allocation of `count` (0: none) */
    /* JOB_REGISTER, JOB_DEADLINE: judged by the fluid model (arbiter_admit_plan) as entries up
     * to version 7 were, instead of the joint plan (arbiter_admit_joint); set by the decoder for
     * those entries so that an old log replays to the same verdicts. Not encoded. */
    bool fluid_admission;
    /* JOB_REGISTER, JOB_DEADLINE: bounded by the cluster-wide own-spread factor plus k sd of the
     * profile, as entries up to version 8 were, instead of the job's own history and its spread
     * alone (rm/calib.h, issue 22); set by the decoder for those entries. Not encoded. */
    bool pooled_calib;
    /* JOB_END: the run is measured against its median at registration, as entries up to
     * version 9 were, instead of the model's median on the tokens it held (rm/calib.h
     * calib_predicted); set by the decoder for those entries. Not encoded. */
    bool calib_at_p50;
    /* Borrowed: valid while the command is applied or encoded (decoding points them into the
     * iterator's scratch). text: RECUR_ADD spec, JOB_REGISTER inputs (newline-separated),
     * RECUR_NOTE/RECUR_MODEL/JOB_END reason; text2: RECUR_ADD outputs. vals: JOB_END skyline,
     * RECUR_MODEL R*; vals2: RECUR_MODEL reservation. */
    const char *text;
    uint32_t text_len;
    const char *text2;
    uint32_t text2_len;
    const uint32_t *vals;
    uint32_t nvals;
    const uint32_t *vals2;
    uint32_t nvals2;
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
/* The guaranteed token-ms the job has held from its registration to the ledger's now (held_ms,
 * and its tokens since held_since_ms while it holds them). */
uint64_t ledger_job_held_ms(const ledger_t *l, const struct ledger_job *j);
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

/* The conservative scale admission gives a job of c's name, virtual cluster and own spread now
 * (rm/calib.h: with runs of its own, spread x their median u x the history factor; else the
 * cluster's factors), and in *runs (may be NULL) how many of its own runs it read. */
double ledger_bound_factor(const ledger_t *l, const struct ledger_cmd *c, uint32_t *runs);

/* Recurring jobs in name order. */
size_t ledger_recurring_count(const ledger_t *l);
const struct ledger_recurring *ledger_recurring_at(const ledger_t *l, size_t i);
const struct ledger_recurring *ledger_recurring_find(const ledger_t *l, const char *name);
/* The deadline in force (ms from the period's start; 0: none) and whether it comes from the
 * user or an accepted inference. */
int64_t ledger_recurring_deadline(const struct ledger_recurring *r);
/* Tokens reserved for recurring job r's instance covering absolute time t (0 outside). */
uint32_t ledger_recurring_reserved_at(const struct ledger_recurring *r, int64_t t);
/* The plan's reserved tokens in virtual cluster vc at absolute time t, all jobs together. */
uint32_t ledger_plan_at(const ledger_t *l, uint32_t vc, int64_t t);

/* The cluster's error model of admission's predictions (rm/calib.h): the factors now. */
struct calib_factors;
void ledger_calibration(const ledger_t *l, struct calib_factors *out);

/* Simulations only (`paddock-sim arbiter` compares Verma's policies through the ledger): the
 * arbiter policy (enum arbiter_policy) every arbitration uses from now on instead of MinEDF-WC.
 * Not a command: it is not in the log or in snapshots, and the RM never calls it. ERR_INVAL for
 * an unknown policy. */
int ledger_set_policy(ledger_t *l, int policy);

/* The history, oldest first (at most LEDGER_HISTORY_CAP runs). */
size_t ledger_history_count(const ledger_t *l);
const struct ledger_run *ledger_history_at(const ledger_t *l, size_t i);
const char *ledger_outcome_name(uint8_t outcome);

/* ---- Tenants (issue 27): roles, grants, quotas, the audit trail and accounting. ----
 * Quotas (per virtual cluster and user) are checked by JOB_REGISTER before admission: tokens
 * held at once (the user's active jobs' tokens there plus the new job's MinEDF minimum, 1
 * without a deadline) and token-seconds per day (the user's jobs there that ended in the last
 * 24 h of ledger time, plus what their running jobs there have held so far, held_ms); a
 * registration over one is refused with ERR_QUOTA, the result's value
 * naming the quota (enum ledger_quota_kind) and aux its limit. */
enum ledger_role { LEDGER_ROLE_USER = 1, LEDGER_ROLE_ADMIN = 2 };
enum ledger_quota_kind { LEDGER_QUOTA_TOKENS = 1, LEDGER_QUOTA_TOKEN_S_DAY = 2 };
enum ledger_audit_state { LEDGER_AUDIT_DONE = 0, LEDGER_AUDIT_DENIED = 1, LEDGER_AUDIT_FAILED = 2 };
#define LEDGER_MAX_RULES 1024
#define LEDGER_AUDIT_CAP 2048 /* lines of the audit trail kept (oldest forgotten first) */
#define LEDGER_USAGE_CAP 4096 /* finished jobs kept for accounting */
#define LEDGER_DAY_MS    86400000

/* A user's role (vc "") or their grant and quota in a virtual cluster. */
struct ledger_rule {
    char user[LEDGER_NAME_MAX]; /* "*" in a quota: each user without their own */
    char vc[LEDGER_NAME_MAX];
    uint8_t role;              /* vc "": enum ledger_role */
    bool granted;              /* vc set */
    uint32_t max_tokens;       /* 0: no quota */
    uint64_t max_token_ms_day; /* 0: no quota */
};

struct ledger_audit {
    int64_t at_ms;
    char who[LEDGER_NAME_MAX];
    char action[32];
    char target[LEDGER_ADDR_MAX];
    int32_t code; /* 0 done, else the refusal's ERR_* */
    char detail[LEDGER_REASON_MAX];
};

/* One finished job, for `paddock usage` (Slurm's sacct). */
struct ledger_usage {
    uint64_t job;
    char name[LEDGER_NAME_MAX];
    char user[LEDGER_NAME_MAX];
    char vc[LEDGER_NAME_MAX];
    uint8_t state; /* enum ledger_job_state */
    int64_t submit_ms, end_ms, deadline_ms;
    uint64_t token_ms;
    uint64_t price_milli;
};

size_t ledger_rule_count(const ledger_t *l);
const struct ledger_rule *ledger_rule_at(const ledger_t *l, size_t i);
/* enum ledger_role of `user`, 0 when none was set. */
uint8_t ledger_user_role(const ledger_t *l, const char *user);
/* Whether `user` may submit to virtual cluster `vc`: it has no grants (open to all) or one
 * for this user. Admins are the caller's to exempt. */
bool ledger_vc_granted(const ledger_t *l, const char *vc, const char *user);
/* The audit trail and the accounting, oldest first. */
size_t ledger_audit_count(const ledger_t *l);
const struct ledger_audit *ledger_audit_at(const ledger_t *l, size_t i);
size_t ledger_usage_count(const ledger_t *l);
const struct ledger_usage *ledger_usage_at(const ledger_t *l, size_t i);
const char *ledger_quota_name(uint64_t kind);

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
