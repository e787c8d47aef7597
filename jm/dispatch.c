/* dispatch.c - tokens, opportunistic allowance and upgrades (see dispatch.h). */
#include "jm/dispatch.h"

#include <math.h>

#include "common/err.h"
#include "common/mem.h"

struct dispatch {
    struct dispatch_config cfg;
    size_t n;
    uint32_t tokens;
    size_t nreg, nopp;
    uint64_t ureg, uopp;    /* token units of the regular / opportunistic tasks in flight */
    size_t ndown;           /* downgrades so far */
    size_t nyield;          /* yields so far (dispatch_yield) */
    size_t reserve;         /* task holding the reservation, SIZE_MAX: none */
    int reserve_offered;    /* it was offered since the last dispatch_round */
    uint32_t *cost;         /* token units per task, 0: 1 */
    unsigned char *cls;     /* enum dispatch_class */
    unsigned char *running; /* started at the PN */
    uint64_t *seq;          /* dispatch order */
    uint64_t next_seq;
    /* The tasks in flight, in no order (fl_pos[task]: index in fl), so that upgrades and
       downgrades look at them only, not at the whole job (a job of a million tasks has a few
       hundred in flight). */
    size_t *fl, *fl_pos, nfl;
};

static void dispatch__fly(dispatch_t *d, size_t task)
{
    d->fl_pos[task] = d->nfl;
    d->fl[d->nfl++] = task;
}

static void dispatch__land(dispatch_t *d, size_t task)
{
    size_t i = d->fl_pos[task], last = d->fl[--d->nfl];
    d->fl[i] = last;
    d->fl_pos[last] = i;
}

void dispatch_config_default(struct dispatch_config *cfg)
{
    cfg->opp_factor = 1.0;
}

int dispatch_new(const struct dispatch_config *cfg, size_t ntasks, dispatch_t **out)
{
    *out = NULL;
    struct dispatch_config def;
    if (cfg == NULL) {
        dispatch_config_default(&def);
        cfg = &def;
    }
    if (!isfinite(cfg->opp_factor) || cfg->opp_factor < 0)
        return ERR_INVAL;
    dispatch_t *d = mem_calloc(1, sizeof *d);
    if (d == NULL)
        return ERR_NOMEM;
    d->cls = mem_calloc(ntasks + 1, 1);
    d->running = mem_calloc(ntasks + 1, 1);
    d->seq = mem_calloc(ntasks + 1, sizeof *d->seq);
    d->cost = mem_calloc(ntasks + 1, sizeof *d->cost);
    d->fl = mem_calloc(ntasks + 1, sizeof *d->fl);
    d->fl_pos = mem_calloc(ntasks + 1, sizeof *d->fl_pos);
    if (d->cls == NULL || d->running == NULL || d->seq == NULL || d->cost == NULL ||
        d->fl == NULL || d->fl_pos == NULL) {
        dispatch_destroy(&d);
        return ERR_NOMEM;
    }
    d->cfg = *cfg;
    d->n = ntasks;
    d->reserve = SIZE_MAX;
    *out = d;
    return 0;
}

void dispatch_destroy(dispatch_t **p)
{
    if (p == NULL || *p == NULL)
        return;
    mem_free((*p)->cls);
    mem_free((*p)->running);
    mem_free((*p)->seq);
    mem_free((*p)->cost);
    mem_free((*p)->fl);
    mem_free((*p)->fl_pos);
    mem_free(*p);
    *p = NULL;
}

void dispatch_set_tokens(dispatch_t *d, uint32_t tokens)
{
    d->tokens = tokens;
}

void dispatch_set_factor(dispatch_t *d, double opp_factor)
{
    if (isfinite(opp_factor) && opp_factor >= 0)
        d->cfg.opp_factor = opp_factor;
}

static void dispatch__count(dispatch_t *d, size_t task, int sign);

int dispatch_set_cost(dispatch_t *d, size_t task, uint32_t cost)
{
    if (task >= d->n)
        return ERR_RANGE;
    dispatch__count(d, task, -1); /* a task in flight is recounted at its new cost */
    d->cost[task] = cost;
    dispatch__count(d, task, +1);
    return 0;
}

uint32_t dispatch_cost(const dispatch_t *d, size_t task)
{
    return task < d->n && d->cost[task] > 0 ? d->cost[task] : 1;
}

uint32_t dispatch_tokens(const dispatch_t *d)
{
    return d->tokens;
}

size_t dispatch_allowance(const dispatch_t *d)
{
    double a = floor(d->cfg.opp_factor * (double)d->tokens + 1e-9);
    return a > 0 ? (size_t)a : 0;
}

size_t dispatch_regular(const dispatch_t *d)
{
    return d->nreg;
}

size_t dispatch_opportunistic(const dispatch_t *d)
{
    return d->nopp;
}

uint64_t dispatch_regular_units(const dispatch_t *d)
{
    return d->ureg;
}

uint64_t dispatch_opportunistic_units(const dispatch_t *d)
{
    return d->uopp;
}

