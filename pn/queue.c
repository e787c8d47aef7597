#include "pn/queue.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/queue_internal.h"

queue_t *queue_new(const queue_config_t *cfg)
{
    if (!cfg || !(cfg->cpus > 0) || !(cfg->mem_mb > 0))
        return NULL;
    queue_t *q = mem_calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cfg = *cfg;
    if (!q->cfg.max_regular)
        q->cfg.max_regular = 1024;
    if (!q->cfg.max_opportunistic)
        q->cfg.max_opportunistic = 1024;
    if (!q->cfg.max_running)
        q->cfg.max_running = 4096;
    if (!(q->cfg.default_est_s > 0))
        q->cfg.default_est_s = 10;
    if (!(q->cfg.overrun_s > 0))
        q->cfg.overrun_s = 1;
    if (!q->cfg.backfill_depth)
        q->cfg.backfill_depth = 64;
    if (!q->cfg.sim_depth)
        q->cfg.sim_depth = 256;
    loadprof_init(&q->prof, q->cfg.cpus, q->cfg.mem_mb);
    loadprof_init(&q->tail, q->cfg.cpus, q->cfg.mem_mb);
    loadprof_init(&q->cmp, q->cfg.cpus, q->cfg.mem_mb);
    return q;
}

void queue_destroy(queue_t **qp)
{
    if (!qp || !*qp)
        return;
    queue_t *q = *qp;
    mem_free(q->reg.v);
    mem_free(q->opp.v);
    mem_free(q->run);
    mem_free(q->cand);
    loadprof_close(&q->prof);
    loadprof_close(&q->tail);
    loadprof_close(&q->cmp);
    mem_free(q->res);
    mem_free(q);
    *qp = NULL;
}

const queue_config_t *queue_config(const queue_t *q)
{
    return &q->cfg;
}

int queue__vec_push(queue__vec_t *v, const queue_task_t *t)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        queue_task_t *n = mem_reallocarray(v->v, cap, sizeof *n);
        if (!n)
            return ERR_NOMEM;
        v->v = n;
        v->cap = cap;
    }
    v->v[v->n++] = *t;
    return 0;
}

void queue__vec_remove(queue__vec_t *v, size_t i)
{
    memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof *v->v);
    v->n--;
}

static long queue__vec_find(const queue__vec_t *v, uint64_t id)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i].id == id)
            return (long)i;
    return -1;
}

static long queue__run_find(const queue_t *q, uint64_t id)
{
    for (size_t i = 0; i < q->nrun; i++)
        if (q->run[i].t.id == id)
            return (long)i;
    return -1;
}

int queue_set_estimate(queue_t *q, uint64_t id, double est_s)
{
    if (isnan(est_s))
        return ERR_INVAL;
    queue_task_t *t = NULL;
    long i = queue__vec_find(&q->reg, id);
    if (i >= 0) {
        t = &q->reg.v[i];
    } else if ((i = queue__vec_find(&q->opp, id)) >= 0) {
        t = &q->opp.v[i];
    } else if ((i = queue__run_find(q, id)) >= 0) {
        t = &q->run[i].t;
    }
    if (!t)
        return ERR_NOTFOUND;
    if (t->est_s != est_s)
        q->gen++; /* every reservation behind it may move */
    t->est_s = est_s;
    return 0;
}

int queue_hold(queue_t *q, uint64_t id, int held)
{
    long i = queue__vec_find(&q->reg, id);
    if (i >= 0) {
        q->reg.v[i].held = !!held;
        return 0;
    }
    i = queue__vec_find(&q->opp, id);
    if (i >= 0) {
        q->opp.v[i].held = !!held;
        return 0;
    }
    return ERR_NOTFOUND;
}

