/* straggler_sim.h - `paddock-sim stragglers`: one job at a time on a shared cluster with injected
 * stragglers, under four correction modes that use the JM's own policy code (jm/correct.h for
 * queued tasks, jm/speculate.h for running ones; issue 15, Apollo §3.4).
 *
 * Model (our choices where the paper is silent; docs/stragglers.md):
 *  - The cluster: `nodes` nodes of `slots` slots, each with a FIFO local queue (a task takes one
 *    slot). Foreign work (other jobs) arrives at every node as a Poisson stream of tasks with
 *    exponential run times of the job's mean task estimate, at utilisation `load`, plus bursts
 *    of burst_size x slots such tasks at rate `burst_rate` per node per 100 mean task times
 *    (another JM queuing there at the same moment: the case Apollo's corrections target). The
 *    job starts after a warm-up of 5 mean task times.
 *  - The job is a shipped workload (WfCommons; tools/sim/cluster.h loads it): its tasks with
 *    their dependencies (task and stage barriers), each with the spec's runtime_s as the JM's
 *    estimate R. An attempt runs R x noise (lognormal, noise_sigma) x, with probability
 *    straggler_prob, U[straggler_min, straggler_max], x slow_factor on node 0 (the slow node).
 *    Every draw of attempt k of task t comes from its own stream, so every mode faces the same
 *    original attempts.
 *  - The JM's side runs through the daemon's own modules: jm/dispatch.h holds the job's tokens
 *    (default nodes x slots) and opportunistic allowance; ready tasks go out in the daemon's
 *    order (jm/readyq.h: the highest bottom level first) only while the dispatcher gives a unit
 *    (each task costs one, as it takes one slot); a duplicate or a speculative copy needs
 *    jm/attempt.h's copy gate (attempt_copy_class: the task allows copies, `"speculate": false`
 *    is honoured, and a unit of the tokens or the allowance is free, counting the opportunistic
 *    units extras hold, as jm/daemon/jmd_spec.c does), and a task that forbids copies is moved
 * instead of duplicated.
 *  - The JM places a ready task where its view's wait plus R is least (the view: each node's
 *    expected wait for a new task, forward-simulated from the estimates like pn/matrix.h,
 *    refreshed every 4 ticks as the RM's matrices would be, plus what the JM itself queued
 *    since); the PNs' reports on its own queued tasks are fresh every tick. Every tick (R_typ /
 *    4, at least a 1/400 of the job's ideal length) it re-evaluates:
 *      none       nothing;
 *      move       queued tasks, correct_decide(CORRECT_MODE_MOVE): the attempt is cancelled
 *                 and the task queued again at the better node;
 *      duplicate  queued tasks, correct_decide(CORRECT_MODE_DUPLICATE): a second attempt is
 *                 queued at the better node, the first of the two to start wins and the other
 *                 is discarded (speculate_task_started);
 *      speculate  queued tasks as `queued_mode` (the default chosen in docs/stragglers.md), and
 *                 running tasks through speculate_check: progress is the PN's CPU-time reading
 *                 (the true fraction done x lognormal noise 0.1), the stage's finished durations
 *                 per unit of estimate are the baseline (stage_scale = the task's R), C of a
 *                 copy is the best other node's wait + R x the stage's median ratio; the first to
 *                 finish wins and the other is killed (speculate_task_finished).
 *  - Deadlines: each run's deadline is the makespan of the same job, seed and background without
 *    injected stragglers (mode none) x `slack`, on the same engine.
 * This model is the slice engine's (straggler_sim.c); the default engine is the cluster
 * simulator (straggler_cluster.h), which runs the same four modes in the simulated JM.
 * Same inputs and seed, same result.
 */
#ifndef PADDOCK_TOOLS_SIM_STRAGGLER_SIM_H
#define PADDOCK_TOOLS_SIM_STRAGGLER_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "jm/correct.h"
#include "jm/speculate.h"
#include "jm/spec.h"

