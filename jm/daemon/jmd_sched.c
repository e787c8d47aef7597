/* jmd_sched.c - scheduling rounds, the ready queue, tokens, statuses, lost nodes, the end: the
 * daemon's drive of jm/place.h,
 * jm/dispatch.h and jm/dag.h (Apollo §2.2, §3.3-3.5), retries, silent nodes, cancel, the end. */
#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/id.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/rng.h"
#include "jm/grant.h"
#include "jm/daemon/jmd.h"
#include "jm/priority.h"
#include "jm/round.h"
#include "jm/view_proto.h"
#include "rm/arbiter.h"

#define JMD_SCHED__ROUNDS 16   /* place_round calls per scheduling pass at most */
#define JMD_SCHED__BATCH  512  /* tasks offered to one place_round at most */
#define JMD_SCHED__LIGHT  64   /* lightly-loaded list length */
#define JMD_VIEW_GRACE_MS 3000 /* placing waits this long for a whole view at most */

/* The ready queue (jm/readyq.h) holds the DAG's READY tasks, except a round's batch while it is
 * being placed: a task enters it when it becomes ready (jmd_sched__ready_add) and leaves it when
 * it is dispatched or adopted. Keyed by its stage's priority and its input (jm/priority.h). */
void jmd_sched_ready_add(jmd_t *j, size_t task, int64_t now)
{
    int rc =
        round_ready_add(j->core.rq, j->core.att, j->spec, j->core.task_bl, task); /* jm/round.h */
    if (rc == 1)
        j->tasks[task].ready_mono = now;
    else if (rc < 0)
        log_error("%s cannot enter the ready queue: %s", j->spec->tasks[task].id, err_text(rc));
}

/* Adds every READY task the queue lacks: O(ready) (after the journal's replay, and when a stage
 * barrier released tasks the dependents' walk did not find). */
void jmd_sched_ready_sync(jmd_t *j, int64_t now)
{
    size_t n;
    const size_t *ready = dag_ready(j->core.dag, &n);
    for (size_t i = 0; i < n; i++)
        if (!readyq_contains(j->core.rq, ready[i]))
            jmd_sched_ready_add(j, ready[i], now);
}

/* The queue holds exactly the READY tasks not backing off between rounds. A count that differs
 * (O(1) to see) means the DAG changed out of band (a task made to run again sends its dependents
 * back to waiting): the queue is rebuilt from the ready list, keeping the ready times. */
static void jmd_sched__ready_check(jmd_t *j, int64_t now)
{
    if (readyq_count(j->core.rq) + attempt_held(j->core.att) == dag_count(j->core.dag, DAG_READY))
        return;
    log_debug("ready queue: %zu tasks, the DAG has %zu ready: rebuilt", readyq_count(j->core.rq),
              dag_count(j->core.dag, DAG_READY));
    size_t n;
    const size_t *ready = dag_ready(j->core.dag, &n);
    readyq_clear(j->core.rq);
    for (size_t i = 0; i < n; i++) {
        int rc = round_ready_add(j->core.rq, j->core.att, j->spec, j->core.task_bl, ready[i]);
        if (rc < 0)
            log_error("%s cannot enter the ready queue: %s", j->spec->tasks[ready[i]].id,
                      err_text(rc));
        if (rc == 1 && j->tasks[ready[i]].ready_mono == 0)
            j->tasks[ready[i]].ready_mono = now;
    }
}