int queue_push(queue_t *q, const queue_task_t *t)
{
    if (!(t->cpu > 0) || !(t->mem_mb > 0) || isinf(t->cpu) || isinf(t->mem_mb) || isnan(t->est_s) ||
        isnan(t->weight) || (t->klass != QUEUE_REGULAR && t->klass != QUEUE_OPPORTUNISTIC))
        return ERR_INVAL;
    if (t->cpu > q->cfg.cpus + QUEUE__EPS || t->mem_mb > q->cfg.mem_mb + QUEUE__EPS)
        return ERR_CAPACITY;
    if (t->id <= q->max_id &&
        (queue__vec_find(&q->reg, t->id) >= 0 || queue__vec_find(&q->opp, t->id) >= 0 ||
         queue__run_find(q, t->id) >= 0))
        return ERR_EXISTS;
    queue_task_t c = *t;
    c.held = 0;
    int rc;
    if (t->klass == QUEUE_REGULAR) {
        if (q->reg.n >= q->cfg.max_regular)
            return ERR_FULL;
        rc = queue__vec_push(&q->reg, &c);
    } else {
        if (q->opp.n >= q->cfg.max_opportunistic)
            return ERR_FULL;
        if (!(c.weight > 0))
            c.weight = 1;
        rc = queue__vec_push(&q->opp, &c);
    }
    if (rc == 0 && t->id > q->max_id)
        q->max_id = t->id;
    return rc;
}

int queue_cancel(queue_t *q, uint64_t id)
{
    q->gen++;
    long i = queue__vec_find(&q->reg, id);
    if (i >= 0) {
        queue__vec_remove(&q->reg, (size_t)i);
        return 0;
    }
    i = queue__vec_find(&q->opp, id);
    if (i >= 0) {
        queue__vec_remove(&q->opp, (size_t)i);
        return 0;
    }
    return queue__run_find(q, id) >= 0 ? ERR_STATE : ERR_NOTFOUND;
}

int queue_upgrade(queue_t *q, uint64_t id)
{
    q->gen++;
    long i = queue__vec_find(&q->opp, id);
    if (i >= 0) {
        if (q->reg.n >= q->cfg.max_regular)
            return ERR_FULL;
        queue_task_t t = q->opp.v[i];
        t.klass = QUEUE_REGULAR;
        int rc = queue__vec_push(&q->reg, &t);
        if (rc)
            return rc;
        queue__vec_remove(&q->opp, (size_t)i);
        return 0;
    }
    i = queue__run_find(q, id);
    if (i >= 0) {
        if (q->run[i].t.klass == QUEUE_REGULAR)
            return ERR_STATE;
        q->run[i].t.klass = QUEUE_REGULAR;
        q->run[i].grace_until = 0;
        q->run[i].preempting = 0;
        return 0;
    }
    return queue__vec_find(&q->reg, id) >= 0 ? ERR_STATE : ERR_NOTFOUND;
}

int queue_downgrade(queue_t *q, uint64_t id, double grace_until)
{
    q->gen++;
    long i = queue__vec_find(&q->reg, id);
    if (i >= 0) {
        if (q->opp.n >= q->cfg.max_opportunistic)
            return ERR_FULL;
        queue_task_t t = q->reg.v[i];
        t.klass = QUEUE_OPPORTUNISTIC;
        if (!(t.weight > 0))
            t.weight = 1;
        int rc = queue__vec_push(&q->opp, &t);
        if (rc)
            return rc;
        queue__vec_remove(&q->reg, (size_t)i);
        return 0;
    }
    i = queue__run_find(q, id);
    if (i >= 0) {
        queue__run_t *r = &q->run[i];
        if (r->t.klass == QUEUE_REGULAR) {
            r->t.klass = QUEUE_OPPORTUNISTIC;
            r->grace_until = grace_until > 0 && !isnan(grace_until) ? grace_until : 0;
        }
        return 0;
    }
    return queue__vec_find(&q->opp, id) >= 0 ? 0 : ERR_NOTFOUND;
}

size_t queue_end_graces(queue_t *q)
{
    q->gen++;
    size_t n = 0;
    for (size_t i = 0; i < q->nrun; i++) {
        if (q->run[i].grace_until > 0) {
            q->run[i].grace_until = 0;
            n++;
        }
    }
    return n;
}

