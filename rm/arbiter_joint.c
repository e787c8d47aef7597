/* arbiter_joint.c - admission by a joint plan: the admitted jobs and the new one run together
 * under the arbiter's own MinEDF-WC, each at its own pace (rm/arbiter.h, arbiter_admit_joint).
 *
 * Why not the fluid model alone (arbiter_admit): it hands tokens out in strict EDF order, each
 * job taking up to its peak width until its work is done, and adds its path's tail at the end, so
 * the work of a job whose DAG is mostly a long chain catches up at full width after the jobs
 * ahead of it, as if its chain could wait without delaying it: a job behind a cluster that an
 * earlier deadline needs whole was admitted though its chain could not start. Here a job on g
 * tokens progresses at 1 / T(g) of itself per second, T(g) its own time on g tokens (its list
 * schedule's place between ARIA's bounds at g, the place the fluid model uses at its width), so
 * time without tokens is time lost, whatever the job's shape; and the tokens are handed out by
 * arbiter_allocate, MinEDF-WC, with each job's minimum for what it has left by its deadline, as
 * the RM's ledger arbitrates: a later deadline keeps the minimum it needs beside an earlier one.
 * Alone, a job finishes at T(width), exactly where the fluid model puts it.
 */
#include "rm/arbiter.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <string.h>

#define ARBITER_JOINT_BISECT 24 /* earliest feasible finish: halvings of the search interval */

struct arbiter__jjob {
    uint64_t id;
    double deadline; /* seconds from now; INFINITY: none (planned last) */
    double work;     /* conservative token-seconds (or the mean, for the median) */
    double path;
    double alpha; /* its place between ARIA's bounds; < 0: none (the upper bound) */
    uint32_t width;
};

struct arbiter__joint {
    uint32_t capacity;
    const struct arbiter_reserve *plan;
    struct arbiter__jjob *jobs; /* admitted (sorted by deadline, then id), then the new one */
    size_t n;                   /* admitted */
    double *base;               /* each admitted job's finish without the new one */
    double *rem, *fin;          /* fraction of each job left; its finish */
    struct arbiter_job *arb;
    size_t *order, *idx;
};

/* The job's time on k tokens: its list schedule's place between ARIA's bounds at k when it has
 * one, else the upper bound (arbiter_admit's conventions: the median of a shape without alpha is
 * the bounds' mean, set by the caller as alpha 0.5). */
static double arbiter__time(const struct arbiter__jjob *j, uint32_t k)
{
    if (k == 0)
        return INFINITY;
    struct arbiter_shape c = {.work = j->work, .path = j->path, .width = j->width};
    double kk = (double)(k < j->width ? k : j->width);
    double low = arbiter_time_low(&c, kk), up = arbiter_time_up(&c, kk);
    return j->alpha >= 0 ? low + j->alpha * (up - low) : up;
}

/* MinEDF on the job's own time: the fewest tokens whose time for what is left (a fraction f)
 * is within `left` seconds; its width when none is. */
