/* straggler_sim.c - one job on a shared cluster with injected stragglers, under the correction
 * modes (see straggler_sim.h). */
#include "tools/sim/straggler_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/attempt.h"
#include "jm/dag.h"
#include "jm/dispatch.h"
#include "jm/priority.h"
#include "jm/readyq.h"
#include "jm/speculate.h"
#include "tools/sim/engine.h"

enum { SS_QUEUED = 1, SS_RUNNING, SS_DONE, SS_DEAD };
enum { SS_ORIG = 0, SS_DUP = 1, SS_SPEC = 2 };
enum { SS_EV_FINISH = 1, SS_EV_ARRIVE, SS_EV_BURST, SS_EV_TICK };
#define SS_VIEW_EVERY 4

struct ss_att {
    size_t task;
    uint32_t node;
    int kind;  /* SS_ORIG, SS_DUP, SS_SPEC */
    int state; /* SS_QUEUED ... */
    double enq, start, dur, placed_wait, pn_start;
    uint32_t slot;
    int cls; /* an extra attempt's class (jm/attempt.h attempt_copy_class) */
};

struct ss_item {
    long att;   /* -1: foreign */
    double dur; /* foreign: its run time */
    double est;
};

struct ss_slot {
    int busy;
    long att; /* -1: foreign */
    double start, est;
    uint32_t gen;
};

struct ss_node {
    double speed; /* run-time multiplier */
    struct ss_slot *slot;
    struct ss_item *q;
    size_t qh, qn, qcap; /* live items are q[qh .. qn) */
    double view_wait;
    struct engine_rng fg; /* foreign arrivals */
};

struct ss_task {
    size_t pending;            /* dependencies not finished */
    int done, placed, waiting; /* waiting: in the JM's ready list for a unit */
    struct speculate_task st;
    uint32_t natt, moves, dups, copies;
    double est;
};

struct ss_stage {
    size_t left; /* tasks not finished */
    struct speculate_dist dist;
    double wait_sum;
    size_t wait_n;
    uint32_t inflight; /* speculative copies live */
};

struct ss {
    const struct spec *sp;
    enum straggler_mode mode;
    const struct straggler_cond *c;
    uint64_t seed;
    engine_t *e;
    struct ss_node *nodes;
    struct ss_task *tasks;
    struct ss_stage *stages;
    size_t **children; /* per task: tasks waiting on it (explicit edges) */
    size_t *nchildren;
    struct ss_att *att;
    size_t natt, attcap;
    double mean_est, typ_est, tick_s, t0, last_end;
    size_t left, running, ticks;
    long spec_started;
    uint32_t spec_inflight;
    struct engine_rng prog; /* progress readings */
    dispatch_t *disp;       /* the job's tokens and allowance: what is in flight (jm/dispatch.h) */
    uint64_t extra_opp;     /* units the extra attempts hold as opportunistic (the daemon's gate) */
    dag_t *dag;             /* the job's graph, for the daemon's ready order (jm/priority.h) */
    double *bl;             /* per task: its bottom level */
    readyq_t *rq;           /* ready tasks waiting for a unit, in the daemon's order */
    struct straggler_run *out;
    int rc;
};

const char *straggler_mode_name(enum straggler_mode m)
{
    static const char *const names[] = {"none", "move", "duplicate", "speculate"};
    return m < STRAGGLER_NMODES ? names[m] : "?";
}

void straggler_cond_default(struct straggler_cond *c)
{
    c->nodes = 20;
    c->slots = 4;
    c->load = 0.5;
    c->burst_rate = 3;
    c->burst_size = 3;
    c->noise_sigma = 0.2;
    c->straggler_prob = 0.05;
    c->straggler_min = 3;
    c->straggler_max = 10;
    c->slow_factor = 4;
    c->tokens = 0;
    c->opp_factor = 1.0;
    c->queued_mode = CORRECT_MODE_DUPLICATE;
    correct_config_default(&c->correct);
    speculate_config_default(&c->speculate);
}

