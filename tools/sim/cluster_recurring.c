/* cluster_recurring.c - `paddock-sim recurring` on the cluster simulator (cluster_recurring.h):
 * the runs are cluster jobs, the RM is a ledger_t driven through ledger_apply from the cluster's
 * hooks (a job arrives, a job ends) and from a tick at every plan step. Nothing here decides a
 * reservation, a deadline or a grant: the ledger and rm/ledger_recur_plan.h do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/shape.h"
#include "jm/usage.h"
#include "rm/ledger.h"
#include "rm/ledger_recur_plan.h"
#include "rm/slo.h"
#include "tools/sim/cluster_internal.h"
#include "tools/sim/cluster_recurring.h"
#include "tools/sim/recurring_sim_internal.h"

#define CR__NODE_CPUS 4.0
#define CR__VC        "vc"
#define CR__RENEWS    4 /* renewals per plan step (each JM's LEASE_RENEW, the leader's TICK) */
#define CR__STREAM    0x6372756e00000000ull /* | run: a run's noise */

/* One cluster job: a periodic run or an ad-hoc job. */
struct cr_run {
    int periodic;
    size_t idx;     /* its periodic job or ad-hoc index */
    int64_t period; /* periodic: the ledger's period index */
    double release; /* virtual seconds */
    struct arbiter_shape shape;
    double dl_s; /* ad-hoc: deadline from its arrival, seconds (0: none) */
    uint64_t id; /* the ledger's job id (0: not registered) */
    int refused; /* admission refused it: it ran best-effort */
    int eval;    /* released in the evaluated window */
    int waiting; /* arrived while its job's previous run ran: not fired yet */
    int ended, failed;
    double deadline; /* absolute virtual seconds the ledger gave it; 0: none */
    double finish;
    int64_t running; /* token units running at the last sample */
    uint32_t granted;
    uint32_t asked; /* its JM's latest TOKEN_REQUEST */
    struct usage use;
};

struct cr {
    const struct recurring_sim_jobs *s;
    const struct recurring_sim_config *cfg;
    enum recurring_sim_policy pol;
    ledger_t *l;
    struct cl_world *w;
    struct cr_run *runs;
    size_t nruns, nalloc;
    int64_t base_ms; /* ledger time of virtual time 0: a whole day, so period 0 is not "under
                        way" when the recurring jobs are added */
    double end_s;    /* end of the evaluated window */
    int started, planned;
    int err;
    char *msg;
    size_t msgcap;
    struct recurring_sim_result *res;
    double used_int;
};

static int64_t cr__now(const struct cr *c)
{
    return c->base_ms + (int64_t)llround(engine_now(c->w->eng) * 1000.0);
}

static int cr__apply(struct cr *c, const struct ledger_cmd *cmd, struct ledger_result *res)
{
    struct ledger_result r;
    /* before the run: just before virtual time 0, so that period 0 is the first one fired */
    int rc = ledger_apply(c->l, cmd, c->w != NULL ? cr__now(c) : c->base_ms - 1, &r);
    if (res != NULL)
        *res = r;
    return rc;
}

static void cr__fail(struct cr *c, int rc, const char *what)
{
    if (c->err == 0) {
        c->err = rc;
        err_fmt(c->msg, c->msgcap, rc, "%s: %s", what, err_text(rc));
    }
    if (c->w != NULL) {
        if (c->w->err == 0)
            c->w->err = rc;
        engine_stop(c->w->eng);
    }
}

static void cr__name(char *out, size_t cap, size_t periodic_job)
{
    snprintf(out, cap, "p%zu", periodic_job);
}

/* The grant reaches the JM: the dispatcher's tokens, downgrades when it falls below the regular
 * work in flight, upgrades when it rises, a round. */
