/* ledger_recur_history.c - the ledger's history of runs, recurring or not: a bounded ring of
 * records (the oldest forgotten when full), a record per finished job and per run that never
 * became one, corrections when a job's end is undone or re-failed, and SLO inference over a
 * recurring job's last runs (rm/slo.h). No clock, no I/O. */
#include "rm/ledger_recur_internal.h"
#include "rm/period.h"
#include "rm/slo.h"

#include "common/err.h"
#include "common/mem.h"

#include <stdio.h>
#include <string.h>

/* ---- the history ---- */

/* A new record at the end of the ring (the oldest is forgotten when full); NULL on ERR_NOMEM. */
struct ledger_run *ledger__history_push(ledger_t *l)
{
    if (l->hist == NULL && (l->hist = mem_calloc(LEDGER_HISTORY_CAP, sizeof *l->hist)) == NULL)
        return NULL;
    struct ledger_run *h;
    if (l->hist_n == LEDGER_HISTORY_CAP) {
        h = &l->hist[l->hist_head];
        ledger__run_close(h);
        l->hist_head = (l->hist_head + 1) % LEDGER_HISTORY_CAP;
    } else {
        h = &l->hist[(l->hist_head + l->hist_n) % LEDGER_HISTORY_CAP];
        l->hist_n++;
    }
    memset(h, 0, sizeof *h);
    h->period = -1;
    return h;
}

void ledger__history_recur(ledger_t *l, const struct ledger_recurring *r, int64_t period,
                           uint8_t outcome, const char *reason)
{
    struct ledger_run *h = ledger__history_push(l);
    if (h == NULL)
        return;
    memcpy(h->name, r->name, sizeof h->name);
    memcpy(h->recurring, r->name, sizeof h->recurring);
    h->period = period;
    h->outcome = outcome;
    h->vc = r->vc;
    h->period_start_ms = period_start(period, r->period_ms, r->offset_ms);
    /* never submitted: the record is dated by its period, and ends when it was given up */
    h->submit_ms = outcome == LEDGER_RUN_SKIPPED ? h->period_start_ms : r->pend_fired_ms;
    if (h->submit_ms <= 0 || h->submit_ms > l->now)
        h->submit_ms = l->now;
    h->end_ms = l->now;
    int64_t d = ledger_recurring_deadline(r);
    h->deadline_ms = d != 0 ? h->period_start_ms + d : 0;
    snprintf(h->reason, sizeof h->reason, "%s", reason);
}

/* SLO inference (rm/slo.h) over the recurring job's last runs. */
void ledger__infer(ledger_t *l, struct ledger_recurring *r)
{
    struct slo_run runs[LEDGER__SLO_RUNS];
    size_t n = 0;
    for (size_t k = l->hist_n; k-- > 0 && n < LEDGER__SLO_RUNS;) {
        const struct ledger_run *h = ledger_history_at(l, k);
        if (h == NULL)
            continue;
        if (strcmp(h->recurring, r->name) != 0 || h->period < 0)
            continue;
        if (h->outcome != LEDGER_RUN_SUCCEEDED && h->outcome != LEDGER_RUN_FAILED)
            continue;
        int64_t ps = h->period_start_ms;
        runs[n].start = (h->start_ms != 0 ? h->start_ms : h->submit_ms) - ps;
        runs[n].end = h->end_ms - ps;
        runs[n].out_read = h->out_read_ms != 0 ? h->out_read_ms - ps : -1;
        runs[n].ok = h->outcome == LEDGER_RUN_SUCCEEDED;
        n++;
    }
    struct slo_params p;
    struct slo_inference inf;
    slo_params_default(&p);
    if (slo_infer(runs, n, &p, &inf) != 0)
        return;
    r->slo_source = inf.source;
    r->slo_deadline_ms = inf.deadline;
    r->slo_runs = inf.runs;
    r->slo_consumed = inf.consumed;
    r->slo_read_cv = inf.read_cv;
    r->slo_slack_ratio = inf.slack_ratio;
    r->slo_read_median_ms = inf.read_median;
    r->slo_end_pct_ms = inf.end_pct;
}