static uint64_t ss__arg(int ev, uint64_t a, uint64_t b)
{
    return (uint64_t)ev << 56 | (a & 0xffffffull) << 32 | (b & 0xffffffffull);
}

static int ss__push(struct ss *s, struct ss_node *n, const struct ss_item *it)
{
    if (n->qh > 64 && n->qh * 2 > n->qn) { /* compact the consumed head */
        memmove(n->q, n->q + n->qh, (n->qn - n->qh) * sizeof *n->q);
        n->qn -= n->qh;
        n->qh = 0;
    }
    if (n->qn == n->qcap) {
        size_t cap = n->qcap ? 2 * n->qcap : 64;
        struct ss_item *q = mem_reallocarray(n->q, cap, sizeof *q);
        if (!q) {
            s->rc = ERR_NOMEM;
            return ERR_NOMEM;
        }
        n->q = q;
        n->qcap = cap;
    }
    n->q[n->qn++] = *it;
    return 0;
}

static void ss__event(engine_t *e, void *ctx, uint64_t arg);

/* Draws attempt k of task t's run time on the reference node. */
static double ss__draw(const struct ss *s, size_t t, uint32_t k)
{
    struct engine_rng r;
    engine_rng_seed(&r, s->seed, 0x1000000000ull + (uint64_t)t * 64 + k);
    double d = s->tasks[t].est * engine_rng_lognormal(&r, 0, s->c->noise_sigma);
    double u = engine_rng_unif(&r);
    double f = engine_rng_unif(&r);
    if (u < s->c->straggler_prob)
        d *= s->c->straggler_min + f * (s->c->straggler_max - s->c->straggler_min);
    return d;
}

/* Expected wait at node n for a new task, and each queued attempt's expected start, from the
 * estimates (the PN's forward simulation; a task past its estimate is taken to end soon). */
static void ss__simulate(struct ss *s, uint32_t ni, double now, int view)
{
    struct ss_node *n = &s->nodes[ni];
    size_t k = s->c->slots;
    double fr[64] = {0};
    for (size_t i = 0; i < k; i++) {
        const struct ss_slot *sl = &n->slot[i];
        fr[i] = now;
        if (sl->busy) {
            double end = sl->start + sl->est;
            fr[i] = end > now ? end : now + 0.1 * sl->est;
        }
    }
    for (size_t j = n->qh; j < n->qn; j++) {
        const struct ss_item *it = &n->q[j];
        if (it->att >= 0 && s->att[it->att].state != SS_QUEUED)
            continue;
        size_t b = 0;
        for (size_t i = 1; i < k; i++)
            if (fr[i] < fr[b])
                b = i;
        if (it->att >= 0)
            s->att[it->att].pn_start = fr[b];
        fr[b] += it->est;
    }
    double m = fr[0];
    for (size_t i = 1; i < k; i++)
        if (fr[i] < m)
            m = fr[i];
    if (view)
        n->view_wait = m - now;
}

static void ss__pump(struct ss *s, uint32_t ni);

/* Queues a new attempt of task t of the given kind at the best node other than `exclude`. */
static int ss__place(struct ss *s, size_t t, int kind, int cls, long exclude)
{
    struct ss_task *tk = &s->tasks[t];
    long best = -1;
    double bw = 0;
    for (size_t i = 0; i < s->c->nodes; i++) {
        if ((long)i == exclude)
            continue;
        /* Apollo's small random term against herding: a hash of (task, attempt, node). */
        double jitter = (double)((t * 2654435761u + tk->natt * 40503u + i * 97u) % 1000) / 1e5;
        double w = s->nodes[i].view_wait + jitter * tk->est;
        if (best < 0 || w < bw) {
            best = (long)i;
            bw = w;
        }
    }
    if (best < 0)
        return ERR_INVAL;
    if (s->natt == s->attcap) {
        size_t cap = s->attcap ? 2 * s->attcap : 256;
        struct ss_att *a = mem_reallocarray(s->att, cap, sizeof *a);
        if (!a)
            return s->rc = ERR_NOMEM;
        s->att = a;
        s->attcap = cap;
    }
    struct ss_node *n = &s->nodes[best];
    struct ss_att *a = &s->att[s->natt];
    memset(a, 0, sizeof *a);
    a->task = t;
    a->node = (uint32_t)best;
    a->kind = kind;
    a->state = SS_QUEUED;
    a->enq = engine_now(s->e);
    a->dur = ss__draw(s, t, tk->natt) * n->speed;
    a->placed_wait = n->view_wait;
    a->pn_start = a->enq + n->view_wait;
    int rc = speculate_task_add(&tk->st, (uint32_t)s->natt, (int32_t)best, kind != SS_ORIG);
    if (rc)
        return s->rc = rc;
    tk->natt++;
    if (kind != SS_ORIG && cls == DISPATCH_OPPORTUNISTIC)
        s->extra_opp++;
    a->cls = kind != SS_ORIG ? cls : DISPATCH_NONE;
    struct ss_item it = {.att = (long)s->natt, .dur = a->dur, .est = tk->est};
    s->natt++;
    if (ss__push(s, n, &it))
        return s->rc;
    n->view_wait += tk->est / (double)s->c->slots;
    tk->placed = 1;
    ss__pump(s, (uint32_t)best);
    return s->rc;
}

