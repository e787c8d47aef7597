/* lowcost.c - LowCost (Morpheus §6.3) and the greedy baseline over a periodic plan (see
 * lowcost.h). */
#include "rm/lowcost.h"

#include "common/err.h"
#include "common/heap.h"
#include "common/mem.h"

#include <math.h>
#include <string.h>

/* A window of more end points than this is searched with a stride first, then step by step
 * around the best coarse end point. */
#define LOWCOST__COARSE 64u
/* A stage is placed in at most about this many pieces: one token-step each, or demand/256 for a
 * stage of more than 256 token-steps, so a huge R* does not make a placement slow. */
#define LOWCOST__PIECES 256.0

/* The state of one placement: the job's view of the plan folded onto its period. */
struct lowcost__ctx {
    uint32_t period, release;
    double cap, eps;
    double *base;     /* [period]: the largest load among the instances at each offset */
    double *alloc;    /* [period]: the candidate being evaluated (zero outside it) */
    double *best;     /* [period]: the best candidate so far */
    struct heap heap; /* steps of the current stage with room left (values point into alloc),
                       * lowest level first; room for `period` entries is reserved */
    double *demand;   /* [m]: the non-zero stages, in order */
    double *cum;      /* [m]: cum[k] = demand[0] + ... + demand[k] */
    uint32_t m;       /* non-zero stages */
    double best_pk;   /* peak level of best, INFINITY when none */
    uint32_t best_e;  /* end (exclusive) of best */
    int rc;           /* ERR_NOMEM when a push failed (it cannot: the room is reserved) */
};

static double lowcost__eps(double cap)
{
    return 1e-9 * (cap > 1 ? cap : 1);
}

static int lowcost__check_plan(const struct lowcost_plan *plan)
{
    if (!plan || !plan->load || plan->nsteps == 0 || plan->nsteps > LOWCOST_MAX_STEPS ||
        !(plan->capacity > 0) || !isfinite(plan->capacity))
        return ERR_INVAL;
    return 0;
}

static int lowcost__check(const struct lowcost_plan *plan, const struct lowcost_job *j,
                          const double *resv)
{
    if (lowcost__check_plan(plan) != 0 || !j || !resv || !j->demand || j->nstages == 0 ||
        j->nstages > LOWCOST_MAX_STEPS)
        return ERR_INVAL;
    if (j->period == 0 || j->period > plan->nsteps || plan->nsteps % j->period != 0)
        return ERR_INVAL;
    if (j->release >= j->deadline || j->deadline > j->period)
        return ERR_INVAL;
    for (uint32_t k = 0; k < j->nstages; k++)
        if (!(j->demand[k] >= 0) || !isfinite(j->demand[k]))
            return ERR_INVAL;
    return 0;
}

/* base[x] = max over instances i of load[x + i * period]: the cost an offset has for a periodic
 * job (§6.3, "Multiple instances"). */
static void lowcost__fold(const struct lowcost_plan *plan, uint32_t period, double *base)
{
    memcpy(base, plan->load, period * sizeof *base);
    for (uint32_t t = period; t < plan->nsteps; t++) {
        uint32_t x = t % period;
        if (plan->load[t] > base[x])
            base[x] = plan->load[t];
    }
}

static void lowcost__add(struct lowcost_plan *plan, uint32_t period, const double *resv,
                         double sign)
{
    double eps = lowcost__eps(plan->capacity);
    for (uint32_t x = 0; x < period; x++) {
        if (resv[x] == 0)
            continue;
        for (uint32_t t = x; t < plan->nsteps; t += period) {
            double v = plan->load[t] + sign * resv[x];
            /* taking a reservation back out leaves rounding noise where the load was zero */
            plan->load[t] = sign < 0 && v < eps && v > -eps ? 0 : v;
        }
    }
}

/* ---- LowCost ---- */

static double lowcost__level(const struct lowcost__ctx *c, uint32_t x)
{
    return c->base[x] + c->alloc[x];
}

/* Heap order: the lower level first; on a tie the later step, so a stage stays compact against
 * the stage after it. A step is in the heap at most once, so the order is total. The room for
 * `period` entries is reserved, so the push cannot fail. */
static int lowcost__push(struct lowcost__ctx *c, uint32_t x)
{
    int rc = heap_push_tie(&c->heap, heap_key_from_double(lowcost__level(c, x)),
                           UINT32_MAX - (uint64_t)x, &c->alloc[x]);
    if (rc != 0)
        c->rc = rc;
    return rc;
}

