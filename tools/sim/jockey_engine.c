/* jockey_engine.c - the discrete-event engine behind `paddock-sim jockey` (see the header). */
#include "tools/sim/jockey_engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/heap.h"
#include "common/mem.h"
#include "tools/sim/engine.h"

#define JOCKEY__MAX_EVENTS 100000000L

/* Events run on the simulator's engine (tools/sim/engine.h: earliest first, then in the order
 * they were scheduled); an attempt's end carries its task and 2 * attempt + failed in the
 * argument, (task << 32) | that. */
enum { EV_FINISH = 0, EV_TICK, EV_SPARE, EV_PHASE };

void jockey_cond_judged(struct jockey_cond *c, double deadline_s, double spare_max)
{
    c->noise_sigma = 0.25;
    c->slow_sigma = 0.1;
    c->phase_sigma = 0.1;
    c->phase_mean_s = deadline_s / 6;
    c->fail_prob = 0.02;
    c->straggler_prob = 0.02;
    c->straggler_min = 1.5;
    c->straggler_max = 3;
    c->init_s = 0.05;
    c->spare_max = spare_max;
    c->spare_zero_prob = 0.3;
    c->spare_mean_s = deadline_s / 10;
}

void jockey_cond_training(struct jockey_cond *c)
{
    memset(c, 0, sizeof *c);
    c->noise_sigma = 0.25;
    c->fail_prob = 0.02;
    c->straggler_prob = 0.02;
    c->straggler_min = 1.5;
    c->straggler_max = 3;
    c->init_s = 0.05;
}

static const char *const jockey__names[] = {"jockey", "noadapt", "amdahl", "max", "fixed"};

const char *jockey_policy_name(enum jockey_policy p)
{
    return (unsigned)p < JOCKEY_NPOLICIES ? jockey__names[p] : "?";
}

/* An independent stream for (seed, a, b): the same draws whatever the policy does. */
static void jockey__stream(struct rng *r, uint64_t seed, uint64_t a, uint64_t b)
{
    rng_seed_stream(r, seed, a << 32 | b);
}

struct jockey__run {
    const struct jockey_world *w;
    const struct jockey_cond *c;
    enum jockey_policy policy;
    uint64_t seed;
    size_t n;
    double *noise, *ready_at;
    int *attempt;
    unsigned char *kind; /* 0 idle, 1 regular, 2 opportunistic */
    int *done;           /* finished tasks per stage */
    engine_t *ev;
    int rc; /* the first error an event met: ends the run */
    /* ready tasks, highest priority first (key: the priority negated), then the lower task index
     * (tie: the task) */
    struct heap ready;
    int *opp;
    size_t nopp;
    int reg, tokens, allow, spare;
    int target; /* what the policy wants; tokens is what the job holds (see jockey__hold) */
    double slow, phase, now, alloc_int, last_change;
    double alloc_at_change; /* alloc_int when the deadline changed (< 0: not yet) */
    double *run_of;         /* run time of each task's current attempt */
    double sum_actual, sum_expected, speed_prior;
    double deadline;
    controller_t *ctl;
    struct rng spare_rng, phase_rng;
    struct jockey_attempts *rec;
    struct jockey_result *out;
};

static int jockey__ready_push(struct jockey__run *r, int task)
{
    r->ready_at[task] = r->now;
    return heap_push_tie(&r->ready, heap_key_from_double(-jsim_job_task_priority(r->w->job, task)),
                         (uint64_t)task, NULL);
}

/* The ready task of highest priority; the ready list is not empty. */
static int jockey__ready_pop(struct jockey__run *r)
{
    struct heap_entry e;
    heap_pop(&r->ready, &e);
    return (int)e.tie;
}

static void jockey__on_event(engine_t *e, void *ctx, uint64_t arg);

static int jockey__event(struct jockey__run *r, double t, int type, int task, int attempt)
{
    uint64_t arg = type == EV_FINISH ? (uint64_t)task << 32 | (uint32_t)attempt : 0;
    return engine_at(r->ev, t, jockey__on_event, r, arg << 2 | (uint64_t)type);
}

