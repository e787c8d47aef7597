/* engine_noise.h - what the simulated cluster does to tasks and nodes: run-time variance with a
 * heavy tail, stragglers, task failures, node loss, and fluctuating spare capacity.
 *
 * Each model is a pure function of its parameters and a random stream (tools/sim/engine.h), so
 * a run is reproducible from its seed and tests/sim checks the distributions directly.
 *
 * Run time of an attempt whose true work is `base_s` seconds:
 *   base_s * V * H * S, where
 *   V ~ lognormal(-sigma^2/2, sigma): mean 1, the task-to-task variance (runtime_sigma);
 *   H = Pareto(1, tail_alpha) with probability tail_prob, else 1: a heavy tail;
 *   S = U(straggler_min, straggler_max) with probability straggler_prob, else 1: a straggler
 *       (a slow machine or disk; Apollo §3.4 "Straggler Detection").
 * Failure: with probability fail_prob an attempt fails after U(0, 1) of its run time.
 * Node loss: each node is lost after Exp(node_mtbf_s) of uptime and comes back (a new boot, an
 *   empty queue) after Exp(node_down_s).
 * Slow nodes: the first slow_nodes nodes run every job attempt slow_factor times longer (a slow
 *   machine or disk the JM does not know of; the old straggler experiment's node 0).
 * Spare capacity: a node's background (other tenants') load changes in phases of Exp(phase_s);
 *   each phase multiplies the node's background arrival rate by lognormal(-s^2/2, s) with
 *   s = phase_sigma, so the mean load stays at its target while single nodes swing.
 */
#ifndef PADDOCK_TOOLS_SIM_ENGINE_NOISE_H
#define PADDOCK_TOOLS_SIM_ENGINE_NOISE_H

#include <stddef.h>

#include "tools/sim/engine.h"

/* Public value struct: engine_noise_default() then adjust. Zero disables a model. */
struct engine_noise {
    double runtime_sigma;  /* lognormal sigma of V (default 0.3) */
    double tail_prob;      /* probability of a heavy-tail draw (default 0.02) */
    double tail_alpha;     /* Pareto shape of H (default 1.5) */
    double straggler_prob; /* default 0.01 */
    double straggler_min;  /* default 2 */
    double straggler_max;  /* default 5 */
    double fail_prob;      /* per attempt (default 0.01) */
    double node_mtbf_s;    /* mean uptime of a node, seconds (default 0: no loss) */
    double node_down_s;    /* mean downtime (default 60) */
    double phase_s;        /* mean length of a background-load phase (default 30) */
    double phase_sigma;    /* lognormal sigma of a phase's load multiplier (default 0.8) */
    size_t slow_nodes;     /* nodes 0..slow_nodes-1 are slow (default 0) */
    double slow_factor;    /* ... by this factor (default 1) */
};

void engine_noise_default(struct engine_noise *n);
/* Every model off: run time = base, no failure, no loss, constant background rate. */
void engine_noise_none(struct engine_noise *n);

/* One attempt's run time for true work base_s; *straggler (may be NULL) is set to 1 when the
 * straggler factor applied. */
double engine_noise_runtime(const struct engine_noise *n, struct rng *r, double base_s,
                            int *straggler);

/* Whether an attempt of run time run_s fails; when it does, returns the time into the attempt
 * at which it fails (in [0, run_s)); otherwise returns a negative value. */
double engine_noise_failure(const struct engine_noise *n, struct rng *r, double run_s);

/* The run-time factor of node `node`: slow_factor on a slow node, else 1. */
double engine_noise_node_factor(const struct engine_noise *n, size_t node);

/* Uptime before the next loss of a node (INFINITY when node loss is off), and the downtime. */
double engine_noise_uptime(const struct engine_noise *n, struct rng *r);
double engine_noise_downtime(const struct engine_noise *n, struct rng *r);

/* A background-load phase: its length (INFINITY when phases are off) and its rate multiplier
 * (mean 1; exactly 1 when phase_sigma is 0). */
double engine_noise_phase_len(const struct engine_noise *n, struct rng *r);
double engine_noise_phase_mult(const struct engine_noise *n, struct rng *r);

#endif
