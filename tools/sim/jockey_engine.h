/* jockey_engine.h - a small discrete-event engine for `paddock-sim jockey`: one job on a cluster
 * slice with runtime noise, failures, stragglers, changing load and fluctuating spare capacity,
 * driven in virtual time by the JM's own modules (jm/dag.h for the task graph, jm/controller.h
 * for the allocation, jm/progress.h for progress, jm/profile.h for the training profile).
 *
 * The engine plays the cluster: it grants the guaranteed tokens a policy asks for at once, lets
 * the job run regular tasks up to them and opportunistic tasks up to the allowance while spare
 * capacity lasts, preempts opportunistic tasks (losing their work) when spare capacity shrinks,
 * and upgrades them to regular when a token frees up (Apollo §3.5). Everything random is drawn
 * from streams derived from the run's seed per task and attempt, so every policy faces the same
 * conditions in the same run.
 */
#ifndef PADDOCK_TOOLS_SIM_JOCKEY_ENGINE_H
#define PADDOCK_TOOLS_SIM_JOCKEY_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jm/controller.h"
#include "jm/dag.h"
#include "jm/jsim.h"
#include "jm/profile.h"
#include "jm/progress.h"
#include "jm/spec.h"

/* What the cluster does to the job in one run. */
struct jockey_cond {
    double noise_sigma;    /* per-task run-time noise, lognormal sigma (median 1) */
    double slow_sigma;     /* whole-run slowdown, lognormal sigma */
    double phase_sigma;    /* cluster load phases: per-phase slowdown, lognormal sigma */
    double phase_mean_s;   /* mean phase length (exponential); 0 = no phases */
    double fail_prob;      /* per attempt */
    double straggler_prob; /* per attempt: run time x U(straggler_min, straggler_max) */
    double straggler_min, straggler_max;
    double init_s;          /* dispatch-to-running latency: init_s + Exp(init_s) */
    double spare_max;       /* spare tokens: U(0, spare_max) per period, 0 with spare_zero_prob */
    double spare_zero_prob; /* probability that a spare period has none (a competing flood) */
    double spare_mean_s;    /* mean length of a spare period (exponential); 0 = never spare */
};

/* Conditions of the judged runs and of the earlier training run (milder, no spare capacity). */
void jockey_cond_judged(struct jockey_cond *c, double deadline_s, double spare_max);
void jockey_cond_training(struct jockey_cond *c);

enum jockey_policy {
    JOCKEY_POLICY_JOCKEY = 0, /* controller over the simulator's C(p, a), every period */
    JOCKEY_POLICY_NOADAPT,    /* the controller's first decision, kept for the whole run */
    JOCKEY_POLICY_AMDAHL,     /* controller over the Amdahl model, every period */
    JOCKEY_POLICY_MAX,        /* max_tokens throughout */
    JOCKEY_POLICY_FIXED,      /* a given allocation throughout (training runs) */
    JOCKEY_NPOLICIES
};

const char *jockey_policy_name(enum jockey_policy p);

/* Everything shared by the runs of one workload (all BORROWED by the engine). */
struct jockey_world {
    const struct spec *spec;
    const jsim_job_t *job; /* priorities */
    dag_t *dag;            /* reset at the start of every run */
    double deadline_s;
    int max_tokens; /* the cluster slice: the max policy's allocation */
    const struct progress_model *pm;
    const jsim_table_t *table;     /* JOCKEY, NOADAPT */
    const struct amdahl *amdahl;   /* AMDAHL */
    struct controller_config ccfg; /* period, slack, hysteresis, dead zone */
    struct utility utility;
    FILE *trace;               /* when non-NULL, every controller decision is printed */
    const double *stage_ratio; /* per stage: profiled run time per second of estimate; when set,
                                  the jockey policy passes the observed speed (controller.h) */
    int hold_runnable;         /* controller policies hold at most what they can run now */
    double change_at_s;        /* > 0: at this time the deadline becomes change_to_s */
    double change_to_s;
};

struct jockey_result {
    double completion_s; /* virtual time the last task finished */
    double alloc_mean;   /* time-averaged guaranteed tokens over the run */
    double work_s;       /* the run's work: sum of first-attempt run times (no failures) */
    int oracle;          /* ceil(work / deadline) */
    int met;             /* completion <= deadline (the changed one, if it changed) */
    double deadline_s;   /* the deadline the run was judged against */
    double alloc_before; /* time-averaged tokens before the deadline change (0 without) */
    double alloc_after;  /* ... and after it */
    int first_tokens;    /* the first allocation */
    int peak_tokens;     /* largest allocation */
    long attempts, failures, preemptions, upgrades, opportunistic_starts;
    long downgrades; /* cluster engine: regular tasks turned opportunistic by a lower grant */
};

/* Attempts recorded for a profile (training): grows as needed; caller owns (mem_free(a.v)). */
struct jockey_attempts {
    struct profile_attempt *v;
    size_t n, cap;
};

/* Runs the job once under policy p (fixed_tokens for JOCKEY_POLICY_FIXED) with conditions c and
 * seed. rec may be NULL. Returns 0, ERR_NOMEM, or a module's error. */
int jockey_engine_run(const struct jockey_world *w, enum jockey_policy p, int fixed_tokens,
                      const struct jockey_cond *c, uint64_t seed, struct jockey_attempts *rec,
                      struct jockey_result *out);

#endif
