/* eta.h - a running job's ETA band from admission's model (issue 22).
 *
 * Admission bounds a job that brings its own spread (jm/shape.h: the q95 of its makespan over the
 * median, the job simulated alone at its tokens) by that spread times the factor the RM learned
 * from outcomes (rm/calib.h, hi_own; MRM §3's prediction interval, Jockey §4's margin from what was
 * seen). The ETA's upper value uses the same model on what is left:
 *
 *   p50 = t_r + R50                      (R50: the JM simulator's median of the remaining time)
 *   p95 = t_r + R50 x max(1, s x f)      (s: the job's own spread, f: the learned factor)
 *
 * A job without a spread of its own (no profile: admission bounds it by the cluster's factor on
 * its work and path, not by a multiple of a median) keeps the simulator's own quantile: p95 = t_r
 * + max(R50, R95). Its error is reported at half the tasks done: |ETA p50 - makespan| / makespan
 * and whether the job ended by the p95 (coverage). Pure: no clock, no I/O.
 */
#ifndef PADDOCK_JM_ETA_H
#define PADDOCK_JM_ETA_H

/* Public value struct; the caller owns it. */
struct eta_band {
    double p50_s;    /* expected finish, s from submission */
    double p95_s;    /* conservative finish, >= p50_s */
    double factor;   /* (p95_s - t_r) / (p50_s - t_r): what the upper value stretched the rest by */
    int from_spread; /* 1: s x f (admission's model), 0: the simulator's own quantile */
    double p95_runs_s; /* t_r + max(R50, R95): the simulator's own quantile, whichever is used */
};

/* The band at t_r seconds since submission for a rest whose simulated median is rest_p50 and
 * q95 rest_q95 (s, >= 0; a q95 below the median counts as the median). spread: the job's own
 * spread (< 1 or not finite: none); own_factor: the learned factor (<= 0 or not finite with a
 * spread: unknown, taken as 1, the spread alone). Returns 0, or ERR_INVAL (NULL out, negative or
 * non-finite t_r / rest_p50) with *out untouched. */
int eta_band(double t_r, double rest_p50, double rest_q95, double spread, double own_factor,
             struct eta_band *out);

/* The p50's error at half done: |eta_half - makespan| / makespan; < 0 when either is unknown
 * (<= 0 or not finite). */
double eta_half_error(double eta_half, double makespan);

/* Whether the job ended by the p95 it was given at half done: 1 yes, 0 no, -1 unknown (either
 * <= 0 or not finite). */
int eta_half_covered(double eta_half_p95, double makespan);

#endif