static int cr__grant(struct cr *c, struct cl_job *j, struct cr_run *r, uint32_t tokens)
{
    struct cl_world *w = c->w;
    r->granted = tokens;
    size_t nt = j->spec->ntasks ? j->spec->ntasks : 1;
    double *rem = mem_calloc(nt, sizeof *rem), *est = mem_calloc(nt, sizeof *est);
    int rc = rem != NULL && est != NULL ? 0 : ERR_NOMEM;
    if (rc == 0)
        cl_job_grant(w, j, w->cfg.grain ? grain_units(tokens) : tokens, rem, est, NULL);
    mem_free(rem);
    mem_free(est);
    return rc;
}

/* Every active run's grant as the ledger's latest arbitration left it. */
static int cr__sync(struct cr *c)
{
    for (size_t i = 0; i < c->nruns; i++) {
        struct cr_run *r = &c->runs[i];
        struct cl_job *j = &c->w->jobs[i];
        if (r->id == 0 || r->ended || !j->arrived || j->done)
            continue;
        const struct ledger_job *lj = ledger_job_find(c->l, r->id);
        uint32_t t = lj != NULL ? lj->tokens : 0;
        int rc;
        if (t != r->granted && (rc = cr__grant(c, j, r, t)) != 0)
            return rc;
    }
    return 0;
}

/* The token units a job's tasks hold now (the JM's usage events, sampled). */
static int64_t cr__running(const struct cl_job *j)
{
    int64_t n = 0;
    for (size_t t = 0; t < j->spec->ntasks; t++)
        n += j->tasks[t].running != 0;
    return n;
}

/* The renewal's demand: the daemon's rule (jm/grant.h). */
static uint32_t cr__demand(const struct cr *c, const struct cl_job *j)
{
    return grant_demand(j->core.dag, j->core.disp, c->w->cfg.grain ? GRAIN_UNITS : 1,
                        LEDGER_MAX_TOKENS);
}

/* What the run's JM asks for. Without a controller the daemon's JM asks for its width and, in
 * its tail, for the unfinished tasks once they are at most half of what it asks (grant_tail,
 * jm/grant.h); lowcost_reprov's JM asks for what meets its deadline at the speed it
 * has shown, within the time left / slack (the token-slice engine's controller, Morpheus §7). */
static uint32_t cr__ask(const struct cr *c, struct cr_run *r, const struct cl_job *j)
{
    uint32_t width = r->shape.width > 0 ? r->shape.width : 1;
    size_t nt = j->spec->ntasks, ok = dag_count(j->core.dag, DAG_SUCCEEDED);
    if (c->pol != RECURRING_SIM_LOWCOST_REPROV || r->deadline <= 0) {
        uint32_t target = r->asked > 0 ? r->asked : width;
        return r->asked = grant_tail(j->core.dag, j->core.disp, nt,
                                     c->w->cfg.grain ? GRAIN_UNITS : 1, target);
    }
    double now = engine_now(c->w->eng), tl = (r->deadline - now) / c->cfg->slack;
    double done = nt ? (double)ok / (double)nt : 1;
    double est_done = r->shape.work * done, prior = 0.05 * r->shape.work;
    double speed = (usage_token_ms(&r->use) / 1000.0 + prior) / (est_done + prior);
    struct arbiter_shape seen = r->shape;
    seen.work *= (1 - done) * speed;
    seen.work_sd *= (1 - done) * speed;
    seen.path *= (1 - done) * speed;
    seen.path_sd *= (1 - done) * speed;
    uint32_t ask = tl > 0 ? arbiter_min_tokens(&seen, tl) : width;
    return r->asked = ask > width ? width : ask < 1 ? 1 : ask;
}

/* The leader's loop for the models (rm/rmserver_recur.c's recur__model and recur__propose): a
 * recurring job whose generation moved gets R* over its latest runs and its reservation. */
