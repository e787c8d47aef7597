/* rmserver_recur.c - recurring jobs on the leader: firing each period once, fitting R* and placing
 * it in the plan. Launching a run's job manager is in rmserver_recur_launch.c, the admin queries
 * in rmserver_recur_admin.c.
 *
 * The ledger (rm/ledger_recur.c) decides nothing by itself about time: the leader proposes
 * RECUR_FIRE when a period is due (the ledger refuses a period fired already, so a new leader
 * repeating it is harmless), launches the run's paddock-jm (a relaunch after launch_retry is
 * harmless too: the ledger registers one JM per run), and proposes RECUR_MODEL with R* fitted
 * by the LP (rm/skyline.h) and the reservation placed by LowCost (rm/lowcost.h). */
#include "rm/rmserver_recur_internal.h"

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "rm/lowcost.h"
#include "rm/period.h"
#include "rm/skyline.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECUR__EVERY_MS 250 /* how often the leader looks at the recurring jobs */

/* ---- the model and the plan (Morpheus §5-6) ---- */

/* The LP fit runs on a libuv worker thread: it can take a second or more for long histories
 * (rm/skyline.h), far longer than Raft's heartbeats may wait on the loop. The runs are copied
 * out of the ledger before, the result placed and proposed after, on the loop. */
struct recur__fit {
    uv_work_t req;
    struct rmserver *s;
    char name[LEDGER_NAME_MAX];
    uint32_t generation;
    double *runs[SKYLINE_MAX_RUNS];
    size_t nruns, k;
    double rstar[SKYLINE_MAX_STEPS];
    int rc;
    int64_t took_ms;
};

static void recur__fit_free(struct recur__fit *f)
{
    for (size_t i = 0; i < f->nruns; i++)
        mem_free(f->runs[i]);
    mem_free(f);
}

static void recur__fit_work(uv_work_t *req)
{
    struct recur__fit *f = req->data;
    int64_t t0 = (int64_t)clock_mono_ms();
    struct skyline_fit_info info;
    f->rc =
        skyline_fit((const double *const *)f->runs, f->nruns, f->k, SKYLINE_ALPHA, f->rstar, &info);
    f->took_ms = (int64_t)clock_mono_ms() - t0;
}

static void recur__propose(struct rmserver *s, const struct ledger_recurring *r,
                           uint32_t generation, const double *rstar, size_t k, const char *error);

static void recur__fit_done(uv_work_t *req, int status)
{
    struct recur__fit *f = req->data;
    struct rmserver *s = f->s;
    s->recur_fitting = false;
    const struct ledger_recurring *r = ledger_recurring_find(fsm_ledger(s->fsm), f->name);
    if (status == 0 && s->ready && !s->stopping && r != NULL && r->generation == f->generation) {
        char why[LEDGER_REASON_MAX] = "";
        if (f->rc != 0)
            err_fmt(why, sizeof why, f->rc, "the skyline fit failed: %s", err_text(f->rc));
        else
            log_info("recurring %s: R* fitted over %zu runs x %zu steps in %lld ms", f->name,
                     f->nruns, f->k, (long long)f->took_ms);
        recur__propose(s, r, f->generation, f->rstar, f->rc == 0 ? f->k : 0, why);
    }
    recur__fit_free(f);
}

/* Starts the fit of R* for r over its last successful runs at the plan's step; with no such
 * run, proposes a model without a reservation at once. */
static void recur__model(struct rmserver *s, const struct ledger_recurring *r)
{
    ledger_t *l = fsm_ledger(s->fsm);
    uint32_t step = (uint32_t)s->cfg->plan_step_ms;
    struct recur__fit *f = mem_calloc(1, sizeof *f);
    if (f == NULL)
        return;
    f->s = s;
    memcpy(f->name, r->name, sizeof f->name);
    f->generation = r->generation;
    for (size_t i = ledger_history_count(l);
         i-- > 0 && f->nruns < (size_t)s->cfg->fit_runs && f->nruns < SKYLINE_MAX_RUNS;) {
        const struct ledger_run *h = ledger_history_at(l, i);
        if (h == NULL)
            continue;
        if (strcmp(h->recurring, r->name) != 0 || h->outcome != LEDGER_RUN_SUCCEEDED ||
            h->nsky == 0 || h->sky_step_ms == 0)
            continue;
        double *in = mem_alloc(h->nsky * sizeof *in);
        double *out = mem_calloc(SKYLINE_MAX_STEPS, sizeof *out);
        if (in == NULL || out == NULL) {
            mem_free(in);
            mem_free(out);
            break;
        }
        for (uint32_t j = 0; j < h->nsky; j++)
            in[j] = h->sky_milli[j] / 1000.0;
        size_t n = skyline_resample(in, h->nsky, h->sky_step_ms, out, SKYLINE_MAX_STEPS, step);
        mem_free(in);
        f->runs[f->nruns++] = out;
        f->k = n > f->k ? n : f->k;
    }
    if (f->nruns == 0 || f->k == 0) {
        recur__propose(s, r, r->generation, NULL, 0, "no successful run with a skyline yet");
        recur__fit_free(f);
        return;
    }
    f->req.data = f;
    if (uv_queue_work(&s->loop, &f->req, recur__fit_work, recur__fit_done) != 0) {
        recur__fit_free(f);
        return;
    }
    s->recur_fitting = true;
}

