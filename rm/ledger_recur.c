/* ledger_recur.c - recurring jobs, their runs and the history, inside the ledger (Morpheus §3-7).
 *
 * Same discipline as ledger.c: a step function of the log, no clock, no I/O. The leader decides
 * when a period is due and what the model and the plan are (rm/rmserver_recur.c, with GLPK and
 * LowCost); the ledger checks and records: one run per period (RECUR_FIRE is refused for a period
 * already fired), one registration per run, every run's record in a bounded history. */
#include "rm/ledger.h"
#include "rm/ledger_internal.h"
#include "rm/period.h"
#include "rm/slo.h"

#include "common/err.h"
#include "common/mem.h"

#include <stdio.h>
#include <string.h>

#define LEDGER__SKIP_RECORDS 16 /* skipped periods recorded one by one after an outage */
#define LEDGER__SLO_RUNS     32 /* runs SLO inference looks at */

static void ledger__recur_close(struct ledger_recurring *r)
{
    mem_free(r->spec);
    mem_free(r->outputs);
    mem_free(r->sky_milli);
    mem_free(r->resv_milli);
    memset(r, 0, sizeof *r);
}

static void ledger__run_close(struct ledger_run *h)
{
    mem_free(h->sky_milli);
    memset(h, 0, sizeof *h);
}

void ledger__recur_free(ledger_t *l)
{
    for (size_t i = 0; i < l->nrecs; i++)
        ledger__recur_close(&l->recs[i]);
    mem_free(l->recs);
    for (size_t k = 0; k < l->hist_n; k++)
        ledger__run_close(&l->hist[(l->hist_head + k) % LEDGER_HISTORY_CAP]);
    mem_free(l->hist);
    l->recs = NULL;
    l->hist = NULL;
    l->nrecs = l->hist_n = l->hist_head = 0;
}

