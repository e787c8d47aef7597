/* queue_pick.c - what a node starts next (pn/queue.h): the regular queue's backfill, a job's
 * own reorders and class trades, the opportunistic draw, swaps and preemptions. The queues
 * themselves, graces and the simulation of expected starts are in pn/queue.c. */
#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "pn/oppweight.h"
#include "pn/queue_internal.h"

/* Higher-priority tasks of a job tried in the place of the one to start (each costs two
 * simulations of the backfill window when the two differ in size or estimate). */
#define QUEUE__REORDER_TRIES 4

/* Walks the regular queue (up to the backfill depth) in order, giving each task its earliest
 * reservation in the profile of regular work. Returns the index of the first task whose
 * reservation is `now`, -1 when none. With want_free, a task whose reservation is `now` but
 * which is held back by running opportunistic work is passed over (its reservation kept), so
 * what is returned can start at once. */
static long queue__backfill(queue_t *q, double now, int want_free, int *rc)
{
    size_t depth = q->cfg.backfill_depth + 1;
    *rc = 0;
    if (want_free) {
        /* only a task that fits the free room now can be the answer: with none in the window
           (a full node, the usual case in a burst) the simulation is not made at all */
        size_t i = 0;
        while (i < q->reg.n && i < depth &&
               (q->reg.v[i].held || !queue__fits_free(q, &q->reg.v[i])))
            i++;
        if (i == q->reg.n || i == depth)
            return -1;
    }
    *rc = queue__running_profile(q, now, &q->prof);
    if (*rc)
        return -1;
    loadprof_hint_t hint = {0};
    for (size_t i = 0; i < q->reg.n && i < depth; i++) {
        const queue_task_t *t = &q->reg.v[i];
        double est = queue__est(q, t);
        double at = loadprof_fit_hinted(&q->prof, &hint, t->cpu, t->mem_mb, est);
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
