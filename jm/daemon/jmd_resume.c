/* jmd_resume.c - a resumed JM (docs/jm-daemon.md, "Resume"): the journal replayed, every node
 * asked what it holds of the job, the attempts found there adopted. */
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/daemon/jmd.h"

#define JMD_RESUME__QUERY_MS 3000 /* the longest wait for the nodes' answers */

/* The resume's query (docs/jm-daemon.md, "Resume"): TASK_QUERY to every node of the whole view
 * that is up, then statuses are adopted until each answered or JMD_RESUME__QUERY_MS passed. A
 * node down has lost its tasks: they are placed again as when a node is lost. 1 when placing
 * may go on. */
int jmd_resume_query(jmd_t *j, int64_t now)
{
    if (j->query_phase == JMD_QUERY_VIEW) {
        size_t asked = 0;
        for (uint32_t n = 0; n < view_count(j->view); n++) {
            const struct view_node *vn = view_node(j->view, n);
            int rm_down = n < j->nrm_state && j->rm_state[n] == PROTO_NODE_DOWN;
            if (!vn || rm_down || (!vn->up && n >= j->nrm_state) || !vn->endpoint[0] ||
                (j->query_linked && (n >= j->nlinks || !j->links[n].sock)))
                continue;
            if (jmd_pn_query(j, n) != 0 || n >= j->nlinks)
                continue;
            j->links[n].queried = 1;
            asked++;
        }
        j->query_pending = asked;
        j->query_mono = now;
        j->query_phase = JMD_QUERY_WAIT;
        log_info("resume: asked %zu of %zu nodes what they hold of the job", asked,
                 view_count(j->view));
    }
    if (j->query_pending > 0 && now - j->query_mono < JMD_RESUME__QUERY_MS)
        return 0;
    if (j->query_pending > 0)
        log_warn("resume: %zu nodes did not answer within %d ms: going on without them",
                 j->query_pending, JMD_RESUME__QUERY_MS);
    log_info("resume: %zu attempts adopted, %zu tasks succeeded, %zu in flight", j->adopted,
             dag_count(j->core.dag, DAG_SUCCEEDED),
             dispatch_regular(j->core.disp) + dispatch_opportunistic(j->core.disp));
    j->query_phase = JMD_QUERY_NONE;
    j->query_linked = 0;
    return 1;
}

void jmd_sched_query_done(jmd_t *j, size_t link)
{
    if (link >= j->nlinks || j->links[link].queried != 1)
        return;
    j->links[link].queried = 2;
    if (j->query_pending > 0 && --j->query_pending == 0)
        jmd_sched_request(j);
}

