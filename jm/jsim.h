/* jsim.h - Jockey's job simulator and the remaining-time table C(p, a) (Jockey §4.1).
 *
 * "The job simulator takes as input these statistics, along with the job's algebra (list of
 * stages, tasks and their dependencies), and simulates events in the execution of the job.
 * Events include allocating tasks to machines, restarting failed tasks and scheduling tasks as
 * their inputs become available." From many runs at each allocation a, every sampled instant t of
 * a run that ends at T gives one sample T - t of C(p_t, a).
 *
 * Three pieces, all pure (time is virtual; randomness comes from a caller-seeded jsim_rng):
 *  - jsim_job_t: the job's shape. Tasks belong to stages; a task waits for its explicit
 *    predecessor tasks and for the completion of every stage its stage has a barrier on (a stage
 *    is complete when its tasks are done and the stages it waits for are complete, as in
 *    jm/dag.h). Barriers are never expanded into task edges. Built by hand (tests, simulator) or
 *    from a parsed spec (jsim_job_from_spec, jm/jsim_spec.c).
 *  - struct jsim_model: per stage, what a task's attempt costs: run time and initialization
 *    latency distributions and the failure probability, from a profile (jm/profile.h) or, for
 *    stages the profile does not know, from the tasks' own estimates.
 *  - jsim_table_t: C(p, a) for a grid of allocations and progress buckets, as quantiles.
 *
 * Simulated execution: a tokens; a ready task takes a free token in priority order (longest
 * estimated path to the end of the job first, then task index), holds it for init + run time;
 * with sized tokens (jsim_job_set_tokens) a task holds its cost in token units, so "a tokens" is
 * a units of capacity: the task at the head of the ready list waits until its units are free
 * (no later task overtakes it), and a task costlier than a runs alone;
 * a failed attempt (probability fail_prob) holds it for init + a uniform fraction of the run time
 * and the task goes back to the ready list (at most JSIM_MAX_ATTEMPTS attempts; the last always
 * succeeds so a run terminates).
 */
#ifndef PADDOCK_JM_JSIM_H
#define PADDOCK_JM_JSIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "jm/amdahl.h"
#include "jm/controller.h"
#include "jm/profile.h"
#include "jm/progress.h"

#define JSIM_MAX_TASKS    10000000
#define JSIM_MAX_ATTEMPTS 8
#define JSIM_MAX_ALLOCS   64
#define JSIM_MAX_BUCKETS  1000
#define JSIM_NQ           20 /* quantiles of a C(p, a) cell, at (k + 0.5) / JSIM_NQ */

/* ---- random numbers (splitmix64): a value struct the caller seeds and owns ---- */
/* common/rng's splitmix64 (the same sequence), with the draws the simulator adds. */
struct jsim_rng {
    struct rng g; /* private */
};
void jsim_rng_seed(struct jsim_rng *r, uint64_t seed);
uint64_t jsim_rng_next(struct jsim_rng *r);
double jsim_rng_uniform(struct jsim_rng *r);                 /* [0, 1) */
double jsim_rng_exp(struct jsim_rng *r, double mean);        /* exponential */
double jsim_rng_normal(struct jsim_rng *r);                  /* standard normal */
double jsim_rng_lognormal(struct jsim_rng *r, double sigma); /* median 1 */

/* ---- the job's shape ---- */
typedef struct jsim_job jsim_job_t;

/* A job of ntasks tasks (1..JSIM_MAX_TASKS) in nstages stages (1..ntasks... any >= 1). Tasks start
 * in stage 0 with estimate 1 s. Returns NULL on a bad size or ERR_NOMEM. Caller owns. */
jsim_job_t *jsim_job_new(int nstages, int ntasks);
/* Frees the job and nullifies the caller's reference. NULL and *p == NULL are no-ops. */
void jsim_job_destroy(jsim_job_t **p);

/* Building (before jsim_job_finalize; ERR_STATE after it, ERR_RANGE for a bad index, ERR_INVAL for
 * a non-positive or non-finite estimate, ERR_NOMEM). */
int jsim_job_set_task(jsim_job_t *j, int task, int stage, double est_s);
int jsim_job_add_edge(jsim_job_t *j, int from_task, int to_task);

/* A task's cost in token units (sized tokens, rm/arbiter.h; 0 is taken as 1; default 1). May be
 * set before or after finalize, but not while simulations of the job run. ERR_RANGE, ERR_NOMEM.
 * The Amdahl statistics (jsim_job_amdahl) weight T_s by it: remaining work in token-seconds. */
