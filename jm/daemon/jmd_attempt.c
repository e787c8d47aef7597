/* jmd_attempt.c - the daemon's side of jm/attempt.h: an event from the wire (a status, a
 * refusal, a lost node, a placement) goes into the attempt machine and its actions come out as
 * creates and cancels to the nodes, journal records, retries and the job's end. */
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "jm/daemon/jmd.h"

/* CREATE: the attempt just placed goes to its node. */
static void jmd_sched__create(jmd_t *j, const struct attempt_action *x, int64_t now)
{
    struct jmd_task *t = &j->tasks[x->task];
    uint32_t node = (uint32_t)x->node;
    t->pn_wait_s = -1; /* until the node says where it stands */
    t->disp_mono = now;
    t->run_mono = 0;
    t->disp_wall = clock_wall_ms();
    t->queued_wall = t->start_wall = 0;
    t->queue_s = (double)(now - t->ready_mono) / 1000.0;
    int rc = place_claim(j->core.place, x->task, node, now);
    if (rc)
        log_warn("%s: the claim on node %u was not recorded (%s)", j->spec->tasks[x->task].id, node,
                 err_text(rc));
    char err[256] = "";
    int crc = jmd_pn_create(j, x->task, node, err, sizeof err);
    if (node < j->nlinks) {
        struct jmd_node_link *l = &j->links[node];
        if (l->inflight++ == 0)
            l->heard_mono = now;
    }
    if (crc == ERR_TOOBIG || crc == ERR_RANGE) { /* no node could ever take it */
        char why[320];
        snprintf(why, sizeof why, "cannot be sent: %s", err);
        struct attempt_event ev = {.kind = ATTEMPT_EV_UNSENDABLE, .task = x->task};
        jmd_sched_event(j, &ev, NULL, why);
    } else if (crc != 0) {
        log_warn("cannot send %s to node %u yet (%s)", j->spec->tasks[x->task].id, node, err);
    }
}

/* RECORD: the ended attempt in the journal and the report; its units and link given back. */
static void jmd_sched__record(jmd_t *j, const struct attempt_action *x,
                              const proto_task_status_t *st, const char *reason, struct jmd_rec *r)
{
    size_t task = x->task;
    struct jmd_task *t = &j->tasks[task];
    int state = x->state;
    int64_t wall = clock_wall_ms();
    memset(r, 0, sizeof *r);
    r->task = task;
    r->attempt = x->attempt;
    const struct view_node *vn = x->node >= 0 ? view_node(j->view, (uint32_t)x->node) : NULL;
    snprintf(r->node, sizeof r->node, "%s", vn ? vn->name : "?");
    r->cls = st && st->task_class == PROTO_CLASS_OPPORTUNISTIC ? DISPATCH_OPPORTUNISTIC : x->cls;
    int64_t q = st && st->queued_at_ms ? st->queued_at_ms
                : t->queued_wall       ? t->queued_wall
                                       : t->disp_wall;
    int64_t s = st && st->started_at_ms ? st->started_at_ms : t->start_wall;
    int64_t e = st && st->ended_at_ms ? st->ended_at_ms : wall;
    r->queued_s = jmd_wall_rel_s(j, q);
    r->end_s = jmd_wall_rel_s(j, e);
    /* An attempt that never ran and ended otherwise than by its own exit (moved, cancelled,
       lost or preempted in the queue) waited until its end: the report draws the wait, not a
       run. */
    int never_ran = !s && state != PROTO_TASK_SUCCEEDED && state != PROTO_TASK_FAILED;
    r->start_s = s ? jmd_wall_rel_s(j, s) : never_ran ? r->end_s : r->queued_s;
    r->started = s != 0;
    if (r->end_s < r->start_s)
        r->end_s = r->start_s;
    r->wait_s = t->queue_s;
    if (t->cls_ms > t->placed_ms) {
        /* its class changed after it was sent (a yield, a downgrade, an upgrade): its wait held
           a token from the last change if it ended regular, else not at all */
        int64_t at = wall - (jmd_now(j) - t->cls_ms);
        r->init_from_s = r->cls == DISPATCH_REGULAR ? jmd_wall_rel_s(j, at) : r->start_s;
    }
    r->state = state;
    r->exit_code = st ? st->exit_code : -1;
    r->signal = st ? st->signal : 0;
    r->cpu_s = st ? (double)st->cpu_time_ms / 1000.0 : 0;
    r->rss_kb = st ? st->peak_rss_kb : 0;
    snprintf(r->reason, sizeof r->reason, "%s",
             reason ? reason : (st && st->reason ? st->reason : ""));
    jmd_out_attempt(j, r);
    /* An attempt whose RUNNING status never came (it ran and ended between two statuses) still
       counts from when its node says it started. */
    if (!t->used_units && s)
        jmd_sched_usage_start(j, task, s);
    jmd_sched_usage_end(j, task, e);
    if (x->node >= 0 && (size_t)x->node < j->nlinks && j->links[x->node].inflight > 0)
        j->links[x->node].inflight--;
    if (x->node >= 0 && (state == PROTO_TASK_SUCCEEDED || state == PROTO_TASK_FAILED))
        jmd_rm_note_outcome(j, (uint32_t)x->node, state == PROTO_TASK_SUCCEEDED);
    if (state == PROTO_TASK_FAILED)
        j->attempts_failed++;
}

