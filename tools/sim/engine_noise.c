#include "tools/sim/engine_noise.h"

#include <math.h>

void engine_noise_default(struct engine_noise *n)
{
    n->runtime_sigma = 0.3;
    n->tail_prob = 0.02;
    n->tail_alpha = 1.5;
    n->straggler_prob = 0.01;
    n->straggler_min = 2.0;
    n->straggler_max = 5.0;
    n->fail_prob = 0.01;
    n->node_mtbf_s = 0;
    n->node_down_s = 60;
    n->phase_s = 30;
    n->phase_sigma = 0.8;
    n->slow_nodes = 0;
    n->slow_factor = 1.0;
}

void engine_noise_none(struct engine_noise *n)
{
    engine_noise_default(n);
    n->runtime_sigma = 0;
    n->tail_prob = 0;
    n->straggler_prob = 0;
    n->fail_prob = 0;
    n->node_mtbf_s = 0;
    n->phase_s = 0;
    n->phase_sigma = 0;
}

double engine_noise_runtime(const struct engine_noise *n, struct rng *r, double base_s,
                            int *straggler)
{
    /* Every draw is taken whether or not its model applies, so a model's parameters do not
       shift the stream position seen by the next attempt. */
    double z = rng_normal(r);
    double u_tail = rng_unif(r);
    double x_tail = rng_pareto(r, 1.0, n->tail_alpha > 0 ? n->tail_alpha : 1.0);
    double u_strag = rng_unif(r);
    double x_strag = rng_unif(r);
    double s = n->runtime_sigma > 0 ? n->runtime_sigma : 0;
    double t = base_s * exp(-0.5 * s * s + s * z);
    if (u_tail < n->tail_prob && n->tail_alpha > 0)
        t *= x_tail;
    int strag = u_strag < n->straggler_prob;
    if (strag) {
        double lo = n->straggler_min, hi = n->straggler_max > lo ? n->straggler_max : lo;
        t *= lo + (hi - lo) * x_strag;
    }
    if (straggler != NULL)
        *straggler = strag;
    return t;
}

double engine_noise_failure(const struct engine_noise *n, struct rng *r, double run_s)
{
    double u = rng_unif(r);
    double at = rng_unif(r) * run_s;
    return u < n->fail_prob ? at : -1.0;
}

double engine_noise_node_factor(const struct engine_noise *n, size_t node)
{
    return node < n->slow_nodes && n->slow_factor > 0 ? n->slow_factor : 1.0;
}

double engine_noise_uptime(const struct engine_noise *n, struct rng *r)
{
    if (!(n->node_mtbf_s > 0))
        return INFINITY;
    return rng_exp(r, n->node_mtbf_s);
}

double engine_noise_downtime(const struct engine_noise *n, struct rng *r)
{
    return rng_exp(r, n->node_down_s > 0 ? n->node_down_s : 1.0);
}

double engine_noise_phase_len(const struct engine_noise *n, struct rng *r)
{
    if (!(n->phase_s > 0))
        return INFINITY;
    return rng_exp(r, n->phase_s);
}

double engine_noise_phase_mult(const struct engine_noise *n, struct rng *r)
{
    double s = n->phase_sigma > 0 ? n->phase_sigma : 0;
    if (s == 0)
        return 1.0;
    return rng_lognormal(r, -0.5 * s * s, s);
}
