/* arbiter.c - EDF, MinEDF, MinEDF-WC, admission and pricing (see arbiter.h). */
#include "rm/arbiter.h"

#include "common/err.h"
#include "common/mem.h"

#include <math.h>
#include <string.h>

/* ---- ARIA bounds ---- */

double arbiter_time_low(const struct arbiter_shape *s, double k)
{
    if (!(s->work > 0))
        return 0;
    k = k < 1 ? 1 : k;
    double w = s->work / k;
    return w > s->path ? w : s->path;
}

double arbiter_time_up(const struct arbiter_shape *s, double k)
{
    if (!(s->work > 0))
        return 0;
    k = k < 1 ? 1 : k;
    double path = s->path < s->work ? s->path : s->work;
    double up = (s->work - path) / k + path;
    double low = arbiter_time_low(s, k);
    return up > low ? up : low;
}

double arbiter_time_avg(const struct arbiter_shape *s, double k)
{
    return (arbiter_time_low(s, k) + arbiter_time_up(s, k)) / 2;
}

double arbiter_time_p50(const struct arbiter_shape *s, double k)
{
    double w = s->width >= 1 ? (double)s->width : 1;
    k = k > w ? w : k;
    double low = arbiter_time_low(s, k), up = arbiter_time_up(s, k);
    double a = arbiter_shape_alpha(s);
    return low + (a >= 0 ? a : 0.5) * (up - low);
}

uint32_t arbiter_min_tokens(const struct arbiter_shape *s, double left)
{
    if (!(s->work > 0) || s->width == 0)
        return 0;
    /* the estimate falls as k grows: binary search for the first k that meets `left` */
    uint32_t lo = 1, hi = s->width;
    if (arbiter_time_avg(s, hi) > left)
        return s->width;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (arbiter_time_avg(s, mid) <= left)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- allocation ---- */

const char *arbiter_policy_name(enum arbiter_policy p)
{
    static const char *const names[] = {"fcfs", "edf", "minedf", "minedf_wc"};
    return (unsigned)p < 4 ? names[p] : "?";
}

uint32_t arbiter_deadline_minimum(bool asks, uint32_t raw, uint32_t wanted,
                                  const struct arbiter_shape *remain, double left_s)
{
    if (asks || remain == NULL)
        return raw != 0 && raw < wanted ? raw : wanted;
    return arbiter_min_tokens(remain, left_s);
}

int arbiter_policy_parse(const char *name)
{
    for (int p = ARBITER_FCFS; p <= ARBITER_MINEDF_WC; p++) {
        if (strcmp(name, arbiter_policy_name((enum arbiter_policy)p)) == 0)
            return p;
    }
    return -1;
}

/* 0: admitted deadline job, 1: best-effort job with a deadline, 2: no deadline. */
static int arbiter__class(const struct arbiter_job *j)
{
    return j->deadline == 0 ? 2 : j->best_effort ? 1 : 0;
}

static bool arbiter__before(enum arbiter_policy p, const struct arbiter_job *a,
                            const struct arbiter_job *b)
{
    if (p != ARBITER_FCFS) {
        int ca = arbiter__class(a), cb = arbiter__class(b);
        if (ca != cb)
            return ca < cb;
        if (ca < 2 && a->deadline != b->deadline)
            return a->deadline < b->deadline;
    }
    return a->id < b->id;
}

/* Heapsort of order[0..n) by arbiter__before: in place, no allocation, O(n log n). */
static void arbiter__sift(enum arbiter_policy p, const struct arbiter_job *jobs, size_t *order,
                          size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && arbiter__before(p, &jobs[order[c]], &jobs[order[c + 1]]))
            c++;
        if (!arbiter__before(p, &jobs[order[root]], &jobs[order[c]]))
            return;
        size_t t = order[root];
        order[root] = order[c];
        order[c] = t;
        root = c;
    }
}

static void arbiter__sort(enum arbiter_policy p, const struct arbiter_job *jobs, size_t *order,
                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n / 2; i-- > 0;)
        arbiter__sift(p, jobs, order, i, n);
    for (size_t end = n; end-- > 1;) {
        size_t t = order[0];
        order[0] = order[end];
        order[end] = t;
        arbiter__sift(p, jobs, order, 0, end);
    }
}

