/* jmd_spec_start.c - when the daemon starts an extra attempt, each tick: speculative copies of
 * stragglers (jm/speculate.h), duplicates or moves of queued tasks (jm/correct.h, the deferred
 * correction), re-runs of producers whose node-local outputs were lost with their node, extra
 * attempts lost with theirs, and upgrades with a re-match. What happens to an attempt once
 * started is in jmd_spec.c. */
#include "jm/daemon/jmd_spec_internal.h"

#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd.h"
#include "jm/judge.h"
#include "jm/speculate.h"

struct jmd_spec__other {
    const jmd_t *j;
    size_t task;
};

/* Nodes a new attempt of the task may not go to: those it has attempts on, and nodes with no
 * endpoint to send it to. */
static int jmd_spec__taken(void *ctx, uint32_t n)
{
    const struct jmd_spec__other *o = ctx;
    const struct jmd_spec_task *jt = &o->j->sp->t[o->task];
    int used = (int)n == o->j->tasks[o->task].node;
    for (size_t k = 0; k < JMD_SPEC__N(jt); k++)
        used |= jt->x->a[k].node == (int)n;
    const struct view_node *vn = view_node(o->j->view, n);
    return used || !vn->endpoint[0];
}

/* Sends a new extra attempt of `task` to `node` in class `cls`. 0 or an ERR_*. */
static int jmd_spec__start(jmd_t *j, size_t task, uint32_t node, int cls, int dup,
                           const struct estimate *est, int64_t now)
{
    struct jmd_spec *s = j->sp;
    struct jmd_spec_task *jt = &s->t[task];
    struct jmd_task *t = &j->tasks[task];
    if (JMD_SPEC__N(jt) >= JMD_SPEC__EXTRA)
        return ERR_FULL;
    if (JMD_SPEC__N(jt) == 0) {
        if (!jt->x && !(jt->x = mem_calloc(1, sizeof *jt->x)))
            return ERR_NOMEM;
        speculate_task_init(&jt->x->st);
        (void)speculate_task_add(&jt->x->st, t->attempt, t->node, 0);
        if (t->running)
            (void)speculate_task_started(&jt->x->st, t->attempt, 0, NULL, 0);
    }
    uint32_t attempt = attempt_reserve(j->core.att, task);
    int rc = speculate_task_add(&jt->x->st, attempt, (int32_t)node, 1);
    if (rc) {
        if (jt->x->n == 0) {
            mem_free(jt->x);
            jt->x = NULL;
        }
        return rc;
    }
    struct jmd_spec_att *e = &jt->x->a[jt->x->n++];
    memset(e, 0, sizeof *e);
    e->attempt = attempt;
    e->node = (int)node;
    e->cls = cls;
    e->dup = dup;
    e->disp_mono = now;
    e->disp_wall = clock_wall_ms();
    e->cost = dispatch_cost(j->core.disp, task);
    e->est = *est;
    if (!dup) {
        s->inflight++;
        s->stage_inflight[j->spec->tasks[task].stage]++;
    }
    jmd_spec__units(j, cls, e->cost, 1);
    if ((rc = place_claim(j->core.place, task, node, now)) != 0)
        log_warn("%s: the claim on node %u was not recorded (%s)", j->spec->tasks[task].id, node,
                 err_text(rc));
    return 0;
}

/* Sends the create of the extra attempt just added (split out so a link made by the send is
 * counted). */
static void jmd_spec__send(jmd_t *j, size_t task, uint32_t node, int64_t now)
{
    struct jmd_spec_task *jt = &j->sp->t[task];
    struct jmd_spec_att *e = &jt->x->a[JMD_SPEC__N(jt) - 1];
    char err[256] = "";
    int rc = jmd_pn_create_attempt(j, task, e->attempt, e->cls, node, err, sizeof err);
    if (node < j->nlinks && j->links[node].inflight++ == 0)
        j->links[node].heard_mono = now;
    if (rc == ERR_TOOBIG || rc == ERR_RANGE) {
        jmd_spec__end(j, task, JMD_SPEC__N(jt) - 1, PROTO_TASK_CANCELLED, NULL, err, 0);
    } else if (rc != 0) {
        log_warn("cannot send %s attempt %u to %s yet (%s)", j->spec->tasks[task].id, e->attempt,
                 jmd_spec__name(j, (int)node), err);
    }
}

