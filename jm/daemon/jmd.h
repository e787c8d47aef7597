/* jmd.h - the paddock-jm daemon's internals: one job, one uv loop (docs/architecture.md,
 * docs/jm-placement.md, docs/jockey.md, docs/job-directory.md).
 *
 * The daemon is a thin shell over the pure modules (jm/place.h says how it drives them). Its
 * parts, by concern:
 *   jmd_rm.c     the RM link: SUB to every replica's view, DEALERs to the API (TOKEN_REQUEST,
 *                LEASE_RENEW, TOKEN_RELEASE), leader redirects, retries with the same key
 *   jmd_pn.c     the PN links: one DEALER per PN used, TASK_CREATE/CANCEL/UPGRADE out,
 *                TASK_STATUS and ERROR in
 *   jmd_sched.c  scheduling rounds, the ready queue, tokens, statuses, lost nodes, the end
 *   jmd_attempt.c events into jm/attempt.h, its actions out (jmd_sched_event)
 *   jmd_resume.c the journal's replay, the nodes' query, adopted attempts
 *   jmd_jockey.c the Jockey control loop: profile, table, controller, token target
 *   jmd_out.c    the job directory: journal, state.json, report.json, the profile
 *   jmd.c        set-up, timers, signals, tear-down
 *
 * Attempt states and their rules (retries, back-off, re-placement caps, lost nodes, grace) are
 * jm/attempt.h's: the daemon carries events from the wire into the machine (jmd_sched_event)
 * and its actions out to sockets, journal and log.
 *
 * Internal header: not a public API; everything here is owned by struct jmd.
 */
#ifndef PADDOCK_JM_JMD_H
#define PADDOCK_JM_JMD_H

#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "common/curve.h"
#include "common/intern.h"
#include "common/rng.h"
#include "common/zuv.h"
#include "jm/attempt.h"
#include "jm/controller.h"
#include "jm/correct.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/estimator.h"
#include "jm/journal.h"
#include "jm/jsim.h"
#include "jm/place.h"
#include "jm/profile.h"
#include "jm/readyq.h"
#include "jm/round.h"
#include "jm/spec.h"
#include "jm/usage.h"
#include "jm/view.h"
#include "jm/view_proto.h"
#include "proto/proto.h"

#define JMD_MAX_RM 7

/* Options (public value; jmd_opts_default then adjust). Strings borrowed for jmd_run. */
struct jmd_opts {
    const char *job_dir;
    const char *job_id;
    const char *rm_api[JMD_MAX_RM]; /* API endpoints */
    const char *rm_pub[JMD_MAX_RM]; /* view PUB endpoints */
    size_t nrm;
    int rm_leader;        /* the replica believed to lead, connected first; -1: all at once */
    const char *keys_dir; /* NULL: no CURVE */
    const char *key_name;
    const char *profile_dir; /* NULL: no profile */
    int max_attempts;        /* failed attempts a task may have (default 3) */
    int64_t node_timeout_ms; /* silence from a node with tasks before re-placing (15 s) */
    double control_period_s; /* 0: deadline / 30 clamped to [1, 60] */
    double opp_factor;       /* opportunistic tasks per token (default 1) */
    int max_tokens;          /* most tokens ever asked for (default 100) */
    int64_t started_wall_ms; /* job start (wall); 0: now */
    double deadline_s;       /* > 0: the deadline (s from started_wall_ms) instead of the spec's
                                (a recurring run's, --deadline-at) */
    uint32_t epoch;          /* this incarnation's fencing epoch (JOB_REGISTER_REPLY, JOB_RESUME) */
    int resume;              /* resumed: replay the journal, TASK_QUERY the nodes first */
    int resumes;             /* how often the job was resumed, this start included */
    const char *abs_dir;     /* the job directory's absolute path, and the host: renewals tell */
    const char *host;        /* the RM where to start a JM again (NULL: not said) */
};
void jmd_opts_default(struct jmd_opts *o);

/* The final outcome of jmd_run. */
enum jmd_outcome {
    JMD_RUNNING = 0,
    JMD_SUCCEEDED,
    JMD_FAILED,
    JMD_CANCELLED,
};
const char *jmd_outcome_name(enum jmd_outcome o);

