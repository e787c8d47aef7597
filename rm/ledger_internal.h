/* ledger_internal.h - the ledger's representation, shared by rm/ledger.c (commands and
 * queries), rm/ledger_job.c (jobs), rm/ledger_arbitrate.c (grants and admission), rm/ledger_snap.c
 * (snapshots) and the other rm/ledger_*.c files. Private to the ledger module. */
#ifndef PADDOCK_RM_LEDGER_INTERNAL_H
#define PADDOCK_RM_LEDGER_INTERNAL_H

#include "rm/arbiter.h"
#include "rm/calib.h"
#include "rm/ledger.h"

#define LEDGER__BUCKETS (2 * LEDGER_IDEM_CAP)

struct ledger__idem {
    uint64_t key;
    struct ledger_result res;
    int32_t next; /* next slot in the same bucket, -1 ends */
};

struct ledger {
    int64_t now;
    uint64_t applied;

    struct ledger_node *nodes;
    size_t nnodes, capnodes;
    uint32_t *nidx; /* open addressing by name: node index + 1, 0 empty */
    size_t nidx_cap;

    struct ledger_vc *vcs;
    size_t nvcs, capvcs;

    struct ledger_job *jobs; /* ascending id */
    size_t njobs, capjobs;
    size_t nfinished;
    uint64_t next_job_id;

    struct arbiter_job *arb; /* scratch for the arbiter: capjobs entries each */
    size_t *arb_order;
    size_t *arb_pos; /* index into jobs of each arb entry */

    struct ledger_recurring *recs; /* by name; LEDGER_MAX_RECURRING */
    size_t nrecs;
    uint32_t next_recur_id;
    struct ledger_run *hist; /* ring of LEDGER_HISTORY_CAP, oldest at hist_head when full */
    size_t hist_n, hist_head;

    struct ledger__idem *idem; /* ring of LEDGER_IDEM_CAP, oldest at idem_head when full */
    size_t idem_n, idem_head;
    int32_t *idem_bucket; /* 2 * LEDGER_IDEM_CAP heads */

    struct calib calib; /* admission's error model, from the jobs that succeeded */
    int policy_set;     /* ledger_set_policy (simulations only; not in snapshots) */
    int policy;

    /* tenants (ledger_tenant.c) */
    struct ledger_rule *rules; /* LEDGER_MAX_RULES, by (user, vc) */
    size_t nrules;
    struct ledger_audit *audit; /* ring of LEDGER_AUDIT_CAP, oldest at audit_head when full */
    size_t audit_n, audit_head;
    struct ledger_usage *usage; /* ring of LEDGER_USAGE_CAP */
    size_t usage_n, usage_head;
};

/* Helpers the snapshot decoder rebuilds state with (ledger.c). */
struct ledger_node *ledger__node_find(const ledger_t *l, const char *name);
void ledger__nidx_insert(uint32_t *tab, size_t cap, const char *name, uint32_t v);
/* Room for one more node (arrays and name index): 0, ERR_FULL or ERR_NOMEM. */
int ledger__node_reserve(ledger_t *l);
struct ledger_vc *ledger__vc_find(const ledger_t *l, const char *name, size_t *idx);
void ledger__idem_put(ledger_t *l, uint64_t key, const struct ledger_result *res);
/* Grows the jobs array and the arbiter's scratch to hold `cap` jobs: 0 or ERR_NOMEM. */
int ledger__jobs_reserve(ledger_t *l, size_t cap);
/* Recomputes every grant of virtual cluster `vc` (rm/arbiter.h); `cause` is the job whose
 * command triggered it (its own losses are not counted as reclaims), 0 for none. */
void ledger__arbitrate(ledger_t *l, size_t vc, uint64_t cause);

/* Jobs (ledger_job.c). */
/* The job of this id, or NULL; *pos (may be NULL) where it is or would be in the ascending
 * array. */
struct ledger_job *ledger__job_find(const ledger_t *l, uint64_t id, size_t *pos);
/* JOB_REGISTER: the new job's id in r->value, or the verdict (ERR_ADMISSION, ERR_QUOTA...). */
int ledger__job_register(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r);
/* TICK: expires the jobs whose lease ran out (their count in *value) and re-arbitrates. */
int ledger__tick(ledger_t *l, uint64_t *value);
/* The commands of one job: JOB_RESUME, JOB_END, JOB_DEADLINE, TOKEN_REQUEST, TOKEN_RELEASE,
 * LEASE_RENEW. */
int ledger__job_cmd(ledger_t *l, const struct ledger_cmd *c, uint64_t *value);

/* Arbitration and admission (ledger_arbitrate.c). */
/* Sets job j's grant, keeping its virtual cluster's total and the job's token-time. */
void ledger__job_set_tokens(ledger_t *l, struct ledger_job *j, uint32_t tokens);
/* What is left of a job's registered shape, in seconds and token-seconds. */
struct arbiter_shape ledger__remain(const struct ledger_job *j);
/* The job's registered shape times `left` (1: whole, as registered; ledger__remain: what is
 * left of it). */
