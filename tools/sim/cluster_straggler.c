/* cluster_straggler.c - a second attempt in flight per task in the simulated JM (issue 23), as
 * the daemon starts them each tick (jm/daemon/jmd_spec_start.c):
 *  - speculative copies of running stragglers (cfg.speculate), on jm/speculate.h's rule;
 *  - the deferred correction of queued regular tasks (cfg.correct), jm/correct.h's
 *    correct_decide: a move (ATTEMPT_EV_MOVED: cancelled at its node, placed again elsewhere) or
 *    a duplicate at the better node, the first of the two to start winning;
 * copies and duplicates behind jm/attempt.h's capacity gate (attempt_copy_class: the spec's
 * "speculate" and a free token unit or room in the opportunistic allowance). The first attempt
 * to finish wins (speculate_task_finished) and the other is cancelled at its PN; when the
 * tracked attempt fails or is lost while an extra one lives, the attempt machine says TAKEOVER
 * and the extra takes its place (attempt_takeover). An extra's regular units come off the tokens
 * the dispatcher sees, as jmd_spec_tokens does, so regular work never exceeds the grant.
 *
 * The PN side (cluster_node.c) runs a copy like any attempt: its record is a struct cl_task kept
 * here, found by node (cl_attempt_at) or by attempt number (cl_attempt_of); a task never has two
 * attempts on one node, so both share the task's queue id. */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/correct.h"
#include "jm/judge.h"
#include "jm/speculate.h"
#include "proto/proto.h"
#include "tools/sim/cluster_internal.h"

#define CL_SG_EXTRA  (SPECULATE_MAX_ATTEMPTS - 1) /* extra attempts per task */
#define CL_SG_CHECK  64                           /* running tasks judged per tick (the daemon's) */
#define CL_SG_QUEUED 64 /* queued tasks re-evaluated per tick (the daemon's) */

struct cl_sg_att {
    struct cl_task t; /* the attempt as the PN side sees it */
    int cls;          /* enum dispatch_class it was started in */
    int dup;          /* 1: a duplicate of a queued task, 2: an upgrade re-placed; 0: a copy */
    uint32_t cost;    /* token units it holds */
};

struct cl_sg_task {
    struct cl_sg_att x[CL_SG_EXTRA];
    size_t n;
    struct speculate_task st; /* who won, who is cancelled (jm/speculate.h) */
    uint32_t copies, dups;    /* started so far */
};

struct cl_strag {
    struct speculate_config scfg;
    struct correct_config ccfg;
    struct cl_sg_task *t;
    struct speculate_dist *dist; /* per stage: finished run times / the task's estimate */
    uint32_t *stage_inflight;    /* copies in flight per stage */
    double *wait_sum;            /* per stage: realised waits (placed -> running) of successes */
    uint32_t *wait_n;
    size_t inflight;  /* copies in flight in the job */
    uint64_t started; /* copies started in the job */
    uint64_t reg_units, opp_units;
    uint64_t granted;   /* the job's token units; the dispatcher sees them less reg_units */
    size_t next, cnext; /* round robin over the running tasks, for copies and corrections */
};

static int64_t cl_sg__ms(double t)
{
    return (int64_t)(t * 1000.0 + 0.5);
}

static void cl_sg__fail(struct cl_world *w, int rc)
{
    if (w->err == 0)
        w->err = rc;
    engine_stop(w->eng);
}

