/* arbiter_sim.h - `paddock-sim arbiter`: many deadline and best-effort jobs on one shared virtual
 * cluster, the RM's arbiter (rm/arbiter.h) deciding their tokens, in virtual time on the
 * simulator's engine (tools/sim/engine.h). Verma et al. §IV (Figures 1-2) as a load sweep.
 *
 * Model (the choices the papers leave open are ours; docs/arbiter.md):
 *  - One virtual cluster of `capacity` sized tokens (default 100). A task takes
 *    arbiter_task_tokens(cpu, mem_mb) tokens (at most capacity).
 *  - A job is a DAG (task dependencies and stage barriers). Each task has an estimate (what the
 *    spec or the profile says) and a true run time = estimate x job factor x task noise, both
 *    lognormal with mean 1: the job factor is the whole job running slower or faster than its
 *    profile, which a profile-only model (ARIA) cannot see and a Jockey controller measures.
 *  - Jobs arrive with exponential gaps; the mean gap makes the offered load (true work over
 *    capacity x the arrival horizon) what --load asks. A fraction of the jobs has a deadline
 *    U[1,2] x its time alone on the whole cluster (Verma §IV), the rest have none. The time
 *    alone is by default its list schedule on the estimates, what its user can know (Verma's
 *    estimates are exact, so his deadlines are on the true times: ARBITER_SIM_DEADLINE_TRUE).
 *  - A job runs its ready tasks on the tokens the arbiter grants it, highest bottom level first
 *    (greedy list scheduling; a task that does not fit what is left is skipped, a smaller one
 *    may start).
 *  - Policies: fcfs, edf, minedf, minedf_wc (Verma: a reclaimed spare token kills the task on
 *    it, its work is lost) and paddock (MinEDF-WC whose reclaimed tasks are downgraded in place
 *    by the daemon's rule, jm/attempt.h: the most time left first, a grace only when at most
 *    attempt_grace_ms allows; they keep running as opportunistic while a slot is free,
 *    preempted youngest first when a regular task needs the slot; minimums from a Jockey-like
 *    controller per job). Grants through arbiter_allocate_plan, as rm/ledger.c calls it.
 *  - Admission as the RM does it (rm/ledger.c): at every job's arrival arbiter_admit predicts
 *    it against the admitted jobs still running, and judges a deadline job. Shapes carry no
 *    spread of their own (spec estimates: cv 0), their list schedule's place alpha and critical
 *    path from the JM's simulator (jm/shape.h shape_alpha, shape_place_sim; with `spread`, on a
 *    profile of the task noise: ratios are independent of an instance's size, so a template's
 *    earlier runs would report them) and as scale the hi factor of an error model (rm/calib.h) that
 *    learns actual / predicted median as the ledger does (calib_from): from admitted deadline
 *    jobs and from jobs that had the cluster to themselves. A job refused runs best-effort (its
 *    deadline kept but not admitted: the arbiter orders it after the admitted ones) and still
 *    counts in missed_fraction. No profile gives a job its run times (every instance is its
 *    own size) or its job factor (drawn afresh for every job); only the task noise's ratios.
 * Same inputs and seed, same result: every draw comes from engine streams seeded per job.
 */
#ifndef PADDOCK_TOOLS_SIM_ARBITER_SIM_H
#define PADDOCK_TOOLS_SIM_ARBITER_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rm/arbiter.h"

#define ARBITER_SIM_MAX_JOBS     100000
#define ARBITER_SIM_MAX_CAPACITY 100000

enum arbiter_sim_mix { ARBITER_SIM_WFCOMMONS = 0, ARBITER_SIM_FACEBOOK = 1 };

/* What a job's deadline is drawn relative to (U[1, 2] x its time alone on the whole cluster). */
enum arbiter_sim_deadlines {
    ARBITER_SIM_DEADLINE_ESTIMATE = 0, /* its list schedule on the estimates: what its user (and
                                          the RM) can know at submit */
    ARBITER_SIM_DEADLINE_TRUE,         /* on its true run times (Verma §IV, whose estimates are
                                          exact) */
};

