/* ledger_recur.c - recurring jobs, their runs and the history, inside the ledger (Morpheus §3-7).
 *
 * Same discipline as ledger.c: a step function of the log, no clock, no I/O. The leader decides
 * when a period is due and what the model and the plan are (rm/rmserver_recur.c, with GLPK and
 * LowCost); the ledger checks and records: one run per period (RECUR_FIRE is refused for a period
 * already fired), one registration per run, every run's record in a bounded history.
 *
 * The history of runs is kept in ledger_recur_history.c, the snapshot's part in
 * ledger_recur_snap.c. */
#include "rm/ledger_recur_internal.h"
#include "rm/period.h"
#include "rm/slo.h"

#include "common/err.h"
#include "common/mem.h"

#include <stdio.h>
#include <string.h>

#define LEDGER__SKIP_RECORDS 16 /* skipped periods recorded one by one after an outage */

static void ledger__recur_close(struct ledger_recurring *r)
{
    mem_free(r->spec);
    mem_free(r->outputs);
    mem_free(r->sky_milli);
    mem_free(r->resv_milli);
    memset(r, 0, sizeof *r);
}

void ledger__run_close(struct ledger_run *h)
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

void ledger__copy_text(char *dst, size_t cap, const char *src, uint32_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    if (n > 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
    for (size_t i = 0; i < n; i++) /* keep records printable */
        if ((unsigned char)dst[i] < 0x20)
            dst[i] = ' ';
}

char *ledger__dup_text(const char *src, uint32_t len)
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
