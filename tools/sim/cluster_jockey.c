/* cluster_jockey.c - Jockey's control loop in a simulated JM (cluster.h, struct cluster_jockey;
 * docs/jockey.md): the daemon's controller configuration and observation (jm/controller.h,
 * controller_config_jm and controller_obs_jm) at the same period. Every period the JM observes the
 * stages done (jm/dag), the progress (jm/progress), the grant, the spare capacity and the observed
 * speed (finished tasks' run time against jsim_plan_task_expected), steps jm/controller, and asks
 * for its tokens; the simulated RM grants them at once (one job's virtual cluster of max_tokens),
 * and the grant reaches the JM: the opportunistic allowance (jm/grant.h, the daemon's rule), then
 * cl_job_grant: the dispatcher's tokens, downgrades with jm/attempt.h's grace when the grant is
 * below the regular work in flight, upgrades. */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/controller.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "tools/sim/cluster_internal.h"

struct cl_jockey {
    struct cluster_jockey cfg;
    struct jsim_plan own; /* the daemon's plan without a profile (cfg.plan NULL) */
    const struct jsim_plan *plan;
    controller_t *ctrl;
    int *done; /* per stage: tasks succeeded */
    uint32_t granted;
    int first_done; /* NOADAPT: the first decision is taken */
    int changed;
    double run_actual_s, run_expected_s;
    double last_t, alloc_int, alloc_before; /* token-seconds; before the deadline change */
    double change_t;
    double work_s;
    int first_tokens, peak_tokens;
    uint64_t downgrades, upgrades;
    double *remaining, *estimate; /* scratch for downgrades */
};

static void cl_jk__fail(struct cl_world *w, int rc)
{
    if (w->err == 0)
        w->err = rc;
    engine_stop(w->eng);
}

int cl_jockey_init(struct cl_world *w, struct cl_job *j, const struct cluster_jockey *cfg)
{
    if (!(cfg->deadline_s > 0) || cfg->max_tokens < 1 || cfg->policy < CLUSTER_JOCKEY_CONTROL ||
        cfg->policy > CLUSTER_JOCKEY_FIXED ||
        (cfg->policy == CLUSTER_JOCKEY_FIXED && cfg->fixed_tokens < 1))
        return ERR_INVAL;
    struct cl_jockey *k = mem_calloc(1, sizeof *k);
    if (k == NULL)
        return ERR_NOMEM;
    j->jk = k;
    k->cfg = *cfg;
    size_t nt = j->spec->ntasks ? j->spec->ntasks : 1;
    k->done = mem_calloc(j->spec->nstages ? j->spec->nstages : 1, sizeof *k->done);
    k->remaining = mem_calloc(nt, sizeof *k->remaining);
    k->estimate = mem_calloc(nt, sizeof *k->estimate);
    if (k->done == NULL || k->remaining == NULL || k->estimate == NULL)
        return ERR_NOMEM;
    if (cfg->policy == CLUSTER_JOCKEY_FIXED)
        return 0;
    char msg[256];
    int rc;
    k->plan = cfg->plan;
    if (k->plan == NULL) { /* the daemon's plan without a profile: the spec's estimates */
        rc = jsim_plan_init_sized(&k->own, j->spec, NULL, PROGRESS_TOTALWORK_Q,
                                  w->cfg.grain ? 0 : -1, 0, msg, sizeof msg);
        if (rc != 0)
            return rc;
        k->plan = &k->own;
    }
    struct utility ut;
    if (cfg->utility != NULL)
        ut = *cfg->utility;
    else if ((rc = utility_init_deadline(&ut, cfg->deadline_s)) != 0)
        return rc;
    struct controller_config cc; /* the daemon's (jm/controller.h), its default period */
    controller_config_jm(&cc, cfg->deadline_s, 0, cfg->max_tokens, w->cfg.opp_factor);
    controller_predict_fn *fn;
    void *ctx;
    if (cfg->policy == CLUSTER_JOCKEY_AMDAHL) {
        fn = controller_predict_amdahl;
        ctx = (void *)&k->plan->amdahl;
    } else {
        jsim_plan_predictor(k->plan, &fn, &ctx);
    }
    k->ctrl = controller_new(&cc, &ut, fn, ctx);
    return k->ctrl != NULL ? 0 : ERR_NOMEM;
}

void cl_jockey_close(struct cl_job *j)
{
    struct cl_jockey *k = j->jk;
    if (k == NULL)
        return;
    controller_destroy(&k->ctrl);
    jsim_plan_close(&k->own);
    mem_free(k->done);
    mem_free(k->remaining);
    mem_free(k->estimate);
    mem_free(k);
    j->jk = NULL;
}

/* Token-seconds held so far. */
static void cl_jk__account(struct cl_jockey *k, double now)
{
    if (now > k->last_t)
        k->alloc_int += (double)k->granted * (now - k->last_t);
    k->last_t = now;
}

