/* rng.h - the one random number generator of the whole tree: splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), 64 bits of state,
 * every seed valid, the same sequence on every platform, and the draws the simulators need
 * (uniform, integer below n, Bernoulli, exponential, normal, lognormal, Pareto). Not for
 * secrets (common/id.h draws from the OS for those).
 *
 * A public value struct the caller owns and seeds; `s` may be set directly (a caller that
 * stored its raw state). Pure: no globals, no clock.
 *
 * Streams: rng_seed_stream gives each consumer of one run (a node, a job, a noise model) its own
 * sequence from (seed, stream), so a change in what one consumer draws does not shift the
 * others. Every splitmix64 state lies on the same cycle of 2^64 outputs; a stream's start is a
 * hash of (seed, stream), so two streams overlap only if their starts fall within a run's draws
 * of each other on that cycle (about n^2 / 2^64 for n draws: never in practice).
 */
#ifndef PADDOCK_COMMON_RNG_H
#define PADDOCK_COMMON_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s; /* the state: any value */
};

/* The state for `seed` (seeds 0, 1, 2 ... give unrelated sequences). */
void rng_seed(struct rng *r, uint64_t seed);
/* The state for stream `stream` of `seed`: the same (seed, stream) gives the same sequence;
 * (seed, stream) and (seed + 1, stream - 1) do not collide. */
void rng_seed_stream(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, 1), 53 bits. */
double rng_unif(struct rng *r);
/* Uniform integer in [0, n), exactly (rejection); 0 when n == 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* 1 with probability p (p <= 0 or NaN: never, p >= 1: always); draws once when 0 < p < 1. */
int rng_bernoulli(struct rng *r, double p);
/* Exponential with the given mean (> 0); 0 for a mean <= 0 or NaN (no draw). */
double rng_exp(struct rng *r, double mean);
/* Standard normal (Box-Muller, one value per call from two uniform draws, so a stream's
 * position after k calls is known). */
double rng_normal(struct rng *r);
/* exp(mu + sigma * N(0,1)): median exp(mu), mean exp(mu + sigma^2 / 2). */
double rng_lognormal(struct rng *r, double mu, double sigma);
/* Pareto with scale xm > 0 and shape alpha > 0: P(X > x) = (xm / x)^alpha for x >= xm; mean
 * alpha * xm / (alpha - 1) when alpha > 1. Returns xm (no draw) for a bad xm or alpha. */
double rng_pareto(struct rng *r, double xm, double alpha);
/* rng_unif for callbacks that take a draw function and a context (jm/place.h place_draw_fn):
 * ctx is a struct rng *. */
double rng_draw(void *ctx);

#endif