/* An extra attempt ended: the units it held are free again. */
static void ss__extra_end(struct ss *s, struct ss_att *a)
{
    if (a->cls == DISPATCH_OPPORTUNISTIC && s->extra_opp > 0)
        s->extra_opp--;
    a->cls = DISPATCH_NONE;
}

static void ss__kill(struct ss *s, size_t ai, double now)
{
    struct ss_att *a = &s->att[ai];
    ss__extra_end(s, a);
    if (a->state == SS_RUNNING) {
        struct ss_slot *sl = &s->nodes[a->node].slot[a->slot];
        sl->busy = 0;
        sl->gen++;
        s->out->work_s += now - a->start;
        s->running--;
        a->state = SS_DEAD;
        ss__pump(s, a->node);
    } else if (a->state == SS_QUEUED) {
        a->state = SS_DEAD; /* skipped when it reaches the head */
    }
    if (a->kind == SS_SPEC) {
        s->spec_inflight--;
        s->stages[s->sp->tasks[a->task].stage].inflight--;
    }
}

static void ss__start(struct ss *s, uint32_t ni, size_t slot, const struct ss_item *it)
{
    struct ss_node *n = &s->nodes[ni];
    struct ss_slot *sl = &n->slot[slot];
    double now = engine_now(s->e);
    sl->busy = 1;
    sl->att = it->att;
    sl->start = now;
    sl->est = it->est;
    sl->gen++;
    double dur = it->dur;
    if (it->att >= 0) {
        struct ss_att *a = &s->att[it->att];
        struct ss_task *tk = &s->tasks[a->task];
        a->state = SS_RUNNING;
        a->start = now;
        a->slot = (uint32_t)slot;
        s->running++;
        dur = a->dur;
        int first = 1;
        for (size_t j = 0; j < tk->st.n; j++)
            if (tk->st.a[j].started && tk->st.a[j].state != SPECULATE_A_NONE)
                first = 0;
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        int k =
            speculate_task_started(&tk->st, (uint32_t)it->att, 1, cancel, SPECULATE_MAX_ATTEMPTS);
        if (first) {
            struct ss_stage *st = &s->stages[s->sp->tasks[a->task].stage];
            st->wait_sum += now - a->enq;
            st->wait_n++;
            if (a->kind == SS_DUP) {
                s->out->copies_won++; /* Apollo's success: the duplicate started first */
                s->out->dups_won++;
            }
        }
        for (int i = 0; i < k && i < SPECULATE_MAX_ATTEMPTS; i++)
            ss__kill(s, cancel[i], now);
    }
    if (engine_after(s->e, dur, ss__event, s, ss__arg(SS_EV_FINISH, ni * 64 + slot, sl->gen)))
        s->rc = ERR_NOMEM;
}

