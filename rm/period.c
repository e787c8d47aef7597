/* period.c - UTC period arithmetic and the plan's capped LCM (see period.h). */
#include "rm/period.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

int64_t period_index(int64_t now_ms, int64_t period_ms, int64_t offset_ms)
{
    /* With 0 <= offset <= now, now − offset cannot overflow; out-of-contract arguments get −1
     * rather than a division by zero. */
    if (period_ms <= 0 || offset_ms < 0 || now_ms < offset_ms)
        return -1;
    return (now_ms - offset_ms) / period_ms;
}

int64_t period_start(int64_t index, int64_t period_ms, int64_t offset_ms)
{
    if (index < 0 || period_ms <= 0 || offset_ms < 0)
        return -1;
    /* An instance beyond the int64 range starts "never": saturate instead of wrapping. */
    int64_t span;
    int64_t start;
    if (__builtin_mul_overflow(index, period_ms, &span) ||
        __builtin_add_overflow(offset_ms, span, &start))
        return INT64_MAX;
    return start;
}

static uint64_t period__gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t period_lcm(const uint64_t *periods, size_t n, uint64_t cap, bool *capped)
{
    if (capped)
        *capped = false;
    if (n == 0 || periods == NULL)
        return 0;
    uint64_t l = 1;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        uint64_t p = periods[i];
        if (p == 0)
            continue; /* out of contract: a zero period constrains nothing */
        /* lcm(l, p) = (l / gcd) · p; compare against the cap before multiplying, so neither the
         * product nor any intermediate can overflow. */
        uint64_t a = l / period__gcd(l, p);
        if (a > cap / p) {
            if (capped)
                *capped = true;
            return cap;
        }
        l = a * p;
        any = true;
    }
    return any ? l : 0;
}

/* ---- period inference (Morpheus §4) ---- */

/* Periods people choose (Morpheus Fig. 1b: most are a few natural values). */
static const int64_t period__natural[] = {
    60000,   120000,   300000,   600000,   900000,   1200000,  1800000,  3600000,
    7200000, 10800000, 14400000, 21600000, 28800000, 43200000, 86400000, 604800000,
};

void period_params_default(struct period_params *p)
{
    p->min_runs = 4;
    p->max_runs = 64;
    p->cv_max = 0.1;
    p->min_period_ms = 1000;
    p->quantum_ms = 1000;
    p->snap = 0.05;
    p->stale_periods = 2.5;
}

const char *period_verdict_name(uint8_t verdict)
{
    switch (verdict) {
    case PERIOD_PERIODIC:
        return "periodic";
    case PERIOD_TOO_FEW:
        return "too few runs";
    case PERIOD_IRREGULAR:
        return "irregular";
    case PERIOD_TOO_SHORT:
        return "too short";
    case PERIOD_STALE:
        return "stale";
    }
    return "?";
}

static int period__cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1 (v is sorted in place); the lower middle's midpoint when even. */
static int64_t period__median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, period__cmp);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

/* a mod m in [0, m), m > 0. */
static int64_t period__mod(int64_t a, int64_t m)
{
    int64_t r = a % m;
    return r < 0 ? r + m : r;
}

/* floor(a / m), m > 0. */
static int64_t period__floordiv(int64_t a, int64_t m)
{
    int64_t q = a / m;
    return (a % m != 0 && a < 0) ? q - 1 : q;
}

int64_t period_nearest_start(int64_t t_ms, int64_t period_ms, int64_t offset_ms)
{
    if (period_ms <= 0)
        return -1;
    int64_t k = period__floordiv(t_ms - offset_ms, period_ms);
    int64_t s = offset_ms + k * period_ms;
    if (t_ms - s > period_ms / 2)
        s += period_ms;
    return s < 0 ? -1 : s;
}

int period_infer(const int64_t *submit_ms, size_t n, int64_t now_ms, const struct period_params *p,
                 struct period_fit *out)
{
    if ((submit_ms == NULL && n > 0) || p == NULL || out == NULL || p->min_runs < 2 ||
        p->max_runs < 2 || p->max_runs > PERIOD_MAX_RUNS || !(p->cv_max >= 0) ||
        p->min_period_ms < 1 || p->quantum_ms < 1 || !(p->snap >= 0 && p->snap < 0.5) ||
        !(p->stale_periods > 0))
        return ERR_INVAL;
    memset(out, 0, sizeof *out);
    /* the newest max_runs submissions, ascending */
    int64_t t[PERIOD_MAX_RUNS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v = submit_ms[i];
        if (k == p->max_runs) {
            if (v <= t[0])
                continue;
            memmove(t, t + 1, (k - 1) * sizeof *t); /* drop the oldest */
            k--;
        }
        size_t at = k;
        while (at > 0 && t[at - 1] > v)
            at--;
        memmove(t + at + 1, t + at, (k - at) * sizeof *t);
        t[at] = v;
        k++;
    }
    out->runs = (uint32_t)k;
    out->verdict = PERIOD_TOO_FEW;
    if (k < 2)
        return 0;
    out->first_ms = t[0];
    out->last_ms = t[k - 1];
    int64_t g[PERIOD_MAX_RUNS], dev[PERIOD_MAX_RUNS];
    for (size_t i = 1; i < k; i++)
        g[i - 1] = t[i] - t[i - 1];
    int64_t med = period__median(g, k - 1);
    for (size_t i = 0; i + 1 < k; i++)
        dev[i] = g[i] > med ? g[i] - med : med - g[i];
    int64_t mad = period__median(dev, k - 1);
    out->median_gap_ms = med;
    out->mad_gap_ms = mad;
    out->cv = med > 0 ? (double)mad / (double)med : 0;
    if (med <= 0)
        return 0; /* all at one instant: nothing to measure */
    /* the period: a natural one when near, in whole quanta */
    int64_t period = med;
    for (size_t i = 0; i < sizeof period__natural / sizeof period__natural[0]; i++) {
        int64_t nat = period__natural[i];
        if ((double)(med > nat ? med - nat : nat - med) <= p->snap * (double)nat) {
            period = nat;
            break;
        }
    }
    period = (period + p->quantum_ms / 2) / p->quantum_ms * p->quantum_ms;
    if (period < p->quantum_ms)
        period = p->quantum_ms;
    out->period_ms = period;
    /* the offset: the median phase, phases taken around the first submission's */
    int64_t ph[PERIOD_MAX_RUNS];
    for (size_t i = 0; i < k; i++) {
        int64_t d = period__mod(t[i] - t[0], period);
        ph[i] = d > period / 2 ? d - period : d;
    }
    int64_t dm = period__median(ph, k);
    for (size_t i = 0; i < k; i++) {
        int64_t d = period__mod(t[i] - t[0], period);
        d = d > period / 2 ? d - period : d;
        dev[i] = d > dm ? d - dm : dm - d;
    }
    out->phase_mad_ms = period__median(dev, k);
    int64_t offset = period__mod(t[0] + dm, period);
    offset -= offset % p->quantum_ms;
    out->offset_ms = offset;
    int64_t idx = period__floordiv(out->last_ms - offset, period);
    out->next_ms = offset + (idx + 1) * period;
    if (k < p->min_runs)
        out->verdict = PERIOD_TOO_FEW;
    else if (med < p->min_period_ms)
        out->verdict = PERIOD_TOO_SHORT;
    else if (out->cv > p->cv_max)
        out->verdict = PERIOD_IRREGULAR;
    else if ((double)(now_ms - out->last_ms) > p->stale_periods * (double)period)
        out->verdict = PERIOD_STALE;
    else
        out->verdict = PERIOD_PERIODIC;
    return 0;
}
