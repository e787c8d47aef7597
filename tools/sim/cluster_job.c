/* cluster_job.c - the simulated JMs: each drives its own jm/dag, jm/estimator, jm/place and
 * jm/dispatch as jm/place.h describes the daemon doing it (ready list in priority order,
 * place_round on a prefix, dispatch_place in quality order skipping a misfit until NONE, claims,
 * feedback on completion), and the attempts through jm/attempt.h, the daemon's own lifecycle:
 * retries with back-off, the re-placement cap, avoided nodes, upgrades in bottom-level order. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/grant.h"
#include "jm/priority.h"
#include "jm/round.h"
#include "proto/proto.h"
#include "tools/sim/cluster_internal.h"

static double cl__wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cl_job_init(struct cl_world *w, struct cl_job *j, const struct cluster_job *src, size_t idx)
{
    memset(j, 0, sizeof *j);
    j->idx = idx;
    j->spec = src->spec;
    j->arrival = src->arrival_s;
    j->run_s = src->run_s;
    size_t nt = j->spec->ntasks;
    struct estimator_config ec;
    estimator_config_default(&ec);
    ec.heartbeat_s = w->cfg.heartbeat_s;
    ec.stale_after_ms = (int64_t)(3000.0 * w->cfg.heartbeat_s);
    struct dispatch_config dc;
    dispatch_config_default(&dc);
    dc.opp_factor = w->cfg.opp_factor;
    struct place_config pc;
    place_config_daemon(&pc); /* places as the daemon does */
    pc.hold_max_s = w->cfg.hold_max_s;
    struct attempt_config ac;
    attempt_config_default(&ac);
    ac.max_attempts = w->cfg.max_attempts;
    ac.node_timeout_s = w->cfg.node_timeout_s;
    int rc;
    if ((rc = dag_new(j->spec, &j->core.dag)) != 0 ||
        (rc = estimator_new(&ec, j->spec->nstages, &j->core.est)) != 0 ||
        (rc = dispatch_new(&dc, nt, &j->core.disp)) != 0 ||
        (rc = place_new(j->spec, &pc, &j->core.place)) != 0 ||
        (rc = readyq_new(nt, &j->core.rq)) != 0 ||
        (rc = attempt_new(&ac, nt, j->core.dag, j->core.disp, NULL, 0, &j->core.att)) != 0)
        return rc;
    if (w->cfg.grain) { /* costs at the default token size (jm/grant.h, as the daemon's) */
        if ((rc = grant_set_costs(j->core.disp, j->spec, 0, 0)) != 0)
            return rc;
        uint32_t tokens = w->cfg.tokens;
        if (w->cfg.width_first && src->jockey == NULL) /* the daemon's first request */
            tokens = grant_width(j->spec, j->core.disp, GRAIN_UNITS, tokens);
        dispatch_set_tokens(j->core.disp, (uint32_t)grain_units(tokens));
    } else {
        dispatch_set_tokens(j->core.disp, w->cfg.tokens);
    }
    j->tasks = mem_calloc(nt, sizeof *j->tasks);
    j->core.stage_prio = mem_calloc(j->spec->nstages, sizeof *j->core.stage_prio);
    j->core.task_bl = mem_calloc(nt ? nt : 1, sizeof *j->core.task_bl);
    j->ready = mem_calloc(w->cfg.max_batch, sizeof *j->ready);
    j->core.matches = mem_calloc(w->cfg.max_batch, sizeof *j->core.matches);
    if (j->tasks == NULL || j->core.stage_prio == NULL || j->core.task_bl == NULL ||
        j->ready == NULL || j->core.matches == NULL)
        return ERR_NOMEM;
    rng_seed_stream(&j->rng, w->cfg.seed, 0x200000000ull + idx);
    if ((rc = priority_compute(j->core.dag, NULL, j->core.task_bl, j->core.stage_prio)) != 0)
        return rc;
    if ((rc = cl_sg_init(w, j, src)) != 0)
        return rc;
    return src->jockey != NULL ? cl_jockey_init(w, j, src->jockey) : 0;
}

void cl_job_close(struct cl_job *j)
{
    cl_jockey_close(j);
    cl_sg_close(j);
    round_job_close(&j->core);
    mem_free(j->tasks);
    mem_free(j->ready);
    memset(j, 0, sizeof *j);
}

static void cl__stop(struct cl_world *w, int rc)
{
    if (w->err == 0)
        w->err = rc;
    engine_stop(w->eng);
}

static void cl_job_round_ev(engine_t *e, void *ctx, uint64_t job);

static int64_t cl__ms(double t)
{
    return (int64_t)(t * 1000.0 + 0.5);
}

