/* jmd_jockey.c - the Jockey control loop inside the JM (Jockey §4; docs/jockey.md): the profile
 * of an earlier run (or the Amdahl fallback), the C(p, a) table, the controller stepped every
 * period, the guaranteed-token target and the opportunistic allowance. */
#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/daemon/jmd.h"
#include "jm/eta.h"
#include "jm/shape.h"

/* A job without a deadline asks for its width (jm/grant.h, grant_width; the simulated JM's first
 * request is the same): a job asking for less ran the rest as opportunistic work that its own
 * regular tasks then displaced. At most max_tokens. */
static int jmd_jockey__fixed(jmd_t *j)
{
    return (int)grant_width(j->spec, j->core.disp, GRAIN_UNITS,
                            j->o.max_tokens > 0 ? (uint32_t)j->o.max_tokens : 1);
}

static void jmd_jockey__tail(jmd_t *j);

/* The plan (C(p, a) in token units at the current token size) and the controller. */
static void jmd_jockey__build(jmd_t *j)
{
    char msg[512];
    struct profile prof;
    profile_init(&prof);
    int have_prof = 0;
    if (j->o.profile_dir) {
        int runs = 0;
        int rc = profile_load_job(&prof, j->o.profile_dir, j->spec->name, PROFILE_KEEP, &runs, msg,
                                  sizeof msg);
        if (rc == 0) {
            have_prof = 1;
            log_info("profile of \"%s\": %d stages, merged from %d earlier run%s", j->spec->name,
                     prof.nstages, runs, runs == 1 ? "" : "s");
        } else if (rc == ERR_NOTFOUND) {
            log_info("no profile for job \"%s\" yet (%s): Amdahl model from the spec's estimates",
                     j->spec->name, msg);
        } else {
            log_warn("profile of \"%s\" unusable (%s): Amdahl model from the spec's estimates",
                     j->spec->name, msg);
        }
    }
    int rc = jsim_plan_init_sized(&j->plan, j->spec, have_prof ? &prof : NULL, PROGRESS_TOTALWORK_Q,
                                  j->token_cpu, j->token_mem_mb, msg, sizeof msg);
    profile_close(&prof);
    if (rc) {
        log_warn("no job model (%s): fixed allocation", msg);
    } else {
        j->have_plan = 1;
        /* The table is the controller's: a job without a deadline or utility has none, and its
           ETA simulates what is left instead, so it starts without the table's tens of ms
           (issue 24, lean job start). */
        if (have_prof && (j->has_deadline || j->spec->nutility > 0)) {
            struct jsim_table_config tc;
            jsim_table_config_default(&tc);
            if (tc.max_tokens <= 0 || tc.max_tokens > j->o.max_tokens)
                tc.max_tokens = j->o.max_tokens;
            struct jsim_rng rng;
            jsim_rng_seed(&rng, j->rng ? j->rng : 1);
            uint64_t t0 = clock_mono_ns();
            rc = jsim_plan_build_table(&j->plan, &tc, &rng, msg, sizeof msg);
            double ms = (double)(clock_mono_ns() - t0) / 1e6;
            if (rc)
                log_warn("no C(p, a) table (%s): Amdahl model", msg);
            else
                log_info("C(p, a) table built in %.1f ms: %ld simulated runs, %ld attempts, "
                         "%d allocations, peak parallelism %d",
                         ms, j->plan.cost.runs, j->plan.cost.task_attempts, j->plan.cost.nallocs,
                         j->plan.cost.peak_parallelism);
        }
    }
    struct utility ut;
    if (j->have_plan && utility_init_spec(&ut, j->spec, msg, sizeof msg) == 0) {
        if (!j->has_deadline) {
            j->has_deadline = 1;
            j->deadline_s = utility_deadline(&ut);
        }
        struct controller_config cc;
        controller_config_jm(&cc, j->deadline_s, j->o.control_period_s, j->o.max_tokens,
                             j->o.opp_factor);
        controller_predict_fn *fn;
        void *ctx;
        jsim_plan_predictor(&j->plan, &fn, &ctx);
        j->ctrl = controller_new(&cc, &ut, fn, ctx);
        if (!j->ctrl)
            log_warn("cannot make the controller: fixed allocation");
        else
            log_info("Jockey: deadline %.3f s, control period %.3f s, dead zone %.3f s, %s",
                     j->deadline_s, cc.period_s, cc.deadzone_s,
                     j->plan.table ? "simulated C(p, a)" : "Amdahl predictor");
    }
    if (j->has_deadline && j->have_plan && j->deadline_s > 0) {
        double work = j->plan.amdahl.P0;
        j->oracle = (int)ceil(work / j->deadline_s);
        if (j->oracle < 1)
            j->oracle = 1;
    }
    j->target = jmd_jockey__fixed(j);
    j->opp_allowance = (int)floor(j->o.opp_factor * j->target);
}