enum straggler_mode {
    STRAGGLER_NONE = 0,
    STRAGGLER_MOVE,
    STRAGGLER_DUPLICATE,
    STRAGGLER_SPECULATE,
    STRAGGLER_NMODES
};

/* "none", "move", "duplicate", "speculate". */
const char *straggler_mode_name(enum straggler_mode m);

/* What the cluster does (public value; straggler_cond_default then adjust). */
struct straggler_cond {
    size_t nodes;                  /* default 20 */
    size_t slots;                  /* per node, default 4 */
    double load;                   /* foreign utilisation, default 0.5 */
    double burst_rate;             /* bursts per node per 100 mean task times, default 3 */
    double burst_size;             /* x slots foreign tasks per burst, default 3 */
    double noise_sigma;            /* default 0.2 */
    double straggler_prob;         /* per attempt, default 0.05 */
    double straggler_min;          /* default 3 */
    double straggler_max;          /* default 10 */
    double slow_factor;            /* node 0's slowdown, default 4 (1: no slow node) */
    size_t tokens;                 /* the job's tokens (0, the default: nodes x slots) */
    double opp_factor;             /* its opportunistic allowance per token (default 1) */
    enum correct_mode queued_mode; /* what speculate does with queued tasks */
    struct correct_config correct; /* the JM's rules, defaults unless changed */
    struct speculate_config speculate;
};

void straggler_cond_default(struct straggler_cond *c);

/* One job's run. */
struct straggler_run {
    double makespan_s;
    long copies_started; /* duplicates and speculative copies */
    long copies_won;     /* a duplicate that started first, a copy that finished first */
    long moves;
    long dups_started, dups_won; /* of copies_*: the duplicates of queued tasks */
    long spec_started, spec_won; /* ... and the speculative copies of running ones */
    long copies_gated;           /* copies the policy wanted but no unit was free for */
    double work_s;               /* slot-seconds run by the job's attempts, losers included */
    double useful_s;             /* slot-seconds of the winning attempts */
};

/* Runs one job (BORROWED spec) under mode m. ERR_NOMEM or ERR_INVAL. */
int straggler_sim_job(const struct spec *sp, enum straggler_mode m, const struct straggler_cond *c,
                      uint64_t seed, struct straggler_run *out);

/* The whole experiment. */
enum straggler_engine {
    STRAGGLER_ENGINE_CLUSTER = 0, /* the cluster simulator (straggler_cluster.h; the default) */
    STRAGGLER_ENGINE_SLICE,       /* this file's own slots and FIFO queues (the old figures) */
};

struct straggler_sim_config {
    int engine;            /* enum straggler_engine */
    const char *workloads; /* directory of workloads (default tests/data/wfcommons) */
    const char *only;      /* when set, only workloads whose name contains it */
    size_t runs;           /* seeds per workload, default 10 */
    uint64_t seed;         /* default 1 */
    double slack;          /* deadline = no-straggler makespan x slack, default 1.2 */
    struct straggler_cond cond;
};

void straggler_sim_config_default(struct straggler_sim_config *c);

struct straggler_mode_result {
    double makespan_p50_s, makespan_p99_s;
    double slowdown_p50, slowdown_p99; /* makespan / the no-straggler makespan */
    double missed_fraction;
    double slowdown_mean;
    long copies_started, copies_won, moves;
    long dups_started, dups_won, spec_started, spec_won;
    long copies_gated;
    double extra_work_fraction; /* (work - useful) / useful, over all runs */
    double work_vs_none;        /* work / the work of mode none (killed stragglers save some) */
};

struct straggler_sim_result {
    size_t workloads, runs; /* runs per mode */
    struct straggler_mode_result m[STRAGGLER_NMODES];
};

/* Loads the workloads and runs every one `runs` times under every mode. ERR_* with msg. */
int straggler_sim_run(const struct straggler_sim_config *c, struct straggler_sim_result *out,
                      char *msg, size_t cap);

#endif