size_t dispatch_downgraded(const dispatch_t *d)
{
    return d->ndown;
}

enum dispatch_class dispatch_class_of(const dispatch_t *d, size_t task)
{
    return task < d->n ? (enum dispatch_class)d->cls[task] : DISPATCH_NONE;
}

int dispatch_running(const dispatch_t *d, size_t task)
{
    return task < d->n && d->cls[task] != DISPATCH_NONE && d->running[task];
}

/* The reservation stands while its task could still get the grant. */
static int dispatch__reserved_by_other(dispatch_t *d, size_t task)
{
    if (d->reserve == SIZE_MAX || d->reserve == task)
        return 0;
    size_t r = d->reserve;
    if (dispatch_cost(d, r) > d->tokens ||
        (d->cls[r] != DISPATCH_NONE && (d->cls[r] == DISPATCH_REGULAR || d->running[r]))) {
        d->reserve = SIZE_MAX;
        return 0;
    }
    return 1;
}

enum dispatch_class dispatch_next(const dispatch_t *d)
{
    if (d->ureg < d->tokens && d->reserve == SIZE_MAX)
        return DISPATCH_REGULAR;
    if (d->uopp < dispatch_allowance(d))
        return DISPATCH_OPPORTUNISTIC;
    if (d->ureg < d->tokens)
        return DISPATCH_REGULAR; /* only the reserved task may take it */
    return DISPATCH_NONE;
}

static void dispatch__count(dispatch_t *d, size_t task, int sign)
{
    uint64_t c = dispatch_cost(d, task);
    if (d->cls[task] == DISPATCH_REGULAR) {
        d->nreg += sign > 0 ? 1 : (size_t)-1;
        d->ureg = sign > 0 ? d->ureg + c : d->ureg - c;
    } else if (d->cls[task] == DISPATCH_OPPORTUNISTIC) {
        d->nopp += sign > 0 ? 1 : (size_t)-1;
        d->uopp = sign > 0 ? d->uopp + c : d->uopp - c;
    }
}

int dispatch_place(dispatch_t *d, size_t task)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (d->cls[task] != DISPATCH_NONE)
        return ERR_STATE;
    uint64_t c = dispatch_cost(d, task);
    enum dispatch_class cls = DISPATCH_NONE;
    int other = dispatch__reserved_by_other(d, task);
    if (d->reserve == task)
        d->reserve_offered = 1;
    /* A reservation holds back only the units its task needs: another task fits beside it when
       both do (a task of one unit did not wait behind one of one unit while two were free). */
    if (other && d->ureg + c + dispatch_cost(d, d->reserve) <= d->tokens)
        other = 0;
    if (!other && d->ureg + c <= d->tokens) {
        cls = DISPATCH_REGULAR;
        if (d->reserve == task)
            d->reserve = SIZE_MAX;
    } else {
        if (!other && c <= d->tokens && d->reserve == SIZE_MAX) {
            d->reserve = task; /* the units free up for it as regular tasks end */
            d->reserve_offered = 1;
        }
        if (d->uopp + c <= dispatch_allowance(d))
            cls = DISPATCH_OPPORTUNISTIC;
    }
    if (cls == DISPATCH_NONE)
        return DISPATCH_NONE;
    d->cls[task] = (unsigned char)cls;
    d->running[task] = 0;
    d->seq[task] = d->next_seq++;
    dispatch__count(d, task, +1);
    dispatch__fly(d, task);
    return cls;
}

int dispatch_adopt(dispatch_t *d, size_t task, enum dispatch_class cls)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (cls != DISPATCH_REGULAR && cls != DISPATCH_OPPORTUNISTIC)
        return ERR_INVAL;
    if (d->cls[task] != DISPATCH_NONE)
        return ERR_STATE;
    d->cls[task] = (unsigned char)cls;
    d->running[task] = 0;
    d->seq[task] = d->next_seq++;
    dispatch__count(d, task, +1);
    dispatch__fly(d, task);
    return 0;
}

void dispatch_round(dispatch_t *d)
{
    if (d->reserve == SIZE_MAX)
        return;
    size_t r = d->reserve;
    int waiting = d->cls[r] == DISPATCH_OPPORTUNISTIC && !d->running[r];
    if (!d->reserve_offered && !waiting)
        d->reserve = SIZE_MAX;
    d->reserve_offered = 0;
}

int dispatch_reclass(dispatch_t *d, size_t task, enum dispatch_class cls)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (cls != DISPATCH_REGULAR && cls != DISPATCH_OPPORTUNISTIC)
        return ERR_INVAL;
    if (d->cls[task] == DISPATCH_NONE)
        return ERR_STATE;
    if (d->cls[task] == cls)
        return 0;
    dispatch__count(d, task, -1);
    d->cls[task] = (unsigned char)cls;
    dispatch__count(d, task, +1);
    return 0;
}

int dispatch_started(dispatch_t *d, size_t task)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (d->cls[task] == DISPATCH_NONE)
        return ERR_STATE;
    d->running[task] = 1;
    return 0;
}