int jsim_job_set_tokens(jsim_job_t *j, int task, uint32_t tokens);
uint32_t jsim_job_task_tokens(const jsim_job_t *j, int task);
int jsim_job_add_barrier(jsim_job_t *j, int from_stage, int to_stage);

/* Checks the graph (ERR_INVAL naming a task on a cycle when tasks cannot all complete) and
 * computes priorities. After this the job is read-only and may be shared by simulations. After a
 * failure (other than ERR_STATE) the job can only be destroyed. */
int jsim_job_finalize(jsim_job_t *j, char *msg, size_t cap);

int jsim_job_ntasks(const jsim_job_t *j);
int jsim_job_nstages(const jsim_job_t *j);
int jsim_job_stage_size(const jsim_job_t *j, int stage);
int jsim_job_task_stage(const jsim_job_t *j, int task);
double jsim_job_task_est(const jsim_job_t *j, int task);

/* A finalized job's scheduling priority of a task: its estimate plus the longest estimated path
 * after it (larger runs first, as the JM orders ready tasks). 0 before finalize. */
double jsim_job_task_priority(const jsim_job_t *j, int task);

/* Tasks per stage into n[nstages] (for progress_init / amdahl_init). */
void jsim_job_stage_sizes(const jsim_job_t *j, int *n);

/* Longest path of estimated run times through the job (the critical path), seconds. */
double jsim_job_critical_path(const jsim_job_t *j);
/* Sum of estimated run times (total work), seconds. */
double jsim_job_total_work(const jsim_job_t *j);

/* Fills an Amdahl model (jm/amdahl.h) for a finalized job: with model == NULL from the tasks'
 * estimates (l_s = longest estimate in the stage, T_s = sum of estimates), else from the model
 * (l_s = the longest run the profile saw in the stage, T_s = the model's total run time); L_s is
 * the longest path after each stage's tasks with every task weighted by its stage's l. Returns 0,
 * ERR_STATE (not finalized) or ERR_NOMEM. */
struct jsim_model;
int jsim_job_amdahl(const jsim_job_t *j, const struct jsim_model *model, struct amdahl *out);

/* From a parsed and validated job spec (jm/spec.h; borrowed during the call): task i of the
 * spec is task i here, stage s is stage s, estimates are runtime_s, tasks[].after become edges
 * and stages[].after barriers. Returns 0 and a finalized job in *out (caller owns), ERR_TOOBIG
 * over JSIM_MAX_TASKS, ERR_INVAL or ERR_NOMEM with the reason in msg. (jm/jsim_spec.c) */
struct spec;
int jsim_job_from_spec(const struct spec *spec, jsim_job_t **out, char *msg, size_t cap);

/* ---- per-stage attempt model ---- */
struct jsim_stage_model {
    int from_profile;             /* 1: sampled from the quantiles; 0: each task's estimate */
    int by_ratio;                 /* 1: run time = the task's estimate x a sample of ratio_q */
    double runtime_q[PROFILE_NQ]; /* run-time quantiles (s) */
    double runtime_max;           /* the longest run the profile saw (Amdahl's l_s) */
    double ratio_q[PROFILE_NQ];   /* actual / estimated run-time quantiles */
    double init_q[PROFILE_NQ];    /* initialization-latency quantiles (s) */
    double fail_prob;             /* per attempt, clamped to [0, 0.9] */
    double queue_total;           /* Q_s from the profile (0 without) */
    double runtime_total;         /* T_s: profile total, else the sum of estimates */
};

struct jsim_model {
    int nstages;                     /* read-only */
    struct jsim_stage_model *stages; /* owned */
};

/* From a profile: stage s of the job uses the profile stage named stage_names[s] (borrowed);
 * stages the profile lacks (or with no successful tasks) use their tasks' estimates. prof may be
 * NULL (all estimates). When the profile has actual/estimate ratios for a stage, a task's run
 * time is its own estimate times a sampled ratio (tasks keep their differences), else a sample
 * of the stage's run times. A stage with few successful tasks (< 8) keeps its median but takes
 * the job's pooled dispersion (quantiles relative to the median, from the well-sampled stages), and
 * every stage's failure probability is shrunk towards the job-wide rate with a prior worth 20
 * attempts: one run of a one-task stage says nothing about its stragglers or failures. Returns 0,
 * ERR_INVAL or ERR_NOMEM; *m is then owned by the caller (jsim_model_close). */
