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
/* loadprof_fit, the search begun at `from` (the profile's start when earlier): the same answer
 * whenever no start before `from` fits the request. That holds where a request no larger in
 * cpu, mem and dur was fitted at `from` before, since the profile has only had usage added
 * (loadprof_add never frees room). */
double loadprof_fit_from(const loadprof_t *p, double cpu, double mem, double dur, double from);

/* A caller's memory of its last fit, for a run of fits into one growing profile (a queue's
 * simulation, where a job's tasks are mostly alike): a value, zeroed (or loadprof_hint_clear)
 * after every loadprof_reset. */
typedef struct loadprof_hint {
    double cpu, mem, dur, at; /* private: the last request and where it fitted */
    int set;                  /* private */
} loadprof_hint_t;
static inline void loadprof_hint_clear(loadprof_hint_t *h)
{
    h->set = 0;
}
/* loadprof_fit, starting where the hint's request fitted when this one is no smaller in cpu,
 * mem and dur (INFINITY at once when that one never fitted); the hint then remembers this
 * request. Exactly loadprof_fit's answer as long as only loadprof_add touched the profile since
 * the hint was cleared. Why: a simulation of Q alike tasks scanned the profile from its start
 * for each, O(Q x steps) per wait-time matrix (most of the PN's own CPU per task in a burst). */
double loadprof_fit_hinted(const loadprof_t *p, loadprof_hint_t *h, double cpu, double mem,
                           double dur);

/* One interval from the profile's start: usage (cpu, mem) until `end`. */
typedef struct loadprof_item {
    double end, cpu, mem;
} loadprof_item_t;
/* As loadprof_reset(p, now) then loadprof_add(p, now, items[i].end, cpu, mem) for every item
 * (ends at or before now add nothing; INFINITY is allowed), in O(n log n) where the adds took
 * O(n^2) (each end inserted by moving the steps after it). The items are reordered (sorted by
 * end, latest first). Sums may differ from the adds' in the last bits (another order of
 * addition). Returns 0, ERR_INVAL (NaN or negative usage; the profile then empty from now) or
 * ERR_NOMEM. */
int loadprof_reset_ends(loadprof_t *p, double now, loadprof_item_t *items, size_t n);
/* The time of the last change: from then on usage is constant. */
double loadprof_end(const loadprof_t *p);
/* Usage at time t (cpu and mem written through the pointers, either may be NULL). */
void loadprof_at(const loadprof_t *p, double t, double *cpu, double *mem);

#endif
