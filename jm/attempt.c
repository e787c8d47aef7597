/* attempt.c - the attempt lifecycle (jm/attempt.h): one place for the rules the daemon and the
 * simulators share. */
#include "jm/attempt.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "jm/speculate.h"
#include "proto/proto.h"

/* A set of task indices: task[0..n) in no order, and per task its place there plus one (0: not
 * in it). Both arrays are sized for every task at the start, so that no transition can fail to
 * keep the set; add and remove are O(1). */
struct attempt__set {
    uint32_t *task, *pos;
    size_t n;
};

struct attempt {
    struct attempt_config cfg;
    dag_t *dag;
    dispatch_t *disp;
    size_t n;
    unsigned char *base;
    size_t stride;
    void *own;    /* base when the machine allocated it */
    size_t *held; /* tasks backing off */
    size_t nheld;
    /* Indexes kept in step with the records (attempt__sync): the tasks in flight
       (attempt_inflight) and those of them queued at their node (attempt_queued). */
    struct attempt__set fly, queued;
    size_t buf[64]; /* downgrade/upgrade batch */
};

void attempt_config_default(struct attempt_config *c)
{
    c->max_attempts = 3;
    c->replace_factor = 10;
    c->backoff_s = 1.0;
    c->backoff_max_s = 30.0;
    c->grace_max_s = 5.0;
    c->grace_frac = 0.25;
    c->node_timeout_s = 15.0;
    c->class_settle_s = 2.0;
}

static struct attempt_task *attempt__t(const attempt_t *a, size_t task)
{
    return (struct attempt_task *)(void *)(a->base + task * a->stride);
}

int attempt_new(const struct attempt_config *cfg, size_t ntasks, dag_t *dag, dispatch_t *dispatch,
                void *base, size_t stride, attempt_t **out)
{
    *out = NULL;
    struct attempt_config c;
    if (cfg)
        c = *cfg;
    else
        attempt_config_default(&c);
    if (!dag || !dispatch || c.max_attempts < 1 || c.replace_factor < 1 || !(c.backoff_s >= 0) ||
        !(c.backoff_max_s >= c.backoff_s) || !(c.grace_max_s >= 0) || !(c.grace_frac >= 0) ||
        (base && stride < sizeof(struct attempt_task)) || ntasks >= UINT32_MAX)
        return ERR_INVAL;
    attempt_t *a = mem_calloc(1, sizeof *a);
    if (!a)
        return ERR_NOMEM;
    a->cfg = c;
    a->dag = dag;
    a->disp = dispatch;
    a->n = ntasks;
    a->held = mem_calloc(ntasks ? ntasks : 1, sizeof *a->held);
    size_t slots = ntasks ? ntasks : 1;
    a->fly.task = mem_calloc(slots, sizeof *a->fly.task);
    a->fly.pos = mem_calloc(slots, sizeof *a->fly.pos);
    a->queued.task = mem_calloc(slots, sizeof *a->queued.task);
    a->queued.pos = mem_calloc(slots, sizeof *a->queued.pos);
    if (!base) {
        a->own = mem_calloc(ntasks ? ntasks : 1, sizeof(struct attempt_task));
        base = a->own;
        stride = sizeof(struct attempt_task);
    }
    if (!a->held || !a->fly.task || !a->fly.pos || !a->queued.task || !a->queued.pos || !base) {
        mem_free(a->held);
        mem_free(a->fly.task);
        mem_free(a->fly.pos);
        mem_free(a->queued.task);
        mem_free(a->queued.pos);
        mem_free(a->own);
        mem_free(a);
        return ERR_NOMEM;
    }
    a->base = base;
    a->stride = stride;
    for (size_t i = 0; i < ntasks; i++) {
        struct attempt_task *t = attempt__t(a, i);
        memset(t, 0, sizeof *t);
        t->node = -1;
        t->avoid = -1;
    }
    *out = a;
    return 0;
}

void attempt_destroy(attempt_t **p)
{
    if (!p || !*p)
        return;
    mem_free((*p)->held);
    mem_free((*p)->fly.task);
    mem_free((*p)->fly.pos);
    mem_free((*p)->queued.task);
    mem_free((*p)->queued.pos);
    mem_free((*p)->own);
    mem_free(*p);
    *p = NULL;
}

const struct attempt_config *attempt_get_config(const attempt_t *a)
{
    return &a->cfg;
}

