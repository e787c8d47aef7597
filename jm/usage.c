/* usage.c - a job's token usage over time (jm/usage.h): exact integrals in unit-ms per step. */
#include "jm/usage.h"

#include <math.h>
#include <string.h>

void usage_init(struct usage *u, uint32_t max_steps)
{
    memset(u, 0, sizeof *u);
    u->step_ms = USAGE_STEP_MS;
    u->max_steps = max_steps < 2 ? 2 : max_steps > USAGE_MAX_STEPS ? USAGE_MAX_STEPS : max_steps;
}

static uint32_t usage__steps_for(const struct usage *u, int64_t rel)
{
    return rel <= 0 ? 0 : (uint32_t)((rel + u->step_ms - 1) / u->step_ms);
}

/* Pairs of steps become one step of twice the length. */
static void usage__merge(struct usage *u)
{
    uint32_t n = (u->nsteps + 1) / 2;
    for (uint32_t i = 0; i < n; i++)
        u->acc[i] = u->acc[2 * i] + (2 * i + 1 < u->nsteps ? u->acc[2 * i + 1] : 0);
    for (uint32_t i = n; i < u->nsteps; i++)
        u->acc[i] = 0;
    u->nsteps = n;
    u->step_ms *= 2;
}

/* Adds v units over [a, b) (relative to the origin, a < b, both within the steps kept). */
static void usage__range(struct usage *u, int64_t a, int64_t b, int64_t v)
{
    if (v == 0 || b <= a)
        return;
    int64_t step = u->step_ms;
    for (int64_t i = a / step; i * step < b; i++) {
        int64_t lo = i * step > a ? i * step : a;
        int64_t hi = (i + 1) * step < b ? (i + 1) * step : b;
        u->acc[i] += v * (hi - lo);
    }
}

/* Moves `last` forward to t (relative to the origin), integrating the level on the way; the
 * step doubles as often as needed for t to fit. */
static void usage__advance(struct usage *u, int64_t t)
{
    while (usage__steps_for(u, t) > u->max_steps && u->step_ms <= UINT32_MAX / 2)
        usage__merge(u);
    int64_t limit = (int64_t)u->max_steps * u->step_ms;
    if (t > limit) /* past what the largest step can hold: the rest goes uncounted */
        t = limit;
    int64_t from = u->last - u->origin;
    if (t > from) {
        usage__range(u, from, t, u->level);
        u->last = u->origin + t;
    }
    uint32_t n = usage__steps_for(u, t);
    if (n > u->nsteps)
        u->nsteps = n;
}

void usage_add(struct usage *u, int64_t t_ms, int64_t delta)
{
    if (!u->started) {
        if (delta <= 0)
            return;
        u->started = 1;
        u->origin = u->last = t_ms;
    }
    if (t_ms < u->origin)
        t_ms = u->origin;
    if (t_ms > u->last) {
        usage__advance(u, t_ms - u->origin);
        if (t_ms > u->last) /* beyond the horizon: counted from its end */
            t_ms = u->last;
    } else if (t_ms < u->last) {
        /* Late news: the delta held over [t, last) already integrated. */
        usage__range(u, t_ms - u->origin, u->last - u->origin, delta);
    }
    u->level += delta;
}

void usage_finish(struct usage *u, int64_t t_ms)
{
    if (u->started && t_ms > u->last)
        usage__advance(u, t_ms - u->origin);
}

int usage_started(const struct usage *u)
{
    return u->started;
}

int64_t usage_origin(const struct usage *u)
{
    return u->started ? u->origin : 0;
}

uint64_t usage_token_ms(const struct usage *u)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < u->nsteps; i++)
        sum += u->acc[i];
    return sum > 0 ? (uint64_t)sum : 0;
}

uint32_t usage_step_ms(const struct usage *u)
{
    return u->step_ms;
}

uint32_t usage_export(const struct usage *u, uint32_t *milli, uint32_t cap)
{
    uint32_t n = u->nsteps < cap ? u->nsteps : cap;
    for (uint32_t i = 0; i < n; i++) {
        double m = (double)u->acc[i] * 1000.0 / (double)u->step_ms;
        milli[i] = !(m > 0) ? 0 : m >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)llround(m);
    }
    return n;
}
