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
 *
 * How lowcost.c reads the paper where it leaves a choice:
 * - Zero steps of R* reserve nothing: LowCost places only the stages with demand > 0, so each
 *   needs one step of its own and a window shorter than their number is ERR_FULL; greedy drops
 *   R*'s leading and trailing zeros and keeps the inner ones (the shape as it is).
 * - Stage k's interval length is avail * s_k / Σ_{k' <= k} s_{k'} rounded half up, at least one
 *   step and at most avail minus one step for each earlier stage, where avail counts the steps
 *   from the release up to τ_r. The paper's Figure 7: 16/38 of 19 steps is 8.
 * - Before a stage holds any step, τ_cur = τ_r + 1, so its first token-step goes to τ_r; the
 *   stage then grows left one step at a time. Stages therefore abut and the whole reservation is
 *   contiguous, without holes (§6.2). A token-step goes where the planned load plus the job's
 *   own allocation is lowest; on a tie to the later step (the stage stays compact). It is one
 *   token (or the fractional remainder, or the step's room under the capacity) at a time; a stage
 *   of more than 256 token-steps is placed in pieces of s_k / 256 to bound the work.
 * - The peak cost of an allocation is the highest load (folded over the instances) plus the
 *   allocation among the steps it uses; ties within 1e-9 of the capacity go to the earlier end.
 * - A window of more than 64 end points is searched with a stride of ⌈n / 64⌉ end points (and the
 *   deadline), then every end point within one stride of the best of those; when none of the
 *   strided end points fits, every end point is tried before ERR_FULL.
 * - On an error nothing changes: neither the plan nor resv. lowcost_remove subtracts resv from
 *   every instance and sets the rounding noise left where the load was zero to exactly 0.
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
 * under capacity (nothing changes), ERR_INVAL for a malformed job (no stages, a demand negative
 * or not finite, a period of 0 or not dividing nsteps, release >= deadline or deadline > period,
 * NULL demand or resv) or plan (no load, nsteps 0 or above LOWCOST_MAX_STEPS, capacity not
 * positive and finite), ERR_NOMEM. A job whose demand is all zero gets an empty reservation. */
int lowcost_place(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv);

/* The same contract, placed greedily (earliest fitting shift of R* as it is). */
int lowcost_place_greedy(struct lowcost_plan *plan, const struct lowcost_job *j, double *resv);

/* Takes a placed job's reservation (resv[0..period)) back out of the plan. */
void lowcost_remove(struct lowcost_plan *plan, uint32_t period, const double *resv);

/* The highest load of the plan, tokens. */
double lowcost_peak(const struct lowcost_plan *plan);

#endif
