/* ledger_job.c - the ledger's jobs: registration (quotas, admission, the recurring run it is),
 * resumption by a new JM, the lease ticks that expire them, the commands of an active job (end,
 * deadline change, token request and release, lease renewal) and the forgetting of old finished
 * ones. Arbitration and admission are in rm/ledger_arbitrate.c. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct ledger_job *ledger__job_find(const ledger_t *l, uint64_t id, size_t *pos)
{
    size_t lo = 0, hi = l->njobs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->jobs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (pos != NULL)
        *pos = lo;
    return lo < l->njobs && l->jobs[lo].id == id ? &l->jobs[lo] : NULL;
}

static void ledger__job_where(struct ledger_job *j, const struct ledger_cmd *c);

/* end: the JOB_END that ended it, NULL when its lease ran out */
static void ledger__job_finish(ledger_t *l, struct ledger_job *j, uint8_t state,
                               const struct ledger_cmd *end)
{
    ledger__job_set_tokens(l, j, 0);
    j->wanted = 0;
    j->minimum = 0;
    j->state = state;
    j->finished_ms = l->now;
    if (end != NULL && end->started_ms > 0 && end->started_ms <= l->now)
        j->started_ms = end->started_ms;
    /* The error model learns where the fluid model describes the run: an admitted deadline
     * job (ahead of everything the model leaves out), or a job that had its virtual cluster to
     * itself. A job without a deadline, or best effort, behind admitted ones and beside its
     * peers measures the sharing, not the model. */
    bool modelled = j->deadline_ms != 0 && !j->best_effort ? true : !j->shared;
    if (state == LEDGER_JOB_DONE && j->pred_p50_ms > 0 && modelled && !j->reserved_run) {
        double actual = (double)(j->finished_ms - j->submitted_ms), pred = (double)j->pred_p50_ms;
        if (end == NULL || !end->calib_at_p50) { /* on the tokens it held (rm/calib.h) */
            struct arbiter_shape s = ledger__shape_of(j, 1);
            double used = end != NULL ? (double)end->token_ms / 1000.0 : 0;
            pred = 1000.0 * calib_predicted(&s, actual / 1000.0, (double)j->held_ms / 1000.0, used);
        }
        if (pred > 0)
            calib_add_spread(&l->calib, actual, pred, (double)j->spread_milli / 1000.0);
    }
    l->nfinished++;
    ledger__history_job(l, j, end);
    ledger__usage_job(l, j, end); /* issue 25: accounting */
}

/* Forgets the oldest finished jobs beyond LEDGER_JOBS_KEEP. */
static void ledger__job_gc(ledger_t *l)
{
    size_t w = 0, drop = l->nfinished > LEDGER_JOBS_KEEP ? l->nfinished - LEDGER_JOBS_KEEP : 0;
    if (drop == 0)
        return;
    for (size_t r = 0; r < l->njobs; r++) {
        if (drop > 0 && l->jobs[r].state != LEDGER_JOB_ACTIVE) {
            drop--;
            l->nfinished--;
            continue;
        }
        l->jobs[w++] = l->jobs[r];
    }
    l->njobs = w;
}

int ledger__jobs_reserve(ledger_t *l, size_t cap)
{
    if (cap <= l->capjobs)
        return 0;
    void *p = mem_reallocarray(l->jobs, cap, sizeof *l->jobs);
    if (p == NULL)
        return ERR_NOMEM;
    l->jobs = p;
    void *a = mem_reallocarray(l->arb, cap, sizeof *l->arb);
    if (a != NULL)
        l->arb = a;
    void *o = mem_reallocarray(l->arb_order, cap, sizeof *l->arb_order);
    if (o != NULL)
        l->arb_order = o;
    void *q = mem_reallocarray(l->arb_pos, cap, sizeof *l->arb_pos);
    if (q != NULL)
        l->arb_pos = q;
    if (a == NULL || o == NULL || q == NULL)
        return ERR_NOMEM; /* the jobs array grew: harmless, capjobs stays */
    l->capjobs = cap;
    return 0;
}