static void ss__pump(struct ss *s, uint32_t ni)
{
    struct ss_node *n = &s->nodes[ni];
    for (size_t i = 0; i < s->c->slots && n->qh < n->qn; i++) {
        if (n->slot[i].busy)
            continue;
        while (n->qh < n->qn) {
            struct ss_item it = n->q[n->qh++];
            if (it.att >= 0 && s->att[it.att].state != SS_QUEUED)
                continue;
            ss__start(s, ni, i, &it);
            break;
        }
    }
}

/* Ready tasks go out in the daemon's order (jm/readyq.h: the highest bottom level first, then
 * the larger input) while the dispatcher gives a class (a unit of the tokens or the allowance,
 * jm/dispatch.h): every task costs one unit, as it takes one slot, so the first that gets none
 * stops the round (as the daemon's rounds, each begins with dispatch_round). */
static void ss__drain(struct ss *s)
{
    size_t t;
    dispatch_round(s->disp); /* a round: a reservation not offered again lapses */
    while (!s->rc && readyq_peek(s->rq, &t) == 0) {
        int cls = dispatch_place(s->disp, t);
        if (cls < 0) {
            s->rc = cls;
            return;
        }
        if (cls == DISPATCH_NONE)
            return;
        int rc = readyq_remove(s->rq, t);
        if (rc != 0) {
            s->rc = rc;
            return;
        }
        s->tasks[t].waiting = 0;
        ss__place(s, t, SS_ORIG, cls, -1);
    }
}

static void ss__ready(struct ss *s, size_t t)
{
    struct ss_task *tk = &s->tasks[t];
    if (tk->pending != 0 || tk->placed || tk->done || tk->waiting)
        return;
    tk->waiting = 1;
    int rc = readyq_push(s->rq, t, s->bl[t], s->sp->tasks[t].input_bytes);
    if (rc != 0) {
        s->rc = rc;
        return;
    }
    ss__drain(s);
}

static void ss__task_done(struct ss *s, size_t t, double now)
{
    struct ss_task *tk = &s->tasks[t];
    tk->done = 1;
    s->left--;
    int rc = dispatch_finished(s->disp, t); /* the task's unit is free */
    if (rc != 0)
        s->rc = rc;
    s->last_end = now;
    size_t sg = s->sp->tasks[t].stage;
    if (--s->stages[sg].left == 0) {
        /* Stage barrier: tasks of the stages after it lose one dependency. */
        for (size_t g = 0; g < s->sp->nstages; g++)
            for (size_t j = 0; j < s->sp->stages[g].nafter; j++)
                if (s->sp->stages[g].after[j] == sg)
                    for (size_t q = 0; q < s->sp->stages[g].ntasks; q++) {
                        size_t c = s->sp->stages[g].tasks[q];
                        s->tasks[c].pending--;
                        ss__ready(s, c);
                    }
    }
    for (size_t j = 0; j < s->nchildren[t]; j++) {
        size_t c = s->children[t][j];
        s->tasks[c].pending--;
        ss__ready(s, c);
    }
    ss__drain(s);
    if (s->left == 0)
        engine_stop(s->e);
}

static void ss__finish(struct ss *s, uint32_t ni, size_t slot, uint32_t gen)
{
    struct ss_node *n = &s->nodes[ni];
    struct ss_slot *sl = &n->slot[slot];
    if (!sl->busy || sl->gen != gen)
        return; /* killed */
    double now = engine_now(s->e);
    sl->busy = 0;
    if (sl->att >= 0) {
        size_t ai = (size_t)sl->att;
        struct ss_att *a = &s->att[ai];
        struct ss_task *tk = &s->tasks[a->task];
        s->running--;
        double ran = now - a->start;
        s->out->work_s += ran;
        s->out->useful_s += ran;
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        int k = speculate_task_finished(&tk->st, (uint32_t)ai, cancel, SPECULATE_MAX_ATTEMPTS);
        a->state = SS_DONE;
        ss__extra_end(s, a);
        if (a->kind == SS_SPEC) {
            s->out->copies_won++;
            s->out->spec_won++;
            s->spec_inflight--;
            s->stages[s->sp->tasks[a->task].stage].inflight--;
        }
        for (int i = 0; i < k && i < SPECULATE_MAX_ATTEMPTS; i++)
            ss__kill(s, cancel[i], now);
        /* The stage's times per unit of estimate (the estimator's refined R plays this part in
           the JM): tasks of one stage differ in size. */
        if (speculate_dist_add(&s->stages[s->sp->tasks[a->task].stage].dist, ran / tk->est))
            s->rc = ERR_NOMEM;
        ss__task_done(s, a->task, now);
    }
    ss__pump(s, ni);
}

