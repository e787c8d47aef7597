/* jmd_spec.c - the daemon's side of issue 15: speculative copies of stragglers, duplicates of
 * queued tasks, upgrade with re-match, and re-runs of producers whose node-local outputs were
 * lost with their node (docs/stragglers.md, "The daemon"). The rules are jm/speculate.h's and
 * jm/correct.h's; this file keeps the state they need (jmd_spec_internal.h) and follows each
 * extra attempt from its statuses to its end; jmd_spec_start.c decides, each tick, which to start.
 *
 * A task's first attempt in flight is the one struct jmd_task describes (the "primary", as
 * jmd_sched.c has always tracked it). A copy or a duplicate is an extra attempt kept here, with
 * its own wire attempt number, node and class. When an extra attempt must take over (it finished
 * first; it is a duplicate that started first; the primary failed or was lost while it lives),
 * it is swapped into struct jmd_task and the old primary becomes the extra one, which is then
 * ended here (cancelled at its node, recorded in the journal and the report). Everything else
 * then happens in jmd_sched.c as for any attempt: a winner's success is the task's success.
 *
 * Capacity: a copy spends a token unit (speculate_copy_class) or the opportunistic allowance.
 * The units a regular extra attempt holds are taken off the tokens dispatch sees
 * (jmd_spec_tokens), so regular work never over-commits the grant; an opportunistic one counts
 * against the allowance when copies are started.
 */
#include "jm/daemon/jmd_spec_internal.h"

#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/daemon/jmd.h"
#include "jm/speculate.h"
#include "rm/arbiter.h"

int jmd_spec_init(jmd_t *j, char *msg, size_t cap)
{
    size_t n = j->spec->ntasks, ns = j->spec->nstages;
    struct jmd_spec *s = mem_calloc(1, sizeof *s);
    if (!s)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory");
    j->sp = s;
    speculate_config_default(&s->scfg);
    correct_config_default(&s->ccfg);
    s->mode = CORRECT_MODE_DUPLICATE;
    s->t = mem_calloc(n, sizeof *s->t);
    s->dist = mem_calloc(ns ? ns : 1, sizeof *s->dist);
    s->wait_sum = mem_calloc(ns ? ns : 1, sizeof *s->wait_sum);
    s->wait_n = mem_calloc(ns ? ns : 1, sizeof *s->wait_n);
    s->stage_inflight = mem_calloc(ns ? ns : 1, sizeof *s->stage_inflight);
    size_t nl = 0;
    for (size_t i = 0; i < n; i++)
        nl += j->spec->tasks[i].local_outputs > 0;
    s->local = mem_calloc(nl ? nl : 1, sizeof *s->local);
    if (!s->t || !s->dist || !s->wait_sum || !s->wait_n || !s->stage_inflight || !s->local)
        return err_fmt(msg, cap, ERR_NOMEM, "out of memory for %zu tasks", n);
    for (size_t k = 0; k < ns; k++)
        speculate_dist_init(&s->dist[k]);
    for (size_t i = 0; i < n; i++) {
        s->t[i].done_node = -1;
        if (j->spec->tasks[i].local_outputs > 0)
            s->local[s->nlocal++] = i;
    }
    return 0;
}

void jmd_spec_close(jmd_t *j)
{
    struct jmd_spec *s = j->sp;
    if (!s)
        return;
    for (size_t k = 0; s->dist && k < j->spec->nstages; k++)
        speculate_dist_close(&s->dist[k]);
    for (size_t i = 0; s->t && i < j->spec->ntasks; i++)
        mem_free(s->t[i].x);
    mem_free(s->t);
    mem_free(s->dist);
    mem_free(s->wait_sum);
    mem_free(s->wait_n);
    mem_free(s->stage_inflight);
    mem_free(s->local);
    mem_free(s->flight);
    mem_free(s);
    j->sp = NULL;
}

uint32_t jmd_spec_tokens(const jmd_t *j, uint32_t granted)
{
    const struct jmd_spec *s = j->sp;
    uint64_t held = s ? s->reg_units : 0, units = grain_units(granted); /* jm/grain.h */
    return held >= units ? 0 : (uint32_t)(units - held);
}

