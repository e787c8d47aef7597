/* straggler_sim_jm.c - the slice engine's JM (straggler_sim.h): ready tasks in the daemon's
 * order while jm/dispatch.h gives a unit, and each tick the corrections of queued tasks
 * (jm/correct.h) and speculative copies of running ones (jm/speculate.h), behind jm/attempt.h's
 * copy gate. */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "jm/attempt.h"
#include "jm/correct.h"
#include "tools/sim/straggler_sim_internal.h"

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

void ss__ready(struct ss *s, size_t t)
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

void ss__task_done(struct ss *s, size_t t, double now)
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
            /* the daemon's gate (jm/daemon/jmd_spec.c): a duplicate needs a free unit */
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
        p *= rng_lognormal(&s->prog, 0, 0.1);
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

void ss__tick(struct ss *s)
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
