/* rng.c - splitmix64 and its draws (common/rng.h). */
#include "common/rng.h"

#include <math.h>

#define RNG__GAMMA 0x9e3779b97f4a7c15ull

/* splitmix64's output function: a bijective mix of 64 bits. */
static uint64_t rng__mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
    r->s = seed ^ RNG__GAMMA;
}

void rng_seed_stream(struct rng *r, uint64_t seed, uint64_t stream)
{
    /* Each half through its own mix before they meet, so no linear relation between seed and
     * stream maps two pairs onto one start. */
    r->s =
        rng__mix(seed + RNG__GAMMA) ^ rng__mix((stream ^ 0x5851f42d4c957f2dull) + 2 * RNG__GAMMA);
}

uint64_t rng_next(struct rng *r)
{
    return rng__mix(r->s += RNG__GAMMA);
}

double rng_unif(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = rng_next(r);
        if (x < lim)
            return x % n;
    }
}

int rng_bernoulli(struct rng *r, double p)
{
    if (!(p > 0))
        return 0;
    if (p >= 1)
        return 1;
    return rng_unif(r) < p;
}

double rng_exp(struct rng *r, double mean)
{
    if (!(mean > 0))
        return 0;
    return -mean * log1p(-rng_unif(r));
}

double rng_normal(struct rng *r)
{
    double u1 = rng_unif(r), u2 = rng_unif(r);
    if (u1 < 1e-300) /* log(0) */
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_lognormal(struct rng *r, double mu, double sigma)
{
    return exp(mu + sigma * rng_normal(r));
}

double rng_pareto(struct rng *r, double xm, double alpha)
{
    if (!(xm > 0) || !(alpha > 0))
        return xm;
    double u = 1.0 - rng_unif(r); /* (0, 1] */
    return xm / pow(u, 1.0 / alpha);
}

double rng_draw(void *ctx)
{
    return rng_unif(ctx);
}