int ledger__job_register(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *r)
{
    size_t vci = 0;
    if (c->name[0] == '\0' || c->deadline_ms < 0 || c->flags > 7 || c->alpha_milli > 1000 ||
        (c->spread_milli != 0 && (c->spread_milli < 1000 || c->spread_milli > LEDGER_SPREAD_MAX)))
        return ERR_INVAL;
    if (ledger__vc_find(l, c->vc, &vci) == NULL)
        return ERR_NOTFOUND;
    int64_t lease = c->lease_ms != 0 ? c->lease_ms : LEDGER_LEASE_DEFAULT;
    if (lease < LEDGER_LEASE_MIN_MS || lease > LEDGER_LEASE_MAX_MS)
        return ERR_RANGE;
    if (c->width > LEDGER_MAX_TOKENS || c->work_ms > (1ull << 52) || c->work_sd_ms > (1ull << 52) ||
        c->path_ms > (1ull << 52) || c->path_sd_ms > (1ull << 52) || c->weight_milli > 1000000000)
        return ERR_RANGE;
    if (c->text_len > LEDGER_FILES_MAX)
        return ERR_RANGE;
    bool reserved = false, best_effort = (c->flags & LEDGER_JOB_BEST_EFFORT) != 0;
    int64_t deadline = c->deadline_ms;
    int rc = ledger__recur_check(l, c, &reserved, &deadline);
    if (rc != 0)
        return rc;
    /* issue 27: the user's quotas in this cluster, before admission; a job needs its MinEDF
       minimum at once when it has a deadline and a shape, else one token */
    uint32_t need = 1;
    if (deadline != 0 && !best_effort && c->work_ms != 0 && c->width != 0 && deadline > l->now) {
        struct arbiter_shape sh = ledger__shape(l, c);
        uint32_t m = arbiter_min_tokens(&sh, (double)(deadline - l->now) / 1000.0);
        need = m > need ? m : need;
    }
    rc = ledger__quota_check(l, c, vci, need, r);
    if (rc != 0)
        return rc;
    struct arbiter_quote q;
    memset(&q, 0, sizeof q);
    if (c->work_ms != 0 && c->width != 0 && !reserved) {
        /* every job with a shape is predicted, so that its outcome calibrates the model; only
         * an admitted deadline is judged */
        struct ledger_cmd a = *c;
        a.deadline_ms = deadline != 0 && !best_effort ? deadline : 0;
        rc = ledger__admit(l, &a, vci, r, &q);
        if (rc == ERR_ADMISSION && c->recurring[0] != '\0') {
            /* a run of a recurring job without a reservation yet (no model, or no room in
             * the plan) still runs, without admission, rather than miss its period */
            best_effort = true;
            r->value = r->aux = 0;
            rc = 0;
        }
        if (rc != 0)
            return rc;
    }
    ledger__job_gc(l);
    if (l->njobs >= LEDGER_MAX_JOBS)
        return ERR_FULL;
    if (l->njobs == l->capjobs && ledger__jobs_reserve(l, l->capjobs < 16 ? 16 : l->capjobs * 2))
        return ERR_NOMEM;
    bool shared = false;
    for (size_t i = 0; i < l->njobs; i++) {
        struct ledger_job *o = &l->jobs[i];
        if (o->vc == vci && o->state == LEDGER_JOB_ACTIVE) {
            o->shared = true;
            shared = true;
        }
    }
    struct ledger_job *j = &l->jobs[l->njobs++];
    memset(j, 0, sizeof *j);
    j->shared = shared;
    j->id = l->next_job_id++;
    memcpy(j->name, c->name, sizeof j->name);
    j->vc = (uint32_t)vci;
    j->state = LEDGER_JOB_ACTIVE;
    j->submitted_ms = l->now;
    j->deadline_ms = deadline;
    j->lease_ms = lease;
    j->lease_expiry_ms = l->now + lease;
    j->best_effort = best_effort;
    j->reserved_run = reserved;
    j->period = -1;
    j->epoch = 1;
    ledger__job_where(j, c);
    j->has_profile = (c->flags & LEDGER_JOB_HAS_PROFILE) != 0;
    j->weight_milli = c->weight_milli;
    j->work_ms = c->work_ms;
    j->work_sd_ms = c->work_sd_ms;
    j->path_ms = c->path_ms;
    j->path_sd_ms = c->path_sd_ms;
    j->width = c->width;
    j->has_alpha = (c->flags & LEDGER_JOB_HAS_ALPHA) != 0;
    j->alpha_milli = j->has_alpha ? c->alpha_milli : 0;
    j->spread_milli = c->spread_milli;
    if (isfinite(q.finish_p50) && q.finish_p50 > 0 && isfinite(q.finish) && q.finish < 1e9) {
        j->pred_p50_ms = (int64_t)ceil(q.finish_p50 * 1000.0);
        j->pred_bound_ms = (int64_t)ceil(q.finish * 1000.0);
    }
    memcpy(j->user, c->user, sizeof j->user);
    j->held_since_ms = l->now;
    if (deadline != 0 && !best_effort && c->work_ms != 0 && c->width != 0 && isfinite(q.eff)) {
        /* issue 25: what the admitted deadline costs (MRM eq. 13's first term) */
        struct arbiter_shape sh = ledger__shape(l, c);
        double p = arbiter_price_at(&sh, q.eff, (double)(deadline - l->now) / 1000.0);
        j->price_milli = isfinite(p) && p > 0 && p < 1e12 ? (uint64_t)(p * 1000.0 + 0.5) : 0;
    }
    r->value = j->id;
    if (c->recurring[0] != '\0')
        ledger__recur_registered(l, j, c);
    ledger__inputs_read(l, c);
    ledger__arbitrate(l, vci, j->id); /* its minimum is reserved from now on */
    return 0;
}