size_t jmd_spec_extra(const jmd_t *j, size_t task)
{
    return j->sp ? JMD_SPEC__N(&j->sp->t[task]) : 0;
}

void jmd_spec__units(jmd_t *j, int cls, uint32_t cost, int add)
{
    struct jmd_spec *s = j->sp;
    uint64_t *u = cls == DISPATCH_REGULAR ? &s->reg_units : &s->opp_units;
    if (add)
        *u += cost;
    else
        *u = *u >= cost ? *u - cost : 0;
    if (cls == DISPATCH_REGULAR)
        dispatch_set_tokens(j->core.disp, jmd_spec_tokens(j, j->granted));
}

int jmd_spec__node_down(const jmd_t *j, uint32_t n)
{
    return jmd_sched_node_check(j, n, 0, 0) == ATTEMPT_NODE_DOWN;
}

const char *jmd_spec__name(const jmd_t *j, int node)
{
    const struct view_node *vn = node >= 0 ? view_node(j->view, (uint32_t)node) : NULL;
    return vn ? vn->name : "?";
}

/* Ends extra attempt k of `task` (cancelled at its node first when `cancel`), writes its record
 * and gives back what it held. */
void jmd_spec__end(jmd_t *j, size_t task, size_t k, int state, const proto_task_status_t *st,
                   const char *reason, int cancel)
{
    struct jmd_spec *s = j->sp;
    struct jmd_spec_task *jt = &s->t[task];
    struct jmd_spec_att e = jt->x->a[k];
    if (cancel && e.node >= 0)
        jmd_pn_cancel_attempt(j, task, e.attempt, (uint32_t)e.node, reason);
    int64_t wall = clock_wall_ms();
    struct jmd_rec r;
    memset(&r, 0, sizeof r);
    r.task = task;
    r.attempt = e.attempt;
    snprintf(r.node, sizeof r.node, "%s", jmd_spec__name(j, e.node));
    r.cls = e.cls;
    int64_t q = st && st->queued_at_ms ? st->queued_at_ms
                : e.queued_wall        ? e.queued_wall
                                       : e.disp_wall;
    int64_t b = st && st->started_at_ms ? st->started_at_ms : e.start_wall;
    int64_t en = st && st->ended_at_ms ? st->ended_at_ms : wall;
    r.queued_s = jmd_wall_rel_s(j, q);
    r.end_s = jmd_wall_rel_s(j, en);
    r.start_s = b ? jmd_wall_rel_s(j, b) : r.end_s;
    r.started = b != 0;
    if (r.end_s < r.start_s)
        r.end_s = r.start_s;
    r.state = state;
    r.exit_code = st ? st->exit_code : -1;
    r.signal = st ? st->signal : 0;
    r.cpu_s = st ? (double)st->cpu_time_ms / 1000.0 : 0;
    r.rss_kb = st ? st->peak_rss_kb : 0;
    snprintf(r.reason, sizeof r.reason, "%s",
             reason ? reason : (st && st->reason ? st->reason : ""));
    jmd_out_attempt(j, &r);
    if (e.used_units) {
        usage_add(&j->usage, en, -(int64_t)e.used_units);
    }
    if (e.node >= 0 && (size_t)e.node < j->nlinks && j->links[e.node].inflight > 0)
        j->links[e.node].inflight--;
    if (e.node >= 0 && state == PROTO_TASK_FAILED)
        jmd_rm_note_outcome(j, (uint32_t)e.node, 0);
    if (!e.dup) {
        if (s->inflight > 0)
            s->inflight--;
        size_t stg = j->spec->tasks[task].stage;
        if (s->stage_inflight[stg] > 0)
            s->stage_inflight[stg]--;
    }
    for (size_t i = 0; i < jt->x->st.n; i++)
        if (jt->x->st.a[i].id == e.attempt && jt->x->st.a[i].state == SPECULATE_A_LIVE) {
            if (state == PROTO_TASK_SUCCEEDED)
                break;
            jt->x->st.a[i].state =
                state == PROTO_TASK_CANCELLED ? SPECULATE_A_CANCELLED : SPECULATE_A_FAILED;
        }
    memmove(&jt->x->a[k], &jt->x->a[k + 1], (jt->x->n - k - 1) * sizeof jt->x->a[0]);
    if (--jt->x->n == 0) { /* the task's speculation state ends with its last extra attempt */
        mem_free(jt->x);
        jt->x = NULL;
    }
    jmd_spec__units(j, e.cls, e.cost, 0);
    jmd_sched_request(j);
}