int cl_sg_init(struct cl_world *w, struct cl_job *j, const struct cluster_job *src)
{
    if (!w->cfg.speculate && !w->cfg.correct)
        return 0;
    if (src->jockey != NULL || w->cfg.hooks != NULL)
        return ERR_INVAL; /* their grant moves the tokens: not combined with copies yet */
    struct cl_strag *s = mem_calloc(1, sizeof *s);
    if (s == NULL)
        return ERR_NOMEM;
    j->sg = s;
    if (w->cfg.spec_cfg != NULL)
        s->scfg = *w->cfg.spec_cfg;
    else
        speculate_config_default(&s->scfg);
    if (w->cfg.correct_cfg != NULL)
        s->ccfg = *w->cfg.correct_cfg;
    else
        correct_config_default(&s->ccfg);
    size_t ns = j->spec->nstages ? j->spec->nstages : 1;
    s->t = mem_calloc(j->spec->ntasks ? j->spec->ntasks : 1, sizeof *s->t);
    s->dist = mem_calloc(ns, sizeof *s->dist);
    s->stage_inflight = mem_calloc(ns, sizeof *s->stage_inflight);
    s->wait_sum = mem_calloc(ns, sizeof *s->wait_sum);
    s->wait_n = mem_calloc(ns, sizeof *s->wait_n);
    if (s->t == NULL || s->dist == NULL || s->stage_inflight == NULL || s->wait_sum == NULL ||
        s->wait_n == NULL)
        return ERR_NOMEM;
    for (size_t k = 0; k < ns; k++)
        speculate_dist_init(&s->dist[k]);
    s->granted = dispatch_tokens(j->core.disp);
    return 0;
}

void cl_sg_close(struct cl_job *j)
{
    struct cl_strag *s = j->sg;
    if (s == NULL)
        return;
    for (size_t k = 0; s->dist != NULL && k < (j->spec->nstages ? j->spec->nstages : 1); k++)
        speculate_dist_close(&s->dist[k]);
    void *owned[] = {s->t, s->dist, s->stage_inflight, s->wait_sum, s->wait_n, s};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
        mem_free(owned[k]);
    j->sg = NULL;
}

size_t cl_sg_extra(const struct cl_job *j, size_t task)
{
    return j->sg != NULL ? j->sg->t[task].n : 0;
}

struct cl_task *cl_attempt_of(struct cl_job *j, size_t task, uint32_t attempt)
{
    struct cl_sg_task *x = j->sg != NULL ? &j->sg->t[task] : NULL;
    for (size_t k = 0; x != NULL && k < x->n; k++)
        if ((x->x[k].t.attempt & 0xffffu) == (attempt & 0xffffu))
            return &x->x[k].t;
    return &j->tasks[task];
}

struct cl_task *cl_attempt_at(struct cl_job *j, size_t task, uint32_t node)
{
    struct cl_sg_task *x = j->sg != NULL ? &j->sg->t[task] : NULL;
    for (size_t k = 0; x != NULL && k < x->n; k++)
        if (x->x[k].t.node == node)
            return &x->x[k].t;
    return &j->tasks[task];
}

int cl_attempt_live(const struct cl_job *j, size_t task, const struct cl_task *tk)
{
    return tk != &j->tasks[task] || attempt_tracks(j->core.att, task, tk->attempt);
}

/* Units an extra attempt takes (add) or gives back; regular ones change the dispatcher's tokens. */
static void cl_sg__units(struct cl_job *j, int cls, uint32_t cost, int add)
{
    struct cl_strag *s = j->sg;
    uint64_t *u = cls == DISPATCH_REGULAR ? &s->reg_units : &s->opp_units;
    *u = add ? *u + cost : *u >= cost ? *u - cost : 0;
    if (cls == DISPATCH_REGULAR)
        dispatch_set_tokens(j->core.disp,
                            (uint32_t)(s->granted > s->reg_units ? s->granted - s->reg_units : 0));
}

/* TASK_CANCEL of attempt tk at its node: out of the queue, or killed when running. */
static void cl_sg__cancel(struct cl_world *w, struct cl_job *j, size_t task, struct cl_task *tk)
{
    struct cl_node *nd = &w->nodes[tk->node];
    uint64_t id = cl_qid(j->idx, task);
    int was = tk->running;
    tk->running = 0; /* fences its scheduled end */
    if (!nd->up)
        return;
    if (was) {
        if (queue_finish(nd->q, id) != 0)
            return;
        double cpu = j->spec->tasks[task].cpu;
        nd->cpu_used -= cpu;
        nd->cpu_jobs -= cpu;
        cl_account(w, -cpu, -cpu);
    } else if (queue_cancel(nd->q, id) != 0) {
        return; /* its create is still on the way: it is dropped on arrival */
    }
    nd->dirty = 1;
    nd->changes++;
    cl_node_try_start(w, tk->node);
}

/* Extra attempt k of `task` ends (cancelled at its node first when `cancel`); what it held is
 * given back and the JM places again. */