int jmd_sched_replay(jmd_t *j, const struct journal *jr, char *msg, size_t cap)
{
    size_t n = j->spec->ntasks;
    unsigned char *ok = mem_calloc(n ? n : 1, 1);
    if (!ok)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory replaying the journal");
    for (size_t i = 0; i < jr->nrecs; i++) {
        const struct journal_rec *jrec = &jr->recs[i];
        long ti = spec_task_index(j->spec, jrec->task);
        if (ti < 0) {
            mem_free(ok);
            return err_fmt(msg, cap, ERR_PARSE,
                           "journal record %zu names task \"%s\", which the spec does not have",
                           i + 1, jrec->task);
        }
        int moved = strncmp(jrec->reason, "moved", 5) == 0;
        attempt_replayed(j->core.att, (size_t)ti, jrec->attempt, jrec->state, moved);
        if (jrec->state == PROTO_TASK_SUCCEEDED)
            ok[ti] = 1;
        else if (jrec->state == PROTO_TASK_FAILED)
            j->attempts_failed++;
        else
            j->attempts_moved += (size_t)moved;
        struct jmd_rec r;
        memset(&r, 0, sizeof r);
        r.task = (size_t)ti;
        r.attempt = jrec->attempt;
        snprintf(r.node, sizeof r.node, "%.127s", jrec->node);
        r.cls = jrec->opportunistic ? DISPATCH_OPPORTUNISTIC : DISPATCH_REGULAR;
        r.queued_s = jrec->queued_s;
        r.start_s = jrec->start_s;
        r.end_s = jrec->end_s;
        r.state = jrec->state;
        /* the journal has no start flag: an attempt that ran has a start before its end, or
           exited on its own */
        r.started = jrec->start_s < jrec->end_s || jrec->state == PROTO_TASK_SUCCEEDED;
        r.exit_code = jrec->exit_code;
        r.signal = jrec->signal;
        r.cpu_s = jrec->cpu_s;
        r.rss_kb = jrec->rss_kb;
        snprintf(r.reason, sizeof r.reason, "%s", jrec->reason);
        jmd_out_record(j, &r);
        if (jrec->state == PROTO_TASK_SUCCEEDED) {
            const struct spec_task *sp = &j->spec->tasks[ti];
            double exec_s = jrec->end_s > jrec->start_s ? jrec->end_s - jrec->start_s : 0;
            estimator_observe(j->core.est, sp->stage, sp->input_bytes, exec_s, 0);
            j->run_actual_s += exec_s;
        }
    }
    /* The DAG in topological order: each task that succeeded is ready by the time it comes (its
       parents succeeded before it, and the writer journals them first). */
    size_t nt, done = 0, orphans = 0;
    const size_t *topo = dag_topo(j->core.dag, &nt);
    for (size_t k = 0; k < nt; k++) {
        size_t ti = topo[k];
        if (!ok[ti])
            continue;
        if (dag_state(j->core.dag, ti) != DAG_READY || dag_start(j->core.dag, ti) != 0 ||
            dag_succeed(j->core.dag, ti, NULL) != 0) {
            orphans++;
            continue;
        }
        done++;
    }
    mem_free(ok);
    readyq_clear(j->core.rq); /* what replay started is no longer ready */
    jmd_sched_ready_sync(j, jmd_now(j));
    if (orphans > 0)
        log_warn("journal: %zu tasks succeeded before a parent of theirs did (run again)", orphans);
    for (size_t i = 0; i < n && !j->resume_end[0]; i++)
        if ((int)j->tasks[i].failures >= j->o.max_attempts &&
            dag_state(j->core.dag, i) != DAG_SUCCEEDED)
            snprintf(j->resume_end, sizeof j->resume_end, "task \"%s\" failed %u times",
                     j->spec->tasks[i].id, j->tasks[i].failures);
    log_info("journal replayed: version %d, %zu attempts, %zu of %zu tasks succeeded%s",
             jr->version, jr->nrecs, done, n, jr->torn ? " (a torn last line cut)" : "");
    return 0;
}

/* Takes over an attempt a node holds for a task not in flight here (resume): it is tracked as
 * in flight on that node, and a terminal status is then processed as any other. */
void jmd_resume_adopt(jmd_t *j, size_t ti, const proto_task_status_t *st, long n)
{
    struct jmd_task *t = &j->tasks[ti];
    int cls =
        st->task_class == PROTO_CLASS_OPPORTUNISTIC ? DISPATCH_OPPORTUNISTIC : DISPATCH_REGULAR;
    int64_t now = jmd_now(j);
    int rc = attempt_adopt(j->core.att, ti, st->attempt, (int)n, cls, now);
    if (rc) {
        log_warn("cannot adopt %s attempt %u: %s", j->spec->tasks[ti].id, st->attempt,
                 err_text(rc));
        return;
    }
    (void)readyq_remove(j->core.rq, ti); /* ERR_NOTFOUND: it was not queued */
    t->pn_wait_s = -1;
    t->disp_mono = now;
    t->run_mono = 0;
    t->disp_wall = st->queued_at_ms ? st->queued_at_ms : clock_wall_ms();
    t->queued_wall = st->queued_at_ms;
    t->start_wall = 0;
    t->queue_s = 0;
    memset(&t->est, 0, sizeof t->est);
    if ((size_t)n < j->nlinks && j->links[n].inflight++ == 0)
        j->links[n].heard_mono = now;
    j->adopted++;
    log_info("adopted %s attempt %u on %s (%s)", j->spec->tasks[ti].id, st->attempt,
             st->node ? st->node : "?", proto_task_state_name((proto_task_state_t)st->state));
}