static void jockey__set_tokens(struct jockey__run *r, int tokens)
{
    r->alloc_int += r->tokens * (r->now - r->last_change);
    r->last_change = r->now;
    r->tokens = tokens;
    if (tokens > r->out->peak_tokens)
        r->out->peak_tokens = tokens;
}

static void jockey__update_allow(struct jockey__run *r)
{
    int opp = (int)floor(r->w->ccfg.opp_factor * r->target);
    r->allow = r->spare < opp ? r->spare : opp;
    if (r->allow < 0)
        r->allow = 0;
}

static int jockey__start(struct jockey__run *r, int task, int kind)
{
    int rc = dag_start(r->w->dag, (size_t)task);
    if (rc != 0)
        return rc;
    int k = ++r->attempt[task];
    struct rng a;
    jockey__stream(&a, r->seed, 2 + (uint64_t)task, (uint64_t)k);
    double u_fail = rng_unif(&a), u_frac = rng_unif(&a);
    double u_strag = rng_unif(&a), u_sf = rng_unif(&a);
    double init = r->c->init_s + rng_exp(&a, r->c->init_s);
    double run = r->w->spec->tasks[task].runtime_s * r->noise[task] * r->slow * r->phase;
    if (u_strag < r->c->straggler_prob)
        run *= r->c->straggler_min + u_sf * (r->c->straggler_max - r->c->straggler_min);
    int fail = u_fail < r->c->fail_prob && k < JSIM_MAX_ATTEMPTS;
    if (fail)
        run *= u_frac;
    r->kind[task] = (unsigned char)kind;
    r->run_of[task] = run;
    if (kind == 1) {
        r->reg++;
    } else {
        r->opp[r->nopp++] = task;
        r->out->opportunistic_starts++;
    }
    r->out->attempts++;
    if (r->rec != NULL) {
        struct jockey_attempts *ra = r->rec;
        if (ra->n == ra->cap) {
            size_t nc = ra->cap ? ra->cap * 2 : 1024;
            struct profile_attempt *v = mem_reallocarray(ra->v, nc, sizeof *v);
            if (v == NULL)
                return ERR_NOMEM;
            ra->v = v;
            ra->cap = nc;
        }
        ra->v[ra->n++] = (struct profile_attempt){
            .stage = (int)r->w->spec->tasks[task].stage,
            .queue_s = r->now - r->ready_at[task],
            .init_s = init,
            .run_s = run,
            .input_bytes = (double)r->w->spec->tasks[task].input_bytes,
            .est_s = r->w->spec->tasks[task].runtime_s,
            .ok = !fail,
        };
    }
    return jockey__event(r, r->now + init + run, EV_FINISH, task, k * 2 + fail);
}

/* Opportunistic tasks beyond what the allowance and the spare capacity permit are killed (their
 * work is lost) and go back to the ready list, newest first. */
static int jockey__preempt(struct jockey__run *r)
{
    while (r->nopp > (size_t)r->allow) {
        int t = r->opp[--r->nopp];
        r->kind[t] = 0;
        r->attempt[t]++; /* its finish event is now stale */
        int rc = dag_requeue(r->w->dag, (size_t)t);
        if (rc == 0)
            rc = jockey__ready_push(r, t);
        if (rc != 0)
            return rc;
        r->out->preemptions++;
    }
    return 0;
}

/* The tokens the job holds: the policy's target, or with hold_runnable no more than it has tasks
 * to run now (controller_hold). */
static void jockey__hold(struct jockey__run *r)
{
    int held = r->target;
    if (r->w->hold_runnable && r->ctl != NULL)
        held = controller_hold(r->ctl, r->target, r->reg + (int)r->nopp + (int)r->ready.len);
    if (held != r->tokens)
        jockey__set_tokens(r, held);
}

