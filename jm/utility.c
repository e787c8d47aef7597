/* utility.c - piecewise-linear utility of completion time (Jockey §4.3, §5.1). */
#include "jm/utility.h"

#include <math.h>

#include "common/err.h"
#include "jm/spec.h"

int utility_init_points(struct utility *ut, const double *t, const double *u, int n, char *msg,
                        size_t cap)
{
    if (ut == NULL || t == NULL || u == NULL)
        return err_fmt(msg, cap, ERR_INVAL, "utility: missing points");
    if (n < 1 || n > UTILITY_MAX_POINTS)
        return err_fmt(msg, cap, ERR_INVAL, "utility: %d points (want 1..%d)", n,
                       UTILITY_MAX_POINTS);
    for (int i = 0; i < n; i++) {
        if (!isfinite(t[i]) || !isfinite(u[i]))
            return err_fmt(msg, cap, ERR_INVAL, "utility: point %d is not finite", i);
        if (t[i] < 0)
            return err_fmt(msg, cap, ERR_INVAL, "utility: point %d has negative time %g", i, t[i]);
        if (i > 0 && !(t[i] > t[i - 1]))
            return err_fmt(msg, cap, ERR_INVAL,
                           "utility: times must strictly increase (point %d: %g after %g)", i, t[i],
                           t[i - 1]);
    }
    ut->n = n;
    for (int i = 0; i < n; i++) {
        ut->t[i] = t[i];
        ut->u[i] = u[i];
    }
    return 0;
}

int utility_init_deadline(struct utility *ut, double d)
{
    if (ut == NULL || !isfinite(d) || d <= 0)
        return ERR_INVAL;
    double scale = d < 3600.0 ? d / 3600.0 : 1.0;
    const double t[4] = {0, d, d + 600.0 * scale, d + 60000.0 * scale};
    const double u[4] = {1, 1, -1, -1000};
    return utility_init_points(ut, t, u, 4, NULL, 0);
}

double utility_eval(const struct utility *ut, double x)
{
    int n = ut->n;
    if (n <= 0)
        return 0;
    if (x <= ut->t[0])
        return ut->u[0];
    for (int i = 1; i < n; i++) {
        if (x <= ut->t[i]) {
            double w = (x - ut->t[i - 1]) / (ut->t[i] - ut->t[i - 1]);
            return ut->u[i - 1] + w * (ut->u[i] - ut->u[i - 1]);
        }
    }
    if (n >= 2) {
        double slope = (ut->u[n - 1] - ut->u[n - 2]) / (ut->t[n - 1] - ut->t[n - 2]);
        if (slope < 0)
            return ut->u[n - 1] + slope * (x - ut->t[n - 1]);
    }
    return ut->u[n - 1];
}

double utility_deadline(const struct utility *ut)
{
    if (ut->n <= 0)
        return 0;
    double best = ut->u[0];
    for (int i = 1; i < ut->n; i++)
        if (ut->u[i] > best)
            best = ut->u[i];
    /* The last point holding the maximum; if the function stays flat after it (no later point
     * or a flat final segment), the deadline is unbounded. */
    int last = 0;
    for (int i = 0; i < ut->n; i++)
        if (ut->u[i] >= best)
            last = i;
    if (last == ut->n - 1)
        return INFINITY;
    return ut->t[last];
}

void utility_shift(struct utility *ut, double dt)
{
    for (int i = 0; i < ut->n; i++)
        ut->t[i] -= dt;
}

int utility_init_spec(struct utility *ut, const struct spec *spec, char *msg, size_t cap)
{
    if (spec->nutility > 0) {
        double t[UTILITY_MAX_POINTS], u[UTILITY_MAX_POINTS];
        if (spec->nutility > UTILITY_MAX_POINTS)
            return err_fmt(msg, cap, ERR_INVAL, "utility: %zu points (limit %d)", spec->nutility,
                           UTILITY_MAX_POINTS);
        for (size_t i = 0; i < spec->nutility; i++) {
            t[i] = spec->utility[i].t_s;
            u[i] = spec->utility[i].u;
        }
        return utility_init_points(ut, t, u, (int)spec->nutility, msg, cap);
    }
    if (spec->has_deadline)
        return utility_init_deadline(ut, spec->deadline_s) == 0
                   ? 0
                   : err_fmt(msg, cap, ERR_INVAL, "utility: bad deadline %g", spec->deadline_s);
    return err_fmt(msg, cap, ERR_NOTFOUND, "utility: the job has no deadline and no utility");
}