double queue_next_grace(const queue_t *q, double now)
{
    double next = 0;
    for (size_t i = 0; i < q->nrun; i++) {
        const queue__run_t *r = &q->run[i];
        if (!r->preempting && queue__in_grace(r, now) && (next == 0 || r->grace_until < next))
            next = r->grace_until;
    }
    return next;
}

int queue__start(queue_t *q, queue__vec_t *from, size_t i, double now, queue_task_t *out)
{
    q->gen++;
    if (q->nrun == q->caprun) {
        size_t cap = q->caprun ? q->caprun * 2 : 16;
        queue__run_t *n = mem_reallocarray(q->run, cap, sizeof *n);
        if (!n)
            return ERR_NOMEM;
        q->run = n;
        q->caprun = cap;
    }
    queue__run_t *r = &q->run[q->nrun++];
    r->t = from->v[i];
    r->start = now;
    r->grace_until = 0;
    r->preempting = 0;
    q->cpu_used += r->t.cpu;
    q->mem_used += r->t.mem_mb;
    queue__vec_remove(from, i);
    if (out)
        *out = r->t;
    return 0;
}

/* The profile of running regular tasks until their expected ends, and of downgraded tasks
 * within their grace until the earlier of their expected end and the grace's end (regular
 * work cannot take their room before). */
int queue__running_profile(const queue_t *q, double now, loadprof_t *p)
{
    /* built at once from the ends (loadprof_reset_ends): added one by one, each end moved the
       steps after it, O(running^2) per simulation */
    loadprof_item_t stack[64], *it = q->nrun <= 64 ? stack : mem_calloc(q->nrun, sizeof *it);
    if (!it)
        return ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < q->nrun; i++) {
        const queue__run_t *r = &q->run[i];
        int grace = queue__in_grace(r, now) && !r->preempting;
        if (r->t.klass != QUEUE_REGULAR && !grace)
            continue;
        /* Past its estimate, a task is assumed to need a little more: a quarter of its
           estimate, at most overrun_s. (A floor of overrun_s on every running task made a node
           whose 0.5 s tasks were about to end look a second away: JMs sent work elsewhere to
           queue, or held it, while the slot freed.) */
        double est = queue__est(q, &r->t);
        double left = est - (now - r->start);
        if (left <= 0) {
            left = 0.25 * est < q->cfg.overrun_s ? 0.25 * est : q->cfg.overrun_s;
            left = left > 0.01 ? left : 0.01;
        }
        if (grace && r->grace_until - now < left)
            left = r->grace_until - now;
        it[k++] = (loadprof_item_t){now + left, r->t.cpu, r->t.mem_mb};
    }
    int rc = loadprof_reset_ends(p, now, it, k);
    if (it != stack)
        mem_free(it);
    return rc;
}

int queue_finish(queue_t *q, uint64_t id)
{
    q->gen++;
    long i = queue__run_find(q, id);
    if (i < 0)
        return ERR_NOTFOUND;
    q->cpu_used -= q->run[i].t.cpu;
    q->mem_used -= q->run[i].t.mem_mb;
    q->run[i] = q->run[--q->nrun];
    if (q->nrun == 0)
        q->cpu_used = q->mem_used = 0; /* no drift from float sums */
    return 0;
}

queue_state_t queue_state(const queue_t *q, uint64_t id, queue_class_t *klass)
{
    long i = queue__vec_find(&q->reg, id);
    if (i >= 0) {
        if (klass)
            *klass = QUEUE_REGULAR;
        return QUEUE_QUEUED;
    }
    i = queue__vec_find(&q->opp, id);
    if (i >= 0) {
        if (klass)
            *klass = QUEUE_OPPORTUNISTIC;
        return QUEUE_QUEUED;
    }
    i = queue__run_find(q, id);
    if (i >= 0) {
        if (klass)
            *klass = q->run[i].t.klass;
        return q->run[i].preempting ? QUEUE_PREEMPTING : QUEUE_RUNNING;
    }
    return QUEUE_ABSENT;
}