static int jockey__dispatch(struct jockey__run *r)
{
    jockey__hold(r);
    while (r->reg < r->tokens && r->nopp > 0) {
        /* upgrade in place the opportunistic task of highest priority, the oldest of equals:
           the daemon's order (jm/attempt.h attempt_upgrades) */
        size_t b = 0;
        for (size_t i = 1; i < r->nopp; i++)
            if (jsim_job_task_priority(r->w->job, r->opp[i]) >
                jsim_job_task_priority(r->w->job, r->opp[b]))
                b = i;
        int t = r->opp[b];
        memmove(r->opp + b, r->opp + b + 1, (r->nopp - b - 1) * sizeof *r->opp);
        r->nopp--;
        r->kind[t] = 1;
        r->reg++;
        r->out->upgrades++;
    }
    int rc = jockey__preempt(r);
    while (rc == 0 && r->ready.len > 0) {
        if (r->reg < r->tokens)
            rc = jockey__start(r, jockey__ready_pop(r), 1);
        else if (r->nopp < (size_t)r->allow)
            rc = jockey__start(r, jockey__ready_pop(r), 2);
        else
            break;
    }
    return rc;
}

static int jockey__finish(struct jockey__run *r, int t, int attempt)
{
    if (attempt / 2 != r->attempt[t] || r->kind[t] == 0)
        return 0; /* preempted meanwhile */
    if (r->kind[t] == 1) {
        r->reg--;
    } else {
        for (size_t i = 0; i < r->nopp; i++)
            if (r->opp[i] == t) {
                memmove(r->opp + i, r->opp + i + 1, (r->nopp - i - 1) * sizeof *r->opp);
                r->nopp--;
                break;
            }
    }
    r->kind[t] = 0;
    if (attempt & 1) {
        r->out->failures++;
        int rc = dag_requeue(r->w->dag, (size_t)t);
        return rc != 0 ? rc : jockey__ready_push(r, t);
    }
    if (r->w->stage_ratio != NULL) {
        r->sum_actual += r->run_of[t];
        r->sum_expected +=
            r->w->spec->tasks[t].runtime_s * r->w->stage_ratio[r->w->spec->tasks[t].stage];
    }
    size_t released = 0;
    int rc = dag_succeed(r->w->dag, (size_t)t, &released);
    if (rc != 0)
        return rc;
    r->done[r->w->spec->tasks[t].stage]++;
    size_t nready;
    const size_t *ready = dag_ready(r->w->dag, &nready);
    for (size_t i = nready - released; rc == 0 && i < nready; i++)
        rc = jockey__ready_push(r, (int)ready[i]);
    return rc;
}

static int jockey__tick(struct jockey__run *r)
{
    const struct jockey_world *w = r->w;
    int tokens = r->target;
    if (w->change_at_s > 0 && r->alloc_at_change < 0 && r->now >= w->change_at_s) {
        jockey__set_tokens(r, r->tokens); /* close the integral at the change */
        r->alloc_at_change = r->alloc_int;
        r->deadline = w->change_to_s;
        if (r->ctl != NULL) {
            int rc = controller_set_deadline(r->ctl, w->change_to_s);
            if (rc != 0)
                return rc;
        }
    }
    if (r->ctl != NULL && (r->policy != JOCKEY_POLICY_NOADAPT || r->now == 0)) {
        struct controller_obs obs = {
            .t_r = r->now,
            .progress = w->pm != NULL ? progress_eval(w->pm, r->done) : 0,
            .done = r->done,
            .spare_tokens = r->spare,
        };
        /* The observed speed, shrunk towards 1 by a prior worth 5% of the job's work so the
         * first few tasks do not swing it. */
        if (w->stage_ratio != NULL && r->policy == JOCKEY_POLICY_JOCKEY)
            obs.speed = (r->sum_actual + r->speed_prior) / (r->sum_expected + r->speed_prior);
        struct controller_out o;
        int rc = controller_step(r->ctl, &obs, &o);
        if (rc != 0)
            return rc;
        tokens = o.tokens;
        if (r->w->trace != NULL)
            fprintf(r->w->trace, "%s t %.0f p %.3f raw %d tokens %d action %d pred %.0f\n",
                    jockey_policy_name(r->policy), r->now, obs.progress, o.raw, o.tokens,
                    (int)o.action, o.predicted_finish);
        if (r->now == 0)
            r->out->first_tokens = tokens;
    }
    r->target = tokens;
    jockey__hold(r);
    jockey__update_allow(r);
    return jockey__event(r, r->now + w->ccfg.period_s, EV_TICK, -1, 0);
}