/* The RM's grant reaches the JM: tokens, allowance, downgrades, upgrades. */
static void cl_jk__grant(struct cl_world *w, struct cl_job *j, int tokens)
{
    struct cl_jockey *k = j->jk;
    if (tokens < 1)
        tokens = 1;
    if (tokens > k->cfg.max_tokens)
        tokens = k->cfg.max_tokens;
    double now = engine_now(w->eng);
    cl_jk__account(k, now);
    if (k->first_tokens == 0)
        k->first_tokens = tokens;
    if (tokens > k->peak_tokens)
        k->peak_tokens = tokens;
    k->granted = (uint32_t)tokens;
    /* the allowance by the daemon's rule (jm/grant.h): the virtual cluster is max_tokens, the
       nodes' tokens beyond it come from the view at the default token size */
    uint32_t cap = (uint32_t)k->cfg.max_tokens;
    grant_allowance(j->core.disp, w->cfg.opp_factor, k->granted, cap,
                    grant_beyond(w->view, 0, 0, cap));
    size_t up = 0;
    k->downgrades += cl_job_grant(w, j, w->cfg.grain ? grain_units(k->granted) : k->granted,
                                  k->remaining, k->estimate, &up);
    k->upgrades += up;
}

/* One control period: the daemon's observation (controller_obs_jm), a controller step. */
static void cl_jk__step(struct cl_world *w, struct cl_job *j)
{
    struct cl_jockey *k = j->jk;
    if (k->ctrl == NULL || (k->cfg.policy == CLUSTER_JOCKEY_NOADAPT && k->first_done))
        return;
    for (size_t s = 0; s < j->spec->nstages; s++)
        k->done[s] = (int)dag_stage_count(j->core.dag, s, DAG_SUCCEEDED);
    struct controller_obs obs;
    memset(&obs, 0, sizeof obs);
    obs.t_r = engine_now(w->eng) - j->arrival;
    obs.progress = progress_eval(&k->plan->progress, k->done);
    obs.done = k->done;
    controller_obs_jm(&obs, (uint32_t)k->cfg.max_tokens, k->granted, k->run_actual_s,
                      k->cfg.speed ? k->run_expected_s : 0, k->plan->amdahl.P0);
    struct controller_out out;
    int rc = controller_step(k->ctrl, &obs, &out);
    if (rc != 0) {
        cl_jk__fail(w, rc);
        return;
    }
    k->first_done = 1;
    if (out.tokens != (int)k->granted)
        cl_jk__grant(w, j, out.tokens);
}

static void cl_jk__period_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    if (j->done || j->jk == NULL || j->jk->ctrl == NULL)
        return;
    cl_jk__step(w, j);
    if (j->jk->cfg.policy == CLUSTER_JOCKEY_NOADAPT)
        return;
    int rc = engine_after(e, controller_config(j->jk->ctrl)->period_s, cl_jk__period_ev, w, job);
    if (rc != 0)
        cl_jk__fail(w, rc);
}

/* The deadline changes (`paddock job deadline`): controller_set_deadline, a step. */
static void cl_jk__change_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    struct cl_jockey *k = j->jk;
    if (j->done || k == NULL)
        return;
    cl_jk__account(k, engine_now(e));
    k->alloc_before = k->alloc_int;
    k->change_t = engine_now(e);
    k->changed = 1;
    k->cfg.deadline_s = k->cfg.change_to_s;
    if (k->ctrl != NULL && k->cfg.policy != CLUSTER_JOCKEY_NOADAPT &&
        controller_set_deadline(k->ctrl, k->cfg.change_to_s) == 0)
        cl_jk__step(w, j);
}

int cl_jockey_arrive(struct cl_world *w, struct cl_job *j)
{
    struct cl_jockey *k = j->jk;
    k->last_t = engine_now(w->eng);
    k->granted = 0;
    if (k->ctrl == NULL) {
        cl_jk__grant(w, j, k->cfg.fixed_tokens);
    } else {
        cl_jk__step(w, j);
        if (w->err != 0)
            return w->err;
        int rc =
            engine_after(w->eng, controller_config(k->ctrl)->period_s, cl_jk__period_ev, w, j->idx);
        if (rc != 0)
            return rc;
    }
    if (k->cfg.change_at_s > 0 && k->cfg.change_to_s > 0)
        return engine_after(w->eng, k->cfg.change_at_s, cl_jk__change_ev, w, j->idx);
    return 0;
}

void cl_jockey_done(struct cl_world *w, struct cl_job *j, size_t task, double exec_s)
{
    struct cl_jockey *k = j->jk;
    (void)w;
    k->work_s += exec_s;
    if (k->plan != NULL) { /* the speed signal's sums (controller_obs_jm) */
        k->run_actual_s += exec_s;
        k->run_expected_s += jsim_plan_task_expected(k->plan, j->spec, task);
    }
}

void cl_jockey_stat(const struct cl_world *w, const struct cl_job *j, struct cluster_job_stat *st)
{
    memset(st, 0, sizeof *st);
    st->done = j->done && !j->failed;
    st->failed = j->failed;
    double end = j->done ? j->finish : w->last_finish;
    st->makespan_s = end - j->arrival;
    const struct cl_jockey *k = j->jk;
    if (k == NULL)
        return;
    double integ = k->alloc_int + (end > k->last_t ? (double)k->granted * (end - k->last_t) : 0);
    double span = end - j->arrival;
    st->work_s = k->work_s;
    st->deadline_s = k->cfg.deadline_s;
    st->alloc_mean = span > 0 ? integ / span : (double)k->granted;
    if (k->changed) {
        double b = k->change_t - j->arrival, a = end - k->change_t;
        st->alloc_before = b > 0 ? k->alloc_before / b : 0;
        st->alloc_after = a > 0 ? (integ - k->alloc_before) / a : 0;
    }
    st->first_tokens = k->first_tokens;
    st->peak_tokens = k->peak_tokens;
    st->downgrades = k->downgrades;
    st->upgrades = k->upgrades;
}