static void ss__arrive(struct ss *s, uint32_t ni, int burst)
{
    struct ss_node *n = &s->nodes[ni];
    double mean = s->mean_est;
    size_t k = burst ? (size_t)ceil(s->c->burst_size * (double)s->c->slots) : 1;
    for (size_t i = 0; i < k; i++) {
        struct ss_item it = {.att = -1, .dur = 0, .est = 0};
        it.dur = engine_rng_exp(&n->fg, mean);
        it.est = mean;
        if (ss__push(s, n, &it))
            return;
    }
    ss__pump(s, ni);
    double next;
    if (burst)
        next = s->c->burst_rate > 0 ? engine_rng_exp(&n->fg, 100 * mean / s->c->burst_rate) : 0;
    else
        next = engine_rng_exp(&n->fg, mean / (s->c->load * (double)s->c->slots));
    if (next > 0 &&
        engine_after(s->e, next, ss__event, s, ss__arg(burst ? SS_EV_BURST : SS_EV_ARRIVE, ni, 0)))
        s->rc = ERR_NOMEM;
}

/* The best other node's wait (the view) for an attempt at node `own`. */
static double ss__alt_wait(const struct ss *s, uint32_t own)
{
    double best = INFINITY;
    for (size_t i = 0; i < s->c->nodes; i++)
        if (i != own && s->nodes[i].view_wait < best)
            best = s->nodes[i].view_wait;
    return best;
}

static void ss__correct_queued(struct ss *s, enum correct_mode mode, double now)
{
    size_t natt = s->natt; /* attempts made in this pass are not looked at */
    for (size_t ai = 0; ai < natt && !s->rc; ai++) {
        struct ss_att *a = &s->att[ai];
        if (a->state != SS_QUEUED || a->kind != SS_ORIG)
            continue;
        struct ss_task *tk = &s->tasks[a->task];
        if (speculate_task_live(&tk->st) != 1)
            continue;
        const struct ss_stage *st = &s->stages[s->sp->tasks[a->task].stage];
        struct correct_dup_input in;
        memset(&in, 0, sizeof in);
        in.q.waited_s = now - a->enq;
        in.q.placed_wait_s = a->placed_wait;
        in.q.pn_wait_s = a->pn_start > now ? a->pn_start - now : 0;
        in.q.since_report_s = 0;
        in.q.cur_wait_s = s->nodes[a->node].view_wait;
        in.q.run_s = tk->est;
        in.q.alt_c_s = ss__alt_wait(s, a->node) + tk->est;
        in.q.moves = tk->moves;
        in.stage_avg_wait_s = st->wait_n ? st->wait_sum / (double)st->wait_n : -1;
        in.dups = tk->dups;
        in.no_copies = !s->sp->tasks[a->task].speculate; /* moved instead, as the daemon */
        enum correct_action act = correct_decide(&s->c->correct, mode, &in, NULL, NULL);
        if (act == CORRECT_ACT_MOVE) {
            uint32_t node = a->node;
            a->state = SS_DEAD;
            (void)speculate_task_failed(&tk->st, (uint32_t)ai);
            tk->moves++;
            s->out->moves++;
            tk->placed = 0;
            ss__place(s, a->task, SS_ORIG, DISPATCH_NONE, node); /* it keeps its unit */
        } else if (act == CORRECT_ACT_DUPLICATE) {
            /* the daemon's gate (jm/jmd_spec.c): a duplicate needs a free unit */
            enum dispatch_class cls = attempt_copy_class(s->disp, a->task, 1, s->extra_opp);
            if (cls == DISPATCH_NONE) {
                s->out->copies_gated++;
                continue;
            }
            tk->dups++;
            s->out->copies_started++;
            s->out->dups_started++;
            ss__place(s, a->task, SS_DUP, cls, a->node);
        }
    }
}

