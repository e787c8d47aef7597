#include "pn/queue.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/oppweight.h"

#define QUEUE__EPS 1e-9
/* Higher-priority tasks of a job tried in the place of the one to start (each costs two
 * simulations of the backfill window when the two differ in size or estimate). */
#define QUEUE__REORDER_TRIES 4

typedef struct queue__run {
    queue_task_t t;
    double start;
    double grace_until; /* downgraded: not preempted before this (0: no grace) */
    int preempting;
} queue__run_t;

typedef struct queue__vec {
    queue_task_t *v;
    size_t n, cap;
} queue__vec_t;

struct queue {
    queue_config_t cfg;
    queue__vec_t reg, opp;
    struct oppweight_cand *cand; /* scratch for the opportunistic pick, cap_cand entries */
    size_t cap_cand;
    queue__run_t *run;
    size_t nrun, caprun;
    double cpu_used, mem_used;
    loadprof_t prof; /* scratch for backfill decisions */
    loadprof_t cmp;  /* scratch for the reorder check (queue__reorder) */
    double *res;     /* reservations before and after a reorder, 2 x capres */
    size_t capres;
    /* Changes other than a push at the tail of the regular queue (or a hold) bump gen. The
     * simulation of the whole regular queue is kept in `tail` (made at tail_now, over tail_n
     * tasks, at generation tail_gen): a task pushed at the tail moves no reservation ahead of
     * it, so its expected start is a fit in that profile (queue_expected_start_tail). */
    uint64_t gen, tail_gen;
    loadprof_t tail;
    double tail_now;
    size_t tail_n;
    int tail_ok;
};

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

static int queue__vec_push(queue__vec_t *v, const queue_task_t *t)
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

static void queue__vec_remove(queue__vec_t *v, size_t i)
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