/* Exit code of a JM that found a newer incarnation of its job (a higher epoch): it stopped at
 * once, leaving the job directory to the newer one. */
#define JMD_EXIT_FENCED 3

/* Runs the job to its end. Returns 0 when it succeeded, 1 when it failed or was cancelled,
 * JMD_EXIT_FENCED when a newer job manager holds the job, and a negative ERR_* code (reason in
 * msg) when the daemon could not start at all. */
typedef struct jmd jmd_t;
int jmd_run(const struct jmd_opts *opts, char *msg, size_t cap);

/* A JM started before its job is known (`paddock-jm --job-from-fd`): the RM's sockets opened
 * now, from opts' endpoints and keys (job_dir and job_id may be NULL), so that their CURVE
 * handshakes and the view's first snapshot proceed while the submit registers the job; the view
 * followed is chosen by the process id instead of the job id. Returns 0 with *out set, or an
 * ERR_* code with the reason in msg (jmd_run then opens them itself). */
int jmd_early(const struct jmd_opts *opts, jmd_t **out, char *msg, size_t cap);

/* jmd_run on a JM from jmd_early (taken over and freed, whatever the outcome). */
int jmd_run_early(jmd_t *early, const struct jmd_opts *opts, char *msg, size_t cap);

/* Frees a JM from jmd_early that will not run (the submit called it off) and nullifies the
 * reference. NULL-safe. */
void jmd_early_close(jmd_t **p);

/* ---- internals shared by the jmd_*.c files ---- */

struct jmd_task {
    union { /* the lifecycle record (jm/attempt.h): changed only by the attempt machine */
        struct attempt_task at;
        struct {
            ATTEMPT_TASK_FIELDS
        };
    };
    double pn_wait_s;     /* the PN's expected wait for the queued attempt, < 0: none yet */
    int64_t pn_wait_mono; /* when that came */
    int64_t ready_mono;   /* when it (last) became ready */
    int64_t disp_mono;    /* when the attempt was dispatched */
    int64_t run_mono;     /* when the PN said running */
    int64_t disp_wall, queued_wall, start_wall;
    double queue_s;      /* ready -> dispatch of the current attempt */
    struct estimate est; /* what it was placed on */
    uint32_t used_units; /* token units the attempt counts in the usage skyline (0: none) */
    uint64_t sent_r_ms;  /* the R its PN has (TASK_CREATE or TASK_ESTIMATE runtime_ms) */
};

/* One finished attempt (for report.json and the profile), as its writers fill it in: the JM keeps
 * it as a struct jmd_out_rec (below). */
struct jmd_rec {
    size_t task;
    uint32_t attempt;
    char node[VIEW_NAME_MAX];
    int cls;
    double queued_s, start_s, end_s;
    double wait_s;      /* ready -> dispatched (Jockey's Q_s) */
    double init_from_s; /* its wait at the PN held a token from here (0: from queued_s); a
                           class change while queued (a yield, an upgrade) moves it */
    int state;          /* proto_task_state_t */
    int exit_code, signal;
    double cpu_s;
    uint64_t rss_kb;
    int started; /* its process started at the node (it ran, however briefly) */
    char reason[160];
};

/* A finished attempt as the JM keeps it (jmd_out_record): struct jmd_rec without its two fixed
 * buffers (288 of its 376 bytes), whose strings come from a few values (the nodes' names, the
 * reasons attempts end with) and are interned in jmd_t.strs (issue 24: a million records in
 * 80 MB). Read-only outside jmd_out.c. */
struct jmd_out_rec {
    size_t task;
    uint32_t attempt;
    uint32_t node, reason; /* ids in jmd_t.strs (intern_str) */
    int32_t exit_code, signal;
    int8_t cls, state;
    uint8_t started;
    double queued_s, start_s, end_s, wait_s, cpu_s, init_from_s;
    uint64_t rss_kb;
};

struct jmd_tok_sample {
    double t_s;
    int granted, target, oracle, opp;
};
struct jmd_prog_sample {
    double t_s;
    size_t done;
    double fraction;
};

/* An RM request kept until answered: resent with the same key to the next replica on timeout. */
struct jmd_call {
    int active;
    int type; /* proto_type_t */
    char key[64];
    uint64_t req_id;
    int64_t sent_mono;
    uint32_t tokens;
    int all;
};