static void ss__speculate(struct ss *s, double now)
{
    size_t natt = s->natt;
    for (size_t ai = 0; ai < natt && !s->rc; ai++) {
        struct ss_att *a = &s->att[ai];
        if (a->state != SS_RUNNING || a->kind == SS_SPEC)
            continue;
        struct ss_task *tk = &s->tasks[a->task];
        if (speculate_task_live(&tk->st) != 1)
            continue;
        size_t sg = s->sp->tasks[a->task].stage;
        const struct ss_stage *st = &s->stages[sg];
        struct speculate_input in;
        memset(&in, 0, sizeof in);
        in.elapsed_s = now - a->start;
        in.stage_done = st->dist.v;
        in.nstage_done = st->dist.n;
        in.stage_scale = tk->est;
        in.est_run_s = tk->est;
        double p = a->dur > 0 ? in.elapsed_s / a->dur : 1;
        p *= engine_rng_lognormal(&s->prog, 0, 0.1);
        in.progress = p > 1 ? 0.99 : p;
        double r = tk->est * (st->dist.n >= 3 ? speculate_dist_median(&st->dist) : 1);
        in.copy_c_s = ss__alt_wait(s, a->node) + r;
        in.copy_spread_s = tk->est * (st->dist.n >= 3 ? speculate_dist_stddev(&st->dist) : 0.25);
        in.speculate = s->sp->tasks[a->task].speculate; /* "speculate": false, as the JM */
        in.copies = tk->copies;
        in.job_inflight = s->spec_inflight;
        in.job_started = (uint32_t)s->spec_started;
        in.job_running = (uint32_t)s->running;
        in.job_tasks = (uint32_t)s->sp->ntasks;
        in.stage_inflight = st->inflight;
        in.stage_tasks = (uint32_t)s->sp->stages[sg].ntasks;
        if (speculate_check(&s->c->speculate, &in, NULL) != SPECULATE_COPY)
            continue;
        /* jm/attempt.h's copy gate: "speculate": false, and a free unit of the tokens or the
           allowance */
        enum dispatch_class cls =
            attempt_copy_class(s->disp, a->task, s->sp->tasks[a->task].speculate, s->extra_opp);
        if (cls == DISPATCH_NONE) {
            s->out->copies_gated++;
            continue;
        }
        tk->copies++;
        s->spec_started++;
        s->spec_inflight++;
        s->stages[sg].inflight++;
        s->out->copies_started++;
        s->out->spec_started++;
        ss__place(s, a->task, SS_SPEC, cls, a->node);
    }
}

static void ss__tick(struct ss *s)
{
    double now = engine_now(s->e);
    /* The PNs' reports on the job's own queued tasks are fresh every tick; the view of every
       node's wait (the RM's matrices) only every SS_VIEW_EVERY ticks. */
    int view = s->ticks++ % SS_VIEW_EVERY == 0;
    for (uint32_t i = 0; i < s->c->nodes; i++)
        ss__simulate(s, i, now, view);
    if (now >= s->t0) {
        if (s->mode == STRAGGLER_MOVE)
            ss__correct_queued(s, CORRECT_MODE_MOVE, now);
        else if (s->mode == STRAGGLER_DUPLICATE)
            ss__correct_queued(s, CORRECT_MODE_DUPLICATE, now);
        else if (s->mode == STRAGGLER_SPECULATE) {
            ss__correct_queued(s, s->c->queued_mode, now);
            ss__speculate(s, now);
        }
    }
    if (s->left && engine_after(s->e, s->tick_s, ss__event, s, ss__arg(SS_EV_TICK, 0, 0)))
        s->rc = ERR_NOMEM;
}

static void ss__start_job(struct ss *s)
{
    double now = engine_now(s->e);
    for (uint32_t i = 0; i < s->c->nodes; i++)
        ss__simulate(s, i, now, 1);
    for (size_t t = 0; t < s->sp->ntasks && !s->rc; t++)
        ss__ready(s, t);
}