static uint32_t arbiter__cap(enum arbiter_policy p, const struct arbiter_job *j)
{
    if (p == ARBITER_FCFS || j->deadline == 0)
        return j->wanted;
    uint32_t w = j->width != 0 ? j->width : j->wanted;
    return w > j->wanted ? w : j->wanted;
}

static uint32_t arbiter__give(struct arbiter_job *j, uint32_t cap, uint32_t want, uint32_t *left)
{
    uint32_t room = cap > j->grant ? cap - j->grant : 0;
    uint32_t g = want < room ? want : room;
    g = g < *left ? g : *left;
    j->grant += g;
    *left -= g;
    return g;
}

/* Jobs without a deadline share `left` in proportion to their weights, each up to what it
 * wants: water-filling in whole tokens; remainders go one by one in `order`. */
static void arbiter__share(enum arbiter_policy p, struct arbiter_job *jobs, const size_t *order,
                           size_t n, uint32_t *left)
{
    while (*left > 0) {
        double wsum = 0;
        for (size_t i = 0; i < n; i++) {
            struct arbiter_job *j = &jobs[order[i]];
            if (j->deadline == 0 && j->grant < arbiter__cap(p, j))
                wsum += j->weight > 0 ? j->weight : 1;
        }
        if (wsum == 0)
            return;
        uint32_t pool = *left, given = 0;
        for (size_t i = 0; i < n; i++) {
            struct arbiter_job *j = &jobs[order[i]];
            if (j->deadline != 0)
                continue;
            double share = floor((double)pool * (j->weight > 0 ? j->weight : 1) / wsum);
            given += arbiter__give(j, arbiter__cap(p, j), (uint32_t)share, left);
        }
        if (given > 0)
            continue;
        for (size_t i = 0; i<n && * left> 0; i++) {
            struct arbiter_job *j = &jobs[order[i]];
            if (j->deadline == 0)
                arbiter__give(j, arbiter__cap(p, j), 1, left);
        }
    }
}

void arbiter_allocate(enum arbiter_policy policy, uint32_t capacity, struct arbiter_job *jobs,
                      size_t n, size_t *order)
{
    arbiter_allocate_plan(policy, capacity, 0, jobs, n, order);
}

/* Gives every job of class `cls` (or any class when cls < 0) that has a reservation the extra
 * it may have beyond it, from *left. Returns nothing; part of the minimum. */
static void arbiter__extras(enum arbiter_policy p, struct arbiter_job *jobs, const size_t *order,
                            size_t n, uint32_t *left)
{
    for (size_t i = 0; i<n && * left> 0; i++) {
        struct arbiter_job *j = &jobs[order[i]];
        if (j->extra == 0)
            continue;
        uint64_t upto = (uint64_t)j->reserved + j->extra;
        uint32_t want = upto > j->grant ? (uint32_t)(upto - j->grant) : 0;
        uint32_t cap = arbiter__cap(p, j);
        cap = cap > j->reserved ? cap : j->reserved;
        j->min_part += arbiter__give(j, cap, want, left);
    }
}

void arbiter_allocate_plan(enum arbiter_policy policy, uint32_t capacity, uint32_t held_back,
                           struct arbiter_job *jobs, size_t n, size_t *order)
{
    arbiter__sort(policy, jobs, order, n);
    uint32_t left = capacity;
    for (size_t i = 0; i < n; i++)
        jobs[i].grant = jobs[i].min_part = 0;

    /* Morpheus §6: a run's reservation comes before anything else (up to what it can use) */
    for (size_t i = 0; i < n; i++) {
        struct arbiter_job *j = &jobs[order[i]];
        if (j->reserved > 0)
            j->min_part = arbiter__give(j, arbiter__cap(policy, j), j->reserved, &left);
    }
    uint32_t hb = held_back < left ? held_back : left;
    left -= hb;

