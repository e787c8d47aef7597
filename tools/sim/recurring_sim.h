/* recurring_sim.h - `paddock-sim recurring`: periodic jobs and ad-hoc jobs on one virtual cluster
 * of tokens in discrete time, the RM's recurring-job modules deciding reservations (Morpheus
 * §5-7, §9): rm/skyline.h fits each periodic job's R*, rm/slo.h infers the deadlines users gave
 * none, rm/lowcost.h packs the plan, and rm/arbiter.h's arbiter_allocate_plan grants tokens at
 * every step.
 *
 * Model (our choices where the paper is silent; docs/recurring-sim.md):
 *  - Time is steps of step_s virtual seconds (default 60: a "minute"); a "day" is 1440 steps.
 *    Periods are drawn from {60, 120, 180, 240, 360} steps (divisors of the day), offset 0: every
 *    job is released at its period's start (the worst case for collisions). The plan covers the
 *    LCM of the periods (rm/period.h, capped at a day).
 *  - A job is a WfCommons instance reduced to its stages: each stage has a work (token-steps)
 *    and a width (the tokens it can use at once), stages wait for the stages they depend on
 *    (barriers and task dependencies), and a stage runs as a fluid on the tokens it is given.
 *    Periodic jobs are scaled to take U[0.15, 0.35] of their period alone, with a token size that
 *    makes the periodic jobs together offer `load x periodic_share` of the capacity.
 *  - Each run's work is its estimate x a run factor F (lognormal, mean 1, sigma run_sigma) x a
 *    per-stage noise (sigma stage_sigma); with probability slow_prob a run is slow: F x U[1.5, 2].
 *    F^elastic of it is more tasks (wider stages), the rest longer ones.
 *  - Ad-hoc jobs arrive as a Poisson process (offered load `load x (1 - periodic_share)`), are
 *    scaled to take U_log[5, 60] steps alone on a width of U[0.1, 0.5] x capacity; a share
 *    adhoc_deadline_frac of them has a deadline U[1, 2] x its time alone, the rest none.
 *  - A deadline job is admitted (arbiter_admit, or arbiter_admit_plan against the plan's
 *    reservations) or runs best-effort. Minimums are MinEDF's (arbiter_min_tokens on the
 *    remaining work on estimates), spare as MinEDF-WC.
 *  - A warm-up of warmup_steps runs under `none` for every policy; then deadlines are inferred
 *    (slo_infer, from completion times) for the jobs without a given one, R* is fitted
 *    (skyline_fit) from each job's last runs and, for the planned policies, placed in the plan.
 *  - Policies: none (the arbiter alone), greedy (R* at the earliest fit), lowcost, and
 *    lowcost_reprov (lowcost plus §7: a run whose controller asks for more than its reservation
 *    gets extra = min(ask - reserved, rho x its largest recent reservation - reserved)).
 * Same inputs and seed, same result: every draw comes from engine streams seeded per job/run.
 */
#ifndef PADDOCK_TOOLS_SIM_RECURRING_SIM_H
#define PADDOCK_TOOLS_SIM_RECURRING_SIM_H

#include <stddef.h>
#include <stdint.h>

#define RECURRING_SIM_MAX_JOBS     256
#define RECURRING_SIM_MAX_CAPACITY 100000
#define RECURRING_SIM_DAY          1440u /* steps of the plan's cap (the LCM's) */

enum recurring_sim_policy {
    RECURRING_SIM_NONE = 0,
    RECURRING_SIM_GREEDY,
    RECURRING_SIM_LOWCOST,
    RECURRING_SIM_LOWCOST_REPROV,
    RECURRING_SIM_NPOLICIES
};

/* "none", "greedy", "lowcost", "lowcost_reprov". */
const char *recurring_sim_policy_name(enum recurring_sim_policy p);