size_t queue_regular_queued(const queue_t *q)
{
    return q->reg.n;
}

void queue_stats(const queue_t *q, queue_stats_t *st)
{
    memset(st, 0, sizeof *st);
    st->regular_queued = q->reg.n;
    st->opportunistic_queued = q->opp.n;
    for (size_t i = 0; i < q->nrun; i++) {
        if (q->run[i].t.klass == QUEUE_REGULAR)
            st->regular_running++;
        else
            st->opportunistic_running++;
    }
    st->cpu_used = q->cpu_used;
    st->mem_used = q->mem_used;
}

static int queue__simulate(const queue_t *q, double now, loadprof_t *p, uint64_t id, double *at)
{
    int rc = queue__running_profile(q, now, p);
    double area = 0; /* node-seconds of the tasks past the exact depth */
    loadprof_hint_t hint = {0};
    for (size_t i = 0; !rc && i < q->reg.n; i++) {
        const queue_task_t *t = &q->reg.v[i];
        double est = queue__est(q, t);
        if (!at && i >= q->cfg.sim_depth) {
            area += fmax(t->cpu / q->cfg.cpus, t->mem_mb / q->cfg.mem_mb) * est;
            continue;
        }
        double start = loadprof_fit_hinted(p, &hint, t->cpu, t->mem_mb, est);
        if (at && t->id == id) {
            *at = start;
            return 0;
        }
        if (!isinf(start))
            rc = loadprof_add(p, start, start + est, t->cpu, t->mem_mb);
    }
    if (!rc && area > 0) {
        double end = loadprof_end(p);
        rc = loadprof_add(p, end, end + area, q->cfg.cpus, q->cfg.mem_mb);
    }
    return rc ? rc : (at ? ERR_NOTFOUND : 0);
}

int queue_simulate(const queue_t *q, double now, loadprof_t *p)
{
    return queue__simulate(q, now, p, 0, NULL);
}

int queue_expected_start(const queue_t *q, double now, uint64_t id, loadprof_t *p, double *at)
{
    return queue__simulate(q, now, p, id, at);
}

int queue_expected_start_tail(queue_t *q, double now, double max_age, uint64_t id, loadprof_t *p,
                              double *at)
{
    if (!q->reg.n || q->reg.v[q->reg.n - 1].id != id)
        return queue__simulate(q, now, p, id, at);
    const queue_task_t *t = &q->reg.v[q->reg.n - 1];
    double est = queue__est(q, t), start;
    int rc = 0;
    if (q->tail_ok && q->tail_gen == q->gen && q->tail_n + 1 == q->reg.n && now >= q->tail_now &&
        now - q->tail_now <= max_age) {
        start = loadprof_fit(&q->tail, t->cpu, t->mem_mb, est);
    } else { /* simulate everything ahead of it afresh, and keep it */
        q->tail_ok = 0;
        rc = queue__running_profile(q, now, &q->tail);
        loadprof_hint_t hint = {0};
        for (size_t i = 0; !rc && i + 1 < q->reg.n; i++) {
            const queue_task_t *u = &q->reg.v[i];
            double e = queue__est(q, u);
            double s = loadprof_fit_hinted(&q->tail, &hint, u->cpu, u->mem_mb, e);
            if (!isinf(s))
                rc = loadprof_add(&q->tail, s, s + e, u->cpu, u->mem_mb);
        }
        if (rc)
            return rc;
        q->tail_now = now;
        q->tail_gen = q->gen;
        start = loadprof_fit(&q->tail, t->cpu, t->mem_mb, est);
    }
    if (!isinf(start))
        rc = loadprof_add(&q->tail, start, start + est, t->cpu, t->mem_mb);
    q->tail_ok = rc == 0;
    q->tail_n = q->reg.n;
    *at = start < now ? now : start;
    return 0;
}