int jmd_sched_init(jmd_t *j, char *msg, size_t cap)
{
    size_t n = j->spec->ntasks;
    usage_init(&j->usage, PROTO_MAX_SKYLINE);
    int rc = dag_new(j->spec, &j->core.dag);
    if (!rc)
        rc = estimator_new(NULL, j->spec->nstages, &j->core.est);
    struct dispatch_config dc;
    dispatch_config_default(&dc);
    dc.opp_factor = j->o.opp_factor;
    if (!rc)
        rc = dispatch_new(&dc, n, &j->core.disp);
    struct place_config pc;
    place_config_daemon(&pc);
    if (!rc)
        rc = place_new(j->spec, &pc, &j->core.place);
    if (!rc)
        rc = readyq_new(n, &j->core.rq);
    if (!rc)
        rc = view_new(&j->view);
    if (rc)
        return err_fmt(msg, cap, rc, "cannot set up the job's state: %s", err_text(rc));
    j->tasks = mem_calloc(n, sizeof *j->tasks);
    j->core.task_bl = mem_calloc(n, sizeof *j->core.task_bl);
    j->core.stage_prio = mem_calloc(j->spec->nstages, sizeof *j->core.stage_prio);
    j->ready_buf = mem_calloc(JMD_SCHED__BATCH, sizeof *j->ready_buf);
    j->remaining_buf = mem_calloc(n, sizeof *j->remaining_buf);
    j->estimate_buf = mem_calloc(n, sizeof *j->estimate_buf);
    j->core.matches = mem_calloc(JMD_SCHED__BATCH, sizeof *j->core.matches);
    if (!j->tasks || !j->core.task_bl || !j->core.stage_prio || !j->ready_buf ||
        !j->remaining_buf || !j->estimate_buf || !j->core.matches)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory for %zu tasks", n);
    struct attempt_config ac;
    attempt_config_default(&ac);
    ac.max_attempts = j->o.max_attempts;
    ac.node_timeout_s = (double)j->o.node_timeout_ms / 1000.0;
    rc = attempt_new(&ac, n, j->core.dag, j->core.disp, j->tasks, sizeof *j->tasks, &j->core.att);
    if (rc)
        return err_fmt(msg, cap, rc, "cannot set up the job's attempts: %s", err_text(rc));
    if (priority_compute(j->core.dag, NULL, j->core.task_bl, j->core.stage_prio) != 0)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory computing priorities");
    int64_t now = jmd_now(j);
    for (size_t i = 0; i < n; i++)
        j->tasks[i].ready_mono = now;
    j->token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    j->token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    if (grant_set_costs(j->core.disp, j->spec, j->token_cpu, j->token_mem_mb) != 0)
        return err_fmt(msg, cap, ERR_STATE, "cannot set the tasks' token costs");
    if (id_random_u64(&j->rng) != 0 || j->rng == 0)
        j->rng = (uint64_t)clock_mono_ns() | 1;
    rng_seed(&j->place_rng, j->rng);
    jmd_sched_ready_sync(j, now);
    return jmd_spec_init(j, msg, cap);
}

void jmd_sched_close(jmd_t *j)
{
    jmd_spec_close(j);
    round_job_close(&j->core);
    view_destroy(&j->view);
    mem_free(j->tasks);
    mem_free(j->ready_buf);
    mem_free(j->remaining_buf);
    mem_free(j->estimate_buf);
    j->tasks = NULL;
    j->ready_buf = NULL;
    j->remaining_buf = j->estimate_buf = NULL;
}

double jmd_sched_prio(const jmd_t *j, size_t task)
{
    /* The task's own bottom level (Graham's and the greedy list schedule's order), not only its
       stage's: within a stage of tasks from 0.01 s to 7 s, Apollo's input-size order started
       the 7 s task, on the critical path, three seconds late. Ties keep the stage's order
       (input size, then spec order). */
    const struct spec_task *sp = &j->spec->tasks[task];
    return j->core.task_bl ? j->core.task_bl[task] : j->core.stage_prio[sp->stage];
}

static void jmd_sched__wake(uv_idle_t *h)
{
    (void)h; /* its being active is the point: the check handle runs the round */
}

void jmd_sched_request(jmd_t *j)
{
    j->sched_pending = 1;
    if (j->loop_ok && !uv_is_active((uv_handle_t *)&j->wake))
        uv_idle_start(&j->wake, jmd_sched__wake);
}

void jmd_sched_view_changed(jmd_t *j)
{
    if (view_count(j->view) != j->view_nodes_resolved) {
        if (place_resolve(j->core.place, j->view) == 0)
            j->view_nodes_resolved = view_count(j->view);
    }
    view_refresh_light(j->view, JMD_SCHED__LIGHT);
    j->view_dirty = 0;
    jmd_sched_request(j);
}

/* Freed units upgrade waiting opportunistic tasks, highest bottom level first (jm/attempt.h);
 * one that a better node would finish sooner is re-placed there instead (jmd_spec.c). */