/* Where the job's JM runs, when the command says (restarts, issue 14). */
static void ledger__job_where(struct ledger_job *j, const struct ledger_cmd *c)
{
    if (c->text2_len > 0 && c->text2_len < sizeof j->job_dir) {
        memcpy(j->job_dir, c->text2, c->text2_len);
        j->job_dir[c->text2_len] = '\0';
    }
    size_t alen = strlen(c->address);
    if (alen > 0 && alen < sizeof j->host)
        memcpy(j->host, c->address, alen + 1);
    if (c->boot_id != 0 && c->boot_id <= UINT32_MAX)
        j->jm_pid = (uint32_t)c->boot_id;
}

/* JOB_RESUME (issue 14): a JM started again for the job. A job that ended for good is not
 * resumed; an expired one (its lease lapsed) comes back to life, its history record undone. */
static int ledger__job_resume(ledger_t *l, const struct ledger_cmd *c, uint64_t *value)
{
    struct ledger_job *j = ledger__job_find(l, c->job, NULL);
    if (j == NULL)
        return ERR_NOTFOUND;
    if (j->state != LEDGER_JOB_ACTIVE && j->state != LEDGER_JOB_EXPIRED)
        return ERR_STATE;
    if (c->count != 0 && j->restarts >= c->count) {
        char why[LEDGER_REASON_MAX];
        snprintf(why, sizeof why, "its job manager was started again %u times (the limit)",
                 j->restarts);
        if (j->state == LEDGER_JOB_EXPIRED) {
            j->state = LEDGER_JOB_FAILED;
            ledger__history_refail(l, j, why);
        } else {
            struct ledger_cmd end;
            ledger_cmd_init(&end, LEDGER_CMD_JOB_END);
            end.text = why;
            end.text_len = (uint32_t)strlen(why);
            ledger__job_finish(l, j, LEDGER_JOB_FAILED, &end);
            ledger__arbitrate(l, j->vc, j->id);
        }
        return ERR_FULL;
    }
    if (j->state == LEDGER_JOB_EXPIRED) {
        ledger__history_unrecord(l, j);
        j->state = LEDGER_JOB_ACTIVE;
        j->finished_ms = 0;
        l->nfinished--;
    }
    j->epoch++;
    j->restarts++;
    ledger__job_where(j, c);
    j->lease_expiry_ms = l->now + j->lease_ms;
    j->asked = false; /* its new JM asks again; until then MinEDF's minimum stands */
    ledger__arbitrate(l, j->vc, j->id);
    *value = j->epoch;
    return 0;
}

static struct ledger_job *ledger__active_job(ledger_t *l, uint64_t id, int *rc)
{
    struct ledger_job *j = ledger__job_find(l, id, NULL);
    *rc = j == NULL ? ERR_NOTFOUND : j->state != LEDGER_JOB_ACTIVE ? ERR_STATE : 0;
    return *rc == 0 ? j : NULL;
}

int ledger__tick(ledger_t *l, uint64_t *value)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l->njobs; i++) {
        struct ledger_job *j = &l->jobs[i];
        if (j->state == LEDGER_JOB_ACTIVE && j->lease_expiry_ms <= l->now) {
            ledger__job_finish(l, j, LEDGER_JOB_EXPIRED, NULL);
            n++;
        }
    }
    /* a tick is also when MinEDF's minimums follow the clock: recompute them all */
    for (size_t v = 0; v < l->nvcs; v++)
        ledger__arbitrate(l, v, 0);
    ledger__job_gc(l);
    *value = n;
    return 0;
}

