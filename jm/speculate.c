/* speculate.c - straggler detection and speculative copies (see speculate.h; Apollo §3.4). */
#include "jm/speculate.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void speculate_config_default(struct speculate_config *cfg)
{
    cfg->margin_s = 1.0;
    cfg->gain = 0.5;
    cfg->z = 1.0;
    cfg->min_elapsed_s = 1.0;
    cfg->min_frac = 1.0;
    cfg->min_finished = 3;
    cfg->min_progress = 0.05;
    cfg->max_copies = 1;
    cfg->job_cap_frac = 0.1;
    cfg->job_total_frac = 0.1;
    cfg->job_total_min = 4;
    cfg->stage_cap_frac = 0.1;
}

const char *speculate_verdict_name(enum speculate_verdict v)
{
    switch (v) {
    case SPECULATE_NO:
        return "no";
    case SPECULATE_COPY:
        return "copy";
    case SPECULATE_FORBIDDEN:
        return "forbidden";
    case SPECULATE_TOO_EARLY:
        return "too early";
    case SPECULATE_CAPPED:
        return "capped";
    }
    return "?";
}

static double speculate__nonneg(double x)
{
    return isfinite(x) && x > 0 ? x : 0;
}

static double speculate__scale(const struct speculate_input *in)
{
    return isfinite(in->stage_scale) && in->stage_scale > 0 ? in->stage_scale : 1;
}

/* The stage's median finished duration, or R without enough of them. */
static double speculate__typical(const struct speculate_config *cfg,
                                 const struct speculate_input *in)
{
    if (in->stage_done && in->nstage_done >= cfg->min_finished && in->nstage_done > 0) {
        size_t n = in->nstage_done;
        double sc = speculate__scale(in);
        return sc * (n % 2 ? in->stage_done[n / 2]
                           : 0.5 * (in->stage_done[n / 2 - 1] + in->stage_done[n / 2]));
    }
    return speculate__nonneg(in->est_run_s);
}

double speculate_remaining(const struct speculate_config *cfg, const struct speculate_input *in)
{
    struct speculate_config def;
    if (!cfg) {
        speculate_config_default(&def);
        cfg = &def;
    }
    double e = speculate__nonneg(in->elapsed_s);
    double p = in->progress;
    if (isfinite(p) && p >= cfg->min_progress && p < 1 && e > 0)
        return e * (1 - p) / p;
    if (isfinite(p) && p >= 1)
        return 0;
    const double *d = in->stage_done;
    size_t n = in->nstage_done;
    double sc = speculate__scale(in);
    double one = speculate__nonneg(in->est_run_s);
    if (!d || n < cfg->min_finished || n == 0) {
        d = &one;
        n = 1;
        sc = 1;
    }
    /* First finished duration above e (ascending), then the mean residual of the tail. */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sc * d[mid] > e)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == n)
        return e / 2;
    double sum = 0;
    for (size_t i = lo; i < n; i++)
        sum += sc * d[i] - e;
    return sum / (double)(n - lo);
}

int speculate_worth_a_look(const struct speculate_config *cfg, const struct speculate_input *in,
                           double floor_s)
{
    struct speculate_config def;
    if (!cfg) {
        speculate_config_default(&def);
        cfg = &def;
    }
    double ask = cfg->gain * floor_s > cfg->margin_s ? cfg->gain * floor_s : cfg->margin_s;
    return speculate_remaining(cfg, in) - floor_s >= ask;
}