static int cr__models(struct cr *c)
{
    uint32_t step_ms = (uint32_t)llround(c->cfg->step_s * 1000.0);
    int placer = c->pol == RECURRING_SIM_GREEDY ? LEDGER_RECUR_GREEDY : LEDGER_RECUR_LOWCOST;
    for (size_t i = 0; i < ledger_recurring_count(c->l); i++) {
        const struct ledger_recurring *r = ledger_recurring_at(c->l, i);
        if (r->generation == r->model_gen)
            continue;
        struct ledger_recur_fit f;
        int rc = ledger_recur_fit_runs(c->l, r, step_ms, c->cfg->fit_runs, &f);
        double *rstar = mem_calloc(SKYLINE_MAX_STEPS, sizeof *rstar);
        char why[LEDGER_REASON_MAX] = "";
        size_t k = 0;
        if (rc == 0 && rstar == NULL)
            rc = ERR_NOMEM;
        if (rc == 0 && f.nruns > 0 && f.k > 0) {
            struct skyline_fit_info info;
            int frc = skyline_fit((const double *const *)f.runs, f.nruns, f.k, c->cfg->alpha, rstar,
                                  &info);
            if (frc != 0)
                err_fmt(why, sizeof why, frc, "the skyline fit failed: %s", err_text(frc));
            else
                k = f.k;
        } else if (rc == 0) {
            snprintf(why, sizeof why, "no successful run with a skyline yet");
        }
        ledger_recur_fit_close(&f);
        struct ledger_recur_model m;
        if (rc == 0)
            rc =
                ledger_recur_model(c->l, r, r->generation, step_ms,
                                   (int64_t)RECURRING_SIM_DAY * step_ms, placer, rstar, k, why, &m);
        mem_free(rstar);
        if (rc != 0)
            return rc;
        struct ledger_cmd cmd;
        ledger_recur_model_cmd(&m, r, &cmd);
        rc = cr__apply(c, &cmd, NULL);
        if (rc == 0 && m.nresv == 0 && k > 0)
            c->res->unplaced++;
        ledger_recur_model_close(&m);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The end of the warm-up: users accept the deadlines inferred for the jobs without one. */
static void cr__warmup_ev(engine_t *e, void *ctx, uint64_t arg)
{
    struct cr *c = ctx;
    (void)e;
    (void)arg;
    for (size_t i = 0; i < c->s->np; i++) {
        struct ledger_cmd cmd;
        ledger_cmd_init(&cmd, LEDGER_CMD_RECUR_ACCEPT);
        cr__name(cmd.name, sizeof cmd.name, i);
        const struct ledger_recurring *r = ledger_recurring_find(c->l, cmd.name);
        if (r != NULL && r->deadline_source == LEDGER_DEADLINE_NONE &&
            cr__apply(c, &cmd, NULL) == 0)
            c->res->inferred++;
    }
    c->planned = c->pol != RECURRING_SIM_NONE;
}

/* CR__RENEWS times a plan step: the JMs' renewals and requests, the leader's models, a TICK, the
 * grants. */
static void cr__tick_ev(engine_t *e, void *ctx, uint64_t arg)
{
    struct cr *c = ctx;
    struct cl_world *w = c->w;
    double now = engine_now(e);
    int eval = now >= c->cfg->warmup_steps * c->cfg->step_s && now < c->end_s;
    double periodic_grant = 0, used = 0;
    int rc = 0;
    (void)arg;
    for (size_t i = 0; rc == 0 && i < c->nruns; i++) {
        struct cr_run *r = &c->runs[i];
        struct cl_job *j = &w->jobs[i];
        if (r->id == 0 || r->ended || j->done)
            continue;
        int64_t run = cr__running(j);
        if (run != r->running)
            usage_add(&r->use, (int64_t)llround(now * 1000.0), run - r->running);
        r->running = run;
        used += (double)run;
        if (r->periodic)
            periodic_grant += r->granted;
        struct ledger_cmd cmd;
        ledger_cmd_init(&cmd, LEDGER_CMD_LEASE_RENEW);
        cmd.job = r->id;
        size_t nt = j->spec->ntasks;
        cmd.done_permille =
            nt ? (uint32_t)(dag_count(j->core.dag, DAG_SUCCEEDED) * 1000 / nt) : 1000;
        cmd.count = cr__demand(c, j);
        rc = cr__apply(c, &cmd, NULL);
        uint32_t was = r->asked, ask = rc == 0 ? cr__ask(c, r, j) : was;
        if (rc == 0 && ask != was) {
            ledger_cmd_init(&cmd, LEDGER_CMD_TOKEN_REQUEST);
            cmd.job = r->id;
            cmd.count = ask;
            rc = cr__apply(c, &cmd, NULL);
        }
    }
    if (rc == 0 && c->planned)
        rc = cr__models(c);
    if (rc == 0) {
        struct ledger_cmd cmd;
        ledger_cmd_init(&cmd, LEDGER_CMD_TICK);
        rc = cr__apply(c, &cmd, NULL);
    }
    if (rc == 0)
        rc = cr__sync(c);
    if (rc != 0) {
        cr__fail(c, rc, "a tick of the simulated RM");
        return;
    }
    if (eval) {
        c->used_int += used / CR__RENEWS;
        if (periodic_grant > c->res->periodic_grant_peak)
            c->res->periodic_grant_peak = periodic_grant;
    }
    rc = engine_after(e, c->cfg->step_s / CR__RENEWS, cr__tick_ev, c, 0);
    if (rc != 0)
        cr__fail(c, rc, "the tick");
}

/* A run is fired and registers under its recurring job, an ad-hoc job registers through
 * admission (refused: it runs best-effort); then it asks for its tokens. */
static int cr__register(struct cr *c, size_t job)
{
    struct cr_run *r = &c->runs[job];
    int rc;
    struct ledger_cmd cmd;
    struct ledger_result res;
    char name[24];
    cr__name(name, sizeof name, r->idx);
    if (r->periodic) {
        ledger_cmd_init(&cmd, LEDGER_CMD_RECUR_FIRE);
        snprintf(cmd.name, sizeof cmd.name, "%s", name);
        cmd.period = r->period;
        if ((rc = cr__apply(c, &cmd, NULL)) != 0)
            return rc;
    }
    ledger_cmd_init(&cmd, LEDGER_CMD_JOB_REGISTER);
    if (r->periodic) {
        snprintf(cmd.name, sizeof cmd.name, "%s-%lld", name, (long long)r->period);
        snprintf(cmd.recurring, sizeof cmd.recurring, "%s", name);
        cmd.period = r->period;
    } else {
        snprintf(cmd.name, sizeof cmd.name, "a%zu", r->idx);
        cmd.deadline_ms = r->dl_s > 0 ? cr__now(c) + (int64_t)llround(r->dl_s * 1000.0) : 0;
    }
    snprintf(cmd.vc, sizeof cmd.vc, "%s", CR__VC);
    cmd.lease_ms = LEDGER_LEASE_MAX_MS;
    cmd.flags = c->cfg->admission ? 0 : LEDGER_JOB_BEST_EFFORT;
    cmd.weight_milli = 1000;
    cmd.work_ms = (uint64_t)llround(r->shape.work * 1000.0);
    cmd.work_sd_ms = (uint64_t)llround(r->shape.work_sd * 1000.0);
    cmd.path_ms = (uint64_t)llround(r->shape.path * 1000.0);
    cmd.path_sd_ms = (uint64_t)llround(r->shape.path_sd * 1000.0);
    cmd.width = r->shape.width;
    rc = cr__apply(c, &cmd, &res);
    if (rc == ERR_ADMISSION) { /* refused: it runs best-effort */
        r->refused = 1;
        cmd.flags |= LEDGER_JOB_BEST_EFFORT;
        rc = cr__apply(c, &cmd, &res);
    }
    if (rc != 0)
        return rc;
    r->id = res.value;
    const struct ledger_job *lj = ledger_job_find(c->l, r->id);
    if (lj != NULL && lj->reserved_run && r->eval)
        c->res->reserved_runs++;
    if (lj != NULL && lj->deadline_ms != 0)
        r->deadline = (double)(lj->deadline_ms - c->base_ms) / 1000.0;
    ledger_cmd_init(&cmd, LEDGER_CMD_TOKEN_REQUEST);
    cmd.job = r->id;
    cmd.count = cr__ask(c, r, &c->w->jobs[job]);
    if ((rc = cr__apply(c, &cmd, NULL)) != 0)
        return rc;
    return cr__sync(c);
}

/* A job arrives. A periodic run whose previous run still runs waits, unregistered and without
 * tokens, as the leader fires no period while a run is pending (rm/rmserver_recur.c): it is
 * fired when that run ends. */
static int cr__arrive(void *ctx, void *world, size_t job)
{
    struct cr *c = ctx;
    struct cr_run *r = &c->runs[job];
    int rc;
    c->w = world;
    if (!c->started) {
        c->started = 1;
        if ((rc = engine_after(c->w->eng, c->cfg->step_s / CR__RENEWS, cr__tick_ev, c, 0)) != 0 ||
            (rc = engine_at(c->w->eng, c->cfg->warmup_steps * c->cfg->step_s, cr__warmup_ev, c,
                            0)) != 0)
            return rc;
    }
    r->granted = 0;
    dispatch_set_tokens(c->w->jobs[job].core.disp, 0);
    if (r->periodic) {
        char name[24];
        cr__name(name, sizeof name, r->idx);
        const struct ledger_recurring *lr = ledger_recurring_find(c->l, name);
        if (lr != NULL && lr->pend_period >= 0) {
            r->waiting = 1;
            return 0;
        }
    }
    return cr__register(c, job);
}

/* A job ends: JOB_END with its skyline (the ending renewal's, jm/usage.h). */
static void cr__end(void *ctx, void *world, size_t job)
{
    struct cr *c = ctx;
    struct cr_run *r = &c->runs[job];
    struct cl_job *j = &c->w->jobs[job];
    (void)world;
    if (r->id == 0 || r->ended)
        return;
    double now = engine_now(c->w->eng);
    int64_t now_ms = (int64_t)llround(now * 1000.0);
    usage_add(&r->use, now_ms, -r->running);
    r->running = 0;
    usage_finish(&r->use, now_ms);
    r->ended = 1;
    r->failed = j->failed;
    r->finish = now;
    uint32_t sky[USAGE_MAX_STEPS];
    uint32_t n = usage_export(&r->use, sky, USAGE_MAX_STEPS);
    struct ledger_cmd cmd;
    ledger_cmd_init(&cmd, LEDGER_CMD_JOB_END);
    cmd.job = r->id;
    cmd.state = j->failed ? LEDGER_JOB_FAILED : LEDGER_JOB_DONE;
    cmd.started_ms = usage_started(&r->use) ? c->base_ms + usage_origin(&r->use) : 0;
    cmd.token_ms = usage_token_ms(&r->use);
    cmd.step_ms = usage_step_ms(&r->use);
    cmd.vals = n > 0 ? sky : NULL;
    cmd.nvals = n;
    const struct ledger_job *lj = ledger_job_find(c->l, r->id);
    if (lj != NULL && lj->reprovisioned > 0 && r->eval)
        c->res->reprov_steps++;
    int rc = cr__apply(c, &cmd, NULL);
    for (size_t i = 0; rc == 0 && r->periodic && i < c->nruns; i++) {
        struct cr_run *nx = &c->runs[i];
        if (nx->periodic && nx->idx == r->idx && nx->waiting) { /* the earliest one waiting */
            nx->waiting = 0;
            rc = cr__register(c, i);
            break;
        }
    }
    if (rc == 0)
        rc = cr__sync(c);
    if (rc != 0)
        cr__fail(c, rc, "a job's end");
}

/* ---- the runs as cluster jobs ---- */

/* The run's spec: its instance with every task's run time x f (the estimate) and x the run's
 * noise (what it takes), shape on the estimate. f gives the run the token-slice engine's work
 * (work_s token-seconds; its tasks are one token each, so the widths are the instance's own),
 * unless that makes its critical path longer than max_path_s (> 0): then less work. */
static int cr__spec(const struct cr *c, const struct cluster_workloads *wl, size_t tmpl,
                    double work_s, double max_path_s, size_t i, int noisy, struct spec **out,
                    struct cr_run *r, char *msg, size_t cap)
{
    const struct recurring_sim_config *cfg = c->cfg;
    int rc = cluster_workloads_make(wl, tmpl, cfg->seed + i, 1, 1, out, msg, cap);
    if (rc != 0)
        return rc;
    struct spec *sp = *out;
    struct arbiter_shape sh;
    if ((rc = shape_from_spec(sp, NULL, 1.0, 4096, SHAPE_CV_DEFAULT, &sh, msg, cap)) != 0)
        return rc;
    double f = sh.work > 0 ? work_s / sh.work : 1;
    if (max_path_s > 0 && f * sh.path > max_path_s)
        f = max_path_s / sh.path;
    r->shape = sh;
    r->shape.work *= f;
    r->shape.work_sd *= f;
    r->shape.path *= f;
    r->shape.path_sd *= f;
    struct rng g;
    rng_seed_stream(&g, cfg->seed, CR__STREAM | i);
    double run = 1;
    if (noisy) { /* the token-slice engine's run factor: lognormal, mean 1; slow runs 1.5-2x */
        run = exp(cfg->run_sigma * rng_normal(&g) - 0.5 * cfg->run_sigma * cfg->run_sigma);
        if (rng_bernoulli(&g, cfg->slow_prob))
            run *= 1.5 + 0.5 * rng_unif(&g);
    }
    double *stage = mem_calloc(sp->nstages ? sp->nstages : 1, sizeof *stage);
    if (stage == NULL)
        return ERR_NOMEM;
    for (size_t s = 0; s < sp->nstages; s++)
        stage[s] =
            noisy
                ? exp(cfg->stage_sigma * rng_normal(&g) - 0.5 * cfg->stage_sigma * cfg->stage_sigma)
                : 1;
    for (size_t t = 0; t < sp->ntasks; t++)
        sp->tasks[t].runtime_s *= f * run * stage[sp->tasks[t].stage];
    mem_free(stage);
    return 0;
}

static int cr__jobs(struct cr *c, struct cluster_job **jobsp, struct spec ***specsp, char *msg,
                    size_t cap)
{
    const struct recurring_sim_jobs *s = c->s;
    const struct recurring_sim_config *cfg = c->cfg;
    uint32_t end = cfg->warmup_steps + cfg->eval_steps;
    size_t n = 0;
    for (size_t p = 0; p < s->np; p++)
        n += (end + s->p[p].period - 1) / s->p[p].period;
    for (size_t a = 0; a < s->na; a++)
        n += s->a[a].arrive < end;
    struct cluster_workloads *wl = NULL;
    int rc = cluster_workloads_load(cfg->workloads, 1.0, 1.0, 4096, &wl, msg, cap);
    if (rc != 0)
        return rc;
    c->runs = mem_calloc(n ? n : 1, sizeof *c->runs);
    struct cluster_job *jobs = mem_calloc(n ? n : 1, sizeof *jobs);
    struct spec **specs = mem_calloc(n ? n : 1, sizeof *specs);
    *jobsp = jobs;
    *specsp = specs;
    c->nalloc = specs != NULL ? n : 0;
    if (c->runs == NULL || jobs == NULL || specs == NULL) {
        cluster_workloads_destroy(&wl);
        return ERR_NOMEM;
    }
    size_t i = 0;
    int64_t day = RECURRING_SIM_DAY;
    for (size_t p = 0; rc == 0 && p < s->np; p++) {
        const struct rsim_periodic *pj = &s->p[p];
        for (uint32_t t = 0; rc == 0 && t < end; t += pj->period, i++) {
            struct cr_run *r = &c->runs[i];
            r->periodic = 1;
            r->idx = p;
            r->release = t * cfg->step_s;
            r->period = (day + t) / pj->period; /* the ledger's clock starts a day early */
            r->eval = t >= cfg->warmup_steps;
            rc = cr__spec(c, wl, pj->tmpl, pj->sh.work_est * cfg->step_s,
                          0.5 * pj->period * cfg->step_s, i, 1, &specs[i], r, msg, cap);
            jobs[i] = (struct cluster_job){.spec = specs[i], .arrival_s = r->release};
        }
    }
    for (size_t a = 0; rc == 0 && a < s->na; a++) {
        const struct rsim_adhoc *aj = &s->a[a];
        if (aj->arrive >= end)
            continue;
        struct cr_run *r = &c->runs[i];
        r->idx = a;
        r->release = aj->arrive * cfg->step_s;
        r->dl_s = aj->deadline * cfg->step_s;
        r->eval = aj->arrive >= cfg->warmup_steps;
        rc = cr__spec(c, wl, aj->tmpl, aj->sh.work_est * cfg->step_s, 0, i, 1, &specs[i], r, msg,
                      cap);
        jobs[i] = (struct cluster_job){.spec = specs[i], .arrival_s = r->release};
        i++;
    }
    c->nruns = i;
    for (size_t k = 0; k < c->nruns; k++)
        usage_init(&c->runs[k].use, USAGE_MAX_STEPS);
    cluster_workloads_destroy(&wl);
    return rc;
}

/* The simulated RM's ledger: the virtual cluster and the recurring jobs. */
static int cr__ledger(struct cr *c)
{
    const struct recurring_sim_config *cfg = c->cfg;
    if ((c->l = ledger_new()) == NULL)
        return ERR_NOMEM;
    int64_t step_ms = (int64_t)llround(cfg->step_s * 1000.0);
    c->base_ms = (int64_t)RECURRING_SIM_DAY * step_ms;
    struct ledger_cmd cmd;
    ledger_cmd_init(&cmd, LEDGER_CMD_VC_SET);
    snprintf(cmd.vc, sizeof cmd.vc, "%s", CR__VC);
    cmd.count = cfg->capacity;
    int rc = cr__apply(c, &cmd, NULL);
    static const char spec[] = "{}";
    for (size_t p = 0; rc == 0 && p < c->s->np; p++) {
        const struct rsim_periodic *pj = &c->s->p[p];
        ledger_cmd_init(&cmd, LEDGER_CMD_RECUR_ADD);
        cr__name(cmd.name, sizeof cmd.name, p);
        snprintf(cmd.vc, sizeof cmd.vc, "%s", CR__VC);
        cmd.period_ms = pj->period * step_ms;
        cmd.deadline_ms = pj->deadline * step_ms;
        /* ρ (Morpheus §7): only lowcost_reprov reprovisions; 1/1000 leaves the others none */
        cmd.weight_milli =
            c->pol == RECURRING_SIM_LOWCOST_REPROV ? (uint32_t)llround(cfg->rho * 1000.0) : 1;
        cmd.text = spec;
        cmd.text_len = sizeof spec - 1;
        rc = cr__apply(c, &cmd, NULL);
    }
    return rc;
}

static int cr__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The figures, as recurring_sim_run's. */
static int cr__figures(struct cr *c, double stop_s)
{
    struct recurring_sim_result *out = c->res;
    double *lat = mem_calloc(c->nruns + 1, sizeof *lat);
    if (lat == NULL)
        return ERR_NOMEM;
    size_t nl = 0, dl = 0, dl_missed = 0, dl_admitted = 0;
    for (size_t i = 0; i < c->nruns; i++) {
        const struct cr_run *r = &c->runs[i];
        if (!r->eval)
            continue;
        int met = r->ended && !r->failed && r->finish <= r->deadline + 1e-9;
        if (r->periodic) {
            char name[24];
            cr__name(name, sizeof name, r->idx);
            const struct ledger_recurring *lr = ledger_recurring_find(c->l, name);
            if (r->deadline > 0 || (r->id == 0 && lr != NULL && ledger_recurring_deadline(lr))) {
                out->runs++;
                out->missed += !met;
            }
            continue;
        }
        out->adhoc++;
        lat[nl++] = (r->ended ? r->finish : stop_s) - r->release;
        if (r->dl_s > 0) {
            dl++;
            dl_missed += !met;
            dl_admitted += !r->refused;
        }
    }
    qsort(lat, nl, sizeof *lat, cr__cmp_double);
    if (nl > 0) {
        out->adhoc_latency_p50_s = slo_percentile(lat, nl, 50);
        out->adhoc_latency_p90_s = slo_percentile(lat, nl, 90);
    }
    mem_free(lat);
    out->adhoc_deadline_missed_fraction = dl ? (double)dl_missed / dl : 0;
    out->adhoc_admitted_fraction = dl ? (double)dl_admitted / dl : 1;
    out->slo_violation_fraction = out->runs ? (double)out->missed / out->runs : 0;
    out->utilization = c->used_int / ((double)c->cfg->capacity * c->cfg->eval_steps);
    /* the plan's peak over its LCM (a day covers it), all reservations together */
    double peak = 0;
    for (uint32_t t = 0; t < RECURRING_SIM_DAY; t++) {
        int64_t at = c->base_ms + (int64_t)llround(t * c->cfg->step_s * 1000.0);
        double v = ledger_plan_at(c->l, 0, at);
        peak = v > peak ? v : peak;
    }
    out->plan_peak_tokens = peak;
    out->peak_tokens = c->pol != RECURRING_SIM_NONE ? peak : out->periodic_grant_peak;
    return 0;
}

int recurring_cluster_run(const recurring_sim_jobs_t *s, const struct recurring_sim_config *cfg,
                          enum recurring_sim_policy p, struct recurring_sim_result *out, char *msg,
                          size_t cap)
{
    memset(out, 0, sizeof *out);
    if (msg != NULL && cap > 0)
        msg[0] = '\0';
    struct cr c = {.s = s, .cfg = cfg, .pol = p, .res = out, .msg = msg, .msgcap = cap};
    c.end_s = (cfg->warmup_steps + cfg->eval_steps) * cfg->step_s;
    struct cluster_job *jobs = NULL;
    struct spec **specs = NULL;
    int rc = cr__ledger(&c);
    if (rc == 0)
        rc = cr__jobs(&c, &jobs, &specs, msg, cap);
    struct cluster_hooks hooks = {.ctx = &c, .arrive = cr__arrive, .end = cr__end};
    struct cluster_config cc;
    cluster_config_default(&cc);
    /* the virtual cluster is the whole cluster: capacity cores, no other tenants, tasks of one
     * token, no opportunistic work beyond the grant; time constants stretched with the step */
    double scale = cfg->step_s / 12.0 > 1 ? cfg->step_s / 12.0 : 1;
    cc.nodes = (size_t)ceil(cfg->capacity / CR__NODE_CPUS);
    cc.node_cpus = cfg->capacity < CR__NODE_CPUS ? cfg->capacity : CR__NODE_CPUS;
    cc.rack_size = 20;
    cc.seed = cfg->seed;
    cc.no_io = 1;
    cc.opp_factor = 1.0; /* the daemon's default: opportunistic work up to the grant again */
    cc.tokens = 1;
    cc.bg_util = 0;
    cc.heartbeat_s = scale;
    cc.rm_delay_s = 0.5 * scale;
    cc.tick_s = 0.25 * scale;
    cc.node_timeout_s = 3.0 * scale;
    cc.max_time_s = c.end_s + RECURRING_SIM_DAY * cfg->step_s;
    cc.hooks = &hooks;
    engine_noise_none(&cc.noise);
    cc.noise.runtime_sigma = 0.1;
    struct cluster_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0 && c.nruns > 0) {
        rc = cluster_run(&cc, jobs, c.nruns, &res, msg, cap);
        if (c.err != 0)
            rc = c.err;
    }
    if (rc == 0)
        rc = cr__figures(&c, res.sim_time_s);
    mem_free(res.qtimes);
    mem_free(res.trace);
    mem_free(res.job_stats);
    for (size_t i = 0; specs != NULL && i < c.nalloc; i++)
        spec_destroy(&specs[i]);
    mem_free(specs);
    mem_free(jobs);
    mem_free(c.runs);
    ledger_destroy(&c.l);
    if (rc != 0 && msg != NULL && cap > 0 && msg[0] == '\0')
        err_fmt(msg, cap, rc, "%s", err_text(rc));
    return rc;
}