static int64_t cl__yield_ms(void)
{
    return (int64_t)(PLACE_YIELD_MIN_WAIT_S * 1000.0 + 0.5);
}

/* Waiting regular tasks could yield their units to a match on a node with room (place_yield). */
static int cl__may_yield(struct cl_world *w, const struct cl_job *j)
{
    return place_get_config(j->core.place)->yield &&
           attempt_yieldable(j->core.att, cl__yield_ms(), cl__ms(engine_now(w->eng))) > 0;
}

void cl_job_kick(struct cl_world *w, struct cl_job *j)
{
    if (j->round_pending || j->done || !j->arrived)
        return;
    size_t n;
    dag_ready(j->core.dag, &n);
    if (n == 0 || (dispatch_next(j->core.disp) == DISPATCH_NONE && !cl__may_yield(w, j)))
        return;
    j->round_pending = 1;
    int rc = engine_after(w->eng, w->cfg.round_s, cl_job_round_ev, w, j->idx);
    if (rc != 0)
        cl__stop(w, rc);
}

void cl_job_arrive_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    int rc = place_resolve(j->core.place, w->view);
    if (rc != 0) {
        cl__stop(w, rc);
        return;
    }
    if (w->jobs_active == 0 && w->jobs_finished == 0) {
        cl_account(w, 0, 0);
        w->first_arrival = engine_now(e);
        w->cpu_int = w->jobs_int = 0;
    }
    j->arrived = 1;
    j->arrival = engine_now(e);
    w->jobs_active++;
    if (w->jobs_active > w->res->jobs_peak)
        w->res->jobs_peak = w->jobs_active;
    if (j->jk != NULL && (rc = cl_jockey_arrive(w, j)) != 0) {
        cl__stop(w, rc);
        return;
    }
    const struct cluster_hooks *h = w->cfg.hooks;
    if (h != NULL && h->arrive != NULL && (rc = h->arrive(h->ctx, w, j->idx)) != 0) {
        cl__stop(w, rc);
        return;
    }
    if ((rc = cl_sg_arrive(w, j)) != 0) {
        cl__stop(w, rc);
        return;
    }
    cl_job_kick(w, j);
}

/* While a JM holds tasks (late binding), its tick looks again even when no status comes. */
static void cl_job_tick_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    j->tick_pending = 0;
    cl_job_kick(w, j);
    (void)e;
}

/* The DAG's ready tasks not yet in the ready queue enter it (and their ready time starts): the
 * daemon's rule (round_ready_add, jm/round.h); one backing off after a failure waits outside. */
static int cl__ready_sync(struct cl_job *j, double now)
{
    size_t nready;
    const size_t *ready = dag_ready(j->core.dag, &nready);
    for (size_t i = 0; i < nready; i++) {
        int rc = round_ready_add(j->core.rq, j->core.att, j->spec, j->core.task_bl, ready[i]);
        if (rc < 0)
            return rc;
        if (rc == 1)
            j->tasks[ready[i]].ready_at = now;
    }
    return 0;
}

/* Waiting regular tasks yield their units to `task`, whose node can start it now
 * (attempt_yield): each turns opportunistic in place at its node. Returns how many. */
static size_t cl__yield(struct cl_world *w, struct cl_job *j, size_t task, int64_t now_ms)
{
    struct attempt_action act[64];
    size_t n = attempt_yield(j->core.att, task, j->core.task_bl, cl__yield_ms(), now_ms, act, 64);
    for (size_t i = 0; i < n; i++) {
        struct cl_task *t = &j->tasks[act[i].task];
        t->klass = (t->klass & 0x100) | QUEUE_OPPORTUNISTIC;
        if (act[i].node < 0)
            continue;
        struct cl_node *nd = &w->nodes[act[i].node];
        if (nd->up &&
            queue_downgrade(nd->q, cl_qid(j->idx, act[i].task), engine_now(w->eng)) == 0) {
            nd->dirty = 1;
            nd->changes++;
        }
    }
    return n;
}

/* One scheduling round, the daemon's (jm/round.h): the first ready tasks in priority order, as
 * many as the free units and a few more, placed by place_round; each match is held back (late
 * binding) or dispatched in quality order, a misfit skipped while a smaller task may fit. */
