/* engine.h - the simulator's discrete-event core: a virtual clock, an event queue with a
 * deterministic tie-break (docs/architecture.md, "The simulator"; one deterministic fixture for
 * tests and the simulator alike). Random streams are common/rng.h's (rng_seed_stream): one
 * generator for the simulators, the JM's quote and the tests.
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

#include "common/rng.h" /* the simulators' random streams: rng_seed_stream and its draws */

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