int jmd_jockey_init(jmd_t *j)
{
    j->done_buf = mem_calloc(j->spec->nstages ? j->spec->nstages : 1, sizeof *j->done_buf);
    if (!j->done_buf)
        return ERR_NOMEM;
    j->has_deadline = j->spec->has_deadline || j->o.deadline_s > 0;
    j->deadline_s = j->o.deadline_s > 0 ? j->o.deadline_s : j->spec->deadline_s;
    jmd_jockey__build(j);
    if (j->ctrl)
        jmd_jockey_step(j);
    else
        log_info("fixed allocation: %d tokens (the job's width)", j->target);
    return 0;
}

void jmd_jockey_resize(jmd_t *j)
{
    if (j->outcome != JMD_RUNNING)
        return;
    if (j->have_plan && j->plan.sized && j->plan.token_cpu == j->token_cpu &&
        j->plan.token_mem_mb == j->token_mem_mb)
        return;
    /* The deadline may have moved since the start (an admin's): keep it. */
    int has_deadline = j->has_deadline;
    double deadline_s = j->deadline_s;
    controller_destroy(&j->ctrl);
    if (j->have_plan)
        jsim_plan_close(&j->plan);
    j->have_plan = 0;
    j->has_deadline = j->spec->has_deadline || j->o.deadline_s > 0;
    j->deadline_s = j->o.deadline_s > 0 ? j->o.deadline_s : j->spec->deadline_s;
    jmd_jockey__build(j);
    if (has_deadline && deadline_s > 0 && deadline_s != j->deadline_s)
        jmd_jockey_deadline(j, deadline_s);
    else if (j->ctrl)
        jmd_jockey_step(j);
    else
        jmd_jockey__tail(j);
    jmd_out_tokens(j);
}

void jmd_jockey_close(jmd_t *j)
{
    controller_destroy(&j->ctrl);
    if (j->have_plan)
        jsim_plan_close(&j->plan);
    j->have_plan = 0;
    mem_free(j->done_buf);
    j->done_buf = NULL;
}

/* A job without a controller asks for its width; in its tail it asks for what its unfinished
 * tasks need once that is at most half its target (jm/grant.h, grant_tail). */
static void jmd_jockey__tail(jmd_t *j)
{
    if (j->target <= 1)
        return;
    uint32_t left =
        grant_tail(j->core.dag, j->core.disp, j->spec->ntasks, GRAIN_UNITS, (uint32_t)j->target);
    if (left == (uint32_t)j->target)
        return;
    log_info("%u tokens left: asking for that many instead of %d", left, j->target);
    j->target = (int)left;
    jmd_out_tokens(j);
}

/* The q-quantile of n ascending samples at (k + 0.5) / n, linear between them. */
static double jmd_jockey__quantile(const double *v, int n, double q)
{
    if (n <= 1)
        return n == 1 ? v[0] : 0;
    double x = q * n - 0.5;
    if (x <= 0)
        return v[0];
    if (x >= n - 1)
        return v[n - 1];
    int k = (int)x;
    return v[k] + (x - k) * (v[k + 1] - v[k]);
}

/* What the controller and the ETA see now: elapsed time, progress, stages done. */
static void jmd_jockey__observe(jmd_t *j, struct controller_obs *obs)
{
    for (size_t s = 0; s < j->spec->nstages; s++)
        j->done_buf[s] = (int)dag_stage_count(j->core.dag, s, DAG_SUCCEEDED);
    memset(obs, 0, sizeof *obs);
    obs->t_r = jmd_elapsed_s(j);
    obs->progress = progress_eval(&j->plan.progress, j->done_buf);
    obs->done = j->done_buf;
}

/* How much slower than the model the job's finished tasks ran (1: as modelled), damped by a
 * prior worth 5% of the job's work so the first few tasks do not swing it. */
static double jmd_jockey__speed(const jmd_t *j)
{
    if (!(j->run_expected_s > 0))
        return 1.0;
    double prior = 0.05 * j->plan.amdahl.P0;
    double speed = (j->run_actual_s + prior) / (j->run_expected_s + prior);
    return speed > 0.25 ? (speed < 4.0 ? speed : 4.0) : 0.25;
}

/* The capacity the job actually gets: its grant (before the first one, what it asks for) plus
 * the opportunistic allowance it may use, never more than the virtual cluster holds. */
static int jmd_jockey__capacity(const jmd_t *j)
{
    uint64_t g = j->granted > 0 ? j->granted : (uint64_t)(j->target > 0 ? j->target : 1);
    uint64_t a = g + dispatch_allowance(j->core.disp) / GRAIN_UNITS;
    if (j->capacity > 0 && a > j->capacity)
        a = j->capacity;
    return a < 1 ? 1 : a > INT32_MAX ? INT32_MAX : (int)a;
}