void jmd_sched_upgrades(jmd_t *j)
{
    struct attempt_action act[64];
    size_t k;
    while ((k = attempt_upgrades(j->core.att, j->core.task_bl, jmd_now(j), act, 64)) > 0) {
        for (size_t i = 0; i < k; i++) {
            size_t task = act[i].task;
            if (jmd_spec_upgrade(j, task))
                continue; /* re-placed as regular on a better node (jmd_spec.c) */
            if (act[i].node >= 0)
                jmd_pn_upgrade(j, task, (uint32_t)act[i].node);
            log_debug("upgraded %s to regular", j->spec->tasks[task].id);
        }
        if (k < 64)
            break;
    }
}

/* The grant fell below the regular units in flight (the arbiter reclaimed spare): regular
 * tasks turn opportunistic in place, in jm/attempt.h's order and with its grace (a task nearly
 * done keeps a grace of its time left; no other gets one: the tokens were reclaimed because an
 * earlier deadline needs them now, docs/arbiter.md). */
static void jmd_sched__downgrades(jmd_t *j)
{
    int64_t now = jmd_now(j);
    /* only tasks in flight can be downgraded: their time left, not every task's */
    const uint32_t *fl;
    size_t nf = attempt_inflight(j->core.att, &fl);
    for (size_t f = 0; f < nf; f++) {
        size_t i = fl[f];
        const struct jmd_task *t = &j->tasks[i];
        j->remaining_buf[i] =
            grant_left(t->est.r_s, j->spec->tasks[i].runtime_s, t->inflight && t->running,
                       (double)(now - t->run_mono) / 1000.0, &j->estimate_buf[i]);
    }
    struct attempt_action act[64];
    size_t k;
    while ((k = attempt_downgrades(j->core.att, j->core.task_bl, j->remaining_buf, j->estimate_buf,
                                   now, act, 64)) > 0) {
        for (size_t i = 0; i < k; i++) {
            size_t task = act[i].task;
            const struct jmd_task *t = &j->tasks[task];
            j->downgrades++;
            if (act[i].node >= 0)
                jmd_pn_downgrade(j, task, (uint32_t)act[i].node, act[i].grace_ms);
            log_info("downgraded %s to opportunistic (%s, ~%.1f s left, grace %llu ms): grant %u "
                     "below the regular units in flight",
                     j->spec->tasks[task].id, t->running ? "running" : "queued",
                     j->remaining_buf[task], (unsigned long long)act[i].grace_ms, j->granted);
        }
        if (k < 64)
            break;
    }
}

void jmd_sched_token_size(jmd_t *j, double token_cpu, uint64_t token_mem_mb, uint32_t minimum)
{
    j->minimum = minimum;
    if (!(token_cpu > 0))
        token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    if (token_mem_mb == 0)
        token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    if (token_cpu == j->token_cpu && token_mem_mb == j->token_mem_mb)
        return;
    log_info("token size %.3g cores / %llu MiB (was %.3g / %llu)", token_cpu,
             (unsigned long long)token_mem_mb, j->token_cpu, (unsigned long long)j->token_mem_mb);
    j->token_cpu = token_cpu;
    j->token_mem_mb = token_mem_mb;
    if (grant_set_costs(j->core.disp, j->spec, token_cpu, token_mem_mb) != 0)
        log_error("cannot set the tasks' token costs at the new token size");
    jmd_jockey_resize(j);
}

void jmd_sched_tokens(jmd_t *j, uint32_t granted)
{
    j->granted = granted;
    dispatch_set_tokens(j->core.disp, jmd_spec_tokens(j, granted));
    jmd_jockey_allowance(j);
    int due = grant_take(j->core.disp); /* jm/grant.h */
    if (due & GRANT_DOWNGRADE)
        jmd_sched__downgrades(j);
    if (due & GRANT_UPGRADE)
        jmd_sched_upgrades(j);
    jmd_out_tokens(j);
    jmd_sched_request(j);
}

/* The batch's tasks that are still READY (not dispatched) and not backing off go back into the
 * ready queue, with their keys and their ready time unchanged (jm/round.h). */
static void jmd_sched__ready_back(jmd_t *j, size_t n)
{
    int rc = round_ready_back(j->core.rq, j->core.dag, j->core.att, j->spec, j->core.task_bl,
                              j->ready_buf, n);
    if (rc)
        log_error("a task cannot go back into the ready queue: %s", err_text(rc));
}