int jsim_model_init(struct jsim_model *m, const jsim_job_t *j, const char *const *stage_names,
                    const struct profile *prof);
/* Frees the model's arrays; the struct is then empty. NULL-safe. */
void jsim_model_close(struct jsim_model *m);
/* A copy of `m` in which every stage's initialization is its median init_q: a profile's latency
 * tail is mostly time tasks sat queued at busy nodes, which a simulated run would otherwise hold
 * a token for and, with free units, add to the path. Admission's shape (jm/shape.h) and the JM's
 * ETA both simulate on this model, so the ETA comes from admission's model (issue 22). Returns 0
 * or ERR_NOMEM; *out is then owned by the caller (jsim_model_close). */
int jsim_model_init_median(struct jsim_model *out, const struct jsim_model *m);

/* ---- one simulated run ---- */
struct jsim_run_stats {
    double makespan;  /* virtual seconds from start to the last task's end */
    double work;      /* token-seconds used by all attempts */
    long attempts;    /* attempts started */
    long failures;    /* failed attempts */
    int peak_running; /* most token units held at once (attempts, with unit costs) */
};

/* Progress trace of a run: after the k-th task completion at time t[k], progress p[k]. The
 * caller provides arrays of capacity >= ntasks. */
struct jsim_trace {
    double *t, *p;
    int n;   /* written */
    int cap; /* provided */
};

/* Simulates the whole job with `tokens` (>= 1) tokens. pm (borrowed) computes progress for the
 * trace; trace may be NULL. Takes one value from rng as the run's seed; every attempt's draws
 * come from a stream of (that seed, task, attempt), so two runs from equal rng states at
 * different allocations sample the same run times and failures. Returns 0, ERR_INVAL, ERR_STATE
 * (job not finalized) or ERR_NOMEM. */
int jsim_run(const jsim_job_t *j, const struct jsim_model *m, int tokens,
             const struct progress_model *pm, struct jsim_rng *rng, struct jsim_trace *trace,
             struct jsim_run_stats *out);

/* ---- the rest of a run under way (the JM's ETA, issue 22) ---- */

/* Where each task of a job under way stands, for jsim_run_rest. */
enum jsim_rest_state {
    JSIM_REST_PENDING = 0, /* not started (or queued at a node): scheduled by the run */
    JSIM_REST_RUNNING,     /* running: holds its units from time 0 for left_s[task] seconds */
    JSIM_REST_DONE,        /* succeeded before time 0 */
};

/* Simulates what is left of a job under way with `tokens` (>= 1) units, as jsim_run does from
 * time 0 = now: state[task] (an enum jsim_rest_state; borrowed during the call) says which tasks
 * are done, which run (each ending after left_s[task] seconds, borrowed) and which are still to
 * run; tasks still to run take their durations from the model, times `scale` (> 0: how much
 * slower than the model the job's tasks have run). out->makespan is then the time from now to the
 * last task's end; out->attempts counts the attempts started in the run. Returns 0, ERR_INVAL,
 * ERR_STATE (not finalized, or the state leaves a task that can never become ready) or
 * ERR_NOMEM. */
int jsim_run_rest(const jsim_job_t *j, const struct jsim_model *m, int tokens, const uint8_t *state,
                  const double *left_s, double scale, struct jsim_rng *rng,
                  struct jsim_run_stats *out);

/* ---- the table C(p, a) ---- */
typedef struct jsim_table jsim_table_t;

struct jsim_table_config {
    int runs;            /* simulated runs per allocation (default 24) */
    int buckets;         /* progress buckets (default 100) */
    int samples_per_run; /* instants sampled per run (default 200) */
    int max_tokens;      /* largest allocation considered (default: the job's peak parallelism) */
    int nallocs;         /* most grid allocations (default 40, at most JSIM_MAX_ALLOCS) */
};
void jsim_table_config_default(struct jsim_table_config *c);

/* What building the table cost (virtual work; the caller times the wall clock). */
struct jsim_table_cost {
    long runs;            /* simulated runs */
    long task_attempts;   /* simulated attempts over all runs */
    long samples;         /* (p, remaining) samples recorded */
    int nallocs;          /* allocations in the grid */
    int peak_parallelism; /* the job's peak parallelism with unlimited tokens (from one run) */
};

/* Builds C(p, a): allocations 1..max_tokens on a grid (every value up to 10, then geometric),
 * `runs` runs each with the same run seeds at every allocation, progress by pm. Sampling noise
 * that would make more tokens look slower is removed (each cell is capped by the cell of the next
 * smaller allocation). Returns 0 and a new table in *out (caller owns), or
 * ERR_INVAL / ERR_STATE / ERR_NOMEM with a reason in msg. cost may be NULL. */