/* Simulated runs per ETA: one when the model has no noise (the spec's estimates), else enough
 * for the quantiles while a refresh costs about a million simulated tasks at most. */
#define JMD_JOCKEY__ETA_RUNS 15

/* The remaining time from the JM's simulator (jm/jsim.h, jsim_run_rest) over the tasks not yet
 * done, under the capacity the job gets now: the list-schedule model admission uses. Running
 * tasks hold their units until their expected end. 0 and p50/p95 of the remaining time, or
 * an error (the caller falls back to C(p, a)). */
static int jmd_jockey__eta_sim(jmd_t *j, double *p50, double *p95)
{
    size_t n = j->spec->ntasks;
    uint8_t *state = mem_calloc(n, sizeof *state);
    double *left = mem_calloc(n, sizeof *left);
    int rc = ERR_NOMEM;
    if (state == NULL || left == NULL)
        goto out;
    double speed = jmd_jockey__speed(j);
    int64_t now = jmd_now(j);
    for (size_t i = 0; i < n; i++) {
        const struct jmd_task *t = &j->tasks[i];
        if (dag_state(j->core.dag, i) == DAG_SUCCEEDED) {
            state[i] = JSIM_REST_DONE;
        } else if (t->inflight && t->running) {
            double want = jsim_plan_task_expected(&j->plan, j->spec, i) * speed;
            double ran = (double)(now - t->run_mono) / 1000.0;
            state[i] = JSIM_REST_RUNNING;
            /* one that overran its estimate is taken to be near its end */
            left[i] = want - ran > 0.1 * want ? want - ran : 0.1 * want;
        }
    }
    int runs = j->plan.from_profile ? JMD_JOCKEY__ETA_RUNS : 1;
    if (runs > 1 && (size_t)runs * n > 1000000)
        runs = n < 1000000 ? (int)(1000000 / n) : 1;
    double c[JMD_JOCKEY__ETA_RUNS];
    struct jsim_rng rng;
    jsim_rng_seed(&rng, j->rng ? j->rng : 1);
    int a = jmd_jockey__capacity(j);
    /* admission's model (jm/shape.h): each task's initialization at its stage's median, not the
     * profile's queueing tail, which made the ETA at half done 30-49% late on wide workflows */
    struct jsim_model med;
    rc = jsim_model_init_median(&med, &j->plan.model);
    if (rc != 0)
        goto out;
    for (int r = 0; r < runs; r++) {
        struct jsim_run_stats st;
        rc = jsim_run_rest(j->plan.job, &med, a, state, left, speed, &rng, &st);
        if (rc != 0)
            break;
        c[r] = st.makespan;
    }
    jsim_model_close(&med);
    if (rc != 0)
        goto out;
    for (int x = 1; x < runs; x++) /* insertion sort: a handful of values */
        for (int y = x; y > 0 && c[y - 1] > c[y]; y--) {
            double tmp = c[y];
            c[y] = c[y - 1];
            c[y - 1] = tmp;
        }
    *p50 = jmd_jockey__quantile(c, runs, 0.5);
    /* A run without noise has no spread: the controller's slack stands in for it. */
    double slack = j->ctrl ? controller_config(j->ctrl)->slack : 1.2;
    *p95 = runs > 1 ? jmd_jockey__quantile(c, runs, 0.95) : *p50 * slack;
    rc = 0;
out:
    mem_free(state);
    mem_free(left);
    return rc;
}

void jmd_jockey_eta(jmd_t *j)
{
    if (!j->have_plan || j->outcome != JMD_RUNNING)
        return;
    struct controller_obs obs;
    jmd_jockey__observe(j, &obs);
    j->eta_done = dag_count(j->core.dag, DAG_SUCCEEDED);
    j->eta_mono = jmd_now(j);
    double p50, p95;
    int rc = jmd_jockey__eta_sim(j, &p50, &p95);
    if (rc != 0) {
        /* The simulator cannot place the state (a done task whose producer runs again): C(p, a)
           at the tokens granted, as before. */
        double a = j->granted > 0 ? (double)j->granted : 1.0;
        double c[CONTROLLER_MAX_SAMPLES];
        int n;
        if (j->plan.table)
            n = controller_predict_table(j->plan.table, &obs, a, c, CONTROLLER_MAX_SAMPLES);
        else
            n = controller_predict_amdahl(&j->plan.amdahl, &obs, a, c, CONTROLLER_MAX_SAMPLES);
        if (n <= 0)
            return;
        double slack = j->ctrl ? controller_config(j->ctrl)->slack : 1.2;
        double speed = jmd_jockey__speed(j);
        p50 = jmd_jockey__quantile(c, n, 0.5) * (speed > 1 ? speed : 1);
        p95 = (n > 1 ? jmd_jockey__quantile(c, n, 0.95) : p50 * slack) * (speed > 1 ? speed : 1);
    }
    /* the upper value from admission's model once the RM sent the job's spread (jm/eta.h) */
    struct eta_band b;
    if (eta_band(obs.t_r, p50, p95, j->own_spread, j->own_factor, &b) != 0)
        return;
    j->eta_s = b.p50_s;
    j->eta_p95_s = b.p95_s;
    j->eta_from_spread = b.from_spread;
    j->eta_p95_runs_s = b.p95_runs_s;
}