/* The tasks that can have an attempt in flight: the DAG's running ones (a task is placed with
 * dag_start and leaves with its end), copied so that what a pass does (a move, an end) cannot
 * reorder what it walks. The passes below looked at every task of the job each tick: with a
 * million tasks and forty in flight, most of the JM's time (issue 24). 0 when out of memory. */
static size_t jmd_spec__flight(jmd_t *j, const size_t **out)
{
    struct jmd_spec *s = j->sp;
    size_t n;
    const size_t *r = dag_running(j->core.dag, &n);
    if (n > s->capflight) {
        size_t c = n < 64 ? 64 : 2 * n;
        size_t *p = mem_reallocarray(s->flight, c, sizeof *p);
        if (!p)
            return 0;
        s->flight = p;
        s->capflight = c;
    }
    if (n)
        memcpy(s->flight, r, n * sizeof *r);
    *out = s->flight;
    return n;
}

/* Straggler detection for the running tasks (jm/speculate.h), at most JMD_SPEC__CHECK a tick. */
static void jmd_spec__stragglers(jmd_t *j, int64_t now)
{
    struct jmd_spec *s = j->sp;
    size_t n = j->spec->ntasks, looked = 0, k = 0, running = 0;
    const size_t *fl = NULL;
    size_t nfl = jmd_spec__flight(j, &fl);
    for (size_t f = 0; f < nfl; f++)
        running += j->tasks[fl[f]].inflight && j->tasks[fl[f]].running;
    running += s->inflight;
    for (; k < nfl && looked < JMD_SPEC__CHECK; k++) {
        size_t i = fl[(s->next + k) % nfl];
        struct jmd_task *t = &j->tasks[i];
        struct jmd_spec_task *jt = &s->t[i];
        if (!t->inflight || !t->running || t->node < 0 || JMD_SPEC__N(jt) > 0)
            continue;
        looked++;
        const struct spec_task *sp = &j->spec->tasks[i];
        const struct speculate_dist *d = &s->dist[sp->stage];
        struct jmd_spec__other o = {j, i};
        struct judge_where wh = {j->core.est, j->view,         place_task(j->core.place, i),
                                 now,         jmd_spec__taken, &o};
        struct judge_running jr = {
            .elapsed_s = (double)(now - t->run_mono) / 1000.0,
            .io_s = t->est.io_s,
            .fallback_r_s = t->est.r_s > 0 ? t->est.r_s : sp->runtime_s,
            .dist = d,
            .cpu_s = (double)jt->cpu_ms / 1000.0,
            .bytes_read = jt->bytes_read,
            .cpu = sp->cpu,
            .input_bytes = sp->input_bytes,
            .speculate = sp->speculate,
            .copies = jt->copies,
            .job_inflight = (uint32_t)s->inflight,
            .job_started = (uint32_t)j->spec_stats.copies_started,
            .job_running = (uint32_t)running,
            .job_tasks = (uint32_t)n,
            .stage_inflight = s->stage_inflight[sp->stage],
            .stage_tasks = (uint32_t)j->spec->stages[sp->stage].ntasks,
        };
        struct speculate_input in;
        struct speculate_why why;
        struct estimate e;
        long to;
        double r = 0;
        if (judge_running(&s->scfg, &wh, &jr, &to, &e, &in, &why, &r) != SPECULATE_COPY)
            continue;
        enum dispatch_class cls = attempt_copy_class(j->core.disp, i, sp->speculate, s->opp_units);
        if (cls == DISPATCH_NONE) {
            log_debug("%s: a copy would save %.1f s, but no token or allowance is free", sp->id,
                      why.saving_s);
            continue;
        }
        const char *from = jmd_spec__name(j, t->node);
        if (jmd_spec__start(j, i, (uint32_t)to, cls, 0, &e, now) != 0)
            continue;
        jt->copies++;
        j->spec_stats.copies_started++;
        struct jmd_spec_att *a = &jt->x->a[JMD_SPEC__N(jt) - 1];
        log_info("speculative copy of %s: attempt %u on %s (%s) beside attempt %u on %s: ran "
                 "%.1f s, ~%.1f s left (stage: %zu finished, median %.2f x R, R %.1f s, "
                 "progress %.2f), a copy ~%.1f s there (C %.1f s + spread), saving ~%.1f s",
                 sp->id, a->attempt, jmd_spec__name(j, (int)to),
                 cls == DISPATCH_REGULAR ? "regular" : "opportunistic", t->attempt, from,
                 in.elapsed_s, why.remaining_s, d->n, speculate_dist_median(d), r, in.progress,
                 why.copy_q_s, e.e_s, why.saving_s);
        jmd_spec__send(j, i, (uint32_t)to, now);
        if (j->outcome != JMD_RUNNING)
            return;
    }
    s->next = nfl ? (s->next + k) % nfl : 0;
}