struct jmd_node_link {
    zuv_sock_t *sock;
    char endpoint[VIEW_ENDPOINT_MAX];
    int64_t heard_mono;   /* last status from it (or first dispatch) */
    int64_t connect_mono; /* when the socket was (re)made */
    int answered;         /* anything received on this socket */
    int reconnects;
    size_t inflight;
    int queried; /* resume: 1 TASK_QUERY sent, 2 answered (TASK_QUERY_REPLY or an error) */
};

/* Speculative copies, duplicates, re-matches and re-runs (jmd_spec.c), for state.json and
 * report.json. */
struct jmd_spec_stats {
    size_t copies_started, copies_won; /* speculative copies of running tasks */
    size_t dups_started, dups_won;     /* duplicates of queued tasks */
    size_t rematched;                  /* upgrades re-placed as regular on another node */
    size_t reruns;                     /* producers re-run for outputs lost with a node */
};
struct jmd_spec;

/* A resumed JM asks every node what it remembers of the job before it places anything. */
enum jmd_query_phase {
    JMD_QUERY_NONE = 0, /* not resumed, or the query is over */
    JMD_QUERY_VIEW,     /* waiting for the whole view */
    JMD_QUERY_WAIT,     /* TASK_QUERY sent: collecting statuses until every node answered */
};

