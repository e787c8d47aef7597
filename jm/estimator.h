/* estimator.h - estimated completion time of a task on a node (Apollo §3.3, §3.4).
 *
 * From §3.3: "Esucc = I + W + R" (1) - I is the initialization time for fetching the files the
 * task needs (0 when cached on the node), W the wait looked up in the node's wait-time matrix
 * with the task's resource request, R the runtime: CPU time plus input bytes over the I/O
 * bandwidth of the read's locality (same node, same rack, other rack; defaults 160/100/80 MB/s,
 * MB = 10^6 bytes, as in Figure 4). "C = Psucc·Esucc + Kfail·(1 − Psucc)·Esucc" (2), Psucc from
 * the node's failure history.
 *
 * Refinement (§3.2): R's CPU part starts from the spec's estimate and, once tasks of the same
 * stage have finished, becomes the stage's observed CPU part scaled by input size.
 * Confidence (§3.4): a matrix aged age_ms >= stale_after_ms is looked up
 * min(stale_max_steps, age_ms / stale_after_ms) cells larger in both dimensions: "when the
 * confidence in the wait-time matrix is low, the scheduler will produce a pessimistic estimate by
 * looking up the wait time of a task consuming more CPU and memory".
 * Randomization (§3.4): a small term draw·random_frac·heartbeat_s is added to E, with draw in
 * [0, 1) supplied by the caller, so different JMs separate almost equal choices.
 *
 * Pure: time (now_ms) and random draws are arguments.
 */
#ifndef PADDOCK_JM_ESTIMATOR_H
#define PADDOCK_JM_ESTIMATOR_H

#include <stddef.h>
#include <stdint.h>

#include "jm/view.h"

#define ESTIMATOR_INF 1e300 /* C of a node that cannot hold the task */

/* Public value struct: estimator_config_default() then adjust. */
struct estimator_config {
    double bw_local_mbs;    /* same node (default 160) */
    double bw_rack_mbs;     /* same rack (default 100) */
    double bw_remote_mbs;   /* other rack (default 80) */
    double staging_mbs;     /* file staging bandwidth for I (default 80) */
    double kfail;           /* failure penalty factor (default 2.0) */
    int64_t stale_after_ms; /* matrix age at which confidence drops (default 3 heartbeats) */
    int stale_max_steps;    /* cap on pessimistic cell steps (default 2) */
    double heartbeat_s;     /* communication interval (default 1.0) */
    double random_frac;     /* random term scale (default 0.05 of the interval) */
};

void estimator_config_default(struct estimator_config *cfg);

/* One input of a task: its size and where its replicas are (node indices of the view; -1 for a
 * node the view does not know, which counts as another rack). */
struct estimator_input {
    uint64_t bytes;
    const int32_t *nodes;
    size_t nnodes;
};

/* What the estimator needs to know about a task (public value struct, borrowed for the call). */
struct estimator_task {
    size_t stage;         /* index for refinement, or SIZE_MAX for none */
    double cpu;           /* cores requested */
    double mem_mb;        /* MiB requested */
    double runtime_s;     /* the spec's (conservative) CPU-time estimate */
    uint64_t input_bytes; /* total of inputs[].bytes */
    const struct estimator_input *inputs;
    size_t ninputs;
    uint64_t file_bytes;          /* files to stage; 0 for none */
    const uint32_t *cached_nodes; /* nodes known to have the files cached (I = 0), sorted */
    size_t ncached;
};

/* The breakdown of one estimate (public value). */
struct estimate {
    double i_s, w_s, r_s; /* initialization, wait, runtime (cpu + io) */
    double io_s;          /* the I/O part of r_s */
    double e_s;           /* I + W + R + random term */
    double c_s;           /* completion time with failures, ESTIMATOR_INF if impossible */
};

typedef struct estimator estimator_t;

/* New estimator for a job with `nstages` stages (refinement statistics per stage). cfg copied;
 * NULL for defaults. ERR_INVAL for a non-positive bandwidth or kfail < 1. */
int estimator_new(const struct estimator_config *cfg, size_t nstages, estimator_t **out);
void estimator_destroy(estimator_t **p);
const struct estimator_config *estimator_config(const estimator_t *est);

/* Feeds back a finished task of `stage`: its execution time (start to end) and the estimator's
 * I/O part for its placement (estimate.io_s; 0 when unknown). The CPU part observed is
 * max(0, exec_s - io_s). Ignored for a bad stage or a non-finite time. */
void estimator_observe(estimator_t *est, size_t stage, uint64_t input_bytes, double exec_s,
                       double io_s);

/* estimator_observe with the task's own estimate (its spec runtime_s; 0: none), so that a
 * stage whose tasks' estimates differ refines each task's own (estimator_cpu_s). Additive. */
void estimator_observe_est(estimator_t *est, size_t stage, uint64_t input_bytes, double exec_s,
                           double io_s, double estimate_s);

/* A stage's observed estimates whose largest is over this times the smallest refine per task. */
#define ESTIMATOR_OWN_SPREAD 1.5

/* Number of finished tasks observed for a stage. */
size_t estimator_observed(const estimator_t *est, size_t stage);

/* The CPU-time part of R for a task: the spec's estimate until its stage has observations; then,
 * where the stage's observed tasks had estimates (estimator_observe_est) differing by more than
 * ESTIMATOR_OWN_SPREAD, the task's estimate × (their CPU parts / their estimates); else (sum of
 * observed CPU parts / sum of observed input bytes) × the task's input bytes when both are
 * positive, else the mean observed CPU part. */
double estimator_cpu_s(const estimator_t *est, const struct estimator_task *t);

/* Estimates task `t` on view node `node` at now_ms with random draw in [0,1). Fills *out and
 * returns out->c_s (ESTIMATOR_INF when the node is down, unknown, or cannot hold the request). */
double estimator_estimate(const estimator_t *est, const view_t *view,
                          const struct estimator_task *t, uint32_t node, int64_t now_ms,
                          double draw, struct estimate *out);

/* Where a new attempt of `t` would end soonest (draw 0.5): the up node of the view with the least
 * estimate, passing over those `skip` names (NULL: none; ctx borrowed for the call). Fills *out
 * and returns the node, or -1 when none qualifies. The JM's speculative copies and duplicates
 * (jm/daemon/jmd_spec_start.c) and the simulator's (tools/sim/cluster_straggler.c) go there. */
typedef int estimator_skip_fn(void *ctx, uint32_t node);
long estimator_best_node(const estimator_t *est, const view_t *view, const struct estimator_task *t,
                         int64_t now_ms, estimator_skip_fn *skip, void *ctx, struct estimate *out);

/* The pessimism steps used for a matrix of this age (0 when fresh). */
int estimator_stale_steps(const estimator_t *est, int64_t age_ms);

#endif