static void cl_job_round_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    j->round_pending = 0;
    if (j->done)
        return;
    double now = engine_now(e);
    int rc = cl__ready_sync(j, now);
    if (rc != 0) {
        cl__stop(w, rc);
        return;
    }
    dispatch_round(j->core.disp); /* a reservation its task was not offered for lapses */
    uint64_t yieldable = place_get_config(j->core.place)->yield
                             ? attempt_yieldable(j->core.att, cl__yield_ms(), cl__ms(now))
                             : 0;
    if (readyq_count(j->core.rq) == 0 || !round_can_place(j->core.disp, yieldable))
        return;
    size_t batch = round_batch(j->core.disp, yieldable, w->cfg.max_batch);
    size_t n = readyq_pop(j->core.rq, j->ready, batch);
    int64_t now_ms = (int64_t)(now * 1000.0 + 0.5);
    size_t nm = 0;
    double t0 = cl__wall();
    rc = place_queued_update(j->core.place, j->core.att, j->core.task_bl); /* for place_overtakes */
    if (rc == 0)
        rc = place_round(j->core.place, w->view, j->core.est, j->ready, n, now_ms, rng_draw,
                         &j->rng, j->core.matches, &nm);
    w->res->place_wall_s += cl__wall() - t0;
    if (rc != 0) {
        cl__stop(w, rc);
        return;
    }
    size_t placed = 0, held = 0;
    for (size_t i = 0; i < nm; i++) {
        const struct place_match *m = &j->core.matches[i];
        if (!place_overtakes(j->core.place, m,
                             j->core.task_bl) && /* as the daemon holds (place.h) */
            place_hold(place_get_config(j->core.place), m, now - j->tasks[m->task].ready_at)) {
            held++; /* stays ready: a node with room, or the hold's end, places it */
            continue;
        }
        int cls = dispatch_place(j->core.disp, m->task);
        if (cls == DISPATCH_NONE && place_yield(place_get_config(j->core.place), m) &&
            cl__yield(w, j, m->task, now_ms) > 0)
            cls = dispatch_place(j->core.disp, m->task); /* the units its node can start now */
        if (cls < 0) {
            cl__stop(w, cls);
            return;
        }
        if (cls == DISPATCH_NONE) { /* this one does not fit; a smaller one may */
            if (dispatch_next(j->core.disp) == DISPATCH_NONE && !cl__may_yield(w, j))
                break;
            continue;
        }
        struct attempt_event ev = {
            .kind = ATTEMPT_EV_PLACED, .task = m->task, .node = (int)m->node, .cls = cls};
        struct attempt_action act[ATTEMPT_MAX_ACTIONS];
        int na = attempt_step(j->core.att, &ev, now_ms, act, ATTEMPT_MAX_ACTIONS);
        if (na < 0) {
            cl__stop(w, na);
            return;
        }
        if ((rc = place_claim(j->core.place, m->task, m->node, now_ms)) != 0) {
            cl__stop(w, rc);
            return;
        }
        struct cl_task *tk = &j->tasks[m->task];
        tk->node = m->node;
        tk->attempt = act[0].attempt;
        tk->klass = cls == DISPATCH_REGULAR ? QUEUE_REGULAR : QUEUE_OPPORTUNISTIC;
        tk->running = 0;
        tk->placed_at = now;
        tk->io_s = w->cfg.no_io ? 0 : m->est.io_s;
        /* The I/O time a task really spends follows its placement's locality: the estimator's
           I/O part is exactly bytes / bandwidth by locality, with replica locations known. */
        tk->planned_io = tk->io_s;
        tk->est_s = m->est.r_s;
        tk->placed_wait = m->est.w_s;
        const struct view_node *vn = view_node(w->view, m->node);
        w->age_sum += (double)view_age_ms(vn, now_ms) / 1000.0;
        w->age_n++;
        w->res->decisions++;
        w->res->attempts++;
        placed++;
        rc = engine_after(e, w->cfg.net_delay_s, cl_task_create_ev, w,
                          cl_key(job, m->task, tk->attempt));
        if (rc != 0) {
            cl__stop(w, rc);
            return;
        }
    }
    if ((rc = round_ready_back(j->core.rq, j->core.dag, j->core.att, j->spec, j->core.task_bl,
                               j->ready, n)) != 0) {
        cl__stop(w, rc);
        return;
    }
    if (held > 0 && !j->tick_pending) {
        j->tick_pending = 1;
        if ((rc = engine_after(e, w->cfg.tick_s, cl_job_tick_ev, w, j->idx)) != 0) {
            cl__stop(w, rc);
            return;
        }
    }
    /* More ready work and capacity left after a productive round: go again. Otherwise wait for
       a completion, the next view or the tick. */
    if (placed > 0)
        cl_job_kick(w, j);
}

