/* arbiter.h - the RM's deadline arbiter: sized tokens, EDF, MinEDF, MinEDF-WC, admission with an
 * earliest feasible finish, and MRM's price-deadline curve (pure).
 *
 * Same discipline as the ledger (rm/ledger.h): no clock, no I/O, no randomness. The ledger calls
 * arbiter_allocate after every command that changes a virtual cluster's demand, so every replica
 * computes the same grants from the same log, and a new leader continues unchanged.
 *
 * Sized tokens (Apollo §2.1): "a token is the right to run one regular task of at most a fixed
 * CPU and memory". A task that needs more takes as many tokens as its largest dimension needs.
 *
 * ARIA bounds (Verma et al. §II): n tasks of mean a and maximum m on k slots, greedily assigned,
 * finish between n·a/k and (n−1)·a/k + m. For a DAG the same bounds hold with the total work W
 * and the critical path L (Graham): max(W/k, L) <= T(k) <= (W − L)/k + L. Verma takes the mean
 * of the two bounds as the estimate; MinEDF is the smallest k whose estimate meets the deadline.
 *
 * Allocation (Verma §III, Algorithm 1; Jockey §4.4), per virtual cluster:
 *  - order: admitted deadline jobs by earliest deadline (EDF), then best-effort jobs that have a
 *    deadline (not admitted: they may not delay admitted ones), then jobs without a deadline;
 *    ties by job id;
 *  - MinEDF: each admitted deadline job, in that order, gets its minimum while tokens last;
 *  - MinEDF-WC: what is left is spare, handed to admitted deadline jobs in the same order up to
 *    their width (admission assumed they would have it); then best-effort jobs with a deadline
 *    get minimums and spare the same way; what is still left is shared by jobs without a
 *    deadline in proportion to their weights (water-filling up to what each wants). The grant is
 * recomputed from scratch at every step, so spare given to a later deadline goes back to an earlier
 * one as soon as it needs it (a reclaim), and a job without a deadline never keeps tokens a
 * deadline job's minimum needs.
 *  - EDF and FCFS keep what a job holds (no reclaim: Verma's EDF and Paddock before the arbiter)
 *    and hand out only free tokens, in EDF or arrival order, up to width (EDF) or wanted (FCFS).
 *
 * Admission (MRM §3, §5): the finish time of a new deadline job is computed in a fluid model of
 * the virtual cluster: jobs in EDF order each take min(width, free) tokens over time until their
 * work is done; the Graham tail L·(1 − 1/k̄) is added, with k̄ the mean tokens the job received,
 * or, when the shape carries its list schedule's place between the bounds (alpha), that place
 * (a lone job's finish is then its simulated makespan). The conservative bound uses scale·mean
 * + k·sd of work and critical path (MRM's prediction-interval upper bound: scale is the cluster's
 * calibrated quantile of actual / predicted, rm/calib.h, and sd the job's own spread from its
 * profile; k = 1.645 for 95%); the median uses the means. The job is admitted when it and
 * every admitted job that met its deadline before still meet it. Otherwise the earliest feasible
 * finish is the smallest deadline at which it would be admitted.
 *
 * Price (MRM §4.2, eq. 13): c(δ_j, p_j) = κ·(p_j/(δ_j + 1) + Σ_i (p_i/(δ'_i + 1) − p_i/(δ_i + 1)))
 * with p the work in token-seconds and δ the slack, normalised by the new job's time alone at its
 * width: for the new job its deadline minus its earliest feasible finish (MRM §4.2's definition),
 * for an admitted job i its deadline minus its conservative finish, before (δ_i) and after (δ'_i)
 * the new job is placed.
 */
#ifndef PADDOCK_RM_ARBITER_H
#define PADDOCK_RM_ARBITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARBITER_TOKEN_CPU_DEFAULT    1.0   /* cores per token */
#define ARBITER_TOKEN_MEM_MB_DEFAULT 4096  /* MiB per token */
#define ARBITER_K_DEFAULT            1.645 /* sd multiplier of the conservative bound: 95% */
#define ARBITER_PRICE_POINTS_MAX     64