/* The step of the heap's first entry; the heap is not empty. */
static uint32_t lowcost__top(const struct lowcost__ctx *c)
{
    struct heap_entry e;
    heap_peek(&c->heap, &e);
    return (uint32_t)((const double *)e.value - c->alloc);
}

/* Room at step x for a stage that may use at most `width` tokens in one step. */
static double lowcost__room(const struct lowcost__ctx *c, uint32_t x, double width)
{
    double room = c->cap - lowcost__level(c, x);
    double w = width - c->alloc[x];
    return w < room ? w : room;
}

/* Places every stage for an allocation ending just before `end` into c->alloc (touching steps
 * [*lo, end)) and returns its peak level, or INFINITY when it does not fit or its peak exceeds
 * `bound` (the caller then only needs to clear [*lo, end)). */
static double lowcost__eval(struct lowcost__ctx *c, uint32_t end, double bound, uint32_t *lo)
{
    uint32_t tau_r = end - 1;
    double peak = 0;
    *lo = end;
    for (uint32_t k = c->m; k-- > 0;) {
        /* the time still available, from the release to tau_r; each earlier stage keeps one */
        uint32_t avail = tau_r + 1 - c->release;
        double want = (double)avail * c->demand[k] / c->cum[k];
        uint32_t len = want + 0.5 + 1e-9 >= avail ? avail : (uint32_t)floor(want + 0.5 + 1e-9);
        if (len < 1)
            len = 1;
        if (len > avail - k)
            len = avail - k;
        uint32_t tau_l = tau_r + 1 - len;
        double width = ceil(c->demand[k] - c->eps);
        double piece = c->demand[k] / LOWCOST__PIECES;
        double left = c->demand[k];
        uint32_t cur = tau_r + 1; /* the stage's leftmost step: none yet */
        if (piece < 1)
            piece = 1;
        heap_clear(&c->heap);
        while (left > c->eps) {
            /* eligible: the steps the stage already holds, and the one just left of them
             * (contiguity, §6.3); the first piece therefore goes to tau_r */
            double ext = 0;
            if (cur > tau_l)
                ext = lowcost__room(c, cur - 1, width);
            int stack = c->heap.len > 0 &&
                        (ext <= c->eps ||
                         lowcost__level(c, lowcost__top(c)) <= lowcost__level(c, cur - 1) + c->eps);
            uint32_t x;
            double room;
            if (stack) {
                x = lowcost__top(c);
                room = lowcost__room(c, x, width);
            } else if (ext > c->eps) {
                x = --cur;
                room = ext;
                if (cur < *lo)
                    *lo = cur;
            } else {
                return INFINITY;
            }
            double q = piece < left ? piece : left;
            q = q < room ? q : room;
            c->alloc[x] += q;
            left -= q;
            double lv = lowcost__level(c, x);
            if (lv > peak) {
                peak = lv;
                if (peak > bound)
                    return INFINITY;
            }
            int full = room - q <= c->eps;
            if (stack)
                heap_pop(&c->heap, NULL); /* its level changed: back in below unless full */
            if (!full && lowcost__push(c, x) != 0)
                return INFINITY;
        }
        tau_r = cur - 1;
    }
    return peak;
}

/* Evaluates one end point and keeps it when it beats the best so far (lower peak; on a tie the
 * earlier end). */
static void lowcost__try(struct lowcost__ctx *c, uint32_t end)
{
    uint32_t lo;
    double tol = c->eps;
    double pk = lowcost__eval(c, end, c->best_pk + tol, &lo);
    if (isfinite(pk) && (pk < c->best_pk - tol || (pk <= c->best_pk + tol && end < c->best_e))) {
        memset(c->best, 0, c->period * sizeof *c->best);
        memcpy(c->best + lo, c->alloc + lo, (end - lo) * sizeof *c->best);
        c->best_pk = pk;
        c->best_e = end;
    }
    memset(c->alloc + lo, 0, (end - lo) * sizeof *c->alloc);
}

static void lowcost__free(struct lowcost__ctx *c)
{
    mem_free(c->base);
    mem_free(c->alloc);
    mem_free(c->best);
    heap_close(&c->heap);
    mem_free(c->demand);
    mem_free(c->cum);
}