    if (policy == ARBITER_FCFS || policy == ARBITER_EDF) {
        /* nothing is taken back: every job keeps what it holds (trimmed to what it may have),
         * then the free tokens go out in order */
        arbiter__extras(policy, jobs, order, n, &left);
        left += hb;
        for (size_t i = 0; i < n; i++) {
            struct arbiter_job *j = &jobs[order[i]];
            arbiter__give(j, arbiter__cap(policy, j), j->held, &left);
        }
        for (size_t i = 0; i < n; i++) {
            struct arbiter_job *j = &jobs[order[i]];
            arbiter__give(j, arbiter__cap(policy, j), UINT32_MAX, &left);
            j->min_part = j->grant;
        }
        return;
    }

    /* admitted jobs first, minimums then spare, as admission's model assumed them; then
     * best-effort jobs with a deadline the same way */
    for (int cls = 0; cls < 2; cls++) {
        for (size_t i = 0; i < n; i++) { /* MinEDF: minimums in EDF order */
            struct arbiter_job *j = &jobs[order[i]];
            if (j->deadline != 0 && arbiter__class(j) == cls && j->minimum > j->grant)
                j->min_part +=
                    arbiter__give(j, arbiter__cap(policy, j), j->minimum - j->grant, &left);
        }
        if (cls == 0) {
            /* Morpheus §7: reprovisioning from what is free, then from reservations whose
             * runs are not here now */
            arbiter__extras(policy, jobs, order, n, &left);
            arbiter__extras(policy, jobs, order, n, &hb);
            left += hb; /* lent as spare from here on, reclaimed when its run starts */
            hb = 0;
        }
        for (size_t i = 0; i < n && policy == ARBITER_MINEDF_WC; i++) { /* spare, EDF order */
            struct arbiter_job *j = &jobs[order[i]];
            if (j->deadline != 0 && arbiter__class(j) == cls)
                arbiter__give(j, arbiter__cap(policy, j), UINT32_MAX, &left);
        }
    }
    arbiter__share(policy, jobs, order, n, &left);
}

/* ---- admission: a fluid model of the virtual cluster over time ---- */

/* Free tokens over time: segment i covers [t[i], t[i+1]) with free[i] tokens; the last segment
 * runs forever. */
struct arbiter__profile {
    double *t;
    double *free;
    size_t n, cap;
};

static int arbiter__profile_init(struct arbiter__profile *p, size_t cap, double capacity)
{
    p->t = mem_alloc(cap * sizeof *p->t);
    p->free = mem_alloc(cap * sizeof *p->free);
    p->cap = cap;
    p->n = 1;
    if (p->t == NULL || p->free == NULL)
        return ERR_NOMEM;
    p->t[0] = 0;
    p->free[0] = capacity;
    return 0;
}

static void arbiter__profile_close(struct arbiter__profile *p)
{
    mem_free(p->t);
    mem_free(p->free);
    memset(p, 0, sizeof *p);
}

static void arbiter__profile_copy(struct arbiter__profile *dst, const struct arbiter__profile *src)
{
    memcpy(dst->t, src->t, src->n * sizeof *src->t);
    memcpy(dst->free, src->free, src->n * sizeof *src->free);
    dst->n = src->n;
}

/* Splits the segment holding time x so that a segment starts at x; returns its index. The
 * caller sized the arrays: two splits per job placed. */
static size_t arbiter__profile_split(struct arbiter__profile *p, double x)
{
    size_t i = p->n - 1;
    while (i > 0 && p->t[i] > x)
        i--;
    if (p->t[i] == x)
        return i;
    memmove(&p->t[i + 2], &p->t[i + 1], (p->n - i - 1) * sizeof *p->t);
    memmove(&p->free[i + 2], &p->free[i + 1], (p->n - i - 1) * sizeof *p->free);
    p->t[i + 1] = x;
    p->free[i + 1] = p->free[i];
    p->n++;
    return i + 1;
}

/* Places `work` token-seconds at up to `width` tokens from time 0 into the free profile (when
 * `take`, the tokens are used up) and returns the finish: the time the work is done plus the
 * Graham tail path·(1 − 1/k̄), at least `path`; *p50 (may be NULL) receives Verma's mean of the
 * lower and upper bound. With alpha >= 0 (the job's list schedule's place between the bounds)
 * both are low + alpha·(up − low). */
