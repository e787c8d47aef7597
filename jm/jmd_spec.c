/* jmd_spec.c - the daemon's side of issue 15: speculative copies of stragglers, duplicates of
 * queued tasks, upgrade with re-match, and re-runs of producers whose node-local outputs were
 * lost with their node (docs/stragglers.md, "The daemon"). The rules are jm/speculate.h's and
 * jm/correct.h's; this file keeps the state they need and sends what they decide.
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
#include <math.h>
#include <string.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "jm/grain.h"
#include "jm/jmd.h"
#include "jm/speculate.h"
#include "rm/arbiter.h"

#define JMD_SPEC__EXTRA   (SPECULATE_MAX_ATTEMPTS - 1) /* extra attempts per task */
#define JMD_SPEC__CHECK   64                           /* running tasks judged per tick at most */
#define JMD_SPEC__CORRECT 64 /* queued tasks re-evaluated per tick at most */
#define JMD_SPEC__N(jt)   ((jt)->x ? (jt)->x->n : 0) /* extra attempts in flight */

struct jmd_spec_att {
    uint32_t attempt;
    int node;
    int cls;
    int running;
    int dup; /* 1: a duplicate of a queued task; 0: a speculative copy of a running one */
    int64_t disp_mono, run_mono, disp_wall, queued_wall, start_wall;
    uint32_t used_units; /* counted in the usage skyline */
    uint32_t cost;       /* token units it holds */
    struct estimate est;
};

/* A task's extra attempts, allocated when its first one starts and freed when its last one
 * ends: only stragglers and queued tasks worth a duplicate ever have one, so the per-task record
 * below stays small (issue 24: the JM at most 1 KiB per task at rest). */
struct jmd_spec_extra {
    struct jmd_spec_att a[JMD_SPEC__EXTRA];
    size_t n;                 /* >= 1 while allocated */
    struct speculate_task st; /* winner and cancel (jm/speculate.h) */
};

struct jmd_spec_task {
    struct jmd_spec_extra *x; /* NULL: no extra attempt in flight */
    uint64_t cpu_ms;          /* CPU time the PN last reported for the running primary */
    uint64_t bytes_read;      /* ... and the input bytes it has read (0: unknown) */
    uint32_t copies, dups;    /* started so far */
    int32_t done_node;        /* node of the attempt that succeeded (-1) */
};

struct jmd_spec {
    struct speculate_config scfg;
    struct correct_config ccfg;
    enum correct_mode mode;
    struct jmd_spec_task *t;
    struct speculate_dist *dist; /* per stage: finished durations / R */
    double *wait_sum;            /* per stage: realised waits (queued -> running) */
    uint32_t *wait_n;
    uint32_t *stage_inflight; /* copies in flight per stage */
    size_t *local;            /* tasks with node-local outputs */
    size_t *flight;           /* the tick's copy of the DAG's running tasks (jmd_spec__flight) */
    size_t capflight;
    size_t nlocal;
    size_t inflight; /* copies in flight */
    uint64_t reg_units, opp_units;
    size_t next, cnext;
};

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

static void jmd_spec__units(jmd_t *j, int cls, uint32_t cost, int add)
{
    struct jmd_spec *s = j->sp;
    uint64_t *u = cls == DISPATCH_REGULAR ? &s->reg_units : &s->opp_units;
    if (add)
        *u += cost;
    else
        *u = *u >= cost ? *u - cost : 0;
    if (cls == DISPATCH_REGULAR)
        dispatch_set_tokens(j->disp, jmd_spec_tokens(j, j->granted));
}

static int jmd_spec__node_down(const jmd_t *j, uint32_t n)
{
    return jmd_sched_node_check(j, n, 0, 0) == ATTEMPT_NODE_DOWN;
}

static const char *jmd_spec__name(const jmd_t *j, int node)
{
    const struct view_node *vn = node >= 0 ? view_node(j->view, (uint32_t)node) : NULL;
    return vn ? vn->name : "?";
}

/* Ends extra attempt k of `task` (cancelled at its node first when `cancel`), writes its record
 * and gives back what it held. */
