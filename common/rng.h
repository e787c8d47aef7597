/* rng.h - one small random number generator for the whole tree: splitmix64 (Steele, Lea and
 * Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), 64 bits of state,
 * every seed valid, the same sequence on every platform. Not for secrets (common/id.h draws
 * from the OS for those).
 *
 * A public value struct the caller owns and seeds; `s` may be set directly (a caller that
 * stored its raw state). Pure: no globals, no clock.
 */
#ifndef PADDOCK_COMMON_RNG_H
#define PADDOCK_COMMON_RNG_H

#include <stdint.h>

struct rng {
    uint64_t s; /* the state: any value */
};

/* The state for `seed` (seeds 0, 1, 2 ... give unrelated sequences). */
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, 1), 53 bits. */
double rng_unif(struct rng *r);
/* Exponential with the given mean (> 0). */
double rng_exp(struct rng *r, double mean);
/* rng_unif for callbacks that take a draw function and a context (jm/place.h place_draw_fn):
 * ctx is a struct rng *. */
double rng_draw(void *ctx);

#endif