static struct ledger_recurring *ledger__recur_find(const ledger_t *l, const char *name, size_t *at)
{
    size_t lo = 0, hi = l->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->recs[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (at != NULL)
        *at = lo;
    return lo < l->nrecs && strcmp(l->recs[lo].name, name) == 0 ? &l->recs[lo] : NULL;
}

struct ledger_recurring *ledger__recur_by_id(const ledger_t *l, uint32_t id)
{
    for (size_t i = 0; i < l->nrecs && id != 0; i++)
        if (l->recs[i].id == id)
            return &l->recs[i];
    return NULL;
}

static void ledger__copy_text(char *dst, size_t cap, const char *src, uint32_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    if (n > 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
    for (size_t i = 0; i < n; i++) /* keep records printable */
        if ((unsigned char)dst[i] < 0x20)
            dst[i] = ' ';
}

static char *ledger__dup_text(const char *src, uint32_t len)
{
    char *p = mem_alloc((size_t)len + 1);
    if (p == NULL)
        return NULL;
    if (len > 0)
        memcpy(p, src, len);
    p[len] = '\0';
    return p;
}

/* ---- queries ---- */

size_t ledger_recurring_count(const ledger_t *l)
{
    return l->nrecs;
}

const struct ledger_recurring *ledger_recurring_at(const ledger_t *l, size_t i)
{
    return i < l->nrecs ? &l->recs[i] : NULL;
}

const struct ledger_recurring *ledger_recurring_find(const ledger_t *l, const char *name)
{
    return ledger__recur_find(l, name, NULL);
}

int64_t ledger_recurring_deadline(const struct ledger_recurring *r)
{
    return r->deadline_source != LEDGER_DEADLINE_NONE ? r->deadline_ms : 0;
}

/* Reserved milli-tokens at step k of an instance (k from the period's start). */
static uint32_t ledger__resv_step(const struct ledger_recurring *r, int64_t k)
{
    if (r->nresv == 0 || k < (int64_t)r->resv_first || k >= (int64_t)r->resv_first + r->nresv)
        return 0;
    return r->resv_milli[k - r->resv_first];
}

static uint32_t ledger__tokens(uint32_t milli)
{
    return (milli + 999) / 1000;
}

uint32_t ledger_recurring_reserved_at(const struct ledger_recurring *r, int64_t t)
{
    if (r->nresv == 0 || r->plan_step_ms == 0)
        return 0;
    int64_t idx = period_index(t, r->period_ms, r->offset_ms);
    if (idx < 0)
        return 0;
    int64_t k = (t - period_start(idx, r->period_ms, r->offset_ms)) / r->plan_step_ms;
    return ledger__tokens(ledger__resv_step(r, k));
}

uint32_t ledger_plan_at(const ledger_t *l, uint32_t vc, int64_t t)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < l->nrecs; i++)
        if (l->recs[i].vc == vc)
            sum += ledger_recurring_reserved_at(&l->recs[i], t);
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

size_t ledger_history_count(const ledger_t *l)
{
    return l->hist_n;
}

const struct ledger_run *ledger_history_at(const ledger_t *l, size_t i)
{
    return i < l->hist_n ? &l->hist[(l->hist_head + i) % LEDGER_HISTORY_CAP] : NULL;
}

const char *ledger_outcome_name(uint8_t outcome)
{
    static const char *const names[] = {"?",       "succeeded",   "failed", "cancelled",
                                        "expired", "not_started", "skipped"};
    return outcome <= LEDGER_RUN_SKIPPED ? names[outcome] : "?";
}

/* ---- the history ---- */

/* A new record at the end of the ring (the oldest is forgotten when full); NULL on ERR_NOMEM. */
static struct ledger_run *ledger__history_push(ledger_t *l)
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

static void ledger__history_recur(ledger_t *l, const struct ledger_recurring *r, int64_t period,
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
static void ledger__infer(ledger_t *l, struct ledger_recurring *r)
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

/* ---- registration of runs and consumption of outputs ---- */

int ledger__recur_check(const ledger_t *l, const struct ledger_cmd *c, bool *reserved,
                        int64_t *deadline)
{
    *reserved = false;
    *deadline = c->deadline_ms;
    if (c->recurring[0] == '\0')
        return 0;
    const struct ledger_recurring *r = ledger__recur_find(l, c->recurring, NULL);
    if (r == NULL)
        return ERR_NOTFOUND;
    if (r->pend_period != c->period || r->pend_job != 0)
        return ERR_EXISTS; /* not the run that is due, or registered already */
    int64_t ps = period_start(c->period, r->period_ms, r->offset_ms);
    int64_t d = ledger_recurring_deadline(r);
    *deadline = d != 0 ? ps + d : 0;
    *reserved = r->nresv > 0 && d != 0;
    return 0;
}

void ledger__recur_registered(ledger_t *l, struct ledger_job *j, const struct ledger_cmd *c)
{
    struct ledger_recurring *r = ledger__recur_find(l, c->recurring, NULL);
    if (r == NULL)
        return;
    j->recur = r->id;
    j->period = c->period;
    r->pend_job = j->id;
    r->pend_reason[0] = '\0';
}

/* Whether path (len bytes) is one of the newline-separated files in list. */
static bool ledger__listed(const char *list, const char *path, size_t len)
{
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *e = strchr(p, '\n');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        if (n == len && memcmp(p, path, n) == 0)
            return true;
        p = e != NULL ? e + 1 : NULL;
    }
    return false;
}

void ledger__inputs_read(ledger_t *l, const struct ledger_cmd *c)
{
    if (c->text_len == 0 || l->nrecs == 0)
        return;
    for (size_t i = 0; i < l->nrecs; i++) {
        struct ledger_recurring *r = &l->recs[i];
        if (r->outputs == NULL || r->outputs[0] == '\0' || strcmp(r->name, c->recurring) == 0)
            continue;
        bool reads = false;
        for (uint32_t p = 0; p < c->text_len && !reads;) {
            uint32_t e = p;
            while (e < c->text_len && c->text[e] != '\n')
                e++;
            reads = e > p && ledger__listed(r->outputs, c->text + p, e - p);
            p = e + 1;
        }
        if (!reads)
            continue;
        /* T_outRead of its latest successful run that nobody has read yet (Morpheus §4) */
        for (size_t k = l->hist_n; k-- > 0;) {
            struct ledger_run *h = &l->hist[(l->hist_head + k) % LEDGER_HISTORY_CAP];
            if (strcmp(h->recurring, r->name) != 0 || h->outcome != LEDGER_RUN_SUCCEEDED)
                continue;
            if (h->out_read_ms == 0 && h->end_ms <= l->now) {
                h->out_read_ms = l->now;
                ledger__infer(l, r);
            }
            break;
        }
    }
}

/* ---- the arbiter's inputs ---- */

void ledger__recur_arb(const ledger_t *l, const struct ledger_job *j, struct arbiter_job *a)
{
    const struct ledger_recurring *r = ledger__recur_by_id(l, j->recur);
    if (r == NULL || r->nresv == 0 || r->plan_step_ms == 0)
        return;
    int64_t ps = period_start(j->period, r->period_ms, r->offset_ms);
    if (l->now < ps)
        return;
    int64_t k = (l->now - ps) / r->plan_step_ms;
    uint32_t reserved =
        k < r->period_ms / r->plan_step_ms ? ledger__tokens(ledger__resv_step(r, k)) : 0;
    /* Morpheus §7: R_recent is the reservation of the last few steps; past the reservation's
     * end (a late run) its last steps */
    int64_t last = (int64_t)r->resv_first + r->nresv - 1;
    int64_t hi = k < last ? k : last;
    uint32_t recent = 0;
    for (int64_t s = hi - LEDGER_REPROV_WINDOW + 1; s <= hi; s++) {
        uint32_t v = ledger__tokens(ledger__resv_step(r, s));
        recent = v > recent ? v : recent;
    }
    uint64_t cap = (uint64_t)recent * r->rho_milli / 1000;
    uint32_t ask = j->wanted;
    uint64_t upto = ask < cap ? ask : cap;
    a->reserved = reserved;
    a->extra = upto > reserved ? (uint32_t)(upto - reserved) : 0;
    if (reserved > 0)
        a->minimum = reserved; /* the reservation stands for MinEDF's minimum */
}

uint32_t ledger__held_back(const ledger_t *l, size_t vci)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < l->nrecs; i++) {
        const struct ledger_recurring *r = &l->recs[i];
        if (r->vc != vci || r->nresv == 0)
            continue;
        int64_t idx = period_index(l->now, r->period_ms, r->offset_ms);
        if (idx < 0)
            continue;
        if (r->pend_job != 0 && r->pend_period == idx)
            continue; /* its run is here: the reservation is its own */
        sum += ledger_recurring_reserved_at(r, l->now);
    }
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