/* Tokens a task of `cpu` cores and `mem_mb` MiB takes: max(ceil(cpu / token_cpu),
 * ceil(mem_mb / token_mem_mb), 1). A token size of 0 means the default. Inline, so the JM and
 * the CLI use the very rule the RM counts with, without linking the RM. */
static inline uint32_t arbiter_task_tokens(double cpu, uint64_t mem_mb, double token_cpu,
                                           uint64_t token_mem_mb)
{
    if (!(token_cpu > 0))
        token_cpu = ARBITER_TOKEN_CPU_DEFAULT;
    if (token_mem_mb == 0)
        token_mem_mb = ARBITER_TOKEN_MEM_MB_DEFAULT;
    double c = cpu / token_cpu - 1e-9; /* 2.0 cores of 1-core tokens is 2, not 3 */
    uint64_t by_cpu = c > 1 ? (uint64_t)c + (c > (double)(uint64_t)c) : 1;
    uint64_t by_mem = (mem_mb + token_mem_mb - 1) / token_mem_mb;
    uint64_t t = by_cpu > by_mem ? by_cpu : by_mem;
    return t < 1 ? 1 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* A job's remaining work: public value. Times in seconds, work in token-seconds. The fields
 * after width may be left 0 (zero-initialised): Verma's mean of ARIA's bounds and the fixed
 * k·sd spread, as before calibration. */
struct arbiter_shape {
    double work;    /* W: sum over tasks of runtime x tokens */
    double work_sd; /* its standard deviation */
    double path;    /* L: the critical path */
    double path_sd;
    uint32_t width; /* most tokens the job can use at once (>= 1 when work > 0) */
    /* Where the job's own list schedule falls between ARIA's bounds: its simulated makespan S
     * at k tokens (jm/jsim.h, bottom-level priority) as alpha = (S − low) / (up − low), in
     * [0, 1]. With has_alpha both the median and the conservative finish are low + alpha·(up −
     * low) of their shapes; without, the median is the bounds' mean and the bound the upper. */
    bool has_alpha;
    double alpha;
    /* The conservative shape's multiplier of work and path before k·sd is added: the cluster's
     * calibrated quantile of actual / predicted, or the job's own spread times what the cluster
     * learned own spreads miss (rm/calib.h). <= 0: 1. */
    double scale;
    /* The job's own spread (issue 22): the SHAPE_SPREAD_Q quantile of its simulated makespan at
     * its tokens over their median, sampled from its profile (jm/shape.h, shape_place_sim); >= 1,
     * 0: none. Carried for the ledger, which turns it into `scale`; the arbiter reads only scale.
     */
    double spread;
};

/* ARIA's bounds at k tokens (k >= 1): lower max(W/k, L), upper (W − L)/k + L (never below the
 * lower), estimate their mean. Means only (work, path); 0 for an empty shape. */
double arbiter_time_low(const struct arbiter_shape *s, double k);
double arbiter_time_up(const struct arbiter_shape *s, double k);
double arbiter_time_avg(const struct arbiter_shape *s, double k);

/* The median time on k tokens held throughout (k may be fractional; clamped to [1, width]): the
 * shape's place alpha between ARIA's bounds, halfway without one, as the joint plan runs a
 * job's median. Means only (work, path; no scale, no sd); 0 for an empty shape. */
double arbiter_time_p50(const struct arbiter_shape *s, double k);

/* The shape as admission bounds it: its conservative work and path, scale x mean + k x sd; and
 * its place between ARIA's bounds, alpha clamped to [0, 1], -1 when it has none. Shared by the
 * fluid model (arbiter_admit) and the joint plan (arbiter_admit_joint). */
double arbiter_shape_work(const struct arbiter_shape *s, double k);
double arbiter_shape_path(const struct arbiter_shape *s, double k);
double arbiter_shape_alpha(const struct arbiter_shape *s);

/* MinEDF: the smallest k in 1..width whose estimate (arbiter_time_avg) is at most `left`
 * seconds; width when none is (the job cannot meet its deadline: it gets all it can use), 0 for
 * an empty shape. */
uint32_t arbiter_min_tokens(const struct arbiter_shape *s, double left);

/* A deadline job's minimum as the RM's ledger sets it (rm/ledger.c), and the arbiter simulation
 * with it (issue 23: one rule): a job that asks by its Jockey controller (`asks`: it has a profile
 * and a request, or registered no shape) needs its raw allocation when its JM gave one below its
 * ask (issue 25: the ask adds the controller's hysteresis), else its ask (`wanted`); any other job
 * MinEDF's smallest k for what is left (`remain`, borrowed; may be NULL when `asks`) within
 * `left_s` seconds (arbiter_min_tokens). */
uint32_t arbiter_deadline_minimum(bool asks, uint32_t raw, uint32_t wanted,
                                  const struct arbiter_shape *remain, double left_s);

enum arbiter_policy {
    ARBITER_FCFS = 0,      /* arrival order, keep what you hold, up to wanted */
    ARBITER_EDF = 1,       /* EDF order, keep what you hold, up to width */
    ARBITER_MINEDF = 2,    /* minimums in EDF order; the rest to jobs without a deadline */
    ARBITER_MINEDF_WC = 3, /* minimums, then spare in EDF order, reclaimed when needed */
};

/* "fcfs", "edf", "minedf", "minedf_wc"; parse returns -1 for an unknown name. */
const char *arbiter_policy_name(enum arbiter_policy p);
int arbiter_policy_parse(const char *name);

/* One job of a virtual cluster. Public struct: the caller fills the inputs; arbiter_allocate
 * writes the outputs. */
struct arbiter_job {
    uint64_t id;       /* in: arrival order, the tie-break */
    int64_t deadline;  /* in: absolute, any time unit; 0: none */
    bool best_effort;  /* in: has a deadline but was not admitted */
    uint32_t wanted;   /* in: the job's latest ask (its Jockey target, or its width) */
    uint32_t minimum;  /* in: what meets its deadline (MinEDF; ignored without a deadline) */
    uint32_t width;    /* in: most tokens it can use (spare cap); 0: wanted */
    uint32_t held;     /* in: its grant before this step (FCFS and EDF keep it) */
    double weight;     /* in: share among jobs without a deadline; <= 0: 1 */
    uint32_t reserved; /* in: what the plan reserves for it now (a recurring run; Morpheus §6) */
    uint32_t extra;    /* in: reprovisioning allowed above `reserved` (Morpheus §7) */
    uint32_t grant;    /* out: tokens granted */
    uint32_t min_part; /* out: of grant, the part that is its minimum (the rest is spare) */
};

/* Recomputes the grants of jobs[0..n) for a virtual cluster of `capacity` tokens. Invariants:
 * the grants sum to at most capacity; no job gets more than max(width, wanted) (or, under FCFS,
 * wanted); min_part <= grant. Deterministic: the same inputs in any order give the same grants.
 * Uses no memory beyond `order`, which the caller provides with room for n indices. */
void arbiter_allocate(enum arbiter_policy policy, uint32_t capacity, struct arbiter_job *jobs,
                      size_t n, size_t *order);

/* arbiter_allocate with periodic reservations (Morpheus §6-7). A job's `reserved` tokens (its
 * reservation in the plan at this time step, capped by max(wanted, width)) come first, before
 * any minimum. `held_back` tokens are reserved for recurring jobs that have no run now: no
 * minimum or reprovisioning takes them, but they may be lent as spare (MinEDF-WC), reclaimed
 * when the run starts. After the admitted minimums, `extra` (a run behind its skyline asking
 * for more than its reservation) is given from what is left, which includes the held-back
 * tokens only after every other free token ("from spare before others' reservations"). With
 * all reserved, extra and held_back 0 this is arbiter_allocate. Same invariants. */
void arbiter_allocate_plan(enum arbiter_policy policy, uint32_t capacity, uint32_t held_back,
                           struct arbiter_job *jobs, size_t n, size_t *order);

/* An admitted job as admission sees it: public value. */
struct arbiter_load {
    uint64_t id;
    double deadline;             /* seconds from `now`; may be negative (already late) */
    struct arbiter_shape remain; /* what is left of it */
};

struct arbiter_quote {
    bool admit;        /* the deadline asked for is feasible for the job and all admitted */
    double finish_p50; /* at the deadline asked for: median finish, seconds from now */
    double finish;     /* ... conservative finish */
    double eff_p50;    /* earliest feasible finish: median, seconds from now */
    double eff;        /* ... conservative: the deadline to resubmit with */
    uint64_t breaks;   /* with !admit: an admitted job it would make late (0: itself) */
};

/* Admission of a job of shape `job` with a deadline `deadline` seconds from now (<= 0: quote
 * only, no deadline asked) into a virtual cluster of `capacity` tokens running the admitted
 * jobs load[0..n). k: the sd multiplier (<= 0: ARBITER_K_DEFAULT). Returns 0, or ERR_INVAL for
 * an empty shape or a zero capacity, ERR_NOMEM. */
int arbiter_admit(double k, uint32_t capacity, const struct arbiter_load *load, size_t n,
                  const struct arbiter_shape *job, double deadline, struct arbiter_quote *out);

/* Tokens the plan reserves over time, for admission (Morpheus §6: ad-hoc jobs use what the plan
 * leaves): segment i covers [t[i], t[i+1]) seconds from now (t[0] = 0, increasing) with
 * tokens[i] reserved; the last segment runs forever. Borrowed. */
struct arbiter_reserve {
    const double *t;
    const double *tokens;
    size_t n;
};

/* arbiter_admit against capacity minus a plan's reservations (NULL plan: arbiter_admit). */
int arbiter_admit_plan(double k, uint32_t capacity, const struct arbiter_reserve *plan,
                       const struct arbiter_load *load, size_t n, const struct arbiter_shape *job,
                       double deadline, struct arbiter_quote *out);

/* Admission by a joint plan (issue 22; rm/arbiter_joint.c says why): the admitted jobs load[0..n)
 * and the new one run together in virtual time under arbiter_allocate's MinEDF-WC, re-arbitrated
 * whenever a job finishes or the plan's reservations change. On g tokens a job progresses at 1 /
 * T(g) of itself per second, T(g) its conservative shape's place between ARIA's bounds at g
 * (alpha; without one the upper bound; the median: the mean shape, the bounds' mean without
 * alpha), and its minimum is the fewest tokens whose T for what it has left meets its deadline
 * (MinEDF). A job alone therefore finishes exactly where arbiter_admit puts it. The new job is
 * admitted when it finishes by `deadline` and every admitted job that finished by its deadline
 * without it still does (`breaks`: the first that does not, by deadline); `eff` is the smallest
 * deadline that is admitted (bisection to a millisecond, at most 24 halvings, from the finish
 * with no deadline of its own, behind every admitted job), the medians the same plan with the
 * new job's mean shape. Same arguments and errors as arbiter_admit_plan (plan may be NULL).
 * Cost: a plan is at most n + 1 + plan->n arbitrations of n + 1 jobs; an admission runs about
 * 30 plans (docs/arbiter.md has the times at 100 and 1,000 admitted jobs). */
int arbiter_admit_joint(double k, uint32_t capacity, const struct arbiter_reserve *plan,
                        const struct arbiter_load *load, size_t n, const struct arbiter_shape *job,
                        double deadline, struct arbiter_quote *out);

/* One point of the price-deadline curve. */
struct arbiter_price {
    double deadline; /* seconds from now, from the earliest feasible finish on */
    double slack;    /* δ_j: (deadline − earliest feasible finish) / time alone */
    double price;    /* token-seconds (κ = 1) */
};

/* MRM's price-deadline curve at npoints (<= ARBITER_PRICE_POINTS_MAX) deadlines from the
 * earliest feasible finish to that plus four times the job's time alone. Returns the number of
 * points written, or a negative ERR_* as arbiter_admit. The price falls as slack grows. */
int arbiter_price_curve(double k, uint32_t capacity, const struct arbiter_load *load, size_t n,
                        const struct arbiter_shape *job, struct arbiter_price *out, size_t npoints);

/* The price of a deadline `deadline` seconds from now for a job whose earliest feasible finish
 * is `eff` (issue 25's accounting): MRM eq. 13's first term, work / (slack + 1) with slack =
 * (deadline - eff) / time alone (0 when the deadline is earlier than eff). Token-seconds. */
double arbiter_price_at(const struct arbiter_shape *job, double eff, double deadline);

#endif
