/* lowcost.h - the plan of periodic reservations, packed with LowCost (Morpheus §6) or greedily
 * (pure).
 *
 * The plan covers the LCM of the periods (rm/period.h) in steps of a fixed length: load[t] is the
 * tokens reserved at step t, for every placed job together, against a constant capacity. A
 * periodic job is placed once, relative to its period, and every instance in the LCM gets the
 * same reservation at the same offset (Morpheus §6.1).
 *
 * LowCost (Morpheus §6.3): the cost of a step is its planned load over capacity; for a periodic
 * job the cost of an offset is the largest cost among all instances at that offset. The job's
 * stages (the steps of its R*, rm/skyline.h) are handled in reverse order. Stage k gets the
 * interval [τ_l, τ_r] that ends just before stage k+1's allocation begins and whose length is
 * the time still available times s_k / Σ_{k' <= k} s_{k'} (at least one step). Its demand
 * (s_k token-steps, at most s_k tokens in any one step: R* is also its parallelism, §5) is
 * placed one token-step at a time at the cheapest eligible step: within the interval and, for a
 * contiguous allocation, at most one step left of the leftmost step the stage already uses. This
 * is repeated for every end point between the earliest possible and the deadline, and the
 * allocation with the lowest peak cost wins (ties: the earliest end, which leaves the most room
 * for reprovisioning, §7).
 *
 * Greedy: R* as it is, shifted to the earliest start in the window at which it fits under the
 * capacity (the baseline Morpheus compares with).
 */
#ifndef PADDOCK_RM_LOWCOST_H
#define PADDOCK_RM_LOWCOST_H

#include <stddef.h>
#include <stdint.h>

#define LOWCOST_MAX_STEPS 86400u /* steps of the plan (a day of seconds) */

/* The plan: public struct, caller owns load[] (nsteps values, tokens). */
struct lowcost_plan {
    uint32_t nsteps; /* steps in the LCM (or its cap) */
    double capacity; /* tokens, > 0 */
    double *load;    /* reserved tokens per step */
};

/* A periodic job to place: public value, all in steps. */
struct lowcost_job {
    uint32_t period;      /* steps; divides the plan's nsteps */
    uint32_t release;     /* earliest start, steps from the period's start (a_j) */
    uint32_t deadline;    /* end of the window, steps from the period's start (d_j), release <
                             deadline <= period */
    const double *demand; /* R*: tokens per step, nstages values >= 0 */
    uint32_t nstages;
};

/* Places job j with LowCost: writes its reservation relative to its period's start to
 * resv[0..period) (tokens per step, 0 outside its allocation), adds it to plan->load at every
 * instance, and returns 0. ERR_FULL when no allocation within the window keeps every step at or
 * under capacity (nothing changes), ERR_INVAL for a malformed job, ERR_NOMEM. */
int lowcost_place(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv);

/* The same contract, placed greedily (earliest fitting shift of R* as it is). */
int lowcost_place_greedy(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv);

/* Takes a placed job's reservation (resv[0..period)) back out of the plan. */
void lowcost_remove(struct lowcost_plan *plan, uint32_t period, const double *resv);

/* The highest load of the plan, tokens. */
double lowcost_peak(const struct lowcost_plan *plan);

#endif