bool ledger__plan_moved(const ledger_t *l, size_t vci, int64_t a, int64_t b)
{
    for (size_t i = 0; i < l->nrecs; i++) {
        const struct ledger_recurring *r = &l->recs[i];
        if (r->vc == vci && r->nresv > 0 && r->plan_step_ms > 0 &&
            (a - r->offset_ms) / r->plan_step_ms != (b - r->offset_ms) / r->plan_step_ms)
            return true;
    }
    return false;
}

int ledger__plan_reserve(const ledger_t *l, size_t vci, int64_t now, double **tp, double **tokp,
                         size_t *np)
{
    *tp = *tokp = NULL;
    *np = 0;
    int64_t step = 0, span = 0;
    for (size_t i = 0; i < l->nrecs; i++) {
        const struct ledger_recurring *r = &l->recs[i];
        if (r->vc != vci || r->nresv == 0)
            continue;
        step = step == 0 || r->plan_step_ms < step ? r->plan_step_ms : step;
        span = 2 * r->period_ms > span ? 2 * r->period_ms : span;
    }
    if (step <= 0)
        return 0;
    size_t nsteps = (size_t)(span / step);
    nsteps = nsteps > 8192 ? 8192 : nsteps < 1 ? 1 : nsteps;
    double *t = mem_alloc((nsteps + 1) * sizeof *t);
    double *tok = mem_alloc((nsteps + 1) * sizeof *tok);
    if (t == NULL || tok == NULL) {
        mem_free(t);
        mem_free(tok);
        return ERR_NOMEM;
    }
    size_t n = 0;
    double mean = 0;
    int64_t base = now - (now % step);
    for (size_t k = 0; k < nsteps; k++) {
        int64_t at = base + (int64_t)k * step;
        double v = ledger_plan_at(l, (uint32_t)vci, at > now ? at : now);
        mean += v / (double)nsteps;
        if (n > 0 && tok[n - 1] == v)
            continue;
        t[n] = k == 0 ? 0 : (double)(at - now) / 1000.0;
        tok[n++] = v;
    }
    /* beyond the span: the plan's mean, which repeats */
    t[n] = (double)(base + (int64_t)nsteps * step - now) / 1000.0;
    tok[n++] = mean;
    *tp = t;
    *tokp = tok;
    *np = n;
    return 0;
}