typedef struct jmd {
    struct jmd_opts o;
    uv_loop_t loop;
    int loop_ok; /* the loop is initialised (and the RM's sockets opened on it) */
    uv_timer_t tick, lease, control, stop_timer;
    uv_signal_t sigterm, sigint;
    int stopping; /* the loop is winding down */
    curve_t *curve;
    int64_t t0_mono, t0_wall;

    /* job */
    struct spec *spec;
    struct round_job core; /* dag, estimator, dispatcher, placement, ready queue, attempts */
    view_t *view;
    size_t view_nodes_resolved;
    int view_dirty;
    int view_whole; /* a whole snapshot arrived (or JMD_VIEW_GRACE_MS passed): placing may start */
    struct jmd_task *tasks;
    double *remaining_buf; /* per task: expected remaining run time (downgrade order) */
    double *estimate_buf;  /* per task: its run-time estimate (downgrade grace) */
    size_t *ready_buf;     /* one round's batch, taken from rq */
    uint64_t rng;          /* the job's random seed (Jockey's simulations seed from it) */
    struct rng place_rng;  /* placement's random term (common/rng.h), seeded from rng */
    int sched_pending;
    uv_idle_t wake; /* active while a round is pending: the loop's poll does not block before the
                       check that runs it (a request from zuv's idle drain came after it) */
    int holding; /* a round held ready tasks back (jm/place.h place_hold): the tick rounds again */
    enum jmd_outcome outcome;
    char reason[512];
    size_t attempts_failed;
    size_t attempts_moved; /* queued attempts moved elsewhere (jm/correct.h) */
    size_t correct_next;   /* where the next correction pass starts */
    /* ended attempts that were preempted at their node, and those whose process had started
       (at the end of a job that lost nothing, attempts_started == its tasks) */
    size_t attempts_preempted, attempts_started;
    int64_t end_wall;
    uint32_t epoch;       /* ours (fencing): every TASK_* command carries it */
    uint32_t fenced;      /* a newer incarnation was seen (its epoch, or ours + 1): stop */
    int query_phase;      /* enum jmd_query_phase */
    int64_t query_mono;   /* when the TASK_QUERY went out */
    size_t query_pending; /* nodes that have not answered it yet */
    int query_linked;     /* ... asked only of the nodes linked to (after a pause, not a restart) */
    size_t adopted;       /* attempts found at the nodes and taken over */
    int resync;           /* the loop was paused (SIGSTOP, a VM freeze): nothing is acted on
                             until the RM acknowledges a renewal (its epoch checked) */
    int64_t last_tick_mono;
    char resume_end[512]; /* resumed into an end (the journal refused, a task out of attempts) */

    /* RM */
    zuv_sock_t *sub[JMD_MAX_RM];
    int sub_linked[JMD_MAX_RM]; /* sub[i] connected: only once followed (jmd_rm__follow) */
    struct view_stream vstream[JMD_MAX_RM]; /* each replica's view stream (jmd_rm.c) */
    int vsnap[JMD_MAX_RM];                  /* sub[i] subscribes to snapshots */
    int64_t vsnap_ms[JMD_MAX_RM];           /* since when (jmd_now), to ask again */
    size_t vfollow;                         /* the replica whose view is taken (jmd_rm.c) */
    int64_t vheard_ms[JMD_MAX_RM];          /* its latest view message, or since followed */
    zuv_sock_t *api[JMD_MAX_RM];
    int api_answered[JMD_MAX_RM]; /* anything received on api[i] since it was made */
    int api_linked[JMD_MAX_RM];   /* api[i] connected: at the start only the believed leader's */
    int leader;
    uint64_t next_req;
    struct jmd_call call_tok, call_lease, call_rel;
    uint32_t granted, capacity, requested;
    uint32_t minimum;      /* of the grant, the arbiter's guaranteed minimum (the rest is spare) */
    double token_cpu;      /* the virtual cluster's token size (TOKEN_GRANT / LEASE_ACK) */
    uint64_t token_mem_mb; /* (defaults until the first grant says otherwise) */
    size_t downgrades;     /* regular tasks turned opportunistic (spare reclaimed) */
    double eta_s, eta_p95_s; /* expected finish, median and conservative, s from submission
                                (0: unknown); refreshed every control period and every tick
                                tasks finished in (jmd_jockey_tick) */
    double eta_half_s;       /* eta_s when half the tasks were done (0: not yet): state.json
                                reports its error against the makespan (issue 22) */
    size_t eta_done;         /* tasks done when eta_s was computed */
    int64_t eta_mono;        /* and when */
    /* The ETA's upper value from admission's model (jm/eta.h, issue 22): the job's own spread
       and the learned factor from LEASE_ACK (0: unknown), whether eta_p95_s came from them, and
       eta_p95_s at half done (state.json: did the job end by it). */
    double own_spread, own_factor;
    int eta_from_spread;
    double eta_half_p95_s;
    double eta_p95_runs_s, eta_half_p95_runs_s; /* the simulated runs' own q95, for comparison */
    /* Task outcomes per view node for the RM's Psucc (Apollo §3.3): counted since the last
       renewal (pend_*) and carried by the renewal in flight (sent_*); ncount entries each. */
    uint32_t *pend_ok, *pend_failed, *sent_ok, *sent_failed;
    size_t ncount;
    int64_t tok_sent_mono;  /* when the last TOKEN_REQUEST started */
    char last_refusal[160]; /* the RM's last refusal text (logged once) */
    int want;               /* tokens to ask for now */
    int64_t rm_heard_mono;
    size_t rm_dropped;   /* messages from the RM that did not decode (state.json "rm_dropped") */
    size_t unfit;        /* tasks left that no live node of the view can hold (jmd_rm.c) */
    char unfit_why[240]; /* the first of them and the largest node, for state.json and the log */
    uint64_t unfit_sig;  /* the view's nodes as last checked (a change checks again) */
    size_t pn_dropped;   /* messages from PNs that did not decode (state.json "pn_dropped") */
    size_t pn_batches;   /* TASK_STATUS_BATCH taken (state.json "pn_status_batches") */
    int end_acked;

    /* PNs (indexed like the view) */
    struct jmd_node_link *links;
    size_t nlinks;
    size_t est_observed; /* the estimator's observations when R was last re-sent (jmd_pn.c) */
    uint8_t *rm_state;   /* the RM's proto_node_state_t per view node (draining is not down) */
    size_t nrm_state;

    /* Jockey */
    struct jsim_plan plan;
    int have_plan;
    controller_t *ctrl;
    int has_deadline;
    double deadline_s;
    int target; /* tokens the controller (or the fixed rule) wants */
    int raw;    /* of them, the controller's raw allocation A^r, the RM's minimum (0: none) */
    uint32_t raw_sent; /* the raw allocation last sent with a TOKEN_REQUEST */
    int opp_allowance;
    int oracle;
    int *done_buf;
    double run_actual_s, run_expected_s;

    /* output */
    int journal_fd; /* -1: none */
    char *jbuf;     /* journal lines not yet written (written and fdatasync'd by jmd_out_flush) */
    size_t jlen, jcap;
    struct jmd_out_rec *recs; /* every finished attempt, compact (jmd_out.c) */
    size_t nrecs, caprecs;
    struct intern strs;       /* the records' node names and reasons, each stored once */
    FILE *rep_f;              /* report.json.tmp.PID while a periodic report is being written */
    size_t rep_next, rep_end; /* its next attempt, and the attempts it holds */
    struct jmd_tok_sample *toks;
    size_t ntoks, captoks;
    struct jmd_prog_sample *progs;
    size_t nprogs, capprogs;
    int64_t last_report_mono;
    struct usage usage;          /* token units in use over time, wall ms (jm/usage.h) */
    struct jmd_metrics *metrics; /* /metrics (jm/daemon/jmd_metrics.h); NULL: off */

    /* issue 15 (jmd_spec.c) */
    struct jmd_spec *sp;
    struct jmd_spec_stats spec_stats;

    struct jmd_grow *grow; /* an open job's binds (jm/daemon/jmd_grow.h); NULL: not open */
} jmd_t;