/* Swaps extra attempt k with the task's primary (struct jmd_task): the extra takes over. */
void jmd_spec__swap(jmd_t *j, size_t task, size_t k)
{
    struct jmd_spec_task *jt = &j->sp->t[task];
    struct jmd_task *t = &j->tasks[task];
    struct jmd_spec_att *e = &jt->x->a[k];
    struct jmd_spec_att old = {
        .attempt = t->attempt,
        .node = t->node,
        .cls = t->cls,
        .running = t->running,
        .dup = e->dup,
        .disp_mono = t->disp_mono,
        .run_mono = t->run_mono,
        .disp_wall = t->disp_wall,
        .queued_wall = t->queued_wall,
        .start_wall = t->start_wall,
        .used_units = t->used_units,
        .cost = e->cost,
        .est = t->est,
    };
    int64_t now = jmd_now(j);
    int rc = attempt_takeover(j->core.att, task, e->attempt, e->node, e->cls, e->running, now);
    if (rc)
        log_error("%s: attempt %u cannot take over: %s", j->spec->tasks[task].id, e->attempt,
                  err_text(rc));
    if (old.cls != e->cls) { /* the units moved with the class */
        jmd_spec__units(j, e->cls, e->cost, 0);
        jmd_spec__units(j, old.cls, e->cost, 1);
    }
    t->disp_mono = e->disp_mono;
    t->run_mono = e->run_mono;
    t->disp_wall = e->disp_wall;
    t->queued_wall = e->queued_wall;
    t->start_wall = e->start_wall;
    t->used_units = e->used_units;
    t->est = e->est;
    t->pn_wait_s = -1;
    jt->cpu_ms = 0;
    jt->bytes_read = 0;
    *e = old;
}

/* The others of a task whose attempt `winner` succeeded or started first: cancelled. */
void jmd_spec__cancel_rest(jmd_t *j, size_t task, const char *why)
{
    struct jmd_spec_task *jt = &j->sp->t[task];
    while (JMD_SPEC__N(jt) > 0)
        jmd_spec__end(j, task, JMD_SPEC__N(jt) - 1, PROTO_TASK_CANCELLED, NULL, why, 1);
}

