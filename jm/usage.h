/* usage.h - a job's token usage over time: its skyline (Morpheus §5, "resource model").
 *
 * The JM feeds it the token units its running tasks hold (regular and opportunistic alike; a
 * task's units are arbiter_task_tokens of its cpu and memory at the grant's token size) as
 * events: at time t, `delta` units started (> 0) or stopped (< 0). The module integrates the
 * units in use over time from the first event with a positive delta (the first task start) into
 * steps of step_ms, starting at USAGE_STEP_MS; when the job outgrows max_steps steps, adjacent
 * pairs are merged and the step doubles, so any job fits in max_steps. It exports, per step, the
 * average units in use x 1000 (proto_sky_t.milli; the last, partial step is averaged over a whole
 * step) and the total token-ms.
 *
 * Events may come out of order (a node's status reports a start a little in the past): an event
 * at t before the latest time seen counts its delta from t, exactly as if it had come in order.
 * An event before the first start is counted from the first start. Integrals are kept in
 * integer unit-ms, so the numbers are exact.
 *
 * Pure: no clock; time is the caller's (milliseconds on any one clock). A public value struct,
 * caller owns it; no allocation.
 */
#ifndef PADDOCK_JM_USAGE_H
#define PADDOCK_JM_USAGE_H

#include <stdint.h>

#define USAGE_STEP_MS   1000u /* the first step */
#define USAGE_MAX_STEPS 512u  /* = PROTO_MAX_SKYLINE */

struct usage {
    /* all private: read through the functions below */
    int started;      /* the first start was seen */
    int64_t origin;   /* its time */
    int64_t last;     /* the latest time seen (integrated up to here) */
    int64_t level;    /* units in use at `last` */
    uint32_t step_ms; /* current step */
    uint32_t max_steps;
    uint32_t nsteps;              /* steps touched so far: ceil((last - origin) / step_ms) */
    int64_t acc[USAGE_MAX_STEPS]; /* unit-ms per step */
};

/* Starts empty with steps of USAGE_STEP_MS and at most max_steps steps (clamped to
 * 2..USAGE_MAX_STEPS). */
void usage_init(struct usage *u, uint32_t max_steps);

/* At time t_ms, `delta` token units started (> 0) or stopped (< 0). Before the first start an
 * event with delta <= 0 is ignored. */
void usage_add(struct usage *u, int64_t t_ms, int64_t delta);

/* Integrates up to t_ms (the job's end; units still counted as in use run until then). Later
 * events still count. */
void usage_finish(struct usage *u, int64_t t_ms);

/* True once a task started. */
int usage_started(const struct usage *u);
/* The first start (caller's clock); 0 before it. */
int64_t usage_origin(const struct usage *u);
/* Total token-ms used so far (integrated up to the latest time seen). */
uint64_t usage_token_ms(const struct usage *u);
/* The current step in ms. */
uint32_t usage_step_ms(const struct usage *u);

/* Writes the skyline: per step, average units in use x 1000 (rounded to nearest, negative
 * clamped to 0), for min(steps, cap) steps. Returns the number of steps (0 before any start). */
uint32_t usage_export(const struct usage *u, uint32_t *milli, uint32_t cap);

#endif
