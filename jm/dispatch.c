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
    unsigned char *cls;     /* enum dispatch_class */
    unsigned char *running; /* started at the PN */
    uint64_t *seq;          /* dispatch order */
    uint64_t next_seq;
};

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
    if (d->cls == NULL || d->running == NULL || d->seq == NULL) {
        dispatch_destroy(&d);
        return ERR_NOMEM;
    }
    d->cfg = *cfg;
    d->n = ntasks;
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

enum dispatch_class dispatch_class_of(const dispatch_t *d, size_t task)
{
    return task < d->n ? (enum dispatch_class)d->cls[task] : DISPATCH_NONE;
}

int dispatch_running(const dispatch_t *d, size_t task)
{
    return task < d->n && d->cls[task] != DISPATCH_NONE && d->running[task];
}

enum dispatch_class dispatch_next(const dispatch_t *d)
{
    if (d->nreg < d->tokens)
        return DISPATCH_REGULAR;
    if (d->nopp < dispatch_allowance(d))
        return DISPATCH_OPPORTUNISTIC;
    return DISPATCH_NONE;
}

int dispatch_place(dispatch_t *d, size_t task)
{
    if (task >= d->n)
        return ERR_RANGE;
    if (d->cls[task] != DISPATCH_NONE)
        return ERR_STATE;
    enum dispatch_class c = dispatch_next(d);
    if (c == DISPATCH_NONE)
        return DISPATCH_NONE;
    d->cls[task] = (unsigned char)c;
    d->running[task] = 0;
    d->seq[task] = d->next_seq++;
    if (c == DISPATCH_REGULAR)
        d->nreg++;
    else
        d->nopp++;
    return c;
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
    if (d->cls[task] == DISPATCH_REGULAR)
        d->nreg--;
    else
        d->nopp--;
    d->cls[task] = DISPATCH_NONE;
    d->running[task] = 0;
    return 0;
}

size_t dispatch_upgrades(dispatch_t *d, const double *prio, size_t *out, size_t cap)
{
    size_t k = 0;
    /* One pass per upgrade keeps this allocation-free; upgrades are few per event. */
    while (k < cap && d->nreg < d->tokens) {
        size_t best = SIZE_MAX;
        for (size_t t = 0; t < d->n; t++) {
            if (d->cls[t] != DISPATCH_OPPORTUNISTIC || d->running[t])
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
        d->cls[best] = DISPATCH_REGULAR;
        d->nopp--;
        d->nreg++;
        out[k++] = best;
    }
    return k;
}