int jmd_spec_status(jmd_t *j, size_t task, const proto_task_status_t *st)
{
    struct jmd_spec *s = j->sp;
    if (!s)
        return 0;
    struct jmd_spec_task *jt = &s->t[task];
    struct jmd_task *t = &j->tasks[task];
    if (!t->inflight)
        return 0;
    char why[512];
    if (st->attempt == t->attempt) {
        if (st->state == PROTO_TASK_RUNNING) {
            if (st->cpu_time_ms > jt->cpu_ms)
                jt->cpu_ms = st->cpu_time_ms;
            if (st->bytes_read > jt->bytes_read)
                jt->bytes_read = st->bytes_read;
            /* Duplicates are discarded when one attempt starts (Apollo §3.4). */
            if (!t->running && JMD_SPEC__N(jt) > 0) {
                uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
                int nc = speculate_task_started(&jt->x->st, t->attempt, 1, cancel,
                                                SPECULATE_MAX_ATTEMPTS);
                snprintf(why, sizeof why, "discarded: attempt %u started first", t->attempt);
                for (int c = 0; c < nc; c++)
                    for (size_t k = 0; k < JMD_SPEC__N(jt); k++)
                        if (jt->x->a[k].attempt == cancel[c] && jt->x->a[k].dup) {
                            jmd_spec__end(j, task, k, PROTO_TASK_CANCELLED, NULL, why, 1);
                            break;
                        }
            }
        }
        return 0;
    }
    size_t k = 0;
    while (k < JMD_SPEC__N(jt) && jt->x->a[k].attempt != st->attempt)
        k++;
    if (k == JMD_SPEC__N(jt))
        return 0;
    struct jmd_spec_att *e = &jt->x->a[k];
    switch ((proto_task_state_t)st->state) {
    case PROTO_TASK_QUEUED:
    case PROTO_TASK_STAGING:
        if (st->queued_at_ms && !e->queued_wall)
            e->queued_wall = st->queued_at_ms;
        return 1;
    case PROTO_TASK_RUNNING:
        if (e->running)
            return 1;
        if (e->dup && !t->running) {
            /* the duplicate started first: it becomes the task's attempt, the original goes */
            uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
            (void)speculate_task_started(&jt->x->st, e->attempt, 1, cancel, SPECULATE_MAX_ATTEMPTS);
            uint32_t a = e->attempt, old = t->attempt;
            const char *from = jmd_spec__name(j, t->node);
            jmd_spec__swap(j, task, k);
            j->spec_stats.dups_won++;
            snprintf(why, sizeof why, "discarded: duplicate attempt %u started first", a);
            log_info("%s: duplicate attempt %u started first on %s; attempt %u discarded on %s",
                     j->spec->tasks[task].id, a, jmd_spec__name(j, t->node), old, from);
            jmd_spec__cancel_rest(j, task, why);
            return 0; /* the caller takes the RUNNING status as the task's */
        }
        e->running = 1;
        e->run_mono = jmd_now(j);
        e->start_wall = st->started_at_ms ? st->started_at_ms : clock_wall_ms();
        {
            const struct spec_task *sp = &j->spec->tasks[task];
            e->used_units = arbiter_task_tokens(sp->cpu, sp->mem_mb, j->token_cpu, j->token_mem_mb);
            usage_add(&j->usage, e->start_wall, (int64_t)e->used_units);
        }
        if (e->dup)
            (void)speculate_task_started(&jt->x->st, e->attempt, 0, NULL, 0);
        return 1;
    case PROTO_TASK_SUCCEEDED: {
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        if (speculate_task_finished(&jt->x->st, e->attempt, cancel, SPECULATE_MAX_ATTEMPTS) < 0)
            return 1; /* a finish after a winner: its outputs are ignored */
        uint32_t a = e->attempt, old = t->attempt;
        int dup = e->dup;
        const char *from = jmd_spec__name(j, t->node);
        jmd_spec__swap(j, task, k);
        if (dup)
            j->spec_stats.dups_won++;
        else
            j->spec_stats.copies_won++;
        snprintf(why, sizeof why, "cancelled: %s attempt %u finished first",
                 dup ? "duplicate" : "copy", a);
        log_info("%s: %s attempt %u on %s finished first; attempt %u cancelled on %s",
                 j->spec->tasks[task].id, dup ? "duplicate" : "speculative copy", a,
                 jmd_spec__name(j, t->node), old, from);
        jmd_spec__cancel_rest(j, task, why);
        return 0; /* the caller records the success as the task's */
    }
    default: {
        int state = (int)st->state;
        attempt_extra_ended(j->core.att, task, state);
        if (state == PROTO_TASK_FAILED)
            j->attempts_failed++;
        (void)speculate_task_failed(&jt->x->st, e->attempt);
        log_info("%s: %s attempt %u %s on %s; attempt %u goes on", j->spec->tasks[task].id,
                 e->dup ? "duplicate" : "copy", e->attempt,
                 proto_task_state_name((proto_task_state_t)state), jmd_spec__name(j, e->node),
                 t->attempt);
        jmd_spec__end(j, task, k, state, st, NULL, 0);
        return 1;
    }
    }
}