static void cl_sg__end(struct cl_world *w, struct cl_job *j, size_t task, size_t k, int cancel)
{
    struct cl_strag *s = j->sg;
    struct cl_sg_task *x = &s->t[task];
    struct cl_sg_att e = x->x[k];
    memmove(&x->x[k], &x->x[k + 1], (x->n - k - 1) * sizeof x->x[0]);
    x->n--;
    if (cancel)
        cl_sg__cancel(w, j, task, &e.t);
    size_t stg = j->spec->tasks[task].stage;
    if (!e.dup && s->inflight > 0)
        s->inflight--;
    if (!e.dup && s->stage_inflight[stg] > 0)
        s->stage_inflight[stg]--;
    cl_sg__units(j, e.cls, e.cost, 0);
    if (!j->done)
        cl_job_kick(w, j); /* the units it held may place more */
}

/* Extra attempt k takes the tracked attempt's place; the old one becomes extra attempt k. */
static int cl_sg__swap(struct cl_world *w, struct cl_job *j, size_t task, size_t k)
{
    struct cl_sg_att *e = &j->sg->t[task].x[k];
    struct cl_task *p = &j->tasks[task];
    int old_cls = attempt_get(j->core.att, task)->cls;
    int rc = attempt_takeover(j->core.att, task, e->t.attempt, (int)e->t.node, e->cls, e->t.running,
                              cl_sg__ms(engine_now(w->eng)));
    if (rc != 0)
        return rc;
    if (old_cls != e->cls) { /* the units moved with the class */
        cl_sg__units(j, e->cls, e->cost, 0);
        cl_sg__units(j, old_cls, e->cost, 1);
    }
    struct cl_task old = *p;
    *p = e->t;
    e->t = old;
    e->cls = old_cls;
    return 0;
}

/* Every extra attempt of `task` cancelled at its node. */
static void cl_sg__cancel_rest(struct cl_world *w, struct cl_job *j, size_t task)
{
    while (j->sg->t[task].n > 0)
        cl_sg__end(w, j, task, j->sg->t[task].n - 1, 1);
}

int cl_sg_report(struct cl_world *w, struct cl_job *j, size_t task, uint32_t attempt, int outcome)
{
    struct cl_strag *s = j->sg;
    if (s == NULL || s->t[task].n == 0)
        return 0;
    struct cl_sg_task *x = &s->t[task];
    struct cl_task *p = &j->tasks[task];
    uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
    if ((p->attempt & 0xffffu) == (attempt & 0xffffu)) {
        /* the tracked attempt: its success ends the copies; a failure or loss comes back from
           the attempt machine as TAKEOVER (cl_sg_takeover) */
        if (outcome == CL_SUCCEEDED) {
            (void)speculate_task_finished(&x->st, p->attempt, cancel, SPECULATE_MAX_ATTEMPTS);
            cl_sg__cancel_rest(w, j, task);
        }
        return 0;
    }
    size_t k = 0;
    while (k < x->n && (x->x[k].t.attempt & 0xffffu) != (attempt & 0xffffu))
        k++;
    if (k == x->n)
        return 0; /* not an attempt in flight: the machine ignores a stale one */
    if (outcome == CL_SUCCEEDED) {
        if (speculate_task_finished(&x->st, x->x[k].t.attempt, cancel, SPECULATE_MAX_ATTEMPTS) <
            0) {
            cl_sg__end(w, j, task, k, 0); /* a finish after a winner: ignored */
            return 1;
        }
        int rc = cl_sg__swap(w, j, task, k);
        if (rc != 0) {
            cl_sg__fail(w, rc);
            return 1;
        }
        if (x->x[k].dup)
            w->res->dups_won++;
        else
            w->res->copies_won++;
        cl_sg__cancel_rest(w, j, task); /* the old attempt among them */
        return 0;                       /* the caller records the success as the task's */
    }
    int state = outcome == CL_FAILED      ? PROTO_TASK_FAILED
                : outcome == CL_PREEMPTED ? PROTO_TASK_PREEMPTED
                                          : PROTO_TASK_LOST;
    attempt_extra_ended(j->core.att, task, state);
    if (outcome == CL_FAILED)
        w->res->failures++;
    (void)speculate_task_failed(&x->st, x->x[k].t.attempt);
    cl_sg__end(w, j, task, k, 0);
    return 1;
}