/* ---- commands ---- */

static int ledger__recur_add(ledger_t *l, const struct ledger_cmd *c)
{
    size_t vci = 0, at = 0;
    if (c->name[0] == '\0' || c->period_ms < 1000 || c->period_ms > (1ll << 40) ||
        c->offset_ms < 0 || c->offset_ms > (1ll << 50) || c->deadline_ms < 0 ||
        c->deadline_ms > c->period_ms || c->text_len == 0 || c->text_len > LEDGER_SPEC_MAX ||
        c->text2_len > LEDGER_FILES_MAX || c->weight_milli > 100000)
        return ERR_INVAL;
    if (ledger__vc_find(l, c->vc, &vci) == NULL)
        return ERR_NOTFOUND;
    if (ledger__recur_find(l, c->name, &at) != NULL)
        return ERR_EXISTS;
    if (l->nrecs >= LEDGER_MAX_RECURRING)
        return ERR_FULL;
    if (l->recs == NULL && (l->recs = mem_calloc(LEDGER_MAX_RECURRING, sizeof *l->recs)) == NULL)
        return ERR_NOMEM;
    struct ledger_recurring r;
    memset(&r, 0, sizeof r);
    r.spec = ledger__dup_text(c->text, c->text_len);
    r.outputs = ledger__dup_text(c->text2, c->text2_len);
    if (r.spec == NULL || r.outputs == NULL) {
        ledger__recur_close(&r);
        return ERR_NOMEM;
    }
    r.id = ++l->next_recur_id;
    memcpy(r.name, c->name, sizeof r.name);
    r.vc = (uint32_t)vci;
    r.period_ms = c->period_ms;
    r.offset_ms = c->offset_ms;
    r.deadline_ms = c->deadline_ms;
    r.deadline_source = c->deadline_ms != 0 ? LEDGER_DEADLINE_USER : LEDGER_DEADLINE_NONE;
    r.created_ms = l->now;
    /* the instance under way when it was added has begun without it: the next one is first */
    r.last_fired = period_index(l->now, c->period_ms, c->offset_ms);
    r.pend_period = -1;
    r.rho_milli = c->weight_milli != 0 ? c->weight_milli : LEDGER_RHO_DEFAULT;
    memmove(&l->recs[at + 1], &l->recs[at], (l->nrecs - at) * sizeof *l->recs);
    l->recs[at] = r;
    l->nrecs++;
    return 0;
}