void jmd_spec_outcome(jmd_t *j, size_t task, int state, const char *reason)
{
    struct jmd_spec *s = j->sp;
    if (!s || JMD_SPEC__N(&s->t[task]) == 0)
        return;
    struct jmd_spec_task *jt = &s->t[task];
    struct jmd_task *t = &j->tasks[task];
    char why[512];
    if (state == PROTO_TASK_SUCCEEDED) {
        uint32_t cancel[SPECULATE_MAX_ATTEMPTS];
        (void)speculate_task_finished(&jt->x->st, t->attempt, cancel, SPECULATE_MAX_ATTEMPTS);
        snprintf(why, sizeof why, "cancelled: attempt %u finished first", t->attempt);
    } else {
        snprintf(why, sizeof why, "%s", reason ? reason : "job ended");
    }
    jmd_spec__cancel_rest(j, task, why);
}

void jmd_spec_takeover(jmd_t *j, size_t task, int state, const proto_task_status_t *st,
                       const char *reason)
{
    struct jmd_spec *s = j->sp;
    if (!s || JMD_SPEC__N(&s->t[task]) == 0)
        return;
    struct jmd_spec_task *jt = &s->t[task];
    struct jmd_task *t = &j->tasks[task];
    /* a running extra attempt first; the tracked one's end is recorded as that attempt's */
    size_t k = 0;
    for (size_t i = 0; i < JMD_SPEC__N(jt); i++)
        if (jt->x->a[i].running) {
            k = i;
            break;
        }
    (void)speculate_task_failed(&jt->x->st, t->attempt);
    uint32_t old = t->attempt;
    jmd_spec__swap(j, task, k);
    log_info("%s attempt %u %s on %s; %s attempt %u on %s goes on", j->spec->tasks[task].id, old,
             proto_task_state_name((proto_task_state_t)state), jmd_spec__name(j, jt->x->a[k].node),
             jt->x->a[k].dup ? "duplicate" : "copy", t->attempt, jmd_spec__name(j, t->node));
    /* a status of the old attempt is already in; a cancel is still due when the JM decided */
    int cancel = st == NULL && state != PROTO_TASK_FAILED;
    jmd_spec__end(j, task, k, state, st, reason, cancel);
}

void jmd_spec_succeeded(jmd_t *j, size_t task, int node, double exec_s)
{
    struct jmd_spec *s = j->sp;
    if (!s)
        return;
    const struct spec_task *sp = &j->spec->tasks[task];
    const struct jmd_task *t = &j->tasks[task];
    double r = t->est.r_s > 0 ? t->est.r_s : sp->runtime_s;
    if (exec_s >= 0 && r > 0)
        (void)speculate_dist_add(&s->dist[sp->stage], exec_s / r);
    if (t->run_mono > 0 && t->run_mono >= t->disp_mono) { /* it was seen running */
        s->wait_sum[sp->stage] += (double)(t->run_mono - t->disp_mono) / 1000.0;
        s->wait_n[sp->stage]++;
    }
    s->t[task].done_node = node;
}

int jmd_spec_refused(jmd_t *j, size_t task, uint32_t attempt, const char *why)
{
    struct jmd_spec *s = j->sp;
    if (!s || task >= j->spec->ntasks)
        return 0;
    struct jmd_spec_task *jt = &s->t[task];
    for (size_t k = 0; k < JMD_SPEC__N(jt); k++)
        if (jt->x->a[k].attempt == attempt) {
            char reason[256];
            snprintf(reason, sizeof reason, "refused by the node: %s", why);
            (void)speculate_task_failed(&jt->x->st, attempt);
            jmd_spec__end(j, task, k, PROTO_TASK_CANCELLED, NULL, reason, 0);
            return 1;
        }
    return 0;
}

void jmd_spec_resend(jmd_t *j, uint32_t node)
{
    struct jmd_spec *s = j->sp;
    if (!s)
        return;
    for (size_t i = 0; i < j->spec->ntasks; i++)
        for (size_t k = 0; k < JMD_SPEC__N(&s->t[i]); k++)
            if (s->t[i].x->a[k].node == (int)node) {
                char err[256];
                (void)jmd_pn_create_attempt(j, i, s->t[i].x->a[k].attempt, s->t[i].x->a[k].cls,
                                            node, err, sizeof err);
            }
}