/* DONE: the task succeeded on x->node; its dependents are ready. */
static void jmd_sched__done(jmd_t *j, const struct attempt_action *x, double exec_s, int64_t now)
{
    size_t task = x->task;
    const struct spec_task *sp = &j->spec->tasks[task];
    struct jmd_task *t = &j->tasks[task];
    estimator_observe_est(j->core.est, sp->stage, sp->input_bytes, exec_s, t->est.io_s,
                          sp->runtime_s);
    jmd_spec_succeeded(j, task, x->node, exec_s);
    if (x->node >= 0) {
        int rc = place_note_cached(j->core.place, sp->stage, (uint32_t)x->node);
        if (rc)
            log_warn("%s: node %d's cache not noted (%s)", sp->id, x->node, err_text(rc));
    }
    j->run_actual_s += exec_s;
    if (j->have_plan)
        j->run_expected_s += jsim_plan_task_expected(&j->plan, j->spec, task);
    /* The released tasks enter the ready queue: the dependents through explicit edges are
       looked at directly; a stage barrier that opened (more released than found) costs one
       pass over the ready list, once per stage. */
    size_t found = 0, nd;
    const size_t *dep = x->released ? dag_dependents(j->core.dag, task, &nd) : NULL;
    for (size_t i = 0; dep && i < nd; i++)
        if (dag_state(j->core.dag, dep[i]) == DAG_READY && !readyq_contains(j->core.rq, dep[i])) {
            jmd_sched_ready_add(j, dep[i], now);
            found++;
        }
    if (found < x->released)
        jmd_sched_ready_sync(j, now);
    if (dag_done(j->core.dag))
        jmd_end(j, JMD_SUCCEEDED, "");
}