int dispatch_finished(dispatch_t *d, size_t task)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (d->cls[task] == DISPATCH_NONE)
        return ERR_STATE;
    dispatch__count(d, task, -1);
    dispatch__land(d, task);
    d->cls[task] = DISPATCH_NONE;
    d->running[task] = 0;
    if (d->reserve == task)
        d->reserve = SIZE_MAX;
    return 0;
}

size_t dispatch_upgrades(dispatch_t *d, const double *prio, size_t *out, size_t cap)
{
    size_t k = 0;
    /* One pass per upgrade keeps this allocation-free; upgrades are few per event. */
    while (k < cap && d->ureg < d->tokens) {
        size_t best = SIZE_MAX;
        int other = dispatch__reserved_by_other(d, SIZE_MAX);
        for (size_t i = 0; i < d->nfl; i++) {
            size_t t = d->fl[i];
            if (d->cls[t] != DISPATCH_OPPORTUNISTIC || d->running[t])
                continue;
            if (other && t != d->reserve)
                continue;
            if (d->ureg + dispatch_cost(d, t) > d->tokens)
                continue;
            if (best == SIZE_MAX)
                best = t;
            else if (prio != NULL && prio[t] != prio[best])
                best = prio[t] > prio[best] ? t : best;
            else if (d->seq[t] < d->seq[best])
                best = t;
        }
        if (best == SIZE_MAX)
            break;
        (void)dispatch_reclass(d, best, DISPATCH_REGULAR); /* in flight, so it cannot fail */
        if (d->reserve == best)
            d->reserve = SIZE_MAX;
        out[k++] = best;
    }
    return k;
}

/* 1 when a should be downgraded before b (both regular, in flight). */
static int dispatch__down_before(const dispatch_t *d, const double *prio, const double *rem,
                                 size_t a, size_t b)
{
    if (d->running[a] != d->running[b])
        return !d->running[a]; /* queued first: nothing is lost */
    if (d->running[a] && rem != NULL && rem[a] != rem[b])
        return rem[a] > rem[b];
    if (prio != NULL && prio[a] != prio[b])
        return prio[a] < prio[b];
    return d->seq[a] > d->seq[b];
}

size_t dispatch_downgrades(dispatch_t *d, const double *prio, const double *remaining, size_t *out,
                           size_t cap)
{
    size_t k = 0;
    while (k < cap && d->ureg > d->tokens) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < d->nfl; i++) {
            size_t t = d->fl[i];
            if (d->cls[t] != DISPATCH_REGULAR)
                continue;
            if (best == SIZE_MAX || dispatch__down_before(d, prio, remaining, t, best))
                best = t;
        }
        if (best == SIZE_MAX)
            break;
        (void)dispatch_reclass(d, best, DISPATCH_OPPORTUNISTIC); /* in flight, so it cannot fail */
        d->ndown++;
        out[k++] = best;
    }
    return k;
}

/* 1 when waiting regular task a yields before b. */
static int dispatch__yield_before(const dispatch_t *d, const double *prio, size_t a, size_t b)
{
    if (prio != NULL && prio[a] != prio[b])
        return prio[a] < prio[b];
    return d->seq[a] > d->seq[b];
}

size_t dispatch_yield(dispatch_t *d, size_t task, const double *prio, dispatch_may_yield_fn *may,
                      void *ctx, size_t *out, size_t cap)
{
    if (task >= d->n || d->cls[task] != DISPATCH_NONE)
        return 0;
    uint64_t units = dispatch_cost(d, task);
    if (units > d->tokens || dispatch__reserved_by_other(d, task))
        return 0;
    uint64_t free_u = d->ureg < d->tokens ? d->tokens - d->ureg : 0;
    if (free_u >= units)
        return 0;
    if (free_u + dispatch_yieldable(d, may, ctx) < units) /* the waiting cannot free enough */
        return 0;
    size_t k = 0;
    while (k < cap && free_u < units) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < d->nfl; i++) {
            size_t t = d->fl[i];
            if (d->cls[t] != DISPATCH_REGULAR || d->running[t] || (may != NULL && !may(ctx, t)))
                continue;
            if (best == SIZE_MAX || dispatch__yield_before(d, prio, t, best))
                best = t;
        }
        if (best == SIZE_MAX)
            break;
        (void)dispatch_reclass(d, best, DISPATCH_OPPORTUNISTIC); /* in flight, so it cannot fail */
        d->nyield++;
        free_u += dispatch_cost(d, best);
        out[k++] = best;
    }
    return k;
}

uint64_t dispatch_yieldable(const dispatch_t *d, dispatch_may_yield_fn *may, void *ctx)
{
    uint64_t u = 0;
    for (size_t i = 0; i < d->nfl; i++) {
        size_t t = d->fl[i];
        if (d->cls[t] == DISPATCH_REGULAR && !d->running[t] && (may == NULL || may(ctx, t)))
            u += dispatch_cost(d, t);
    }
    return u;
}

size_t dispatch_yielded(const dispatch_t *d)
{
    return d->nyield;
}