void cl_sg_takeover(struct cl_world *w, struct cl_job *j, size_t task)
{
    struct cl_sg_task *x = j->sg != NULL ? &j->sg->t[task] : NULL;
    if (x == NULL || x->n == 0)
        return;
    size_t k = 0; /* a running extra attempt first */
    for (size_t i = 0; i < x->n; i++)
        if (x->x[i].t.running) {
            k = i;
            break;
        }
    (void)speculate_task_failed(&x->st, j->tasks[task].attempt);
    int rc = cl_sg__swap(w, j, task, k);
    if (rc != 0) {
        cl_sg__fail(w, rc);
        return;
    }
    cl_sg__end(w, j, task, k, 0); /* the old attempt ended at its node already */
}

int cl_sg_started(struct cl_world *w, struct cl_job *j, size_t task, uint32_t attempt)
{
    struct cl_sg_task *x = j->sg != NULL ? &j->sg->t[task] : NULL;
    if (x == NULL || x->n == 0)
        return 0;
    uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
    size_t k = 0;
    while (k < x->n && (x->x[k].t.attempt & 0xffffu) != (attempt & 0xffffu))
        k++;
    if (k == x->n) {
        /* the tracked attempt started: its duplicates are discarded (Apollo §3.4) */
        (void)speculate_task_started(&x->st, j->tasks[task].attempt, 1, cancel,
                                     SPECULATE_MAX_ATTEMPTS);
        for (size_t i = x->n; i-- > 0;)
            if (x->x[i].dup)
                cl_sg__end(w, j, task, i, 1);
        return 0;
    }
    if (!x->x[k].dup || j->tasks[task].running) {
        (void)speculate_task_started(&x->st, x->x[k].t.attempt, 0, NULL, 0);
        return 1; /* a copy's start: followed here */
    }
    /* the duplicate started first: it becomes the task's attempt, the original is discarded */
    (void)speculate_task_started(&x->st, x->x[k].t.attempt, 1, cancel, SPECULATE_MAX_ATTEMPTS);
    int rc = cl_sg__swap(w, j, task, k);
    if (rc != 0) {
        cl_sg__fail(w, rc);
        return 1;
    }
    w->res->dups_won++;
    cl_sg__cancel_rest(w, j, task);
    return 0; /* the caller takes the start as the task's */
}

void cl_sg_done(struct cl_world *w, struct cl_job *j, size_t task, double exec_s)
{
    const struct spec_task *sp = &j->spec->tasks[task];
    w->res->useful_cpu_s += exec_s * sp->cpu;
    if (j->sg == NULL)
        return;
    const struct cl_task *p = &j->tasks[task];
    if (p->started_at >= p->placed_at) { /* the stage's realised wait, for jm/correct.h */
        j->sg->wait_sum[sp->stage] += p->started_at - p->placed_at;
        j->sg->wait_n[sp->stage]++;
    }
    double r = j->tasks[task].est_s > 0 ? j->tasks[task].est_s : sp->runtime_s;
    if (exec_s >= 0 && r > 0 && speculate_dist_add(&j->sg->dist[sp->stage], exec_s / r) != 0)
        cl_sg__fail(w, ERR_NOMEM);
}

void cl_sg_job_end(struct cl_world *w, struct cl_job *j)
{
    for (size_t i = 0; j->sg != NULL && i < j->spec->ntasks; i++)
        while (j->sg->t[i].n > 0)
            cl_sg__end(w, j, i, j->sg->t[i].n - 1, 1);
}

void cl_sg_node_down(struct cl_world *w, uint32_t n)
{
    for (size_t jb = 0; jb < w->njobs; jb++) {
        struct cl_job *j = &w->jobs[jb];
        if (j->sg == NULL || !j->arrived || j->done)
            continue;
        for (size_t i = 0; i < j->spec->ntasks; i++)
            for (size_t k = 0; k < j->sg->t[i].n; k++) {
                struct cl_task *tk = &j->sg->t[i].x[k].t;
                if (tk->node != n)
                    continue;
                tk->running = 0;
                w->res->lost++;
                int rc = engine_after(w->eng, w->cfg.node_timeout_s, cl_lost_ev, w,
                                      cl_key(jb, i, tk->attempt));
                if (rc != 0)
                    cl_sg__fail(w, rc);
            }
    }
}