struct arbiter_shape ledger__shape_of(const struct ledger_job *j, double left);
/* A deadline job's minimum now (0 without a deadline). */
uint32_t ledger__minimum(const ledger_t *l, const struct ledger_job *j);
/* A registration's shape, at the error model's conservative scale. */
struct arbiter_shape ledger__shape(const ledger_t *l, const struct ledger_cmd *c);
/* MRM's admission check of c against the admitted jobs of virtual cluster vci: 0, or
 * ERR_ADMISSION with the earliest feasible finish in r; the quote in *q. */
int ledger__admit(ledger_t *l, const struct ledger_cmd *c, size_t vci, struct ledger_result *r,
                  struct arbiter_quote *q);

/* Recurring jobs and the history (ledger_recur.c). */
void ledger__recur_free(ledger_t *l);
int ledger__recur_cmd(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r);
struct ledger_recurring *ledger__recur_by_id(const ledger_t *l, uint32_t id);
/* JOB_REGISTER of a run: checks it is the pending run of its recurring job (ERR_NOTFOUND,
 * ERR_EXISTS) and says whether the plan reserves for it (then admission is skipped). */
int ledger__recur_check(const ledger_t *l, const struct ledger_cmd *c, bool *reserved,
                        int64_t *deadline);
void ledger__recur_registered(ledger_t *l, struct ledger_job *j, const struct ledger_cmd *c);
/* A registration's declared inputs: the first read of a recurring job's latest outputs. */
void ledger__inputs_read(ledger_t *l, const struct ledger_cmd *c);
/* A job ended (end: its JOB_END, NULL when its lease expired): the history, the recurring
 * job's counts and SLO inference. */
void ledger__history_job(ledger_t *l, const struct ledger_job *j, const struct ledger_cmd *end);
/* A job resumed after its lease lapsed (issue 14): its `expired` record is taken back out of
 * the history and, for a recurring run, its run is pending again. */
void ledger__history_unrecord(ledger_t *l, const struct ledger_job *j);
/* An expired job failed for good: its record says so, with the reason. */
void ledger__history_refail(ledger_t *l, const struct ledger_job *j, const char *reason);
/* The arbiter's reservation inputs for job j at now, and the tokens held back in vc. */
void ledger__recur_arb(const ledger_t *l, const struct ledger_job *j, struct arbiter_job *a);
uint32_t ledger__held_back(const ledger_t *l, size_t vci);
/* Whether the plan of vc changes between times a and b (a plan step boundary with any
 * reservation in vc). */
bool ledger__plan_moved(const ledger_t *l, size_t vci, int64_t a, int64_t b);
/* The plan's reservations from now on, for admission: arrays the caller frees (NULL, 0 when
 * vc has none). ERR_NOMEM. */
int ledger__plan_reserve(const ledger_t *l, size_t vci, int64_t now, double **t, double **tok,
                         size_t *n);
void ledger__recur_snap(const ledger_t *l, struct enc_buf *b);
int ledger__recur_restore(ledger_t *l, struct enc_reader *r, char *msg, size_t cap);

/* Tenants (ledger_tenant.c, issue 27). */
void ledger__tenant_free(ledger_t *l);
/* ROLE_SET, GRANT_SET, QUOTA_SET, AUDIT. */
int ledger__tenant_cmd(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r);
/* The quotas of c->user in virtual cluster vci, for a new job needing `need` tokens at once:
 * 0, or ERR_QUOTA with r->value the quota's kind and r->aux its limit. */
int ledger__quota_check(const ledger_t *l, const struct ledger_cmd *c, size_t vci, uint32_t need,
                        struct ledger_result *r);
/* Issue 27: after an arbitration of virtual cluster vci over arb[0..n) (jobs[pos[k]]), takes the
 * spare tokens back from the latest jobs of any user over their `tokens held at once` quota
 * (never below a job's minimum) and caps those jobs there (width and wanted); true when it did,
 * and the caller arbitrates again so that what was taken back goes to others. */
bool ledger__quota_trim(const ledger_t *l, size_t vci, struct arbiter_job *arb, const size_t *pos,
                        size_t n);
/* After a command was applied: its line in the audit trail, when it is one that is audited. */
void ledger__audit_cmd(ledger_t *l, const struct ledger_cmd *c, const struct ledger_result *r);
/* A job ended: its accounting record. */
void ledger__usage_job(ledger_t *l, const struct ledger_job *j, const struct ledger_cmd *end);
/* A JM's last word (JOB_END with its usage) for a job that had already ended (cancelled through
 * the RM): its accounting record takes the token-seconds the JM counted. */
void ledger__usage_amend(ledger_t *l, const struct ledger_cmd *end);
/* Snapshot section (version 5): owners and prices of the jobs, rules, audit, usage. */
void ledger__tenant_snap(const ledger_t *l, struct enc_buf *b);
int ledger__tenant_restore(ledger_t *l, struct enc_reader *r, char *msg, size_t cap);

#endif