static int ledger__recur_fire(ledger_t *l, struct ledger_recurring *r, int64_t period)
{
    int64_t due = period_index(l->now, r->period_ms, r->offset_ms);
    if (period <= r->last_fired)
        return ERR_EXISTS;
    if (r->paused || r->pend_period >= 0 || period > due)
        return ERR_STATE;
    /* periods between the last fired and this one were missed (the cluster was down, or the
     * previous run outlasted several periods): recorded, not run */
    for (int64_t p = r->last_fired + 1; p < period; p++) {
        if (p - r->last_fired > LEDGER__SKIP_RECORDS) {
            char why[LEDGER_REASON_MAX];
            snprintf(why, sizeof why, "%lld periods skipped up to here", (long long)(period - p));
            ledger__history_recur(l, r, period - 1, LEDGER_RUN_SKIPPED, why);
            break;
        }
        ledger__history_recur(l, r, p, LEDGER_RUN_SKIPPED,
                              "not run: no run could start in its period (the cluster was down "
                              "or the run before it still ran)");
    }
    r->last_fired = period;
    r->pend_period = period;
    r->pend_job = 0;
    r->pend_fired_ms = l->now;
    r->pend_launch_ms = 0;
    r->pend_launches = 0;
    r->pend_reason[0] = '\0';
    return 0;
}

static int ledger__recur_note(ledger_t *l, struct ledger_recurring *r, const struct ledger_cmd *c)
{
    if (r->pend_period != c->period || r->pend_job != 0)
        return ERR_STATE;
    switch (c->state) {
    case 1: /* launched */
        r->pend_launches++;
        r->pend_launch_ms = l->now;
        return 0;
    case 2: /* a launch failed */
        ledger__copy_text(r->pend_reason, sizeof r->pend_reason, c->text, c->text_len);
        memcpy(r->last_error, r->pend_reason, sizeof r->last_error);
        return 0;
    case 3: { /* the leader gave up */
        char why[LEDGER_REASON_MAX];
        ledger__copy_text(why, sizeof why, c->text, c->text_len);
        memcpy(r->last_error, why, sizeof r->last_error);
        ledger__history_recur(l, r, r->pend_period, LEDGER_RUN_NOT_STARTED, why);
        r->pend_period = -1;
        r->pend_launches = 0;
        r->runs++;
        if (ledger_recurring_deadline(r) != 0)
            r->missed++;
        return 0;
    }
    default:
        return ERR_INVAL;
    }
}

static int ledger__recur_model(struct ledger_recurring *r, const struct ledger_cmd *c)
{
    if (c->count != r->generation)
        return ERR_STATE; /* computed for an older generation: the leader tries again */
    if (c->nvals > 0 && (c->width == 0 || c->nvals > LEDGER_VALS_MAX))
        return ERR_INVAL;
    if (c->nvals2 > 0 && (c->cpus_milli == 0 ||
                          (uint64_t)c->mem_mb + c->nvals2 > (uint64_t)r->period_ms / c->cpus_milli))
        return ERR_INVAL;
    uint32_t *sky = NULL, *resv = NULL;
    if (c->nvals > 0 && (sky = mem_alloc(c->nvals * sizeof *sky)) == NULL)
        return ERR_NOMEM;
    if (c->nvals2 > 0 && (resv = mem_alloc(c->nvals2 * sizeof *resv)) == NULL) {
        mem_free(sky);
        return ERR_NOMEM;
    }
    if (sky != NULL)
        memcpy(sky, c->vals, c->nvals * sizeof *sky);
    if (resv != NULL)
        memcpy(resv, c->vals2, c->nvals2 * sizeof *resv);
    mem_free(r->sky_milli);
    mem_free(r->resv_milli);
    r->sky_milli = sky;
    r->nsky = c->nvals;
    r->sky_step_ms = c->width;
    r->resv_milli = resv;
    r->nresv = c->nvals2;
    r->plan_step_ms = c->cpus_milli;
    r->resv_first = c->mem_mb;
    r->model_gen = c->count;
    ledger__copy_text(r->model_note, sizeof r->model_note, c->text, c->text_len);
    if (c->state == 1)
        memcpy(r->last_error, r->model_note, sizeof r->last_error);
    return 0;
}