void jmd_sched_event(jmd_t *j, struct attempt_event *ev, const proto_task_status_t *st,
                     const char *reason)
{
    int64_t now = jmd_now(j);
    int tracked = j->tasks[ev->task].inflight;
    int success = ev->kind == ATTEMPT_EV_STATUS && ev->state == PROTO_TASK_SUCCEEDED &&
                  attempt_tracks(j->core.att, ev->task, ev->attempt);
    if (tracked && (success || ev->kind == ATTEMPT_EV_JOB_END || j->outcome != JMD_RUNNING))
        jmd_spec_outcome(j, ev->task, success ? PROTO_TASK_SUCCEEDED : PROTO_TASK_CANCELLED,
                         reason); /* the extra attempts go first */
    ev->extra = jmd_spec_extra(j, ev->task) > 0;
    struct attempt_action act[ATTEMPT_MAX_ACTIONS];
    int n = attempt_step(j->core.att, ev, now, act, ATTEMPT_MAX_ACTIONS);
    if (n < 0) {
        log_error("%s: event %d refused by the attempt machine: %s", j->spec->tasks[ev->task].id,
                  ev->kind, err_text(n));
        return;
    }
    struct jmd_rec r;
    memset(&r, 0, sizeof r);
    snprintf(r.node, sizeof r.node, "?");
    double exec_s = 0;
    for (int i = 0; i < n; i++) {
        const struct attempt_action *x = &act[i];
        const struct spec_task *sp = &j->spec->tasks[x->task];
        struct jmd_task *t = &j->tasks[x->task];
        switch (x->kind) {
        case ATTEMPT_ACT_CREATE:
            jmd_sched__create(j, x, now);
            break;
        case ATTEMPT_ACT_CANCEL:
            if (x->node >= 0)
                jmd_pn_cancel_attempt(j, x->task, x->attempt, (uint32_t)x->node,
                                      reason ? reason : "cancelled");
            break;
        case ATTEMPT_ACT_NODE_OFF: /* until a fresher view entry says it is up */
            if (x->node >= 0 && view_set_up(j->view, (uint32_t)x->node, 0) != 0)
                log_warn("%s: node %d is not in the view: not marked down", sp->id, x->node);
            j->view_dirty = 1;
            break;
        case ATTEMPT_ACT_STARTED:
            t->run_mono = now;
            t->start_wall = st && st->started_at_ms ? st->started_at_ms : clock_wall_ms();
            jmd_sched_usage_start(j, x->task, t->start_wall);
            break;
        case ATTEMPT_ACT_RECORD:
            jmd_sched__record(j, x, st, reason, &r);
            exec_s = r.end_s - r.start_s;
            break;
        case ATTEMPT_ACT_DONE:
            jmd_sched__done(j, x, exec_s, now);
            break;
        case ATTEMPT_ACT_AVOID:
            place_note_failed(j->core.place, x->task, (uint32_t)x->node);
            break;
        case ATTEMPT_ACT_RETRY:
            if (x->at_ms <= now)
                jmd_sched_ready_add(j, x->task, now);
            log_info("%s attempt %u %s on %s (%s); %s in %.1f s", sp->id, r.attempt,
                     proto_task_state_name((proto_task_state_t)r.state), r.node, r.reason,
                     r.state == PROTO_TASK_FAILED ? "retrying" : "re-placing",
                     (double)(x->at_ms - now) / 1000.0);
            break;
        case ATTEMPT_ACT_TAKEOVER:
            if (x->state == PROTO_TASK_FAILED)
                j->attempts_failed++;
            jmd_spec_takeover(j, x->task, x->state, st, reason);
            break;
        case ATTEMPT_ACT_FAIL_JOB: {
            char why[512];
            if (x->why == ATTEMPT_WHY_FATAL)
                snprintf(why, sizeof why,
                         "task \"%s\" went over its memory request on %s (%s); not retried with "
                         "the same request: raise the task's mem_mb",
                         sp->id, r.node, r.reason);
            else if (x->why == ATTEMPT_WHY_FAILED)
                snprintf(why, sizeof why, "task \"%s\" failed %u times; last on %s: %s", sp->id,
                         t->failures, r.node, r.reason[0] ? r.reason : "failed");
            else
                snprintf(why, sizeof why,
                         "task \"%s\" was lost or preempted %u times; last on %s: %s", sp->id,
                         t->replaced, r.node, r.reason);
            jmd_end(j, JMD_FAILED, why);
            break;
        }
        case ATTEMPT_ACT_ROUND:
            if (j->outcome == JMD_RUNNING)
                jmd_sched_upgrades(j);
            jmd_sched_request(j);
            break;
        default:
            break;
        }
    }
}