/* A copy of `task` to view node `node` in class cls, its estimate there e (dup as cl_sg_att's). */
static int cl_sg__start(struct cl_world *w, struct cl_job *j, size_t task, uint32_t node, int cls,
                        int dup, const struct estimate *e, double now)
{
    struct cl_strag *s = j->sg;
    struct cl_sg_task *x = &s->t[task];
    struct cl_task *p = &j->tasks[task];
    if (x->n >= CL_SG_EXTRA)
        return ERR_FULL;
    if (x->n == 0) { /* the task's winner-and-cancel record starts with its tracked attempt */
        speculate_task_init(&x->st);
        (void)speculate_task_add(&x->st, p->attempt, (int32_t)p->node, 0);
        if (p->running)
            (void)speculate_task_started(&x->st, p->attempt, 0, NULL, 0);
    }
    uint32_t a = attempt_reserve(j->core.att, task);
    int rc = speculate_task_add(&x->st, a, (int32_t)node, 1);
    if (rc != 0)
        return rc;
    struct cl_sg_att *c = &x->x[x->n++];
    memset(c, 0, sizeof *c);
    c->t.node = node;
    c->t.attempt = a;
    c->t.klass = cls == DISPATCH_REGULAR ? QUEUE_REGULAR : QUEUE_OPPORTUNISTIC;
    c->t.ready_at = p->ready_at;
    c->t.placed_at = now;
    c->t.io_s = w->cfg.no_io ? 0 : e->io_s;
    c->t.planned_io = c->t.io_s;
    c->t.est_s = e->r_s;
    c->t.placed_wait = e->w_s;
    c->cls = cls;
    c->dup = dup;
    c->cost = dispatch_cost(j->core.disp, task);
    if (!dup) {
        s->inflight++;
        s->stage_inflight[j->spec->tasks[task].stage]++;
    }
    cl_sg__units(j, cls, c->cost, 1);
    if ((rc = place_claim(j->core.place, task, node, cl_sg__ms(now))) != 0)
        return rc;
    if (dup == 1) {
        x->dups++;
        w->res->dups_started++;
    } else if (dup == 0) {
        x->copies++;
        s->started++;
        w->res->copies_started++;
    }
    w->res->attempts++;
    return engine_after(w->eng, w->cfg.net_delay_s, cl_task_create_ev, w, cl_key(j->idx, task, a));
}

struct cl_sg__where {
    struct cl_job *j;
    size_t task;
};

/* A node the task has an attempt on already (the tracked one's or an extra's). */
static int cl_sg__busy(void *ctx, uint32_t n)
{
    struct cl_sg__where *o = ctx;
    return cl_attempt_at(o->j, o->task, n)->node == n;
}

/* A freed token upgrades the queued opportunistic task `task`: the daemon's rule
 * (jmd_spec_upgrade, jm/judge.h's judge_upgrade) re-places it as a regular attempt on a node that
 * finishes it sooner by the correction's margin, the opportunistic one cancelled at its node.
 * 1 when re-placed, 0 when it is upgraded in place (the caller's queue_upgrade). */
int cl_sg_upgrade(struct cl_world *w, struct cl_job *j, size_t task)
{
    struct cl_strag *s = j->sg;
    struct cl_task *p = &j->tasks[task];
    if (s == NULL || !w->cfg.correct || p->running || s->t[task].n > 0 ||
        !attempt_get(j->core.att, task)->inflight)
        return 0;
    double now = engine_now(w->eng);
    struct cl_sg__where o = {j, task};
    struct judge_where wh = {j->core.est,    w->view,     place_task(j->core.place, task),
                             cl_sg__ms(now), cl_sg__busy, &o};
    struct estimate alt;
    long to;
    if (!judge_upgrade(&s->ccfg, &wh, p->node, j->core.task_bl[task], &to, &alt, NULL))
        return 0;
    int rc = cl_sg__start(w, j, task, (uint32_t)to, DISPATCH_REGULAR, 2, &alt, now);
    if (rc == ERR_FULL)
        return 0;
    if (rc == 0)
        rc = cl_sg__swap(w, j, task, s->t[task].n - 1);
    if (rc != 0) {
        cl_sg__fail(w, rc);
        return 1;
    }
    w->res->rematched++;
    cl_sg__cancel_rest(w, j, task); /* the opportunistic attempt at its old node */
    return 1;
}