int ledger__recur_cmd(ledger_t *l, const struct ledger_cmd *c, struct ledger_result *res)
{
    if (c->type == LEDGER_CMD_RECUR_ADD)
        return ledger__recur_add(l, c);
    size_t at = 0;
    struct ledger_recurring *r = ledger__recur_find(l, c->name, &at);
    if (r == NULL)
        return ERR_NOTFOUND;
    switch (c->type) {
    case LEDGER_CMD_RECUR_PAUSE:
        if (c->count > 1)
            return ERR_INVAL;
        if (r->paused && c->count == 0) {
            /* periods that passed while paused are not caught up */
            int64_t idx = period_index(l->now, r->period_ms, r->offset_ms);
            r->last_fired = idx > r->last_fired ? idx : r->last_fired;
        }
        r->paused = c->count != 0;
        return 0;
    case LEDGER_CMD_RECUR_REMOVE: {
        /* a run under way finishes as an ordinary job */
        for (size_t i = 0; i < l->njobs; i++)
            if (l->jobs[i].recur == r->id)
                l->jobs[i].recur = 0;
        uint32_t vc = r->vc;
        ledger__recur_close(r);
        memmove(&l->recs[at], &l->recs[at + 1], (l->nrecs - at - 1) * sizeof *l->recs);
        l->nrecs--;
        ledger__arbitrate(l, vc, 0); /* its reservation is free */
        return 0;
    }
    case LEDGER_CMD_RECUR_ACCEPT:
        if (r->slo_source == SLO_NONE || r->slo_deadline_ms <= 0)
            return ERR_STATE;
        r->deadline_ms = r->slo_deadline_ms < r->period_ms ? r->slo_deadline_ms : r->period_ms;
        r->deadline_source = LEDGER_DEADLINE_INFERRED;
        r->generation++;
        res->value = (uint64_t)r->deadline_ms;
        return 0;
    case LEDGER_CMD_RECUR_FIRE:
        return ledger__recur_fire(l, r, c->period);
    case LEDGER_CMD_RECUR_NOTE:
        return ledger__recur_note(l, r, c);
    case LEDGER_CMD_RECUR_MODEL: {
        int rc = ledger__recur_model(r, c);
        if (rc == 0)
            ledger__arbitrate(l, r->vc, 0); /* the plan changed */
        return rc;
    }
    default:
        return ERR_INVAL;
    }
}

/* ---- snapshots ---- */

static int ledger__dec_vals(struct enc_reader *r, uint32_t max, uint32_t **out, uint32_t *n)
{
    *out = NULL;
    *n = enc_get_u32s_count(r, max);
    if (*n == 0)
        return enc_reader_err(r) != 0 ? ERR_PARSE : 0;
    if ((*out = mem_alloc(*n * sizeof **out)) == NULL)
        return ERR_NOMEM;
    for (uint32_t i = 0; i < *n; i++)
        (*out)[i] = enc_get_u32(r);
    return 0;
}

static void ledger__enc_double(struct enc_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    enc_u64(b, u);
}