static void jmd_spec__end(jmd_t *j, size_t task, size_t k, int state, const proto_task_status_t *st,
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
static void jmd_spec__swap(jmd_t *j, size_t task, size_t k)
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
    int rc = attempt_takeover(j->att, task, e->attempt, e->node, e->cls, e->running, now);
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
static void jmd_spec__cancel_rest(jmd_t *j, size_t task, const char *why)
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
        attempt_extra_ended(j->att, task, state);
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

/* The best node for a new attempt of `task` other than those it has attempts on: its estimate
 * in *out, the node returned (-1: none). */
static long jmd_spec__best_other(jmd_t *j, size_t task, int64_t now, struct estimate *out)
{
    const struct jmd_spec_task *jt = &j->sp->t[task];
    const struct estimator_task *et = place_task(j->place, task);
    long best = -1;
    double best_c = ESTIMATOR_INF;
    for (uint32_t n = 0; n < view_count(j->view); n++) {
        if ((int)n == j->tasks[task].node)
            continue;
        int used = 0;
        for (size_t k = 0; k < JMD_SPEC__N(jt); k++)
            used |= jt->x->a[k].node == (int)n;
        const struct view_node *vn = view_node(j->view, n);
        if (used || !vn || !vn->up || !vn->endpoint[0])
            continue;
        struct estimate e;
        double c = estimator_estimate(j->est, j->view, et, n, now, 0.5, &e);
        if (c < best_c) {
            best_c = c;
            best = (long)n;
            *out = e;
        }
    }
    return best;
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
    uint32_t attempt = attempt_reserve(j->att, task);
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
    e->cost = dispatch_cost(j->disp, task);
    e->est = *est;
    if (!dup) {
        s->inflight++;
        s->stage_inflight[j->spec->tasks[task].stage]++;
    }
    jmd_spec__units(j, cls, e->cost, 1);
    if ((rc = place_claim(j->place, task, node, now)) != 0)
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
    const size_t *r = dag_running(j->dag, &n);
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
        const struct estimator_task *et = place_task(j->place, i);
        double r = estimator_cpu_s(j->est, et) + t->est.io_s;
        if (!(r > 0))
            r = t->est.r_s > 0 ? t->est.r_s : sp->runtime_s;
        struct speculate_input in = {0};
        in.elapsed_s = (double)(now - t->run_mono) / 1000.0;
        in.stage_done = d->v;
        in.nstage_done = d->n;
        in.stage_scale = r;
        in.est_run_s = r;
        double cpu_total = (r - t->est.io_s) * sp->cpu;
        in.progress = jt->cpu_ms > 0 || jt->bytes_read > 0
                          ? speculate_progress((double)jt->cpu_ms / 1000.0, cpu_total,
                                               jt->bytes_read, sp->input_bytes)
                          : -1;
        in.copy_c_s = ESTIMATOR_INF;
        in.speculate = sp->speculate;
        in.copies = jt->copies;
        in.job_inflight = (uint32_t)s->inflight;
        in.job_started = (uint32_t)j->spec_stats.copies_started;
        in.job_running = (uint32_t)running;
        in.job_tasks = (uint32_t)n;
        in.stage_inflight = s->stage_inflight[sp->stage];
        in.stage_tasks = (uint32_t)j->spec->stages[sp->stage].ntasks;
        /* the original's remaining time first: no node is looked at for a task that is fine */
        /* a copy costs at least its CPU time: no node is looked at unless even a copy that
           started at once could save enough (bounds the work per tick on a large cluster) */
        double rem = speculate_remaining(&s->scfg, &in);
        double floor_s = estimator_cpu_s(j->est, et); /* its CPU part runs anywhere */
        double need =
            s->scfg.gain * floor_s > s->scfg.margin_s ? s->scfg.gain * floor_s : s->scfg.margin_s;
        if (!(rem - floor_s >= need))
            continue;
        struct estimate e;
        long to = jmd_spec__best_other(j, i, now, &e);
        if (to < 0)
            continue;
        in.copy_c_s = e.e_s;
        if (d->n >= 2)
            in.copy_spread_s = speculate_dist_stddev(d) * r;
        struct speculate_why why;
        enum speculate_verdict v = speculate_check(&s->scfg, &in, &why);
        if (v != SPECULATE_COPY)
            continue;
        enum dispatch_class cls = attempt_copy_class(j->disp, i, sp->speculate, s->opp_units);
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
        if (jt->done_node < 0 || dag_state(j->dag, p) != DAG_SUCCEEDED ||
            !jmd_spec__node_down(j, (uint32_t)jt->done_node))
            continue;
        size_t nd;
        const size_t *dep = dag_dependents(j->dag, p, &nd);
        size_t need = 0;
        const char *child = NULL;
        for (size_t i = 0; i < nd; i++)
            if (dag_state(j->dag, dep[i]) != DAG_SUCCEEDED) {
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
            if (dag_state(j->dag, c) != DAG_RUNNING || !ct->inflight)
                continue;
            struct attempt_event ev = {.kind = ATTEMPT_EV_CANCEL, .task = c};
            jmd_sched_event(j, &ev, NULL, why);
            if (j->outcome != JMD_RUNNING)
                return;
        }
        int rc = dag_redo(j->dag, p);
        if (rc != 0) {
            log_warn("%s: its node-local outputs were lost with %s, but it cannot run again (%s)",
                     j->spec->tasks[p].id, node, err_text(rc));
            jt->done_node = -1;
            continue;
        }
        for (size_t i = 0; i < nd; i++)
            if (dag_state(j->dag, dep[i]) == DAG_WAITING)
                readyq_remove(j->rq, dep[i]);
        const struct spec_task *sp = &j->spec->tasks[p];
        rc = readyq_push(j->rq, p, jmd_sched_prio(j, p), sp->input_bytes);
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
        uint32_t node = (uint32_t)t->node;
        const struct estimator_task *et = place_task(j->place, i);
        const struct view_node *vn = view_node(j->view, node);
        struct estimate cur;
        estimator_estimate(j->est, j->view, et, node, now, 0.5, &cur);
        struct correct_dup_input in;
        memset(&in, 0, sizeof in);
        in.q.waited_s = (double)(now - t->disp_mono) / 1000.0;
        in.q.placed_wait_s = t->est.w_s;
        in.q.pn_wait_s = t->pn_wait_s;
        in.q.since_report_s = (double)(now - t->pn_wait_mono) / 1000.0;
        in.q.cur_wait_s = cur.w_s;
        in.q.own_share_s = vn && vn->cpu > 0 ? cur.r_s * et->cpu / vn->cpu : cur.r_s;
        in.q.run_s = cur.r_s;
        in.q.moves = t->moves;
        in.q.alt_c_s = ESTIMATOR_INF;
        in.stage_avg_wait_s =
            s->wait_n[sp->stage] ? s->wait_sum[sp->stage] / s->wait_n[sp->stage] : -1;
        in.dups = jt->dups;
        in.no_copies = !sp->speculate;
        unsigned conds = 0;
        (void)correct_decide(&s->ccfg, s->mode, &in, &conds, NULL);
        if (conds == 0)
            continue;
        struct estimate e;
        long to = jmd_spec__best_other(j, i, now, &e);
        if (to < 0)
            continue;
        in.q.alt_c_s = e.e_s;
        double left = 0;
        enum correct_action act = correct_decide(&s->ccfg, s->mode, &in, &conds, &left);
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
            enum dispatch_class cls = attempt_copy_class(j->disp, i, 1, s->opp_units);
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
    const struct estimator_task *et = place_task(j->place, task);
    struct estimate here, alt;
    if (estimator_estimate(j->est, j->view, et, (uint32_t)t->node, now, 0.5, &here) >=
        ESTIMATOR_INF)
        return 0;
    long to = jmd_spec__best_other(j, task, now, &alt);
    struct correct_upgrade_cand c = {
        .prio = j->task_bl ? j->task_bl[task] : 0,
        .here_s = here.w_s + here.r_s,
        .alt_s = to >= 0 ? alt.e_s : ESTIMATOR_INF,
        .running = 0,
    };
    struct correct_upgrade up;
    if (correct_upgrade_pick(&s->ccfg, &c, 1, 0, &up) != 0 || !up.replace || to < 0)
        return 0;
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
             jmd_spec__name(j, t->node), alt.e_s, c.here_s, from);
    log_info("%s: a freed token re-places it as regular attempt %u on %s (~%.1f s) instead of "
             "upgrading attempt %u in place on %s (~%.1f s)",
             j->spec->tasks[task].id, t->attempt, jmd_spec__name(j, t->node), alt.e_s, old, from,
             c.here_s);
    jmd_spec__cancel_rest(j, task, why);
    return 1;
}