static double queue__est(const queue_t *q, const queue_task_t *t)
{
    return t->est_s > 0 ? t->est_s : q->cfg.default_est_s;
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
    if (queue__vec_find(&q->reg, t->id) >= 0 || queue__vec_find(&q->opp, t->id) >= 0 ||
        queue__run_find(q, t->id) >= 0)
        return ERR_EXISTS;
    queue_task_t c = *t;
    c.held = 0;
    if (t->klass == QUEUE_REGULAR) {
        if (q->reg.n >= q->cfg.max_regular)
            return ERR_FULL;
        return queue__vec_push(&q->reg, &c);
    }
    if (q->opp.n >= q->cfg.max_opportunistic)
        return ERR_FULL;
    if (!(c.weight > 0))
        c.weight = 1;
    return queue__vec_push(&q->opp, &c);
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

static int queue__in_grace(const queue__run_t *r, double now)
{
    return r->t.klass == QUEUE_OPPORTUNISTIC && now < r->grace_until;
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

static int queue__fits_free(const queue_t *q, const queue_task_t *t)
{
    return !t->held && q->cpu_used + t->cpu <= q->cfg.cpus + QUEUE__EPS &&
           q->mem_used + t->mem_mb <= q->cfg.mem_mb + QUEUE__EPS;
}

static int queue__start(queue_t *q, queue__vec_t *from, size_t i, double now, queue_task_t *out)
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
static int queue__running_profile(const queue_t *q, double now, loadprof_t *p)
{
    int rc = loadprof_reset(p, now);
    for (size_t i = 0; !rc && i < q->nrun; i++) {
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
        rc = loadprof_add(p, now, now + left, r->t.cpu, r->t.mem_mb);
    }
    return rc;
}

/* Walks the regular queue (up to the backfill depth) in order, giving each task its earliest
 * reservation in the profile of regular work. Returns the index of the first task whose
 * reservation is `now`, -1 when none. With want_free, a task whose reservation is `now` but
 * which is held back by running opportunistic work is passed over (its reservation kept), so
 * what is returned can start at once. */
static long queue__backfill(queue_t *q, double now, int want_free, int *rc)
{
    *rc = queue__running_profile(q, now, &q->prof);
    if (*rc)
        return -1;
    size_t depth = q->cfg.backfill_depth + 1;
    for (size_t i = 0; i < q->reg.n && i < depth; i++) {
        const queue_task_t *t = &q->reg.v[i];
        double est = queue__est(q, t);
        double at = loadprof_fit(&q->prof, t->cpu, t->mem_mb, est);
        if (isinf(at))
            continue;
        if (at <= now && !t->held && (!want_free || queue__fits_free(q, t)))
            return (long)i;
        *rc = loadprof_add(&q->prof, at, at + est, t->cpu, t->mem_mb);
        if (*rc)
            return -1;
    }
    return -1;
}

/* Reservations of the first w queued regular tasks in the simulation of queue__simulate, but
 * with the tasks at positions a and b exchanged (none when b == a) and the one at a starting at
 * `now`, into res[0..w). */
static int queue__reservations(const queue_t *q, double now, size_t w, size_t a, size_t b,
                               loadprof_t *p, double *res)
{
    int rc = queue__running_profile(q, now, p);
    for (size_t pos = 0; !rc && pos < w; pos++) {
        size_t idx = pos == a ? b : pos == b ? a : pos;
        const queue_task_t *t = &q->reg.v[idx];
        double est = queue__est(q, t);
        double at = pos == a ? now : loadprof_fit(p, t->cpu, t->mem_mb, est);
        res[pos] = at;
        if (!isinf(at))
            rc = loadprof_add(p, at, at + est, t->cpu, t->mem_mb);
    }
    return rc;
}

/* Task i of the regular queue is to start now. A queued regular task of the same job with a
 * higher priority that fits the free resources may start in its place, the two trading places
 * in the queue, when no other job's reservation in the backfill window moves later: the job's
 * own slots in queue order are given to its tasks in priority order. Returns the index to start
 * (i, holding the other task after a trade); *moved says whether a trade was made. Any failure
 * (no memory for the check) keeps the queue order. */
static size_t queue__reorder(queue_t *q, double now, size_t i, int *moved)
{
    const queue_task_t *t = &q->reg.v[i];
    size_t w = q->reg.n < q->cfg.backfill_depth + 1 ? q->reg.n : q->cfg.backfill_depth + 1;
    if (!t->job || i + 1 >= w)
        return i;
    /* the best candidates, highest priority first, queue order among equals */
    size_t cand[QUEUE__REORDER_TRIES], nc = 0;
    for (size_t k = i + 1; k < w; k++) {
        const queue_task_t *u = &q->reg.v[k];
        if (u->job != t->job || !(u->prio > t->prio) || !queue__fits_free(q, u))
            continue;
        size_t at = nc;
        while (at > 0 && q->reg.v[cand[at - 1]].prio < u->prio)
            at--;
        if (at >= QUEUE__REORDER_TRIES)
            continue;
        if (nc < QUEUE__REORDER_TRIES)
            nc++;
        memmove(&cand[at + 1], &cand[at], (nc - 1 - at) * sizeof *cand);
        cand[at] = k;
    }
    int base = 0;
    for (size_t c = 0; c < nc; c++) {
        size_t k = cand[c];
        const queue_task_t *u = &q->reg.v[k];
        int same =
            u->cpu == t->cpu && u->mem_mb == t->mem_mb && queue__est(q, u) == queue__est(q, t);
        if (!same) { /* simulate both orders: no other job's reservation may move later */
            if (q->capres < w) {
                double *r = mem_reallocarray(q->res, 2 * w, sizeof *r);
                if (!r)
                    return i;
                q->res = r;
                q->capres = w;
            }
            double *before = q->res, *after = q->res + q->capres;
            if (!base && queue__reservations(q, now, w, i, i, &q->cmp, before) != 0)
                return i;
            base = 1;
            if (queue__reservations(q, now, w, i, k, &q->cmp, after) != 0)
                return i;
            int ok = 1;
            for (size_t pos = i + 1; ok && pos < w; pos++)
                if (pos != k && q->reg.v[pos].job != t->job &&
                    after[pos] > before[pos] + QUEUE__EPS)
                    ok = 0;
            if (!ok)
                continue;
        }
        queue_task_t tmp = q->reg.v[i];
        q->reg.v[i] = q->reg.v[k];
        q->reg.v[k] = tmp;
        q->gen++;
        *moved = 1;
        return i;
    }
    return i;
}

/* Regular task i is to start now. Its job's queued opportunistic task of the highest priority
 * above it that fits the free resources (the earliest queued among equals) may start in its
 * place as regular, i moving to the opportunistic queue, when no other job's reservation in the
 * backfill window moves later. Returns the opportunistic queue's index of that task, or -1 (any
 * failure, such as no memory for the check, keeps the queue as it is). */
static long queue__trade(queue_t *q, double now, size_t i)
{
    const queue_task_t *t = &q->reg.v[i];
    if (!t->job)
        return -1;
    long best = -1;
    for (size_t k = 0; k < q->opp.n; k++) {
        const queue_task_t *o = &q->opp.v[k];
        if (o->job != t->job || !(o->prio > t->prio) || !queue__fits_free(q, o))
            continue;
        if (best < 0 || o->prio > q->opp.v[best].prio)
            best = (long)k;
    }
    if (best < 0)
        return -1;
    const queue_task_t *o = &q->opp.v[best];
    if (o->cpu <= t->cpu + QUEUE__EPS && o->mem_mb <= t->mem_mb + QUEUE__EPS &&
        queue__est(q, o) <= queue__est(q, t))
        return best; /* holds no more than t would: nothing behind can move later */
    size_t w = q->reg.n < q->cfg.backfill_depth + 1 ? q->reg.n : q->cfg.backfill_depth + 1;
    if (i + 1 >= w)
        return best;
    if (q->capres < w) {
        double *r = mem_reallocarray(q->res, 2 * w, sizeof *r);
        if (!r)
            return -1;
        q->res = r;
        q->capres = w;
    }
    double *before = q->res, *after = q->res + q->capres;
    if (queue__reservations(q, now, w, i, i, &q->cmp, before) != 0)
        return -1;
    queue_task_t keep = q->reg.v[i];
    q->reg.v[i] = *o; /* simulated in t's place, then put back */
    int rc = queue__reservations(q, now, w, i, i, &q->cmp, after);
    q->reg.v[i] = keep;
    if (rc != 0)
        return -1;
    for (size_t pos = i + 1; pos < w; pos++)
        if (q->reg.v[pos].job != keep.job && after[pos] > before[pos] + QUEUE__EPS)
            return -1;
    return best;
}

static int queue__pick(queue_t *q, double now, double draw, queue_task_t *out, int trade,
                       queue_pick_info_t *info);

int queue_pick(queue_t *q, double now, double draw, queue_task_t *out)
{
    return queue__pick(q, now, draw, out, 0, NULL);
}

int queue_pick_ex(queue_t *q, double now, double draw, queue_task_t *out, int *reordered)
{
    queue_pick_info_t info;
    int rc = queue__pick(q, now, draw, out, 0, &info);
    if (reordered)
        *reordered = info.reordered;
    return rc;
}

int queue_pick_trade(queue_t *q, double now, double draw, queue_task_t *out,
                     queue_pick_info_t *info)
{
    return queue__pick(q, now, draw, out, 1, info);
}

static int queue__pick(queue_t *q, double now, double draw, queue_task_t *out, int trade,
                       queue_pick_info_t *info)
{
    int moved = 0;
    queue_pick_info_t none = {0};
    if (!info)
        info = &none;
    memset(info, 0, sizeof *info);
    if (q->reg.n == 0 && q->opp.n == 0)
        return ERR_NOTFOUND;
    if (q->nrun >= q->cfg.max_running)
        return ERR_FULL;
    if (q->reg.n) {
        long i = 0;
        if (!queue__fits_free(q, &q->reg.v[0])) {
            int rc;
            i = queue__backfill(q, now, 1, &rc);
            if (rc)
                return rc;
            if (i < 0)
                return ERR_NOTFOUND;
        }
        size_t at = queue__reorder(q, now, (size_t)i, &moved);
        info->reordered = moved;
        long o = trade ? queue__trade(q, now, at) : -1;
        if (o >= 0) { /* the job's opportunistic task takes the regular place, and pays for it */
            queue_task_t r = q->reg.v[at];
            q->reg.v[at] = q->opp.v[o];
            q->reg.v[at].klass = QUEUE_REGULAR;
            r.klass = QUEUE_OPPORTUNISTIC;
            if (!(r.weight > 0))
                r.weight = 1;
            queue__vec_remove(&q->opp, (size_t)o);
            int rc = queue__vec_push(&q->opp, &r); /* cannot fail: a place was freed */
            if (rc)
                return rc;
            info->traded = 1;
            info->traded_id = r.id;
        }
        return queue__start(q, &q->reg, at, now, out);
    }
    /* One draw picks among the opportunistic tasks that fit (the paper's "the randomized
     * selection process continues until there is no more task that can execute"): a job first,
     * then one of its tasks (pn/oppweight.h). */
    if (q->cap_cand < q->opp.n) {
        size_t cap = q->cap_cand ? q->cap_cand : 16;
        while (cap < q->opp.n)
            cap *= 2;
        struct oppweight_cand *c = mem_reallocarray(q->cand, cap, sizeof *c);
        if (!c)
            return ERR_NOMEM;
        q->cand = c;
        q->cap_cand = cap;
    }
    for (size_t i = 0; i < q->opp.n; i++)
        q->cand[i] = (struct oppweight_cand){.job = q->opp.v[i].job,
                                             .weight = q->opp.v[i].weight,
                                             .eligible = queue__fits_free(q, &q->opp.v[i])};
    long pick = oppweight_pick(q->cand, q->opp.n, draw);
    if (pick < 0)
        return ERR_NOTFOUND;
    /* the draw chose the job; among its tasks that fit, the JM's priority goes first */
    uint64_t job = q->opp.v[pick].job;
    for (size_t k = 0; job && k < q->opp.n; k++)
        if (q->opp.v[k].job == job && q->cand[k].eligible && q->opp.v[k].prio > q->opp.v[pick].prio)
            pick = (long)k, moved = 1;
    info->reordered = moved;
    return queue__start(q, &q->opp, (size_t)pick, now, out);
}

size_t queue_swap(queue_t *q, double now, uint64_t *up, size_t cap, uint64_t *down)
{
    if (!q->reg.n || !cap || q->opp.n >= q->cfg.max_opportunistic)
        return 0;
    int rc;
    long i = queue__backfill(q, now, 0, &rc);
    if (rc || i < 0)
        return 0;
    const queue_task_t *t = &q->reg.v[i];
    uint64_t job = t->job;
    if (!job || queue__fits_free(q, t))
        return 0;
    double cpu = 0, mem = 0; /* the job's own running opportunistic work */
    for (size_t k = 0; k < q->nrun; k++) {
        const queue__run_t *r = &q->run[k];
        if (r->t.klass == QUEUE_OPPORTUNISTIC && !r->preempting && r->t.job == job) {
            cpu += r->t.cpu;
            mem += r->t.mem_mb;
        }
    }
    /* The job's queued regular task that waits as opportunistic: its lowest-priority one that
       the running work covers (the latest queued among equals), so a critical task keeps its
       regular place. The waiting task itself qualifies when nothing lower does. */
    long d = -1;
    for (size_t k = 0; k < q->reg.n; k++) {
        const queue_task_t *u = &q->reg.v[k];
        if (u->job != job || u->cpu > cpu + QUEUE__EPS || u->mem_mb > mem + QUEUE__EPS)
            continue;
        if (d < 0 || u->prio <= q->reg.v[d].prio)
            d = (long)k;
    }
    if (d < 0)
        return 0;
    queue_task_t dt = q->reg.v[d];
    dt.klass = QUEUE_OPPORTUNISTIC;
    if (!(dt.weight > 0))
        dt.weight = 1;
    if (queue__vec_push(&q->opp, &dt) != 0)
        return 0;
    queue__vec_remove(&q->reg, (size_t)d);
    q->gen++;
    size_t n = 0;
    cpu = mem = 0;
    while (n < cap && (cpu + QUEUE__EPS < dt.cpu || mem + QUEUE__EPS < dt.mem_mb)) {
        long best = -1; /* latest started first, as a preemption would have chosen */
        for (size_t k = 0; k < q->nrun; k++) {
            const queue__run_t *r = &q->run[k];
            if (r->t.klass != QUEUE_OPPORTUNISTIC || r->preempting || r->t.job != job)
                continue;
            if (best < 0 || r->start > q->run[best].start)
                best = (long)k;
        }
        if (best < 0)
            break;
        queue__run_t *r = &q->run[best];
        r->t.klass = QUEUE_REGULAR;
        r->grace_until = 0;
        cpu += r->t.cpu;
        mem += r->t.mem_mb;
        up[n++] = r->t.id;
    }
    *down = dt.id;
    return n;
}

size_t queue_preempt(queue_t *q, double now, uint64_t *ids, size_t cap)
{
    if (!q->reg.n || !cap)
        return 0;
    size_t opp = 0;
    for (size_t k = 0; k < q->nrun && !opp; k++)
        opp = q->run[k].t.klass == QUEUE_OPPORTUNISTIC && !q->run[k].preempting;
    if (!opp) /* nothing to preempt: spare the walk of the queue */
        return 0;
    int rc;
    long i = queue__backfill(q, now, 0, &rc);
    if (rc || i < 0)
        return 0;
    const queue_task_t *t = &q->reg.v[i];
    uint64_t own = t->job; /* a job never preempts itself (queue_swap) */
    double dc = q->cpu_used + t->cpu - q->cfg.cpus;
    double dm = q->mem_used + t->mem_mb - q->cfg.mem_mb;
    for (size_t k = 0; k < q->nrun; k++) {
        if (q->run[k].preempting) {
            dc -= q->run[k].t.cpu;
            dm -= q->run[k].t.mem_mb;
        }
    }
    size_t n = 0;
    while ((dc > QUEUE__EPS || dm > QUEUE__EPS) && n < cap) {
        long best = -1;
        for (size_t k = 0; k < q->nrun; k++) {
            const queue__run_t *r = &q->run[k];
            if (r->t.klass != QUEUE_OPPORTUNISTIC || r->preempting || queue__in_grace(r, now) ||
                (own && r->t.job == own))
                continue;
            if (!((dc > QUEUE__EPS && r->t.cpu > 0) || (dm > QUEUE__EPS && r->t.mem_mb > 0)))
                continue;
            if (best < 0 || r->start > q->run[best].start)
                best = (long)k;
        }
        if (best < 0)
            break;
        q->run[best].preempting = 1;
        q->gen++;
        dc -= q->run[best].t.cpu;
        dm -= q->run[best].t.mem_mb;
        ids[n++] = q->run[best].t.id;
    }
    return n;
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
    for (size_t i = 0; !rc && i < q->reg.n; i++) {
        const queue_task_t *t = &q->reg.v[i];
        double est = queue__est(q, t);
        if (!at && i >= q->cfg.sim_depth) {
            area += fmax(t->cpu / q->cfg.cpus, t->mem_mb / q->cfg.mem_mb) * est;
            continue;
        }
        double start = loadprof_fit(p, t->cpu, t->mem_mb, est);
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
        for (size_t i = 0; !rc && i + 1 < q->reg.n; i++) {
            const queue_task_t *u = &q->reg.v[i];
            double e = queue__est(q, u);
            double s = loadprof_fit(&q->tail, u->cpu, u->mem_mb, e);
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