int64_t jmd_now(const jmd_t *j);      /* monotonic ms */
double jmd_elapsed_s(const jmd_t *j); /* since the job started */
double jmd_wall_rel_s(const jmd_t *j, int64_t wall_ms);

/* jmd_rm.c */
int jmd_rm_open(jmd_t *j, char *msg, size_t cap);
void jmd_rm_close(jmd_t *j);
int jmd_rm_link(jmd_t *j, size_t i); /* api[i] connected, when it was not yet: 0 or -1 */
void jmd_rm_leader(jmd_t *j, int l); /* replica l leads (the submit's word): asked first */
void jmd_rm_tick(jmd_t *j);          /* retries, token target changes */
void jmd_rm_renew(jmd_t *j);         /* one LEASE_RENEW */
/* Counts an attempt that succeeded (ok) or failed on view node `node`, for the next renewal. */
void jmd_rm_note_outcome(jmd_t *j, uint32_t node, int ok);
void jmd_rm_finish(jmd_t *j); /* terminal renewal + release all */

/* jmd_pn.c */
/* Sends the task's TASK_CREATE for its current attempt. ERR_TOOBIG / ERR_RANGE: the protocol
 * cannot carry the task (an argument over its limit; err says which), ERR_UNAVAILABLE or
 * ERR_FULL: the link cannot take it now. */
int jmd_pn_create(jmd_t *j, size_t task, uint32_t node, char *err, size_t cap);
/* The same for a given attempt number and dispatch class (an extra attempt: jmd_spec.c). */
int jmd_pn_create_attempt(jmd_t *j, size_t task, uint32_t attempt, int cls, uint32_t node,
                          char *err, size_t cap);
void jmd_pn_upgrade(jmd_t *j, size_t task, uint32_t node);
/* TASK_UPGRADE to the opportunistic class: the job's spare tokens were reclaimed. */
void jmd_pn_downgrade(jmd_t *j, size_t task, uint32_t node, uint64_t grace_ms);
void jmd_pn_close(jmd_t *j);
/* TASK_QUERY to view node `node` (resume). 0 or ERR_UNAVAILABLE (no link). */
int jmd_pn_query(jmd_t *j, uint32_t node);
/* TASK_CANCEL of a given attempt (one found at a node that nobody tracks). */
void jmd_pn_cancel_attempt(jmd_t *j, size_t task, uint32_t attempt, uint32_t node, const char *why);
/* A link that never got an answer within a second while tasks wait on it (a CURVE handshake
 * that failed leaves a DEALER that never reconnects) is made anew and its creates are resent;
 * the PN answers a repeated create with the task's status, never runs it twice. */
void jmd_pn_check(jmd_t *j);
/* TASK_ESTIMATE to the node of every in-flight tracked attempt whose R (the estimator's, as
 * TASK_CREATE sends it) moved past JMD_PN_ESTIMATE_FRAC of what its PN has and at least
 * JMD_PN_ESTIMATE_MIN_MS; looks at the attempts in flight (attempt_inflight), only when the
 * estimator learnt something since the last look. Returns how many were sent. Called by
 * jmd_pn_check (every tick). */
#define JMD_PN_ESTIMATE_FRAC   0.25
#define JMD_PN_ESTIMATE_MIN_MS 1000
size_t jmd_pn_estimates(jmd_t *j);
/* Splits a create's req_id (set by jmd_pn_create) back into task and attempt. */
void jmd_pn_req_split(uint64_t req_id, size_t *task, uint32_t *attempt);