static int jockey__spare(struct jockey__run *r)
{
    const struct jockey_cond *c = r->c;
    if (c->spare_mean_s <= 0 || c->spare_max <= 0) {
        r->spare = 0;
        return 0;
    }
    double u = rng_unif(&r->spare_rng), v = rng_unif(&r->spare_rng);
    r->spare = u < c->spare_zero_prob ? 0 : (int)floor(v * (c->spare_max + 1));
    jockey__update_allow(r);
    return jockey__event(r, r->now + rng_exp(&r->spare_rng, c->spare_mean_s), EV_SPARE, -1, 0);
}

static int jockey__phase(struct jockey__run *r)
{
    const struct jockey_cond *c = r->c;
    if (c->phase_mean_s <= 0) {
        r->phase = 1;
        return 0;
    }
    r->phase = rng_lognormal(&r->phase_rng, 0, c->phase_sigma);
    return jockey__event(r, r->now + rng_exp(&r->phase_rng, c->phase_mean_s), EV_PHASE, -1, 0);
}

/* Runs one event, then the dispatch round that follows every event. */
static void jockey__on_event(engine_t *e, void *ctx, uint64_t arg)
{
    struct jockey__run *r = ctx;
    if (r->rc != 0)
        return;
    r->now = engine_now(e);
    int rc;
    switch (arg & 3) {
    case EV_FINISH:
        rc = jockey__finish(r, (int)(arg >> 34), (int)(uint32_t)(arg >> 2));
        break;
    case EV_TICK:
        rc = jockey__tick(r);
        break;
    case EV_SPARE:
        rc = jockey__spare(r);
        break;
    default:
        rc = jockey__phase(r);
        break;
    }
    if (rc == 0)
        rc = jockey__dispatch(r);
    r->rc = rc;
}

static void jockey__free(struct jockey__run *r)
{
    mem_free(r->noise);
    mem_free(r->ready_at);
    mem_free(r->attempt);
    mem_free(r->kind);
    mem_free(r->done);
    engine_destroy(&r->ev);
    heap_close(&r->ready);
    mem_free(r->opp);
    mem_free(r->run_of);
    controller_destroy(&r->ctl);
}

