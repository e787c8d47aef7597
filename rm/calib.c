/* calib.c - the cluster's error model of admission's predictions (rm/calib.h). */
#include "rm/calib.h"

#include "common/err.h"
#include "rm/arbiter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void calib_init(struct calib *c)
{
    memset(c, 0, sizeof *c);
}

static double calib__clamp(double r)
{
    return r < CALIB_RATIO_MIN ? CALIB_RATIO_MIN : r > CALIB_RATIO_MAX ? CALIB_RATIO_MAX : r;
}

int calib_add(struct calib *c, double actual, double predicted)
{
    return calib_add_spread(c, actual, predicted, 0);
}

int calib_add_spread(struct calib *c, double actual, double predicted, double spread)
{
    if (!(predicted > 0) || !isfinite(predicted) || !(actual >= 0) || !isfinite(actual))
        return ERR_INVAL;
    double r = actual / predicted;
    c->ratio_milli[c->head] = (uint32_t)lround(calib__clamp(r) * 1000.0);
    c->head = (c->head + 1) % CALIB_WINDOW;
    if (c->n < CALIB_WINDOW)
        c->n++;
    c->total++;
    if (spread >= 1 && isfinite(spread)) {
        c->own_milli[c->own_head] = (uint32_t)lround(calib__clamp(r / spread) * 1000.0);
        c->own_head = (c->own_head + 1) % CALIB_WINDOW;
        if (c->own_n < CALIB_WINDOW)
            c->own_n++;
    }
    return 0;
}

double calib_predicted(const struct arbiter_shape *s, double actual, double held, double used)
{
    if (!(actual > 0) || !isfinite(actual) || !(held > 0) || !isfinite(held))
        return 0;
    double k = held / actual;
    if (!(k >= 1) || (used > 0 && used > held * (1 + CALIB_OPP_MAX)))
        return 0;
    double p = arbiter_time_p50(s, k);
    return p > 0 && isfinite(p) ? p : 0;
}

double calib_bound_factor(const struct calib_factors *f, double spread)
{
    if (!(spread >= 1) || !isfinite(spread))
        return f->hi;
    double b = spread * f->hi_own;
    return b > f->p50 ? b : f->p50;
}

static int calib__cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n), linear between order statistics. */
static double calib__quantile(const uint32_t *v, uint32_t n, double q)
{
    double pos = q * (double)(n - 1);
    uint32_t i = (uint32_t)pos;
    double f = pos - (double)i;
    double a = v[i], b = i + 1 < n ? v[i + 1] : v[i];
    return (a + f * (b - a)) / 1000.0;
}

void calib_factors(const struct calib *c, struct calib_factors *out)
{
    memset(out, 0, sizeof *out);
    out->n = c->n;
    out->total = c->total;
    double n = c->n, n0 = CALIB_PRIOR_N;
    if (c->n > 0) {
        uint32_t v[CALIB_WINDOW];
        memcpy(v, c->ratio_milli, c->n * sizeof *v);
        qsort(v, c->n, sizeof *v, calib__cmp);
        out->sample_p50 = calib__quantile(v, c->n, 0.5);
        out->sample_hi = calib__quantile(v, c->n, CALIB_Q);
    }
    if (c->own_n > 0) {
        uint32_t v[CALIB_WINDOW];
        memcpy(v, c->own_milli, c->own_n * sizeof *v);
        qsort(v, c->own_n, sizeof *v, calib__cmp);
        out->sample_own = calib__quantile(v, c->own_n, CALIB_Q);
    }
    out->own_n = c->own_n;
    out->hi_own = (n0 * CALIB_PRIOR_OWN + c->own_n * out->sample_own) / (n0 + c->own_n);
    out->p50 = (n0 * CALIB_PRIOR_P50 + n * out->sample_p50) / (n0 + n);
    out->hi = (n0 * CALIB_PRIOR_HI + n * out->sample_hi) / (n0 + n);
    if (out->hi < out->p50)
        out->hi = out->p50;
}