#define JMD_SCHED__YIELD_MS ((int64_t)(PLACE_YIELD_MIN_WAIT_S * 1000.0 + 0.5))

/* The units waiting regular tasks could yield to a match on a node with room (place_yield). */
static uint64_t jmd_sched__yieldable(jmd_t *j, int64_t now)
{
    if (!place_get_config(j->core.place)->yield)
        return 0;
    return attempt_yieldable(j->core.att, JMD_SCHED__YIELD_MS, now);
}

/* Waiting regular tasks yield their units to `task`, whose node can start it now (place_yield,
 * attempt_yield): each turns opportunistic in place at its node (TASK_UPGRADE, no grace), where
 * it starts when a core frees; a freed unit upgrades it again. Returns how many yielded. */
static size_t jmd_sched__yield(jmd_t *j, size_t task, int64_t now)
{
    struct attempt_action act[64];
    size_t k = attempt_yield(j->core.att, task, j->core.task_bl, JMD_SCHED__YIELD_MS, now, act, 64);
    for (size_t i = 0; i < k; i++) {
        if (act[i].node >= 0)
            jmd_pn_downgrade(j, act[i].task, (uint32_t)act[i].node, 0);
        log_debug("%s yields its token to %s (queued at %s)", j->spec->tasks[act[i].task].id,
                  j->spec->tasks[task].id,
                  act[i].node >= 0 ? view_node(j->view, (uint32_t)act[i].node)->name : "?");
    }
    return k;
}

void jmd_sched_round(jmd_t *j)
{
    j->sched_pending = 0;
    if (j->outcome != JMD_RUNNING || view_count(j->view) == 0 || j->resync || j->fenced)
        return;
    int64_t now = jmd_now(j);
    /* A delta names only the nodes that changed last: placing on it would pile the first tasks
       onto the few nodes it names. Wait for a whole snapshot (the RM sends one to a new
       subscriber at once, and to everyone every 2 s) or, failing that, JMD_VIEW_GRACE_MS. */
    if (!j->view_whole) {
        if (now - j->t0_mono < JMD_VIEW_GRACE_MS)
            return;
        j->view_whole = 1;
        log_warn("no whole cluster view after %d ms: placing on %zu nodes known", JMD_VIEW_GRACE_MS,
                 view_count(j->view));
    }
    if (j->query_phase != JMD_QUERY_NONE && !jmd_resume_query(j, now))
        return; /* resumed: nothing is placed before the nodes said what they hold */
    /* The fsync policy: the outcomes journaled so far are on disk before any create they led to
       goes out (a resumed JM then never finds a child running whose parent it has no record
       of, nor an unjournaled attempt below a journaled one). */
    jmd_out_flush(j);
    jmd_sched__ready_check(j, now);
    for (int round = 0; round < JMD_SCHED__ROUNDS; round++) {
        dispatch_round(j->core.disp);
        uint64_t yieldable = jmd_sched__yieldable(j, now);
        if (!round_can_place(j->core.disp, yieldable))
            return;
        /* The batch: the first ready tasks in priority order, as many as the token units free
           now and a few more (jm/round.h). */
        size_t batch = round_batch(j->core.disp, yieldable, JMD_SCHED__BATCH);
        size_t got = readyq_pop(j->core.rq, j->ready_buf, batch), n = 0;
        if (got == 0)
            return;
        for (size_t i = 0; i < got; i++) /* none should be otherwise: a guard, not a path */
            if (dag_state(j->core.dag, j->ready_buf[i]) == DAG_READY)
                j->ready_buf[n++] = j->ready_buf[i];
        if (n == 0)
            continue;
        size_t nm = 0; /* its regular tasks queued at each node, for place_overtakes */
        int rc = place_queued_update(j->core.place, j->core.att, j->core.task_bl);
        if (rc == 0)
            rc = place_round(j->core.place, j->view, j->core.est, j->ready_buf, n, now, rng_draw,
                             &j->place_rng, j->core.matches, &nm);
        if (rc) {
            jmd_sched__ready_back(j, n);
            log_error("placement failed: %s", err_text(rc));
            return;
        }
        size_t placed = 0, held = 0;
        for (size_t i = 0; i < nm; i++) {
            struct place_match *pm = &j->core.matches[i];
            /* held unless it would start ahead of its own job's queued work (place.h) */
            if (!place_overtakes(j->core.place, pm, j->core.task_bl) &&
                place_hold(place_get_config(j->core.place), pm,
                           (double)(now - j->tasks[pm->task].ready_mono) / 1000.0)) {
                held++; /* stays ready: a node with room, or the hold's end, places it */
                log_debug("%s held: best %s waits ~%.2f s", j->spec->tasks[pm->task].id,
                          view_node(j->view, pm->node)->name, pm->est.w_s);
                continue;
            }
            int cls = dispatch_place(j->core.disp, pm->task);
            if (cls == DISPATCH_NONE && place_yield(place_get_config(j->core.place), pm) &&
                jmd_sched__yield(j, pm->task, now) > 0)
                cls = dispatch_place(j->core.disp, pm->task); /* the units its node can start now */
            if (cls == DISPATCH_NONE) { /* this one does not fit; a smaller one may */
                if (dispatch_next(j->core.disp) == DISPATCH_NONE &&
                    jmd_sched__yieldable(j, now) == 0) {
                    jmd_sched__ready_back(j, n);
                    return;
                }
                continue;
            }
            if (cls < 0)
                continue;
            struct jmd_task *t = &j->tasks[pm->task];
            t->est = pm->est;
            struct attempt_event ev = {
                .kind = ATTEMPT_EV_PLACED, .task = pm->task, .node = (int)pm->node, .cls = cls};
            jmd_sched_event(j, &ev, NULL, NULL);
            if (j->outcome != JMD_RUNNING)
                return;
            if (!t->inflight || t->node != (int)pm->node)
                continue; /* refused by the DAG (logged), or it could not be sent at all */
            log_debug("%s attempt %u -> %s (%s, C=%.3f s: I %.3f W %.3f R %.3f)",
                      j->spec->tasks[pm->task].id, t->attempt, view_node(j->view, pm->node)->name,
                      cls == DISPATCH_REGULAR ? "regular" : "opportunistic", pm->est.c_s,
                      pm->est.i_s, pm->est.w_s, pm->est.r_s);
            placed++;
        }
        jmd_sched__ready_back(j, n);
        if (held > 0)
            j->holding = 1; /* the next tick looks again, even if no status comes */
        if (placed == 0)
            return;
    }
    jmd_sched_request(j); /* more may fit: go on in the next loop turn */
}