/* Extra attempts on nodes that went down or silent: lost (the task's primary goes on). */
static void jmd_spec__lost_extras(jmd_t *j, int64_t now)
{
    struct jmd_spec *s = j->sp;
    const size_t *fl = NULL;
    size_t nfl = jmd_spec__flight(j, &fl);
    for (size_t f = 0; f < nfl; f++) {
        size_t i = fl[f];
        struct jmd_spec_task *jt = &s->t[i];
        for (size_t k = JMD_SPEC__N(jt); k-- > 0;) {
            struct jmd_spec_att *e = &jt->x->a[k];
            if (e->node < 0)
                continue;
            uint32_t n = (uint32_t)e->node;
            char why[512];
            enum attempt_node v = jmd_sched_node_check(j, n, e->disp_mono, now);
            if (v == ATTEMPT_NODE_OK)
                continue;
            if (v == ATTEMPT_NODE_DOWN)
                snprintf(why, sizeof why, "node %s is down", jmd_spec__name(j, e->node));
            else
                snprintf(why, sizeof why, "node %s silent for %lld ms", jmd_spec__name(j, e->node),
                         (long long)(now - j->links[n].heard_mono));
            (void)speculate_task_failed(&jt->x->st, e->attempt);
            jmd_spec__end(j, i, k, PROTO_TASK_LOST, NULL, why, 1);
        }
    }
}

/* Lost outputs: a task that succeeded on a node now down, whose node-local outputs a dependent
 * that has not succeeded still needs, runs again (uncharged). Dependents in flight are cancelled
 * and wait for it again. */
static void jmd_spec__lost_outputs(jmd_t *j, int64_t now)
{
    struct jmd_spec *s = j->sp;
    for (size_t q = 0; q < s->nlocal; q++) {
        size_t p = s->local[q];
        struct jmd_spec_task *jt = &s->t[p];
        if (jt->done_node < 0 || dag_state(j->core.dag, p) != DAG_SUCCEEDED ||
            !jmd_spec__node_down(j, (uint32_t)jt->done_node))
            continue;
        size_t nd;
        const size_t *dep = dag_dependents(j->core.dag, p, &nd);
        size_t need = 0;
        const char *child = NULL;
        for (size_t i = 0; i < nd; i++)
            if (dag_state(j->core.dag, dep[i]) != DAG_SUCCEEDED) {
                need++;
                child = j->spec->tasks[dep[i]].id;
            }
        const char *node = jmd_spec__name(j, jt->done_node);
        if (!attempt_outputs_lost(1, 1, need)) {
            jt->done_node = -1; /* nobody needs them any more */
            continue;
        }
        char why[512];
        snprintf(why, sizeof why, "input lost: %s's node-local outputs were on %s, which is down",
                 j->spec->tasks[p].id, node);
        for (size_t i = 0; i < nd; i++) {
            size_t c = dep[i];
            struct jmd_task *ct = &j->tasks[c];
            if (dag_state(j->core.dag, c) != DAG_RUNNING || !ct->inflight)
                continue;
            struct attempt_event ev = {.kind = ATTEMPT_EV_CANCEL, .task = c};
            jmd_sched_event(j, &ev, NULL, why);
            if (j->outcome != JMD_RUNNING)
                return;
        }
        int rc = dag_redo(j->core.dag, p);
        if (rc != 0) {
            log_warn("%s: its node-local outputs were lost with %s, but it cannot run again (%s)",
                     j->spec->tasks[p].id, node, err_text(rc));
            jt->done_node = -1;
            continue;
        }
        for (size_t i = 0; i < nd; i++)
            if (dag_state(j->core.dag, dep[i]) == DAG_WAITING)
                (void)readyq_remove(j->core.rq, dep[i]); /* ERR_NOTFOUND: it was not queued */
        const struct spec_task *sp = &j->spec->tasks[p];
        rc = readyq_push(j->core.rq, p, jmd_sched_prio(j, p), sp->input_bytes);
        if (rc == 0)
            j->tasks[p].ready_mono = now;
        else
            log_error("%s cannot enter the ready queue: %s", sp->id, err_text(rc));
        j->spec_stats.reruns++;
        log_info("re-running %s: its node-local outputs were on %s, which is down, and %zu "
                 "task(s) waiting for it need them (%s among them)",
                 sp->id, node, need, child);
        jt->done_node = -1;
        jmd_sched_request(j);
    }
}