void ledger__history_job(ledger_t *l, const struct ledger_job *j, const struct ledger_cmd *end)
{
    struct ledger_recurring *r = ledger__recur_by_id(l, j->recur);
    struct ledger_run *h = ledger__history_push(l);
    if (h != NULL) {
        h->job = j->id;
        memcpy(h->name, j->name, sizeof h->name);
        h->vc = j->vc;
        h->outcome = j->state == LEDGER_JOB_DONE        ? LEDGER_RUN_SUCCEEDED
                     : j->state == LEDGER_JOB_FAILED    ? LEDGER_RUN_FAILED
                     : j->state == LEDGER_JOB_CANCELLED ? LEDGER_RUN_CANCELLED
                                                        : LEDGER_RUN_EXPIRED;
        h->submit_ms = j->submitted_ms;
        h->end_ms = j->finished_ms;
        h->deadline_ms = j->deadline_ms;
        h->reprovisioned = j->reprovisioned;
        if (end != NULL) {
            h->start_ms = end->started_ms > 0 && end->started_ms <= l->now ? end->started_ms : 0;
            h->token_ms = end->token_ms;
            if (end->nvals > 0 && end->step_ms > 0 &&
                (h->sky_milli = mem_alloc(end->nvals * sizeof *h->sky_milli)) != NULL) {
                memcpy(h->sky_milli, end->vals, end->nvals * sizeof *h->sky_milli);
                h->nsky = end->nvals;
                h->sky_step_ms = end->step_ms;
            }
            ledger__copy_text(h->reason, sizeof h->reason, end->text, end->text_len);
        } else {
            snprintf(h->reason, sizeof h->reason, "its job manager's lease ran out");
        }
        if (r != NULL) {
            memcpy(h->recurring, r->name, sizeof h->recurring);
            h->period = j->period;
            h->period_start_ms = period_start(j->period, r->period_ms, r->offset_ms);
        }
    }
    if (r == NULL || r->pend_job != j->id)
        return;
    r->pend_period = -1;
    r->pend_job = 0;
    r->pend_launches = 0;
    r->pend_reason[0] = '\0';
    r->runs++;
    if (j->deadline_ms != 0 && j->state == LEDGER_JOB_DONE && j->finished_ms <= j->deadline_ms)
        r->met++;
    else if (j->deadline_ms != 0)
        r->missed++;
    if (j->state == LEDGER_JOB_DONE)
        r->generation++; /* a new skyline: the leader refits R* and replans */
    ledger__infer(l, r);
}

/* The newest record of job id, NULL when none; *at receives its position (0 oldest). */
static struct ledger_run *ledger__history_of(ledger_t *l, uint64_t job, size_t *at)
{
    for (size_t k = l->hist_n; k-- > 0;) {
        struct ledger_run *h = &l->hist[(l->hist_head + k) % LEDGER_HISTORY_CAP];
        if (h->job == job) {
            *at = k;
            return h;
        }
    }
    return NULL;
}

void ledger__history_unrecord(ledger_t *l, const struct ledger_job *j)
{
    size_t at = 0;
    struct ledger_run *h = ledger__history_of(l, j->id, &at);
    if (h == NULL || h->outcome != LEDGER_RUN_EXPIRED)
        return;
    bool counted_missed = h->deadline_ms != 0;
    ledger__run_close(h);
    for (size_t k = at; k + 1 < l->hist_n; k++) /* rare: shift the newer ones down */
        l->hist[(l->hist_head + k) % LEDGER_HISTORY_CAP] =
            l->hist[(l->hist_head + k + 1) % LEDGER_HISTORY_CAP];
    memset(&l->hist[(l->hist_head + l->hist_n - 1) % LEDGER_HISTORY_CAP], 0, sizeof *h);
    l->hist_n--;
    struct ledger_recurring *r = ledger__recur_by_id(l, j->recur);
    if (r != NULL && r->pend_period < 0 && r->last_fired == j->period) {
        r->pend_period = j->period;
        r->pend_job = j->id;
        r->runs = r->runs > 0 ? r->runs - 1 : 0;
        if (counted_missed && r->missed > 0)
            r->missed--;
    }
}

void ledger__history_refail(ledger_t *l, const struct ledger_job *j, const char *reason)
{
    size_t at = 0;
    struct ledger_run *h = ledger__history_of(l, j->id, &at);
    if (h == NULL)
        return;
    h->outcome = LEDGER_RUN_FAILED;
    snprintf(h->reason, sizeof h->reason, "%s", reason);
}
