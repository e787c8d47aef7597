/* utility.h - a job's utility as a piecewise-linear function of its completion time
 * (Jockey §4.3 input 3, §5.1).
 *
 * A public value struct (no allocation): points (t_s, u) with t_s strictly increasing. The value
 * is linear between points and equal to the first point's value before it. After the last point
 * the last segment's slope continues when it is negative (a later finish is always worse, so a
 * controller facing a hopeless deadline still prefers the allocation that finishes soonest);
 * otherwise the value stays flat.
 *
 * From a deadline d alone, Jockey §5.1 uses the points (0, 1), (d, 1), (d + 10 min, -1),
 * (d + 1000 min, -1000): utility_init_deadline(). The paper's deadlines were about an hour; for a
 * deadline under an hour both offsets shrink in proportion (d / 60 min), so that finishing, say,
 * half a 30 s deadline late costs as much as half an hour's lateness costs a one-hour job
 * (with absolute minutes a short job could be late by many times its deadline for almost no loss
 * of utility, and the controller would not protect it).
 */
#ifndef PADDOCK_JM_UTILITY_H
#define PADDOCK_JM_UTILITY_H

#include <stddef.h>

#define UTILITY_MAX_POINTS 64

struct utility {
    int n;                        /* read-only: number of points, 1..UTILITY_MAX_POINTS */
    double t[UTILITY_MAX_POINTS]; /* read-only: completion times (s), strictly increasing */
    double u[UTILITY_MAX_POINTS]; /* read-only: utilities */
};

/* From n points (t[i], u[i]) (copied). ERR_INVAL with the reason in msg when n is out of
 * 1..UTILITY_MAX_POINTS, a value is not finite, a time is negative, or times do not strictly
 * increase. On error *ut is left unchanged. */
int utility_init_points(struct utility *ut, const double *t, const double *u, int n, char *msg,
                        size_t cap);

/* Jockey §5.1's function for deadline d > 0 (seconds), offsets scaled by min(1, d / 3600) as
 * described above. ERR_INVAL for a non-positive or non-finite d. */
int utility_init_deadline(struct utility *ut, double deadline_s);

/* From a job spec (jm/spec.h; borrowed during the call): its "utility" points when it has them,
 * else utility_init_deadline(deadline_s). ERR_NOTFOUND when it has neither (a job without a
 * deadline: no controller needed), ERR_INVAL as utility_init_points. */
struct spec;
int utility_init_spec(struct utility *ut, const struct spec *spec, char *msg, size_t cap);

/* Utility of completing at time t_s (seconds since submission). */
double utility_eval(const struct utility *ut, double t_s);

/* The deadline the function encodes: the latest time at which the utility still equals its
 * maximum over all points. */
double utility_deadline(const struct utility *ut);

/* Moves the function left by dt seconds (right for dt < 0): U'(t) = U(t + dt). Points that would
 * fall before 0 are kept (times may become negative); used for the dead zone and for deadline
 * changes. */
void utility_shift(struct utility *ut, double dt);

#endif