/* What runs the jobs (docs/arbiter.md). */
enum arbiter_sim_engine {
    ARBITER_SIM_ENGINE_CLUSTER = 0, /* the cluster simulator (tools/sim/cluster.h): each job run by
                                       the simulated JM (jm/place, jm/dispatch, jm/attempt) on
                                       per-node pn/queue, its tokens from an rm/ledger driven by
                                       ledger_apply as the RM does (cluster_arbiter.c) */
    ARBITER_SIM_ENGINE_SLICE,       /* the old engine: list scheduling within a grant, its own
                                       downgrades and kills, arbiter calls of its own
                                       (arbiter_sim_run.c) */
};

/* Which finished jobs teach admission's error model (rm/calib.h). */
enum arbiter_sim_calib {
    ARBITER_SIM_CALIB_LEDGER = 0, /* rm/ledger.c ledger__job_finish: an admitted deadline job,
                                     or a job that had the cluster to itself (no other job
                                     active at any time during its life) */
    ARBITER_SIM_CALIB_ALL,        /* the ledger's rule before it: every job that ran admitted
                                     or without a deadline, shared or not */
    ARBITER_SIM_CALIB_DEADLINE,   /* admitted deadline jobs only */
};

/* The simulated policies: the rm/arbiter ones plus paddock. */
enum arbiter_sim_policy {
    ARBITER_SIM_FCFS = 0,
    ARBITER_SIM_EDF,
    ARBITER_SIM_MINEDF,
    ARBITER_SIM_MINEDF_WC,
    ARBITER_SIM_PADDOCK,
    ARBITER_SIM_NPOLICIES
};

const char *arbiter_sim_policy_name(enum arbiter_sim_policy p);

/* Public value struct: arbiter_sim_config_default() then adjust. */
struct arbiter_sim_config {
    uint32_t capacity;        /* tokens of the virtual cluster (default 100) */
    size_t jobs;              /* default 200 */
    double load;              /* offered load (default 0.7) */
    uint64_t seed;            /* default 1 */
    enum arbiter_sim_mix mix; /* default wfcommons */
    const char *workloads;    /* WfCommons directory (borrowed); NULL: the caller must set it */
    double deadline_frac;     /* share of jobs with a deadline (default 0.5) */
    enum arbiter_sim_deadlines deadlines; /* their basis (default ..._ESTIMATE) */
    double alone_min_s; /* WfCommons jobs scaled to take U_log[min,max] s alone (20, 300) */
    double alone_max_s;
    double fb_task_scale; /* Facebook mix: task counts x this (default 0.1), ceil, >= 1 */
    double fb_time_scale; /* Facebook mix: task durations x this (default 0.1) */
    double task_sigma;    /* lognormal sigma of per-task noise (default 0.3) */
    double job_sigma;     /* lognormal sigma of the per-job factor (default 0.2) */
    double k;             /* sd multiplier (default ARBITER_K_DEFAULT): admission's (its shapes
                             carry no sd now) and paddock's conservative ETA */
    double slack;         /* paddock's controller: Jockey's slack S (default 1.2) */
    double period_frac;   /* paddock's controller period, share of the deadline (0.04) */
    double grace_frac;    /* paddock: a downgraded task whose estimate says it is at most this share
                             from its end is not preempted before its expected end (TASK_UPGRADE
                                                          grace_ms; default 0.25) */
    double urgent_frac;   /* paddock: a deadline job whose conservative finish leaves less than
                             this share of its deadline ends graces for its regular tasks
                             (TASK_CREATE urgent; default 0.2, as paddock-jm) */
    enum arbiter_sim_calib calib_from; /* which outcomes admission's error model learns from
                                          (default ARBITER_SIM_CALIB_LEDGER) */
    int profiled; /* paddock: minimums from each job's controller, as the RM takes them
                     from a job with a profile; 0 (default): ARIA's, as for a job
                     without one */
    int spread;   /* 1 (default): admission's shapes come from the JM's simulator with each task's
                     run-time ratio spread as a profile of earlier runs reports it (the task
                     noise, task_sigma; not the job factor, which differs between runs), 0: from
                     the estimates alone (issue 22; docs/arbiter.md) */
    FILE *trace;  /* borrowed; not NULL: each run with admission writes one line per deadline
                     job (what admission predicted against what happened; docs/arbiter.md) */
    /* cluster engine, with spread: 1 (default) each registration carries the job's own spread
     * (jm/shape.h), 0: none, the cluster's factor alone (`--own-spread on|off`) */
    int own_spread;
    enum arbiter_sim_engine engine; /* default ..._CLUSTER */
    double bg_util;     /* cluster engine: other tenants' regular work, share of the cores
                           (default 0) */
    double node_factor; /* cluster engine: the nodes' cores over the virtual cluster's tokens
                           (default 2: guaranteed tokens are a share of a larger cluster, whose
                           rest opportunistic work uses) */
};