void jmd_spec_tick(jmd_t *j, int64_t now)
{
    if (!j->sp || j->outcome != JMD_RUNNING)
        return;
    jmd_spec__lost_extras(j, now);
    if (j->outcome != JMD_RUNNING)
        return;
    jmd_spec__lost_outputs(j, now);
    if (j->outcome != JMD_RUNNING)
        return;
    jmd_spec__stragglers(j, now);
}

/* Deferred correction (Apollo §3.4; jm/correct.h): re-evaluates regular tasks queued at their
 * node with the freshest view and moves or duplicates those another node would finish much
 * sooner. At most JMD_SPEC__CORRECT queued tasks per tick, round robin over the job. */
void jmd_spec_correct(jmd_t *j, int64_t now)
{
    struct jmd_spec *s = j->sp;
    if (!s)
        return;
    size_t looked = 0, k = 0;
    const size_t *fl = NULL;
    size_t nfl = jmd_spec__flight(j, &fl);
    for (; k < nfl && looked < JMD_SPEC__CORRECT; k++) {
        size_t i = fl[(s->cnext + k) % nfl];
        struct jmd_task *t = &j->tasks[i];
        struct jmd_spec_task *jt = &s->t[i];
        if (!t->inflight || t->running || t->node < 0 || t->cls != DISPATCH_REGULAR ||
            !t->queued_wall || JMD_SPEC__N(jt) > 0)
            continue;
        looked++;
        const struct spec_task *sp = &j->spec->tasks[i];
        struct jmd_spec__other o = {j, i};
        struct judge_where wh = {j->core.est, j->view,         place_task(j->core.place, i),
                                 now,         jmd_spec__taken, &o};
        struct judge_queued q = {
            .node = (uint32_t)t->node,
            .waited_s = (double)(now - t->disp_mono) / 1000.0,
            .placed_wait_s = t->est.w_s,
            .pn_wait_s = t->pn_wait_s,
            .since_report_s = (double)(now - t->pn_wait_mono) / 1000.0,
            .stage_wait_sum_s = s->wait_sum[sp->stage],
            .stage_wait_n = (uint32_t)s->wait_n[sp->stage],
            .moves = t->moves,
            .dups = jt->dups,
            .speculate = sp->speculate,
            .no_room = attempt_copy_class(j->core.disp, i, 1, s->opp_units) == DISPATCH_NONE,
        };
        struct correct_dup_input in;
        struct estimate e;
        unsigned conds = 0;
        double left = 0;
        long to;
        enum correct_action act =
            judge_queued(&s->ccfg, s->mode, &wh, &q, &to, &e, &in, &conds, &left);
        if (to < 0)
            continue; /* no condition held, or no other node */
        log_debug("%s queued %.1f s on %s: ~%.1f s to go there, %.1f s on %s (conditions %s%s%s): "
                  "%s",
                  sp->id, in.q.waited_s, jmd_spec__name(j, t->node), left, e.e_s,
                  jmd_spec__name(j, (int)to), conds & CORRECT_COND_WAIT_GREW ? "i" : "",
                  conds & CORRECT_COND_ABOVE_STAGE ? "ii" : "",
                  conds & CORRECT_COND_WAITED_LONG ? "iii" : "",
                  act == CORRECT_ACT_MOVE        ? "move"
                  : act == CORRECT_ACT_DUPLICATE ? "duplicate"
                                                 : "stay");
        char why[512];
        if (act == CORRECT_ACT_MOVE) {
            snprintf(why, sizeof why,
                     "moved: queued %.1f s on %s with ~%.1f s to go, ~%.1f s on %s", in.q.waited_s,
                     jmd_spec__name(j, t->node), left, e.e_s, jmd_spec__name(j, (int)to));
            j->attempts_moved++;
            struct attempt_event ev = {.kind = ATTEMPT_EV_MOVED, .task = i};
            jmd_sched_event(j, &ev, NULL, why); /* its next placement avoids the node */
            if (j->outcome != JMD_RUNNING)
                return;
        } else if (act == CORRECT_ACT_DUPLICATE) {
            enum dispatch_class cls = attempt_copy_class(j->core.disp, i, 1, s->opp_units);
            if (cls == DISPATCH_NONE)
                continue;
            if (jmd_spec__start(j, i, (uint32_t)to, cls, 1, &e, now) != 0)
                continue;
            jt->dups++;
            j->spec_stats.dups_started++;
            log_info("duplicate of %s: attempt %u on %s (%s) beside attempt %u queued %.1f s on "
                     "%s with ~%.1f s to go (placed on a wait of %.1f s; stage average wait "
                     "%.1f s), ~%.1f s there",
                     sp->id, jt->x->a[JMD_SPEC__N(jt) - 1].attempt, jmd_spec__name(j, (int)to),
                     cls == DISPATCH_REGULAR ? "regular" : "opportunistic", t->attempt,
                     in.q.waited_s, jmd_spec__name(j, t->node), left, in.q.placed_wait_s,
                     in.stage_avg_wait_s, e.e_s);
            jmd_spec__send(j, i, (uint32_t)to, now);
            if (j->outcome != JMD_RUNNING)
                return;
        }
    }
    s->cnext = nfl ? (s->cnext + k) % nfl : 0;
}