int calib_check(const struct calib *c)
{
    if (c->n > CALIB_WINDOW || c->head >= CALIB_WINDOW || c->total < c->n ||
        (c->n < CALIB_WINDOW && c->head != c->n))
        return ERR_PARSE;
    uint32_t lo = (uint32_t)lround(CALIB_RATIO_MIN * 1000.0);
    uint32_t hi = (uint32_t)lround(CALIB_RATIO_MAX * 1000.0);
    for (uint32_t i = 0; i < c->n; i++)
        if (c->ratio_milli[i] < lo || c->ratio_milli[i] > hi)
            return ERR_PARSE;
    if (c->own_n > CALIB_WINDOW || c->own_head >= CALIB_WINDOW || c->own_n > c->total ||
        (c->own_n < CALIB_WINDOW && c->own_head != c->own_n))
        return ERR_PARSE;
    for (uint32_t i = 0; i < c->own_n; i++)
        if (c->own_milli[i] < lo || c->own_milli[i] > hi)
            return ERR_PARSE;
    return 0;
}

/* The median u of the (at most CALIB_HIST) runs of key before index `end`, newest first. */
static uint32_t calib__hist_before(const struct calib_run *runs, size_t end, uint64_t key,
                                   double *med)
{
    uint32_t v[CALIB_HIST], k = 0;
    for (size_t i = end; i-- > 0 && k < CALIB_HIST;)
        if (runs[i].key == key && runs[i].u > 0 && isfinite(runs[i].u))
            v[k++] = (uint32_t)lround(calib__clamp(runs[i].u) * 1000.0);
    if (k == 0)
        return 0;
    qsort(v, k, sizeof *v, calib__cmp);
    *med = calib__quantile(v, k, 0.5);
    return k;
}

uint32_t calib_hist_median(const struct calib_run *runs, size_t n, uint64_t key, double *med)
{
    return runs == NULL ? 0 : calib__hist_before(runs, n, key, med);
}

void calib_hist_model(const struct calib_run *runs, size_t n, struct calib_hist *out)
{
    memset(out, 0, sizeof *out);
    uint32_t v[CALIB_WINDOW], nv = 0, head = 0;
    /* the latest CALIB_WINDOW runs: each looks back for its own, so older ones are not read */
    for (size_t i = n > CALIB_WINDOW ? n - CALIB_WINDOW : 0; runs != NULL && i < n; i++) {
        double m;
        if (!(runs[i].u > 0) || !isfinite(runs[i].u) ||
            calib__hist_before(runs, i, runs[i].key, &m) == 0 || !(m > 0))
            continue;
        v[head] = (uint32_t)lround(calib__clamp(runs[i].u / m) * 1000.0);
        head = (head + 1) % CALIB_WINDOW;
        nv += nv < CALIB_WINDOW;
    }
    if (nv > 0) {
        qsort(v, nv, sizeof *v, calib__cmp);
        out->sample_hi = calib__quantile(v, nv, CALIB_Q);
    }
    out->n = nv;
    /* a few v's understate their q95 (six of them reach about their q90): shrunk towards the
     * prior as every factor here is */
    double n0 = CALIB_PRIOR_N;
    out->hi = (n0 * CALIB_PRIOR_OWN + nv * out->sample_hi) / (n0 + nv);
    if (out->hi < 1)
        out->hi = 1;
}

double calib_hist_bound(const struct calib_factors *f, const struct calib_hist *h, double spread,
                        double med)
{
    double n0 = CALIB_PRIOR_N, n = h->n;
    double b = spread * (n0 * f->hi_own + n * med * h->hi) / (n0 + n);
    b = b > spread * med ? b : spread * med;
    /* widens only: narrowed below the cluster's factor, a job whose own runs fell in a quiet
     * spell was admitted just before a loaded one (a real-cluster check: 2 of 2 missed) */
    double pooled = calib_bound_factor(f, spread);
    return b > pooled ? b : pooled;
}