/* Adds (sign +1) or removes (-1) a placed job's reservation at every instance in the plan. */
static void recur__apply(struct lowcost_plan *p, const struct ledger_recurring *r, uint32_t step,
                         double sign)
{
    uint32_t period = (uint32_t)(r->period_ms / step);
    uint32_t off = (uint32_t)((r->offset_ms / step) % (period > 0 ? period : 1));
    for (uint32_t base = 0; period > 0 && base < p->nsteps; base += period)
        for (uint32_t k = 0; k < r->nresv; k++) {
            uint64_t t = ((uint64_t)base + off + r->resv_first + k) % p->nsteps;
            p->load[t] += sign * r->resv_milli[k] / 1000.0;
        }
}

/* Places R* of r with LowCost among the other reservations of its virtual cluster. Fills
 * cmd's vals2 (in resv) and the first step; 0 or an ERR_* with why. */
static int recur__place(struct rmserver *s, const struct ledger_recurring *r, const double *rstar,
                        size_t k, uint32_t *resv, uint32_t *nresv, uint32_t *first, char *why,
                        size_t cap)
{
    ledger_t *l = fsm_ledger(s->fsm);
    uint32_t step = (uint32_t)s->cfg->plan_step_ms;
    int64_t d = ledger_recurring_deadline(r);
    *nresv = 0;
    if (d == 0)
        return err_fmt(why, cap, ERR_STATE,
                       "no deadline: give one or accept the inferred one to get a reservation");
    if (r->period_ms % step != 0 || r->offset_ms % step != 0)
        return err_fmt(why, cap, ERR_INVAL,
                       "period and offset must be multiples of the plan step (%u ms)", step);
    uint64_t periods[LEDGER_MAX_RECURRING];
    size_t np = 0;
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *o = ledger_recurring_at(l, i);
        if (o->vc == r->vc && (o == r || o->nresv > 0) && o->period_ms % step == 0)
            periods[np++] = (uint64_t)o->period_ms / step;
    }
    bool capped = false;
    uint64_t cap_steps = (uint64_t)s->cfg->horizon_ms / step;
    cap_steps = cap_steps > LOWCOST_MAX_STEPS ? LOWCOST_MAX_STEPS : cap_steps;
    uint64_t lcm = period_lcm(periods, np, cap_steps, &capped);
    uint32_t pst = (uint32_t)(r->period_ms / step);
    if (lcm < pst || lcm % pst != 0)
        return err_fmt(why, cap, ERR_RANGE,
                       "its period does not fit the plan's horizon of %llu steps: raise "
                       "recurring.horizon or the plan step",
                       (unsigned long long)cap_steps);
    const struct ledger_vc *vc = ledger_vc_at(l, r->vc);
    struct lowcost_plan plan = {(uint32_t)lcm, vc != NULL ? (double)vc->capacity : 0, NULL};
    double *rv = mem_calloc(pst, sizeof *rv);
    plan.load = mem_calloc(lcm, sizeof *plan.load);
    if (plan.load == NULL || rv == NULL) {
        mem_free(plan.load);
        mem_free(rv);
        return err_fmt(why, cap, ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *o = ledger_recurring_at(l, i);
        if (o != r && o->vc == r->vc && o->nresv > 0 && (uint64_t)o->period_ms / step > 0 &&
            lcm % ((uint64_t)o->period_ms / step) == 0)
            recur__apply(&plan, o, step, 1);
    }
    /* the plan is in steps from the LCM's start; the job's instances start at its offset */
    uint32_t off = (uint32_t)((r->offset_ms / step) % pst);
    if (off != 0) { /* rotate so that instances start at 0 */
        double *rot = mem_alloc(lcm * sizeof *rot);
        if (rot != NULL) {
            for (uint64_t t = 0; t < lcm; t++)
                rot[t] = plan.load[(t + off) % lcm];
            mem_free(plan.load);
            plan.load = rot;
        }
    }
    uint32_t dl = (uint32_t)((d + step - 1) / step);
    struct lowcost_job job = {pst, 0, dl < pst ? dl : pst, rstar, (uint32_t)k};
    int rc = lowcost_place(&plan, &job, rv);
    if (rc == ERR_FULL)
        err_fmt(why, cap, rc,
                "no room in the plan: its skyline does not fit under the capacity before its "
                "deadline");
    else if (rc != 0)
        err_fmt(why, cap, rc, "placing it failed: %s", err_text(rc));
    if (rc == 0) {
        uint32_t lo = pst, hi = 0;
        for (uint32_t t = 0; t < pst; t++)
            if (rv[t] > 1e-9) {
                lo = t < lo ? t : lo;
                hi = t;
            }
        if (lo <= hi && hi - lo + 1 <= LEDGER_VALS_MAX) {
            for (uint32_t t = lo; t <= hi; t++)
                resv[t - lo] = (uint32_t)llround(rv[t] * 1000.0);
            *nresv = hi - lo + 1;
            *first = lo;
        } else if (lo <= hi) {
            rc = err_fmt(why, cap, ERR_RANGE, "the reservation spans more than %u plan steps",
                         LEDGER_VALS_MAX);
        }
    }
    mem_free(plan.load);
    mem_free(rv);
    return rc;
}