/* jmd_sched.c */
int jmd_sched_init(jmd_t *j, char *msg, size_t cap);
/* The ready queue: a READY task enters (not one backing off); every READY task it lacks. */
void jmd_sched_ready_add(jmd_t *j, size_t task, int64_t now);
void jmd_sched_ready_sync(jmd_t *j, int64_t now);
/* Freed units upgrade waiting opportunistic tasks (jm/attempt.h's order). */
void jmd_sched_upgrades(jmd_t *j);
void jmd_sched_close(jmd_t *j);
void jmd_sched_request(jmd_t *j); /* a round soon (coalesced) */
/* A ready task's key in the ready queue (jm/readyq.h): its bottom level. */
double jmd_sched_prio(const jmd_t *j, size_t task);
void jmd_sched_round(jmd_t *j);
/* A status from the node behind link `link` (-1: unknown). */
void jmd_sched_status(jmd_t *j, const proto_task_status_t *st, long link);
/* jmd_resume.c: the query of a resumed JM; 1 when placing may go on. */
int jmd_resume_query(jmd_t *j, int64_t now);
/* Takes over an attempt node `n` holds for READY task `ti` (resume). */
void jmd_resume_adopt(jmd_t *j, size_t ti, const proto_task_status_t *st, long n);
/* Rebuilds the job's state from a parsed journal (resume): succeeded tasks done, failed
 * attempts counted, the attempts in the report. ERR_PARSE when it names a task the spec lacks. */
int jmd_sched_replay(jmd_t *j, const struct journal *jr, char *msg, size_t cap);
/* The node behind link `link` answered the TASK_QUERY (or refused it). */
void jmd_sched_query_done(jmd_t *j, size_t link);
/* A PN answered a create with ERROR `code`: a node that stopped taking tasks (ERR_UNAVAILABLE:
 * draining) re-places the task uncharged and gets no more until the view says otherwise; any
 * other refusal is a failed attempt. */
void jmd_sched_create_refused(jmd_t *j, uint64_t req_id, int code, const char *why);
void jmd_sched_tick(jmd_t *j); /* silent nodes */
void jmd_sched_tokens(jmd_t *j, uint32_t granted);
/* The virtual cluster's token size and the grant's minimum (TOKEN_GRANT, LEASE_ACK; 0: the
 * defaults): task costs are recomputed and Jockey's model rebuilt when the size changes. */
void jmd_sched_token_size(jmd_t *j, double token_cpu, uint64_t token_mem_mb, uint32_t minimum);
void jmd_sched_cancel(jmd_t *j, const char *why);
void jmd_sched_view_changed(jmd_t *j);
/* The usage skyline: the attempt of `task` runs from wall_ms (counts its units at the current
 * token size) or ended at wall_ms (takes back what it counted). Idempotent per attempt. */
void jmd_sched_usage_start(jmd_t *j, size_t task, int64_t wall_ms);
void jmd_sched_usage_end(jmd_t *j, size_t task, int64_t wall_ms);
void jmd_end(jmd_t *j, enum jmd_outcome o, const char *reason);
/* (jmd.c) A newer incarnation holds the job (epoch > ours; 0: unknown, a PN's ERR_FENCED): logs it
 * and stops the loop at once; nothing more is written to the job directory. */
void jmd_fenced(jmd_t *j, uint32_t epoch);

/* Feeds one event to the attempt machine (jm/attempt.h) and carries out its actions: sends,
 * journal records, retries, the job's end. `st`: the status behind it (NULL: none), `reason`:
 * what the record and a cancel say (NULL: the status's). ev->extra is filled in here. */
void jmd_sched_event(jmd_t *j, struct attempt_event *ev, const proto_task_status_t *st,
                     const char *reason);
/* What the daemon knows of view node `n` for jm/attempt.h's lost-node rule. */
enum attempt_node jmd_sched_node_check(const jmd_t *j, uint32_t n, int64_t placed_ms, int64_t now);

/* jmd_spec.c: extra attempts of a task (speculative copies, duplicates), re-matched upgrades,
 * lost outputs (docs/stragglers.md). The hooks return 1 when they consumed the event. */
