/* rng.c - splitmix64 (common/rng.h). */
#include "common/rng.h"

#include <math.h>

void rng_seed(struct rng *r, uint64_t seed)
{
    r->s = seed ^ 0x9e3779b97f4a7c15ull;
}

uint64_t rng_next(struct rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double rng_unif(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double rng_exp(struct rng *r, double mean)
{
    return -mean * log1p(-rng_unif(r));
}

double rng_draw(void *ctx)
{
    return rng_unif(ctx);
}