static double arbiter__place(struct arbiter__profile *p, double work, double path, double width,
                             double alpha, bool take, double *p50)
{
    double done = 0, busy = 0, t_end = 0;
    for (size_t i = 0; done < work; i++) {
        double rate = p->free[i] < width ? p->free[i] : width;
        double t0 = p->t[i];
        double t1 = i + 1 < p->n ? p->t[i + 1] : INFINITY;
        if (rate <= 1e-9 && i + 1 >= p->n) {
            /* a plan that reserves everything for good: the work never finishes */
            if (p50 != NULL)
                *p50 = INFINITY;
            return INFINITY;
        }
        if (rate <= 1e-9)
            continue;
        double need = (work - done) / rate;
        double end = t0 + need < t1 ? t0 + need : t1;
        done += (end - t0) * rate;
        busy += end - t0;
        t_end = end;
        if (end >= t1 && done < work)
            continue;
        done = work;
        if (take) {
            /* use up the rate over [t0, end): split at end, then lower every segment in
             * between (only the ones this job ran in, with their own rates) */
            arbiter__profile_split(p, end);
        }
        break;
    }
    if (take) {
        double left = work;
        for (size_t i = 0; i < p->n && left > 1e-12; i++) {
            double t1 = i + 1 < p->n ? p->t[i + 1] : INFINITY;
            double rate = p->free[i] < width ? p->free[i] : width;
            if (rate <= 1e-9)
                continue;
            double span = t1 - p->t[i];
            double use = rate * span < left ? rate * span : left;
            left -= use;
            p->free[i] -= use / span;
            if (p->free[i] < 1e-9)
                p->free[i] = 0;
        }
    }
    double kbar = busy > 0 ? work / busy : 1;
    kbar = kbar < 1 ? 1 : kbar;
    double up = t_end + path * (1 - 1 / kbar);
    double low = t_end > path ? t_end : path;
    up = up > low ? up : low;
    if (alpha >= 0) {
        double at = low + alpha * (up - low);
        if (p50 != NULL)
            *p50 = at;
        return at;
    }
    if (p50 != NULL)
        *p50 = (low + up) / 2;
    return up;
}

struct arbiter__ctx {
    double k;
    const struct arbiter_load *load;
    size_t n;
    size_t *order; /* load sorted by deadline, then id */
    double *base;  /* conservative finish of each (sorted) job without the new one */
    struct arbiter__profile prof, work;
};

static double arbiter__scale(const struct arbiter_shape *s)
{
    return s->scale > 0 && isfinite(s->scale) ? s->scale : 1;
}

double arbiter_shape_work(const struct arbiter_shape *s, double k)
{
    return arbiter__scale(s) * s->work + k * s->work_sd;
}

double arbiter_shape_path(const struct arbiter_shape *s, double k)
{
    return arbiter__scale(s) * s->path + k * s->path_sd;
}

double arbiter_shape_alpha(const struct arbiter_shape *s)
{
    if (!s->has_alpha || !isfinite(s->alpha))
        return -1;
    return s->alpha < 0 ? 0 : s->alpha > 1 ? 1 : s->alpha;
}

static double arbiter__width(const struct arbiter_shape *s)
{
    return s->width > 0 ? (double)s->width : 1;
}

/* Runs the EDF fluid model with the new job placed at sorted position `pos` (0..n); fills the
 * new job's conservative and median finish and returns the id of the first admitted job that
 * met its deadline before and misses it now (0: none). `fin` (may be NULL) receives every
 * sorted job's conservative finish. */
static uint64_t arbiter__run(struct arbiter__ctx *c, const struct arbiter_shape *job, size_t pos,
                             double *finish, double *p50, double *fin)
{
    uint64_t broken = 0;
    arbiter__profile_copy(&c->work, &c->prof);
    for (size_t r = 0; r <= c->n; r++) {
        if (r == pos) {
            /* the median is measured on the same free profile, without taking */
            arbiter__place(&c->work, job->work, job->path, arbiter__width(job),
                           arbiter_shape_alpha(job), false, p50);
            *finish = arbiter__place(&c->work, arbiter_shape_work(job, c->k),
                                     arbiter_shape_path(job, c->k), arbiter__width(job),
                                     arbiter_shape_alpha(job), true, NULL);
        }
        if (r == c->n)
            break;
        const struct arbiter_load *l = &c->load[c->order[r]];
        double f = arbiter__place(&c->work, arbiter_shape_work(&l->remain, c->k),
                                  arbiter_shape_path(&l->remain, c->k), arbiter__width(&l->remain),
                                  arbiter_shape_alpha(&l->remain), true, NULL);
        if (fin != NULL)
            fin[r] = f;
        if (c->base != NULL && broken == 0 && c->base[r] <= l->deadline + 1e-9 &&
            f > l->deadline + 1e-9)
            broken = l->id;
    }
    return broken;
}