void jmd_jockey_tick(jmd_t *j)
{
    if (!j->have_plan || j->outcome != JMD_RUNNING)
        return;
    size_t done = dag_count(j->core.dag, DAG_SUCCEEDED);
    /* Fresh when tasks finished since the last one, at most every tick and, for a large job,
       no more often than its size makes cheap (a simulated task costs well under a
       microsecond; a refresh of a 100,000-task job every 2 s). */
    int64_t every = (int64_t)(j->spec->ntasks / 50);
    if (done != j->eta_done && jmd_now(j) - j->eta_mono >= every)
        jmd_jockey_eta(j);
    if (j->eta_half_s <= 0 && done * 2 >= j->spec->ntasks && j->eta_s > 0) {
        if (done != j->eta_done)
            jmd_jockey_eta(j);
        j->eta_half_s = j->eta_s;
        j->eta_half_p95_s = j->eta_p95_s;
        j->eta_half_p95_runs_s = j->eta_p95_runs_s;
        log_info("half the tasks done at %.3f s: ETA %.3f s (p95 %.3f s)", jmd_elapsed_s(j),
                 j->eta_s, j->eta_p95_s);
    }
}

void jmd_jockey_step(jmd_t *j)
{
    if (j->outcome != JMD_RUNNING)
        return;
    jmd_jockey_eta(j);
    if (!j->ctrl) {
        jmd_jockey__tail(j);
        return;
    }
    struct controller_obs obs;
    jmd_jockey__observe(j, &obs);
    controller_obs_jm(&obs, j->capacity, j->granted, j->run_actual_s, j->run_expected_s,
                      j->plan.amdahl.P0);
    struct controller_out out;
    int rc = controller_step(j->ctrl, &obs, &out);
    if (rc) {
        log_warn("controller step failed: %s", err_text(rc));
        return;
    }
    static const char *act[] = {"first", "raise", "lower", "hold", "retarget", "short"};
    if (out.tokens != j->target || out.action != CONTROLLER_HOLD)
        log_info("Jockey t=%.2f p=%.3f: %s -> %d tokens (raw %d, smoothed %.2f, granted %d, "
                 "finish ~%.2f s), opportunistic %d",
                 obs.t_r, obs.progress, act[out.action % 6], out.tokens, out.raw, out.smoothed,
                 out.held, out.predicted_finish, out.opportunistic);
    j->target = out.tokens;
    j->raw = out.raw > 0 ? out.raw : 0; /* the RM's minimum for the job: what it needs now */
    jmd_jockey_allowance(j);
    jmd_out_tokens(j);
}

void jmd_jockey_allowance(jmd_t *j)
{
    /* jm/grant.h's rule, applied to the tokens actually held and re-applied whenever the grant
       changes, so opportunistic work starts with the first grant and not a control period
       later; a job without a controller (no deadline) follows it too. Spare is the virtual
       cluster's capacity beyond this job's grant (what the RM reported) plus the nodes'
       capacity no token covers (from the view). */
    uint32_t beyond =
        j->capacity > 0 ? grant_beyond(j->view, j->token_cpu, j->token_mem_mb, j->capacity) : 0;
    j->opp_allowance =
        grant_allowance(j->core.disp, j->o.opp_factor, j->granted, j->capacity, beyond);
}

void jmd_jockey_deadline(jmd_t *j, double deadline_s)
{
    if (deadline_s <= 0)
        return;
    log_info("deadline changed: %.3f s -> %.3f s", j->deadline_s, deadline_s);
    j->has_deadline = 1;
    j->deadline_s = deadline_s;
    if (j->have_plan) {
        j->oracle = (int)ceil(j->plan.amdahl.P0 / deadline_s);
        if (j->oracle < 1)
            j->oracle = 1;
    }
    if (j->ctrl && controller_set_deadline(j->ctrl, deadline_s) == 0)
        jmd_jockey_step(j);
}

int jmd_jockey_request(const jmd_t *j)
{
    return j->target;
}