static void recur__propose(struct rmserver *s, const struct ledger_recurring *r,
                           uint32_t generation, const double *rstar, size_t k, const char *error)
{
    uint32_t *sky = mem_calloc(SKYLINE_MAX_STEPS, sizeof *sky);
    uint32_t *resv = mem_calloc(LEDGER_VALS_MAX, sizeof *resv);
    char why[LEDGER_REASON_MAX];
    snprintf(why, sizeof why, "%s", error);
    if (sky == NULL || resv == NULL) {
        mem_free(sky);
        mem_free(resv);
        return;
    }
    uint32_t nresv = 0, first = 0;
    int rc = 0;
    if (k > 0)
        rc = recur__place(s, r, rstar, k, resv, &nresv, &first, why, sizeof why);
    /* no deadline yet, or no run yet, is a note; a fit or placement that failed is an error */
    bool failed = (k == 0 && strstr(why, "fit failed") != NULL) || (rc != 0 && rc != ERR_STATE);
    for (size_t i = 0; i < k; i++)
        sky[i] = (uint32_t)llround(rstar[i] * 1000.0);
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_MODEL);
    memcpy(c.name, r->name, sizeof c.name);
    c.count = generation;
    c.width = (uint32_t)s->cfg->plan_step_ms;
    c.cpus_milli = (uint32_t)s->cfg->plan_step_ms;
    c.mem_mb = first;
    c.state = failed ? 1 : 0;
    c.vals = sky;
    c.nvals = (uint32_t)k;
    c.vals2 = resv;
    c.nvals2 = nresv;
    c.text = why;
    c.text_len = (uint32_t)strlen(why);
    if (rmserver_submit(s, &c, NULL) == 0)
        log_info("recurring %s: model of generation %u: %zu steps, reservation of %u steps%s%s",
                 r->name, generation, k, nresv, why[0] ? ": " : "", why);
    mem_free(sky);
    mem_free(resv);
}

/* ---- the leader's loop ---- */

static uint64_t recur__key(const char *what, const char *name, int64_t a, int64_t b)
{
    char k[160];
    snprintf(k, sizeof k, "recur/%s/%s/%lld/%lld", what, name, (long long)a, (long long)b);
    return rmserver_key_hash(k);
}

static bool recur__pending(const struct rmserver *s, uint8_t type, const char *name)
{
    for (size_t i = 0; i < s->pending.len; i++)
        if (s->pending.items[i].cmd.type == type && strcmp(s->pending.items[i].cmd.name, name) == 0)
            return true;
    return false;
}