static void arbiter__ctx_close(struct arbiter__ctx *c)
{
    mem_free(c->order);
    mem_free(c->base);
    arbiter__profile_close(&c->prof);
    arbiter__profile_close(&c->work);
}

static int arbiter__ctx_init(struct arbiter__ctx *c, double k, uint32_t capacity,
                             const struct arbiter_reserve *plan, const struct arbiter_load *load,
                             size_t n)
{
    memset(c, 0, sizeof *c);
    c->k = k > 0 ? k : ARBITER_K_DEFAULT;
    c->load = load;
    c->n = n;
    c->order = mem_alloc((n + 1) * sizeof *c->order);
    c->base = mem_alloc((n + 1) * sizeof *c->base);
    size_t segs = 2 * (n + 1) + 2 + (plan != NULL ? 2 * plan->n : 0);
    if (c->order == NULL || c->base == NULL ||
        arbiter__profile_init(&c->prof, segs, capacity) != 0 ||
        arbiter__profile_init(&c->work, segs, capacity) != 0) {
        arbiter__ctx_close(c);
        return ERR_NOMEM;
    }
    for (size_t i = 0; plan != NULL && i < plan->n; i++) {
        /* what the plan reserves is not there for admitted or new jobs (Morpheus §6) */
        if (i > 0 && !(plan->t[i] > plan->t[i - 1]))
            continue;
        size_t at = arbiter__profile_split(&c->prof, plan->t[i] > 0 ? plan->t[i] : 0);
        double f = (double)capacity - plan->tokens[i];
        for (size_t j = at; j < c->prof.n; j++)
            c->prof.free[j] = f > 0 ? f : 0;
    }
    for (size_t i = 0; i < n; i++) { /* insertion sort: admitted jobs per cluster are few */
        size_t j = i;
        while (j > 0 && (load[c->order[j - 1]].deadline > load[i].deadline ||
                         (load[c->order[j - 1]].deadline == load[i].deadline &&
                          load[c->order[j - 1]].id > load[i].id))) {
            c->order[j] = c->order[j - 1];
            j--;
        }
        c->order[j] = i;
    }
    /* the baseline: every admitted job's finish without the new one */
    double *base = c->base;
    c->base = NULL;
    struct arbiter_shape none = {.width = 1};
    double f, m;
    arbiter__run(c, &none, n, &f, &m, base);
    c->base = base;
    return 0;
}

/* Position of a job with deadline d in the sorted load: after every job due at or before d. */
static size_t arbiter__pos(const struct arbiter__ctx *c, double d)
{
    size_t p = 0;
    while (p < c->n && c->load[c->order[p]].deadline <= d)
        p++;
    return p;
}

struct arbiter__eff {
    double d, finish, p50;
    size_t pos;
};

/* The earliest feasible finish: for each position, the deadline the job would need there
 * (its own finish, but not before the job ahead of it is due); the smallest that is admitted.
 * Behind every admitted job it delays nobody, so there is always one. */
static void arbiter__earliest(struct arbiter__ctx *c, const struct arbiter_shape *job,
                              struct arbiter__eff *e)
{
    e->d = INFINITY;
    for (size_t pos = 0; pos <= c->n; pos++) {
        double f, m;
        arbiter__run(c, job, pos, &f, &m, NULL);
        double d = f;
        if (pos > 0 && c->load[c->order[pos - 1]].deadline > d)
            d = c->load[c->order[pos - 1]].deadline;
        if (d >= e->d)
            continue;
        size_t real = arbiter__pos(c, d); /* where that deadline really sorts */
        double f2 = f, m2 = m;
        uint64_t broken = real == pos ? arbiter__run(c, job, pos, &f2, &m2, NULL)
                                      : arbiter__run(c, job, real, &f2, &m2, NULL);
        if (broken != 0 || f2 > d + 1e-9)
            continue;
        e->d = d;
        e->finish = f2;
        e->p50 = m2;
        e->pos = real;
    }
}