const dispatch_t *attempt_dispatch(const attempt_t *a)
{
    return a->disp;
}

const struct attempt_task *attempt_get(const attempt_t *a, size_t task)
{
    return task < a->n ? attempt__t(a, task) : NULL;
}

int attempt_tracks(const attempt_t *a, size_t task, uint32_t attempt)
{
    const struct attempt_task *t = attempt_get(a, task);
    return t && t->inflight && t->attempt == attempt;
}

void attempt_note_seen(attempt_t *a, size_t task, uint32_t attempt)
{
    if (task < a->n && attempt > attempt__t(a, task)->seen)
        attempt__t(a, task)->seen = attempt;
}

/* Puts `task` in the set or takes it out, as `in` says. */
static void attempt__set_put(struct attempt__set *s, size_t task, int in)
{
    if ((s->pos[task] != 0) == (in != 0))
        return;
    if (in) {
        s->task[s->n++] = (uint32_t)task;
        s->pos[task] = (uint32_t)s->n;
        return;
    }
    size_t at = s->pos[task] - 1;
    uint32_t last = s->task[--s->n];
    s->task[at] = last;
    s->pos[last] = (uint32_t)at + 1;
    s->pos[task] = 0;
}

/* Brings `task`'s entries in the indexes in line with its record: called after every change of
 * inflight, running, cls or node (each public entry that changes a record ends with it, on its
 * error paths too), so that neither index needs a walk over every task. O(1). */
static void attempt__sync(attempt_t *a, size_t task)
{
    const struct attempt_task *t = attempt__t(a, task);
    attempt__set_put(&a->fly, task, t->inflight);
    /* queued at its node: what place_queued_update sums per node */
    attempt__set_put(&a->queued, task,
                     t->inflight && !t->running && t->cls == DISPATCH_REGULAR && t->node >= 0);
}

size_t attempt_inflight(const attempt_t *a, const uint32_t **tasks)
{
    *tasks = a->fly.task;
    return a->fly.n;
}

size_t attempt_queued(const attempt_t *a, const uint32_t **tasks)
{
    *tasks = a->queued.task;
    return a->queued.n;
}

static uint32_t attempt__next(struct attempt_task *t)
{
    t->seen = (t->attempt > t->seen ? t->attempt : t->seen) + 1;
    return t->seen;
}

uint32_t attempt_reserve(attempt_t *a, size_t task)
{
    return task < a->n ? attempt__next(attempt__t(a, task)) : 0;
}

void attempt_extra_ended(attempt_t *a, size_t task, int state)
{
    if (task < a->n && state == PROTO_TASK_FAILED)
        attempt__t(a, task)->failures++;
}

void attempt_replayed(attempt_t *a, size_t task, uint32_t attempt, int state, int moved)
{
    if (task >= a->n)
        return;
    struct attempt_task *t = attempt__t(a, task);
    if (attempt > t->attempt)
        t->attempt = attempt;
    attempt_note_seen(a, task, attempt);
    if (state == PROTO_TASK_SUCCEEDED)
        return;
    if (state == PROTO_TASK_FAILED) {
        t->failures++;
        return;
    }
    t->replaced++;
    t->moves += moved != 0;
}

int64_t attempt_backoff_ms(const struct attempt_config *c, uint32_t failures)
{
    double s = c->backoff_s;
    for (uint32_t i = 1; i < failures && s < c->backoff_max_s; i++)
        s *= 2;
    if (s > c->backoff_max_s)
        s = c->backoff_max_s;
    return (int64_t)llround(s * 1000.0);
}

uint64_t attempt_grace_ms(const struct attempt_config *c, int running, double left_s, double est_s)
{
    if (!running || !(left_s > 0) || left_s > c->grace_max_s || left_s > est_s * c->grace_frac)
        return 0;
    return (uint64_t)(left_s * 1000.0);
}

static void attempt__hold(attempt_t *a, size_t task, int64_t at_ms)
{
    struct attempt_task *t = attempt__t(a, task);
    if (t->retry_ms == 0)
        a->held[a->nheld++] = task;
    t->retry_ms = at_ms > 0 ? at_ms : 1;
}

static void attempt__unhold(attempt_t *a, size_t task)
{
    struct attempt_task *t = attempt__t(a, task);
    if (t->retry_ms == 0)
        return;
    t->retry_ms = 0;
    for (size_t i = 0; i < a->nheld; i++)
        if (a->held[i] == task) {
            a->held[i] = a->held[--a->nheld];
            break;
        }
}