void jmd_sched_status(jmd_t *j, const proto_task_status_t *st, long link)
{
    int64_t now = jmd_now(j);
    if (st->node) {
        long n = view_find(j->view, st->node);
        if (n >= 0) {
            view_update_matrix_from_proto(j->view, st->node, &st->matrix, now);
            if ((size_t)n < j->nlinks)
                j->links[n].heard_mono = now;
        }
    }
    long ti = st->task_id ? spec_task_index(j->spec, st->task_id) : -1;
    if (ti < 0)
        return;
    struct jmd_task *t = &j->tasks[ti];
    int live = st->state == PROTO_TASK_QUEUED || st->state == PROTO_TASK_STAGING ||
               st->state == PROTO_TASK_RUNNING;
    attempt_note_seen(j->core.att, (size_t)ti, st->attempt);
    if (jmd_spec_status(j, (size_t)ti, st))
        return; /* an extra attempt's (jmd_spec.c) */
    if (!attempt_tracks(j->core.att, (size_t)ti, st->attempt)) {
        /* Not the attempt we track. A resumed JM adopts what an earlier incarnation left at the
           nodes: an attempt above any journaled one, of a task ready here. Any other live one
           is a stray (journaled as ended, or beside the attempt we track): cancelled. Outside a
           resume this is an earlier attempt, or a repeat after the outcome: ignored. */
        long n = link >= 0 ? link : (st->node ? view_find(j->view, st->node) : -1);
        if (j->o.resume && n >= 0 && !t->inflight && st->attempt > t->attempt &&
            dag_state(j->core.dag, (size_t)ti) == DAG_READY && j->outcome == JMD_RUNNING) {
            jmd_resume_adopt(j, (size_t)ti, st, n);
        } else {
            if (j->o.resume && live && n >= 0 && j->outcome == JMD_RUNNING)
                jmd_pn_cancel_attempt(j, (size_t)ti, st->attempt, (uint32_t)n,
                                      "a stray attempt: another is tracked, or it has ended");
            return;
        }
    }
    if (st->state != PROTO_TASK_QUEUED && st->state != PROTO_TASK_STAGING &&
        st->state != PROTO_TASK_RUNNING)
        log_debug("%s attempt %u %s at %s", j->spec->tasks[ti].id, st->attempt,
                  proto_task_state_name(st->state), st->node ? st->node : "?");
    if (st->queued_at_ms && !t->queued_wall)
        t->queued_wall = st->queued_at_ms;
    if (st->state == PROTO_TASK_QUEUED || st->state == PROTO_TASK_STAGING) {
        t->pn_wait_s = (double)st->expected_wait_ms / 1000.0;
        t->pn_wait_mono = now;
    }
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_STATUS,
        .task = (size_t)ti,
        .attempt = st->attempt,
        .state = (int)st->state,
        .cls =
            st->task_class == PROTO_CLASS_OPPORTUNISTIC ? DISPATCH_OPPORTUNISTIC : DISPATCH_REGULAR,
        .fatal = st->state == PROTO_TASK_FAILED && st->reason &&
                 strncmp(st->reason, PROTO_REASON_MEMORY, strlen(PROTO_REASON_MEMORY)) == 0,
        .traded = (st->state == PROTO_TASK_QUEUED || st->state == PROTO_TASK_STAGING) &&
                  st->reason &&
                  strncmp(st->reason, PROTO_REASON_TRADED, strlen(PROTO_REASON_TRADED)) == 0,
    };
    jmd_sched_event(j, &ev, st, NULL);
}