void cl_job_started(struct cl_world *w, size_t job, size_t task, uint32_t attempt)
{
    struct cl_job *j = &w->jobs[job];
    if (cl_sg_started(w, j, task, attempt))
        return; /* a copy's: it is followed in cluster_straggler.c */
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_STATUS, .task = task, .attempt = attempt, .state = PROTO_TASK_RUNNING};
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    int n = attempt_step(j->core.att, &ev, cl__ms(engine_now(w->eng)), act, ATTEMPT_MAX_ACTIONS);
    if (n < 0)
        cl__stop(w, n);
}

static void cl__job_end(struct cl_world *w, struct cl_job *j, int failed)
{
    double now = engine_now(w->eng);
    j->done = 1;
    j->failed = failed;
    j->finish = now;
    w->jobs_active--;
    w->jobs_finished++;
    if (failed)
        w->res->jobs_failed++;
    else
        w->res->jobs_done++;
    cl_sg_job_end(w, j);
    const struct cluster_hooks *h = w->cfg.hooks;
    if (h != NULL && h->end != NULL)
        h->end(h->ctx, w, j->idx);
    if (w->jobs_finished == w->njobs) {
        cl_account(w, 0, 0);
        w->last_finish = now;
        engine_stop(w->eng);
    }
}

/* A back-off ended: the held tasks are ready again. */
static void cl_job_due_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    size_t due[64];
    while (attempt_due(j->core.att, cl__ms(engine_now(e)), due, 64) == 64)
        ;
    cl_job_kick(w, j);
}

/* A freed unit upgrades waiting opportunistic tasks, the highest bottom level first: in place at
 * their node, or re-placed as regular on a better one (cl_sg_upgrade, the daemon's rule). */
size_t cl_job_upgrade(struct cl_world *w, struct cl_job *j)
{
    struct attempt_action up[32];
    size_t k, total = 0;
    while ((k = attempt_upgrades(j->core.att, j->core.task_bl, cl__ms(engine_now(w->eng)), up,
                                 32)) > 0) {
        for (size_t u = 0; u < k; u++) {
            if (cl_sg_upgrade(w, j, up[u].task))
                continue; /* re-placed as regular on a better node (jm/judge.h) */
            struct cl_task *ut = &j->tasks[up[u].task];
            ut->klass = (ut->klass & 0x100) | QUEUE_REGULAR;
            struct cl_node *nd = &w->nodes[ut->node];
            if (nd->up && queue_upgrade(nd->q, cl_qid(j->idx, up[u].task)) == 0)
                nd->dirty = 1;
            nd->changes++;
        }
        total += k;
        if (k < 32)
            break;
    }
    return total;
}

/* A node looks at its queue again (pn/node does it when a downgrade arrives and when a grace
 * ends): a regular task waiting behind a task that just turned opportunistic preempts it. */
static void cl__node_kick_ev(engine_t *e, void *ctx, uint64_t node)
{
    (void)e;
    cl_node_try_start(ctx, (uint32_t)node);
}