int jockey_engine_run(const struct jockey_world *w, enum jockey_policy p, int fixed_tokens,
                      const struct jockey_cond *c, uint64_t seed, struct jockey_attempts *rec,
                      struct jockey_result *out)
{
    memset(out, 0, sizeof *out);
    struct jockey__run r = {.w = w, .c = c, .policy = p, .seed = seed, .rec = rec, .out = out};
    size_t n = w->spec->ntasks;
    r.n = n;
    r.noise = mem_calloc(n, sizeof *r.noise);
    r.ready_at = mem_calloc(n, sizeof *r.ready_at);
    r.attempt = mem_calloc(n, sizeof *r.attempt);
    r.kind = mem_calloc(n, sizeof *r.kind);
    r.done = mem_calloc(w->spec->nstages, sizeof *r.done);
    heap_init(&r.ready);
    r.opp = mem_calloc(n, sizeof *r.opp);
    r.run_of = mem_calloc(n, sizeof *r.run_of);
    int rc = engine_new(&r.ev);
    if (rc == 0 && heap_reserve(&r.ready, n) != 0)
        rc = ERR_NOMEM; /* sized for every task at once: pushes cannot fail */
    if (rc != 0 || r.noise == NULL || r.ready_at == NULL || r.attempt == NULL || r.kind == NULL ||
        r.done == NULL || r.opp == NULL || r.run_of == NULL) {
        rc = ERR_NOMEM;
        goto out;
    }
    if (p == JOCKEY_POLICY_JOCKEY || p == JOCKEY_POLICY_NOADAPT) {
        r.ctl = controller_new(&w->ccfg, &w->utility, controller_predict_table, (void *)w->table);
    } else if (p == JOCKEY_POLICY_AMDAHL) {
        r.ctl = controller_new(&w->ccfg, &w->utility, controller_predict_amdahl, (void *)w->amdahl);
    }
    if ((p <= JOCKEY_POLICY_AMDAHL && r.ctl == NULL) || p >= JOCKEY_NPOLICIES) {
        rc = ERR_INVAL;
        goto out;
    }
    /* The run's conditions: whole-run slowdown, per-task noise and first-attempt stragglers. */
    struct rng g;
    jockey__stream(&g, seed, 1, 0);
    r.slow = c->slow_sigma > 0 ? rng_lognormal(&g, 0, c->slow_sigma) : 1;
    for (size_t t = 0; t < n; t++) {
        struct rng tr;
        jockey__stream(&tr, seed, 1, 1 + t);
        r.noise[t] = c->noise_sigma > 0 ? rng_lognormal(&tr, 0, c->noise_sigma) : 1;
        struct rng a;
        jockey__stream(&a, seed, 2 + t, 1);
        rng_unif(&a);
        rng_unif(&a);
        double u_strag = rng_unif(&a), u_sf = rng_unif(&a);
        double f = u_strag < c->straggler_prob
                       ? c->straggler_min + u_sf * (c->straggler_max - c->straggler_min)
                       : 1;
        out->work_s += w->spec->tasks[t].runtime_s * r.noise[t] * r.slow * f;
    }
    r.alloc_at_change = -1;
    for (size_t t = 0; w->stage_ratio != NULL && t < n; t++)
        r.speed_prior +=
            0.05 * w->spec->tasks[t].runtime_s * w->stage_ratio[w->spec->tasks[t].stage];
    r.deadline = w->deadline_s;
    double final_deadline = w->change_at_s > 0 ? w->change_to_s : w->deadline_s;
    out->oracle = (int)ceil(out->work_s / final_deadline - 1e-9);
    if (out->oracle < 1)
        out->oracle = 1;
    jockey__stream(&r.spare_rng, seed, 3, 0);
    jockey__stream(&r.phase_rng, seed, 4, 0);
    r.phase = 1;
    dag_reset(w->dag);
    r.tokens = p == JOCKEY_POLICY_MAX     ? w->max_tokens
               : p == JOCKEY_POLICY_FIXED ? (fixed_tokens > 0 ? fixed_tokens : 1)
                                          : 0;
    r.target = r.tokens;
    out->first_tokens = r.tokens;
    out->peak_tokens = r.tokens;
    {
        size_t nready;
        const size_t *ready = dag_ready(w->dag, &nready);
        for (size_t i = 0; rc == 0 && i < nready; i++)
            rc = jockey__ready_push(&r, (int)ready[i]);
    }
    if (rc == 0)
        rc = jockey__spare(&r);
    if (rc == 0)
        rc = jockey__phase(&r);
    if (rc == 0)
        rc = jockey__tick(&r);
    if (rc == 0)
        rc = jockey__dispatch(&r);
    while (rc == 0 && !dag_done(w->dag)) {
        if (engine_events_run(r.ev) >= JOCKEY__MAX_EVENTS || !engine_step(r.ev)) {
            rc = ERR_STATE;
            break;
        }
        rc = r.rc;
    }
    if (rc == 0) {
        jockey__set_tokens(&r, r.tokens);
        out->completion_s = r.now;
        out->alloc_mean = r.now > 0 ? r.alloc_int / r.now : r.tokens;
        out->deadline_s = r.deadline;
        out->met = r.now <= r.deadline;
        if (r.alloc_at_change >= 0 && w->change_at_s < r.now) {
            out->alloc_before = r.alloc_at_change / w->change_at_s;
            out->alloc_after = (r.alloc_int - r.alloc_at_change) / (r.now - w->change_at_s);
        }
    }
out:
    jockey__free(&r);
    return rc;
}