/* jm/speculate.h's verdict on the running task i (jm/judge.h, as the daemon asks it), from what
 * the JM knows: its time running, the stage's finished durations per unit of estimate, no
 * progress reading (the simulated PN reports no CPU time), the job's and stage's copies. Fills
 * *to and *e with where a copy would go. */
static enum speculate_verdict cl_sg__judge(struct cl_world *w, struct cl_job *j, size_t i,
                                           uint32_t running, double now, long *to,
                                           struct estimate *e)
{
    struct cl_strag *s = j->sg;
    const struct cl_task *p = &j->tasks[i];
    const struct spec_task *sp = &j->spec->tasks[i];
    struct cl_sg__where o = {j, i};
    struct judge_where wh = {j->core.est,    w->view,     place_task(j->core.place, i),
                             cl_sg__ms(now), cl_sg__busy, &o};
    struct judge_running jr = {
        .elapsed_s = now - p->started_at,
        .io_s = p->io_s,
        .fallback_r_s = p->est_s > 0 ? p->est_s : sp->runtime_s,
        .dist = &s->dist[sp->stage],
        .cpu = sp->cpu,
        .input_bytes = sp->input_bytes,
        .speculate = sp->speculate,
        .copies = s->t[i].copies,
        .job_inflight = (uint32_t)s->inflight,
        .job_started = (uint32_t)s->started,
        .job_running = running,
        .job_tasks = (uint32_t)j->spec->ntasks,
        .stage_inflight = s->stage_inflight[sp->stage],
        .stage_tasks = (uint32_t)j->spec->stages[sp->stage].ntasks,
    };
    return judge_running(&s->scfg, &wh, &jr, to, e, NULL, NULL, NULL);
}

/* Straggler detection over the running tasks, at most CL_SG_CHECK a tick. */
static void cl_sg__stragglers(struct cl_world *w, struct cl_job *j, double now)
{
    struct cl_strag *s = j->sg;
    size_t nfl, k = 0, looked = 0;
    const size_t *fl = dag_running(j->core.dag, &nfl);
    uint32_t running = (uint32_t)s->inflight;
    for (size_t f = 0; f < nfl; f++)
        running += j->tasks[fl[f]].running != 0;
    for (; k < nfl && looked < CL_SG_CHECK && !j->done; k++) {
        size_t i = fl[(s->next + k) % nfl];
        if (!attempt_get(j->core.att, i)->inflight || !j->tasks[i].running || s->t[i].n > 0)
            continue;
        looked++;
        long to = -1;
        struct estimate e;
        memset(&e, 0, sizeof e);
        if (cl_sg__judge(w, j, i, running, now, &to, &e) != SPECULATE_COPY)
            continue;
        enum dispatch_class cls =
            attempt_copy_class(j->core.disp, i, j->spec->tasks[i].speculate, s->opp_units);
        if (cls == DISPATCH_NONE) {
            w->res->copies_gated++;
            continue;
        }
        int rc = cl_sg__start(w, j, i, (uint32_t)to, cls, 0, &e, now);
        if (rc != 0 && rc != ERR_FULL) {
            cl_sg__fail(w, rc);
            return;
        }
        running++;
    }
    s->next = nfl ? (s->next + k) % nfl : 0;
}

/* jm/correct.h's action for the queued regular task i at its node (jm/judge.h, as the daemon
 * asks it): none, move or duplicate, and where to (*to, *e). The wait left comes from the PN's
 * expected wait in the task's QUEUED status, as the daemon's does, and from the matrix when the
 * PN sent none (a task that starts at once). */