size_t attempt_due(attempt_t *a, int64_t now_ms, size_t *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < a->nheld && k < cap;) {
        size_t task = a->held[i];
        struct attempt_task *t = attempt__t(a, task);
        if (t->retry_ms > now_ms) {
            i++;
            continue;
        }
        t->retry_ms = 0;
        a->held[i] = a->held[--a->nheld];
        out[k++] = task;
    }
    return k;
}

size_t attempt_held(const attempt_t *a)
{
    return a->nheld;
}

int attempt_is_held(const attempt_t *a, size_t task)
{
    return task < a->n && attempt__t(a, task)->retry_ms != 0;
}

struct attempt__out {
    struct attempt_action *a;
    size_t n, cap;
    int fatal; /* the end being ruled is a fatal failure (attempt__status) */
};

static struct attempt_action *attempt__emit(struct attempt__out *o, int kind, size_t task,
                                            const struct attempt_task *t)
{
    /* attempt_step's cap is at least ATTEMPT_MAX_ACTIONS, the batches' at most cap */
    struct attempt_action *x = &o->a[o->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->task = task;
    x->attempt = t->attempt;
    x->node = t->node;
    x->cls = t->cls;
    return x;
}

/* The tracked attempt of `task` ended with `state`: the one place an attempt's end is ruled. */
static int attempt__end(attempt_t *a, size_t task, int state, int extra, int job_over, int64_t now,
                        struct attempt__out *o)
{
    struct attempt_task *t = attempt__t(a, task);
    if (extra && state != PROTO_TASK_SUCCEEDED && !job_over) {
        /* An extra attempt lives: it takes over; a failure is still charged and its node
           avoided, and the task stays in flight. */
        if (state == PROTO_TASK_FAILED) {
            t->failures++;
            if (t->node >= 0) {
                t->avoid = t->node;
                attempt__emit(o, ATTEMPT_ACT_AVOID, task, t);
            }
        }
        attempt__emit(o, ATTEMPT_ACT_TAKEOVER, task, t)->state = state;
        return 0;
    }
    int rc = dispatch_finished(a->disp, task);
    if (rc)
        return rc;
    attempt__emit(o, ATTEMPT_ACT_RECORD, task, t)->state = state;
    int node = t->node;
    t->inflight = 0;
    t->running = 0;
    t->node = -1;
    if (state == PROTO_TASK_SUCCEEDED) {
        size_t released = 0;
        if ((rc = dag_succeed(a->dag, task, &released)) != 0)
            return rc;
        struct attempt_action *x = attempt__emit(o, ATTEMPT_ACT_DONE, task, t);
        x->node = node;
        x->released = released;
    } else if (state == PROTO_TASK_FAILED) {
        t->failures++;
        if ((int)t->failures >= a->cfg.max_attempts || o->fatal) {
            (void)dag_fail(a->dag, task);
            attempt__emit(o, ATTEMPT_ACT_FAIL_JOB, task, t)->why =
                o->fatal ? ATTEMPT_WHY_FATAL : ATTEMPT_WHY_FAILED;
            return 0;
        }
        if (job_over)
            return 0;
        if (node >= 0) {
            t->avoid = node;
            attempt__emit(o, ATTEMPT_ACT_AVOID, task, t)->node = node;
        }
        if ((rc = dag_requeue(a->dag, task)) != 0)
            return rc;
        int64_t at = now + attempt_backoff_ms(&a->cfg, t->failures);
        attempt__hold(a, task, at);
        attempt__emit(o, ATTEMPT_ACT_RETRY, task, t)->at_ms = at;
    } else if (!job_over) {
        t->replaced++;
        if ((int)t->replaced > a->cfg.replace_factor * a->cfg.max_attempts) {
            (void)dag_fail(a->dag, task);
            attempt__emit(o, ATTEMPT_ACT_FAIL_JOB, task, t)->why = ATTEMPT_WHY_REPLACED;
            return 0;
        }
        if (state == PROTO_TASK_LOST && node >= 0) {
            t->avoid = node;
            attempt__emit(o, ATTEMPT_ACT_AVOID, task, t)->node = node;
        }
        if ((rc = dag_requeue(a->dag, task)) != 0)
            return rc;
        attempt__emit(o, ATTEMPT_ACT_RETRY, task, t)->at_ms = now;
    }
    if (!job_over)
        attempt__emit(o, ATTEMPT_ACT_ROUND, task, t);
    return 0;
}

static int attempt__placed(attempt_t *a, size_t task, int node, int cls, int64_t now,
                           struct attempt__out *o)
{
    struct attempt_task *t = attempt__t(a, task);
    if (t->inflight || node < 0 || (cls != DISPATCH_REGULAR && cls != DISPATCH_OPPORTUNISTIC))
        return ERR_STATE;
    int rc = dag_start(a->dag, task);
    if (rc) {
        (void)dispatch_finished(a->disp, task); /* undo the caller's dispatch_place */
        return rc;
    }
    attempt__unhold(a, task);
    t->attempt = attempt__next(t);
    t->inflight = 1;
    t->running = 0;
    t->node = node;
    t->cls = cls;
    t->placed_ms = t->cls_ms = now;
    t->run_ms = 0;
    attempt__emit(o, ATTEMPT_ACT_CREATE, task, t);
    return 0;
}

static int attempt__status(attempt_t *a, const struct attempt_event *ev, int64_t now,
                           struct attempt__out *o)
{
    struct attempt_task *t = attempt__t(a, ev->task);
    if (ev->attempt > t->seen)
        t->seen = ev->attempt;
    if (!t->inflight || ev->attempt != t->attempt)
        return 0; /* an earlier attempt's, or a repeat after the end */
    int live = ev->state == PROTO_TASK_QUEUED || ev->state == PROTO_TASK_STAGING ||
               ev->state == PROTO_TASK_RUNNING;
    if (live && ev->cls != DISPATCH_NONE && ev->cls != t->cls &&
        (ev->traded || (double)(now - t->cls_ms) > a->cfg.class_settle_s * 1000.0)) {
        /* The PN runs it in another class: its word is what it runs, so the units follow. */
        int rc = dispatch_reclass(a->disp, ev->task, (enum dispatch_class)ev->cls);
        if (rc)
            return rc;
        t->cls = ev->cls;
        attempt__emit(o, ATTEMPT_ACT_ROUND, ev->task, t);
    }
    if (ev->state == PROTO_TASK_RUNNING) {
        if (!t->running) {
            t->running = 1;
            t->run_ms = now;
            int rc = dispatch_started(a->disp, ev->task);
            if (rc)
                return rc;
            attempt__emit(o, ATTEMPT_ACT_STARTED, ev->task, t);
        }
        return 0;
    }
    if (live)
        return 0;
    if (ev->state < PROTO_TASK_SUCCEEDED || ev->state >= PROTO_TASK_STATE_COUNT)
        return ERR_INVAL;
    o->fatal = ev->fatal && ev->state == PROTO_TASK_FAILED && !ev->extra;
    int rc = attempt__end(a, ev->task, ev->state, ev->extra, 0, now, o);
    o->fatal = 0;
    return rc;
}

static int attempt__step(attempt_t *a, const struct attempt_event *ev, int64_t now_ms,
                         struct attempt_action *out, size_t cap)
{
    struct attempt__out o = {out, 0, cap, 0};
    struct attempt_task *t = attempt__t(a, ev->task);
    int rc = 0;
    switch (ev->kind) {
    case ATTEMPT_EV_PLACED:
        rc = attempt__placed(a, ev->task, ev->node, ev->cls, now_ms, &o);
        break;
    case ATTEMPT_EV_STATUS:
        rc = attempt__status(a, ev, now_ms, &o);
        break;
    case ATTEMPT_EV_REFUSED:
        if (!t->inflight || ev->attempt != t->attempt)
            break;
        if (ev->code == ERR_UNAVAILABLE && t->node >= 0) {
            /* draining: not the task's fault */
            attempt__emit(&o, ATTEMPT_ACT_NODE_OFF, ev->task, t);
            rc = attempt__end(a, ev->task, PROTO_TASK_CANCELLED, ev->extra, 0, now_ms, &o);
        } else {
            rc = attempt__end(a, ev->task, PROTO_TASK_FAILED, ev->extra, 0, now_ms, &o);
        }
        break;
    case ATTEMPT_EV_NODE:
        if (!t->inflight)
            break;
        if (ev->state == ATTEMPT_NODE_SILENT)
            attempt__emit(&o, ATTEMPT_ACT_NODE_OFF, ev->task, t);
        else if (ev->state != ATTEMPT_NODE_DOWN)
            return ERR_INVAL;
        attempt__emit(&o, ATTEMPT_ACT_CANCEL, ev->task, t);
        rc = attempt__end(a, ev->task, PROTO_TASK_LOST, ev->extra, 0, now_ms, &o);
        break;
    case ATTEMPT_EV_MOVED:
        if (!t->inflight || t->running)
            return ERR_STATE;
        t->moves++;
        attempt__emit(&o, ATTEMPT_ACT_CANCEL, ev->task, t);
        t->avoid = t->node;
        attempt__emit(&o, ATTEMPT_ACT_AVOID, ev->task, t);
        rc = attempt__end(a, ev->task, PROTO_TASK_CANCELLED, 0, 0, now_ms, &o);
        break;
    case ATTEMPT_EV_CANCEL:
        if (!t->inflight)
            break;
        attempt__emit(&o, ATTEMPT_ACT_CANCEL, ev->task, t);
        rc = attempt__end(a, ev->task, PROTO_TASK_CANCELLED, ev->extra, 0, now_ms, &o);
        break;
    case ATTEMPT_EV_UNSENDABLE:
        if (!t->inflight)
            break;
        rc = attempt__end(a, ev->task, PROTO_TASK_FAILED, 0, 0, now_ms, &o);
        break;
    case ATTEMPT_EV_JOB_END:
        attempt__unhold(a, ev->task);
        if (!t->inflight)
            break;
        attempt__emit(&o, ATTEMPT_ACT_CANCEL, ev->task, t);
        rc = attempt__end(a, ev->task, PROTO_TASK_CANCELLED, 0, 1, now_ms, &o);
        break;
    default:
        return ERR_INVAL;
    }
    return rc ? rc : (int)o.n;
}

int attempt_step(attempt_t *a, const struct attempt_event *ev, int64_t now_ms,
                 struct attempt_action *out, size_t cap)
{
    if (!ev || ev->task >= a->n)
        return ERR_RANGE;
    if (!out || cap < ATTEMPT_MAX_ACTIONS)
        return ERR_INVAL;
    int rc = attempt__step(a, ev, now_ms, out, cap);
    attempt__sync(a, ev->task); /* an event changes its own task's record only */
    return rc;
}

int attempt_adopt(attempt_t *a, size_t task, uint32_t attempt, int node, int cls, int64_t now_ms)
{
    if (task >= a->n || node < 0)
        return ERR_RANGE;
    struct attempt_task *t = attempt__t(a, task);
    if (t->inflight)
        return ERR_STATE;
    int rc = dag_start(a->dag, task);
    if (rc)
        return rc;
    if ((rc = dispatch_adopt(a->disp, task, (enum dispatch_class)cls)) != 0) {
        (void)dag_requeue(a->dag, task);
        return rc;
    }
    attempt__unhold(a, task);
    t->attempt = attempt;
    if (attempt > t->seen)
        t->seen = attempt;
    t->inflight = 1;
    t->running = 0;
    t->node = node;
    t->cls = cls;
    t->placed_ms = t->cls_ms = now_ms;
    attempt__sync(a, task);
    return 0;
}

int attempt_takeover(attempt_t *a, size_t task, uint32_t attempt, int node, int cls, int running,
                     int64_t now_ms)
{
    if (task >= a->n)
        return ERR_RANGE;
    struct attempt_task *t = attempt__t(a, task);
    if (!t->inflight)
        return ERR_STATE;
    int rc;
    if (cls != t->cls && (rc = dispatch_reclass(a->disp, task, (enum dispatch_class)cls)) != 0)
        return rc;
    t->attempt = attempt;
    if (attempt > t->seen)
        t->seen = attempt;
    t->node = node;
    t->cls = cls;
    t->cls_ms = now_ms;
    t->running = running;
    attempt__sync(a, task);
    if (running && !dispatch_running(a->disp, task) && (rc = dispatch_started(a->disp, task)) != 0)
        return rc;
    return 0;
}

size_t attempt_downgrades(attempt_t *a, const double *prio, const double *remaining,
                          const double *estimate, int64_t now_ms, struct attempt_action *out,
                          size_t cap)
{
    if (dispatch_regular_units(a->disp) <= dispatch_tokens(a->disp))
        return 0;
    size_t want = cap < 64 ? cap : 64;
    size_t k = dispatch_downgrades(a->disp, prio, remaining, a->buf, want);
    struct attempt__out o = {out, 0, cap, 0};
    for (size_t i = 0; i < k; i++) {
        size_t task = a->buf[i];
        struct attempt_task *t = attempt__t(a, task);
        t->cls = DISPATCH_OPPORTUNISTIC;
        t->cls_ms = now_ms;
        attempt__sync(a, task);
        struct attempt_action *x = attempt__emit(&o, ATTEMPT_ACT_RECLASS, task, t);
        x->grace_ms = attempt_grace_ms(&a->cfg, t->running, remaining ? remaining[task] : 0,
                                       estimate ? estimate[task] : 0);
    }
    return o.n;
}

size_t attempt_upgrades(attempt_t *a, const double *prio, int64_t now_ms,
                        struct attempt_action *out, size_t cap)
{
    size_t want = cap < 64 ? cap : 64;
    size_t k = dispatch_upgrades(a->disp, prio, a->buf, want);
    struct attempt__out o = {out, 0, cap, 0};
    for (size_t i = 0; i < k; i++) {
        struct attempt_task *t = attempt__t(a, a->buf[i]);
        t->cls = DISPATCH_REGULAR;
        t->cls_ms = now_ms;
        attempt__sync(a, a->buf[i]);
        attempt__emit(&o, ATTEMPT_ACT_RECLASS, a->buf[i], t);
    }
    return o.n;
}

struct attempt__yield_ctx {
    attempt_t *a;
    int64_t before_ms; /* placed at or before */
};

static int attempt__may_yield(void *ctx, size_t task)
{
    const struct attempt__yield_ctx *c = ctx;
    const struct attempt_task *t = attempt__t(c->a, task);
    return t->inflight && !t->running && t->placed_ms <= c->before_ms;
}

size_t attempt_yield(attempt_t *a, size_t task, const double *prio, int64_t min_wait_ms,
                     int64_t now_ms, struct attempt_action *out, size_t cap)
{
    if (task >= a->n)
        return 0;
    struct attempt__yield_ctx c = {a, now_ms - min_wait_ms};
    size_t want = cap < 64 ? cap : 64;
    size_t k = dispatch_yield(a->disp, task, prio, attempt__may_yield, &c, a->buf, want);
    struct attempt__out o = {out, 0, cap, 0};
    for (size_t i = 0; i < k; i++) {
        struct attempt_task *t = attempt__t(a, a->buf[i]);
        t->cls = DISPATCH_OPPORTUNISTIC;
        t->cls_ms = now_ms;
        attempt__sync(a, a->buf[i]);
        attempt__emit(&o, ATTEMPT_ACT_RECLASS, a->buf[i], t);
    }
    return o.n;
}

uint64_t attempt_yieldable(attempt_t *a, int64_t min_wait_ms, int64_t now_ms)
{
    struct attempt__yield_ctx c = {a, now_ms - min_wait_ms};
    return dispatch_yieldable(a->disp, attempt__may_yield, &c);
}

struct attempt_free attempt_free(const dispatch_t *d, uint64_t extra_reg, uint64_t extra_opp)
{
    uint64_t tok = dispatch_tokens(d), reg = dispatch_regular_units(d) + extra_reg;
    uint64_t allow = dispatch_allowance(d), opp = dispatch_opportunistic_units(d) + extra_opp;
    struct attempt_free f = {tok > reg ? tok - reg : 0, allow > opp ? allow - opp : 0};
    return f;
}

enum dispatch_class attempt_copy_class(const dispatch_t *d, size_t task, int speculate,
                                       uint64_t extra_opp)
{
    if (!speculate)
        return DISPATCH_NONE;
    struct attempt_free f = attempt_free(d, 0, extra_opp);
    return speculate_copy_class(f.regular, f.opportunistic, dispatch_cost(d, task));
}

enum attempt_node attempt_node_check(const struct attempt_config *c,
                                     const struct attempt_node_obs *o, int64_t now_ms)
{
    if (o->known && !o->view_up && (o->rm_down || !o->rm_known))
        return ATTEMPT_NODE_DOWN; /* draining keeps its tasks */
    double limit = c->node_timeout_s * 1000.0;
    if ((double)(now_ms - o->heard_ms) > limit && (double)(now_ms - o->placed_ms) > limit)
        return ATTEMPT_NODE_SILENT;
    return ATTEMPT_NODE_OK;
}

int attempt_outputs_lost(int local_outputs, int node_down, size_t pending)
{
    return local_outputs && node_down && pending > 0;
}