int ledger__job_cmd(ledger_t *l, const struct ledger_cmd *c, uint64_t *value)
{
    int rc = 0;
    if (c->type == LEDGER_CMD_JOB_RESUME)
        return ledger__job_resume(l, c, value);
    struct ledger_job *e = ledger__job_find(l, c->job, NULL);
    if (c->type == LEDGER_CMD_JOB_END && e != NULL && e->state == LEDGER_JOB_EXPIRED &&
        c->state == LEDGER_JOB_FAILED) {
        /* the leader gives up on a job whose JM is gone for good */
        char why[LEDGER_REASON_MAX];
        size_t n = c->text_len < sizeof why - 1 ? c->text_len : sizeof why - 1;
        memcpy(why, c->text != NULL ? c->text : "", n);
        why[n] = '\0';
        e->state = LEDGER_JOB_FAILED;
        ledger__history_refail(l, e, why);
        return 0;
    }
    struct ledger_job *j = ledger__active_job(l, c->job, &rc);
    if (j == NULL)
        return rc;
    size_t vci = j->vc;
    uint64_t id = j->id;
    switch (c->type) {
    case LEDGER_CMD_JOB_END:
        if (c->state < LEDGER_JOB_DONE || c->state > LEDGER_JOB_CANCELLED)
            return ERR_INVAL;
        ledger__job_finish(l, j, c->state, c);
        ledger__arbitrate(l, vci, id); /* its tokens go to the others */
        return 0;
    case LEDGER_CMD_JOB_DEADLINE: {
        if (c->deadline_ms < 0)
            return ERR_INVAL;
        /* issue 25: a tighter deadline (or a first one) goes through admission against the
           other admitted jobs; a looser one, or none, always passes */
        bool tighter =
            c->deadline_ms != 0 && (j->deadline_ms == 0 || c->deadline_ms < j->deadline_ms);
        /* k_milli comes with entry version 5: an older entry's change is applied as it was */
        if (tighter && c->k_milli != 0 && !j->best_effort && j->work_ms != 0 && j->width != 0 &&
            !j->reserved_run) {
            struct arbiter_shape rem = ledger__remain(j);
            struct ledger_cmd a;
            ledger_cmd_init(&a, LEDGER_CMD_JOB_REGISTER);
            a.deadline_ms = c->deadline_ms;
            a.k_milli = c->k_milli;
            a.fluid_admission = c->fluid_admission;
            a.pooled_calib = c->pooled_calib;
            memcpy(a.name, j->name, sizeof a.name); /* its own history (rm/calib.h) */
            a.work_ms = (uint64_t)(rem.work * 1000.0);
            a.work_sd_ms = (uint64_t)(rem.work_sd * 1000.0);
            a.path_ms = (uint64_t)(rem.path * 1000.0);
            a.path_sd_ms = (uint64_t)(rem.path_sd * 1000.0);
            a.width = j->width;
            a.flags = j->has_alpha ? LEDGER_JOB_HAS_ALPHA : 0;
            a.alpha_milli = j->alpha_milli;
            a.spread_milli = j->spread_milli;
            int64_t old = j->deadline_ms;
            j->deadline_ms = 0; /* judged as a newcomer: not part of the load it is judged by */
            struct ledger_result ar = {0, 0, 0};
            struct arbiter_quote q;
            int arc = a.work_ms > 0 ? ledger__admit(l, &a, vci, &ar, &q) : 0;
            j->deadline_ms = old;
            if (arc != 0) {
                *value = ar.value; /* the earliest feasible finish, ms from now */
                return arc;
            }
        }
        j->deadline_ms = c->deadline_ms;
        break;
    }
    case LEDGER_CMD_TOKEN_REQUEST:
        if (c->count > LEDGER_MAX_TOKENS)
            return ERR_RANGE;
        j->wanted = c->count;
        j->raw = c->raw <= LEDGER_MAX_TOKENS ? c->raw : 0;
        j->asked = true;
        j->lease_expiry_ms = l->now + j->lease_ms;
        break;
    case LEDGER_CMD_TOKEN_RELEASE:
        j->wanted = c->count < j->tokens ? j->tokens - c->count : 0;
        j->asked = true;
        break;
    case LEDGER_CMD_LEASE_RENEW:
        if (c->epoch != 0 && c->epoch < j->epoch)
            return ERR_FENCED; /* a stale JM's renewal changes nothing (issue 14) */
        if (c->lease_ms != 0 &&
            (c->lease_ms < LEDGER_LEASE_MIN_MS || c->lease_ms > LEDGER_LEASE_MAX_MS))
            return ERR_RANGE;
        if (c->done_permille > 1000 || c->eta_ms < 0 || c->eta_p95_ms < 0 ||
            c->count > LEDGER_MAX_TOKENS + 1)
            return ERR_RANGE;
        if (c->lease_ms != 0)
            j->lease_ms = c->lease_ms; /* the JM asked for another lease length */
        j->lease_expiry_ms = l->now + j->lease_ms;
        ledger__job_where(j, c);
        j->done_permille = c->done_permille;
        j->eta_ms = c->eta_ms;
        j->eta_p95_ms = c->eta_p95_ms;
        /* Most renewals change nothing the arbiter reads: the same demand and a minimum it
         * already has. Skipping them keeps a renewal O(1) instead of a sort of the cluster's
         * jobs; one whose MinEDF minimum moved with the clock or its progress arbitrates. */
        if (j->demand == c->count && ledger__minimum(l, j) == j->minimum &&
            !ledger__plan_moved(l, vci, l->vcs[vci].arbitrated_ms, l->now)) {
            *value = j->tokens;
            return 0;
        }
        j->demand = c->count;
        break;
    default:
        return ERR_INVAL;
    }
    ledger__arbitrate(l, vci, id);
    *value = ledger__job_find(l, id, NULL)->tokens;
    return 0;
}