static uint32_t speculate__cap(double frac, uint32_t of, uint32_t min)
{
    double c = ceil(frac * (double)of);
    if (!(c >= min))
        c = min;
    return c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

enum speculate_verdict speculate_check(const struct speculate_config *cfg,
                                       const struct speculate_input *in, struct speculate_why *why)
{
    struct speculate_config def;
    if (!cfg) {
        speculate_config_default(&def);
        cfg = &def;
    }
    if (why)
        memset(why, 0, sizeof *why);
    if (!in->speculate)
        return SPECULATE_FORBIDDEN;
    double e = speculate__nonneg(in->elapsed_s);
    if (e < cfg->min_elapsed_s || e < cfg->min_frac * speculate__typical(cfg, in))
        return SPECULATE_TOO_EARLY;
    if (in->copies >= cfg->max_copies ||
        in->job_inflight >= speculate__cap(cfg->job_cap_frac, in->job_running, 1) ||
        in->job_started >= speculate__cap(cfg->job_total_frac, in->job_tasks, cfg->job_total_min) ||
        in->stage_inflight >= speculate__cap(cfg->stage_cap_frac, in->stage_tasks, 1))
        return SPECULATE_CAPPED;
    double rem = speculate_remaining(cfg, in);
    if (why)
        why->remaining_s = rem;
    if (!isfinite(in->copy_c_s) || in->copy_c_s >= 1e300 || in->copy_c_s < 0)
        return SPECULATE_NO;
    double cq = in->copy_c_s + cfg->z * speculate__nonneg(in->copy_spread_s);
    double save = rem - cq;
    if (why) {
        why->copy_q_s = cq;
        why->saving_s = save;
    }
    double need = cfg->gain * cq;
    if (need < cfg->margin_s)
        need = cfg->margin_s;
    return save >= need ? SPECULATE_COPY : SPECULATE_NO;
}

double speculate_progress(double cpu_s, double cpu_total_s, uint64_t bytes_read,
                          uint64_t bytes_total)
{
    double p = -1;
    if (bytes_total > 0)
        p = (double)bytes_read / (double)bytes_total;
    else if (isfinite(cpu_total_s) && cpu_total_s > 0 && isfinite(cpu_s) && cpu_s >= 0)
        p = cpu_s / cpu_total_s;
    else
        return -1;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

void speculate_dist_init(struct speculate_dist *d)
{
    memset(d, 0, sizeof *d);
}

void speculate_dist_close(struct speculate_dist *d)
{
    mem_free(d->v);
    memset(d, 0, sizeof *d);
}

int speculate_dist_add(struct speculate_dist *d, double dur_s)
{
    if (!isfinite(dur_s) || dur_s < 0)
        return ERR_INVAL;
    if (d->stride > 1 && d->seen++ % d->stride != 0)
        return 0;                     /* not this one's turn: the sample stays systematic */
    if (d->n == SPECULATE_DIST_MAX) { /* full: keep every other one, and half as many from now */
        for (size_t i = 0; i < d->n / 2; i++)
            d->v[i] = d->v[2 * i + 1];
        d->n /= 2;
        d->stride = d->stride > 1 ? 2 * d->stride : 2;
        d->seen = 1; /* this one is kept, the next stride - 1 are not */
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        double *v = mem_reallocarray(d->v, cap, sizeof *v);
        if (!v)
            return ERR_NOMEM;
        d->v = v;
        d->cap = cap;
    }
    size_t i = d->n;
    while (i > 0 && d->v[i - 1] > dur_s) {
        d->v[i] = d->v[i - 1];
        i--;
    }
    d->v[i] = dur_s;
    d->n++;
    return 0;
}

double speculate_dist_median(const struct speculate_dist *d)
{
    if (!d->n)
        return 0;
    return d->n % 2 ? d->v[d->n / 2] : 0.5 * (d->v[d->n / 2 - 1] + d->v[d->n / 2]);
}

double speculate_dist_stddev(const struct speculate_dist *d)
{
    if (d->n < 2)
        return 0;
    double mean = 0, var = 0;
    for (size_t i = 0; i < d->n; i++)
        mean += d->v[i];
    mean /= (double)d->n;
    for (size_t i = 0; i < d->n; i++)
        var += (d->v[i] - mean) * (d->v[i] - mean);
    return sqrt(var / (double)(d->n - 1));
}

enum dispatch_class speculate_copy_class(uint64_t free_units, uint64_t opp_free_units,
                                         uint32_t cost)
{
    if (cost == 0)
        cost = 1;
    if (free_units >= cost)
        return DISPATCH_REGULAR;
    if (opp_free_units >= cost)
        return DISPATCH_OPPORTUNISTIC;
    return DISPATCH_NONE;
}

void speculate_task_init(struct speculate_task *t)
{
    memset(t, 0, sizeof *t);
    t->winner = -1;
}

static long speculate__find(const struct speculate_task *t, uint32_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->a[i].id == id)
            return (long)i;
    return -1;
}

int speculate_task_add(struct speculate_task *t, uint32_t id, int32_t node, int copy)
{
    if (t->winner >= 0)
        return ERR_STATE;
    if (speculate__find(t, id) >= 0)
        return ERR_EXISTS;
    /* A slot of a finished-off attempt (failed or cancelled) is reused before giving up. */
    size_t slot = t->n;
    if (slot == SPECULATE_MAX_ATTEMPTS) {
        for (slot = 0; slot < t->n; slot++)
            if (t->a[slot].state == SPECULATE_A_FAILED || t->a[slot].state == SPECULATE_A_CANCELLED)
                break;
        if (slot == t->n)
            return ERR_FULL;
    } else {
        t->n++;
    }
    struct speculate_attempt *a = &t->a[slot];
    a->id = id;
    a->node = node;
    a->copy = copy != 0;
    a->started = 0;
    a->state = SPECULATE_A_LIVE;
    return 0;
}

size_t speculate_task_live(const struct speculate_task *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        k += t->a[i].state == SPECULATE_A_LIVE;
    return k;
}

size_t speculate_task_live_copies(const struct speculate_task *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        k += t->a[i].state == SPECULATE_A_LIVE && t->a[i].copy;
    return k;
}

int speculate_task_started(struct speculate_task *t, uint32_t id, int discard, uint32_t *cancel,
                           size_t cap)
{
    long i = speculate__find(t, id);
    if (i < 0 || t->a[i].state != SPECULATE_A_LIVE)
        return ERR_NOTFOUND;
    t->a[i].started = 1;
    if (!discard)
        return 0;
    int k = 0;
    for (size_t j = 0; j < t->n; j++) {
        struct speculate_attempt *o = &t->a[j];
        if ((long)j == i || o->state != SPECULATE_A_LIVE || o->started)
            continue;
        o->state = SPECULATE_A_CANCELLED;
        if ((size_t)k < cap)
            cancel[k] = o->id;
        k++;
    }
    return k;
}

int speculate_task_finished(struct speculate_task *t, uint32_t id, uint32_t *cancel, size_t cap)
{
    long i = speculate__find(t, id);
    if (i < 0)
        return ERR_NOTFOUND;
    if (t->winner >= 0 || t->a[i].state != SPECULATE_A_LIVE)
        return ERR_STATE;
    t->a[i].state = SPECULATE_A_WON;
    t->winner = (int32_t)i;
    int k = 0;
    for (size_t j = 0; j < t->n; j++) {
        struct speculate_attempt *o = &t->a[j];
        if ((long)j == i || o->state != SPECULATE_A_LIVE)
            continue;
        o->state = SPECULATE_A_CANCELLED;
        if ((size_t)k < cap)
            cancel[k] = o->id;
        k++;
    }
    return k;
}

int speculate_task_failed(struct speculate_task *t, uint32_t id)
{
    long i = speculate__find(t, id);
    if (i < 0)
        return ERR_NOTFOUND;
    if (t->a[i].state != SPECULATE_A_LIVE)
        return ERR_STATE;
    t->a[i].state = SPECULATE_A_FAILED;
    return (int)speculate_task_live(t);
}