int lowcost_place(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv)
{
    int rc = lowcost__check(plan, j, resv);
    if (rc != 0)
        return rc;
    uint32_t m = 0;
    for (uint32_t k = 0; k < j->nstages; k++)
        m += j->demand[k] > 0;
    if (m == 0) {
        memset(resv, 0, j->period * sizeof *resv);
        return 0;
    }
    if (j->deadline - j->release < m)
        return ERR_FULL; /* every stage needs a step of its own */

    struct lowcost__ctx c;
    memset(&c, 0, sizeof c);
    c.period = j->period;
    c.release = j->release;
    c.cap = plan->capacity;
    c.eps = lowcost__eps(plan->capacity);
    c.m = m;
    c.best_pk = INFINITY;
    c.base = mem_calloc(j->period, sizeof *c.base);
    c.alloc = mem_calloc(j->period, sizeof *c.alloc);
    c.best = mem_calloc(j->period, sizeof *c.best);
    heap_init(&c.heap);
    c.demand = mem_calloc(m, sizeof *c.demand);
    c.cum = mem_calloc(m, sizeof *c.cum);
    if (!c.base || !c.alloc || !c.best || !c.demand || !c.cum ||
        heap_reserve(&c.heap, j->period) != 0) {
        lowcost__free(&c);
        return ERR_NOMEM;
    }
    lowcost__fold(plan, j->period, c.base);
    double sum = 0;
    for (uint32_t k = 0, i = 0; k < j->nstages; k++) {
        if (j->demand[k] > 0) {
            sum += j->demand[k];
            c.demand[i] = j->demand[k];
            c.cum[i++] = sum;
        }
    }

    /* every end point from the earliest possible (one step per stage) to the deadline; a long
     * window coarsely first, then step by step around the best coarse end point */
    uint32_t first = j->release + m, last = j->deadline, n = last - first + 1;
    uint32_t stride = n > LOWCOST__COARSE ? (n + LOWCOST__COARSE - 1) / LOWCOST__COARSE : 1;
    for (uint32_t e = first; e <= last; e += stride)
        lowcost__try(&c, e);
    if (stride > 1) {
        lowcost__try(&c, last);
        if (isfinite(c.best_pk)) {
            uint32_t from = c.best_e - first >= stride ? c.best_e - stride + 1 : first;
            uint32_t to = last - c.best_e >= stride ? c.best_e + stride - 1 : last;
            for (uint32_t e = from; e <= to; e++)
                lowcost__try(&c, e);
        } else {
            for (uint32_t e = first; e <= last; e++) /* a narrow fit the stride missed */
                lowcost__try(&c, e);
        }
    }
    if (c.rc != 0 || !isfinite(c.best_pk)) {
        rc = c.rc != 0 ? c.rc : ERR_FULL;
        lowcost__free(&c);
        return rc;
    }
    memcpy(resv, c.best, j->period * sizeof *resv);
    lowcost__add(plan, j->period, resv, 1);
    lowcost__free(&c);
    return 0;
}

/* ---- greedy ---- */

int lowcost_place_greedy(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv)
{
    int rc = lowcost__check(plan, j, resv);
    if (rc != 0)
        return rc;
    /* R* without its leading and trailing zero steps, which reserve nothing */
    uint32_t f = 0, l = j->nstages;
    while (f < l && j->demand[f] == 0)
        f++;
    while (l > f && j->demand[l - 1] == 0)
        l--;
    if (f == l) {
        memset(resv, 0, j->period * sizeof *resv);
        return 0;
    }
    uint32_t n = l - f;
    if (n > j->deadline - j->release)
        return ERR_FULL;
    double *base = mem_calloc(j->period, sizeof *base);
    if (!base)
        return ERR_NOMEM;
    lowcost__fold(plan, j->period, base);
    double lim = plan->capacity + lowcost__eps(plan->capacity);
    for (uint32_t s = j->release; s + n <= j->deadline; s++) {
        uint32_t i = 0;
        while (i < n && base[s + i] + j->demand[f + i] <= lim)
            i++;
        if (i == n) {
            memset(resv, 0, j->period * sizeof *resv);
            memcpy(resv + s, j->demand + f, n * sizeof *resv);
            lowcost__add(plan, j->period, resv, 1);
            mem_free(base);
            return 0;
        }
    }
    mem_free(base);
    return ERR_FULL;
}

/* ---- the plan ---- */

void lowcost_remove(struct lowcost_plan *plan, uint32_t period, const double *resv)
{
    if (lowcost__check_plan(plan) != 0 || !resv || period == 0 || period > plan->nsteps ||
        plan->nsteps % period != 0)
        return;
    lowcost__add(plan, period, resv, -1);
}

double lowcost_peak(const struct lowcost_plan *plan)
{
    double peak = 0;
    if (!plan || !plan->load)
        return 0;
    for (uint32_t t = 0; t < plan->nsteps; t++)
        if (plan->load[t] > peak)
            peak = plan->load[t];
    return peak;
}