static void ss__event(engine_t *e, void *ctx, uint64_t arg)
{
    (void)e;
    struct ss *s = ctx;
    if (s->rc)
        return;
    int ev = (int)(arg >> 56);
    uint32_t a = (uint32_t)((arg >> 32) & 0xffffff), b = (uint32_t)arg;
    switch (ev) {
    case SS_EV_FINISH:
        ss__finish(s, a / 64, a % 64, b);
        break;
    case SS_EV_ARRIVE:
        ss__arrive(s, a, 0);
        break;
    case SS_EV_BURST:
        ss__arrive(s, a, 1);
        break;
    case SS_EV_TICK:
        if (b == 1)
            ss__start_job(s);
        else
            ss__tick(s);
        break;
    }
    if (s->rc)
        engine_stop(s->e);
}

/* Task graph: explicit edges as children lists, stage barriers as pending counts. */
static int ss__graph(struct ss *s)
{
    const struct spec *sp = s->sp;
    for (size_t t = 0; t < sp->ntasks; t++) {
        const struct spec_task *st = &sp->tasks[t];
        s->tasks[t].pending += st->nafter;
        for (size_t j = 0; j < st->nafter; j++)
            s->nchildren[st->after[j]]++;
        const struct spec_stage *g = &sp->stages[st->stage];
        for (size_t j = 0; j < g->nafter; j++)
            if (sp->stages[g->after[j]].ntasks)
                s->tasks[t].pending++;
    }
    for (size_t t = 0; t < sp->ntasks; t++) {
        if (s->nchildren[t] && !(s->children[t] = mem_calloc(s->nchildren[t], sizeof(size_t))))
            return ERR_NOMEM;
        s->nchildren[t] = 0;
    }
    for (size_t t = 0; t < sp->ntasks; t++)
        for (size_t j = 0; j < sp->tasks[t].nafter; j++) {
            size_t p = sp->tasks[t].after[j];
            s->children[p][s->nchildren[p]++] = t;
        }
    return 0;
}

static int ss__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void ss__free(struct ss *s)
{
    if (s->nodes)
        for (size_t i = 0; i < s->c->nodes; i++) {
            mem_free(s->nodes[i].slot);
            mem_free(s->nodes[i].q);
        }
    if (s->stages)
        for (size_t g = 0; g < s->sp->nstages; g++)
            speculate_dist_close(&s->stages[g].dist);
    if (s->children)
        for (size_t t = 0; t < s->sp->ntasks; t++)
            mem_free(s->children[t]);
    mem_free(s->children);
    mem_free(s->nchildren);
    mem_free(s->nodes);
    mem_free(s->tasks);
    mem_free(s->stages);
    mem_free(s->att);
    readyq_destroy(&s->rq);
    mem_free(s->bl);
    dag_destroy(&s->dag);
    dispatch_destroy(&s->disp);
    engine_destroy(&s->e);
}

