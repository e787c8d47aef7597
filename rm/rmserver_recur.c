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
#include "rm/ledger_recur_plan.h"
#include "rm/period.h"
#include "rm/skyline.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECUR__EVERY_MS 250 /* how often the leader looks at the recurring jobs */

/* ---- the model and the plan (Morpheus §5-6; rm/ledger_recur_plan.h) ---- */

/* The LP fit runs on a libuv worker thread: it can take a second or more for long histories
 * (rm/skyline.h), far longer than Raft's heartbeats may wait on the loop. The runs are copied
 * out of the ledger before, the result placed and proposed after, on the loop. */
struct recur__fit {
    uv_work_t req;
    struct rmserver *s;
    char name[LEDGER_NAME_MAX];
    uint32_t generation;
    struct ledger_recur_fit runs;
    double rstar[SKYLINE_MAX_STEPS];
    int rc;
    int64_t took_ms;
};

static void recur__fit_free(struct recur__fit *f)
{
    ledger_recur_fit_close(&f->runs);
    mem_free(f);
}

static void recur__fit_work(uv_work_t *req)
{
    struct recur__fit *f = req->data;
    int64_t t0 = (int64_t)clock_mono_ms();
    struct skyline_fit_info info;
    f->rc = skyline_fit((const double *const *)f->runs.runs, f->runs.nruns, f->runs.k,
                        SKYLINE_ALPHA, f->rstar, &info);
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
                     f->runs.nruns, f->runs.k, (long long)f->took_ms);
        recur__propose(s, r, f->generation, f->rstar, f->rc == 0 ? f->runs.k : 0, why);
    }
    recur__fit_free(f);
}

/* Starts the fit of R* for r over its last successful runs at the plan's step; with no such
 * run, proposes a model without a reservation at once. */
static void recur__model(struct rmserver *s, const struct ledger_recurring *r)
{
    ledger_t *l = fsm_ledger(s->fsm);
    struct recur__fit *f = mem_calloc(1, sizeof *f);
    if (f == NULL)
        return;
    f->s = s;
    memcpy(f->name, r->name, sizeof f->name);
    f->generation = r->generation;
    /* out of memory part of the way: fitted over what was collected */
    (void)ledger_recur_fit_runs(l, r, (uint32_t)s->cfg->plan_step_ms, (size_t)s->cfg->fit_runs,
                                &f->runs);
    if (f->runs.nruns == 0 || f->runs.k == 0) {
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

static void recur__propose(struct rmserver *s, const struct ledger_recurring *r,
                           uint32_t generation, const double *rstar, size_t k, const char *error)
{
    struct ledger_recur_model m;
    if (ledger_recur_model(fsm_ledger(s->fsm), r, generation, (uint32_t)s->cfg->plan_step_ms,
                           s->cfg->horizon_ms, LEDGER_RECUR_LOWCOST, rstar, k, error, &m) != 0)
        return;
    struct ledger_cmd c;
    ledger_recur_model_cmd(&m, r, &c);
    if (rmserver_submit(s, &c, NULL) == 0)
        log_info("recurring %s: model of generation %u: %zu steps, reservation of %u steps%s%s",
                 r->name, generation, k, m.nresv, m.why[0] ? ": " : "", m.why);
    ledger_recur_model_close(&m);
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