void jmd_sched_create_refused(jmd_t *j, uint64_t req_id, int code, const char *why)
{
    size_t task;
    uint32_t attempt;
    jmd_pn_req_split(req_id, &task, &attempt);
    if (task >= j->spec->ntasks || !attempt_tracks(j->core.att, task, attempt))
        return;
    char reason[256];
    snprintf(reason, sizeof reason, "refused by the node: %s", why);
    struct attempt_event ev = {
        .kind = ATTEMPT_EV_REFUSED, .task = task, .attempt = attempt, .code = code};
    jmd_sched_event(j, &ev, NULL, reason);
}

enum attempt_node jmd_sched_node_check(const jmd_t *j, uint32_t n, int64_t placed_ms, int64_t now)
{
    const struct view_node *vn = view_node(j->view, n);
    struct attempt_node_obs o = {
        .known = vn != NULL,
        .view_up = vn && vn->up,
        .rm_known = n < j->nrm_state,
        .rm_down = n < j->nrm_state && j->rm_state[n] == PROTO_NODE_DOWN,
        .heard_ms = n < j->nlinks ? j->links[n].heard_mono : now, /* no link: never silent */
        .placed_ms = placed_ms,
    };
    return attempt_node_check(attempt_get_config(j->core.att), &o, now);
}

/* Whether an attempt in flight has its node down or silent (jmd_sched_node_check): a look at
 * the attempts in flight only (attempt_inflight). */
static int jmd_sched__any_lost(const jmd_t *j, int64_t now)
{
    const uint32_t *fl;
    size_t nf = attempt_inflight(j->core.att, &fl);
    for (size_t i = 0; i < nf; i++) {
        const struct jmd_task *t = &j->tasks[fl[i]];
        if (t->node >= 0 &&
            jmd_sched_node_check(j, (uint32_t)t->node, t->disp_mono, now) != ATTEMPT_NODE_OK)
            return 1;
    }
    return 0;
}

/* Ends the attempts whose node is down or silent, in task order. The walk over every task runs
 * only when a look at the attempts in flight finds one: a walk at each tick was O(tasks) on a
 * million-task job. Returns 0 when the job ended. */