int jmd_spec_upgrade(jmd_t *j, size_t task)
{
    struct jmd_spec *s = j->sp;
    struct jmd_task *t = &j->tasks[task];
    if (!s || !t->inflight || t->running || t->node < 0 || JMD_SPEC__N(&s->t[task]) > 0)
        return 0; /* called for an upgrade: the task is regular already (jm/attempt.h) */
    int64_t now = jmd_now(j);
    struct jmd_spec__other o = {j, task};
    struct judge_where wh = {j->core.est, j->view,         place_task(j->core.place, task),
                             now,         jmd_spec__taken, &o};
    struct estimate alt;
    long to;
    double here_s;
    if (!judge_upgrade(&s->ccfg, &wh, (uint32_t)t->node,
                       j->core.task_bl ? j->core.task_bl[task] : 0, &to, &alt, &here_s))
        return 0; /* upgraded in place (jm/judge.h) */
    /* Re-placed as regular on the other node: a new regular attempt there takes the task's
       place at once and the opportunistic one is cancelled. */
    uint32_t old = t->attempt;
    const char *from = jmd_spec__name(j, t->node);
    if (jmd_spec__start(j, task, (uint32_t)to, DISPATCH_REGULAR, 1, &alt, now) != 0)
        return 0;
    jmd_spec__send(j, task, (uint32_t)to, now);
    struct jmd_spec_task *jt = &s->t[task];
    if (JMD_SPEC__N(jt) == 0)
        return 0; /* it could not be sent at all: upgraded in place */
    jmd_spec__swap(j, task, JMD_SPEC__N(jt) - 1);
    j->spec_stats.rematched++;
    char why[512];
    snprintf(why, sizeof why,
             "re-placed: upgraded to regular on %s (~%.1f s) instead of waiting ~%.1f s on %s",
             jmd_spec__name(j, t->node), alt.e_s, here_s, from);
    log_info("%s: a freed token re-places it as regular attempt %u on %s (~%.1f s) instead of "
             "upgrading attempt %u in place on %s (~%.1f s)",
             j->spec->tasks[task].id, t->attempt, jmd_spec__name(j, t->node), alt.e_s, old, from,
             here_s);
    jmd_spec__cancel_rest(j, task, why);
    return 1;
}