static double ledger__dec_double(struct enc_reader *r)
{
    uint64_t u = enc_get_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

void ledger__recur_snap(const ledger_t *l, struct enc_buf *b)
{
    enc_u32(b, l->next_recur_id);
    enc_u32(b, (uint32_t)l->nrecs);
    for (size_t i = 0; i < l->nrecs; i++) {
        const struct ledger_recurring *r = &l->recs[i];
        enc_u32(b, r->id);
        enc_str(b, r->name);
        enc_u32(b, r->vc);
        enc_i64(b, r->period_ms);
        enc_i64(b, r->offset_ms);
        enc_i64(b, r->deadline_ms);
        enc_u8(b, r->deadline_source);
        enc_u8(b, r->paused ? 1 : 0);
        enc_i64(b, r->created_ms);
        enc_i64(b, r->last_fired);
        enc_blob(b, r->spec, (uint32_t)strlen(r->spec));
        enc_blob(b, r->outputs, (uint32_t)strlen(r->outputs));
        enc_i64(b, r->pend_period);
        enc_u64(b, r->pend_job);
        enc_i64(b, r->pend_fired_ms);
        enc_i64(b, r->pend_launch_ms);
        enc_u32(b, r->pend_launches);
        enc_str(b, r->pend_reason);
        enc_u32(b, r->runs);
        enc_u32(b, r->met);
        enc_u32(b, r->missed);
        enc_u8(b, r->slo_source);
        enc_i64(b, r->slo_deadline_ms);
        enc_u32(b, r->slo_runs);
        enc_u32(b, r->slo_consumed);
        ledger__enc_double(b, r->slo_read_cv);
        ledger__enc_double(b, r->slo_slack_ratio);
        enc_i64(b, r->slo_read_median_ms);
        enc_i64(b, r->slo_end_pct_ms);
        enc_u32(b, r->generation);
        enc_u32(b, r->model_gen);
        enc_u32(b, r->sky_step_ms);
        enc_u32s(b, r->sky_milli, r->nsky);
        enc_u32(b, r->plan_step_ms);
        enc_u32(b, r->resv_first);
        enc_u32s(b, r->resv_milli, r->nresv);
        enc_u32(b, r->rho_milli);
        enc_str(b, r->model_note);
        enc_str(b, r->last_error);
    }
    enc_u32(b, (uint32_t)l->hist_n);
    for (size_t k = 0; k < l->hist_n; k++) {
        const struct ledger_run *h = ledger_history_at(l, k);
        if (h == NULL)
            continue;
        enc_u64(b, h->job);
        enc_str(b, h->name);
        enc_str(b, h->recurring);
        enc_i64(b, h->period);
        enc_u8(b, h->outcome);
        enc_u32(b, h->vc);
        enc_i64(b, h->submit_ms);
        enc_i64(b, h->start_ms);
        enc_i64(b, h->end_ms);
        enc_i64(b, h->deadline_ms);
        enc_i64(b, h->period_start_ms);
        enc_u64(b, h->token_ms);
        enc_i64(b, h->out_read_ms);
        enc_u32(b, h->reprovisioned);
        enc_u32(b, h->sky_step_ms);
        enc_u32s(b, h->sky_milli, h->nsky);
        enc_str(b, h->reason);
    }
}

int ledger__recur_restore(ledger_t *l, struct enc_reader *rd, char *msg, size_t cap)
{
    l->next_recur_id = enc_get_u32(rd);
    uint32_t n = enc_get_u32(rd);
    if (n > LEDGER_MAX_RECURRING || (size_t)n * 64 > enc_reader_left(rd))
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad recurring count");
    if (n > 0 && (l->recs = mem_calloc(LEDGER_MAX_RECURRING, sizeof *l->recs)) == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
    for (uint32_t i = 0; i < n && enc_reader_err(rd) == 0; i++) {
        struct ledger_recurring *r = &l->recs[i];
        l->nrecs++; /* so that a failure below frees what it holds */
        r->id = enc_get_u32(rd);
        enc_get_str(rd, r->name, sizeof r->name);
        r->vc = enc_get_u32(rd);
        r->period_ms = enc_get_i64(rd);
        r->offset_ms = enc_get_i64(rd);
        r->deadline_ms = enc_get_i64(rd);
        r->deadline_source = enc_get_u8(rd);
        r->paused = enc_get_u8(rd) != 0;
        r->created_ms = enc_get_i64(rd);
        r->last_fired = enc_get_i64(rd);
        uint32_t len = 0;
        const char *spec = enc_get_blob(rd, LEDGER_SPEC_MAX, &len);
        r->spec = ledger__dup_text(spec, len);
        const char *outs = enc_get_blob(rd, LEDGER_FILES_MAX, &len);
        r->outputs = ledger__dup_text(outs, len);
        r->pend_period = enc_get_i64(rd);
        r->pend_job = enc_get_u64(rd);
        r->pend_fired_ms = enc_get_i64(rd);
        r->pend_launch_ms = enc_get_i64(rd);
        r->pend_launches = enc_get_u32(rd);
        enc_get_str(rd, r->pend_reason, sizeof r->pend_reason);
        r->runs = enc_get_u32(rd);
        r->met = enc_get_u32(rd);
        r->missed = enc_get_u32(rd);
        r->slo_source = enc_get_u8(rd);
        r->slo_deadline_ms = enc_get_i64(rd);
        r->slo_runs = enc_get_u32(rd);
        r->slo_consumed = enc_get_u32(rd);
        r->slo_read_cv = ledger__dec_double(rd);
        r->slo_slack_ratio = ledger__dec_double(rd);
        r->slo_read_median_ms = enc_get_i64(rd);
        r->slo_end_pct_ms = enc_get_i64(rd);
        r->generation = enc_get_u32(rd);
        r->model_gen = enc_get_u32(rd);
        r->sky_step_ms = enc_get_u32(rd);
        int rc = ledger__dec_vals(rd, LEDGER_VALS_MAX, &r->sky_milli, &r->nsky);
        r->plan_step_ms = enc_get_u32(rd);
        r->resv_first = enc_get_u32(rd);
        if (rc == 0)
            rc = ledger__dec_vals(rd, LEDGER_VALS_MAX, &r->resv_milli, &r->nresv);
        r->rho_milli = enc_get_u32(rd);
        enc_get_str(rd, r->model_note, sizeof r->model_note);
        enc_get_str(rd, r->last_error, sizeof r->last_error);
        if (rc == ERR_NOMEM || r->spec == NULL || r->outputs == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        if (enc_reader_err(rd) != 0)
            break;
        if (r->id == 0 || r->id > l->next_recur_id || r->name[0] == '\0' || r->vc >= l->nvcs ||
            r->period_ms < 1000 || r->deadline_source > LEDGER_DEADLINE_INFERRED ||
            (r->nresv > 0 && r->plan_step_ms == 0) ||
            (i > 0 && strcmp(l->recs[i - 1].name, r->name) >= 0))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad recurring job %u", i);
    }
    uint32_t nh = enc_get_u32(rd);
    if (nh > LEDGER_HISTORY_CAP || (size_t)nh * 80 > enc_reader_left(rd))
        return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad history count");
    for (uint32_t k = 0; k < nh && enc_reader_err(rd) == 0; k++) {
        struct ledger_run *h = ledger__history_push(l);
        if (h == NULL)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        h->job = enc_get_u64(rd);
        enc_get_str(rd, h->name, sizeof h->name);
        enc_get_str(rd, h->recurring, sizeof h->recurring);
        h->period = enc_get_i64(rd);
        h->outcome = enc_get_u8(rd);
        h->vc = enc_get_u32(rd);
        h->submit_ms = enc_get_i64(rd);
        h->start_ms = enc_get_i64(rd);
        h->end_ms = enc_get_i64(rd);
        h->deadline_ms = enc_get_i64(rd);
        h->period_start_ms = enc_get_i64(rd);
        h->token_ms = enc_get_u64(rd);
        h->out_read_ms = enc_get_i64(rd);
        h->reprovisioned = enc_get_u32(rd);
        h->sky_step_ms = enc_get_u32(rd);
        if (ledger__dec_vals(rd, LEDGER_VALS_MAX, &h->sky_milli, &h->nsky) == ERR_NOMEM)
            return err_fmt(msg, cap, ERR_NOMEM, "snapshot: out of memory");
        enc_get_str(rd, h->reason, sizeof h->reason);
        if (enc_reader_err(rd) == 0 &&
            (h->outcome < LEDGER_RUN_SUCCEEDED || h->outcome > LEDGER_RUN_SKIPPED))
            return err_fmt(msg, cap, ERR_PARSE, "snapshot: bad history record %u", k);
    }
    return 0;
}