void arbiter_sim_config_default(struct arbiter_sim_config *c);

/* The jobs of one experiment: opaque, shared read-only by the runs of every policy. */
typedef struct arbiter_sim_jobs arbiter_sim_jobs_t;

/* Builds the jobs (shapes, true run times, arrivals, deadlines, oracles) from cfg. Returns 0 and
 * stores them in *out (caller owns; arbiter_sim_jobs_destroy), or an ERR_* with the reason in
 * msg. */
int arbiter_sim_jobs_new(const struct arbiter_sim_config *cfg, arbiter_sim_jobs_t **out, char *msg,
                         size_t cap);
void arbiter_sim_jobs_destroy(arbiter_sim_jobs_t **p);

/* What the jobs are, independent of policy. */
struct arbiter_sim_jobs_info {
    size_t jobs, deadline_jobs, tasks;
    double mean_gap_s;      /* mean inter-arrival time */
    double horizon_s;       /* last arrival */
    double work_token_s;    /* true work of all jobs */
    double alone_mean_s;    /* mean time alone on the whole cluster */
    double oracle_dag_mean; /* deadline jobs: mean smallest constant k meeting the deadline */
    double oracle_td_mean;  /* ... and mean ceil(T / d) */
};

void arbiter_sim_jobs_info(const arbiter_sim_jobs_t *j, struct arbiter_sim_jobs_info *out);

struct arbiter_sim_result {
    size_t deadline_jobs, admitted, missed, admitted_missed, done;
    size_t refused;                /* deadline jobs refused (run best-effort) */
    size_t false_refusals;         /* ... that met their deadline in the reference run (ref_met) */
    double false_refusal_fraction; /* false_refusals / refused (0 when none was refused) */
    double missed_fraction;
    double relative_deadline_exceeded; /* Verma's sum over missed jobs of (finish - d) / d,
                                          divided by the number of deadline jobs */
    double utilization;                /* useful token-seconds / (capacity x span) */
    uint64_t spare_grants;             /* tokens granted above a job's minimum, counted when
                                          the spare part grows (Verma's "spare slot
                                          allocations") */
    uint64_t spare_reclaims;           /* tasks running on spare that was taken back (Verma's
                                          cancellations; paddock: downgrades) */
    uint64_t kills, downgrades, preemptions;
    double work_lost_s; /* token-seconds of work killed or preempted */
    double admitted_fraction;
    double admitted_missed_fraction;
    double mean_completion_s; /* all jobs: finish - arrival */
    double alloc_mean;        /* deadline jobs: mean of held tokens averaged over their run */
    double alloc_vs_dag;      /* mean of alloc / structure-aware oracle */
    double alloc_vs_td;       /* mean of alloc / ceil(T / d) */
    uint64_t events;
};

/* Runs the jobs under policy p, with admission or not. met (may be NULL; room for every job)
 * receives per job 1 when it has a deadline and met it, else 0. ref_met (may be NULL, borrowed)
 * is met from a reference run of the same jobs (paddock-sim arbiter: minedf_wc without
 * admission): a refused job that met its deadline there counts in false_refusals. Returns 0 or
 * an ERR_*. */
int arbiter_sim_run(const arbiter_sim_jobs_t *j, const struct arbiter_sim_config *cfg,
                    enum arbiter_sim_policy p, int admission, const uint8_t *ref_met, uint8_t *met,
                    struct arbiter_sim_result *out);

#endif