static enum correct_action cl_sg__requeue(struct cl_world *w, struct cl_job *j, size_t i,
                                          double now, long *to, struct estimate *e)
{
    struct cl_strag *s = j->sg;
    const struct cl_task *p = &j->tasks[i];
    const struct spec_task *sp = &j->spec->tasks[i];
    struct cl_sg__where o = {j, i};
    struct judge_where wh = {j->core.est,    w->view,     place_task(j->core.place, i),
                             cl_sg__ms(now), cl_sg__busy, &o};
    struct judge_queued q = {
        .node = p->node,
        .waited_s = now - p->placed_at,
        .placed_wait_s = p->placed_wait,
        .pn_wait_s = p->pn_wait_at > 0 && now >= p->pn_wait_at ? p->pn_wait : -1,
        .since_report_s = now - p->pn_wait_at,
        .stage_wait_sum_s = s->wait_sum[sp->stage],
        .stage_wait_n = s->wait_n[sp->stage],
        .moves = attempt_get(j->core.att, i)->moves,
        .dups = s->t[i].dups,
        .speculate = sp->speculate,
        .no_room = attempt_copy_class(j->core.disp, i, 1, s->opp_units) == DISPATCH_NONE,
    };
    enum correct_mode mode = (enum correct_mode)(w->cfg.correct - 1);
    return judge_queued(&s->ccfg, mode, &wh, &q, to, e, NULL, NULL, NULL);
}

/* The deferred correction over the queued regular tasks, at most CL_SG_QUEUED a tick. */
static void cl_sg__correct(struct cl_world *w, struct cl_job *j, double now)
{
    struct cl_strag *s = j->sg;
    size_t nfl, k = 0, looked = 0;
    const size_t *fl = dag_running(j->core.dag, &nfl);
    for (; k < nfl && looked < CL_SG_QUEUED && !j->done; k++) {
        size_t i = fl[(s->cnext + k) % nfl];
        struct cl_task *p = &j->tasks[i];
        const struct attempt_task *at = attempt_get(j->core.att, i);
        if (!at->inflight || p->running || at->cls != DISPATCH_REGULAR ||
            p->pushed_at < p->placed_at || s->t[i].n > 0)
            continue; /* not queued at its node (yet), or not regular */
        looked++;
        long to = -1;
        struct estimate e;
        memset(&e, 0, sizeof e);
        enum correct_action act = cl_sg__requeue(w, j, i, now, &to, &e);
        if (act == CORRECT_ACT_MOVE) {
            cl_sg__cancel(w, j, i, p);
            w->res->moves++;
            struct attempt_event ev = {.kind = ATTEMPT_EV_MOVED, .task = i};
            int rc = cl_job_event(w, j, &ev); /* its next placement avoids the node */
            if (rc != 0) {
                cl_sg__fail(w, rc);
                return;
            }
        } else if (act == CORRECT_ACT_DUPLICATE) {
            enum dispatch_class cls = attempt_copy_class(j->core.disp, i, 1, s->opp_units);
            if (cls == DISPATCH_NONE) {
                w->res->copies_gated++;
                continue;
            }
            int rc = cl_sg__start(w, j, i, (uint32_t)to, cls, 1, &e, now);
            if (rc != 0 && rc != ERR_FULL) {
                cl_sg__fail(w, rc);
                return;
            }
        }
    }
    s->cnext = nfl ? (s->cnext + k) % nfl : 0;
}

static void cl_sg_tick_ev(engine_t *e, void *ctx, uint64_t job)
{
    struct cl_world *w = ctx;
    struct cl_job *j = &w->jobs[job];
    if (j->done || j->sg == NULL)
        return;
    if (w->cfg.correct)
        cl_sg__correct(w, j, engine_now(e));
    if (w->cfg.speculate && !j->done)
        cl_sg__stragglers(w, j, engine_now(e));
    int rc = engine_after(e, w->cfg.tick_s, cl_sg_tick_ev, w, job);
    if (rc != 0)
        cl_sg__fail(w, rc);
}

int cl_sg_arrive(struct cl_world *w, struct cl_job *j)
{
    return j->sg != NULL ? engine_after(w->eng, w->cfg.tick_s, cl_sg_tick_ev, w, j->idx) : 0;
}