size_t cl_job_downgrade(struct cl_world *w, struct cl_job *j, double *remaining, double *estimate)
{
    double now = engine_now(w->eng);
    for (size_t i = 0; i < j->spec->ntasks; i++) {
        const struct cl_task *t = &j->tasks[i];
        remaining[i] = grant_left(t->est_s, j->spec->tasks[i].runtime_s, t->running,
                                  now - t->started_at, &estimate[i]);
    }
    struct attempt_action act[64];
    size_t n, total = 0;
    while ((n = attempt_downgrades(j->core.att, j->core.task_bl, remaining, estimate, cl__ms(now),
                                   act, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            struct cl_task *t = &j->tasks[act[i].task];
            total++;
            t->klass = (t->klass & 0x100) | QUEUE_OPPORTUNISTIC;
            if (act[i].node < 0)
                continue;
            struct cl_node *nd = &w->nodes[act[i].node];
            if (nd->up && queue_downgrade(nd->q, cl_qid(j->idx, act[i].task),
                                          now + (double)act[i].grace_ms / 1000.0) == 0) {
                nd->dirty = 1;
                nd->changes++;
                /* the downgrade reaches the node, and its grace ends: the node looks again */
                int rc = engine_after(w->eng, w->cfg.net_delay_s, cl__node_kick_ev, w,
                                      (uint64_t)act[i].node);
                if (rc == 0 && act[i].grace_ms > 0)
                    rc = engine_after(w->eng, w->cfg.net_delay_s + (double)act[i].grace_ms / 1000.0,
                                      cl__node_kick_ev, w, (uint64_t)act[i].node);
                if (rc != 0)
                    cl__stop(w, rc);
            }
        }
        if (n < 64)
            break;
    }
    return total;
}

/* Carries out the attempt machine's actions for job j on the simulated nodes (the daemon carries
 * the same actions to the wire). */
static void cl__act(struct cl_world *w, struct cl_job *j, const struct attempt_action *act, int n,
                    double exec_s)
{
    double now = engine_now(w->eng);
    int rc = 0;
    for (int i = 0; i < n && rc == 0 && !j->done; i++) {
        const struct attempt_action *x = &act[i];
        const struct spec_task *st = &j->spec->tasks[x->task];
        switch (x->kind) {
        case ATTEMPT_ACT_RECORD:
            if (x->state == PROTO_TASK_FAILED)
                w->res->failures++;
            break;
        case ATTEMPT_ACT_DONE:
            w->res->tasks++;
            cl_sg_done(w, j, x->task, exec_s);
            if (j->jk != NULL)
                cl_jockey_done(w, j, x->task, exec_s);
            estimator_observe_est(j->core.est, st->stage, st->input_bytes, exec_s,
                                  j->tasks[x->task].io_s, st->runtime_s);
            rc = place_note_cached(j->core.place, st->stage, (uint32_t)x->node);
            if (rc == 0 && dag_done(j->core.dag))
                cl__job_end(w, j, 0);
            break;
        case ATTEMPT_ACT_AVOID:
            place_note_failed(j->core.place, x->task, (uint32_t)x->node);
            break;
        case ATTEMPT_ACT_RETRY:
            if ((double)x->at_ms / 1000.0 > now)
                rc =
                    engine_after(w->eng, (double)x->at_ms / 1000.0 - now, cl_job_due_ev, w, j->idx);
            break;
        case ATTEMPT_ACT_FAIL_JOB:
            cl__job_end(w, j, 1);
            break;
        case ATTEMPT_ACT_ROUND:
            cl_job_upgrade(w, j);
            cl_job_kick(w, j);
            break;
        case ATTEMPT_ACT_TAKEOVER: /* a copy goes on in the ended attempt's place */
            if (x->state == PROTO_TASK_FAILED)
                w->res->failures++;
            cl_sg_takeover(w, j, x->task);
            break;
        default: /* CANCEL, NODE_OFF: the node's side already knows */
            break;
        }
    }
    if (rc != 0)
        cl__stop(w, rc);
}

size_t cl_job_grant(struct cl_world *w, struct cl_job *j, uint32_t units, double *remaining,
                    double *estimate, size_t *upgraded)
{
    size_t down = 0, up = 0;
    dispatch_set_tokens(j->core.disp, units);
    int due = grant_take(j->core.disp); /* the daemon's order (jm/grant.h) */
    if (due & GRANT_DOWNGRADE)
        down = cl_job_downgrade(w, j, remaining, estimate);
    if (due & GRANT_UPGRADE)
        up = cl_job_upgrade(w, j);
    if (upgraded != NULL)
        *upgraded = up;
    cl_job_kick(w, j);
    return down;
}

int cl_job_event(struct cl_world *w, struct cl_job *j, struct attempt_event *ev)
{
    ev->extra = cl_sg_extra(j, ev->task) > 0;
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    int n = attempt_step(j->core.att, ev, cl__ms(engine_now(w->eng)), act, ATTEMPT_MAX_ACTIONS);
    if (n < 0)
        return n;
    cl__act(w, j, act, n, 0);
    return 0;
}

void cl_job_report(struct cl_world *w, size_t job, size_t task, uint32_t attempt, int outcome,
                   double exec_s)
{
    struct cl_job *j = &w->jobs[job];
    if (j->done || cl_sg_report(w, j, task, attempt, outcome))
        return;
    struct attempt_event ev = {.task = task, .attempt = attempt};
    ev.extra = cl_sg_extra(j, task) > 0;
    if (outcome == CL_NODE_LOST) {
        if (!attempt_tracks(j->core.att, task, attempt))
            return;
        ev.kind = ATTEMPT_EV_NODE;
        ev.state = ATTEMPT_NODE_DOWN;
    } else {
        ev.kind = ATTEMPT_EV_STATUS;
        ev.state = outcome == CL_SUCCEEDED ? PROTO_TASK_SUCCEEDED
                   : outcome == CL_FAILED  ? PROTO_TASK_FAILED
                   : outcome == CL_REFUSED ? PROTO_TASK_LOST
                                           : PROTO_TASK_PREEMPTED;
    }
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    int n = attempt_step(j->core.att, &ev, cl__ms(engine_now(w->eng)), act, ATTEMPT_MAX_ACTIONS);
    if (n < 0) {
        cl__stop(w, n);
        return;
    }
    cl__act(w, j, act, n, exec_s);
}
