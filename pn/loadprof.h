/* loadprof.h - resource usage of one node over future time, as a step function.
 *
 * The shared core of the PN's queue (backfill) and wait-time matrix (Apollo §3.2: "The
 * algorithm simulates local task execution and evaluates how long a future task with a given
 * CPU/memory requirement would wait on this PN"). Running tasks and reservations of queued
 * tasks are added as intervals [start, end) of CPU and memory; loadprof_fit answers the earliest
 * time a new interval fits under the node's capacity. Pure: no clock; times are seconds on
 * whatever clock the caller uses.
 */
#ifndef PADDOCK_PN_LOADPROF_H
#define PADDOCK_PN_LOADPROF_H

#include <stddef.h>

typedef struct loadprof_step {
    double t;   /* segment [t, next t) */
    double cpu; /* cores in use during the segment */
    double mem; /* MiB in use during the segment */
} loadprof_step_t;

/* A value: caller owns the struct; loadprof_init / loadprof_close. */
typedef struct loadprof {
    double cpus;            /* public, read-only: capacity in cores */
    double mem_mb;          /* public, read-only: capacity in MiB */
    loadprof_step_t *steps; /* private: sorted by t; the last segment extends to infinity */
    size_t n, cap;          /* private */
} loadprof_t;

/* Initialises an empty profile of the given capacity (no allocation until first use). */
void loadprof_init(loadprof_t *p, double cpus, double mem_mb);
/* Frees the steps; the profile may be re-initialised. */
void loadprof_close(loadprof_t *p);
/* Empties the profile: zero usage from `now` on. Returns 0 or ERR_NOMEM. */
int loadprof_reset(loadprof_t *p, double now);
/* Adds usage (cpu, mem) over [start, end), clipped to the profile's start; end may be INFINITY.
 * Usage may exceed capacity (running tasks can overcommit). Returns 0, ERR_INVAL (end < start,
 * negative usage) or ERR_NOMEM (profile unchanged). */
int loadprof_add(loadprof_t *p, double start, double end, double cpu, double mem);
/* Earliest time t >= the profile's start such that (cpu, mem) fits under capacity on all of
 * [t, t + dur); dur may be INFINITY ("from t on, for good"). INFINITY when the request exceeds
 * the capacity, or never fits. */
double loadprof_fit(const loadprof_t *p, double cpu, double mem, double dur);
/* The time of the last change: from then on usage is constant. */
double loadprof_end(const loadprof_t *p);
/* Usage at time t (cpu and mem written through the pointers, either may be NULL). */
void loadprof_at(const loadprof_t *p, double t, double *cpu, double *mem);

#endif