static int jmd_sched__lost(jmd_t *j, int64_t now)
{
    if (!jmd_sched__any_lost(j, now))
        return 1;
    for (size_t i = 0; i < j->spec->ntasks; i++) {
        struct jmd_task *t = &j->tasks[i];
        if (!t->inflight || t->node < 0)
            continue;
        uint32_t n = (uint32_t)t->node;
        enum attempt_node v = jmd_sched_node_check(j, n, t->disp_mono, now);
        if (v == ATTEMPT_NODE_OK)
            continue;
        const struct view_node *vn = view_node(j->view, n);
        char why[320];
        if (v == ATTEMPT_NODE_DOWN)
            snprintf(why, sizeof why, "node %s is down", vn ? vn->name : "?");
        else
            snprintf(why, sizeof why, "node %s silent for %lld ms", vn ? vn->name : "?",
                     (long long)(now - j->links[n].heard_mono));
        struct attempt_event ev = {.kind = ATTEMPT_EV_NODE, .task = i, .state = (int)v};
        jmd_sched_event(j, &ev, NULL, why);
        if (j->outcome != JMD_RUNNING)
            return 0;
    }
    return 1;
}

void jmd_sched_tick(jmd_t *j)
{
    if (j->outcome != JMD_RUNNING)
        return;
    jmd_pn_check(j);
    int64_t now = jmd_now(j);
    if (j->query_phase != JMD_QUERY_NONE)
        jmd_sched_request(j); /* the round ends the query when it is answered or too long */
    if (!j->view_whole && now - j->t0_mono >= JMD_VIEW_GRACE_MS)
        jmd_sched_request(j);
    if (!jmd_sched__lost(j, now))
        return;
    size_t due[64], k;
    while ((k = attempt_due(j->core.att, now, due, 64)) > 0) { /* back-offs that ended */
        for (size_t i = 0; i < k; i++)
            jmd_sched_ready_add(j, due[i], now);
        jmd_sched_request(j);
        if (k < 64)
            break;
    }
    if (j->view_dirty)
        jmd_sched_view_changed(j);
    jmd_spec_correct(j, now); /* deferred correction: move or duplicate (jmd_spec.c) */
    jmd_spec_tick(j, now);
}

void jmd_sched_usage_start(jmd_t *j, size_t task, int64_t wall_ms)
{
    struct jmd_task *t = &j->tasks[task];
    if (t->used_units)
        return;
    const struct spec_task *sp = &j->spec->tasks[task];
    t->used_units = arbiter_task_tokens(sp->cpu, sp->mem_mb, j->token_cpu, j->token_mem_mb);
    usage_add(&j->usage, wall_ms, (int64_t)t->used_units);
}

void jmd_sched_usage_end(jmd_t *j, size_t task, int64_t wall_ms)
{
    struct jmd_task *t = &j->tasks[task];
    if (!t->used_units)
        return;
    usage_add(&j->usage, wall_ms, -(int64_t)t->used_units);
    t->used_units = 0;
}

void jmd_sched_cancel(jmd_t *j, const char *why)
{
    if (j->outcome != JMD_RUNNING)
        return;
    log_info("cancelling the job: %s", why);
    jmd_end(j, JMD_CANCELLED, why);
}

void jmd_end(jmd_t *j, enum jmd_outcome o, const char *reason)
{
    if (j->outcome != JMD_RUNNING || j->fenced)
        return;
    j->outcome = o;
    j->end_wall = clock_wall_ms();
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
    /* Cancel whatever is still in flight (a failed or cancelled job). */
    for (size_t i = 0; i < j->spec->ntasks; i++) {
        if (!j->tasks[i].inflight || j->tasks[i].node < 0)
            continue;
        struct attempt_event ev = {.kind = ATTEMPT_EV_JOB_END, .task = i};
        jmd_sched_event(j, &ev, NULL, o == JMD_CANCELLED ? "job cancelled" : "job failed");
    }
    if (o == JMD_SUCCEEDED)
        log_info("job succeeded: %zu tasks in %.3f s", j->spec->ntasks,
                 jmd_wall_rel_s(j, j->end_wall));
    else
        log_warn("job %s: %s", jmd_outcome_name(o), j->reason);
    /* Tokens go back before the files are written: for a large job the report and the profile
       take a moment, and the next job should not wait on them. */
    usage_finish(&j->usage, j->end_wall);
    jmd_rm_finish(j);
    jmd_out_tokens(j);
    jmd_out_progress(j);
    /* The final report before the terminal state: whoever sees state.json end (`paddock submit
       --wait`) finds the whole report, not the last periodic one. */
    jmd_out_report(j);
    jmd_out_state(j);
    jmd_out_flush(j);
    jmd_out_profile(j);
}