static void recur__note(struct rmserver *s, const struct ledger_recurring *r, uint8_t state,
                        const char *text, uint64_t key)
{
    struct ledger_cmd c;
    ledger_cmd_init(&c, LEDGER_CMD_RECUR_NOTE);
    memcpy(c.name, r->name, sizeof c.name);
    c.period = r->pend_period;
    c.state = state;
    c.text = text;
    c.text_len = (uint32_t)strlen(text);
    c.key = key;
    int rc = rmserver_submit(s, &c, NULL);
    if (rc != 0) /* not queued (ERR_FULL, ERR_NOMEM): the ledger is unchanged */
        log_warn("recurring job %s: note not queued: %s", r->name, err_text(rc));
}

void rmserver_recur_tick(struct rmserver *s)
{
    int64_t mono = (int64_t)clock_mono_ms();
    if (!s->ready || mono - s->recur_last_ms < RECUR__EVERY_MS)
        return;
    s->recur_last_ms = mono;
    ledger_t *l = fsm_ledger(s->fsm);
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < ledger_recurring_count(l); i++) {
        const struct ledger_recurring *r = ledger_recurring_at(l, i);
        if (r->generation != r->model_gen && !s->recur_fitting &&
            !recur__pending(s, LEDGER_CMD_RECUR_MODEL, r->name))
            recur__model(s, r);
        if (r->pend_period < 0) {
            int64_t due = period_index(now, r->period_ms, r->offset_ms);
            if (r->paused || due < 0 || due <= r->last_fired ||
                recur__pending(s, LEDGER_CMD_RECUR_FIRE, r->name))
                continue;
            int64_t p = r->last_fired + 1;
            if (p < due - LEDGER_CATCHUP_PERIODS + 1)
                p = due - LEDGER_CATCHUP_PERIODS + 1; /* older ones are recorded as skipped */
            struct ledger_cmd c;
            ledger_cmd_init(&c, LEDGER_CMD_RECUR_FIRE);
            memcpy(c.name, r->name, sizeof c.name);
            c.period = p;
            c.key = recur__key("fire", r->name, r->id, p);
            if (rmserver_submit(s, &c, NULL) == 0)
                log_info("recurring %s: period %lld is due", r->name, (long long)p);
            continue;
        }
        if (r->pend_job != 0 || recur__pending(s, LEDGER_CMD_RECUR_NOTE, r->name))
            continue;
        /* fired and not registered: launch, or relaunch after launch_retry, or give up */
        bool ours =
            s->recur_launch_period == r->pend_period && strcmp(s->recur_launch_name, r->name) == 0;
        int64_t since = r->pend_launch_ms != 0 ? now - r->pend_launch_ms : INT64_MAX;
        if (r->pend_launches > 0 &&
            (since < s->cfg->launch_retry_ms ||
             (ours && mono - s->recur_launch_mono < s->cfg->launch_retry_ms)))
            continue;
        char dir[PATH_MAX], run[LEDGER_NAME_MAX + 32], why[LEDGER_REASON_MAX] = "";
        rmserver_recur__run_dir(s, r, r->pend_period, dir, sizeof dir, run, sizeof run);
        if (r->pend_launches > 0) {
            char tail[LEDGER_REASON_MAX - 64];
            rmserver_recur__log_tail(dir, tail, sizeof tail);
            snprintf(why, sizeof why, "its job manager did not register within %llds%s%s",
                     (long long)(s->cfg->launch_retry_ms / 1000), tail[0] ? ": " : "", tail);
        }
        if (r->pend_launches >= (uint32_t)s->cfg->launch_max) {
            char gave[LEDGER_REASON_MAX + 48];
            snprintf(gave, sizeof gave, "gave up after %u launches: %s", r->pend_launches, why);
            gave[LEDGER_REASON_MAX - 1] = '\0'; /* a note's text is at most this long */
            log_warn("recurring %s: period %lld: %s", r->name, (long long)r->pend_period, gave);
            recur__note(s, r, 3, gave, recur__key("giveup", r->name, r->id, r->pend_period));
            continue;
        }
        if (why[0] != '\0')
            recur__note(s, r, 2, why, 0);
        int rc = rmserver_recur__launch(s, r, r->pend_period, why, sizeof why);
        if (rc != 0) {
            log_warn("recurring %s: period %lld: %s", r->name, (long long)r->pend_period, why);
            recur__note(s, r, 2, why, 0);
        }
        s->recur_launch_period = r->pend_period;
        snprintf(s->recur_launch_name, sizeof s->recur_launch_name, "%s", r->name);
        s->recur_launch_mono = mono;
        recur__note(s, r, 1, "",
                    recur__key("launch", r->name, r->pend_period, (int64_t)r->pend_launches));
    }
}