static uint32_t arbiter__min(const struct arbiter__jjob *j, double f, double left)
{
    if (!(left > 1e-9))
        return j->width;
    uint32_t lo = 1, hi = j->width;
    if (f * arbiter__time(j, hi) > left)
        return j->width;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (f * arbiter__time(j, mid) <= left)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* A shape as the plan runs it: its conservative work and path (scale x mean + k sd) or its
 * means (then a shape without alpha is placed at the bounds' mean, Verma's estimate). */
static void arbiter__jjob_set(struct arbiter__jjob *j, double k, const struct arbiter_shape *s,
                              bool conservative)
{
    double w = conservative ? arbiter_shape_work(s, k) : s->work;
    double p = conservative ? arbiter_shape_path(s, k) : s->path;
    j->work = w > 0 ? w : 0;
    j->path = p > 0 ? p : 0;
    j->width = s->width > 0 ? s->width : 1;
    double a = arbiter_shape_alpha(s);
    j->alpha = a >= 0 ? a : conservative ? -1 : 0.5;
}

/* Free tokens at time t and the next time they change (INFINITY: never). */
static uint32_t arbiter__cap_at(const struct arbiter__joint *p, double t, double *next)
{
    double reserved = 0;
    *next = INFINITY;
    for (size_t i = 0; p->plan != NULL && i < p->plan->n; i++) {
        if (i > 0 && !(p->plan->t[i] > p->plan->t[i - 1]))
            continue;
        if (p->plan->t[i] <= t + 1e-9)
            reserved = p->plan->tokens[i];
        else {
            *next = p->plan->t[i];
            break;
        }
    }
    double f = (double)p->capacity - reserved;
    return f > 0 ? (uint32_t)f : 0;
}

/* Runs the plan over jobs[0..m) (m = n, or n + 1 with the new job last) and leaves each job's
 * finish in fin[] (INFINITY: never). On g tokens a job does 1 / T(g) of itself per second, T its
 * time on g tokens; grants change when a job finishes or the free tokens do. Deterministic: the
 * arbiter orders by deadline, then id. */
static void arbiter__joint_run(struct arbiter__joint *p, size_t m)
{
    size_t act = 0;
    for (size_t i = 0; i < m; i++) {
        p->rem[i] = p->jobs[i].work > 0 ? 1 : 0;
        p->fin[i] = p->rem[i] > 0 ? INFINITY : 0;
        if (p->rem[i] > 0)
            p->idx[act++] = i;
    }
    double t = 0;
    while (act > 0) {
        double next;
        uint32_t cap = arbiter__cap_at(p, t, &next);
        for (size_t a = 0; a < act; a++) {
            const struct arbiter__jjob *j = &p->jobs[p->idx[a]];
            struct arbiter_job *x = &p->arb[a];
            memset(x, 0, sizeof *x);
            x->id = j->id;
            /* a job with no deadline of its own (the new one, behind every admitted job) has
               no minimum; the others MinEDF's for what is left */
            if (isfinite(j->deadline)) {
                int64_t d = (int64_t)llround(j->deadline * 1000.0);
                x->deadline = d != 0 ? d : 1;
                x->minimum = arbiter__min(j, p->rem[p->idx[a]], j->deadline - t);
            }
            x->wanted = x->width = j->width;
        }
        arbiter_allocate(ARBITER_MINEDF_WC, cap, p->arb, act, p->order);
        double dt = next - t;
        for (size_t a = 0; a < act; a++) {
            double T = arbiter__time(&p->jobs[p->idx[a]], p->arb[a].grant);
            if (isfinite(T) && p->rem[p->idx[a]] * T < dt)
                dt = p->rem[p->idx[a]] * T;
        }
        if (!isfinite(dt))
            return; /* nothing runs, ever: the rest never finish */
        t += dt;
        size_t keep = 0;
        for (size_t a = 0; a < act; a++) {
            size_t i = p->idx[a];
            double T = arbiter__time(&p->jobs[i], p->arb[a].grant);
            if (isfinite(T))
                p->rem[i] -= dt / T;
            if (p->rem[i] <= 1e-9)
                p->fin[i] = t;
            else
                p->idx[keep++] = i;
        }
        act = keep;
    }
}

/* The new job (jobs[n]) with deadline d: its finish, and the first admitted job (deadline
 * order) that met its deadline without it and misses it with it (0: none). */
static uint64_t arbiter__joint_try(struct arbiter__joint *p, double d, double *finish)
{
    p->jobs[p->n].deadline = d;
    arbiter__joint_run(p, p->n + 1);
    *finish = p->fin[p->n];
    for (size_t r = 0; r < p->n; r++)
        if (p->base[r] <= p->jobs[r].deadline + 1e-9 && p->fin[r] > p->jobs[r].deadline + 1e-9)
            return p->jobs[r].id;
    return 0;
}

static bool arbiter__joint_ok(struct arbiter__joint *p, double d, double *finish)
{
    return arbiter__joint_try(p, d, finish) == 0 && *finish <= d + 1e-9;
}

/* The new job's median finish at deadline d: the same plan with its mean shape. */
static double arbiter__joint_p50(struct arbiter__joint *p, const struct arbiter__jjob *mean,
                                 double d)
{
    struct arbiter__jjob cons = p->jobs[p->n];
    p->jobs[p->n] = *mean;
    p->jobs[p->n].deadline = d;
    arbiter__joint_run(p, p->n + 1);
    double f = p->fin[p->n];
    p->jobs[p->n] = cons;
    return f;
}

static void arbiter__joint_close(struct arbiter__joint *p)
{
    mem_free(p->jobs);
    mem_free(p->base);
    mem_free(p->rem);
    mem_free(p->fin);
    mem_free(p->arb);
    mem_free(p->order);
    mem_free(p->idx);
}

int arbiter_admit_joint(double k, uint32_t capacity, const struct arbiter_reserve *plan,
                        const struct arbiter_load *load, size_t n, const struct arbiter_shape *job,
                        double deadline, struct arbiter_quote *out)
{
    memset(out, 0, sizeof *out);
    if (!(job->work > 0) || capacity == 0)
        return ERR_INVAL;
    k = k > 0 ? k : ARBITER_K_DEFAULT;
    struct arbiter__joint p = {.capacity = capacity, .plan = plan, .n = n};
    size_t m = n + 1;
    p.jobs = mem_calloc(m, sizeof *p.jobs);
    p.base = mem_calloc(m, sizeof *p.base);
    p.rem = mem_calloc(m, sizeof *p.rem);
    p.fin = mem_calloc(m, sizeof *p.fin);
    p.arb = mem_calloc(m, sizeof *p.arb);
    p.order = mem_calloc(m, sizeof *p.order);
    p.idx = mem_calloc(m, sizeof *p.idx);
    if (p.jobs == NULL || p.base == NULL || p.rem == NULL || p.fin == NULL || p.arb == NULL ||
        p.order == NULL || p.idx == NULL) {
        arbiter__joint_close(&p);
        return ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) { /* insertion sort by deadline, then id */
        struct arbiter__jjob x = {.id = load[i].id, .deadline = load[i].deadline};
        arbiter__jjob_set(&x, k, &load[i].remain, true);
        size_t j = i;
        while (j > 0 && (p.jobs[j - 1].deadline > x.deadline ||
                         (p.jobs[j - 1].deadline == x.deadline && p.jobs[j - 1].id > x.id))) {
            p.jobs[j] = p.jobs[j - 1];
            j--;
        }
        p.jobs[j] = x;
    }
    arbiter__joint_run(&p, n);
    memcpy(p.base, p.fin, n * sizeof *p.base);
    struct arbiter__jjob mean = {.id = UINT64_MAX};
    arbiter__jjob_set(&mean, k, job, false);
    p.jobs[n].id = UINT64_MAX; /* after every admitted job on equal deadlines */
    arbiter__jjob_set(&p.jobs[n], k, job, true);

    /* the earliest feasible finish: never before its time alone on its width, which often is
       admitted at once; else between that and its finish behind every admitted job (no
       deadline of its own: it takes nobody's minimum), by bisection to a thousandth */
    double lo = arbiter__time(&p.jobs[n], p.jobs[n].width), hi, f;
    if (arbiter__joint_ok(&p, lo, &f)) {
        hi = lo;
    } else {
        double f_last;
        arbiter__joint_try(&p, INFINITY, &f_last);
        hi = f_last;
        for (size_t r = 0; r < n; r++)
            hi = p.jobs[r].deadline > hi ? p.jobs[r].deadline : hi;
        for (int it = 0; isfinite(hi) && !arbiter__joint_ok(&p, hi, &f); it++)
            hi = it < 8 ? 2 * hi + 1 : INFINITY; /* its own minimum last in line broke one */
    }
    for (int it = 0; it < ARBITER_JOINT_BISECT && isfinite(hi) && hi - lo > 1e-3 * (1 + hi); it++) {
        double mid = (lo + hi) / 2;
        if (arbiter__joint_ok(&p, mid, &f))
            hi = mid;
        else
            lo = mid;
    }
    out->eff = hi;
    out->eff_p50 = isfinite(hi) ? arbiter__joint_p50(&p, &mean, hi) : INFINITY;
    if (deadline > 0) {
        out->breaks = arbiter__joint_try(&p, deadline, &out->finish);
        out->admit = out->breaks == 0 && out->finish <= deadline + 1e-9;
        out->finish_p50 = arbiter__joint_p50(&p, &mean, deadline);
    } else {
        arbiter__joint_try(&p, hi, &out->finish);
        out->finish_p50 = out->eff_p50;
    }
    arbiter__joint_close(&p);
    return 0;
}