int jsim_table_build(const jsim_job_t *j, const struct jsim_model *m,
                     const struct progress_model *pm, const struct jsim_table_config *cfg,
                     struct jsim_rng *rng, jsim_table_t **out, struct jsim_table_cost *cost,
                     char *msg, size_t cap);
/* Frees the table and nullifies the caller's reference. NULL-safe. */
void jsim_table_destroy(jsim_table_t **p);

/* The JSIM_NQ quantiles of C(p, a) into out[JSIM_NQ], ascending: interpolated between progress
 * buckets and, for an allocation between grid points, between neighbours linearly in 1/a;
 * allocations outside the grid are clamped to it. Returns JSIM_NQ. */
int jsim_table_predict(const jsim_table_t *t, double p, double a, double *out);

int jsim_table_nallocs(const jsim_table_t *t);
int jsim_table_alloc(const jsim_table_t *t, int i); /* the i-th grid allocation */
int jsim_table_max_tokens(const jsim_table_t *t);

/* ---- the offline phase in one place (Jockey Fig. 2), for the JM and the simulator ---- */

/* Everything the control loop needs for one job, built from its spec and, when there is one, the
 * profile of an earlier run: the job's shape, the attempt model, the Amdahl statistics, the
 * progress indicator and (jsim_plan_build_table) the C(p, a) table. Without a profile the model
 * and the Amdahl statistics come from the spec's estimates and the predictor is Amdahl's (the
 * fallback of Jockey §4.1). A public value struct; every member is owned by it. */
struct jsim_plan {
    jsim_job_t *job;                /* read-only */
    const char **stage_names;       /* read-only: spec stage names (BORROWED from the spec) */
    int from_profile;               /* read-only: 1 when a profile was given */
    struct jsim_model model;        /* read-only */
    struct amdahl amdahl;           /* read-only */
    struct progress_model progress; /* read-only */
    double *stage_ratio;            /* read-only: per stage, profiled run time per second of the
                                       spec's estimate (1 without a profile) */
    jsim_table_t *table;            /* read-only: NULL until jsim_plan_build_table */
    struct jsim_table_cost cost;    /* read-only: what the table cost */
    int sized;                      /* read-only: tasks cost sized tokens (jsim_plan_init_sized) */
    double token_cpu;               /* read-only: the token size it was built for */
    uint64_t token_mem_mb;
};

/* Builds everything but the table. spec is borrowed for the plan's lifetime (stage names); prof
 * (may be NULL) only during the call. Returns 0, or ERR_INVAL / ERR_TOOBIG / ERR_NOMEM with the
 * reason in msg; on error *pl is left closed (jsim_plan_close is a no-op on it). */
int jsim_plan_init(struct jsim_plan *pl, const struct spec *spec, const struct profile *prof,
                   enum progress_kind kind, char *msg, size_t cap);

/* As jsim_plan_init, with every task costing arbiter_task_tokens(cpu, mem_mb) at a token of
 * token_cpu cores and token_mem_mb MiB (0: rm/arbiter.h's defaults; token_cpu < 0: unit costs,
 * as jsim_plan_init): C(p, a) and the Amdahl model then count a in token units. */
int jsim_plan_init_sized(struct jsim_plan *pl, const struct spec *spec, const struct profile *prof,
                         enum progress_kind kind, double token_cpu, uint64_t token_mem_mb,
                         char *msg, size_t cap);

/* Simulates the job to build C(p, a) (cfg may be NULL for the defaults). A few seconds for a
 * 10,000-task job: the JM calls it when it starts. Returns as jsim_table_build. */
int jsim_plan_build_table(struct jsim_plan *pl, const struct jsim_table_config *cfg,
                          struct jsim_rng *rng, char *msg, size_t cap);

/* What the profile expects task `task` to run (its estimate x its stage's ratio): the JM sums
 * this and the actual run times of finished tasks for controller_obs.speed. */
double jsim_plan_task_expected(const struct jsim_plan *pl, const struct spec *spec, size_t task);

/* The predictor for controller_new: the table when built, else the Amdahl model. */
void jsim_plan_predictor(const struct jsim_plan *pl, controller_predict_fn **fn, void **ctx);

/* Frees everything the plan owns; the struct is then zeroed (closing twice is harmless). */
void jsim_plan_close(struct jsim_plan *pl);

#endif