/* Public value struct: recurring_sim_config_default() then adjust. */
struct recurring_sim_config {
    uint32_t capacity;          /* tokens (default 100) */
    size_t jobs;                /* periodic jobs (default 12) */
    double load;                /* offered load, periodic and ad-hoc (default 0.9) */
    double periodic_share;      /* of the load, the periodic jobs' (default 0.5) */
    uint64_t seed;              /* default 1 */
    const char *workloads;      /* WfCommons directory (borrowed) */
    double step_s;              /* virtual seconds per step (default 60) */
    uint32_t warmup_steps;      /* default 1440 (a day) */
    uint32_t eval_steps;        /* default 2880 (two days) */
    double given_frac;          /* share of periodic jobs with a user deadline (default 0.5) */
    double run_sigma;           /* lognormal sigma of a run's factor (default 0.15) */
    double stage_sigma;         /* ... of a stage's noise (default 0.1) */
    double slow_prob;           /* a run is 1.5-2x slower (default 0.1) */
    double elastic;             /* a run's factor F scales its stages' widths by F^elastic (more
                                   input, more tasks) and their run times by F^(1 - elastic)
                                   (default 0.5) */
    double adhoc_deadline_frac; /* ad-hoc jobs with a deadline (default 0.5) */
    int admission;              /* deadline jobs go through admission (default 1) */
    double rho;                 /* §7: the cap on reprovisioning (default 2) */
    double recent_frac;         /* §7: "recent", share of the period (default 0.25) */
    double slack;               /* the controller's slack on the time left (default 1.2) */
    double alpha;               /* skyline_fit's alpha (default SKYLINE_ALPHA) */
    uint32_t fit_runs;          /* runs R* is fitted from (default 8) */
};

void recurring_sim_config_default(struct recurring_sim_config *c);

/* The periodic jobs and ad-hoc arrivals of one experiment: opaque, read-only by the runs. */
typedef struct recurring_sim_jobs recurring_sim_jobs_t;

/* Builds them from cfg. Returns 0 and stores them in *out (caller owns;
 * recurring_sim_jobs_destroy nullifies), or an ERR_* with the reason in msg. */
int recurring_sim_jobs_new(const struct recurring_sim_config *cfg, recurring_sim_jobs_t **out,
                           char *msg, size_t cap);
void recurring_sim_jobs_destroy(recurring_sim_jobs_t **p);

struct recurring_sim_jobs_info {
    size_t periodic, adhoc, given_deadlines;
    uint32_t lcm_steps;
    double periodic_load, adhoc_load; /* offered, share of capacity (mean work) */
    double adhoc_mean_gap_s;
};

void recurring_sim_jobs_info(const recurring_sim_jobs_t *j, struct recurring_sim_jobs_info *out);

struct recurring_sim_result {
    size_t runs;                   /* periodic runs released after the warm-up */
    size_t missed;                 /* of them, finished after their deadline (or never) */
    double slo_violation_fraction; /* missed / runs */
    double peak_tokens;            /* planned policies: the plan's peak reserved tokens; none:
                                      the peak of the tokens granted to periodic runs together */
    double plan_peak_tokens;       /* the plan's peak (0 for none) */
    double periodic_grant_peak;    /* every policy: peak of tokens granted to periodic runs */
    double planned_tokens_mean;    /* the plan's mean reserved tokens (0 for none) */
    size_t inferred;               /* jobs whose deadline was inferred (slo_infer) */
    size_t unplaced;               /* jobs the plan could not place (they run unreserved) */
    size_t adhoc;                  /* ad-hoc jobs arrived after the warm-up */
    double adhoc_latency_p50_s;    /* their completion minus arrival, median */
    double adhoc_latency_p90_s;
    double adhoc_deadline_missed_fraction; /* ad-hoc jobs with a deadline that missed it */
    double adhoc_admitted_fraction;        /* ... that admission admitted */
    double utilization;                    /* token-steps used / (capacity x evaluated steps) */
    double reserved_used_fraction;         /* of the reserved token-steps, the part runs used */
    uint64_t reprov_steps;                 /* run-steps granted above their reservation by §7 (the
                                              cluster engine: evaluated runs the ledger
                                              reprovisioned) */
    size_t reserved_runs;  /* the cluster engine: evaluated periodic runs the ledger registered
                              with a reservation of the plan (0 for the token-slice engine) */
    double reprov_token_s; /* token-seconds granted so */
};

/* Runs the jobs under policy p. Returns 0 or an ERR_* (msg: the reason). */
int recurring_sim_run(const recurring_sim_jobs_t *j, const struct recurring_sim_config *cfg,
                      enum recurring_sim_policy p, struct recurring_sim_result *out, char *msg,
                      size_t cap);

#endif