int arbiter_admit(double k, uint32_t capacity, const struct arbiter_load *load, size_t n,
                  const struct arbiter_shape *job, double deadline, struct arbiter_quote *out)
{
    return arbiter_admit_plan(k, capacity, NULL, load, n, job, deadline, out);
}

int arbiter_admit_plan(double k, uint32_t capacity, const struct arbiter_reserve *plan,
                       const struct arbiter_load *load, size_t n, const struct arbiter_shape *job,
                       double deadline, struct arbiter_quote *out)
{
    memset(out, 0, sizeof *out);
    if (!(job->work > 0) || capacity == 0)
        return ERR_INVAL;
    struct arbiter__ctx c;
    int rc = arbiter__ctx_init(&c, k, capacity, plan, load, n);
    if (rc != 0)
        return rc;
    struct arbiter__eff e;
    arbiter__earliest(&c, job, &e);
    out->eff = e.d;
    out->eff_p50 = e.p50;
    if (deadline > 0) {
        uint64_t broken =
            arbiter__run(&c, job, arbiter__pos(&c, deadline), &out->finish, &out->finish_p50, NULL);
        out->admit = broken == 0 && out->finish <= deadline + 1e-9;
        out->breaks = broken;
    } else {
        out->finish = e.finish;
        out->finish_p50 = e.p50;
    }
    arbiter__ctx_close(&c);
    return 0;
}

int arbiter_price_curve(double k, uint32_t capacity, const struct arbiter_load *load, size_t n,
                        const struct arbiter_shape *job, struct arbiter_price *out, size_t npoints)
{
    if (!(job->work > 0) || capacity == 0 || npoints < 2)
        return ERR_INVAL;
    npoints = npoints > ARBITER_PRICE_POINTS_MAX ? ARBITER_PRICE_POINTS_MAX : npoints;
    struct arbiter__ctx c;
    int rc = arbiter__ctx_init(&c, k, capacity, NULL, load, n);
    if (rc != 0)
        return rc;
    double *fin = mem_alloc((n + 1) * sizeof *fin);
    if (fin == NULL) {
        arbiter__ctx_close(&c);
        return ERR_NOMEM;
    }
    struct arbiter__eff e;
    arbiter__earliest(&c, job, &e);
    double alone = arbiter_time_up(job, arbiter__width(job));
    alone = alone > 1e-9 ? alone : 1e-9;
    double step = 4 * alone / (double)(npoints - 1);
    size_t w = 0;
    for (size_t i = 0; i < npoints; i++) {
        double d = e.d + step * (double)i, f, m;
        if (arbiter__run(&c, job, arbiter__pos(&c, d), &f, &m, fin) != 0 || f > d + 1e-9)
            continue; /* that deadline would make an admitted job late: not on offer */
        double slack = (d - e.d) / alone; /* MRM: the deadline chosen minus the earliest */
        double price = job->work / (slack + 1);
        /* eq. 13's second term: what the jump costs the jobs it passes */
        for (size_t r = 0; r < n; r++) {
            const struct arbiter_load *l = &load[c.order[r]];
            double before = (l->deadline - c.base[r]) / alone;
            double after = (l->deadline - fin[r]) / alone;
            before = before > 0 ? before : 0;
            after = after > 0 ? after : 0;
            double p = l->remain.work;
            double extra = p / (after + 1) - p / (before + 1);
            price += extra > 0 ? extra : 0;
        }
        out[w].deadline = d;
        out[w].slack = slack;
        out[w].price = price;
        w++;
    }
    mem_free(fin);
    arbiter__ctx_close(&c);
    return (int)w;
}

double arbiter_price_at(const struct arbiter_shape *job, double eff, double deadline)
{
    if (!(job->work > 0))
        return 0;
    double alone = arbiter_time_up(job, arbiter__width(job));
    alone = alone > 1e-9 ? alone : 1e-9;
    double slack = (deadline - eff) / alone;
    return job->work / ((slack > 0 ? slack : 0) + 1);
}
