/* engine.h - the simulator's discrete-event core: a virtual clock, an event queue with a
 * deterministic tie-break, and seeded random streams (docs/architecture.md, "The
 * simulator"; one deterministic fixture for tests and the simulator alike).
 *
 * Time is virtual, in seconds (a double), and only moves when an event runs: engine_step pops
 * the earliest event, sets the clock to its time and calls it. Events at the same time run in
 * the order they were scheduled (common/heap.h breaks key ties by insertion), so a run is a
 * pure function of its inputs and seed. An event may schedule further events, at its own time
 * or later, never earlier.
 *
 * Nothing here reads a clock, calls rand() or touches I/O; the policy modules the engine drives
 * (pn/queue, pn/matrix and the jm/ modules) stay pure, and the engine is their caller supplying
 * `now` and the random draws.
 */
#ifndef PADDOCK_TOOLS_SIM_ENGINE_H
#define PADDOCK_TOOLS_SIM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

/* A seeded random stream (xoshiro256**, seeded through splitmix64). A value: caller owns. Two
 * streams seeded with the same (seed, stream) produce the same sequence; different stream
 * numbers give independent-looking sequences, so every consumer (a node, a job, a noise model)
 * can draw from its own stream and a change in one does not shift the others. */
struct engine_rng {
    uint64_t s[4]; /* private */
};

void engine_rng_seed(struct engine_rng *r, uint64_t seed, uint64_t stream);
uint64_t engine_rng_u64(struct engine_rng *r);
/* Uniform in [0, 1). */
double engine_rng_unif(struct engine_rng *r);
/* Uniform integer in [0, n) (0 when n == 0). */
uint64_t engine_rng_below(struct engine_rng *r, uint64_t n);
/* 1 with probability p (p <= 0: never, p >= 1: always). */
int engine_rng_bernoulli(struct engine_rng *r, double p);
/* Exponential with the given mean (> 0; 0 for a mean <= 0). */
double engine_rng_exp(struct engine_rng *r, double mean);
/* Standard normal (Box-Muller; one draw pair per call, so the stream position is predictable). */
double engine_rng_normal(struct engine_rng *r);
/* Lognormal exp(mu + sigma * N(0,1)); median exp(mu), mean exp(mu + sigma^2 / 2). */
double engine_rng_lognormal(struct engine_rng *r, double mu, double sigma);
/* Pareto with scale xm > 0 and shape alpha > 0: P(X > x) = (xm / x)^alpha for x >= xm; mean
 * alpha * xm / (alpha - 1) when alpha > 1 (a heavy tail: infinite variance for alpha <= 2). */
double engine_rng_pareto(struct engine_rng *r, double xm, double alpha);

typedef struct engine engine_t;

/* An event: called with the engine (engine_now() is the event's time), the context and the
 * argument it was scheduled with. */
typedef void engine_fn(engine_t *e, void *ctx, uint64_t arg);

/* New engine at virtual time 0 with no events. Returns 0 and stores it in *out (caller owns;
 * engine_destroy), or ERR_NOMEM. */
int engine_new(engine_t **out);
/* Frees the engine and its pending events (their contexts are borrowed and not touched);
 * nullifies the caller's reference. NULL-safe. */
void engine_destroy(engine_t **p);

double engine_now(const engine_t *e);

/* Schedules fn(ctx, arg) at virtual time t (ctx borrowed until the event runs or the engine is
 * destroyed). ERR_INVAL when t is NaN or earlier than now; ERR_NOMEM (nothing scheduled). */
int engine_at(engine_t *e, double t, engine_fn *fn, void *ctx, uint64_t arg);
/* engine_at(e, now + dt, ...); ERR_INVAL for a negative or NaN dt. */
int engine_after(engine_t *e, double dt, engine_fn *fn, void *ctx, uint64_t arg);

/* Runs the earliest event. Returns 1 when one ran, 0 when none is pending. */
int engine_step(engine_t *e);
/* Runs events in order while their time is <= until and engine_stop has not been called;
 * the clock ends at the last event run (it is not advanced to `until`). Returns how many ran. */
uint64_t engine_run(engine_t *e, double until);
/* Makes the current engine_run return after the event that calls it. */
void engine_stop(engine_t *e);

size_t engine_pending(const engine_t *e);
uint64_t engine_events_run(const engine_t *e); /* over the engine's life */

#endif