int straggler_sim_job(const struct spec *sp, enum straggler_mode m, const struct straggler_cond *c,
                      uint64_t seed, struct straggler_run *out)
{
    memset(out, 0, sizeof *out);
    if (!sp || !sp->ntasks || m >= STRAGGLER_NMODES || c->nodes < 2 || c->nodes > 0xffff ||
        c->slots < 1 || c->slots > 64 || !(c->load > 0) || !(c->load < 1) || c->tokens > 1000000 ||
        !(c->opp_factor >= 0) || c->opp_factor > 100)
        return ERR_INVAL;
    struct ss s;
    memset(&s, 0, sizeof s);
    s.sp = sp;
    s.mode = m;
    s.c = c;
    s.seed = seed;
    s.out = out;
    int rc = engine_new(&s.e);
    if (rc)
        return rc;
    s.nodes = mem_calloc(c->nodes, sizeof *s.nodes);
    s.tasks = mem_calloc(sp->ntasks, sizeof *s.tasks);
    s.stages = mem_calloc(sp->nstages ? sp->nstages : 1, sizeof *s.stages);
    s.children = mem_calloc(sp->ntasks, sizeof *s.children);
    s.nchildren = mem_calloc(sp->ntasks, sizeof *s.nchildren);
    s.bl = mem_calloc(sp->ntasks, sizeof *s.bl);
    double *est = mem_calloc(sp->ntasks, sizeof *est);
    struct dispatch_config dc;
    dispatch_config_default(&dc);
    dc.opp_factor = c->opp_factor;
    if (!s.bl || !est || dispatch_new(&dc, sp->ntasks, &s.disp) != 0 ||
        readyq_new(sp->ntasks, &s.rq) != 0 || dag_new(sp, &s.dag) != 0 ||
        priority_compute(s.dag, NULL, s.bl, NULL) != 0 || !s.nodes || !s.tasks || !s.stages ||
        !s.children || !s.nchildren) {
        mem_free(est);
        ss__free(&s);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < c->nodes; i++) {
        if (!(s.nodes[i].slot = mem_calloc(c->slots, sizeof *s.nodes[i].slot))) {
            mem_free(est);
            ss__free(&s);
            return ERR_NOMEM;
        }
        s.nodes[i].speed = i == 0 && c->slow_factor > 1 ? c->slow_factor : 1;
        engine_rng_seed(&s.nodes[i].fg, seed, 0x2000000000ull + i);
    }
    double work = 0;
    for (size_t t = 0; t < sp->ntasks; t++) {
        speculate_task_init(&s.tasks[t].st);
        s.tasks[t].est = sp->tasks[t].runtime_s > 0 ? sp->tasks[t].runtime_s : 0.01;
        est[t] = s.tasks[t].est;
        work += est[t];
    }
    qsort(est, sp->ntasks, sizeof *est, ss__cmp);
    s.typ_est = est[sp->ntasks / 2];
    mem_free(est);
    s.mean_est = work / (double)sp->ntasks;
    for (size_t g = 0; g < sp->nstages; g++) {
        speculate_dist_init(&s.stages[g].dist);
        s.stages[g].left = sp->stages[g].ntasks;
    }
    engine_rng_seed(&s.prog, seed, 0x3000000000ull);
    dispatch_set_tokens(s.disp, c->tokens ? (uint32_t)c->tokens : (uint32_t)(c->nodes * c->slots));
    if ((rc = ss__graph(&s))) {
        ss__free(&s);
        return rc;
    }
    s.left = sp->ntasks;
    /* Ticks: a quarter of the typical task, but at most ~400 over the job's ideal length. */
    double ideal = work / ((double)(c->nodes * c->slots) * (1 - c->load));
    s.tick_s = s.typ_est / 4;
    if (s.tick_s < ideal / 400)
        s.tick_s = ideal / 400;
    if (s.tick_s < 1e-3)
        s.tick_s = 1e-3;
    s.t0 = 5 * s.mean_est;
    for (uint32_t i = 0; i < c->nodes && !rc; i++) {
        rc = engine_at(s.e, 0, ss__event, &s, ss__arg(SS_EV_ARRIVE, i, 0));
        if (!rc && c->burst_rate > 0)
            rc = engine_at(s.e, engine_rng_exp(&s.nodes[i].fg, 100 * s.mean_est / c->burst_rate),
                           ss__event, &s, ss__arg(SS_EV_BURST, i, 0));
    }
    if (!rc)
        rc = engine_at(s.e, s.t0, ss__event, &s, ss__arg(SS_EV_TICK, 0, 1));
    if (!rc)
        rc = engine_at(s.e, s.t0, ss__event, &s, ss__arg(SS_EV_TICK, 0, 0));
    /* Foreign work never ends: the run stops with the job (engine_stop), or at a horizon far
       past any plausible makespan (a bug, reported as ERR_STATE rather than a hang). */
    if (!rc)
        engine_run(s.e, s.t0 + 100 * c->straggler_max * c->slow_factor * (work + s.typ_est));
    if (!rc)
        rc = s.rc;
    if (!rc && s.left)
        rc = ERR_STATE;
    out->makespan_s = s.last_end - s.t0;
    ss__free(&s);
    return rc;
}