int jmd_spec_init(jmd_t *j, char *msg, size_t cap);
void jmd_spec_close(jmd_t *j);
/* A status of an in-flight task, before jmd_sched_status looks at it: an extra attempt's is
 * consumed (1), or that attempt takes the task's place and the status goes on as the task's. */
int jmd_spec_status(jmd_t *j, size_t task, const proto_task_status_t *st);
/* The task's tracked attempt succeeded or the job ended: its extra attempts are cancelled. */
void jmd_spec_outcome(jmd_t *j, size_t task, int state, const char *reason);
/* The attempt machine's TAKEOVER: an extra attempt (a running one first) takes the place of the
 * tracked one, which ended with `state` and is recorded as that extra attempt. */
void jmd_spec_takeover(jmd_t *j, size_t task, int state, const proto_task_status_t *st,
                       const char *reason);
/* The task succeeded on `node` after exec_s: the stage's figures, where its outputs are. */
void jmd_spec_succeeded(jmd_t *j, size_t task, int node, double exec_s);
int jmd_spec_refused(jmd_t *j, size_t task, uint32_t attempt, const char *why);
void jmd_spec_resend(jmd_t *j, uint32_t node); /* a remade link: the extra attempts' creates */
void jmd_spec_tick(jmd_t *j, int64_t now);     /* stragglers, lost extras, lost outputs */
void jmd_spec_correct(jmd_t *j, int64_t now);  /* queued tasks: move or duplicate */
int jmd_spec_upgrade(jmd_t *j, size_t task);   /* a freed token: re-placed elsewhere (1) */
uint32_t jmd_spec_tokens(const jmd_t *j, uint32_t granted); /* less the extra attempts' units */
size_t jmd_spec_extra(const jmd_t *j, size_t task);         /* extra attempts in flight */

/* jmd_jockey.c */
int jmd_jockey_init(jmd_t *j);
void jmd_jockey_close(jmd_t *j);
void jmd_jockey_step(jmd_t *j);
void jmd_jockey_deadline(jmd_t *j, double deadline_s);
int jmd_jockey_request(const jmd_t *j); /* tokens to hold now */
void jmd_jockey_allowance(jmd_t *j);    /* the opportunistic allowance for the grant held */
/* The token size changed: the plan (C(p, a) in token units) and the controller are rebuilt. */
void jmd_jockey_resize(jmd_t *j);
/* Recomputes eta_s / eta_p95_s: the JM's simulator over the tasks not yet done under the grant
 * and the opportunistic allowance held now (jsim_run_rest); C(p, a) when it cannot. */
void jmd_jockey_eta(jmd_t *j);
/* Every tick: a fresh ETA when tasks finished, and eta_half_s once half the tasks are done. */
void jmd_jockey_tick(jmd_t *j);

/* jmd_out.c */
/* Reads DIR/journal (missing: empty) into *jr (journal_parse). */
int jmd_out_read_journal(jmd_t *j, struct journal *jr, char *msg, size_t cap);
/* Opens the journal for appending; keep: bytes to keep (the good prefix of a resumed journal,
 * a torn tail beyond it is cut), SIZE_MAX: all. A new journal gets its header. */
int jmd_out_open(jmd_t *j, size_t keep, char *msg, size_t cap);
void jmd_out_close(jmd_t *j);
void jmd_out_attempt(jmd_t *j, const struct jmd_rec *r);
void jmd_out_record(jmd_t *j, const struct jmd_rec *r); /* the report only (replayed) */
void jmd_out_tokens(jmd_t *j);
void jmd_out_progress(jmd_t *j);
void jmd_out_state(jmd_t *j);
/* report.json: while the job runs, started here and written JMD_OUT__CHUNK attempts a tick by
 * jmd_out_report_step (the loop is never held for long); at the end, whole. */
void jmd_out_report(jmd_t *j);
void jmd_out_report_step(jmd_t *j);
void jmd_out_flush(jmd_t *j);
void jmd_out_profile(jmd_t *j);
/* A job that could not start at all (its spec refused, the RM refused it): DIR/state.json with
 * state "failed" and the reason, so `paddock submit --wait` and `job show` can say why. */
void jmd_out_failed_state(const char *job_dir, const char *job_id, int64_t started_ms,
                          const char *reason);

#endif
