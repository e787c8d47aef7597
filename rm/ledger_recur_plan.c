/* ledger_recur_plan.c - a recurring job's model and plan from the ledger (ledger_recur_plan.h):
 * the runs R* is fitted over and LowCost's placement of R* among the other reservations, moved
 * here from the leader's loop (rm/rmserver_recur.c) so that the simulation plans with the same
 * code. */
#include "rm/ledger_recur_plan.h"

#include "common/err.h"
#include "common/mem.h"
#include "rm/lowcost.h"
#include "rm/period.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int ledger_recur_fit_runs(const ledger_t *l, const struct ledger_recurring *r, uint32_t step_ms,
                          size_t max_runs, struct ledger_recur_fit *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = ledger_history_count(l);
         i-- > 0 && f->nruns < max_runs && f->nruns < SKYLINE_MAX_RUNS;) {
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
            return ERR_NOMEM;
        }
        for (uint32_t j = 0; j < h->nsky; j++)
            in[j] = h->sky_milli[j] / 1000.0;
        size_t n = skyline_resample(in, h->nsky, h->sky_step_ms, out, SKYLINE_MAX_STEPS, step_ms);
        mem_free(in);
        f->runs[f->nruns++] = out;
        f->k = n > f->k ? n : f->k;
    }
    return 0;
}

void ledger_recur_fit_close(struct ledger_recur_fit *f)
{
    for (size_t i = 0; i < f->nruns; i++)
        mem_free(f->runs[i]);
    memset(f, 0, sizeof *f);
}

/* Adds (sign +1) or removes (-1) a placed job's reservation at every instance in the plan. */
static void ledger__plan_add(struct lowcost_plan *p, const struct ledger_recurring *r,
                             uint32_t step, double sign)
{
    uint32_t period = (uint32_t)(r->period_ms / step);
    uint32_t off = (uint32_t)((r->offset_ms / step) % (period > 0 ? period : 1));
    for (uint32_t base = 0; period > 0 && base < p->nsteps; base += period)
        for (uint32_t k = 0; k < r->nresv; k++) {
            uint64_t t = ((uint64_t)base + off + r->resv_first + k) % p->nsteps;
            p->load[t] += sign * r->resv_milli[k] / 1000.0;
        }
}

/* Places R* of r among the other reservations of its virtual cluster. Fills resv (at most
 * LEDGER_VALS_MAX), its length and first step; 0 or an ERR_* with why. */
static int ledger__place(const ledger_t *l, const struct ledger_recurring *r, uint32_t step,
                         int64_t horizon_ms, int placer, const double *rstar, size_t k,
                         uint32_t *resv, uint32_t *nresv, uint32_t *first, char *why, size_t cap)
{
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
    uint64_t cap_steps = (uint64_t)horizon_ms / step;
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
            ledger__plan_add(&plan, o, step, 1);
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
    int rc = placer == LEDGER_RECUR_GREEDY ? lowcost_place_greedy(&plan, &job, rv)
                                           : lowcost_place(&plan, &job, rv);
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

int ledger_recur_model(const ledger_t *l, const struct ledger_recurring *r, uint32_t generation,
                       uint32_t step_ms, int64_t horizon_ms, int placer, const double *rstar,
                       size_t k, const char *error, struct ledger_recur_model *m)
{
    memset(m, 0, sizeof *m);
    m->generation = generation;
    m->step_ms = step_ms;
    m->sky = mem_calloc(SKYLINE_MAX_STEPS, sizeof *m->sky);
    m->resv = mem_calloc(LEDGER_VALS_MAX, sizeof *m->resv);
    if (m->sky == NULL || m->resv == NULL || k > SKYLINE_MAX_STEPS) {
        ledger_recur_model_close(m);
        return k > SKYLINE_MAX_STEPS ? ERR_INVAL : ERR_NOMEM;
    }
    snprintf(m->why, sizeof m->why, "%s", error != NULL ? error : "");
    int rc = 0;
    if (k > 0)
        rc = ledger__place(l, r, step_ms, horizon_ms, placer, rstar, k, m->resv, &m->nresv,
                           &m->first, m->why, sizeof m->why);
    /* no deadline yet, or no run yet, is a note; a fit or placement that failed is an error */
    m->failed = (k == 0 && strstr(m->why, "fit failed") != NULL) || (rc != 0 && rc != ERR_STATE);
    for (size_t i = 0; i < k; i++)
        m->sky[i] = (uint32_t)llround(rstar[i] * 1000.0);
    m->nsky = (uint32_t)k;
    return 0;
}

void ledger_recur_model_cmd(const struct ledger_recur_model *m, const struct ledger_recurring *r,
                            struct ledger_cmd *c)
{
    ledger_cmd_init(c, LEDGER_CMD_RECUR_MODEL);
    memcpy(c->name, r->name, sizeof c->name);
    c->count = m->generation;
    c->width = m->step_ms;
    c->cpus_milli = m->step_ms;
    c->mem_mb = m->first;
    c->state = m->failed ? 1 : 0;
    c->vals = m->sky;
    c->nvals = m->nsky;
    c->vals2 = m->resv;
    c->nvals2 = m->nresv;
    c->text = m->why;
    c->text_len = (uint32_t)strlen(m->why);
}

void ledger_recur_model_close(struct ledger_recur_model *m)
{
    mem_free(m->sky);
    mem_free(m->resv);
    memset(m, 0, sizeof *m);
}
